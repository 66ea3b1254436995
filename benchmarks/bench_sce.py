"""SCE benchmark: the survey build, the SCE Core and module tasks, at a tenth of the real size.

    .venv/bin/python benchmarks/bench_sce.py --per-month 11

Writes the synthetic NY Fed workbooks (core + modules) with `--per-month` new respondents a
month over 2013-06..2026-06 (11 gives about 20,000 core respondent-months, a tenth of the real
core files' roughly 200,000), the synthetic FRED-QD and CPI, then runs each phase in its own
process (peak memory is the phase's own high-water mark, VmHWM):
  survey   the SCE build alone (nine workbooks -> sce_* parquet): the reference
  <task>   one task from the built intermediates into the official release layout (table,
           splits, prompts with their checks, eval sample)
and prints seconds, peak RSS, both as ratios to the survey build, and both extrapolated
linearly to the real size (--real-rows core respondent-months). Goal: every task within 8 GB.
The work folder is removed afterwards unless --work is given.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _runner import print_phase, run_phase

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TASKS = ("income_sce_growth", "house_sce_move", "labor_sce_risk", "labor_sce_search",
         "macro_sce_uncertainty", "macro_sce_revision",
         # the module tasks (issue 16): spending, policy, labor market, job search, housing
         "cons_sce_growth", "cons_sce_shock", "income_sce_policy", "labor_sce_offer",
         "labor_sce_reswage", "house_sce_lockin",
         # the Fuster-Zafar experiment: its synthetic file has the real 1,211 respondents
         "house_sce_financing")  # fmt: skip
REAL_SIZE = {"house_sce_financing"}  # built at the real size: not extrapolated
REAL_CORE_ROWS = 200_000  # core respondent-months of the real 2013-2025 files (approximate)


def _cfg(work: Path, per_month: int, task: str = "labor_sce_risk"):
    from hydra import compose, initialize_config_dir

    from hhx.app import CONF_DIR
    from hhx.predictors.base import register_schemas

    register_schemas()
    with initialize_config_dir(CONF_DIR, version_base="1.3"):
        return compose("config", overrides=[
            f"task={task}", f"data.root={work}/hb", f"data.raw_dir={work}/raw",
            f"data.intermediate_dir={work}/inter",
            f"data.demo.surveys={{sce: {{new_per_month: {per_month}, lockin_entrants: 260}}}}",
        ])  # fmt: skip


def phase(name: str, work: Path, per_month: int) -> dict:
    import pyarrow.parquet as pq

    from hhx.surveys.registry import load_survey
    from hhx.tasks.registry import as_task
    from hhx.tasks.sources import build_bench_task, prepare_sources

    if name == "prepare":  # demo raw files + intermediates (not measured against anything)
        t0 = time.perf_counter()
        prepare_sources(_cfg(work, per_month).data, ["sce", "sce_financing", "cpi", "fred_qd"])
        return {"seconds": time.perf_counter() - t0,
                "rows": pq.read_metadata(work / "inter" / "sce_core.parquet").num_rows}
    if name == "survey":
        from hhx.surveys.sce.microdata import build

        survey = load_survey("sce")
        t0 = time.perf_counter()
        report = build(survey, work / "raw", work / "survey_out")
        return {"seconds": time.perf_counter() - t0, "rows": report.rows["sce_core"]}
    cfg = _cfg(work, per_month, name)
    t0 = time.perf_counter()
    bench = build_bench_task(cfg.data, as_task(cfg.task))
    return {"seconds": time.perf_counter() - t0, "rows": len(bench.prompts)}


def _run(name: str, work: Path, per_month: int) -> dict:
    return run_phase(__file__, name, "--work", str(work), "--per-month", str(per_month))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--per-month", type=int, default=11, help="new core respondents a month")
    ap.add_argument("--real-rows", type=int, default=REAL_CORE_ROWS)
    ap.add_argument("--work", type=Path, default=None, help="folder to keep files in")
    ap.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        print_phase(phase(args.phase, args.work, args.per_month))
        return

    work = args.work or Path(tempfile.mkdtemp(prefix="bench_sce_"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        prepared = _run("prepare", work, args.per_month)
        results = {name: _run(name, work, args.per_month) for name in ("survey", *TASKS)}
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    core = prepared["rows"]
    scale = args.real_rows / core
    print(f"synthetic SCE: {core:,} core respondent-months (x{scale:.1f} to the real "
          f"{args.real_rows:,}); raw files + intermediates prepared in "
          f"{prepared['seconds']:.1f} s")
    print(f"{'phase':<24}{'rows':>9}{'seconds':>9}{'peak MB':>9}{'time ratio':>12}"
          f"{'mem ratio':>10}{'real s':>9}{'real MB':>9}")
    ref = results["survey"]
    for name, r in results.items():
        label = "sce survey build (ref)" if name == "survey" else name
        k = 1.0 if name in REAL_SIZE else scale
        print(f"{label:<24}{r['rows']:>9,}{r['seconds']:>9.1f}{r['peak_mb']:>9.0f}"
              f"{r['seconds'] / ref['seconds']:>11.2f}x{r['peak_mb'] / ref['peak_mb']:>9.2f}x"
              f"{r['seconds'] * k:>9.0f}{r['peak_mb'] * k:>9.0f}")
    worst = max(r["peak_mb"] * (1.0 if n in REAL_SIZE else scale) for n, r in results.items())
    print(f"largest extrapolated peak: {worst:,.0f} MB ({'within' if worst <= 8192 else 'over'} "
          "the 8 GB goal; linear extrapolation of the whole-process RSS, an upper bound)")


if __name__ == "__main__":
    main()
