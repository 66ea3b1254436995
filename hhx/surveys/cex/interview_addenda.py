"""CEX Interview: the rebate addenda of packages 2001 and 2008 -> `cex_rebate_2001` and
`cex_stimulus_2008`, each record linked to its reporting interview.

Rebate addenda (10_tasks 4, 5), read only when package 2001 / 2008 is among the inputs; the
package then must hold them (else a DataError naming the zip and member). Task-level work (report
statuses, payment year, assignment to reference windows, late payments) stays with the task
builders; these tables are the survey-level facts:
- `cex_rebate_2001.parquet` from `TAX013.csv` and `TAX014.csv` (any depth, any case; the
  reference's copy has them under "intrvw01/intrvw01/Addendum - Tax Rebate/"): one row per
  addendum record, NEWID unique over both (else DataError). `newid` (8 digits), `cu_id_raw`, per
  field of TAXQ1, TAXQ3, TAXMO1-5 (Int64) and TAXAMT1-5 (float64) the value, `<field>_flag`
  (the `<FIELD>_` letter, text) and `<field>_valid` (flag D, E, F, G, T, U, V or W and a value
  present; A = valid blank and B/C = invalid are not valid; whether a month is 1-12 or an amount
  positive is left to the task). Flags outside A-G, T-W, TAXQ1/TAXQ3 codes outside 1-2 and
  non-integer months are DataErrors. Provenance `cex_source_package`, `cex_source_member`,
  `cex_quarter_token` (013/014), `collection_year`, `collection_quarter`, `source_line`.
- `cex_stimulus_2008.parquet` from `expn08/rbt08.csv` (any depth, or a sibling `expn08/`
  folder of an unzipped `intrvw08/`): the rows with NEWID, RBTMO 1-12 and RBTAMT > 0; each
  dropped row is counted under the first rule it fails in the report rows
  `cex_stimulus_2008_dropped_{no_newid,bad_month,nonpositive_amount}` (`..._rows_read` = all).
  On kept rows CUID must equal NEWID // 10 (else DataError naming member, row and values) and
  CHCKEFT (1 check, 2 EFT) / HOWUSED (1-3) must be dictionary codes. Columns `newid`,
  `cu_id_raw`, `cuid` (7 digits), `rbtmo`, `rbtamt`, `chckeft`, `howused`, `usdintmo`,
  `usdintyr`, the flags `rbtmo_flag`, `rbtamt_flag`, `chckeft_flag`, `howused_flag` (NA when
  the file has no flag column), `cex_source_package`, `cex_source_member`, `source_line`.
Both also carry the reporting interview (`cex_panel_id`, `interview_year`, `interview_month`),
matched by NEWID among the interviews of the quarters the dictionary gives the addendum (2001Q3-Q4;
2008Q2-2009Q1); NA when the interview is not in the inputs, counted as `<name>_unlinked`.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.errors import DataError
from hhx.surveys.cex.interview_fmli import _MISSING_TEXT, _integers, _newids, _numbers
from hhx.surveys.cex.interview_packages import Member, read_member
from hhx.surveys.cex.interview_variables import SOURCE_URL, qi

# --------------------------------------------------------------------------------------------
# Rebate addenda of the 2001 and 2008 packages (spec 10_tasks 4, 5)

REBATE_2001 = "cex_rebate_2001"
STIMULUS_2008 = "cex_stimulus_2008"
# Member names, at any depth, any case: the 2001 addendum sits in the reference's copy at
# "intrvw01/intrvw01/Addendum - Tax Rebate/TAX013.csv", the 2008 one at "expn08/rbt08.csv".
_TAX_RE = re.compile(r"(?:^|/)tax01([34])\.csv$", re.IGNORECASE)
_RBT_RE = re.compile(r"(?:^|/)rbt08\.csv$", re.IGNORECASE)
TAX_TOKENS = ("013", "014")
# CE flags (spec 4): D-G and T-W are valid values, A a valid blank, B and C invalid.
VALID_FLAGS = frozenset("DEFGTUVW")
KNOWN_FLAGS = VALID_FLAGS | frozenset("ABC")
TAX_FIELDS = ["TAXQ1", "TAXQ3", *(f"TAXMO{i}" for i in range(1, 6)),
              *(f"TAXAMT{i}" for i in range(1, 6))]
RBT_FIELDS = ["CUID", "RBTMO", "RBTAMT", "CHCKEFT", "HOWUSED", "USDINTMO", "USDINTYR"]
RBT_FLAGS = ["RBTMO_", "RBTAMT_", "CHCKEFT_", "HOWUSED_"]  # read when present
# Code lists of the CE data dictionary (TAXQ, RBT files).
ADDENDUM_CODES = {"TAXQ1": frozenset({1, 2}), "TAXQ3": frozenset({1, 2}),
                  "CHCKEFT": frozenset({1, 2}), "HOWUSED": frozenset({1, 2, 3})}
# Interview quarters the dictionary gives each addendum: reports link to those interviews.
LINK_QUARTERS = {REBATE_2001: (qi(2001, 3), qi(2001, 4)),
                 STIMULUS_2008: (qi(2008, 2), qi(2009, 1))}
STIMULUS_DROPS = ("no_newid", "bad_month", "nonpositive_amount")


def _addendum_members(path: Path, year: int, pattern: re.Pattern[str]) -> list[Member]:
    """Members of package `path` matching `pattern`; an unzipped package also looks in a sibling
    `expnYY/` folder (where unzipping intrvwYY.zip into one folder puts rbtYY.csv)."""
    if path.is_file():
        with zipfile.ZipFile(path) as zf:
            names = [i.filename for i in zf.infolist() if not i.is_dir()]
    else:
        names = [str(p.relative_to(path)) for p in sorted(path.rglob("*")) if p.is_file()]
        sibling = path.parent / f"expn{year % 100:02d}"
        if sibling.is_dir():
            names += [f"../{sibling.name}/{p.relative_to(sibling)}"
                      for p in sorted(sibling.rglob("*")) if p.is_file()]
    found = []
    for name in sorted(names):
        m = pattern.search(name.replace("\\", "/"))
        if m:
            token = f"01{m.group(1)}" if m.groups() else f"{year % 100:02d}"
            found.append(Member(year, path, name, token))
    return found


def _require_columns(raw: pd.DataFrame, member: Member, columns: Iterable[str]) -> None:
    for column in columns:
        if column not in raw.columns:
            raise DataError(f"{member.label}: column {column} not found; use the unmodified BLS "
                            f"Interview file ({SOURCE_URL})")


def _flags(raw: pd.Series, column: str, where: str) -> pd.Series:
    """CE flag letters as upper-case text (blank -> NA); a letter outside A-G, T-W is an error."""
    text = raw.str.strip().str.strip("'\"").str.upper()
    text = text.where(~text.isin(_MISSING_TEXT))
    bad = text.notna() & ~text.isin(list(KNOWN_FLAGS))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(f"{where}: column {column} holds flag {text.iloc[i]!r} (data row {i + 1}),"
                        f" not a CE flag ({''.join(sorted(KNOWN_FLAGS))})")
    return text.astype("string")


def _check_listed(values: pd.Series, column: str, where: str, rows: pd.Series | None = None
                  ) -> None:
    """Codes outside the dictionary's list for `column` are an error (names the data row)."""
    allowed = ADDENDUM_CODES[column]
    bad = values.notna() & ~values.isin(list(allowed))
    if rows is not None:
        bad &= rows
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        code = float(values.iloc[i])
        raise DataError(
            f"{where}: column {column} holds code {int(code) if code.is_integer() else code} "
            f"(data row {i + 1}), which is "
            f"not in the CE data dictionary's code list {sorted(allowed)}; use the unmodified "
            f"BLS file ({SOURCE_URL})"
        )


