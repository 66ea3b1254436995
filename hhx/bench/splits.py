"""Split membership, within-period order and split positions: the reference sampler (spec 5).

Every rule here decides which rows a model is scored on, so it is a line-by-line port of the
reference semantics: seeds from SHA-256, Python's `random.Random.shuffle`, banker's rounding,
integer arithmetic for budgets and the scaled-deficit interleaver. Same inputs -> same sidecar,
whatever the input row order.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from hhx.config import SortOrder, SplitUnit, TaskConfig
from hhx.errors import ConfigError, DataError

CUTOFF_DATE = "2026-01-31"  # release_date <= cutoff -> historical
SAMPLING_SEED = 42
SPLIT_WEIGHTS: dict[str, int] = {"train": 8, "validation": 1, "pre_cutoff_test": 1}
HISTORICAL_EXPORT_CAP = 500_000
HISTORICAL_BUDGETS: dict[str, int] = {
    "train": 400_000,
    "validation": 50_000,
    "pre_cutoff_test": 50_000,
}
MINIMUM_HOLDOUT_ROWS = 100  # row fallback: minimum validation and test rows
EVAL_POST_CUTOFF_DATE = "2026-02-16"  # eval sample keeps post-cutoff rows released after this
EVAL_ROWS_PER_TASK = 200

SPLITS = ("train", "validation", "pre_cutoff_test", "post_cutoff_test")
HISTORICAL_SPLITS = ("train", "validation", "pre_cutoff_test")
SIDECAR_COLUMNS = (
    "id",
    "time",
    "release_date",
    "split",
    "split_quarter",
    "within_period_order",
    "split_position",
)
_ISO_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_QUARTER = re.compile(r"^[0-9]{4}Q[1-4]$")


def stable_seed(seed: int, *parts: object) -> int:
    """First 64 bits of SHA-256 of "seed|part|part..." (the reference's seed derivation)."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"sampling seed must be an integer, got {seed!r}")
    text = "|".join([str(seed), *(str(p) for p in parts)])
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:16], 16)


def _shuffled_range(n: int, seed: int) -> np.ndarray:
    """The permutation `random.Random(seed).shuffle` applies to any list of length n.

    shuffle only draws indices, so shuffling positions equals shuffling the rows themselves.
    """
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return np.asarray(order, dtype=np.int64)


# --------------------------------------------------------------------------------------------
# Dates and quarters


def invalid_iso_dates(values: pd.Series) -> pd.Series:
    """Boolean mask of values that are not canonical, valid `YYYY-MM-DD` dates."""
    text = values.astype("string")
    shaped = text.str.fullmatch(_ISO_DATE.pattern).fillna(False).astype(bool)
    parsed = pd.to_datetime(text.where(shaped), format="%Y-%m-%d", errors="coerce")
    return ~(shaped & parsed.notna())


