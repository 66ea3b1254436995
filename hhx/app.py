"""The one entrypoint, `python -m hhx`: compose the config with Hydra and dispatch on `stage`."""

from __future__ import annotations

import logging
import os
import sys

# litellm fetches a price list at import unless told to use its bundled copy; never hit the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from pathlib import Path  # noqa: E402

import hydra  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from hhx.config import register_configs  # noqa: E402
from hhx.errors import HhxError  # noqa: E402

register_configs()
log = logging.getLogger("hhx")


# conf/ sits beside the package (repository layout); an absolute path works from any cwd and for
# both `python -m hhx` and the `hhx` console script.
CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")


# Named sets of tasks: `task=all`, `task=baseline`, `task=policy` (or any comma list).
TASK_SETS = ("all", "baseline", "policy")


def task_set(name: str) -> list[str]:
    from hhx.tasks.registry import load_task, task_names

    if name == "all":
        return task_names()
    return [t for t in task_names() if load_task(t).mode.value == name]


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
        raise SystemExit(exc.exit_code) from None


def main() -> float | None:
    """`python -m hhx` / the `hhx` script: task sets expanded, then Hydra."""
    sys.argv[1:] = expand_task_sets(sys.argv[1:])
    return _hydra_main()


if __name__ == "__main__":
    main()
