"""The SFT set (spec 6.2) in the formats fine-tuning tools read, with a manifest per task.

The rows are the first `rows_per_task` (6,000 in the paper) train rows by split_position of each
baseline task built under a release root; policy tasks are never in it (they are held out to
test generalisation). `hhx.bench.evalsample.export_sft` selects and verifies the records; this
module writes them as:

- `sft_chat.jsonl`: hhx's record per row {task_id, id, time, synthetic, messages: [system, user,
  assistant]} (the source of the other two);
- `trl/train.jsonl`: TRL's conversational prompt-completion format {"prompt": [system, user],
  "completion": [assistant]}, so the loss covers the answer only (`completion_only_loss`);
- `llamafactory/householdbench_sft.jsonl` + `dataset_info.json`: LLaMA-Factory's sharegpt
  format {"system", "conversations": [{"from": "human"}, {"from": "gpt"}]} and its registration
  (`dataset_dir=<out>/llamafactory dataset=householdbench_sft`);
- `manifest.csv` (task_id, mode, target_type, rows, requested_rows, synthetic) and
  `sft_set.json` (source, totals, the chat file's SHA-256, which a trained adapter records).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from hhx.bench import layout as lay
from hhx.bench.evalsample import export_sft
from hhx.config import Mode
from hhx.errors import ConfigError, DataError
from hhx.io import file_sha256, write_csv_atomic, write_json_atomic, write_jsonl_atomic
from hhx.tasks.registry import load_task, task_names

CHAT_FILE = "sft_chat.jsonl"
TRL_FILE = "trl/train.jsonl"
LF_DATASET = "householdbench_sft"
LF_FILE = f"llamafactory/{LF_DATASET}.jsonl"
LF_INFO = "llamafactory/dataset_info.json"
MANIFEST_FILE = "manifest.csv"
INFO_FILE = "sft_set.json"
MANIFEST_COLUMNS = ["task_id", "mode", "target_type", "rows", "requested_rows", "synthetic"]


@dataclass(frozen=True)
class SftSet:
    root: Path  # the folder written
    manifest: pd.DataFrame
    info: dict

    @property
    def trl_file(self) -> Path:
        return self.root / TRL_FILE

    @property
    def total_rows(self) -> int:
        return int(self.info["total_rows"])

    @property
    def synthetic(self) -> bool:
        return bool(self.info["synthetic"])


def built_baseline_tasks(root: str | Path) -> list[str]:
    """Baseline tasks listed in `<root>/manifest.csv`, in the registry's (alphabetical) order."""
    path = lay.release_paths(root, "_")["manifest"]
    if not path.is_file():
        raise DataError(
            f"{path}: not found; build baseline tasks first (python -m hhx stage=build "
            "task=<t>) or point data.root at the official full release"
        )
    manifest = pd.read_csv(path, dtype=str, keep_default_na=False)
    baseline = set(manifest.loc[manifest["mode"] == lay.MODE_LABELS[Mode.baseline], "task_id"])
    return [t for t in task_names() if t in baseline]


def choose_tasks(root: str | Path, wanted: Sequence[str]) -> list[str]:
    """The tasks to export: `wanted` (each must be a baseline task) or every built one."""
    if not wanted:
        tasks = built_baseline_tasks(root)
        if not tasks:
            raise DataError(f"{root}/manifest.csv lists no baseline task; build one first")
        return tasks
    for name in wanted:
        if load_task(name).mode is not Mode.baseline:
            raise ConfigError(
                f"sft.tasks: {name} is a policy task; the SFT set covers baseline tasks only "
                "(policy tasks are held out, spec 6.2)"
            )
    return list(wanted)


def _chat_records(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)


def _trl(record: dict) -> dict:
    system, user, assistant = record["messages"]
    return {"prompt": [system, user], "completion": [assistant]}


def _sharegpt(record: dict) -> dict:
    system, user, assistant = record["messages"]
    return {
        "system": system["content"],
        "conversations": [
            {"from": "human", "value": user["content"]},
            {"from": "gpt", "value": assistant["content"]},
        ],
    }


def write_sft_set(
    root: str | Path, out_dir: str | Path, tasks: Sequence[str] = (), rows_per_task: int = 6000
) -> SftSet:
    """Export the SFT set of the baseline tasks under `root` into `out_dir` (see module doc)."""
    root, out = Path(root), Path(out_dir)
    if rows_per_task < 1:
        raise ConfigError(f"sft.rows_per_task={rows_per_task}; must be >= 1")
    names = choose_tasks(root, tasks)
    counts = export_sft(root, out / CHAT_FILE, names, n=rows_per_task)
    chat = out / CHAT_FILE
    write_jsonl_atomic(out / TRL_FILE, (_trl(r) for r in _chat_records(chat)), ensure_ascii=False)
    write_jsonl_atomic(out / LF_FILE, (_sharegpt(r) for r in _chat_records(chat)),
                       ensure_ascii=False)
    write_json_atomic(out / LF_INFO, {LF_DATASET: {
        "file_name": Path(LF_FILE).name,
        "formatting": "sharegpt",
        "columns": {"messages": "conversations", "system": "system"},
        "tags": {"role_tag": "from", "content_tag": "value", "user_tag": "human",
                 "assistant_tag": "gpt"},
    }})
    synthetic = {t: lay.is_synthetic(root, t) for t in names}
    manifest = pd.DataFrame(
        [
            {
                "task_id": row.task_id,
                "mode": Mode.baseline.value,
                "target_type": load_task(row.task_id).target_type.value,
                "rows": int(row.rows),
                "requested_rows": rows_per_task,
                "synthetic": synthetic[row.task_id],
            }
            for row in counts.itertuples(index=False)
        ],
        columns=MANIFEST_COLUMNS,
    )
    write_csv_atomic(out / MANIFEST_FILE, manifest)
    info = {
        "source_root": str(root.resolve()),
        "tasks": names,
        "rows_per_task": rows_per_task,
        "total_rows": int(manifest["rows"].sum()),
        "synthetic": any(synthetic.values()),
        "chat_sha256": file_sha256(chat),
        "files": {"chat": CHAT_FILE, "trl": TRL_FILE, "llamafactory": LF_FILE,
                  "llamafactory_dataset_info": LF_INFO, "manifest": MANIFEST_FILE},
    }
    write_json_atomic(out / INFO_FILE, info)
    return SftSet(out, manifest, info)


def read_sft_set(out_dir: str | Path) -> SftSet:
    """A set written by write_sft_set (stage=sft_data); a clear error if it is missing."""
    out = Path(out_dir)
    info_path = out / INFO_FILE
    if not info_path.is_file() or not (out / TRL_FILE).is_file():
        raise DataError(
            f"{out}: no SFT set (sft_set.json, {TRL_FILE}); write it first with "
            "`python -m hhx stage=sft_data` (same data= and sft.data_dir=)"
        )
    info = json.loads(info_path.read_text())
    manifest = pd.read_csv(out / MANIFEST_FILE)
    return SftSet(out, manifest, info)
