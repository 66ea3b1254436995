"""Displaced Worker Supplement mechanics shared by labor_cps_displace and income_cps_displace.

Facts (reference `scripts/2_tasks/{labor,income}_cps_displace/`, spec 20_tasks 1 and
10_tasks 21): the universe is every record with DWRESP 2 (interviewed) and DWSTAT 1 (displaced
worker) - in practice the supplement months; no linking. Such a record without YEAR, MONTH,
CPSIDP or MISH stops the build, as does a CPSIDP that repeats within a month. `id` is CPSIDP,
`time` the survey month, the release date that month's. The look-back regime is
`five_year_lookback_1984_1992` for survey years up to 1992, else
`three_year_lookback_1994_plus` ("the past five years" / "the past three years").

The job-loss paragraph: "<month note> During <look-back>, you lost or left a <full-time /
not full-time / variable-hours> job <employer class> <reason>."; then, when known, when you
last worked at that job and the notice received; then union membership and employer health
insurance. A missing or unlisted optional label leaves its phrase out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from hhx.errors import DataError
from hhx.tasks.context import BuildContext
from hhx.tasks.cps.common import (
    COMMON_SOURCE_COLUMNS,
    INTERMEDIATE,
    apply_filters,
    labels_as_text,
    mask,
)
from hhx.tasks.cps.prompt_text import optional_text
from hhx.tasks.prompting import month_note

FIVE_YEAR = "five_year_lookback_1984_1992"
THREE_YEAR = "three_year_lookback_1994_plus"
LOOKBACK_PHRASE = {FIVE_YEAR: "the past five years", THREE_YEAR: "the past three years"}
DW_LABELS = (
    "dwresp", "dwstat", "dwreas", "dwnotice", "dwlastwrk", "dwfulltime", "dwunion", "dwclass",
    "dwhi",
)  # fmt: skip
DW_PREDICTORS = DW_LABELS[1:]  # the public DWS labels (dwresp is checked, not published)
UNIVERSE_COLUMNS = ["YEAR", "MONTH", "DWRESP", "DWSTAT"]
RECORD_COLUMNS = ["CPSIDP", "MISH", "EMPSTAT", "release_date", *COMMON_SOURCE_COLUMNS, *DW_LABELS]

FULLTIME_PHRASE = {"full time": "full-time", "not full time": "not full-time",
                   "hours varied": "variable-hours"}  # fmt: skip
CLASS_PHRASE = {
    "government": "at a government employer",
    "private for-profit": "at a private for-profit employer",
    "private nonprofit": "at a private nonprofit employer",
    "self-employed": "in self-employment",
    "without pay or family business": "in unpaid work in a family business or farm",
}
REASON_PHRASE = {
    "plant or company closed down or moved": "because the plant or company closed down or moved",
    "insufficient work": "because there was insufficient work",
    "position or shift abolished": "because the position or shift was abolished",
    "seasonal job completed": "because a seasonal job was completed",
    "self-operated business failed": "because a self-operated business failed",
    "other reason": "for another reason",
}
TIME_PHRASE = {
    "this year": "this year",
    "last year": "last year",
    "two years ago": "two years ago",
    "three years ago": "three years ago",
    "four years ago": "four years ago",
    "five years ago": "five years ago",
    "other timing": "at another time",
}
NOTICE_PHRASE = {
    "no notice": "no notice",
    "less than 1 month notice": "less than 1 month of notice",
    "1 to 2 months notice": "1 to 2 months of notice",
    "more than 2 months notice": "more than 2 months of notice",
    "notice given, time period not reported": "notice, with the notice period unspecified",
}
# The labels each renderer accepts (an unlisted present value stops the official render).
KNOWN = {
    "dwreas": REASON_PHRASE,
    "dwlastwrk": TIME_PHRASE,
    "dwnotice": NOTICE_PHRASE,
    "dwfulltime": FULLTIME_PHRASE,
    "dwclass": CLASS_PHRASE,
    "dwunion": {"yes": "", "no": ""},
    "dwhi": {"yes": "", "no": ""},
}


def lookback_regime(year: pd.Series) -> pd.Series:
    return pd.Series(
        np.where(pd.to_numeric(year).to_numpy() <= 1992, FIVE_YEAR, THREE_YEAR),
        index=year.index,
        dtype=object,
    )


def displaced_workers(
    ctx: BuildContext, task: str, columns: Sequence[str] = ()
) -> tuple[pd.DataFrame, list[dict]]:
    """Records with DWRESP 2 and DWSTAT 1 (file order), with the record columns, `columns` and
    `dw_lookback_regime`; the construction steps so far."""
    ctx.intermediate_path(INTERMEDIATE, [*UNIVERSE_COLUMNS, *RECORD_COLUMNS, *columns])
    universe = ctx.intermediate(INTERMEDIATE, columns=UNIVERSE_COLUMNS)
    steps = [{"step": "person-month records", "rows": len(universe), "dropped": 0}]
    keep = np.ones(len(universe), dtype=bool)
    apply_filters(steps, keep, [
        ("interviewed in the Displaced Worker Supplement (DWRESP 2)",
         mask(universe["DWRESP"] == 2)),
        ("displaced worker (DWSTAT 1)", mask(universe["DWSTAT"] == 1)),
    ])  # fmt: skip
    rows = np.flatnonzero(keep)
    wanted = [c for c in dict.fromkeys([*RECORD_COLUMNS, *columns]) if c not in UNIVERSE_COLUMNS]
    extra = ctx.intermediate(INTERMEDIATE, columns=wanted, rows=rows)
    base = pd.concat([universe.iloc[rows], extra.set_axis(universe.index[rows])], axis=1)
    base = base.reset_index(drop=True)
    del universe
    absent = base[["YEAR", "MONTH", "CPSIDP", "MISH"]].isna().any(axis=1)
    if absent.any():
        i = int(np.flatnonzero(absent.to_numpy())[0])
        raise DataError(
            f"{task}: a displaced-worker record (DWRESP 2, DWSTAT 1) of "
            f"{base['YEAR'].iloc[i]}-{base['MONTH'].iloc[i]} lacks YEAR, MONTH, CPSIDP or MISH"
        )
    repeated = base.duplicated(["CPSIDP", "YEAR", "MONTH"], keep=False)
    if repeated.any():
        r = base[repeated].iloc[0]
        raise DataError(
            f"{task}: CPSIDP {r['CPSIDP']} has two displaced-worker records in "
            f"{r['YEAR']}-{int(r['MONTH']):02d}; (id, time) must be unique"
        )
    for col in DW_LABELS:
        base[col] = labels_as_text(base[col])
    base["dw_lookback_regime"] = lookback_regime(base["YEAR"])
    return base, steps


def check_labels(row: Mapping[str, Any], task: str) -> None:
    """Present DWS labels must be ones the renderer words (the reference's table check)."""
    for col, known in KNOWN.items():
        value = optional_text(row, col)
        if value is not None and value not in known:
            raise DataError(
                f"{task}: {col} {value!r} has no prompt wording (id {row.get('id')!r}); "
                f"known: {sorted(known)}"
            )


def job_loss_sentences(row: Mapping[str, Any], task: str, *, currency: bool) -> list[str]:
    """The first sentences of the job-loss paragraph (see the module docstring)."""
    regime = optional_text(row, "dw_lookback_regime")
    if regime is not None and regime not in LOOKBACK_PHRASE:
        raise DataError(f"{task}: dw_lookback_regime {regime!r} is not a look-back regime")
    if regime is None:
        regime = FIVE_YEAR if int(str(row["time"])[:4]) <= 1992 else THREE_YEAR
    fulltime = FULLTIME_PHRASE.get(optional_text(row, "dwfulltime") or "")
    job = "job" if fulltime is None else f"{fulltime} job"
    cls = CLASS_PHRASE.get(optional_text(row, "dwclass") or "")
    reason = REASON_PHRASE.get(optional_text(row, "dwreas") or "")
    month = int(str(row["time"])[5:7])
    sentences = [
        f"{month_note(month, currency)} During {LOOKBACK_PHRASE[regime]}, you lost or left a "
        f"{job}{f' {cls}' if cls else ''}{f' {reason}' if reason else ''}."
    ]
    last = TIME_PHRASE.get(optional_text(row, "dwlastwrk") or "")
    notice = NOTICE_PHRASE.get(optional_text(row, "dwnotice") or "")
    if last and notice:
        sentences.append(
            f"You last worked at that job {last} and received {notice} before the job loss."
        )
    elif last:
        sentences.append(f"You last worked at that job {last}.")
    elif notice:
        sentences.append(f"You received {notice} before the job loss.")
    clauses = []
    union, health = optional_text(row, "dwunion"), optional_text(row, "dwhi")
    if union in ("yes", "no"):
        clauses.append(
            f"You were {'a' if union == 'yes' else 'not a'} labor-union member at that job"
        )
    if health in ("yes", "no"):
        clauses.append(
            f"the job {'provided' if health == 'yes' else 'did not provide'} health insurance"
        )
    if clauses:
        sentences.append(", and ".join(clauses) + ".")
    return sentences
