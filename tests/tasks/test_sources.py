"""Any task, any source: the build graph, content freshness, demo data, task sets, stage=list,
and no temporary file outliving a killed build."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from hhx.app import expand_task_sets, task_set
from hhx.io import atomic_path, is_temp_name, sweep_stale_temps, temp_dir
from hhx.surveys.freshness import Fingerprints, read_stamp
from hhx.surveys.registry import build_order, survey_names, with_dependencies
from hhx.tasks.registry import load_task, task_names
from hhx.tasks.sources import build_bench_task, ensure_demo_raw, ensure_surveys, run_surveys

ROOT = Path(__file__).resolve().parents[2]


def cfg_for(tmp_path: Path, *overrides: str):
    """The app's composed config (data=demo) with its folders in tmp_path."""
    from hydra import compose, initialize_config_dir

    from hhx.predictors.base import register_schemas

    register_schemas()
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=[
            f"data.root={tmp_path}/bench", f"data.raw_dir={tmp_path}/raw",
            f"data.intermediate_dir={tmp_path}/inter", "tracking=none", *overrides])


# --------------------------------------------------------------------------------------------
# the graph


def test_every_task_names_known_sources_and_the_macro_context():
    for name in task_names():
        task = load_task(name)
        assert "fred_qd" in task.intermediates, name
        assert set(task.intermediates) <= set(survey_names()), name
    # the macro context joins the CPI groups (spec 3.1): every task needs the cpi source too
    assert build_order(["fred_qd"]) == [["cpi"], ["fred_qd"]]
    assert build_order(load_task("house_census_move").intermediates) == [
        ["bea_sainc", "bls_laus", "census", "cpi", "fhfa_hpi"], ["fred_qd"], ["state_macro_panel"]]
    assert set(with_dependencies(load_task("labor_cps_ui").intermediates)) == {
        "cps", "cps_ui_policy", "fred_qd", "cpi"}


# --------------------------------------------------------------------------------------------
# freshness by content


def test_sources_are_fresh_by_content_not_by_path_or_mtime(tmp_path, monkeypatch):
    cfg = cfg_for(tmp_path)
    surveys = run_surveys(cfg.data, ["cps_ui_policy"])
    ensure_demo_raw(cfg.data, surveys)
    first = ensure_surveys(cfg.data, surveys)
    assert first["cps_ui_policy"] is not None  # built
    assert ensure_surveys(cfg.data, surveys) == {"cps_ui_policy": None}  # up to date
    dta = next((tmp_path / "raw").rglob("*.dta"))
    os.utime(dta, (time.time() + 100, time.time() + 100))  # touched, same bytes
    assert ensure_surveys(cfg.data, surveys) == {"cps_ui_policy": None}
    monkeypatch.chdir(tmp_path)  # the same folders by relative paths
    rel = cfg_for(tmp_path)
    rel.data.raw_dir, rel.data.intermediate_dir = "raw", "inter"
    assert ensure_surveys(rel.data, run_surveys(rel.data, ["cps_ui_policy"])) == {"cps_ui_policy": None}
    cfg.data.demo.seed = 7  # other bytes at the same path: rebuilt
    ensure_demo_raw(cfg.data, surveys)
    assert ensure_surveys(cfg.data, surveys)["cps_ui_policy"] is not None
    stamp = read_stamp(tmp_path / "inter", "cps_ui_policy")
    assert stamp is not None and len(stamp["state"]["raw"]["ui_policy"]) == 64


def test_a_dependency_rebuilt_invalidates_its_dependents(tmp_path):
    cfg = cfg_for(tmp_path)
    surveys = run_surveys(cfg.data, ["fred_qd"])
    ensure_demo_raw(cfg.data, surveys)
    assert all(r is not None for r in ensure_surveys(cfg.data, surveys).values())
    cpi_file = sorted((tmp_path / "raw" / "macro" / "cpi").iterdir())[0]
    lines = cpi_file.read_text().splitlines(keepends=True)
    cpi_file.write_text("".join(lines[:-1]))  # the last observation dropped
    again = ensure_surveys(cfg.data, surveys)
    assert again["cpi"] is not None and again["fred_qd"] is not None


