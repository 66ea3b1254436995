"""Predictors: one small fit/predict contract (`protocol.Predictor`) implemented by every backend."""
