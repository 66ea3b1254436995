"""CEX Interview: one FMLI member -> typed candidate records (canonical columns, spending sums,
provenance), with one-line errors naming the member, column and value.

Column checks. NEWID, QINTRVYR, QINTRVMO and the weight (FINLWT21/FINLWT) are required. Of the
other variables, those the CE data dictionary lists for the member's quarter (and for the
quarters either side, so files at a variable's first or last quarter are not held to it) form
two groups, characteristics and spending summaries: a member must carry all of a group or none
of it. None is accepted as a layout extract (BLS's layout stub has only ids and weights): the
group is NA and counted in the report (`fmli_members_without_spending`,
`fmli_members_without_characteristics`); a partial group is a DataError naming the column.

`state`: 2-digit FIPS text. The reference's frozen legacy -> FIPS map (the dictionary's 1980-81
codes, e.g. 35 = Wisconsin, 54 = Virginia, 43 = Missouri) is applied to every year, as the
reference does (so a 1984+ code 35 New Mexico or 54 West Virginia becomes 55 or 51), then codes
outside its canonical 48-code list (e.g. 38, 50, 56) -> NA. No cons_cex task reads `state`.

Spending, each `cons_X` = X current quarter + X previous quarter (sum with at least one
present): `cons_total` (TOTEXP), `cons_food`, `cons_alcohol`, `cons_housing`, `cons_apparel`,
`cons_transport`, `cons_health`, `cons_entertainment`, `cons_personal_care`, `cons_read`,
`cons_education`, `cons_tobacco`, `cons_misc`, `cons_cash_contrib`, `cons_life_insurance`,
`cons_retirement_pension_social_security`, `cons_utilities`, `cons_housop`, `cons_pubtra`,
`cons_gasmo`. The 1984-89 files have no *CQ/*PQ summaries: the Z* summary (ZTOTAL, ZFOODTOT...)
is the current-quarter part, kept in source units. `food_definition_regime` by interview
quarter: legacy < 2023Q2 <= transition <= 2024Q1 < redesigned; in `redesigned` quarters the
food parts are GROCER + FDAWAY (both required), else FOOD. Then `cons_parker_total` =
cons_total - (cash contributions + life insurance + retirement/pensions, NA as 0),
`cons_food_agg`, `cons_strict_nondurables`, `cons_nondurables`, `cons_durables` (spec 1.5; all
four NA when cons_food is NA).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from hhx.errors import DataError
from hhx.surveys.cex.interview_packages import Member, read_member
from hhx.surveys.cex.interview_variables import (
    CANONICAL_STATES,
    CHARACTERISTICS,
    CODEBOOK,
    CONSUMPTION,
    DICTIONARY_RANGES,
    EXTRA_SOURCES,
    LEGACY_STATE,
    RECORD_KEY,
    REQUIRED,
    SOURCE_URL,
    SPENDING,
    Variable,
    qi,
)

_MISSING_TEXT = ("", ".", "NA")
FOOD_TRANSITION = (qi(2023, 2), qi(2024, 1))


# --------------------------------------------------------------------------------------------
# Column checks (see the module notes)


def _listed(source: str, q: int) -> bool:
    """The dictionary lists `source` for quarter q and for the quarters either side."""
    return any(
        first < q and (last is None or q < last)
        for first, last in DICTIONARY_RANGES.get(source, ())
    )


def _current_source(var: Variable, q: int) -> str:
    """The source the dictionary has for quarter q (for naming a missing column)."""
    for src in var.sources:
        if any(first <= q and (last is None or q <= last)
               for first, last in DICTIONARY_RANGES.get(src, ())):
            return src
    return var.sources[0]


def _chosen(variables: list[Variable], columns: set[str]) -> dict[str, str]:
    """Canonical name -> first present source."""
    chosen = {}
    for var in variables:
        for src in var.sources:
            if src in columns:
                chosen[var.name] = src
                break
    return chosen


def _check_group(
    member: Member, group: list[Variable], chosen: dict[str, str], what: str
) -> bool:
    """True if the member carries the group, False if it carries none of it; else DataError."""
    present = [v for v in group if v.name in chosen]
    if not present:
        return False
    q = member.q_index
    for var in group:
        if var.name not in chosen and any(_listed(src, q) for src in var.sources):
            raise DataError(
                f"{member.label}: column {_current_source(var, q)} not found ({what}; the CE "
                f"data dictionary lists it for {member.token[:2]}Q{member.token[2]}); use the "
                f"unmodified BLS file ({SOURCE_URL})"
            )
    return True


# --------------------------------------------------------------------------------------------
# Parsing (text -> typed; one-line errors naming the member, column and value)


def _numbers(raw: pd.DataFrame, columns: list[str], where: str) -> pd.DataFrame:
    """Text columns -> float64 (blank, "." and "NA" missing); the first non-number is an error."""
    if not columns:
        return pd.DataFrame(index=raw.index)
    text = np.char.strip(raw[columns].to_numpy(dtype=str))
    text[np.isin(text, _MISSING_TEXT)] = "nan"
    try:
        values = text.astype("float64")
    except ValueError:
        values = None
    if values is None or not np.isfinite(values[~np.isnan(values)]).all():
        for j, column in enumerate(columns):  # find the culprit for the message
            parsed = pd.to_numeric(pd.Series(text[:, j]), errors="coerce")
            bad = (parsed.isna() & (text[:, j] != "nan")) | np.isinf(parsed)
            if bad.any():
                i = int(np.flatnonzero(bad.to_numpy())[0])
                raise DataError(
                    f"{where}: column {column} has non-numeric value {str(text[i, j])!r} "
                    f"(data row {i + 1})"
                )
    return pd.DataFrame(values, index=raw.index, columns=columns)


def _integers(values: pd.Series, column: str, where: str) -> pd.Series:
    bad = values.notna() & (values != values.round())
    if bad.any():
        raise DataError(f"{where}: column {column} holds {float(values[bad].iloc[0])!r}, "
                        "not an integer")
    return values.astype("Int64")


def _newids(raw: pd.DataFrame, where: str) -> pd.Series:
    text = raw["NEWID"].str.strip().str.strip("'\"")
    ok = text.str.fullmatch(r"\d{1,8}")
    if not ok.all():
        bad = text[~ok].iloc[0]
        raise DataError(f"{where}: column NEWID holds {bad!r}, not a CE id of up to 8 digits")
    return text.str.zfill(8)


def _state_codes(raw: pd.Series) -> pd.Series:
    """Raw STATE text -> 2-digit FIPS text: a whole number (".0" allowed) zero-padded, the legacy
    map applied (every year, as the reference does), then codes outside the canonical list NA."""
    text = raw.str.strip().str.strip("'\"")
    digits = text.str.fullmatch(r"\d+(?:\.0+)?")
    code = text.where(digits).str.split(".").str[0].str.lstrip("0").str.zfill(2)
    code = code.replace(LEGACY_STATE)
    return code.where(code.isin(list(CANONICAL_STATES))).astype("string")


def _check_codes(values: pd.Series, var: str, column: str, where: str) -> None:
    allowed = CODEBOOK[var]
    bad = values.notna() & ~values.isin(list(allowed))
    if bad.any():
        raise DataError(
            f"{where}: column {column} holds code {int(values[bad].iloc[0])}, which is not in "
            f"the CE data dictionary's code list for {column} ({sorted(allowed)}); use the "
            f"unmodified BLS file ({SOURCE_URL})"
        )


def _years(values: pd.Series, where: str) -> pd.Series:
    y = values.copy()
    short = y.notna() & (y < 100)
    y[short] = np.where(y[short] >= 80, 1900 + y[short], 2000 + y[short])
    bad = y.isna() | ~y.between(1980, 2100)
    if bad.any():
        raise DataError(
            f"{where}: column QINTRVYR holds {values[bad].iloc[0]!r}, not an interview year"
        )
    return y.astype("int64")


# --------------------------------------------------------------------------------------------
# One member -> candidate records


@dataclass
class MemberResult:
    frame: pd.DataFrame
    has_spending: bool
    has_characteristics: bool


def read_fmli(member: Member, package_name: str) -> MemberResult:
    """One FMLI member -> typed canonical columns, spending sums and provenance."""
    where = member.label
    wanted = {src for v in REQUIRED + CHARACTERISTICS + SPENDING for src in v.sources}
    raw = read_member(member, wanted | set(EXTRA_SOURCES))
    columns = set(raw.columns)
    for var in REQUIRED:
        if not any(src in columns for src in var.sources):
            raise DataError(
                f"{where}: column {var.sources[0]} not found; use the unmodified BLS Interview "
                f"file ({SOURCE_URL})"
            )
    chosen = _chosen(REQUIRED + CHARACTERISTICS + SPENDING, columns)
    has_chars = _check_group(member, CHARACTERISTICS, chosen, "consumer-unit characteristics")
    spend_group = [v for v in SPENDING if not v.name.startswith("grocery")]
    has_spending = _check_group(member, spend_group, chosen, "spending summaries")

    variables = [v for v in REQUIRED[1:] + CHARACTERISTICS + SPENDING if v.kind != "text"]
    numeric = [chosen[v.name] for v in variables if v.name in chosen]
    numeric += [c for c in EXTRA_SOURCES if c in columns]
    numbers = _numbers(raw, sorted(set(numeric)), where)
    out: dict[str, pd.Series] = {"newid": _newids(raw, where)}
    out["interview_year"] = _years(numbers["QINTRVYR"], where)
    month = _integers(numbers["QINTRVMO"], "QINTRVMO", where)
    bad = month.isna() | ~month.between(1, 12)
    if bad.any():
        raise DataError(
            f"{where}: column QINTRVMO holds {raw['QINTRVMO'][bad].iloc[0]!r}, not a month 1-12"
        )
    out["interview_month"] = month.astype("int64")
    for var in REQUIRED[3:] + CHARACTERISTICS + SPENDING:
        src = chosen.get(var.name)
        if src is None:
            if var.kind == "amount":
                out[var.name] = pd.Series(np.nan, index=raw.index, dtype="float64")
            else:
                dtype = "string" if var.kind == "text" else "Int64"
                out[var.name] = pd.Series(pd.NA, index=raw.index, dtype=dtype)
        elif var.kind == "text":
            out[var.name] = _state_codes(raw[src])
        elif var.kind == "amount":
            out[var.name] = numbers[src]
        else:
            out[var.name] = _integers(numbers[src], src, where)
            if var.name in CODEBOOK:
                _check_codes(out[var.name], var.name, src, where)
    from_newid = out["newid"].str[-1].astype("int64").astype("Int64")
    if "INTERI" in columns:
        interi = _integers(numbers["INTERI"], "INTERI", where)
        out["interview_number"] = interi.fillna(from_newid)
    else:
        out["interview_number"] = from_newid
    frame = pd.DataFrame(out)

    dup = frame.duplicated(RECORD_KEY)
    if dup.any():
        row = frame[dup].iloc[0]
        raise DataError(
            f"{where}: NEWID {row['newid']} appears twice for {row['interview_year']}-"
            f"{row['interview_month']:02d}; each interview must appear once"
        )
    frame = add_spending(frame)
    frame["cex_source_package"] = package_name
    frame["cex_source_member"] = member.name
    frame["cex_quarter_token"] = member.token
    frame["cex_retained_package_year"] = member.package_year
    return MemberResult(frame, has_spending, has_chars)


def food_regime(q_index: pd.Series) -> pd.Series:
    """legacy < 2023Q2 <= transition <= 2024Q1 < redesigned (spec 1.5)."""
    first, last = FOOD_TRANSITION
    return pd.Series(
        np.select([q_index < first, q_index <= last], ["legacy", "transition"], "redesigned"),
        index=q_index.index,
    )


def add_spending(frame: pd.DataFrame) -> pd.DataFrame:
    """cons_X = CQ + PQ (min_count 1), redesigned food, Parker total and aggregates; the
    *_cq / *_pq parts are dropped."""
    quarter = (frame["interview_month"] - 1) // 3 + 1
    regime = food_regime(frame["interview_year"] * 4 + quarter)
    redesigned = (regime == "redesigned").to_numpy()
    parts = {v.name: frame[v.name].to_numpy(dtype="float64") for v in SPENDING}
    for part in ("cq", "pq"):
        grocery, away = parts[f"grocery_{part}"], parts[f"food_away_{part}"]
        parts[f"food_{part}"] = np.where(redesigned, grocery + away, parts[f"food_{part}"])
    cons: dict[str, np.ndarray] = {}
    for name in CONSUMPTION:
        base = name.removeprefix("cons_")
        cq, pq = parts[f"{base}_cq"], parts[f"{base}_pq"]
        both_missing = np.isnan(cq) & np.isnan(pq)
        cons[name] = np.where(both_missing, np.nan, np.nan_to_num(cq) + np.nan_to_num(pq))

    def some(*names: str) -> np.ndarray:
        """Sum with at least one present (pandas min_count=1)."""
        block = np.column_stack([cons[n] for n in names])
        return np.where(np.isnan(block).all(axis=1), np.nan, np.nansum(block, axis=1))

    subtract = sum(
        np.nan_to_num(cons[n])
        for n in ("cons_cash_contrib", "cons_life_insurance",
                  "cons_retirement_pension_social_security")
    )  # fmt: skip
    cons["cons_parker_total"] = cons["cons_total"] - subtract
    cons["cons_food_agg"] = some("cons_food", "cons_alcohol")
    cons["cons_strict_nondurables"] = some(
        "cons_food_agg", "cons_utilities", "cons_housop", "cons_pubtra", "cons_gasmo",
        "cons_personal_care", "cons_tobacco", "cons_misc",
    )  # fmt: skip
    cons["cons_nondurables"] = some(
        "cons_strict_nondurables", "cons_apparel", "cons_health", "cons_read"
    )
    cons["cons_durables"] = cons["cons_parker_total"] - cons["cons_nondurables"]
    no_food = np.isnan(cons["cons_food"])
    for name in ("cons_food_agg", "cons_strict_nondurables", "cons_nondurables",
                 "cons_durables"):  # fmt: skip
        cons[name] = np.where(no_food, np.nan, cons[name])
    spending = pd.DataFrame(cons, index=frame.index)
    spending["food_definition_regime"] = regime
    kept = frame.drop(columns=[v.name for v in SPENDING])
    return pd.concat([kept, spending], axis=1)
