"""What a task builder receives: the task, where the survey intermediates are, the macro context."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import DataError


@dataclass
class BuildContext:
    task: TaskConfig
    intermediate_dir: Path
    # Macro context keyed by `eligible_origin_q_index` (hhx.surveys.fred_qd.build_macro_context).
    macro_context: pd.DataFrame
    synthetic: bool = False
    n_jobs: int = 1

    def intermediate(self, name: str, columns: list[str] | None = None) -> pd.DataFrame:
        """Read one survey intermediate (`<name>.parquet`); missing -> says which build makes it."""
        path = self.intermediate_dir / f"{name}.parquet"
        if not path.is_file():
            raise DataError(
                f"{path}: intermediate not found; build it first with "
                f"`python -m hhx stage=build survey={self.task.survey}`"
            )
        return pd.read_parquet(path, columns=columns)