def read_rebate_2001(members: list[Member]) -> pd.DataFrame:
    """TAX013/TAX014 -> one row per addendum record: typed fields, flags, flag validity."""
    frames = []
    for member in members:
        where = member.label
        wanted = ["NEWID", *TAX_FIELDS, *(f"{f}_" for f in TAX_FIELDS)]
        raw = read_member(member, wanted)
        _require_columns(raw, member, wanted)
        newid = _newids(raw, where)
        numbers = _numbers(raw, TAX_FIELDS, where)
        out: dict[str, object] = {"newid": newid.astype("string"),
                                  "cu_id_raw": newid.str[:-1].astype("string")}
        for field in TAX_FIELDS:
            name = field.lower()
            if field.startswith("TAXAMT"):
                value = numbers[field]
            else:
                value = _integers(numbers[field], field, where)
                if field in ADDENDUM_CODES:
                    _check_listed(value, field, where)
            flag = _flags(raw[f"{field}_"], f"{field}_", where)
            out[name] = value
            out[f"{name}_flag"] = flag
            out[f"{name}_valid"] = (flag.isin(list(VALID_FLAGS)).fillna(False)
                                    & value.notna()).astype(bool)
        frame = pd.DataFrame(out, index=raw.index)
        frame["cex_source_package"] = member.package_path.name
        frame["cex_source_member"] = member.name
        frame["cex_quarter_token"] = member.token
        frame["collection_year"] = 2001
        frame["collection_quarter"] = int(member.token[2])
        frame["source_line"] = np.arange(2, len(frame) + 2)  # file line (the header is line 1)
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    dup = frame.duplicated("newid", keep=False)
    if dup.any():
        a, b = frame[dup].sort_values("newid", kind="mergesort").head(2).itertuples()
        raise DataError(
            f"{members[0].package_path}: NEWID {a.newid} has two tax-rebate addendum records "
            f"({a.cex_source_member} line {a.source_line}, {b.cex_source_member} line "
            f"{b.source_line}); each interview reports once"
        )
    return frame


