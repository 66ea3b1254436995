"""Per-task diagnostic figures: what each model answered against what was true.

One figure per task (`figures/task_<task>.png`), drawn from the aligned task data on each model's
valid rows only, as the official metrics use them:
- categorical tasks: a confusion matrix per model and field (rows: true label, columns: predicted
  label; cells: counts, shaded by the share of the true label's rows);
- numeric tasks: predicted vs actual per model and target, with the 45-degree line; axes span the
  1st to 99th percentile of the values so that a few extreme answers do not hide the rest (the
  panel title says how many points fall outside);
- probability (distribution) tasks: calibration per model: predicted probabilities of every bin
  of every row grouped into ten equal-width groups, each group's mean predicted probability
  against the mean reported probability, with the diagonal for perfect calibration.
Every model with a valid answer gets its panels (models in leaderboard order, each model's
fields on a row of their own, at most NCOL panels wide), so no model is left out of the report.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hhx.leaderboard.examples import TaskData
from hhx.leaderboard.plotting import colors, save, subplots, title
from hhx.leaderboard.tables import Leaderboard

NCOL = 4
CAL_BINS = 10
CLIP_PCT = (1.0, 99.0)
PANEL_IN = 3.3  # inches per panel side
MAX_HEIGHT_IN = 600.0  # at 100 dpi, well under Agg's 65,536-pixel limit


def _models(lb: Leaderboard, td: TaskData) -> list[str]:
    """The task's models with a valid answer, in leaderboard order (then any others)."""
    order = [m for m in lb.leaderboard["model"] if m in td.preds]
    order += [m for m in td.models if m not in order]
    return [m for m in order if td.valid[m].any()]


