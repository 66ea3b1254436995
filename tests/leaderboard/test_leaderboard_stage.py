"""The leaderboard stage end to end, from run folders (and an MLflow store) in the contract format.

The runs' logged `primary_score` comes from a plain per-row scorer written here from spec
section 8 (independent of hhx.leaderboard's matrix code), so "leaderboard score == logged score"
is a real cross-check.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from hhx.config import (
    DistributionConfig,
    FieldConfig,
    HhxConfig,
    LeaderboardConfig,
    Mode,
    Shape,
    TargetType,
    TaskConfig,
    TrackingConfig,
)
from hhx.errors import ConfigError, DataError
from hhx.leaderboard import stage
from hhx.leaderboard.figures import FIGURES

N = 60
MODELS = {  # name -> (backend, cutoff, noise, invalid share)
    "no_change": ("no_change", "", 0.0, 0.0),
    "xgb": ("xgboost", "", 0.3, 0.0),
    "llm-a": ("litellm", "2022-06-30", 0.5, 0.1),
    "llm-b": ("litellm", "2023-12-31", 0.8, 0.2),
}


def _numeric_task() -> TaskConfig:
    return TaskConfig(
        name="sim_numeric", topic="t", mode=Mode.policy, survey="sim",
        target_type=TargetType.numeric, shape=Shape.array,
        fields=[FieldConfig(name="spend"), FieldConfig(name="income")],
    )


def _dist_task() -> TaskConfig:
    return TaskConfig(
        name="sim_dist", topic="t", mode=Mode.baseline, survey="sim",
        target_type=TargetType.distribution, shape=Shape.distribution_array,
        distributions=[
            DistributionConfig(name="move", labels=["no_move", "move"], columns=["p"]),
            DistributionConfig(name="infl", labels=["lo", "mid", "hi"], columns=["a", "b", "c"]),
        ],
    )


def _cat_task() -> TaskConfig:
    from hhx.tasks.registry import load_task

    try:
        return load_task("labor_cps_jobfind")
    except ConfigError:
        pytest.skip("conf/task/labor_cps_jobfind.yaml absent")


# --------------------------------------------------------------------------------------------
# A plain per-row scorer (spec 8), the oracle for logged scores


def oracle_score(task: TaskConfig, rows: list[tuple[bool, list, list, list]]) -> float | None:
    ok = [(p, r, nv) for valid, p, r, nv in rows if valid]
    if not ok:
        return None
    scores = []
    if task.target_type is TargetType.numeric:
        for f in range(len(task.fields)):
            num = sum(abs(p[f] - r[f]) for p, r, _ in ok)
            den = sum(abs(nv[f] - r[f]) for _, r, nv in ok)
            scores.append(num / den)
    elif task.target_type is TargetType.categorical:
        for f, fld in enumerate(task.fields):
            f1s = []
            for lab in fld.labels:
                tp = sum(1 for p, r, _ in ok if p[f] == lab and r[f] == lab)
                fp = sum(1 for p, r, _ in ok if p[f] == lab and r[f] != lab)
                fn = sum(1 for p, r, _ in ok if p[f] != lab and r[f] == lab)
                f1s.append(2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else 0.0)
            scores.append(sum(f1s) / len(f1s))
    else:
        for d in range(len(task.distributions)):
            tvs = [0.5 * sum(abs(a - b) for a, b in zip(p[d], r[d])) for p, r, _ in ok]
            scores.append(sum(tvs) / len(tvs))
    return sum(scores) / len(scores)


# --------------------------------------------------------------------------------------------
# Simulated runs in the tracking contract


def _simulate(task: TaskConfig, rng: np.random.Generator):
    """References, no-change answers, and each model's (valid, parsed) answers."""
    ids = [f"h{i:03d}" for i in range(N)]
    years = rng.integers(2019, 2026, size=N)
    times = [f"{y}-{m:02d}-01" for y, m in zip(years, rng.integers(1, 13, size=N))]
    release = [f"{t[:4]}-{t[5:7]}-15" for t in times]
    ref, naive, preds = [], [], {m: [] for m in MODELS}
    for i in range(N):
        if task.target_type is TargetType.numeric:
            r = [float(x) for x in rng.normal(100, 20, size=2).round(2)]
            nv = [float(x) for x in (np.array(r) + rng.normal(0, 15, size=2)).round(2)]
        elif task.target_type is TargetType.categorical:
            labels = task.fields[0].labels
            r = [str(rng.choice(labels, p=[0.3, 0.5, 0.2]))]
            nv = ["unemployed"]
        else:
            p = float(rng.uniform(0.05, 0.95))
            v = rng.dirichlet([2, 2, 2])
            r = [[1 - p, p], v.tolist()]
            nv = r if rng.random() < 0.3 else [[0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]]
        ref.append(r)
        naive.append(nv)
        for m, (_, _, noise, invalid) in MODELS.items():
            if m == "no_change":
                preds[m].append((True, nv))
                continue
            if rng.random() < invalid:
                preds[m].append((False, None))
                continue
            if task.target_type is TargetType.numeric:
                ans = [float(x) for x in (np.array(r) + rng.normal(0, 20 * noise, 2)).round(2)]
            elif task.target_type is TargetType.categorical:
                ans = r if rng.random() > noise * 0.6 else [str(rng.choice(task.fields[0].labels))]
            else:
                w = min(noise, 1.0)
                q = (1 - w) * p + w * 0.5
                v2 = (1 - w) * np.array(r[1]) + w / 3
                ans = [[1 - q, q], (v2 / v2.sum()).tolist()]
            preds[m].append((True, ans))
    return ids, times, release, ref, naive, preds