def _hhx_copy(tmp_path: Path) -> Path:
    """hhx/surveys and hhx/io.py copied, for editing a reader without touching the checkout."""
    import shutil

    import hhx.surveys.freshness as freshness

    copy = tmp_path / "hhx"
    shutil.copytree(freshness.HHX_DIR / "surveys", copy / "surveys",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(freshness.HHX_DIR / "io.py", copy / "io.py")
    return copy


# Sources (as the digests below name them) and their reader modules below hhx.surveys.
READERS = {"mich": "mich.consumers", "psid": "psid.shelf", "ipums_cps": "cps.ipums",
           "cex_diary": "cex.diary", "fred_qd": "macro.fred_qd"}


def test_a_reader_is_stale_when_a_module_or_table_it_uses_changes(tmp_path, monkeypatch):
    """The code part of a source's state covers what the builder imports and reads, not only its
    own file: a fixed label table or a shared helper rebuilds the sources that use it."""
    import hhx.surveys.freshness as freshness

    monkeypatch.setattr(freshness, "HHX_DIR", _hhx_copy(tmp_path))
    copy = freshness.HHX_DIR

    def digests() -> dict[str, str]:
        return {m: freshness.code_digest(f"hhx.surveys.{module}", "hhx.surveys.base", "hhx.io")
                for m, module in READERS.items()}

    names = {p.relative_to(copy).as_posix()
             for p in freshness.code_files("hhx.surveys.cex.diary")}
    assert {"surveys/cex/diary_icpsr.py", "surveys/cex/cex_diary_icpsr_layout.csv",
            "surveys/cex/members.py", "surveys/macro/release_dates.py"} <= names
    before = digests()
    with open(copy / "surveys" / "mich" / "mich_labels.csv", "a") as fh:  # a label table fixed
        fh.write("\n")
    after = digests()
    assert after["mich"] != before["mich"]
    assert {m: after[m] for m in after if m != "mich"} == {m: before[m] for m in before if m != "mich"}
    before = after
    rd = copy / "surveys" / "macro" / "release_dates.py"  # a helper imported by the CPS and PSID readers
    rd.write_text(rd.read_text() + "\n# changed\n")
    after = digests()
    assert {m for m in after if after[m] != before[m]} == {"psid", "ipums_cps", "cex_diary"}
    before = after
    (copy / "surveys" / "sce" / "microdata.py").write_text("# another reader\n")  # none of these use it
    assert digests() == before


def test_a_changed_helper_module_rebuilds_its_source(tmp_path, monkeypatch):
    import hhx.surveys.freshness as freshness

    cfg = cfg_for(tmp_path, "data.demo.surveys={cps: {n_households: 200}}")
    surveys = run_surveys(cfg.data, ["cps"])
    ensure_demo_raw(cfg.data, surveys)
    monkeypatch.setattr(freshness, "HHX_DIR", _hhx_copy(tmp_path))
    assert ensure_surveys(cfg.data, surveys)["cps"] is not None
    assert ensure_surveys(cfg.data, surveys) == {"cps": None}
    labels = freshness.HHX_DIR / "surveys" / "cps" / "labels.py"  # the CPS reader's label maps
    labels.write_text(labels.read_text() + "\n# changed\n")
    assert ensure_surveys(cfg.data, surveys)["cps"] is not None


def test_fingerprint_cache_hashes_a_file_once(tmp_path, monkeypatch):
    import hhx.surveys.freshness as fr

    path = tmp_path / "a.csv"
    path.write_text("x\n1\n")
    calls = []
    monkeypatch.setattr(fr, "input_sha256", lambda p: calls.append(p) or "d" * 64)
    fps = Fingerprints(tmp_path / "fps.json")
    assert fps.of(path) == fps.of(path) == "d" * 64
    fps.save()
    assert Fingerprints(tmp_path / "fps.json").of(path) == "d" * 64
    assert len(calls) == 1
    assert Fingerprints(tmp_path / "fps.json").of(tmp_path / "nope") is None


# --------------------------------------------------------------------------------------------
# killed builds leave nothing behind


def _writer_that_gets_killed(target: Path, ready: Path) -> subprocess.Popen:
    code = (
        "import sys, time, pathlib\n"
        "from hhx.io import atomic_path, temp_dir\n"
        f"t = pathlib.Path({str(target)!r})\n"
        "with temp_dir(t.parent, 'scratch_') as d, atomic_path(t) as tmp:\n"
        "    tmp.write_bytes(b'x' * 1_000_000); (d / 'part').write_bytes(b'y' * 1000)\n"
        f"    pathlib.Path({str(ready)!r}).touch(); time.sleep(60)\n"
    )
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)


def test_a_killed_writer_leaves_temporaries_that_the_next_run_removes(tmp_path):
    target, ready = tmp_path / "out" / "table.parquet", tmp_path / "ready"
    proc = _writer_that_gets_killed(target, ready)
    deadline = time.monotonic() + 300  # until the writer is ready; a busy machine starts slowly
    while not ready.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the writer never got ready"
        time.sleep(0.1)
    leftovers = [p for p in (tmp_path / "out").iterdir() if is_temp_name(p.name)]
    assert len(leftovers) == 2  # the atomic write and the scratch folder
    assert sweep_stale_temps([tmp_path]) == []  # the writer still runs: kept
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=300)
    removed = sweep_stale_temps([tmp_path])
    assert sorted(removed) == sorted(leftovers)
    assert list((tmp_path / "out").iterdir()) == [] and not target.exists()
    with atomic_path(target) as tmp, temp_dir(tmp_path) as d:  # our own: never swept
        tmp.write_text("x")
        assert sweep_stale_temps([tmp_path]) == [] and d.is_dir()
    assert target.read_text() == "x"


