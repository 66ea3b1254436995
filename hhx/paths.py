"""Where hhx finds its configs and where a run keeps data, run folders and the MLflow store.

- `conf_dir()`: the working copy's `conf/` beside the package, else the copy a wheel carries as
  package data (`hhx/conf`, put there by setup.py's build step).
- `project_root()`: one root for data, runs and the store, wherever hhx is started: `$HHX_ROOT`,
  else the nearest folder at or above the current one that is an hhx project (a `.hhx-root`
  file, or an hhx working copy: `pyproject.toml` + `conf/config.yaml`), else the current folder.
  So running from a subfolder of the working copy reuses its demo data and its `mlflow.db`.
- `tracking_uri(root)`: `$MLFLOW_TRACKING_URI` when set (as MLflow users expect), else a SQLite
  store in the root. `tracking.uri=` on the command line wins over both.
Imports nothing heavy: `hhx --help` uses it.
"""

from __future__ import annotations

import os
from pathlib import Path

from hhx.catalog import STAGES, custom_model_name

PACKAGE = Path(__file__).resolve().parent
MARKER = ".hhx-root"


def conf_dir() -> Path:
    checkout = PACKAGE.parent / "conf"
    if (checkout / "config.yaml").is_file():
        return checkout
    return PACKAGE / "conf"


def is_project(folder: Path) -> bool:
    return (folder / MARKER).exists() or (
        (folder / "pyproject.toml").is_file() and (folder / "conf" / "config.yaml").is_file())


def project_root(cwd: Path | None = None) -> Path:
    env = os.environ.get("HHX_ROOT")
    if env:
        return Path(env).expanduser().resolve()
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if is_project(folder):
            return folder
    return here


def tracking_uri(root: str | Path) -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path(root) / 'mlflow.db'}"


def stage_label(stage: object, task: str, model: str, survey: object = None) -> str:
    """The part of a run folder's name after the time: stage and what it ran on."""
    name = getattr(stage, "value", None) or str(stage).rsplit(".", 1)[-1]
    folder = next((s.folder for s in STAGES if s.name == name), "{stage}")
    return folder.format(stage=name, task=task, model=model)


def register_resolvers() -> None:
    """`${hhx.root:}`, `${hhx.tracking_uri:<root>}`, `${hhx.run_label:...}` and
    `${hhx.custom_name:<target>,<params>}` for conf/."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("hhx.root"):
        OmegaConf.register_new_resolver("hhx.root", lambda: str(project_root()))
        OmegaConf.register_new_resolver("hhx.tracking_uri", lambda root: tracking_uri(root))
        OmegaConf.register_new_resolver("hhx.run_label", stage_label)
    if not OmegaConf.has_resolver("hhx.custom_name"):  # conf/model/custom.yaml's default name
        OmegaConf.register_new_resolver("hhx.custom_name", custom_model_name)
