"""The task-build orchestrator with a tiny fake builder module (tests the orchestrator only)."""

from __future__ import annotations

import json
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.bench import layout as lay
from hhx.bench import splits as sp
from hhx.config import (
    DistributionConfig,
    FieldConfig,
    Mode,
    PromptMonthConfig,
    Shape,
    TargetType,
    TaskConfig,
)
from hhx.errors import ConfigError, DataError
from hhx.tasks import build
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import month_note

BUILDER_SOURCE = """
import numpy as np
import pandas as pd

from hhx.tasks.prompting import month_note, response_instruction

SYSTEM = "You are the head of an American household deciding about spending."


def build_table(ctx):
    rng = np.random.default_rng(7)
    rows = []
    for q in range(12):
        year, month = 2012 + q // 4, 3 * (q % 4) + 2
        for hh in range(15):
            rows.append({
                "id": f"h{hh}",
                "time": f"{year}-{month:02d}-01",
                "release_date": f"{year + 1}-01-15",
                "y1": float(rng.integers(100, 999)),
                "y2": round(float(rng.normal(50, 5)), 2),
                "age": float(25 + hh),
                "tenure": "owner" if hh % 2 else "renter",
                "_hh": hh,
                "_note": f"household number {hh}",
            })
    table = pd.DataFrame(rows).sample(frac=1, random_state=1)  # builders need not sort
    table.attrs["construction_steps"] = [
        {"step": 1, "name": "start", "rows": len(table)},
        {"step": 2, "name": "require targets", "rows": len(table)},
    ]
    return table


def render(row, task):
    user = "\\n\\n".join([
        f"Your household is {row['_note']} and owns or rents as a {row['tenure']}.",
        month_note(int(row["time"][5:7]), True),
        response_instruction(task),
    ])
    return SYSTEM, user


def naive_baseline(row, task):
    return [0, 0]
"""


def numeric_task(builder: str, name: str = "toy_cons") -> TaskConfig:
    return TaskConfig(
        name=name,
        topic="Consumption and saving",
        mode=Mode.baseline,
        survey="toy",
        target_type=TargetType.numeric,
        shape=Shape.array,
        fields=[FieldConfig(name="total_spending"), FieldConfig(name="food_spending")],
        targets=["y1", "y2"],
        prompt_predictors=["age", "tenure"],
        categorical_predictors=["tenure"],
        typed_id="hh:integer",
        prompt_month=PromptMonthConfig(fixed_month=None, currency=True),
        builder=builder,
    )


def distribution_task() -> TaskConfig:
    return TaskConfig(
        name="toy_move",
        topic="Housing and location",
        mode=Mode.baseline,
        survey="toy",
        target_type=TargetType.distribution,
        shape=Shape.distribution_array,
        distributions=[
            DistributionConfig(name="move_12m", labels=["no_move", "move"], columns=["Q3"]),
            DistributionConfig(
                name="bins", labels=["a", "b", "c"], columns=["b1", "b2", "b3"], percent=False
            ),
        ],
        targets=["Q3", "b1", "b2", "b3"],
    )


