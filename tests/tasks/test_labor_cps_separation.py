"""labor_cps_separation on hand-made raw rows: survey builder -> task builder -> rows checked
against the spec (universe, each filter, target, predictors) and a golden prompt."""

from __future__ import annotations

import pandas as pd
import pytest

from hhx.bench.layout import table_columns
from hhx.surveys.macro.release_dates import proxy_release_date
from hhx.tasks.context import BuildContext
from hhx.tasks.cps import labor_cps_separation as separation
from hhx.tasks.prompting import check_prompt
from hhx.tasks.registry import load_task
from tests.helpers.cps_raw import (
    UNEMPLOYED,
    build_intermediate,
    check_golden,
    macro_for,
    person,
    quarter,
)

TASK = load_task("labor_cps_separation")


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> pd.DataFrame:
    p = person
    rows = [
        p(101, 2020, 1, 1), p(101, 2020, 2, 2),  # employed -> employed
        p(102, 2020, 1, 2, EMPSTAT=12, AHRSWORKT=0, AHRSWORK1=0, CLASSWKR=0, MULTJOB=2,
          UHRSWORKT=38),
        p(102, 2020, 2, 3, **UNEMPLOYED),  # absent -> unemployed; no worker class
        p(103, 2020, 1, 1, AGE=15), p(103, 2020, 2, 2),  # too young
        p(104, 2020, 1, 1, **UNEMPLOYED), p(104, 2020, 2, 2),  # unemployed at t
        p(105, 2020, 1, 4), p(105, 2020, 2, 5),  # MISH 4 does not link
        p(106, 2020, 1, 2), p(106, 2020, 2, 4),  # not MISH + 1
        p(107, 2020, 1, 1), p(107, 2020, 1, 1, PERNUM=2), p(107, 2020, 2, 2),  # repeated id
        p(108, 2020, 1, 1),  # no record at t+1
        p(109, 2020, 1, 1), p(109, 2020, 2, 2, EMPSTAT=1),  # armed forces at t+1
        p(110, 2020, 1, 1, AHRSWORKT=999), p(110, 2020, 2, 2),  # hours last week NIU
        p(111, 2020, 1, 1, METRO=9), p(111, 2020, 2, 2),  # metro missing
        p(112, 2020, 1, 1, AGE=67, MULTJOB=0, CLASSWKR=25, UHRSWORKT=20, AHRSWORKT=16),
        p(112, 2020, 2, 2, EMPSTAT=36, LABFORCE=1),  # -> not in the labor force
        p(0, 2020, 1, 1, SERIAL=9), p(0, 2020, 2, 2, SERIAL=9),  # CPSIDP 0 links here
        p(113, 2020, 4, 1), p(113, 2020, 5, 2),  # no macro context for 2020Q2
    ]  # fmt: skip
    folder = build_intermediate(tmp_path_factory.mktemp("sep"), rows)
    return separation.build_table(BuildContext(TASK, folder, macro_for(quarter(2020, 1))))


def test_universe_filters_and_target(table: pd.DataFrame) -> None:
    got = dict(zip(table["id"], table["target"], strict=True))
    assert got == {"101": "employed", "102": "unemployed", "112": "not_in_labor_force",
                   "0": "employed"}  # fmt: skip
    assert set(table["time"]) == {"2020-01-01"}
    assert set(table["release_date"]) == {proxy_release_date(2020, 2)}  # the outcome file's
    steps = pd.DataFrame(table.attrs["construction_steps"]).set_index("step")["dropped"]
    assert steps["person-month records"] == 0 and steps["age 16 or older"] >= 1
    assert steps["employed in the baseline month"] >= 1
    assert steps["month t+1 record, if any, has MISH + 1"] == 1  # 106
    assert steps["baseline CPSIDP valid and unique in its month"] == 2  # 107 twice
    assert steps["t+1 labor-force status supported"] == 1  # 109
    assert steps["ahrsworkt (0-99) present"] == 1  # 110
    assert steps["common predictors present"] == 1  # 111


def test_predictors(table: pd.DataFrame) -> None:
    assert [c for c in table.columns if not c.startswith("_")] == table_columns(TASK)
    r = table.set_index("id")
    assert r.loc["102", "ahrsworkt_baseline"] == 0 and r.loc["102", "uhrsworkt_baseline"] == 38
    assert r.loc["102", "classwkr"] is None and r.loc["102", "multjob_baseline"] == "yes"
    assert r.loc["112", "multjob_baseline"] is None
    assert r.loc["112", "classwkr"] == "federal government employee"
    assert (table["baseline_status"] == "employed").all()
    assert r.loc["101", "age"] == 40 and r.loc["101", "famsize"] == 1
    assert r.loc["101", "state"] == "Ohio" and r.loc["101", "educ"] == "bachelor's degree"
    assert set(table.attrs["float_columns"]) >= {"ahrsworkt_baseline", "uhrsworkt_baseline"}


def test_prompt_variants_and_golden(table: pd.DataFrame) -> None:
    rows = table.set_index("id", drop=False)
    system, user = separation.render(rows.loc["102"].to_dict(), TASK)
    check_prompt(system, user, TASK, 1)
    assert "Here is your current job. Note that the current month is January. You are " \
           "currently employed. You worked 0 hours last week, usually work 38 hours per week, " \
           "and hold multiple jobs." in user  # fmt: skip
    _, user = separation.render(rows.loc["112"].to_dict(), TASK)
    assert "You are currently employed by the federal government. You worked 16 hours last " \
           "week, usually work 20 hours per week." in user  # fmt: skip
    row = rows.loc["101"].to_dict() | {"ahrsworkt_baseline": 37.5}
    _, user = separation.render(row, TASK)
    assert "You worked 37.5 hours last week" in user and "do not hold multiple jobs" in user
    assert separation.naive_baseline(row, TASK) == ["employed"]
    check_golden("labor_cps_separation", *separation.render(rows.loc["101"].to_dict(), TASK))


def test_unknown_wording_is_an_error(table: pd.DataFrame) -> None:
    from hhx.errors import DataError

    row = table.iloc[0].to_dict() | {"relate": "relationship unknown"}
    with pytest.raises(DataError, match="relate"):
        separation.render(row, TASK)
