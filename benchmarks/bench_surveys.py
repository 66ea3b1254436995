"""Survey build benchmark: the CPS and Census intermediates from synthetic extracts of --rows
records, with an extrapolation to the real extracts.

    .venv/bin/python benchmarks/bench_surveys.py --rows 10000000

For each source it writes a synthetic extract in the official format (CPS: IPUMS csv.gz with
the 149 columns of spec 1.4; Census: gzip Stata 118 with value labels, padded with extra
variables to the real extract's 262), then runs, each in its own process so that peak memory
is the phase's own VmHWM:

  build        the hhx builder (stream, type, NIU -> NA, labels, flags, atomic parquet)
  parse floor  the reference: the same file read in the same chunk size with pandas and thrown
               away (gzip + CSV/Stata parsing only), i.e. the least any reader must spend
  build small  the builder on an extract 1/--scale the size, to see how time and memory grow

Time is extrapolated linearly from the big run (rows/s is flat: the builders stream), memory by
the line through the small and big runs (streaming should make it flat). The goal from the
issue: the full real CPS build (79 million person-months) fits in 16 GB on 2 cores.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from _runner import print_phase
from _runner import run_phase as _run_script

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CPS_ROWS_PER_HOUSEHOLD = 15.1  # person-months per household over 2015-01..2026-03 (measured)
CENSUS_PERSONS_PER_HOUSEHOLD = 3.0  # household sizes 1..5 uniform, two samples
REAL_ROWS = {"cps": 79_000_000, "census": 13_000_000}
REAL_CENSUS_VARIABLES = 262
GOAL_MB = 16 * 1024


def phase(name: str, path: Path, out: Path) -> dict:
    """One measured phase in this process: seconds and rows."""
    import pandas as pd

    from hhx.config import SurveyConfig

    t0 = time.perf_counter()
    if name == "cps_build":
        from hhx.surveys.cps.ipums import build

        report = build(SurveyConfig(name="cps", raw={"cps_basic": path.name}), path.parent, out)
        rows = report.rows["cps_basic"]
    elif name == "cps_parse":
        rows = 0
        with pd.read_csv(path, chunksize=SurveyConfig(name="cps").chunk_rows) as reader:
            for chunk in reader:
                rows += len(chunk)
    elif name == "census_build":
        from hhx.surveys.census.decennial import build
        from hhx.surveys.synthetic.macro.release_dates import write_synthetic_crosswalk

        write_synthetic_crosswalk(path.parent / "release_census.csv", "census", seed=1)
        report = build(SurveyConfig(name="census", raw={"census": path.name,
                                                        "release_dates": "release_census.csv"}),
                       path.parent, out)
        rows = report.rows["census_decennial"]
    elif name in ("cps_generate", "census_generate"):
        rows = int(out.name)  # the requested size travels as the --out folder's name
        (write_cps if name == "cps_generate" else write_census)(path, rows)
    elif name == "census_parse":
        import gzip
        import shutil

        rows = 0
        with tempfile.TemporaryDirectory(dir=out) as tmp:
            dta = Path(tmp) / "census.dta"
            with gzip.open(path, "rb") as src, dta.open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            chunk_rows = SurveyConfig(name="census").chunk_rows
            with pd.read_stata(dta, iterator=True, chunksize=chunk_rows,
                               convert_categoricals=False) as reader:
                for chunk in reader:
                    rows += len(chunk)
    else:
        raise SystemExit(f"unknown phase {name}")
    return {"seconds": time.perf_counter() - t0, "rows": rows}


def run_phase(name: str, path: Path, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    return _run_script(__file__, name, "--path", str(path), "--out", str(out))


def write_cps(path: Path, rows: int) -> Path:
    from hhx.surveys.synthetic.cps.ipums import write_synthetic_cps

    households = max(1, round(rows / CPS_ROWS_PER_HOUSEHOLD))
    return write_synthetic_cps(path, seed=1, n_households=households, start="2015-01",
                               end="2026-03", compresslevel=1)


def write_census(path: Path, rows: int) -> Path:
    """The synthetic extract padded with small-integer variables up to the real 262, so that
    parsing costs what the real file's width costs (the builder keeps its 64 columns). Written
    piece by piece, as the generator does, so any size fits in memory."""
    import numpy as np
    import pandas as pd

    from hhx.surveys.synthetic import write_sidecar
    from hhx.surveys.synthetic.census.decennial import census_chunks, write_census_gz

    rng = np.random.default_rng(2)

    def padded(frame: pd.DataFrame) -> pd.DataFrame:
        pad = {  # IPUMS detail codes: mostly 1-2 byte integers
            f"pad{i:03d}": rng.integers(0, 100, len(frame)).astype(
                np.int16 if i % 3 == 0 else np.int8)
            for i in range(REAL_CENSUS_VARIABLES - frame.shape[1])
        }
        return pd.concat([frame, pd.DataFrame(pad, index=frame.index)], axis=1)

    households = max(1, round(rows / CENSUS_PERSONS_PER_HOUSEHOLD / 2))
    pieces = (padded(f) for f in census_chunks(seed=1, n_households=households))
    write_census_gz(pieces, path, compresslevel=1)
    write_sidecar(path, "benchmarks/bench_surveys.py", "synthetic benchmark extract")
    return path


def measure(source: str, rows: int, scale: int, work: Path, reuse: bool = False) -> dict:
    big, small = work / f"{source}_big", work / f"{source}_small"
    name = "cps_basic.csv.gz" if source == "cps" else "census.gz"
    # generated in child processes too, so the benchmark process itself stays small
    gen = {"seconds": float("nan")}  # --reuse: extracts of an earlier run in --work
    if not (reuse and (big / name).is_file() and (small / name).is_file()):
        gen = run_phase(f"{source}_generate", big / name, work / "sizes" / str(rows))
        run_phase(f"{source}_generate", small / name, work / "sizes" / str(rows // scale))
    return {
        "build": run_phase(f"{source}_build", big / name, big / "out"),
        "parse": run_phase(f"{source}_parse", big / name, big / "out"),
        "small": run_phase(f"{source}_build", small / name, small / "out"),
        "generated_s": gen["seconds"],
        "file_mb": (big / name).stat().st_size / 2**20,
    }


def report(source: str, r: dict) -> None:
    b, p, s = r["build"], r["parse"], r["small"]
    print(f"\n{source}: synthetic extract {b['rows']:,} rows, {r['file_mb']:,.0f} MiB compressed, "
          f"generated in {r['generated_s']:.0f} s")
    print(f"{'phase':<34}{'rows':>12}{'seconds':>9}{'rows/s':>11}{'peak MB':>9}"
          f"{'time ratio':>11}{'mem ratio':>10}")
    for label, x in ((f"{source} build (hhx)", b), ("parse floor (pandas, same chunks)", p),
                     (f"{source} build, 1/{b['rows'] // max(s['rows'], 1)} size", s)):
        print(f"{label:<34}{x['rows']:>12,}{x['seconds']:>9.1f}{x['rows'] / x['seconds']:>11,.0f}"
              f"{x['peak_mb']:>9.0f}{x['seconds'] / p['seconds']:>10.2f}x"
              f"{x['peak_mb'] / p['peak_mb']:>9.2f}x")
    real = REAL_ROWS[source]
    seconds = b["seconds"] * real / b["rows"]
    slope = (b["peak_mb"] - s["peak_mb"]) / max(b["rows"] - s["rows"], 1)
    memory = b["peak_mb"] + max(slope, 0.0) * (real - b["rows"])
    print(f"extrapolated to the real {real:,} rows: {seconds / 60:.1f} min on this machine, peak "
          f"{memory:,.0f} MB (memory grows {slope * 1e6:,.1f} MB per million rows)")
    if source == "cps":
        verdict = "meets" if memory <= GOAL_MB else "MISSES"
        print(f"goal: full CPS build within {GOAL_MB:,} MB -> {verdict} it "
              f"({memory / GOAL_MB:.2f} of the budget)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000, help="records per extract")
    ap.add_argument("--scale", type=int, default=5, help="the small run has rows/scale records")
    ap.add_argument("--sources", default="cps,census", help="comma-separated: cps,census")
    ap.add_argument("--work", type=Path, default=None, help="folder to keep files in")
    ap.add_argument("--reuse", action="store_true", help="reuse extracts already in --work")
    ap.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--path", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        print_phase(phase(args.phase, args.path, args.out))
        return
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_surveys_"))
    print(f"working in {work}")
    for source in args.sources.split(","):
        report(source, measure(source, args.rows, args.scale, work, args.reuse))


if __name__ == "__main__":
    main()
