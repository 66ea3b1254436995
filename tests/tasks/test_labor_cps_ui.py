"""labor_cps_ui on hand-made raw rows and the UI-policy panel: the job-loser universe, the
same-person link, the baseline-month policy cell, broad occupation and industry groups, the
reference's whole-table checks and the prompt."""

from __future__ import annotations

import hashlib

import pandas as pd
import pytest

from hhx.bench.layout import table_columns
from hhx.errors import DataError
from hhx.surveys.cps.ui_policy import read_ui_policy
from hhx.surveys.synthetic.cps.ui_policy import write_synthetic_ui_policy
from hhx.tasks.context import BuildContext
from hhx.tasks.cps import labor_cps_ui as ui
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

TASK = load_task("labor_cps_ui")
MACRO = macro_for(*(quarter(y, m) for y, m in ((2008, 3), (2009, 5), (2010, 5), (2014, 8))))
LOSER = {**UNEMPLOYED, "AGE": 35, "OCC": 5240, "IND": 4970, "CLASSWKR": 22}


def pair(cpsidp: int, year: int, month: int, base: dict | None = None,
         target: dict | None = None, mish: int = 1) -> list[dict]:  # fmt: skip
    b = {**LOSER, "SERIAL": cpsidp, **(base or {})}
    t = {"SERIAL": cpsidp, "AGE": b["AGE"], **(target or {})}
    nxt = (year * 12 + month) % 12 + 1, (year * 12 + month) // 12
    return [person(cpsidp, year, month, mish, **b), person(cpsidp, nxt[1], nxt[0], mish + 1, **t)]


def rows(*extra: dict) -> list[dict]:
    return [
        *pair(601, 2008, 3, {"WHYUNEMP": 1, "DURUNEMP": 2}),  # temporary layoff, no extension
        *pair(602, 2009, 5, {"DURUNEMP": 10, "WNFTLOOK": 12}, {**UNEMPLOYED}),
        *pair(
            603,
            2010,
            5,
            {"WHYUNEMP": 3, "DURUNEMP": 60, "IND": 7380, "OCC": 9620},
            {"EMPSTAT": 34, "LABFORCE": 1},
        ),  # fmt: skip
        *pair(604, 2009, 5, {"WHYUNEMP": 4}),  # quit: not a job loser
        *pair(605, 2009, 5, {"AGE": 17}),
        *pair(606, 2009, 5, {"AGE": 70}),
        *pair(607, 2014, 9),
        *pair(608, 2009, 5, mish=4),
        *pair(609, 2009, 5, target={"SEX": 1}),
        *pair(610, 2009, 5, target={"AGE": 37}),
        *pair(611, 2009, 5, {"WTFINL": 0}),
        *pair(612, 2009, 5, {"FAMSIZE": 2, "NCHILD": 3}),
        *pair(613, 2009, 5, {"OCC": 0}),
        *pair(614, 2009, 5, {"IND": 9995}),
        *pair(615, 2009, 5, {"WKSTAT": 11}),
        *pair(0, 2009, 5),
        *pair(617, 2010, 5, {"WHYUNEMP": 1, "CLASSWKR": 0, "WNFTLOOK": 0}),
        *extra,
    ]


def folder_for(tmp, rows_: list[dict]):
    folder = build_intermediate(tmp, rows_)
    policy = read_ui_policy(write_synthetic_ui_policy(tmp / "eui.dta", seed=3))
    policy.to_parquet(folder / "cps_ui_policy.parquet", index=False)
    return folder, policy


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder, policy = folder_for(tmp_path_factory.mktemp("ui"), rows())
    return ui.build_table(BuildContext(TASK, folder, MACRO)), policy


def lcui(cpsidp: int) -> str:
    return "lcui_" + hashlib.blake2b(f"labor_cps_ui|{cpsidp}".encode(), digest_size=12).hexdigest()


def test_universe_link_and_target(built) -> None:
    table, _ = built
    assert [c for c in table.columns if not c.startswith("_")] == table_columns(TASK)
    r = table.set_index("id")
    assert r["target"].to_dict() == {
        lcui(601): "employed",
        lcui(602): "unemployed",
        lcui(603): "not_in_labor_force",
        lcui(617): "employed",
    }
    assert r.loc[lcui(602), "time"] == "2009-05-01"
    steps = pd.DataFrame(table.attrs["construction_steps"]).set_index("step")["dropped"]
    assert steps["job loser (WHYUNEMP 1-3)"] == 1 and steps["age 18-69"] == 2
    assert steps["baseline month in January 2008 - August 2014"] == 1  # 607 (Sep 2014)
    assert steps["last job's occupation in a broad group"] == 1
    assert steps["last job's industry in a broad group"] == 1
    assert steps["seeking full- or part-time work"] == 1
    assert steps["FAMSIZE >= 1 and 0 <= NCHILD <= FAMSIZE"] == 1
    same = "same person at t+1 (MISH + 1, CPSIDV, sex, race, age + 0-1), release date, weight"
    assert steps[same] == 4  # 609, 610, 611 and CPSIDP 0


