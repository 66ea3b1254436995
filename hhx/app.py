"""The one entrypoint, `hhx` / `python -m hhx`: compose the config with Hydra, dispatch on `stage`.

Start-up is kept light: `hhx --help` prints hhx's own help (hhx/cli_help.py) without importing
Hydra, MLflow or XGBoost; stages import what they need when they run.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

# litellm fetches a price list at import unless told to use its bundled copy; never hit the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# MLflow's "Downloading artifacts" bars (one per artifact read back, e.g. by the leaderboard).
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
# MLflow's loggers without their own console handler: its lines go where hhx's logging config
# sends libraries' (INFO to the run's app.log, warnings also to the console: hhx/logs.py).
os.environ.setdefault("MLFLOW_CONFIGURE_LOGGING", "false")
# joblib's (loky's) resource tracker, a child process, warns of "leaked semlock objects" when hhx
# leaves at once on Ctrl-C; the OS reclaims them. Children read this variable when they start.
_QUIET_TRACKER = "ignore:resource_tracker:UserWarning"
if _QUIET_TRACKER not in os.environ.get("PYTHONWARNINGS", ""):
    os.environ["PYTHONWARNINGS"] = ",".join(
        w for w in (os.environ.get("PYTHONWARNINGS"), _QUIET_TRACKER) if w)

from hhx.errors import ConfigError, HhxError, os_error_line  # noqa: E402
from hhx.logs import take_verbose_flag  # noqa: E402
from hhx.paths import conf_dir  # noqa: E402
from hhx.startup import pause_gc, resume_gc  # noqa: E402

log = logging.getLogger("hhx")

# conf/ beside the package (working copy) or inside it (a wheel); an absolute path works from any
# cwd and for both `python -m hhx` and the `hhx` console script.
CONF_DIR = str(conf_dir())
CONFIG_NAME = "config"
VERSION_BASE = "1.3"

# Named sets of tasks: `task=all`, `task=baseline`, `task=policy` (or any comma list); `task=own`:
# the tasks of one's own task folders (hhx/tasks/own.py; `all` stays the official tasks).
TASK_SETS = ("all", "baseline", "policy", "own")
HELP_FLAGS = ("--help", "-h")


def task_set(name: str) -> list[str]:
    from hhx.sweeps.grid import select_tasks

    return select_tasks(name)


def expand_task_sets(argv: list[str]) -> list[str]:
    """`task=all|baseline|policy` -> the comma list of those tasks. A list of tasks needs a
    sweep: `stage=build` gets one (each task built in turn); other stages say so."""
    out, listed = [], None
    for arg in argv:
        key, sep, value = arg.partition("=")
        if sep and key == "task":
            names = [n for v in value.split(",") for n in (task_set(v) if v in TASK_SETS else [v])]
            arg = "task=" + ",".join(names)
            listed = names if len(names) > 1 else listed
        out.append(arg)
    multirun = any(a in ("-m", "--multirun") for a in out)
    if listed and not multirun:
        if "stage=build" in out:
            out.insert(0, "--multirun")
        elif not any(a.startswith(("--help", "-h", "--cfg", "-c", "--info")) for a in out):
            print(f"hhx: error: task= names {len(listed)} tasks; add --multirun to run one job "
                  "per task (or stage=build to build them)", file=sys.stderr)
            raise SystemExit(2)
    return out


def own_task_args(argv: list[str]) -> list[str]:
    """`task_path=[dir,...]` off the command line into HHX_TASK_PATH (so sweep jobs and workers
    see it too); with a task path, its folders are checked (one line for a bad folder or an own
    task named like an official one) and join `hydra.searchpath`, where `task=<name>` finds their
    task/<name>.yaml. Without one, the command line is left as it is (hhx/tasks/own.py)."""
    from hhx.tasks.own import SETTING, own_tasks, parse_path, set_task_path, task_path

    out = []
    for arg in argv:
        key, sep, value = arg.partition("=")
        if sep and key.lstrip("+") == SETTING:
            set_task_path(parse_path(value))
        else:
            out.append(arg)
    folders = task_path()
    if not folders:
        return out
    own = own_tasks()  # ConfigError: a folder that is none, holds no task, or shadows an official one
    _check_own_tasks([n for a in out if a.partition("=")[0] == "task"
                      for n in a.partition("=")[2].split(",") if n in own])
    if any(a.lstrip("+~").partition("=")[0] == "hydra.searchpath" for a in out):
        raise ConfigError(f"{SETTING} and hydra.searchpath both given; name the task folders "
                          f"with {SETTING} only")
    entries = ",".join(f"'file://{f}'" for f in folders)
    return [*out, f"hydra.searchpath=[{entries}]"]


def _check_own_tasks(names: list[str]) -> None:
    """The own tasks a command names, loaded now: a bad YAML or builder file is one line before
    Hydra composes (its own message would name no file)."""
    from hhx.tasks.own import builder_file
    from hhx.tasks.registry import load_task

    for name in names:
        task = load_task(name)
        if task.builder:
            builder_file(name, task.builder)


# --------------------------------------------------------------------------------------------
# the run folder: its log holds what the console showed; a run that produced nothing leaves none


class _Tee:
    """stdout also written to the run's app.log (result tables, where the run went)."""

    def __init__(self, stream: Any, path: Path):
        self.stream, self.path = stream, path
        self.fh: Any = None

    def write(self, text: str) -> int:
        if self.fh is None and self.path.parent.is_dir():
            self.fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        if self.fh is not None:
            try:
                self.fh.write(text)
                self.fh.flush()
            except OSError:  # a full disk must not hide the console output
                self.fh = None
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def run_dir() -> Path | None:
    from hydra.core.hydra_config import HydraConfig

    try:
        return Path(HydraConfig.get().runtime.output_dir)
    except ValueError:
        return None