def quarter_labels(times: pd.Series) -> pd.Series:
    """Calendar quarter `YYYYQn` of ISO observation dates (validated by the caller)."""
    text = times.astype("string")
    month = text.str.slice(5, 7).astype("int64")
    return text.str.slice(0, 4) + "Q" + ((month - 1) // 3 + 1).astype("string")


# --------------------------------------------------------------------------------------------
# Membership


def quarter_split(
    quarters: Sequence[str], task_name: str, *, seed: int = SAMPLING_SEED
) -> dict[str, str]:
    """Assign distinct pre-cutoff quarters to train / validation / pre_cutoff_test (spec 5.3)."""
    if len(set(quarters)) != len(quarters):
        raise DataError(f"task {task_name}: pre-cutoff quarters must be distinct")
    bad = [q for q in quarters if not _QUARTER.fullmatch(q)]
    if bad:
        raise DataError(f"task {task_name}: invalid quarter label {bad[0]!r} (expected YYYYQn)")
    n = len(quarters)
    if n < 3:
        raise DataError(
            f"task {task_name}: {n} pre-cutoff quarter(s) cannot form train/validation/test; "
            "the quarter split needs at least 3 (or set split_unit: row in the task config)"
        )
    shuffled = sorted(quarters)
    random.Random(stable_seed(seed, task_name, "quarter_split")).shuffle(shuffled)
    total = sum(SPLIT_WEIGHTS.values())
    # Python's round is banker's rounding, as in the reference (25 quarters -> round(2.5) = 2).
    n_val = max(1, round(SPLIT_WEIGHTS["validation"] / total * n))
    n_test = max(1, round(SPLIT_WEIGHTS["pre_cutoff_test"] / total * n))
    if n_val + n_test >= n:
        n_val = max(1, min(n_val, n - 2))
        n_test = max(1, min(n_test, n - n_val - 1))
    n_train = n - n_val - n_test
    out = {q: "train" for q in shuffled[:n_train]}
    out.update({q: "validation" for q in shuffled[n_train : n_train + n_val]})
    out.update({q: "pre_cutoff_test" for q in shuffled[n_train + n_val :]})
    return out


def row_fallback_split(
    n_rows: int,
    task_name: str,
    *,
    seed: int = SAMPLING_SEED,
    minimum: int = MINIMUM_HOLDOUT_ROWS,
) -> np.ndarray:
    """Split labels for pre-cutoff rows given in canonical order (row-split tasks, spec 5.3)."""
    total = sum(SPLIT_WEIGHTS.values())
    n_val = max(round(SPLIT_WEIGHTS["validation"] / total * n_rows), minimum)
    n_test = max(round(SPLIT_WEIGHTS["pre_cutoff_test"] / total * n_rows), minimum)
    n_train = n_rows - n_val - n_test
    if min(n_train, n_val, n_test) < 1:
        raise DataError(
            f"task {task_name}: {n_rows} pre-cutoff rows cannot fill validation and test "
            f"({minimum} rows each) and leave training rows"
        )
    perm = _shuffled_range(n_rows, stable_seed(seed, task_name, "row_fallback"))
    labels = np.empty(n_rows, dtype=object)
    labels[perm[:n_val]] = "validation"
    labels[perm[n_val : n_val + n_test]] = "pre_cutoff_test"
    labels[perm[n_val + n_test :]] = "train"
    return labels


# --------------------------------------------------------------------------------------------
# Canonical order


def typed_id_component(task: TaskConfig) -> tuple[str, str] | None:
    """(column, kind) of the task's typed id sort component, e.g. ("CASEID", "integer")."""
    if not task.typed_id:
        return None
    column, _, kind = task.typed_id.partition(":")
    if not column or kind not in ("integer", "string"):
        raise ConfigError(
            f"task {task.name}: typed_id {task.typed_id!r} must be '<column>:integer' "
            "or '<column>:string'"
        )
    return column, kind


def typed_id_column(df: pd.DataFrame, task: TaskConfig) -> str | None:
    """The frame column holding the typed id component (`col` or the internal `_col`)."""
    component = typed_id_component(task)
    if component is None:
        return None
    column = component[0]
    for name in (column, f"_{column}"):
        if name in df.columns:
            return name
    raise DataError(
        f"task {task.name}: canonical order needs column {column!r} (or '_{column}') for "
        f"typed_id {task.typed_id!r}; add it to the builder's table"
    )


def canonical_order(df: pd.DataFrame, task: TaskConfig) -> np.ndarray:
    """Row positions (iloc) of `df` in the task's canonical order (spec 5.4; stable mergesort).

    id_time: (id, time); time_typed_id_id: (time, typed id component, id), all as strings except
    an `:integer` component, which sorts numerically.
    """
    # Plain arrays: aligning on df's own index would silently reorder rows.
    keys = pd.DataFrame({"time": df["time"].astype("string").to_numpy()})
    if task.sort_order is SortOrder.id_time:
        keys.insert(0, "id", df["id"].astype("string").to_numpy())
        columns = ["id", "time"]
    else:
        columns = ["time"]
        name = typed_id_column(df, task)
        if name is not None:
            kind = typed_id_component(task)[1]  # type: ignore[index]
            values = df[name].reset_index(drop=True)
            if kind == "integer":
                numeric = pd.to_numeric(values, errors="coerce")
                bad = numeric.isna() | (numeric % 1 != 0)
                if bad.any():
                    i = int(np.flatnonzero(bad.to_numpy())[0])
                    raise DataError(
                        f"task {task.name}: column {name} row {i} = {values.iloc[i]!r} is not an "
                        f"integer (typed_id {task.typed_id})"
                    )
                keys["typed"] = numeric.astype("int64").to_numpy()
            else:
                text = values.astype("string").str.strip()
                bad = text.isna() | (text == "")
                if bad.any():
                    i = int(np.flatnonzero(bad.to_numpy())[0])
                    raise DataError(
                        f"task {task.name}: column {name} row {i} is empty "
                        f"(typed_id {task.typed_id})"
                    )
                keys["typed"] = text.to_numpy()
            columns.append("typed")
        keys["id"] = df["id"].astype("string").to_numpy()
        columns.append("id")
    ordered = keys.sort_values(columns, kind="mergesort")
    return ordered.index.to_numpy(dtype=np.int64)


# --------------------------------------------------------------------------------------------
# Budgets and interleaving


def allocate_historical_budgets(
    counts: Mapping[str, int],
    *,
    budgets: Mapping[str, int] = HISTORICAL_BUDGETS,
    cap: int = HISTORICAL_EXPORT_CAP,
) -> dict[str, int]:
    """Exported rows per historical split: 400k/50k/50k, spare budget redistributed 8:1:1.

    Each round gives the remainder to splits with spare capacity by weight, floors first, then
    single units by largest fractional part (ties: train, validation, pre_cutoff_test). Integer
    arithmetic throughout, which equals the reference's float shares at these magnitudes.
    """
    if set(counts) != set(HISTORICAL_SPLITS):
        raise ConfigError(
            f"historical counts need exactly {HISTORICAL_SPLITS}, got {sorted(counts)}"
        )
    capacity = {s: int(counts[s]) for s in HISTORICAL_SPLITS}
    if any(v < 0 for v in capacity.values()):
        raise ConfigError(f"historical counts must be non-negative: {capacity}")
    alloc = {s: min(capacity[s], int(budgets[s])) for s in HISTORICAL_SPLITS}
    target = min(sum(capacity.values()), int(cap))
    remaining = target - sum(alloc.values())
    while remaining > 0:
        active = [s for s in HISTORICAL_SPLITS if alloc[s] < capacity[s]]
        weight = sum(SPLIT_WEIGHTS[s] for s in active)
        shares = {s: divmod(remaining * SPLIT_WEIGHTS[s], weight) for s in active}
        for s in active:
            add = min(shares[s][0], capacity[s] - alloc[s])
            alloc[s] += add
            remaining -= add
        if remaining == 0:
            break
        # Largest fractional part first; Python's sort is stable, so equal parts keep split order.
        for s in sorted(active, key=lambda s: -shares[s][1]):
            if remaining == 0:
                break
            if alloc[s] < capacity[s]:
                alloc[s] += 1
                remaining -= 1
    return alloc


def interleave_positions(sizes: Sequence[int], prefix: int) -> list[np.ndarray]:
    """Scaled-deficit interleaving of quarter queues into one split order (spec 5.5).

    `sizes` are the queue lengths in sorted quarter order. For p = 1..min(prefix, total) the
    quarter with the largest deficit p*size_q - used_q*total takes position p (exhausted queues
    excluded, ties -> the last quarter). Returns, per quarter, the positions of its first rows
    in queue (within_period_order) order.

    The deficits are updated incrementally (add sizes, subtract total from the winner), which is
    exact in int64 and keeps each step to two vector operations over quarters.
    """
    size = np.asarray([int(s) for s in sizes], dtype=np.int64)
    if np.any(size <= 0):
        raise ConfigError(f"interleaving needs positive queue sizes, got {list(sizes)}")
    if prefix < 0:
        raise ConfigError(f"interleaving prefix must be non-negative, got {prefix}")
    total = int(size.sum())
    steps = min(int(prefix), total)
    n_q = len(size)
    choice = np.empty(steps, dtype=np.int64)
    if n_q == 1:
        choice[:] = 0
    else:
        floor = np.iinfo(np.int64).min // 2
        deficit = np.zeros(n_q, dtype=np.int64)
        step = size.copy()  # zeroed once a queue is exhausted
        used = [0] * n_q
        limit = size.tolist()
        reverse = deficit[::-1]  # a view: argmax on it picks the last maximum
        last = n_q - 1
        for p in range(steps):
            deficit += step
            q = last - int(reverse.argmax())
            choice[p] = q
            used[q] += 1
            if used[q] == limit[q]:
                step[q] = 0
                deficit[q] = floor
            else:
                deficit[q] -= total
    out = []
    for q in range(n_q):
        out.append(np.flatnonzero(choice == q).astype(np.int64) + 1)
    return out


# --------------------------------------------------------------------------------------------
# The sidecar


def _validate_keys(keys: pd.DataFrame, task: TaskConfig) -> None:
    missing = [c for c in ("id", "time", "release_date") if c not in keys.columns]
    if missing:
        raise DataError(f"task {task.name}: split keys lack column(s) {missing}")
    if keys.empty:
        raise DataError(f"task {task.name}: no eligible rows to split")
    for column in ("id", "time", "release_date"):
        text = keys[column].astype("string")
        empty = text.isna() | (text.str.strip() == "")
        if empty.any():
            i = int(np.flatnonzero(empty.to_numpy())[0])
            raise DataError(f"task {task.name}: column {column} is empty at row {i}")
        if column != "id":
            bad = invalid_iso_dates(text)
            if bad.any():
                i = int(np.flatnonzero(bad.to_numpy())[0])
                raise DataError(
                    f"task {task.name}: column {column} row {i} = {text.iloc[i]!r} is not a valid "
                    "YYYY-MM-DD date"
                )
    dup = keys.duplicated(["id", "time"])
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise DataError(
            f"task {task.name}: duplicate (id, time) = "
            f"({keys['id'].iloc[i]}, {keys['time'].iloc[i]}) "
            f"at row {i}; each (id, time) must be unique"
        )


def assign_splits(
    keys: pd.DataFrame,
    task: TaskConfig,
    *,
    cutoff: str = CUTOFF_DATE,
    seed: int = SAMPLING_SEED,
    budgets: Mapping[str, int] = HISTORICAL_BUDGETS,
    export_cap: int = HISTORICAL_EXPORT_CAP,
    minimum_holdout: int = MINIMUM_HOLDOUT_ROWS,
) -> pd.DataFrame:
    """The full sampling registry of a task's eligible rows, aligned with `keys` (spec 5).

    `keys` holds id, time, release_date (plus the typed id column if the task has one). Returns
    id, time, release_date, split, split_quarter, within_period_order, split_position (Int64, NA
    for rows beyond the budgets) and exported, with the index of `keys`.
    """
    _validate_keys(keys, task)
    n = len(keys)
    ids = keys["id"].astype("string").to_numpy()
    times = keys["time"].astype("string")
    releases = keys["release_date"].astype("string")
    quarter = quarter_labels(times).to_numpy(dtype=object)
    post = (releases > cutoff).to_numpy(dtype=bool)
    rank = np.empty(n, dtype=np.int64)
    rank[canonical_order(keys, task)] = np.arange(n)

    split = np.empty(n, dtype=object)
    split[post] = "post_cutoff_test"
    pre_idx = np.flatnonzero(~post)
    if task.split_unit is SplitUnit.row:
        pre_canonical = pre_idx[np.argsort(rank[pre_idx], kind="stable")]
        split[pre_canonical] = row_fallback_split(
            len(pre_canonical), task.name, seed=seed, minimum=minimum_holdout
        )
    else:
        assignment = quarter_split(sorted(set(quarter[pre_idx].tolist())), task.name, seed=seed)
        split[pre_idx] = [assignment[q] for q in quarter[pre_idx]]

    # Cells (split, quarter) in canonical order, then each cell shuffled with its own seed.
    split_code = pd.Categorical(split, categories=SPLITS).codes.astype(np.int64)
    quarter_codes, quarter_names = pd.factorize(pd.Series(quarter), sort=True)
    by_cell = np.lexsort((rank, quarter_codes, split_code))
    cell_id = split_code[by_cell] * (len(quarter_names) + 1) + quarter_codes[by_cell]
    bounds = np.flatnonzero(np.diff(cell_id)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [n]])
    within = np.zeros(n, dtype=np.int64)
    queues: dict[str, list[tuple[str, np.ndarray]]] = {s: [] for s in SPLITS}
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        rows = by_cell[start:end]
        cell_split = SPLITS[split_code[rows[0]]]
        cell_quarter = str(quarter_names[quarter_codes[rows[0]]])
        perm = _shuffled_range(len(rows), stable_seed(seed, task.name, cell_split, cell_quarter))
        queue = rows[perm]  # rows in within_period_order
        within[queue] = np.arange(1, len(rows) + 1)
        queues[cell_split].append((cell_quarter, queue))

    counts = {s: sum(len(q) for _, q in queues[s]) for s in SPLITS}
    prefix = allocate_historical_budgets(
        {s: counts[s] for s in HISTORICAL_SPLITS}, budgets=budgets, cap=export_cap
    )
    prefix["post_cutoff_test"] = counts["post_cutoff_test"]
    position = np.zeros(n, dtype=np.int64)
    for s in SPLITS:
        if not queues[s]:
            continue
        cells = sorted(queues[s], key=lambda item: item[0])
        arrays = interleave_positions([len(q) for _, q in cells], prefix[s])
        for (_, queue), pos in zip(cells, arrays, strict=True):
            position[queue[: len(pos)]] = pos

    split_position = pd.Series(position).where(position > 0).astype("Int64").array
    out = pd.DataFrame(
        {
            "id": pd.array(ids, dtype="string"),
            "time": pd.array(times.to_numpy(), dtype="string"),
            "release_date": pd.array(releases.to_numpy(), dtype="string"),
            "split": pd.array(split, dtype="string"),
            "split_quarter": pd.array(quarter, dtype="string"),
            "within_period_order": within,
            "split_position": split_position,
            "exported": post | (position > 0),
        },
        index=keys.index,
    )
    return out


