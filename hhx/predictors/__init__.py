"""Predictors: one small fit/predict contract (`base.Predictor`) implemented by every backend."""