def test_policy_and_labels(built) -> None:
    table, policy = built
    r = table.set_index("id")
    cell = policy.set_index(["fips", "year", "month"]).loc[(39, 2009, 5)]
    assert r.loc[lcui(602), "maximum_ui_weeks"] == cell["maximum_ui_weeks"]
    assert r.loc[lcui(602), "extension_ui_weeks"] == cell["extension_ui_weeks"] > 0
    assert r.loc[lcui(601), "extension_ui_weeks"] == 0  # before July 2008
    assert r.loc[lcui(601), "search_layoff_status"] == "temporary_layoff"
    assert r.loc[lcui(601), "whyunemp_text"] == "you were on temporary layoff from a job"
    assert r.loc[lcui(603), "whyunemp_text"] == "a temporary job ended"
    assert r.loc[lcui(602), "last_job_occupation"] == "administrative support occupations"
    assert r.loc[lcui(602), "last_job_industry"] == "retail trade"
    assert r.loc[lcui(603), "last_job_occupation"] == "laboring and cleaning occupations"
    assert r.loc[lcui(603), "last_job_industry"] == "business services"  # 7380 override
    assert r.loc[lcui(617), "classwkr"] is None and r.loc[lcui(617), "wnftlook_baseline"] is None
    assert {"regular_ui_weeks", "maximum_ui_weeks"} <= set(table.attrs["float_columns"])


def test_broad_groups_follow_the_overrides() -> None:
    occ = ui.broad_occupation(pd.Series([430, 1550, 3300, 3100, 3640, 3655, 6260, 9840, 9999]))
    assert occ.tolist() == [
        "management occupations",
        "technical occupations",
        "technical occupations",
        "professional occupations",
        "other service occupations",
        "other service occupations",
        "laboring and cleaning occupations",
        "the armed forces",
        None,
    ]
    ind = ui.broad_industry(pd.Series([170, 570, 7270, 7470, 8680, 9290, 9890, 100]))
    assert ind.tolist() == ["agriculture", "transportation, communications, and public utilities",
                            "professional services", "business services", "personal services",
                            "personal services", "the armed forces", None]  # fmt: skip


def test_prompt(built) -> None:
    table, _ = built
    r = table.set_index("id", drop=False)
    system, user = ui.render(r.loc[lcui(602)].to_dict(), TASK)
    check_prompt(system, user, TASK, 5)
    parts = user.split("\n\n")
    assert len(parts) == 7 and parts[3].startswith("You are also aware of recent national")
    assert parts[1] == (
        "Here is your current and recent labor-market situation. Note that the "
        "current month is May. You are currently unemployed and are seeking "
        "full-time work. You have been unemployed for 10 weeks. The last time "
        "you worked full-time for at least 2 consecutive weeks was one to five "
        "years ago. In your most recent job, you worked in the private sector."
    )
    assert parts[2] == ("Here is some additional information about your unemployment spell and "
                        "most recent job. Your unemployment began because you lost a job for "
                        "another reason. You are currently actively looking for work. In your "
                        "most recent job, your industry was retail trade, and your occupation "
                        "was administrative support occupations.")  # fmt: skip
    assert parts[4].startswith("Under the rules in your state in the current month, a job loser")
    _, user = ui.render(r.loc[lcui(617)].to_dict(), TASK)
    assert "at least 2 consecutive weeks" not in user and "job, you worked" not in user
    row = r.loc[lcui(602)].to_dict() | {"regular_ui_weeks": 1.0, "extension_ui_weeks": 12.5,
                                        "maximum_ui_weeks": 13.5}  # fmt: skip
    _, user = ui.render(row, TASK)
    assert (
        "benefits for up to 13.5 weeks. This total consists of 1 week of regular state "
        "benefits and 12.5 weeks of temporary additional benefits."
    ) in user
    assert ui.naive_baseline(row, TASK) == ["unemployed"]
    check_golden("labor_cps_ui", *ui.render(r.loc[lcui(602)].to_dict(), TASK))


def test_active_search_needs_last_full_time_work(built) -> None:
    table, _ = built
    row = table.set_index("id").loc[lcui(602)].to_dict() | {
        "id": lcui(602),
        "wnftlook_baseline": None,
    }
    with pytest.raises(DataError, match="wnftlook_baseline"):
        ui.render(row, TASK)


@pytest.mark.parametrize(
    ("drop", "extra", "message"),
    [
        (603, [], "representative cases"),
        (None, pair(620, 2009, 5, {"VETSTAT": 0}), "no veteran status"),
    ],
)
def test_whole_table_checks(tmp_path, drop, extra, message) -> None:
    kept = [r for r in rows(*extra) if r["CPSIDP"] != drop]
    folder, _ = folder_for(tmp_path, kept)
    with pytest.raises(DataError, match=message):
        ui.build_table(BuildContext(TASK, folder, MACRO))


def test_release_is_published_time_first(built, tmp_path) -> None:
    """The reference publishes by (baseline year, month, subject_id, MISH): time first. The
    hashed ids of these rows sort otherwise (id first would not be time order)."""
    from hhx.tasks.build import build_task

    table, policy = built
    keys = list(zip(table["time"], table["id"], strict=True))
    assert sorted(keys) != sorted(keys, key=lambda k: (k[1], k[0]))  # the test can fail
    folder = build_intermediate(tmp_path, rows())
    policy.to_parquet(folder / "cps_ui_policy.parquet", index=False)
    build_task(BuildContext(TASK, folder, MACRO, synthetic=True), tmp_path / "hb", synthetic=True)
    published = pd.read_csv(tmp_path / "hb" / "tabular" / "labor_cps_ui.csv", dtype=str)
    assert list(zip(published["time"], published["id"], strict=True)) == sorted(keys)
    sidecar = pd.read_csv(tmp_path / "hb" / "splits" / "labor_cps_ui.csv", dtype=str)
    assert sidecar["id"].tolist() == published["id"].tolist()