def sampling_summary(sidecar: pd.DataFrame, task: TaskConfig, *, cutoff: str = CUTOFF_DATE) -> dict:
    """The reference's per-task sampling counts (spec 5.6 `01_sampling_summary.csv`)."""
    exported = (
        sidecar["exported"].astype(bool)
        if "exported" in sidecar.columns
        else pd.Series(True, index=sidecar.index)
    )
    post = sidecar["release_date"].astype("string") > cutoff
    post = post.fillna(False).astype(bool)
    return {
        "task_id": task.name,
        "full_eligible_rows": len(sidecar),
        "pre_cutoff_eligible_rows": int((~post).sum()),
        "post_cutoff_eligible_rows": int(post.sum()),
        "pre_cutoff_exported_rows": int((~post & exported).sum()),
        "post_cutoff_exported_rows": int((post & exported).sum()),
        "exported_rows": int(exported.sum()),
        "fallback_used": task.split_unit is SplitUnit.row,
    }


def split_prefix(sidecar: pd.DataFrame, split: str, n: int | None) -> pd.DataFrame:
    """Rows of `split` with split_position <= min(n, positioned rows); index and order kept.

    The selection must be exactly positions 1..k, else the sidecar is corrupt. n=None = all
    positioned rows of the split.
    """
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}; valid splits: {', '.join(SPLITS)}")
    if n is not None and (isinstance(n, bool) or int(n) < 0):
        raise ConfigError(f"the number of rows must be a non-negative integer, got {n!r}")
    pos = pd.to_numeric(sidecar["split_position"], errors="coerce")
    pool = (sidecar["split"] == split).fillna(False).to_numpy(dtype=bool) & pos.notna().to_numpy()
    k = int(pool.sum()) if n is None else min(int(n), int(pool.sum()))
    mask = pool & (pos.fillna(0).to_numpy() <= k)
    chosen = np.sort(pos.to_numpy()[mask].astype(np.int64))
    if len(chosen) != k or not np.array_equal(chosen, np.arange(1, k + 1)):
        raise DataError(
            f"split {split}: split_position is not a contiguous prefix 1..{k}; the split sidecar "
            "is corrupt — rebuild or re-download it"
        )
    return sidecar.loc[mask]


