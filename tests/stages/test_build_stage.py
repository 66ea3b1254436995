"""`stage=build survey=all`: dependency waves over conf/survey/, failures listed, not hidden."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hhx.config import SurveyConfig
from hhx.errors import ConfigError
from hhx.stages.build import survey_waves
from hhx.surveys.base import has_synthetic_sidecar
from hhx.tasks.sources import load_survey


def test_waves_follow_depends_on():
    surveys = {
        "fhfa_hpi": SurveyConfig(name="fhfa_hpi"),
        "bls_laus": SurveyConfig(name="bls_laus"),
        "state_macro_panel": SurveyConfig(name="state_macro_panel",
                                          depends_on=["fhfa_hpi", "bls_laus"]),
        "cps": SurveyConfig(name="cps"),
    }
    assert survey_waves(surveys) == [["bls_laus", "cps", "fhfa_hpi"], ["state_macro_panel"]]


def test_waves_reject_cycles_and_unknown_sources():
    with pytest.raises(ConfigError, match="circular"):
        survey_waves({"a": SurveyConfig(name="a", depends_on=["b"]),
                      "b": SurveyConfig(name="b", depends_on=["a"])})
    with pytest.raises(ConfigError, match="unknown"):
        survey_waves({"a": SurveyConfig(name="a", depends_on=["zzz"])})


def test_shipped_survey_configs_form_waves():
    conf = Path(__file__).resolve().parents[2] / "conf" / "survey"
    surveys = {p.stem: load_survey(p.stem) for p in conf.glob("*.yaml") if p.stem != "all"}
    waves = survey_waves(surveys)
    assert sum(len(w) for w in waves) == len(surveys)
    first = {n for n in waves[0]}
    assert {"fhfa_hpi", "bls_laus", "bea_sainc"} <= first
    assert "state_macro_panel" not in first


@pytest.mark.slow
def test_build_all_without_raw_files_lists_every_failure(tmp_path: Path):
    proc = subprocess.run(
        [sys.executable, "-m", "hhx", "stage=build", "survey=all", "data=raw",
         f"data.raw_dir={tmp_path}/raw", f"data.intermediate_dir={tmp_path}/inter",
         f"data.root={tmp_path}/bench", "tracking=none"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and "Traceback" not in proc.stderr  # one line, besides progress
    err = errors[0]
    assert err.startswith("hhx: error: survey=all built 0 of ")
    assert "cps: " in err and "cps_basic.csv.gz" in err  # each source names its missing file
    assert "state_macro_panel: skipped: needs" in err  # dependents are not attempted
    assert not list(tmp_path.rglob("*.parquet"))


SMALL_DEMO = (
    "{cps: {n_households: 300, start: '2019-01', end: '2020-06'},"
    " cex_diary: {years: [1995], n_cu_per_quarter: 5},"
    " cex_interview: {years: [2008], n_cu_per_quarter: 5},"
    " cpi: {start: '1990-01', end: '2020-12'}, mich: {start: '2020-01', end: '2020-12', per_month: 10},"
    " census: {n_households: 50}, sce: {start: '2013-12', end: '2025-01', new_per_month: 2},"
    " psid: {n_families: 20}}"
)


def _build(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hhx", "stage=build", *args, "tracking=none",
         f"data.raw_dir={tmp_path}/raw", f"data.intermediate_dir={tmp_path}/inter",
         f"data.root={tmp_path}/bench", f"data.demo.surveys={SMALL_DEMO}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,
    )


@pytest.mark.slow
def test_build_all_on_the_demo_builds_every_source(tmp_path: Path):
    """`survey=all` on the demo: every source's generator writes its raw files in the official
    layout, every source builds, the state macro panel after its inputs; a second run finds
    everything up to date, also when the same folders are named by relative paths."""
    proc = _build(tmp_path, "survey=all")
    assert proc.returncode == 0, proc.stderr[-2000:]
    built = [line.split(":")[0].removeprefix("built ") for line in proc.stdout.splitlines()
             if line.startswith("built ")]
    conf = Path(__file__).resolve().parents[2] / "conf" / "survey"
    assert sorted(built) == sorted(p.stem for p in conf.glob("*.yaml") if p.stem != "all")
    assert built.index("state_macro_panel") > max(built.index(n) for n in
                                                  ("fhfa_hpi", "bls_laus", "bea_sainc"))
    assert built.index("fred_qd") > built.index("cpi")  # the macro context joins the CPI groups
    assert (tmp_path / "inter" / "state_macro_panel.parquet").is_file()
    assert (tmp_path / "inter" / "cex_stimulus_2008.parquet").is_file()  # the 2008 addendum
    # every intermediate comes from generated files, so every one carries the synthetic label
    # (the panel gets it from the intermediates it joins)
    outputs = sorted((tmp_path / "inter").glob("*.parquet"))
    assert len(outputs) >= len(built)
    assert [p.name for p in outputs if not has_synthetic_sidecar(p)] == []
    again = subprocess.run(
        [sys.executable, "-m", "hhx", "stage=build", "survey=all", "tracking=none",
         "data.raw_dir=raw", "data.intermediate_dir=inter", "data.root=bench",
         f"data.demo.surveys={SMALL_DEMO}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert not [line for line in again.stdout.splitlines() if line.startswith("built ")]
    assert len([line for line in again.stdout.splitlines() if line.startswith("up to date")]) \
        == len(built)
