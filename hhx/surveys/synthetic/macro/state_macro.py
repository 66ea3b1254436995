"""Seeded synthetic raw files of the state macro panel sources, in their published layouts:
FHFA `hpi_master.csv`, BLS LAUS `la.data.2.AllStatesU.txt`, BEA `SAINC1__ALL_AREAS_1929_2025.csv`.

Demo data only: state unemployment, income and house prices are a common national cycle plus
persistent state deviations; not U.S. history and nothing computed from them is a finding.

Layouts (what readers must cope with, as in the real files):
- FHFA: one long CSV stacking many indexes; besides the traditional all-transactions quarterly
  rows of the 51 states and the U.S. it holds purchase-only monthly state rows, census-division
  rows (level `USA or Census Division`, place_id DV_*) and MSA rows; index_sa blank where FHFA
  publishes none.
- LAUS: tab-separated with header, series ids padded to 30 characters, measures 03-06 of the 51
  states and Puerto Rico (FIPS 72), months M01-M12 plus M13 annual averages for complete years;
  a partial last year (months only, footnote P) follows `last_year`.
- BEA: quoted wide CSV, GeoFIPS with a leading space, GeoName with ` *` footnote marks for AK and
  HI, U.S. + 8 BEA regions + 51 states, lines 1-3, `(NA)` for AK/HI before 1950, footnote lines.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hhx.errors import ConfigError
from hhx.io import write_text_atomic
from hhx.surveys.macro.state_panel import STATES
from hhx.surveys.synthetic import generator_label, write_sidecar

FHFA_FILE = "hpi_master.csv"
LAUS_FILE = "la.data.2.AllStatesU.txt"
BEA_FILE = "SAINC1__ALL_AREAS_1929_2025.csv"
_DIVISIONS = [("DV_ENC", "East North Central Division"), ("DV_PAC", "Pacific Division")]
_REGIONS = [(91000, "New England"), (92000, "Mideast"), (93000, "Great Lakes"), (94000, "Plains"),
            (95000, "Southeast"), (96000, "Southwest"), (97000, "Rocky Mountain"),
            (98000, "Far West")]  # fmt: skip
_LATE_BEA = {2: 1950, 15: 1950}  # Alaska and Hawaii: BEA state estimates start in 1950


def _walk(rng: np.random.Generator, n: int, drift: float, sd: float, ar: float) -> np.ndarray:
    out = np.zeros(n)
    shocks = rng.normal(drift, sd, n)
    for t in range(1, n):
        out[t] = ar * out[t - 1] + shocks[t]
    return out


def _fhfa(rng: np.random.Generator, first: int, last: int) -> str:
    """hpi_master.csv text; state all-transactions quarterly from 1975Q1 (as FHFA publishes)."""
    start = max(first, 1975)
    quarters = [(y, q) for y in range(start, last + 1) for q in range(1, 5)]
    n = len(quarters)
    national = np.cumsum(rng.normal(0.011, 0.012, n))
    rows = [["hpi_type", "hpi_flavor", "frequency", "level", "place_name", "place_id", "yr",
             "period", "index_nsa", "index_sa"]]  # fmt: skip
    places = [("USA or Census Division", "United States", "USA")]
    places += [("USA or Census Division", name, pid) for pid, name in _DIVISIONS]
    places += [("State", name, abbrev) for _, abbrev, name in STATES]
    for level, name, pid in places:
        own = _walk(rng, n, 0.0, 0.006, 0.9)
        level_ = 100.0 * np.exp(national + own - national[0] - own[0])
        season = 1.0 + 0.004 * np.sin(np.arange(n) * np.pi / 2)
        for (y, q), v in zip(quarters, level_ * season):
            rows.append(["traditional", "all-transactions", "quarterly", level, name, pid,
                         str(y), str(q), f"{v:.2f}", ""])  # fmt: skip
    for _, abbrev, name in STATES[:5]:  # other indexes the reader must skip
        for y in range(max(start, 1991), last + 1):
            for m in range(1, 13):
                v = 100.0 + rng.normal(0, 5)
                rows.append(["traditional", "purchase-only", "monthly", "State", name, abbrev,
                             str(y), str(m), f"{v:.2f}", f"{v * 1.001:.2f}"])  # fmt: skip
    for y in range(start, last + 1):
        for q in range(1, 5):
            rows.append(["traditional", "all-transactions", "quarterly", "MSA",
                         "Abilene, TX", "10180", str(y), str(q), f"{90 + y - start:.2f}", ""])
    return "\n".join(",".join(f'"{c}"' if "," in c else c for c in r) for r in rows) + "\n"


def _laus_line(series_id: str, year: int, period: str, value: str, foot: str = "") -> str:
    return f"{series_id:<30}\t{year}\t{period}\t{value:>12}\t{foot}\n"


def _laus(rng: np.random.Generator, first: int, last: int) -> str:
    """la.data.2.AllStatesU.txt text: 1976..last complete, plus 3 months of last+1."""
    years = list(range(max(first, 1976), last + 1))
    n_months = 12 * len(years) + 3
    national = 6.0 + _walk(rng, n_months, 0.0, 0.15, 0.98)
    lines = ["series_id                     \tyear\tperiod\t       value\tfootnote_codes\n"]
    for fips in [f for f, _, _ in STATES] + [72]:
        offset = rng.normal(0.0, 1.0) + (6.0 if fips == 72 else 0.0)
        rate = np.clip(national + offset + _walk(rng, n_months, 0.0, 0.1, 0.9), 1.5, 25.0)
        rate = np.round(rate, 1)
        labor_force = rng.uniform(3e5, 1.8e7)
        for measure in ("03", "04", "05", "06"):
            sid = f"LAUST{fips:02d}00000000000{measure}"
            for i, y in enumerate(years):
                month = rate[12 * i : 12 * i + 12]
                values = {"03": month, "06": np.full(12, labor_force)}
                values["04"] = np.round(labor_force * month / 100)
                values["05"] = labor_force - values["04"]
                for m in range(12):
                    v = values[measure][m]
                    text = f"{v:.1f}" if measure == "03" else f"{v:.0f}"
                    lines.append(_laus_line(sid, y, f"M{m + 1:02d}", text))
                annual = values[measure].mean()
                text = f"{annual:.1f}" if measure == "03" else f"{annual:.0f}"
                lines.append(_laus_line(sid, y, "M13", text))
            for m in range(3):  # preliminary months of the next year, no annual average yet
                v = rate[12 * len(years) + m]
                lines.append(_laus_line(sid, last + 1, f"M{m + 1:02d}", f"{v:.1f}", "P"))
    return "".join(lines)


def _bea_cell(cell: str) -> str:
    return cell if cell.replace(".", "", 1).isdigit() else f'"{cell}"'


def _bea(rng: np.random.Generator, last: int) -> str:
    """SAINC1 text (header, data, footnotes) for 1929..last: text quoted, numbers bare, CRLF."""
    years = list(range(1929, last + 1))
    n = len(years)
    header = ["GeoFIPS", "GeoName", "Region", "TableName", "LineCode", "IndustryClassification",
              "Description", "Unit", *map(str, years)]  # fmt: skip
    national = np.cumsum(rng.normal(0.045, 0.03, n))
    areas = [(0, "United States", "")]
    areas += [(code, name, str(code // 1000 - 90)) for code, name in _REGIONS]
    marks = {2: " *", 15: " *"}
    areas += [(f * 1000, name + marks.get(f, ""), "5") for f, _, name in STATES]
    rows = [header]
    for code, name, region in areas:
        pcpi = 700.0 * np.exp(national + _walk(rng, n, 0.0, 0.01, 0.95)) * rng.uniform(0.7, 1.3)
        base = 1.2e8 if code == 0 else rng.uniform(5e5, 3e7)
        pop = base * np.exp(np.cumsum(rng.normal(0.012, 0.004, n)))
        income = pcpi * pop / 1e6
        late = _LATE_BEA.get(code // 1000, 0) if code else 0
        for line, desc, unit, values, fmt in (
            (1, "Personal income (millions of dollars)", "Millions of current dollars", income,
             "{:.1f}"),
            (2, "Population (persons) 1/", "Number of persons", pop, "{:.0f}"),
            (3, "Per capita personal income (dollars) 2/", "Dollars", pcpi, "{:.0f}"),
        ):  # fmt: skip
            cells = ["(NA)" if y < late else fmt.format(v) for y, v in zip(years, values)]
            rows.append([f" {code:05d}", name, region, "SAINC1", str(line), "...", desc, unit,
                         *cells])  # fmt: skip
    rows.append(["Note. See the included footnote file."])
    rows.append(["Last updated: September 24, 2025 -- new statistics for 2025."])
    return "".join(",".join(_bea_cell(c) for c in row) + "\r\n" for row in rows)


def write_synthetic_state_macro(
    out_dir: str | Path, *, seed: int, first_year: int = 1970, last_year: int = 2025
) -> dict[str, Path]:
    """Write the three raw files into `out_dir`; returns {"fhfa_hpi"|"bls_laus"|"bea_sainc": path}.

    FHFA covers 1975 (or first_year)..last_year, LAUS 1976..last_year (+3 preliminary months),
    BEA 1929..last_year. Same seed, same bytes.
    """
    if last_year < 1976 or first_year > last_year:
        raise ConfigError(
            f"write_synthetic_state_macro: need first_year <= last_year and last_year >= 1976, "
            f"got {first_year}, {last_year}"
        )
    rng = np.random.default_rng(int(seed))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "fhfa_hpi": write_text_atomic(out / FHFA_FILE, _fhfa(rng, first_year, last_year)),
        "bls_laus": write_text_atomic(out / LAUS_FILE, _laus(rng, first_year, last_year)),
    }
    paths["bea_sainc"] = write_text_atomic(out / BEA_FILE, _bea(rng, last_year))
    for name, path in paths.items():
        write_sidecar(path, generator_label("state_macro"), f"synthetic {name} file",
                      seed=int(seed), first_year=first_year, last_year=last_year)
    return paths

