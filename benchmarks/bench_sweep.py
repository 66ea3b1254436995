"""Benchmark: a demo grid swept with the joblib launcher at 2 workers vs the same grid serially.

The grid is 32 task slots x 2 models (no_change, XGBoost) = 64 cells on the synthetic demo. The
slots are the tasks the demo builds (`${hhx.tasks:buildable}`), cycled with a different seed each
time round when fewer than 32 exist (a seed is part of a cell's identity, so every slot is a new
cell). The demo is built once first (not timed); each sweep gets a brand-new SQLite store, so
both include the store's creation, and nothing is skipped. Goal: ratio >= 1.7 on 2 cores.

The table shows the 1-minute load average before and after each sweep: on a machine shared with
other work the ratio is not the launcher's alone (two workers get a larger share of contended
cores than one process does, which can push the ratio past the core count). Everything is
written under one temporary folder, removed at the end (also on an error or Ctrl-C).

    .venv/bin/python benchmarks/bench_sweep.py [--slots 32] [--households 2000] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout, uninstalled


def hhx(work: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "hhx", *args]
    proc = subprocess.run(cmd, cwd=work, text=True, capture_output=True,
                          env={**os.environ, "HYDRA_FULL_ERROR": "0"})
    if proc.returncode != 0:
        sys.exit(f"bench_sweep: `{' '.join(cmd[3:])}` failed:\n{proc.stderr[-2000:]}")
    return proc


def grid(slots: int) -> tuple[list[str], list[str]]:
    """(tasks, seeds) whose product has `slots` task x seed slots (at most: a full last round)."""
    from hhx.sweeps.grid import select_tasks

    tasks = select_tasks("buildable")[:slots]  # fewer slots than tasks: the first ones
    rounds = -(-slots // len(tasks))
    return tasks, [str(42 + r) for r in range(rounds)]


def main() -> None:
    # SIGTERM (a timeout, a killed job) unwinds like Ctrl-C, so the temporary folder is removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("bench_sweep: terminated"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, default=32, help="task slots (x 2 models)")
    parser.add_argument("--households", type=int, default=2000, help="demo size")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sweeps", default="serial,joblib",
                        help="which sweeps to time (both give the ratio)")
    parser.add_argument("--build-dir", type=Path, default=None,
                        help="build the demo here and keep it (reused when already built)")
    opts = parser.parse_args()
    tasks, seeds = grid(opts.slots)
    cells = len(tasks) * len(seeds) * 2
    keep = opts.build_dir is not None
    work = opts.build_dir.resolve() if keep else Path(tempfile.mkdtemp(prefix="hhx-bench-sweep-"))
    work.mkdir(parents=True, exist_ok=True)
    common = [f"survey.demo.n_households={opts.households}", f"task={','.join(tasks)}",
              "model=no_change,xgboost", f"seed={','.join(seeds)}"]
    try:
        print(f"bench_sweep: {len(tasks)} buildable task(s) x {len(seeds)} seed(s) x 2 models ="
              f" {cells} cells; demo of {opts.households} households (building, not timed)")
        t0 = time.perf_counter()  # one process builds every task in turn (stage=build sweeps)
        hhx(work, "--multirun", "stage=build", f"task={','.join(tasks)}", "tracking.enabled=false",
            f"survey.demo.n_households={opts.households}", f"hydra.sweep.dir={work}/build")
        print(f"  demo and {len(tasks)} task(s) built in {time.perf_counter() - t0:.0f} s",
              flush=True)
        times: dict[str, float] = {}
        loads: dict[str, tuple[float, float]] = {}
        for name, launcher in (("serial (basic launcher)", []),
                               (f"joblib, {opts.workers} workers",
                                ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={opts.workers}"])):
            tag = "joblib" if launcher else "serial"
            if tag not in opts.sweeps.split(","):
                continue
            before = os.getloadavg()[0]
            t0 = time.perf_counter()
            proc = hhx(work, "--multirun", *launcher, *common,
                       f"tracking.uri=sqlite:///{work}/{tag}.db", f"hydra.sweep.dir={work}/{tag}")
            times[name] = time.perf_counter() - t0
            loads[name] = (before, os.getloadavg()[0])
            line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("sweep: "))
            print(f"  {name}: {times[name]:.1f} s  ({line})", flush=True)
        if len(times) < 2:  # one sweep timed: no ratio
            for name, wall in times.items():
                print(f"{name}: {cells} cells, {wall:.1f} s, {wall / cells:.2f} s/cell")
            return
        serial, parallel = times.values()
        print(f"\n{'sweep':<26}{'cells':>6}{'wall s':>9}{'s/cell':>8}{'load before/after':>19}")
        for name, wall in times.items():
            before, after = loads[name]
            print(f"{name:<26}{cells:>6}{wall:>9.1f}{wall / cells:>8.2f}"
                  f"{before:>12.1f} / {after:<4.1f}")
        print(f"ratio serial / joblib: {serial / parallel:.2f}x (goal >= 1.7x on 2 cores; "
              f"{os.cpu_count()} CPUs here)")
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
        else:  # keep the built demo, not the sweeps
            for tag in ("serial", "joblib"):
                shutil.rmtree(work / tag, ignore_errors=True)
                (work / f"{tag}.db").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