def read_stimulus_2008(member: Member) -> tuple[pd.DataFrame, dict[str, int]]:
    """rbt08.csv -> the rows kept by spec 5 (NEWID, RBTMO 1-12, RBTAMT > 0), typed, and the
    count dropped by each rule (a row counts for the first rule it fails)."""
    where = member.label
    raw = read_member(member, ["NEWID", *RBT_FIELDS, *RBT_FLAGS])
    _require_columns(raw, member, ["NEWID", *RBT_FIELDS])
    text = raw["NEWID"].str.strip().str.strip("'\"")
    has_id = ~text.isin(_MISSING_TEXT)
    ok = text.str.fullmatch(r"\d{1,8}(?:\.0+)?")
    if (has_id & ~ok).any():
        i = int(np.flatnonzero((has_id & ~ok).to_numpy())[0])
        raise DataError(f"{where}: column NEWID holds {text.iloc[i]!r} (data row {i + 1}), not "
                        "a CE id of up to 8 digits")
    numbers = _numbers(raw, RBT_FIELDS, where)
    month, amount = numbers["RBTMO"], numbers["RBTAMT"]
    fails = {
        "no_newid": ~has_id,
        "bad_month": ~month.isin(list(range(1, 13))),
        "nonpositive_amount": ~(amount > 0),
    }
    dropped = pd.Series(False, index=raw.index)
    counts = {}
    for rule in STIMULUS_DROPS:
        counts[f"{STIMULUS_2008}_dropped_{rule}"] = int((fails[rule] & ~dropped).sum())
        dropped |= fails[rule]
    counts[f"{STIMULUS_2008}_rows_read"] = len(raw)
    keep = ~dropped
    newid = text.where(keep).str.split(".").str[0].str.zfill(8)
    cuid = numbers["CUID"]
    expected = pd.to_numeric(newid, errors="coerce") // 10
    bad = keep & ~(cuid == expected)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(
            f"{where}: data row {i + 1} has CUID {raw['CUID'].iloc[i].strip()!r} but NEWID "
            f"{newid.iloc[i]} (CUID must equal NEWID // 10 = {int(expected.iloc[i])}); use the "
            f"unmodified BLS file ({SOURCE_URL})"
        )
    kept = raw.index[keep]
    out: dict[str, object] = {"newid": newid[kept].astype("string")}
    out["cu_id_raw"] = newid[kept].str[:-1].astype("string")
    out["cuid"] = cuid[kept].astype("int64").astype(str).str.zfill(7).astype("string")
    for field in RBT_FIELDS[1:]:
        name = field.lower()
        if field == "RBTAMT":
            out[name] = amount[kept]
        else:
            out[name] = _integers(numbers[field][kept], field, where)
        if field in ADDENDUM_CODES:
            _check_listed(numbers[field], field, where, rows=keep)
        if f"{field}_" in RBT_FLAGS:
            flags = (_flags(raw[f"{field}_"], f"{field}_", where) if f"{field}_" in raw.columns
                     else pd.Series(pd.NA, index=raw.index, dtype="string"))
            out[f"{name}_flag"] = flags[kept]
    frame = pd.DataFrame(out, index=kept)
    frame["cex_source_package"] = member.package_path.name
    frame["cex_source_member"] = member.name
    frame["source_line"] = kept.to_numpy() + 2  # file line (the header is line 1)
    return frame.reset_index(drop=True), counts


