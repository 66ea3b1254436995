"""Seeded synthetic raw files of the census sources (mirrors hhx/surveys/census/)."""
