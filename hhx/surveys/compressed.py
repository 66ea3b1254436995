"""One rule for damaged compressed inputs: a gzip file or zip archive (member) that is cut short,
empty, not of its format, or corrupt stops the build with one line naming the file (and member)
and the fix, whichever reader met the damage first (the fingerprint, a streaming reader, pandas).

Python's decompressors raise several unrelated types for the same damage: `EOFError` (a gzip
stream cut short), `zlib.error` (corrupt deflate data), `gzip.BadGzipFile` (not gzip at all),
`zipfile.BadZipFile` (cut short, empty, not a zip: the central directory is missing) and
`zipfile.LargeZipFile`; `struct.error` from a cut header.
"""

from __future__ import annotations

import gzip
import struct
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hhx.errors import DataError

DAMAGE: tuple[type[BaseException], ...] = (
    EOFError, zlib.error, gzip.BadGzipFile, zipfile.BadZipFile, zipfile.LargeZipFile, struct.error,
)


def damage_message(path: Path | str, exc: BaseException, member: str | None = None) -> str:
    """The one line for `exc`, met while reading `path` (`member` inside it)."""
    where = f"{path}!{member}" if member else str(path)
    size = Path(path).stat().st_size if Path(path).is_file() else None
    if size == 0:
        what = "the file is empty (0 bytes)"
    elif isinstance(exc, EOFError):
        what = "the compressed file ends early (cut short or damaged)"
    elif isinstance(exc, gzip.BadGzipFile):
        what = f"not a gzip file ({exc})"
    elif isinstance(exc, zipfile.BadZipFile):
        what = f"not a complete zip archive ({exc}; cut short or not a zip)"
    else:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        what = f"the compressed data is damaged ({detail})"
    return f"{where}: {what}; download the file again and replace it"


@contextmanager
def intact(path: Path | str, member: str | None = None) -> Iterator[None]:
    """Turn any decompression failure inside the block into one DataError naming the file."""
    try:
        yield
    except DAMAGE as exc:
        raise DataError(damage_message(path, exc, member)) from None
