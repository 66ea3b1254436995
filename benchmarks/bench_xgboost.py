"""Benchmark: hhx's XGBoost stage at the real size against a plain `xgboost` fit of the same data.

Three synthetic tasks, one per model family of the reference baseline (spec 00_common.md section
10): a 3-class categorical target (XGBClassifier, multi:softprob, depth 6), a numeric target
(XGBRegressor, absolute error, depth 9) and a one-column distribution group (XGBRegressor,
one_output_per_tree on [1-p, p], depth 9), each with --train training and --train/8 validation
rows (default 400,000 / 50,000: the reference's caps), 12 numeric and 4 categorical predictors
(missing values in both) plus the prompt month. For each task two fresh processes
(benchmarks/_runner.py) measure the same work:

- `hhx`: `XGBoostPredictor.fit` on a BenchTask holding the table and its split sidecar (the
  split prefixes, feature encoding, targets, one model per output with early stopping, the
  progress and thread-sharing callbacks), then `predict` on every validation row (the key merge
  with the table, the same encoding, decision rules).
- `xgboost`: the same rows encoded directly with pandas (float64 numbers; categories = sorted
  training values + the missing and unseen tokens) and one `XGBClassifier`/`XGBRegressor` fitted
  with the official hyperparameters, seed, early-stopping metric (the official definitions,
  imported from hhx) and thread count, then predicted on the same rows.

Both fit the same rows in the same order with the same parameters, so their predictions must be
identical (column `same`): the ratio compares equal work. Wall seconds cover feature preparation,
fit and predict; memory is each process's peak resident set above what it held once the table
was generated (the table itself is the same in both; VmHWM reset through /proc/self/clear_refs).
Goal: hhx / xgboost <= 1.10. The last table extrapolates the whole 32-task grid: each task's
training rows (README table sizes, spec 00_common.md 9.4, split 8:1:1 and capped as in spec 5)
x features x trees per round, at its family's measured seconds per row-feature-tree-round and
the family's measured number of rounds (an assumption: real tasks stop early elsewhere).

    .venv/bin/python benchmarks/bench_xgboost.py [--train 400000] [--scale 1.0] [--rounds N]
        [--kinds categorical,numeric,distribution]

`--scale 0.01` is a smoke run (4,000 / 500 rows); `--rounds` caps n_estimators on both sides
(default: the official 1,000 / 2,000 with early stopping after 300 rounds without gain).

Measured 2026-12-07 on 2 cores shared with other helpers' work (load average 16-21 throughout),
xgboost 3.3.0, full size, `--rounds 100 --grid-rounds categorical=489,numeric=778,
distribution=1114` (100 rounds per fit to fit the session; the grid's rounds are where early
stopping ended the same tasks at 40,000 rows):

    400,000 training / 50,000 validation rows per task; seconds = feature preparation + fit + predict (the xgboost fit alone in brackets)
    task          rounds         xgboost s             hhx s  ratio xgb cpu hhx cpu  ratio  xgb MB  hhx MB  ratio threads  same
    categorical      100    176.1 ( 166.3)    144.7 ( 135.4)  0.822    49.3    47.4  0.960     312     326   1.05     1,2   yes
    numeric          100    139.0 ( 133.3)    156.5 ( 143.6)  1.126    44.0    44.0  1.000     343     358   1.04     1,2   yes
    distribution     100    362.2 ( 350.6)    389.7 ( 371.8)  1.076    97.1   109.3  1.126     367     391   1.06     1,2   yes
    (cpu: CPU seconds of all the process's threads, the work done whatever the load; threads: the counts hhx's fit used, ThreadShare giving up cores other processes keep busy; MB: peak resident memory above the generated table, which both hold: ~295 MB)

    the 32-task grid (32 tasks, 75 models; training rows from the README sizes: 3,558,922, the paper's appendix C: 3,544,247)
    path        categorical       numeric  distribution    grid total
    xgboost         136.7 m       533.9 m       971.9 m       27.38 h
    hhx             112.4 m       601.0 m      1045.6 m       29.32 h
    (each task: its training rows x features x trees per round at its family's measured seconds per row-feature-tree-round, for rounds {'categorical': 489, 'numeric': 778, 'distribution': 1114})
    (load average now 17.7)

On a loaded machine the wall ratio is mostly noise (the xgboost fit alone, the same work on
both sides, differs by -19 % to +8 %); CPU seconds measure the work: hhx's -4 %, 0 % and +13 %.
A rerun of the distribution task alone (same load): xgboost 490.4 s (468.5), hhx 366.1 s
(347.8), wall 0.746, CPU 97.4 vs 90.8 s = 0.932, 368 vs 388 MB, same predictions: the +13 %
above was the load, not hhx. hhx's own fixed cost is its feature preparation, about 6 s wall per
task at 400,000 rows (split prefixes, category cleaning, the key merge before predict; the prompt
month's per-row Python call, 3.5-4.8 s more, is gone), a share that shrinks with the official
500-1,400 rounds. Peak memory: +4-6 % (hhx's copies of the split frames).
The 40,000-row run (official rounds, early stopping): wall ratio 0.996 / 0.932 / 1.152.
"""

