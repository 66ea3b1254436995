"""FRED-QD reader, macro-context build and join, and the synthetic FRED-QD writer.

Expected macro values are recomputed here from the raw CSV cells with the csv module and plain
arithmetic, independently of hhx.surveys.macro.fred_qd.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.surveys.base import has_synthetic_sidecar
from hhx.surveys.macro.fred_qd import (
    CATEGORY_CPI_MACRO_COLUMNS,
    CORE_MACRO_COLUMNS,
    PSID_ASSET_MACRO_COLUMNS,
    attach_macro_context,
    build,
    build_macro_context,
    read_fred_cpi_csvs,
    read_fred_qd,
)
from hhx.surveys.synthetic.macro.fred_qd import write_synthetic_cpi_fred, write_synthetic_fred_qd

SHARED = Path(__file__).resolve().parents[3] / "shared"
REAL_FRED = SHARED / "data" / "fred_qd" / "FRED-QD_vintage_to_2025Q2.csv"
REAL_CPI = SHARED / "data" / "cpi_fred"
SERIES = ["GDPC1", "UNRATE", "CPIAUCSL", "FEDFUNDS", "USSTHPI", "S&P 500", "MORTGAGE30US"]


def qi(year: int, quarter: int) -> int:
    return year * 4 + quarter


@pytest.fixture(scope="module")
def real_raw() -> dict[str, dict[int, float | None]]:
    """{series: {q_index: level or None}} straight from the CSV cells."""
    if not REAL_FRED.is_file():
        pytest.skip("../shared is absent (reference data for developers and CI only)")
    with REAL_FRED.open(newline="") as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    out: dict[str, dict[int, float | None]] = {s: {} for s in SERIES}
    for row in rows[3:]:  # header, factors, transform
        month, _, year = row[0].split("/")
        q = qi(int(year), (int(month) - 1) // 3 + 1)
        for s in SERIES:
            cell = row[header.index(s)]
            out[s][q] = float(cell) if cell else None
    return out


@pytest.fixture(scope="module")
def real_fred() -> pd.DataFrame:
    if not REAL_FRED.is_file():
        pytest.skip("../shared is absent (reference data for developers and CI only)")
    return read_fred_qd(REAL_FRED)


@pytest.fixture(scope="module")
def real_macro(real_fred: pd.DataFrame) -> pd.DataFrame:
    return build_macro_context(real_fred, read_fred_cpi_csvs(REAL_CPI))


def test_real_file_parses_every_task_series(real_fred, real_raw):
    assert real_fred["q_index"].iloc[0] == qi(1959, 1)
    assert real_fred["q_index"].iloc[-1] == qi(2025, 2)
    assert (real_fred["q_index"].diff().iloc[1:] == 1).all()
    for s in SERIES:
        got = dict(zip(real_fred["q_index"], real_fred[s], strict=True))
        for q, level in real_raw[s].items():
            if level is None:
                assert math.isnan(got[q]), (s, q)
            else:
                assert got[q] == level, (s, q)
    # Series starting later than 1959 are blank early, as published.
    assert real_fred["USSTHPI"].isna().iloc[0] and real_fred["USSTHPI"].notna().iloc[-1]


def _growth(levels: dict[int, float | None], q: int) -> float:
    return 100.0 * (levels[q] / levels[q - 1] - 1.0)


def _expected(raw: dict[str, dict[int, float | None]], origin: int) -> dict[str, float]:
    ref = origin - 1
    exp: dict[str, float] = {}
    for prefix, s in [
        ("gdp_growth_qoq", "GDPC1"),
        ("headline_cpi_qoq", "CPIAUCSL"),
        ("house_price_growth_qoq", "USSTHPI"),
        ("sp500_growth_qoq", "S&P 500"),
    ]:
        for k in range(1, 5):
            exp[f"{prefix}_lag{k}"] = _growth(raw[s], ref - (k - 1))
        exp[f"{prefix}_5y_compound"] = 100.0 * ((raw[s][ref] / raw[s][ref - 20]) ** (1 / 20) - 1)
    for prefix, s in [
        ("unemployment_rate", "UNRATE"),
        ("fedfunds_rate", "FEDFUNDS"),
        ("mortgage30us_rate", "MORTGAGE30US"),
    ]:
        for k in range(1, 5):
            exp[f"{prefix}_lag{k}"] = raw[s][ref - (k - 1)]
        exp[f"{prefix}_5y_mean"] = sum(raw[s][ref - j] for j in range(20)) / 20
    return exp


@pytest.mark.parametrize("origin", [qi(2019, 1), qi(2008, 4)])
def test_macro_context_matches_hand_computation(real_macro, real_raw, origin):
    row = real_macro.loc[real_macro["eligible_origin_q_index"] == origin]
    assert len(row) == 1
    row = row.iloc[0]
    ref_year, ref_quarter = divmod(origin - 2, 4)
    assert row["macro_reference_q_index"] == origin - 1
    assert (row["macro_reference_year"], row["macro_reference_quarter"]) == (
        ref_year,
        ref_quarter + 1,
    )
    expected = _expected(real_raw, origin)
    assert set(CORE_MACRO_COLUMNS) | set(PSID_ASSET_MACRO_COLUMNS) == set(expected)
    for column, value in expected.items():
        assert row[column] == pytest.approx(value, rel=1e-12, abs=1e-12), column


def test_macro_context_rows_require_complete_core(real_macro):
    # GDP starts 1959Q1, so 20 quarterly changes first exist at reference 1964Q1 -> origin 1964Q2;
    # the vintage ends 2025Q2 -> last origin 2025Q3.
    keys = real_macro["eligible_origin_q_index"]
    assert keys.iloc[0] == qi(1964, 2) and keys.iloc[-1] == qi(2025, 3)
    assert keys.is_unique and (keys.diff().iloc[1:] == 1).all()
    assert real_macro[CORE_MACRO_COLUMNS].notna().all().all()
    # The 30-year mortgage series starts in 1971, so early rows keep NA asset values.
    assert real_macro["mortgage30us_rate_lag1"].isna().iloc[0]


def _cpi_month_values(series: str) -> dict[str, float]:
    with (REAL_CPI / f"{series}.csv").open(newline="") as fh:
        rows = list(csv.reader(fh))[1:]
    return {d[:7]: float(v) for d, v in rows}


def test_category_cpi_quarterly_means_and_completeness(real_macro):
    food = _cpi_month_values("CPIFABSL")
    q4 = sum(food[m] for m in ["2018-10", "2018-11", "2018-12"]) / 3
    q3 = sum(food[m] for m in ["2018-07", "2018-08", "2018-09"]) / 3
    row = real_macro.set_index("eligible_origin_q_index").loc[qi(2019, 1)]
    assert row["cpi_food_beverages_qoq_lag1"] == pytest.approx(100 * (q4 / q3 - 1), rel=1e-12)
    by_origin = real_macro.set_index("eligible_origin_q_index")
    # Monthly data end 2023-11: 2023Q4 has two months, so its quarter (origin 2024Q1) is NA.
    assert math.isnan(by_origin.loc[qi(2024, 1), "cpi_housing_qoq_lag1"])
    assert not math.isnan(by_origin.loc[qi(2023, 4), "cpi_housing_qoq_lag1"])
    # Recreation starts 1993-01: 20 quarterly changes first complete at reference 1998Q1.
    assert math.isnan(by_origin.loc[qi(1998, 1), "cpi_recreation_qoq_5y_compound"])
    assert not math.isnan(by_origin.loc[qi(1998, 2), "cpi_recreation_qoq_5y_compound"])


def test_attach_keeps_rows_and_fails_clearly(real_macro):
    df = pd.DataFrame({"id": ["a", "b", "c"]}, index=[10, 5, 7])
    origins = pd.Series([qi(2019, 1), qi(2008, 4), qi(2019, 1)], index=df.index)
    out = attach_macro_context(df, origins, real_macro)
    assert len(out) == 3 and list(out.index) == [10, 5, 7] and list(out["id"]) == ["a", "b", "c"]
    by_origin = real_macro.set_index("eligible_origin_q_index")
    for i, q in zip(out.index, origins, strict=True):
        for c in CORE_MACRO_COLUMNS:
            assert out.at[i, c] == by_origin.at[q, c]
    assert out.loc[10, "macro_reference_q_index"] == qi(2018, 4)

    later = pd.Series([qi(2019, 1), qi(2026, 1), qi(2026, 1)])
    with pytest.raises(DataError, match=r"2026Q1.*FRED-QD vintage covering"):
        attach_macro_context(df.reset_index(drop=True), later, real_macro)
    with pytest.raises(DataError, match="overwrite"):
        attach_macro_context(df.assign(unemployment_rate_lag1=1.0), origins, real_macro)
    with pytest.raises(DataError, match="missing or non-numeric"):
        attach_macro_context(df, pd.Series([qi(2019, 1), None, qi(2019, 1)]), real_macro)
    # Category CPI is empty for 2024Q1: required -> error, optional -> NA attached.
    late = pd.Series([qi(2024, 1)] * 3)
    with pytest.raises(DataError, match="empty for origin quarter"):
        attach_macro_context(df, late, real_macro, CORE_MACRO_COLUMNS + CATEGORY_CPI_MACRO_COLUMNS)
    opt = attach_macro_context(df, late, real_macro, optional=CATEGORY_CPI_MACRO_COLUMNS)
    assert opt["cpi_housing_qoq_lag1"].isna().all()
    suffixed = attach_macro_context(df, origins, real_macro, suffix="_m12")
    assert "gdp_growth_qoq_lag1_m12" in suffixed and "gdp_growth_qoq_lag1" not in suffixed


def test_attach_without_cpi_groups_names_the_fix(real_fred):
    macro = build_macro_context(real_fred)
    assert not set(CATEGORY_CPI_MACRO_COLUMNS) & set(macro.columns)
    df = pd.DataFrame({"id": ["a"]})
    with pytest.raises(DataError, match="survey=fred_qd"):
        attach_macro_context(df, pd.Series([qi(2019, 1)]), macro, CATEGORY_CPI_MACRO_COLUMNS)


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\r\n".join(lines) + "\r\n")
    return path


HEADER = "sasdate,GDPC1,UNRATE,CPIAUCSL,FEDFUNDS,USSTHPI,S&P 500,MORTGAGE30US"
META = ["factors,0,0,0,1,1,1,0", "transform,5,2,6,2,5,5,2"]


def test_reader_rejects_bad_layouts(tmp_path):
    good = ["3/1/2000,1,4,2,5,3,7,8", "6/1/2000,1,4,2,5,3,7,8"]
    ok = read_fred_qd(_write(tmp_path / "ok.csv", [HEADER, *META, *good]))
    assert list(ok["q_index"]) == [qi(2000, 1), qi(2000, 2)]
    no_unrate = HEADER.replace("UNRATE,", "")
    rows = [r.replace(",4,", ",", 1) for r in [*META, *good]]
    with pytest.raises(DataError, match=r"column 'UNRATE' missing"):
        read_fred_qd(_write(tmp_path / "a.csv", [no_unrate, *rows]))
    with pytest.raises(DataError, match="2000Q1 appears more than once"):
        read_fred_qd(_write(tmp_path / "b.csv", [HEADER, *META, good[0], good[0]]))
    with pytest.raises(DataError, match="jump from 2000Q1 to 2000Q3"):
        read_fred_qd(_write(tmp_path / "c.csv", [HEADER, *META, good[0], "9/1/2000,1,4,2,5,3,7,8"]))
    with pytest.raises(DataError, match="not M/D/YYYY"):
        read_fred_qd(_write(tmp_path / "d.csv", [HEADER, *META, "2000-03-01,1,4,2,5,3,7,8"]))
    with pytest.raises(DataError, match="non-numeric value 'x'"):
        read_fred_qd(_write(tmp_path / "e.csv", [HEADER, *META, "3/1/2000,1,x,2,5,3,7,8"]))
    with pytest.raises(DataError, match="not found"):
        read_fred_qd(tmp_path / "absent.csv")


def test_synthetic_round_trip_and_determinism(tmp_path):
    path = write_synthetic_fred_qd(tmp_path / "a.csv", seed=7)
    lines = path.read_text().splitlines()
    assert lines[0].split(",")[0] == "sasdate" and "S&P 500" in lines[0].split(",")
    assert lines[1].startswith("factors,") and lines[2].startswith("transform,")
    assert lines[3].startswith("3/1/1959,") and lines[-1].startswith("6/1/2026,")
    assert path.read_bytes() == write_synthetic_fred_qd(tmp_path / "b.csv", seed=7).read_bytes()
    assert path.read_bytes() != write_synthetic_fred_qd(tmp_path / "c.csv", seed=8).read_bytes()

    fred = read_fred_qd(path)
    assert fred["q_index"].iloc[-1] == qi(2026, 2)
    macro = build_macro_context(fred)
    keys = set(macro["eligible_origin_q_index"])
    assert {qi(2015, 1), qi(2026, 1), qi(2026, 2)} <= keys
    g = 100 * fred["GDPC1"].pct_change().dropna()
    assert 0.4 < g.mean() < 0.9 and (g < 0).mean() > 0.05  # growth with recessions
    assert fred["UNRATE"].between(3.4, 10.8).all() and fred["UNRATE"].std() > 0.5
    assert macro["fedfunds_rate_lag1"].nunique() > 100  # context varies across quarters


def test_synthetic_cpi_reads_back(tmp_path):
    write_synthetic_cpi_fred(tmp_path / "cpi", seed=3, start="1990-01", end="2000-12")
    cpi = read_fred_cpi_csvs(tmp_path / "cpi")
    assert len(cpi) == 132 and cpi["cpi_housing"].notna().all()
    assert cpi.loc[cpi["date"] < "1993-01-01", "cpi_recreation"].isna().all()


def _cpi_groups(raw: Path, out: Path, **span: str) -> Path:
    """The cpi source's intermediate, which the macro context joins (spec 3.1)."""
    from hhx.surveys.macro.cpi import build as build_cpi

    write_synthetic_cpi_fred(raw / "cpi", seed=1, **span)
    report = build_cpi(SurveyConfig(name="cpi", raw={"cpi": "cpi"}), raw, out)
    return Path(report.outputs["cpi_major_groups"])


