"""labor_cps_retire: retirement status twelve months ahead of older workers (spec 20_tasks 3).

Facts (reference `scripts/2_tasks/labor_cps_retire/`):
- Link t -> t+12 on CPSIDP > 0, unique in its month on both sides; baseline MISH 1-4, target
  MISH + 4. A positive CPSIDP that repeats within a month stops the build (the reference's
  earnings reference must be unique by person-month), as do repeated (YEAR, MONTH, SERIAL,
  PERNUM) keys and a positive SPLOC that names no person of the household.
- Universe, in order: baseline MISH 1-4, baseline year >= 1995, age 50-75, employed (EMPSTAT
  10/12), target MISH + 4 when linked; a unique linked record whose older-worker status is
  supported (EMPSTAT 10/12/20-22/30-36 or NILFACT 1); the common predictors (relate included,
  although not public), the macro context and AHRSWORKT/UHRSWORKT (0-99); the same-person
  checks (CPSIDV where both observed, SEX and RACE codes, age change 0-2); then the trim: per
  baseline month, p01 and p99 (linear interpolation) of EARNWEEK over every record with
  CPSIDP > 0 and EARNWEEK in [0, 9999]; a row with earnings must lie strictly inside. A month
  with earnings whose p01 equals p99 stops the build. Missing earnings are kept.
- Target `retired` iff the t+12 EMPSTAT is 36, else `not_retired`; both must occur.
- Partner: SPLOC > 0 -> "linked" to PERNUM = SPLOC of the same YEAR/MONTH/SERIAL, with the
  partner's AGE and older-worker status (retired, disabled, other not in the labor force,
  employed, unemployed; "not observed" when it has none); else "no linked spouse or partner".
- Labels from `cps_retirement_labels.csv` (the reference's `mappings/cps_retirement_labels.csv`,
  reproduced verbatim): DIFFANY (code 0 -> "not observed"), FAMINC (995/996/997/999 -> "not
  observed"), IND1990 (0, 998 -> "not observed"), OCC2010 major groups (9999 or a "not in
  universe" group -> "not observed"); missing codes read "not observed"; a code without a
  label stops the build.
- Prompt: background + partner sentence ("You ..., and you live in" after a comma clause);
  work paragraph with the month and dollar note, employer phrase (CLASSWKR required), hours
  (integers, else up to two decimals), multiple jobs ("hold" unless the label is "no"), union
  coverage and weekly earnings ($x.xx) or "not observed", functional difficulty, family-income
  category, occupation and industry; macro paragraph; question; the reference's instruction.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import attach_macro_context
from hhx.tasks.context import BuildContext
from hhx.tasks.cps.common import (
    COMMON_PREDICTORS,
    COMMON_SOURCE_COLUMNS,
    CPS_SYSTEM_PROMPT,
    EMPLOYED_CODES,
    INTERMEDIATE,
    LF_CODES,
    TWELVE_MONTHS,
    apply_filters,
    bounded,
    common_predictors,
    covered_quarters,
    finish_table,
    labels_as_text,
    link_months,
    mask,
    month_keys,
    month_text,
    older_status,
    origin_q_index,
    read_rows,
    same_person,
)
from hhx.tasks.cps.prompt_text import (
    CURRENT_EMPLOYER_PHRASE,
    Background,
    is_missing,
    macro_paragraph,
    number,
    optional_text,
    pick,
    text,
    whole,
)
from hhx.tasks.prompting import (
    article,
    format_dollars,
    month_note,
    response_instruction,
)

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, labor_cps_retire).
OUTPUT_ORDER = ("_outcome_month:text", "id:text", "_mish:number")

TASK = "labor_cps_retire"
LABELS_PATH = Path(__file__).with_name("cps_retirement_labels.csv")
NOT_OBSERVED = "not observed"
NO_PARTNER = "no linked spouse or partner"
UNAVAILABLE = {"DIFFANY": {0}, "FAMINC": {995, 996, 997, 999}, "IND1990": {0, 998}}
KEY_COLUMNS = ["YEAR", "MONTH", "CPSIDP", "MISH", "AGE", "EMPSTAT", "NILFACT", "release_date"]
LINK_CHECK_COLUMNS = ["CPSIDV", "SEX", "RACE", "AGE"]
PREDICTOR_COLUMNS = [
    *COMMON_SOURCE_COLUMNS, "CPSIDV", "SEX", "RACE", "SPLOC", "AHRSWORKT", "UHRSWORKT",
    "EARNWEEK", "DIFFANY", "FAMINC", "OCC2010", "IND1990", "classwkr", "multjob", "union",
]  # fmt: skip
PARTNER_STATUS = {
    "employed": "employed",
    "unemployed": "unemployed",
    "nilf_retired": "retired",
    "nilf_disabled": "disabled",
    "nilf_other": "other not in the labor force",
}
QUESTION = (
    "Will you be retired one year from now? "
    'Use "retired" if you will be retired and "not_retired" if you will not be retired.'
)
INSTRUCTION_LEAD = (
    'Return exactly one valid JSON array containing one string: "retired" or "not_retired".'
)
UNION_SENTENCE = {
    "no union coverage": "You are not covered by a labor union.",
    "member of a labor union": "You are a labor-union member.",
    "covered by a union but not a member": "You are covered by a labor union but are not a member.",
}
DIFFICULTY_SENTENCE = {
    "No difficulty": "You do not have a functional difficulty.",
    "Has difficulty": "You have a functional difficulty.",
    NOT_OBSERVED: "Whether you have a functional difficulty is not observed.",
}
PARTNER_PHRASE = {
    "employed": "employed",
    "unemployed": "unemployed",
    "retired": "retired",
    "disabled": "disabled",
    "other not in the labor force": "otherwise not in the labor force",
}
MULTJOB_LABELS = {"yes": "", "no": ""}
BACKGROUND = Background(TASK, checked=frozenset({"sex", "race", "region", "metro"}),
                        and_you_live=True)  # fmt: skip


# --------------------------------------------------------------------------------------------
# Labels


@functools.cache
def ipums_labels() -> dict[str, dict[int, str]]:
    rows = pd.read_csv(LABELS_PATH, keep_default_na=False)
    return {
        var: dict(zip(g["code"], g["label"], strict=True)) for var, g in rows.groupby("variable")
    }


def code_labels(values: pd.Series, variable: str) -> pd.Series:
    """IPUMS code -> label; unavailable and missing codes -> "not observed"."""
    labels = ipums_labels()[variable]
    codes = pd.to_numeric(values, errors="coerce").round()
    out = []
    for code in codes.tolist():
        if code is None or pd.isna(code):
            out.append(NOT_OBSERVED)
            continue
        code = int(code)
        if variable == "OCC2010":
            label: Any = None if code == 9999 else labels.get(code, False)  # str, None or False
            if label is False:
                raise DataError(
                    f"{TASK}: OCC2010 code {code} has no official group in {LABELS_PATH.name}"
                )
            out.append(NOT_OBSERVED if label is None or label.lower() == "not in universe"
                       else label)  # fmt: skip
            continue
        if code in UNAVAILABLE[variable]:
            out.append(NOT_OBSERVED)
        elif code in labels:
            out.append(labels[code])
        else:
            raise DataError(f"{TASK}: {variable} code {code} has no official IPUMS label in "
                            f"{LABELS_PATH.name}")  # fmt: skip
    return pd.Series(out, index=values.index, dtype=object)


# --------------------------------------------------------------------------------------------
# Whole-file checks and the partner of each record


def _ints(ctx: BuildContext, col: str) -> tuple[np.ndarray, np.ndarray]:
    s = ctx.intermediate(INTERMEDIATE, columns=[col])[col]
    return s.to_numpy(dtype=np.int64, na_value=0), s.notna().to_numpy()


def partner_positions(ctx: BuildContext, rows: np.ndarray) -> np.ndarray:
    """Row of each `rows` record's partner (-1 without SPLOC > 0), after the whole-file checks:
    unique (YEAR, MONTH, SERIAL, PERNUM) and every positive SPLOC naming a person."""
    year, _ = _ints(ctx, "YEAR")
    month, _ = _ints(ctx, "MONTH")
    serial, serial_ok = _ints(ctx, "SERIAL")
    pernum, pernum_ok = _ints(ctx, "PERNUM")
    sploc, _ = _ints(ctx, "SPLOC")
    if not (serial_ok.all() and pernum_ok.all()):
        raise DataError(f"{TASK}: SERIAL or PERNUM is missing in the CPS intermediate")
    for name, v, bits in (("SERIAL", serial, 30), ("PERNUM", pernum, 8), ("SPLOC", sploc, 8)):
        if len(v) and (v.min() < 0 or v.max() >= 2**bits):
            raise DataError(f"{TASK}: {name} {v.max()} is outside 0..{2**bits - 1}")
    head = ((year * 12 + month) << 38) | (serial << 8)
    del year, month, serial
    key = head | pernum
    order = np.argsort(key, kind="stable")
    sk = key[order]
    same = np.flatnonzero(sk[1:] == sk[:-1])
    if len(same):
        i = order[same[0]]
        raise DataError(
            f"{TASK}: a CPS month repeats (YEAR, MONTH, SERIAL, PERNUM) at record {i + 1}; "
            "the household person keys must be unique"
        )
    wanted = head | sploc
    pos = np.minimum(np.searchsorted(sk, wanted), max(len(sk) - 1, 0))
    found = sk[pos] == wanted if len(sk) else np.zeros(0, dtype=bool)
    bad = np.flatnonzero((sploc > 0) & ~found)
    if len(bad):
        raise DataError(
            f"{TASK}: SPLOC {sploc[bad[0]]} of record {bad[0] + 1} names no person of its "
            "household (positive SPLOC values must resolve)"
        )
    partner = np.where(sploc > 0, order[pos], -1)
    return partner[rows]


def earnings_cutoffs(ctx: BuildContext, positive: np.ndarray) -> pd.DataFrame:
    """Per month (year*12+month): p01 and p99 of EARNWEEK over records with CPSIDP > 0 and
    EARNWEEK in [0, 9999]; a month whose two cutoffs are equal stops the build."""
    frame = ctx.intermediate(INTERMEDIATE, columns=["YEAR", "MONTH", "EARNWEEK"])
    earn = frame["EARNWEEK"].astype("float64").to_numpy(na_value=np.nan)
    ok = positive & (earn >= 0) & (earn <= 9999)
    ym = (frame["YEAR"].to_numpy(dtype=np.int64, na_value=0) * 12
          + frame["MONTH"].to_numpy(dtype=np.int64, na_value=0))  # fmt: skip
    del frame
    values = pd.Series(earn[ok], index=ym[ok])
    cut = values.groupby(level=0).quantile([0.01, 0.99]).unstack()
    cut.columns = ["p01", "p99"]
    equal = cut["p01"] >= cut["p99"]
    if equal.any():
        mi = int(cut.index[equal][0])
        raise DataError(
            f"{TASK}: weekly-earnings cutoffs of {(mi - 1) // 12}-{(mi - 1) % 12 + 1:02d} are "
            f"degenerate (p01 = p99 = {cut['p01'][mi]}); the trim needs varying EARNWEEK"
        )
    return cut


# --------------------------------------------------------------------------------------------
# Table


def build_table(ctx: BuildContext) -> pd.DataFrame:
    """All eligible rows: id, time, release_date, target, then the task's predictors in order."""
    task = ctx.task
    ctx.intermediate_path(INTERMEDIATE, [*KEY_COLUMNS, *PREDICTOR_COLUMNS, "SERIAL", "PERNUM"])
    covered = covered_quarters(ctx.macro_context)
    keys = ctx.intermediate(INTERMEDIATE, columns=KEY_COLUMNS)
    key, unique = month_keys(keys, positive_id=False)
    repeated = np.flatnonzero((key >= 0) & ~unique & mask(keys["CPSIDP"] > 0))
    if len(repeated):
        r = keys.iloc[repeated[0]]
        raise DataError(
            f"{TASK}: CPSIDP {r['CPSIDP']} occurs more than once in {r['YEAR']}-"
            f"{int(r['MONTH']):02d}; person-month records must be unique"
        )
    positive = mask(keys["CPSIDP"] > 0)
    del key, unique
    linked = link_months(keys, 12, TWELVE_MONTHS, positive_id=True, require=(),
                         target_columns=("EMPSTAT", "NILFACT", "MISH", "release_date"))  # fmt: skip
    del keys
    steps = [{"step": "person-month records", "rows": len(linked), "dropped": 0}]
    keep = np.ones(len(linked), dtype=bool)
    empstat_t = linked["EMPSTAT_t"]
    apply_filters(steps, keep, [
        ("baseline MISH in 1-4", mask(linked["MISH"].isin(TWELVE_MONTHS.baseline))),
        ("baseline year 1995 or later", mask(linked["YEAR"] >= 1995)),
        ("age 50 or older", mask(linked["AGE"] >= 50)),
        ("age 75 or younger", mask(linked["AGE"] <= 75)),
        ("employed in the baseline month", mask(linked["EMPSTAT"].isin(EMPLOYED_CODES))),
        ("month t+12 record, if any, has MISH + 4", linked["_mish_ok"].to_numpy()),
        ("unique same-CPSIDP record in month t+12",
         linked["_key_ok"].to_numpy() & linked["_linked"].to_numpy()),
        ("t+12 older-worker status supported",
         mask(empstat_t.isin(LF_CODES)) | mask(linked["NILFACT_t"] == 1)),
    ])  # fmt: skip
    first = np.flatnonzero(keep)  # file positions of the candidates
    base = linked.iloc[first].reset_index(drop=True)
    target_pos = linked["_target_pos"].to_numpy()[first]
    del linked
    wanted = [c for c in PREDICTOR_COLUMNS if c not in base.columns]
    base = pd.concat([base, read_rows(ctx, wanted, first)], axis=1)
    predictors = common_predictors(base)
    origin = origin_q_index(base["YEAR"], base["MONTH"])
    hours, usual = bounded(base["AHRSWORKT"], 0, 99), bounded(base["UHRSWORKT"], 0, 99)
    keep = np.ones(len(base), dtype=bool)
    apply_filters(steps, keep, [
        ("common predictors present", predictors.notna().all(axis=1).to_numpy()),
        ("macro context for the baseline quarter", mask(origin.isin(covered))),
        ("ahrsworkt and uhrsworkt (0-99) present", hours.notna().to_numpy()
         & usual.notna().to_numpy()),
    ])  # fmt: skip
    target = read_rows(ctx, LINK_CHECK_COLUMNS, target_pos)
    apply_filters(steps, keep, [
        ("same person at t+12 (CPSIDV, sex, race, age + 0-2)",
         same_person(base, target, (0, 1, 2))),
    ])  # fmt: skip
    earn = bounded(base["EARNWEEK"], 0, 9999.0)
    cut = earnings_cutoffs(ctx, positive)
    mi = (base["YEAR"].astype("int64") * 12 + base["MONTH"].astype("int64")).to_numpy()
    p01 = cut["p01"].reindex(mi).to_numpy()
    p99 = cut["p99"].reindex(mi).to_numpy()
    e = earn.to_numpy()
    apply_filters(steps, keep, [
        ("weekly earnings, if observed, strictly inside the month's p01-p99",
         np.isnan(e) | ((e > p01) & (e < p99))),
    ])  # fmt: skip
    rows = np.flatnonzero(keep)
    partner = partner_positions(ctx, first[rows])
    table = retire_rows(ctx, base.iloc[rows], predictors.iloc[rows], origin.iloc[rows], partner)
    table["ahrsworkt_baseline"] = hours.iloc[rows].to_numpy()
    table["uhrsworkt_baseline"] = usual.iloc[rows].to_numpy()
    table["earnweek_baseline"] = earn.iloc[rows].to_numpy()
    if len(table) and table["target"].nunique() < 2:
        raise DataError(
            f"{TASK}: every eligible row is {table['target'].iloc[0]!r}; the task needs both "
            "retired and not_retired rows"
        )
    floats = ["ahrsworkt_baseline", "uhrsworkt_baseline", "earnweek_baseline"]
    if table["partner_age_baseline"].isna().any():  # ints and None: a float column there
        floats.append("partner_age_baseline")
    return finish_table(table, task, steps, __name__, float_columns=floats)