def write_runs(root: Path, tasks: list[TaskConfig], synthetic: bool = True, seed: int = 0,
               skip: tuple[tuple[str, str], ...] = ()) -> dict[tuple[str, str], float | None]:
    """One run folder per task x model; returns the logged primary_score per (model, task)."""
    rng = np.random.default_rng(seed)
    logged = {}
    for task in tasks:
        ids, times, release, ref, naive, preds = _simulate(task, rng)
        for model, (backend, cutoff, _, _) in MODELS.items():
            if (model, task.name) in skip:
                continue
            rows = preds[model]
            score = oracle_score(task, [(v, p, r, nv) for (v, p), r, nv in zip(rows, ref, naive)])
            logged[(model, task.name)] = score
            run_dir = root / model / task.name
            details = pd.DataFrame({
                "id": ids, "time": times, "release_date": release,
                "split": "pre_cutoff_test", "split_position": pd.array(range(N), dtype="Int64"),
                "valid": [v for v, _ in rows],
                "error": [None if v else "expected_json_array" for v, _ in rows],
                "raw_prediction": [json.dumps(p) if v else "no idea" for v, p in rows],
                "parsed_prediction": [json.dumps(p) if v else None for v, p in rows],
                "reference": [json.dumps(r) for r in ref],
                "naive_baseline": [json.dumps(nv) for nv in naive],
            })
            (run_dir / "details").mkdir(parents=True)
            details.to_parquet(run_dir / "details" / f"{task.name}.parquet", index=False)
            (run_dir / "result").mkdir()
            (run_dir / "result" / f"{task.name}.json").write_text(json.dumps({"task": task.name}))
            n_valid = sum(v for v, _ in rows)
            info = {
                "tags": {
                    "hhx.stage": "evaluate", "hhx.task": task.name, "hhx.model": model,
                    "hhx.backend": backend, "hhx.mode": task.mode.value,
                    "hhx.target_type": task.target_type.value,
                    "hhx.data_source": "demo" if synthetic else "official",
                    "hhx.synthetic": "true" if synthetic else "false",
                    "hhx.split": "pre_cutoff_test", "hhx.model_cutoff": cutoff,
                },
                "metrics": {"primary_score": score, "num_examples": N, "num_valid": n_valid,
                            "coverage_rate": 1.0, "valid_response_rate": n_valid / N},
            }
            (run_dir / "run_info.json").write_text(json.dumps(info))
    return logged


def _cfg(tmp_path: Path, **lb) -> object:
    cfg = OmegaConf.structured(HhxConfig)
    cfg.tracking = OmegaConf.structured(TrackingConfig(
        enabled=False, uri=f"sqlite:///{tmp_path}/mlflow.db", experiment="exp"))
    settings = {"output_dir": str(tmp_path / "lb"), "n_resamples": 300, "include_synthetic": True}
    cfg.leaderboard = OmegaConf.structured(LeaderboardConfig(**{**settings, **lb}))
    return cfg


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lb")
    tasks = [_numeric_task(), _dist_task(), _cat_task()]
    logged = write_runs(tmp / "runs", tasks, skip=(("llm-b", "sim_dist"),))
    result = stage.run(_cfg(tmp, runs_dir=str(tmp / "runs")),
                       task_configs={t.name: t for t in tasks})
    return tmp, tasks, logged, result


