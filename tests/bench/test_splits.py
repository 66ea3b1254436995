"""Split membership, order and positions follow spec section 5 on constructed cases."""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pandas as pd
import pytest

from hhx.bench import splits as sp
from hhx.config import FieldConfig, Mode, Shape, SortOrder, SplitUnit, TargetType, TaskConfig
from hhx.errors import DataError

TINY = {"train": 8, "validation": 1, "pre_cutoff_test": 1}


def toy_task(
    name: str = "toy_task",
    *,
    split_unit: SplitUnit = SplitUnit.quarter,
    sort_order: SortOrder = SortOrder.time_typed_id_id,
    typed_id: str | None = None,
) -> TaskConfig:
    return TaskConfig(
        name=name,
        topic="Consumption and saving",
        mode=Mode.baseline,
        survey="toy",
        target_type=TargetType.numeric,
        shape=Shape.array,
        fields=[FieldConfig(name="amount")],
        targets=["y"],
        split_unit=split_unit,
        sort_order=sort_order,
        typed_id=typed_id,
    )


def quarter_keys(
    n_quarters: int, per_quarter: int, *, start: int = 2000, post: int = 0
) -> pd.DataFrame:
    """Rows spread over n_quarters (released a month later) + `post` rows released after cutoff."""
    rows = []
    for q in range(n_quarters):
        year, month = start + q // 4, 3 * (q % 4) + 1
        for i in range(per_quarter):
            rows.append(
                (f"h{i:04d}", f"{year:04d}-{month:02d}-01", f"{year:04d}-{month + 1:02d}-15")
            )
    for i in range(post):
        rows.append(
            (f"p{i:04d}", f"2025-{10 + i % 3:02d}-01", "2026-03-01" if i % 2 else "2026-02-10")
        )
    return pd.DataFrame(rows, columns=["id", "time", "release_date"])


# --------------------------------------------------------------------------------------------
# Seeds


def test_stable_seed_is_first_64_bits_of_sha256():
    expected = int(hashlib.sha256(b"42|labor_cps_jobfind|quarter_split").hexdigest()[:16], 16)
    assert sp.stable_seed(42, "labor_cps_jobfind", "quarter_split") == expected
    assert sp.stable_seed(42, "a") != sp.stable_seed(43, "a")
    assert 0 <= expected < 2**64


# --------------------------------------------------------------------------------------------
# Quarter split


@pytest.mark.parametrize(
    ("n", "n_val", "n_test"),
    [(25, 2, 2), (15, 2, 2), (35, 4, 4), (3, 1, 1), (4, 1, 1), (130, 13, 13)],
)
def test_quarter_split_counts_use_bankers_rounding_and_minimum_one(n, n_val, n_test):
    quarters = [f"{2000 + i // 4}Q{i % 4 + 1}" for i in range(n)]
    out = sp.quarter_split(quarters, "toy_task")
    counts = pd.Series(out).value_counts()
    assert counts.get("validation", 0) == n_val
    assert counts.get("pre_cutoff_test", 0) == n_test
    assert counts.get("train", 0) == n - n_val - n_test
    assert set(out) == set(quarters)


def test_quarter_split_order_is_seeded_shuffle_of_sorted_quarters():
    quarters = [f"{2000 + i // 4}Q{i % 4 + 1}" for i in range(25)]
    shuffled = sorted(quarters)
    random.Random(sp.stable_seed(42, "toy_task", "quarter_split")).shuffle(shuffled)
    out = sp.quarter_split(list(reversed(quarters)), "toy_task")
    assert [out[q] for q in shuffled] == ["train"] * 21 + ["validation"] * 2 + [
        "pre_cutoff_test"
    ] * 2


@pytest.mark.parametrize("n", [0, 1, 2])
def test_fewer_than_three_quarters_is_an_error(n):
    with pytest.raises(DataError, match="at least 3"):
        sp.quarter_split([f"2000Q{i + 1}" for i in range(n)], "toy_task")


