"""The leaderboard's figures (PNG, matplotlib Agg); every one is always written.

A figure with nothing to show (e.g. no distribution tasks) says so in its panel rather than
being left out, so the report always has the same sections. Titles of synthetic leaderboards
carry a SYNTHETIC label.
"""

from __future__ import annotations

import logging
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
# Category axes of task names log one INFO line per plot; they are not news to the user.
logging.getLogger("matplotlib.category").setLevel(logging.WARNING)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from hhx.io import atomic_path  # noqa: E402
from hhx.leaderboard.metrics import OFFICIAL  # noqa: E402
from hhx.leaderboard.tables import Leaderboard  # noqa: E402

SYNTHETIC_LABEL = "[SYNTHETIC DEMO DATA - not findings about households] "
FIGURES = ("leaderboard", "relmae_by_task", "type_summary", "bias", "class_shares",
           "persistence", "cutoff", "over_time")


def _colors(models: list[str]) -> dict[str, tuple]:
    # tab10's colours are the most distinct; tab20 (paired shades) only when there are more models.
    cmap = plt.get_cmap("tab10" if len(models) <= 10 else "tab20")
    return {m: cmap(i % cmap.N) for i, m in enumerate(models)}


def _subplots(*args, **kwargs):
    return plt.subplots(*args, layout="constrained", **kwargs)


def _title(lb: Leaderboard, text: str) -> str:
    return (SYNTHETIC_LABEL if lb.synthetic else "") + text + f" (split {lb.split})"


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def _save(fig, path: Path, dpi: int = 110) -> Path:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return path


def _yerr(point, lo, hi) -> np.ndarray:
    point, lo, hi = (np.asarray(x, float) for x in (point, lo, hi))
    return np.nan_to_num(np.vstack([point - lo, hi - point]).clip(min=0))


def leaderboard_figure(lb: Leaderboard, path: Path) -> Path:
    t = lb.leaderboard
    fig, ax = _subplots(figsize=(7, 0.45 * len(t) + 1.5))
    y = np.arange(len(t))[::-1]
    labels = [m + ("" if c else " (missing tasks)") for m, c in zip(t["model"], t["complete"])]
    ax.errorbar(t["avg_rank"], y, xerr=_yerr(t["avg_rank"], t["rank_lo"], t["rank_hi"]),
                fmt="o", color="black", ecolor="gray", capsize=3)
    ax.set_yticks(y, labels)
    ax.set_xlabel(f"average rank across tasks (lower is better), "
                  f"{lb.settings.confidence:.0%} bootstrap interval")
    ax.set_title(_title(lb, "Leaderboard"), fontsize=9)
    return _save(fig, path)


