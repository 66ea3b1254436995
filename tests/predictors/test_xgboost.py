"""The reference XGBoost baseline: simplex projection, feature encoding, early-stopping metrics,
and fit/predict/save on tasks built through the real bench layer."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xgboost as xgb

from hhx.config import (
    DistributionConfig,
    FieldConfig,
    Mode,
    Shape,
    TargetType,
    TaskConfig,
    XGBoostConfig,
)
from hhx.predictors.xgboost import (
    MISSING_TOKEN,
    UNSEEN_TOKEN,
    FeatureEncoder,
    XGBoostPredictor,
    macro_f1_cost,
    project_to_simplex,
    prompt_month_names,
)
from hhx.scoring import score_task
from hhx.tasks.build import build_task
from hhx.tasks.context import BuildContext

# --------------------------------------------------------------------------------------------
# pure functions


def test_simplex_projection_by_hand():
    # [0.5, 0.7]: theta = (1.2 - 1) / 2 = 0.1 -> [0.4, 0.6]
    assert np.allclose(project_to_simplex([[0.5, 0.7]]), [[0.4, 0.6]])
    # [2, 0]: theta = 1 -> [1, 0]; a point already on the simplex is unchanged
    assert np.allclose(project_to_simplex([[2.0, 0.0], [0.2, 0.8]]), [[1.0, 0.0], [0.2, 0.8]])
    # negative coordinates are clipped: [-0.5, 0.3, 0.9] -> theta = 0.1 -> [0, 0.2, 0.8]
    assert np.allclose(project_to_simplex([[-0.5, 0.3, 0.9]]), [[0.0, 0.2, 0.8]])


def test_simplex_projection_properties():
    x = np.random.default_rng(0).normal(size=(500, 10))
    p = project_to_simplex(x)
    assert np.allclose(p.sum(axis=1), 1.0, atol=1e-10) and (p >= 0).all()
    assert np.allclose(project_to_simplex(p), p)  # idempotent


def test_prompt_month_names_from_time_or_the_fixed_month():
    from hhx.config import PromptMonthConfig

    task = TaskConfig(name="t", prompt_month=PromptMonthConfig(fixed_month=None))
    times = pd.Series(["2020-01-15", "2019-12-01", "2021-07-31"], index=[5, 6, 7])
    names = prompt_month_names(task, times)
    assert list(names) == ["January", "December", "July"] and list(names.index) == [5, 6, 7]
    task.prompt_month = PromptMonthConfig(fixed_month=3)
    assert list(prompt_month_names(task, times)) == ["March"] * 3


def test_encoder_missing_and_unseen_tokens():
    train = pd.DataFrame({"x": [1.0, 2.0, np.nan], "c": ["b", " a ", ""]})
    enc = FeatureEncoder(["x", "c"], ["c"]).fit(train)
    assert enc.categories["c"] == ["a", "b", MISSING_TOKEN, UNSEEN_TOKEN]
    out = enc.transform(pd.DataFrame({"x": [3.0, np.nan], "c": ["zzz", None]}))
    assert list(out["c"].astype(str)) == [UNSEEN_TOKEN, MISSING_TOKEN]
    assert np.isnan(out["x"].iloc[1])


def test_encoder_rejects_non_numeric_in_numeric_feature():
    enc = FeatureEncoder(["x"], []).fit(pd.DataFrame({"x": [1.0]}))
    with pytest.raises(Exception, match="numeric feature x: non-numeric value 'abc'"):
        enc.transform(pd.DataFrame({"x": ["1", "abc"]}))


def test_macro_f1_cost_by_hand():
    # preds [1,1,0] vs truth [1,0,0]: F1(0)=2/3, F1(1)=2/3 -> cost 1/3
    cost = macro_f1_cost(2)(np.array([1, 0, 0]), np.array([0.9, 0.6, 0.1]))
    assert cost == pytest.approx(1 / 3)
    # three classes, argmax; class 2 never occurs and is never predicted -> F1 0 counted
    probs = np.array([[0.8, 0.1, 0.1], [0.2, 0.7, 0.1]])
    assert macro_f1_cost(3)(np.array([0, 1]), probs) == pytest.approx(1 - 2 / 3)


# --------------------------------------------------------------------------------------------
# fit / predict on real bench tasks built by the orchestrator

BUILDER = '''
import numpy as np
import pandas as pd
from hhx.tasks.prompting import response_instruction

def build_table(ctx):
    rng = np.random.default_rng(11)
    n = 4000
    quarter = rng.integers(0, 40, n)
    year, month = 2010 + quarter // 4, 3 * (quarter % 4) + 1
    x = rng.normal(size=n)
    group = rng.choice(["north", "south", "west"], n)
    shift = pd.Series(group).map({"north": 0.0, "south": 1.5, "west": -1.5}).to_numpy()
    score = x + shift + rng.normal(scale=0.3, size=n)
    label = np.where(score > 0.8, "up", np.where(score < -0.8, "down", "flat"))
    p = 1 / (1 + np.exp(-(x + shift)))
    frame = pd.DataFrame({
        "id": [f"p{i}" for i in range(n)],
        "time": [f"{y}-{m:02d}-01" for y, m in zip(year, month)],
        "release_date": [f"{y + 1}-01-15" for y in year],
        "y": 10 * x + 5 * shift + rng.normal(size=n),
        "label": label,
        "p": np.round(100 * p, 3),
        "x": x,
        "group": group,
    })
    t = ctx.task
    return frame[["id", "time", "release_date", *t.targets, *t.prompt_predictors]]

def render(row, task):
    return "You are an American adult.", "Your value is " + str(round(row["x"], 2)) + ".\\n\\n" + response_instruction(task)

def naive_baseline(row, task):
    kind = task.target_type.value
    return {"numeric": [0.0], "categorical": ["flat"], "distribution": [[0.5, 0.5]]}[kind]
'''


@pytest.fixture(scope="module")
def toy_builder():
    module = types.ModuleType("hhx_test_xgb_builder")
    exec(compile(BUILDER, module.__name__, "exec"), module.__dict__)
    sys.modules[module.__name__] = module
    yield module.__name__
    del sys.modules[module.__name__]


def toy_task(kind: str, builder: str) -> TaskConfig:
    common = dict(
        name=f"toy_{kind}", topic="t", mode=Mode.baseline, survey="toy",
        prompt_predictors=["x", "group"], categorical_predictors=["group"], builder=builder,
    )
    if kind == "numeric":
        return TaskConfig(**common, target_type=TargetType.numeric, shape=Shape.array,
                          fields=[FieldConfig(name="value")], targets=["y"],
                          xgb_seeds={"y": 12345})
    if kind == "categorical":
        return TaskConfig(**common, target_type=TargetType.categorical, shape=Shape.array,
                          fields=[FieldConfig(name="direction", labels=["down", "flat", "up"])],
                          targets=["label"], xgb_seeds={"label": 777})
    return TaskConfig(**common, target_type=TargetType.distribution,
                      shape=Shape.distribution_array,
                      distributions=[DistributionConfig(name="event", labels=["no", "yes"],
                                                        columns=["p"])],
                      targets=["p"], xgb_seeds={"event": 4242})


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["numeric", "categorical", "distribution"])
def test_xgboost_beats_no_change_and_saves_reloadable_models(kind, toy_builder, tmp_path: Path):
    task = toy_task(kind, toy_builder)
    ctx = BuildContext(task, tmp_path, macro_context=pd.DataFrame(), synthetic=True)
    bench = build_task(ctx, tmp_path / "bench", synthetic=True)
    settings = XGBoostConfig(threads=2, n_estimators=200, early_stopping_rounds=20)
    model = XGBoostPredictor(settings).fit(bench)
    examples = bench.eval_examples("pre_cutoff_test", None)
    rows = model.predict(bench, examples)
    gold = examples[["id", "time", "release_date", "system", "user", "assistant",
                     "naive_baseline"]].to_dict("records")
    result = score_task(task, gold, [r.official() for r in rows])
    naive = score_task(task, gold, [{"id": g["id"], "time": g["time"],
                                     "prediction": json.loads(g["naive_baseline"])} for g in gold])
    assert result["num_valid"] == len(gold) > 100
    lower = result["metrics"]["score_direction"] == "lower_is_better"
    better = (result["metrics"]["primary_score"] < naive["metrics"]["primary_score"]) if lower \
        else (result["metrics"]["primary_score"] > naive["metrics"]["primary_score"])
    assert better, (result["metrics"], naive["metrics"])

    files = model.save(tmp_path / "model")
    ubj = [f for f in files if f.suffix == ".ubj"]
    meta = json.loads(Path(str(ubj[0]).replace(".ubj", ".metadata.json")).read_text())
    assert meta["seed"] == next(iter(task.xgb_seeds.values()))
    assert meta["best_iteration"] is not None and meta["best_iteration"] < 200
    # the saved booster reproduces the in-memory predictions
    booster = xgb.Booster()
    booster.load_model(ubj[0])
    x = model.encoder.transform(model._feature_rows(bench, examples))
    reloaded = booster.predict(xgb.DMatrix(x, enable_categorical=True))
    in_memory = model.outputs[0].model.get_booster().predict(
        xgb.DMatrix(x, enable_categorical=True))
    assert np.allclose(reloaded, in_memory)


def test_a_fit_lifts_joblibs_openmp_share_to_its_own_threads(toy_builder, tmp_path, monkeypatch):
    """In a joblib worker OpenMP is capped at joblib's share (OMP_NUM_THREADS = cores // jobs),
    which would hold XGBoost to one thread even when it runs alone; the fit lifts the cap to its
    own thread count (ThreadShare then keeps it to the cores other jobs leave free)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from hhx import cores
    from hhx.predictors import xgboost as hhx_xgb

    task = toy_task("numeric", toy_builder)
    ctx = BuildContext(task, tmp_path, macro_context=pd.DataFrame(), synthetic=True)
    bench = build_task(ctx, tmp_path / "bench", synthetic=True)
    monkeypatch.setenv(cores.USER_LIMIT_VAR, "")  # the sweep's user set no OMP_NUM_THREADS
    monkeypatch.setattr(cores, "usable_cores", lambda: 2)
    monkeypatch.setattr(hhx_xgb, "usable_cores", lambda: 2)
    seen: list[int] = []

    class Look(hhx_xgb.ThreadShare):
        def after_iteration(self, model, epoch, evals_log):
            seen.extend(i["num_threads"] for i in threadpool_info()
                        if i["user_api"] == "openmp")
            return super().after_iteration(model, epoch, evals_log)

    monkeypatch.setattr(hhx_xgb, "ThreadShare", Look)
    with threadpool_limits(limits=1, user_api="openmp"):  # what joblib's share does
        XGBoostPredictor(XGBoostConfig(threads=2, n_estimators=5,
                                       early_stopping_rounds=5)).fit(bench)
    assert seen and set(seen) == {2}