def test_build_writes_parquet_and_report(tmp_path):
    raw = tmp_path / "raw"
    write_synthetic_fred_qd(raw / "macro" / "q.csv", seed=1, end="2020Q4")
    survey = SurveyConfig(name="fred_qd", raw={"fred_qd": "macro/q.csv"})
    with pytest.raises(DataError, match="survey=cpi"):  # the CPI groups come first
        build(survey, raw, tmp_path / "out")
    cpi = _cpi_groups(raw, tmp_path / "out", end="2020-12")
    report = build(survey, raw, tmp_path / "out")
    out = pd.read_parquet(report.outputs["householdbench_macro_context"])
    assert report.rows["householdbench_macro_context"] == len(out) > 0
    assert sorted(report.inputs) == sorted([str(raw / "macro" / "q.csv"), str(cpi)])
    assert all(len(v) == 64 for v in report.inputs.values())
    assert set(CATEGORY_CPI_MACRO_COLUMNS) <= set(out.columns)
    assert np.issubdtype(out["eligible_origin_q_index"].dtype, np.integer)
    missing = SurveyConfig(name="fred_qd", raw={"fred_qd": "nope.csv"}, source_url="https://x")
    with pytest.raises(DataError, match="https://x"):
        build(missing, raw, tmp_path / "out2")


