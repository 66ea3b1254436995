"""LLM engine throughput and cache-hit overhead against a local OpenAI-compatible server.

    .venv/bin/python benchmarks/bench_llm.py [--latency 0.1] [--hit-items 2000]

The server (tests/helpers/llm_servers.py --echo: aiohttp, its own process) answers every request after
a fixed artificial latency, so the ideal throughput at concurrency c is c / latency requests per
second. For each concurrency the table gives, measured in the same run:
- `engine`: requests/s end to end through `make_predictor(cfg).predict(...)` (planning, cache
  lookups and writes, retries machinery, litellm, parsing);
- `raw`: the reference, bare `litellm.acompletion` calls under a semaphore, nothing else;
- `vs ideal` = engine / (c / latency) and `vs raw` = engine / raw (the engine's own overhead).
The cache-hit row reruns items with a full cache: no request is sent, the time per item is what
a rerun pays per already-answered example.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]  # hhx and the test helpers (tests.helpers) of this checkout
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from hhx.predictors.base import make_predictor  # noqa: E402
from hhx.tasks.registry import load_task  # noqa: E402
from tests.helpers.llm_servers import api_model, examples_frame, jobfind_prompt, make_cfg  # noqa: E402


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "helpers" / "llm_servers.py"), "--latency", str(latency),
         "--echo"],
        stdout=subprocess.PIPE, text=True,
    )
    url = proc.stdout.readline().strip()
    return proc, url


def run(url: str, cache: Path, n: int, concurrency: int) -> tuple[float, dict]:
    cfg = make_cfg(api_model(url, max_concurrency=concurrency, timeout_s=60.0), cache)
    task = types.SimpleNamespace(spec=load_task("labor_cps_jobfind"))
    examples = examples_frame([jobfind_prompt(i, f" (item {i})") for i in range(n)])
    predictor = make_predictor(cfg).fit(task)
    started = time.perf_counter()
    rows = predictor.predict(task, examples)
    elapsed = time.perf_counter() - started
    assert len(rows) == n and all(r.details["status"] == "ok" for r in rows)
    return elapsed, predictor.run_metrics()


def raw_litellm(url: str, n: int, concurrency: int, tag: str) -> float:
    """Seconds for n bare acompletion calls at the given concurrency (the reference)."""
    from hhx.predictors.llm.litellm_backend import import_litellm

    litellm = import_litellm()

    async def go() -> None:
        sem = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with sem:
                await litellm.acompletion(
                    model="openai/raw", api_base=url, api_key="sk-bench", max_retries=0,
                    messages=[{"role": "user", "content": jobfind_prompt(i, f" ({tag} {i})")}],
                )

        await asyncio.gather(*(one(i) for i in range(n)))

    started = time.perf_counter()
    asyncio.run(go())
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--hit-items", type=int, default=2000)
    args = parser.parse_args()
    os.environ["HHX_TEST_KEY"] = "sk-bench"
    proc, url = start_server(args.latency)
    try:
        run(url, Path(tempfile.mkdtemp()), 16, 8)  # warm-up: imports, first connections
        raw_litellm(url, 16, 8, "warm")
        header = (f"{'case':<20}{'items':>6}{'engine/s':>10}{'raw/s':>9}{'ideal/s':>9}"
                  f"{'vs ideal':>10}{'vs raw':>8}")
        print(f"server latency {args.latency * 1000:.0f} ms; ideal req/s = concurrency / latency")
        print(header)
        print("-" * len(header))
        for concurrency in (1, 8, 64):
            n = max(20, concurrency * 8)
            raw_rate = n / raw_litellm(url, n, concurrency, f"raw{concurrency}")
            wall, metrics = run(url, Path(tempfile.mkdtemp()), n, concurrency)
            # Every item needed exactly one request: no error, no retry inflated the rate.
            assert metrics["llm/requests_sent"] == n and metrics["llm/errors"] == 0
            rate, ideal = n / wall, concurrency / args.latency
            print(f"{'concurrency ' + str(concurrency):<20}{n:>6}{rate:>10.1f}{raw_rate:>9.1f}"
                  f"{ideal:>9.1f}{rate / ideal:>10.2f}{rate / raw_rate:>8.2f}")
        cache = Path(tempfile.mkdtemp())
        run(url, cache, args.hit_items, 64)  # fill the cache
        wall, metrics = run(url, cache, args.hit_items, 64)
        assert metrics.get("llm/requests_sent", 0) == 0
        per_item_us = wall / args.hit_items * 1e6
        print(f"{'cache hit (rerun)':<20}{args.hit_items:>6}  {per_item_us:.0f} us per item "
              f"({wall:.3f} s for all, no request sent)")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