def test_in_a_joblib_worker_a_fit_starts_on_the_worker_s_share(toy_builder, tmp_path,
                                                               monkeypatch):
    """Two parallel jobs on two cores: a fit that started on both ran oversubscribed until its
    first re-sizing (most fits end before one). It starts on joblib's share (OMP_NUM_THREADS),
    while OpenMP may still give it every core the sweep allows when the others go idle."""
    from hhx import cores
    from hhx.predictors import xgboost as hhx_xgb

    task = toy_task("numeric", toy_builder)
    ctx = BuildContext(task, tmp_path, macro_context=pd.DataFrame(), synthetic=True)
    bench = build_task(ctx, tmp_path / "bench", synthetic=True)
    monkeypatch.setenv(cores.USER_LIMIT_VAR, "")  # the sweep's user set no OMP_NUM_THREADS
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # joblib's share: 2 cores // 2 jobs
    monkeypatch.setattr(cores, "usable_cores", lambda: 2)
    monkeypatch.setattr(hhx_xgb, "usable_cores", lambda: 2)
    monkeypatch.setattr(cores.os, "sched_getaffinity", lambda pid: {0, 1})
    started: list[int] = []
    make = hhx_xgb.XGBoostPredictor._estimator

    def estimator(self, output, seed):
        model = make(self, output, seed)
        started.append(model.get_params()["n_jobs"])
        return model

    monkeypatch.setattr(hhx_xgb.XGBoostPredictor, "_estimator", estimator)
    predictor = XGBoostPredictor(XGBoostConfig(threads=2, n_estimators=5,
                                               early_stopping_rounds=5)).fit(bench)
    assert started == [1] and predictor.threads == 2  # one thread first, up to two allowed


