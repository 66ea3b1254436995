"""The leaderboard's figures (PNG, matplotlib Agg); a figure is drawn only when it has data.

A figure with nothing to show (e.g. no distribution tasks, no model with a knowledge cutoff) is
not drawn: `write_figures` returns the reason instead, and the report prints it in the figure's
place, so a reader never meets a blank box. Every axis is labelled, text is at least 10 pt at the
size the report shows it (figures are at most ~13 in wide at 100 dpi, i.e. not scaled down in a
1400 px page), and titles of synthetic leaderboards carry a SYNTHETIC label. Per-task diagnostics
(confusion matrices, predicted vs actual, calibration) are in hhx.leaderboard.diagnostics.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.dates as mdates
import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from hhx.leaderboard.diagnostics import write_diagnostics
from hhx.leaderboard.plotting import colors, metric_label, save, subplots, title
from hhx.leaderboard.tables import Leaderboard
from hhx.scoring.metric_names import official

FIGURES = ("leaderboard", "relmae_by_task", "type_summary", "bias", "class_shares",
           "persistence", "cutoff", "over_time")


def _yerr(point, lo, hi) -> np.ndarray:
    point, lo, hi = (np.asarray(x, float) for x in (point, lo, hi))
    return np.nan_to_num(np.vstack([point - lo, hi - point]).clip(min=0))


def leaderboard_figure(lb: Leaderboard, path: Path) -> Path | str:
    t = lb.leaderboard
    fig, ax = subplots(figsize=(9, 0.5 * len(t) + 1.8))
    y = np.arange(len(t))[::-1]
    labels = [m + ("" if c else " (missing tasks)") + ("" if s else " (other examples)")
              for m, c, s in zip(t["model"], t["complete"], t["same_examples"])]
    ax.errorbar(t["avg_rank"], y, xerr=_yerr(t["avg_rank"], t["rank_lo"], t["rank_hi"]),
                fmt="o", color="black", ecolor="gray", capsize=3)
    ax.set_yticks(y, labels)
    ax.set_ylabel("model")
    ax.set_xlabel(f"average rank across tasks (lower is better), "
                  f"{lb.settings.confidence:.0%} bootstrap interval")
    ax.set_title(title(lb, "Leaderboard"))
    return save(fig, path)


def relmae_figure(lb: Leaderboard, path: Path) -> Path | str:
    tm = lb.task_metrics
    num = tm[(tm["target_type"] == "numeric") & (tm["backend"] != "no_change")]
    tasks = sorted(num["task"].unique(), key=lambda t: (lb.tds[t].mode, t))
    models = [m for m in lb.models if m in set(num["model"])]
    if not tasks:
        return "no numeric task has a run other than no-change"
    width_in = 0.35 * len(tasks) * max(1, len(models)) ** 0.5 + 4
    fig, ax = subplots(figsize=(min(13.0, max(8.0, width_in)), 5.5))
    cmap = colors(lb.models)
    width = 0.8 / max(1, len(models))
    for j, m in enumerate(models):
        sub = num[num["model"] == m].set_index("task").reindex(tasks)
        x = np.arange(len(tasks)) + (j - (len(models) - 1) / 2) * width
        bars = ax.bar(x, sub["score"], width, yerr=_yerr(sub["score"], sub["ci_lo"], sub["ci_hi"]),
                      color=cmap[m], label=m, error_kw={"elinewidth": 0.8})
        for bar, t in zip(bars, tasks):
            if lb.tds[t].mode == "policy":
                bar.set_hatch("//")
    ax.axhline(1.0, color="black", lw=0.8, ls="--", label="no-change (= 1)")
    ax.set_xticks(np.arange(len(tasks)), [t + (" (policy)" if lb.tds[t].mode == "policy" else "")
                                          for t in tasks], rotation=45, ha="right")
    ax.set_xlabel("numeric task")
    ax.set_ylabel(f"{official('numeric').name} (1 = no-change; lower is better)")
    ax.legend(ncol=2)
    ax.set_title(title(lb, f"{official('numeric').name} by task; hatched = policy-response"))
    return save(fig, path)


def type_summary_figure(lb: Leaderboard, path: Path) -> Path | str:
    s = lb.summary[lb.summary["group"] != "all"]
    kinds = [k for k in ("numeric", "categorical", "distribution") if k in set(s["target_type"])]
    if not kinds:
        return "no tasks"
    fig, axes = subplots(1, len(kinds), figsize=(min(13.0, 4.5 * len(kinds) + 1), 5),
                         squeeze=False)
    cmap = colors(lb.models)
    for ax, kind in zip(axes[0], kinds):
        part = s[s["target_type"] == kind]
        models = [m for m in lb.models if m in set(part["model"])]
        groups = [g for g in ("baseline", "policy") if g in set(part["group"])]
        for g, group in enumerate(groups):
            sub = part[part["group"] == group].set_index("model").reindex(models)
            x = np.arange(len(models)) + (g - (len(groups) - 1) / 2) * 0.4
            ax.bar(x, sub["mean"], 0.4, yerr=_yerr(sub["mean"], sub["ci_lo"], sub["ci_hi"]),
                   color=[cmap[m] for m in models], hatch="//" if group == "policy" else "",
                   edgecolor="black", lw=0.5)
        ax.set_xticks(np.arange(len(models)), models, rotation=45, ha="right")
        ax.set_xlabel("model (bar colour)")
        ax.set_ylabel(metric_label(kind))
        ax.set_title(f"{kind} tasks")
        # One swatch per group, drawn as the bars are: solid = baseline, hatched = policy.
        ax.legend(handles=[Patch(facecolor="white", edgecolor="black",
                                 hatch="//" if g == "policy" else "",
                                 label=f"{g} tasks ({'hatched' if g == 'policy' else 'solid'})")
                           for g in groups])
    fig.suptitle(title(lb, "Per-type means with bootstrap intervals"))
    return save(fig, path)


def _heatmap(fig, ax, table: pd.DataFrame, title_: str, label: str) -> None:
    lim = float(np.nanmax(np.abs(table.to_numpy(float)))) or 1.0
    im = ax.imshow(table.to_numpy(float), cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    ax.set_xticks(range(table.shape[1]), table.columns, rotation=45, ha="right")
    ax.set_yticks(range(table.shape[0]), table.index)
    ax.set_xlabel("model")
    ax.set_title(title_)
    fig.colorbar(im, ax=ax, label=label)


def bias_figure(lb: Leaderboard, path: Path) -> Path | str:
    b = lb.analyses["bias_numeric"]
    maj = lb.analyses["majority_overprediction"]
    panels = []
    if not b.empty:
        b = b.assign(net=b["share_over"] - b["share_under"], row=b["task"] + ": " + b["target"])
        panels.append((b.pivot(index="row", columns="model", values="net"),
                       "numeric: share over- minus under-predicted", "net over-prediction share",
                       "numeric task: target"))
    if not maj.empty:
        maj = maj.assign(row=maj["task"] + ": " + maj["field"])
        panels.append((maj.pivot(index="row", columns="model", values="excess"),
                       "categorical: majority class, predicted minus true share", "excess share",
                       "categorical task: field"))
    if not panels:
        return "no numeric or categorical task"
    rows = max(len(p[0]) for p in panels)
    fig, axes = subplots(1, len(panels), figsize=(6.5 * len(panels), 0.4 * rows + 3),
                         squeeze=False)
    for ax, (table, head, label, ylabel) in zip(axes[0], panels):
        _heatmap(fig, ax, table, head, label)
        ax.set_ylabel(ylabel)
    fig.suptitle(title(lb, "Bias"))
    return save(fig, path)


def class_shares_figure(lb: Leaderboard, path: Path) -> Path | str:
    cs = lb.analyses["class_shares"]
    fields = cs[["task", "field"]].drop_duplicates().to_numpy().tolist()
    if not fields:
        return "no categorical task"
    ncol = min(3, len(fields))
    nrow = -(-len(fields) // ncol)
    fig, axes = subplots(nrow, ncol, figsize=(min(13.0, 4.5 * ncol + 1), 4.2 * nrow),
                         squeeze=False)
    cmap = colors(lb.models)
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
            ax.bar(x - 0.4 + width * (j + 1.5), sub["pred_share"], width, color=cmap[m], label=m)
        ax.set_xticks(x, labels, rotation=30, ha="right")
        ax.set_ylabel("share of valid rows")
        ax.set_xlabel(fld)
        ax.set_title(task)
        ax.legend()
    for ax in axes.ravel()[len(fields):]:
        ax.set_axis_off()
    fig.suptitle(title(lb, "Predicted vs true class shares"))
    return save(fig, path)


def persistence_figure(lb: Leaderboard, path: Path) -> Path | str:
    p = lb.analyses["persistence"]
    if p.empty or not (p["n"] > 0).any():
        return "no probability (distribution) task"
    p = p[p["model"].map(lambda m: any(td.backends.get(m) != "no_change"
                                       for td in lb.tds.values() if m in td.backends))]
    if p.empty:
        return ("only no-change answers on probability tasks: it is the previous report, so "
                "it has nothing to show against itself")
    fig, ax = subplots(figsize=(9, 5))
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
        ax.scatter(x + (k - 0.5) * 0.4, naive, marker="_", s=300, color="black", zorder=3,
                   label="no-change, same rows" if k == 0 else None)
    ax.set_xticks(x, models, rotation=45, ha="right")
    ax.set_xlabel("model")
    ax.set_ylabel(metric_label("distribution"))
    ax.legend()
    ax.set_title(title(lb, "Reports changed vs unchanged from the previous report"))
    return save(fig, path)


def cutoff_figure(lb: Leaderboard, path: Path) -> Path | str:
    c = lb.analyses["cutoff"]
    if c.empty:
        return "no model records a knowledge cutoff (tag hhx.model_cutoff)"
    panels = []
    for kind in ("numeric", "categorical", "distribution"):
        part = c[(c["target_type"] == kind) & (c["n"] > 0)]
        # Only tasks with rows on both sides of the cutoff, so the two bars compare like with like.
        both = part.groupby(["model", "task"])["period"].transform("nunique") == 2
        means = part[both].groupby(["model", "period"])[["metric", "naive_metric"]].mean()
        if not means.empty:
            panels.append((kind, means))
    if not panels:
        return "no task has rows released both before and after a model's knowledge cutoff"
    fig, axes = subplots(1, len(panels), figsize=(min(13.0, 5 * len(panels) + 1), 5),
                         squeeze=False)
    for ax, (kind, means) in zip(axes[0], panels):
        g = means["metric"].unstack().reindex(columns=["before", "after"])
        naive = means["naive_metric"].unstack().reindex(columns=["before", "after"])
        x = np.arange(len(g))
        ax.bar(x - 0.2, g["before"], 0.4, label="released on/before cutoff")
        ax.bar(x + 0.2, g["after"], 0.4, label="released after cutoff", hatch="//")
        ax.scatter(np.r_[x - 0.2, x + 0.2], np.r_[naive["before"], naive["after"]], marker="_",
                   s=300, color="black", zorder=3, label="no-change, same rows")
        ax.set_xticks(x, g.index, rotation=45, ha="right")
        ax.set_xlabel("model")
        ax.set_ylabel(metric_label(kind))
        ax.set_title(f"{kind} tasks with rows on both sides")
    # The same three entries in every panel: one legend below them, clear of the bars.
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncol=3)
    fig.suptitle(title(lb, "Before vs after the model's knowledge cutoff"))
    return save(fig, path)


def period_midpoint(period: str) -> pd.Timestamp:
    """The middle of a release period ("2021" or "2021Q3"), for a real time axis."""
    p = pd.Period(period, freq="Y" if len(period) == 4 else "Q")
    return (p.start_time + (p.end_time - p.start_time) / 2).floor("D")


def over_time_figure(lb: Leaderboard, path: Path) -> Path | str:
    ot = lb.analyses["over_time"]
    ot = ot[ot["n"] > 0]
    tasks = [t for t in lb.tds if ot.loc[ot["task"] == t, "period"].nunique() >= 2]
    if not tasks:
        return f"no task has rows in two or more release {lb.settings.time_bin}s"
    ncol = min(3, len(tasks))
    nrow = -(-len(tasks) // ncol)
    fig, axes = subplots(nrow, ncol, figsize=(min(13.0, 4.4 * ncol + 1), 3.8 * nrow + 0.8),
                         squeeze=False)
    cmap = colors(lb.models)
    for ax, t in zip(axes.ravel(), tasks):
        td = lb.tds[t]
        part = ot[ot["task"] == t].assign(when=lambda d: d["period"].map(period_midpoint))
        for m in part["model"].unique():
            sub = part[part["model"] == m].sort_values("when")
            ax.plot(sub["when"], sub["metric"], marker="o", color=cmap[m], label=m, lw=1.5)
            if td.backends.get(m) != "no_change":
                # No-change scored on exactly this model's valid rows of each period.
                ax.plot(sub["when"], sub["naive_metric"], color=cmap[m], ls="--", lw=1.2,
                        label=f"no-change on {m}'s rows")
        ax.xaxis.set_major_locator(mdates.AutoDateLocator(maxticks=6))
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))
        ax.set_xlabel(f"release date (midpoint of each {lb.settings.time_bin})")
        ax.set_ylabel(metric_label(td.target_type))
        ax.set_title(t)
    for ax in axes.ravel()[len(tasks):]:
        ax.set_axis_off()
    legend: dict[str, object] = {}  # every model of every panel, once
    for ax in axes.ravel()[:len(tasks)]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    fig.legend(list(legend.values()), list(legend), loc="outside lower center",
               ncol=min(4, len(legend)))
    fig.suptitle(title(lb, f"Official metric by release {lb.settings.time_bin}; dashed: "
                           "no-change on the same rows"))
    return save(fig, path)


def write_figures(lb: Leaderboard, out_dir: Path) -> tuple[dict[str, Path], dict[str, str]]:
    """Draw every figure that has data: (name -> PNG path, name -> why it was not drawn)."""
    makers = {
        "leaderboard": leaderboard_figure, "relmae_by_task": relmae_figure,
        "type_summary": type_summary_figure, "bias": bias_figure,
        "class_shares": class_shares_figure, "persistence": persistence_figure,
        "cutoff": cutoff_figure, "over_time": over_time_figure,
    }
    written: dict[str, Path] = {}
    omitted: dict[str, str] = {}
    for name in FIGURES:
        out = makers[name](lb, out_dir / f"{name}.png")
        if isinstance(out, Path):
            written[name] = out
        else:
            omitted[name] = out
    stale = [p for p in out_dir.glob("*.png") if p.stem in omitted]
    for p in stale:  # a figure of an earlier leaderboard in the same folder must not linger
        p.unlink()
    written.update(write_diagnostics(lb, out_dir))
    return written, omitted
