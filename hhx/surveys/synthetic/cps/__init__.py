"""Seeded synthetic raw files of the cps sources (mirrors hhx/surveys/cps/)."""
