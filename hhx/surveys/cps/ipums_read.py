"""IPUMS CPS Basic Monthly extract files: column kinds, typing, and streaming of raw chunks.

The official request (spec 00_common.md 1.2-1.4) is a numeric CSV with a header row of IPUMS
names, 79 million person-month rows: it is streamed in chunks of `chunk_rows` rows.
The same extract in IPUMS's fixed-width form (`.dat[.gz]` + DDI XML codebook) is read with the
codebook parsed by `ipumspy`; rectangular files through `ipumspy`'s chunked reader, hierarchical
ones (household + person records) by slicing records with the codebook's positions, since
ipumspy 0.9 reads those only whole.

Each chunk comes out typed but raw: uppercase IPUMS names in file order; nullable Int32, Int64
for identifiers, Float64 for weights and money, string for the quoted codes. The normalisation
of the chunks (NIU codes, labels, flags, release dates) and the build are in `ipums.py`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import itertools
import re
import warnings
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from hhx.errors import ConfigError, DataError
from hhx.surveys.base import require_file

IPUMS_CPS_URL = "https://cps.ipums.org"

# The reference extract's 149 columns, in the requested order (spec 1.4).
EXTRACT_COLUMNS: tuple[str, ...] = tuple(
    """YEAR SERIAL MONTH HWTFINL CPSID ASECFLAG MISH NUMPREC HHTENURE GQTYPE HHINTYPE REGION
    STATEFIP COUNTY METFIPS METRO CBSASZ FAMINC MARBASECIDH HRHHID HRHHID2 HUHHNUM HRSAMPLE
    HHRESPLN INTTYPE PERNUM WTFINL CPSIDP CPSIDV UCAPLAST UCNOMAIN UCNORECLAST UCNORECWK
    UCRECLAST UCRECWK UCUNION UCWHYNOELG UCSUPFLG EARNWEEK2 HOURWAGE2 SUBMINWAGE RELATE AGE SEX
    RACE MARST POPSTAT ASIAN VETSTAT SPLOC SPRULE FAMSIZE NCHILD NCHLT5 FAMUNIT FTYPE FAMREL BPL
    YRIMMIG CITIZEN NATIVITY HISPAN EMPSTAT LABFORCE OCC OCC2010 OCC1990 IND1990 OCC1950 IND
    IND1950 CLASSWKR UHRSWORKT UHRSWORK1 UHRSWORK2 AHRSWORKT AHRSWORK1 AHRSWORK2 ABSENT DURUNEM2
    DURUNEMP WHYUNEMP WHYABSNT WHYPTLWK WNFTLOOK WNLOOK WKSTAT EMPSAME MULTJOB NUMJOB PAIDEMP1
    PAIDEMP1N PAIDEMP2 PAIDEMP2N PROFCERT STATECERT JOBCERT WRKOFFER NILFACT ACTSAME EDUC EDUC99
    EDCYC EDDIPGED EDHGCGED SCHLCOLL DIFFHEAR DIFFEYE DIFFREM DIFFPHYS DIFFMOB DIFFCARE DIFFANY
    MARBASECIDP DWLOSTJOB DWSTAT DWREAS DWRECALL DWNOTICE DWLASTWRK DWYEARS DWFULLTIME DWWEEKL
    DWWAGEL DWUNION DWBEN DWEXBEN DWHI DWCLASS DWIND DWIND1990 DWOCC DWOCC1990 DWMOVE DWHINOW
    DWJOBSINCE DWWEEKC DWWAGEC DWHRSWKC DWRESP DWWKSUN HOURWAGE PAIDHOUR UNION EARNWEEK
    UHRSWORKORG WKSWORKORG ELIGORG OTPAY""".split()
)

# Column kinds. Everything else of the 149 is an integer code (Int32); numeric columns outside
# the 149 are kept as Float64 in both forms of the extract.
STRING_COLUMNS = frozenset({"HRSAMPLE", "HRSERSUF"})  # quoted codes in the extract
FLOAT_COLUMNS = frozenset(
    {
        "HWTFINL",
        "WTFINL",
        "EARNWEEK",
        "EARNWEEK2",
        "HOURWAGE",
        "HOURWAGE2",
        "DWWEEKL",
        "DWWAGEL",
        "DWWEEKC",
        "DWWAGEC",
        "DWYEARS",
        "OTPAY",
    }
)
ID_COLUMNS = frozenset(
    {"CPSID", "CPSIDP", "CPSIDV", "MARBASECIDH", "MARBASECIDP", "HRHHID", "HRHHID2"}
)

_INT32_MAX = 2**31 - 1


# --------------------------------------------------------------------------------------------
# Typing


def column_kind(name: str, *, unknown: str = "float") -> str:
    """'string' | 'float' | 'id' | 'int'; columns outside the 149 get `unknown`."""
    if name in STRING_COLUMNS:
        return "string"
    if name in FLOAT_COLUMNS:
        return "float"
    if name in ID_COLUMNS:
        return "id"
    return "int" if name in EXTRACT_COLUMNS else unknown


def _to_int(series: pd.Series, dtype: str, col: str, where: str) -> pd.Series:
    """Exact integer conversion: a fraction, a text value or an overflow is an error."""
    s = series
    if not (pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)):
        stripped = s.astype("string").str.strip().replace("", pd.NA)
        s = pd.to_numeric(stripped, errors="coerce")
        bad = s.isna() & stripped.notna()
        if bad.any():
            raise DataError(
                f"{where}: column {col} has non-numeric value {stripped[bad].iloc[0]!r}"
            )
    if pd.api.types.is_float_dtype(s):
        v = s.to_numpy(dtype="float64", na_value=np.nan)
        ok = np.isnan(v) | (v == np.round(v))
        if not ok.all():
            raise DataError(
                f"{where}: column {col} has non-integer value {v[~ok][0]}; "
                "IPUMS codes are integers (is the column a money or weight variable?)"
            )
        s = pd.array(np.where(np.isnan(v), 0, v).astype(np.int64), dtype="Int64")
        s[np.isnan(v)] = pd.NA
        s = pd.Series(s, index=series.index)
    s = s.astype("Int64")
    if dtype == "Int32" and s.notna().any() and (s.max() > _INT32_MAX or s.min() < -_INT32_MAX):
        raise DataError(f"{where}: column {col} exceeds the 32-bit range; it must be an identifier")
    return s.astype(dtype)


def coerce_types(df: pd.DataFrame, kinds: dict[str, str], where: str) -> pd.DataFrame:
    """Give every column its declared nullable type."""
    out = {}
    for col in df.columns:
        kind = kinds.get(col) or column_kind(col)
        s = df[col]
        if kind == "string":
            out[col] = s.astype("string").str.strip()
        elif kind == "float":
            if not pd.api.types.is_numeric_dtype(s):
                num = pd.to_numeric(
                    s.astype("string").str.strip().replace("", pd.NA), errors="coerce"
                )
                if (num.isna() & s.notna() & (s.astype("string").str.strip() != "")).any():
                    raise DataError(f"{where}: column {col} has a non-numeric value")
                s = num
            out[col] = s.astype("Float64")
        else:
            out[col] = _to_int(s, "Int64" if kind == "id" else "Int32", col, where)
    return pd.DataFrame(out, index=df.index)


# --------------------------------------------------------------------------------------------
# Raw readers: each yields typed-but-raw chunks (uppercase columns, file order)


class _HashingReader(io.RawIOBase):
    """Pass-through reader that fingerprints the (decompressed) bytes as they stream by."""

    def __init__(self, raw: io.BufferedIOBase) -> None:
        self._raw = raw
        self.sha = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = self._raw.readinto(b)
        if n:
            self.sha.update(memoryview(b)[:n])
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


def _open_bytes(path: Path) -> io.BufferedIOBase:
    return gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")


def _damaged(path: Path, exc: BaseException) -> DataError:
    """One line for a compressed extract that cannot be read to its end."""
    if isinstance(exc, EOFError):
        what = "the compressed file ends early (cut short or damaged); download it again"
    elif isinstance(exc, gzip.BadGzipFile):
        what = f"not a gzip file ({exc}); give the .csv.gz IPUMS delivers or the plain .csv"
    else:
        what = f"cannot be read ({type(exc).__name__}: {exc})"
    return DataError(f"{path}: {what}")


def csv_header(path: Path) -> list[str]:
    """Column names of a CSV extract (first line)."""
    try:
        with _open_bytes(path) as fh:
            line = fh.readline().decode("utf-8-sig").strip()
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
        raise _damaged(path, exc) from None
    if not line:
        raise DataError(f"{path}: empty file (expected a header row of IPUMS variable names)")
    names = [c.strip().strip('"') for c in line.split(",")]
    dup = sorted({c for c in names if names.count(c) > 1})
    if dup:
        raise DataError(f"{path}: duplicate column(s) {dup} in the header")
    return names


# Integer codes are parsed as float64 (exact below 2**53) so that "2.0" written by other tools
# is read; _typed_frame then casts them to int32, refusing fractions. Identifiers are parsed as
# exact int64.
_ARROW_TYPE = {"string": pa.string(), "float": pa.float64(), "id": pa.int64(), "int": pa.float64()}
_PANDAS_TYPES = {
    pa.int64(): pd.Int64Dtype(),
    pa.float64(): pd.Float64Dtype(),
    pa.string(): pd.StringDtype(),
}


def iter_csv_chunks(
    path: Path, chunk_rows: int, hasher: list[str] | None = None
) -> Iterator[pd.DataFrame]:
    """Stream a CSV extract as typed chunks of `chunk_rows` rows (the last may be shorter).

    Arrow's streaming CSV reader parses blocks; rows are regrouped into fixed-size chunks so the
    output does not depend on block boundaries. If `hasher` is a list, the sha256 of the
    decompressed bytes (the reference fingerprint rule) is appended to it at the end.
    """
    if chunk_rows < 1:
        raise ConfigError(f"survey.chunk_rows must be >= 1, got {chunk_rows}")
    header = csv_header(path)
    kinds = {c: column_kind(c) for c in header}
    convert = pacsv.ConvertOptions(
        column_types={c: _ARROW_TYPE[k] for c, k in kinds.items()},
        strings_can_be_null=True,
        quoted_strings_can_be_null=True,
    )
    reader_src = _HashingReader(_open_bytes(path))
    try:
        reader = pacsv.open_csv(
            reader_src,
            read_options=pacsv.ReadOptions(block_size=1 << 20, column_names=header, skip_rows=1),
            convert_options=convert,
        )
    except pa.ArrowInvalid as exc:
        reader_src.close()
        raise DataError(f"{path}: {_arrow_message(exc, header)}") from None
    except (OSError, EOFError, zlib.error) as exc:
        reader_src.close()
        raise _damaged(path, exc) from None
    pending: list[pa.RecordBatch] = []
    n_pending = 0
    first_row = 0
    try:
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                break
            except pa.ArrowInvalid as exc:
                raise DataError(f"{path}: {_arrow_message(exc, header)}") from None
            except (OSError, EOFError, zlib.error) as exc:
                raise _damaged(path, exc) from None
            pending.append(batch)
            n_pending += batch.num_rows
            while n_pending >= chunk_rows:
                table = pa.Table.from_batches(pending)
                yield _typed_frame(table.slice(0, chunk_rows), kinds, path, first_row)
                first_row += chunk_rows
                rest = table.slice(chunk_rows)
                pending = rest.to_batches() if rest.num_rows else []
                n_pending = rest.num_rows
        if n_pending:
            yield _typed_frame(pa.Table.from_batches(pending), kinds, path, first_row)
        if hasher is not None:
            hasher.append(reader_src.sha.hexdigest())
    finally:
        reader_src.close()


def _arrow_message(exc: Exception, header: list[str]) -> str:
    """Arrow names columns by number; name them by IPUMS variable."""
    msg = str(exc).splitlines()[0]
    m = re.search(r"column #(\d+)", msg)
    if m and int(m.group(1)) < len(header):
        msg = f"column {header[int(m.group(1))]}: {msg}"
    return msg


def _typed_frame(
    table: pa.Table, kinds: dict[str, str], path: Path, first_row: int
) -> pd.DataFrame:
    """Arrow chunk -> nullable pandas frame; integer codes cast (checked) to int32 in Arrow."""
    where = f"{path} (data rows {first_row + 1}-{first_row + table.num_rows})"
    columns = []
    for name in table.column_names:
        col = table[name]
        if kinds[name] == "int":
            try:
                col = col.cast(pa.int32())  # a safe cast: fractions and overflow raise
            except pa.ArrowInvalid:
                values = col.to_numpy(zero_copy_only=False)
                frac = values[~np.isnan(values) & (values != np.round(values))]
                detail = f"non-integer value {frac[0]}" if len(frac) else "a value beyond 32 bits"
                raise DataError(
                    f"{where}: column {name} has {detail}; IPUMS codes are integers"
                ) from None
        columns.append(col)
    mapper = {**_PANDAS_TYPES, pa.int32(): pd.Int32Dtype()}
    df = pa.table(columns, names=table.column_names).to_pandas(types_mapper=mapper.get)
    df.index = pd.RangeIndex(first_row, first_row + len(df))
    for name in df.columns:  # as coerce_types does for the fixed-width form
        if kinds[name] == "string":
            df[name] = df[name].str.strip()
    return df


def read_ddi_codebook(ddi_path: Path):
    from ipumspy import readers  # optional dependency: only the DDI path needs it

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ipumspy's citation reminder on every read
        try:
            return readers.read_ipums_ddi(ddi_path)
        except Exception as exc:  # malformed XML, wrong file
            raise DataError(f"{ddi_path}: not a readable IPUMS DDI codebook ({exc})") from None


def ddi_columns(ddi_path: Path) -> list[str]:
    """Variable names a DDI codebook describes (without the record-type variable)."""
    ddi = read_ddi_codebook(ddi_path)
    rt = ddi.file_description.rectype_idvar
    return [d.name for d in ddi.data_description if d.name != rt]


def _ddi_kinds(ddi) -> dict[str, str]:
    kinds = {}
    for d in ddi.data_description:
        known = column_kind(d.name, unknown="")
        if known:
            kinds[d.name] = known
        else:  # as in the CSV form, where nothing tells integers from decimals
            kinds[d.name] = "string" if d.vartype == "character" else "float"
    return kinds


def iter_ddi_chunks(ddi_path: Path, data_path: Path, chunk_rows: int) -> Iterator[pd.DataFrame]:
    """Stream a fixed-width IPUMS extract described by its DDI codebook, as typed chunks."""
    ddi = read_ddi_codebook(ddi_path)
    kinds = _ddi_kinds(ddi)
    structure = ddi.file_description.structure
    if structure == "hierarchical":
        frames = _iter_hierarchical(ddi, data_path, chunk_rows)
    elif structure == "rectangular":
        from ipumspy import readers

        frames = readers.read_microdata_chunked(ddi, data_path, chunksize=chunk_rows)
    else:
        raise DataError(f"{ddi_path}: unsupported file structure {structure!r}")
    first = 0
    try:
        for frame in frames:
            frame = frame.reset_index(drop=True)
            frame.index = pd.RangeIndex(first, first + len(frame))
            where = f"{data_path} (person records {first + 1}-{first + len(frame)})"
            yield coerce_types(frame, kinds, where)
            first += len(frame)
    except (ValueError, TypeError) as exc:
        raise DataError(f"{data_path}: cannot parse with {ddi_path.name}: {exc}") from None


def _slice_fields(lines: pd.Series, descs, where: str) -> dict[str, pd.Series]:
    """Cut fixed-width fields; numeric fields get the codebook's implied decimals."""
    out = {}
    for d in descs:
        text = lines.str.slice(d.start, d.end).str.strip().replace("", pd.NA)
        if d.vartype == "character":
            out[d.name] = text
            continue
        num = pd.to_numeric(text, errors="coerce")
        if (num.isna() & text.notna()).any():
            bad = text[num.isna() & text.notna()].iloc[0]
            raise DataError(f"{where}: field {d.name} has a non-numeric value {bad!r}")
        out[d.name] = num / 10**d.shift if (d.shift or 0) > 0 else num
    return out


