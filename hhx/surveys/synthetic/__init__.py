"""Seeded synthetic raw survey files in the official formats, for demos and tests.

Every generator writes a `<file>.synthetic.json` sidecar next to its output so that builds and
reports can tag results as synthetic: they are never findings about households.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pandas as pd

from hhx.errors import ConfigError
from hhx.io import write_json_atomic
from hhx.surveys.base import sidecar_path

# The time stamp written into generated Stata files (pandas writes the current minute otherwise):
# a regenerated demo file is the same bytes.
STATA_TIME_STAMP = dt.datetime(2025, 2, 24, 12, 0)


def generator_label(short: str) -> str:
    """The generator name a sidecar (or a generated file) carries: the generator module's name
    before the surveys were grouped by family (issue 31), so the demo's raw files stay the same
    bytes wherever the module now lives."""
    return f"hhx.surveys.synthetic.{short}"


def write_sidecar(path: Path, generator: str, note: str, **settings: Any) -> Path:
    """Mark a generated file as synthetic (its builder then labels everything built from it)."""
    return write_json_atomic(
        sidecar_path(Path(path)),
        {"synthetic": True, "generator": generator, **settings, "note": note},
    )


def month_index(text: str, what: str, generator: str) -> int:
    """'YYYY-MM' -> year * 12 + month - 1; a bad setting names the generator and the argument."""
    try:
        period = pd.Period(text, "M")
    except ValueError:
        raise ConfigError(f"synthetic {generator}: {what} {text!r} is not YYYY-MM") from None
    return period.year * 12 + period.month - 1
