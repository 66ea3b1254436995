"""The report's rules, one test each, on a tiny simulated numeric task (runs in the tracking
contract, written by tests/leaderboard/test_leaderboard_stage.py's simulator).

What a reader must be able to trust: the task x model matrix shows interval, n, the metric's
direction, the best per task and a link to each run; runs on other examples are marked, ranked
last and never starred; nothing is a blank figure or a header-only table; figures have labelled
axes, text of at least 10 pt, distinct legend swatches and a synthetic label.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import matplotlib.text
import numpy as np
import pandas as pd
import pytest

from hhx.leaderboard import diagnostics, figures, plotting
from hhx.leaderboard.collect import collect_runs_dir, run_url, select_runs
from hhx.leaderboard.figures import period_midpoint, write_figures
from hhx.leaderboard.metrics import PRIMARY, point_metric
from hhx.leaderboard.plotting import MIN_FONT
from hhx.leaderboard.report import best_per_task, matrix_html, write_html
from hhx.leaderboard.tables import Settings, compute
from tests.leaderboard.test_leaderboard_stage import MODELS, _numeric_task, oracle_score, write_runs

SUBSET = 20  # rows the "other examples" run was evaluated on (of the simulator's 60)


def _leaderboard(root: Path, subset_model: str | None = None):
    task = _numeric_task()
    write_runs(root, [task])
    if subset_model:  # evaluate one model on the first SUBSET examples only, logged consistently
        run = root / subset_model / task.name
        path = run / "details" / f"{task.name}.parquet"
        d = pd.read_parquet(path).head(SUBSET)
        d.to_parquet(path, index=False)
        info = json.loads((run / "run_info.json").read_text())
        rows = [(bool(v), json.loads(p) if v else None, json.loads(r), json.loads(nv))
                for v, p, r, nv in zip(d["valid"], d["parsed_prediction"], d["reference"],
                                       d["naive_baseline"])]
        info["metrics"].update(primary_score=oracle_score(task, rows), num_examples=SUBSET,
                               num_valid=int(d["valid"].sum()))
        (run / "run_info.json").write_text(json.dumps(info))
    sel = select_runs(collect_runs_dir(root), include_synthetic=True)
    return compute(sel, {task.name: task}.__getitem__, Settings(n_resamples=200))


@pytest.fixture(scope="module")
def lb(tmp_path_factory):
    return _leaderboard(tmp_path_factory.mktemp("rules") / "runs")


def test_matrix_has_interval_n_direction_best_and_links(lb):
    page = matrix_html(lb)
    tm = lb.task_metrics.set_index("model")
    assert "mean RelMAE, \u2193 lower is better" in page
    best = tm["score"].idxmin()  # RelMAE: lower is better
    assert best_per_task(lb) == {"sim_numeric": {best}}
    assert page.count(" \u2605</b>") == 1  # one starred cell
    cell = re.search(r"<td class='best'>(.*?)</td>", page).group(1)
    r = tm.loc[best]
    assert f"{r['score']:.4f} \u2605" in cell
    assert f"[{r['ci_lo']:.4f}, {r['ci_hi']:.4f}]" in cell and "n=60" in cell
    links = re.findall(r"<a href='([^']+)'>run</a>", page)
    assert len(links) == len(MODELS)
    assert all(u.startswith("file://") and Path(u[7:]).is_dir() for u in links)


def test_run_links_open_the_mlflow_ui():
    # MLflow 3.17's UI opens a GenAI page unless the address names the workflow (hhx.tracking.ui)
    assert run_url("http://mlflow:5000/", "3", "abc") == (
        "http://mlflow:5000/#/experiments/3/runs/abc?workflowType=machine_learning")
    assert run_url("sqlite:///x.db", "1", "r").startswith("http://127.0.0.1:5000/#/experiments/1/")


def test_other_examples_marked_ranked_last_never_best(tmp_path):
    lb = _leaderboard(tmp_path / "runs", subset_model="xgb")
    board = lb.leaderboard.set_index("model")
    assert not board.loc["xgb", "same_examples"]
    assert board.loc["xgb", "different_examples"] == f"sim_numeric ({SUBSET} of 60)"
    assert lb.leaderboard["model"].iloc[-1] == "xgb"  # all models complete: xgb last
    assert board.drop(index="xgb")["same_examples"].all()
    assert "xgb" not in best_per_task(lb)["sim_numeric"]
    page = matrix_html(lb)
    assert f"\u26a0 n={SUBSET} of 60: other examples" in page
    assert any("different examples" in n and f"xgb: {SUBSET} of 60" in n for n in lb.notes)


@pytest.fixture(scope="module")
def drawn(lb, tmp_path_factory):
    """Figures and report of `lb`, with each figure inspected as it is saved."""
    out = tmp_path_factory.mktemp("report")
    (out / "figures").mkdir()
    (out / "figures" / "persistence.png").write_bytes(b"stale")  # from an earlier board
    seen = {}
    save = figures.save

    def spy(fig, path):
        res = save(fig, path)  # save raises any small text first; check what was written
        seen[path.stem] = fig
        return res

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(figures, "save", spy)
        mp.setattr(diagnostics, "save", spy)
        written, omitted = write_figures(lb, out / "figures")
    page = write_html(lb, written, out / "report.html", {"split": lb.split}, omitted)
    return out, page.read_text(), written, omitted, seen


def test_no_blank_figure_or_header_only_table(drawn):
    out, html, written, omitted, _ = drawn
    # Numeric task only: no class shares, no persistence; each omission says why.
    assert omitted["class_shares"] == "no categorical task"
    assert "persistence" in omitted and not (out / "figures" / "persistence.png").exists()
    for name, why in omitted.items():
        assert f"<li>{name}: {why}</li>" in html
    assert set(written) == {"leaderboard", "relmae_by_task", "type_summary", "bias", "cutoff",
                            "over_time", "task_sim_numeric"}
    assert html.count("<img ") == len(written)
    assert "<tbody></tbody>" not in html
    assert "Not shown: no categorical task." in html  # class_shares analysis table


def test_figures_labelled_readable_synthetic_distinct_swatches(lb, drawn):
    seen = drawn[4]
    assert len(seen) == 7
    for name, fig in seen.items():
        texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
        assert min(t.get_fontsize() for t in texts) >= MIN_FONT, name
        titles = [fig.get_suptitle()] + [ax.get_title() for ax in fig.axes]
        assert any(t.startswith("[SYNTHETIC") for t in titles), name
        assert fig.get_figwidth() * plotting.DPI <= 1300, name  # shown unscaled in the report
        for ax in fig.axes:
            if ax.get_label() == "<colorbar>":
                continue
            assert ax.get_xlabel() and ax.get_ylabel(), (name, ax.get_title())
    ax = seen["type_summary"].axes[0]
    assert len({tuple(p.get_facecolor()) for p in ax.patches}) == len(lb.models)  # per model
    # The legend explains the hatching (task group), never one colour standing for all.
    handles = ax.get_legend().legend_handles
    assert [h.get_hatch() for h in handles] == ["//"] and handles[0].get_facecolor()[:3] == (1, 1, 1)


def test_over_time_on_real_dates_with_no_change_on_the_same_rows(lb):
    assert period_midpoint("2021") == pd.Timestamp("2021-07-02")
    assert period_midpoint("2021Q1").month == 2
    ot = lb.analyses["over_time"]
    td = lb.tds["sim_numeric"]
    year = td.release_date.dt.year.astype(str).to_numpy()
    model = next(m for m in MODELS if MODELS[m][3] > 0)  # a model with invalid answers
    for row in ot[(ot["model"] == model) & (ot["n"] > 0)].itertuples():
        rows = td.valid[model] & (year == row.period)
        assert row.n == rows.sum()
        assert row.naive_metric == pytest.approx(point_metric(td, td.naive, rows)[PRIMARY])
    assert np.isfinite(ot["naive_metric"]).any()


def test_same_n_on_other_examples_is_marked_too(tmp_path):
    """Equal counts are not enough: a run on other households of the same size is marked."""
    task = _numeric_task()
    write_runs(tmp_path / "runs", [task])
    path = tmp_path / "runs" / "llm-a" / task.name / "details" / f"{task.name}.parquet"
    d = pd.read_parquet(path)
    d.assign(id="other-" + d["id"]).to_parquet(path, index=False)  # 60 rows, none shared
    sel = select_runs(collect_runs_dir(tmp_path / "runs"), include_synthetic=True)
    lb = compute(sel, {task.name: task}.__getitem__, Settings(n_resamples=50))
    tm = lb.task_metrics.set_index("model")
    assert (tm["num_examples"] == 60).all() and (tm["n_task_examples"] == 120).all()
    assert not tm["same_examples"].any()  # nobody covers the union: nothing is starred
    assert best_per_task(lb) == {}
    assert matrix_html(lb).count("\u26a0 n=60 of 120") == len(MODELS)


def test_diagnostics_show_every_model(tmp_path, monkeypatch):
    """6 models x 2 targets = 12 panels (more than the 8 once shown): every model's panels are
    drawn, each model on a row of its own in leaderboard order, none left out."""
    task = _numeric_task()
    root = tmp_path / "runs"
    write_runs(root, [task])
    for extra in ("llm-c", "llm-d"):  # more models: copies of llm-a's run under other names
        shutil.copytree(root / "llm-a", root / extra)
        info = root / extra / task.name / "run_info.json"
        d = json.loads(info.read_text())
        d["tags"]["hhx.model"] = extra
        info.write_text(json.dumps(d))
    sel = select_runs(collect_runs_dir(root), include_synthetic=True)
    lb = compute(sel, {task.name: task}.__getitem__, Settings(n_resamples=20))
    assert len(lb.models) == 6
    seen = {}
    monkeypatch.setattr(diagnostics, "save", lambda fig, path: seen.setdefault(path.stem, fig))
    diagnostics.write_diagnostics(lb, tmp_path / "figures")
    fig = seen["task_sim_numeric"]
    titles = [ax.get_title() for ax in fig.axes if ax.axison]
    assert len(titles) == 12
    order = list(lb.leaderboard["model"])
    assert [t.split(" (")[0] for t in titles] == [m for m in order for _ in range(2)]
    assert "first" not in fig.get_suptitle()
    assert diagnostics.panel_grid(6, 2)[:2] == (6, 2) and diagnostics.panel_grid(9, 1)[:2] == (3, 4)