# --------------------------------------------------------------------------------------------
# Row fallback


@pytest.mark.parametrize(
    ("n", "n_val"),
    [(500, 100), (201, 100), (2000, 200), (1025, 102)],  # 102.5 rounds to 102 (banker's)
)
def test_row_fallback_counts(n, n_val):
    labels = pd.Series(sp.row_fallback_split(n, "toy_task"))
    assert (labels == "validation").sum() == n_val
    assert (labels == "pre_cutoff_test").sum() == n_val
    assert (labels == "train").sum() == n - 2 * n_val


def test_row_fallback_needs_a_training_row():
    with pytest.raises(DataError, match="200 pre-cutoff rows"):
        sp.row_fallback_split(200, "toy_task")


def test_row_fallback_shuffles_canonical_rows_with_its_seed():
    perm = list(range(300))
    random.Random(sp.stable_seed(42, "toy_task", "row_fallback")).shuffle(perm)
    labels = sp.row_fallback_split(300, "toy_task")
    assert set(labels[perm[:100]]) == {"validation"}
    assert set(labels[perm[100:200]]) == {"pre_cutoff_test"}
    assert set(labels[perm[200:]]) == {"train"}


# --------------------------------------------------------------------------------------------
# Budgets


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ((100, 100, 100), (8, 1, 1)),
        ((100, 0, 100), (9, 0, 1)),  # one spare unit: largest fraction 8/9 -> train
        ((3, 100, 100), (3, 4, 3)),  # 5 spare over 1:1 -> 2/2, tie on .5 -> validation
        ((2, 1, 1), (2, 1, 1)),  # everything fits
        ((0, 100, 3), (0, 7, 3)),
    ],
)
def test_allocate_budgets_with_tiny_caps(counts, expected):
    got = sp.allocate_historical_budgets(
        dict(zip(sp.HISTORICAL_SPLITS, counts, strict=True)), budgets=TINY, cap=10
    )
    assert tuple(got[s] for s in sp.HISTORICAL_SPLITS) == expected


def test_allocate_budgets_reference_sizes():
    got = sp.allocate_historical_budgets(
        {"train": 1_000_000, "validation": 10_000, "pre_cutoff_test": 200_000}
    )
    # 40,000 spare over train:test = 8:1 -> 35,555.6 / 4,444.4 -> floors, then the unit to train.
    assert got == {"train": 435_556, "validation": 10_000, "pre_cutoff_test": 54_444}


# --------------------------------------------------------------------------------------------
# Interleaving


def naive_interleave(sizes: list[int], prefix: int) -> list[list[int]]:
    """Spec 5.5 written out directly: recompute every deficit at every position."""
    total = sum(sizes)
    used = [0] * len(sizes)
    out: list[list[int]] = [[] for _ in sizes]
    for p in range(1, min(prefix, total) + 1):
        best, best_q = None, None
        for q, size in enumerate(sizes):
            if used[q] >= size:
                continue
            d = p * size - used[q] * total
            if best is None or d >= best:  # >= : ties go to the last quarter
                best, best_q = d, q
        out[best_q].append(p)
        used[best_q] += 1
    return out


def test_interleave_ties_go_to_the_last_quarter():
    assert [a.tolist() for a in sp.interleave_positions([1, 1], 2)] == [[2], [1]]
    assert [a.tolist() for a in sp.interleave_positions([2, 1], 3)] == [[1, 3], [2]]


@pytest.mark.parametrize("seed", range(6))
def test_interleave_matches_the_spec_rule(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, size=rng.integers(1, 9)).tolist()
    prefix = int(rng.integers(0, sum(sizes) + 5))
    got = [a.tolist() for a in sp.interleave_positions(sizes, prefix)]
    assert got == naive_interleave(sizes, prefix)