def test_a_thread_plan_carries_its_count_from_one_fit_to_the_next(monkeypatch):
    from hhx import cores
    from hhx.predictors import xgboost as hhx_xgb

    monkeypatch.setattr(cores, "usable_cores", lambda: 2)
    readings = iter([1.0, 0.0])  # the other job busy on a core, then gone

    class Meter:
        def other_busy(self) -> float:
            return next(readings)

    monkeypatch.setattr(hhx_xgb, "CoreMeter", Meter)
    plan = hhx_xgb.ThreadPlan(2, start=1, interval=0.0)
    assert plan.resize() is None  # the first reading only starts the clock
    assert plan.resize() is None  # still one core free: one thread
    assert plan.resize() == 2  # both free: the fit takes them
    assert hhx_xgb.ThreadShare(plan).plan.threads == 2  # the next fit starts there
    assert plan.used == {1, 2}


@pytest.mark.parametrize(("given", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_openmp_waits_passively_unless_the_user_says_otherwise(given, expected):
    """Spinning OpenMP threads of two fits on the same cores slow each other ~10x
    (benchmarks/bench_xgb_wait.py); the policy must be in the environment before xgboost (and
    its libgomp) loads, which is what a fresh process importing hhx's predictor checks."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given:
        env["OMP_WAIT_POLICY"] = given
    probe = ("import sys, os; import hhx.predictors.xgboost; "
             "print(os.environ['OMP_WAIT_POLICY'], 'xgboost' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == [expected, "True"]
