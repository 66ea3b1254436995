"""Seeded synthetic IPUMS USA census extract (`census.gz`) in the official download format.

Demo data only: households of 1-5 persons with plausible but made-up ages, incomes and moves
(the young and the college-educated move more often and further); not U.S. census figures. Format as IPUMS delivers a Stata extract: a gzip-compressed Stata .dta
(version 118), lower-case variable names, variable labels, and value labels attached to the
coded variables (each label set named by the upper-case variable name, as the reference reads
them; no HISPAN 9 "Not Reported", whose prompt wording the reference rejects), with the IPUMS NIU codes (INCTOT 9999999 "N/A", MIGRATE5 0 "N/A", OCC 0, ...)
for persons outside a question's universe. Samples 199002 (1990 1%) and 200007 (2000 1%). A few
variables the reader does not keep sit between the kept ones, as in a real 262-variable extract,
and CNTYGP98 is blank (Stata missing) in the 2000 sample, as a variable a sample lacks.

`VALUE_LABELS` is the codebook written into the file; tests compare the reader against it.
"""

from __future__ import annotations

import io
import shutil
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.errors import ConfigError
from hhx.io import atomic_path, gzip_writer, temp_dir, write_text_atomic
from hhx.surveys.census.decennial import KEEP_COLUMNS
from hhx.surveys.synthetic import STATA_TIME_STAMP, generator_label, write_sidecar

