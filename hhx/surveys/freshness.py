"""Is a built intermediate (or task) still what its inputs would give? Content, not paths.

A build's *state* is what its output depends on: the builder's code (its module, every reader
module it imports and the mapping tables they name: `code_files`), its settings, the content
fingerprints of its raw inputs (spec 1.1 rule, `input_sha256`) and the states of what it read.
The state is stored beside the outputs after a successful build; the next build compares, so
the same folder named by a relative and by an absolute path, or a file touched but unchanged,
is still fresh, while a changed byte, setting or builder rebuilds.

Hashing a multi-gigabyte raw file takes a while, so digests are cached per resolved path, size
and modification time (`fingerprints.json` in the state folder).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hhx.errors import DataError
from hhx.io import is_temp_name, write_json_atomic
from hhx.surveys.base import input_sha256

STATE_DIR = ".hhx"  # inside the intermediate folder (and the release root)


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


# What a builder's output can depend on: the survey readers' code and their shared helpers (the
# parquet writer and its Arrow schema included). Modules outside (hhx.config, hhx.errors, progress
# bars) do not change what a reader writes, and counting them would rebuild every source (hours
# on real extracts) for a new setting or message.
CODE_SCOPE = ("hhx.surveys", "hhx.io", "hhx.arrow_schema")
# Data tables shipped beside a module (codes, labels, layouts) that its source names literally.
DATA_SUFFIXES = (".csv", ".json", ".yaml")
HHX_DIR = Path(__file__).resolve().parents[1]  # the hhx package's folder


def module_file(name: str) -> Path | None:
    """The source file of an hhx module, found without importing it (None: not a module)."""
    base = HHX_DIR.joinpath(*name.split(".")[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _in_scope(name: str) -> bool:
    return any(name == s or name.startswith(s + ".") for s in CODE_SCOPE)


# Import statements and quoted table names are read with patterns, not parsed: every evaluate of
# the demo checks its sources' freshness, and a parse costs ~3 ms a file where the patterns take
# 1.5 ms for a whole builder. A docstring line that reads like an import only adds a file.
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)"
                     r"|import[ \t]+([^\n]*))", re.M)
_SUFFIX = "|".join(re.escape(s) for s in DATA_SUFFIXES)
_TABLE = re.compile(rf"[\"']([\w.-]+(?:{_SUFFIX}))[\"']")


def _names(clause: str) -> list[str]:
    """`a as b, c` / `(a,\n b)` -> [a, c] (comments dropped)."""
    text = re.sub(r"#[^\n]*", "", clause).strip("() \t\n\\")
    return [part.split()[0] for part in text.replace("\n", " ").split(",") if part.strip()]


def _imported(source: str, name: str, is_package: bool) -> set[str]:
    """Module names an hhx module imports anywhere (functions included), relative ones resolved."""
    package = name.split(".") if is_package else name.split(".")[:-1]
    found: set[str] = set()
    for base, listed, plain in _IMPORT.findall(source):
        if plain:
            found.update(_names(plain))
            continue
        dots = len(base) - len(base.lstrip("."))
        if dots:
            rest = base[dots:]
            base = ".".join([*package[: len(package) - dots + 1], *([rest] if rest else [])])
        found.add(base)
        found.update(f"{base}.{n}" for n in _names(listed))  # `from pkg import module`
    return found


def code_files(*modules: str) -> list[Path]:
    """The files whose content a builder's output depends on: the modules, every module in
    CODE_SCOPE they import (transitively), and the data tables beside them that their sources
    name (e.g. `Path(__file__).with_name("psid_main_study_vars.csv")`)."""
    files: set[Path] = set()
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = module_file(name)
        if path is None:
            continue  # `from hhx.surveys.x import a_function`: the module itself is listed too
        files.add(path)
        source = path.read_text(encoding="utf-8")
        todo.extend(m for m in _imported(source, name, path.name == "__init__.py")
                    if _in_scope(m))
        files.update(t for t in (path.parent / n for n in _TABLE.findall(source)) if t.is_file())
    return sorted(files)


def code_digest(*modules: str) -> str:
    """sha256 over `code_files(*modules)` (names relative to hhx/, then bytes): a changed
    builder, a helper module it imports or a mapping table it reads invalidates what it built."""
    missing = [m for m in modules if module_file(m) is None]
    if missing:
        raise DataError(f"module {missing[0]!r} not found")
    digest = hashlib.sha256()
    for path in code_files(*modules):
        digest.update(path.relative_to(HHX_DIR).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


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
