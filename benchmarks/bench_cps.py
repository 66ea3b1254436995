"""CPS path benchmark: extract build (csv.gz -> cps_basic.parquet) and t -> t+1 linking.

    .venv/bin/python benchmarks/bench_cps.py --rows 3000000

Writes a synthetic extract of about --rows person-months, then runs each phase in its own
process (so peak memory is the phase's own ru_maxrss) next to a reference in the same run:
  build  vs  plain pandas.read_csv of the whole file (no typing, labels or parquet)
  link   vs  a naive pandas merge of each month onto the next on (CPSIDP, month)
  task   vs  the link alone: labor_cps_jobfind built into the official layout (link, filters,
             macro context, splits, prompt rendering and checks, atomic writes)
  demo   vs  writing the demo's raw extract alone: the default demo from scratch (synthetic
             raw files -> intermediates -> macro context -> labor_cps_jobfind), as the README's
             first command does before fitting
and prints a table with rows/s (person-months in), peak RSS and the time and memory ratios.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ROWS_PER_HOUSEHOLD = 15.1  # person-months per household over 2015-01..2026-03 (measured)
LINK_COLUMNS = ["YEAR", "MONTH", "CPSIDP", "MISH", "EMPSTAT", "release_date"]


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def phase(name: str, work: Path) -> dict:
    """Run one measured phase in this process; return seconds, rows and peak memory."""
    import pandas as pd

    raw = work / "cps_basic.csv.gz"
    parquet = work / "out" / "cps_basic.parquet"
    if name == "build":
        from hhx.config import SurveyConfig
        from hhx.surveys.ipums_cps import build

        t0 = time.perf_counter()
        report = build(SurveyConfig(name="cps", raw={"cps_basic": raw.name}), work, work / "out")
        return {"seconds": time.perf_counter() - t0, "rows": report.rows["cps_basic"]}
    if name == "read_csv":
        t0 = time.perf_counter()
        df = pd.read_csv(raw)
        return {"seconds": time.perf_counter() - t0, "rows": len(df)}
    df = pd.read_parquet(parquet, columns=LINK_COLUMNS)
    if name == "link":
        from hhx.tasks.cps.common import ADJACENT_MONTH, link_months

        t0 = time.perf_counter()
        out = link_months(df, 1, ADJACENT_MONTH, target_columns=("EMPSTAT", "MISH", "release_date"))
        n = int((out["_key_ok"] & out["_linked"] & out["_mish_ok"]).sum())
        return {"seconds": time.perf_counter() - t0, "rows": len(df), "links": n}
    if name == "merge_link":
        t0 = time.perf_counter()
        d = df.assign(mi=df["YEAR"].astype("int64") * 12 + df["MONTH"].astype("int64"))
        d = d[~d.duplicated(["CPSIDP", "mi"], keep=False) & d["EMPSTAT"].notna()]
        target = d[["CPSIDP", "mi", "EMPSTAT", "MISH", "release_date"]].assign(mi=d["mi"] - 1)
        out = d.merge(target, on=["CPSIDP", "mi"], how="left", suffixes=("", "_t"))
        ok = out["MISH"].isin([1, 2, 3, 5, 6, 7]) & (out["MISH_t"] == out["MISH"] + 1)
        return {"seconds": time.perf_counter() - t0, "rows": len(df), "links": int(ok.sum())}
    if name == "task":
        import pyarrow.parquet as pq

        from hhx.surveys.fred_qd import build_macro_context, read_fred_qd
        from hhx.surveys.synthetic.fred_qd import write_synthetic_fred_qd
        from hhx.tasks.build import build_task
        from hhx.tasks.context import BuildContext
        from hhx.tasks.registry import load_task

        macro = build_macro_context(read_fred_qd(write_synthetic_fred_qd(work / "fred.csv", seed=1)))
        ctx = BuildContext(load_task("labor_cps_jobfind"), work / "out", macro, synthetic=True)
        t0 = time.perf_counter()
        bench = build_task(ctx, work / "bench", synthetic=True)
        return {"seconds": time.perf_counter() - t0, "rows": pq.read_metadata(parquet).num_rows,
                "task_rows": len(bench.prompts)}
    if name in ("demo", "demo_raw"):
        return demo_phase(name, work)
    raise SystemExit(f"unknown phase {name}")


def demo_phase(name: str, work: Path) -> dict:
    """The default demo settings, composed exactly as `python -m hhx` composes them."""
    import pyarrow.parquet as pq
    from hydra import compose, initialize_config_dir

    from hhx.app import CONF_DIR
    from hhx.stages.data import build_bench_task
    from hhx.surveys.synthetic.cps import write_synthetic_cps
    from hhx.tasks.registry import as_task

    d = work / name
    with initialize_config_dir(CONF_DIR, version_base="1.3"):
        cfg = compose("config", overrides=[f"data.root={d}/householdbench", f"data.raw_dir={d}/raw",
                                           f"data.intermediate_dir={d}/intermediate"])
    t0 = time.perf_counter()
    if name == "demo_raw":
        demo = cfg.data.demo
        path = write_synthetic_cps(d / "raw.csv.gz", seed=int(demo.seed),
                                   n_households=int(demo.n_households), start=str(demo.start),
                                   end=str(demo.end))
        seconds = time.perf_counter() - t0
        import pandas as pd

        return {"seconds": seconds, "rows": len(pd.read_csv(path, usecols=["YEAR"]))}
    bench = build_bench_task(cfg, as_task(cfg.task))
    seconds = time.perf_counter() - t0
    rows = pq.read_metadata(d / "intermediate" / "cps_basic.parquet").num_rows
    return {"seconds": seconds, "rows": rows, "task_rows": len(bench.prompts)}


def run_phase(name: str, work: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--phase", name, "--work", str(work)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"phase {name} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rows", type=int, default=3_000_000, help="target person-months")
    ap.add_argument("--work", type=Path, default=None, help="folder to keep files in")
    ap.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        result = phase(args.phase, args.work)
        result["peak_mb"] = peak_mb()
        print(json.dumps(result))
        return

    from hhx.surveys.synthetic.cps import write_synthetic_cps

    work = args.work or Path(tempfile.mkdtemp(prefix="bench_cps_"))
    work.mkdir(parents=True, exist_ok=True)
    households = max(1, round(args.rows / ROWS_PER_HOUSEHOLD))
    t0 = time.perf_counter()
    write_synthetic_cps(
        work / "cps_basic.csv.gz",
        seed=1,
        n_households=households,
        start="2015-01",
        end="2026-03",
        compresslevel=1,
    )
    gen = time.perf_counter() - t0
    names = ("build", "read_csv", "link", "merge_link", "task", "demo", "demo_raw")
    results = {name: run_phase(name, work) for name in names}
    rows = results["build"]["rows"]
    size = (work / "cps_basic.csv.gz").stat().st_size / 2**20
    print(
        f"synthetic extract: {rows:,} person-months x 149 columns, {size:.0f} MiB gz, "
        f"generated in {gen:.1f} s ({rows / gen:,.0f} rows/s) in {work}"
    )
    print(
        f"{'phase':<36}{'seconds':>9}{'rows/s':>12}{'peak MB':>9}"
        f"{'time ratio':>12}{'mem ratio':>10}"
    )
    pairs = (
        ("build", "read_csv", "build csv.gz -> parquet (hhx)", "pandas.read_csv whole file"),
        ("link", "merge_link", "t->t+1 link (hhx link_months)", "naive merge link"),
        ("task", "link", "jobfind -> official layout", "t->t+1 link alone"),
        ("demo", "demo_raw", "default demo from scratch", "demo raw extract alone"),
    )
    for mine, ref, label, ref_label in pairs:
        a, b = results[mine], results[ref]
        for name, r, ratio in ((label, a, True), (ref_label, b, False)):
            t = f"{a['seconds'] / b['seconds']:.2f}x" if ratio else "1.00x"
            m = f"{a['peak_mb'] / b['peak_mb']:.2f}x" if ratio else "1.00x"
            print(
                f"{name:<36}{r['seconds']:>9.2f}{r['rows'] / r['seconds']:>12,.0f}"
                f"{r['peak_mb']:>9.0f}{t:>12}{m:>10}"
            )
    if results["link"]["links"] != results["merge_link"]["links"]:
        raise SystemExit(
            f"link counts differ: {results['link']['links']} vs {results['merge_link']['links']}"
        )
    print(f"valid t->t+1 links: {results['link']['links']:,} (both methods agree)")
    print(f"labor_cps_jobfind rows: {results['task']['task_rows']:,} from the extract, "
          f"{results['demo']['task_rows']:,} in the default demo")


if __name__ == "__main__":
    main()
