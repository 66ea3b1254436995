"""A sweep cell's identity: task, model, the hash of the settings that change a result, and the
fingerprint of the data it reads. Two runs with the same identity give the same numbers, so a
rerun of a sweep skips a cell whose identity MLflow already holds as FINISHED (resume.py).

Left out of the hash, because they do not change a result: where things are written or logged
(tracking, paths, the data folders), the sweep switches themselves, other stages' settings
(leaderboard, sft), the survey and demo settings and the task's builder module path (where the
code lives, not what it does: the data fingerprint covers what they built), and how requests are
paced (concurrency, timeouts, retries, rate limits, cluster resources).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from hhx.bench.layout import BenchTask, eval_sample_path, release_paths
from hhx.config import without_official_prompt
from hhx.predictors.llm.prompt_variants import with_system_digest
from hhx.surveys.freshness import Fingerprints

EXCLUDED_GROUPS = ("tracking", "paths", "sweep", "leaderboard", "sft", "survey",
                   "force", "dry_run")  # the last two: `+force=true`, `+dry_run=true`
EXCLUDED_KEYS = {
    "data": ("root", "raw_dir", "intermediate_dir", "rebuild", "demo"),
    "task": ("builder",),
    "model": ("max_concurrency", "timeout_s", "max_retries", "retry_base_s", "retry_max_s",
              "requests_per_minute", "resources"),
}
FINGERPRINT_CACHE = "sweep_fingerprints.json"


def result_settings(cfg: DictConfig | dict[str, Any]) -> dict[str, Any]:
    """The resolved config less what does not change a result (see the module docstring).
    `cfg`: the config, or the config resolved already (`resolved_config`; left unchanged)."""
    plain = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True) if isinstance(
        cfg, DictConfig) else cfg
    assert isinstance(plain, dict)
    # The official prompt as before prompt variants (no `prompt` node); a variant is in the hash,
    # with the digest of a system_file's text (the file's path alone would not say what was sent).
    settings = with_system_digest(without_official_prompt(plain))  # type: ignore[arg-type]
    kept = {k: v for k, v in settings.items() if k not in EXCLUDED_GROUPS}
    for group, keys in EXCLUDED_KEYS.items():
        if kept.get(group):
            kept[group] = {k: v for k, v in kept[group].items() if k not in keys}
    return kept


def config_hash(cfg: DictConfig | dict[str, Any]) -> str:
    from hhx.secrets import is_secret_name

    def scrub(node: Any) -> Any:  # a secret never enters the hash (it would leak by its digest)
        if isinstance(node, dict):
            return {k: scrub(v) for k, v in node.items() if not is_secret_name(str(k))}
        if isinstance(node, list):
            return [scrub(v) for v in node]
        return node

    text = json.dumps(scrub(result_settings(cfg)), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def data_files(bench: BenchTask) -> list[Path]:
    """The files a run of this task reads, in its layout."""
    if bench.layout == "eval_sample":
        return [eval_sample_path(bench.root, str(bench.split), bench.spec.name)]
    paths = release_paths(bench.root, bench.spec.name)
    return [paths["table"], paths["prompts"], paths["sidecar"]]


def data_fingerprint(bench: BenchTask, cache_dir: str | Path) -> str:
    """Content digest of the task's files (cached by path, size and mtime)."""
    fps = Fingerprints(Path(cache_dir) / FINGERPRINT_CACHE)
    entries = [[p.name, p.parent.name, fps.of(p)] for p in data_files(bench)]
    try:
        fps.save()
    except OSError:  # a read-only cache folder only costs re-hashing next time
        pass
    return hashlib.sha256(json.dumps(entries).encode()).hexdigest()[:16]


def cell_key(task: str, model: str, cfg_hash: str, fingerprint: str) -> str:
    return hashlib.sha256(f"{task}|{model}|{cfg_hash}|{fingerprint}".encode()).hexdigest()[:24]
