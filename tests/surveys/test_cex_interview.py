"""CEX Interview builder: seeded intrvwYY.zip round trips, BLS's real layout stub, the data
dictionary, and error messages.

Expected values come from the generator's truth (what it drew and wrote into the copy that must
be kept), from the raw FMLI rows read here with the csv module, or from rules written out here
from the spec (00_common 1.5, 10_tasks 1), never from the builder's own output.
"""

from __future__ import annotations

import csv
import io
import math
import shutil
import zipfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.surveys.base import BuildReport
from hhx.surveys.cex import interview as cex_interview
from hhx.surveys.cex import interview_variables as cexvars
from hhx.surveys.synthetic.cex import interview as synth

SHARED = Path(__file__).resolve().parents[3] / "shared"
STUB = SHARED / "data" / "cex_meta" / "intrvw21_layout_stub"
DICTIONARY = SHARED / "data" / "cex_meta" / "ce-data-dict.xlsx"

SEED, N = 11, 5
MODERN = [2014, 2015, 2024]  # the 2015 design boundary and the 2023-24 food regimes
OLD = [1981, 1984, 1986]  # legacy state codes, Z* summaries, pre_1986 -> frame_1986
KEY = ["newid", "interview_year", "interview_month"]
CATEGORIES = [
    "cons_food", "cons_alcohol", "cons_housing", "cons_apparel", "cons_transport",
    "cons_health", "cons_entertainment", "cons_personal_care", "cons_read", "cons_education",
    "cons_tobacco", "cons_misc",
]  # fmt: skip


def _build(path: Path, out: Path, **raw: str) -> tuple[pd.DataFrame, BuildReport]:
    survey = SurveyConfig(name="cex_interview", raw={"interview": str(path), **raw})
    report = cex_interview.build(survey, Path("/nonexistent"), out)
    return pd.read_parquet(report.outputs["cex_interview"]), report


def _generate(tmp: Path, years: list[int]) -> tuple[Path, pd.DataFrame]:
    synth.write_synthetic_cex_interview(tmp, seed=SEED, years=years, n_cu_per_quarter=N)
    truth = synth.synthetic_cex_interview_truth(seed=SEED, years=years, n_cu_per_quarter=N)
    return tmp, truth


@pytest.fixture(scope="module")
def modern(tmp_path_factory) -> tuple[Path, pd.DataFrame, pd.DataFrame, BuildReport]:
    raw, truth = _generate(tmp_path_factory.mktemp("modern"), MODERN)
    table, report = _build(raw, tmp_path_factory.mktemp("out"))
    return raw, truth, table, report


@pytest.fixture(scope="module")
def old(tmp_path_factory) -> tuple[Path, pd.DataFrame, pd.DataFrame, BuildReport]:
    raw, truth = _generate(tmp_path_factory.mktemp("old"), OLD)
    table, report = _build(raw, tmp_path_factory.mktemp("out"))
    return raw, truth, table, report


def _fmli_rows(raw: Path) -> list[dict[str, str]]:
    """Every FMLI row of every package, with its package year and member, via csv."""
    rows = []
    for path in sorted(raw.glob("intrvw*.zip")):
        year = 1900 + int(path.stem[-2:]) if int(path.stem[-2:]) >= 80 else 2000 + int(
            path.stem[-2:]
        )
        with zipfile.ZipFile(path) as zf:
            for name in sorted(zf.namelist()):
                if Path(name).name.startswith("fmli"):
                    for row in csv.DictReader(io.StringIO(zf.read(name).decode("ascii"))):
                        rows.append({**row, "_package": year, "_member": name})
    return rows


def _year(text: str) -> int:
    y = int(text)
    return y if y >= 100 else (1900 + y if y >= 80 else 2000 + y)


def _kept(rows: list[dict[str, str]]) -> dict[tuple[str, int, int], dict[str, str]]:
    """The latest package's copy of each (NEWID, year, month)."""
    out: dict[tuple[str, int, int], dict[str, str]] = {}
    for row in rows:
        key = (row["NEWID"], _year(row["QINTRVYR"]), int(row["QINTRVMO"]))
        if key not in out or out[key]["_package"] < row["_package"]:
            out[key] = row
    return out


def _num(row: dict[str, str], name: str) -> float:
    value = row.get(name, "NA")
    return math.nan if value in ("", "NA", ".") else float(value)


def _plus(*values: float) -> float:
    """Sum with at least one present (NaN if all are missing)."""
    present = [v for v in values if not math.isnan(v)]
    return sum(present) if present else math.nan


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) < 1e-6