def test_a_temporary_whose_writer_dies_during_the_next_build_is_removed_by_its_end(
        tmp_path, monkeypatch):
    """A killed build's worker can outlive the killed run and the next run's start-up sweep (alive:
    its scratch file is kept), then die: the build sweeps again when it ends."""
    cfg = cfg_for(tmp_path)
    surveys = run_surveys(cfg.data, ["cps_ui_policy"])
    ensure_demo_raw(cfg.data, surveys)
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    inter = tmp_path / "inter"
    inter.mkdir(parents=True, exist_ok=True)
    orphan = inter / f".cps_ui_policy.parquet.hhx-{worker.pid}-abc123.tmp"
    orphan.write_bytes(b"")  # what mkstemp leaves when the writer is killed at once
    import hhx.tasks.sources as data_stage

    original = data_stage._survey_state

    def state_then_the_worker_dies(*args, **kwargs):  # after the start-up sweep kept it
        worker.kill()
        worker.wait(timeout=300)
        return original(*args, **kwargs)

    monkeypatch.setattr(data_stage, "_survey_state", state_then_the_worker_dies)
    try:
        ensure_surveys(cfg.data, surveys)
    finally:
        worker.kill()
    assert not orphan.exists()
    assert not [p for p in tmp_path.rglob("*") if is_temp_name(p.name)]


# --------------------------------------------------------------------------------------------
# task sets and stage=list


def test_task_sets_expand_and_need_a_sweep(capsys):
    assert task_set("all") == task_names()  # the count is the registry's
    modes = [load_task(t).mode.value for t in task_names()]
    assert len(task_set("baseline")) == modes.count("baseline")
    assert len(task_set("policy")) == modes.count("policy")
    assert set(task_set("baseline")) | set(task_set("policy")) == set(task_set("all"))
    out = expand_task_sets(["--multirun", "task=policy", "model=no_change"])
    assert out[1] == "task=" + ",".join(task_set("policy"))
    assert expand_task_sets(["stage=build", "task=all"])[0] == "--multirun"  # builds them all
    assert expand_task_sets(["task=labor_cps_jobfind"]) == ["task=labor_cps_jobfind"]
    with pytest.raises(SystemExit) as exc:
        expand_task_sets(["task=baseline", "model=no_change"])
    assert exc.value.code == 2 and "--multirun" in capsys.readouterr().err


@pytest.mark.slow
def test_stage_list_shows_every_task_and_model(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "hhx", "stage=list", "tracking=none"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for name in task_names():
        row = next(line for line in lines if line.startswith(name + " "))
        builds = load_task(name).builder is not None
        assert (" yes " in row) == builds and (("demo" in row) == builds), row
    for model in (ROOT / "conf" / "model").glob("*.yaml"):
        assert any(line.startswith(model.stem + " ") for line in lines), model.stem
    assert "OPENAI_API_KEY" in proc.stdout and "GPU" in proc.stdout


# --------------------------------------------------------------------------------------------
# every task with a builder builds on the demo


BUILT = [n for n in task_names() if load_task(n).builder]
# One task of each family in the default run (its family's demo generators and survey builders
# run with it); the rest, minutes of CPU together, in the heavy tier (`pytest -m heavy`).
EVERY_RUN = {"labor_cps_jobfind", "cons_cex_total", "labor_psid_addedworker", "macro_sce_revision",
             "cons_sce_shock", "macro_mich_outlook", "house_census_move"}
BUILT_PARAMS = [n if n in EVERY_RUN else pytest.param(n, marks=pytest.mark.heavy) for n in BUILT]


def test_every_family_has_a_task_in_the_default_run():
    assert EVERY_RUN <= set(BUILT)
    assert {load_task(n).survey for n in EVERY_RUN} == {load_task(n).survey for n in BUILT}


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("demo_tasks")


@pytest.mark.slow
@pytest.mark.parametrize("name", BUILT_PARAMS)
def test_every_buildable_task_builds_on_the_demo(name, demo_dir):
    """The demo generates exactly the sources the task reads; every split the task has holds
    at least 100 rows (the official row-fallback minimum)."""
    cfg = cfg_for(demo_dir)
    task = load_task(name)
    bench = build_bench_task(cfg.data, task)
    counts = bench.splits["split"].value_counts()
    assert {"train", "validation", "pre_cutoff_test"} <= set(counts.index), counts
    assert (counts >= 100).all(), counts.to_dict()
    needed = set(with_dependencies(task.intermediates))
    written = {p.stem for p in (demo_dir / "raw" / ".hhx-demo").glob("*.json")}
    assert needed <= written
    table = pd.read_csv(demo_dir / "bench" / "tabular" / f"{name}.csv", nrows=5)
    assert list(table.columns[:3]) == ["id", "time", "release_date"]
