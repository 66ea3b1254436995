"""Synthetic IPUMS CPS extract: official format, real codes, 4-8-4 rotation, linkable ids, and
labor-force flows like the published CPS ones (measured on generated data, with tolerances)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.surveys.cps.ipums import EXTRACT_COLUMNS, read_normalized
from hhx.surveys.cps.labels import STATE_NAMES
from hhx.surveys.synthetic.cps.ipums import SLOTS, write_synthetic_cps
from hhx.tasks.cps.common import ADJACENT_MONTH, lf_status, link_months

# Census divisions (IPUMS REGION codes) of a few states, from the Census Bureau's definitions.
DIVISION = {6: 42, 36: 12, 48: 33, 17: 21, 12: 31, 25: 11, 27: 22, 47: 32, 8: 41}


@pytest.fixture(scope="module")
def extract(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("syn") / "cps_basic.csv.gz"
    return write_synthetic_cps(
        path, seed=11, n_households=2500, start="2019-01", end="2021-06", skip_months=("2020-07",)
    )


@pytest.fixture(scope="module")
def data(extract: Path) -> pd.DataFrame:
    return read_normalized(extract)  # fails on any code without an IPUMS label


@pytest.fixture(scope="module")
def links(data: pd.DataFrame) -> pd.DataFrame:
    out = link_months(data, 1, ADJACENT_MONTH, target_columns=("EMPSTAT", "MISH", "DURUNEMP"))
    ok = out["_key_ok"] & out["_linked"] & out["_mish_ok"] & (out["AGE"] >= 16)
    out = out[ok.to_numpy()].copy()
    out["from"], out["to"] = lf_status(out["EMPSTAT"]), lf_status(out["EMPSTAT_t"])
    return out


def test_header_and_layout_are_the_extracts(extract: Path) -> None:
    with gzip.open(extract, "rt") as fh:
        header = fh.readline().strip()
        first = fh.readline().strip()
    assert header == ",".join(f'"{c}"' for c in EXTRACT_COLUMNS)  # 149 quoted IPUMS names
    assert len(EXTRACT_COLUMNS) == 149
    assert first.split(",")[EXTRACT_COLUMNS.index("HRSAMPLE")].startswith('"')  # quoted code
    marker = json.loads(Path(f"{extract}.synthetic.json").read_text())
    assert marker["synthetic"] is True and marker["seed"] == 11


def test_codes_are_ipums_codes(data: pd.DataFrame) -> None:
    assert set(data["MISH"].unique()) == set(range(1, 9))
    emp = set(data["EMPSTAT"].dropna().unique())
    assert emp <= {10, 12, 21, 22, 32, 34, 36} and {10, 21, 36} <= emp
    unemployed = data["EMPSTAT"].isin([21, 22]).fillna(False)
    assert set(data.loc[unemployed, "WKSTAT"]) <= {50, 60}
    assert data.loc[unemployed, ["wkstat", "wnftlook", "DURUNEMP"]].notna().all().all()
    # 999 = NIU for everyone else, kept as the reference's missing-code table keeps it
    # (NA only with survey.improvements=[cps_extra_missing_codes])
    assert (data.loc[~unemployed, "DURUNEMP"] == 999).all()
    assert set(data["STATEFIP"]) <= set(STATE_NAMES) - set(range(61, 100))
    for fips, division in DIVISION.items():
        assert set(data.loc[data["STATEFIP"] == fips, "REGION"]) <= {division}
    children = data["AGE"] < 15
    assert (
        data.loc[children, "EMPSTAT"].isna().all() and data.loc[~children, "EMPSTAT"].notna().all()
    )


def test_rotation_4_8_4_and_skipped_month(data: pd.DataFrame) -> None:
    # CPSID starts with the year and month of the household's first interview
    entry = data["CPSID"] // 10**8
    entry_index = (entry // 100) * 12 + entry % 100 - 1
    month_index = data["YEAR"] * 12 + data["MONTH"] - 1
    offset = (month_index - entry_index).astype(int)
    assert (offset.to_numpy() == np.array(SLOTS)[data["MISH"].to_numpy(int) - 1]).all()
    assert not ((data["YEAR"] == 2020) & (data["MONTH"] == 7)).any()
    assert ((data["YEAR"] == 2020) & (data["MONTH"] == 8)).any()


def test_person_ids_link_across_months(data: pd.DataFrame) -> None:
    assert (data["CPSIDP"] == data["CPSID"] + data["PERNUM"]).all()
    assert data["CPSIDP"].astype(str).str.len().eq(14).all()
    assert not data.duplicated(["YEAR", "MONTH", "CPSIDP"]).any()
    per_person = data.groupby("CPSIDP").agg(
        sex=("SEX", "nunique"),
        race=("RACE", "nunique"),
        n=("MISH", "size"),
        lo=("AGE", "min"),
        hi=("AGE", "max"),
    )
    per_person["span"] = per_person["hi"] - per_person["lo"]
    assert (per_person[["sex", "race"]] == 1).all().all()
    assert per_person["span"].between(0, 2).all()  # at most 16 months in sample
    assert per_person["n"].max() == 8 and (per_person["n"] >= 2).mean() > 0.9


def test_flows_resemble_published_cps_flows(links: pd.DataFrame) -> None:
    flows = pd.crosstab(links["from"], links["to"], normalize="index")
    u = flows.loc["unemployed"]
    assert (links["from"] == "unemployed").sum() > 300
    assert 0.40 <= u["unemployed"] <= 0.60  # about half stay unemployed
    assert 0.15 <= u["employed"] <= 0.38 and 0.15 <= u["not_in_labor_force"] <= 0.38
    assert flows.loc["employed", "employed"] >= 0.93
    assert flows.loc["not_in_labor_force", "not_in_labor_force"] >= 0.93


def test_duration_grows_and_predicts_job_finding(links: pd.DataFrame) -> None:
    stay = links[(links["from"] == "unemployed") & (links["to"] == "unemployed")]
    growth = (stay["DURUNEMP_t"] - stay["DURUNEMP"]).astype(int)
    capped = stay["DURUNEMP_t"] >= 119  # durations stop at 119 weeks
    assert growth[~capped].isin([4, 5]).all()  # weeks between reference weeks
    u = links[links["from"] == "unemployed"]
    found = u["to"] == "employed"
    assert found[u["DURUNEMP"] <= 4].mean() > found[u["DURUNEMP"] >= 15].mean() + 0.05
    older = u["AGE"] >= 60
    left = u["to"] == "not_in_labor_force"
    assert left[older].mean() > left[(u["AGE"] >= 25) & (u["AGE"] < 55)].mean()


def test_deterministic_for_a_seed(tmp_path: Path) -> None:
    def content(path: Path) -> bytes:
        with gzip.open(path, "rb") as fh:
            return fh.read()

    args = dict(n_households=40, start="2023-01", end="2023-03")
    a = write_synthetic_cps(tmp_path / "a.csv.gz", seed=5, **args)
    b = write_synthetic_cps(tmp_path / "b.csv.gz", seed=5, **args)
    c = write_synthetic_cps(tmp_path / "c.csv.gz", seed=6, **args)
    assert content(a) == content(b) != content(c)


@pytest.mark.heavy
def test_xgboost_beats_no_change_on_the_demo_jobfind_task(tmp_path: Path) -> None:
    """The demo must leave something to learn: on held-out quarters XGBoost's macro-F1 beats the
    no-change prediction ("unemployed") on labor_cps_jobfind built from synthetic files."""
    xgb = pytest.importorskip("xgboost")
    from hhx.config import SurveyConfig
    from hhx.surveys.cps.ipums import build
    from hhx.surveys.macro.fred_qd import build_macro_context, read_fred_qd
    from hhx.surveys.synthetic.macro.fred_qd import write_synthetic_fred_qd
    from hhx.tasks.context import BuildContext
    from hhx.tasks.cps import labor_cps_jobfind
    from hhx.tasks.registry import load_task

    write_synthetic_cps(
        tmp_path / "cps_basic.csv.gz",
        seed=20261130,
        n_households=6000,
        start="2015-01",
        end="2026-03",
    )
    build(SurveyConfig(name="cps", raw={"cps_basic": "cps_basic.csv.gz"}), tmp_path, tmp_path)
    macro = build_macro_context(read_fred_qd(write_synthetic_fred_qd(tmp_path / "qd.csv", seed=1)))
    task = load_task("labor_cps_jobfind")
    table = labor_cps_jobfind.build_table(BuildContext(task, tmp_path, macro))
    labels = task.fields[0].labels
    x = table[task.prompt_predictors].copy()
    for col in task.categorical_predictors:
        x[col] = x[col].astype("category")
    y = table["target"].map({lab: i for i, lab in enumerate(labels)}).to_numpy()
    quarter = pd.PeriodIndex(table["time"], freq="Q").astype(str)
    held = np.random.default_rng(0).permutation(np.unique(quarter))[:9]
    test = np.isin(quarter, held)
    model = xgb.XGBClassifier(
        n_estimators=150,
        max_depth=4,
        learning_rate=0.05,
        n_jobs=1,
        enable_categorical=True,
        tree_method="hist",
        random_state=0,
    )
    model.fit(x[~test], y[~test])

    def macro_f1(pred: np.ndarray, true: np.ndarray) -> float:
        scores = []
        for k in range(len(labels)):
            tp = np.sum((pred == k) & (true == k))
            wrong = np.sum((pred == k) != (true == k))
            scores.append(2 * tp / (2 * tp + wrong) if 2 * tp + wrong else 0.0)
        return float(np.mean(scores))

    assert len(table) > 800 and test.sum() > 100
    no_change = np.full(test.sum(), labels.index("unemployed"))
    assert macro_f1(model.predict(x[test]), y[test]) > macro_f1(no_change, y[test]) + 0.05
