"""Get a task in the official layout from whichever data source the run names (`data.source`).

- `official`: read the user's download (release or eval-sample layout) as it is.
- `demo`: write seeded synthetic raw files in the official formats (once), build the survey
  intermediates and the task from them. Everything is tagged synthetic.
- `raw`: build from the user's own downloaded survey files.
Downstream stages only ever see the resulting `BenchTask`.
"""

from __future__ import annotations

import importlib
import logging
import os
import time
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from hhx import __version__
from hhx.bench.layout import BenchTask, load_bench_task, release_paths
from hhx.config import DataSource, SurveyConfig, TaskConfig, as_plain
from hhx.errors import ConfigError, DataError, HhxError
from hhx.io import file_lock, sweep_stale_temps
from hhx.progress import progress
from hhx.surveys.base import BuildReport
from hhx.surveys.freshness import (
    STATE_DIR,
    Fingerprints,
    code_digest,
    is_fresh,
    read_stamp,
    stamp_digest,
    write_stamp,
)
from hhx.surveys.registry import ALL, load_survey, survey_waves, with_dependencies
from hhx.tasks.context import BuildContext
from hhx.tasks.own import RELEASE_FILES, builder_digest, has_release, own_task_dir

log = logging.getLogger(__name__)

MACRO_INTERMEDIATE = "householdbench_macro_context"

__all__ = ["load_survey", "survey_config", "build_survey", "build_bench_task", "load_bench"]


def source_of(data: DictConfig) -> DataSource:
    """`data.source` as the enum (the `data` group may hold its name)."""
    src = data.source
    return src if isinstance(src, DataSource) else DataSource(str(src))


def is_synthetic(data: DictConfig) -> bool:
    return source_of(data) is DataSource.demo


def survey_config(name: str, selected: DictConfig | None = None) -> SurveyConfig:
    """The survey config for `name`: the selected `survey` group if it matches, else its file."""
    if selected is not None and selected.name == name:
        survey = OmegaConf.to_object(selected)
        assert isinstance(survey, SurveyConfig)
        return survey
    return load_survey(name)


