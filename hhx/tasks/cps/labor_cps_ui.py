"""labor_cps_ui: next-month work status of unemployed job losers under the state's maximum UI
duration (spec 20_tasks 5).

Facts (reference `scripts/2_tasks/labor_cps_ui/`):
- Baseline months January 2008 - August 2014 (the policy window); the link t -> t+1 on
  CPSIDP > 0 unique in its month on both sides. Universe: baseline MISH 1-3/5-7, unemployed
  (EMPSTAT 20-22), WHYUNEMP 1-3 (job losers), age 18-69, DURUNEMP a whole number 0-998 (no
  minimum). Then a linked record with a supported status; the baseline state-month policy cell
  (`cps_ui_policy`, status as of day 5 of the baseline month) with regular >= 0, extension >=
  0 and maximum > 0 weeks; the labels sex, race, educ, marst, state, region, metro, hispan,
  nativity, citizen, vetstat; FAMSIZE and NCHILD; WKSTAT one of the two seeking labels; OCC
  and IND in a broad group; the macro context. Then the same-person checks (target MISH + 1,
  CPSIDV where both observed, SEX and RACE codes, age change 0 or 1), the target's release
  date, WTFINL > 0, FAMSIZE >= 1 with 0 <= NCHILD <= FAMSIZE, regular + extension = maximum
  and the effective date on day 5. No trimming; every eligible row is exported.
- `id` = "lcui_" + blake2b-12 hex of "labor_cps_ui|<CPSIDP>"; `time` the baseline month; the
  release date the t+1 file's; no-change answer `["unemployed"]`.
- The reference's whole-table checks are kept: every linked row with a supported status has a
  veteran label; the analysis weights of every calendar month, state, MISH, duration band and
  target class of the universe sum above 0; the table holds the three representative prompts
  (a temporary layoff without extension weeks; active search with extension weeks; a spell of
  52+ weeks with extension weeks; three different persons). The reference's frozen row count
  (158,989 on its inputs) is not enforced: it holds for the real extract only.
- Broad groups of OCC and IND: the reference's ranges and overrides (see `broad_occupation`,
  `broad_industry`), reproduced as data.
- Prompt: background (race checked; four nativity/citizenship pairs); labor paragraph (month
  note without dollar clause; seeking full/part-time; weeks unemployed; last full-time work
  when actively searching; the most recent job's class when present); additional-information
  paragraph; macro paragraph; policy paragraph (weeks as integers, else one decimal); question
  with the status definitions; instruction.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import attach_macro_context
from hhx.tasks.context import BuildContext
from hhx.tasks.cps.common import (
    ADJACENT_MONTH,
    COMMON_LABELS,
    COMMON_PREDICTORS,
    CPS_SYSTEM_PROMPT,
    INTERMEDIATE,
    LF_CODES,
    UNEMPLOYED_CODES,
    apply_filters,
    common_predictors,
    covered_quarters,
    finish_table,
    labels_as_text,
    lf_status,
    link_months,
    mask,
    month_text,
    origin_q_index,
    read_rows,
    same_person,
)
from hhx.tasks.cps.prompt_text import (
    LF_QUESTION_DEFINITIONS,
    RECENT_JOB_SENTENCE,
    UI_NATIVITY_CITIZEN_SENTENCE,
    WKSTAT_SENTENCE,
    WNFTLOOK_PHRASE,
    Background,
    macro_paragraph,
    number,
    optional_text,
    pick,
    text,
    week_count,
    whole,
)
from hhx.tasks.prompting import month_note, response_instruction

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, labor_cps_ui).
OUTPUT_ORDER = ("time:text", "id:text", "_mish:number")

TASK = "labor_cps_ui"
POLICY = "cps_ui_policy"
FIRST, LAST = 2008 * 12 + 1, 2014 * 12 + 8  # baseline window, year*12 + month
WINDOW_CELLS = 80 * 51
KEY_COLUMNS = ["YEAR", "MONTH", "CPSIDP", "MISH", "AGE", "EMPSTAT", "WHYUNEMP", "DURUNEMP",
               "release_date", "release_date_source"]  # fmt: skip
PREDICTOR_COLUMNS = ["CPSIDV", "SEX", "RACE", "STATEFIP", "FAMSIZE", "NCHILD", "WTFINL", "OCC",
                     "IND", *COMMON_LABELS, "classwkr", "wkstat", "wnftlook"]  # fmt: skip
POLICY_COLUMNS = ["fips", "year", "month", "policy_effective_date", "regular_ui_weeks",
                  "extension_ui_weeks", "maximum_ui_weeks", "source_active_extension_weeks"]  # fmt: skip
WHYUNEMP_TEXT = {
    1: "you were on temporary layoff from a job",
    2: "you lost a job for another reason",
    3: "a temporary job ended",
}
SEARCH_STATUS = {1: "temporary_layoff", 2: "active_search", 3: "active_search"}
OCCUPATION_LABELS = {
    1: "management occupations",
    2: "professional occupations",
    3: "technical occupations",
    4: "sales occupations",
    5: "administrative support occupations",
    7: "protective-service occupations",
    8: "other service occupations",
    9: "production, craft, and repair occupations",
    10: "machine-operating and production occupations",
    11: "transportation and material-moving occupations",
    12: "laboring and cleaning occupations",
    13: "farming occupations",
    14: "the armed forces",
}
INDUSTRY_LABELS = {
    1: "agriculture",
    2: "mining",
    3: "construction",
    4: "nondurable-goods manufacturing",
    5: "durable-goods manufacturing",
    6: "transportation, communications, and public utilities",
    7: "wholesale trade",
    8: "retail trade",
    9: "finance, insurance, and real estate",
    10: "business services",
    11: "personal services",
    12: "entertainment services",
    13: "professional services",
    14: "government",
    15: "the armed forces",
}
# (first, last, group): the first matching range decides ...
OCC_RANGES = ((10, 950, 1), (1000, 2960, 2), (4700, 4965, 4), (5000, 5940, 5), (3700, 3955, 7),
              (3600, 3655, 8), (4000, 4650, 8), (6200, 7630, 9), (7700, 8965, 10),
              (9000, 9750, 11), (6000, 6130, 13), (9840, 9840, 14))  # fmt: skip
# ... then these overrides apply in order, each replacing the group.
OCC_OVERRIDES = (((6260, 6260), (6600, 6600), (6930, 6930), (7610, 7610), (8950, 8950),
                  (9610, 9610), (9620, 9620), (9640, 9640), 12),
                 ((1550, 1550), (1560, 1560), (2140, 2140), (2900, 2900), (9030, 9030),
                  (9040, 9040), (3300, 3540), 3),
                 ((3000, 3260), 2), ((3600, 3650), 8))  # fmt: skip
IND_RANGES = ((170, 290, 1), (370, 490, 2), (770, 770, 3), (1070, 2390, 4), (2470, 3990, 5),
              (6070, 6780, 6), (4070, 4590, 7), (4670, 5790, 8), (6870, 7190, 9),
              (8560, 8590, 12), (9370, 9590, 14))  # fmt: skip
IND_OVERRIDES = (((7270, 7570), (7860, 8470), (9160, 9190), 13),
                 ((7580, 7790), (8770, 8870), (7380, 7380), (7470, 7470), 10),
                 ((8660, 8690), (8880, 9090), (9290, 9290), 11),
                 ((570, 570), (580, 580), (590, 590), (670, 670), (680, 680), (690, 690), 6),
                 ((9890, 9890), 15))  # fmt: skip
QUESTION = "Next month, what will be your work status? " + LF_QUESTION_DEFINITIONS
POLICY_CAVEAT = (
    "This maximum does not establish that you personally qualified, received benefits "
    "continuously, or had that many weeks remaining."
)
BACKGROUND = Background(TASK, checked=frozenset({"race"}), pairs=UI_NATIVITY_CITIZEN_SENTENCE)


def broad_group(code: pd.Series, ranges, overrides, labels: Mapping[int, str]) -> pd.Series:
    """Broad occupation or industry group label of each code (None outside every group)."""
    x = pd.to_numeric(code, errors="coerce").round().to_numpy(dtype=float, na_value=np.nan)
    group = np.zeros(len(x), dtype=np.int64)
    for lo, hi, g in reversed(ranges):  # reversed: the first matching range wins
        group[(x >= lo) & (x <= hi)] = g
    for *spans, g in overrides:
        hit = np.zeros(len(x), dtype=bool)
        for lo, hi in spans:
            hit |= (x >= lo) & (x <= hi)
        group[hit] = g
    out = np.array([labels.get(int(g)) for g in group], dtype=object)
    return pd.Series(out, index=code.index, dtype=object)


def broad_occupation(code: pd.Series) -> pd.Series:
    return broad_group(code, OCC_RANGES, OCC_OVERRIDES, OCCUPATION_LABELS)


def broad_industry(code: pd.Series) -> pd.Series:
    return broad_group(code, IND_RANGES, IND_OVERRIDES, INDUSTRY_LABELS)


def subject_id(cpsidp: pd.Series) -> pd.Series:
    def one(value: int) -> str:
        digest = hashlib.blake2b(f"{TASK}|{value}".encode(), digest_size=12).hexdigest()
        return f"lcui_{digest}"

    return cpsidp.astype("int64").map(one)


def policy_panel(ctx: BuildContext) -> pd.DataFrame:
    policy = ctx.intermediate(POLICY, columns=POLICY_COLUMNS)
    if policy.duplicated(["fips", "year", "month"]).any():
        raise DataError(f"{POLICY}.parquet repeats a (fips, year, month) cell")
    ym = policy["year"].astype("int64") * 12 + policy["month"].astype("int64")
    cells = int(ym.between(FIRST, LAST).sum())
    if cells != WINDOW_CELLS:
        raise DataError(
            f"{POLICY}.parquet has {cells} state-month cells in January 2008 - August 2014; "
            f"labor_cps_ui needs all {WINDOW_CELLS} (51 states x 80 months)"
        )
    return policy


def policy_cells(policy: pd.DataFrame, base: pd.DataFrame) -> pd.DataFrame:
    """The policy columns of each record's (STATEFIP, YEAR, MONTH) cell (NA without one)."""
    cell = policy["fips"].astype("int64") * 100_000 + (
        policy["year"].astype("int64") * 12 + policy["month"].astype("int64")
    )
    at = pd.Series(np.arange(len(policy)), index=cell.to_numpy())
    want = pd.to_numeric(base["STATEFIP"], errors="coerce").astype("float64") * 100_000 + (
        base["YEAR"].astype("float64") * 12 + base["MONTH"].astype("float64")
    )
    pos = at.reindex(want.to_numpy()).to_numpy()
    found = ~np.isnan(pos)
    take = np.where(found, pos, 0).astype(np.int64)
    cols = ["policy_effective_date", "regular_ui_weeks", "extension_ui_weeks", "maximum_ui_weeks"]
    out = policy[cols].iloc[take].reset_index(drop=True)
    out.loc[~found, :] = np.nan
    return out


