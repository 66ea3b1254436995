"""hhx: evaluate language models and classical references on HouseholdBench's 32 household tasks.

From Python (hhx/api.py; the same runs as the `hhx` command):

    import hhx
    run = hhx.evaluate(task="labor_cps_jobfind", model="xgboost", max_examples=20)
    run.scores, run.details, run.run_id, run.run_dir
    hhx.list_tasks(); hhx.describe("labor_cps_jobfind"); hhx.build(task=...); hhx.leaderboard()

The names load on first use (module `__getattr__`): `import hhx` imports neither Hydra, MLflow
nor pandas, so `hhx --help` starts as fast as before.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__version__ = "0.1.0"

# public name -> the module that defines it (no import here, not even for type checkers: lower
# layers import `hhx`, which must stay a leaf of the import graph)
_PUBLIC = {
    "evaluate": "hhx.api", "build": "hhx.api", "describe": "hhx.api", "leaderboard": "hhx.api",
    "list_tasks": "hhx.api", "EvalResult": "hhx.api", "BuildResult": "hhx.api",
    "TaskDescription": "hhx.api", "LeaderboardResult": "hhx.api",
    "HhxError": "hhx.errors", "ConfigError": "hhx.errors", "DataError": "hhx.errors",
    "PredictorError": "hhx.errors", "NotSupportedError": "hhx.errors",
    "Interrupted": "hhx.errors", "RunFailed": "hhx.stages.evaluate",
}
__all__ = [
    "BuildResult", "ConfigError", "DataError", "EvalResult", "HhxError", "Interrupted",
    "LeaderboardResult", "NotSupportedError", "PredictorError", "RunFailed", "TaskDescription",
    "build", "describe", "evaluate", "leaderboard", "list_tasks",
]

def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'hhx' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


class _Package(types.ModuleType):
    """`hhx.leaderboard` is the API's function, though `hhx/leaderboard/` is also a subpackage:
    importing a subpackage binds it as an attribute of its parent, which would shadow the
    function; that binding is not kept for a public name. The subpackage is still imported by
    its full name (`from hhx.leaderboard.stage import run`, importlib), as hhx's code does."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _PUBLIC and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
