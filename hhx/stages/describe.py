"""`stage=describe`: a task in words, for a person meeting it the first time.

Prints the task's definition, survey, target and answer format, its official metric (definition
and direction, hhx.scoring.metric_names), the no-change rule, the splits and their sizes, which
rows `stage=evaluate` scores, and an example prompt with its gold answer, read from the task's
files under `data.root` (the built or downloaded release). A task not there yet gets the command
that builds it (or the download it needs) instead. Nothing is built, nothing is written.

`--json` prints the machine-readable form instead: the scorer's `describe` (the reference's
answer format plus the metric keys), unchanged. The flag is taken off the command line before
Hydra composes the config (hhx.app), as an environment variable, so a sweep's jobs see it too;
this module imports only what Hydra's start imports anyway until `run`.
"""

from __future__ import annotations

import csv
import json
import os
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from hhx.bounds import enum_text
from hhx.config import TaskConfig
from hhx.errors import ConfigError

JSON_FLAG = "--json"
JSON_ENV = "HHX_DESCRIBE_JSON"
WIDTH = 100
MODES = {"baseline": "baseline prediction", "policy": "policy response"}
SPLIT_ORDER = ("train", "validation", "pre_cutoff_test", "post_cutoff_test")


def take_json_flag(argv: list[str]) -> list[str]:
    """`--json` off the command line (Hydra would refuse it), remembered for `run`."""
    if JSON_FLAG not in argv:
        return argv
    os.environ[JSON_ENV] = "1"
    return [a for a in argv if a != JSON_FLAG]


@dataclass
class Release:
    """What the task's files under data.root say: split sizes and one example record."""

    where: str  # e.g. "demo release at data/demo/householdbench (SYNTHETIC)"
    sizes: dict[str, int] = field(default_factory=dict)
    example: dict[str, Any] | None = None
    example_from: str = ""  # which row the example is
    evaluated: str = ""  # which rows stage=evaluate scores
    missing: str = ""  # why there is nothing to show
    fix: list[str] = field(default_factory=list)  # what to do about it (commands, unwrapped)


def _setting(cfg: DictConfig, key: str) -> Any:
    """A data setting, or None where unset (MISSING) or absent."""
    data = cfg.get("data")
    if data is None or key not in data or OmegaConf.is_missing(data, key):
        return None
    return data[key]


def _line(path: Path, index: int) -> dict[str, Any] | None:
    with path.open(encoding="utf-8") as fh:
        for i, text in enumerate(fh):
            if i == index:
                return json.loads(text)
    return None


def _release_layout(root: Path, task: str, split: str, limit: Any) -> Release:
    prompts, sidecar = root / "prompts" / f"{task}.jsonl", root / "splits" / f"{task}.csv"
    rel = Release(where=str(root))
    if not prompts.is_file() or not sidecar.is_file():
        rel.missing = f"no {prompts.relative_to(root)} under {root}"
        return rel
    wanted = {"pre_cutoff": "pre_cutoff_test", "post_cutoff": "post_cutoff_test"}.get(split, split)
    sizes: Counter[str] = Counter()
    first: tuple[int, int] | None = None  # (split_position, row index) of the split's first row
    with sidecar.open(encoding="utf-8", newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh)):
            sizes[row["split"]] += 1
            if row["split"] == wanted and row.get("split_position", "").isdigit():
                pos = int(row["split_position"])
                first = min(first, (pos, i)) if first else (pos, i)
    rel.sizes = {s: sizes[s] for s in (*SPLIT_ORDER, *sorted(set(sizes) - set(SPLIT_ORDER)))
                 if s in sizes}
    if first is not None:
        rel.example = _line(prompts, first[1])
        rel.example_from = f"the first row of {wanted} by split_position"
    n = "every row" if limit is None else f"the first {int(limit):,} rows"
    rel.evaluated = f"{n} of {wanted} by split_position (data.split={split}, " \
                    f"data.max_examples={'null' if limit is None else limit})"
    return rel