def test_scores_equal_logged_primary_scores(built):
    tmp, _, logged, _ = built
    tm = pd.read_csv(tmp / "lb" / "task_metrics.csv")
    assert len(tm) == len(logged)
    for row in tm.itertuples():
        assert row.score == pytest.approx(logged[(row.model, row.task)], rel=1e-9, abs=1e-12)
        assert row.ci_lo <= row.score <= row.ci_hi


def test_report_and_every_figure(built):
    tmp, _, _, result = built
    out = tmp / "lb"
    html = (out / "report.html").read_text()
    assert "SYNTHETIC" in html
    imgs = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    # Every summary figure has data here (all three target types, cutoffs), plus one
    # diagnostic figure per task.
    drawn = [*FIGURES, *(f"task_{t.name}" for t in built[1])]
    assert len(imgs) == len(drawn)
    assert all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in imgs)
    assert "src=\"http" not in html and "src=\"figures" not in html  # self-contained
    for name in drawn:
        assert (out / "figures" / f"{name}.png").stat().st_size > 1000
    board = pd.read_csv(out / "leaderboard.csv")
    for row in board.itertuples():
        assert row.model in html
        assert f"{row.avg_rank:.4f}" in html
    for name in ("leaderboard", "summary", "matrix", "task_metrics", "comparisons"):
        md = (out / f"{name}.md").read_text()
        assert md.startswith("> SYNTHETIC") and "\n| " in md
        assert name == "matrix" or pd.read_csv(out / f"{name}.csv")["synthetic"].all()
    assert result["synthetic"] is True and result["report"].endswith("report.html")


def test_missing_task_flagged_not_silently_ranked(built):
    tmp, _, _, result = built
    board = pd.read_csv(tmp / "lb" / "leaderboard.csv")
    b = board.set_index("model")
    assert b.loc["llm-b", "n_tasks_ranked"] == 2 and not b.loc["llm-b", "complete"]
    assert b.loc["llm-b", "missing_tasks"] == "sim_dist"
    assert board["model"].iloc[-1] == "llm-b"  # incomplete models after complete ones
    assert any("missing tasks" in n for n in result["notes"])


def test_comparisons_use_rows_valid_for_both(built):
    tmp, tasks, _, _ = built
    comp = pd.read_csv(tmp / "lb" / "comparisons.csv")
    tm = pd.read_csv(tmp / "lb" / "task_metrics.csv").set_index(["model", "task"])
    num = comp[(comp["task"] == "sim_numeric") & (comp["comparator"] == "no_change")]
    # RelMAE's no-change comparator on the model's own valid rows is exactly 1.
    assert np.allclose(num["comparator_score"], 1.0)
    vs_x = comp[(comp["comparator"] == "xgb") & (comp["model"] == "llm-a")]
    for row in vs_x.itertuples():
        assert row.n_common == tm.loc[("llm-a", row.task), "num_valid"]  # xgb answers every row
        assert row.diff == pytest.approx(row.model_score - row.comparator_score)


def test_analyses_tables(built):
    tmp, _, _, _ = built
    a = tmp / "lb" / "analyses"
    pers = pd.read_csv(a / "persistence.csv")
    unchanged = pers[(pers["subset"] == "unchanged") & (pers["n"] > 0)]
    assert (unchanged["naive_tv"].abs() < 1e-12).all()  # no-change is exact on unchanged reports
    shares = pd.read_csv(a / "class_shares.csv")
    nc = shares[shares["model"] == "no_change"].set_index("label")
    assert nc.loc["unemployed", "pred_share"] == 1.0
    cut = pd.read_csv(a / "cutoff.csv")
    assert set(cut["model"]) == {"llm-a", "llm-b"}
    assert set(cut["period"]) == {"before", "after"}
    # The subsets partition the model's valid rows.
    nums = cut.groupby(["model", "task"])["n"].sum()
    tm = pd.read_csv(tmp / "lb" / "task_metrics.csv").set_index(["model", "task"])
    for (m, t), n in nums.items():
        assert n == tm.loc[(m, t), "num_valid"]


@pytest.fixture
def no_figures(monkeypatch):
    """For tests of run selection only: skip drawing (figures are tested on `built`)."""
    monkeypatch.setattr(stage, "write_figures", lambda lb, out: ({}, {}))