from __future__ import annotations

import argparse
import calendar
import hashlib
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout, uninstalled
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _runner import peak_mb, print_phase, run_phase  # noqa: E402

KINDS = ("categorical", "numeric", "distribution")
N_NUMERIC = 12
CATEGORICAL = {"region": 4, "education": 6, "income_bracket": 15, "tenure": 3}
CLASSES = ["down", "flat", "up"]
SEEDS = {"categorical": 1234567, "numeric": 7654321, "distribution": 2468013}
FULL_TRAIN = 400_000

# Exported rows per task and rows released after 2026-02-16 (README statistics, spec 00_common.md
# 9.4). Historical rows ~ min(rows - post-cutoff, 500,000); splits 8:1:1 capped at 400k / 50k.
README_ROWS: dict[str, tuple[int, int]] = {
    "cons_cex_categories": (500_000, 0), "cons_cex_rebate01": (9_168, 0),
    "cons_cex_sspay": (20_769, 0), "cons_cex_stimulus08": (17_940, 0),
    "cons_cex_total": (500_000, 0), "cons_psid_jobloss": (3_676, 0),
    "cons_psid_wealth": (74_578, 0), "cons_sce_growth": (28_969, 919),
    "cons_sce_shock": (20_169, 632), "house_census_move": (500_000, 0),
    "house_psid_owner": (70_170, 0), "house_sce_financing": (995, 0),
    "house_sce_lockin": (734, 0), "house_sce_move": (148_995, 5_247),
    "income_cps_displace": (22_553, 0), "income_mich_finance": (252_870, 1_916),
    "income_psid_earnings": (76_938, 0), "income_sce_growth": (179_318, 6_126),
    "income_sce_policy": (19_254, 0), "labor_cps_displace": (53_787, 0),
    "labor_cps_jobfind": (505_774, 4_872), "labor_cps_retire": (528_680, 23_776),
    "labor_cps_separation": (656_473, 130_787), "labor_cps_ui": (158_989, 0),
    "labor_psid_addedworker": (1_117, 0), "labor_sce_offer": (3_623, 0),
    "labor_sce_reswage": (5_994, 0), "labor_sce_risk": (85_720, 3_113),
    "labor_sce_search": (2_636, 100), "macro_mich_outlook": (66_845, 696),
    "macro_sce_revision": (7_100, 264), "macro_sce_uncertainty": (139_734, 4_974),
}
PAPER_TRAIN_ROWS = 3_544_247  # the paper's appendix C: training rows over the 32 tasks


# --------------------------------------------------------------------------------------------
# the synthetic task


def task_config(kind: str) -> Any:
    from hhx.config import (
        DistributionConfig,
        FieldConfig,
        Mode,
        PromptMonthConfig,
        Shape,
        TargetType,
        TaskConfig,
    )

    common = dict(name=f"bench_{kind}", topic="t", mode=Mode.baseline, survey="synthetic",
                  prompt_predictors=[*(f"x{i}" for i in range(N_NUMERIC)), *CATEGORICAL],
                  categorical_predictors=list(CATEGORICAL),
                  prompt_month=PromptMonthConfig(fixed_month=None), xgb_seeds={})
    if kind == "numeric":
        return TaskConfig(**common | {"xgb_seeds": {"y": SEEDS[kind]}}, targets=["y"],
                          target_type=TargetType.numeric, shape=Shape.array,
                          fields=[FieldConfig(name="value")])
    if kind == "categorical":
        return TaskConfig(**common | {"xgb_seeds": {"label": SEEDS[kind]}}, targets=["label"],
                          target_type=TargetType.categorical, shape=Shape.array,
                          fields=[FieldConfig(name="direction", labels=CLASSES)])
    return TaskConfig(**common | {"xgb_seeds": {"event": SEEDS[kind]}}, targets=["p"],
                      target_type=TargetType.distribution, shape=Shape.distribution_array,
                      distributions=[DistributionConfig(name="event", labels=["no", "yes"],
                                                        columns=["p"], percent=False)])