def _eval_sample_layout(root: Path, task: str, split: str) -> Release:
    from hhx.bench.layout import EVAL_SAMPLE_DIRS, eval_sample_path

    rel = Release(where=f"{root} (eval-sample layout)")
    for cell in EVAL_SAMPLE_DIRS:
        path = root / cell / f"{task}.jsonl"
        if path.is_file():
            with path.open(encoding="utf-8") as fh:
                rel.sizes[cell] = sum(1 for text in fh if text.strip())
    if not rel.sizes:
        rel.missing = f"no {task}.jsonl in {root}/{{{','.join(EVAL_SAMPLE_DIRS)}}}"
        return rel
    path = eval_sample_path(root, split, task)  # ConfigError for a split not in the sample
    if path.is_file():
        rel.example = _line(path, 0)
        rel.example_from = f"the first row of {path.parent.name}/{path.name}"
        rel.evaluated = f"every row of {path.parent.name}/{path.name}"
    return rel


def _how_to_get(task: TaskConfig, source: str) -> list[str]:
    """What to run to get the task's files here: lines, each command whole on its own."""
    official = (f"  python -m hhx stage=describe task={task.name} data=official "
                "data.root=<download>")
    if not task.builder:
        return ["hhx cannot build this task from survey files yet; download the official release:",
                official]
    if source == "demo":
        return ["build it (seeded synthetic surveys; stage=evaluate builds it on first use too):",
                f"  python -m hhx stage=build task={task.name}"]
    if source == "raw":
        return ["build it from your survey files (stage=list names the files each task reads):",
                f"  python -m hhx stage=build task={task.name} data=raw"]
    return ["point data.root at a download of the official release that holds it, or build it:",
            f"  python -m hhx stage=build task={task.name}"]


def release(cfg: DictConfig, task: TaskConfig) -> Release:
    """The task's files under data.root as the configured data source finds them (an own task
    without a builder: its release files beside its YAML)."""
    from hhx.tasks.own import own_task_dir

    source = enum_text(_setting(cfg, "source") or "demo")
    root = _setting(cfg, "root")
    own = own_task_dir(task.name)
    if own is not None and not task.builder:
        rel = _release_layout(own, task.name, str(_setting(cfg, "split") or "pre_cutoff_test"),
                              _setting(cfg, "max_examples"))
        rel.where = f"{rel.where} (own task's release files)"
        if rel.missing:
            rel.fix = ["an own task without `builder:` holds tabular/, prompts/ and splits/ files "
                       "beside its task/ folder (hhx/tasks/own.py)"]
        return rel
    if root is None:
        return Release(where=f"data={source}", missing="data.root is not set",
                       fix=["name the folder of the official download:",
                            f"  python -m hhx stage=describe task={task.name} data={source} "
                            "data.root=<download>"])
    split = str(_setting(cfg, "split") or "pre_cutoff_test")
    label = {"demo": "demo release, SYNTHETIC data", "raw": "built from your survey files",
             "official": "official download"}.get(source, source)
    try:
        if str(_setting(cfg, "layout") or "release") == "eval_sample":
            rel = _eval_sample_layout(Path(root), task.name, split)
        else:
            rel = _release_layout(Path(root), task.name, split, _setting(cfg, "max_examples"))
    except ConfigError as exc:
        return Release(where=str(root), missing=str(exc))
    rel.where = f"{rel.where} ({label})"
    if rel.missing:
        rel.fix = _how_to_get(task, source)
    return rel


# --------------------------------------------------------------------------------------------
# The text


def _wrap(text: str, indent: str = "  ") -> list[str]:
    """Paragraphs wrapped at WIDTH, indented; blank lines kept."""
    out: list[str] = []
    for para in str(text).split("\n"):
        out += textwrap.wrap(para, WIDTH, initial_indent=indent, subsequent_indent=indent) or [""]
    return out


def target_lines(task: TaskConfig) -> list[str]:
    """One line per answer element: its name and what it may be."""
    if task.distributions:
        return [f"{d.name}: probabilities of {', '.join(d.labels)} (summing to 1)"
                for d in task.distributions]
    return [f"{f.name}: one of {', '.join(f.labels)}" if f.labels else f"{f.name}: a number"
            for f in task.fields]


def _survey_text(name: str) -> str:
    from hhx.surveys.registry import load_survey

    try:
        words = " ".join(load_survey(name).description.split())
    except ConfigError:
        return name
    words = words.split(": ", 1)[0]  # what the source is; how hhx reads it follows the colon
    if len(words) > 140:
        words = words[:140].rsplit(", ", 1)[0] + " ..."
    return f"{name}: {words}" if words else name