def test_interleave_prefix_is_proportional_and_a_prefix_of_the_full_order():
    sizes = [300, 100, 50, 50]
    full = sp.interleave_positions(sizes, sum(sizes))
    assert [len(a) for a in full] == sizes
    for p in (10, 97, 250):
        used = [int((a <= p).sum()) for a in full]
        assert all(abs(u - p * s / sum(sizes)) < 1 for u, s in zip(used, sizes, strict=True))
        short = sp.interleave_positions(sizes, p)
        assert [a.tolist() for a in short] == [a[a <= p].tolist() for a in full]


# --------------------------------------------------------------------------------------------
# Canonical order


def test_canonical_order_id_time_sorts_strings():
    df = pd.DataFrame({"id": ["9", "10", "9"], "time": ["2001-01-01", "2000-01-01", "2000-01-01"]})
    order = sp.canonical_order(df, toy_task(sort_order=SortOrder.id_time))
    assert order.tolist() == [1, 2, 0]  # "10" < "9" as strings


def test_canonical_order_typed_integer_component():
    df = pd.DataFrame({"id": ["9", "10", "2"], "time": ["2000-01-01"] * 3})
    task = toy_task(typed_id="id:integer")
    assert sp.canonical_order(df, task).tolist() == [2, 0, 1]
    assert sp.canonical_order(df, toy_task()).tolist() == [1, 2, 0]


def test_canonical_order_reads_internal_typed_column_and_requires_it():
    df = pd.DataFrame({"id": ["a", "b"], "time": ["2000-01-01"] * 2, "_row_id": ["z", "y"]})
    task = toy_task(typed_id="row_id:string")
    assert sp.canonical_order(df, task).tolist() == [1, 0]
    with pytest.raises(DataError, match="row_id"):
        sp.canonical_order(df.drop(columns="_row_id"), task)


# --------------------------------------------------------------------------------------------
# assign_splits


def test_assign_splits_membership_order_and_positions():
    keys = quarter_keys(20, 30, post=40)
    task = toy_task()
    sc = sp.assign_splits(keys, task, budgets=TINY, export_cap=10)
    assert list(sc.columns) == [*sp.SIDECAR_COLUMNS, "exported"]
    assert sc.index.equals(keys.index)
    post = keys["release_date"] > sp.CUTOFF_DATE
    assert (sc.loc[post, "split"] == "post_cutoff_test").all() and sc.loc[post, "exported"].all()
    assert sc.loc[~post, "split"].isin(sp.HISTORICAL_SPLITS).all()
    # One split per quarter for a quarter-split task.
    assert (sc.loc[~post].groupby("split_quarter")["split"].nunique() == 1).all()
    # within_period_order is 1..n in every cell; positions 1..budget per split.
    for _, cell in sc.groupby(["split", "split_quarter"]):
        assert sorted(cell["within_period_order"]) == list(range(1, len(cell) + 1))
    budgets = {
        "train": 8,
        "validation": 1,
        "pre_cutoff_test": 1,
        "post_cutoff_test": int(post.sum()),
    }
    for split, n in budgets.items():
        pos = sc.loc[sc["split"] == split, "split_position"].dropna()
        assert sorted(pos) == list(range(1, n + 1))
    assert int(sc["exported"].sum()) == 10 + int(post.sum())
    # Exported historical rows are the first rows of their quarter queue.
    exported_hist = sc.loc[sc["exported"] & ~post]
    assert (exported_hist["within_period_order"] == 1).all()


def test_within_period_order_is_the_cell_seeded_shuffle_of_canonical_order():
    keys = quarter_keys(6, 12)
    task = toy_task()
    sc = sp.assign_splits(keys, task)
    cell = sc[sc["split_quarter"] == "2000Q1"]
    canonical = cell.sort_values(["time", "id"]).index.tolist()
    split = cell["split"].iloc[0]
    random.Random(sp.stable_seed(42, "toy_task", split, "2000Q1")).shuffle(canonical)
    assert cell.loc[canonical, "within_period_order"].tolist() == list(range(1, 13))


