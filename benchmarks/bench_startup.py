"""Benchmark: start-up of hhx against bare `python -c "import hydra, mlflow"`, in the same run.

Times (median of --repeats fresh processes each): the reference import; `hhx --help`;
`stage=describe`; a no-change evaluate of a demo task that is already built (MLflow store already
created, so neither the build nor the store's migrations are timed; compare_no_change=false). The
table gives each command's seconds, hhx's own overhead over the reference (goal: under 1 s for
describe and the no-change evaluate), and the ratio; then the same in CPU seconds (user + system
of the child process), which a loaded machine inflates much less than wall time. One more row,
not a command of hhx's: the reference plus opening the SQLite MLflow store (MLflow's SQL store
and its migration checks, ~2 s of imports that any program logging to that store pays), the floor
under an evaluate that logs its run. hhx pauses the garbage collector while it starts and freezes
it at exit (hhx/startup.py), which bare Python does not: the last two rows are the reference and
the floor run the same way, so "own part" (evaluate minus that floor) is hhx's own work alone, not
a collector setting the reference lacks. The commands take turns (one run of each per repeat), so
a busy moment of the machine spreads over all rows. The demo is a small one (300 CPS households)
in a temporary folder, removed afterwards. Whether the venv holds bytecode is printed too (setup.sh writes it;
without it every start compiles thousands of files).

    .venv/bin/python benchmarks/bench_startup.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SMALL = ["task=labor_cps_jobfind", "data.demo.surveys={cps: {n_households: 300}}"]


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of `cmd`."""
    c0, t0 = child_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds, cpu = time.perf_counter() - t0, child_cpu() - c0
    if proc.returncode != 0:
        sys.exit(f"bench_startup: `{' '.join(cmd[1:])}` failed:\n{proc.stderr[-2000:]}")
    return seconds, cpu


def medians(repeats: int, cases: list[tuple[str, list[str]]], cwd: Path,
            env: dict[str, str]) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) seconds of each case; the cases take turns, one run each per repeat."""
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in cases}
    for _ in range(repeats):
        for name, cmd in cases:
            runs[name].append(timed(cmd, cwd, env))
    return {name: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs))
            for name, rs in runs.items()}


def bytecode_share() -> str:
    site = Path(sysconfig.get_paths()["purelib"])
    sources = sum(1 for _ in site.rglob("*.py"))
    compiled = sum(1 for _ in site.rglob("*.pyc"))
    return f"{compiled:,} .pyc for {sources:,} .py files in {site}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hhx-bench-startup-"))
    env = {**os.environ, "HYDRA_FULL_ERROR": "0", "HHX_ROOT": str(work), "HHX_PROGRESS": "0",
           "PYTHONPATH": str(REPO)}
    env.pop("MLFLOW_TRACKING_URI", None)
    py = sys.executable
    hhx = [py, "-m", "hhx"]
    evaluate = [*hhx, *SMALL, "model=no_change", "compare_no_change=false"]
    try:
        print(f"bytecode: {bytecode_share()}")
        print("building the demo task and the MLflow store (not timed) ...", flush=True)
        timed(evaluate, work, env)  # build + store creation
        store = (f"import hydra, mlflow; mlflow.MlflowClient(tracking_uri='sqlite:///{work}/"
                 "mlflow.db').get_experiment_by_name('hhx')")
        as_hhx = "import atexit, gc; gc.disable(); atexit.register(gc.freeze); "
        cases = [
            ("reference: python -c 'import hydra, mlflow'", [py, "-c", "import hydra, mlflow"]),
            ("hhx --help", [*hhx, "--help"]),
            ("hhx stage=describe", [*hhx, "stage=describe", "tracking=none"]),
            ("hhx no-change evaluate (built task)", evaluate),
            ("(floor: reference + open the SQLite store)", [py, "-c", store]),
            ("(reference, collector as hhx runs it)", [py, "-c", as_hhx + "import hydra, mlflow"]),
            ("(floor, collector as hhx runs it)", [py, "-c", as_hhx + store]),
        ]
        load_before = os.getloadavg()[0]
        results = medians(args.repeats, cases, work, env)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ref, ref_cpu = results[cases[0][0]]
    print(f"\nstart-up, median of {args.repeats} (s); overhead = time - reference\n")
    print(f"{'command':<44} {'seconds':>8} {'overhead':>9} {'ratio':>6}   {'cpu s':>6} "
          f"{'cpu over':>9}")
    for name, (seconds, cpu) in results.items():
        print(f"{name:<44} {seconds:8.2f} {seconds - ref:+9.2f} {seconds / ref:6.2f}   "
              f"{cpu:6.2f} {cpu - ref_cpu:+9.2f}")
    own = results[cases[3][0]][0] - results[cases[-1][0]][0]
    own_cpu = results[cases[3][0]][1] - results[cases[-1][0]][1]
    print(f"\nhhx's own part of the no-change evaluate (minus the floor run as hhx runs it): "
          f"{own:+.2f} s, {own_cpu:+.2f} cpu s (goal: under 1 s)")
    print(f"\n(load average {load_before:.1f} before the timed runs, {os.getloadavg()[0]:.1f} "
          f"after, on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