def _check_weights(universe: pd.DataFrame, target: pd.Series) -> None:
    """Reference audit: in every calendar month, state, MISH, duration band and target class
    of the universe the positive analysis weights sum above 0."""
    w = pd.to_numeric(universe["WTFINL"], errors="coerce").astype("float64")
    w = w.where(w > 0, 0.0)
    dur = pd.cut(pd.to_numeric(universe["DURUNEMP"], errors="coerce"),
                 [-1, 4, 12, 26, 52, np.inf]).astype(str)  # fmt: skip
    groups = {
        "calendar month": universe["YEAR"].astype(str) + "-" + universe["MONTH"].astype(str),
        "state": universe["STATEFIP"].astype(str),
        "MISH": universe["MISH"].astype(str),
        "duration band": dur,
        "target class": target.fillna("missing_or_unsupported").astype(str),
    }
    for name, key in groups.items():
        sums = w.groupby(key.to_numpy()).sum()
        if len(w) and (sums <= 0).any():
            raise DataError(f"{TASK}: {name} {sums.index[sums <= 0][0]} of the job-loser "
                            "universe has no positive weight (WTFINL)")  # fmt: skip


def build_table(ctx: BuildContext) -> pd.DataFrame:
    """All eligible rows: id, time, release_date, target, then the task's predictors in order."""
    ctx.intermediate_path(INTERMEDIATE, [*KEY_COLUMNS, *PREDICTOR_COLUMNS])
    policy = policy_panel(ctx)
    covered = covered_quarters(ctx.macro_context)
    linked, scan, steps = _linked_months(ctx)
    bym = linked["YEAR"].astype("int64") * 12 + linked["MONTH"].astype("int64")
    dur = pd.to_numeric(linked["DURUNEMP"], errors="coerce")
    keep = np.ones(len(linked), dtype=bool)
    apply_filters(steps, keep, [
        ("baseline month in January 2008 - August 2014", mask(bym <= LAST)),
        ("baseline MISH in 1-3 or 5-7", mask(linked["MISH"].isin(ADJACENT_MONTH.baseline))),
        ("unemployed in the baseline month", mask(linked["EMPSTAT"].isin(UNEMPLOYED_CODES))),
        ("job loser (WHYUNEMP 1-3)", mask(linked["WHYUNEMP"].isin([1, 2, 3]))),
        ("age 18-69", mask(linked["AGE"].between(18, 69))),
        ("DURUNEMP a whole number 0-998", mask(dur.between(0, 998) & (dur == dur.round()))),
    ])  # fmt: skip
    universe_rows = np.flatnonzero(keep)
    apply_filters(steps, keep, [
        ("unique same-CPSIDP record in month t+1",
         linked["_linked"].to_numpy() | ~linked["_key_ok"].to_numpy()),
        ("t+1 labor-force status supported",
         mask(linked["EMPSTAT_t"].isin(LF_CODES)) | ~linked["_key_ok"].to_numpy()),
    ])  # fmt: skip
    first = np.flatnonzero(keep)
    universe = linked.iloc[universe_rows].reset_index(drop=True)
    universe = pd.concat(
        [universe, read_rows(ctx, ["WTFINL", "STATEFIP"], scan[universe_rows])], axis=1
    )
    _check_weights(universe, lf_status(universe["EMPSTAT_t"]))
    del universe
    base = linked.iloc[first].reset_index(drop=True)
    target_pos = linked["_target_pos"].to_numpy()[first]
    del linked
    base = pd.concat([base, read_rows(ctx, PREDICTOR_COLUMNS, scan[first])], axis=1)
    if labels_as_text(base["vetstat"]).isna().any():
        raise DataError(f"{TASK}: a linked job loser has no veteran status; the reference "
                        "requires complete veteran coverage")  # fmt: skip
    base = pd.concat([base, policy_cells(policy, base)], axis=1)
    predictors = common_predictors(base)
    occupation, industry = broad_occupation(base["OCC"]), broad_industry(base["IND"])
    origin = origin_q_index(base["YEAR"], base["MONTH"])
    reg, ext, top = (
        base[c] for c in ("regular_ui_weeks", "extension_ui_weeks", "maximum_ui_weeks")
    )
    labels = [c for c in COMMON_LABELS if c != "relate"]
    keep = np.ones(len(base), dtype=bool)
    apply_filters(steps, keep, [
        ("state-month UI policy cell present", base["policy_effective_date"].notna().to_numpy()),
        ("UI weeks observed (regular, extension >= 0, maximum > 0)",
         mask((reg >= 0) & (ext >= 0) & (top > 0))),
        ("demographic labels present", predictors[labels].notna().all(axis=1).to_numpy()),
        ("FAMSIZE and NCHILD present", base[["FAMSIZE", "NCHILD"]].notna().all(axis=1).to_numpy()),
        ("seeking full- or part-time work", mask(base["wkstat"].isin(list(WKSTAT_SENTENCE)))),
        ("last job's occupation in a broad group", occupation.notna().to_numpy()),
        ("last job's industry in a broad group", industry.notna().to_numpy()),
        ("macro context for the baseline quarter", mask(origin.isin(covered))),
    ])  # fmt: skip
    target = read_rows(ctx, ["CPSIDV", "SEX", "RACE", "AGE"], scan[target_pos])
    t_mish = base["MISH_t"].to_numpy(dtype=float, na_value=np.nan)
    b_mish = base["MISH"].to_numpy(dtype=float, na_value=np.nan)
    famsize, nchild = (pd.to_numeric(base[c], errors="coerce") for c in ("FAMSIZE", "NCHILD"))
    weight = pd.to_numeric(base["WTFINL"], errors="coerce")
    apply_filters(steps, keep, [
        ("same person at t+1 (MISH + 1, CPSIDV, sex, race, age + 0-1), release date, weight",
         base["_key_ok"].to_numpy() & (t_mish == b_mish + 1)
         & same_person(base, target, (0, 1)) & base["release_date_t"].notna().to_numpy()
         & base["release_date_source_t"].notna().to_numpy() & mask(weight > 0)),
        ("FAMSIZE >= 1 and 0 <= NCHILD <= FAMSIZE",
         mask((famsize >= 1) & (nchild >= 0) & (nchild <= famsize))),
        ("regular + extension weeks = maximum", mask((reg + ext - top).abs() < 1e-6)),
        ("policy measured on day 5", mask(base["policy_effective_date"].astype(str)
                                          .str.endswith("-05"))),
    ])  # fmt: skip
    rows = np.flatnonzero(keep)
    kept, pred = base.iloc[rows], predictors.iloc[rows]
    if pred["famsize"].isna().any():
        raise DataError(f"{TASK}: FAMSIZE above 99 in an eligible row; the reference stops here")
    ui_weeks = {"regular_ui_weeks": reg, "extension_ui_weeks": ext, "maximum_ui_weeks": top}
    return _publish(ctx, kept, pred, rows, occupation, industry, ui_weeks, origin, weight, steps)


