"""BuildContext.intermediate: the one check every task family uses for its survey intermediates."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from hhx.config import Mode, Shape, TargetType, TaskConfig
from hhx.errors import DataError
from hhx.tasks.context import BuildContext


def ctx(tmp_path: Path, intermediates: list[str], survey: str = "sce") -> BuildContext:
    task = TaskConfig(name="toy_task", topic="Housing and location", mode=Mode.baseline,
                      survey=survey, target_type=TargetType.numeric, shape=Shape.array,
                      targets=["y"], intermediates=intermediates)
    return BuildContext(task=task, intermediate_dir=tmp_path, macro_context=pd.DataFrame())


@pytest.mark.parametrize(("name", "intermediates", "source"), [
    ("house_sce_financing", ["sce_financing", "fred_qd"], "sce_financing"),
    ("cps_ui_policy", ["cps", "cps_ui_policy", "fred_qd"], "cps_ui_policy"),
    ("cps_basic", ["cps", "cps_ui_policy", "fred_qd"], "cps"),
    ("psid_main", [], "sce"),  # no declared sources: the task's survey
])
def test_missing_columns_are_one_line_naming_file_columns_and_command(
        tmp_path, name, intermediates, source):
    pd.DataFrame({"a": [1], "b": [2]}).to_parquet(tmp_path / f"{name}.parquet")
    context = ctx(tmp_path, intermediates)
    with pytest.raises(DataError) as err:
        context.intermediate(name, columns=["a", "q1", "b", "q2", "q1"])
    message = str(err.value)
    assert "\n" not in message
    assert message == (
        f"{tmp_path / name}.parquet: column(s) ['q1', 'q2'] missing, which task toy_task needs; "
        f"rebuild it with `python -m hhx stage=build survey={source}`")
    with pytest.raises(DataError, match=r"\['q2'\] missing"):
        context.intermediate_path(name, ["q2"])


def test_present_columns_read_and_absent_file_names_the_build(tmp_path):
    pd.DataFrame({"a": [1, 2, 3], "b": [4, 5, 6]}).to_parquet(tmp_path / "mich.parquet")
    context = ctx(tmp_path, ["mich", "fred_qd"], survey="mich")
    assert context.intermediate("mich", columns=["b"])["b"].tolist() == [4, 5, 6]
    assert list(context.intermediate("mich").columns) == ["a", "b"]
    with pytest.raises(DataError, match=r"\['c'\] missing"):
        context.intermediate("mich", columns=["c"], rows=[0])
    with pytest.raises(DataError, match=r"sce_core\.parquet: intermediate not found; "
                                        r"`python -m hhx stage=build task=toy_task`"):
        context.intermediate("sce_core", columns=["a"])