def _rewrite(src: Path, dst: Path, member_suffix: str,
             edit: Callable[[list[str], list[list[str]]], tuple[list[str], list[list[str]]]],
             ) -> Path:
    """Copy a package with one FMLI member's header/rows changed by `edit`."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            data = zin.read(name)
            if name.endswith(member_suffix):
                table = list(csv.reader(io.StringIO(data.decode("ascii"))))
                header, rows = edit(table[0], table[1:])
                buf = io.StringIO()
                csv.writer(buf, lineterminator="\n").writerows([header, *rows])
                data = buf.getvalue().encode("ascii")
            zout.writestr(name, data)
    return dst


# --------------------------------------------------------------------------------------------
# Round trips


def test_round_trip_recovers_what_the_generator_wrote(modern):
    raw, truth, table, report = modern
    assert len(table) == len(truth) > 200
    assert not table.duplicated(KEY).any()
    assert not table.duplicated(["cex_panel_id", "interview_year", "interview_month"]).any()
    merged = table.merge(truth, on=KEY, suffixes=("", "_truth"), validate="1:1")
    assert len(merged) == len(truth)
    for column in [*CATEGORIES, "cons_total", "cons_cash_contrib", "cons_life_insurance",
                   "cons_retirement_pension_social_security", "cons_utilities", "cons_housop",
                   "cons_pubtra", "cons_gasmo", "weight", "income_before_tax", "salary"]:
        got, want = merged[column].to_numpy(float), merged[f"{column}_truth"].to_numpy(float)
        assert np.allclose(got, want, rtol=0, atol=1e-6, equal_nan=True), column
    assert (merged["cex_panel_id"] == merged["cex_panel_id_truth"]).all()
    assert (merged["cu_id_raw"] == merged["cu_id_raw_truth"]).all()
    assert (merged["interview_position_harmonized"] == merged["interview_position"]).all()
    assert (merged["interview_number"] == merged["interview_number_truth"]).all()
    for column in ("cex_first_release_year", "cex_overlap_versions", "cex_retained_package_year",
                   "cex_quarter_token", "fam_size", "n_kids", "age_ref", "region", "bls_urbn"):
        assert (merged[column].astype(str) == merged[f"{column}_truth"].astype(str)).all(), column
    assert list(merged["state"].fillna("NA")) == list(merged["state_truth"].fillna("NA"))
    n_adults = (merged["fam_size_truth"] - merged["n_kids_truth"]).clip(lower=0)
    assert (merged["n_adults"] == n_adults).all()
    assert (table["q_index"] == table["interview_year"] * 4 + (table["interview_month"] + 2) // 3
            ).all()
    assert (table["interview_month_index"] == table["interview_year"] * 12
            + table["interview_month"]).all()
    assert report.synthetic is True
    assert sorted(Path(p).name for p in report.inputs) == ["intrvw14.zip", "intrvw15.zip",
                                                           "intrvw24.zip"]
    assert all(len(h) == 64 for h in report.inputs.values())
    assert report.rows["cex_interview"] == len(truth)
    assert report.rows["packages"] == 3 and report.rows["fmli_members"] == 15
    assert report.rows["fmli_overlap_copies_dropped"] == int(
        (truth["cex_overlap_versions"] - 1).sum()
    )


def test_spending_aggregates_equal_hand_sums_of_the_raw_rows(modern):
    raw, _, table, _ = modern
    kept = _kept(_fmli_rows(raw))
    indexed = table.set_index(KEY)
    assert len(kept) == len(indexed)
    pairs = {"cons_total": "TOTEXP", "cons_alcohol": "ALCBEV", "cons_housing": "HOUS",
             "cons_apparel": "APPAR", "cons_transport": "TRANS", "cons_health": "HEALTH",
             "cons_entertainment": "ENTERT", "cons_personal_care": "PERSCA", "cons_read": "READ",
             "cons_education": "EDUCA", "cons_tobacco": "TOBACC", "cons_misc": "MISC"}
    for key, row in kept.items():
        got = indexed.loc[key]
        both = {b: _plus(_num(row, f"{b}CQ"), _num(row, f"{b}PQ")) for b in (
            "TOTEXP", "FOOD", "GROCER", "FDAWAY", "ALCBEV", "HOUS", "APPAR", "TRANS", "HEALTH",
            "ENTERT", "PERSCA", "READ", "EDUCA", "TOBACC", "MISC", "CASHCO", "LIFINS", "RETPEN",
            "UTIL", "HOUSOP", "PUBTRA", "GASMO")}
        if key[1] * 4 + (key[2] + 2) // 3 >= 2024 * 4 + 2:  # redesigned: GROCER + FDAWAY
            food = _plus(_num(row, "GROCERCQ") + _num(row, "FDAWAYCQ"),
                         _num(row, "GROCERPQ") + _num(row, "FDAWAYPQ"))
        else:
            food = both["FOOD"]
        parker = both["TOTEXP"] - sum(
            0.0 if math.isnan(both[b]) else both[b] for b in ("CASHCO", "LIFINS", "RETPEN")
        )
        food_agg = food + both["ALCBEV"]
        strict = food_agg + sum(both[b] for b in ("UTIL", "HOUSOP", "PUBTRA", "GASMO", "PERSCA",
                                                  "TOBACC", "MISC"))
        nondurables = strict + both["APPAR"] + both["HEALTH"] + both["READ"]
        assert _close(got["cons_food"], food), key
        assert _close(got["cons_parker_total"], parker), key
        assert _close(got["cons_food_agg"], food_agg), key
        assert _close(got["cons_strict_nondurables"], strict), key
        assert _close(got["cons_nondurables"], nondurables), key
        assert _close(got["cons_durables"], parker - nondurables), key
        for column, base in pairs.items():
            assert _close(got[column], both[base]), (key, column)
    # The cons_cex_categories identity (10_tasks 3): the 12 categories sum to the Parker total.
    gap = table[CATEGORIES].sum(axis=1) - table["cons_parker_total"]
    assert gap.abs().max() < 1e-3


def test_overlapping_first_quarters_keep_the_latest_package(modern):
    raw, _, table, _ = modern
    rows = _fmli_rows(raw)
    copies = defaultdict(dict)
    for row in rows:
        copies[(row["NEWID"], _year(row["QINTRVYR"]), int(row["QINTRVMO"]))][row["_package"]] = row
    indexed = table.set_index(KEY)
    twice = {k: v for k, v in copies.items() if len(v) == 2}
    assert twice and all(k[1] == 2015 and k[2] <= 3 for k in twice)
    for key, by_package in twice.items():
        got = indexed.loc[key]
        assert got["cex_retained_package_year"] == 2015 and got["cex_first_release_year"] == 2014
        assert got["cex_overlap_versions"] == 2
        assert got["cex_source_member"] == "intrvw15/fmli151x.csv"
        assert got["weight"] == float(by_package[2015]["FINLWT21"])
        assert got["weight"] != float(by_package[2014]["FINLWT21"])  # recalibrated later copy
    once = table[(table["interview_year"] == 2024) & (table["quarter"] == 1)]
    assert len(once) and (once["cex_first_release_year"] == 2024).all()  # no 2023 package
    assert (once["cex_overlap_versions"] == 1).all()
    nxt = table[table["interview_year"] == 2025]
    assert len(nxt) and (nxt["cex_source_member"] == "intrvw24/fmli251.csv").all()


def test_sample_design_boundary_follows_the_kept_package(modern, tmp_path):
    raw, _, table, _ = modern
    q = table["q_index"]
    assert (table.loc[q <= 2014 * 4 + 4, "cex_sample_design"] == "frame_2005").all()
    assert (table.loc[q >= 2015 * 4 + 1, "cex_sample_design"] == "frame_2015").all()
    assert (table["cex_panel_id"] == table["cex_sample_design"] + ":" + table["cu_id_raw"]).all()
    assert (table["cu_id_raw"] == table["newid"].str[:7]).all()
    # Pre-2015 interview numbers 2-5 -> positions 1-4; from 2015 numbers 1-4 are kept.
    pre = table["interview_year"] <= 2014
    assert set(table.loc[pre, "interview_number"]) <= {2, 3, 4, 5}
    assert (table.loc[pre, "interview_position_harmonized"]
            == table.loc[pre, "interview_number"] - 1).all()
    assert (table.loc[~pre, "interview_position_harmonized"]
            == table.loc[~pre, "interview_number"]).all()
    # Within a panel, later interviews come in later quarters at later positions.
    for _, panel in table.groupby("cex_panel_id"):
        step = panel.sort_values("q_index")
        gaps = step["q_index"].diff().dropna()
        assert (gaps > 0).all()
        assert (step["interview_position_harmonized"].diff().dropna() == gaps).all()
    # With only the 2014 package, its 2015Q1 file (token 151) belongs to the old frame.
    only_2014 = tmp_path / "one"
    only_2014.mkdir()
    shutil.copy(raw / "intrvw14.zip", only_2014 / "intrvw14.zip")
    alone, _ = _build(only_2014, tmp_path / "out")
    late = alone[alone["cex_quarter_token"] == "151"]
    assert len(late) and (late["cex_sample_design"] == "frame_2005").all()
    assert (late["cex_first_release_year"] == 2014).all()


def test_food_regime_uses_grocery_plus_food_away_from_2024q2(modern, tmp_path):
    raw, _, table, _ = modern
    regime = table.set_index("year_quarter")["food_definition_regime"]
    assert set(regime[regime.index.str.startswith(("2014", "2015"))]) == {"legacy"}
    assert set(regime.loc[["2024Q1"]]) == {"transition"}
    assert set(regime[regime.index.isin(["2024Q2", "2024Q3", "2024Q4", "2025Q1"])]) == {
        "redesigned"
    }

    def inflate_food(header: list[str], rows: list[list[str]]) -> tuple[list[str], list]:
        i = header.index("FOODCQ")
        return header, [[*r[:i], "99999", *r[i + 1:]] for r in rows]

    pkg = tmp_path / "pkgs"
    src = raw / "intrvw24.zip"
    for member in ("fmli241x.csv", "fmli242.csv"):
        _rewrite(src, pkg / "intrvw24.zip", member, inflate_food)
        src = tmp_path / "src.zip"
        shutil.copy(pkg / "intrvw24.zip", src)
    changed, _ = _build(pkg, tmp_path / "out")
    before = table.set_index(KEY)["cons_food"]
    after = changed.set_index(KEY)
    q1 = after["year_quarter"] == "2024Q1"
    q2 = after["year_quarter"] == "2024Q2"
    # FOODCQ counts in the transition quarter and is ignored in the redesigned one.
    assert not np.allclose(after.loc[q1, "cons_food"], before.reindex(after.index[q1]))
    assert np.allclose(after.loc[q2, "cons_food"], before.reindex(after.index[q2]))


def test_old_layouts_z_summaries_two_digit_years_and_legacy_states(old):
    raw, truth, table, report = old
    merged = table.merge(truth, on=KEY, suffixes=("", "_truth"), validate="1:1")
    assert len(merged) == len(truth) == len(table)
    for column in [*CATEGORIES, "cons_total", "weight", "income_before_tax"]:
        got, want = merged[column].to_numpy(float), merged[f"{column}_truth"].to_numpy(float)
        assert np.allclose(got, want, atol=1e-6, equal_nan=True), column
    assert list(merged["state"].fillna("NA")) == list(merged["state_truth"].fillna("NA"))
    assert merged["state"].notna().sum() > 0.5 * len(merged)
    kept = _kept(_fmli_rows(raw))
    z_rows = [r for r in kept.values() if "ZTOTAL" in r]
    assert z_rows and all(len(r["QINTRVYR"]) == 2 for r in kept.values())
    indexed = table.set_index(KEY)
    for row in z_rows:
        got = indexed.loc[(row["NEWID"], _year(row["QINTRVYR"]), int(row["QINTRVMO"]))]
        assert _close(got["cons_total"], float(row["ZTOTAL"]))
        assert _close(got["cons_food"], float(row["ZFOODTOT"]))
        parker = float(row["ZTOTAL"]) - sum(float(row[z]) for z in ("ZCASHCTB", "ZLIFOTHR",
                                                                     "ZRETIRES"))
        assert _close(got["cons_parker_total"], parker)
    assert set(table["interview_year"]) == {1981, 1982, 1984, 1985, 1986, 1987}
    q = table["q_index"]
    assert (table.loc[q <= 1986 * 4 + 1, "cex_sample_design"] == "pre_1986").all()
    assert (table.loc[q >= 1986 * 4 + 2, "cex_sample_design"] == "frame_1986").all()
    assert set(table["interview_position_harmonized"]) == {1, 2, 3, 4}
    # FINCBTAX blanks (income non-response) stay missing before FINCBTXM exists.
    assert table["income_before_tax"].isna().any()
    assert report.rows["fmli_members_without_spending"] == 0


def test_1990q1_published_in_both_layouts_gives_the_same_spending(tmp_path):
    """Package 1989 carries the 1990Q1 file in its Z* layout, package 1990 its CQ/PQ copy; the
    1989 file is not held to the CQ/PQ columns that start in 1990Q1."""
    raw = tmp_path / "raw"
    synth.write_synthetic_cex_interview(raw, seed=SEED, years=[1989, 1990], n_cu_per_quarter=3)
    both, _ = _build(raw, tmp_path / "out")
    (raw / "intrvw90.zip").unlink()
    alone, _ = _build(raw, tmp_path / "out1")
    q1 = both[both["year_quarter"] == "1990Q1"].set_index(KEY)
    early = alone[alone["year_quarter"] == "1990Q1"].set_index(KEY)
    assert len(q1) and (q1["cex_source_member"] == "intrvw90/fmli901x.csv").all()
    assert (early["cex_source_member"] == "intrvw89/fmli901.csv").all()
    assert (q1["cex_first_release_year"] == 1989).all()
    for column in ["cons_total", "cons_parker_total", *CATEGORIES]:
        assert np.allclose(q1[column], early.loc[q1.index, column], atol=1e-6), column


def test_state_codes_map_legacy_codes_in_every_year_as_the_reference(old, tmp_path):
    raw, _, _, _ = old

    def states(codes: list[str]):
        def edit(header, rows):
            i = header.index("STATE")
            for row, code in zip(rows, codes, strict=False):
                row[i] = code
            return header, rows
        return edit

    # 1980-81 legacy codes (35 Wisconsin, 54 Virginia, 93 California). The reference applies
    # that map to every year, so 1986's 35 (New Mexico) and 54 (West Virginia) become 55 and 51
    # as well (hhx follows it); 43 -> Missouri; 38 (North Dakota) is not a canonical code.
    _rewrite(raw / "intrvw81.zip", tmp_path / "raw" / "intrvw81.zip", "fmli812.csv",
             states(["35", "54", "93"]))
    _rewrite(raw / "intrvw86.zip", tmp_path / "raw" / "intrvw86.zip", "fmli862.csv",
             states(["43", "35", "54", "38"]))
    table, _ = _build(tmp_path / "raw", tmp_path / "out")
    got = table.set_index("newid")["state"]
    rows = {row["_member"]: [] for row in _fmli_rows(tmp_path / "raw")}
    for row in _fmli_rows(tmp_path / "raw"):
        rows[row["_member"]].append(row)
    for member, want in (("intrvw81/fmli812.csv", ["55", "51", "06"]),
                         ("intrvw86/fmli862.csv", ["29", "55", "51", None])):
        for row, code in zip(rows[member], want, strict=False):
            value = got[row["NEWID"]]
            assert (pd.isna(value) and code is None) or value == code, (member, row["STATE"])


def test_labels_follow_the_spec_categories(modern, old):
    sex = {1: "Man", 2: "Woman"}
    marital = {1: "Married", 2: "Widowed", 3: "Divorced", 4: "Separated", 5: "Never married"}
    region = {1: "Northeast", 2: "Midwest", 3: "South", 4: "West"}
    levels = ["No formal schooling", "Elementary school", "Some high school",
              "High school diploma", "Some college", "Associate degree", "Bachelor's degree",
              "Graduate or professional degree"]
    # 1980-95 codes: 1 elementary, 2 some high school, 3 graduate, 4 some college, 5 college
    # graduate, 6 more than college, 7 never attended; from 1996: 0, 10-17.
    legacy_educ = {7: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 7}
    modern_educ = {0: 0, 10: 1, 11: 2, 12: 3, 13: 4, 14: 5, 15: 6, 16: 7, 17: 7}
    for _, truth, table, _ in (modern, old):
        merged = table.merge(truth, on=KEY, suffixes=("", "_truth"))
        assert (merged["sex_ref_label"].astype(str) == merged["sex_ref_truth"].map(sex)).all()
        assert (merged["region_label"].astype(str) == merged["region_truth"].map(region)).all()
        assert (merged["bls_urbn_label"].astype(str)
                == merged["bls_urbn_truth"].map({1: "Urban", 2: "Rural"})).all()
        assert list(table["educ_ref_harmonized"].cat.categories) == levels
        assert table["educ_ref_harmonized"].cat.ordered
        assert list(table["race_ref_harmonized"].cat.categories) == [
            "White", "Black", "Native American", "Asian", "Pacific Islander", "Multiracial"]
        assert list(table["marital1_label"].cat.categories) == list(marital.values())
        expected = [levels[(legacy_educ if y < 1996 else modern_educ)[c]]
                    for y, c in zip(merged["interview_year"], merged["educ_ref_code"],
                                    strict=True)]
        assert list(merged["educ_ref_harmonized"].astype(str)) == expected
        married = merged["married"].astype(bool)
        assert (merged.loc[married, "marital1_label"] == "Married").all()
        assert merged.loc[~married, "sex2_label"].isna().all()
        assert merged.loc[married, "sex2_label"].notna().all()
    assert set(old[2]["race_ref"].dropna()) <= {1, 2, 3, 4}  # no codes 5-6 before 1996
    # EDUCA2 0 is "don't know" in 1980-81 and "never attended" from 1996.
    merged = old[2].merge(old[1], on=KEY, suffixes=("", "_truth"))
    unknown = (merged["educ2_code"] == 0) & (merged["interview_year"] <= 1981)
    assert unknown.any() and merged.loc[unknown, "educ2_harmonized"].isna().all()
    assert merged.loc[merged["educ2_code"].notna() & ~unknown, "educ2_harmonized"].notna().all()


def test_household_flags_match_an_independent_computation(modern):
    _, _, table, _ = modern
    pct: list[tuple[str, str, float]] = []
    expected: dict[str, dict[str, bool]] = {}
    for pid, panel in table.groupby("cex_panel_id"):
        p = panel.sort_values("q_index")
        income, parker, food = p["income_before_tax"], p["cons_parker_total"], p["cons_food"]
        expected[pid] = {
            "flag_hh_income_lt_1000_ever": bool((income < 1000).any()),
            "flag_hh_cons_total_lt_250_ever": bool((parker < 250).any()),
            "flag_hh_food_annualized_gt_mean_income": bool(
                food.notna().any() and income.notna().any()
                and 4 * food.dropna().mean() > income.dropna().mean()),
        }
        rows = list(p.itertuples())
        for a, b in zip(rows, rows[1:], strict=False):
            if b.q_index - a.q_index == 1:
                for name, col in (("income", "income_before_tax"), ("cons_total",
                                                                    "cons_parker_total")):
                    x, y = getattr(a, col), getattr(b, col)
                    if not (math.isnan(x) or math.isnan(y)) and x > 0:
                        pct.append((pid, name, 100 * (y - x) / x))
    for name in ("income", "cons_total"):
        values = np.array([v for _, n, v in pct if n == name])
        low, high = np.quantile(values, 0.01), np.quantile(values, 0.99)
        for pid in expected:
            mine = [v for p_, n, v in pct if p_ == pid and n == name]
            expected[pid][f"flag_hh_qoq_{name}_change_bottom_1pct_ever"] = any(
                v <= low for v in mine)
            expected[pid][f"flag_hh_qoq_{name}_change_top_1pct_ever"] = any(v >= high for v in mine)
    got = table.drop_duplicates("cex_panel_id").set_index("cex_panel_id")
    per_panel = got[cex_interview.FLAG_COLUMNS].to_dict("index")
    for pid, flags in expected.items():
        for column, value in flags.items():
            assert per_panel[pid][column] == int(value), (pid, column)
        assert per_panel[pid]["flag_hh_any_screen"] == int(any(flags.values()))
    assert (table.groupby("cex_panel_id")[cex_interview.FLAG_COLUMNS].nunique() == 1).all().all()
    for column in ("flag_hh_income_lt_1000_ever", "flag_hh_cons_total_lt_250_ever",
                   "flag_hh_food_annualized_gt_mean_income"):
        assert got[column].sum() >= 1, column  # the generator draws a few such households
    assert all(table[c].dtype == np.int8 for c in cex_interview.FLAG_COLUMNS)


def test_unzipped_package_folders_give_the_same_table(modern, tmp_path):
    raw, _, table, _ = modern
    for path in raw.glob("intrvw*.zip"):
        with zipfile.ZipFile(path) as zf:
            zf.extractall(tmp_path / "folders" / path.stem)  # intrvwYY/intrvwYY/fmli*.csv
    unzipped, report = _build(tmp_path / "folders", tmp_path / "out")
    drop = ["cex_source_package"]
    pd.testing.assert_frame_equal(unzipped.drop(columns=drop), table.drop(columns=drop))
    assert set(unzipped["cex_source_package"]) == {"intrvw14", "intrvw15", "intrvw24"}
    assert len(report.inputs) == 15  # every FMLI file is fingerprinted


def test_release_dates_come_from_the_crosswalk_by_first_release_year(modern, tmp_path):
    raw, _, _, _ = modern
    for name in ("intrvw14.zip", "intrvw15.zip"):
        (tmp_path / "raw").mkdir(exist_ok=True)
        shutil.copy(raw / name, tmp_path / "raw" / name)
    crosswalk = tmp_path / "release_cex.csv"
    crosswalk.write_text(
        "cex_data_year,release_date,source,source_url,comments\n"
        "2014,2015-09-09,Official release date,u,c\n"
        "2015,2016-09-08,Inferred from official rule,u,c\n"
    )
    table, report = _build(tmp_path / "raw", tmp_path / "out",
                           release_crosswalk=str(crosswalk))
    dates = {2014: "2015-09-09", 2015: "2016-09-08"}
    assert (table["release_date"] == table["cex_first_release_year"].map(dates)).all()
    assert set(table["cex_first_release_year"]) == {2014, 2015}
    sources = {2014: "Official release date", 2015: "Inferred from official rule"}
    assert (table["release_date_source"] == table["cex_first_release_year"].map(sources)).all()
    assert str(crosswalk) in report.inputs
    crosswalk.write_text("cex_data_year,release_date,source,source_url,comments\n"
                         "2015,2016-09-08,Official release date,u,c\n")
    with pytest.raises(DataError, match=r"release_cex\.csv: no release date for CEX data year "
                                        r"2014; add a row"):
        _build(tmp_path / "raw", tmp_path / "out2", release_crosswalk=str(crosswalk))


# --------------------------------------------------------------------------------------------
# Real BLS material


def test_real_layout_stub_builds_with_its_values(tmp_path):
    if not STUB.is_dir():
        pytest.skip("shared/data/cex_meta/intrvw21_layout_stub is absent")
    package = tmp_path / "raw" / "intrvw21.zip"
    package.parent.mkdir()
    with zipfile.ZipFile(package, "w") as zf:
        for f in sorted(STUB.glob("*.csv")):
            zf.write(f, f"intrvw21/{f.name}")
    table, report = _build(package, tmp_path / "out")
    rows = []
    for f in sorted(STUB.glob("fmli*.csv")):
        with f.open(newline="") as fh:
            rows += [(f.name, r) for r in csv.DictReader(fh)]
    assert len(table) == len(rows) == 4
    got = table.set_index("newid")
    for name, row in rows:
        line = got.loc[row["NEWID"]]
        assert line["interview_year"] == int(row["QINTRVYR"])
        assert line["interview_month"] == int(row["QINTRVMO"])
        assert line["weight"] == float(row["FINLWT21"])
        assert line["cex_quarter_token"] == name[4:7]
        assert line["cex_source_member"] == f"intrvw21/{name}"
        assert line["cex_first_release_year"] == 2021 and line["cex_overlap_versions"] == 1
        assert line["cex_sample_design"] == "frame_2015"
        assert line["cex_panel_id"] == "frame_2015:" + row["NEWID"][:7]
        assert line["interview_position_harmonized"] == int(row["NEWID"][-1])
    assert table["cons_total"].isna().all() and table["age_ref"].isna().all()
    assert report.rows["fmli_members_without_spending"] == 4
    assert report.rows["fmli_members_without_characteristics"] == 4
    assert report.synthetic is False


@pytest.mark.slow
def test_codes_and_year_ranges_equal_the_data_dictionary():
    if not DICTIONARY.is_file():
        pytest.skip("shared/data/cex_meta/ce-data-dict.xlsx is absent")
    sheets = pd.read_excel(DICTIONARY, sheet_name=["Variables", "Codes "], dtype=str)
    variables = sheets["Variables"]
    variables = variables[(variables["Survey"] == "INTERVIEW") & (variables["File"] == "FMLI")]
    codes = sheets["Codes "]
    codes.columns = [c.strip() for c in codes.columns]
    codes = codes[(codes["Survey"] == "INTERVIEW") & (codes["File"] == "FMLI")]
    sources = {v.name: v.sources[0] for v in cexvars.CHARACTERISTICS}
    for name, allowed in cexvars.CODEBOOK.items():
        listed = codes[codes["Variable"].str.strip() == sources[name]]["Code value"]
        assert {int(c) for c in listed} == set(allowed), name
    states = codes[codes["Variable"].str.strip() == "STATE"]
    modern = states[states["First year"].astype(float) >= 1984]["Code value"]
    assert set(modern) - {"43"} == set(cexvars.CANONICAL_STATES)
    legacy = states[states["First year"].astype(float) < 1984]
    assert set(legacy["Code value"]) == set(cexvars.LEGACY_STATE)

    def quarters(rows: pd.DataFrame) -> set[int]:
        out: set[int] = set()
        for _, r in rows.iterrows():
            first = int(float(r["First year"])) * 4 + int(float(r["First Quarter"]))
            last = (2030 * 4 if pd.isna(r["Last year"])
                    else int(float(r["Last year"])) * 4 + int(float(r["Last quarter"])))
            out |= set(range(first, last + 1))
        return out

    for source, ranges in cexvars.DICTIONARY_RANGES.items():
        mine: set[int] = set()
        for first, last in ranges:
            mine |= set(range(first, (last if last is not None else 2030 * 4) + 1))
        assert mine == quarters(variables[variables["Variable Name"] == source]), source
    # The generator's flag columns carry the dictionary's flag names.
    flags = dict(zip(variables["Variable Name"], variables["Flag name"], strict=False))
    header = synth.fmli_columns(2010 * 4 + 2)
    for var in ("AGE_REF", "CUTENURE", "EDUC_REF", "FINCBTXM", "MARITAL1", "REF_RACE"):
        assert header[header.index(var) + 1] == flags[var]


# --------------------------------------------------------------------------------------------
# Errors


@pytest.fixture(scope="module")
def one_package(modern) -> Path:
    return modern[0] / "intrvw24.zip"


def _broken(one_package: Path, tmp_path: Path, member: str, edit) -> Path:
    return _rewrite(one_package, tmp_path / "raw" / "intrvw24.zip", member, edit)


def test_missing_folder_and_unset_path_are_reported(tmp_path):
    with pytest.raises(DataError, match=r"nowhere: CEX Interview packages not found.*bls\.gov"):
        _build(tmp_path / "nowhere", tmp_path / "out")
    with pytest.raises(DataError, match="no CEX Interview package"):
        _build(tmp_path, tmp_path / "out")
    with pytest.raises(ConfigError, match="raw.interview is not set"):
        cex_interview.build(SurveyConfig(name="cex_interview"), tmp_path, tmp_path / "out")


def test_missing_key_column_names_member_and_column(one_package, tmp_path):
    def drop_month(header, rows):
        i = header.index("QINTRVMO")
        return header[:i] + header[i + 1:], [r[:i] + r[i + 1:] for r in rows]

    bad = _broken(one_package, tmp_path, "fmli243.csv", drop_month)
    with pytest.raises(DataError, match=r"intrvw24\.zip:intrvw24/fmli243\.csv: column QINTRVMO"):
        _build(bad, tmp_path / "out")
    assert not list(tmp_path.rglob("*.parquet"))  # nothing half-written


def test_partial_spending_columns_are_an_error(one_package, tmp_path):
    def drop_food(header, rows):
        i = header.index("FOODPQ")
        return header[:i] + header[i + 1:], [r[:i] + r[i + 1:] for r in rows]

    bad = _broken(one_package, tmp_path, "fmli243.csv", drop_food)
    with pytest.raises(DataError, match=r"fmli243\.csv: column FOODPQ not found \(spending"):
        _build(bad, tmp_path / "out")


def test_code_outside_the_dictionary_names_package_member_column_code(one_package, tmp_path):
    def sex_three(header, rows):
        i = header.index("SEX_REF")
        rows[2][i] = "3"
        return header, rows

    bad = _broken(one_package, tmp_path, "fmli244.csv", sex_three)
    with pytest.raises(
        DataError, match=r"intrvw24\.zip:intrvw24/fmli244\.csv: column SEX_REF holds code 3"
    ):
        _build(bad, tmp_path / "out")


def test_non_numeric_value_and_duplicate_panel_month_are_errors(one_package, tmp_path):
    def junk(header, rows):
        rows[0][header.index("TOTEXPCQ")] = "12x"
        return header, rows

    bad = _broken(one_package, tmp_path / "a", "fmli242.csv", junk)
    with pytest.raises(DataError, match=r"fmli242\.csv: column TOTEXPCQ has non-numeric value "
                                        r"'12x' \(data row 1\)"):
        _build(bad, tmp_path / "out")

    def twin(header, rows):
        i = header.index("NEWID")
        copy = list(rows[0])
        copy[i] = copy[i][:7] + str((int(copy[i][7]) % 4) + 1)
        return header, [*rows, copy]

    bad = _broken(one_package, tmp_path / "b", "fmli242.csv", twin)
    with pytest.raises(DataError, match=r"cex_panel_id frame_2015:\d{7} has two interviews"):
        _build(bad, tmp_path / "out")
    assert not list(tmp_path.rglob("*.parquet"))


def test_generator_is_deterministic_and_refuses_missing_package_years(tmp_path):
    a = synth.write_synthetic_cex_interview(tmp_path / "a", seed=3, years=[2020],
                                            n_cu_per_quarter=2)
    synth._generate.cache_clear()  # draw again rather than reuse the cached draw
    b = synth.write_synthetic_cex_interview(tmp_path / "b", seed=3, years=[2020],
                                            n_cu_per_quarter=2)
    assert a[0].read_bytes() == b[0].read_bytes()
    assert (tmp_path / "a" / "intrvw20.zip.synthetic.json").is_file()
    with zipfile.ZipFile(a[0]) as zf:
        names = sorted(zf.namelist())
        header = zf.read("intrvw20/fmli202.csv").decode("ascii").splitlines()[0].split(",")
    assert [n for n in names if "fmli" in n] == [
        "intrvw20/fmli201x.csv", "intrvw20/fmli202.csv", "intrvw20/fmli203.csv",
        "intrvw20/fmli204.csv", "intrvw20/fmli211.csv"]
    if STUB.is_dir():  # the real layout's leading columns, in order
        stub = (STUB / "fmli212.csv").read_text().splitlines()[0].split(",")
        assert header[: len(stub)] == stub
    with pytest.raises(ConfigError, match="no Interview package exists for 1982"):
        synth.write_synthetic_cex_interview(tmp_path, seed=1, years=[1982], n_cu_per_quarter=1)


# --------------------------------------------------------------------------------------------
# Rebate addenda of packages 2001 (TAX013/TAX014) and 2008 (expn08/rbt08.csv), spec 10_tasks 4-5

ADDENDA_YEARS, ADDENDA_N = [2001, 2008], 12
TAX_FIELDS = ["taxq1", "taxq3", *(f"taxmo{i}" for i in range(1, 6)),
              *(f"taxamt{i}" for i in range(1, 6))]


@pytest.fixture(scope="module")
def addenda(tmp_path_factory):
    raw = tmp_path_factory.mktemp("addenda")
    synth.write_synthetic_cex_interview(raw, seed=SEED, years=ADDENDA_YEARS,
                                        n_cu_per_quarter=ADDENDA_N)
    truth = synth.synthetic_cex_addenda_truth(seed=SEED, years=ADDENDA_YEARS,
                                              n_cu_per_quarter=ADDENDA_N)
    survey = SurveyConfig(name="cex_interview", raw={"interview": str(raw)})
    report = cex_interview.build(survey, Path("/nonexistent"), tmp_path_factory.mktemp("out"))
    tables = {name: pd.read_parquet(path) for name, path in report.outputs.items()}
    return raw, truth, tables, report


def _same(got: pd.Series, want: pd.Series) -> bool:
    a = pd.to_numeric(got, errors="coerce").to_numpy(float)
    b = pd.to_numeric(want, errors="coerce").to_numpy(float)
    return bool(np.allclose(a, b, equal_nan=True))


def _drop_member(src: Path, dst: Path, suffix: str) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            if not name.endswith(suffix):
                zout.writestr(name, zin.read(name))
    return dst


def _with(addenda, tmp_path: Path, package: str, suffix: str, edit) -> Path:
    """A raw folder holding one package of the fixture with one addendum member edited."""
    raw = addenda[0]
    return _rewrite(raw / package, tmp_path / "raw" / package, suffix, edit).parent


def test_rebate_2001_round_trip_fields_flags_and_validity(addenda):
    _, truth, tables, report = addenda
    want = truth["rebate_2001"]
    got = tables["cex_rebate_2001"]
    assert len(got) == len(want) > 50 and not got["newid"].duplicated().any()
    merged = got.merge(want, on="newid", suffixes=("", "_truth"), validate="1:1")
    assert len(merged) == len(want)
    for field in TAX_FIELDS:
        assert _same(merged[field], merged[f"{field}_truth"]), field
        assert (merged[f"{field}_flag"] == merged[f"{field}_flag_truth"]).all(), field
        # Valid = flag D-G/T-W with a value; A (valid blank) and B/C (invalid) are not.
        assert (merged[f"{field}_valid"] == (merged[f"{field}_intent"] == "valid")).all(), field
    intents = merged[[f"{f}_intent" for f in TAX_FIELDS]].stack()
    assert {"valid", "valid_blank", "invalid"} <= set(intents)  # every flag kind is exercised
    assert (merged["cex_quarter_token"] == merged["cex_quarter_token_truth"]).all()
    assert (merged["collection_quarter"] == merged["cex_quarter_token"].str[2].astype(int)).all()
    assert (merged["cu_id_raw"] == merged["newid"].str[:7]).all()
    for column in ("cex_panel_id", "interview_year", "interview_month"):
        assert (merged[column].astype(str) == merged[f"{column}_truth"].astype(str)).all(), column
    assert set(merged["interview_month"]) <= set(range(7, 13))
    # A report with a valid "yes" and every check fully valid holds the rebates the CU got in
    # the interview's reference months; a valid "no" holds none.
    amounts = [f"taxamt{i}" for i in range(1, 6)]
    clean = merged[(merged[[f"{f}_intent" for f in TAX_FIELDS]] != "invalid").all(axis=1)
                   & merged["taxq1_valid"]]
    assert np.allclose(clean[amounts].fillna(0).sum(axis=1), clean["true_amount"])
    assert set(clean.loc[clean["taxq1"] == 2, "true_amount"]) == {0.0}
    assert set(merged["taxamt1"].dropna()) <= {300.0, 500.0, 600.0}
    assert report.rows["cex_rebate_2001"] == len(want)
    assert report.rows["cex_rebate_2001_unlinked"] == 0
    assert report.synthetic is True
    assert sorted(Path(p).name for p in report.inputs) == ["intrvw01.zip", "intrvw08.zip"]
    assert all(len(h) == 64 for h in report.inputs.values())


def test_stimulus_2008_keeps_valid_payments_and_counts_each_drop(addenda):
    _, truth, tables, report = addenda
    want = truth["stimulus_2008"]
    got = tables["cex_stimulus_2008"]
    kept = want[want["drop_reason"].isna()].reset_index(drop=True)
    assert len(got) == len(kept) > 20
    pd.testing.assert_series_equal(got["newid"].astype(str), kept["newid"], check_names=False)
    for column in ("rbtmo", "rbtamt", "chckeft", "howused", "interview_year", "interview_month"):
        assert _same(got[column], kept[column]), column
    for column in ("cuid", "cex_panel_id"):
        assert (got[column].astype(str) == kept[column]).all(), column
    assert (got["cuid"] == got["newid"].str[:7]).all()
    assert (got["usdintmo"] == got["interview_month"]).all()
    assert got["rbtmo"].between(1, 12).all() and (got["rbtamt"] > 0).all()
    assert set(got["chckeft"]) == {1, 2}
    reasons = want["drop_reason"].value_counts()
    assert reasons.sum() > 0  # the generator wrote rows the keep rule drops
    for rule in ("no_newid", "bad_month", "nonpositive_amount"):
        assert report.rows[f"cex_stimulus_2008_dropped_{rule}"] == reasons.get(rule, 0), rule
    assert report.rows["cex_stimulus_2008_rows_read"] == len(want)
    assert report.rows["cex_stimulus_2008"] == len(kept)
    # Parker's timing: EFT in May-June, checks May-July, few later.
    assert (got.loc[got["chckeft"] == 2, "rbtmo"] <= 6).all()


def test_stimulus_drop_rules_count_the_first_rule_a_row_fails(addenda, tmp_path):
    base = addenda[2]["cex_stimulus_2008"]
    before = addenda[3].rows

    def extra_rows(header, rows):
        i = {c: header.index(c) for c in ("NEWID", "CUID", "RBTMO", "RBTAMT")}
        added = []
        for newid, month, amount in (("", "5", "600"), ("", "13", "0"), ("40000011", "13", "600"),
                                     ("40000011", "0", "600"), ("40000011", "6", "0"),
                                     ("40000011", "6", "-300"), ("40000011", "6", "NA")):
            row = list(rows[0])
            row[i["NEWID"]], row[i["CUID"]] = newid, "9"  # CUID of dropped rows is not checked
            row[i["RBTMO"]], row[i["RBTAMT"]] = month, amount
            added.append(row)
        return header, [*rows, *added]

    raw = _with(addenda, tmp_path, "intrvw08.zip", "rbt08.csv", extra_rows)
    _, report = _build(raw, tmp_path / "out")
    rows = report.rows
    assert rows["cex_stimulus_2008_dropped_no_newid"] == before[
        "cex_stimulus_2008_dropped_no_newid"] + 2
    assert rows["cex_stimulus_2008_dropped_bad_month"] == before[
        "cex_stimulus_2008_dropped_bad_month"] + 2
    assert rows["cex_stimulus_2008_dropped_nonpositive_amount"] == before[
        "cex_stimulus_2008_dropped_nonpositive_amount"] + 3
    assert rows["cex_stimulus_2008"] == len(base)
    assert "cex_rebate_2001" not in report.outputs  # package 2001 not read


def test_stimulus_cuid_must_be_newid_div_10(addenda, tmp_path):
    def wrong_cuid(header, rows):
        rows[2][header.index("CUID")] = "1234567"
        return header, rows

    raw = _with(addenda, tmp_path, "intrvw08.zip", "rbt08.csv", wrong_cuid)
    with pytest.raises(DataError, match=r"intrvw08\.zip:expn08/rbt08\.csv: data row 3 has CUID "
                                        r"'1234567' but NEWID \d{8} \(CUID must equal NEWID // 10"):
        _build(raw, tmp_path / "out")
    assert not list(tmp_path.rglob("*.parquet"))


def test_missing_addendum_member_names_zip_and_member(addenda, tmp_path):
    raw = addenda[0]
    _drop_member(raw / "intrvw01.zip", tmp_path / "a" / "intrvw01.zip", "TAX014.csv")
    with pytest.raises(DataError, match=r"intrvw01\.zip: member TAX013\.csv and TAX014\.csv .*"
                                        r"not found \(found 1"):
        _build(tmp_path / "a", tmp_path / "out")
    _drop_member(raw / "intrvw08.zip", tmp_path / "b" / "intrvw08.zip", "rbt08.csv")
    with pytest.raises(DataError, match=r"intrvw08\.zip: member expn08/rbt08\.csv"):
        _build(tmp_path / "b", tmp_path / "out")
    assert not list(tmp_path.rglob("*.parquet"))


def test_addendum_codes_flags_and_columns_are_checked(addenda, tmp_path):
    def set_cell(column, value):
        def edit(header, rows):
            rows[1][header.index(column)] = value
            return header, rows
        return edit

    def drop(column):
        def edit(header, rows):
            i = header.index(column)
            return header[:i] + header[i + 1:], [r[:i] + r[i + 1:] for r in rows]
        return edit

    member = r"intrvw01\.zip:intrvw01/intrvw01/Addendum - Tax Rebate/TAX013\.csv"
    cases = [
        ("a", "TAX013.csv", set_cell("TAXQ1", "3"), rf"{member}: column TAXQ1 holds code 3 "
                                                     r"\(data row 2\)"),
        ("b", "TAX013.csv", set_cell("TAXQ1_", "X"), rf"{member}: column TAXQ1_ holds flag 'X'"),
        ("c", "TAX013.csv", drop("TAXAMT3_"), rf"{member}: column TAXAMT3_ not found"),
        ("d", "TAX013.csv", set_cell("TAXMO1", "7.5"), r"column TAXMO1 holds 7\.5, not an int"),
    ]
    for folder, suffix, edit, message in cases:
        raw = _rewrite(addenda[0] / "intrvw01.zip", tmp_path / folder / "intrvw01.zip", suffix,
                       edit).parent
        with pytest.raises(DataError, match=message):
            _build(raw, tmp_path / "out")

    def howused_four(header, rows):
        rows[0][header.index("HOWUSED")] = "4"
        return header, rows

    raw = _with(addenda, tmp_path / "e", "intrvw08.zip", "rbt08.csv", howused_four)
    with pytest.raises(DataError, match=r"rbt08\.csv: column HOWUSED holds code 4 \(data row 1\)"):
        _build(raw, tmp_path / "out")


def test_addenda_outputs_only_for_packages_2001_and_2008(modern, addenda, tmp_path):
    assert set(modern[3].outputs) == {"cex_interview"}
    assert not any(k.startswith(("cex_rebate", "cex_stimulus")) for k in modern[3].rows)
    assert set(addenda[3].outputs) == {"cex_interview", "cex_rebate_2001", "cex_stimulus_2008"}
    # BLS's own unzipped layout: intrvw08/ and expn08/ side by side.
    with zipfile.ZipFile(addenda[0] / "intrvw08.zip") as zf:
        zf.extractall(tmp_path / "raw")
    assert (tmp_path / "raw" / "expn08" / "rbt08.csv").is_file()
    _, report = _build(tmp_path / "raw", tmp_path / "out")
    unzipped = pd.read_parquet(report.outputs["cex_stimulus_2008"])
    drop = ["cex_source_package", "cex_source_member"]
    pd.testing.assert_frame_equal(unzipped.drop(columns=drop),
                                  addenda[2]["cex_stimulus_2008"].drop(columns=drop))
    assert any(p.endswith("rbt08.csv") for p in report.inputs)


def _copy(src: Path, dst: Path, change: Callable[[dict[str, bytes]], dict[str, bytes]]) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(src) as zin:
        members = {name: zin.read(name) for name in zin.namelist()}
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for name, data in change(members).items():
            zout.writestr(name, data)
    return dst


def test_a_package_missing_one_quarters_member_is_an_error(one_package, tmp_path):
    """Before, 2024's package without fmli243.csv built with a quarter's interviews missing."""
    damaged = _copy(one_package, tmp_path / "raw" / "intrvw24.zip",
                    lambda m: {n: d for n, d in m.items() if not n.endswith("fmli243.csv")})
    with pytest.raises(DataError, match=r"intrvw24.zip: the FMLI member of 2024Q3 "
                                        r"\(fmli243.csv\) is missing \(the package holds "):
        _build(damaged.parent, tmp_path / "out")
    assert not (tmp_path / "out" / "cex_interview.parquet").exists()


def test_a_member_truncated_inside_its_zip_is_an_error(one_package, tmp_path):
    def cut(m: dict[str, bytes]) -> dict[str, bytes]:
        name = next(n for n in m if n.endswith("fmli242.csv"))
        data = m[name]
        m[name] = data[: len(data) - 25]  # the last record loses its end (and line break)
        return m

    damaged = _copy(one_package, tmp_path / "raw" / "intrvw24.zip", cut)
    lines = zipfile.ZipFile(one_package).read("intrvw24/fmli242.csv").count(b"\n")
    with pytest.raises(DataError, match=rf"fmli242.csv: ends early at line {lines} \(no line "
                                        "break after the last record\\)"):
        _build(damaged.parent, tmp_path / "out")

    def drop_fields(m: dict[str, bytes]) -> dict[str, bytes]:
        name = next(n for n in m if n.endswith("fmli242.csv"))
        head, _, last = m[name].rstrip(b"\n").rpartition(b"\n")
        m[name] = head + b"\n" + b",".join(last.split(b",")[:10]) + b"\n"
        return m

    damaged = _copy(one_package, tmp_path / "raw2" / "intrvw24.zip", drop_fields)
    with pytest.raises(DataError, match=r"fmli242.csv: ends early at line \d+ \(its last record "
                                        r"has 10 of the header's \d+ fields\)"):
        _build(damaged.parent, tmp_path / "out")


def test_a_member_the_zip_cannot_inflate_is_an_error(one_package, tmp_path):
    target = tmp_path / "raw" / "intrvw24.zip"
    _copy(one_package, target, lambda m: m)
    data = bytearray(target.read_bytes())
    with zipfile.ZipFile(target) as zf:
        info = zf.getinfo("intrvw24/fmli244.csv")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data[start + info.compress_size // 2] ^= 0xFF  # a flipped byte in the deflate stream
    target.write_bytes(bytes(data))
    with pytest.raises(DataError, match=r"fmli244.csv: damaged inside its archive"):
        _build(target.parent, tmp_path / "out")