def describe_text(task: TaskConfig, rel: Release) -> str:
    """The task in words (what `stage=describe` prints)."""
    from hhx.scoring.metric_names import official, reported

    kind = task.target_type.value
    metric = official(kind)
    from hhx.tasks.own import own_label

    lines = [f"{task.name}: {task.topic} · {MODES.get(task.mode.value, task.mode.value)}"
             f"{own_label(task.name)}", ""]
    lines += ["definition:", *_wrap(" ".join(task.description.split()))]
    lines += ["survey:", *_wrap(_survey_text(task.survey))]
    lines += [f"target ({kind}; the answer is one JSON array, elements in this order):",
              *(f"  {t}" for t in target_lines(task))]
    lines += [f"official metric: {metric.label}", *_wrap(metric.definition)]
    for other in reported(kind)[1:]:
        lines += [f"also reported: {other.label}", *_wrap(other.definition)]
    lines += ["no-change rule (the baseline every model is compared with):",
              *_wrap(task.naive_baseline or "(not described in the task config)")]
    lines += [f"data: {rel.where}"]
    if rel.missing:
        lines += _wrap(f"not available here: {rel.missing}")
        lines += [f"  {line}" for line in rel.fix]
        return "\n".join(lines)
    total = sum(rel.sizes.values())
    lines += [f"  rows: {total:,} = " + " + ".join(f"{s} {n:,}" for s, n in rel.sizes.items())]
    if rel.evaluated:
        lines += _wrap(f"stage=evaluate scores {rel.evaluated}")
    if rel.example is not None:
        ex = rel.example
        lines += ["", f"example prompt ({rel.example_from}: id {ex.get('id')}, "
                      f"time {ex.get('time')}):", "system:", *_wrap(ex.get("system", "")),
                  "user:", *_wrap(ex.get("user", "")), "",
                  f"gold answer: {ex.get('assistant')}",
                  f"no-change answer: {ex.get('naive_baseline')}"]
    return "\n".join(lines)


def variant_text(cfg: DictConfig, task: TaskConfig, rel: Release) -> str:
    """With a prompt variant (`prompt=few_shot | system`): the messages it sends for the example
    row, few-shot turns included ("" for the official prompt, shown above as the release has it)."""
    from hhx.errors import DataError
    from hhx.predictors.llm.prompt_variants import NOT_OFFICIAL, variant_from_config

    variant = variant_from_config(cfg)
    if variant.official or rel.example is None:
        return ""
    head = f"messages sent with prompt={variant.name} ({NOT_OFFICIAL}: {variant.label()}):"
    try:
        messages = _variant_messages(cfg, task, rel.example, variant)
    except (ConfigError, DataError) as exc:
        return "\n".join(["", head, *_wrap(str(exc))])
    lines = ["", head]
    for message in messages:
        lines += [f"{message['role']}:", *_wrap(message["content"])]
    return "\n".join(lines)


def _variant_messages(cfg: DictConfig, task: TaskConfig, example: dict[str, Any],
                      variant: Any) -> list[dict[str, str]]:
    import pandas as pd

    from hhx.bench.layout import load_bench_task
    from hhx.predictors.llm.prompt_variants import variant_messages

    bench = None
    if variant.few_shot and str(_setting(cfg, "layout") or "release") == "release":
        bench = load_bench_task(str(_setting(cfg, "root")), task)  # its train split: the shots
    split = str(_setting(cfg, "split") or "pre_cutoff_test")
    row = pd.DataFrame([example]).assign(split=split)
    return variant_messages(bench, row, variant, source=f"task {task.name}")[0]


def run(cfg: DictConfig) -> dict[str, Any]:
    from hhx.scoring import describe
    from hhx.tasks.registry import as_task

    task = as_task(cfg.task)
    info = describe(task)
    if os.environ.get(JSON_ENV) == "1":
        print(json.dumps(info, indent=2, default=str))
    else:
        rel = release(cfg, task)
        print(describe_text(task, rel))
        extra = variant_text(cfg, task, rel)
        if extra:
            print(extra)
    return info
