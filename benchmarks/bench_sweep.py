"""Benchmark: a demo grid swept with the joblib launcher at 2 workers vs the same grid serially.

The grid is 32 task slots x 2 models (no_change, XGBoost) = 64 cells on the synthetic demo. The
slots are the tasks the demo builds (`${hhx.tasks:buildable}`), cycled with a different seed each
time round when fewer than 32 exist (a seed is part of a cell's identity, so every slot is a new
cell). The demo is built once first (not timed); each sweep gets a brand-new SQLite store, so
both include the store's creation, and nothing is skipped. Goal: ratio >= 1.7 on 2 cores.

The table shows, for each sweep, the CPU time the whole machine spent meanwhile (/proc/stat) and
so the cores it kept busy on average, and the 1-minute load average before and after: on a
machine shared with other work the ratio is not the launcher's alone (two workers get a larger
share of contended cores than one process does, which can push the ratio past the core count).

The serial sweep is not a one-core reference: each XGBoost fit in it already runs on all cores
(`model.xgboost.threads`), so the ratio is bounded by how much faster a fit is on one core per
job than on all of them. `--sweeps serial,joblib,one-core` adds the serial sweep with
`OMP_NUM_THREADS=1` (every fit on one thread: the grid's work on one core), and the ratio of that
sweep to the joblib one: what the parallel launcher itself gains. Everything is written under one
temporary folder, removed at the end (also on an error or Ctrl-C).

    .venv/bin/python benchmarks/bench_sweep.py [--slots 32] [--households 2000] [--workers 2]
        [--sweeps serial,joblib[,one-core]] [--build-dir DIR]
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


def hhx(work: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "hhx", *args]
    proc = subprocess.run(cmd, cwd=work, text=True, capture_output=True,
                          env={**os.environ, "HYDRA_FULL_ERROR": "0", **(env or {})})
    if proc.returncode != 0:
        sys.exit(f"bench_sweep: `{' '.join(cmd[3:])}` failed:\n{proc.stderr[-2000:]}")
    return proc


def machine_cpu_seconds() -> float:
    """CPU seconds all cores have spent busy since boot (/proc/stat: user .. steal)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    busy = sum(fields) - fields[3] - fields[4]  # minus idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


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
        sweeps = {
            "serial": ("serial (basic launcher)", [], {}),
            "joblib": (f"joblib, {opts.workers} workers",
                       ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={opts.workers}"], {}),
            "one-core": ("serial, OMP_NUM_THREADS=1", [], {"OMP_NUM_THREADS": "1"}),
        }
        chosen = opts.sweeps.split(",")
        unknown = sorted(set(chosen) - set(sweeps))
        if unknown:
            sys.exit(f"bench_sweep: --sweeps {','.join(unknown)}: choose from {', '.join(sweeps)}")
        rows: dict[str, tuple[str, float, float, float, float]] = {}
        for tag in chosen:
            name, launcher, env = sweeps[tag]
            before, cpu0, t0 = os.getloadavg()[0], machine_cpu_seconds(), time.perf_counter()
            proc = hhx(work, "--multirun", *launcher, *common, f"tracking.uri=sqlite:///{work}/"
                       f"{tag}.db", f"hydra.sweep.dir={work}/{tag}", env=env)
            wall, cpu = time.perf_counter() - t0, machine_cpu_seconds() - cpu0
            rows[tag] = (name, wall, cpu, before, os.getloadavg()[0])
            line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("sweep: "))
            print(f"  {name}: {wall:.1f} s, {cpu:.0f} CPU s  ({line})", flush=True)
        print(f"\n{'sweep':<27}{'cells':>6}{'wall s':>9}{'s/cell':>8}{'CPU s':>8}"
              f"{'cores busy':>11}{'load before/after':>19}")
        for name, wall, cpu, before, after in rows.values():
            print(f"{name:<27}{cells:>6}{wall:>9.1f}{wall / cells:>8.2f}{cpu:>8.0f}"
                  f"{cpu / wall:>11.2f}{before:>12.1f} / {after:<4.1f}")
        if "serial" in rows and "joblib" in rows:
            print(f"ratio serial / joblib: {rows['serial'][1] / rows['joblib'][1]:.2f}x "
                  f"(goal >= 1.7x on 2 cores; {os.cpu_count()} CPUs here)")
        if "one-core" in rows and "joblib" in rows:
            print(f"ratio one-core serial / joblib: {rows['one-core'][1] / rows['joblib'][1]:.2f}x"
                  f" (the launcher's own gain: the grid's one-core work over {opts.workers} "
                  "workers)")
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
        else:  # keep the built demo, not the sweeps
            for tag in ("serial", "joblib", "one-core"):
                shutil.rmtree(work / tag, ignore_errors=True)
                (work / f"{tag}.db").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