def build_survey(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    if not survey.builder:
        raise ConfigError(
            f"survey {survey.name!r} has no builder yet (conf/survey/{survey.name}.yaml `builder`)"
        )
    module = importlib.import_module(survey.builder)
    t0 = time.perf_counter()
    report: BuildReport = module.build(survey, raw_dir, out_dir)
    report.seconds = report.seconds or time.perf_counter() - t0
    log.debug("built survey %s: %s", survey.name, report.rows)
    return report


# --------------------------------------------------------------------------------------------
# the sources a run reads


def run_surveys(data: DictConfig, names: list[str],
                survey: DictConfig | None = None) -> dict[str, SurveyConfig]:
    """`names` and their dependencies as this run configures them: the files in conf/survey/,
    the selected `survey` group (with its command-line overrides) for its own name, and
    `data.fred_qd` (when set) for every source that reads a FRED-QD file."""
    selected: dict[str, SurveyConfig] = {}
    if survey is not None and survey.get("name") not in (None, ALL):
        selected[str(survey.name)] = survey_config(str(survey.name), survey)
    surveys = with_dependencies(names, selected)
    fred = data.get("fred_qd")
    if fred:
        fred_path = str(Path(fred).expanduser().resolve())
        for source in surveys.values():
            if "fred_qd" in source.raw:
                source.raw["fred_qd"] = fred_path
    return surveys


def _check_fred_qd(data: DictConfig) -> None:
    fred = data.get("fred_qd")
    if fred and not Path(fred).expanduser().is_file():
        raise DataError(
            f"{fred}: FRED-QD file not found (data.fred_qd); download the quarterly vintage from "
            "https://www.stlouisfed.org/research/economists/mccracken/fred-databases"
        )


def demo_end_month(data: DictConfig, end: str) -> str:
    """The CPS demo's last month, clamped to what a real FRED-QD file (data.fred_qd) covers."""
    if not data.get("fred_qd"):
        return end
    from hhx.surveys.macro.fred_qd import read_fred_qd

    fred = read_fred_qd(data.fred_qd)
    last = pd.Timestamp(fred["sasdate"].max()).to_period("Q")
    # Observations in quarter Q use Q-1 as their macro reference, so the next quarter is covered;
    # one more month gives the t+1 outcomes of its last baseline month.
    covered = ((last + 1).asfreq("M", "end") + 1).strftime("%Y-%m")
    return min(end, covered)


def ensure_demo_raw(data: DictConfig, surveys: dict[str, SurveyConfig]) -> None:
    """Write the demo's synthetic raw files of `surveys` (seeded, once; hhx.surveys.synthetic.demo),
    independent generators in parallel. A real FRED-QD file given as data.fred_qd replaces the
    synthetic one."""
    from hhx.surveys.synthetic.demo import current_files, write_demo

    raw_dir = Path(data.raw_dir)
    seed = int(data.demo.seed)
    requests = []
    for name, survey in sorted(surveys.items()):
        if name == "fred_qd" and data.fred_qd:
            continue
        given = (data.demo.surveys or {}).get(name) or {}
        overrides = dict(OmegaConf.to_container(given)  # type: ignore[arg-type]  # a mapping
                         if OmegaConf.is_config(given) else given)
        if name == "cps" and "end" in survey.demo:
            end = str(overrides.get("end", survey.demo["end"]))
            overrides["end"] = demo_end_month(data, end)
        if current_files(survey, raw_dir, seed=seed, overrides=overrides) is None:
            requests.append((survey, overrides))
    if not requests:
        return
    from joblib import Parallel, delayed  # only when there is work: a start stays light

    jobs = max(1, min(len(requests), os.cpu_count() or 1))
    done = Parallel(n_jobs=jobs, return_as="generator_unordered")(
        delayed(write_demo)(survey, raw_dir, seed=seed, overrides=overrides)
        for survey, overrides in requests)
    for _ in progress(done, "demo raw files (synthetic)", total=len(requests), unit="source"):
        pass


# --------------------------------------------------------------------------------------------
# intermediates: built in dependency order, each once, fresh by content


def _survey_state(survey: SurveyConfig, raw_dir: Path, inter_dir: Path,
                  fps: Fingerprints) -> dict[str, Any]:
    if not survey.builder:
        raise ConfigError(
            f"survey {survey.name!r} has no builder yet (conf/survey/{survey.name}.yaml `builder`)"
        )
    raw = {}
    for key, rel in sorted(survey.raw.items()):
        if rel:
            path = Path(rel).expanduser()
            raw[key] = fps.of(path if path.is_absolute() else raw_dir / path)
    return {
        "survey": survey.name,
        "builder": survey.builder,
        # the builder with every reader module and mapping table it uses (freshness.code_files)
        "code": code_digest(survey.builder, "hhx.surveys.base", "hhx.io"),
        "version": __version__,
        "raw": raw,
        "upstream": {dep: stamp_digest(inter_dir, dep) for dep in sorted(survey.depends_on)},
        # enabled deviations change the outputs; absent when none, so older stamps stay fresh
        **({"improvements": sorted(map(str, survey.improvements))} if survey.improvements else {}),
    }


def _build_one(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport | str:
    try:
        return build_survey(survey, raw_dir, out_dir)
    except HhxError as exc:  # reported with the others
        return str(exc)


def ensure_surveys(
    data: DictConfig, surveys: dict[str, SurveyConfig], *, force: bool = False
) -> dict[str, BuildReport | None]:
    """Build every stale source of `surveys` (dependencies first; independent ones of a wave in
    parallel). Returns name -> its report, or None when it was already up to date. Failures
    (e.g. raw files not downloaded) are collected, their dependents skipped, and one error line
    lists them all at the end."""
    raw_dir, inter_dir = Path(data.raw_dir), Path(data.intermediate_dir)
    sweep_stale_temps([raw_dir, inter_dir])  # what a killed build left behind
    fps = Fingerprints(inter_dir / STATE_DIR / "fingerprints.json")
    results: dict[str, BuildReport | None] = {}
    problems: dict[str, str] = {}
    waves = survey_waves(surveys)
    bar = progress(total=sum(len(w) for w in waves), desc="survey builds", unit="source")
    for wave in waves:
        todo: list[tuple[str, dict[str, Any]]] = []
        for name in wave:
            blocked = sorted(set(surveys[name].depends_on) & set(problems))
            if blocked:
                problems[name] = f"skipped: needs {blocked}"
                bar.update(1)
                continue
            state = _survey_state(surveys[name], raw_dir, inter_dir, fps)
            if not force and is_fresh(inter_dir, name, state):
                results[name] = None
                bar.update(1)
            else:
                todo.append((name, state))
        fps.save()
        if not todo:
            continue
        jobs = max(1, min(len(todo), os.cpu_count() or 1))
        if jobs == 1:
            reports = [_build_one(surveys[todo[0][0]], raw_dir, inter_dir)]
        else:
            from joblib import Parallel, delayed

            reports = Parallel(n_jobs=jobs)(
                delayed(_build_one)(surveys[n], raw_dir, inter_dir) for n, _ in todo)
        for (name, state), report in zip(todo, reports, strict=True):
            bar.update(1)
            if isinstance(report, str):
                problems[name] = report
                continue
            write_stamp(inter_dir, name, state, list(report.outputs.values()),
                        synthetic=report.synthetic, rows=report.rows)
            results[name] = report
    bar.close()
    # Once more at the end: a killed earlier run's workers may have outlived its start-up sweep
    # (alive then, their scratch files kept) and died since.
    sweep_stale_temps([raw_dir, inter_dir])
    if problems:
        listing = "; ".join(f"{n}: {why}" for n, why in sorted(problems.items()))
        raise HhxError(f"built {len(results)} of {len(surveys)} sources; {listing}")
    return results


def synthetic_inputs(data: DictConfig, names: list[str]) -> bool:
    """Whether any of these built sources came from generated raw files."""
    inter_dir = Path(data.intermediate_dir)
    return any(bool((read_stamp(inter_dir, n) or {}).get("synthetic")) for n in names)


# --------------------------------------------------------------------------------------------
# tasks


TASK_CODE = ("hhx.tasks", "hhx.bench")  # every builder and the release writer


def _package_digest(packages: tuple[str, ...]) -> str:
    import hashlib

    digest = hashlib.sha256()
    for pkg in packages:
        root = Path(importlib.import_module(pkg).__file__ or "").parent
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return digest.hexdigest()


def prepare_sources(data: DictConfig, names: list[str],
                    survey: DictConfig | None = None) -> dict[str, SurveyConfig]:
    """Demo raw files (data=demo), then every stale intermediate of `names` (and dependencies)."""
    _check_fred_qd(data)
    surveys = run_surveys(data, names, survey)
    if is_synthetic(data):
        ensure_demo_raw(data, surveys)
    ensure_surveys(data, surveys, force=bool(data.rebuild))
    return surveys


def build_bench_task(data: DictConfig, task: TaskConfig,
                     survey: DictConfig | None = None) -> BenchTask:
    """Raw files -> intermediates -> the task in the official release layout (demo or raw)."""
    own = own_task_dir(task.name)
    if own is not None and not task.builder:  # built already, beside its YAML: checked, read
        return load_own_release(data, task, own)
    if not task.builder:
        raise ConfigError(
            f"task {task.name!r} cannot be built by hhx yet; evaluate it on the official release "
            f"with data=official data.root=<download>"
        )
    root = Path(data.root)
    inter_dir = Path(data.intermediate_dir)
    sweep_stale_temps([root])
    with file_lock(inter_dir / STATE_DIR / "build.lock"):
        try:
            surveys = prepare_sources(data, list(task.intermediates), survey)
        except HhxError as exc:
            raise HhxError(f"task {task.name}: {exc}") from None
        synthetic = is_synthetic(data) or synthetic_inputs(data, list(surveys))
        state = {
            "task": as_plain(task),
            "code": _package_digest(TASK_CODE),
            "version": __version__,
            "intermediates": {n: stamp_digest(inter_dir, n) for n in sorted(surveys)},
            "synthetic": synthetic,
        }
        own_code = builder_digest(task.name, task.builder)
        if own_code is not None:  # an own task's builder lives outside hhx (official: absent)
            state["own_builder"] = own_code
        if not data.rebuild and is_fresh(root, task.name, state):
            return load_bench_task(root, task, source=source_of(data).value, synthetic=synthetic)
        from hhx.tasks.build import build_task  # only to build: a fresh task just loads

        macro = pd.read_parquet(inter_dir / f"{MACRO_INTERMEDIATE}.parquet")
        # Prompt rendering and its text checks run in parallel above ~20k rows.
        ctx = BuildContext(task, inter_dir, macro, synthetic=synthetic, n_jobs=os.cpu_count() or 1)
        bench = build_task(ctx, root, synthetic=synthetic)
        write_stamp(root, task.name, state, [str(p) for p in release_paths(root, task.name).values()])
        sweep_stale_temps([root])  # as in ensure_surveys: leftovers of workers that died since
        return bench


def load_own_release(data: DictConfig, task: TaskConfig, folder: Path) -> BenchTask:
    """An own task without a builder: its release files beside its YAML (hhx/tasks/own.py)."""
    if not has_release(task.name):
        missing = [f.format(task.name) for f in RELEASE_FILES
                   if not (folder / f.format(task.name)).is_file()]
        raise DataError(
            f"own task {task.name}: {folder} lacks {', '.join(missing)}; an own task either "
            "names its builder (builder: <file>.py in its YAML) or holds its built release "
            "files beside task/ (tabular/, prompts/, splits/)")
    source = source_of(data)
    return load_bench_task(folder, task, source=source.value,
                           synthetic=source is DataSource.demo)


def load_bench(data: DictConfig, task: TaskConfig, survey: DictConfig | None = None) -> BenchTask:
    """The task in the official layout, from the data source the run's `data` group names (an
    own task without a builder: from its own folder); `survey`: the `survey` group a command
    selected (its overrides apply to that source when the task is built), None for none."""
    own = own_task_dir(task.name)
    if own is not None and not task.builder:
        return load_own_release(data, task, own)
    source = source_of(data)
    if own is not None and source is DataSource.official:
        raise ConfigError(
            f"own task {task.name} is built by its builder from survey intermediates; run it with "
            "data=demo or data=raw, or put its built release files beside its YAML and drop "
            "`builder:`")
    if source is DataSource.official:
        if OmegaConf.is_missing(data, "root"):
            raise ConfigError("data=official needs data.root=<folder of the official download>")
        return load_bench_task(
            Path(data.root),
            task,
            layout=str(data.layout),
            split=str(data.split),
            source=source.value,
            synthetic=False,
        )
    return build_bench_task(data, task, survey)
