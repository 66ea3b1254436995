"""Ranges and value sets are declared once, on the config fields (hhx/bounds.py), and both the
start-up check (hhx/config_check.py) and the LLM settings hold a config to them."""

from __future__ import annotations

import dataclasses

import pytest

from hhx.bounds import CHOICES, RANGE, declared
from hhx.config import AggregationConfig, HhxConfig, ModelConfig, SchemaStyle, TieRule
from hhx.errors import ConfigError
from hhx.predictors.llm import aggregation
from hhx.predictors.llm.settings import settings_from_config
from tests.helpers.llm_servers import make_cfg


def test_rules_are_read_from_the_fields():
    rules = declared(HhxConfig)
    k = next(f for f in dataclasses.fields(AggregationConfig) if f.name == "k")
    assert rules["aggregation.k"] == dict(k.metadata) and rules["aggregation.k"][RANGE][0] == 1
    assert rules["aggregation.tie_rule"][CHOICES] == tuple(r.value for r in TieRule)
    assert rules["model.json_schema_style"][CHOICES] == tuple(s.value for s in SchemaStyle)
    assert "model.xgboost.threads" in rules  # nested groups too
    assert {f.name for f in dataclasses.fields(ModelConfig)} >= {"max_concurrency", "xgboost"}


@pytest.mark.parametrize(("key", "value", "line"), [
    ("decoding.top_p", 0.0, "decoding.top_p=0 must be more than 0"),
    ("model.max_concurrency", 0, "model.max_concurrency=0 must be at least 1"),
    ("model.json_schema_style", "xml", "model.json_schema_style=xml is not one of openai, llamacpp"),
    ("aggregation.min_draws", 2, "aggregation.min_draws=2 must be at most aggregation.k=1"),
])
def test_the_llm_settings_hold_a_config_to_the_declared_rules(tmp_path, key, value, line):
    cfg = make_cfg("smollm2_135m", tmp_path, **{key: value})
    with pytest.raises(ConfigError, match=line):
        settings_from_config(cfg)


def test_the_tie_rules_are_the_enum():
    assert aggregation.majority_vote(["a", "b"], ["b", "a"], TieRule.label_order.value) == "b"
    with pytest.raises(ValueError, match="first_draw, label_order"):
        aggregation.majority_vote(["a"], ["a"], "coin")
