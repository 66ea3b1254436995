"""PSID-SHELF 1968-2021 + Complete Main Study -> `psid_main.parquet` + `psid_main_metadata.json`.

Facts: shared/spec/00_common.md 1.1 (input fingerprint), 1.2 and 1.3 (PSID rows), 1.10 (PSID
details), 2 (PSID wave schedule); 10_tasks_cons_house_income.md 7 (PSID common facts and labels)
with the tasks cons_psid_wealth, house_psid_owner, income_psid_earnings, cons_psid_jobloss, and
20_tasks_labor_macro.md 6 (labor_psid_addedworker), which fix the columns kept below.

Inputs (`survey.raw.<key>`, relative to data.raw_dir), both ZIPs read compressed, never unpacked:
- `shelf_long`: `PSIDSHELF_1968_2021_LONG_7.9_GB.zip`, member `PSIDSHELF_1968_2021_LONG.dta`, the
  PSID-SHELF long file (one row per person x wave, SHELF names such as `wlth_tot_net_nd`);
- `main_study`: `Construction_Files/Data/PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL_10.8_GB.zip`,
  member `PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL.dta`, the cross-year PSID file (one row per
  person, PSID V-variable names; family variables repeated on each member of the family);
- optional `main_study_vars`: the V-variable map (default: `psid_main_study_vars.csv` shipped
  next to this module, columns concept, role, survey_year, variable, accuracy_variable, topcode,
  reference_period, annualisation_factor, questionnaire_item);
- `release_dates`: the reference's `release_psid.csv` crosswalk (year, release_date, source,
  source_url, comments; read by hhx.surveys.release_dates as the reference's reader reads it:
  exactly the wave schedule, no empty source). The reference's builder requires it, and so does
  hhx by default (conf/survey/psid.yaml names `release_dates/release_psid.csv`); setting it to
  null (an hhx option, off by default) leaves release_date and release_date_source null.

Reading. pandas' StataReader re-reads the strL table at the end of a .dta before every chunk
unless value labels were read, and on a ZIP member every backward seek restarts decompression
(measured on a 26 MB test file in 10 chunks: 13 times one decompression pass), so a 7.9 GB member
would be decompressed once per chunk. `DtaStream` therefore parses the Stata 117/118/119 layout
itself and reads a member strictly forward, once: header, then only the needed fields of each row
through a numpy record view (memory is bounded by one ~64 MB block), then the strL texts (when a
variable is a strL) and the value labels at the end. The spec-1.1 fingerprint of a one-member ZIP
is computed from the same bytes.

Output `psid_main.parquet`, one row per person x wave in file order:
- every SHELF column, in file order, names lower-cased (as the reference keeps them all; the
  REQUIRED_COLUMNS must be there): `id`, `year` int64, the CODE_COLUMNS Int64 (a fraction is an
  error), VALUE_COLUMNS float64, other numbers Int64 (Stata integer types) or float64, text as
  string (strL texts resolved). Waves outside the schedule (1968-1997 annual, 1999-2021
  biennial) or a missing wave are errors;
- derived (spec 1.10), in the reference's order: `subsample` from `lineage` ranges,
  `sample_person` (sampstat != 0; as in the reference, a missing sampstat also differs from 0),
  `is_reference_person` (rel == 1), `income_year` (year - 1), `<var>_label` for LABELS as
  categoricals with the codebook's categories (the spec's text, which the task prompts quote;
  the file's own Stata value labels are compared with it and differences listed in the metadata;
  a code without a label is an error), `occ_major_harmonized` (categorical), `occ_source`,
  `occ_major_harmonized_label` (categorical) from occ_2010c_1m, else occ_2000c_1m, else
  occ_1970c;
- `release_date`, `release_date_source` (the crosswalk's date and `source` text);
- ENRICHMENT_COLUMNS on rows of current family members (panel_current == 1, fuid present), null
  elsewhere. The reference person and spouse of a family-wave are its rel 1 / rel 2 members;
  family-waves with two rel 1 or two rel 2 members are ambiguous and get no roles. Complete Main
  Study values are read from each member's own record (waves to 1992):
  job-end reason codes (employed and unemployed routes, kept as published like the reference
  does; codes outside the documented 0-9 are counted in the metadata, fractions are errors;
  reference person 1968-1992, spouse 1976 and 1979-1992; the tasks use codes 1 and 3; 1968 has
  one combined question for both routes), annual hours of the
  reference person and spouse (reference year = wave - 1; valid if 0 <= hours < 9,999 and accuracy
  code 0, 1 or 2), food at home / away / net food stamps (waves 1969-1992 except 1973, 1988,
  1989, status `not_collected` there and in 1968; valid if 0 <= value < top code and accuracy code
  0-2; stamps x 12 where the wave asked for last month, from 1977). Family variables must agree
  across the current members of a family-wave. Earnings stay as published; the tasks treat
  earn_tot_nd == 9,999,999 (top code) as missing; the metadata counts such rows.

The V-variable map comes from the reference implementation (householdbench_eval, commit 148abfb).
Hours of reference person and spouse were checked against an independent public PSID variable list
for every wave, and all 1984 entries (hours, accuracy codes, both job-end routes of both roles,
food, stamps) against the 1984 family-file labels; the other waves' reason, accuracy and food
numbers are not independently verified. A different map can be given with `raw.main_study_vars`.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import time
import zipfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.io import atomic_path, temp_dir, write_parquet_chunks
from hhx.surveys.base import (
    BuildReport,
    finish_report,
    has_synthetic_sidecar,
    input_sha256,
    raw_path,
)
from hhx.surveys.release_dates import read_release_crosswalk

SOURCE_URL = (
    "openICPSR project 194322 V2 (PSID-SHELF 1968-2021, https://doi.org/10.3886/E194322V2)"
)
OUTPUT_NAME = "psid_main"
METADATA_FILE = "psid_main_metadata.json"
LONG_MEMBER = "PSIDSHELF_1968_2021_LONG.dta"
MAIN_STUDY_MEMBER = "PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL.dta"
DEFAULT_VARIABLE_MAP = Path(__file__).with_name("psid_main_study_vars.csv")

EXPECTED_WAVES: tuple[int, ...] = tuple(range(1968, 1998)) + tuple(range(1999, 2022, 2))
LAST_ENRICHMENT_WAVE = 1992
FOOD_UNAVAILABLE_WAVES = frozenset({1968, 1973, 1988, 1989})
EARNINGS_TOPCODE = 9_999_999
VALID_ACCURACY_CODES = (0, 1, 2)
ACCURACY_STATUS = {0: "direct_or_valid_zero", 1: "minor_assignment", 2: "major_assignment"}
INVALID_STATUS = "missing_or_topcoded"
REASON_CODES = range(10)  # documented job-end reason codes 0-9
QUALIFYING_REASONS = {1: "plant_closure_or_employer_move", 3: "layoff_or_firing"}

# (subsample, first lineage, last lineage), spec 1.10; anything else is "unknown".
SUBSAMPLE_RANGES: tuple[tuple[str, int, int], ...] = (
    ("src", 1, 2930),
    ("immigrant_1997_1999", 3001, 3511),
    ("immigrant_2017_2019", 4001, 4851),
    ("seo", 5001, 6872),
    ("latino", 7001, 9308),
)

KEY_COLUMNS = ("id", "year")
# Integer codes (Int64; a fraction is an error).
CODE_COLUMNS = (
    "fuid", "rel", "sampstat", "lineage", "response", "panel_current", "demo_sex",
    "race_eth_maj_col", "geo_region", "geo_metro", "edu_level_max", "emp_work", "home_stat",
    "fam_partnered", "fam_married", "occ_2010c_1m", "occ_2000c_1m", "occ_1970c",
)  # fmt: skip
# Amounts, ages, counts and weights (float64; a string variable is kept as text).
VALUE_COLUMNS = (
    "fw", "demo_age_gen", "edu_year", "edu_year_max", "fam_size", "fam_size_chi",
    "earn_tot_nd", "earn_tot_ndf", "finc_tot_nd", "finc_tot_rd",
    "wlth_tot_net_nd", "wlth_tot_net_rd", "wlth_savi_net_nd", "wlth_savi_net_rd",
    "wlth_inve_net_nd", "wlth_inve_net_rd", "wlth_home_net_nd", "wlth_home_net_rd",
    "wlth_odeb_net_nd",
)  # fmt: skip
REQUIRED_COLUMNS = KEY_COLUMNS + CODE_COLUMNS + VALUE_COLUMNS
# Release identifiers of the SHELF file: first row's values go to the metadata.
METADATA_SCALARS = ("psid_retrieve", "psidshelf_compile", "psidshelf_release")

# Spec 10_tasks 7: the label text the PSID task prompts are built from.
LABELS: dict[str, dict[int, str]] = {
    "demo_sex": {1: "Male", 2: "Female"},
    "race_eth_maj_col": {1: "White", 2: "Black", 3: "Other race", 4: "Hispanic"},
    "geo_region": {
        1: "Northeast", 2: "Midwest", 3: "South", 4: "West", 5: "Alaska or Hawaii",
        6: "Country outside the United States",
    },
    "geo_metro": {0: "No, non-metropolitan area", 1: "Yes, metropolitan area",
                  9: "N/A, not classified"},
    "edu_level_max": {
        0: "Did not complete high school",
        1: "Completed high school, did not attend college",
        2: "Attended college, no bachelor's degree",
        3: "Bachelor's degree, no postgraduate degree",
        4: "Postgraduate degree",
    },
    "emp_work": {0: "Not currently working", 1: "Currently working"},
    "home_stat": {1: "Owns home", 2: "Pays rent", 3: "Neither owns home nor pays rent"},
    "fam_partnered": {
        0: "No, reference person has no spouse or partner in the family unit",
        1: "Yes, reference person has a spouse or partner in the family unit",
    },
    "fam_married": {
        0: "No, reference person is not legally married to a spouse in the family unit",
        1: "Yes, reference person is legally married to a spouse in the family unit",
    },
}  # fmt: skip

OCC_LABELS = {
    "professional_managerial": "Professional or managerial occupation",
    "sales_office_service": "Sales, office, or service occupation",
    "farming_construction_repair": "Farming, construction, or repair occupation",
    "production_transport_labor": "Production, transport, or labor occupation",
    "military_other": "Military or other occupation",
}
# Code ranges (inclusive) of each coding scheme, in the order occupation is taken from.
OCC_RANGES: dict[str, tuple[tuple[int, int, str], ...]] = {
    "occ_2010c_1m": (
        (10, 3540, "professional_managerial"), (3600, 5940, "sales_office_service"),
        (6000, 7630, "farming_construction_repair"), (7700, 9750, "production_transport_labor"),
        (9800, 9830, "military_other"),
    ),
    "occ_2000c_1m": (
        (10, 354, "professional_managerial"), (360, 593, "sales_office_service"),
        (600, 762, "farming_construction_repair"), (770, 975, "production_transport_labor"),
        (980, 983, "military_other"),
    ),
    "occ_1970c": (
        (1, 245, "professional_managerial"), (250, 395, "sales_office_service"),
        (401, 444, "farming_construction_repair"), (500, 785, "production_transport_labor"),
        (801, 846, "farming_construction_repair"), (901, 965, "sales_office_service"),
        (980, 983, "military_other"),
    ),
}  # fmt: skip

DERIVED_COLUMNS = (
    "subsample", "sample_person", "is_reference_person", "income_year",
    *(f"{v}_label" for v in LABELS), "occ_major_harmonized", "occ_source",
    "occ_major_harmonized_label",
)  # fmt: skip
RELEASE_COLUMNS = ("release_date", "release_date_source")

# Complete Main Study columns appended to current members' rows, with their dtypes.
ENRICHMENT_DTYPES: dict[str, str] = {
    "reference_person_id": "Int64",
    "spouse_person_id": "Int64",
    "demo_age_gen_rp": "float64",
    "demo_age_gen_sp": "float64",
    "demo_sex_rp": "Int8",
    "demo_sex_sp": "Int8",
    "demo_sex_label_rp": "string",
    "demo_sex_label_sp": "string",
    "labor_reference_year": "Int64",
    "annual_hours_rp": "float64",
    "annual_hours_sp": "float64",
    "annual_hours_valid_rp": "Int8",
    "annual_hours_valid_sp": "Int8",
    "annual_hours_accuracy_code_rp": "Int8",
    "annual_hours_accuracy_code_sp": "Int8",
    "annual_hours_assignment_status_rp": "string",
    "annual_hours_assignment_status_sp": "string",
    "annual_work_status_rp": "float64",
    "annual_work_status_sp": "float64",
    "job_end_reason_ascertained_rp": "Int8",
    "job_end_reason_ascertained_sp": "Int8",
    "job_end_reason_employed_code_rp": "Int8",
    "job_end_reason_employed_code_sp": "Int8",
    "job_end_reason_unemployed_code_rp": "Int8",
    "job_end_reason_unemployed_code_sp": "Int8",
    "food_at_home_nominal_annual": "float64",
    "food_away_nominal_annual": "float64",
    "food_stamps_net_nominal_annual": "float64",
    "food_at_home_assignment_status": "string",
    "food_away_assignment_status": "string",
    "food_stamps_assignment_status": "string",
    "food_stamps_reference_period": "string",
    "food_stamps_annualisation_factor": "float64",
    "food_cash_nominal_annual": "float64",
    "food_cash_valid": "Int8",
    "food_cash_positive": "Int8",
    "food_total_including_assistance_nominal_annual": "float64",
}
ENRICHMENT_COLUMNS = tuple(ENRICHMENT_DTYPES)

_BLOCK_BYTES = 64 << 20  # rows are read in blocks of about this size


# ---------------------------------------------------------------------------------------------
# Stata .dta (formats 117-119) read strictly forward


class _Source:
    """A forward-only byte source that counts its position and can hash what passes through."""

    def __init__(self, fh: IO[bytes], where: str, digest: Any = None) -> None:
        self._fh = fh
        self.where = where
        self.pos = 0
        self.digest = digest

    def read(self, n: int) -> bytes:
        parts = []
        left = n
        while left > 0:
            piece = self._fh.read(min(left, 1 << 24))
            if not piece:
                break
            parts.append(piece)
            left -= len(piece)
        data = b"".join(parts) if len(parts) != 1 else parts[0]
        if len(data) != n:
            raise DataError(
                f"{self.where}: file ends early (wanted {n} bytes at offset {self.pos}); "
                "the archive is truncated, download it again"
            )
        self.pos += n
        if self.digest is not None:
            self.digest.update(data)
        return data

    def skip(self, n: int) -> None:
        while n > 0:
            step = min(n, 1 << 24)
            self.read(step)
            n -= step

    def drain(self) -> None:
        while True:
            piece = self._fh.read(1 << 24)
            if not piece:
                return
            self.pos += len(piece)
            if self.digest is not None:
                self.digest.update(piece)


# Stata storage types (117+): 1-2045 fixed strings, 32768 strL, then the numeric types.
_NUMERIC = {65526: "f8", 65527: "f4", 65528: "i4", 65529: "i2", 65530: "i1"}
_STRL = 32768
_FLOAT_MAX = struct.unpack("<f", b"\xff\xff\xff\x7e")[0]
_DOUBLE_MAX = struct.unpack("<d", b"\xff\xff\xff\xff\xff\xff\xdf\x7f")[0]
# Largest non-missing value per type; larger ones are Stata missing values (., .a-.z).
_VALID_MAX = {"i1": 100, "i2": 32740, "i4": 2147483620, "f4": _FLOAT_MAX, "f8": _DOUBLE_MAX}


class DtaStream:
    """Header, rows and value labels of a Stata 13+ (.dta 117-119) file, read in one pass.

    Construct, call `rows(columns)` once (optional), then `finish()` for the value labels."""

    def __init__(self, source: _Source) -> None:
        self._src = source
        self.where = source.where
        if source.read(11) != b"<stata_dta>":
            raise DataError(
                f"{self.where}: not a Stata 13+ .dta file (format 117-119); download the "
                f"original file again from {SOURCE_URL}"
            )
        self._expect(b"<header><release>")
        try:
            self.release = int(source.read(3))
        except ValueError:
            raise DataError(f"{self.where}: unreadable Stata release number") from None
        if self.release not in (117, 118, 119):
            raise DataError(f"{self.where}: Stata format {self.release} is not supported (117-119)")
        self._expect(b"</release><byteorder>")
        order = source.read(3)
        if order not in (b"LSF", b"MSF"):
            raise DataError(f"{self.where}: unknown byte order {order!r}")
        self.order = "<" if order == b"LSF" else ">"
        endian = "little" if self.order == "<" else "big"
        self._expect(b"</byteorder><K>")
        self.nvar = int.from_bytes(source.read(4 if self.release == 119 else 2), endian)
        self._expect(b"</K><N>")
        self.nobs = int.from_bytes(source.read(4 if self.release == 117 else 8), endian)
        self._expect(b"</N><label>")
        self.encoding = "latin-1" if self.release == 117 else "utf-8"
        length = int.from_bytes(source.read(1 if self.release == 117 else 2), endian)
        self.data_label = source.read(length).decode(self.encoding, errors="replace")
        self._expect(b"</label><timestamp>")
        source.skip(source.read(1)[0])
        self._expect(b"</timestamp></header><map>")
        offsets = struct.unpack(f"{self.order}14Q", source.read(112))
        self._value_labels_at = offsets[11]
        self._expect(b"</map>")
        head_at = source.pos
        head = source.read(offsets[9] - head_at)  # variable types ... characteristics
        name_len = 33 if self.release == 117 else 129
        label_len = 81 if self.release == 117 else 321
        types = np.frombuffer(
            self._section(head, head_at, offsets[2], b"<variable_types>", 2 * self.nvar),
            dtype=f"{self.order}u2",
        )
        self.types = [int(t) for t in types]
        self.names = self._strings(head, head_at, offsets[3], b"<varnames>", name_len)
        self.label_sets = self._strings(
            head, head_at, offsets[6], b"<value_label_names>", name_len
        )
        self.variable_labels = self._strings(
            head, head_at, offsets[7], b"<variable_labels>", label_len
        )
        self._expect(b"<data>")
        widths = [t if t <= 2045 else 8 if t in (_STRL, 65526) else int(_NUMERIC[t][1])
                  for t in self.types]
        self._offsets = np.concatenate([[0], np.cumsum(widths)]).astype(int).tolist()
        self.row_size = self._offsets[-1]
        self._rows_started = False
        self._rows_read = 0

    def _expect(self, tag: bytes) -> None:
        got = self._src.read(len(tag))
        if got != tag:
            raise DataError(f"{self.where}: damaged Stata file (expected {tag!r}, got {got!r})")

    def _section(self, head: bytes, head_at: int, at: int, tag: bytes, size: int) -> bytes:
        start = at - head_at
        if head[start : start + len(tag)] != tag:
            raise DataError(f"{self.where}: damaged Stata file (no {tag!r} section)")
        return head[start + len(tag) : start + len(tag) + size]

    def _strings(self, head: bytes, head_at: int, at: int, tag: bytes, width: int) -> list[str]:
        raw = self._section(head, head_at, at, tag, width * self.nvar)
        return [
            raw[i * width : (i + 1) * width].split(b"\0", 1)[0].decode(
                self.encoding, errors="replace"
            )
            for i in range(self.nvar)
        ]

    def kind(self, name: str) -> str:
        """'number', 'string' (fixed width) or 'strL' for a variable name in the file."""
        t = self.types[self.names.index(name)]
        return "number" if t in _NUMERIC else "strL" if t == _STRL else "string"

    def rows(
        self, columns: list[str], chunk_rows: int = 250_000
    ) -> Iterator[dict[str, np.ndarray]]:
        """Blocks of rows as {name: values}: numbers float64 (Stata missing -> NaN), fixed-width
        strings as object arrays of str, strL variables as int64 references (0: empty) that
        `finish(strls=True)` resolves through `strl_text` (their text sits after the data)."""
        if self._rows_started:
            raise RuntimeError("DtaStream.rows() can run once")
        self._rows_started = True
        index = {name: i for i, name in enumerate(self.names)}
        fields = []
        for name in columns:
            i = index[name]
            t = self.types[i]
            if t == _STRL:
                fmt = "V8"
            else:
                fmt = f"{self.order}{_NUMERIC[t]}" if t in _NUMERIC else f"S{t}"
            fields.append((name, fmt, self._offsets[i]))
        record = np.dtype(
            {
                "names": [f"f{k}" for k in range(len(fields))],
                "formats": [f[1] for f in fields],
                "offsets": [f[2] for f in fields],
                "itemsize": max(self.row_size, 1),
            }
        )
        per_block = max(1, min(int(chunk_rows), _BLOCK_BYTES // max(self.row_size, 1)))
        while self._rows_read < self.nobs:
            n = min(per_block, self.nobs - self._rows_read)
            view = np.frombuffer(self._src.read(n * self.row_size), dtype=record, count=n)
            out: dict[str, np.ndarray] = {}
            for k, (name, fmt, _) in enumerate(fields):
                values = view[f"f{k}"]
                if fmt == "V8":
                    out[name] = self._strl_refs(values)
                    continue
                if fmt.startswith("S"):
                    out[name] = np.array(
                        [v.split(b"\0", 1)[0].decode(self.encoding, errors="replace")
                         for v in values],
                        dtype=object,
                    )
                    continue
                numbers = values.astype(np.float64)
                kind = fmt[1:]
                limit = _VALID_MAX[kind]
                missing = numbers > limit
                if kind in ("f4", "f8"):
                    missing |= np.isnan(numbers) | (numbers < -limit)
                numbers[missing] = np.nan
                out[name] = numbers
            self._rows_read += n
            yield out

    def _strl_refs(self, raw: np.ndarray) -> np.ndarray:
        """(v, o) of each 8-byte strL field as one int64, v * 2**40 + o (117: v 4 bytes, o 4;
        118: v 2, o 6; 119: v 3, o 5; each in the file's byte order)."""
        b = np.frombuffer(raw.tobytes(), dtype=np.uint8).reshape(-1, 8).astype(np.uint64)
        v_bytes = {117: 4, 118: 2, 119: 3}[self.release]

        def number(part: np.ndarray) -> np.ndarray:
            if self.order == ">":
                part = part[:, ::-1]
            weights = np.left_shift(np.uint64(1), 8 * np.arange(part.shape[1], dtype=np.uint64))
            return (part * weights).sum(axis=1)

        v, o = number(b[:, :v_bytes]), number(b[:, v_bytes:])
        return (v * np.uint64(1 << 40) + o).astype(np.int64)

    def _strl_table(self) -> dict[int, str]:
        """The <strls> section: reference -> text (binary strLs decoded as text too)."""
        self._expect(b"<strls>")
        endian = "little" if self.order == "<" else "big"
        o_bytes = 4 if self.release == 117 else 8
        table: dict[int, str] = {}
        while True:
            tag = self._src.read(3)
            if tag == b"</s":
                self._expect(b"trls>")
                return table
            if tag != b"GSO":
                raise DataError(f"{self.where}: damaged strL table ({tag!r})")
            v = int.from_bytes(self._src.read(4), endian)
            o = int.from_bytes(self._src.read(o_bytes), endian)
            kind = self._src.read(1)[0]
            length = int.from_bytes(self._src.read(4), endian)
            data = self._src.read(length)
            if kind == 130:  # ASCII/UTF-8, null-terminated
                data = data.split(b"\0", 1)[0]
            table[v * (1 << 40) + o] = data.decode(self.encoding, errors="replace")

    def finish(self, labels: bool = True, strls: bool = False) -> dict[str, dict[int, str]]:
        """Read past the data; return {variable: {code: label}} for variables with a value-label
        set (empty if `labels` is False), then read to the end of the member. With `strls`, the
        strL texts are kept in `strl_text` (reference -> text; reference 0 is the empty text)."""
        self._rows_started = True
        self._src.skip((self.nobs - self._rows_read) * self.row_size)
        self._rows_read = self.nobs
        self.strl_text: dict[int, str] = {0: ""}
        if strls:
            self._expect(b"</data>")
            self.strl_text.update(self._strl_table())
        tables: dict[str, dict[int, str]] = {}
        if labels:
            self._src.skip(self._value_labels_at - self._src.pos)
            tables = self._value_label_tables()
        self._src.drain()
        by_var = {}
        for name, set_name in zip(self.names, self.label_sets, strict=True):
            if set_name and set_name in tables:
                by_var[name] = tables[set_name]
        return by_var

    def _value_label_tables(self) -> dict[str, dict[int, str]]:
        self._expect(b"<value_labels>")
        name_len = 33 if self.release == 117 else 129
        tables: dict[str, dict[int, str]] = {}
        while True:
            tag = self._src.read(5)
            if tag == b"</val":
                self._expect(b"ue_labels>")
                return tables
            if tag != b"<lbl>":
                raise DataError(f"{self.where}: damaged value-label table ({tag!r})")
            length = struct.unpack(f"{self.order}i", self._src.read(4))[0]
            name = self._src.read(name_len).split(b"\0", 1)[0].decode(self.encoding, "replace")
            self._src.read(3)
            table = self._src.read(length)
            self._expect(b"</lbl>")
            n, text_len = struct.unpack(f"{self.order}ii", table[:8])
            offs = np.frombuffer(table, dtype=f"{self.order}i4", count=n, offset=8)
            vals = np.frombuffer(table, dtype=f"{self.order}i4", count=n, offset=8 + 4 * n)
            text = table[8 + 8 * n : 8 + 8 * n + text_len]
            labels = {}
            for o, v in zip(offs.tolist(), vals.tolist(), strict=True):
                end = text.find(b"\0", o)
                labels[int(v)] = text[o : end if end >= 0 else len(text)].decode(
                    self.encoding, errors="replace"
                )
            tables[name] = labels


@dataclass
class _Member:
    stream: DtaStream
    source: _Source
    zip_path: Path
    member: str
    single_member: bool


@contextmanager
def open_member(zip_path: Path, member: str, what: str) -> Iterator[_Member]:
    """The named .dta member of a ZIP (matched by file name, any folder inside the archive) as a
    DtaStream; while reading, the bytes feed the spec-1.1 fingerprint of a one-member ZIP."""
    if not zip_path.is_file():
        raise DataError(
            f"{zip_path}: {what} not found; download it from {SOURCE_URL} and keep it compressed "
            "at that path"
        )
    try:
        zf = zipfile.ZipFile(zip_path)
    except zipfile.BadZipFile:
        raise DataError(f"{zip_path}: not a readable ZIP archive; download it again") from None
    with zf:
        files = [i for i in zf.infolist() if not i.is_dir()]
        matches = [i for i in files if Path(i.filename).name.lower() == member.lower()]
        if not matches:
            listing = ", ".join(i.filename for i in files[:5]) or "nothing"
            raise DataError(
                f"{zip_path}: member {member} not found in the archive (it holds {listing}); "
                f"download the original archive from {SOURCE_URL}"
            )
        info = matches[0]
        digest = None
        if len(files) == 1:
            digest = hashlib.sha256()
            digest.update(info.filename.encode("utf-8") + b"\0")
            digest.update(info.file_size.to_bytes(8, "big"))
        where = f"{zip_path}!{info.filename}"
        with zf.open(info) as fh:
            source = _Source(fh, where, digest)
            try:
                yield _Member(DtaStream(source), source, zip_path, info.filename, len(files) == 1)
            except zipfile.BadZipFile as exc:
                raise DataError(f"{where}: damaged archive ({exc}); download it again") from None


def _fingerprint(member: _Member) -> str:
    """The spec-1.1 fingerprint, from the bytes already read when the ZIP has one member."""
    if member.single_member and member.source.digest is not None:
        return member.source.digest.hexdigest()
    return input_sha256(member.zip_path)


def _column_map(stream: DtaStream, path: str) -> dict[str, str]:
    """lower-case name -> name in the file; names equal up to case are an error."""
    out: dict[str, str] = {}
    for name in stream.names:
        low = name.lower()
        if low in out:
            raise DataError(f"{path}: variables {out[low]} and {name} differ only by case")
        out[low] = name
    return out


# ---------------------------------------------------------------------------------------------
# PSID-SHELF long file


def derive_subsample(lineage: pd.Series) -> pd.Series:
    out = pd.Series("unknown", index=lineage.index, dtype="string")
    for name, low, high in SUBSAMPLE_RANGES:
        out[((lineage >= low) & (lineage <= high)).fillna(False)] = name
    return out


def harmonize_occupation(frame: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Broad occupation group and the variable it came from (first scheme whose code maps)."""
    group = pd.Series(pd.NA, index=frame.index, dtype="string")
    source = pd.Series(pd.NA, index=frame.index, dtype="string")
    for column, ranges in OCC_RANGES.items():
        codes = frame[column]
        mapped = pd.Series(pd.NA, index=frame.index, dtype="string")
        for low, high, name in ranges:
            mapped[((codes >= low) & (codes <= high)).fillna(False)] = name
        take = group.isna() & mapped.notna()
        group[take] = mapped[take]
        source[take] = column
    return group, source


def _as_codes(values: np.ndarray, column: str, where: str) -> pd.Series:
    series = pd.Series(values)
    if series.dtype == object:
        raise DataError(f"{where}: column {column} is text; expected numeric codes")
    whole = series.dropna()
    odd = whole != np.round(whole)
    if odd.any():
        raise DataError(f"{where}: column {column} has non-integer code {whole[odd].iloc[0]}")
    return series.round().astype("Int64")


def _label_categorical(codes: pd.Series, labels: dict[int, str]) -> pd.Categorical:
    """Codes -> label text as a categorical with the codebook's labels as categories in code
    order (the reference's dtype)."""
    return pd.Categorical(codes.map(labels), categories=[labels[k] for k in sorted(labels)])


def _shelf_chunk(raw: dict[str, np.ndarray], names: dict[str, str], kinds: dict[str, str],
                 where: str) -> pd.DataFrame:
    """One block of the SHELF file -> every column (file order, lower-case names, typed) and
    the derived columns (module docstring). `kinds`: lower name -> int/float/string/strl."""
    out: dict[str, Any] = {}
    for column, kind in kinds.items():
        values = raw[names[column]]
        if column in KEY_COLUMNS:
            series = pd.Series(values)
            bad = series.isna() | (series != np.round(series))
            if bad.any():
                raise DataError(f"{where}: column {column} is missing or not an integer in some "
                                "row")
            out[column] = series.astype("int64")
        elif column in CODE_COLUMNS:
            out[column] = _as_codes(values, column, where)
        elif kind == "strl":  # references; the text is resolved once the file is read
            out[column] = pd.Series(values, dtype="int64")
        elif kind == "string":
            out[column] = pd.Series(values, dtype="string")
        elif kind == "int" and column not in VALUE_COLUMNS:
            out[column] = pd.Series(values).astype("Int64")
        else:
            out[column] = pd.Series(values, dtype="float64")
    year = out["year"]
    odd = ~year.isin(EXPECTED_WAVES)
    if odd.any():
        raise DataError(
            f"{where}: wave {int(year[odd].iloc[0])} is not in the PSID wave schedule "
            "(1968-1997 annual, 1999-2021 biennial); check the file against the release"
        )
    frame = pd.DataFrame(out)
    frame["subsample"] = derive_subsample(frame["lineage"])
    # As the reference: sampstat != 0, where a missing sampstat also differs from 0.
    frame["sample_person"] = frame["sampstat"].astype("float64").ne(0).astype(bool)
    frame["is_reference_person"] = frame["rel"].eq(1).fillna(False).astype(bool)
    frame["income_year"] = (frame["year"] - 1).astype("Int64")
    for column, labels in LABELS.items():
        codes = frame[column]
        unknown = codes.notna() & ~codes.isin(list(labels))
        if unknown.any():
            raise DataError(
                f"{where}: column {column} has code {codes[unknown].iloc[0]} outside the codebook "
                f"(valid: {sorted(labels)})"
            )
        frame[f"{column}_label"] = _label_categorical(codes, labels)
    group, source = harmonize_occupation(frame)
    frame["occ_major_harmonized"] = pd.Categorical(group.astype(object).where(group.notna()),
                                                   categories=list(OCC_LABELS))
    frame["occ_source"] = source
    frame["occ_major_harmonized_label"] = pd.Categorical(
        group.map(OCC_LABELS).astype(object).where(group.notna()),
        categories=list(OCC_LABELS.values()))
    return frame


@dataclass
class _ShelfPass:
    rows: int
    persons: int
    rows_by_wave: dict[int, int]
    subsamples: dict[str, int]
    current: pd.DataFrame  # id, year, fuid, rel, demo_age_gen, demo_sex, demo_sex_label
    earnings_at_topcode: int
    columns: list[str]  # every SHELF column, lower-case, in file order
    strl_columns: list[str]
    strl_text: dict[int, str]
    scalars: dict[str, Any]
    file_labels: dict[str, dict[int, str]]
    data_label: str
    release: int
    nvar: int
    sha256: str
    member: str


def _scalar(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    number = float(value)
    return int(number) if number.is_integer() else number


def _shelf_names(stream: DtaStream) -> dict[str, str]:
    """lower-case -> file name of the SHELF variables; a required one missing is an error."""
    names = _column_map(stream, stream.where)
    absent = [c for c in REQUIRED_COLUMNS if c not in names]
    if absent:
        raise DataError(
            f"{stream.where}: column {absent[0]} not found ({len(absent)} required SHELF "
            f"variables missing); download the PSID-SHELF V2 long file from {SOURCE_URL}"
        )
    return names


def _kinds(stream: DtaStream, names: dict[str, str]) -> dict[str, str]:
    """lower name -> int / float / string / strl, in file order."""
    out = {}
    for low, name in names.items():
        kind = stream.kind(name)
        if kind == "number":
            t = stream.types[stream.names.index(name)]
            kind = "float" if _NUMERIC[t][0] == "f" else "int"
        out[low] = {"strL": "strl"}.get(kind, kind)
    return out


def read_shelf(zip_path: Path, target: Path, chunk_rows: int) -> _ShelfPass:
    """Stream the SHELF long member, every column, into `target` (parquet, one row group per
    block); strL columns hold references there until `_resolve_strls`."""
    with open_member(zip_path, LONG_MEMBER, "PSID-SHELF long archive") as member:
        stream = member.stream
        where = stream.where
        names = _shelf_names(stream)
        kinds = _kinds(stream, names)
        strl_columns = [c for c, k in kinds.items() if k == "strl"]
        scalars = [c for c in METADATA_SCALARS if c in names]
        wanted = list(stream.names)
        keys: list[np.ndarray] = []
        current: list[pd.DataFrame] = []
        waves: Counter[int] = Counter()
        subsamples: Counter[str] = Counter()
        first: dict[str, Any] = {}
        topcoded = 0

        def chunks() -> Iterator[pd.DataFrame]:
            nonlocal first, topcoded
            for raw in stream.rows(wanted, chunk_rows):
                if not first and len(raw[wanted[0]]):
                    first = {c: _scalar(raw[names[c]][0]) for c in scalars}
                frame = _shelf_chunk(raw, names, kinds, where)
                keys.append((frame["id"] * 10_000 + frame["year"]).to_numpy())
                waves.update(frame["year"].value_counts().to_dict())
                subsamples.update(frame["subsample"].value_counts().to_dict())
                topcoded += int(frame["earn_tot_nd"].eq(EARNINGS_TOPCODE).sum())
                now = frame["panel_current"].eq(1).fillna(False) & frame["fuid"].notna()
                current.append(
                    frame.loc[now, ["id", "year", "fuid", "rel", "demo_age_gen", "demo_sex",
                                    "demo_sex_label"]]
                )
                yield frame

        written = write_parquet_chunks(target, chunks(), where)
        file_labels = stream.finish(labels=True, strls=bool(strl_columns))
        strl_text = stream.strl_text
        sha = _fingerprint(member)
    if not written:
        raise DataError(f"{where}: the SHELF file holds no rows")
    for column in strl_columns:
        if column in first and first[column] is not None:
            first[column] = strl_text.get(int(first[column]))
    all_keys = np.concatenate(keys)
    unique_keys, counts = np.unique(all_keys, return_counts=True)
    if (counts > 1).any():
        key = int(unique_keys[counts > 1][0])
        raise DataError(f"{where}: person id {key // 10_000} appears twice in wave {key % 10_000}")
    missing = [w for w in EXPECTED_WAVES if w not in waves]
    if missing:
        raise DataError(
            f"{where}: wave(s) {', '.join(map(str, missing))} of the PSID schedule are missing "
            "(expected 1968-1997 annual and 1999-2021 biennial); the file is incomplete"
        )
    lower_labels = {k.lower(): v for k, v in file_labels.items()}
    return _ShelfPass(
        rows=len(all_keys),
        persons=int(np.unique(unique_keys // 10_000).size),
        rows_by_wave={int(w): int(waves[w]) for w in sorted(waves)},
        subsamples={str(k): int(v) for k, v in sorted(subsamples.items())},
        current=pd.concat(current, ignore_index=True),
        earnings_at_topcode=topcoded,
        columns=list(kinds),
        strl_columns=strl_columns,
        strl_text=strl_text,
        scalars=first,
        file_labels=lower_labels,
        data_label=stream.data_label,
        release=stream.release,
        nvar=stream.nvar,
        sha256=sha,
        member=member.member,
    )


def _fixed_categories(frame: pd.DataFrame) -> pd.DataFrame:
    """Label columns read back from a row group: the codebook's full category list again."""
    for column, labels in LABELS.items():
        frame[f"{column}_label"] = pd.Categorical(
            frame[f"{column}_label"].astype(object), categories=[labels[k] for k in sorted(labels)])
    frame["occ_major_harmonized"] = pd.Categorical(frame["occ_major_harmonized"].astype(object),
                                                   categories=list(OCC_LABELS))
    frame["occ_major_harmonized_label"] = pd.Categorical(
        frame["occ_major_harmonized_label"].astype(object), categories=list(OCC_LABELS.values()))
    return frame


def _resolve_strls(frame: pd.DataFrame, shelf: _ShelfPass, where: str) -> None:
    """strL references -> their text (in place); a reference without text is an error."""
    for column in shelf.strl_columns:
        refs = frame[column]
        text = refs.map(shelf.strl_text)
        lost = text.isna() & refs.notna()
        if lost.any():
            raise DataError(f"{where}: strL {column} refers to text missing from the file's strL "
                            "table; the file is damaged, download it again")
        frame[column] = text.astype("string")


def compare_labels(file_labels: dict[str, dict[int, str]]) -> dict[str, Any]:
    """Per label variable: 'same', 'absent' (no value labels in the file) or the codes whose
    text differs from the spec ([spec text, file text])."""
    out: dict[str, Any] = {}
    for column, spec in LABELS.items():
        found = file_labels.get(column)
        if not found:
            out[column] = "absent"
            continue
        differ = {str(code): [text, found.get(code)] for code, text in spec.items()
                  if found.get(code) != text}
        out[column] = differ or "same"
    return out


# ---------------------------------------------------------------------------------------------
# Complete Main Study variable map

CONCEPT_ROLES: dict[str, tuple[str, ...]] = {
    "job_end_reason_employed": ("rp", "sp"),
    "job_end_reason_unemployed": ("rp", "sp"),
    "annual_hours": ("rp", "sp"),
    "food_at_home": ("family",),
    "food_away": ("family",),
    "food_stamps": ("family",),
}
_MEASURED = ("annual_hours", "food_at_home", "food_away", "food_stamps")
_FOOD = ("food_at_home", "food_away", "food_stamps")
MAP_COLUMNS = (
    "concept", "role", "survey_year", "variable", "accuracy_variable", "topcode",
    "reference_period", "annualisation_factor",
)  # fmt: skip
STAMP_PERIODS = {"previous_calendar_year": 1.0, "last_month": 12.0}


@dataclass(frozen=True)
class MainStudyVar:
    concept: str
    role: str
    wave: int
    variable: str
    accuracy: str | None
    topcode: int | None
    reference_period: str | None
    factor: float


def read_variable_map(path: Path) -> dict[tuple[str, str, int], MainStudyVar]:
    """(concept, role, wave) -> V-variables, validated against spec 1.10."""
    if not path.is_file():
        raise ConfigError(
            f"{path}: Complete Main Study variable map not found; point raw.main_study_vars at a "
            f"CSV like {DEFAULT_VARIABLE_MAP.name} (columns {', '.join(MAP_COLUMNS)})"
        )
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    table.columns = [c.strip() for c in table.columns]
    for column in MAP_COLUMNS:
        if column not in table.columns:
            raise ConfigError(f"{path}: column {column!r} not found; need {', '.join(MAP_COLUMNS)}")
    out: dict[tuple[str, str, int], MainStudyVar] = {}
    for line, row in enumerate(table.to_dict("records"), start=2):
        text = {k: str(row[k]).strip() for k in MAP_COLUMNS}
        at = f"{path}:{line}"
        concept, role = text["concept"], text["role"]
        if concept not in CONCEPT_ROLES:
            raise ConfigError(f"{at}: unknown concept {concept!r}; use {sorted(CONCEPT_ROLES)}")
        if role not in CONCEPT_ROLES[concept]:
            raise ConfigError(f"{at}: role {role!r} is not one of {CONCEPT_ROLES[concept]}")
        try:
            wave = int(text["survey_year"])
        except ValueError:
            raise ConfigError(f"{at}: survey_year {text['survey_year']!r} is not a year") from None
        if wave not in EXPECTED_WAVES or wave > LAST_ENRICHMENT_WAVE:
            raise ConfigError(
                f"{at}: survey_year {wave} is outside the enrichment waves 1968-1992 (spec 1.10)"
            )
        if concept in _FOOD and wave in FOOD_UNAVAILABLE_WAVES:
            raise ConfigError(
                f"{at}: {concept} in wave {wave}: spec 1.10 has no food measure in 1968, 1973, "
                "1988 and 1989"
            )
        if not text["variable"]:
            raise ConfigError(f"{at}: variable is empty")
        accuracy = text["accuracy_variable"] or None
        topcode: int | None = None
        if concept in _MEASURED:
            if accuracy is None:
                raise ConfigError(f"{at}: {concept} needs an accuracy_variable")
            try:
                topcode = int(text["topcode"])
            except ValueError:
                raise ConfigError(f"{at}: topcode {text['topcode']!r} is not a number") from None
        period = text["reference_period"] or None
        factor = 1.0
        if concept == "food_stamps":
            if period not in STAMP_PERIODS:
                raise ConfigError(
                    f"{at}: reference_period {period!r} must be one of {sorted(STAMP_PERIODS)}"
                )
            factor = STAMP_PERIODS[period]
            given = text["annualisation_factor"]
            if given and float(given) != factor:
                raise ConfigError(
                    f"{at}: annualisation_factor {given} does not match reference_period {period} "
                    f"(x{factor:g})"
                )
        key = (concept, role, wave)
        if key in out:
            raise ConfigError(f"{at}: {concept} {role} {wave} is listed twice")
        out[key] = MainStudyVar(concept, role, wave, text["variable"], accuracy, topcode, period,
                                factor)
    for concept, role, wave in list(out):
        pair = {"job_end_reason_employed": "job_end_reason_unemployed",
                "job_end_reason_unemployed": "job_end_reason_employed"}.get(concept)
        if pair and (pair, role, wave) not in out:
            raise ConfigError(f"{path}: {concept} {role} {wave} has no {pair} partner")
        if concept in _FOOD and any((c, "family", wave) not in out for c in _FOOD):
            raise ConfigError(f"{path}: wave {wave} lacks one of {', '.join(_FOOD)}")
    return out


# ---------------------------------------------------------------------------------------------
# Complete Main Study file and the enrichment


@dataclass
class _MainStudyPass:
    values: pd.DataFrame  # index person id; one column per V-variable of the map
    where: str
    id_source: str
    id_convention_mismatches: int | None
    variable_labels: dict[str, str]
    rows: int
    nvar: int
    release: int
    sha256: str
    member: str


def _main_study_names(
    stream: DtaStream, varmap: dict[tuple[str, str, int], MainStudyVar]
) -> tuple[dict[str, str], list[str], str]:
    """(upper-case -> file name, the map's variables upper-cased, person-id source); a variable
    of the map or the person id missing is an error."""
    where = stream.where
    names = {k.upper(): v for k, v in _column_map(stream, where).items()}
    needed: list[str] = []
    for spec in varmap.values():
        for variable in (spec.variable, spec.accuracy):
            if variable is None or variable.upper() in needed:
                continue
            if variable.upper() not in names:
                raise DataError(
                    f"{where}: column {variable} ({spec.concept} {spec.role} {spec.wave}) not "
                    "found; check the variable map (raw.main_study_vars) against this file"
                )
            needed.append(variable.upper())
    if "ID" in names:
        id_source = "ID"
    elif "ER30001" in names and "ER30002" in names:
        id_source = "ER30001*1000+ER30002"
    else:
        raise DataError(
            f"{where}: no person id: columns ID or ER30001 and ER30002 not found; download "
            f"the Complete Main Study file from {SOURCE_URL}"
        )
    return names, needed, id_source


def preflight(
    long_zip: Path, main_zip: Path, varmap: dict[tuple[str, str, int], MainStudyVar]
) -> None:
    """Check both members' headers (names, required variables) before the long read."""
    with open_member(long_zip, LONG_MEMBER, "PSID-SHELF long archive") as member:
        _shelf_names(member.stream)
    with open_member(main_zip, MAIN_STUDY_MEMBER, "PSID Complete Main Study archive") as member:
        _main_study_names(member.stream, varmap)


def read_main_study(
    zip_path: Path, varmap: dict[tuple[str, str, int], MainStudyVar]
) -> _MainStudyPass:
    with open_member(zip_path, MAIN_STUDY_MEMBER, "PSID Complete Main Study archive") as member:
        stream = member.stream
        where = stream.where
        names, needed, id_source = _main_study_names(stream, varmap)
        id_columns = [c for c in ("ID", "ER30001", "ER30002") if c in names]
        columns = [names[c] for c in [*id_columns, *needed]]
        blocks: dict[str, list[np.ndarray]] = {c: [] for c in columns}
        for raw in stream.rows(columns):
            for c in columns:
                blocks[c].append(raw[c])
        labels = dict(zip(stream.names, stream.variable_labels, strict=True))
        stream.finish(labels=False)
        sha = _fingerprint(member)
        rows, nvar, release = stream.nobs, stream.nvar, stream.release
    data = {c.upper(): np.concatenate(blocks[c]) if blocks[c] else np.array([]) for c in columns}
    convention = None
    mismatches = None
    if "ER30001" in data and "ER30002" in data:
        convention = data["ER30001"] * 1000 + data["ER30002"]
    if id_source == "ID":
        person = data["ID"]
        if convention is not None:
            both = ~np.isnan(person) & ~np.isnan(convention)
            mismatches = int((person[both] != convention[both]).sum())
    else:
        person = convention
    if np.isnan(person).any() or (person != np.round(person)).any():
        raise DataError(f"{where}: person id ({id_source}) is missing or fractional in some row")
    ids = person.astype(np.int64)
    unique, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise DataError(f"{where}: person id {int(unique[counts > 1][0])} appears twice")
    values = pd.DataFrame({c: data[c] for c in needed}, index=pd.Index(ids, name="id"))
    return _MainStudyPass(
        values=values,
        where=where,
        id_source=id_source,
        id_convention_mismatches=mismatches,
        variable_labels={c: labels[names[c]] for c in needed},
        rows=rows,
        nvar=nvar,
        release=release,
        sha256=sha,
        member=member.member,
    )


def family_roles(current: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(year, fuid) -> reference person and spouse; and the ambiguous family-waves (two rel 1 or
    two rel 2 members), which get no roles."""
    roles = current.loc[current["rel"].isin([1, 2])]
    dup = roles.duplicated(["year", "fuid", "rel"], keep=False)
    ambiguous = roles.loc[dup, ["year", "fuid"]].drop_duplicates().reset_index(drop=True)
    if len(ambiguous):
        marked = roles.merge(ambiguous.assign(_amb=True), on=["year", "fuid"], how="left")
        roles = marked.loc[marked["_amb"].isna()].drop(columns="_amb")
    fields = {"id": "person_id", "demo_age_gen": "demo_age_gen", "demo_sex": "demo_sex",
              "demo_sex_label": "demo_sex_label"}

    def pick(rel: int, suffix: str) -> pd.DataFrame:
        part = roles.loc[roles["rel"] == rel, ["year", "fuid", *fields]]
        names = {k: f"{v}_{suffix}" for k, v in fields.items()}
        return part.rename(columns=names)

    reference = pick(1, "rp").rename(columns={"person_id_rp": "reference_person_id"})
    spouse = pick(2, "sp").rename(columns={"person_id_sp": "spouse_person_id"})
    families = reference.merge(spouse, on=["year", "fuid"], how="left", validate="one_to_one")
    return families, ambiguous


def _accuracy_checked(
    values: np.ndarray, accuracy: np.ndarray, topcode: int
) -> tuple[np.ndarray, np.ndarray]:
    """Valid value (else NaN) and the assignment status of each row."""
    valid = (values >= 0) & (values < topcode) & np.isin(accuracy, VALID_ACCURACY_CODES)
    status = np.full(len(values), INVALID_STATUS, dtype=object)
    for code, name in ACCURACY_STATUS.items():
        status[valid & (accuracy == code)] = name
    return np.where(valid, values, np.nan), status


def _check_family_values(
    fuid: np.ndarray, source: pd.DataFrame, wave: int, where: str
) -> None:
    """Family variables must be equal across the current members of a family-wave."""
    if source.empty or not len(source.columns):
        return
    grouped = source.groupby(fuid)
    spread = (grouped.max() != grouped.min()) & grouped.max().notna()
    if spread.to_numpy().any():
        family = spread.any(axis=1).idxmax()
        variable = spread.columns[spread.loc[family].to_numpy()][0]
        raise DataError(
            f"{where}: {variable} differs across the current members of family {family} in "
            f"wave {wave}; family variables must repeat on every member's record"
        )


def _wave_values(
    wave: int, specs: dict[tuple[str, str], MainStudyVar], source: pd.DataFrame, where: str,
    odd_codes: dict[str, int],
) -> dict[str, Any]:
    """Enrichment columns of one wave's current members from their Complete Main Study values;
    `odd_codes` collects counts of job-end codes outside the documented 0-9."""
    out: dict[str, Any] = {}
    if ("annual_hours", "rp") in specs or ("annual_hours", "sp") in specs:
        out["labor_reference_year"] = wave - 1
    for role in ("rp", "sp"):
        spec = specs.get(("annual_hours", role))
        if spec is not None:
            acc = source[spec.accuracy].to_numpy()
            hours, status = _accuracy_checked(
                source[spec.variable].to_numpy(), acc, int(spec.topcode or 0)
            )
            out[f"annual_hours_{role}"] = hours
            out[f"annual_hours_valid_{role}"] = (~np.isnan(hours)).astype(np.int8)
            out[f"annual_hours_accuracy_code_{role}"] = acc
            out[f"annual_hours_assignment_status_{role}"] = status
            out[f"annual_work_status_{role}"] = np.where(
                np.isnan(hours), np.nan, (hours > 0).astype(float)
            )
        employed = specs.get(("job_end_reason_employed", role))
        unemployed = specs.get(("job_end_reason_unemployed", role))
        out[f"job_end_reason_ascertained_{role}"] = np.int8(employed is not None)
        for route, spec in (("employed", employed), ("unemployed", unemployed)):
            if spec is None:
                continue
            codes = source[spec.variable].to_numpy()
            bad = ~np.isnan(codes) & (codes != np.round(codes))
            if bad.any():
                raise DataError(
                    f"{where}: column {spec.variable} ({spec.concept} {role} {wave}) has "
                    f"non-integer code {codes[bad][0]:g}"
                )
            # Kept as published, as the reference keeps them; codes outside 0-9 are counted.
            odd_codes[f"{spec.variable} ({spec.concept} {role} {wave})"] = int(
                (~np.isnan(codes) & ~np.isin(codes, list(REASON_CODES))).sum())
            out[f"job_end_reason_{route}_code_{role}"] = codes
    if ("food_at_home", "family") in specs:
        food: dict[str, np.ndarray] = {}
        for concept in _FOOD:
            spec = specs[(concept, "family")]
            value, status = _accuracy_checked(
                source[spec.variable].to_numpy(),
                source[spec.accuracy].to_numpy(),
                int(spec.topcode or 0),
            )
            food[concept] = value * spec.factor
            out[f"{concept}_assignment_status"] = status
        stamps = specs[("food_stamps", "family")]
        cash = food["food_at_home"] + food["food_away"]
        out["food_at_home_nominal_annual"] = food["food_at_home"]
        out["food_away_nominal_annual"] = food["food_away"]
        out["food_stamps_net_nominal_annual"] = food["food_stamps"]
        out["food_stamps_reference_period"] = stamps.reference_period
        out["food_stamps_annualisation_factor"] = stamps.factor
        out["food_cash_nominal_annual"] = cash
        out["food_cash_valid"] = (~np.isnan(cash)).astype(np.int8)
        out["food_cash_positive"] = (cash > 0).astype(np.int8)
        out["food_total_including_assistance_nominal_annual"] = cash + food["food_stamps"]
    elif wave in FOOD_UNAVAILABLE_WAVES:
        for column in ("food_at_home_assignment_status", "food_away_assignment_status",
                       "food_stamps_assignment_status", "food_stamps_reference_period"):
            out[column] = "not_collected"
        out["food_cash_valid"] = np.int8(0)
        out["food_cash_positive"] = np.int8(0)
    return out


def enrichment_lookup(
    current: pd.DataFrame,
    main: _MainStudyPass,
    varmap: dict[tuple[str, str, int], MainStudyVar],
    where: str,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """ENRICHMENT_COLUMNS for every current member's (id, year), and counts for the metadata.
    `where` names the SHELF member (roles) and `main.where` the Complete Main Study member."""
    dup = current.duplicated(["id", "year"])
    if dup.any():
        row = current.loc[dup].iloc[0]
        raise DataError(f"{where}: person {row['id']} is current twice in wave {row['year']}")
    families, ambiguous = family_roles(current)
    lookup = current[["id", "year", "fuid"]].merge(
        families, on=["year", "fuid"], how="left", validate="many_to_one"
    )
    by_wave: dict[int, dict[tuple[str, str], MainStudyVar]] = {}
    for spec in varmap.values():
        by_wave.setdefault(spec.wave, {})[(spec.concept, spec.role)] = spec
    pieces: dict[str, list[np.ndarray]] = {c: [] for c in ENRICHMENT_COLUMNS}
    order: list[np.ndarray] = []
    odd_codes: dict[str, int] = {}
    without_record = 0
    known = main.values.index
    role_columns = [c for c in lookup.columns if c in ENRICHMENT_DTYPES]
    for wave, rows in lookup.groupby("year", sort=True).indices.items():
        wave = int(wave)
        members = lookup.iloc[rows]
        specs = by_wave.get(wave, {})
        source = pd.DataFrame()
        if specs:
            columns = sorted({v for s in specs.values() for v in (s.variable, s.accuracy) if v})
            ids = members["id"].to_numpy()
            without_record += int((~np.isin(ids, known)).sum())
            picked = main.values.reindex(ids)[[c.upper() for c in columns]]
            source = pd.DataFrame(picked.to_numpy(), columns=columns)
            _check_family_values(members["fuid"].to_numpy(), source, wave, main.where)
        values = _wave_values(wave, specs, source, main.where, odd_codes)
        for column in role_columns:
            values[column] = members[column].to_numpy()
        for column, dtype in ENRICHMENT_DTYPES.items():
            # Text stays object; everything else float64 (NaN = missing) until the final dtype.
            kind = object if dtype == "string" else np.float64
            value = values.get(column)
            if value is None:
                value = np.full(len(rows), None if kind is object else np.nan, dtype=kind)
            elif np.ndim(value) == 0:
                value = np.full(len(rows), value, dtype=kind)
            elif kind is object:
                value = np.asarray(value, dtype=object)
            else:
                value = pd.to_numeric(pd.Series(value), errors="coerce").to_numpy(np.float64)
            pieces[column].append(value)
        order.append(rows)
    index = np.concatenate(order) if order else np.array([], dtype=np.int64)
    table = pd.DataFrame({"id": lookup["id"].to_numpy()[index],
                          "year": lookup["year"].to_numpy()[index]})
    for column, dtype in ENRICHMENT_DTYPES.items():
        joined = np.concatenate(pieces[column]) if pieces[column] else np.array([])
        if dtype == "string":
            series = pd.Series(joined, dtype=object)
            table[column] = series.where(series.notna(), None).astype("string")
        elif dtype.startswith("Int"):
            table[column] = pd.Series(joined, dtype=np.float64).round().astype(dtype)
        else:
            table[column] = pd.Series(joined, dtype=np.float64)
    table = table.set_index(["id", "year"])[list(ENRICHMENT_COLUMNS)]
    stats = {
        "current_person_waves": int(len(table)),
        "family_waves": int(current[["year", "fuid"]].drop_duplicates().shape[0]),
        "family_waves_with_reference_person": int(len(families)),
        "family_waves_with_spouse": int(families["spouse_person_id"].notna().sum()),
        "ambiguous_family_waves": int(len(ambiguous)),
        "ambiguous_family_waves_by_wave": {
            str(k): int(v) for k, v in ambiguous["year"].value_counts().sort_index().items()
        },
        "current_person_waves_without_main_study_record": without_record,
        "job_end_codes_outside_0_9": {k: v for k, v in odd_codes.items() if v},
    }
    return table, stats


# ---------------------------------------------------------------------------------------------
# Release dates


def read_release_dates(path: Path) -> tuple[dict[int, str], dict[int, str]]:
    """year -> ISO release date and year -> source label, from the reference crosswalk
    (validated by hhx.surveys.release_dates: exactly the wave schedule, ISO dates)."""
    table = read_release_crosswalk("psid", path)
    years = table["year"].astype(int).tolist()
    return (dict(zip(years, table["release_date"], strict=True)),
            dict(zip(years, table["release_date_source"], strict=True)))


# ---------------------------------------------------------------------------------------------
# Build


def _resolve(survey: SurveyConfig, key: str, raw_dir: Path) -> Path | None:
    return raw_path(survey, key, raw_dir) if survey.raw.get(key) else None


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read both PSID-SHELF archives; write `psid_main.parquet` and its metadata atomically."""
    started = time.perf_counter()
    long_zip = raw_path(survey, "shelf_long", raw_dir,
                        "micro/psid-shelf/PSIDSHELF_1968_2021_LONG_7.9_GB.zip")
    main_zip = raw_path(
        survey, "main_study", raw_dir,
        "micro/psid-shelf/Construction_Files/Data/"
        "PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL_10.8_GB.zip",
    )
    map_path = _resolve(survey, "main_study_vars", raw_dir) or DEFAULT_VARIABLE_MAP
    varmap = read_variable_map(map_path)
    release_path = _resolve(survey, "release_dates", raw_dir)
    dates, date_sources = read_release_dates(release_path) if release_path else ({}, {})
    preflight(long_zip, main_zip, varmap)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{OUTPUT_NAME}.parquet"
    # The SHELF pass is staged next to the output (same disk), then joined with the enrichment.
    with temp_dir(out_dir, "psid_build_") as tmp:  # swept by the next run if killed
        staged = Path(tmp) / "shelf.parquet"
        shelf = read_shelf(long_zip, staged, survey.chunk_rows)
        main = read_main_study(main_zip, varmap)
        lookup, stats = enrichment_lookup(shelf.current, main, varmap,
                                          f"{long_zip}!{shelf.member}")
        synthetic = has_synthetic_sidecar(long_zip) or has_synthetic_sidecar(main_zip)
        metadata = _metadata(shelf, main, stats, varmap, long_zip, main_zip, map_path,
                             release_path, synthetic)
        def enriched() -> Iterator[pd.DataFrame]:
            for batch in pq.ParquetFile(staged).iter_batches(batch_size=survey.chunk_rows):
                frame = _fixed_categories(batch.to_pandas())
                _resolve_strls(frame, shelf, f"{long_zip}!{shelf.member}")
                keys = pd.MultiIndex.from_arrays([frame["id"], frame["year"]])
                added = lookup.reindex(keys).reset_index(drop=True)
                frame["release_date"] = frame["year"].map(dates).astype("string")
                frame["release_date_source"] = frame["year"].map(date_sources).astype("string")
                yield pd.concat([frame, added], axis=1)

        # Both files appear together (renamed at the end of the block) or neither does.
        with atomic_path(out_dir / METADATA_FILE) as meta_tmp, atomic_path(target) as out:
            rows = write_parquet_chunks(out, enriched(), f"{long_zip}!{shelf.member}")
            metadata["build_seconds"] = round(time.perf_counter() - started, 3)
            meta_tmp.write_text(json.dumps(metadata, indent=2, allow_nan=False) + "\n",
                                encoding="utf-8")
    inputs = {str(long_zip): shelf.sha256, str(main_zip): main.sha256}  # computed while read
    for extra in (p for p in (map_path, release_path) if p is not None):
        inputs[str(extra)] = input_sha256(extra)
    return finish_report(survey, {OUTPUT_NAME: target}, {OUTPUT_NAME: rows}, inputs, started)


def _metadata(
    shelf: _ShelfPass,
    main: _MainStudyPass,
    stats: dict[str, Any],
    varmap: dict[tuple[str, str, int], MainStudyVar],
    long_zip: Path,
    main_zip: Path,
    map_path: Path,
    release_path: Path | None,
    synthetic: bool,
) -> dict[str, Any]:
    fields = [
        {
            "concept": s.concept, "role": s.role, "survey_year": s.wave,
            "variable": s.variable, "variable_label": main.variable_labels.get(s.variable.upper()),
            "accuracy_variable": s.accuracy,
            "accuracy_label": main.variable_labels.get(s.accuracy.upper()) if s.accuracy else None,
            "topcode": s.topcode, "reference_period": s.reference_period,
            "annualisation_factor": s.factor,
        }
        for s in sorted(varmap.values(), key=lambda s: (s.concept, s.role, s.wave))
    ]  # fmt: skip
    return {
        "dataset": OUTPUT_NAME,
        "synthetic": synthetic,
        "sources": {
            "shelf_long": {
                "path": str(long_zip), "member": shelf.member, "sha256": shelf.sha256,
                "stata_format": shelf.release, "variables": shelf.nvar,
                "data_label": shelf.data_label, "release_identifiers": shelf.scalars,
            },
            "main_study": {
                "path": str(main_zip), "member": main.member, "sha256": main.sha256,
                "stata_format": main.release, "variables": main.nvar, "persons": main.rows,
                "person_id": main.id_source,
                "id_differs_from_er30001_x1000_plus_er30002": main.id_convention_mismatches,
            },
            "variable_map": str(map_path),
            "release_dates": str(release_path) if release_path else None,
        },
        "expected_waves": list(EXPECTED_WAVES),
        "rows": shelf.rows,
        "persons": shelf.persons,
        "rows_by_wave": {str(k): v for k, v in shelf.rows_by_wave.items()},
        "subsamples": shelf.subsamples,
        "columns": {
            "shelf": shelf.columns,
            "shelf_strl": shelf.strl_columns,
            "derived": list(DERIVED_COLUMNS),
            "release": list(RELEASE_COLUMNS),
            "enrichment": list(ENRICHMENT_COLUMNS),
        },
        "labels": {"source": "spec 10_tasks 7", "file_value_labels": compare_labels(
            shelf.file_labels)},
        "earnings_topcode": EARNINGS_TOPCODE,
        "rows_earn_tot_nd_at_topcode": shelf.earnings_at_topcode,
        "enrichment": {
            "hours_waves": sorted({s.wave for s in varmap.values() if s.concept == "annual_hours"}),
            "food_unavailable_waves": sorted(FOOD_UNAVAILABLE_WAVES),
            "qualifying_reason_codes": {str(k): v for k, v in QUALIFYING_REASONS.items()},
            "fields_found": fields,
            **stats,
        },
    }
