"""Seeded synthetic raw files of the mich sources (mirrors hhx/surveys/mich/)."""