def _linked_months(ctx: BuildContext) -> tuple[pd.DataFrame, np.ndarray, list[dict[str, Any]]]:
    """The baseline months' records (and their next month's) linked to month t+1: the linked
    frame, the positions read, and the first step of the filter log."""
    months = ctx.intermediate(INTERMEDIATE, columns=["YEAR", "MONTH"])
    ym = months["YEAR"].to_numpy(dtype=np.int64, na_value=0) * 12 + months["MONTH"].to_numpy(
        dtype=np.int64, na_value=0
    )
    scan = np.flatnonzero((ym >= FIRST) & (ym <= LAST + 1))  # baselines and their next month
    steps: list[dict[str, Any]] = [
        {"step": "person-month records", "rows": len(months), "dropped": 0}]
    del months, ym
    keys = ctx.intermediate(INTERMEDIATE, columns=KEY_COLUMNS, rows=scan).reset_index(drop=True)
    linked = link_months(keys, 1, ADJACENT_MONTH, positive_id=True, require=(),
                         target_columns=("EMPSTAT", "MISH", "release_date",
                                         "release_date_source"))  # fmt: skip
    return linked, scan, steps


def _publish(ctx: BuildContext, kept: pd.DataFrame, pred: pd.DataFrame, rows: np.ndarray,
             occupation: pd.Series, industry: pd.Series, ui_weeks: dict[str, pd.Series],
             origin: pd.Series, weight: pd.Series, steps: list[dict[str, Any]]) -> pd.DataFrame:
    """The eligible rows as the task's table: public columns in order, macro context, the
    internal columns, then the shared finish (sort, checks, filter log)."""
    why = kept["WHYUNEMP"].astype("int64")
    table = pd.DataFrame(
        {
            "id": subject_id(kept["CPSIDP"]),
            "time": month_text(kept["YEAR"], kept["MONTH"]),
            "release_date": kept["release_date_t"].astype(str),
            "target": lf_status(kept["EMPSTAT_t"]).astype(str),
            **{c: pred[c] for c in COMMON_PREDICTORS if c != "relate"},
            "wkstat_baseline": labels_as_text(kept["wkstat"]),
            "durunemp_baseline": pd.to_numeric(kept["DURUNEMP"]).astype("float64"),
            "wnftlook_baseline": labels_as_text(kept["wnftlook"]),
            "classwkr": labels_as_text(kept["classwkr"]),
            "whyunemp_text": why.map(WHYUNEMP_TEXT),
            "search_layoff_status": why.map(SEARCH_STATUS),
            "last_job_occupation": occupation.iloc[rows],
            "last_job_industry": industry.iloc[rows],
            **{name: weeks.iloc[rows].astype("float64") for name, weeks in ui_weeks.items()},
        }
    )
    table = attach_macro_context(table, origin.iloc[rows], ctx.macro_context)
    table = table.rename(columns={"macro_reference_q_index": "_macro_reference_q_index"})
    table["_relate"] = pred["relate"]
    table["_mish"] = kept["MISH"].astype("int64")
    table["_analysis_weight"] = weight.iloc[rows].astype("float64")
    table["_paper_universe"] = (table["durunemp_baseline"] >= 13).astype(int)
    check_representatives(table)
    return finish_table(table, ctx.task, steps, __name__, float_columns=tuple(ui_weeks))