STATES: dict[int, str] = {
    1: "Alabama", 2: "Alaska", 4: "Arizona", 5: "Arkansas", 6: "California", 8: "Colorado",
    9: "Connecticut", 10: "Delaware", 11: "District of Columbia", 12: "Florida", 13: "Georgia",
    15: "Hawaii", 16: "Idaho", 17: "Illinois", 18: "Indiana", 19: "Iowa", 20: "Kansas",
    21: "Kentucky", 22: "Louisiana", 23: "Maine", 24: "Maryland", 25: "Massachusetts",
    26: "Michigan", 27: "Minnesota", 28: "Mississippi", 29: "Missouri", 30: "Montana",
    31: "Nebraska", 32: "Nevada", 33: "New Hampshire", 34: "New Jersey", 35: "New Mexico",
    36: "New York", 37: "North Carolina", 38: "North Dakota", 39: "Ohio", 40: "Oklahoma",
    41: "Oregon", 42: "Pennsylvania", 44: "Rhode Island", 45: "South Carolina",
    46: "South Dakota", 47: "Tennessee", 48: "Texas", 49: "Utah", 50: "Vermont", 51: "Virginia",
    53: "Washington", 54: "West Virginia", 55: "Wisconsin", 56: "Wyoming",
}  # fmt: skip
VALUE_LABELS: dict[str, dict[int, str]] = {
    "sample": {199002: "1990 1%", 200007: "2000 1%"},
    "statefip": {**STATES, 99: "State not identified"},
    "region": {
        11: "New England Division", 12: "Middle Atlantic Division", 21: "East North Central Div.",
        22: "West North Central Div.", 31: "South Atlantic Division",
        32: "East South Central Div.", 33: "West South Central Div.", 41: "Mountain Division",
        42: "Pacific Division", 97: "State not identified", 99: "Not identified",
    },
    "metro": {
        0: "Metropolitan status indeterminable (mixed)", 1: "Not in metropolitan area",
        2: "In metropolitan area: In central/principal city",
        3: "In metropolitan area: Not in central/principal city",
        4: "In metropolitan area: Central/principal city status indeterminable (mixed)",
    },
    "gq": {
        0: "Vacant unit", 1: "Households under 1970 definition",
        2: "Additional households under 1990 definition", 3: "Group quarters--Institutions",
        4: "Other group quarters", 5: "Additional households under 2000 definition",
        6: "Fragment",
    },
    "ownershp": {0: "N/A", 1: "Owned or being bought (loan)", 2: "Rented"},
    "relate": {
        1: "Head/Householder", 2: "Spouse", 3: "Child", 4: "Child-in-law", 5: "Parent",
        6: "Parent-in-Law", 7: "Sibling", 8: "Sibling-in-Law", 9: "Grandchild",
        10: "Other relatives", 11: "Partner, friend, visitor", 12: "Other non-relatives",
        13: "Institutional inmates",
    },
    "sex": {1: "Male", 2: "Female", 9: "Missing/blank"},
    "race": {
        1: "White", 2: "Black/African American", 3: "American Indian or Alaska Native",
        4: "Chinese", 5: "Japanese", 6: "Other Asian or Pacific Islander", 7: "Other race, nec",
        8: "Two major races", 9: "Three or more major races",
    },
    "raced": {
        100: "White", 200: "Black/African American", 300: "American Indian or Alaska Native",
        400: "Chinese", 500: "Japanese", 600: "Filipino", 700: "Other race, nec",
        801: "White and Black", 901: "White, Black, AIAN",
    },
    "hispan": {
        0: "Not Hispanic", 1: "Mexican", 2: "Puerto Rican", 3: "Cuban", 4: "Other",
        9: "Not Reported",
    },
    "hispand": {
        0: "Not Hispanic", 100: "Mexican", 200: "Puerto Rican", 300: "Cuban", 460: "Dominican",
        900: "Not Reported",
    },
    "educ": {
        0: "N/A or no schooling", 1: "Nursery school to grade 4", 2: "Grade 5, 6, 7, or 8",
        3: "Grade 9", 4: "Grade 10", 5: "Grade 11", 6: "Grade 12", 7: "1 year of college",
        8: "2 years of college", 9: "3 years of college", 10: "4 years of college",
        11: "5+ years of college", 99: "Missing",
    },
    "educd": {
        1: "N/A", 2: "No schooling completed", 17: "Grade 4", 26: "Grade 8", 30: "Grade 9",
        40: "Grade 10", 50: "Grade 11", 62: "High school graduate or GED",
        65: "Some college, but less than 1 year", 81: "Associate's degree, type not specified",
        90: "3 years of college", 101: "Bachelor's degree", 114: "Master's degree",
        999: "Missing",
    },
    "school": {0: "N/A", 1: "No, not in school", 2: "Yes, in school", 8: "Unknown", 9: "Missing"},
    "empstat": {0: "N/A", 1: "Employed", 2: "Unemployed", 3: "Not in labor force"},
    "labforce": {0: "N/A", 1: "No, not in the labor force", 2: "Yes, in the labor force"},
    "classwkr": {0: "N/A", 1: "Self-employed", 2: "Works for wages"},
    "workedyr": {0: "N/A", 1: "No", 3: "Yes"},
    "wkswork2": {
        0: "N/A", 1: "1-13 weeks", 2: "14-26 weeks", 3: "27-39 weeks", 4: "40-47 weeks",
        5: "48-49 weeks", 6: "50-52 weeks",
    },
    "inctot": {9999999: "N/A"},
    "incwage": {999999: "N/A", 999998: "Missing"},
    "valueh": {9999999: "N/A", 9999998: "Missing"},
    "migrate5": {
        0: "N/A", 1: "Same house", 2: "Moved within state", 3: "Moved between states",
        4: "Abroad five years ago", 9: "Unknown",
    },
    "migplac5": {0: "N/A", **STATES, 999: "Missing"},
    "migmetro5": {
        0: "Not applicable", 1: "Not in a metro area", 2: "In central/principal city",
        3: "Not in central/principal city", 4: "Central/principal city status unknown",
    },
    "migcity5": {0: "N/A", 1: "Not in identifiable city", 1190: "Chicago, IL",
                 3730: "Los Angeles, CA", 4610: "New York, NY"},
}  # fmt: skip
VARIABLE_LABELS = {
    "year": "Census year", "sample": "IPUMS sample identifier", "serial": "Household serial number",
    "pernum": "Person number in sample unit", "cpi99": "CPI-U adjustment factor to 1999 dollars",
    "statefip": "State (FIPS code)", "migrate5": "Migration status, 5 years",
    "migplac5": "State or country of residence 5 years ago", "inctot": "Total personal income",
}  # fmt: skip
# Variables of a real extract the reader drops, with where they sit (after which kept one).
_EXTRA_AFTER = {"sample": "cbserial", "statefip": "stateicp", "relate": "related", "age": "bpl"}
_CPI99 = {199002: 1.295, 200007: 1.0}


def _persons(rng: np.random.Generator, sample: int, n_households: int, serial0: int) -> dict:
    """The extract's columns (in file order) for `n_households` households of one sample."""
    p = _draw_people(rng, sample, n_households)
    return {**_household_columns(rng, sample, n_households, serial0, p),
            **_person_columns(rng, p)}