def synthetic_table(n_train: int, n_val: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(table, split sidecar): training rows first, then validation rows, each in position order
    (so the official table order and split_position order agree)."""
    rng = np.random.default_rng(seed)
    n = n_train + n_val
    month = rng.integers(0, 26 * 12, n)
    time_ = pd.Series([f"{2000 + m // 12}-{m % 12 + 1:02d}-01" for m in month])
    x = rng.normal(size=(n, N_NUMERIC))
    x[rng.random((n, N_NUMERIC)) < 0.05] = np.nan
    frame = pd.DataFrame({"id": [f"h{i}" for i in range(n)], "time": time_,
                          "release_date": [f"{2001 + m // 12}-01-15" for m in month]})
    signal = np.nan_to_num(x[:, 0]) + 0.5 * np.nan_to_num(x[:, 1] * x[:, 2])
    signal += 0.4 * np.sin(2 * np.pi * (month % 12) / 12)
    cats = {}
    for j, (name, levels) in enumerate(CATEGORICAL.items()):
        code = rng.integers(0, levels, n)
        signal += (code - levels / 2) / levels * (1.0 - 0.2 * j)
        values = np.array([f"{name}_{k}" for k in range(levels)], dtype=object)[code]
        values[rng.random(n) < 0.03] = None  # missing -> the missing token
        cats[name] = values
    noisy = signal + rng.normal(scale=1.0, size=n)
    frame["label"] = np.array(CLASSES, dtype=object)[np.digitize(noisy, [-0.6, 0.6])]
    frame["y"] = np.round(1000 + 300 * signal + rng.laplace(scale=300, size=n), 2)
    frame["p"] = np.round(1 / (1 + np.exp(-noisy)), 3)
    for i in range(N_NUMERIC):
        frame[f"x{i}"] = x[:, i]
    for name, values in cats.items():
        frame[name] = values
    sidecar = pd.DataFrame({
        "split": ["train"] * n_train + ["validation"] * n_val,
        "split_position": np.r_[np.arange(1, n_train + 1), np.arange(1, n_val + 1)],
    })
    return frame, sidecar


# --------------------------------------------------------------------------------------------
# the two measured paths (each in its own process)


def run_hhx(kind: str, table: pd.DataFrame, sidecar: pd.DataFrame, rounds: int | None,
            threads: int) -> dict[str, Any]:
    from hhx.bench.layout import BenchTask
    from hhx.config import XGBoostConfig
    from hhx.predictors.xgboost import XGBoostPredictor

    spec = task_config(kind)
    bench = BenchTask(spec, pd.DataFrame(), table, sidecar, Path("."), "official", True, "release")
    examples = table.loc[sidecar["split"].eq("validation").to_numpy(), ["id", "time"]]
    t0 = time.perf_counter()
    model = XGBoostPredictor(XGBoostConfig(threads=threads, n_estimators=rounds)).fit(bench)
    fit_s = time.perf_counter() - t0
    rows = model.predict(bench, examples.reset_index(drop=True))
    total = time.perf_counter() - t0
    booster_s = sum(o.fit_seconds for o in model.outputs)
    answers = [r.prediction for r in rows]
    return {"seconds": total, "xgb_fit_s": booster_s, "other_s": total - booster_s,
            "predict_s": total - fit_s, "threads": sorted(model.plan.used),
            "rounds": sum(o.model.get_booster().num_boosted_rounds() for o in model.outputs),
            "digest": digest(answers)}


def plain_matrix(frame: pd.DataFrame, cats: dict[str, list[str]]) -> pd.DataFrame:
    from hhx.predictors.xgboost import MISSING_TOKEN

    out = {f"x{i}": frame[f"x{i}"].astype("float64") for i in range(N_NUMERIC)}
    for name in CATEGORICAL:
        out[name] = pd.Categorical(frame[name].fillna(MISSING_TOKEN), categories=cats[name])
    month = pd.to_datetime(frame["time"], format="%Y-%m-%d").dt.month
    names = list(calendar.month_name)
    out["prompt_month"] = pd.Categorical(month.map(names.__getitem__), categories=cats["month"])
    return pd.DataFrame(out)


def plain_estimator(kind: str, rounds: int | None, threads: int) -> Any:
    import xgboost as xgb

    from hhx.predictors.xgboost import macro_f1_cost, projected_tv
    from hhx.predictors.xgboost_params import (
        CLASSIFICATION_PARAMS,
        COMMON_PARAMS,
        DISTRIBUTION_PARAMS,
        REGRESSION_PARAMS,
    )

    base = {**COMMON_PARAMS, "random_state": SEEDS[kind], "n_jobs": threads,
            "early_stopping_rounds": 300}
    if kind == "categorical":
        params = {**CLASSIFICATION_PARAMS, **base, "objective": "multi:softprob",
                  "num_class": len(CLASSES), "eval_metric": macro_f1_cost(len(CLASSES))}
    elif kind == "numeric":
        params = {**REGRESSION_PARAMS, **base, "objective": "reg:absoluteerror",
                  "eval_metric": "mae"}
    else:
        params = {**DISTRIBUTION_PARAMS, **base, "objective": "reg:absoluteerror",
                  "multi_strategy": "one_output_per_tree", "eval_metric": projected_tv}
    if rounds is not None:
        params["n_estimators"] = rounds
    return (xgb.XGBClassifier if kind == "categorical" else xgb.XGBRegressor)(**params)


def plain_target(kind: str, frame: pd.DataFrame) -> np.ndarray:
    if kind == "categorical":
        return frame["label"].map({c: i for i, c in enumerate(CLASSES)}).to_numpy(dtype=int)
    if kind == "numeric":
        return frame["y"].to_numpy(dtype=float)
    p = frame["p"].to_numpy(dtype=float)
    return np.column_stack([1.0 - p, p])


def run_plain(kind: str, table: pd.DataFrame, sidecar: pd.DataFrame, rounds: int | None,
              threads: int) -> dict[str, Any]:
    import xgboost as xgb
    from threadpoolctl import threadpool_limits

    from hhx.predictors.xgboost import MISSING_TOKEN, UNSEEN_TOKEN, project_to_simplex

    t0 = time.perf_counter()
    is_train = sidecar["split"].eq("train").to_numpy()
    train, val = table[is_train], table[~is_train]
    tokens = [MISSING_TOKEN, UNSEEN_TOKEN]
    cats = {name: sorted(train[name].dropna().unique()) + tokens for name in CATEGORICAL}
    months = pd.to_datetime(train["time"], format="%Y-%m-%d").dt.month
    cats["month"] = sorted({calendar.month_name[m] for m in months.unique()}) + tokens
    x_train, x_val = plain_matrix(train, cats), plain_matrix(val, cats)
    model = plain_estimator(kind, rounds, threads)
    t1 = time.perf_counter()
    with threadpool_limits(limits=threads, user_api="openmp"):
        model.fit(x_train, plain_target(kind, train), eval_set=[(x_val, plain_target(kind, val))],
                  verbose=False)
    t2 = time.perf_counter()
    if kind == "categorical":
        answers = [[CLASSES[i]] for i in model.predict_proba(x_val).argmax(1)]
    elif kind == "numeric":
        answers = [[float(v)] for v in model.predict(x_val).astype(float)]
    else:
        answers = [[[float(p) for p in row]] for row in project_to_simplex(model.predict(x_val))]
    total = time.perf_counter() - t0
    booster: xgb.Booster = model.get_booster()
    return {"seconds": total, "xgb_fit_s": t2 - t1, "other_s": total - (t2 - t1),
            "predict_s": total - (t2 - t0), "threads": [threads],
            "rounds": booster.num_boosted_rounds(), "digest": digest(answers)}


def digest(answers: list[Any]) -> str:
    return hashlib.sha256(json.dumps(answers).encode()).hexdigest()[:16]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0), so the peak is this phase's work."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def phase(opts: argparse.Namespace) -> None:
    table, sidecar = synthetic_table(opts.train, opts.validation)
    base = rss_mb() if reset_peak() else 0.0
    run = run_hhx if opts.phase == "hhx" else run_plain
    cpu0 = cpu_seconds()
    result = run(opts.kind, table, sidecar, opts.rounds, opts.threads)
    print_phase({**result, "cpu_s": cpu_seconds() - cpu0, "data_mb": base,
                 "peak_mb": peak_mb() - base})


def cpu_seconds() -> float:
    """CPU seconds this process has used (all its threads): its own work, whatever the load."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# --------------------------------------------------------------------------------------------
# the grid's extrapolation and the tables



def trees_per_round(kind: str, classes: int) -> int:
    if kind == "categorical":
        return 1 if classes == 2 else classes
    return max(1, classes)  # a distribution's labels; a numeric target: 1


def task_rows(name: str) -> int:
    """Training rows of one of the 32 tasks (an estimate from the README table sizes)."""
    rows, post = README_ROWS[name]
    historical = min(rows - post, 500_000)
    return min(FULL_TRAIN, round(0.8 * historical))


def grid_work() -> list[tuple[str, str, int]]:
    """(task, family, training rows x features x trees per round) for every output of the 32
    (the paper's grid: the registered tasks with a size in the official README)."""
    from hhx.config import TargetType
    from hhx.predictors.xgboost_params import outputs_for
    from hhx.tasks.registry import load_task, task_names

    work = []
    for name in (n for n in task_names() if n in README_ROWS):
        spec = load_task(name)
        features = len(spec.prompt_predictors) + (spec.prompt_month is not None)
        for i, out in enumerate(outputs_for(spec)):
            width = (len(spec.distributions[i].labels)
                     if spec.target_type is TargetType.distribution else len(out.classes))
            work.append((name, out.kind,
                         task_rows(name) * features * trees_per_round(out.kind, width)))
    return work


def synthetic_work(kind: str, n_train: int) -> int:
    features = N_NUMERIC + len(CATEGORICAL) + 1
    return n_train * features * trees_per_round(kind, 2 if kind == "distribution" else 3)


def extrapolate(results: dict[str, dict[str, dict[str, Any]]], n_train: int,
                rounds: dict[str, int]) -> None:
    work = grid_work()
    known = {t for t, _, _ in work} & set(README_ROWS)
    est = sum(task_rows(t) for t in known)
    print(f"\nthe 32-task grid ({len(known)} tasks, {len(work)} models; training rows from the "
          f"README sizes: {est:,}, the paper's appendix C: {PAPER_TRAIN_ROWS:,})")
    print(f"{'path':<9}" + "".join(f"{k:>14}" for k in KINDS) + f"{'grid total':>14}")
    for path in ("xgboost", "hhx"):
        total, cells = 0.0, []
        for kind in KINDS:
            r = results.get(kind, {}).get(path)
            if r is None:  # a family not measured: use the numeric one's rate if any
                cells.append(f"{'-':>14}")
                r = results.get("numeric", {}).get(path)
            rate = (r["seconds"] / (synthetic_work(kind, n_train) * r["rounds"])
                    if r else float("nan"))
            n = rounds.get(kind, r["rounds"] if r else 0)
            seconds = sum(rate * w * n for _, k, w in work if k == kind) if r else 0.0
            total += seconds
            if kind in results:
                cells.append(f"{seconds / 60:>12.1f} m")
        print(f"{path:<9}" + "".join(cells) + f"{total / 3600:>12.2f} h")
    if set(KINDS) - set(results):
        print("(a family not measured is counted at the numeric family's rate)")
    print("(each task: its training rows x features x trees per round at its family's measured "
          "seconds per row-feature-tree-round, for "
          + (f"rounds {rounds}" if rounds else "the family's measured number of rounds") + ")")


def print_table(results: dict[str, dict[str, dict[str, Any]]], n_train: int, n_val: int) -> None:
    print(f"\n{n_train:,} training / {n_val:,} validation rows per task; seconds = feature "
          "preparation + fit + predict (the xgboost fit alone in brackets)")
    head = (f"{'task':<13}{'rounds':>7}{'xgboost s':>18}{'hhx s':>18}{'ratio':>7}"
            f"{'xgb cpu':>8}{'hhx cpu':>8}{'ratio':>7}"
            f"{'xgb MB':>8}{'hhx MB':>8}{'ratio':>7}{'threads':>8}{'same':>6}")
    print(head)
    for kind, pair in results.items():
        ref, own = pair["xgboost"], pair["hhx"]
        rounds = f"{ref['rounds']}" + ("" if ref["rounds"] == own["rounds"] else f"/{own['rounds']}")
        print(f"{kind:<13}{rounds:>7}"
              f"{ref['seconds']:>9.1f} ({ref['xgb_fit_s']:>6.1f})"
              f"{own['seconds']:>9.1f} ({own['xgb_fit_s']:>6.1f})"
              f"{own['seconds'] / ref['seconds']:>7.3f}"
              f"{ref['cpu_s']:>8.1f}{own['cpu_s']:>8.1f}{own['cpu_s'] / ref['cpu_s']:>7.3f}"
              f"{ref['peak_mb']:>8.0f}{own['peak_mb']:>8.0f}"
              f"{own['peak_mb'] / max(ref['peak_mb'], 1e-9):>7.2f}"
              f"{','.join(map(str, own['threads'])):>8}"
              f"{'yes' if ref['digest'] == own['digest'] else 'NO':>6}")
    print("(cpu: CPU seconds of all the process's threads, the work done whatever the load; "
          "threads: the counts hhx's fit used, ThreadShare giving up cores other processes keep "
          "busy; MB: peak resident memory above the generated table, which both hold: "
          f"~{max(p['hhx']['data_mb'] for p in results.values()):.0f} MB)")


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def options(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", type=int, default=FULL_TRAIN, help="training rows per task")
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies --train (0.01: smoke)")
    ap.add_argument("--rounds", type=int, default=None, help="cap n_estimators on both sides")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--threads", type=int, default=usable_cores())
    ap.add_argument("--no-grid", action="store_true", help="skip the 32-task extrapolation")
    ap.add_argument("--grid-rounds", default=None, metavar="KIND=N,...",
                    help="rounds per family for the extrapolation (default: the measured ones; "
                         "give early stopping's rounds when --rounds caps the fits)")
    # a phase's own arguments (benchmarks/_runner.py)
    ap.add_argument("--phase", choices=["hhx", "xgboost"])
    ap.add_argument("--kind", choices=KINDS)
    ap.add_argument("--validation", type=int)
    opts = ap.parse_args(argv)
    try:
        pairs = [item.split("=") for item in (opts.grid_rounds or "").split(",") if item]
        opts.grid_rounds = {k: int(n) for k, n in pairs}
    except ValueError:
        ap.error("--grid-rounds: write it as categorical=489,numeric=778,distribution=1114")
    bad = sorted((set(opts.kinds.split(",")) | set(opts.grid_rounds)) - set(KINDS))
    if bad:
        ap.error(f"--kinds: unknown {', '.join(bad)}; choose from {', '.join(KINDS)}")
    return opts


def main(argv: list[str] | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    opts = options(argv)
    if opts.phase:
        phase(opts)
        return {}
    # both paths under hhx's OpenMP wait policy (hhx/predictors/xgboost.py): this compares the
    # code, not the policy (benchmarks/bench_xgb_wait.py measures that)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    n_train = max(100, round(opts.train * opts.scale))
    n_val = max(100, n_train // 8)
    load = os.getloadavg()[0]
    print(f"{usable_cores()} cores (load {load:.1f}), {opts.threads} XGBoost threads, "
          f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}; "
          f"rounds: {opts.rounds or 'official (early stopping)'}", flush=True)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    t0 = time.perf_counter()
    for kind in opts.kinds.split(","):
        for path in ("xgboost", "hhx"):
            args = ["--kind", kind, "--train", str(n_train), "--validation", str(n_val),
                    "--threads", str(opts.threads)]
            if opts.rounds is not None:
                args += ["--rounds", str(opts.rounds)]
            r = run_phase(__file__, path, *args)
            results.setdefault(kind, {})[path] = r
            print(f"  {kind} {path}: {r['seconds']:.1f} s, {r['rounds']} rounds, "
                  f"{r['peak_mb']:.0f} MB ({time.perf_counter() - t0:.0f} s so far)", flush=True)
    print_table(results, n_train, n_val)
    if not opts.no_grid:
        extrapolate(results, n_train, opts.grid_rounds)
    print(f"(load average now {os.getloadavg()[0]:.1f})")
    return results


if __name__ == "__main__":
    main()
