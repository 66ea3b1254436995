"""What every survey builder returns, and the input fingerprint rule of the reference (spec 1.1)."""

from __future__ import annotations

import gzip
import hashlib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from hhx.errors import DataError


@dataclass
class BuildReport:
    """Provenance of one survey build, logged to MLflow by the build stage."""

    survey: str
    outputs: dict[str, str] = field(default_factory=dict)  # intermediate name -> parquet path
    rows: dict[str, int] = field(default_factory=dict)  # intermediate name -> row count
    inputs: dict[str, str] = field(default_factory=dict)  # raw path -> sha256 fingerprint
    seconds: float = 0.0
    synthetic: bool = False


def require_file(path: Path, what: str, source: str) -> Path:
    """Fail with the expected path and where the public file comes from."""
    if not path.is_file():
        raise DataError(f"{path}: {what} not found; download it from {source} and place it there")
    return path


def input_sha256(path: str | Path) -> str:
    """Fingerprint as the reference does: zip members (name, size, bytes) sorted by name; gz
    decompressed; anything else plain. Ignores compression level, member order and gzip headers."""
    p = Path(path)
    digest = hashlib.sha256()
    if p.suffix == ".zip":
        with zipfile.ZipFile(p) as zf:
            for info in sorted(zf.infolist(), key=lambda i: i.filename):
                if info.is_dir():
                    continue
                digest.update(info.filename.encode("utf-8") + b"\0")
                digest.update(info.file_size.to_bytes(8, "big"))
                with zf.open(info) as fh:
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(chunk)
    elif p.suffix == ".gz":
        with gzip.open(p, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    else:
        with p.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def check_fingerprint(path: str | Path, expected: str) -> None:
    """Empty expected = presence only; otherwise it must be 64 lowercase hex and match."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: input file not found")
    if not expected:
        return
    if len(expected) != 64 or any(c not in "0123456789abcdef" for c in expected):
        raise DataError(f"{p}: Invalid input fingerprint {expected!r} (need 64 lowercase hex digits)")
    actual = input_sha256(p)
    if actual != expected:
        raise DataError(f"{p}: input fingerprint differs (expected {expected}, got {actual})")
