"""Align the runs of one task on a common example index and decode answers into arrays.

Every model's predictions, the references and the no-change answers become arrays over the same
rows (keyed by `id@time`), so one bootstrap resample selects the same households for all models.
A model without a valid answer for a row (invalid, or never evaluated on it) has `valid=False`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from hhx.config import Backend, TargetType, TaskConfig
from hhx.errors import DataError
from hhx.leaderboard.collect import RunRecord
from hhx.tasks.registry import answer_names

NO_CHANGE = Backend("no_change").value
XGBOOST = Backend("xgboost").value


@dataclass
class Segment:
    """One answer element: its columns in the row array and, for categories, its labels."""

    name: str
    start: int
    stop: int
    labels: list[str] | None = None


@dataclass
class TaskData:
    """All models' answers on one task, aligned row by row."""

    task: TaskConfig
    keys: np.ndarray  # (n,) "id@time", sorted
    release_date: pd.Series  # (n,) datetime64
    segments: list[Segment]
    ref: np.ndarray  # (n, C): floats; category codes for categorical tasks
    naive: np.ndarray  # (n, C) the no-change answer
    preds: dict[str, np.ndarray] = field(default_factory=dict)  # model -> (n, C), NaN/-1 invalid
    valid: dict[str, np.ndarray] = field(default_factory=dict)  # model -> (n,) bool
    runs: dict[str, RunRecord] = field(default_factory=dict)  # model -> run (absent if derived)
    backends: dict[str, str] = field(default_factory=dict)
    derived: set[str] = field(default_factory=set)  # models built from naive_baseline

    @property
    def name(self) -> str:
        return self.task.name

    @property
    def target_type(self) -> str:
        return self.task.target_type.value

    @property
    def mode(self) -> str:
        return self.task.mode.value

    @property
    def n(self) -> int:
        return len(self.keys)

    @property
    def models(self) -> list[str]:
        return list(self.preds)

    @property
    def higher_is_better(self) -> bool:
        return self.task.target_type is TargetType.categorical


def segments_for(task: TaskConfig) -> list[Segment]:
    if task.target_type is TargetType.distribution:
        out, start = [], 0
        for d in task.distributions:
            out.append(Segment(d.name, start, start + len(d.labels), list(d.labels)))
            start += len(d.labels)
        return out
    labels = task.target_type is TargetType.categorical
    return [
        Segment(f.name, i, i + 1, list(f.labels or []) if labels else None)
        for i, f in enumerate(task.fields)
    ]


def _decoder(task: TaskConfig, segments: list[Segment]) -> Callable[[object, str], np.ndarray]:
    """A function from one JSON answer string to its row of floats (codes for categories)."""
    width = segments[-1].stop
    kind = task.target_type
    names = answer_names(task)
    codes = [{lab: float(i) for i, lab in enumerate(s.labels or [])} for s in segments]

    def decode(raw: object, where: str) -> np.ndarray:
        value = json.loads(raw) if isinstance(raw, str) else raw
        if not isinstance(value, list) or len(value) != len(names):
            raise DataError(f"{where}: expected a JSON list of {len(names)} answers, got {raw!r}")
        if kind is TargetType.distribution:
            flat = []
            for seg, vec in zip(segments, value):
                if not isinstance(vec, list) or len(vec) != seg.stop - seg.start:
                    size = seg.stop - seg.start
                    raise DataError(f"{where}: {seg.name} should hold {size} values")
                flat.extend(vec)
            return np.asarray(flat, dtype=float)
        if kind is TargetType.categorical:
            row = np.empty(width)
            for i, (seg, v) in enumerate(zip(segments, value)):
                code = codes[i].get(v if isinstance(v, str) else str(v))
                if code is None:
                    raise DataError(f"{where}: {seg.name} label {v!r} not in {seg.labels}")
                row[i] = code
            return row
        return np.asarray(value, dtype=float)

    return decode


def _decode_column(
    values: pd.Series, decode, where: str, width: int, keys, cache: dict | None = None
) -> np.ndarray:
    """Decode a column of JSON answers; `cache` reuses rows already decoded (references and
    no-change answers repeat in every run of a task)."""
    out = np.full((len(values), width), np.nan)
    cache = {} if cache is None else cache
    for i, raw in enumerate(values.to_numpy()):
        if raw is None or (isinstance(raw, float) and np.isnan(raw)):
            raise DataError(f"{where}: missing value for example {keys[i]}")
        hit = cache.get(raw) if isinstance(raw, str) else None
        if hit is None:
            hit = decode(raw, f"{where} example {keys[i]}")
            if isinstance(raw, str):
                cache[raw] = hit
        out[i] = hit
    return out


def _keys(df: pd.DataFrame) -> np.ndarray:
    return (df["id"].astype(str) + "@" + df["time"].astype(str)).to_numpy()


