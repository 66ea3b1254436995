"""List the Python files over the line limit and the functions over the function limit.

The project's sizes (README standards): files under ~600 lines, functions under ~80. A function
counts from its `def` line (decorators excluded) to its last line, nested functions included in
their parent's count and listed on their own too.

    python tools/size_limits.py hhx/surveys            # prints violations, exit 1 if any
    python tools/size_limits.py --max-file 600 --max-function 80 hhx
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

MAX_FILE = 600
MAX_FUNCTION = 80


def violations(root: Path, max_file: int = MAX_FILE, max_function: int = MAX_FUNCTION
               ) -> list[str]:
    """`path: N lines` and `path:line name(): N lines` for every file / function over its limit."""
    out: list[str] = []
    files = [root] if root.is_file() else sorted(root.rglob("*.py"))
    for path in files:
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > max_file:
            out.append(f"{path}: {lines} lines (file limit {max_file})")
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > max_function:
                    out.append(f"{path}:{node.lineno} {node.name}(): {size} lines "
                               f"(function limit {max_function})")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--max-file", type=int, default=MAX_FILE)
    ap.add_argument("--max-function", type=int, default=MAX_FUNCTION)
    args = ap.parse_args(argv)
    found = [v for p in args.paths
             for v in violations(Path(p), args.max_file, args.max_function)]
    print("\n".join(found) if found else "no violations")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
