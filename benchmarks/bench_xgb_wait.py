"""Benchmark: two XGBoost fits sharing the cores, with OpenMP's idle threads spinning or sleeping.

hhx sets `OMP_WAIT_POLICY=PASSIVE` before xgboost loads (hhx/predictors/xgboost.py). This
measures why, in one run: a fit of the reference's shape (depth 9, eta 0.05, absolute error,
`hist`, 3,500 x 60 synthetic rows, --rounds rounds, a validation set) on all cores, alone and two
at once, under each wait policy, and two one-thread fits at once as the reference for sharing
the cores well. Each case is a fresh process (libgomp reads the policy when it loads). The table
gives each fit's wall seconds and the ratio to the same policy's fit alone.

    .venv/bin/python benchmarks/bench_xgb_wait.py [--rounds 300]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

FIT = """
import sys, time, numpy as np, xgboost as xgb
rng = np.random.default_rng(0)
X = rng.normal(size=(3500, 60)); y = 2 * X[:, 0] + rng.normal(size=3500)
Xv = rng.normal(size=(360, 60)); yv = 2 * Xv[:, 0] + rng.normal(size=360)
model = xgb.XGBRegressor(n_estimators=int(sys.argv[1]), max_depth=9, learning_rate=0.05,
                         subsample=0.7, objective="reg:absoluteerror", tree_method="hist",
                         n_jobs=int(sys.argv[2]), random_state=0)
t = time.perf_counter()
model.fit(X, y, eval_set=[(Xv, yv)], verbose=False)
print(time.perf_counter() - t)
"""


def fits(policy: str, threads: int, at_once: int, rounds: int) -> list[float]:
    """Seconds of each of `at_once` fits started together."""
    env = {**os.environ, "OMP_WAIT_POLICY": policy}
    procs = [subprocess.Popen([sys.executable, "-c", FIT, str(rounds), str(threads)], env=env,
                              stdout=subprocess.PIPE, text=True) for _ in range(at_once)]
    out = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        sys.exit("bench_xgb_wait: a fit failed")
    return [float(o.strip().splitlines()[-1]) for o in out]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=300)
    opts = ap.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cases = [("ACTIVE", cores, 1), ("PASSIVE", cores, 1), ("PASSIVE", 1, 1),
             ("ACTIVE", cores, 2), ("PASSIVE", cores, 2), ("PASSIVE", 1, 2)]
    print(f"{cores} cores; {opts.rounds} rounds per fit", flush=True)
    rows, t0 = [], time.perf_counter()
    for i, (policy, threads, at_once) in enumerate(cases, 1):
        seconds = fits(policy, threads, at_once, opts.rounds)
        rows.append((policy, threads, at_once, max(seconds)))
        print(f"  [{i}/{len(cases)}] {policy} {threads} thread(s) x {at_once}: "
              f"{max(seconds):.1f} s ({time.perf_counter() - t0:.0f} s so far)", flush=True)
    alone = {(p, t): s for p, t, n, s in rows if n == 1}
    print(f"\n{'wait policy':<12}{'threads':>8}{'fits at once':>13}{'s per fit':>11}"
          f"{'x alone':>9}")
    for policy, threads, at_once, seconds in rows:
        print(f"{policy:<12}{threads:>8}{at_once:>13}{seconds:>11.1f}"
              f"{seconds / alone[(policy, threads)]:>9.2f}")


if __name__ == "__main__":
    main()
