"""income_cps_displace on hand-made raw rows: the reemployed displaced workers, the per-month
p01/p99 trims of current and lost-job earnings (hand-computed), the required DWS numbers, the
no-change answer and the prompt."""

from __future__ import annotations

import pandas as pd
import pytest

from hhx.bench.layout import table_columns
from hhx.errors import DataError
from hhx.tasks.context import BuildContext
from hhx.tasks.cps import income_cps_displace as income_displace
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

TASK = load_task("income_cps_displace")
MACRO = macro_for(quarter(1992, 1), quarter(1994, 2))
DW = {"DWRESP": 2, "DWSTAT": 1, "DWYEARS": 6.5, "DWJOBSINCE": 2, "DWWKSUN": 10}


def worker(cpsidp: int, year: int, month: int, weekc: float, weekl: float, **over) -> dict:
    return person(cpsidp, year, month, 2, **{"SERIAL": cpsidp, **DW, "DWWEEKC": weekc,
                                             "DWWEEKL": weekl, **over})  # fmt: skip


def rows() -> list[dict]:
    return [
        # February 1994: valid dwweekc 300 400 450 500 600 700 -> p01 305, p99 695;
        # valid dwweekl 350 450 500 550 650 750 1000 -> p01 356, p99 985
        worker(501, 1994, 2, 300, 350),  # current earnings at the bottom: trimmed
        worker(
            502,
            1994,
            2,
            400,
            450,
            DWREAS=1,
            DWLASTWRK=2,
            DWNOTICE=1,
            DWFULLTIME=2,
            DWCLASS=1,
            DWUNION=1,
            DWHI=2,
        ),  # fmt: skip
        worker(503, 1994, 2, 500, 550, DWYEARS=1.0, DWJOBSINCE=1, DWWKSUN=1, FAMSIZE=3, NCHILD=1),
        worker(504, 1994, 2, 600, 650, DWYEARS=12.25),
        worker(505, 1994, 2, 700, 750),  # at the top: trimmed
        worker(506, 1994, 2, 450, 500, DWJOBSINCE=99),  # jobs since unknown: dropped
        person(507, 1994, 2, 3, SERIAL=507, **UNEMPLOYED, DWRESP=2, DWSTAT=1, DWWEEKL=1000),
        # January 1992 (five-year look-back): 400 500 600 / 410 510 610 -> the middle stays
        worker(511, 1992, 1, 400, 410),
        worker(512, 1992, 1, 500, 510, FAMSIZE=1),
        worker(513, 1992, 1, 600, 610),
    ]


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> pd.DataFrame:
    folder = build_intermediate(tmp_path_factory.mktemp("inc"), rows())
    return income_displace.build_table(BuildContext(TASK, folder, MACRO))


def test_universe_trims_and_values(table: pd.DataFrame) -> None:
    assert [c for c in table.columns if not c.startswith("_")] == table_columns(TASK)
    r = table.set_index("id")
    assert r["target"].to_dict() == {"502": 400.0, "503": 500.0, "504": 600.0, "512": 500.0}
    assert r.loc["503", "dwweekl"] == 550.0 and r.loc["504", "dwyears"] == 12.25
    assert r.loc["512", "dw_lookback_regime"] == "five_year_lookback_1984_1992"
    assert (r["baseline_status"] == "employed").all()
    steps = pd.DataFrame(table.attrs["construction_steps"]).set_index("step")["dropped"]
    assert steps["employed now (EMPSTAT 10, 12)"] == 1  # 507
    assert steps["dwjobsince present"] == 1  # 506
    assert steps["dwweekc (target) strictly inside the survey month's p01-p99"] == 4
    assert steps["dwweekl (lost-job earnings) strictly inside the survey month's p01-p99"] == 0
    # a pooled row lacked dwjobsince: the reference frame holds it as floats
    floats = set(table.attrs["float_columns"])
    assert {"target", "dwweekl", "dwyears", "dwjobsince"} <= floats and "dwwksun" not in floats


def test_prompt(table: pd.DataFrame) -> None:
    r = table.set_index("id", drop=False)
    system, user = income_displace.render(r.loc["502"].to_dict(), TASK)
    check_prompt(system, user, TASK, 2)
    assert system.startswith("You are an American person answering questions about your income")
    assert "You live alone and have no own children in your household." in user
    assert ("Note that the current month is February, and that $ denotes amounts in U.S. "
            "dollars. During the past three years, you lost or left a full-time job at a "
            "government employer because the plant or company closed down or moved. You last "
            "worked at that job two years ago and received no notice before the job loss. You "
            "were not a labor-union member at that job, and the job provided health insurance. "
            "You worked at the lost job for about 6.5 years and earned approximately $450.00 per "
            "week.") in user  # fmt: skip
    assert ("Since losing or leaving that job, you have held 2 jobs. You went 10 weeks without "
            "work between the end of the lost job and the start of your next job. You are "
            "currently employed.") in user  # fmt: skip
    _, user = income_displace.render(r.loc["503"].to_dict(), TASK)
    assert "You live in a household of 3 people, including 1 of your own children." in user
    assert "for about 1 year and earned" in user and "held 1 job. You went 1 week" in user
    _, user = income_displace.render(r.loc["504"].to_dict(), TASK)
    assert "for about 12.25 years" in user
    assert income_displace.naive_baseline(r.loc["504"].to_dict(), TASK) == [650.0]
    check_golden("income_cps_displace", *income_displace.render(r.loc["502"].to_dict(), TASK))


def test_degenerate_cutoffs_stop_the_build(tmp_path) -> None:
    folder = build_intermediate(tmp_path, [*rows(), worker(521, 1996, 2, 500, 500),
                                           worker(522, 1996, 2, 500, 510)])  # fmt: skip
    with pytest.raises(
        DataError, match=r"degenerate dwweekc cutoffs in survey month\(s\) \['1996-02'\]"
    ):
        income_displace.build_table(BuildContext(TASK, folder, MACRO))
