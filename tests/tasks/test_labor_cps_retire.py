"""labor_cps_retire on hand-made raw rows: the t -> t+12 link with its same-person checks, the
universe, the partner, the official labels, the earnings trim, whole-file checks, the prompt."""

from __future__ import annotations

import pandas as pd
import pytest

from hhx.bench.layout import table_columns
from hhx.errors import DataError
from hhx.tasks.context import BuildContext
from hhx.tasks.cps import labor_cps_retire as retire
from hhx.tasks.prompting import check_prompt
from hhx.tasks.registry import load_task
from tests.helpers.cps_raw import (
    RETIRED,
    UNEMPLOYED,
    build_intermediate,
    check_golden,
    macro_for,
    person,
)

TASK = load_task("labor_cps_retire")
MACRO = macro_for(2000 * 4 + 1, 1994 * 4 + 1)


def pair(cpsidp: int, serial: int, base: dict | None = None, target: dict | None = None,
         year: int = 2000, mish: int = 1) -> list[dict]:  # fmt: skip
    """A person at (year, March) and twelve months later (MISH + 4)."""
    b = {"AGE": 60, "SERIAL": serial, **(base or {})}
    t = {"AGE": b["AGE"] + 1, "SERIAL": serial, **(target or {})}
    return [person(cpsidp, year, 3, mish, **b), person(cpsidp, year + 1, 3, mish + 4, **t)]


def earners(n: int = 100) -> list[dict]:
    """Unlinked workers with weekly earnings 500, 510, ... in March 2000 (the trim reference)."""
    return [person(900 + i, 2000, 3, 4, SERIAL=500 + i, EARNWEEK=500 + 10 * i) for i in range(n)]


def rows() -> list[dict]:
    spouse = {"RELATE": 201, "PERNUM": 2, "SPLOC": 1, "MARST": 1, "AGE": 64, "SEX": 1, **RETIRED}
    a = pair(201, 1, {"AGE": 62, "SPLOC": 2, "MARST": 1, "FAMSIZE": 2, "DIFFANY": 2,
                      "FAMINC": 843, "UNION": 2, "EARNWEEK": 1000.5, "MULTJOB": 2},
             {"MARST": 1, **RETIRED})  # fmt: skip
    return [
        *a,
        person(202, 2000, 3, 1, SERIAL=1, **spouse),  # retires; lives with a retiree
        *pair(
            203,
            2,
            {
                "AGE": 55,
                "DIFFANY": 0,
                "FAMINC": 996,
                "OCC2010": 9999,
                "IND1990": 998,
                "CLASSWKR": 28,
            },
        ),  # labels not observed
        *pair(204, 3, {"EARNWEEK": 500}),  # earnings at the month's p01: trimmed
        *pair(205, 4, {"EARNWEEK": 1000, "SPLOC": 2, "FAMSIZE": 2}),
        person(206, 2000, 3, 1, SERIAL=4, PERNUM=2, SPLOC=1, EMPSTAT=0, LABFORCE=0, AGE=48),
        *pair(207, 5, {"AGE": 49}),
        *pair(208, 6, {"AGE": 76}),
        *pair(209, 7, year=1994),
        *pair(210, 8, mish=5),
        person(211, 2000, 3, 1, SERIAL=9, AGE=60),
        person(211, 2001, 3, 6, SERIAL=9, AGE=61),
        *pair(212, 10, target={"SEX": 1}),
        *pair(213, 11, target={"AGE": 63}),
        *pair(214, 12, target={"EMPSTAT": 0, "LABFORCE": 0, "NILFACT": 1}),  # disabled: kept
        *pair(215, 13, target={"EMPSTAT": 1}),  # armed forces: unsupported
        *pair(216, 14, {**UNEMPLOYED}),
        *pair(217, 15, {"AHRSWORKT": 999}),
        *pair(218, 16, target={"CPSIDV": 1}),  # another person's CPSIDV
        *pair(219, 17, target={"CPSIDV": ""}),  # CPSIDV missing at t+12: allowed
        *earners(),
    ]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return build_intermediate(tmp_path_factory.mktemp("retire"), rows())


@pytest.fixture(scope="module")
def table(folder) -> pd.DataFrame:
    return retire.build_table(BuildContext(TASK, folder, MACRO))


def test_universe_link_and_target(table: pd.DataFrame) -> None:
    got = dict(zip(table["id"], table["target"], strict=True))
    assert got == {"201": "retired", "203": "not_retired", "205": "not_retired",
                   "214": "not_retired", "219": "not_retired"}  # fmt: skip
    assert set(table["time"]) == {"2000-03-01"} and table["_outcome_month"].eq("2001-03").all()
    steps = pd.DataFrame(table.attrs["construction_steps"]).set_index("step")["dropped"]
    assert steps["baseline MISH in 1-4"] >= 1 and steps["baseline year 1995 or later"] == 1
    assert steps["age 50 or older"] >= 1 and steps["age 75 or younger"] == 1
    assert steps["month t+12 record, if any, has MISH + 4"] == 1  # 211
    assert steps["t+12 older-worker status supported"] == 1  # 215
    assert steps["same person at t+12 (CPSIDV, sex, race, age + 0-2)"] == 3  # 212, 213, 218
    assert steps["weekly earnings, if observed, strictly inside the month's p01-p99"] == 1


