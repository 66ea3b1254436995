"""Task-build benchmark: income_mich_finance, macro_mich_outlook and house_census_move from
synthetic extracts of a tenth of the real size, next to the survey builds alone (the reference
measured in the same run), extrapolated to the real size.

    .venv/bin/python benchmarks/bench_mich_census.py            # 1/10 of the real size
    .venv/bin/python benchmarks/bench_mich_census.py --fraction 0.02   # a quick look

Real sizes: the Michigan archive 1978-01..2026-02 holds about 320,000 interviews; the IPUMS USA
1990 and 2000 1% samples about 5.3 million persons. Each phase runs in its own process (peak
memory = its own VmHWM): the survey build (mich.csv -> mich.parquet; census.gz ->
census_decennial.parquet; the state macro panel and FRED-QD context once, untimed), then each
task's full build (table, splits, prompts, release files), and a floor phase that only imports
the stack. The real build's fixed-size batches are scaled with the fraction, so that the small
run is the real one in miniature: the census survey's row groups (`chunk_rows`, 250,000 real
persons) and the release's export budgets (400k/50k/50k rows, cap 500k: the real census task
exports 500k of its ~2.5M eligible rows, a tenth-size run without scaling would export all of its
~250k). Time is extrapolated linearly; memory as floor + (peak - floor) x 1/fraction. Goal: every
task within 8 GB on 2 cores at the real size. The work folder is removed afterwards.
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _runner import peak_mb, run_phase

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

REAL = {"mich": 320_000, "census": 5_300_000}
GOAL_MB = 8 * 1024
TASKS = {"mich": ["income_mich_finance", "macro_mich_outlook"], "census": ["house_census_move"]}
REAL_CHUNK_ROWS = 250_000  # SurveyConfig.chunk_rows: the census intermediate's row groups


def _survey(name: str, raw: dict[str, str], chunk_rows: int = REAL_CHUNK_ROWS):
    from hhx.config import SurveyConfig

    return SurveyConfig(name=name, raw=raw, chunk_rows=chunk_rows)


def _scaled_export_budgets(fraction: float) -> None:
    """The release's export budgets and cap times `fraction` (in this process only)."""
    from hhx.bench import splits

    budgets = {k: max(1, round(v * fraction)) for k, v in splits.HISTORICAL_BUDGETS.items()}
    cap = max(1, round(splits.HISTORICAL_EXPORT_CAP * fraction))
    splits.assign_splits = functools.partial(splits.assign_splits, budgets=budgets,
                                             export_cap=cap)