def test_assign_splits_is_deterministic_across_calls_and_input_order():
    keys = quarter_keys(12, 25, post=30)
    task = toy_task()
    a = sp.assign_splits(
        keys, task, budgets={"train": 80, "validation": 10, "pre_cutoff_test": 10}, export_cap=100
    )
    b = sp.assign_splits(
        keys, task, budgets={"train": 80, "validation": 10, "pre_cutoff_test": 10}, export_cap=100
    )
    pd.testing.assert_frame_equal(a, b)
    shuffled = keys.sample(frac=1, random_state=3)
    c = sp.assign_splits(
        shuffled,
        task,
        budgets={"train": 80, "validation": 10, "pre_cutoff_test": 10},
        export_cap=100,
    )
    pd.testing.assert_frame_equal(c.loc[keys.index], a)
    other_seed = sp.assign_splits(keys, task, seed=7)
    assert not other_seed["within_period_order"].equals(a["within_period_order"])


def test_row_split_task_uses_fallback_minimums():
    keys = quarter_keys(4, 100)  # 400 pre-cutoff rows in 4 quarters
    sc = sp.assign_splits(keys, toy_task(split_unit=SplitUnit.row))
    counts = sc["split"].value_counts()
    assert (
        counts["validation"] == 100 and counts["pre_cutoff_test"] == 100 and counts["train"] == 200
    )
    # Row splits mix quarters within a split.
    assert sc.groupby("split_quarter")["split"].nunique().max() > 1
    summary = sp.sampling_summary(sc, toy_task(split_unit=SplitUnit.row))
    assert summary["fallback_used"] is True and summary["exported_rows"] == 400


def test_assign_splits_rejects_bad_keys():
    keys = quarter_keys(4, 3)
    dup = pd.concat([keys, keys.iloc[[0]]], ignore_index=True)
    with pytest.raises(DataError, match="duplicate"):
        sp.assign_splits(dup, toy_task())
    bad = keys.copy()
    bad.loc[2, "time"] = "2000-02-30"
    with pytest.raises(DataError, match="time row 2"):
        sp.assign_splits(bad, toy_task())


# --------------------------------------------------------------------------------------------
# Prefixes and the eval post-cutoff cell


def test_split_prefix_takes_positions_and_checks_contiguity():
    keys = quarter_keys(10, 20)
    sc = sp.assign_splits(keys, toy_task())
    first = sp.split_prefix(sc, "train", 15)
    assert sorted(first["split_position"]) == list(range(1, 16))
    everything = sp.split_prefix(sc, "train", 10**9)
    assert len(everything) == (sc["split"] == "train").sum()
    broken = sc.copy()
    broken.loc[broken["split_position"] == 3, "split_position"] = pd.NA
    with pytest.raises(DataError, match="contiguous"):
        sp.split_prefix(broken, "train", 5)


def test_eval_post_cutoff_cell_drops_early_february_and_reinterleaves():
    keys = quarter_keys(8, 10, post=60)
    sc = sp.assign_splits(keys, toy_task())
    cell = sp.eval_post_cutoff_rows(sc, 7)
    assert len(cell) == 7
    assert (cell["release_date"] > sp.EVAL_POST_CUTOFF_DATE).all()
    assert sorted(cell["eval_position"]) == list(range(1, 8))
    pool = sc[(sc["split"] == "post_cutoff_test") & (sc["release_date"] > sp.EVAL_POST_CUTOFF_DATE)]
    # Within each quarter, the cell takes the pool's lowest within_period_order values.
    for q, rows in cell.groupby("split_quarter"):
        ranks = pool.loc[pool["split_quarter"] == q, "within_period_order"].rank().loc[rows.index]
        assert sorted(ranks) == list(range(1, len(rows) + 1))
