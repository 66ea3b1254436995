"""labor_cps_displace on hand-made raw rows: the Displaced Worker Supplement universe, both
look-back regimes, the current-status target, optional DWS labels and the prompt."""

from __future__ import annotations

import pandas as pd
import pytest

from hhx.bench.layout import table_columns
from hhx.errors import DataError
from hhx.tasks.context import BuildContext
from hhx.tasks.cps import labor_cps_displace as displace
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

TASK = load_task("labor_cps_displace")
MACRO = macro_for(quarter(1992, 1), quarter(1994, 2))
DW = {"DWRESP": 2, "DWSTAT": 1}


def rows() -> list[dict]:
    p = person
    full = {**DW, "DWREAS": 1, "DWNOTICE": 4, "DWLASTWRK": 4, "DWFULLTIME": 2, "DWUNION": 2,
            "DWCLASS": 2, "DWHI": 2}  # fmt: skip
    return [
        p(401, 1992, 1, 2, SERIAL=1, **full),  # five-year look-back
        p(402, 1994, 2, 3, SERIAL=2, **DW, **UNEMPLOYED, DWREAS=2, DWLASTWRK=0, DWFULLTIME=1,
          DWUNION=1, DWCLASS=4, MARST=1, SPLOC=0),  # three-year look-back
        p(403, 1994, 2, 1, SERIAL=3, **DW, EMPSTAT=34, LABFORCE=1, DWNOTICE=2),
        p(404, 1994, 2, 1, SERIAL=4, DWRESP=1, DWSTAT=1),  # not interviewed
        p(405, 1994, 2, 1, SERIAL=5, DWRESP=2, DWSTAT=0),  # not displaced
        p(406, 1994, 2, 1, SERIAL=6, **DW, EMPSTAT=1),  # armed forces: no status
        p(407, 1994, 2, 1, SERIAL=7, **DW, VETSTAT=0),  # veteran status NIU
        p(408, 1994, 5, 1, SERIAL=8, **DW),  # no macro context for 1994Q2
        p(409, 1994, 2, 1, SERIAL=9),  # not in the supplement
    ]  # fmt: skip


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> pd.DataFrame:
    folder = build_intermediate(tmp_path_factory.mktemp("dws"), rows())
    return displace.build_table(BuildContext(TASK, folder, MACRO))


def test_universe_regimes_and_target(table: pd.DataFrame) -> None:
    assert [c for c in table.columns if not c.startswith("_")] == table_columns(TASK)
    r = table.set_index("id")
    assert r["target"].to_dict() == {"401": "employed", "402": "unemployed",
                                     "403": "not_in_labor_force"}  # fmt: skip
    assert r["time"].to_dict() == {"401": "1992-01-01", "402": "1994-02-01", "403": "1994-02-01"}
    assert r.loc["401", "dw_lookback_regime"] == "five_year_lookback_1984_1992"
    assert r.loc["402", "dw_lookback_regime"] == "three_year_lookback_1994_plus"
    assert r.loc["401", "dwreas"] == "plant or company closed down or moved"
    assert r.loc["401", "dwlastwrk"] == "four years ago" and r.loc["402", "dwnotice"] is None
    assert (r["dwstat"] == "displaced_worker").all()
    steps = pd.DataFrame(table.attrs["construction_steps"]).set_index("step")["dropped"]
    assert steps["displaced worker (DWSTAT 1)"] == 1  # 405
    assert steps["current labor-force status supported"] == 1  # 406
    assert steps["common predictors present"] == 1  # 407
    assert steps["macro context for the survey quarter"] == 1  # 408


def test_prompt(table: pd.DataFrame) -> None:
    r = table.set_index("id", drop=False)
    system, user = displace.render(r.loc["401"].to_dict(), TASK)
    check_prompt(system, user, TASK, 1)
    assert ("Note that the current month is January. During the past five years, you lost or "
            "left a full-time job at a private for-profit employer because the plant or company "
            "closed down or moved. You last worked at that job four years ago and received more "
            "than 2 months of notice before the job loss. You were a labor-union member at that "
            "job, and the job provided health insurance.") in user  # fmt: skip
    assert user.split("\n\n")[1].startswith("You are also aware of recent national")
    assert user.split("\n\n")[3] == "What is your current employment status?"
    _, user = displace.render(r.loc["402"].to_dict(), TASK)
    assert ("During the past three years, you lost or left a not full-time job in "
            "self-employment because there was insufficient work. You last worked at that job "
            "this year. You were not a labor-union member at that job.") in user  # fmt: skip
    _, user = displace.render(r.loc["403"].to_dict(), TASK)
    assert ("During the past three years, you lost or left a job. You received less than 1 "
            "month of notice before the job loss.\n\n") in user  # fmt: skip
    assert displace.naive_baseline(r.loc["403"].to_dict(), TASK) == ["employed"]
    check_golden("labor_cps_displace", *displace.render(r.loc["401"].to_dict(), TASK))


def test_unknown_dws_label_stops_the_render(table: pd.DataFrame) -> None:
    row = table.iloc[0].to_dict() | {"dwreas": "moved away"}
    with pytest.raises(DataError, match="dwreas 'moved away' has no prompt wording"):
        displace.render(row, TASK)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (person(401, 1992, 1, 2, SERIAL=11, PERNUM=2, **DW), "two displaced-worker records"),
        (person(410, 1994, 2, "", SERIAL=12, **DW), "lacks YEAR, MONTH, CPSIDP or MISH"),
    ],
)
def test_bad_records_stop_the_build(tmp_path, extra, message) -> None:
    folder = build_intermediate(tmp_path, [*rows(), extra])
    with pytest.raises(DataError, match=message):
        displace.build_table(BuildContext(TASK, folder, MACRO))
