"""Settings checked before any stage (hhx/config_check.py) and one project root (hhx/paths.py),
on the app's composed config (Hydra compose, in process)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from hhx.config_check import validate_config
from hhx.errors import ConfigError
from hhx.paths import conf_dir, project_root
from hhx.predictors.base import register_schemas

register_schemas()


def composed(*overrides: str, hydra: bool = False):
    GlobalHydra.instance().clear()
    with initialize_config_dir(str(conf_dir()), version_base="1.3"):
        return compose("config", overrides=list(overrides), return_hydra_config=hydra)


def refused(*overrides: str) -> str:
    with pytest.raises(ConfigError) as info:
        validate_config(composed(*overrides))
    return str(info.value)


def test_a_misspelt_key_added_with_plus_is_refused_with_the_closest_key():
    assert "did you mean data.max_examples" in refused("+data.maxexamples=10")
    assert "did you mean model.xgboost.n_estimators" in refused("+model.xgboost.n_estimator=5")
    assert "unknown setting nonsense" in refused("+nonsense=1")


def test_numbers_and_choices_are_range_checked_all_in_one_line():
    message = refused("aggregation=k2", "aggregation.min_draws=3", "data.max_examples=0",
                      "min_coverage=1.5", "decoding.top_p=0", "aggregation.tie_rule=coin",
                      "model.xgboost.threads=0")
    for part in ("min_draws=3 must be at most aggregation.k=2",
                 "data.max_examples=0 must be at least 1", "min_coverage=1.5 must be at most 1",
                 "decoding.top_p=0 must be more than 0", "aggregation.tie_rule=coin is not one of",
                 "model.xgboost.threads=0 must be at least 1"):
        assert part in message
    assert "\n" not in message
    assert "aggregation.k=0 must be at least 1" in refused("aggregation.k=0")


def test_shipped_presets_and_free_form_settings_pass():
    validate_config(composed())
    validate_config(composed("+model.extra.foo=1", "data.max_examples=null"))
    # the README's sweep switches, short for sweep.force / sweep.dry_run; a misspelt one is not
    validate_config(composed("+force=true", "+dry_run=true"))
    assert "unknown setting forse" in refused("+forse=true")
    for preset in sorted(p.stem for p in (conf_dir() / "experiment").glob("*.yaml")):
        validate_config(composed(f"experiment={preset}", "data.root=/x", "data.max_examples=200"))


def test_official_data_needs_an_explicit_max_examples():
    message = refused("data=official", "data.root=/somewhere")
    assert "data.max_examples=<N>" in message and "null" in message
    validate_config(composed("data=official", "data.root=/x", "data.max_examples=null"))
    validate_config(composed("data=official", "stage=describe"))  # nothing evaluated


def test_one_project_root_for_data_runs_and_store(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("HHX_ROOT", str(tmp_path))
    cfg = composed(hydra=True)
    assert cfg.paths.root == str(tmp_path)
    assert cfg.data.root == f"{tmp_path}/data/demo/householdbench"
    assert cfg.tracking.uri == f"sqlite:///{tmp_path}/mlflow.db"
    run_dir = cfg.hydra.run.dir
    assert run_dir.startswith(f"{tmp_path}/outputs/") and run_dir.endswith(
        "_evaluate_labor_cps_jobfind_xgboost")
    assert composed("stage=describe", hydra=True).hydra.run.dir.endswith("_describe")
    # MLFLOW_TRACKING_URI as MLflow users expect; tracking.uri given explicitly wins
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.example:5000")
    assert composed().tracking.uri == "http://mlflow.example:5000"
    assert composed("tracking.uri=sqlite:///x.db").tracking.uri == "sqlite:///x.db"


def test_project_root_is_found_from_a_subfolder(tmp_path, monkeypatch):
    monkeypatch.delenv("HHX_ROOT", raising=False)
    (tmp_path / ".hhx-root").touch()
    sub = tmp_path / "notebooks" / "deep"
    sub.mkdir(parents=True)
    assert project_root(sub) == tmp_path
    lonely = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    lonely.mkdir()
    assert project_root(lonely) == lonely  # no project above: the current folder
    # the working copy itself is a project
    checkout = Path(__file__).resolve().parents[1]
    assert project_root(checkout / "hhx" / "stages") == checkout