def check_representatives(table: pd.DataFrame) -> None:
    """The reference renderer exports three representative prompts and stops without them."""
    order = table.sort_values(["time", "id"], kind="mergesort")
    ext = order["extension_ui_weeks"]
    cases = [
        order[(order["search_layoff_status"] == "temporary_layoff") & (ext == 0)],
        order[(order["search_layoff_status"] == "active_search") & (ext > 0)],
        order[(order["durunemp_baseline"] >= 52) & (ext > 0)],
    ]
    chosen = list(dict.fromkeys(str(c["id"].iloc[0]) for c in cases if not c.empty))
    if len(chosen) != 3:
        raise DataError(
            f"{TASK}: the table lacks one of the reference's three representative cases (a "
            "temporary layoff without extension weeks; active search with extension weeks; a "
            "52+ week spell with extension weeks; three different persons): the reference's "
            "renderer stops without them; a larger extract of Jan 2008 - Aug 2014 holds them"
        )


# --------------------------------------------------------------------------------------------
# Prompt


def weeks_text(value: float) -> str:
    r = round(value)
    amount = str(int(r)) if abs(value - r) < 1e-6 else f"{value:.1f}"
    return f"{amount} {'week' if amount == '1' else 'weeks'}"


def labor_paragraph(row: Mapping[str, Any]) -> str:
    month = int(str(row["time"])[5:7])
    parts = [
        pick(WKSTAT_SENTENCE, text(row, "wkstat_baseline", TASK), "wkstat_baseline", row, TASK),
        f"You have been unemployed for {week_count(whole(row, 'durunemp_baseline', TASK))}.",
    ]
    if text(row, "search_layoff_status", TASK) == "active_search":
        phrase = pick(WNFTLOOK_PHRASE, optional_text(row, "wnftlook_baseline"),
                      "wnftlook_baseline", row, TASK)  # fmt: skip
        parts.append(f"The last time you worked full-time for at least 2 consecutive weeks was "
                     f"{phrase}.")  # fmt: skip
    cls = optional_text(row, "classwkr")
    if cls is not None:
        parts.append(pick(RECENT_JOB_SENTENCE, cls, "classwkr", row, TASK))
    return (
        "Here is your current and recent labor-market situation. "
        f"{month_note(month, False)} " + " ".join(parts)
    )