def build_task_data(
    task: TaskConfig, runs: list[RunRecord], derive_no_change: bool = True
) -> TaskData:
    """Align the runs (one per model) of one task; references must agree across runs."""
    if not runs:
        raise DataError(f"{task.name}: no runs to align")
    segments = segments_for(task)
    width = segments[-1].stop
    decode = _decoder(task, segments)

    # The example index: union of all runs' rows; references/dates must agree where they overlap.
    frames = []
    for r in runs:
        tag = r.tags["hhx.target_type"]
        if tag != task.target_type.value:
            raise DataError(
                f"{r.source}: tag hhx.target_type={tag!r} but task {task.name} "
                f"is {task.target_type.value}; the task config and the run disagree"
            )
        d = r.details
        keys = _keys(d)
        dup = pd.Series(keys).duplicated()
        if dup.any():
            raise DataError(f"{r.source}: details repeat example {keys[dup.to_numpy()][0]}")
        frames.append(pd.DataFrame({"key": keys, "release_date": d["release_date"].astype(str),
                                    "reference": d["reference"], "naive": d["naive_baseline"],
                                    "source": r.source}))
    allrows = pd.concat(frames, ignore_index=True)
    first = allrows.drop_duplicates("key").sort_values("key").reset_index(drop=True)
    keys = first["key"].to_numpy()
    where = f"task {task.name}"
    cache: dict = {}
    ref = _decode_column(first["reference"], decode, f"{where} reference", width, keys, cache)
    naive = _decode_column(first["naive"], decode, f"{where} naive_baseline", width, keys, cache)
    dates = pd.to_datetime(
        first["release_date"].str.slice(0, 10), format="%Y-%m-%d", errors="coerce"
    )
    if dates.isna().any():
        bad = first.loc[dates.isna(), "release_date"].iloc[0]
        raise DataError(f"{where}: release_date {bad!r} is not an ISO date (YYYY-MM-DD)")
    td = TaskData(task=task, keys=keys, release_date=dates, segments=segments, ref=ref, naive=naive)
    pos = pd.Series(np.arange(len(keys)), index=keys)

    for r in runs:
        d = r.details
        rkeys = _keys(d)
        idx = pos.loc[rkeys].to_numpy()
        rref = _decode_column(d["reference"], decode, f"{r.source} reference", width, rkeys, cache)
        rnaive = _decode_column(d["naive_baseline"], decode, f"{r.source} naive_baseline", width,
                                rkeys, cache)
        for name, mine, common in (("reference", rref, ref), ("naive_baseline", rnaive, naive)):
            differs = ~np.all(np.isclose(mine, common[idx], rtol=0, atol=1e-12), axis=1)
            if differs.any():
                key = rkeys[differs][0]
                other = allrows.loc[allrows["key"] == key, "source"].iloc[0]
                raise DataError(
                    f"{task.name}: {name} of example {key} differs between runs {r.source} and "
                    f"{other}; they were evaluated on different data"
                )
        valid = np.zeros(len(keys), dtype=bool)
        pred = np.full((len(keys), width), np.nan)
        ok = d["valid"].astype(bool).to_numpy()
        if (ok & d["parsed_prediction"].isna().to_numpy()).any():
            raise DataError(f"{r.source}: a valid row has no parsed_prediction")
        pred[idx[ok]] = _decode_column(
            d["parsed_prediction"][ok], decode, f"{r.source} parsed_prediction", width, rkeys[ok]
        )
        valid[idx[ok]] = True
        td.preds[r.model] = pred
        td.valid[r.model] = valid
        td.runs[r.model] = r
        td.backends[r.model] = r.backend

    if derive_no_change and NO_CHANGE not in td.backends.values():
        name = NO_CHANGE if NO_CHANGE not in td.preds else f"{NO_CHANGE} (derived)"
        td.preds[name] = naive.copy()
        td.valid[name] = np.ones(len(keys), dtype=bool)
        td.backends[name] = NO_CHANGE
        td.derived.add(name)
    return td


def build_all(
    runs: list[RunRecord],
    load: Callable[[str], TaskConfig],
    derive_no_change: bool = True,
    no_change_name: str | None = None,
) -> dict[str, TaskData]:
    """TaskData for every task in `runs`, keyed by task name (sorted)."""
    by_task: dict[str, list[RunRecord]] = {}
    for r in runs:
        by_task.setdefault(r.task, []).append(r)
    out = {}
    for name in sorted(by_task):
        td = build_task_data(load(name), by_task[name], derive_no_change)
        if no_change_name:  # name derived entries like the no_change runs of other tasks
            for m in list(td.derived):
                if m != no_change_name and no_change_name not in td.preds:
                    _rename(td, m, no_change_name)
        out[name] = td
    return out


def _rename(td: TaskData, old: str, new: str) -> None:
    maps: tuple[dict, ...] = (td.preds, td.valid, td.backends)  # each keyed by model
    for d in maps:
        d[new] = d.pop(old)
    td.derived.discard(old)
    td.derived.add(new)


def task_loader(configs: Mapping[str, TaskConfig] | None) -> Callable[[str], TaskConfig]:
    """Tasks from `configs` first, then from conf/task/*.yaml."""
    from hhx.tasks.registry import load_task

    def load(name: str) -> TaskConfig:
        if configs and name in configs:
            return configs[name]
        return load_task(name)

    return load
