"""The backends and stages are declared once (hhx/catalog.py) and every consumer reads that
table; `stage=list` says per model what is missing here (hhx/predictors/needs.py)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from hhx import catalog
from hhx.catalog import BACKENDS, STAGES, Gpu, Kind, Resources
from hhx.config import Backend, ModelConfig, Stage
from hhx.predictors.needs import missing, needs
from hhx.tasks.registry import CONF_DIR

HHX = Path(catalog.__file__).parent


def test_every_backend_and_stage_has_exactly_one_entry():
    assert [b.value for b in Backend] == list(BACKENDS)
    assert all(name == spec.name for name, spec in BACKENDS.items())
    assert [s.value for s in Stage] == [s.name for s in STAGES]
    assert len({s.name for s in STAGES}) == len(STAGES)
    from hhx.stages import STAGES as DISPATCH

    assert list(DISPATCH) == [s.name for s in STAGES]
    used = {OmegaConf.load(p).backend for p in (CONF_DIR / "model").glob("*.yaml")}
    assert used <= set(BACKENDS)


def _names_in_literals(tree: ast.AST, names: set[str]) -> list[set[str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            items = node.keys if isinstance(node, ast.Dict) else node.elts
            strings = {i.value for i in items if isinstance(i, ast.Constant)
                       and isinstance(i.value, str)}
            if len(strings & names) >= 2:
                found.append(strings & names)
    return found


# Names that are also config groups (sft, leaderboard) in the sweep identity's excluded groups;
# the tracking experiments per stage (build and leaderboard runs apart from evaluate runs); the
# Python API's public names (hhx.evaluate, hhx.build, hhx.describe, hhx.leaderboard).
NOT_A_STAGE_LIST = {"catalog.py", "sweeps/identity.py", "tracking/mlflow_run.py", "__init__.py"}


@pytest.mark.parametrize("names", [set(BACKENDS), {s.name for s in STAGES}],
                         ids=["backends", "stages"])
def test_no_module_but_the_catalog_lists_them(names):
    """A tuple or dict of two or more backend (stage) names outside hhx/catalog.py is a second
    declaration that a new backend (stage) would have to be added to."""
    offenders = {}
    skip = {"catalog.py"} if names == set(BACKENDS) else NOT_A_STAGE_LIST
    for path in sorted(HHX.rglob("*.py")):
        if str(path.relative_to(HHX)) in skip:
            continue
        hits = _names_in_literals(ast.parse(path.read_text()), names)
        if hits:
            offenders[str(path.relative_to(HHX))] = hits
    assert offenders == {}


def _model(name: str, **over) -> ModelConfig:
    raw = OmegaConf.load(CONF_DIR / "model" / f"{name}.yaml")
    template = OmegaConf.is_missing(raw, "name")
    if template:
        raw.name = name
    root = OmegaConf.create({"model": raw})
    OmegaConf.resolve(root)
    model = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(ModelConfig), root.model))
    return dataclasses.replace(model, **over), template


def test_consumers_read_the_table(monkeypatch, tmp_path):
    from hhx.predictors import base
    from hhx.sweeps.dryrun import estimate
    from hhx.sweeps.resources import job_resources

    spec = BACKENDS["no_change"]
    cfg = OmegaConf.create({"model": {"name": "m", "backend": "no_change", "resources": {}}})
    monkeypatch.setitem(BACKENDS, "no_change", dataclasses.replace(
        spec, resources=Resources(3, 5, 7, 11), factory="hhx.predictors.needs:needs"))
    assert job_resources(cfg.model) == Resources(3, 5, 7, 11)
    monkeypatch.setattr("hhx.predictors.needs.needs", lambda cfg: ("made", cfg))
    made, given = base.make_predictor(cfg)  # the factory gets the predictor's part of the config
    assert made == "made" and given == base.predictor_config(cfg) and given.model == cfg.model
    assert given.get("decoding") is None and not hasattr(given, "tracking")
    assert estimate(cfg, pd.DataFrame({"prompt": ["x"]}))["requests"] == 0
    from hhx.stages import sft

    monkeypatch.setattr(sft, "read_sft_set", lambda d: (_ for _ in ()).throw(RuntimeError("read")))
    monkeypatch.setattr(sft, "sft_data_dir", lambda cfg: tmp_path)
    with pytest.raises(Exception, match="needs open weights"):
        sft.run(cfg)
    monkeypatch.setitem(BACKENDS, "no_change", dataclasses.replace(spec, fine_tunable=True))
    with pytest.raises(RuntimeError, match="read"):  # past the check: it reads the SFT set
        sft.run(cfg)


def test_list_says_a_provider_key_is_missing_but_not_a_servers(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    gpt, _ = _model("gpt_5")
    assert missing(gpt) == ["API key: $OPENAI_API_KEY is not set"]
    assert needs(gpt) == "an API key in $OPENAI_API_KEY"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert missing(gpt) == []
    for name in ("openai_compatible", "llamacpp_server"):  # templates: a server, no key
        model, template = _model(name)
        assert template and missing(model, template) == []
        assert needs(model, template).startswith("a server: model.api_base=")
        served, _ = _model(name, api_base="http://127.0.0.1:8000/v1")
        assert missing(served) == [] and needs(served) == "a server at http://127.0.0.1:8000/v1"


def test_list_says_when_weights_an_extra_or_a_gpu_are_missing(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")  # no CUDA device, whatever the machine
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    import huggingface_hub.constants as hub

    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path / "hub"))
    qwen, _ = _model("qwen35_4b", model_path=str(tmp_path / "nowhere"))
    gaps = missing(qwen)
    assert gaps[-2].startswith("weights: model.model_path=") and "no such folder" in gaps[-2]
    assert gaps[-1] == "GPU: no CUDA device here"
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "config.json").write_text("{}")
    here, _ = _model("smollm2_135m_hf", model_path=str(tmp_path / "w"), model_id="x/y")
    assert BACKENDS["transformers"].gpu is Gpu.optional  # a CPU works: no GPU line
    monkeypatch.setitem(BACKENDS, "transformers", dataclasses.replace(
        BACKENDS["transformers"], packages=("hhx_no_such_module",), install="pip install x"))
    assert missing(here) == ["extra: pip install x (hhx_no_such_module not installed)"]
    no_path, _ = _model("smollm2_135m_hf", model_path=None, model_id="org/not-cached")
    weights = [g for g in missing(no_path) if g.startswith("weights:")]
    assert weights and "not in the Hugging Face cache" in weights[0] and "org/not-cached" in weights[0]
    assert needs(no_path).endswith("; the weights")


def test_the_kinds_decide_preflight_cost_and_fine_tuning():
    local = {n for n, s in BACKENDS.items() if s.kind is Kind.local}
    assert local == {n for n, s in BACKENDS.items() if s.fine_tunable}
    assert {n for n, s in BACKENDS.items() if s.sends_requests} == local | {"litellm"}


def test_a_backends_own_settings_are_declared_by_its_entry():
    """A backend with settings of its own names their ModelConfig subclass in its entry; every
    model YAML of that backend takes the schema registered for it, and no other YAML does."""
    from hhx.predictors.base import model_schema

    for path in sorted((CONF_DIR / "model").glob("*.yaml")):
        raw = OmegaConf.load(path)
        spec = BACKENDS[raw.backend]
        schema = model_schema(raw.backend)
        taken = [d for d in raw.get("defaults", []) if str(d).startswith("/schema/model/")]
        if spec.settings is None:
            assert schema is ModelConfig and not taken, path.name
        else:
            assert issubclass(schema, ModelConfig) and schema is not ModelConfig, path.name
            assert taken == [f"/schema/model/{raw.backend}@_here_"], path.name
            own = {f.name for f in dataclasses.fields(schema)} - {
                f.name for f in dataclasses.fields(ModelConfig)}
            assert own, f"{spec.settings} adds no setting of its own"
