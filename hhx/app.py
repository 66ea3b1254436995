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


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def main(cfg: DictConfig) -> float | None:
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


if __name__ == "__main__":
    main()
