"""What every leaderboard figure shares: matplotlib (Agg), colours, layout, titles, saving.

Both the summary figures (hhx.leaderboard.figures) and the per-task diagnostics
(hhx.leaderboard.diagnostics) draw with these, so neither imports the other's module for them.
Text is at least MIN_FONT points at the size the report shows it (figures are at most ~13 in
wide at DPI 100, i.e. not scaled down in a 1400 px page); titles of synthetic leaderboards carry
a SYNTHETIC label.
"""

from __future__ import annotations

import logging
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
# Category axes of task names log one INFO line per plot; they are not news to the user.
logging.getLogger("matplotlib.category").setLevel(logging.WARNING)

import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.text  # noqa: E402

from hhx.io import atomic_path  # noqa: E402
from hhx.leaderboard.tables import Leaderboard  # noqa: E402
from hhx.scoring.metric_names import official  # noqa: E402

SYNTHETIC_LABEL = "[SYNTHETIC DEMO DATA] "
MIN_FONT = 10  # points; tests check every text of every figure
DPI = 100


def metric_label(kind: str) -> str:
    """The official metric of a target type with its direction, for axes and headers."""
    return official(kind).label


def colors(models: list[str]) -> dict[str, tuple]:
    # tab10's colours are the most distinct; tab20 (paired shades) only when there are more models.
    cmap = plt.get_cmap("tab10" if len(models) <= 10 else "tab20")
    return {m: cmap(i % cmap.N) for i, m in enumerate(models)}


def subplots(*args, **kwargs):
    # matplotlib's default sizes (10 pt text, 12 pt titles) are the floor; no call sets less.
    return plt.subplots(*args, layout="constrained", **kwargs)


def title(lb: Leaderboard, text: str) -> str:
    return (SYNTHETIC_LABEL if lb.synthetic else "") + text + f" (split {lb.split})"


def save(fig, path: Path) -> Path:
    """Write the figure, first raising any text below MIN_FONT (tick labels set per call)."""
    for text in fig.findobj(matplotlib.text.Text):
        if text.get_text() and text.get_fontsize() < MIN_FONT:
            text.set_fontsize(MIN_FONT)
    with atomic_path(path) as tmp:
        # "tight" widens a narrow figure to its long (suptitle) text instead of clipping it.
        fig.savefig(tmp, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path
