"""Seeded synthetic raw files of the macro sources (mirrors hhx/surveys/macro/)."""
