"""A ridge model of your own on a task's features, evaluated like any hhx model.

    python -m hhx task=labor_cps_jobfind model=custom \
        model.target=examples.custom_predictor.ridge_predictor.RidgePredictor '+model.params.alpha=10'

One scikit-learn model per output of the task, on the features hhx's XGBoost uses (one-hot
categoricals, missing numbers filled with the train median: hhx/predictors/features.py):
RidgeClassifier for a categorical task, Ridge for a numeric one and for each distribution (its
probabilities as a multi-output target; the answer is projected onto the simplex).
"""

from __future__ import annotations

from sklearn.linear_model import Ridge, RidgeClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from hhx.predictors.features import TaskFeatures


class RidgePredictor:
    """hhx's Predictor protocol: fit(task) -> self, predict(task, examples) -> PredictionRow list
    (save and run_metrics are optional)."""

    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def fit(self, task):
        self.data = TaskFeatures(task, one_hot=True, impute=True)
        x, y = self.data.train()
        self.models = {}
        for output in self.data.outputs:
            ridge = RidgeClassifier if output.kind == "categorical" else Ridge
            model = make_pipeline(StandardScaler(), ridge(alpha=self.alpha))
            self.models[output.name] = model.fit(x, y[output.name])
        return self

    def predict(self, task, examples):
        x = self.data.features(examples)
        return self.data.rows(examples, {name: model.predict(x)
                                         for name, model in self.models.items()})

    def run_metrics(self):
        return {"ridge_alpha": float(self.alpha)}
