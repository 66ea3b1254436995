"""What a task builder receives: the task, where the survey intermediates are, the macro context.

Every builder reads intermediates through `BuildContext.intermediate` (or `intermediate_path`),
which refuses in one line an intermediate that is absent or lacks a column the task reads,
naming the file, the columns and the build command that writes them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from hhx.config import TaskConfig
from hhx.errors import DataError


@dataclass
class BuildContext:
    task: TaskConfig
    intermediate_dir: Path
    # Macro context keyed by `eligible_origin_q_index` (hhx.surveys.macro.fred_qd.build_macro_context).
    macro_context: pd.DataFrame
    synthetic: bool = False
    n_jobs: int = 1

    def intermediate(
        self, name: str, columns: list[str] | None = None, rows: np.ndarray | None = None
    ) -> pd.DataFrame:
        """Read one survey intermediate (`<name>.parquet`), checked as `intermediate_path` does.
        `rows` (ascending positions) reads only those records, one row group at a time."""
        path = self.intermediate_path(name, columns or ())
        if rows is None:
            return pd.read_parquet(path, columns=columns)
        return read_parquet_rows(path, columns, rows)

    def intermediate_path(self, name: str, columns: Iterable[str] = ()) -> Path:
        """`<name>.parquet`, refused in one line when it is absent or lacks one of `columns`
        (all the builder will read, so one message names every column an old build lacks)."""
        path = self.intermediate_dir / f"{name}.parquet"
        if not path.is_file():
            sources = [s for s in self.task.intermediates if s != "fred_qd"] or [self.task.survey]
            raise DataError(
                f"{path}: intermediate not found; `python -m hhx stage=build task={self.task.name}`"
                f" builds it (from the sources {', '.join(sources)})"
            )
        wanted = list(dict.fromkeys(columns))
        if wanted:
            have = set(pq.read_schema(path).names)
            absent = [c for c in wanted if c not in have]
            if absent:
                raise DataError(
                    f"{path}: column(s) {absent} missing, which task {self.task.name} needs; "
                    f"rebuild it with `python -m hhx stage=build survey={self._source_of(name)}`"
                )
        return path

    def _source_of(self, name: str) -> str:
        """The source (conf/survey/) that writes intermediate `name`: the longest source name of
        the task's inputs within it (cps_basic <- cps, house_sce_financing <- sce_financing)."""
        inside = [s for s in self.task.intermediates if s in name]
        return max(inside, key=len) if inside else self.task.survey


def read_parquet_rows(path: Path, columns: list[str] | None, rows: np.ndarray) -> pd.DataFrame:
    """`pd.read_parquet(path, columns).iloc[rows]` without holding all records: the real CPS
    intermediate has 79 million of them and a task keeps a few hundred thousand. The index is
    the positions, as `iloc` leaves it."""
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) and (np.any(np.diff(rows) <= 0) or rows[0] < 0):
        raise ValueError("read_parquet_rows: positions must be ascending and unique")
    pf = pq.ParquetFile(path)
    parts, start = [], 0
    for group in range(pf.num_row_groups):
        n = pf.metadata.row_group(group).num_rows
        lo, hi = np.searchsorted(rows, [start, start + n])
        if hi > lo:
            table = pf.read_row_group(group, columns=columns)
            parts.append(table.take(pa.array(rows[lo:hi] - start)))
        start += n
    if len(rows) and rows[-1] >= start:
        raise ValueError(f"read_parquet_rows: position {rows[-1]} beyond {start} rows of {path}")
    if not parts:  # no rows: still the file's columns and types (categories included)
        parts = [pf.read_row_group(0, columns=columns).slice(0, 0) if pf.num_row_groups
                 else pf.schema_arrow.empty_table().select(columns or pf.schema_arrow.names)]
    frame = pa.concat_tables(parts).unify_dictionaries().to_pandas()
    return frame.set_axis(pd.RangeIndex(0, 0) if not len(rows) else pd.Index(rows))