def in_sweep() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    try:
        return HydraConfig.get().mode == RunMode.MULTIRUN
    except ValueError:  # not inside a Hydra app
        return False


def produced_nothing(folder: Path) -> bool:
    """Only Hydra's own files (.hydra/, the job log) in the run folder."""
    return all(p.name == ".hydra" or (p.suffix == ".log" and p.is_file())
               for p in folder.iterdir())


def remove_if_empty(folder: Path | None, runs_dir: Path | None = None) -> None:
    """Remove a run folder that holds nothing, and the day's (and runs) folder it leaves empty."""
    import shutil

    if folder is None or not folder.is_dir() or not produced_nothing(folder):
        return
    shutil.rmtree(folder, ignore_errors=True)
    if runs_dir is None or not folder.resolve().is_relative_to(runs_dir.resolve()):
        return  # a run folder set elsewhere (hydra.run.dir=...): only the folder itself
    stop = runs_dir.resolve().parent
    parent = folder.parent.resolve()
    while parent != stop and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


# --------------------------------------------------------------------------------------------


def _quiet_exit() -> NoReturn:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os._exit(0)


def interrupted() -> NoReturn:
    """Ctrl-C: one line and exit 130 at once (no teardown: a worker thread may still run)."""
    from hhx.sweeps.leftover import remove_unfinished_sweep

    remove_unfinished_sweep()
    print("hhx: error: interrupted (Ctrl-C); what was finished is kept, run the same command "
          "again to go on", file=sys.stderr)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130)


@contextlib.contextmanager
def run_folder(cfg: Any, sweep: bool) -> Iterator[Path | None]:
    """Inside a job: stdout also to the run folder's app.log; a folder left with nothing in it
    (a stage that only printed) removed afterwards. Yields the run folder."""
    out = run_dir()
    tee = _Tee(sys.stdout, out / "app.log") if out is not None else None  # a sweep job's own too
    if tee is not None:
        sys.stdout = tee
    try:
        yield out
    finally:
        if tee is not None:
            sys.stdout = tee.stream
            tee.close()
        if not sweep:
            remove_if_empty(out, Path(str(cfg.paths.runs_dir)) if cfg.get("paths") else None)


