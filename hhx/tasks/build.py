"""Build one task end to end: builder table -> splits -> prompt records -> release layout.

A task builder is the module `task.builder` names, checked against the contract when it loads
(hhx.tasks.contract: `build_table`, `render`, `naive_baseline`, and the optional members such as
`reference_answer`, `JSON_SEPARATORS` and `OUTPUT_ORDER`, the official script's publication order
of the rows; without it the rows go out in the canonical sampling order).
Everything else (membership, order, the reference answer, checks, files) is shared here, so the
builders cannot drift apart on the release contract.

A build shows its progress (hhx.progress: a bar on a terminal, a line every interval
elsewhere): one bar over the build's steps (`BUILD_STEPS`, the step under way as its postfix) and,
while prompts render, one over the rows (a census task renders hundreds of thousands).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd

from hhx.bench import splits as sp
from hhx.bench.evalsample import eval_sample_root, select_eval_sample
from hhx.bench.layout import (
    PROMPT_KEYS,
    BenchTask,
    coerce_table,
    load_bench_task,
    official_values,
    table_columns,
    text_columns,
    write_release_task,
)
from hhx.config import TargetType, TaskConfig
from hhx.errors import DataError
from hhx.io import write_csv_atomic
from hhx.progress import progress
from hhx.tasks.context import BuildContext
from hhx.tasks.contract import load_builder
from hhx.tasks.output_order import output_order
from hhx.tasks.prompting import check_prompt
from hhx.tasks.registry import as_task, distribution_vectors

PARALLEL_MIN_ROWS = 20_000  # below this, process start-up costs more than it saves
RENDER_CHUNK_ROWS = 10_000  # rows turned into dicts and rendered at a time (bounds memory)
PROBABILITY_SUM_TOLERANCE = 1e-6  # the scorer's tolerance: gold answers must pass it
BUILD_STEPS = ("table", "splits", "prompts", "release files", "eval sample")


def check_builder_columns(table: pd.DataFrame, task: TaskConfig) -> list[str]:
    """Public columns must be exactly the task's in order; others must start with `_`.

    Some official columns start with `_` too (the SCE background `_REGION_CAT`, ...): a column
    is public when the task names it, internal when it starts with `_` and the task does not.
    """
    expected = table_columns(task)
    named = set(expected)
    public = [c for c in table.columns if c in named or not str(c).startswith("_")]
    if public != expected:
        extra = [c for c in public if c not in expected]
        missing = [c for c in expected if c not in public]
        detail = []
        if missing:
            detail.append(f"missing {missing}")
        if extra:
            detail.append(f"unexpected {extra} (prefix internal columns with '_')")
        if not detail:
            detail.append(f"order differs; expected {expected}")
        raise DataError(f"task {task.name}: builder table columns: {'; '.join(detail)}")
    return expected


# --------------------------------------------------------------------------------------------
# The reference answer (spec 4.2, 9.3)


def _number(value: Any, where: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise DataError(f"{where}: {value!r} is not a number") from None
    if not math.isfinite(x):
        raise DataError(f"{where}: target is missing or not finite ({value!r})")
    return x


def answer_values(row: Mapping[str, Any], task: TaskConfig) -> list[Any]:
    """The gold answer list: labels, numbers or probability vectors.

    A number is written as the float the official renderer passes to `json.dumps`
    (`float(row[target])`, so a whole value is `[586.0]`, never `[586]`; a zero keeps its sign).
    A task whose official renderer rounds or types its answer otherwise (ints, 2 or 3
    decimals) says so in its builder's `reference_answer` hook."""
    where = f"task {task.name} id {row.get('id')!r} time {row.get('time')!r}"
    if task.target_type is TargetType.categorical:
        return [str(row[col]) for col in task.targets]
    if task.target_type is TargetType.numeric:
        return [_number(row[col], f"{where} column {col}") for col in task.targets]
    out = []
    for dist in task.distributions:
        raw = [float(_number(row[c], f"{where} column {c}")) for c in dist.columns]
        values = [float(v) for v in distribution_vectors(dist, np.array([raw]))[0]]
        if (
            any(v < 0.0 or v > 1.0 for v in values)
            or abs(sum(values) - 1.0) > PROBABILITY_SUM_TOLERANCE
        ):
            raise DataError(
                f"{where}: distribution {dist.name} = {values} must lie in [0, 1] and sum to 1 "
                f"(±{PROBABILITY_SUM_TOLERANCE}); normalise it in the builder"
            )
        out.append(values)
    return out


