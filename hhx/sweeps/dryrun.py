"""What a cell would send before anything is paid: prompts x draws, requests, tokens and cost.

Tokens are estimated from the prompt text (about 4 characters a token for the expected figure);
the completion side is bounded by `decoding.max_tokens` (else the budget's conservative default,
capped by the model's output limit). Cost uses the model's prices (its config, else litellm's
local cost map, else zero for local weights) — the same prices the run's budget applies
(hhx/predictors/llm/cost.py). Cached answers are not subtracted: figures are what the cell could
cost at most, not what a rerun will.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from omegaconf import DictConfig

from hhx.catalog import backend_spec

CHARS_PER_TOKEN = 4.0  # typical English prompt text


MESSAGE_OVERHEAD = 16  # characters counted per chat message (role, separators)


def estimate(cfg: DictConfig, examples: pd.DataFrame, bench: Any = None) -> dict[str, Any]:
    """The size and price of evaluating `examples` with this config's model: the messages it
    would send, a prompt variant's included (`bench`: the task, whose train split holds the
    few-shot examples)."""
    if not backend_spec(cfg.model.backend).sends_requests:
        return estimate_size(cfg, None, len(examples), 0)
    from hhx.predictors.llm.prompt_variants import variant_from_config, variant_messages

    chars = sum(sum(len(m["content"]) + MESSAGE_OVERHEAD for m in msgs)
                for msgs in variant_messages(bench, examples, variant_from_config(cfg)))
    return estimate_size(cfg, None, len(examples), chars)


def estimate_size(cfg: DictConfig, task: Any, n: int, chars: float) -> dict[str, Any]:
    """The size and price of `n` prompts of `chars` characters in all (messages included) with
    this config's model; `task`: the task's config (None: `cfg.task`)."""
    spec = backend_spec(cfg.model.backend)
    out: dict[str, Any] = {"prompts": n, "draws": 0, "requests": 0, "prompt_tokens": 0,
                           "completion_tokens_max": 0, "cost_usd": 0.0, "cost_usd_max": 0.0,
                           "price_source": "none"}
    if not spec.sends_requests:
        return out  # no_change, XGBoost: no request, no cost
    from hhx.predictors.llm.cost import (
        CHARS_PER_TOKEN_LOW,
        DEFAULT_COMPLETION_ESTIMATE,
        prices_for,
    )
    from hhx.predictors.llm.settings import settings_from_config

    settings = settings_from_config(cfg)
    k = settings.k
    requests = n if settings.use_n else n * k
    prices = prices_for(settings.model_id, settings.input_cost_per_token,
                        settings.output_cost_per_token, use_litellm_map=spec.litellm_prices)
    # The answer budget the request engine sends (decoding.max_tokens: auto | a number | none).
    from hhx.predictors.llm.schema import answer_tokens
    from hhx.scoring.parser import answer_spec
    from hhx.tasks.registry import as_task

    budget = settings.answer_budget(answer_tokens(answer_spec(as_task(
        cfg.task if task is None else task))))
    per_choice = budget or DEFAULT_COMPLETION_ESTIMATE
    if prices.max_output_tokens:
        per_choice = min(int(per_choice), int(prices.max_output_tokens))
    # Without `n` every draw resends the prompt; with it, the prompt goes once per example.
    prompt_sends = requests
    expected_prompt = chars / CHARS_PER_TOKEN * prompt_sends / max(n, 1)
    bound_prompt = chars / CHARS_PER_TOKEN_LOW * prompt_sends / max(n, 1)
    completion_max = int(per_choice) * n * k
    # The expected completion: a short JSON answer (the paper's prompts ask for one line);
    # reasoning models spend more, hence the bound next to it.
    completion_expected = min(int(per_choice), 64) * n * k
    out.update(
        draws=n * k,
        requests=requests,
        prompt_tokens=int(expected_prompt),
        completion_tokens_max=completion_max,
        cost_usd=expected_prompt * prices.input_per_token
        + completion_expected * prices.output_per_token,
        cost_usd_max=bound_prompt * prices.input_per_token
        + completion_max * prices.output_per_token,
        price_source=prices.source,
    )
    return out


# --------------------------------------------------------------------------------------------
# `--multirun ... +dry_run=true`: the whole grid priced before any job starts, in seconds. No
# job is launched, so nothing is built or written: no sweep folder, no run folder, no MLflow
# store. Sizes come from the data when its files are there (an eval-sample file's rows, the
# first prompts' lengths), else from the release catalog (hhx/bench/catalog.csv: the official
# eval-sample counts; the demo's typical prompt length), and the table says which.

EVAL_SAMPLE_ROWS = 200  # the official eval-sample rule (first 200 rows of a test split)


def requested(config: DictConfig) -> bool:
    """`+dry_run=true` or `sweep.dry_run=true` in the sweep's config."""
    sweep = config.get("sweep") or {}
    return bool(config.get("dry_run") or sweep.get("dry_run"))


