"""What a reader of the leaderboard sees: the console's task x model table, the ★ rule (clearly
best, else "tied"), the note on a task without a no_change run, and no import cycle among the
leaderboard's modules. Runs are simulated in the tracking contract (test_leaderboard_stage.py)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.config import FieldConfig, Mode, Shape, TargetType, TaskConfig
from hhx.leaderboard import stage
from hhx.leaderboard.best import verdicts
from hhx.leaderboard.collect import collect_runs_dir, select_runs
from hhx.leaderboard.console import score_table
from hhx.leaderboard.report import matrix_html
from hhx.leaderboard.tables import Settings, compute
from tests.leaderboard.test_leaderboard_stage import _cfg, _dist_task, _numeric_task, write_runs

LEADERBOARD = Path(__file__).resolve().parents[2] / "hhx" / "leaderboard"


def _compute(root: Path, tasks: list[TaskConfig], n_resamples: int = 400):
    sel = select_runs(collect_runs_dir(root), include_synthetic=True)
    return compute(sel, {t.name: t for t in tasks}.__getitem__, Settings(n_resamples=n_resamples))


def test_console_prints_the_task_by_model_table(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(stage, "write_figures", lambda lb, out: ({}, {}))
    tasks = [_numeric_task(), _dist_task()]
    write_runs(tmp_path / "runs", tasks, skip=(("llm-b", "sim_dist"),))
    stage.run(_cfg(tmp_path, runs_dir=str(tmp_path / "runs")),
              task_configs={t.name: t for t in tasks})
    out = capsys.readouterr().out
    lines = out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("task "))
    tm = pd.read_csv(tmp_path / "lb" / "task_metrics.csv").set_index(["task", "model"])
    models = pd.read_csv(tmp_path / "lb" / "leaderboard.csv")["model"].tolist()
    assert lines[head].split()[:3] == ["task", "official", "metric"]
    assert lines[head].split()[3:] == models  # one column per model, leaderboard order
    rows = {ln.split()[0]: ln for ln in lines[head + 1:head + 3]}
    assert "mean RelMAE \u2193" in rows["sim_numeric"] and "mean TV \u2193" in rows["sim_dist"]
    for task, line in rows.items():
        cells = line.split("\u2193", 1)[1].split()
        scores = [c for c in cells if c not in ("\u2605", "tied")]
        for model, text in zip(models, scores):
            if (task, model) in tm.index:
                assert text == f"{tm.loc[(task, model), 'score']:.4f}", (task, model)
            else:
                assert text == "\u2014"  # llm-b has no sim_dist run
    assert "\u2191 higher is better, \u2193 lower is better" in out
    assert "average rank across tasks" in out and "avg_rank" in out
    # xgb is clearly best on the numeric task (RelMAE ~0.4 vs ~0.6 and 1 for no-change)
    assert models[0] == "xgb"
    assert rows["sim_numeric"].split("\u2193", 1)[1].split()[:2] == [
        f"{tm.loc[('sim_numeric', 'xgb'), 'score']:.4f}", "\u2605"]


def _write(root: Path, task: TaskConfig, ref: np.ndarray, naive: np.ndarray,
           preds: dict[str, tuple[str, np.ndarray]]) -> None:
    """Run folders for a one-field numeric task: model -> (backend, predictions)."""
    n = len(ref)
    for model, (backend, pred) in preds.items():
        run = root / model / task.name
        (run / "details").mkdir(parents=True)
        pd.DataFrame({
            "id": [f"h{i}" for i in range(n)], "time": "2020-01-01", "release_date": "2020-02-01",
            "valid": True, "error": None, "raw_prediction": [json.dumps([p]) for p in pred],
            "parsed_prediction": [json.dumps([float(p)]) for p in pred],
            "reference": [json.dumps([float(r)]) for r in ref],
            "naive_baseline": [json.dumps([float(v)]) for v in naive],
        }).to_parquet(run / "details" / f"{task.name}.parquet", index=False)
        tags = {"hhx.stage": "evaluate", "hhx.task": task.name, "hhx.model": model,
                "hhx.backend": backend, "hhx.mode": "baseline", "hhx.target_type": "numeric",
                "hhx.data_source": "demo", "hhx.synthetic": "true", "hhx.split": "test"}
        (run / "run_info.json").write_text(json.dumps({"tags": tags, "metrics": {}}))


ONE = TaskConfig(name="sim_one", topic="t", mode=Mode.baseline, survey="sim",
                 target_type=TargetType.numeric, shape=Shape.array, fields=[FieldConfig(name="x")])


def _world(n: int = 80, seed: int = 3):
    rng = np.random.default_rng(seed)
    ref = rng.normal(100, 20, n).round(2)
    naive = (ref + rng.normal(0, 15, n)).round(2)
    return rng, ref, naive


def test_no_star_for_a_best_whose_interval_covers_no_change(tmp_path):
    """`close` beats `close_b` on every resample (same errors, 2% larger), but is not clearly
    better than no-change: its cell says tied (with no_change), never ★."""
    rng, ref, naive = _world()
    err = np.abs(naive - ref)
    shrink = np.where(np.arange(len(ref)) % 2 == 0, 0.2, 1.7)  # no-change's errors, scaled
    shrink *= 0.96 * err.sum() / (shrink * err).sum()  # RelMAE exactly 0.96, widely spread
    close = ref + (naive - ref) * shrink
    preds = {"no_change": ("no_change", naive), "close": ("litellm", close),
             "close_b": ("litellm", ref + (close - ref) * 1.02)}
    _write(tmp_path, ONE, ref, naive, preds)
    lb = _compute(tmp_path, [ONE])
    tm = lb.task_metrics.set_index("model")
    assert tm.loc["close", "score"] < tm.loc["close_b", "score"] < 1.0
    assert tm.loc["close", "ci_lo"] <= 1.0 <= tm.loc["close", "ci_hi"]  # covers no-change's 1
    v = verdicts(lb)["sim_one"]
    assert (v.best, v.runner_up, v.starred, v.tied_with) == ("close", "close_b", False,
                                                             "no_change")
    page = matrix_html(lb)
    assert "\u2605" not in page.split("<table")[1] and "tied (with no_change)" in page
    assert "0.9" in score_table(lb) and "tied" in score_table(lb)


def test_tied_when_the_runner_up_is_not_separated_and_star_when_it_is(tmp_path):
    rng, ref, naive = _world()
    a = ref + rng.normal(0, 6, len(ref))
    b = ref + rng.normal(0, 6, len(ref))  # as good as a: not separable
    c = ref + rng.normal(0, 12, len(ref))
    _write(tmp_path / "tie", ONE, ref, naive, {"no_change": ("no_change", naive),
                                              "a": ("litellm", a), "b": ("litellm", b)})
    v = verdicts(_compute(tmp_path / "tie", [ONE]))["sim_one"]
    assert not v.starred and {v.best, v.tied_with} == {"a", "b"} and v.mark.startswith("tied")
    _write(tmp_path / "clear", ONE, ref, naive, {"no_change": ("no_change", naive),
                                                "a": ("litellm", a), "c": ("litellm", c)})
    lb = _compute(tmp_path / "clear", [ONE])
    v = verdicts(lb)["sim_one"]
    assert (v.best, v.starred, v.mark) == ("a", True, "\u2605")
    assert "\u2605" in score_table(lb).splitlines()[2]


def test_a_task_without_a_no_change_run_says_so_plainly(tmp_path):
    tasks = [_numeric_task(), _dist_task()]
    write_runs(tmp_path, tasks, skip=(("no_change", "sim_numeric"),))
    lb = _compute(tmp_path, tasks, n_resamples=50)
    assert "no_change" in lb.tds["sim_numeric"].derived
    note = next(n for n in lb.notes if "no no_change run" in n)
    assert note.startswith("no no_change run for sim_numeric: no-change is scored there from "
                           "the no-change answers (naive_baseline)")
    assert "no_change x" not in note and "sim_dist" not in note


def _imports(path: Path) -> set[str]:
    """Every hhx.leaderboard module `path` imports, at the top or inside a function."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "hhx.leaderboard":
                out |= {f"hhx.leaderboard.{a.name}" for a in node.names}
            elif node.module.startswith("hhx.leaderboard."):
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("hhx.leaderboard.")}
    return out


def test_no_import_cycle_among_the_leaderboard_modules():
    graph = {f"hhx.leaderboard.{p.stem}": _imports(p) for p in LEADERBOARD.glob("*.py")
             if p.stem != "__init__"}
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            pytest.fail("import cycle: " + " -> ".join(path[path.index(node):] + [node]))
        if node in done:
            return
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, path + [node])
        done.add(node)

    for node in sorted(graph):
        visit(node, [])
    assert "hhx.leaderboard.figures" not in graph["hhx.leaderboard.diagnostics"]