def test_latest_run_used_and_said(tmp_path, no_figures):
    tasks = [_numeric_task()]
    write_runs(tmp_path / "old", tasks, seed=1)
    logged = write_runs(tmp_path / "new", tasks, seed=2)
    for info in (tmp_path / "old").rglob("run_info.json"):
        d = json.loads(info.read_text())
        d["start_time"] = "2026-01-01T00:00:00"
        info.write_text(json.dumps(d))
    for info in (tmp_path / "new").rglob("run_info.json"):
        d = json.loads(info.read_text())
        d["start_time"] = "2026-02-01T00:00:00"
        info.write_text(json.dumps(d))
    res = stage.run(_cfg(tmp_path, runs_dir=str(tmp_path)), task_configs={"sim_numeric": tasks[0]})
    tm = pd.read_csv(tmp_path / "lb" / "task_metrics.csv")
    for row in tm.itertuples():
        assert row.score == pytest.approx(logged[(row.model, row.task)])
    assert sum("using the latest" in n for n in res["notes"]) == len(MODELS)


def test_synthetic_never_mixed_with_real(tmp_path, no_figures):
    tasks = [_numeric_task()]
    write_runs(tmp_path / "syn", tasks, synthetic=True)
    cfgs = {"sim_numeric": tasks[0]}
    # Only demo runs: ranked, but labelled synthetic everywhere.
    res = stage.run(_cfg(tmp_path, runs_dir=str(tmp_path), include_synthetic=False), cfgs)
    assert res["synthetic"] is True
    assert any("selected runs are synthetic" in n for n in res["notes"])
    assert "SYNTHETIC" in (tmp_path / "lb" / "report.html").read_text()
    write_runs(tmp_path / "real", tasks, synthetic=False)
    with pytest.raises(ConfigError, match="never mixes"):
        stage.run(_cfg(tmp_path, runs_dir=str(tmp_path)), cfgs)
    res = stage.run(_cfg(tmp_path, runs_dir=str(tmp_path), include_synthetic=False), cfgs)
    assert res["synthetic"] is False
    assert any("synthetic (demo) runs excluded" in n for n in res["notes"])
    assert "SYNTHETIC" not in (tmp_path / "lb" / "report.html").read_text()


def test_tampered_details_are_caught(tmp_path):
    tasks = [_numeric_task()]
    write_runs(tmp_path / "runs", tasks)
    info = tmp_path / "runs" / "llm-a" / "sim_numeric" / "run_info.json"
    d = json.loads(info.read_text())
    d["metrics"]["primary_score"] += 0.01
    info.write_text(json.dumps(d))
    with pytest.raises(DataError, match="differs from the logged primary_score"):
        stage.run(_cfg(tmp_path, runs_dir=str(tmp_path / "runs")), {"sim_numeric": tasks[0]})


def test_scorer_agrees_with_leaderboard_point_metrics(built):
    scoring = pytest.importorskip("hhx.scoring")
    compute_metrics = getattr(scoring, "compute_metrics", None)
    if compute_metrics is None:
        pytest.skip("hhx.scoring.compute_metrics not available yet")
    tmp, tasks, _, _ = built
    tm = pd.read_csv(tmp / "lb" / "task_metrics.csv").set_index(["model", "task"])
    for task in tasks:
        d = pd.read_parquet(tmp / "runs" / "llm-a" / task.name / "details" / f"{task.name}.parquet")
        d = d[d["valid"]]
        res = compute_metrics(task, [json.loads(x) for x in d["parsed_prediction"]],
                              [json.loads(x) for x in d["reference"]],
                              [json.loads(x) for x in d["naive_baseline"]]
                              if task.target_type is TargetType.numeric else None)
        score = res["primary_score"] if isinstance(res, dict) else res.primary_score
        assert score == pytest.approx(tm.loc[("llm-a", task.name), "score"], rel=1e-9)