@pytest.fixture
def fake_builder(monkeypatch) -> str:
    module = types.ModuleType("hhx_test_fake_builder")
    exec(compile(BUILDER_SOURCE, "hhx_test_fake_builder", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module.__name__


def context(task: TaskConfig, tmp_path: Path, n_jobs: int = 1) -> BuildContext:
    return BuildContext(
        task=task,
        intermediate_dir=tmp_path,
        macro_context=pd.DataFrame(),
        synthetic=True,
        n_jobs=n_jobs,
    )


# --------------------------------------------------------------------------------------------
# Reference answers


def test_answer_values_by_target_type():
    task = numeric_task("unused")
    assert json.dumps(build.answer_values({"y1": 1662.0, "y2": 3.5}, task)) == "[1662.0, 3.5]"
    dist = distribution_task()
    row = {"Q3": 25.0, "b1": 0.2, "b2": 0.3, "b3": 0.5}
    assert json.dumps(build.answer_values(row, dist)) == "[[0.75, 0.25], [0.2, 0.3, 0.5]]"
    with pytest.raises(DataError, match="distribution bins .* sum to 1"):
        build.answer_values({**row, "b3": 0.4}, dist)
    with pytest.raises(DataError, match="column y2: target is missing"):
        build.answer_values({"y1": 1.0, "y2": float("nan")}, task)
    cat = TaskConfig(
        name="toy_cat",
        topic="t",
        mode=Mode.baseline,
        survey="toy",
        target_type=TargetType.categorical,
        shape=Shape.array,
        fields=[FieldConfig(name="status", labels=["employed", "unemployed"])],
        targets=["target"],
    )
    assert json.dumps(build.answer_values({"target": "employed"}, cat)) == '["employed"]'


# --------------------------------------------------------------------------------------------
# End to end


def test_build_task_writes_the_release_in_canonical_order(fake_builder, tmp_path):
    task = numeric_task(fake_builder)
    root = tmp_path / "hb"
    bench = build.build_task(context(task, tmp_path), root, synthetic=True)
    paths = lay.release_paths(root, task.name)
    for key in ("table", "prompts", "sidecar", "manifest", "split_manifest", "ready", "provenance"):
        assert paths[key].is_file(), key
    table = pd.read_csv(paths["table"], dtype=str)
    assert list(table.columns) == ["id", "time", "release_date", "y1", "y2", "age", "tenure"]
    # Canonical order: time, then the integer household number (h10 after h9), then id.
    hh = table["id"].str[1:].astype(int)
    assert (table[["time"]].assign(hh=hh).sort_values(["time", "hh"]).index == table.index).all()
    assert len(table) == 180 and bench.synthetic and bench.source == "demo"
    # Records: keys from the table, gold answers from its targets, renderer saw internal columns.
    prompts = [json.loads(line) for line in paths["prompts"].read_text().splitlines()]
    for rec, (_, row) in zip(prompts, table.iterrows(), strict=True):
        assert (rec["id"], rec["time"]) == (row["id"], row["time"])
        assert json.loads(rec["assistant"]) == [int(float(row["y1"])), float(row["y2"])]
        assert rec["naive_baseline"] == "[0, 0]"
        assert f"household number {row['id'][1:]}" in rec["user"]
        assert month_note(int(row["time"][5:7]), True) in rec["user"]
    assert '"assistant": "[' in paths["prompts"].read_text().splitlines()[0]
    steps = pd.read_csv(root / "build_reports" / f"{task.name}_steps.csv")
    assert steps["name"].tolist() == ["start", "require targets"]
    # The returned task is what a user loading the folder gets.
    again = lay.load_bench_task(root, task)
    pd.testing.assert_frame_equal(bench.table, again.table)
    pd.testing.assert_frame_equal(bench.splits, again.splits)
    keys = bench.table[["id", "time", "release_date"]]
    expected = sp.assign_splits(keys.assign(_hh=hh.to_numpy()), task)
    assert (bench.splits["split"].to_numpy() == expected["split"].to_numpy()).all()


def test_build_task_rejects_unprefixed_extra_columns(fake_builder, tmp_path, monkeypatch):
    module = sys.modules[fake_builder]
    original = module.build_table
    monkeypatch.setattr(
        module, "build_table", lambda ctx: original(ctx).rename(columns={"_note": "note"})
    )
    with pytest.raises(
        DataError, match=r"unexpected \['note'\] \(prefix internal columns with '_'\)"
    ):
        build.build_task(
            context(numeric_task(fake_builder), tmp_path), tmp_path / "hb", synthetic=True
        )
    monkeypatch.setattr(
        module,
        "build_table",
        lambda ctx: original(ctx)[
            ["id", "time", "release_date", "y1", "y2", "tenure", "age", "_hh"]
        ],
    )
    with pytest.raises(DataError, match="order differs"):
        build.build_task(
            context(numeric_task(fake_builder), tmp_path), tmp_path / "hb", synthetic=True
        )


def test_build_task_checks_every_prompt(fake_builder, tmp_path, monkeypatch):
    module = sys.modules[fake_builder]

    original = module.render
    monkeypatch.setattr(
        module,
        "render",
        lambda row, task: (original(row, task)[0], "From the survey: " + original(row, task)[1]),
    )
    with pytest.raises(DataError, match="forbidden text .*survey"):
        build.build_task(
            context(numeric_task(fake_builder), tmp_path), tmp_path / "hb", synthetic=True
        )
    assert not (tmp_path / "hb" / "prompts").exists()


def test_build_task_needs_a_builder(tmp_path):
    task = numeric_task("hhx_no_such_builder_module")
    with pytest.raises(ConfigError, match="builder module 'hhx_no_such_builder_module' not found"):
        build.build_task(context(task, tmp_path), tmp_path, synthetic=True)
    task.builder = None
    with pytest.raises(ConfigError, match="no builder configured"):
        build.build_task(context(task, tmp_path), tmp_path, synthetic=True)


@pytest.mark.slow
def test_parallel_rendering_equals_serial(tmp_path, monkeypatch):
    pkg = tmp_path / "mods"
    pkg.mkdir()
    (pkg / "hhx_test_file_builder.py").write_text(textwrap.dedent(BUILDER_SOURCE))
    monkeypatch.syspath_prepend(str(pkg))
    monkeypatch.setenv("PYTHONPATH", f"{pkg}:{Path(__file__).resolve().parents[2]}")
    monkeypatch.setattr(build, "PARALLEL_MIN_ROWS", 10)
    monkeypatch.setattr(build, "RENDER_CHUNK_ROWS", 7)  # more chunks than workers x 4
    task = numeric_task("hhx_test_file_builder")
    serial = build.build_task(context(task, tmp_path, 1), tmp_path / "serial", synthetic=True)
    parallel = build.build_task(context(task, tmp_path, 2), tmp_path / "parallel", synthetic=True)
    pd.testing.assert_frame_equal(serial.prompts, parallel.prompts)
    a = (tmp_path / "serial" / "prompts" / f"{task.name}.jsonl").read_bytes()
    b = (tmp_path / "parallel" / "prompts" / f"{task.name}.jsonl").read_bytes()
    assert a == b and np.array_equal(serial.splits.to_numpy(), parallel.splits.to_numpy())


def test_chunked_rendering_writes_the_same_files(fake_builder, tmp_path, monkeypatch):
    """Rows are rendered a chunk at a time (memory); the files do not depend on the chunk size."""
    task = numeric_task(fake_builder)
    build.build_task(context(task, tmp_path), tmp_path / "whole", synthetic=True)
    sizes: list[int] = []
    original = build.render_records

    def counting(full, public, task, module):
        sizes.append(len(full))
        return original(full, public, task, module)

    monkeypatch.setattr(build, "render_records", counting)
    monkeypatch.setattr(build, "RENDER_CHUNK_ROWS", 7)
    build.build_task(context(task, tmp_path), tmp_path / "chunked", synthetic=True)
    assert max(sizes) <= 7 and sum(sizes) == 180 and len(sizes) > 1
    for key in ("table", "prompts", "sidecar", "manifest", "split_manifest"):
        whole = lay.release_paths(tmp_path / "whole", task.name)[key]
        assert whole.read_bytes() == lay.release_paths(tmp_path / "chunked", task.name)[
            key].read_bytes(), key


def test_prompts_show_the_numbers_the_official_renderer_reads_back(fake_builder, tmp_path,
                                                                    monkeypatch):
    """A table value 5.1049999999999995 is written so, re-read by pandas 2.2.3 as 5.105 and
    shown `5.11` by the official renderer (`{:.2f}`); every builder gets the re-read values."""
    module = sys.modules[fake_builder]
    original_table, original_render = module.build_table, module.render
    seen: list[object] = []

    def table(ctx):
        out = original_table(ctx)
        out["y2"] = 5.1049999999999995
        return out

    def render(row, task):
        seen.append(row["y2"])
        system, user = original_render(row, task)
        return system, f"Your spending grew by {row['y2']:.2f}%. " + user

    monkeypatch.setattr(module, "build_table", table)
    monkeypatch.setattr(module, "render", render)
    task = numeric_task(fake_builder)
    root = tmp_path / "hb"
    build.build_task(context(task, tmp_path), root, synthetic=True)
    line = (root / "prompts" / f"{task.name}.jsonl").read_text().splitlines()[0]
    record = json.loads(line)
    assert "grew by 5.11%" in record["user"] and "5.10%" not in record["user"]
    assert set(seen) == {5.105}
    assert json.loads(record["assistant"])[1] == 5.105  # the gold answer too
    # the table keeps the value itself; integer columns are written as integers
    table_rows = pd.read_csv(root / "tabular" / f"{task.name}.csv", dtype=str)
    assert set(table_rows["y2"]) == {"5.1049999999999995"}
    assert table_rows["y1"].str.fullmatch(r"\d+").all() and table_rows["age"].str.isdigit().all()
    # and the build wrote the task's eval-sample cells beside the release
    sample = pd.read_csv(tmp_path / "hb_evalsample" / "manifest.csv", dtype=str)
    assert sample["task_id"].tolist() == [task.name, task.name]
