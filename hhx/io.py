"""Atomic file writes and strict JSONL reading: nothing half-written is ever left behind."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hhx.errors import DataError

if TYPE_CHECKING:  # pandas is imported by its callers; not at start-up (hhx --help, describe)
    import pandas as pd

# Temporary files and folders carry the writing process's id, so the next run can tell the
# leftovers of a killed process (removed) from those of one still running (kept).
_TMP = re.compile(r"^\..*?hhx-(\d+)-[^/]*\.tmp$")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_temp_name(name: str) -> bool:
    """A temporary file or folder of hhx's (atomic writes, scratch folders)."""
    return _TMP.match(name) is not None


def sweep_stale_temps(folders: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Remove temporary files and folders left under `folders` by processes that no longer run
    (a killed build); returns what was removed."""
    removed = []
    for folder in folders:
        root = Path(folder)
        if not root.is_dir():
            continue
        for path in sorted(root.rglob(".*hhx-*.tmp")):
            m = _TMP.match(path.name)
            if not m or _pid_alive(int(m.group(1))):
                continue
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            removed.append(path)
    return removed


@contextlib.contextmanager
def temp_dir(parent: str | os.PathLike[str], prefix: str = "") -> Iterator[Path]:
    """A scratch folder inside `parent` (same file system as the outputs), removed afterwards
    and swept by `sweep_stale_temps` if the process is killed."""
    Path(parent).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{prefix}hhx-{os.getpid()}-", suffix=".tmp", dir=parent))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.hhx-{os.getpid()}-", suffix=".tmp",
                               dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        # mkstemp creates 0600; give the file the permissions a plain open() would have.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_path, 0o666 & ~umask)
        os.replace(tmp_path, target)
    except OSError as exc:
        # Name the file being written, not its temporary twin (which is removed below), so a
        # full disk reads as one line with the real path (hhx.errors.os_error_line).
        if exc.filename in (None, str(tmp_path)):
            raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from exc
        raise
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def write_json_atomic(path: str | os.PathLike[str], obj: Any, indent: int | None = 2) -> Path:
    return write_text_atomic(path, json.dumps(obj, indent=indent, allow_nan=False) + "\n")


def write_jsonl_atomic(
    path: str | os.PathLike[str], rows: Iterable[dict[str, Any]], ensure_ascii: bool = True
) -> Path:
    """Write one JSON object per line (ASCII-escaped, NaN forbidden, as the official release)."""
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=ensure_ascii, allow_nan=False) + "\n")
    return Path(path)


def write_csv_atomic(path: str | os.PathLike[str], df: pd.DataFrame) -> Path:
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)
    return Path(path)


def write_parquet_atomic(path: str | os.PathLike[str], df: pd.DataFrame) -> Path:
    """Write `df` as the official pipeline's `to_parquet(index=False)` does, Arrow schema
    included (hhx.arrow_schema: text as string, timestamps in ns, its pandas metadata)."""
    import pyarrow.parquet as pq

    from hhx.arrow_schema import official_table

    table = official_table(df, str(path))
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="snappy")
    return Path(path)


def write_parquet_chunks(
    path: str | os.PathLike[str], frames: Iterable[pd.DataFrame], source: str,
    compression: str = "snappy",
) -> int:
    """Write frames one row group each into `path` (a temporary path of `atomic_path`), the
    first frame fixing the schema (the official one, as `write_parquet_atomic`); returns the
    rows written (0: no file). Memory stays at one frame. A frame whose columns do not cast to
    that schema is an error naming its rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from hhx.arrow_schema import conform, official_schema

    writer: pq.ParquetWriter | None = None
    rows = 0
    try:
        for frame in frames:
            table = pa.Table.from_pandas(frame, preserve_index=False)
            if writer is None:
                schema = official_schema(table.schema)
                table = conform(table, schema, f"{source} (rows 1-{len(frame)})")
                writer = pq.ParquetWriter(path, schema, compression=compression)
            else:
                try:
                    table = table.cast(writer.schema)
                except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError) as exc:
                    raise DataError(f"{source} (rows {rows + 1}-{rows + len(frame)}): column "
                                    f"types differ from the first chunk ({exc})") from None
            writer.write_table(table)
            rows += len(frame)
    finally:
        if writer is not None:
            writer.close()
    return rows


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes, read 1 MiB at a time."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a JSONL file: blank lines skipped; a bad line is an error naming file and line."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: file not found")
    rows: list[dict[str, Any]] = []
    with p.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{p}:{lineno}: invalid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise DataError(f"{p}:{lineno}: expected a JSON object, got {type(row).__name__}")
            rows.append(row)
    return rows


@contextlib.contextmanager
def gzip_writer(path: str | os.PathLike[str], compresslevel: int = 9) -> Iterator[Any]:
    """A gzip stream into `path` whose bytes depend on the content only: no file name and a zero
    modification time in the header (gzip.open writes both, so a regenerated file differed)."""
    import gzip

    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                                compresslevel=compresslevel, mtime=0) as gz:
        yield gz


@contextlib.contextmanager
def file_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """An exclusive lock on `path` (created), held for the block: serialises writers of one folder
    across processes (parallel sweeps share data folders and manifests)."""
    import fcntl

    lock = Path(path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
