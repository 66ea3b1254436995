"""The task registry in conf/task/: every config loads, and the 32 official tasks match the spec.

Expected values are typed from shared/spec/00_common.md (sections 5, 6, 7.5, 9, 10.5); the
`TestAgainstSpecTables` class also parses the spec's own tables, so a transcription slip in either
the configs or this file shows up. Those tests skip when ../shared is absent.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hhx.config import TargetType
from hhx.errors import ConfigError
from hhx.tasks.registry import (
    CORE_MACRO_COLUMNS,
    TASK_DIR,
    answer_names,
    core_macro_columns,
    load_task,
    load_task_file,
    output_names,
    task_names,
)

SHARED = Path(__file__).resolve().parents[3] / "shared"
COMMON_SPEC = SHARED / "spec" / "00_common.md"
COLUMNS_SPEC = SHARED / "spec" / "30_table_columns.md"

# spec 9.1
BASELINE = {
    "cons_cex_categories", "cons_cex_total", "cons_psid_wealth", "cons_sce_growth",
    "house_census_move", "house_psid_owner", "house_sce_move", "income_mich_finance",
    "income_psid_earnings", "income_sce_growth", "labor_cps_jobfind", "labor_cps_retire",
    "labor_cps_separation", "labor_sce_offer", "labor_sce_risk", "labor_sce_search",
    "macro_mich_outlook", "macro_sce_uncertainty",
}
POLICY = {
    "cons_cex_rebate01", "cons_cex_sspay", "cons_cex_stimulus08", "cons_psid_jobloss",
    "cons_sce_shock", "house_sce_financing", "house_sce_lockin", "income_cps_displace",
    "income_sce_policy", "labor_cps_displace", "labor_cps_ui", "labor_psid_addedworker",
    "labor_sce_reswage", "macro_sce_revision",
}
DISTRIBUTION_TASKS = {
    "house_sce_lockin", "house_sce_move", "labor_sce_risk", "labor_sce_search",
    "macro_sce_uncertainty",
}
# spec 7.5: the 17 tasks of the pre-cutoff eval sample (the HF release)
ON_HF = {
    "cons_cex_categories", "cons_cex_rebate01", "cons_cex_stimulus08", "cons_cex_total",
    "cons_sce_growth", "cons_sce_shock", "house_sce_financing", "house_sce_lockin",
    "house_sce_move", "income_sce_growth", "income_sce_policy", "labor_sce_offer",
    "labor_sce_reswage", "labor_sce_risk", "labor_sce_search", "macro_sce_revision",
    "macro_sce_uncertainty",
}
# spec 9.2, column n
ANSWER_COUNTS = {
    "cons_cex_categories": 12, "cons_cex_rebate01": 3, "cons_cex_sspay": 3,
    "cons_cex_stimulus08": 3, "cons_cex_total": 3, "cons_psid_jobloss": 1, "cons_psid_wealth": 1,
    "cons_sce_growth": 1, "cons_sce_shock": 2, "house_census_move": 1, "house_psid_owner": 1,
    "house_sce_financing": 6, "house_sce_lockin": 1, "house_sce_move": 1,
    "income_cps_displace": 1, "income_mich_finance": 1, "income_psid_earnings": 3,
    "income_sce_growth": 1, "income_sce_policy": 4, "labor_cps_displace": 1,
    "labor_cps_jobfind": 1, "labor_cps_retire": 1, "labor_cps_separation": 1, "labor_cps_ui": 1,
    "labor_psid_addedworker": 4, "labor_sce_offer": 1, "labor_sce_reswage": 2,
    "labor_sce_risk": 3, "labor_sce_search": 2, "macro_mich_outlook": 2,
    "macro_sce_revision": 2, "macro_sce_uncertainty": 5,
}
LF = ("employed", "unemployed", "not_in_labor_force")
IMPACT = ("very_negative", "somewhat_negative", "no_impact", "somewhat_positive", "very_positive")
BINS = (
    "inflation_ge_12", "inflation_8_12", "inflation_4_8", "inflation_2_4", "inflation_0_2",
    "deflation_0_2", "deflation_2_4", "deflation_4_8", "deflation_8_12", "deflation_ge_12",
)
HIGHER = ("not_higher", "higher")
# spec 9.2: scorer answer names and label tuples, in answer order
CATEGORICAL_ANSWERS = {
    "house_census_move": {
        "mobility_destination": ("stay", "move_within_state", "move_to_different_state"),
    },
    "house_psid_owner": {"owns_home_next_wave": ("no", "yes")},
    "income_sce_policy": {
        "welfare_benefits": IMPACT, "unemployment_benefits": IMPACT, "payroll_tax_rate": IMPACT,
        "average_income_tax_rate": IMPACT,
    },
    "labor_cps_displace": {"labor_force_status": LF},
    "labor_cps_jobfind": {"labor_force_status": LF},
    "labor_cps_retire": {"retirement_status": ("retired", "not_retired")},
    "labor_cps_separation": {"labor_force_status": LF},
    "labor_cps_ui": {"work_status": LF},
    "labor_sce_offer": {"first_offer_decision": ("accepted", "rejected")},
}
DISTRIBUTION_ANSWERS = {
    "house_sce_lockin": {"move_probability_3y": ("no_move", "move")},
    "house_sce_move": {"move_probability_12m": ("no_move", "move")},
    "labor_sce_risk": {
        "job_loss_12m": ("no_event", "event"), "voluntary_leave_12m": ("no_event", "event"),
        "find_acceptable_work_3m": ("no_event", "event"),
    },
    "labor_sce_search": {
        "find_acceptable_work_12m": ("not_found", "found"),
        "find_acceptable_work_3m": ("not_found", "found"),
    },
    "macro_sce_uncertainty": {
        "inflation_1y": BINS, "inflation_2_to_3y": BINS, "unemployment_higher": HIGHER,
        "savings_rate_higher": HIGHER, "stock_prices_higher": HIGHER,
    },
}
# spec 9.3 / 10.5: distribution group names (XGBoost outputs), in answer order
DISTRIBUTION_GROUPS = {
    "house_sce_lockin": ["move"],
    "house_sce_move": ["move"],
    "labor_sce_risk": ["job_loss", "voluntary_leave", "job_find"],
    "labor_sce_search": ["find_12m", "find_3m"],
    "macro_sce_uncertainty": [
        "inflation_1y", "inflation_3y", "unemployment_higher", "savings_rate_higher",
        "stock_prices_higher",
    ],
}
# spec 12.3: registry (XGBoost class index) order differs from the scorer's
DOMAINS = {
    "labor_cps_retire": ("not_retired", "retired"),
    "labor_sce_offer": ("rejected", "accepted"),
}
# spec 3.3, spelled out rather than generated
CORE_20 = [
    "gdp_growth_qoq_lag1", "gdp_growth_qoq_lag2", "gdp_growth_qoq_lag3", "gdp_growth_qoq_lag4",
    "gdp_growth_qoq_5y_compound", "unemployment_rate_lag1", "unemployment_rate_lag2",
    "unemployment_rate_lag3", "unemployment_rate_lag4", "unemployment_rate_5y_mean",
    "headline_cpi_qoq_lag1", "headline_cpi_qoq_lag2", "headline_cpi_qoq_lag3",
    "headline_cpi_qoq_lag4", "headline_cpi_qoq_5y_compound", "fedfunds_rate_lag1",
    "fedfunds_rate_lag2", "fedfunds_rate_lag3", "fedfunds_rate_lag4", "fedfunds_rate_5y_mean",
]
TOPICS = {
    "cons": "Consumption and saving",
    "house": "Housing and location",
    "income": "Income dynamics and household resources",
    "labor": "Labor supply, job search, and retirement",
    "macro": "Macroeconomic conditions",
}
ALL_TASKS = sorted(BASELINE | POLICY)


@pytest.fixture(scope="module")
def tasks():
    return {name: load_task(name) for name in ALL_TASKS}


def test_the_32_official_tasks_have_configs_and_all_load(tasks):
    # The spec's 32 tasks; a task added beyond them is its YAML, its builder and its test.
    assert set(ALL_TASKS) <= set(task_names())
    assert len(ALL_TASKS) == 32
    for name, task in tasks.items():
        assert task.name == name
        assert task.topic == TOPICS[name.split("_")[0]]


def test_modes_are_18_baseline_and_14_policy(tasks):
    assert {n for n, t in tasks.items() if t.mode.value == "baseline"} == BASELINE
    assert {n for n, t in tasks.items() if t.mode.value == "policy"} == POLICY


def test_target_types_and_the_distribution_tasks(tasks):
    by_type = {tt: {n for n, t in tasks.items() if t.target_type is tt} for tt in TargetType}
    assert {tt.value: len(names) for tt, names in by_type.items()} == {
        "numeric": 18, "categorical": 9, "distribution": 5,
    }
    assert by_type[TargetType.distribution] == DISTRIBUTION_TASKS
    assert by_type[TargetType.categorical] == set(CATEGORICAL_ANSWERS)


def test_answer_counts_match_the_scorer_table(tasks):
    assert {n: len(answer_names(t)) for n, t in tasks.items()} == ANSWER_COUNTS


@pytest.mark.parametrize("name", sorted(CATEGORICAL_ANSWERS))
def test_categorical_fields_and_label_order(tasks, name):
    task = tasks[name]
    assert {f.name: tuple(f.labels) for f in task.fields} == CATEGORICAL_ANSWERS[name]
    assert answer_names(task) == list(CATEGORICAL_ANSWERS[name])
    for f in task.fields:
        domain = tuple(f.domain) if f.domain is not None else tuple(f.labels)
        assert domain == DOMAINS.get(name, tuple(f.labels))
        assert sorted(domain) == sorted(f.labels)


@pytest.mark.parametrize("name", sorted(DISTRIBUTION_ANSWERS))
def test_distributions_labels_groups_and_columns(tasks, name):
    task = tasks[name]
    assert {d.name: tuple(d.labels) for d in task.distributions} == DISTRIBUTION_ANSWERS[name]
    assert answer_names(task) == list(DISTRIBUTION_ANSWERS[name])
    assert [d.group for d in task.distributions] == DISTRIBUTION_GROUPS[name]
    for d in task.distributions:
        # one probability column p -> [1-p, p]; otherwise one column per label
        assert len(d.columns) == (1 if len(d.labels) == 2 else len(d.labels))
        # the official tables publish these probabilities as 0-1 (densities normalised;
        # house_sce_lockin divides q6a_lock by 100 before writing its table)
        assert d.percent is False, f"{name}.{d.name}: percent flag"
    assert task.targets == [c for d in task.distributions for c in d.columns]


def test_numeric_fields_have_no_labels_and_one_target_each(tasks):
    for name, task in tasks.items():
        if task.target_type is TargetType.distribution:
            continue
        assert len(task.targets) == len(task.fields), name
        if task.target_type is TargetType.numeric:
            assert all(f.labels is None and f.domain is None for f in task.fields), name


def test_xgb_seeds_cover_every_output_once(tasks):
    assert sum(len(t.xgb_seeds) for t in tasks.values()) == 75
    for name, task in tasks.items():
        assert all(0 <= s < 2**32 for s in task.xgb_seeds.values()), name
        if task.target_type is TargetType.distribution:
            assert set(task.xgb_seeds) == set(DISTRIBUTION_GROUPS[name]), name
        else:
            assert set(task.xgb_seeds) == set(task.targets), name
        assert sorted(task.xgb_seeds) == sorted(output_names(task)), name
    # spot checks typed from spec 10.5
    assert tasks["labor_sce_search"].xgb_seeds == {"find_12m": 9129832, "find_3m": 1373477178}
    assert tasks["house_sce_lockin"].xgb_seeds == {"move": 917203171}
    assert tasks["cons_cex_categories"].xgb_seeds["cons_read"] == 68000523


def test_on_hf_is_the_17_task_public_eval_sample(tasks):
    assert {n for n, t in tasks.items() if t.on_hf} == ON_HF


def test_every_task_has_the_20_core_macro_predictors(tasks):
    assert list(CORE_MACRO_COLUMNS) == CORE_20
    for name, task in tasks.items():
        # macro_sce_revision uses the month-12 interview's context, suffixed _m12 (spec 3.2)
        suffix = "_m12" if name == "macro_sce_revision" else ""
        expected = [c + suffix for c in CORE_20]
        assert set(expected) <= set(task.prompt_predictors), name
        assert core_macro_columns(task) == expected, name


def test_task_specific_macro_sets(tasks):
    cpi = [p for p in tasks["cons_cex_categories"].prompt_predictors if p.startswith("cpi_")]
    assert len(cpi) == 40  # 8 CPI groups x (lag1..4 + 5y)
    for name in ("cons_psid_wealth", "house_psid_owner"):
        preds = tasks[name].prompt_predictors
        assert {"house_price_growth_qoq_5y_compound", "sp500_growth_qoq_lag4",
                "mortgage30us_rate_5y_mean"} <= set(preds), name
    assert {"mortgage30us_rate_lag1", "mortgage_rate_gap", "current_mortgage_rate"} <= set(
        tasks["house_sce_lockin"].prompt_predictors
    )
    state = [p for p in tasks["house_census_move"].prompt_predictors if p.endswith("_origin")]
    assert len(state) == 7  # age_origin + 6 state/national conditions
    assert len(tasks["labor_cps_ui"].prompt_predictors) == 45  # spec: 45 model-facing
    assert len(tasks["labor_psid_addedworker"].prompt_predictors) == 51  # spec: 51 public


def test_predictor_lists_are_consistent(tasks):
    for name, task in tasks.items():
        preds = task.prompt_predictors
        assert len(preds) == len(set(preds)), name
        assert set(task.categorical_predictors) <= set(preds), name
        assert not set(task.targets) & set(preds), name


def test_splits_sort_orders_and_prompt_months(tasks):
    row = {n for n, t in tasks.items() if t.split_unit.value == "row"}
    assert row == {"cons_cex_rebate01", "cons_cex_stimulus08", "house_census_move",
                   "house_sce_financing", "house_sce_lockin"}  # spec 5.1
    id_time = {n for n, t in tasks.items() if t.sort_order.value == "id_time"}
    assert id_time == {"cons_cex_categories", "cons_cex_rebate01", "cons_cex_sspay",
                       "cons_cex_stimulus08", "cons_cex_total", "house_sce_financing",
                       "labor_cps_ui"}
    assert {n: t.typed_id for n, t in tasks.items() if t.typed_id} == {  # spec 5.4
        "cons_psid_wealth": "id:integer", "house_psid_owner": "id:integer",
        "income_psid_earnings": "id:integer", "cons_psid_jobloss": "row_id:string",
        "labor_psid_addedworker": "row_id:string", "income_mich_finance": "CASEID:integer",
    }
    no_month = {n for n, t in tasks.items() if t.prompt_month is None}
    assert no_month == {"cons_cex_sspay", "cons_psid_jobloss", "cons_psid_wealth",
                        "house_psid_owner", "house_sce_financing", "income_psid_earnings",
                        "labor_cps_ui", "labor_psid_addedworker"}  # spec 4.6
    no_currency = {n for n, t in tasks.items() if t.prompt_month and not t.prompt_month.currency}
    assert no_currency == {"house_census_move", "labor_cps_displace", "labor_cps_jobfind",
                           "labor_cps_separation"}
    fixed = {n: t.prompt_month.fixed_month for n, t in tasks.items()
             if t.prompt_month and t.prompt_month.fixed_month is not None}
    assert fixed == {"house_census_move": 4}


def test_unknown_task_name_lists_the_valid_ones():
    with pytest.raises(ConfigError) as err:
        load_task("labor_cps_jobfnd")
    message = str(err.value)
    assert "labor_cps_jobfnd" in message and "\n" not in message
    assert all(name in message for name in ALL_TASKS)


def _variant(tmp_path: Path, source: str, old: str, new: str) -> Path:
    text = (TASK_DIR / f"{source}.yaml").read_text()
    assert old in text, f"test setup: {old!r} not in {source}.yaml"
    path = tmp_path / f"{source}.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_the_template_copy_loads_unchanged(tmp_path):
    path = _variant(tmp_path, "labor_cps_jobfind", "name:", "name:")
    assert load_task_file(path) == load_task("labor_cps_jobfind")


@pytest.mark.parametrize(
    ("source", "old", "new", "expected"),
    [
        # misspelt key
        ("labor_cps_jobfind", "categorical_predictors:", "categorical_predictor:",
         "categorical_predictor"),
        ("labor_sce_risk", "    percent: false", "    percnt: false", "percnt"),
        # enum value outside the schema
        ("labor_cps_jobfind", "mode: baseline", "mode: basline", "basline"),
        # unquoted YAML yes/no would become booleans
        ("house_psid_owner", 'labels: ["no", "yes"]', "labels: [no, yes]", "boolean"),
        # seed keys that are not the task's outputs
        ("labor_sce_search", "find_12m: 9129832", "find_acceptable_work_12m: 9129832", "xgb_seeds"),
        ("cons_sce_growth", "1594144913", "4294967296", "2**32"),
        # distribution columns that disagree with the registry targets
        ("house_sce_move", "columns: [Q3]", "columns: [Q3new]", "targets"),
        # a domain that is not a reordering of the labels
        ("labor_cps_retire", "domain: [not_retired, retired]", "domain: [not_retired, retire]",
         "domain"),
        ("labor_cps_jobfind", "typed_id: null", "typed_id: id", "typed_id"),
    ],
)
def test_bad_task_yaml_is_rejected_with_one_line(tmp_path, source, old, new, expected):
    path = _variant(tmp_path, source, old, new)
    with pytest.raises(ConfigError) as err:
        load_task_file(path)
    message = str(err.value)
    assert expected in message and "\n" not in message


# --------------------------------------------------------------------------------------------
# Cross-check against the spec's own tables (00_common.md 9.2, 9.3, 10.5)


def _spec_rows(heading: str) -> list[list[str]]:
    """Table rows (cells stripped) of the first table after `heading` in 00_common.md."""
    text = COMMON_SPEC.read_text()
    body = text[text.index(heading):]
    rows, started = [], False
    for line in body.splitlines()[1:]:
        if line.startswith("|"):
            started = True
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set(cells[0]) <= set("-: ") and cells[0] != "Task" and cells[0] != "task":
                rows.append(cells)
        elif started:
            break
    return rows


def _names(cell: str) -> list[str]:
    """`a, b..3, c (note)` -> [a, b1, b2, b3, c]; expands `x_bin1..10__clean` ranges."""
    cell = re.sub(r"\([^)]*\)", "", cell)
    out = []
    for item in (i.strip() for i in cell.split(",") if i.strip()):
        m = re.fullmatch(r"(.*?)(\d+)\.\.(\d+)(.*)", item)
        if m:
            out += [f"{m[1]}{k}{m[4]}" for k in range(int(m[2]), int(m[3]) + 1)]
        else:
            out.append(item)
    return out


@pytest.mark.skipif(not COMMON_SPEC.is_file(), reason="shared/spec not available")
class TestAgainstSpecTables:
    def test_scorer_table_9_2(self, tasks):
        rows = _spec_rows("### 9.2")
        assert len(rows) == 32
        for name, mode, target_type, shape, n, answers, _labels in rows:
            task = tasks[name]
            assert (task.mode.value, task.target_type.value, task.shape.value) == (
                mode, target_type, shape), name
            assert answer_names(task) == _names(answers), name
            assert len(answer_names(task)) == int(n), name

    def test_registry_table_9_3(self, tasks):
        rows = _spec_rows("### 9.3")
        assert len(rows) == 32
        for name, survey, targets, split_unit, sort_order, prompt_month in rows:
            task = tasks[name]
            assert task.survey == survey, name
            assert task.targets == _names(targets), name
            assert task.split_unit.value == split_unit.strip("*"), name
            order = re.fullmatch(r"(\w+)(?: \(([\w:]+)\))?", sort_order)
            assert (task.sort_order.value, task.typed_id) == (order[1], order[2]), name
            if prompt_month == "null":
                assert task.prompt_month is None, name
            else:
                fixed, currency = (s.strip() for s in prompt_month.strip("()").split(","))
                pm = task.prompt_month
                assert pm is not None, name
                assert (str(pm.fixed_month).replace("None", "null"), str(pm.currency).lower()) == (
                    fixed, currency), name

    def test_seed_table_10_5(self, tasks):
        rows = _spec_rows("### 10.5")
        assert len(rows) == 32
        total = 0
        for name, seeds in rows:
            expected = {k: int(v) for k, v in (p.split() for p in seeds.split(";"))}
            assert tasks[name].xgb_seeds == expected, name
            total += len(expected)
        assert total == 75


def _column_facts() -> dict[str, dict[str, list[str]]]:
    """Per task, the verbatim lists of 30_table_columns.md (targets, predictors, ...)."""
    facts: dict[str, dict[str, list[str]]] = {}
    for block in COLUMNS_SPEC.read_text().split("\n## ")[1:]:
        name, body = block.split("\n", 1)
        lists = {}
        for line in body.splitlines():
            m = re.match(r"- (\w+) \((\d+)\)[^:]*:(.*)", line)
            if m:
                lists[m[1]] = re.findall(r"`([^`]+)`", m[3])
                assert len(lists[m[1]]) == int(m[2]), (name, m[1])
        facts[name.strip()] = lists
    return facts


@pytest.mark.skipif(not COLUMNS_SPEC.is_file(), reason="shared/spec not available")
def test_table_columns_are_the_official_ones(tasks):
    """30_table_columns.md decides every task's column order (and so XGBoost's feature order)."""
    from hhx.bench.layout import table_columns
    from hhx.predictors.xgboost import feature_names

    facts = _column_facts()
    assert sorted(facts) == sorted(tasks)
    for name, lists in facts.items():
        task = tasks[name]
        for key in ("targets", "prompt_predictors", "categorical_predictors",
                    "required_predictors"):
            assert list(getattr(task, key)) == lists[key], (name, key)
        assert table_columns(task) == ["id", "time", "release_date", *lists["targets"],
                                       *lists["prompt_predictors"]], name
        assert feature_names(task)[0][: len(lists["prompt_predictors"])] == \
            lists["prompt_predictors"], name


def test_required_predictor_must_be_a_predictor(tmp_path):
    text = (TASK_DIR / "labor_cps_jobfind.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("required_predictors: []", "required_predictors: [nonesuch]"))
    with pytest.raises(ConfigError, match="required_predictors not in prompt_predictors"):
        load_task_file(bad)


def test_distribution_vectors_scale_as_the_reference():
    import numpy as np

    from hhx.config import DistributionConfig
    from hhx.tasks.registry import distribution_vectors

    binary = DistributionConfig(name="move", labels=["no_move", "move"], columns=["Q3"])
    assert np.allclose(distribution_vectors(binary, np.array([[25.0], [0.0]])),
                       [[0.75, 0.25], [1.0, 0.0]])
    bins = DistributionConfig(name="inflation_1y", labels=["a", "b", "c"],
                              columns=["b1", "b2", "b3"])
    # published bins are percentages that may miss 100 by rounding: divided by their sum
    out = distribution_vectors(bins, np.array([[50.0, 30.0, 19.0]]))
    assert np.allclose(out, [[50 / 99, 30 / 99, 19 / 99]]) and np.isclose(out.sum(), 1.0)
    unit = DistributionConfig(name="u", labels=["a", "b"], columns=["x", "y"], percent=False)
    assert np.allclose(distribution_vectors(unit, np.array([[0.2, 0.8]])), [[0.2, 0.8]])


@pytest.mark.parametrize("name", task_names())
def test_a_task_as_plain_data_is_what_omegaconf_gives(name):
    """The build stamp holds the task as plain data; it must not change with how it is made
    (a changed stamp rebuilds every task)."""
    import json

    from omegaconf import OmegaConf

    from hhx.config import as_plain

    task = load_task(name)
    expected = OmegaConf.to_container(OmegaConf.structured(task), enum_to_str=True)
    assert json.dumps(as_plain(task)) == json.dumps(expected)
