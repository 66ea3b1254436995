"""Seeded synthetic raw files of the cex sources (mirrors hhx/surveys/cex/)."""