def panel_grid(n_models: int, per_model: int) -> tuple[int, int, list[tuple[int, int]]]:
    """(rows, columns, (row, column) of each (model, segment) panel in model-major order).

    One segment per model: models fill rows of up to NCOL. Several: each model starts a row and
    its segments wrap after NCOL."""
    if per_model == 1:
        ncol = min(NCOL, n_models)
        cells = [(i // ncol, i % ncol) for i in range(n_models)]
        return -(-n_models // ncol), ncol, cells
    ncol = min(NCOL, per_model)
    rows_each = -(-per_model // ncol)
    cells = [(j * rows_each + i // ncol, i % ncol)
             for j in range(n_models) for i in range(per_model)]
    return n_models * rows_each, ncol, cells


def _draw(lb: Leaderboard, td: TaskData, path: Path, per_model: int, panel, head: str
          ) -> Path | str:
    """One panel per (model, segment) via `panel(ax, model, segment index)`, every model."""
    models = _models(lb, td)
    if not models:
        return f"{td.name}: no model has a valid answer"
    nrow, ncol, cells = panel_grid(len(models), per_model)
    side = min(PANEL_IN, MAX_HEIGHT_IN / nrow)  # Agg draws at most 2**16 pixels a side
    fig, axes = subplots(nrow, ncol, figsize=(min(13.0, side * ncol + 0.6), side * nrow + 0.8),
                         squeeze=False)
    used = set(cells)
    for (r, c), (m, i) in zip(cells, [(m, i) for m in models for i in range(per_model)]):
        panel(axes[r, c], m, i)
    for r in range(nrow):
        for c in range(ncol):
            if (r, c) not in used:
                axes[r, c].set_axis_off()
    fig.suptitle(title(lb, f"{td.name}: {head}"))
    return save(fig, path)


def confusion_figure(lb: Leaderboard, td: TaskData, path: Path) -> Path | str:
    def panel(ax, m: str, i: int) -> None:
        s = td.segments[i]
        labels = s.labels or []
        ok = td.valid[m]
        true, pred = td.ref[ok, s.start].astype(int), td.preds[m][ok, s.start].astype(int)
        k = len(labels)
        known = (true >= 0) & (true < k) & (pred >= 0) & (pred < k)  # codes of the labels only
        counts = np.zeros((k, k), dtype=int)
        np.add.at(counts, (true[known], pred[known]), 1)
        share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
        ax.imshow(share, cmap="Blues", vmin=0, vmax=1)
        for r in range(k):
            for c in range(k):
                ax.text(c, r, str(counts[r, c]), ha="center", va="center",
                        color="white" if share[r, c] > 0.6 else "black")
        ax.set_xticks(range(k), labels, rotation=45, ha="right")
        ax.set_yticks(range(k), labels)
        ax.set_xlabel("predicted")
        ax.set_ylabel("true")
        ax.set_title(f"{m}" + (f" · {s.name}" if len(td.segments) > 1 else "") + f" (n={ok.sum()})")

    return _draw(lb, td, path, len(td.segments), panel,
                 "confusion matrices (counts; shade = share of the true label's rows)")


def pred_actual_figure(lb: Leaderboard, td: TaskData, path: Path) -> Path | str:
    cmap = colors(lb.models)

    def panel(ax, m: str, i: int) -> None:
        s = td.segments[i]
        ok = td.valid[m]
        actual, pred = td.ref[ok, s.start], td.preds[m][ok, s.start]
        lo, hi = np.nanpercentile(np.r_[actual, pred], CLIP_PCT)
        if hi <= lo:
            lo, hi = lo - 1.0, hi + 1.0
        outside = int(((actual < lo) | (actual > hi) | (pred < lo) | (pred > hi)).sum())
        ax.scatter(actual, pred, s=10, alpha=0.5, color=cmap.get(m, "tab:blue"))
        ax.plot([lo, hi], [lo, hi], color="black", lw=1, ls="--")
        pad = 0.03 * (hi - lo)
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_ylim(lo - pad, hi + pad)
        ax.set_xlabel(f"actual {s.name}")
        ax.set_ylabel(f"predicted {s.name}")
        ax.set_title(f"{m} (n={ok.sum()}" + (f", {outside} outside" if outside else "") + ")")

    return _draw(lb, td, path, len(td.segments), panel,
                 "predicted vs actual (dashed: prediction = actual)")


def calibration_points(pred: np.ndarray, ref: np.ndarray, bins: int = CAL_BINS):
    """Mean predicted and mean reported probability per equal-width group of predictions."""
    p, r = pred.ravel(), ref.ravel()
    keep = np.isfinite(p) & np.isfinite(r)
    p, r = p[keep], r[keep]
    group = np.clip((p * bins).astype(int), 0, bins - 1)
    n = np.bincount(group, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_p = np.bincount(group, weights=p, minlength=bins) / n
        mean_r = np.bincount(group, weights=r, minlength=bins) / n
    used = n > 0
    return mean_p[used], mean_r[used], n[used]


def calibration_figure(lb: Leaderboard, td: TaskData, path: Path) -> Path | str:
    dist_colors = colors([s.name for s in td.segments])

    def panel(ax, m: str, _: int) -> None:
        ok = td.valid[m]
        for s in td.segments:
            mp, mr, _n = calibration_points(td.preds[m][ok, s.start:s.stop],
                                            td.ref[ok, s.start:s.stop])
            ax.plot(mp, mr, marker="o", color=dist_colors[s.name], label=s.name)
        ax.plot([0, 1], [0, 1], color="black", lw=1, ls="--")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("predicted probability")
        ax.set_ylabel("mean reported probability")
        ax.set_title(f"{m} (n={ok.sum()})")
        ax.legend(loc="upper left")

    return _draw(lb, td, path, 1, panel,
                 f"calibration, predictions in {CAL_BINS} groups (dashed: perfect)")


MAKERS = {"categorical": confusion_figure, "numeric": pred_actual_figure,
          "distribution": calibration_figure}
KIND = {"categorical": "confusion matrices", "numeric": "predicted vs actual",
        "distribution": "calibration"}


def write_diagnostics(lb: Leaderboard, out_dir: Path) -> dict[str, Path]:
    """One diagnostic figure per task with a valid answer: name `task_<task>` -> PNG path."""
    out: dict[str, Path] = {}
    for name, td in lb.tds.items():
        res = MAKERS[td.target_type](lb, td, out_dir / f"task_{name}.png")
        if isinstance(res, Path):
            out[f"task_{name}"] = res
    return out