def _iter_hierarchical(ddi, data_path: Path, chunk_rows: int) -> Iterator[pd.DataFrame]:
    """Person records with their household record's variables, in file order."""
    fd = ddi.file_description
    rt_name = fd.rectype_idvar
    descs = ddi.data_description
    rt_desc = next(d for d in descs if d.name == rt_name)
    all_types = set(fd.rectypes)
    if not {"H", "P"} <= all_types:
        raise DataError(
            f"{data_path}: hierarchical extract without H and P records ({fd.rectypes})"
        )
    common = [d for d in descs if d.name != rt_name and set(d.rectype.split()) == all_types]
    house = [d for d in descs if d.rectype == "H"]
    person = [d for d in descs if d.rectype == "P"]
    order = [
        d.name for d in descs if d.name != rt_name and (d in common or d in house or d in person)
    ]
    carried: dict[str, object] | None = None  # last household record of the previous chunk
    encoding = fd.encoding or "iso-8859-1"
    opener = gzip.open if data_path.suffix == ".gz" else open
    with opener(data_path, "rt", encoding=encoding) as fh:
        while True:
            raw = list(itertools.islice(fh, chunk_rows))
            if not raw:
                return
            lines = pd.Series([r.rstrip("\r\n") for r in raw], dtype="string")
            rectype = lines.str.slice(rt_desc.start, rt_desc.end)
            is_h, is_p = (rectype == "H").to_numpy(), (rectype == "P").to_numpy()
            h_fields = pd.DataFrame(_slice_fields(lines[is_h], common + house, str(data_path)))
            p_fields = pd.DataFrame(_slice_fields(lines[is_p], common + person, str(data_path)))
            # position of the last H line at or before each line (-1: before this chunk)
            pos = np.where(is_h, np.arange(len(lines)), -1)
            last_h = np.maximum.accumulate(pos)[is_p]
            h_rows = np.searchsorted(np.flatnonzero(is_h), last_h)  # index into h_fields
            hh = h_fields.reset_index(drop=True)
            if carried is not None:
                hh = pd.concat([pd.DataFrame([carried]), hh], ignore_index=True)
                h_rows = np.where(last_h < 0, 0, h_rows + 1)
            elif (last_h < 0).any():
                raise DataError(f"{data_path}: person record before any household record")
            attached = hh.iloc[h_rows].reset_index(drop=True)
            persons = p_fields.reset_index(drop=True)
            for d in common:
                mismatch = persons[d.name].ne(attached[d.name]) & persons[d.name].notna()
                if mismatch.any():
                    raise DataError(
                        f"{data_path}: person record {d.name} differs from its household's"
                    )
            for d in house:
                persons[d.name] = attached[d.name].to_numpy()
            if len(hh):
                carried = hh.iloc[-1].to_dict()
            if len(persons):
                yield persons[order]


def iter_extract(
    data_path: Path,
    chunk_rows: int,
    *,
    ddi_path: Path | None = None,
    hasher: list[str] | None = None,
) -> Iterator[pd.DataFrame]:
    """Typed raw chunks of an extract, whichever official form it has."""
    fixed_width = ".dat" in data_path.suffixes
    if fixed_width:
        if ddi_path is None:
            guess = data_path.with_name(data_path.name.split(".dat")[0] + ".xml")
            ddi_path = guess if guess.is_file() else None
        if ddi_path is None:
            raise ConfigError(
                f"{data_path}: a fixed-width extract needs its DDI codebook; set "
                "survey.raw.cps_ddi to the .xml IPUMS provides with it"
            )
        require_file(ddi_path, "IPUMS DDI codebook", IPUMS_CPS_URL)
        return iter_ddi_chunks(ddi_path, data_path, chunk_rows)
    return iter_csv_chunks(data_path, chunk_rows, hasher=hasher)
