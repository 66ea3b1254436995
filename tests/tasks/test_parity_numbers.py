"""Numbers as the official pipeline writes them, from hand-made rows (issue 30): a whole-number
numeric answer (`[586.0]`, never `[586]`), a negative and a positive zero (each keeps its sign
through the CSV and the answer), the PSID float columns (an integer-valued target written
`302000.0`) and the 2001 rebate amounts (`0`, `600`). Each test compares the published text with
a golden file under tests/golden/parity_numbers/, written from the official rules (the facts
are in hhx.tasks.build, hhx.bench.csvnum and the builders' docstrings)."""

from __future__ import annotations

import json
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.bench import csvnum
from hhx.bench.table import coerce_table, read_table, table_columns
from hhx.config import FieldConfig, Mode, PromptMonthConfig, Shape, TargetType, TaskConfig
from hhx.tasks.build import build_task
from hhx.tasks.cex import policy
from hhx.tasks.context import BuildContext
from hhx.tasks.registry import load_task
from tests.helpers.psid_world import World, context
from tests.tasks.test_cons_cex_interview import rebate  # noqa: F401  (the hand-made 2001 addendum panel)

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "parity_numbers"


def golden(name: str, text: str) -> None:
    assert text == (GOLDEN / name).read_text(), f"differs from tests/golden/parity_numbers/{name}"


def written(table: pd.DataFrame, task: TaskConfig, columns: list[str]) -> str:
    """The CSV text the release writer publishes for `columns` of a builder table."""
    typed = coerce_table(table[table_columns(task)], task,
                         float_columns=table.attrs.get("float_columns", ()))
    return typed[columns].to_csv(index=False)


def toy_task(builder: str) -> TaskConfig:
    """A numeric task with one target `y` and one numeric predictor `age`."""
    return TaskConfig(
        name="toy_numbers", topic="Consumption and saving", mode=Mode.baseline, survey="toy",
        target_type=TargetType.numeric, shape=Shape.array,
        fields=[FieldConfig(name="spending")], targets=["y"], prompt_predictors=["age"],
        typed_id="hh:integer", prompt_month=PromptMonthConfig(fixed_month=None, currency=True),
        builder=builder,
    )


# --------------------------------------------------------------------------------------------
# Signed zeros through the official reader


@pytest.mark.parametrize("values", [[-0.0, 0.0, 2.5], [0.0, -0.0, 2.5], [0.0, 1.0, -0.0]])
def test_each_zero_keeps_its_sign_when_read_back(values):
    back = csvnum.reread_floats(np.array(values))
    assert list(np.signbit(back)) == list(np.signbit(np.array(values)))
    assert [repr(float(v)) for v in back] == [repr(v) for v in values]