def phase(name: str, work: Path, rows: int, fraction: float) -> dict:
    """One measured phase in this process."""
    raw, inter = work / "raw", work / "inter"
    t0 = time.perf_counter()
    n = 0
    if name == "floor":  # the stack imported, nothing read: the memory every phase starts from
        import pandas  # noqa: F401

        from hhx.tasks.build import build_task  # noqa: F401
    elif name == "prepare":  # inputs of every phase (untimed): raw files, macro context, panel
        from hhx.surveys.macro import bea_sainc, bls_laus, fhfa_hpi, fred_qd
        from hhx.surveys.macro import state_panel as state_macro_panel
        from hhx.surveys.synthetic.census.decennial import write_synthetic_census
        from hhx.surveys.synthetic.macro.fred_qd import write_synthetic_fred_qd
        from hhx.surveys.synthetic.macro.release_dates import write_synthetic_crosswalk
        from hhx.surveys.synthetic.macro.state_macro import write_synthetic_state_macro
        from hhx.surveys.synthetic.mich.consumers import write_synthetic_mich

        months = 12 * (2026 - 1978) + 2
        write_synthetic_mich(raw / "mich.csv", seed=1, start="1978-01", end="2026-02",
                             per_month=max(1, round(rows / months / 1.25)))
        households = max(1, round(REAL["census"] * rows / REAL["mich"] / 3.0 / 2))
        write_synthetic_census(raw / "census.gz", seed=1, n_households=households,
                               compresslevel=1)
        for source in ("mich", "census"):
            write_synthetic_crosswalk(raw / f"release_{source}.csv", source, seed=1)
        write_synthetic_fred_qd(raw / "qd.csv", seed=1)
        paths = write_synthetic_state_macro(raw / "state", seed=1)
        inter.mkdir(parents=True, exist_ok=True)
        fred_qd.build_macro_context(fred_qd.read_fred_qd(raw / "qd.csv")).to_parquet(
            inter / "householdbench_macro_context.parquet")
        for module, key in ((fhfa_hpi, "fhfa_hpi"), (bls_laus, "bls_laus"),
                            (bea_sainc, "bea_sainc")):
            module.build(_survey(key, {key: str(paths[key])}), raw, inter)
        state_macro_panel.build(_survey("state_macro_panel", {"fred_qd": str(raw / "qd.csv")}),
                                raw, inter)
    elif name == "mich_build":
        from hhx.surveys.mich import consumers as mich

        n = mich.build(_survey("mich", {"mich": "mich.csv",
                                        "release_dates": "release_mich.csv"}), raw, inter
                       ).rows["mich"]
    elif name == "census_build":
        from hhx.surveys.census import decennial as census

        chunk_rows = max(1000, round(REAL_CHUNK_ROWS * fraction))
        n = census.build(_survey("census", {"census": "census.gz",
                                            "release_dates": "release_census.csv"},
                                 chunk_rows), raw, inter).rows["census_decennial"]
    else:
        import pandas as pd

        from hhx.tasks.build import build_task
        from hhx.tasks.context import BuildContext
        from hhx.tasks.registry import load_task

        _scaled_export_budgets(fraction)
        macro = pd.read_parquet(inter / "householdbench_macro_context.parquet")
        ctx = BuildContext(task=load_task(name), intermediate_dir=inter, macro_context=macro)
        n = len(build_task(ctx, work / "bench", synthetic=True).table)
    return {"seconds": time.perf_counter() - t0, "rows": n, "peak_mb": peak_mb()}


def _run(name: str, work: Path, rows: int, fraction: float) -> dict:
    return run_phase(__file__, name, "--work", str(work), "--rows", str(rows),
                     "--fraction", str(fraction))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fraction", type=float, default=0.1)
    parser.add_argument("--phase")
    parser.add_argument("--work", type=Path, help="folder to keep the files in (not removed)")
    parser.add_argument("--rows", type=int, default=0)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, args.work, args.rows, args.fraction)))
        return
    rows = max(1000, round(REAL["mich"] * args.fraction))
    work = args.work or Path(tempfile.mkdtemp(prefix="hhx-bench-mich-census-"))
    try:
        floor = _run("floor", work, rows, args.fraction)["peak_mb"]
        _run("prepare", work, rows, args.fraction)
        results = {}
        for source, tasks in TASKS.items():
            results[source] = _run(f"{source}_build", work, rows, args.fraction)
            for task in tasks:
                results[task] = _run(task, work, rows, args.fraction)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    scale = 1 / args.fraction

    def real_mb(r: dict) -> float:
        return floor + max(r["peak_mb"] - floor, 0.0) * scale

    print(f"\nsynthetic extracts at {args.fraction:g} of the real size "
          f"(Michigan {REAL['mich']:,} interviews, Census {REAL['census']:,} persons); "
          f"memory floor (the stack imported) {floor:.0f} MB")
    print(f"{'phase':<38}{'rows':>10}{'seconds':>9}{'peak MB':>9}{'real s':>9}{'real MB':>9}"
          f"{'vs survey':>10}")
    for source, tasks in TASKS.items():
        ref = results[source]
        for name in [source, *tasks]:
            r = results[name]
            label = f"{source} survey build (reference)" if name == source else f"task {name}"
            print(f"{label:<38}{r['rows']:>10,}{r['seconds']:>9.1f}{r['peak_mb']:>9.0f}"
                  f"{r['seconds'] * scale:>9.0f}{real_mb(r):>9.0f}"
                  f"{r['seconds'] / ref['seconds']:>9.2f}x")
    worst = max(real_mb(results[t]) for ts in TASKS.values() for t in ts)
    print(f"\nlargest extrapolated task peak {worst:,.0f} MB (goal <= {GOAL_MB:,} MB): "
          f"{'OK' if worst <= GOAL_MB else 'over'}; real = floor + (peak - floor) x "
          f"{scale:g}, an upper bound where a build streams")


if __name__ == "__main__":
    main()
