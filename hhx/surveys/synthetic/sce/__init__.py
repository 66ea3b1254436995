"""Seeded synthetic raw files of the sce sources (mirrors hhx/surveys/sce/)."""