def split_rows(row: Any, split: str) -> tuple[int, bool]:
    """(rows of `split` in the official release, whether exact) from the catalog: the eval
    sample's count when the split holds fewer than 200 rows, else the 8:1:1 shares."""
    historical = row.rows - row.post_cutoff_rows
    if split.startswith("pre_cutoff"):
        test = row.test_pre
    elif split.startswith("post_cutoff"):
        if row.test_post == 0:
            return 0, True
        test = row.test_post
        if test < EVAL_SAMPLE_ROWS:
            return test, True
        return max(test, row.post_cutoff_rows), False
    else:
        share = 0.8 if split == "train" else 0.1
        return round(share * historical), False
    return (test, True) if test < EVAL_SAMPLE_ROWS else (round(0.1 * historical), False)


def _limit(cfg: DictConfig) -> int | None:
    from omegaconf import OmegaConf

    if OmegaConf.is_missing(cfg.data, "max_examples"):
        return None
    value = cfg.data.max_examples
    return None if value is None else int(value)


def _prompt_file(cfg: DictConfig, task: str) -> Any:
    """The prompts this cell would read, when they are on disk (None otherwise)."""
    from pathlib import Path

    from omegaconf import OmegaConf

    if OmegaConf.is_missing(cfg.data, "root"):
        return None
    root = Path(str(cfg.data.root))
    if str(cfg.data.layout) == "eval_sample":
        from hhx.bench.layout import eval_sample_path

        try:
            path = eval_sample_path(root, str(cfg.data.split), task)
        except Exception:  # a split the eval sample has not: the job will say so
            return None
    else:
        path = root / "prompts" / f"{task}.jsonl"
    return path if path.is_file() else None


def _file_sizes(path: Any, limit: int | None) -> tuple[int, float]:
    """(records read, mean characters per prompt, messages included) of the first `limit`
    records (200 when every row is wanted: an average, not a count)."""
    import json

    count, chars = 0, 0
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            record = json.loads(line)
            chars += len(record["system"]) + len(record["user"]) + 2 * MESSAGE_OVERHEAD
            count += 1
            if count >= (limit or EVAL_SAMPLE_ROWS):
                break
    return count, chars / max(count, 1)


SIDECAR_MAX_BYTES = 20_000_000  # a split sidecar counted when smaller (a demo's, a small task's)


def _sidecar_rows(cfg: DictConfig, task: str) -> int | None:
    """Rows of the cell's split in the release layout's split sidecar, when it is on disk and
    small; None otherwise."""
    import csv
    from pathlib import Path

    from omegaconf import OmegaConf

    if OmegaConf.is_missing(cfg.data, "root") or str(cfg.data.layout) != "release":
        return None
    path = Path(str(cfg.data.root)) / "splits" / f"{task}.csv"
    if not path.is_file() or path.stat().st_size > SIDECAR_MAX_BYTES:
        return None
    split = str(cfg.data.split)
    with open(path, newline="", encoding="utf-8") as handle:
        return sum(1 for row in csv.DictReader(handle) if row.get("split") == split)


