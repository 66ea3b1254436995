"""Release metadata as the official pipeline writes it: manifest.csv, splits/manifest.csv,
splits/split_config.toml, splits/READY.json and the eval sample's manifest.csv.

Facts (reference `scripts/utils/task_publication.py`, `sampling.py`, `run_pipeline.py`,
`2_tasks/select_evalsample.py`):
- Paths in the manifests are relative to the official project root: `data/householdbench/...`
  for the release, `data/householdbench_evalsample/...` for the eval sample, whatever folder a
  user keeps them in. hhx writes the same strings and resolves them against `data.root`; it also
  reads the older hhx form (paths relative to the root itself, `prompts/<task>.jsonl`).
- Rows are in task-name order (the reference builds every task, then publishes them sorted);
  hhx upserts one task at a time and keeps that order.
- `split_config.toml`: a generated header line, one `key = <json>` line per sampling setting in
  the reference's order, then per published task `[tasks.<id>]` with `order` and
  `typed_id_components`, each table after a blank line.
- `READY.json`: `json.dumps(indent=2, sort_keys=True)`; `fallback_tasks` lists every row-split
  task of the registry. Its three rule hashes identify hhx's own registry (conf/task/*.yaml),
  sampler (hhx/bench/splits.py) and table schema, as the reference's identify its files.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from hhx.config import SplitUnit, TaskConfig
from hhx.errors import DataError
from hhx.io import write_csv_atomic, write_text_atomic

from . import splits as sp

RELEASE_DIR = "data/householdbench"
EVAL_SAMPLE_DIR = "data/householdbench_evalsample"
MANIFEST_COLUMNS = [
    "task_id",
    "dataset",
    "topic",
    "mode",
    "prompt_file",
    "tabular_file",
    "tabular_columns",
    "min_time",
    "max_time",
    "min_release_date",
    "max_release_date",
    "eligible_rows",
    "benchmark_rows",
    "post_cutoff_rows",
    "split_file",
]
SUMMARY_COLUMNS = [
    "full_eligible_rows",
    "pre_cutoff_eligible_rows",
    "post_cutoff_eligible_rows",
    "pre_cutoff_exported_rows",
    "post_cutoff_exported_rows",
    "exported_rows",
    "fallback_used",
]
SPLIT_MANIFEST_COLUMNS = [
    "task_id",
    "sidecar_file",
    "sidecar_sha256",
    *SUMMARY_COLUMNS,
    "table_sha256",
    "prompt_sha256",
    "prompt_key_check",
]
EVAL_MANIFEST_COLUMNS = [
    "task_id",
    "split",
    "rows",
    "requested_rows",
    "post_cutoff_date",
    "source_split_cutoff_date",
    "source_prompt_file",
    "source_prompt_sha256",
    "source_split_file",
    "source_split_sha256",
    "prompt_file",
    "prompt_sha256",
]
PROMPT_KEY_CHECK = "exact_full_jsonl_key_reconciliation"
# Path-valued columns, and the project folder their official values start with.
PATH_COLUMNS = {
    "manifest": dict.fromkeys(("prompt_file", "tabular_file", "split_file"), RELEASE_DIR),
    "split_manifest": {"sidecar_file": RELEASE_DIR},
    "eval_manifest": {
        "source_prompt_file": RELEASE_DIR,
        "source_split_file": RELEASE_DIR,
        "prompt_file": EVAL_SAMPLE_DIR,
    },
}
# The header line the reference's split_config.toml starts with (kept for byte parity).
SPLIT_CONFIG_HEADER = (
    "# Generated from scripts/utils/sampling.py and scripts/2_tasks/task_registry.json."
)


# --------------------------------------------------------------------------------------------
# Paths


def official_path(value: str, folder: str = RELEASE_DIR) -> str:
    """A manifest path in the official form; older hhx values (relative to the root) gain the
    project folder, empty values stay empty."""
    value = str(value).strip()
    if not value or value.startswith(f"{folder}/"):
        return value
    return f"{folder}/{value.lstrip('./')}"


def resolve(root: str | Path, value: str, folder: str = RELEASE_DIR) -> Path:
    """The file a manifest path names, for a release (or eval sample) kept under `root`."""
    value = str(value).strip()
    if value.startswith(f"{folder}/"):
        value = value[len(folder) + 1 :]
    if not value or Path(value).is_absolute() or ".." in Path(value).parts:
        raise DataError(f"{root}: manifest path {value!r} is not a file inside the release")
    return Path(root) / value


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_json(value: Any) -> str:
    payload = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------------------------
# CSV manifests


def read_csv_manifest(path: Path, columns: Sequence[str], kind: str) -> pd.DataFrame:
    """A manifest as text columns, its paths in the official form; wrong columns are an error."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    if list(frame.columns) != list(columns):
        raise DataError(
            f"{path}: columns {list(frame.columns)} differ from {list(columns)}; "
            "delete the stale file or rebuild"
        )
    for col, folder in PATH_COLUMNS[kind].items():
        frame[col] = frame[col].map(lambda v, f=folder: official_path(v, f))
    return frame


