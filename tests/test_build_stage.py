"""`stage=build survey=all`: dependency waves over conf/survey/, failures listed, not hidden."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hhx.config import SurveyConfig
from hhx.errors import ConfigError
from hhx.stages.build import survey_waves
from hhx.stages.data import load_survey
from hhx.surveys.base import has_synthetic_sidecar, sidecar_path


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
    conf = Path(__file__).resolve().parents[1] / "conf" / "survey"
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
    err = proc.stderr.strip()
    assert err.startswith("hhx: error: survey=all built 0 of ") and len(err.splitlines()) == 1
    assert "cps: " in err and "cps_basic.csv.gz" in err  # each source names its missing file
    assert "state_macro_panel: skipped: needs" in err  # dependents are not attempted
    assert not list(tmp_path.rglob("*.parquet"))


@pytest.mark.slow
def test_build_all_on_generated_raw_files_builds_every_source(tmp_path: Path):
    """Generate every source's raw files in its official layout, then `survey=all` builds them
    all, the state macro panel after its three inputs."""
    import shutil

    from hhx.surveys.synthetic.census import write_synthetic_census
    from hhx.surveys.synthetic.cex_diary import write_synthetic_cex_diary
    from hhx.surveys.synthetic.cex_interview import write_synthetic_cex_interview
    from hhx.surveys.synthetic.cpi import write_synthetic_cpi
    from hhx.surveys.synthetic.cps import write_synthetic_cps
    from hhx.surveys.synthetic.cps_ui_policy import write_synthetic_ui_policy
    from hhx.surveys.synthetic.fred_qd import write_synthetic_fred_qd
    from hhx.surveys.synthetic.mich import write_synthetic_mich
    from hhx.surveys.synthetic.psid import write_synthetic_psid
    from hhx.surveys.synthetic.release_dates import write_synthetic_release_dates
    from hhx.surveys.synthetic.sce import write_synthetic_sce
    from hhx.surveys.synthetic.sce_financing import write_synthetic_fz
    from hhx.surveys.synthetic.state_macro import write_synthetic_state_macro

    raw = tmp_path / "raw"

    def at(survey: str, key: str) -> Path:
        path = raw / load_survey(survey).raw[key]
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    write_synthetic_cps(at("cps", "cps_basic"), seed=1, n_households=300, start="2019-01",
                        end="2020-06")
    write_synthetic_fred_qd(at("fred_qd", "fred_qd"), seed=1)
    diary = at("cex_diary", "diary")
    diary.mkdir(parents=True, exist_ok=True)
    write_synthetic_cex_diary(diary, seed=1, years=[1995], n_cu_per_quarter=5)
    interview = at("cex_interview", "interview")
    interview.mkdir(parents=True, exist_ok=True)
    write_synthetic_cex_interview(interview, seed=1, years=[2008], n_cu_per_quarter=5)
    cpi = at("cpi", "cpi")
    cpi.mkdir(parents=True, exist_ok=True)
    write_synthetic_cpi(cpi, seed=1, start="2015-01", end="2020-12")
    write_synthetic_mich(at("mich", "mich"), seed=1, start="2020-01", end="2020-12", per_month=10)
    write_synthetic_fz(at("sce_financing", "sce_financing"), seed=1)
    write_synthetic_census(at("census", "census"), seed=1, n_households=50)
    write_synthetic_ui_policy(at("cps_ui_policy", "ui_policy"), seed=1)
    write_synthetic_release_dates(at("release_dates", "cps").parent, seed=1)
    write_synthetic_sce(raw / "micro" / "sce", seed=1, start="2019-01", end="2020-06",
                        new_per_month=2)
    write_synthetic_psid(at("psid", "shelf_long"), at("psid", "main_study"), seed=1, n_families=20)
    for name, path in write_synthetic_state_macro(tmp_path / "state", seed=1).items():
        target = at(name, name)
        shutil.move(path, target)
        shutil.move(sidecar_path(path), sidecar_path(target))

    proc = subprocess.run(
        [sys.executable, "-m", "hhx", "stage=build", "survey=all", "data=raw",
         f"data.raw_dir={raw}", f"data.intermediate_dir={tmp_path}/inter",
         f"data.root={tmp_path}/bench", "tracking=none"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    built = [line.split(":")[0].removeprefix("built ") for line in proc.stdout.splitlines()
             if line.startswith("built ")]
    conf = Path(__file__).resolve().parents[1] / "conf" / "survey"
    assert sorted(built) == sorted(p.stem for p in conf.glob("*.yaml") if p.stem != "all")
    assert built.index("state_macro_panel") > max(built.index(n) for n in
                                                  ("fhfa_hpi", "bls_laus", "bea_sainc"))
    assert (tmp_path / "inter" / "state_macro_panel.parquet").is_file()
    assert (tmp_path / "inter" / "cex_stimulus_2008.parquet").is_file()  # the 2008 addendum
    # every intermediate comes from generated files, so every one carries the synthetic label
    # (the panel gets it from the intermediates it joins)
    outputs = sorted((tmp_path / "inter").glob("*.parquet"))
    assert len(outputs) >= len(built)
    assert [p.name for p in outputs if not has_synthetic_sidecar(p)] == []
