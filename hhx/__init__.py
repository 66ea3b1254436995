"""hhx: evaluate language models and classical references on HouseholdBench's 32 household tasks."""

__version__ = "0.1.0"
