"""Rewrite references to moved modules and data files, from a map of `old new` lines.

The map (default: MOVES.txt at the repository root) holds one move a line: a dotted module name
(`hhx.surveys.cex.interview hhx.surveys.cex.interview`) or a file path with a slash
(`hhx/surveys/mich/mich_labels.csv hhx/surveys/mich/mich_labels.csv`). In the files given (folders:
their .py, .yaml, .md, .toml, .txt, .cfg and .ini files) it rewrites

- `from pkg import old_module [as name]` -> `from new.parent import leaf as name` (the local name
  is kept, so the code below the import is unchanged; comments inside an import list that is
  split this way are dropped);
- every dotted name that starts with an old module (imports, `_target_`/`builder` strings,
  `mock.patch` targets, logger names, docstrings): `hhx.surveys.psid.shelf.build` ->
  `hhx.surveys.psid.shelf.build`;
- file paths of moved modules and data files (`hhx/surveys/cps/ipums.py`, also written
  relative to hhx/ as `surveys/cps/ipums.py`);

then sorts the imports of the rewritten Python files with ruff (`--no-sort`: leave them). Running
it again changes nothing: a name already under a module's new package is left alone.

    python tools/apply_moves.py hhx tests benchmarks tools conf README.md
    python tools/apply_moves.py --check tests      # exit 1 if anything would change
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

SUFFIXES = {".py", ".yaml", ".yml", ".md", ".toml", ".txt", ".cfg", ".ini"}
SKIP_DIRS = {".git", ".venv", "__pycache__", "node_modules", ".pytest_cache", ".ruff_cache"}
_FROM = re.compile(
    r"^(?P<indent>[ \t]*)from[ \t]+(?P<pkg>[\w.]+)[ \t]+import[ \t]+"
    r"(?P<names>\([^)]*\)|[^\n]*)", re.M)
_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.\w+)+")
_PATH = re.compile(r"(?<![\w./-])(?:hhx/)?surveys/(?:\w+/)*\w+\.(?:py|csv)")


class Moves:
    def __init__(self, lines: list[str]):
        self.modules: dict[str, str] = {}
        self.paths: dict[str, str] = {}
        for n, line in enumerate(lines, 1):
            parts = line.split()
            if not parts or line.lstrip().startswith("#"):
                continue
            if len(parts) != 2:
                sys.exit(f"apply_moves: map line {n}: expected `old new`, got {line!r}")
            old, new = parts
            if "/" in old:
                self.paths[old] = new
            else:
                self.modules[old] = new
                self.paths[old.replace(".", "/") + ".py"] = new.replace(".", "/") + ".py"
        self.new = set(self.modules.values())
        # Prefixes of new module names (packages made by the move): `a.b` for `a.b.c`.
        self.new_prefixes = {".".join(m.split(".")[:i]) for m in self.new
                             for i in range(1, m.count(".") + 1)}

    def is_new(self, name: str) -> bool:
        return name in self.new or name in self.new_prefixes

    def dotted(self, name: str) -> str:
        """`old.module[.attr...]` -> `new.module[.attr...]`; anything else unchanged."""
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            head = ".".join(parts[:i])
            if head in self.modules:
                if i < len(parts) and self.is_new(f"{head}.{parts[i]}"):
                    return name  # already below the module's new package
                return ".".join([self.modules[head], *parts[i:]])
        return name

    def path(self, text: str) -> str:
        short = not text.startswith("hhx/")
        full = f"hhx/{text}" if short else text
        if full not in self.paths:
            return text
        new = self.paths[full]
        return new.removeprefix("hhx/") if short else new


def _split_names(clause: str) -> list[tuple[str, str | None]]:
    """`a as b, c` / `(a,\n b,  # note\n)` -> [(a, b), (c, None)]."""
    text = re.sub(r"#[^\n]*", "", clause).strip().strip("()")
    out: list[tuple[str, str | None]] = []
    for part in text.replace("\\\n", " ").replace("\n", " ").split(","):
        words = part.split()
        if words:
            out.append((words[0], words[2] if len(words) == 3 and words[1] == "as" else None))
    return out


def _from_line(indent: str, pkg: str, names: list[tuple[str, str | None]]) -> str:
    items = [n if a is None else f"{n} as {a}" for n, a in names]
    line = f"{indent}from {pkg} import {', '.join(items)}"
    if len(line) <= 100:
        return line
    body = "".join(f"{indent}    {item},\n" for item in items)
    return f"{indent}from {pkg} import (\n{body}{indent})"


def _rewrite_from(m: re.Match[str], moves: Moves) -> str:
    indent, pkg, clause = m["indent"], m["pkg"], m["names"]
    if pkg.startswith("."):
        return m[0]
    names = _split_names(clause)
    moved = [(n, a) for n, a in names if f"{pkg}.{n}" in moves.modules]
    if any(moves.is_new(f"{pkg}.{n}") for n, _ in names):
        new_pkg = pkg  # `from pkg import leaf`: pkg is (already) the new package
    else:
        new_pkg = moves.dotted(pkg)
    if not moved:
        return m[0] if new_pkg == pkg else m[0].replace(pkg, new_pkg, 1)
    lines = []
    kept = [(n, a) for n, a in names if (n, a) not in moved]
    if kept:
        lines.append(_from_line(indent, new_pkg, kept))
    for n, a in moved:
        parent, _, leaf = moves.modules[f"{pkg}.{n}"].rpartition(".")
        alias = a or n
        lines.append(_from_line(indent, parent, [(leaf, None if alias == leaf else alias)]))
    return "\n".join(lines)


def rewrite(text: str, moves: Moves) -> str:
    out: list[str] = []
    pos = 0
    for m in _FROM.finditer(text):
        out.append(_DOTTED.sub(lambda d: moves.dotted(d[0]), text[pos:m.start()]))
        out.append(_rewrite_from(m, moves))
        pos = m.end()
    out.append(_DOTTED.sub(lambda d: moves.dotted(d[0]), text[pos:]))
    return _PATH.sub(lambda p: moves.path(p[0]), "".join(out))


def files_under(paths: list[str], exclude: set[Path]) -> list[Path]:
    found: list[Path] = []
    for given in paths:
        p = Path(given)
        if p.is_file():
            found.append(p)
        elif p.is_dir():
            found.extend(f for f in sorted(p.rglob("*"))
                         if f.is_file() and f.suffix in SUFFIXES
                         and not SKIP_DIRS & set(f.parts))
        else:
            sys.exit(f"apply_moves: {given}: no such file or folder")
    return [f for f in found if f.resolve() not in exclude]


def sort_imports(files: list[Path]) -> None:
    ruff = Path(sys.executable).with_name("ruff")
    exe = str(ruff) if ruff.is_file() else shutil.which("ruff")
    py = [str(f) for f in files if f.suffix == ".py"]
    if exe and py:
        subprocess.run([exe, "check", "--quiet", "--select", "I", "--fix", *py], check=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help="files or folders to rewrite")
    ap.add_argument("--map", default=str(Path(__file__).resolve().parents[1] / "MOVES.txt"))
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if needed")
    ap.add_argument("--no-sort", action="store_true", help="do not sort the imports with ruff")
    args = ap.parse_args(argv)
    map_path = Path(args.map)
    if not map_path.is_file():
        sys.exit(f"apply_moves: map {map_path} not found (give it with --map)")
    moves = Moves(map_path.read_text().splitlines())
    changed = []
    for f in files_under(args.paths, {map_path.resolve()}):
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite(text, moves)
        if new != text:
            changed.append(f)
            if not args.check:
                f.write_text(new, encoding="utf-8")
    for f in changed:
        print(f"{'would rewrite' if args.check else 'rewrote'} {f}")
    if args.check:
        return 1 if changed else 0
    if changed and not args.no_sort:
        sort_imports(changed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
