"""Strict answer parser on hostile answers: linear time, goal < 0.2 s per 1 MB answer.

    .venv/bin/python benchmarks/bench_parser.py [--mb 1.0]

Each hostile answer (about 1 MB) goes through `parse_answer` of labor_cps_jobfind (a
categorical task) and of macro_sce_uncertainty (a distribution task, with the nesting repair
on). The reference is the official extraction loop (a `raw_decode` at every `[`, `{`, `"`),
measured in the same run on a 20 KB and a 40 KB answer of the same kind; its 1 MB time is
extrapolated with the growth it shows (quadratic for the hostile kinds; minutes at 1 MB).
Times are CPU seconds of this process (wall seconds too: they grow with the machine's load).
Prints one table; writes nothing.
"""

from __future__ import annotations

import argparse
import math
import time

from hhx.scoring.extract import _extract_by_trying_every_start, decoder_depth_limit
from hhx.scoring.parser import answer_spec, parse_answer
from hhx.tasks.registry import load_task

GOAL_S = 0.2


def hostile(size: int) -> dict[str, str]:
    deep = decoder_depth_limit() - 100  # below the decoder's limit: every start must be weighed

    def fill(unit: str, head: str = "", tail: str = "") -> str:
        return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail

    return {
        'escaped quotes \\" (the issue)': fill('\\"'),
        "quote + bracket \"[": fill('"['),
        "unclosed brackets [": fill("["),
        "unclosed objects {\"a\":": fill('{"a":'),
        "flat unclosed array [1, 1, ...": fill("1, ", head="["),
        "deep then flat [[[..1, 1, ...": fill("1, ", head="[" * deep),
        "empty arrays [][]...": fill("[]"),
        "escapes in a string \\u00e9": fill("\\u00e9", head='"'),
        "prose, then the answer": fill("the answer could be [ or { or \" ", tail=' ["employed"]'),
        "valid array, then a huge integer": fill("9", head='["employed"] [', tail="]"),
    }


def timed(fn, *args, **kw) -> float:
    """CPU seconds of one call."""
    t0 = time.process_time()
    fn(*args, **kw)
    return time.process_time() - t0


def wall(fn, *args, **kw) -> float:
    t0 = time.perf_counter()
    fn(*args, **kw)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=1.0, help="answer size in MB (default 1)")
    args = ap.parse_args()
    size = int(args.mb * 1_000_000)
    jobfind = answer_spec(load_task("labor_cps_jobfind"))
    uncertainty = answer_spec(load_task("macro_sce_uncertainty"))

    print(f"hostile answers of {size / 1e6:.2f} MB; goal < {GOAL_S:.2f} s each\n")
    print(f"{'answer':<36} {'hhx s':>7} {'wall s':>7} {'+repair s':>10} {'ref 20KB':>9}"
          f" {'ref 40KB':>9} {'ref 1MB (est)':>14} {'ratio':>7} {'verdict':<8} error")
    worst = 0.0
    small, double = hostile(20_000), hostile(40_000)
    for name, text in hostile(size).items():
        t_wall = wall(parse_answer, jobfind, text)
        t_hhx = timed(parse_answer, jobfind, text)
        t_rep = timed(parse_answer, uncertainty, text, repair_distribution_nesting=True)
        error = parse_answer(jobfind, text).error
        try:
            t40 = timed(_extract_by_trying_every_start, small[name])
            t80 = timed(_extract_by_trying_every_start, double[name])
        except ValueError:  # the reference stops at its first exception, like hhx
            t40 = t80 = float("nan")
        growth = max(t80 / t40, 1.0) if t40 == t40 and t40 > 0 else 1.0
        # extrapolate with the measured growth exponent (2 = quadratic)
        exponent = max(1.0, min(2.0, math.log2(growth)))
        t_ref = t80 * (size / 40_000) ** exponent if t80 == t80 else float("nan")
        ratio = t_ref / max(t_hhx, 1e-9) if t_ref == t_ref else float("nan")
        worst = max(worst, t_hhx, t_rep)
        verdict = "ok" if max(t_hhx, t_rep) < GOAL_S else "SLOW"
        print(f"{name:<36} {t_hhx:>7.3f} {t_wall:>7.3f} {t_rep:>10.3f} {t40:>9.3f} {t80:>9.3f}"
              f" {t_ref:>14.1f} {ratio:>7.0f} {verdict:<8} {(error or 'valid')[:40]}")
    verdict = "PASS" if worst < GOAL_S else "FAIL"
    print(f"\nworst hhx CPU time: {worst:.3f} s (goal < {GOAL_S} s) -> {verdict}")


if __name__ == "__main__":
    main()
