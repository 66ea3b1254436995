"""Seeded synthetic `eui_state_08-14.dta` in the layout of the Farber-Rothstein-Valletta archive.

Demo data only: the shape of the 2008-2014 episode (regular UI of 26 weeks, cut below 26 in a
few states from 2011; federal extensions from mid-2008 rising to 73 weeks and ending Dec 2013;
two months with lapsed extensions, where `ext_wks` is 0 but `ui_weeks` keeps the total), with
random state differences; not the historical state schedules.

Layout: Stata 118, columns fips, year, month, reg_UI, ext_wks, ui_weeks (weeks as Stata float)
with the archive's variable labels ('FIPS state code', 'year of obs.', 'month of obs.', ...);
51 states (incl. DC) x 176 months. The archive's month range
is not in the spec; 176 months ending Aug 2014 (the labor_cps_ui window end) are written, i.e.
from Jan 2000.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.io import atomic_path
from hhx.surveys.cps.ui_policy import EXPECTED_MONTHS, STATE_FIPS, VARIABLE_LABELS
from hhx.surveys.synthetic import STATA_TIME_STAMP, generator_label, write_sidecar

LAST_MONTH = pd.Period("2014-08", "M")
# Months in which extended benefits lapsed (ext_wks 0, ui_weeks unchanged).
LAPSES = {pd.Period("2010-06", "M"), pd.Period("2010-07", "M")}


def synthetic_ui_policy_frame(*, seed: int) -> pd.DataFrame:
    """The file's rows: one per state x month, in state then month order."""
    rng = np.random.default_rng(int(seed))
    months = pd.period_range(end=LAST_MONTH, periods=EXPECTED_MONTHS, freq="M")
    m = np.asarray(months.asi8)  # month ordinals: comparisons below are on these

    def at(month: str) -> int:
        return pd.Period(month, "M").ordinal

    federal = (m >= at("2008-07")) & (m <= at("2013-12"))
    tier = np.select([m < at("2008-12"), m < at("2009-12"), m < at("2012-06")], [0, 1, 2], 3)
    lapsed = np.isin(m, [p.ordinal for p in LAPSES])
    frames = []
    for fips in sorted(STATE_FIPS):
        cut = rng.random() < 0.15  # a few states cut regular weeks from 2011
        cut_to = int(rng.choice([14, 20, 23, 25]))
        high = rng.random() < 0.5  # high-unemployment states reach the top tiers
        regular = np.where(cut & (m >= at("2011-07")), cut_to, 26)
        weeks = np.array([13, 33, 73, 63] if high else [13, 20, 53, 37])[tier]
        extension = np.where(federal, weeks, 0)
        frames.append(
            pd.DataFrame(
                {
                    "fips": fips,
                    "year": months.year,
                    "month": months.month,
                    "reg_UI": regular,
                    "ext_wks": np.where(lapsed, 0, extension),
                    "ui_weeks": regular + extension,
                }
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    frame[["fips", "year", "month"]] = frame[["fips", "year", "month"]].astype(np.int16)
    for column in ("reg_UI", "ext_wks", "ui_weeks"):
        frame[column] = frame[column].astype(np.float32)
    return frame


def write_ui_policy_dta(frame: pd.DataFrame, path: str | Path) -> Path:
    labels = dict(VARIABLE_LABELS)  # the archive's labels, exactly as the reference checks them
    with atomic_path(path) as tmp, tempfile.TemporaryDirectory() as folder:
        dta = Path(folder) / "eui_state_08-14.dta"
        frame.to_stata(
            dta,
            write_index=False,
            variable_labels={k: v for k, v in labels.items() if k in frame.columns},
            version=118,
            time_stamp=STATA_TIME_STAMP,
        )
        tmp.write_bytes(dta.read_bytes())
    return Path(path)


def write_synthetic_ui_policy(path: str | Path, *, seed: int) -> Path:
    """Write `eui_state_08-14.dta` to `path`."""
    out = write_ui_policy_dta(synthetic_ui_policy_frame(seed=seed), path)
    write_sidecar(
        out, generator_label("cps_ui_policy"), "synthetic UI policy file", seed=int(seed)
    )
    return out