def retire_rows(
    ctx: BuildContext,
    base: pd.DataFrame,
    predictors: pd.DataFrame,
    origin: pd.Series,
    partner: np.ndarray,
) -> pd.DataFrame:
    """The public columns of the kept rows (plus internal ones), in `base` order."""
    year, month = base["YEAR"].astype("int64"), base["MONTH"].astype("int64")
    table = pd.DataFrame(
        {
            "id": base["CPSIDP"].astype("int64").astype(str).to_numpy(),
            "time": month_text(year, month).to_numpy(),
            "release_date": base["release_date_t"].astype(str).to_numpy(),
            "target": np.where(mask(base["EMPSTAT_t"] == 36), "retired", "not_retired"),
        }
    )
    for c in COMMON_PREDICTORS:
        table[c] = predictors[c].to_numpy()
    has = partner >= 0
    mates = read_rows(ctx, ["AGE", "EMPSTAT", "NILFACT"], np.where(has, partner, 0))
    linked = mask(pd.to_numeric(base["SPLOC"], errors="coerce") > 0)
    if not (linked == has).all():  # a programming error, not bad input
        raise AssertionError("partner lookup disagrees with SPLOC")
    status = older_status(mates["EMPSTAT"], mates["NILFACT"]).map(PARTNER_STATUS)
    table["partner_linked_baseline"] = np.where(linked, "linked", NO_PARTNER)
    age = pd.to_numeric(mates["AGE"], errors="coerce").astype("float64").round()
    table["partner_age_baseline"] = np.where(linked, age.to_numpy(), np.nan)
    table["partner_status_baseline"] = np.where(
        linked, status.fillna(NOT_OBSERVED).to_numpy(dtype=object), NO_PARTNER
    )
    table["baseline_status"] = "employed"
    table["classwkr"] = labels_as_text(base["classwkr"]).to_numpy()
    table["multjob_baseline"] = labels_as_text(base["multjob"]).to_numpy()
    table["union_baseline"] = labels_as_text(base["union"]).to_numpy()
    table["difficulty"] = code_labels(base["DIFFANY"], "DIFFANY").to_numpy()
    table["family_income"] = code_labels(base["FAMINC"], "FAMINC").to_numpy()
    table["occupation"] = code_labels(base["OCC2010"], "OCC2010").to_numpy()
    table["industry"] = code_labels(base["IND1990"], "IND1990").to_numpy()
    table = attach_macro_context(table, origin.reset_index(drop=True), ctx.macro_context)
    table = table.rename(columns={"macro_reference_q_index": "_macro_reference_q_index"})
    nxt = year * 12 + month + 11  # the outcome month, 0-based
    table["_outcome_month"] = month_text(nxt // 12, nxt % 12 + 1).str[:7].to_numpy()
    table["_mish"] = base["MISH"].astype("int64").to_numpy()
    return table


# --------------------------------------------------------------------------------------------
# Prompt


def number_text(value: float) -> str:
    """Whole numbers as integers, else two decimals without trailing zeros."""
    if abs(value - round(value)) < 1e-9:
        return str(int(round(value)))
    return f"{value:.2f}".rstrip("0").rstrip(".")


def partner_sentence(row: Mapping[str, Any]) -> str:
    if text(row, "partner_linked_baseline", TASK) == NO_PARTNER:
        return "You do not live with a spouse or partner."
    age = whole(row, "partner_age_baseline", TASK)
    status = text(row, "partner_status_baseline", TASK)
    if status == NOT_OBSERVED:
        detail = f"They are {article(age)} {age}-year-old whose labor-force status is not observed."
    else:
        phrase = pick(PARTNER_PHRASE, status, "partner_status_baseline", row, TASK)
        detail = f"They are {article(age)} {age}-year-old who is {phrase}."
    return "You live with a spouse or partner. " + detail


def _shown(row: Mapping[str, Any], col: str) -> str:
    value = optional_text(row, col)
    return (
        NOT_OBSERVED if value is None or value.lower() in ("null", "missing", "unknown") else value
    )


def work_paragraph(row: Mapping[str, Any]) -> str:
    month = int(str(row["time"])[5:7])
    employer = pick(CURRENT_EMPLOYER_PHRASE, text(row, "classwkr", TASK), "classwkr", row, TASK)
    multjob = optional_text(row, "multjob_baseline")
    if multjob is not None:
        pick(MULTJOB_LABELS, multjob, "multjob_baseline", row, TASK)
    jobs = "do not hold multiple jobs" if multjob == "no" else "hold multiple jobs"
    sentences = [
        f"Here are your current work, resources, and health. {month_note(month, True)} "
        f"You are currently employed {employer}.",
        f"You worked {number_text(number(row, 'ahrsworkt_baseline', TASK))} hours last week, "
        f"usually work {number_text(number(row, 'uhrsworkt_baseline', TASK))} hours per week, "
        f"and {jobs}.",
    ]
    union = _shown(row, "union_baseline")
    earn: Any = row.get("earnweek_baseline")
    earnings = NOT_OBSERVED if is_missing(earn) else format_dollars(float(earn), 2)
    if union == NOT_OBSERVED and earnings == NOT_OBSERVED:
        sentences.append("Your union coverage and weekly earnings are not observed.")
    else:
        sentences.append(
            "Your union coverage is not observed." if union == NOT_OBSERVED
            else pick(UNION_SENTENCE, union, "union_baseline", row, TASK)
        )  # fmt: skip
        sentences.append(
            "Your weekly earnings are not observed." if earnings == NOT_OBSERVED
            else f"Your weekly earnings are {earnings}."
        )  # fmt: skip
    difficulty = _shown(row, "difficulty")
    sentences.append(pick(DIFFICULTY_SENTENCE, difficulty, "difficulty", row, TASK))
    income = _shown(row, "family_income")
    sentences.append(
        "Your family-income category is not observed." if income == NOT_OBSERVED
        else f"Your family-income category is {income}."
    )  # fmt: skip
    sentences.append(
        f"Your occupation is {_shown(row, 'occupation')}, and your industry is "
        f"{_shown(row, 'industry')}."
    )
    return " ".join(sentences)


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    """(system, user): background and partner, work, macro conditions, question, instruction."""
    user = "\n\n".join(
        [
            BACKGROUND.paragraph(row) + " " + partner_sentence(row),
            work_paragraph(row),
            macro_paragraph(row),
            QUESTION,
            response_instruction(task, lead=INSTRUCTION_LEAD),
        ]
    )
    return CPS_SYSTEM_PROMPT, user


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: not retired a year later."""
    return ["not_retired"]
