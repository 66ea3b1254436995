"""Reading one member of a CE package (a BLS `intrvwYY.zip` / `diaryYY.zip`, an ICPSR zip, or an
unzipped folder) whole, and refusing damaged ones: a member the zip cannot inflate (bad CRC,
cut compressed stream) and a CSV member that ends early (no line break after its last record,
or a last record with fewer fields than the header) are one-line DataErrors naming the file
and the line where it ends. Real BLS and ICPSR files end with a line break.
"""

from __future__ import annotations

import csv
import io
import zipfile
import zlib
from pathlib import Path

from hhx.errors import DataError


def read_bytes(package: Path, name: str, label: str, source: str) -> bytes:
    """The member's bytes (zip member or file under a folder)."""
    try:
        if package.is_file():
            with zipfile.ZipFile(package) as zf, zf.open(name) as fh:
                return fh.read()
        return (package / name).read_bytes()
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"{label}: damaged inside its archive ({detail}); download "
                        f"{package.name} again from {source}") from None


def check_csv_complete(data: bytes, label: str, source: str) -> None:
    """The CSV ends with a line break and its last record has the header's field count."""
    if not data.strip():
        return  # an empty member is reported by the reader
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    if not data.endswith(b"\n"):
        raise DataError(f"{label}: ends early at line {lines} (no line break after the last "
                        f"record); the file is truncated, download it again from {source}")
    head_end = data.index(b"\n")
    body = data.rstrip(b"\r\n")
    last_start = body.rfind(b"\n") + 1
    if last_start == 0:
        return  # header only
    decode = lambda b: b.decode("latin-1").rstrip("\r")  # noqa: E731
    header = next(csv.reader(io.StringIO(decode(data[:head_end]))))
    last = next(csv.reader(io.StringIO(decode(body[last_start:]))), [])
    if len(last) != len(header):
        raise DataError(
            f"{label}: ends early at line {lines} (its last record has {len(last)} of the "
            f"header's {len(header)} fields); the file is truncated, download it again from "
            f"{source}"
        )


def check_fixed_complete(data: bytes, label: str, width: int, source: str) -> None:
    """A fixed-width member ends with a line break and its last record is `width` bytes long
    (or one more, as some ICPSR copies are)."""
    if not data:
        return
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    last = data.rstrip(b"\r\n").rsplit(b"\n", 1)[-1]
    if not data.endswith(b"\n") or len(last.rstrip(b"\r")) < width:
        raise DataError(
            f"{label}: ends early at line {lines} (the last record has "
            f"{len(last.rstrip(b'\r'))} of {width} bytes); the file is truncated, download it "
            f"again from {source}"
        )
