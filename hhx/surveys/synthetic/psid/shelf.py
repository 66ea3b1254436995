"""Seeded synthetic PSID-SHELF archives (openICPSR 194322 V2 layout) with their truth.

Demo data only: families and their incomes, wealth, hours, job losses and food spending follow
simple rules meant to look plausible and to carry the relationships the PSID tasks measure, not
estimated from the PSID; nothing computed from them is a finding about households.

Files, as the release ships them (spec 00_common.md 1.2):
- `PSIDSHELF_1968_2021_LONG_7.9_GB.zip` holding `PSIDSHELF_1968_2021_LONG.dta`: one row per person x
  wave from the wave the person enters (1968 for the SRC and SEO samples, 1990 Latino, 1997/1999
  and 2017/2019 immigrant refreshers, later by birth, marriage or moving in), also after leaving
  while alive (panel_current 0, response 1, family variables missing). Lower-case SHELF names,
  value labels on the coded variables (the spec's label text), Stata missing for not applicable;
- `PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL_10.8_GB.zip` holding
  `PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL.dta`: one row per person, ID (= ER30001 * 1000 +
  ER30002), ER30001, ER30002, ER32000, and every V-variable of the variable map (default: the
  shipped psid_main_study_vars.csv), family values repeated on each current member's record and
  missing for persons outside a responding family that wave.
Both are Stata 118 files as pandas writes them, with a fixed time stamp: the same seed and
arguments give byte-identical archives.

The panel: waves 1968-1997 yearly, then every two years to 2021. psid_family simulates the
people and families between the waves, psid_wave draws each wave's rows, V-values and truth.
A few family-waves up to 1992 get a second member coded rel 1 (an ambiguous family, which the
builder must drop from the role lookup).
"""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.io import atomic_path
from hhx.surveys.psid.codes import LABELS
from hhx.surveys.psid.main_study import (
    DEFAULT_VARIABLE_MAP,
    EXPECTED_WAVES,
    MAIN_STUDY_MEMBER,
    MainStudyVar,
    read_variable_map,
)
from hhx.surveys.psid.shelf import LONG_MEMBER
from hhx.surveys.synthetic import generator_label, write_sidecar
from hhx.surveys.synthetic.psid.family import SAMPLE_CUT, SUBSAMPLES, _People, _World
from hhx.surveys.synthetic.psid.wave import OCC_CODES as OCC_CODES  # re-exported (tests)
from hhx.surveys.synthetic.psid.wave import _wave

LONG_ZIP = "PSIDSHELF_1968_2021_LONG_7.9_GB.zip"
MAIN_STUDY_ZIP = "PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL_10.8_GB.zip"
GENERATOR = generator_label("psid")
_STAMP = dt.datetime(2025, 2, 24, 12, 0)

SHELF_VALUE_LABELS: dict[str, dict[int, str]] = {
    **LABELS,
    "rel": {0: "Not in a family unit this wave", 1: "Reference person", 2: "Spouse or partner",
            3: "Child or other family member"},
    "response": {0: "In a responding family unit", 1: "Not in a responding family unit"},
    "sampstat": {0: "Nonsample person", 1: "Original sample person", 2: "Born-in sample person"},
    "panel_current": {0: "Not in the panel this wave", 1: "In the panel this wave"},
}  # fmt: skip
SHELF_VARIABLE_LABELS = {
    "id": "Person identifier (ER30001*1000+ER30002)", "year": "Survey wave",
    "fuid": "Family unit identifier in the wave", "rel": "Relationship to reference person",
    "lineage": "1968 family identifier of the person's lineage", "fw": "Family weight",
    "earn_tot_nd": "Total labor earnings, nominal dollars (previous year)",
    "finc_tot_nd": "Total family income, nominal dollars (previous year)",
    "wlth_tot_net_nd": "Total net worth, nominal dollars",
}  # fmt: skip
SHELF_COLUMNS = (
    "id", "year", "fuid", "rel", "sampstat", "lineage", "response", "panel_current", "fw",
    "demo_sex", "demo_age_gen", "demo_birth_year", "race_eth_maj_col", "geo_region", "geo_metro",
    "edu_year", "edu_year_max", "edu_level_max", "emp_work", "home_stat", "fam_partnered",
    "fam_married", "fam_size", "fam_size_chi", "occ_2010c_1m", "occ_2000c_1m", "occ_1970c",
    "earn_tot_nd", "earn_tot_ndf", "earn_tot_rd", "finc_tot_nd", "finc_tot_rd",
    "wlth_tot_net_nd", "wlth_tot_net_rd", "wlth_savi_net_nd", "wlth_savi_net_rd",
    "wlth_inve_net_nd", "wlth_inve_net_rd", "wlth_home_net_nd", "wlth_home_net_rd",
    "wlth_odeb_net_nd", "wlth_odeb_net_rd", "hlth_srh",
)  # fmt: skip