def prompt_model(cfg: DictConfig) -> str:
    """The model's name with its prompt variant's label (`smollm2_135m [few_shot k=3]`)."""
    from hhx.predictors.llm.prompt_variants import variant_from_config
    from hhx.tracking.labels import with_prompt

    return with_prompt(str(cfg.model.name), variant_from_config(cfg))


def cell_size(cfg: DictConfig, task: str) -> tuple[int, float, str]:
    """(prompts, characters in all, where the figures came from) for one cell: the data's own
    files when they are on disk (an eval-sample file, a small split sidecar, the first prompts),
    else the release catalog; reads at most one small file and a few hundred lines."""
    from hhx.bench.catalog import catalog

    limit = _limit(cfg)
    row = catalog().get(task)
    rows, exact = split_rows(row, str(cfg.data.split)) if row else (EVAL_SAMPLE_ROWS, False)
    # the release's eval-sample counts are exact up to 200 rows (a test split holds at least
    # the count the catalog gives)
    exact = exact or (limit is not None and limit <= min(rows, EVAL_SAMPLE_ROWS))
    source = "catalog" if exact else "catalog (estimate)"
    counted = _sidecar_rows(cfg, task)
    if counted is not None:
        rows, source = counted, "data files"
    per_prompt: float = (row.prompt_chars if row else 2500) + 2 * MESSAGE_OVERHEAD
    path = _prompt_file(cfg, task)
    if path is not None:
        read, per_prompt = _file_sizes(path, limit)
        if str(cfg.data.layout) == "eval_sample":
            rows = read if limit is None or read < limit else max(read, rows)
            source = "data files"
    n = rows if limit is None else min(limit, rows)
    from hhx.predictors.llm.prompt_variants import variant_chars, variant_from_config

    return n, n * variant_chars(per_prompt, variant_from_config(cfg)), source