def test_partner_labels_and_earnings(table: pd.DataFrame) -> None:
    assert [c for c in table.columns if not c.startswith("_")] == table_columns(TASK)
    r = table.set_index("id")
    assert r.loc["201", "partner_linked_baseline"] == "linked"
    assert r.loc["201", "partner_age_baseline"] == 64
    assert r.loc["201", "partner_status_baseline"] == "retired"
    assert r.loc["205", "partner_status_baseline"] == "not observed"  # partner without EMPSTAT
    assert r.loc["203", "partner_linked_baseline"] == "no linked spouse or partner"
    assert pd.isna(r.loc["203", "partner_age_baseline"])
    assert r.loc["203", "partner_status_baseline"] == "no linked spouse or partner"
    assert r.loc["201", "difficulty"] == "Has difficulty"
    assert r.loc["201", "family_income"] == "$150,000 and over"
    assert r.loc["201", "occupation"] == "Management, Business, Science, and Arts"
    assert r.loc["201", "industry"] == "Computer and data processing services"
    assert (r.loc["203", ["difficulty", "family_income", "occupation", "industry"]]
            == "not observed").all()  # fmt: skip
    assert r.loc["201", "earnweek_baseline"] == 1000.5 and pd.isna(
        r.loc["203", "earnweek_baseline"]
    )
    assert r.loc["201", "union_baseline"] == "member of a labor union"
    assert r.loc["201", "multjob_baseline"] == "yes" and r.loc["203", "classwkr"] == (
        "local government employee")  # fmt: skip
    # ints with None in the reference frame: partner age is written as a float column
    assert "partner_age_baseline" in table.attrs["float_columns"]


def test_prompt(table: pd.DataFrame) -> None:
    r = table.set_index("id", drop=False)
    system, user = retire.render(r.loc["201"].to_dict(), TASK)
    check_prompt(system, user, TASK, 3)
    assert "You are married, your spouse is present, and you live in Ohio" in user
    assert "You live with a spouse or partner. They are a 64-year-old who is retired." in user
    assert "You worked 40 hours last week, usually work 40 hours per week, and hold multiple " \
           "jobs. You are a labor-union member. Your weekly earnings are $1,000.50." in user  # fmt: skip
    _, user = retire.render(r.loc["203"].to_dict(), TASK)
    assert "You do not live with a spouse or partner." in user
    assert "Your union coverage and weekly earnings are not observed." in user
    assert "Whether you have a functional difficulty is not observed." in user
    assert "Your family-income category is not observed." in user
    assert "Your occupation is not observed, and your industry is not observed." in user
    _, user = retire.render(r.loc["205"].to_dict(), TASK)
    assert "They are a 48-year-old whose labor-force status is not observed." in user
    row = r.loc["203"].to_dict() | {"ahrsworkt_baseline": 37.25, "multjob_baseline": None}
    _, user = retire.render(row, TASK)
    assert "You worked 37.25 hours last week" in user and "and hold multiple jobs." in user
    assert retire.naive_baseline(row, TASK) == ["not_retired"]
    check_golden("labor_cps_retire", *retire.render(r.loc["201"].to_dict(), TASK))


def test_missing_worker_class_stops_the_render(table: pd.DataFrame) -> None:
    row = table.iloc[0].to_dict() | {"classwkr": None}
    with pytest.raises(DataError, match="classwkr is missing"):
        retire.render(row, TASK)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"repeat": True}, "occurs more than once"),
        ({"SPLOC": 7}, "names no person of its household"),
        ({"PERNUM_dup": True}, r"repeats \(YEAR, MONTH, SERIAL, PERNUM\)"),
        ({"flat": True}, "degenerate"),
    ],
)
def test_whole_file_checks(tmp_path, change, message) -> None:
    base = [*pair(301, 1), *earners(20)]
    if change.get("repeat"):
        base.append(person(301, 2000, 3, 1, SERIAL=99))
    if "SPLOC" in change:
        base.append(person(302, 2000, 3, 1, SERIAL=1, PERNUM=2, SPLOC=7))
    if change.get("PERNUM_dup"):
        base.append(person(303, 2000, 3, 1, SERIAL=1))
    if change.get("flat"):
        base = [*pair(301, 1), *(person(900 + i, 2000, 3, 4, SERIAL=500 + i, EARNWEEK=700)
                                 for i in range(20))]  # fmt: skip
    folder = build_intermediate(tmp_path, base)
    with pytest.raises(DataError, match=message):
        retire.build_table(BuildContext(TASK, folder, MACRO))


def test_both_classes_are_required(tmp_path) -> None:
    folder = build_intermediate(tmp_path, [*pair(301, 1), *pair(302, 2), *earners(20)])
    with pytest.raises(DataError, match="needs both retired and not_retired"):
        retire.build_table(BuildContext(TASK, folder, MACRO))
