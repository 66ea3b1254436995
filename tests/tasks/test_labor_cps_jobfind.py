"""labor_cps_jobfind and the shared CPS mechanics: status maps, t -> t+1 linking rules, the
universe on a hand-made intermediate, and the rendered prompt's contracts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.bench.layout import table_columns
from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS
from hhx.tasks.context import BuildContext
from hhx.tasks.cps import labor_cps_jobfind as jobfind
from hhx.tasks.cps.common import (
    ADJACENT_MONTH,
    TWELVE_MONTHS,
    lf_status,
    link_months,
    older_status,
)
from hhx.tasks.prompting import check_forbidden, check_prompt, month_note, response_instruction
from hhx.tasks.registry import load_task

TASK = load_task("labor_cps_jobfind")


# --------------------------------------------------------------------------------------------
# Status map and linking rules


def test_lf_status_map() -> None:
    codes = pd.Series([10, 12, 20, 21, 22, 30, 32, 36, 1, 0, None], dtype="Int32")
    assert lf_status(codes).tolist() == [
        "employed",
        "employed",
        "unemployed",
        "unemployed",
        "unemployed",
        "not_in_labor_force",
        "not_in_labor_force",
        "not_in_labor_force",
        None,
        None,
        None,
    ]


def test_older_status_map() -> None:
    empstat = pd.Series([10, 21, 36, 32, 34, 34, 36, 1], dtype="Int32")
    nilfact = pd.Series([None, None, None, None, 1, 3, 1, None], dtype="Int32")
    assert older_status(empstat, nilfact).tolist() == [
        "employed",
        "unemployed",
        "nilf_retired",
        "nilf_disabled",
        "nilf_disabled",
        "nilf_other",
        "nilf_retired",
        None,
    ]


def test_link_months_agrees_with_a_naive_merge(tmp_path: Path) -> None:
    """On a synthetic extract, the packed-key lookup equals a plain pandas merge of each month
    onto the next (duplicates and records without EMPSTAT removed first)."""
    from hhx.surveys.cps.ipums import read_normalized
    from hhx.surveys.synthetic.cps.ipums import write_synthetic_cps

    path = write_synthetic_cps(
        tmp_path / "c.csv.gz", seed=3, n_households=120, start="2024-01", end="2024-06"
    )
    df = read_normalized(path)
    out = link_months(df, 1, ADJACENT_MONTH)
    d = df.assign(mi=df["YEAR"].astype("int64") * 12 + df["MONTH"].astype("int64"))
    d = d[~d.duplicated(["CPSIDP", "mi"], keep=False) & d["EMPSTAT"].notna()]
    nxt = d[["CPSIDP", "mi", "EMPSTAT"]].assign(mi=d["mi"] - 1)
    merged = d.reset_index().merge(nxt, on=["CPSIDP", "mi"], how="inner", suffixes=("", "_t"))
    assert out["_linked"].sum() == len(merged) > 300
    got = out.loc[merged["index"], "EMPSTAT_t"].to_numpy()
    assert (got == merged["EMPSTAT_t"].to_numpy()).all()


def records(*rows: tuple) -> pd.DataFrame:
    """(CPSIDP, year, month, MISH, EMPSTAT) tuples."""
    return pd.DataFrame(rows, columns=["CPSIDP", "YEAR", "MONTH", "MISH", "EMPSTAT"]).astype(
        "Int64"
    )


def linked_ok(df: pd.DataFrame, months: int = 1, rule=ADJACENT_MONTH) -> list[bool]:
    out = link_months(df, months, rule)
    return (out["_key_ok"] & out["_linked"] & out["_mish_ok"]).tolist()


def test_adjacent_link_requires_mish_plus_one() -> None:
    df = records(
        (1, 2020, 1, 1, 20),
        (1, 2020, 2, 2, 10),  # ok
        (2, 2020, 1, 2, 20),
        (2, 2020, 2, 4, 10),  # target MISH is not +1
        (3, 2020, 12, 3, 20),
        (3, 2021, 1, 4, 10),  # across the year end: ok
    )
    assert linked_ok(df) == [True, False, False, False, True, False]
    out = link_months(df, 1, ADJACENT_MONTH)
    assert out["EMPSTAT_t"].tolist()[:3] == [10, pd.NA, 10]  # record found, rule decides


def test_outgoing_rotation_months_do_not_link() -> None:
    df = records((4, 2020, 1, 4, 20), (4, 2020, 2, 5, 10), (8, 2020, 1, 8, 20), (8, 2020, 2, 1, 10))
    assert linked_ok(df) == [False] * 4


def test_duplicate_ids_are_excluded_on_both_sides() -> None:
    df = records(
        (5, 2020, 1, 1, 20),
        (5, 2020, 1, 1, 10),
        (5, 2020, 2, 2, 10),  # duplicate at t
        (6, 2020, 1, 1, 20),
        (6, 2020, 2, 2, 10),
        (6, 2020, 2, 2, 30),  # duplicate at t+1
        (7, 2020, 1, 1, 20),
        (7, 2020, 2, 2, None),  # target without EMPSTAT
    )
    out = link_months(df, 1, ADJACENT_MONTH)
    assert out["_key_ok"].tolist() == [False, False, True, True, False, False, True, False]
    assert not out["_linked"].any()


def test_gap_month_and_twelve_month_rule() -> None:
    df = records(
        (9, 2025, 9, 1, 20),
        (9, 2025, 11, 3, 10),  # October missing: no link
        (10, 2020, 3, 4, 10),
        (10, 2021, 3, 8, 36),
    )
    assert linked_ok(df)[:2] == [False, False]
    assert linked_ok(df, 12, TWELVE_MONTHS) == [False, False, True, False]


# --------------------------------------------------------------------------------------------
# Universe on a hand-made intermediate

LABELS = {
    "sex": "woman",
    "race": "White",
    "educ": "bachelor's degree",
    "marst": "never married",
    "state": "Ohio",
    "region": "Midwest",
    "metro": "metropolitan area",
    "relate": "child",
    "hispan": "not Hispanic",
    "nativity": "native-born",
    "citizen": "U.S.-born citizen",
    "vetstat": "not a veteran",
    "classwkr": "local government employee",
    "wkstat": "unemployed, seeking full-time work",
    "wnftlook": "within the last 12 months",
}


def person(cpsidp: int, year: int, month: int, mish: int, empstat: int | None, **over) -> dict:
    row = {
        "YEAR": year,
        "MONTH": month,
        "CPSIDP": cpsidp,
        "MISH": mish,
        "AGE": 30,
        "EMPSTAT": empstat,
        "FAMSIZE": 3,
        "NCHILD": 0,
        "DURUNEMP": 6,
        "release_date": f"{year}-{month:02d}-28",
        **LABELS,
    }
    row.update(over)
    return row


def intermediate(tmp_path: Path, rows: list[dict]) -> Path:
    df = pd.DataFrame(rows)
    for col in ("YEAR", "MONTH", "MISH", "AGE", "EMPSTAT", "FAMSIZE", "NCHILD", "DURUNEMP"):
        df[col] = df[col].astype("Int32")
    df["CPSIDP"] = df["CPSIDP"].astype("Int64")
    for col in [*LABELS, "release_date"]:
        df[col] = df[col].astype("category")
    df.to_parquet(tmp_path / "cps_basic.parquet", index=False)
    return tmp_path


def macro_for(*quarters: int) -> pd.DataFrame:
    rows = [
        {
            "eligible_origin_q_index": q,
            "macro_reference_q_index": q - 1,
            **{c: 1.0 + i / 10 for i, c in enumerate(CORE_MACRO_COLUMNS)},
        }
        for q in quarters
    ]
    return pd.DataFrame(rows)


Q1_2020 = 2020 * 4 + 1


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> pd.DataFrame:
    rows = [
        person(101, 2020, 1, 1, 21),
        person(101, 2020, 2, 2, 10),  # eligible -> employed
        person(102, 2020, 1, 2, 22, AGE=18, classwkr=None),
        person(102, 2020, 2, 3, 34),  # eligible
        person(103, 2020, 1, 1, 20, AGE=15),
        person(103, 2020, 2, 2, 10),  # too young
        person(104, 2020, 1, 1, 10),
        person(104, 2020, 2, 2, 20),  # employed at t
        person(105, 2020, 1, 4, 21),
        person(105, 2020, 2, 5, 10),  # MISH 4: no link
        person(106, 2020, 1, 2, 21),
        person(106, 2020, 2, 4, 10),  # not MISH + 1
        person(107, 2020, 1, 1, 21),
        person(107, 2020, 1, 1, 21),
        person(107, 2020, 2, 2, 10),
        person(108, 2020, 1, 1, 21),  # no record at t+1
        person(109, 2020, 1, 1, 21),
        person(109, 2020, 2, 2, 1),  # armed forces at t+1
        person(110, 2020, 1, 1, 21, educ=None),
        person(110, 2020, 2, 2, 10),  # predictor missing
        person(111, 2020, 1, 1, 21, wkstat=None),
        person(111, 2020, 2, 2, 10),
        person(112, 2020, 1, 1, 21, DURUNEMP=None),
        person(112, 2020, 2, 2, 10),
        person(113, 2020, 3, 1, 21),
        person(113, 2020, 4, 2, 21),  # eligible, stays unemployed
        person(114, 2020, 4, 1, 21),
        person(114, 2020, 5, 2, 10),  # no macro for 2020Q2
    ]
    ctx = BuildContext(TASK, intermediate(tmp_path_factory.mktemp("jf"), rows), macro_for(Q1_2020))
    return jobfind.build_table(ctx)


def test_universe_and_target(table: pd.DataFrame) -> None:
    assert table["id"].tolist() == ["101", "102", "113"]
    assert table["target"].tolist() == ["employed", "not_in_labor_force", "unemployed"]
    assert table["time"].tolist() == ["2020-01-01", "2020-01-01", "2020-03-01"]
    # the outcome month's release date, not the baseline's
    assert table["release_date"].tolist() == ["2020-02-28", "2020-02-28", "2020-04-28"]


def test_public_columns_and_types(table: pd.DataFrame) -> None:
    public = [c for c in table.columns if not c.startswith("_")]
    assert public == table_columns(TASK)
    row = table.iloc[0]
    assert row["durunemp_baseline"] == 6.0 and isinstance(row["age"], float)
    assert row["wkstat_baseline"] == "unemployed, seeking full-time work"
    assert row["classwkr"] == "local government employee"
    assert table["classwkr"].isna().tolist() == [False, True, False]  # optional predictor
    assert row["unemployment_rate_lag1"] == pytest.approx(1.5)  # macro of the baseline quarter
    for col in TASK.categorical_predictors:
        assert table[col].dropna().map(type).eq(str).all(), col


def test_construction_steps_account_for_every_row(table: pd.DataFrame) -> None:
    steps = pd.DataFrame(table.attrs["construction_steps"])
    assert steps["rows"].iloc[0] == 28 and steps["rows"].iloc[-1] == len(table) == 3
    assert (steps["rows"].diff().fillna(0) == -steps["dropped"]).all()
    assert (steps["dropped"] > 0).sum() >= 8  # each exclusion above shows up in some step


def test_missing_intermediate_column_is_named(tmp_path: Path) -> None:
    rows = [person(1, 2020, 1, 1, 21), person(1, 2020, 2, 2, 10)]
    path = intermediate(tmp_path, rows)
    pd.read_parquet(path / "cps_basic.parquet").drop(columns="wnftlook").to_parquet(
        path / "cps_basic.parquet"
    )
    with pytest.raises(DataError, match="wnftlook"):
        jobfind.build_table(BuildContext(TASK, path, macro_for(Q1_2020)))


# --------------------------------------------------------------------------------------------
# Prompt


def test_render_passes_the_prompt_contracts(table: pd.DataFrame) -> None:
    row = table.iloc[0].to_dict()
    system, user = jobfind.render(row, TASK)
    check_forbidden(system)
    check_forbidden(user, allowed_month="January")
    check_prompt(system, user, TASK, 1)
    assert user.count(month_note(1, False)) == 1 and "$" not in user
    assert user.endswith(response_instruction(TASK))
    assert user.count("\n\n") == 4  # background, labor, macro, question, instruction
    assert "You have been unemployed for 6 weeks." in user
    assert "worked for local government" in user
    assert jobfind.naive_baseline(row, TASK) == ["unemployed"]


def test_render_variants(table: pd.DataFrame) -> None:
    row = table.iloc[1].to_dict()  # 18 years old, no worker class
    _, user = jobfind.render(row, TASK)
    assert "You are an 18-year-old White woman" in user
    assert "most recent job" not in user
    row.update(durunemp_baseline=1.0, wnftlook_baseline="never worked at all")
    _, user = jobfind.render(row, TASK)
    assert "for 1 week." in user and "2 consecutive weeks was never." in user
    row["wkstat_baseline"] = "full-time schedules"
    with pytest.raises(DataError, match="wkstat_baseline"):
        jobfind.render(row, TASK)


def test_month_note_follows_time(table: pd.DataFrame) -> None:
    row = table.iloc[2].to_dict()
    _, user = jobfind.render(row, TASK)
    assert "Note that the current month is March." in user
    assert np.sum([m in user for m in ("January", "February", "April")]) == 0
