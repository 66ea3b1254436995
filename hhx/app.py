"""The one entrypoint, `python -m hhx`: compose the config with Hydra and dispatch on `stage`."""

from __future__ import annotations

import logging
import os
import sys

# litellm fetches a price list at import unless told to use its bundled copy; never hit the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import hydra  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from hhx.config import register_configs  # noqa: E402
from hhx.errors import HhxError  # noqa: E402
from hhx.sweeps.grid import register_resolvers  # noqa: E402

# conf/hydra/launcher/{submitit_slurm,submitit_local,ray}.yaml replace the plugins' configs of the
# same names (hhx's per-model-resources launchers); Hydra then merges the plugin's schema into
# them, which it reports as deprecated. The merge is what we want (typed launcher settings).
warnings.filterwarnings("ignore", message=".*is validated against ConfigStore schema with the same")

register_configs()
register_resolvers()  # ${hhx.tasks:...} and ${hhx.resource:...} (sweep presets, launchers)
log = logging.getLogger("hhx")


# conf/ sits beside the package (repository layout); an absolute path works from any cwd and for
# both `python -m hhx` and the `hhx` console script.
CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")


# Named sets of tasks: `task=all`, `task=baseline`, `task=policy` (or any comma list).
TASK_SETS = ("all", "baseline", "policy")


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


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def _hydra_main(cfg: DictConfig) -> float | None:
    """Run one stage; returns the primary score (so Hydra sweepers can optimise it)."""
    from hhx.stages import dispatch
    from hhx.sweeps import cell

    # In a sweep a failing cell is recorded (hhx/sweeps/cell.py) and the other jobs go on; the
    # sweep's summary then exits non-zero (hhx/sweeps/callback.py).
    sweep = cell.in_sweep()
    if sweep:
        cell.record_start(cfg)
    try:
        return dispatch(cfg)
    except HhxError as exc:
        # A user error: one line naming the file/column/setting and the fix, no traceback.
        print(f"hhx: error: {exc}", file=sys.stderr)
        if exc.exit_now:
            # Ctrl-C: leave at once; interpreter teardown after litellm or llama.cpp takes seconds
            # and a generation thread may still run. Everything kept is committed already.
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(exc.exit_code)
        if sweep:
            cell.record_failure(exc)
            return None
        raise SystemExit(exc.exit_code) from None
    except Exception as exc:
        if not sweep:
            raise
        log.exception("sweep job failed")
        cell.record_failure(exc)
        return None


def main() -> float | None:
    """`python -m hhx` / the `hhx` script: task sets expanded, then Hydra."""
    sys.argv[1:] = expand_task_sets(sys.argv[1:])
    return _hydra_main()


if __name__ == "__main__":
    main()