def eval_post_cutoff_rows(
    sidecar: pd.DataFrame,
    n: int = EVAL_ROWS_PER_TASK,
    *,
    post_cutoff_date: str = EVAL_POST_CUTOFF_DATE,
) -> pd.DataFrame:
    """The eval sample's post-cutoff cell (spec 6.1); index and sidecar order kept.

    post_cutoff_test rows released after `post_cutoff_date`, per-quarter queues in stored
    within_period_order, re-interleaved by the deficit rule with prefix n. Adds `eval_position`.
    """
    keep = (sidecar["split"] == "post_cutoff_test") & (
        sidecar["release_date"].astype("string") > post_cutoff_date
    )
    pool = sidecar.loc[keep.fillna(False).astype(bool)]
    out = pool.iloc[0:0].copy()
    out["eval_position"] = pd.Series(dtype="int64")
    if pool.empty:
        return out
    order = pd.to_numeric(pool["within_period_order"], errors="raise").to_numpy(dtype=np.int64)
    quarters = pool["split_quarter"].astype("string").to_numpy(dtype=object)
    names = sorted(set(quarters.tolist()))
    queues = []
    for q in names:
        members = np.flatnonzero(quarters == q)
        queues.append(members[np.argsort(order[members], kind="stable")])
    arrays = interleave_positions([len(q) for q in queues], n)
    eval_pos = np.zeros(len(pool), dtype=np.int64)
    for queue, pos in zip(queues, arrays, strict=True):
        eval_pos[queue[: len(pos)]] = pos
    selected = pool.loc[eval_pos > 0].copy()
    selected["eval_position"] = eval_pos[eval_pos > 0]
    return selected