def additional_paragraph(row: Mapping[str, Any]) -> str:
    why = pick({v: v for v in WHYUNEMP_TEXT.values()}, text(row, "whyunemp_text", TASK),
               "whyunemp_text", row, TASK)  # fmt: skip
    status = pick({"temporary_layoff": "You are currently on temporary layoff.",
                   "active_search": "You are currently actively looking for work."},
                  text(row, "search_layoff_status", TASK), "search_layoff_status", row, TASK)  # fmt: skip
    return (
        "Here is some additional information about your unemployment spell and most recent job. "
        f"Your unemployment began because {why}. {status} In your most recent job, your industry "
        f"was {text(row, 'last_job_industry', TASK)}, and your occupation was "
        f"{text(row, 'last_job_occupation', TASK)}."
    )


def policy_paragraph(row: Mapping[str, Any]) -> str:
    top = weeks_text(number(row, "maximum_ui_weeks", TASK))
    reg = weeks_text(number(row, "regular_ui_weeks", TASK))
    ext = weeks_text(number(row, "extension_ui_weeks", TASK))
    return (
        "Under the rules in your state in the current month, a job loser who met the program "
        f"requirements could potentially receive unemployment benefits for up to {top}. This "
        f"total consists of {reg} of regular state benefits and {ext} of temporary additional "
        f"benefits. {POLICY_CAVEAT}"
    )


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    """(system, user): background, labor situation, more on the spell, macro conditions, UI
    policy, question, instruction."""
    user = "\n\n".join(
        [
            BACKGROUND.paragraph(row),
            labor_paragraph(row),
            additional_paragraph(row),
            macro_paragraph(row),
            policy_paragraph(row),
            QUESTION,
            response_instruction(task),
        ]
    )
    return CPS_SYSTEM_PROMPT, user


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: still unemployed next month."""
    return ["unemployed"]
