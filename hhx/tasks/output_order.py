"""The publication order of a task's rows: the builder's declared sort keys.

Each official task script publishes its exported rows sorted by its own columns (a stable
mergesort of the pool in its row order, every column compared in its own type: an id held as
text sorts as text, "103" < "40"; an id held as a number sorts as a number, 40 < 103). The
canonical sampling order (hhx.bench.splits.canonical_order) is another order and only decides
the splits.

A builder declares its publication order as a module constant

    OUTPUT_ORDER = ("time:text", "id:number", "_sample_id:number")

a tuple of "<column>:<kind>" over its table's columns (public, or internal `_` columns), kind
`text` (compared as strings) or `number` (compared as numbers; every value must be one). Rows
that tie on every key keep the builder's row order. A builder without a declaration publishes
in the canonical order.

`hhx/tasks/output_order.csv` writes down, per task, the official sort columns and their types
(with the script they come from) and the declaration that reproduces them; the tests check
every builder against it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.errors import ConfigError, DataError

KINDS = ("text", "number")
FACTS_PATH = Path(__file__).with_name("output_order.csv")
FACTS_COLUMNS = ("task", "official_sort_columns", "official_kinds", "output_order", "source",
                 "note")


def parse_output_order(spec: Sequence[str], task_name: str) -> list[tuple[str, str]]:
    """(column, kind) pairs of an OUTPUT_ORDER declaration; a bad one is a ConfigError."""
    if isinstance(spec, str) or not isinstance(spec, Sequence) or not spec:
        raise ConfigError(
            f"task {task_name}: the builder's OUTPUT_ORDER must be a non-empty tuple of "
            f"'<column>:<kind>' strings (kind {' or '.join(KINDS)}), got {spec!r}"
        )
    keys = []
    for item in spec:
        column, _, kind = str(item).rpartition(":")
        if not column or kind not in KINDS:
            raise ConfigError(
                f"task {task_name}: OUTPUT_ORDER entry {item!r} must be '<column>:<kind>' "
                f"with kind {' or '.join(KINDS)}"
            )
        keys.append((column, kind))
    return keys


def _sort_key(values: pd.Series, column: str, kind: str, task_name: str) -> np.ndarray:
    if kind == "number":
        numbers = pd.to_numeric(values, errors="coerce")
        bad = numbers.isna().to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"task {task_name}: publication order column {column} row {i} = "
                f"{values.iloc[i]!r} is not a number (OUTPUT_ORDER '{column}:number')"
            )
        return numbers.to_numpy(dtype=np.float64 if numbers.dtype.kind == "f" else np.int64)
    text = values.astype("string")
    if text.isna().any():
        i = int(np.flatnonzero(text.isna().to_numpy())[0])
        raise DataError(
            f"task {task_name}: publication order column {column} row {i} is missing "
            f"(OUTPUT_ORDER '{column}:text')"
        )
    return text.to_numpy(dtype=object)


def output_order(table: pd.DataFrame, spec: Sequence[str], task_name: str) -> np.ndarray:
    """Row positions (iloc) of `table` in the declared publication order (stable mergesort)."""
    keys = parse_output_order(spec, task_name)
    missing = [c for c, _ in keys if c not in table.columns]
    if missing:
        raise DataError(
            f"task {task_name}: OUTPUT_ORDER names column(s) {missing} that the builder's "
            "table lacks; add them (internal columns start with '_') or fix the declaration"
        )
    # Plain arrays on a fresh index: the table's own index must not reorder anything.
    frame = pd.DataFrame({
        f"k{i}": _sort_key(table[column].reset_index(drop=True), column, kind, task_name)
        for i, (column, kind) in enumerate(keys)
    })
    ordered = frame.sort_values(list(frame.columns), kind="mergesort")
    return ordered.index.to_numpy(dtype=np.int64)


def output_order_facts(path: Path = FACTS_PATH) -> pd.DataFrame:
    """The per-task facts table (one row per task), checked for its columns and kinds."""
    facts = pd.read_csv(path, dtype=str, keep_default_na=False)
    if tuple(facts.columns) != FACTS_COLUMNS:
        raise DataError(f"{path}: columns must be {list(FACTS_COLUMNS)}")
    if facts["task"].duplicated().any():
        raise DataError(f"{path}: task {facts['task'][facts['task'].duplicated()].iloc[0]} "
                        "is listed twice")
    for row in facts.itertuples():
        columns = row.official_sort_columns.split(";")
        kinds = row.official_kinds.split(";")
        if len(columns) != len(kinds) or not set(kinds) <= {*KINDS, "date"}:
            raise DataError(f"{path}: task {row.task}: official_kinds must give one of "
                            f"text, number, date per official sort column")
        parse_output_order(row.output_order.split(";"), row.task)
    return facts