@dataclass
class PsidWorld:
    """What the generator wrote: `shelf` (long file), `main_study` (Complete Main Study file) and
    `families`: one row per current family-wave with its drawn roles and raw V-values (hours_rp,
    hours_acc_rp, ..., reason_employed_rp, ..., food_home, food_home_acc, ...; NaN where the wave
    has no such variable), `displaced_rp`/`displaced_sp` (a job lost in the year before the wave)
    and `ambiguous` (a second rel 1 member was coded)."""

    shelf: pd.DataFrame
    main_study: pd.DataFrame
    families: pd.DataFrame
    variable_map: dict[tuple[str, str, int], MainStudyVar] = field(repr=False)


# ---------------------------------------------------------------------------------------------
# The panel, its frames and files


def synthetic_psid(
    *, seed: int, n_families: int = 60, variable_map: Path | None = None
) -> PsidWorld:
    """Simulate the panel and return the frames as they are written (see the module notes)."""
    varmap = read_variable_map(Path(variable_map) if variable_map else DEFAULT_VARIABLE_MAP)
    rng = np.random.default_rng(int(seed))
    world = _World(rng, int(n_families))
    people = world.people
    parts: list[dict] = []
    truths: list[dict] = []
    main: list[tuple[str, np.ndarray, np.ndarray]] = []
    previous: int | None = None
    for wave in EXPECTED_WAVES:
        if previous is not None:
            for year in range(previous + 1, wave + 1):
                world.year_passes(year)
        if wave == SAMPLE_CUT[0]:
            world.cut_sample(SAMPLE_CUT[1])
        for name, _, _, _, entries in SUBSAMPLES:
            if wave in entries:
                share = world.plan[name] // len(entries)
                extra = world.plan[name] - share * len(entries) if wave == entries[0] else 0
                for _ in range(share + extra):
                    world.new_family(name, wave)
        rows, truth, values = _wave(world, wave, previous, varmap)
        seen = people["entered"]
        seen[(seen < 0) & (people["family"] >= 0)] = wave
        absent = np.flatnonzero((seen >= 0) & people["alive"] & (people["family"] < 0)
                                & ~people["gone"])
        parts += [rows, _absent_rows(people, absent, wave)]
        truths.append(truth)
        main += values
        previous = wave
    shelf = pd.concat([pd.DataFrame(p) for p in parts], ignore_index=True)
    families = pd.concat([pd.DataFrame(t) for t in truths], ignore_index=True)
    shelf, families = _mark_ambiguous(rng, shelf, families)
    return PsidWorld(shelf=_shelf_types(shelf), main_study=_main_study_frame(world, main, varmap),
                     families=families, variable_map=varmap)


def _absent_rows(people: _People, at: np.ndarray, wave: int) -> dict[str, np.ndarray]:
    n = len(at)
    return {"id": people["pid"][at], "year": np.full(n, wave), "rel": np.zeros(n),
            "sampstat": people["sampstat"][at], "lineage": people["lineage"][at],
            "response": np.ones(n), "panel_current": np.zeros(n), "demo_sex": people["sex"][at],
            "demo_birth_year": people["birth"][at], "race_eth_maj_col": people["race"][at]}