def test_synthetic_label_follows_the_inputs(tmp_path, real_fred):
    """Generated inputs mark the output synthetic (a sidecar next to the parquet); rebuilding the
    same output from the real vintage removes that label instead of leaving it stale."""
    raw = tmp_path / "raw"
    write_synthetic_fred_qd(raw / "q.csv", seed=1, end="2020Q4")
    out = tmp_path / "out"
    (raw / "cpi").mkdir(parents=True)
    from hhx.surveys.macro.cpi import build as build_cpi

    for f in REAL_CPI.glob("*.csv"):  # real CPI groups: only the FRED-QD file is generated
        (raw / "cpi" / f.name).write_bytes(f.read_bytes())
    build_cpi(SurveyConfig(name="cpi", raw={"cpi": "cpi"}), raw, out)
    fake = build(SurveyConfig(name="fred_qd", raw={"fred_qd": "q.csv"}), raw, out)
    parquet = Path(fake.outputs["householdbench_macro_context"])
    assert fake.synthetic and has_synthetic_sidecar(parquet)
    real = build(SurveyConfig(name="fred_qd", raw={"fred_qd": str(REAL_FRED)}), raw, out)
    assert real.outputs == fake.outputs
    assert not real.synthetic and not has_synthetic_sidecar(parquet)