def _month(time: str) -> int:
    return int(str(time)[5:7])


def render_records(
    full: Sequence[Mapping[str, Any]],
    public: Sequence[Mapping[str, Any]],
    task: TaskConfig,
    module: ModuleType,
) -> list[dict[str, str]]:
    """Prompt records for rows (full rows go to the builder; public rows give keys and answers)."""
    records = []
    # Optional builder hooks: `reference_answer(row, task) -> list` writes the gold answer where
    # the official renderer rounds or types it its own way (e.g. `[5.0]`, 3-decimal vectors);
    # `JSON_SEPARATORS` (the PSID job-loss tasks write compact JSON records).
    own_answer = getattr(module, "reference_answer", None)
    separators = getattr(module, "JSON_SEPARATORS", None)
    for row, pub in zip(full, public, strict=True):
        system, user = module.render(row, task)
        check_prompt(system, user, task, _month(pub["time"]))
        naive = module.naive_baseline(row, task)
        where = f"task {task.name} id {pub['id']!r} time {pub['time']!r}"
        if not isinstance(naive, list):
            raise DataError(
                f"{where}: naive_baseline must return a list, got {type(naive).__name__}"
            )
        try:
            naive_json = json.dumps(naive, allow_nan=False, separators=separators)
        except (TypeError, ValueError) as exc:
            raise DataError(
                f"{where}: naive_baseline {naive!r} is not finite JSON ({exc})"
            ) from None
        records.append(
            {
                "id": pub["id"],
                "time": pub["time"],
                "release_date": pub["release_date"],
                "system": system,
                "user": user,
                "assistant": json.dumps(
                    own_answer(row, task) if own_answer else answer_values(pub, task),
                    allow_nan=False,
                    separators=separators,
                ),
                "naive_baseline": naive_json,
            }
        )
    return records