def _mark_ambiguous(
    rng: np.random.Generator, shelf: pd.DataFrame, families: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Code a second member rel 1 in about 1% of family-waves to 1992 (at least one)."""
    early = shelf[(shelf["year"] <= 1992) & (shelf["rel"] == 3) & (shelf["demo_age_gen"] >= 16)]
    candidates = early.drop_duplicates(["year", "fuid"])
    k = max(1, round(0.01 * len(families[families["year"] <= 1992])))
    picked = candidates.sample(n=min(k, len(candidates)), random_state=rng)
    shelf = shelf.copy()
    shelf.loc[picked.index, "rel"] = 1
    families = families.copy()
    marks = set(zip(picked["year"], picked["fuid"], strict=True))
    families["ambiguous"] = [(y, f) in marks for y, f in
                             zip(families["year"], families["fuid"], strict=True)]
    return shelf, families


def _shelf_types(shelf: pd.DataFrame) -> pd.DataFrame:
    """Column order of the file; never-missing integer columns get integer storage types."""
    frame = shelf.reindex(columns=SHELF_COLUMNS).sort_values(["id", "year"], kind="mergesort")
    frame = frame.reset_index(drop=True)
    frame["id"] = frame["id"].astype(np.int32)
    for column in ("year", "rel", "sampstat", "response", "panel_current", "demo_sex",
                   "race_eth_maj_col", "demo_birth_year"):
        frame[column] = frame[column].astype(np.int16)
    for column in frame.columns:
        if not pd.api.types.is_integer_dtype(frame[column]):
            frame[column] = frame[column].astype(np.float64)
    frame["psidshelf_release"] = "2025-01"
    frame["psidshelf_compile"] = np.int32(20250115)
    return frame


def _main_study_frame(world: _World, values: list[tuple[str, np.ndarray, np.ndarray]],
                      varmap: dict[tuple[str, str, int], MainStudyVar]) -> pd.DataFrame:
    people = world.people
    entered = np.flatnonzero(people["entered"] >= 0)
    order = entered[np.argsort(people["pid"][entered], kind="stable")]
    position = np.full(people.n, -1)
    position[order] = np.arange(len(order))
    frame: dict[str, np.ndarray] = {
        "ER30000": np.full(len(order), 1, dtype=np.int8),
        "ER30001": people["er30001"][order].astype(np.int16),
        "ER30002": people["pn"][order].astype(np.int16),
        "ID": people["pid"][order].astype(np.int32),
        "ER32000": people["sex"][order].astype(np.int8),
    }
    names = sorted({n for s in varmap.values() for n in (s.variable, s.accuracy) if n},
                   key=lambda v: int(v[1:]) if v[1:].isdigit() else 0)
    columns = {name: np.full(len(order), np.nan) for name in names}
    for name, persons, value in values:
        columns[name][position[persons]] = value
    frame.update(columns)
    return pd.DataFrame(frame)


def _dta_bytes(frame: pd.DataFrame, value_labels: dict, variable_labels: dict,
               data_label: str) -> bytes:
    buffer = io.BytesIO()
    frame.to_stata(
        buffer, write_index=False, version=118, time_stamp=_STAMP, data_label=data_label,
        value_labels={k: v for k, v in value_labels.items() if k in frame.columns},
        variable_labels={k: v for k, v in variable_labels.items() if k in frame.columns},
    )
    return buffer.getvalue()


def _write_zip(target: Path, member: str, data: bytes) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED,
                                                     compresslevel=1) as zf:
        info = zipfile.ZipInfo(member, date_time=(2025, 2, 24, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, "w", force_zip64=len(data) > 2**31) as fh:
            fh.write(data)
    return target


def write_psid_archives(
    world: PsidWorld, long_zip: str | Path, main_zip: str | Path, *,
    shelf_labels: dict[str, dict[int, str]] | None = None,
) -> tuple[Path, Path]:
    """Write `world.shelf` and `world.main_study` as the two release archives (no sidecars)."""
    long_bytes = _dta_bytes(
        world.shelf, SHELF_VALUE_LABELS if shelf_labels is None else shelf_labels,
        SHELF_VARIABLE_LABELS, "PSID-SHELF 1968-2021 long file (synthetic)",
    )
    main_labels = {s.variable: f"{s.concept} {s.role} {s.wave}" for s in
                   world.variable_map.values()}
    main_labels.update({str(s.accuracy): f"accuracy of {s.variable}" for s in
                        world.variable_map.values() if s.accuracy})
    main_bytes = _dta_bytes(
        world.main_study, {}, {"ID": "Person identifier", **main_labels},
        "PSID Complete Main Study 1968-2021 (synthetic)",
    )
    return (_write_zip(Path(long_zip), LONG_MEMBER, long_bytes),
            _write_zip(Path(main_zip), MAIN_STUDY_MEMBER, main_bytes))


def write_synthetic_psid(
    long_zip: str | Path, main_zip: str | Path, *, seed: int, n_families: int = 60,
    variable_map: Path | None = None,
) -> PsidWorld:
    """Generate the panel, write both archives with synthetic sidecars, return the truth."""
    world = synthetic_psid(seed=seed, n_families=n_families, variable_map=variable_map)
    paths = write_psid_archives(world, long_zip, main_zip)
    for path in paths:
        write_sidecar(path, GENERATOR, "synthetic PSID-SHELF archive", seed=int(seed),
                      n_families=int(n_families))
    return world