def test_macro_columns_follow_the_reference_order_and_cpi_gaps_are_errors(real_fred):
    cpi = read_fred_cpi_csvs(REAL_CPI)
    macro = build_macro_context(real_fred, cpi)
    growth = ["gdp_growth_qoq", "headline_cpi_qoq",
              *[f"cpi_{g}_qoq" for g in ("food_beverages", "housing", "apparel",
                                         "transportation", "medical_care", "recreation",
                                         "education_communication", "other_goods_services")],
              "house_price_growth_qoq", "sp500_growth_qoq"]
    expected = ["eligible_origin_q_index", "macro_reference_q_index", "macro_reference_year",
                "macro_reference_quarter", "macro_reference_date"]
    for prefix in growth:
        expected += [*(f"{prefix}_lag{k}" for k in range(1, 5)), f"{prefix}_5y_compound"]
    for prefix in ("unemployment_rate", "fedfunds_rate", "mortgage30us_rate"):
        expected += [*(f"{prefix}_lag{k}" for k in range(1, 5)), f"{prefix}_5y_mean"]
    assert list(macro.columns) == expected
    assert len(CATEGORY_CPI_MACRO_COLUMNS) == 40
    gap = cpi.drop(index=cpi.index[cpi["date"].eq(pd.Timestamp("2001-05-01"))])
    with pytest.raises(DataError, match=r"no row for the months after 2001-04"):
        build_macro_context(real_fred, gap)