def _draw_people(rng: np.random.Generator, sample: int, n_households: int) -> dict:
    """Household sizes, ages, origin, education, work, income, moves and tenure (the draws the
    columns are made of)."""
    sizes = rng.integers(1, 6, n_households)
    n = int(sizes.sum())
    hh = np.repeat(np.arange(n_households), sizes)
    pernum = np.concatenate([np.arange(1, s + 1) for s in sizes])
    head_age = rng.integers(25, 86, n_households)[hh]
    age = np.where(
        pernum == 1,
        head_age,
        np.where(pernum == 2, head_age - rng.integers(-3, 6, n), rng.integers(0, 30, n)),
    )
    age = np.clip(age, 0, 95)
    states = np.array(list(STATES))
    state = rng.choice(states, n_households)[hh]
    race = rng.choice(
        np.arange(1, 10), n, p=[0.75, 0.12, 0.01, 0.02, 0.01, 0.03, 0.04, 0.015, 0.005]
    )
    hispan = np.where(rng.random(n) < 0.1, rng.choice([1, 2, 3, 4], n), 0)
    adult = age >= 15
    educ = np.where(age < 5, 0, np.where(adult, rng.integers(2, 12, n), rng.integers(0, 4, n)))
    educ = np.where(rng.random(n) < 0.01, 99, educ)
    educd_of = {0: 2, 1: 17, 2: 26, 3: 30, 4: 40, 5: 50, 6: 62, 7: 65, 8: 81, 9: 90, 10: 101,
                11: 114, 99: 999}  # fmt: skip
    empstat = np.where(adult, rng.choice([1, 2, 3], n, p=[0.6, 0.05, 0.35]), 0)
    wage = np.round(rng.lognormal(10.2, 0.9, n)).astype(np.int64)
    cap = 140000 if sample == 199002 else 175000
    wage = np.minimum(wage, cap)
    incwage = np.where(adult, np.where(empstat == 1, wage, 0), 999999)
    inctot = np.where(adult, incwage + rng.integers(0, 8000, n), 9999999)
    inctot = np.where(
        adult & (rng.random(n) < 0.02), 999998 if sample == 200007 else 420000, inctot
    )
    # Moves five years: the young and the college-educated move more, and further.
    youth = np.clip((62 - age) / 30, 0, 1)
    p_stay = 0.3 + 0.6 * (1 - youth)
    p_far = (0.15 + 0.3 * (educ >= 10)) * (1 - p_stay)
    u = rng.random(n)
    migrate5 = np.select([u < p_stay, u < p_stay + p_far, u < 0.985], [1, 3, 2],
                         rng.choice([4, 9], n))
    migrate5 = np.where(age < 5, 0, migrate5)
    other_state = rng.choice(states, n)
    other_state = np.where(
        other_state == state,
        states[(np.searchsorted(states, state) + 1) % len(states)],
        other_state,
    )
    migplac5 = np.select([migrate5 == 2, migrate5 == 3], [state, other_state], 0)
    occ = np.where(empstat == 1, rng.integers(3, 900, n), 0)
    hisp_d = {0: 0, 1: 100, 2: 200, 3: 300, 4: 460, 9: 900}
    raced = np.where(race <= 7, race * 100, np.where(race == 8, 801, 901))
    owner = rng.choice([1, 2], n_households)[hh]
    return dict(sizes=sizes, n=n, hh=hh, pernum=pernum, age=age, state=state, race=race,
                hispan=hispan, adult=adult, educ=educ, educd_of=educd_of, empstat=empstat,
                incwage=incwage, inctot=inctot, migrate5=migrate5, migplac5=migplac5, occ=occ,
                hisp_d=hisp_d, raced=raced, owner=owner)


