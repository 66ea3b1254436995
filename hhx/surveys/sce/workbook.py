"""NY Fed SCE reader: the workbooks and sheets as read (openpyxl), one `Piece` per sheet.

Reading: openpyxl read-only, values only, rows converted to columns 20,000 at a time; workbooks
are read in parallel processes when they total over 8 MB. Housing: one piece per year's
`Data {year}` sheet, with that year's `Codebook {year}` sheet parsed (`parse_codebook`).

Every workbook column as read: numbers int64 when whole and never blank, else float64 (the
types of pandas' read_excel); a column holding any non-numeric text stays text.

Differences from the reference: the reference keeps blank-named header columns as
`Unnamed: N` where hhx requires them empty and drops them; numeric text cells ("5") are read
as numbers.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.errors import DataError
from hhx.surveys.base import require_file
from hhx.surveys.sce.items import BY_KEY, HOUSING_YEARS, MODULE_URLS, Workbook

# Reading workbooks in parallel processes pays off above this many bytes in all.
PARALLEL_READ_BYTES = 8 * 1024 * 1024
CHUNK_ROWS = 20_000  # sheet rows converted to columns at a time


# ---------------------------------------------------------------------------------------------
# Reading workbooks


def _numbers(values: list | tuple) -> np.ndarray:
    """Numbers as int64 when every cell holds a whole number, else float64: the column types
    pandas' `read_excel` (the reference's reader) gives, so integer columns stay integers."""
    arr = np.array(values, dtype="float64")
    if len(arr) and not np.isnan(arr).any() and (arr == np.round(arr)).all() and (
            np.abs(arr) < 2**53).all():
        return arr.astype("int64")
    return arr


def _column_values(values: tuple) -> np.ndarray:
    """One sheet column as numbers when every cell is a number (or blank / blank text; int64
    without blanks and fractions, else float64), else as text (object array of str/None).
    Excel dates stay datetimes."""
    kinds = set(map(type, values))
    kinds.discard(type(None))
    if kinds <= {int, float, bool}:
        return _numbers(values)
    cleaned: list = []
    text = False
    for v in values:
        if isinstance(v, str):
            v = v.strip()
            if v == "":
                v = None
            else:
                try:
                    v = float(v)
                except ValueError:
                    text = True
        cleaned.append(v)
    kinds = set(map(type, cleaned)) - {type(None)}
    if not text and kinds <= {int, float, bool}:
        return _numbers(cleaned)
    if kinds <= {dt.datetime, dt.date}:
        return pd.to_datetime(pd.Series(cleaned, dtype="object")).to_numpy()
    return np.array([_as_text(v) for v in values], dtype="object")


def _as_text(v) -> str | None:
    if v is None:
        return None
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    text = str(v).strip()
    return text or None


def _column_letter(i: int) -> str:
    from openpyxl.utils import get_column_letter

    return get_column_letter(i + 1)


def _blank(v) -> bool:
    return v is None or v == ""


def _join_chunks(chunks: list[np.ndarray]) -> np.ndarray:
    """Per-chunk column arrays -> one array; text wins over numbers (numbers then as text)."""
    if all(c.dtype.kind in "if" for c in chunks):
        return np.concatenate(chunks) if chunks else np.array([], dtype="float64")
    parts = []
    for c in chunks:
        if c.dtype.kind in "if":
            c = np.array([None if np.isnan(v) else _as_text(v) for v in c.tolist()], dtype=object)
        elif c.dtype.kind == "M":
            c = np.array([None if pd.isna(v) else str(pd.Timestamp(v).date()) for v in c],
                         dtype=object)
        parts.append(c)
    return np.concatenate(parts)


def sheet_frame(rows: Iterable[tuple], header: int, where: str,
                chunk_rows: int = CHUNK_ROWS) -> pd.DataFrame:
    """Rows of a sheet -> DataFrame: row `header` (0-based) names the columns, later rows are
    data; fully blank rows are dropped; blank-named columns must be empty. Rows are converted
    `chunk_rows` at a time, column-wise, so a large sheet never sits in memory as cells."""
    it = iter(rows)
    head = list(islice(it, header + 1))
    if len(head) <= header:
        raise DataError(f"{where}: has {len(head)} rows, so no header at row {header + 1}; "
                        "is this the NY Fed workbook as downloaded?")
    names = [_as_text(v) for v in head[header]]
    while names and names[-1] is None:
        names.pop()
    seen: set[str | None] = set()
    for name in names:
        if name is not None and name in seen:
            raise DataError(f"{where}: column {name} appears twice in header row {header + 1}")
        seen.add(name)
    keep = [i for i, name in enumerate(names) if name is not None]
    unnamed = [i for i, name in enumerate(names) if name is None]
    width = len(names)
    chunks: list[list[np.ndarray]] = [[] for _ in keep]
    while batch := list(islice(it, chunk_rows)):
        body = []
        for r in batch:
            if all(_blank(v) for v in r):
                continue
            extra = next((i for i in chain(unnamed, range(width, len(r)))
                          if i < len(r) and not _blank(r[i])), None)
            if extra is not None:
                raise DataError(f"{where}: column {_column_letter(extra)} holds data but has no "
                                f"name in header row {header + 1}")
            body.append(r[:width] + (None,) * (width - len(r)))
        if not body:
            continue
        columns = list(zip(*body, strict=True))
        for j, i in enumerate(keep):
            chunks[j].append(_column_values(columns[i]))
    return pd.DataFrame({names[i]: _join_chunks(chunks[j]) for j, i in enumerate(keep)})


def _open(path: Path, what: str, url: str):
    from openpyxl import load_workbook

    require_file(path, what, url)
    try:
        return load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises zipfile/KeyError/InvalidFileException variants
        raise DataError(f"{path}: not a readable .xlsx workbook ({type(exc).__name__}: "
                        f"{str(exc).splitlines()[0] if str(exc) else ''}); download it again "
                        f"from {url}") from None


def _sheet_rows(book, sheet: str, path: Path) -> Iterator[tuple]:
    """The sheet's rows, streamed (the workbook must stay open while they are read)."""
    if sheet not in book.sheetnames:
        raise DataError(f"{path}: sheet {sheet!r} not found (sheets: "
                        f"{', '.join(book.sheetnames)}); is this the NY Fed workbook?")
    ws = book[sheet]
    ws.reset_dimensions()  # some writers store a wrong <dimension>; read what is there
    return ws.iter_rows(values_only=True)