@pytest.mark.slow
def test_mlflow_store_collected_and_leaderboard_logged(tmp_path, monkeypatch):
    from mlflow import MlflowClient

    monkeypatch.chdir(tmp_path)
    tasks = [_numeric_task()]
    logged = write_runs(tmp_path / "runs", tasks)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("exp", artifact_location=(tmp_path / "art").as_uri())
    for info_path in sorted((tmp_path / "runs").rglob("run_info.json")):
        info = json.loads(info_path.read_text())
        run = client.create_run(exp, tags=info["tags"])
        for k, v in info["metrics"].items():
            client.log_metric(run.info.run_id, k, v)
        for sub in ("details", "result"):
            client.log_artifacts(run.info.run_id, str(info_path.parent / sub), sub)
        client.set_terminated(run.info.run_id)
    cfg = _cfg(tmp_path)
    cfg.tracking.enabled = True
    res = stage.run(cfg, task_configs={t.name: t for t in tasks})
    tm = pd.read_csv(tmp_path / "lb" / "task_metrics.csv")
    assert len(tm) == len(logged)
    for row in tm.itertuples():
        assert row.score == pytest.approx(logged[(row.model, row.task)], rel=1e-9)
        # The report links each cell to the run's page in the MLflow UI.
        assert re.fullmatch(rf"http://127\.0\.0\.1:5000/#/experiments/{exp}/runs/[0-9a-f]{{32}}"
                            r"\?workflowType=machine_learning", row.url)
    lb_run = client.get_run(res["mlflow_run_id"])
    assert lb_run.data.tags["hhx.stage"] == "leaderboard"
    assert lb_run.data.tags["hhx.synthetic"] == "true"
    arts = {f.path for f in client.list_artifacts(res["mlflow_run_id"])}
    assert {"report.html", "leaderboard.csv", "figures"} <= arts
    # A second leaderboard run collects only evaluate runs, not the first leaderboard.
    res2 = stage.run(cfg, task_configs={t.name: t for t in tasks})
    assert res2["n_runs"] == len(logged)


@pytest.mark.slow
def test_report_renders_in_chromium_every_figure_drawn(built):
    """A real browser opens the report: every image decodes, none is blank or half blank, none
    is shown scaled down (so 10 pt text stays 10 pt), and no table lacks rows."""
    from tests.helpers import browser

    if not browser.available():
        pytest.skip(f"{browser.CHROMIUM} absent (Debian package `chromium`; .ci/run installs it)")
    tmp, tasks, _, _ = built
    probe = browser.inspect_page(tmp / "lb" / "report.html")
    imgs = probe["imgs"]
    assert [i["alt"] for i in imgs] == [*FIGURES, *(f"task_{t}" for t in sorted(
        t.name for t in tasks))]
    for img in imgs:
        name = img["alt"]
        assert img["complete"] and img["w"] > 100 and img["h"] > 100, name
        assert img["shown_w"] >= 0.98 * img["w"], name  # not shrunk to fit the page
        assert img["all"]["ink"] > 0.02 and img["all"]["std"] > 10, name
        assert min(h["ink"] for h in img["halves"]) > 0.005, (name, img["halves"])
    assert probe["tables"] > 5 and probe["empty_tables"] == 0


def test_the_leaderboard_run_starts_with_the_work_and_a_failure_says_why(tmp_path, monkeypatch,
                                                                         no_figures):
    """On a file store (MLflow's folder store: no SQLite migrations to wait for)."""
    from mlflow import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    tasks = [_numeric_task()]
    write_runs(tmp_path / "runs", tasks)
    cfg = _cfg(tmp_path, runs_dir=str(tmp_path / "runs"))
    cfg.tracking.enabled = True
    cfg.tracking.uri = (tmp_path / "mlruns").as_uri()
    client = MlflowClient(tracking_uri=cfg.tracking.uri)
    seen = []
    real_compute = stage.compute

    def watching(*args, **kwargs):  # the run is RUNNING while the leaderboard is computed
        (run,) = client.search_runs([client.get_experiment_by_name("exp-leaderboard")
                                     .experiment_id])
        seen.append(run.info.status)
        return real_compute(*args, **kwargs)

    monkeypatch.setattr(stage, "compute", watching)
    res = stage.run(cfg, task_configs={t.name: t for t in tasks})
    assert seen == ["RUNNING"]
    run = client.get_run(res["mlflow_run_id"])
    assert run.info.status == "FINISHED" and run.data.tags["hhx.status"] == "finished"
    assert run.info.run_name == "leaderboard · 1 tasks · 4 models · synthetic"
    assert run.data.tags["hhx.stage"] == "leaderboard" and run.data.tags["hhx.synthetic"] == "true"

    cfg.leaderboard.runs_dir = str(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="is not a folder") as info:
        stage.run(cfg, task_configs={t.name: t for t in tasks})
    exp = client.get_experiment_by_name("exp-leaderboard").experiment_id
    failed = [r for r in client.search_runs([exp]) if r.info.status == "FAILED"]
    assert len(failed) == 1 and failed[0].data.tags["hhx.failure_reason"] == str(info.value)
