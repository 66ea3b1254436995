"""CPS task benchmark: the four linking tasks built from a synthetic extract, extrapolated to the
real 79 million person-months, next to the survey build alone as the reference.

    .venv/bin/python benchmarks/bench_cps.py --rows 10000000

Writes a synthetic IPUMS extract of about --rows person-months over the demo's months (Dec
2007 - Jun 2026 and four early-1990s supplement months; the UI-policy file of the same seed),
builds `cps_basic.parquet` and, each in its own process (peak memory is the phase's own
VmHWM):

  build       the survey build alone (csv.gz -> parquet): the reference
  jobfind     labor_cps_jobfind built into the official layout (link, filters, macro context,
  separation  splits, prompts and their checks, atomic writes); likewise labor_cps_separation,
  retire      labor_cps_retire (t -> t+12 link, partner lookup and earnings trim over every
  ui          record) and labor_cps_ui (with the UI-policy intermediate)
  link        the t -> t+1 link alone (hhx link_months) against
  merge_link  a naive pandas merge of each month onto the next (both must find the same links)

Each task phase also runs on an extract 1/--scale the size. Time is extrapolated linearly
from the big run (an upper bound: prompts are rendered only for the exported rows, at most
500,000 historical ones); memory by the line through the small and big runs. The goal: every
task builds from the real extract within 8 GB on 2 cores.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from _runner import print_phase, run_phase

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ROWS_PER_HOUSEHOLD = 14.15  # person-months per household over the demo's months (measured)
REAL_ROWS = 79_000_000
GOAL_MB = 8 * 1024
SEED = 1
SPAN = {"start": "2007-12", "end": "2026-06",
        "extra_months": ["1990-01", "1992-01", "1994-02", "1996-02"]}  # fmt: skip
TASKS = {"jobfind": "labor_cps_jobfind", "separation": "labor_cps_separation",
         "retire": "labor_cps_retire", "ui": "labor_cps_ui"}  # fmt: skip
LINK_COLUMNS = ["YEAR", "MONTH", "CPSIDP", "MISH", "EMPSTAT", "release_date"]


def phase(name: str, work: Path) -> dict:
    """Run one measured phase in this process; return seconds, rows and peak memory."""
    import pandas as pd

    raw = work / "cps_basic.csv.gz"
    out = work / "out"
    if name == "build":
        from hhx.config import SurveyConfig
        from hhx.surveys.cps.ipums import build

        t0 = time.perf_counter()
        report = build(SurveyConfig(name="cps", raw={"cps_basic": raw.name}), work, out)
        return {"seconds": time.perf_counter() - t0, "rows": report.rows["cps_basic"]}
    import pyarrow.parquet as pq

    rows = pq.read_metadata(out / "cps_basic.parquet").num_rows
    if name in TASKS:
        from hhx.surveys.macro.fred_qd import build_macro_context, read_fred_qd
        from hhx.surveys.synthetic.macro.fred_qd import write_synthetic_fred_qd
        from hhx.tasks.build import build_task
        from hhx.tasks.context import BuildContext
        from hhx.tasks.registry import load_task

        macro = build_macro_context(read_fred_qd(write_synthetic_fred_qd(work / "fred.csv",
                                                                         seed=SEED)))  # fmt: skip
        ctx = BuildContext(load_task(TASKS[name]), out, macro, synthetic=True, n_jobs=2)
        t0 = time.perf_counter()
        bench = build_task(ctx, work / f"bench_{name}", synthetic=True)
        return {"seconds": time.perf_counter() - t0, "rows": rows, "task_rows": len(bench.prompts)}
    df = pd.read_parquet(out / "cps_basic.parquet", columns=LINK_COLUMNS)
    if name == "link":
        from hhx.tasks.cps.common import ADJACENT_MONTH, link_months

        t0 = time.perf_counter()
        linked = link_months(df, 1, ADJACENT_MONTH, target_columns=("EMPSTAT", "MISH",
                                                                     "release_date"))  # fmt: skip
        n = int((linked["_key_ok"] & linked["_linked"] & linked["_mish_ok"]).sum())
        return {"seconds": time.perf_counter() - t0, "rows": len(df), "links": n}
    if name == "merge_link":
        t0 = time.perf_counter()
        d = df.assign(mi=df["YEAR"].astype("int64") * 12 + df["MONTH"].astype("int64"))
        d = d[~d.duplicated(["CPSIDP", "mi"], keep=False) & d["EMPSTAT"].notna()]
        target = d[["CPSIDP", "mi", "EMPSTAT", "MISH", "release_date"]].assign(mi=d["mi"] - 1)
        merged = d.merge(target, on=["CPSIDP", "mi"], how="left", suffixes=("", "_t"))
        ok = merged["MISH"].isin([1, 2, 3, 5, 6, 7]) & (merged["MISH_t"] == merged["MISH"] + 1)
        return {"seconds": time.perf_counter() - t0, "rows": len(df), "links": int(ok.sum())}
    raise SystemExit(f"unknown phase {name}")


def prepare(work: Path, rows: int) -> float:
    """The synthetic extract and UI-policy intermediate in `work`; returns generation seconds."""
    from hhx.surveys.cps.ui_policy import read_ui_policy
    from hhx.surveys.synthetic.cps.ipums import write_synthetic_cps
    from hhx.surveys.synthetic.cps.ui_policy import write_synthetic_ui_policy

    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    write_synthetic_cps(work / "cps_basic.csv.gz", seed=SEED,
                        n_households=max(1, round(rows / ROWS_PER_HOUSEHOLD)), compresslevel=1,
                        **SPAN)  # fmt: skip
    seconds = time.perf_counter() - t0
    (work / "out").mkdir(exist_ok=True)
    policy = read_ui_policy(write_synthetic_ui_policy(work / "eui.dta", seed=SEED))
    policy.to_parquet(work / "out" / "cps_ui_policy.parquet", index=False)
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000, help="target person-months")
    ap.add_argument("--scale", type=int, default=10, help="the small run is 1/scale the size")
    ap.add_argument("--work", type=Path, default=None, help="folder to keep files in")
    ap.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        print_phase(phase(args.phase, args.work))
        return

    keep = args.work is not None
    base = args.work or Path(tempfile.mkdtemp(prefix="bench_cps_"))
    results: dict[str, dict[str, dict]] = {}
    gen = {}
    for size, rows in (("small", args.rows // args.scale), ("big", args.rows)):
        work = base / size
        gen[size] = prepare(work, rows)
        names = ["build", *TASKS] + (["link", "merge_link"] if size == "big" else [])
        results[size] = {name: run_phase(__file__, name, "--work", str(work)) for name in names}
        if not keep:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
    big, small = results["big"], results["small"]
    n_big, n_small = big["build"]["rows"], small["build"]["rows"]
    factor = REAL_ROWS / n_big
    print(f"synthetic extracts: {n_big:,} and {n_small:,} person-months x 149 columns "
          f"(generated in {gen['big']:.0f} s and {gen['small']:.0f} s)")  # fmt: skip
    print(
        f"{'phase':<34}{'seconds':>9}{'rows/s':>11}{'peak MB':>9}{'time x':>8}{'mem x':>7}"
        f"{'task rows':>11}{'@79M min':>10}{'@79M GB':>9}"
    )
    ref = big["build"]
    labels = {"build": "survey build alone (reference)", "link": "t->t+1 link (link_months)",
              "merge_link": "naive merge link",
              **{k: f"{v} -> official layout" for k, v in TASKS.items()}}  # fmt: skip
    worst = 0.0
    for name, r in big.items():
        slope = (r["peak_mb"] - small[name]["peak_mb"]) / (n_big - n_small) if name in small else 0
        est_mb = r["peak_mb"] + slope * (REAL_ROWS - n_big) if name in small else float("nan")
        if name in TASKS:
            worst = max(worst, est_mb)
        print(
            f"{labels[name]:<34}{r['seconds']:>9.1f}{r['rows'] / r['seconds']:>11,.0f}"
            f"{r['peak_mb']:>9.0f}{r['seconds'] / ref['seconds']:>7.2f}x"
            f"{r['peak_mb'] / ref['peak_mb']:>6.2f}x{r.get('task_rows', 0):>11,}"
            f"{r['seconds'] * factor / 60:>10.1f}{est_mb / 1024:>9.2f}"
        )
    if big["link"]["links"] != big["merge_link"]["links"]:
        raise SystemExit(f"link counts differ: {big['link']['links']} vs "
                         f"{big['merge_link']['links']}")  # fmt: skip
    print(f"valid t->t+1 links: {big['link']['links']:,} (both methods agree)")
    verdict = "within" if worst <= GOAL_MB else "ABOVE"
    print(
        f"largest extrapolated task peak at {REAL_ROWS:,} rows: {worst / 1024:.2f} GB "
        f"({verdict} the 8 GB goal); times are upper bounds (prompts only for exported rows)"
    )


if __name__ == "__main__":
    main()