def _household_columns(rng: np.random.Generator, sample: int, n_households: int, serial0: int,
                       p: dict) -> dict:
    """Sample, household ids, weights, geography and dwelling columns."""
    sizes, n, hh, pernum, state = p["sizes"], p["n"], p["hh"], p["pernum"], p["state"]
    owner = p["owner"]
    return {
        "year": np.full(n, 1990 if sample == 199002 else 2000),
        "sample": np.full(n, sample),
        "cbserial": serial0 + hh + 7_000_000,
        "serial": serial0 + hh,
        "pernum": pernum,
        "numprec": sizes[hh],
        "famsize": sizes[hh],
        "hhwt": np.full(n, 100.0),
        "perwt": np.full(n, 100.0),
        "cpi99": np.full(n, _CPI99[sample]),
        "statefip": state,
        "stateicp": state + 100,
        "region": rng.choice(list(VALUE_LABELS["region"])[:9], n_households)[hh],
        "metro": rng.integers(0, 5, n_households)[hh],
        "metarea": rng.integers(0, 800, n_households)[hh],
        "metaread": rng.integers(0, 8000, n_households)[hh],
        "puma": rng.integers(100, 3000, n_households)[hh],
        "cntygp97": rng.integers(0, 400, n_households)[hh],
        # CNTYGP98 is not part of the 2000 sample: blank there (Stata missing).
        "cntygp98": (rng.integers(1, 400, n_households)[hh]).astype(float)
        if sample == 199002
        else np.full(n, np.nan),
        "pumasupr": rng.integers(100, 300, n_households)[hh],
        "gq": np.where(rng.random(n) < 0.02, 3, 1 if sample == 199002 else 5),
        "ownershp": owner,
        "valueh": np.where(owner == 1, rng.integers(20000, 900000, n), 9999999),
        "rentgrs": np.where(owner == 2, rng.integers(200, 2500, n), 0),
        "rooms": rng.integers(1, 10, n_households)[hh],
    }