def _worker_module(name: str, file: str | None) -> ModuleType:
    """The builder module inside a joblib worker: by name, else from its file (a worker that
    started before the builder's folder joined sys.path cannot import it by name)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        if not file:
            raise
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"builder module {name!r} cannot be loaded from {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # by name from now on (the prompt checks look its rules up)
    spec.loader.exec_module(module)
    return module


def _render_chunk(
    module_name: str,
    module_file: str | None,
    task: TaskConfig,
    full: list[dict],
    public: list[dict],
) -> list[dict[str, str]]:
    return render_records(full, public, task, _worker_module(module_name, module_file))


def _chunk_bounds(n: int, pieces: int) -> list[tuple[int, int]]:
    """Row ranges: `pieces` equal ones, none longer than RENDER_CHUNK_ROWS."""
    pieces = max(pieces, -(-n // RENDER_CHUNK_ROWS), 1)
    bounds = np.linspace(0, n, pieces + 1).astype(int).tolist()
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def render_all(
    full: pd.DataFrame, public: pd.DataFrame, task: TaskConfig, module: ModuleType, n_jobs: int
) -> pd.DataFrame:
    """All prompt records, in row order; in joblib workers when the table is large.

    Rows become dicts a chunk at a time (a dict per row of a wide table costs kilobytes, so the
    whole table's dicts would outweigh its prompts), in workers as they are dispatched.
    """
    parallel = n_jobs > 1 and len(full) > PARALLEL_MIN_ROWS
    bounds = _chunk_bounds(len(full), n_jobs * 4 if parallel else 1)

    def rows(a: int, b: int) -> tuple[list[dict], list[dict]]:
        return full.iloc[a:b].to_dict("records"), public.iloc[a:b].to_dict("records")

    if parallel:
        from joblib import Parallel, delayed

        name, file = module.__name__, getattr(module, "__file__", None)
        chunks = Parallel(n_jobs=n_jobs, return_as="generator")(
            delayed(_render_chunk)(name, file, task, *rows(a, b)) for a, b in bounds
        )
    else:
        chunks = (render_records(*rows(a, b), task, module) for a, b in bounds)
    records: list[dict[str, str]] = []
    bar = progress(total=len(full), desc=f"task {task.name} prompts", unit="row", leave=False)
    try:
        for chunk in chunks:  # in row order (joblib's ordered generator)
            records += chunk
            bar.update(len(chunk))
    finally:
        bar.close()
    # Object columns keep the rendered Python strings (no copy of the text into Arrow strings).
    return pd.DataFrame(records, columns=list(PROMPT_KEYS), dtype=object)


def _steps_frame(steps: Any, task: TaskConfig) -> pd.DataFrame | None:
    if steps is None:
        return None
    if isinstance(steps, pd.DataFrame):
        return steps
    try:
        return pd.DataFrame(list(steps))
    except (TypeError, ValueError):
        raise DataError(
            f"task {task.name}: table.attrs['construction_steps'] must be a DataFrame "
            "or a list of dicts"
        ) from None


# --------------------------------------------------------------------------------------------


def build_task(ctx: BuildContext, root: str | Path, *, synthetic: bool) -> BenchTask:
    """Build `ctx.task` with its builder and publish it under `root` in the release layout.

    Exported rows are published in the builder's OUTPUT_ORDER, else in the canonical order
    (table = prompts = sidecar order); the construction steps the builder leaves in
    `table.attrs["construction_steps"]` go to `<root>/build_reports/<task>_steps.csv`; numeric
    columns the official frame holds as floats although integral may be listed in
    `table.attrs["float_columns"]`. The task's eval-sample cells are (re)written under
    `<root>_evalsample` (the official eval-sample layout). Returns the task loaded back from disk.
    """
    task = as_task(ctx.task)
    bar = progress(total=len(BUILD_STEPS), desc=f"task {task.name} build", unit="step")
    bar.set_postfix_str(BUILD_STEPS[0])

    def done(step: str) -> None:
        """The step before `step` is done: `step` is the one under way now."""
        bar.set_postfix_str(step)
        bar.update(1)

    try:
        return _build_task(ctx, task, Path(root), synthetic, done)
    finally:
        bar.close()


def _build_task(ctx: BuildContext, task: TaskConfig, root: Path, synthetic: bool,
                done: Callable[[str], None]) -> BenchTask:
    module = load_builder(task)
    table = module.build_table(ctx)
    if not isinstance(table, pd.DataFrame):
        raise DataError(
            f"task {task.name}: {task.builder}.build_table returned "
            f"{type(table).__name__}, not a DataFrame"
        )
    steps = _steps_frame(table.attrs.get("construction_steps"), task)
    public_cols = check_builder_columns(table, task)
    # Macro columns come from the macro-context floats in the reference too: float text always.
    macro = set(getattr(ctx.macro_context, "columns", ())) - set(text_columns(task))
    float_columns = list(dict.fromkeys([*table.attrs.get("float_columns", ()),
                                        *(c for c in public_cols if c in macro)]))
    table = table.reset_index(drop=True)
    done("splits")

    key_cols = ["id", "time", "release_date"]
    typed = sp.typed_id_column(table, task)
    if typed is not None and typed not in key_cols:
        key_cols.append(typed)
    sidecar = sp.assign_splits(table[key_cols], task)
    declared = getattr(module, "OUTPUT_ORDER", None)
    if declared is None:
        canon = sp.canonical_order(table[key_cols], task)
    else:  # the official script's publication order (hhx/tasks/output_order.csv)
        canon = output_order(table, declared, task.name)
    rows = canon[sidecar["exported"].to_numpy()[canon]]
    full = table.iloc[rows].reset_index(drop=True)
    del table  # the eligible rows outnumber the exported ones (the cap): free them before rendering
    public = coerce_table(
        full[public_cols], task, f"task {task.name} builder table", float_columns=float_columns
    )
    done("prompts")
    # Render from the values the official renderer reads back from the published CSV (pandas
    # 2.2.3's converter: 5.1049999999999995 is shown as 5.11), so every builder shows them alike.
    reread = official_values(public, task)
    text = set(text_columns(task))
    for col in public_cols:
        if col not in text:
            full[col] = reread[col].to_numpy()

    # the builder module, checked against the TaskBuilder protocol when it loaded
    prompts = render_all(full, reread, task, module, max(1, int(ctx.n_jobs)))  # type: ignore[arg-type]
    done("release files")
    write_release_task(root, task, public, prompts, sidecar, synthetic=synthetic,
                       compact_prompts=getattr(module, "JSON_SEPARATORS", None) is not None)
    del full, public, reread, prompts, sidecar  # freed before the release is read back
    if steps is not None:
        write_csv_atomic(root / "build_reports" / f"{task.name}_steps.csv", steps)
    done("eval sample")
    select_eval_sample(root, eval_sample_root(root), [task.name], update=True)
    bench = load_bench_task(
        root, task, layout="release", source="demo" if synthetic else "raw", synthetic=synthetic
    )
    done("")
    return bench
