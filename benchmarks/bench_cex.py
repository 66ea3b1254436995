"""CEX benchmark: the five CEX tasks built into the official layout from a synthetic extract of a
fraction of the real size, next to the survey builds alone (the reference, same run).

    .venv/bin/python benchmarks/bench_cex.py --fraction 0.1

Writes seeded synthetic Interview packages (about fraction x 1,000,000 interviews: 12 package
years incl. the rebate and stimulus years) and Diary releases 1986-1996 (ICPSR 1986-89, BLS
1990-96; about fraction x 388,686 diary weeks, the reference's count for 1982-2011), a macro
context and a release-date crosswalk; then runs each phase in its own process (peak memory =
the phase's own VmHWM):
  interview_survey   cex_interview build (packages -> cex_interview.parquet + addenda)
  cons_cex_total, cons_cex_categories, cons_cex_rebate01, cons_cex_stimulus08
                     each task -> official layout (table, splits, prompts with checks, eval)
  diary_survey       cex_diary build (archives -> cex_diary_daily.parquet, year by year)
  cons_cex_sspay     the task -> official layout
  baseline           importing the stack (the memory floor)
and prints seconds, rows, peak MB, the ratio to the survey build, and the figures extrapolated
to the real size (time linear in rows; memory = floor + the rest scaled by rows; the Diary
survey build holds one year at a time, so its memory scales with weeks per year; sspay reads in
full only the days of its source years 1986-1996, which the extract holds at the real years'
count, so its time and memory scale with weeks per year too). The work
folder is removed at the end unless --keep or --work is given (--work reuses its files).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _runner import print_phase, run_phase

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

REAL_INTERVIEWS = 1_000_000  # 43 packages x about 6,000 consumer units a quarter (estimate)
REAL_DIARY_WEEKS = 388_686  # the reference's FMLY records 1982-2011
REAL_DIARY_YEARS = 30
INTERVIEW_YEARS = [1990, 1995, 2000, 2001, 2004, 2007, 2008, 2012, 2016, 2020, 2023, 2024]
DIARY_YEARS = list(range(1986, 1997))
TASKS = ["cons_cex_total", "cons_cex_categories", "cons_cex_rebate01", "cons_cex_stimulus08",
         "cons_cex_sspay"]


def generate(work: Path, fraction: float) -> dict:
    from hhx.surveys.synthetic.cex.diary import write_synthetic_cex_diary
    from hhx.surveys.synthetic.cex.interview import write_synthetic_cex_interview
    from hhx.surveys.synthetic.macro.cpi import write_synthetic_cpi
    from hhx.surveys.synthetic.macro.fred_qd import write_synthetic_fred_qd
    from hhx.surveys.synthetic.macro.release_dates import write_synthetic_release_dates

    stamp = work / "generated.json"
    if stamp.is_file():
        return json.loads(stamp.read_text())
    quarters = 4 * len(INTERVIEW_YEARS)
    n_interview = max(5, round(fraction * REAL_INTERVIEWS / quarters / (4 * 0.92)))
    weeks_per_year = fraction * REAL_DIARY_WEEKS / REAL_DIARY_YEARS
    n_diary = max(5, round(weeks_per_year / 4 / 1.98))
    t0 = time.perf_counter()
    write_synthetic_cex_interview(work / "raw" / "interview", seed=1, years=INTERVIEW_YEARS,
                                  n_cu_per_quarter=n_interview)
    t1 = time.perf_counter()
    write_synthetic_cex_diary(work / "raw" / "bls", seed=1, years=DIARY_YEARS,
                              n_cu_per_quarter=n_diary, icpsr_dir=work / "raw" / "icpsr")
    t2 = time.perf_counter()
    write_synthetic_release_dates(work / "raw" / "release_dates", seed=1)
    write_synthetic_fred_qd(work / "raw" / "fred.csv", seed=1)
    write_synthetic_cpi(work / "raw" / "cpi", seed=1, start="1967-01", end="2026-06")
    info = {"n_interview": n_interview, "n_diary": n_diary, "interview_s": t1 - t0,
            "diary_s": t2 - t1}
    stamp.write_text(json.dumps(info))
    return info


def _surveys(work: Path) -> dict:
    from hhx.config import SurveyConfig

    raw = work / "raw"
    return {
        "interview": SurveyConfig(name="cex_interview", raw={
            "interview": str(raw / "interview"),
            "release_crosswalk": str(raw / "release_dates" / "release_cex.csv")}),
        "diary": SurveyConfig(name="cex_diary", raw={
            "diary": str(raw / "bls"), "icpsr": str(raw / "icpsr"),
            "release_crosswalk": str(raw / "release_dates" / "release_cex.csv")}),
    }


def phase(name: str, work: Path) -> dict:
    import pyarrow.parquet as pq

    out = work / "intermediate"
    if name == "baseline":
        import pandas  # noqa: F401

        from hhx.tasks.build import build_task  # noqa: F401

        return {"seconds": 0.0, "rows": 1}
    if name in ("interview_survey", "diary_survey"):
        from hhx.surveys.cex import diary as cex_diary
        from hhx.surveys.cex import interview as cex_interview

        module = cex_interview if name == "interview_survey" else cex_diary
        survey = _surveys(work)[name.split("_")[0]]
        t0 = time.perf_counter()
        report = module.build(survey, work / "raw", out)
        output = "cex_interview" if name == "interview_survey" else "cex_diary_daily"
        return {"seconds": time.perf_counter() - t0, "rows": report.rows[output]}
    from hhx.surveys.macro.cpi import read_cpi_groups
    from hhx.surveys.macro.fred_qd import build_macro_context, read_fred_qd
    from hhx.tasks.build import build_task
    from hhx.tasks.context import BuildContext
    from hhx.tasks.registry import load_task

    macro = build_macro_context(read_fred_qd(work / "raw" / "fred.csv"),
                                read_cpi_groups(work / "raw" / "cpi")[0])
    ctx = BuildContext(load_task(name), out, macro, synthetic=True)
    source = "cex_diary_daily" if name == "cons_cex_sspay" else "cex_interview"
    t0 = time.perf_counter()
    bench = build_task(ctx, work / "bench", synthetic=True)
    return {"seconds": time.perf_counter() - t0,
            "rows": pq.read_metadata(out / f"{source}.parquet").num_rows,
            "task_rows": len(bench.prompts)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--fraction", type=float, default=0.1, help="share of the real size")
    ap.add_argument("--work", type=Path, default=None, help="folder to keep (and reuse) files in")
    ap.add_argument("--keep", action="store_true", help="keep the temporary work folder")
    ap.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        print_phase(phase(args.phase, args.work))
        return
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_cex_"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        info = generate(work, args.fraction)
        names = ["baseline", "interview_survey", *TASKS[:4], "diary_survey", TASKS[4]]
        results = {name: run_phase(__file__, name, "--work", str(work)) for name in names}
        report(results, info, work)
    finally:
        if args.work is None and not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def report(results: dict, info: dict, work: Path) -> None:
    floor = results["baseline"]["peak_mb"]
    interviews = results["interview_survey"]["rows"]
    days = results["diary_survey"]["rows"]
    weeks = days / 7
    print(f"synthetic extract in {work}: {interviews:,} interviews (generated in "
          f"{info['interview_s']:.0f} s), {weeks:,.0f} diary weeks / {days:,} days "
          f"({info['diary_s']:.0f} s); memory floor {floor:.0f} MB")
    scale = {"interview": REAL_INTERVIEWS / interviews, "diary": REAL_DIARY_WEEKS / weeks,
             "diary_year": (REAL_DIARY_WEEKS / REAL_DIARY_YEARS) / (weeks / len(DIARY_YEARS))}
    print(f"{'phase':<22}{'seconds':>9}{'rows in':>11}{'task rows':>10}{'peak MB':>9}"
          f"{'t ratio':>9}{'m ratio':>9}{'real s':>9}{'real GB':>9}")
    for name, r in results.items():
        if name == "baseline":
            continue
        diary = name in ("diary_survey", "cons_cex_sspay")
        ref = results["diary_survey" if diary else "interview_survey"]
        # sspay reads only its eleven source years' days in full: both scale per year
        time_scale = scale["diary_year" if name == "cons_cex_sspay" else
                           "diary" if diary else "interview"]
        mem_scale = scale["diary_year"] if diary else time_scale
        real_gb = (floor + max(r["peak_mb"] - floor, 0) * mem_scale) / 1024
        print(f"{name:<22}{r['seconds']:>9.1f}{r['rows']:>11,}{r.get('task_rows', 0):>10,}"
              f"{r['peak_mb']:>9.0f}{r['seconds'] / ref['seconds']:>8.2f}x"
              f"{r['peak_mb'] / ref['peak_mb']:>8.2f}x{r['seconds'] * time_scale:>9.0f}"
              f"{real_gb:>9.2f}")
    print("real: interviews x{:.1f}, diary weeks x{:.1f} (per year x{:.1f}); goal <= 8 GB on 2 "
          "cores".format(scale["interview"], scale["diary"], scale["diary_year"]))


if __name__ == "__main__":
    main()