def upsert_rows(
    path: Path,
    rows: list[dict[str, Any]],
    columns: Sequence[str],
    kind: str,
    order: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Replace the rows of the tasks in `rows` (all rows of a task at once) and write the file
    in task order (`order`, default task-name order), a task's rows in the order given."""
    tasks = {str(r["task_id"]) for r in rows}
    old = read_csv_manifest(path, columns, kind) if path.is_file() else pd.DataFrame(
        columns=list(columns)
    )
    old = old.loc[~old["task_id"].isin(tasks)]
    new = pd.DataFrame(
        [{k: "" if r[k] is None else str(r[k]) for k in columns} for r in rows],
        columns=list(columns),
    )
    out = pd.concat([old.astype(str), new], ignore_index=True)
    names = sorted(set(out["task_id"])) if order is None else list(order)
    rank = {t: i for i, t in enumerate(names)}
    missing = sorted(set(out["task_id"]) - set(rank))
    if missing:
        raise DataError(f"{path}: tasks {missing} are not in the release manifest")
    out = out.iloc[out["task_id"].map(rank).argsort(kind="mergesort")].reset_index(drop=True)
    write_csv_atomic(path, out)
    return out


def manifest_row(task: TaskConfig, table: pd.DataFrame, summary: dict[str, Any],
                 mode_label: str) -> dict[str, Any]:
    """The task's row of `manifest.csv` (reference `task_manifest_row`)."""
    name = task.name
    return {
        "task_id": name,
        "dataset": task.survey,
        "topic": task.topic,
        "mode": mode_label,
        "prompt_file": f"{RELEASE_DIR}/prompts/{name}.jsonl",
        "tabular_file": f"{RELEASE_DIR}/tabular/{name}.csv",
        "tabular_columns": len(table.columns),
        "min_time": str(table["time"].min())[:10],
        "max_time": str(table["time"].max())[:10],
        "min_release_date": str(table["release_date"].min())[:10],
        "max_release_date": str(table["release_date"].max())[:10],
        "eligible_rows": summary["full_eligible_rows"],
        "benchmark_rows": summary["exported_rows"],
        "post_cutoff_rows": summary["post_cutoff_exported_rows"],
        "split_file": f"{RELEASE_DIR}/splits/{name}.csv",
    }


def split_manifest_row(task_name: str, root: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """The task's row of `splits/manifest.csv`: receipts of the three published files."""
    return {
        "task_id": task_name,
        "sidecar_file": f"{RELEASE_DIR}/splits/{task_name}.csv",
        "sidecar_sha256": sha256_file(root / "splits" / f"{task_name}.csv"),
        **{k: summary[k] for k in SUMMARY_COLUMNS},
        "table_sha256": sha256_file(root / "tabular" / f"{task_name}.csv"),
        "prompt_sha256": sha256_file(root / "prompts" / f"{task_name}.jsonl"),
        "prompt_key_check": PROMPT_KEY_CHECK,
    }


# --------------------------------------------------------------------------------------------
# split_config.toml and READY.json


def _registry() -> list[TaskConfig]:
    from hhx.tasks.registry import load_task, task_names  # local: keeps bench import-light

    return [load_task(name) for name in task_names()]


def sampling_config(cutoff: str, seed: int, registry: Sequence[TaskConfig]) -> dict[str, Any]:
    """The sampling settings in the reference's order (`load_sampling_config`)."""
    weights = sp.SPLIT_WEIGHTS
    total = sum(weights.values())
    cap = sp.HISTORICAL_EXPORT_CAP
    return {
        "cutoff_date": cutoff,
        "seed": seed,
        "train_share": weights["train"] / total,
        "validation_share": weights["validation"] / total,
        "pre_cutoff_test_share": weights["pre_cutoff_test"] / total,
        "minimum_validation_fallback_rows": sp.MINIMUM_HOLDOUT_ROWS,
        "minimum_pre_cutoff_test_fallback_rows": sp.MINIMUM_HOLDOUT_ROWS,
        "historical_export_cap": cap,
        "historical_train_budget": cap * weights["train"] // total,
        "historical_validation_budget": cap * weights["validation"] // total,
        "historical_pre_cutoff_test_budget": cap * weights["pre_cutoff_test"] // total,
        "row_fallback_tasks": sorted(t.name for t in registry if t.split_unit is SplitUnit.row),
    }


def task_ordering(task: TaskConfig) -> dict[str, Any]:
    return {
        "order": task.sort_order.value,
        "typed_id_components": [task.typed_id] if task.typed_id else [],
    }


def _stored_orderings(path: Path) -> dict[str, Any]:
    """`[tasks.*]` of an existing split_config.toml (tasks published earlier)."""
    import tomllib

    if not path.is_file():
        return {}
    try:
        with path.open("rb") as fh:
            return dict(tomllib.load(fh).get("tasks", {}))
    except tomllib.TOMLDecodeError as exc:
        raise DataError(f"{path}: invalid TOML ({exc}); delete it and rebuild") from None


def split_config_text(orderings: dict[str, dict[str, Any]], cutoff: str, seed: int,
                      registry: Sequence[TaskConfig]) -> str:
    """The file's text; `orderings` maps each published task to its `task_ordering`."""
    lines = [SPLIT_CONFIG_HEADER]
    lines += [f"{k} = {json.dumps(v)}" for k, v in sampling_config(cutoff, seed, registry).items()]
    for name in sorted(orderings):
        lines.append(f"\n[tasks.{name}]")
        lines += [f"{k} = {json.dumps(orderings[name][k])}" for k in ("order",
                                                                       "typed_id_components")]
    return "\n".join(lines) + "\n"


def _schema(task: TaskConfig) -> dict[str, Any]:
    return {
        "targets": list(task.targets),
        "prompt_predictors": list(task.prompt_predictors),
        "categorical_predictors": list(task.categorical_predictors),
        "required_predictors": list(task.required_predictors),
        "prompt_month": None if task.prompt_month is None else {
            "fixed_month": task.prompt_month.fixed_month,
            "currency": task.prompt_month.currency,
        },
    }


def write_split_metadata(root: Path, split_manifest: pd.DataFrame, task: TaskConfig, *,
                         cutoff: str, seed: int) -> None:
    """`splits/split_config.toml`, then `splits/READY.json` (which hashes the former).

    `task` is the task just published; the others of the split manifest keep the ordering of
    their conf/task file, else the one the existing split_config.toml records."""
    registry = _registry()
    known = {t.name: task_ordering(t) for t in registry}
    splits_dir = root / "splits"
    config_path = splits_dir / "split_config.toml"
    stored = _stored_orderings(config_path)
    orderings = {}
    for name in split_manifest["task_id"]:
        ordering = task_ordering(task) if name == task.name else known.get(name, stored.get(name))
        if ordering is None:
            raise DataError(
                f"{config_path}: no ordering for task {name} of splits/manifest.csv "
                f"(no conf/task/{name}.yaml); rebuild that task"
            )
        orderings[name] = ordering
    write_text_atomic(config_path, split_config_text(orderings, cutoff, seed, registry))
    from hhx.paths import conf_dir as _conf_dir

    conf_dir = _conf_dir() / "task"  # working copy or wheel
    registry_digest = hashlib.sha256()
    for path in sorted(conf_dir.glob("*.yaml")):
        registry_digest.update(path.name.encode() + b"\0" + path.read_bytes())
    ready = {
        "created_at": dt.datetime.now(dt.UTC).isoformat(),
        "task_count": len(split_manifest),
        "total_records": int(pd.to_numeric(split_manifest["exported_rows"]).sum()),
        "cutoff_date": cutoff,
        "seed": seed,
        "python_version": sys.version.split()[0],
        "split_config_sha256": sha256_file(config_path),
        "task_registry_sha256": registry_digest.hexdigest(),
        "sampling_rules_sha256": sha256_file(Path(sp.__file__)),
        "table_schema_sha256": sha256_json({t.name: _schema(t) for t in registry}),
        "fallback_tasks": sampling_config(cutoff, seed, registry)["row_fallback_tasks"],
        "build_status": "complete",
        "prompt_key_check": PROMPT_KEY_CHECK,
    }
    write_text_atomic(splits_dir / "READY.json", json.dumps(ready, indent=2, sort_keys=True) + "\n")


def stored_cutoff(root: str | Path) -> str:
    """The split cutoff a release was built with (split_config.toml, READY.json, else default)."""
    import tomllib

    splits_dir = Path(root) / "splits"
    toml_path = splits_dir / "split_config.toml"
    if toml_path.is_file():
        try:
            with toml_path.open("rb") as fh:
                value = tomllib.load(fh).get("cutoff_date")
        except tomllib.TOMLDecodeError as exc:
            raise DataError(f"{toml_path}: invalid TOML ({exc})") from None
        if value:
            return str(value)
    ready = splits_dir / "READY.json"
    if ready.is_file():
        try:
            value = json.loads(ready.read_text(encoding="utf-8")).get("cutoff_date")
        except ValueError as exc:
            raise DataError(f"{ready}: invalid JSON ({exc})") from None
        if value:
            return str(value)
    return sp.CUTOFF_DATE
