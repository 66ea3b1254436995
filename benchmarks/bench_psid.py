"""Task-build benchmark: the five PSID tasks (cons_psid_wealth, house_psid_owner,
income_psid_earnings, cons_psid_jobloss, labor_psid_addedworker) from a synthetic PSID-SHELF /
Complete Main Study pair of a tenth of the real size, next to the survey build alone (the
reference measured in the same run), extrapolated to the real size.

    .venv/bin/python benchmarks/bench_psid.py                  # 1/10 of the real size
    .venv/bin/python benchmarks/bench_psid.py --fraction 0.03  # a quick look

Size. The real release's task rows (spec 00_common 9.4): cons_psid_wealth 74,578,
house_psid_owner 70,170, income_psid_earnings 76,938, cons_psid_jobloss 3,676,
labor_psid_addedworker 1,117. The synthetic generator's 3,600 families give about 26,000
cons_psid_wealth rows, so the real panel is taken as 10,000 synthetic families; a fraction f
generates 10,000 f families. Each task is extrapolated by its own ratio real rows / rows built
(the synthetic panel has more job losses than the real one, so the two event tasks are
extrapolated from more rows than a tenth of theirs), the survey build by the panel's ratio
(cons_psid_wealth's). Each phase runs in its own process (peak memory = its own VmHWM): the
survey build (both archives -> psid_main.parquet), then each task's full build (table, splits,
prompts, release files), with the macro context built once, untimed. Time and memory are
extrapolated linearly (the survey build streams its archives, so memory is an upper bound).
Goal: every task within 8 GB on 2 cores at the real size. The work folder is removed afterwards.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _runner import peak_mb, print_phase, run_phase

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

REAL_FAMILIES = 10_000  # synthetic families equivalent to the real panel (see above)
REAL_ROWS = {"cons_psid_wealth": 74_578, "house_psid_owner": 70_170,
             "income_psid_earnings": 76_938, "cons_psid_jobloss": 3_676,
             "labor_psid_addedworker": 1_117}
GOAL_MB = 8 * 1024
TASKS = list(REAL_ROWS)


def phase(name: str, work: Path, families: int) -> dict:
    """One measured phase in this process."""
    raw, inter = work / "raw", work / "inter"
    t0 = time.perf_counter()
    n = 0
    if name == "prepare":  # inputs (untimed): both archives, the crosswalk, the macro context
        from hhx.surveys.macro import fred_qd
        from hhx.surveys.synthetic.macro.fred_qd import write_synthetic_fred_qd
        from hhx.surveys.synthetic.macro.release_dates import write_synthetic_crosswalk
        from hhx.surveys.synthetic.psid.shelf import write_synthetic_psid

        write_synthetic_psid(raw / "long.zip", raw / "main.zip", seed=1, n_families=families)
        write_synthetic_crosswalk(raw / "release_psid.csv", "psid", seed=1)
        write_synthetic_fred_qd(raw / "qd.csv", seed=1)
        inter.mkdir(parents=True, exist_ok=True)
        fred_qd.build_macro_context(fred_qd.read_fred_qd(raw / "qd.csv")).to_parquet(
            inter / "householdbench_macro_context.parquet")
    elif name == "psid_build":
        from hhx.config import SurveyConfig
        from hhx.surveys.psid import shelf as psid

        survey = SurveyConfig(name="psid", raw={"shelf_long": "long.zip",
                                                "main_study": "main.zip",
                                                "release_dates": "release_psid.csv"})
        n = psid.build(survey, raw, inter).rows["psid_main"]
    else:
        import pandas as pd

        from hhx.tasks.build import build_task
        from hhx.tasks.context import BuildContext
        from hhx.tasks.registry import load_task

        macro = pd.read_parquet(inter / "householdbench_macro_context.parquet")
        ctx = BuildContext(task=load_task(name), intermediate_dir=inter, macro_context=macro)
        n = len(build_task(ctx, work / "bench", synthetic=True).table)
    return {"seconds": time.perf_counter() - t0, "rows": n, "peak_mb": peak_mb()}


def _run(name: str, work: Path, families: int) -> dict:
    return run_phase(__file__, name, "--work", str(work), "--families", str(families))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fraction", type=float, default=0.1)
    parser.add_argument("--phase")
    parser.add_argument("--work", type=Path)
    parser.add_argument("--families", type=int, default=0)
    args = parser.parse_args()
    if args.phase:
        print_phase(phase(args.phase, args.work, args.families))
        return
    families = max(200, round(REAL_FAMILIES * args.fraction))
    work = Path(tempfile.mkdtemp(prefix="hhx-bench-psid-"))
    try:
        _run("prepare", work, families)
        results = {"psid": _run("psid_build", work, families)}
        for task in TASKS:
            results[task] = _run(task, work, families)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    scales = {t: REAL_ROWS[t] / max(1, results[t]["rows"]) for t in TASKS}
    scales["psid"] = scales["cons_psid_wealth"]
    ref = results["psid"]
    print(f"\nsynthetic PSID of {families:,} families ({args.fraction:g} of the real panel, "
          f"taken as {REAL_FAMILIES:,} synthetic families); real = x (real rows / rows)")
    print(f"{'phase':<36}{'rows':>10}{'seconds':>9}{'peak MB':>9}{'scale':>7}{'real s':>9}"
          f"{'real MB':>9}{'vs survey':>10}")
    for name in ["psid", *TASKS]:
        r, k = results[name], scales[name]
        label = "psid survey build (reference)" if name == "psid" else f"task {name}"
        print(f"{label:<36}{r['rows']:>10,}{r['seconds']:>9.1f}{r['peak_mb']:>9.0f}{k:>7.1f}"
              f"{r['seconds'] * k:>9.0f}{r['peak_mb'] * k:>9.0f}"
              f"{r['seconds'] / ref['seconds']:>9.2f}x")
    worst = max(results[t]["peak_mb"] * scales[t] for t in TASKS)
    print(f"\nlargest extrapolated task peak {worst:,.0f} MB (goal <= {GOAL_MB:,} MB): "
          f"{'OK' if worst <= GOAL_MB else 'over'}; linear memory extrapolation (interpreter "
          "and libraries included) is an upper bound")


if __name__ == "__main__":
    main()