def run_job(cfg: Any) -> Any:
    """The job of every run, from the command line (`_job`) or Python (hhx/api.py): the composed
    config checked, then its stage run (hhx.stages); what the stage returns."""
    from hhx.config_check import validate_config
    from hhx.stages import run_stage

    validate_config(cfg)
    return run_stage(cfg)


def _job(cfg: Any) -> float | None:
    """Run one stage; returns the primary score (so Hydra sweepers can optimise it)."""
    from hhx.cli_errors import job_started
    from hhx.stages import primary_score

    job_started()  # from here on an error is the job's (hhx/cli_errors.py)

    # In a sweep a failing cell is recorded (hhx/sweeps/cell.py) and the other jobs go on; the
    # sweep's summary then exits non-zero (hhx/sweeps/callback.py). The sweep layer (pandas...)
    # is imported only in a sweep: a plain start stays light.
    sweep = in_sweep()
    if sweep:
        from hhx.sweeps import cell

        cell.record_start(cfg)
    with run_folder(cfg, sweep):
        try:
            return primary_score(run_job(cfg))
        except BrokenPipeError:  # output piped into `head`: stop quietly
            _quiet_exit()
        except (HhxError, OSError) as exc:
            # A user error or the machine's (a full disk): one line naming the file, setting or
            # path and the fix, no traceback.
            line = str(exc) if isinstance(exc, HhxError) else os_error_line(exc)
            print(f"hhx: error: {line}", file=sys.stderr)
            code = exc.exit_code if isinstance(exc, HhxError) else 1
            if isinstance(exc, HhxError) and exc.exit_now:
                # Ctrl-C: leave at once; interpreter teardown after litellm or llama.cpp takes
                # seconds and a generation thread may still run. Everything kept is committed.
                logging.shutdown()
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
            if sweep:
                cell.record_failure(exc)
                return None
            raise SystemExit(code) from None
        except Exception as exc:
            if not sweep:
                raise
            log.exception("sweep job failed")
            cell.record_failure(exc)
            return None


# Hydra composes the whole config once only to read `hydra.mode` (Hydra.get_mode), then again to
# run the job: a second compose of ~0.5 s. hhx's own config never sets hydra.mode
# (tests/test_app_startup.py checks every file under conf/), so while the run reads only that config
# and no override names hydra.mode or hydra.searchpath, the probe's answer is known: None (Hydra
# then runs in RUN mode, or MULTIRUN with --multirun, exactly as after a probe).
_OWN_PROVIDERS = {"hydra", "main", "schema"}


def _mode_is_default(hydra_app: Any, config_name: str | None, overrides: list[str]) -> bool:
    keys = [o.lstrip("+~").partition("=")[0].strip() for o in overrides]
    if any(k.startswith(("hydra.mode", "hydra.searchpath")) for k in keys):
        return False
    path = hydra_app.config_loader.get_search_path().get_path()
    main = [e.path for e in path if e.provider == "main"]
    return (config_name == CONFIG_NAME and main == [CONF_DIR]
            and all(e.provider in _OWN_PROVIDERS for e in path))


def _skip_mode_probe() -> None:
    from hydra._internal.hydra import Hydra

    probe = Hydra.get_mode
    if getattr(probe, "hhx_fast", False):
        return

    def get_mode(self: Any, config_name: str | None, overrides: list[str]) -> Any:
        if _mode_is_default(self, config_name, overrides):
            return None
        return probe(self, config_name=config_name, overrides=overrides)

    get_mode.hhx_fast = True  # type: ignore[attr-defined]
    Hydra.get_mode = get_mode  # type: ignore[method-assign]


