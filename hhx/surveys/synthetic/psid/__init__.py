"""Seeded synthetic raw files of the psid sources (mirrors hhx/surveys/psid/)."""