def relmae_figure(lb: Leaderboard, path: Path) -> Path:
    tm = lb.task_metrics
    num = tm[(tm["target_type"] == "numeric") & (tm["backend"] != "no_change")]
    tasks = sorted(num["task"].unique(), key=lambda t: (lb.tds[t].mode, t))
    models = [m for m in lb.models if m in set(num["model"])]
    width_in = 0.3 * len(tasks) * max(1, len(models)) ** 0.5 + 3
    fig, ax = _subplots(figsize=(min(24.0, max(7.0, width_in)), 5))
    if not tasks:
        _empty(ax, "no numeric tasks")
        return _save(fig, path)
    colors = _colors(lb.models)
    width = 0.8 / max(1, len(models))
    for j, m in enumerate(models):
        sub = num[num["model"] == m].set_index("task").reindex(tasks)
        x = np.arange(len(tasks)) + (j - (len(models) - 1) / 2) * width
        bars = ax.bar(x, sub["score"], width, yerr=_yerr(sub["score"], sub["ci_lo"], sub["ci_hi"]),
                      color=colors[m], label=m, error_kw={"elinewidth": 0.6})
        for bar, t in zip(bars, tasks):
            if lb.tds[t].mode == "policy":
                bar.set_hatch("//")
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xticks(np.arange(len(tasks)), [t + (" (policy)" if lb.tds[t].mode == "policy" else "")
                                          for t in tasks], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("RelMAE (1 = no-change; lower is better)")
    ax.legend(fontsize=7, ncol=2)
    ax.set_title(_title(lb, "RelMAE relative to no-change by task; hatched = policy-response"),
                 fontsize=9)
    return _save(fig, path)


def type_summary_figure(lb: Leaderboard, path: Path) -> Path:
    s = lb.summary[lb.summary["group"] != "all"]
    kinds = [k for k in ("numeric", "categorical", "distribution") if k in set(s["target_type"])]
    fig, axes = _subplots(1, max(1, len(kinds)), figsize=(5 * max(1, len(kinds)), 4.5),
                             squeeze=False)
    if not kinds:
        _empty(axes[0, 0], "no tasks")
        return _save(fig, path)
    colors = _colors(lb.models)
    for ax, kind in zip(axes[0], kinds):
        part = s[s["target_type"] == kind]
        models = [m for m in lb.models if m in set(part["model"])]
        for g, (group, hatch) in enumerate((("baseline", ""), ("policy", "//"))):
            sub = part[part["group"] == group].set_index("model").reindex(models)
            x = np.arange(len(models)) + (g - 0.5) * 0.4
            ax.bar(x, sub["mean"], 0.4, yerr=_yerr(sub["mean"], sub["ci_lo"], sub["ci_hi"]),
                   color=[colors[m] for m in models], hatch=hatch, edgecolor="black", lw=0.3,
                   label=group)
        ax.set_xticks(np.arange(len(models)), models, rotation=60, ha="right", fontsize=7)
        ax.set_title(f"{part['metric'].iloc[0]} ({kind})", fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(_title(lb, "Per-type means, baseline (solid) vs policy (hatched) tasks"),
                 fontsize=9)
    return _save(fig, path)


def _heatmap(ax, table: pd.DataFrame, title: str, label: str) -> None:
    if table.empty:
        _empty(ax, f"no data: {title}")
        return
    lim = float(np.nanmax(np.abs(table.to_numpy(float)))) or 1.0
    im = ax.imshow(table.to_numpy(float), cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    ax.set_xticks(range(table.shape[1]), table.columns, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(table.shape[0]), table.index, fontsize=7)
    ax.set_title(title, fontsize=9)
    plt.colorbar(im, ax=ax, label=label)


def bias_figure(lb: Leaderboard, path: Path) -> Path:
    b = lb.analyses["bias_numeric"]
    maj = lb.analyses["majority_overprediction"]
    fig, axes = _subplots(1, 2, figsize=(13, 0.3 * max(len(b), len(maj), 10) / 2 + 3))
    if b.empty:
        _empty(axes[0], "no numeric tasks")
    else:
        b = b.assign(net=b["share_over"] - b["share_under"],
                     row=b["task"] + ": " + b["target"])
        _heatmap(axes[0], b.pivot(index="row", columns="model", values="net"),
                 "numeric: share over- minus under-predicted", "net over-prediction share")
    if maj.empty:
        _empty(axes[1], "no categorical tasks")
    else:
        maj = maj.assign(row=maj["task"] + ": " + maj["field"])
        _heatmap(axes[1], maj.pivot(index="row", columns="model", values="excess"),
                 "categorical: majority class predicted minus true share", "excess share")
    fig.suptitle(_title(lb, "Bias"), fontsize=9)
    return _save(fig, path)


def class_shares_figure(lb: Leaderboard, path: Path) -> Path:
    cs = lb.analyses["class_shares"]
    fields = cs[["task", "field"]].drop_duplicates().to_numpy().tolist()
    ncol = 3
    nrow = max(1, -(-len(fields) // ncol))
    fig, axes = _subplots(nrow, ncol, figsize=(15, 3.5 * nrow), squeeze=False)
    if not fields:
        _empty(axes[0, 0], "no categorical tasks")
    colors = _colors(lb.models)
    for ax, (task, fld) in zip(axes.ravel(), fields):
        part = cs[(cs["task"] == task) & (cs["field"] == fld)]
        labels = list(dict.fromkeys(part["label"]))
        models = list(dict.fromkeys(part["model"]))
        # The true share shown is over all rows (the no-change/derived model answers every row).
        ref_model = max(models, key=lambda m: part.loc[part["model"] == m, "n"].iloc[0])
        true = part[part["model"] == ref_model].set_index("label").reindex(labels)["true_share"]
        width = 0.8 / (len(models) + 1)
        x = np.arange(len(labels))
        ax.bar(x - 0.4 + width / 2, true, width, color="black", label="true")
        for j, m in enumerate(models):
            sub = part[part["model"] == m].set_index("label").reindex(labels)
            ax.bar(x - 0.4 + width * (j + 1.5), sub["pred_share"], width, color=colors[m], label=m)
        ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=7)
        ax.set_title(f"{task}: {fld}", fontsize=8)
    for ax in axes.ravel()[len(fields):]:
        ax.set_axis_off()
    if fields:
        axes[0, 0].legend(fontsize=6)
    fig.suptitle(_title(lb, "Predicted vs true class shares"), fontsize=9)
    return _save(fig, path)


def persistence_figure(lb: Leaderboard, path: Path) -> Path:
    p = lb.analyses["persistence"]
    fig, ax = _subplots(figsize=(8, 4.5))
    if p.empty:
        _empty(ax, "no probability (distribution) tasks")
        return _save(fig, path)
    p = p[p["n"] > 0].assign(w_model=lambda d: d["model_tv"] * d["n"],
                             w_naive=lambda d: d["naive_tv"] * d["n"])
    g = p.groupby(["model", "subset"])[["w_model", "w_naive", "n"]].sum()
    models = [m for m in lb.models if m in g.index.get_level_values(0)]
    x = np.arange(len(models))
    for k, (subset, hatch) in enumerate((("changed", ""), ("unchanged", "//"))):
        vals = [g.loc[(m, subset), "w_model"] / g.loc[(m, subset), "n"]
                if (m, subset) in g.index else np.nan for m in models]
        naive = [g.loc[(m, subset), "w_naive"] / g.loc[(m, subset), "n"]
                 if (m, subset) in g.index else np.nan for m in models]
        ax.bar(x + (k - 0.5) * 0.4, vals, 0.4, hatch=hatch, edgecolor="black",
               color="tab:blue" if subset == "changed" else "tab:orange",
               label=f"model, {subset} reports")
        ax.scatter(x + (k - 0.5) * 0.4, naive, marker="_", s=200, color="black", zorder=3,
                   label="no-change" if k == 0 else None)
    ax.set_xticks(x, models, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("mean TV (lower is better)")
    ax.legend(fontsize=7)
    ax.set_title(_title(lb, "Probability reports changed vs unchanged from the previous report"),
                 fontsize=9)
    return _save(fig, path)


def cutoff_figure(lb: Leaderboard, path: Path) -> Path:
    c = lb.analyses["cutoff"]
    kinds = [k for k in ("numeric", "categorical", "distribution") if k in set(c["target_type"])]
    fig, axes = _subplots(1, max(1, len(kinds)), figsize=(5 * max(1, len(kinds)), 4.5),
                             squeeze=False)
    if not kinds:
        _empty(axes[0, 0], "no model with a knowledge cutoff (tag hhx.model_cutoff)")
        return _save(fig, path)
    for ax, kind in zip(axes[0], kinds):
        part = c[(c["target_type"] == kind) & (c["n"] > 0)]
        # Only tasks with rows on both sides of the cutoff, so the two bars compare like with like.
        both = part.groupby(["model", "task"])["period"].transform("nunique") == 2
        means = part[both].groupby(["model", "period"])[["metric", "naive_metric"]].mean()
        if means.empty:
            _empty(ax, f"{kind}: no task with rows both before and after a cutoff")
            continue
        g = means["metric"].unstack().reindex(columns=["before", "after"])
        naive = means["naive_metric"].unstack().reindex(columns=["before", "after"])
        x = np.arange(len(g))
        ax.bar(x - 0.2, g["before"], 0.4, label="released on/before cutoff")
        ax.bar(x + 0.2, g["after"], 0.4, label="released after cutoff", hatch="//")
        ax.scatter(np.r_[x - 0.2, x + 0.2], np.r_[naive["before"], naive["after"]], marker="_",
                   s=200, color="black", zorder=3, label="no-change, same rows")
        ax.set_xticks(x, g.index, rotation=60, ha="right", fontsize=7)
        ax.set_title(f"{OFFICIAL[kind]} ({kind} tasks with rows on both sides)", fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(_title(lb, "Before vs after the model's knowledge cutoff"), fontsize=9)
    return _save(fig, path)


def over_time_figure(lb: Leaderboard, path: Path) -> Path:
    ot = lb.analyses["over_time"]
    tasks = [t for t in lb.tds if ot.loc[ot["task"] == t, "period"].nunique() >= 2]
    ncol = 4
    nrow = max(1, -(-len(tasks) // ncol))
    fig, axes = _subplots(nrow, ncol, figsize=(16, 3.2 * nrow), squeeze=False)
    if not tasks:
        _empty(axes[0, 0], "no task spans two or more release periods")
    colors = _colors(lb.models)
    for ax, t in zip(axes.ravel(), tasks):
        part = ot[(ot["task"] == t) & (ot["n"] > 0)]
        for m in part["model"].unique():
            sub = part[part["model"] == m]
            ax.plot(sub["period"], sub["metric"], marker=".", color=colors[m], label=m, lw=1)
        naive = part.groupby("period")["naive_metric"].mean()
        ax.plot(naive.index, naive.to_numpy(), color="black", ls="--", lw=0.8, label="no-change")
        ax.set_title(f"{t} ({lb.tds[t].target_type})", fontsize=8)
        ax.tick_params(axis="x", labelrotation=60, labelsize=6)
    for ax in axes.ravel()[len(tasks):]:
        ax.set_axis_off()
    if tasks:
        axes[0, 0].legend(fontsize=6)
    fig.suptitle(_title(lb, f"Official metric by release {lb.settings.time_bin}"), fontsize=9)
    return _save(fig, path, dpi=80 if len(tasks) > 8 else 110)  # keeps the report small


def write_figures(lb: Leaderboard, out_dir: Path) -> dict[str, Path]:
    """Write every figure; returns name -> PNG path."""
    makers = {
        "leaderboard": leaderboard_figure, "relmae_by_task": relmae_figure,
        "type_summary": type_summary_figure, "bias": bias_figure,
        "class_shares": class_shares_figure, "persistence": persistence_figure,
        "cutoff": cutoff_figure, "over_time": over_time_figure,
    }
    return {name: makers[name](lb, out_dir / f"{name}.png") for name in FIGURES}
