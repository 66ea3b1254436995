"""Experiment tracking: every run, its resolved config, predictions and metrics in MLflow."""
