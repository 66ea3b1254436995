"""`stage=describe`: print a task's definition and its official metrics as JSON."""

from __future__ import annotations

import json
from typing import Any

from omegaconf import DictConfig

from hhx.scoring import describe
from hhx.tasks.registry import as_task


def run(cfg: DictConfig) -> dict[str, Any]:
    info = describe(as_task(cfg.task))
    print(json.dumps(info, indent=2, default=str))
    return info
