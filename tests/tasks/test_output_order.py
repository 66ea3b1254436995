"""Publication row order: each builder's OUTPUT_ORDER, the facts table of the official scripts'
sort keys (hhx/tasks/output_order.csv) and a build that publishes in the declared order.

Golden orders of hand-made rows (tests/golden/output_order.tsv, worked out by hand): numeric
ids of different lengths ("40" vs "103") sort as numbers or as text as declared, time first or
id first, and ties keep the builder's row order (the official scripts' stable mergesort).
"""

from __future__ import annotations

import importlib
import json
import sys
import types
from pathlib import Path

import pandas as pd
import pytest

from hhx.bench import layout as lay
from hhx.bench import splits as sp
from hhx.config import FieldConfig, Mode, PromptMonthConfig, Shape, TargetType, TaskConfig
from hhx.errors import ConfigError, DataError
from hhx.tasks import build
from hhx.tasks.context import BuildContext
from hhx.tasks.output_order import output_order, output_order_facts, parse_output_order
from hhx.tasks.registry import load_task
from hhx.tasks.registry import task_names as registered_tasks

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "output_order.tsv"

# The builder's row order is deliberately neither sorted by time nor by id.
ROWS = pd.DataFrame({
    "id": ["40", "103", "7", "103", "40", "7"],
    "time": ["2024-02-01", "2024-01-01", "2024-02-01", "2024-02-01", "2024-01-01", "2024-01-01"],
    "_case": ["1003", "987", "1001", "1002", "99", "1000"],
}, index=[10, 11, 12, 13, 14, 15])  # an index that is not 0..n-1 must not matter


def golden_orders() -> list[tuple[tuple[str, ...], list[str]]]:
    out = []
    for line in GOLDEN.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        spec, rows = line.split("\t")
        out.append((tuple(spec.split()), rows.split()))
    return out


@pytest.mark.parametrize(("spec", "expected"), golden_orders(), ids=lambda v: str(v))
def test_output_order_matches_the_golden_orders(spec, expected):
    order = output_order(ROWS, spec, "toy")
    got = [f"{r.id}@{r.time[5:7]}" for r in ROWS.iloc[order].itertuples()]
    assert got == expected


def test_output_order_refuses_bad_declarations_and_values():
    with pytest.raises(ConfigError, match="OUTPUT_ORDER entry 'time' must be"):
        parse_output_order(("time",), "toy")
    with pytest.raises(ConfigError, match="kind text or number"):
        parse_output_order(("id:integer",), "toy")
    with pytest.raises(ConfigError, match="non-empty tuple"):
        parse_output_order("time:text", "toy")
    with pytest.raises(DataError, match=r"lacks; add them") as err:
        output_order(ROWS, ("time:text", "_panel:number"), "toy")
    assert "\n" not in str(err.value)
    bad = ROWS.assign(id=["40", "x", "7", "103", "40", "7"])
    with pytest.raises(DataError, match=r"column id row 1 = 'x' is not a number"):
        output_order(bad, ("id:number",), "toy")


# --------------------------------------------------------------------------------------------
# The facts table and the builders


def task_names() -> list[str]:
    """The official release's tasks (hhx/bench/catalog.csv): the ones the official scripts
    publish in an order of their own. A task hhx adds beyond them has no official order to
    reproduce (its builder's OUTPUT_ORDER, or the canonical order, is its own)."""
    from hhx.bench.catalog import catalog

    return sorted(catalog())


def test_the_facts_table_covers_every_task_once():
    facts = output_order_facts()
    assert sorted(facts["task"]) == task_names() and facts["task"].is_unique
    assert set(facts["task"]) <= set(registered_tasks())
    for row in facts.itertuples():
        assert f"scripts/2_tasks/{row.task}/01_make_table.py" in row.source, row.task
        assert row.note, row.task


@pytest.mark.parametrize("name", task_names())
def test_each_builder_declares_the_official_order(name):
    """The builder's OUTPUT_ORDER is the facts table's declaration for its task, and it sorts
    as the official keys do: time first wherever the official first key is a time, ids held as
    numbers in the official pool declared `number`."""
    facts = output_order_facts().set_index("task")
    row = facts.loc[name]
    module = importlib.import_module(load_task(name).builder)
    declared = tuple(module.OUTPUT_ORDER)
    assert declared == tuple(row["output_order"].split(";"))
    official = row["official_sort_columns"].split(";")
    kinds = row["official_kinds"].split(";")
    keys = parse_output_order(declared, name)
    if declared == ("_output_order:number",):
        return  # the builder ranks its rows by the official keys itself (cons_cex_sspay)
    time_first = kinds[0] == "date" or official[0].endswith("year")
    assert (keys[0][0] in ("time", "_outcome_month")) == time_first
    # a numeric official id is declared number; a text one text
    id_kinds = {k for c, k in zip(official, kinds, strict=True)
                if c.lower() in {"panel_id", "caseid", "sampling_unit_id", "respondent_id",
                                 "respondent_id_m1", "subject_id", "cex_panel_id", "row_id",
                                 "id"}}
    declared_id_kinds = {k for c, k in keys if c in ("id", "_row_id", "_CASEID")}
    assert declared_id_kinds and declared_id_kinds <= id_kinds, (declared_id_kinds, id_kinds)


