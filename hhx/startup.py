"""The garbage collector during one hhx process's start-up and exit.

Measured (benchmarks/bench_startup.py, 2 cores): importing Hydra, MLflow, SQLAlchemy and pandas
builds a few million long-lived objects, and the collector's full passes over them while they load
cost ~0.3 s of a no-change evaluate; at exit the interpreter's last collections walk them all
again: ~0.5 s for bare `import hydra, mlflow`, ~0.9 s after an evaluate. Neither pass frees
anything that matters: modules, classes and configs live until exit.

So `hhx` (hhx/app.py `main`) pauses the collector while it starts, and `resume_gc` ends the pause
where the stage's own work begins (hhx/stages: after the stage module is imported; an evaluate
after its MLflow run is opened): what start-up built is frozen (`gc.freeze`, never scanned again,
which also makes the long run's later collections cheaper) and collection goes on as usual. At exit
everything is frozen before the interpreter's final collections. Nothing written depends on the
collector: files are written atomically and closed (hhx.io), MLflow commits each write, logging
flushes in its own exit handler. Called from anywhere but `main` (tests calling a stage), these
are no-ops.
"""

from __future__ import annotations

import atexit
import gc

_paused = False


def pause_gc() -> None:
    """Pause collection for start-up, and freeze everything before the interpreter's exit."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True
    atexit.register(gc.freeze)


def resume_gc() -> None:
    """Start-up is over: freeze what it built, collect as usual from now on."""
    global _paused
    if _paused:
        gc.freeze()
        gc.enable()
        _paused = False