def sweep_jobs(sweeper: Any, arguments: list[str]) -> list[list[str]]:
    """Every job's overrides, as the basic sweeper would launch them (all batches)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = sweeper._parse_config() + list(arguments)
    parser = OverridesParser.create(config_loader=sweeper.hydra_context.config_loader)
    batches = sweeper.split_arguments(parser.parse_overrides(params), None)
    return [list(job) for batch in batches for job in batch]


def _store_exists(uri: str) -> bool:
    """A local MLflow store is there (asking MLflow about a missing one would create it); a
    server is assumed to be."""
    from pathlib import Path

    for scheme in ("sqlite:///", "file://"):
        if uri.startswith(scheme):
            return Path(uri[len(scheme):]).exists()
    return "://" in uri or Path(uri).exists()


_FINISHED: dict[tuple[str, str], dict[tuple[str, ...], float] | None] = {}


def finished_runs(cfg: DictConfig) -> dict[tuple[str, ...], float] | None:
    """(task, model, config hash) of the FINISHED evaluate runs in the cell's MLflow experiment
    (hhx/sweeps/order.py reads the same); None when tracking is off or its store absent."""
    tracking = cfg.get("tracking")
    if tracking is None or not tracking.get("enabled"):
        return None
    key = (str(tracking.uri), str(tracking.experiment))
    if key not in _FINISHED:
        from hhx.sweeps.order import measured_seconds

        _FINISHED[key] = measured_seconds(tracking) if _store_exists(key[0]) else None
    return _FINISHED[key]


def settings_hash_of(resolved: dict[str, Any] | None, cfg: DictConfig, task: Any) -> str:
    """The cell's `hhx.config_hash`: its composed settings with its own task's definition."""
    from hhx.config import as_plain
    from hhx.sweeps.identity import config_hash

    if resolved is None:
        return config_hash(cfg)
    return config_hash({**resolved, "task": as_plain(task)})


def plan_jobs(sweeper: Any, jobs: list[list[str]]) -> list[dict[str, Any]]:
    """One record per job, as a sweep job's dry run writes it. A job's config is composed once
    per distinct setting besides its task (composing is ~0.3 s; a grid of 32 tasks x 12 models
    composes 12), the task's definition read from conf/task/ (hhx/tasks/registry.py). `done`: a
    FINISHED run of the same task, model and settings is in MLflow (None: no store to ask)."""
    from omegaconf import OmegaConf, open_dict

    from hhx.config_check import validate_config
    from hhx.tasks.registry import load_task

    loader = sweeper.hydra_context.config_loader
    composed: dict[tuple[str, ...], DictConfig] = {}
    resolved: dict[tuple[str, ...], dict[str, Any]] = {}
    records = []
    for number, job in enumerate(jobs):
        task_name = next((o.partition("=")[2] for o in job if o.partition("=")[0] == "task"),
                         None)
        rest = tuple(o for o in job if o.partition("=")[0] != "task")
        separable = task_name is not None and not any(o.lstrip("+~").startswith("task.")
                                                      for o in rest)
        key = rest if separable else tuple(job)
        if key not in composed:
            cfg = loader.load_sweep_config(sweeper.config, list(job))
            with open_dict(cfg):
                cfg.pop("hydra", None)
            validate_config(cfg)  # a bad setting: one line now, as the job would say it
            composed[key] = cfg
        cfg = composed[key]
        task = load_task(task_name) if separable and task_name is not None else cfg.task
        name, model = task_name or str(cfg.task.name), prompt_model(cfg)
        n, chars, source = cell_size(cfg, name)
        plan = estimate_size(cfg, task, n, chars)
        finished, done = finished_runs(cfg), None
        if finished is not None:
            if separable and key not in resolved:
                resolved[key] = OmegaConf.to_container(  # type: ignore[assignment]  # a dict config
                    cfg, resolve=True, enum_to_str=True)
            chash = settings_hash_of(resolved.get(key) if separable else None, cfg, task)
            done = (name, model, chash) in finished
        records.append({"job": number, "task": name, "model": model, "overrides": job,
                        "status": "dry_run", "done": done, "sizes": source, **plan})
    return records


def run_dry(sweeper: Any, arguments: list[str]) -> list[Any]:
    """Price the grid, print the table and totals, launch nothing."""
    import time

    from hhx.sweeps.summary import format_summary, records_frame

    started = time.perf_counter()
    jobs = sweep_jobs(sweeper, arguments)
    print(f"dry run: pricing {len(jobs)} cells (nothing is built or sent)...", flush=True)
    records = plan_jobs(sweeper, jobs)
    frame = records_frame(records)
    print(format_summary(frame))
    sources = sorted({r["sizes"] for r in records})
    looked = any(r["done"] is not None for r in records)
    print(f"dry run: {len(records)} cells priced in {time.perf_counter() - started:.1f} s; "
          f"sizes from {', '.join(sources)} (catalog: hhx/bench/catalog.csv, the official "
          "release's counts and the demo's typical prompt length); "
          + ("done = a FINISHED run of the same task, model and settings in MLflow"
             if looked else "no MLflow store to look up finished cells")
          + "; nothing was built, written or sent")
    return []


def run_single(cfg: DictConfig) -> dict[str, Any]:
    """`+dry_run=true` on one run (no --multirun): the same pricing for its one cell; no data is
    built, no request sent, no MLflow run opened."""
    from hhx.sweeps.identity import config_hash
    from hhx.tasks.registry import as_task

    task = as_task(cfg.task)
    n, chars, source = cell_size(cfg, task.name)
    plan = estimate_size(cfg, task, n, chars)
    finished = finished_runs(cfg)
    done = None if finished is None else (task.name, prompt_model(cfg),
                                           config_hash(cfg)) in finished
    print(f"dry run: {task.name} x {prompt_model(cfg)}: {plan['prompts']} prompts, "
          f"{plan['requests']:,} requests, ~{plan['prompt_tokens']:,} prompt tokens, "
          f"~${plan['cost_usd']:.2f} (at most ${plan['cost_usd_max']:.2f}); sizes from {source}"
          + ("; already done (a FINISHED run with these settings)" if done else "")
          + "; nothing was built or sent")
    return {"primary_score": None, "dry_run": plan, "done": done}