def link_interviews(frame: pd.DataFrame, table: pd.DataFrame, name: str) -> int:
    """Add the reporting interview (cex_panel_id, interview_year, interview_month) by NEWID among
    the interviews of the addendum's quarters; NA where none (or two) match. Returns the count of
    rows without one."""
    first, last = LINK_QUARTERS[name]
    pool = table.loc[table["q_index"].between(first, last),
                     ["newid", "cex_panel_id", "interview_year", "interview_month"]]
    pool = pool[~pool["newid"].duplicated(keep=False)].set_index("newid")
    linked = pool.reindex(frame["newid"]).set_axis(frame.index)
    frame["cex_panel_id"] = linked["cex_panel_id"].astype("string")
    for column in ("interview_year", "interview_month"):
        frame[column] = linked[column].astype("Int64")
    return int(frame["cex_panel_id"].isna().sum())


def read_addenda(
    packages: dict[int, list[Member]], table: pd.DataFrame, source: str
) -> tuple[dict[str, pd.DataFrame], list[Path], dict[str, int]]:
    """The rebate addenda of packages 2001 and 2008, when those packages are read."""
    frames: dict[str, pd.DataFrame] = {}
    inputs: list[Path] = []
    counts: dict[str, int] = {}
    wanted = {2001: (_TAX_RE, "TAX013.csv and TAX014.csv (2001 tax-rebate addendum)"),
              2008: (_RBT_RE, "expn08/rbt08.csv (2008 stimulus-payment file)")}
    for year, (pattern, what) in wanted.items():
        if year not in packages:
            continue
        path = packages[year][0].package_path
        members = _addendum_members(path, year, pattern)
        tokens = sorted(m.token for m in members)
        expected = list(TAX_TOKENS) if year == 2001 else ["08"]
        if len(set(tokens)) < len(tokens):
            names = ", ".join(m.name for m in members)
            raise DataError(f"{path}: member {what} appears twice ({names}); keep one copy")
        if tokens != expected:
            raise DataError(f"{path}: member {what} not found (found {len(members)} matching "
                            f"files); download intrvw{year % 100:02d}.zip again from {source}")
        if year == 2001:
            name, frame = REBATE_2001, read_rebate_2001(members)
        else:
            name = STIMULUS_2008
            frame, dropped = read_stimulus_2008(members[0])
            counts.update(dropped)
        for column in ("cex_source_package", "cex_source_member", "cex_quarter_token"):
            if column in frame.columns:
                frame[column] = frame[column].astype("string")
        counts[f"{name}_unlinked"] = link_interviews(frame, table, name)
        frames[name] = frame
        if not path.is_file():
            inputs += [path / m.name for m in members]
    return frames, inputs, counts