def test_read_table_keeps_signed_zeros(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("id,time,release_date,y,age\n" + "".join(
        f"h{i},2015-0{i + 1}-01,2015-0{i + 1}-20,{value},30\n"
        for i, value in enumerate(["0.0", "-0.0", "0.0", "-0.0"])))
    target = read_table(path, toy_task("unused"))["y"].to_numpy()
    assert list(np.signbit(target)) == [False, True, False, True]


# --------------------------------------------------------------------------------------------
# A whole-number answer and both zeros, end to end through the task build

BUILDER = textwrap.dedent('''
    import pandas as pd
    from hhx.tasks.prompting import month_note, response_instruction

    VALUES = [586.0, -0.0, 0.0, 12.25, 40.0]

    def build_table(ctx):
        rows = []
        for q in range(12):
            year, month = 2012 + q // 4, 3 * (q % 4) + 2
            for hh in range(5):
                rows.append({"id": f"h{hh}", "time": f"{year}-{month:02d}-01",
                             "release_date": f"{year + 1}-01-15",
                             "y": VALUES[(hh + q) % 5], "age": float(30 + hh), "_hh": hh})
        table = pd.DataFrame(rows)
        table.attrs["float_columns"] = ["y"]  # the official frame holds the target as floats
        return table

    def render(row, task):
        return "You are an American household.", "\\n\\n".join([
            f"You are {int(row['age'])} years old.",
            month_note(int(row["time"][5:7]), True), response_instruction(task)])

    def naive_baseline(row, task):
        return [float(row["age"])]
''')


@pytest.fixture
def toy_builder(monkeypatch) -> str:
    module = types.ModuleType("hhx_test_parity_numbers_builder")
    exec(compile(BUILDER, module.__name__, "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module.__name__


def test_whole_number_answers_are_floats_and_zeros_keep_their_sign(toy_builder, tmp_path):
    task = toy_task(toy_builder)
    ctx = BuildContext(task=task, intermediate_dir=tmp_path, macro_context=pd.DataFrame(),
                       synthetic=True)
    root = tmp_path / "hb"
    build_task(ctx, root, synthetic=True)
    table = (root / "tabular" / "toy_numbers.csv").read_text()
    records = [json.loads(line) for line in
               (root / "prompts" / "toy_numbers.jsonl").read_text().splitlines()]
    answers = "".join(f"{r['id']},{r['time']},{r['assistant']},{r['naive_baseline']}\n"
                      for r in records)
    golden("toy_numbers_table.csv", table)
    golden("toy_numbers_answers.txt", answers)


# --------------------------------------------------------------------------------------------
# PSID: an integer-valued target and whole household values written as floats


@pytest.fixture(scope="module")
def psid_world(tmp_path_factory):
    """Five one-person families (reference persons 1001 ... 5001), waves 1999-2005: income
    20,000 + 5,000 i, net worth 100,000 i + 1,000 (wave - 1999), all whole numbers; families
    1 and 5 sit at the yearly extremes and are trimmed."""
    world = World()
    for i in range(1, 6):
        world.person(i * 1000 + 1, birth=1950 + i, sex=1 + i % 2, race=1 + i % 4)
    for wave in (1999, 2001, 2003, 2005):
        for i in range(1, 6):
            worth = 100_000.0 * i + 1_000 * (wave - 1999)
            world.family(wave, {i * 1000 + 1: 1}, finc_tot_nd=20_000.0 + 5_000 * i,
                         wlth_tot_net_nd=worth, wlth_savi_net_nd=worth / 10,
                         wlth_inve_net_nd=worth / 5, wlth_home_net_nd=1_000.0 * i,
                         wlth_odeb_net_nd=0.0, geo_metro=1.0, home_stat=2,
                         fam_size_chi=float(i % 3))
    return world.build(tmp_path_factory.mktemp("psid_numbers"))


@pytest.mark.slow
def test_psid_wealth_target_and_household_values_are_floats(psid_world, tmp_path):
    task = load_task("cons_psid_wealth")
    bench = build_task(context("cons_psid_wealth", psid_world), tmp_path, synthetic=True)
    table = pd.read_csv(tmp_path / "tabular" / "cons_psid_wealth.csv", dtype=str,
                        keep_default_na=False)
    shown = ["id", "time", "wlth_tot_net_nd_next_wave", "fam_size", "fam_size_chi",
             "demo_age_gen", "finc_tot_nd", "wlth_tot_net_nd", "wlth_odeb_net_nd",
             "history_lag1_years_ago", "history_lag1_wlth_tot_net_nd", "history_lag2_years_ago"]
    answers = "".join(f"{r.id},{r.time},{r.assistant},{r.naive_baseline}\n"
                      for r in bench.prompts.itertuples())
    golden("cons_psid_wealth_table.csv", table[shown].to_csv(index=False))
    golden("cons_psid_wealth_answers.txt", answers)
    assert task.targets == ["wlth_tot_net_nd_next_wave"]


# --------------------------------------------------------------------------------------------
# cons_cex_rebate01: the rebate amount and its lags as the reference's text read types them


def test_rebate_amounts_are_written_as_integers(rebate):  # noqa: F811
    task = load_task("cons_cex_rebate01")
    table = rebate.reset_index()
    columns = ["id", "time", "rebate_amount_total", *(f"rebate_amount_total_lag{k}"
                                                      for k in (1, 2, 3))]
    golden("cons_cex_rebate01_amounts.csv", written(table, task, columns))


def test_a_fractional_rebate_amount_makes_them_floats():
    """One TAXAMT with cents: pd.to_numeric of the text gives Float64 (`600.0`, `12.5`)."""
    reports = pd.DataFrame({f"taxamt{i}": [np.nan, 300.0] for i in range(1, 6)})
    assert policy._whole_amounts(reports)
    reports.loc[0, "taxamt3"] = 12.5
    assert not policy._whole_amounts(reports)