def hydra_setup() -> None:
    """What every run needs before Hydra composes: hhx's schemas and resolvers, the start-up
    shortcut, one-line composition errors. Idempotent (the Python API calls it per run)."""
    import warnings

    from hhx import cli_errors
    from hhx.paths import register_resolvers as register_path_resolvers
    from hhx.predictors.base import register_schemas
    from hhx.sweeps.grid import register_resolvers

    # conf/hydra/launcher/{submitit_slurm,submitit_local,ray}.yaml replace the plugins' configs of
    # the same names (hhx's per-model-resources launchers); Hydra then merges the plugin's schema
    # into them, which it reports as deprecated. The merge is what we want (typed settings).
    # (Hydra's message starts with a newline: the pattern must let `.` match it.)
    warnings.filterwarnings("ignore", message=r"(?s).*is validated against ConfigStore schema "
                                              "with the same", category=UserWarning)
    register_schemas()  # hhx's schema and the backends' own (model=custom's target, params)
    register_path_resolvers()  # ${hhx.root:}, ${hhx.tracking_uri:...}, ${hhx.run_label:...}
    register_resolvers()  # ${hhx.tasks:...} and ${hhx.resource:...} (sweep presets, launchers)
    _skip_mode_probe()
    cli_errors.install()  # a command Hydra cannot compose: one line with "did you mean"


def _hydra_main() -> float | None:
    import hydra

    hydra_setup()
    entry = hydra.main(version_base=VERSION_BASE, config_path=CONF_DIR,
                       config_name=CONFIG_NAME)(_job)
    return entry()


def run_one(overrides: list[str], task_function: Callable[[Any], Any]) -> Any:
    """One run (not a sweep) of `overrides` through Hydra's own steps, exactly as `hydra.main`
    takes `hhx <overrides>` with the mode probe skipped (`_run_hydra` -> `Hydra.run` ->
    `run_job`): the same config search path and job name (from `_job`), the same `hydra.mode=RUN`,
    so the same composed config, run folder, `.hydra/` files and job logging; returns what
    `task_function` returned (its exception re-raised). Hydra's global state is cleared after."""
    from hydra import version
    from hydra._internal.hydra import Hydra
    from hydra._internal.utils import (
        create_automatic_config_search_path,
        detect_calling_file_or_module_from_task_function,
        detect_task_name,
    )
    from hydra.core.global_hydra import GlobalHydra

    hydra_setup()
    version.setbase(VERSION_BASE)
    calling_file, calling_module = detect_calling_file_or_module_from_task_function(_job)
    task_name = detect_task_name(calling_file, calling_module)
    search_path = create_automatic_config_search_path(calling_file, calling_module, CONF_DIR)
    GlobalHydra.instance().clear()
    try:
        app = Hydra.create_main_hydra2(task_name=task_name, config_search_path=search_path)
        ret = app.run(config_name=CONFIG_NAME, task_function=task_function,
                      overrides=[*overrides, "hydra.mode=RUN"])
        return ret.return_value
    finally:
        GlobalHydra.instance().clear()


def main() -> float | None:
    """`hhx` / `python -m hhx`: hhx's help, or task sets expanded, then Hydra."""
    args = take_verbose_flag(sys.argv[1:])  # -v: library output on the console too
    if any(a in HELP_FLAGS for a in args):
        from hhx.cli_help import help_text

        try:
            print(help_text(), flush=True)
        except BrokenPipeError:  # `hhx --help | head`
            _quiet_exit()
        return None
    pause_gc()  # while Hydra, MLflow and pandas load; resumed when the stage's work begins
    try:
        from hhx.stages.describe import take_json_flag  # `stage=describe --json`

        try:
            argv = own_task_args(take_json_flag(args))
        except HhxError as exc:  # a bad task folder: one line, before Hydra starts
            print(f"hhx: error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        sys.argv[1:] = expand_task_sets(argv)
        return _hydra_main()
    except KeyboardInterrupt:  # Ctrl-C outside a stage's own handling (start-up, a dry run...)
        interrupted()
    except OSError as exc:  # e.g. Hydra cannot create the run folder on a full disk
        if exc.errno not in (errno.ENOSPC, errno.EACCES, errno.EROFS, errno.EDQUOT):
            raise
        print(f"hhx: error: {os_error_line(exc)}", file=sys.stderr)
        raise SystemExit(1) from None
    finally:
        resume_gc()  # a no-op when the stage resumed it


if __name__ == "__main__":
    main()
