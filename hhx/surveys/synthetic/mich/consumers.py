"""Seeded synthetic Michigan Surveys of Consumers extract (`mich.csv`) in the archive's format.

Demo data only, not findings about households. Layout as the SCA data archive serves it and the
reference requests it: comma-delimited, one header line with the 118 variables of
`hhx/surveys/mich/mich_variables.csv` in that order, numeric codes, blank cells for questions not
asked (no quoting). Codes are those the codebook labels (`mich_labels.csv`: MARRY 1, 3, 4, 5;
1-3-5 items with 8/9 DK/NA), so the reference's builder accepts the file unchanged.

Design: a rotating panel as the SCA runs it. Each month brings a fresh cross-section; part of it
is reinterviewed 6 (sometimes 7 or 8) months later (DATEPR, IDPREV name the previous interview),
part of those a third time (DATEPR2, IDPREV2 the first). Panels may have begun before `start`, so
some rows point at interviews the file lacks. SAMPLE/METHOD follow the sampling eras (cell RDD
3/4/5 by phone until 2024-03, ABS web 6/7/8 from 2024-07, a mix in between).

Relationships the tasks measure: the expected income change (INEXQ1 direction, INEXQ2 size)
rises with better personal finances (PAGO) and business conditions (BAGO) and falls with age;
inflation expectations (PX1, PX5) hold a persistent personal level (shifted by education, sex and
income) plus interview noise, so a reinterview's answer is partly predictable from the previous
one and from the person. `synthetic_mich_frames` returns the truth (clean values, true links)
beside the raw frame for tests.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.errors import ConfigError
from hhx.io import atomic_path
from hhx.surveys.mich.consumers import extract_variables
from hhx.surveys.synthetic import generator_label, month_index, write_sidecar

COLUMNS = extract_variables()
_ITEMS_135 = ["PAGO5", "PEXP", "PEXP5", "RINC", "BEXP", "UNEMP", "GOVT", "RATEX", "DUR", "HOM",
              "SHOM", "CAR", "HOMEVAL", "PCRY"]  # fmt: skip
DEFAULT_MISSING_SHARE = 0.02


def _month_index(text: str, what: str) -> int:
    return month_index(text, what, "Michigan")


def _panels(rng: np.random.Generator, first: int, last: int, per_month: int) -> pd.DataFrame:
    """One row per interview written: panel, wave among all waves, month index, parent month."""
    rows = []
    panel = 0
    for start in range(first - 16, last + 1):  # panels begun before the file reach into it
        for _ in range(rng.poisson(per_month * 0.55)):
            waves = int(rng.choice([1, 2, 3], p=[0.35, 0.35, 0.3]))
            months = [start]
            for _ in range(waves - 1):
                months.append(months[-1] + int(rng.choice([6, 7, 8], p=[0.8, 0.12, 0.08])))
            for k, m in enumerate(months):
                if first <= m <= last:
                    rows.append((panel, k, m, months[k - 1] if k else -1,
                                 months[k - 2] if k > 1 else -1))
            panel += 1
    frame = pd.DataFrame(rows, columns=["panel", "wave_all", "month_index", "prev_month_index",
                                        "first_month_index"])
    return frame.sort_values(["month_index", "panel"], kind="stable").reset_index(drop=True)


def _yyyymm(index: np.ndarray) -> np.ndarray:
    return (index // 12) * 100 + index % 12 + 1


def _lose(rng, n: int, share: float, clean: np.ndarray, codes) -> tuple[np.ndarray, np.ndarray]:
    """(raw with some DK/NA codes, clean with NaN there)."""
    lost = rng.random(n) < share
    return np.where(lost, rng.choice(codes, size=n), clean), np.where(lost, np.nan, clean)


def _pick(rng, weights: np.ndarray, codes: list[int]) -> np.ndarray:
    """One code per row from row-wise category weights (n x k)."""
    p = weights / weights.sum(axis=1, keepdims=True)
    u = rng.random(len(p))[:, None]
    return np.asarray(codes)[(u > p.cumsum(axis=1)).sum(axis=1)]


def synthetic_mich_frames(
    *, seed: int, start: str = "2019-01", end: str = "2026-02", per_month: int = 40,
    missing_share: float = DEFAULT_MISSING_SHARE,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(raw extract as written, truth). Truth columns: CASEID, true_prev_caseid,
    true_panel_id, true_panel_wave, link_expected and the clean value of coded columns."""
    first, last = _month_index(start, "start"), _month_index(end, "end")
    if last < first:
        raise ConfigError(f"synthetic Michigan: end {end} is before start {start}")
    if per_month < 1:
        raise ConfigError(f"synthetic Michigan: per_month must be >= 1, got {per_month}")
    rng = np.random.default_rng(int(seed))
    iv = _panels(rng, first, last, per_month)
    n = len(iv)
    ym = _yyyymm(iv["month_index"].to_numpy())
    iv["CASEID"] = np.arange(1, n + 1)
    iv["ID"] = iv.groupby("month_index")["panel"].transform(lambda s: rng.permutation(len(s)) + 1)
    key = {(p, w): i for i, (p, w) in enumerate(zip(iv["panel"], iv["wave_all"], strict=True))}
    waves = iv["wave_all"].to_numpy()
    parent = np.array([key.get((p, w - 1), -1) for p, w in zip(iv["panel"], waves, strict=True)])
    grand = np.array([key.get((p, w - 2), -1) for p, w in zip(iv["panel"], waves, strict=True)])
    ids = iv["ID"].to_numpy()

    raw = pd.DataFrame(index=range(n), columns=COLUMNS, dtype="float64")
    raw["CASEID"], raw["YYYYMM"] = iv["CASEID"], ym
    raw["YYYYQ"] = (ym // 100) * 10 + ((ym % 100) - 1) // 3 + 1
    raw["YYYY"] = ym // 100
    raw["ID"] = ids
    outside = rng.integers(1, 2 * per_month, n)  # predecessor outside the file: an ID drawn
    raw["DATEPR"] = np.where(waves >= 1, _yyyymm(iv["prev_month_index"].to_numpy()), np.nan)
    raw["IDPREV"] = np.where(waves >= 1, np.where(parent >= 0, ids[np.maximum(parent, 0)],
                                                  outside), np.nan)
    third = (waves >= 2) & (grand >= 0)
    raw["DATEPR2"] = np.where(third, _yyyymm(iv["first_month_index"].to_numpy()), np.nan)
    raw["IDPREV2"] = np.where(third, ids[np.maximum(grand, 0)], np.nan)
    wave = np.minimum(waves, 2)
    web = (ym >= 202407) | ((ym >= 202404) & (rng.random(n) < 0.6))
    raw["SAMPLE"] = np.where(web, 6 + wave, 3 + wave)
    raw["METHOD"] = np.where(web, 2, 1)
    level = rng.normal(75, 8, last - first + 1)[iv["month_index"].to_numpy() - first]
    raw["ICS"], raw["ICC"], raw["ICE"] = (np.round(level, 1), np.round(level * 1.1, 1),
                                          np.round(level * 0.92, 1))

    truth = pd.DataFrame({"CASEID": iv["CASEID"]})
    truth["true_prev_caseid"] = pd.array(
        np.where(parent >= 0, iv["CASEID"].to_numpy()[np.maximum(parent, 0)], 0), dtype="Int64")
    truth.loc[parent < 0, "true_prev_caseid"] = pd.NA
    truth["true_panel_id"] = iv.groupby("panel")["CASEID"].transform("min").to_numpy()
    truth["true_panel_wave"] = iv.groupby("panel").cumcount().to_numpy() + 1
    truth["link_expected"] = waves > 0

    panels, log_inc, belief1, belief5 = _demographics(rng, int(seed), iv, raw, truth,
                                                      missing_share)
    _assessments(rng, raw, truth, panels, log_inc, missing_share)
    _inflation_expectations(rng, raw, truth, panels, belief1, belief5, missing_share)
    return raw, truth


def _demographics(rng: np.random.Generator, seed: int, iv: pd.DataFrame, raw: pd.DataFrame,
                  truth: pd.DataFrame, missing_share: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Demographics and income (in place; persons keep them across waves: drawn per panel).
    Returns each row's panel and the panels' log income and 1- and 5-year inflation beliefs."""
    n = len(iv)
    panels = iv["panel"].to_numpy()
    n_panels = int(panels.max()) + 1 if n else 0
    prng = np.random.default_rng([int(seed), 1])
    age0 = prng.integers(18, 92, n_panels)
    sex = prng.choice([1, 2], n_panels, p=[0.48, 0.52])
    region = prng.choice([1, 2, 3, 4], n_panels, p=[0.23, 0.22, 0.18, 0.37])
    marry = prng.choice([1, 3, 4, 5], n_panels, p=[0.55, 0.14, 0.09, 0.22])
    educ = prng.choice([1, 2, 3, 4, 5, 6], n_panels, p=[0.03, 0.06, 0.25, 0.26, 0.24, 0.16])
    kids = prng.choice([0, 1, 2, 3, 4], n_panels, p=[0.6, 0.16, 0.15, 0.06, 0.03])
    adults = prng.choice([1, 2, 3, 4], n_panels, p=[0.28, 0.55, 0.12, 0.05])
    log_inc = 10.3 + 0.22 * (educ - 3) + 0.3 * (marry == 1) + prng.normal(0, 0.6, n_panels)
    belief1 = (3.6 - 0.35 * (educ - 3) + 0.6 * (sex == 2) - 0.5 * (log_inc - 10.8)
               + prng.normal(0, 2.2, n_panels))
    belief5 = 3.0 + 0.5 * (belief1 - 3.6) + prng.normal(0, 1.2, n_panels)
    grow = (iv["month_index"].to_numpy() - iv.groupby("panel")["month_index"].transform(
        "min").to_numpy()) // 12
    raw["AGE"] = np.minimum(age0[panels] + grow, 97)
    raw["SEX"], raw["REGION"], raw["MARRY"], raw["EDUC"] = (sex[panels], region[panels],
                                                           marry[panels], educ[panels])
    for column, values, bad in (("NUMKID", kids[panels], [6, 7]),
                                ("NUMADT", adults[panels], [6, 8])):
        raw[column], truth[column] = _lose(rng, n, missing_share, values.astype(float), bad)
    income = np.round(np.exp(log_inc[panels] + rng.normal(0, 0.15, n)), -2)
    income = np.where(income >= 500_000, 500_000, income)
    raw["INCOME"] = np.where(rng.random(n) < 0.03, np.nan, income)  # blank: not reported
    raw["INCQFM"] = np.where(raw["INCOME"].notna(), 1, np.nan)

    return panels, log_inc, belief1, belief5


def _assessments(rng: np.random.Generator, raw: pd.DataFrame, truth: pd.DataFrame,
                 panels: np.ndarray, log_inc: np.ndarray, missing_share: float) -> None:
    """Assessments and the income expectation they drive (in place)."""
    n = len(raw)
    age = raw["AGE"].to_numpy(dtype=float)
    finances = np.stack([np.full(n, 1.0) + 0.4 * (log_inc[panels] > 10.8), np.full(n, 1.3),
                         np.full(n, 0.8) + 0.4 * (age > 65)], axis=1)
    pago = _pick(rng, finances, [1, 3, 5]).astype(float)
    bago = _pick(rng, np.stack([np.full(n, 0.8), np.full(n, 1.2), np.full(n, 1.0)], 1),
                 [1, 3, 5]).astype(float)
    raw["PAGO"], truth["PAGO"] = _lose(rng, n, missing_share, pago, [8, 9])
    raw["BAGO"], truth["BAGO"] = _lose(rng, n, missing_share, bago, [8, 9])
    for column in _ITEMS_135:
        raw[column], truth[column] = _lose(rng, n, missing_share,
                                           rng.choice([1.0, 3.0, 5.0], n), [8, 9])
    for column in ("BUS12", "BUS5"):
        codes = rng.choice([1.0, 2.0, 3.0, 4.0, 5.0], n)
        raw[column], truth[column] = _lose(rng, n, missing_share, codes,
                                           [8, 9] if column == "BUS12" else [98, 99])
    latent = (2.2 + 2.5 * (pago == 1) - 2.5 * (pago == 5) + 1.0 * (bago == 1) - 1.0 * (bago == 5)
              - 0.07 * (age - 45) + 0.3 * (raw["EDUC"].to_numpy(dtype=float) - 3)
              + rng.normal(0, 2.0, n))
    direction = np.where(latent > 1.0, np.where(rng.random(n) < 0.15, 2, 1),
                         np.where(latent < -1.0, 5, 3)).astype(float)
    size = np.clip(np.round(np.abs(latent)), 1, 95)
    raw["INEXQ1"], truth["INEXQ1"] = _lose(rng, n, missing_share, direction, [8, 9])
    changes = np.isin(raw["INEXQ1"], [1, 2, 5])
    raw["INEXQ2"] = np.where(changes, np.where(rng.random(n) < missing_share, 98, size), np.nan)
    truth["INEXQ2"] = np.where(changes & (raw["INEXQ2"] != 98), size, np.nan)
    sign = np.select([np.isin(raw["INEXQ1"], [1, 2]), raw["INEXQ1"] == 5, raw["INEXQ1"] == 3],
                     [1.0, -1.0, 0.0], np.nan)
    raw["INEX"] = np.where(raw["INEXQ2"] == 98, 98, sign * np.nan_to_num(raw["INEXQ2"]))


def _inflation_expectations(rng: np.random.Generator, raw: pd.DataFrame, truth: pd.DataFrame,
                            panels: np.ndarray, belief1: np.ndarray, belief5: np.ndarray,
                            missing_share: float) -> None:
    """Inflation expectations: the person's level plus interview noise; weights (in place)."""
    n = len(raw)
    for column, level, noise in (("PX1", belief1, 2.4), ("PX5", belief5, 1.4)):
        clean = np.clip(np.round(level[panels] + rng.normal(0, noise, n)), -95, 95)
        wild = rng.random(n) < 0.01  # answers beyond |25| that stay valid
        clean = np.where(wild, rng.choice([-30.0, 30.0, 50.0], n), clean)
        raw[column], truth[column] = _lose(rng, n, missing_share, clean, [-97, 96, 98, 99])
        q1 = np.where(np.isnan(truth[column]), 8, np.select([clean > 0, clean < 0], [1, 5], 3))
        raw[f"{column}Q1"] = q1
        raw[f"{column}Q2"] = np.where(q1 == 8, np.nan, np.where(clean == 0, np.nan,
                                                                 np.abs(clean)))
    raw["WT"] = np.round(rng.lognormal(0, 0.35, n), 4)
    raw["WT_HH"] = raw["WT"]


def write_synthetic_mich(
    path: str | Path,
    *,
    seed: int,
    start: str = "2019-01",
    end: str = "2026-02",
    per_month: int = 40,
    missing_share: float = DEFAULT_MISSING_SHARE,
) -> Path:
    """Write a synthetic `mich.csv` (plus its `.synthetic.json` sidecar). Same seed, same bytes."""
    raw, _ = synthetic_mich_frames(seed=seed, start=start, end=end, per_month=per_month,
                                   missing_share=missing_share)
    out = raw.copy()
    for column in COLUMNS:  # integers without a decimal point; weights and indexes as decimals
        values = out[column]
        if values.notna().any() and (values.dropna() % 1 == 0).all():
            out[column] = values.astype("Int64")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(p) as tmp:
        out.to_csv(tmp, index=False, lineterminator="\n")
    write_sidecar(p, generator_label("mich"),
                  "seeded synthetic data in the Michigan SCA archive CSV format; not survey data",
                  seed=int(seed), start=start, end=end, per_month=int(per_month))
    return p


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--start", default="2019-01")
    parser.add_argument("--end", default="2026-02")
    parser.add_argument("--per-month", type=int, default=40)
    a = parser.parse_args()
    write_synthetic_mich(a.path, seed=a.seed, start=a.start, end=a.end, per_month=a.per_month)


if __name__ == "__main__":
    main()