# --------------------------------------------------------------------------------------------
# A build publishes in the declared order; splits and the eval sample do not move

BUILDER = """
import pandas as pd

from hhx.tasks.prompting import month_note, response_instruction


def build_table(ctx):
    rows = []
    for q in range(12):
        year, month = 2023 + q // 4, 3 * (q % 4) + 2
        release = f"{year + 1}-01-15" if q < 8 else "2026-03-02"
        for hh in (7, 40, 103, 9, 1000, 55, 2, 610, 38, 12, 81, 4):
            rows.append({"id": str(hh), "time": f"{year}-{month:02d}-01",
                         "release_date": release, "y": float(hh + q), "age": 30.0 + hh % 50})
    return pd.DataFrame(rows).sample(frac=1, random_state=3)


def render(row, task):
    return "You are a household.", "\\n\\n".join([
        f"You are {row['age']} years old.", month_note(int(row["time"][5:7]), True),
        response_instruction(task)])


def naive_baseline(row, task):
    return [0]
"""


@pytest.fixture
def toy_builder(monkeypatch) -> types.ModuleType:
    module = types.ModuleType("hhx_test_order_builder")
    exec(compile(BUILDER, module.__name__, "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module


def toy_task(builder: str) -> TaskConfig:
    return TaskConfig(
        name="toy_order", topic="Consumption and saving", mode=Mode.baseline, survey="toy",
        target_type=TargetType.numeric, shape=Shape.array, fields=[FieldConfig(name="y")],
        targets=["y"], prompt_predictors=["age"], split_unit="row",
        prompt_month=PromptMonthConfig(fixed_month=None, currency=True), builder=builder)


def built(module, spec, tmp_path: Path, name: str):
    if spec is None:
        module.__dict__.pop("OUTPUT_ORDER", None)
    else:
        module.OUTPUT_ORDER = spec
    task = toy_task(module.__name__)
    ctx = BuildContext(task=task, intermediate_dir=tmp_path, macro_context=pd.DataFrame(),
                       synthetic=True)
    root = tmp_path / name
    build.build_task(ctx, root, synthetic=True)
    paths = lay.release_paths(root, task.name)
    table = pd.read_csv(paths["table"], dtype=str)
    prompts = [json.loads(x) for x in paths["prompts"].read_text().splitlines()]
    sidecar = pd.read_csv(paths["sidecar"], dtype=str)
    evals = {
        cell: [json.loads(x) for x in lay.eval_sample_path(
            root.parent / f"{name}_evalsample", cell, task.name).read_text().splitlines()]
        for cell in ("pre_cutoff", "post_cutoff")
    }
    return table, prompts, sidecar, evals


def test_build_publishes_in_the_declared_order(toy_builder, tmp_path):
    canon = built(toy_builder, None, tmp_path, "canon")
    numeric = built(toy_builder, ("time:text", "id:number"), tmp_path, "numeric")
    id_first = built(toy_builder, ("id:text", "time:text"), tmp_path, "idfirst")
    table = numeric[0]
    # time first, ids as numbers within a time (2 < 4 < ... < 1000)
    keys = list(zip(table["time"], table["id"].astype(int), strict=True))
    assert keys == sorted(keys)
    # id first, ids as text ("1000" < "103" < "12" < ... < "9")
    keys = list(zip(id_first[0]["id"], id_first[0]["time"], strict=True))
    assert keys == sorted(keys) and id_first[0]["id"].iloc[0] == "1000"
    # the canonical order sorts ids as text within a time: a different order, same rows
    assert canon[0]["id"].iloc[:3].tolist() == ["1000", "103", "12"]
    assert table["id"].iloc[:3].tolist() == ["2", "4", "7"]
    for tab, prompts, sidecar, _ in (canon, numeric, id_first):
        # table, prompts and the published sidecar share one row order (official alignment)
        assert [(p["id"], p["time"]) for p in prompts] == list(zip(tab["id"], tab["time"]))
        assert sidecar[["id", "time"]].equals(tab[["id", "time"]])
    # membership, within-period order and split positions do not depend on the order
    def by_key(sidecar):
        return sidecar.sort_values(["id", "time"]).reset_index(drop=True)

    assert by_key(canon[2]).equals(by_key(numeric[2]))
    assert by_key(canon[2]).equals(by_key(id_first[2]))
    # the eval sample: the same records, copied in prompt-file (table) order
    for cell in ("pre_cutoff", "post_cutoff"):
        same = {json.dumps(r, sort_keys=True) for r in canon[3][cell]}
        assert same == {json.dumps(r, sort_keys=True) for r in numeric[3][cell]} and same
        position = {(i, t): n for n, (i, t) in enumerate(zip(table["id"], table["time"]))}
        order = [position[(r["id"], r["time"])] for r in numeric[3][cell]]
        assert order == sorted(order)
    # and the splits follow the official sampler on the canonical keys, whatever the order
    keys = canon[2][["id", "time", "release_date"]]
    expected = sp.assign_splits(keys, toy_task("x"))
    got = canon[2].set_index(["id", "time"])["split"]
    assert (got.loc[list(zip(keys["id"], keys["time"]))].to_numpy()
            == expected["split"].to_numpy()).all()
