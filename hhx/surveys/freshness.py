"""Is a built intermediate (or task) still what its inputs would give? Content, not paths.

A build's *state* is what its output depends on: the builder's code, its settings, the content
fingerprints of its raw inputs (spec 1.1 rule, `input_sha256`) and the states of what it read.
The state is stored beside the outputs after a successful build; the next build compares, so
the same folder named by a relative and by an absolute path, or a file touched but unchanged,
is still fresh, while a changed byte, setting or builder rebuilds.

Hashing a multi-gigabyte raw file takes a while, so digests are cached per resolved path, size
and modification time (`fingerprints.json` in the state folder).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hhx.errors import DataError
from hhx.io import is_temp_name, write_json_atomic
from hhx.surveys.base import input_sha256

STATE_DIR = ".hhx"  # inside the intermediate folder (and the release root)


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def code_digest(module: str) -> str:
    """sha256 of a module's source file (a changed builder invalidates what it built)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        raise DataError(f"module {module!r} not found")
    return hashlib.sha256(Path(spec.origin).read_bytes()).hexdigest()


class Fingerprints:
    """Content digests of files and folders, cached by (resolved path, size, mtime)."""

    def __init__(self, cache_file: Path):
        self.cache_file = cache_file
        self._cache: dict[str, list] = {}
        self._dirty = False
        if cache_file.is_file():
            try:
                self._cache = json.loads(cache_file.read_text())
            except (OSError, ValueError):
                self._cache = {}  # a damaged cache only costs re-hashing

    def file(self, path: Path) -> str:
        real = str(path.resolve())
        st = path.stat()
        key = [st.st_size, st.st_mtime_ns]
        hit = self._cache.get(real)
        if hit and hit[:2] == key:
            return hit[2]
        digest = input_sha256(path)
        self._cache[real] = [*key, digest]
        self._dirty = True
        return digest

    def of(self, path: Path) -> str | None:
        """A file's digest; a folder's = its files' (relative name, digest), hidden files and
        generator sidecars included; None when the path does not exist."""
        if path.is_file():
            return self.file(path)
        if path.is_dir():
            entries = [
                [str(p.relative_to(path)), self.file(p)]
                for p in sorted(path.rglob("*"))
                if p.is_file() and not any(part.startswith(".hhx") for part in p.parts)
                and not is_temp_name(p.name)
            ]
            return _digest(entries)
        return None

    def save(self) -> None:
        if self._dirty:
            write_json_atomic(self.cache_file, self._cache, indent=None)
            self._dirty = False


def stamp_path(folder: Path, name: str) -> Path:
    return Path(folder) / STATE_DIR / f"{name}.state.json"


def read_stamp(folder: Path, name: str) -> dict[str, Any] | None:
    path = stamp_path(folder, name)
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except (OSError, ValueError):
        return None


def is_fresh(folder: Path, name: str, state: Mapping[str, Any]) -> bool:
    """The stored state equals `state` and every output it recorded still exists."""
    stamp = read_stamp(folder, name)
    if stamp is None or stamp.get("digest") != _digest(state):
        return False
    return all((Path(folder) / p).is_file() for p in stamp.get("outputs", []))


def write_stamp(
    folder: Path, name: str, state: Mapping[str, Any], outputs: list[str], **extra: Any
) -> str:
    """Record a successful build; returns the state's digest (what dependents key on).
    Outputs are kept relative to `folder`, so a moved data folder stays fresh."""
    digest = _digest(state)
    base = Path(folder).resolve()
    outputs = [os.path.relpath(Path(p).resolve(), base) for p in outputs]
    write_json_atomic(
        stamp_path(folder, name),
        {"digest": digest, "state": state, "outputs": sorted(outputs), **extra},
    )
    return digest


def stamp_digest(folder: Path, name: str) -> str | None:
    stamp = read_stamp(folder, name)
    return None if stamp is None else stamp.get("digest")