def _person_columns(rng: np.random.Generator, p: dict) -> dict:
    """Family links, demographics, education, work, income and migration columns."""
    n, pernum, age, state, race = p["n"], p["pernum"], p["age"], p["state"], p["race"]
    hispan, adult, educ, educd_of = p["hispan"], p["adult"], p["educ"], p["educd_of"]
    empstat, incwage, inctot, migrate5 = p["empstat"], p["incwage"], p["inctot"], p["migrate5"]
    migplac5, occ, hisp_d, raced = p["migplac5"], p["occ"], p["hisp_d"], p["raced"]
    return {
        "momloc": np.where(pernum > 2, 2, 0),
        "poploc": np.where(pernum > 2, 1, 0),
        "sploc": np.select([pernum == 1, pernum == 2], [2, 1], 0),
        "relate": np.select([pernum == 1, pernum == 2], [1, 2], 3),
        "related": np.select([pernum == 1, pernum == 2], [101, 201], 301),
        "age": age,
        "bpl": state,
        "sex": np.where(rng.random(n) < 0.002, 9, rng.integers(1, 3, n)),
        "race": race,
        "raced": raced,
        "hispan": hispan,
        "hispand": np.vectorize(hisp_d.get)(hispan),
        "educ": educ,
        "educd": np.vectorize(educd_of.get)(educ),
        "school": np.where(age < 3, 0, np.where(age < 20, 2, 1)),
        "gradeatt": np.where((age >= 3) & (age < 20), np.clip(age - 4, 1, 6), 0),
        "gradeattd": np.where((age >= 3) & (age < 20), np.clip(age - 4, 1, 6) * 10, 0),
        "empstat": empstat,
        "labforce": np.where(adult, np.where(empstat == 3, 1, 2), 0),
        "classwkr": np.where(empstat == 1, rng.integers(1, 3, n), 0),
        "occ": occ,
        "occ1950": np.where(occ > 0, occ // 2 + 1, 0),
        "occ1990": np.where(occ > 0, occ, 0),
        "ind": np.where(empstat == 1, rng.integers(10, 990, n), 0),
        "ind1950": np.where(empstat == 1, rng.integers(105, 936, n), 0),
        "ind1990": np.where(empstat == 1, rng.integers(10, 932, n), 0),
        "workedyr": np.where(adult, np.where(empstat == 1, 3, 1), 0),
        "wkswork1": np.where(empstat == 1, rng.integers(1, 53, n), 0),
        "wkswork2": np.where(empstat == 1, rng.integers(1, 7, n), 0),
        "uhrswork": np.where(empstat == 1, rng.integers(1, 80, n), 0),
        "inctot": inctot,
        "incwage": incwage,
        "incbus": np.where(adult, rng.integers(0, 2, n) * rng.integers(0, 50000, n), 999999),
        "incfarm": np.where(adult, 0, 999999),
        "incss": np.where(adult, np.where(age >= 62, rng.integers(3000, 20000, n), 0), 99999),
        "incinvst": np.where(adult, rng.integers(0, 5000, n), 999999),
        "incretir": np.where(adult, np.where(age >= 60, rng.integers(0, 30000, n), 0), 999999),
        "poverty": np.where(rng.random(n) < 0.02, 0, rng.integers(1, 502, n)),
        "migrate5": migrate5,
        "migplac5": migplac5,
        "migmetro5": np.where(migrate5 >= 2, rng.integers(1, 5, n), 0),
        "migcity5": np.where(migrate5 >= 2, rng.choice([1, 1190, 3730, 4610], n), 0),
    }


CHUNK_HOUSEHOLDS = 50_000  # households generated and written at a time (bounds memory)


def census_chunks(*, seed: int, n_households: int = 300) -> Iterator[pd.DataFrame]:
    """The extract as written to the file, in pieces of at most CHUNK_HOUSEHOLDS households:
    lower-case names, raw IPUMS codes, sample 199002 then 200007 (`n_households` each)."""
    if n_households < 1:
        raise ConfigError(f"write_synthetic_census: n_households must be >= 1, got {n_households}")
    rng = np.random.default_rng(int(seed))
    order = []
    for column in (c.lower() for c in KEEP_COLUMNS):
        order.append(column)
        if column in _EXTRA_AFTER:
            order.append(_EXTRA_AFTER[column])
    for i, sample in enumerate((199002, 200007)):
        for first in range(0, n_households, CHUNK_HOUSEHOLDS):
            size = min(CHUNK_HOUSEHOLDS, n_households - first)
            frame = pd.DataFrame(
                _persons(rng, sample, size, serial0=1 + i * 10 * n_households + first))[order]
            for column in frame.columns:
                if frame[column].dtype.kind in "iub":
                    frame[column] = frame[column].astype(np.int32)
            yield frame


def synthetic_census_frame(*, seed: int, n_households: int = 300) -> pd.DataFrame:
    """The whole extract as one frame (what `write_synthetic_census` writes)."""
    return pd.concat(census_chunks(seed=seed, n_households=n_households), ignore_index=True)


_NAME = 129  # bytes of a name field in a Stata 118 file


def upper_label_names(dta: bytes) -> bytes:
    """Name each value-label set by the upper-case variable name, as IPUMS's Stata extracts do
    (pandas names it after the column): the variables' label references and the sets' own
    names, in place (same length, so the file's map stays right)."""
    out = bytearray(dta)
    at = out.index(b"<map>") + len(b"<map>")
    offsets = struct.unpack("<14Q", bytes(out[at : at + 14 * 8]))

    def upper(pos: int) -> None:
        out[pos : pos + _NAME] = bytes(out[pos : pos + _NAME]).upper()

    start = offsets[6] + len(b"<value_label_names>")
    stop = offsets[7] - len(b"</value_label_names>")
    for pos in range(start, stop, _NAME):
        upper(pos)
    pos = offsets[11] + len(b"<value_labels>")
    while out[pos : pos + 5] == b"<lbl>":
        length = struct.unpack("<I", bytes(out[pos + 5 : pos + 9]))[0]
        upper(pos + 9)
        pos += 5 + 4 + _NAME + 3 + length + len(b"</lbl>")
    return bytes(out)


def _dta_parts(frame: pd.DataFrame) -> tuple[bytes, bytes, bytes, bytes]:
    """One frame as Stata 118 -> (everything up to the records, the records, everything after,
    the variable types), cut where the file's own map says the data section lies."""
    buf = io.BytesIO()
    frame.to_stata(
        buf,
        write_index=False,
        value_labels={k: v for k, v in VALUE_LABELS.items() if k in frame.columns},
        variable_labels={k: v for k, v in VARIABLE_LABELS.items() if k in frame.columns},
        version=118,
        time_stamp=STATA_TIME_STAMP,
    )
    dta = upper_label_names(buf.getvalue())
    at = dta.index(b"<map>") + len(b"<map>")
    offsets = struct.unpack("<14Q", dta[at : at + 14 * 8])
    data_start = offsets[9] + len(b"<data>")
    data_end = offsets[10] - len(b"</data>")
    return dta[:data_start], dta[data_start:data_end], dta[data_end:], dta[
        offsets[2] : offsets[3]]


def write_census_gz(
    frames: pd.DataFrame | Iterable[pd.DataFrame], path: str | Path, compresslevel: int = 6
) -> Path:
    """Write frames as IPUMS does: one Stata 118 file with value/variable labels, gzipped.

    Pieces are written one after another into the data section (same columns and Stata types
    required), then the observation count and the map's later offsets are set: memory stays at
    one piece however large the extract. gzip level 1 writes large benchmark extracts ~10x
    faster than Python's default 9, same content."""
    pieces = iter([frames] if isinstance(frames, pd.DataFrame) else frames)
    target = Path(path)
    with temp_dir(target.parent, "census-gen-") as tmp:  # swept if the build is killed
        dta = Path(tmp) / "census.dta"
        with dta.open("w+b") as fh:
            head, records, tail, types = _dta_parts(next(pieces))
            fh.write(head + records)
            size = first_size = len(records)
            for frame in pieces:
                _, more, _, more_types = _dta_parts(frame)
                if more_types != types:
                    raise ConfigError("write_census_gz: a piece has other Stata column types")
                fh.write(more)
                size += len(more)
            fh.write(tail)
            n = size // _row_width(types)
            fh.seek(head.index(b"<N>") + len(b"<N>"))
            fh.write(struct.pack("<Q", n))
            at = head.index(b"<map>") + len(b"<map>")
            fh.seek(at)
            offsets = list(struct.unpack("<14Q", fh.read(14 * 8)))
            offsets[10:] = [o + size - first_size for o in offsets[10:]]
            fh.seek(at)
            fh.write(struct.pack("<14Q", *offsets))
        with (
            atomic_path(target) as out,
            dta.open("rb") as src,
            gzip_writer(out, compresslevel) as dst,
        ):
            shutil.copyfileobj(src, dst, 1 << 20)
    return target


# Stata 118 type codes: 1-2045 str of that width, 65526 double, 65527 float, 65528 long,
# 65529 int, 65530 byte.
_TYPE_WIDTH = {65526: 8, 65527: 4, 65528: 4, 65529: 2, 65530: 1}


def _row_width(types: bytes) -> int:
    body = types[len(b"<variable_types>") : -len(b"</variable_types>")]
    codes = struct.unpack(f"<{len(body) // 2}H", body)
    return sum(_TYPE_WIDTH.get(c, c) for c in codes)


def write_synthetic_census(
    path: str | Path, *, seed: int, n_households: int = 300, compresslevel: int = 6
) -> Path:
    """Write `census.gz` (both samples, `n_households` households each) to `path`."""
    out = write_census_gz(census_chunks(seed=seed, n_households=n_households), path,
                          compresslevel)
    write_sidecar(out, generator_label("census"), "synthetic IPUMS USA extract",
                  seed=int(seed), n_households=n_households)
    return out


# --------------------------------------------------------------------------------------------
# The other IPUMS delivery: fixed-width `.dat.gz` + DDI 2.5 codebook (`.xml`)

# (width, implied decimals) by variable; IPUMS writes zero-padded numbers without the point.
_DDI_DECIMALS = {"hhwt": 2, "perwt": 2, "cpi99": 3}


def _ddi_widths(columns: list[str]) -> dict[str, tuple[int, int]]:
    widths = {}
    for column in columns:
        if column in _DDI_DECIMALS:
            widths[column] = (10 if column != "cpi99" else 5, _DDI_DECIMALS[column])
        elif column in ("year", "pernum"):
            widths[column] = (4, 0)
        else:  # generous: every code and amount of the generator fits
            widths[column] = (8, 0)
    return widths


def _ddi_xml(columns: list[str], widths: dict[str, tuple[int, int]], data_name: str) -> str:
    from xml.sax.saxutils import escape

    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<codeBook version="2.5" xmlns="ddi:codebook:2_5">',
           "  <docDscr><citation><titlStmt><titl>Codebook for an IPUMS-USA Data Extract (synthetic)"
           "</titl></titlStmt></citation></docDscr>",
           "  <stdyDscr><citation><titlStmt><titl>synthetic hhx extract</titl></titlStmt>"
           '<serStmt><serName abbr="usa">IPUMS USA</serName><serInfo>synthetic</serInfo>'
           "</serStmt></citation><stdyInfo><notes>Sample: synthetic 1990 1% and 2000 1%</notes>"
           "</stdyInfo><dataAccs><useStmt><citReq>synthetic data, not IPUMS data</citReq>"
           "<conditions>none</conditions></useStmt></dataAccs></stdyDscr>",
           '  <fileDscr ID="ExtractData"><fileTxt>',
           f"    <fileName>{escape(data_name)}</fileName>",
           "    <fileCont>Microdata records</fileCont>",
           '    <fileStrc type="rectangular"/>',
           '    <fileType charset="ISO-8859-1">ISO-8859-1 data file</fileType>',
           "    <format>fixed length fields</format>",
           "    <filePlac>generated by hhx (synthetic)</filePlac>",
           "  </fileTxt></fileDscr>", "  <dataDscr>"]
    start = 1
    for column in columns:
        width, dcml = widths[column]
        name = column.upper()
        out.append(f'    <var ID="{name}" dcml="{dcml}" files="ExtractData" intrvl="discrete" '
                   f'name="{name}">')
        out.append(f'      <location EndPos="{start + width - 1}" StartPos="{start}" '
                   f'width="{width}"/>')
        out.append(f"      <labl>{escape(VARIABLE_LABELS.get(column, name))}</labl>")
        out.append(f"      <txt>{escape(VARIABLE_LABELS.get(column, name))} (synthetic)</txt>")
        for code, label in VALUE_LABELS.get(column, {}).items():
            out.append(f"      <catgry><catValu>{code}</catValu><labl>{escape(label)}</labl>"
                       "</catgry>")
        out.append('      <concept vocab="IPUMS">synthetic</concept>')
        out.append('      <varFormat schema="other" type="numeric"/>')
        out.append("    </var>")
        start += width
    out += ["  </dataDscr>", "</codeBook>", ""]
    return "\n".join(out)


