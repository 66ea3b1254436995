"""Load: the task in the official layout (from its data source) and the rows the run evaluates."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from hhx.bench import splits as sp
from hhx.bench.layout import EVAL_SAMPLE_DIRS, BenchTask
from hhx.errors import DataError
from hhx.stages.evaluation.plan import EvalRun
from hhx.tasks.sources import load_bench

RECORD_KEYS = ["id", "time", "release_date", "system", "user", "assistant", "naive_baseline"]


@dataclass(frozen=True, eq=False)
class Selection:
    """The loaded task, its evaluated rows (and their gold records), and how they were chosen."""

    bench: BenchTask
    examples: pd.DataFrame
    gold: list[dict]
    split_rows: int  # rows the split holds
    rule: str  # the rule that chose the evaluated ones, in words

    @property
    def tags(self) -> dict[str, str]:
        return {"hhx.rows_evaluated": str(len(self.examples)),
                "hhx.split_rows": str(self.split_rows), "hhx.selection_rule": self.rule}


def selection_rule(bench: BenchTask, split: str, limit: int | None) -> tuple[int, str]:
    """(rows the split holds, the rule that chose the evaluated ones), for console and MLflow."""
    if bench.layout == "eval_sample":
        return len(bench.prompts), (f"every row of the eval-sample file {split} "
                                    "(data.max_examples=null)")
    assert bench.splits is not None
    if split in EVAL_SAMPLE_DIRS:
        n = sp.EVAL_ROWS_PER_TASK if limit is None else min(int(limit), sp.EVAL_ROWS_PER_TASK)
        if split == "pre_cutoff":
            total = int((bench.splits["split"] == "pre_cutoff_test").sum())
            return total, (f"official eval sample: first {n} of pre_cutoff_test by split_position "
                           f"(data.split=pre_cutoff, data.max_examples={limit})")
        keep = (bench.splits["split"] == "post_cutoff_test") & (
            bench.splits["release_date"].astype("string") > sp.EVAL_POST_CUTOFF_DATE)
        return int(keep.sum()), (
            f"official eval sample: {n} post_cutoff_test rows released after "
            f"{sp.EVAL_POST_CUTOFF_DATE}, interleaved by quarter (data.split=post_cutoff, "
            f"data.max_examples={limit})")
    total = int((bench.splits["split"] == split).sum())
    if limit is None:
        return total, f"every row of {split} (data.max_examples=null)"
    return total, f"first {int(limit)} of {split} by split_position (data.max_examples={limit})"


def load(run: EvalRun) -> Selection:
    """The task from the configured data source and the split's evaluated rows (none: an error)."""
    bench = load_bench(run.data, run.task, run.survey)
    examples = bench.eval_examples(run.split, run.max_examples)
    if examples.empty:
        raise DataError(f"task {run.task.name}: split {run.split} has no rows in {bench.root}")
    split_rows, rule = selection_rule(bench, run.split, run.max_examples)
    return Selection(bench, examples, examples[RECORD_KEYS].to_dict("records"), split_rows, rule)