@dataclass
class Piece:
    """One sheet as read: raw columns plus where it came from."""

    key: str
    module: str
    path: Path
    sheet: str
    frame: pd.DataFrame
    wave_year: int | None = None
    codebook: dict[str, dict[object, str]] | None = None


def read_workbook(key: str, path: Path) -> list[Piece]:
    """Every sheet hhx reads from one workbook (housing: one piece per year)."""
    spec = BY_KEY[key]
    url = MODULE_URLS[spec.module]
    book = _open(path, spec.what, url)
    try:
        if spec.module != "housing":
            frame = _data_sheet(book, spec, spec.sheet, path)
            return [Piece(key, spec.module, path, spec.sheet, frame)]
        pieces = []
        for year in HOUSING_YEARS:
            sheet = spec.sheet.format(year=year)
            frame = _data_sheet(book, spec, sheet, path)
            codebook = parse_codebook(list(_sheet_rows(book, f"Codebook {year}", path)),
                                      set(frame.columns))
            pieces.append(Piece(key, "housing", path, sheet, frame, year, codebook))
        return pieces
    finally:
        book.close()


def _data_sheet(book, spec: Workbook, sheet: str, path: Path) -> pd.DataFrame:
    """A data sheet; when the id column is not in the header row, say where it is instead."""
    rows = _sheet_rows(book, sheet, path)
    where = f"{path} sheet {sheet}"
    head = list(islice(rows, max(spec.header + 1, 40)))
    header = head[spec.header] if len(head) > spec.header else ()
    if spec.id_column not in [_as_text(v) for v in header]:
        found = next((i for i, row in enumerate(head)
                      if spec.id_column in [_as_text(v) for v in row]), None)
        hint = (f" (it is in row {found + 1}: the sheet's layout differs from the NY Fed "
                "workbook hhx reads)" if found is not None else "")
        raise DataError(f"{where}: column {spec.id_column} not found in header row "
                        f"{spec.header + 1}{hint}; download the workbook again from "
                        f"{MODULE_URLS[spec.module]}")
    return sheet_frame(chain(head, rows), spec.header, where)


_BRACKET = re.compile(r"^\[([A-Za-z0-9_]+)\]\s*:?\s*(.*)$")


def _code(text: str) -> object:
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() else number


def parse_codebook(rows: list[tuple], variables: set[str]) -> dict[str, dict[object, str]]:
    """A housing `Codebook {year}` sheet -> {data column: {code: label}}.

    Layout of the NY Fed codebooks: a variable block starts with a row whose first cell is the
    variable name (or `[name]: question text`), followed by value rows with the numeric code in
    column B and its label in column C; a blank row ends the block. Names match the year's data
    columns case-insensitively; blocks of other names are skipped."""
    lookup = {v.lower(): v for v in variables}
    out: dict[str, dict[object, str]] = {}
    current: str | None = None
    for row in rows:
        cells = ["" if v is None else str(v).strip() for v in row] + ["", "", ""]
        if not any(cells):
            current = None
            continue
        first = cells[0]
        if first:
            match = _BRACKET.match(first)
            name = match.group(1) if match else first.split(":", 1)[0].strip()
            current = lookup.get(name.lower())
            continue
        code = _code(cells[1])
        if current is not None and cells[2] and not isinstance(code, str):  # skips "Code"
            out.setdefault(current, {})[code] = " ".join(cells[2].split())
    return out


def _read_all(jobs: list[tuple[str, Path]]) -> list[list[Piece]]:
    """Read workbooks, in parallel processes when they are big enough to be worth it."""
    import os

    size = sum(p.stat().st_size for _, p in jobs)
    workers = min(len(jobs), os.cpu_count() or 1)
    if workers > 1 and size >= PARALLEL_READ_BYTES:
        from joblib import Parallel, delayed

        return Parallel(n_jobs=workers)(delayed(read_workbook)(k, p) for k, p in jobs)
    return [read_workbook(k, p) for k, p in jobs]