def _fixed_width_lines(frame: pd.DataFrame, widths: dict[str, tuple[int, int]]) -> bytes:
    parts = []
    for column in frame.columns:
        width, dcml = widths[column]
        values = frame[column].to_numpy(dtype="float64")
        scaled = np.round(values * 10**dcml)
        if np.nanmax(np.abs(scaled), initial=0) >= 10**width:
            raise ConfigError(f"write_census_ddi: {column} does not fit {width} digits")
        text = pd.Series(scaled).map(lambda v, w=width: " " * w if np.isnan(v)
                                     else f"{int(v):0{w}d}")
        parts.append(text.to_numpy(dtype=str))
    lines = ["".join(fields) for fields in zip(*parts, strict=True)]
    return ("\n".join(lines) + "\n").encode("ascii")


def write_census_ddi(
    frames: pd.DataFrame | Iterable[pd.DataFrame], data_path: str | Path, compresslevel: int = 6
) -> tuple[Path, Path]:
    """Write frames as an IPUMS fixed-width extract: `<name>.dat.gz` and its DDI `<name>.xml`
    (value labels as DDI categories, implied decimals for the weights and CPI99). A variable a
    sample lacks (Stata missing) is a blank field."""
    pieces = iter([frames] if isinstance(frames, pd.DataFrame) else frames)
    data_path = Path(data_path)
    first = next(pieces)
    columns = list(first.columns)
    widths = _ddi_widths(columns)
    with atomic_path(data_path) as tmp, gzip_writer(tmp, compresslevel) as gz:
        gz.write(_fixed_width_lines(first, widths))
        for frame in pieces:
            gz.write(_fixed_width_lines(frame[columns], widths))
    ddi_path = data_path.with_name(data_path.name.split(".dat")[0] + ".xml")
    write_text_atomic(ddi_path, _ddi_xml(columns, widths, data_path.name.removesuffix(".gz")))
    return data_path, ddi_path


def write_synthetic_census_ddi(
    data_path: str | Path, *, seed: int, n_households: int = 300
) -> tuple[Path, Path]:
    """The same synthetic extract as `write_synthetic_census`, as `.dat.gz` + DDI `.xml`."""
    paths = write_census_ddi(census_chunks(seed=seed, n_households=n_households), data_path)
    for path in paths:
        write_sidecar(path, generator_label("census"), "synthetic IPUMS USA extract (DDI)",
                      seed=int(seed), n_households=n_households)
    return paths
