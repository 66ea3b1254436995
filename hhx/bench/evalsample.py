"""The official evaluation sample (spec 6.1) and the SFT set (spec 6.2) from a release layout.

Both read only the published files: the sidecar decides the rows, and prompt records are copied
byte-for-byte (eval sample) so a selection made by hhx equals the official download.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import Mode
from hhx.errors import ConfigError, DataError
from hhx.io import atomic_path, write_csv_atomic, write_json_atomic, write_jsonl_atomic
from hhx.progress import progress

from . import layout as lay
from . import manifests as mf
from . import splits as sp

EVAL_MANIFEST_COLUMNS = mf.EVAL_MANIFEST_COLUMNS
EVAL_SUFFIX = "_evalsample"


def eval_sample_root(root: str | Path) -> Path:
    """Where a build puts its eval sample: beside the release, as the official
    `data/householdbench` -> `data/householdbench_evalsample`."""
    root = Path(root)
    return root.parent / f"{root.name}{EVAL_SUFFIX}"


def _manifests(root: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    paths = lay.release_paths(root, "_")
    for key in ("manifest", "split_manifest"):
        if not paths[key].is_file():
            raise DataError(
                f"{paths[key]}: not found; the release layout needs manifest.csv and "
                "splits/manifest.csv"
            )
    tasks = mf.read_csv_manifest(paths["manifest"], mf.MANIFEST_COLUMNS, "manifest")
    receipts = mf.read_csv_manifest(
        paths["split_manifest"], mf.SPLIT_MANIFEST_COLUMNS, "split_manifest"
    )
    if tasks["task_id"].duplicated().any() or receipts["task_id"].duplicated().any():
        raise DataError(f"{root}: manifest.csv or splits/manifest.csv lists a task twice")
    return tasks.set_index("task_id", drop=False), receipts.set_index("task_id")


def _task_files(root: Path, task: str, tasks: pd.DataFrame) -> tuple[Path, Path, str, str]:
    """(prompt path, sidecar path, their manifest strings) of a task in manifest.csv."""
    row = tasks.loc[task]
    prompt = row["prompt_file"] or mf.official_path(f"prompts/{task}.jsonl")
    split = row["split_file"] or mf.official_path(f"splits/{task}.csv")
    return mf.resolve(root, prompt), mf.resolve(root, split), prompt, split


def _checked_sidecar(
    root: Path, task: str, tasks: pd.DataFrame, receipts: pd.DataFrame
) -> tuple[pd.DataFrame, str]:
    """The sidecar, verified against its published SHA-256 (a mismatch means stale files)."""
    if task not in receipts.index:
        raise DataError(
            f"{root}/splits/manifest.csv: no row for task {task}; rebuild or re-download it"
        )
    _, path, _, split_file = _task_files(root, task, tasks)
    if split_file != receipts.at[task, "sidecar_file"]:
        raise DataError(
            f"{root}: manifest.csv names {split_file!r} as the split file of {task} but "
            f"splits/manifest.csv names {receipts.at[task, 'sidecar_file']!r}; rebuild it"
        )
    if not path.is_file():
        raise DataError(f"{path}: split sidecar not found")
    digest = mf.sha256_file(path)
    if digest != receipts.at[task, "sidecar_sha256"]:
        raise DataError(
            f"{path}: SHA-256 differs from splits/manifest.csv (stale files); "
            f"rebuild or re-download {task}"
        )
    sidecar = lay.read_sidecar(path)
    rows = str(tasks.at[task, "benchmark_rows"])
    if rows and (not rows.isdigit() or len(sidecar) != int(rows)):
        raise DataError(
            f"{path}: {len(sidecar)} rows but manifest.csv lists {rows} benchmark rows for {task}"
        )
    return sidecar, digest


def _selected_lines(
    path: Path, wanted: set[int], n_rows: int, expected_sha: str
) -> dict[int, bytes]:
    """Raw lines `wanted` (0-based) of a prompt file, streamed; the whole file is verified
    against the published SHA-256 and the sidecar's row count."""
    if not path.is_file():
        raise DataError(f"{path}: prompt file not found")
    digest = hashlib.sha256()
    found: dict[int, bytes] = {}
    count = 0
    with path.open("rb") as fh:
        for i, line in enumerate(fh):
            digest.update(line)
            count += 1
            if i in wanted:
                found[i] = line if line.endswith(b"\n") else line + b"\n"
    if digest.hexdigest() != expected_sha:
        raise DataError(
            f"{path}: SHA-256 differs from splits/manifest.csv (stale files); "
            "rebuild or re-download it"
        )
    if count != n_rows:
        raise DataError(f"{path}: {count} lines but the split sidecar has {n_rows} rows")
    return found


def _checked_record(line: bytes, sidecar: pd.DataFrame, i: int, where: Path) -> dict:
    """A selected record, validated and matched to its sidecar row."""
    record = json.loads(line)
    lay.check_prompt_record(record, f"{where}:{i + 1}")
    for key in ("id", "time", "release_date"):
        if record[key] != str(sidecar[key].iloc[i]):
            raise DataError(
                f"{where}:{i + 1}: {key} {record[key]!r} differs from the split sidecar row"
            )
    return record


def select_eval_sample(
    root: str | Path,
    out_root: str | Path,
    tasks: Sequence[str] | None = None,
    *,
    rows_per_task: int = sp.EVAL_ROWS_PER_TASK,
    post_cutoff_date: str = sp.EVAL_POST_CUTOFF_DATE,
    update: bool = False,
) -> pd.DataFrame:
    """Write `{out_root}/{pre_cutoff,post_cutoff}/<task>.jsonl` and `manifest.csv` (spec 6.1).

    pre_cutoff: split_prefix(pre_cutoff_test, 200). post_cutoff: post_cutoff_test rows released
    after 2026-02-16, re-interleaved per quarter by stored within_period_order, first 200. Records
    are copied byte-for-byte in prompt-file order; cells with no rows get no file. Nothing is
    written until every task has been checked.

    Default (the official script): every task of manifest.csv, and `.jsonl` files in out_root
    that this selection would not write are an error (stale files from another release).
    `update=True` (what a build does): only `tasks` are re-selected, their manifest rows replaced
    and a cell that lost its rows loses its file; the other tasks' files and rows stay.
    """
    root, out_root = Path(root), Path(out_root)
    manifest, receipts = _manifests(root)
    listed = list(manifest["task_id"])
    names = listed if tasks is None else list(tasks)
    unknown = [t for t in names if t not in set(listed)]
    if unknown:
        raise ConfigError(f"{root}/manifest.csv has no task(s) {unknown}; build them first")
    cutoff = lay.stored_cutoff(root)
    if post_cutoff_date < cutoff:
        raise ConfigError(
            f"eval post-cutoff date {post_cutoff_date} precedes the split cutoff {cutoff}"
        )

    outputs: dict[Path, bytes] = {}
    rows_out = []
    for task in names:
        files, rows = _task_sample(root, out_root, task, manifest, receipts, rows_per_task,
                                   post_cutoff_date, cutoff)
        outputs.update(files)
        rows_out += rows
    mine = {lay.eval_sample_path(out_root, c, t) for t in names for c in lay.EVAL_SAMPLE_DIRS}
    existing = set(out_root.glob("*/*.jsonl"))
    stale = sorted((existing & mine if update else existing) - set(outputs))
    if stale and not update:
        raise DataError(
            f"{out_root}: stale eval-sample file(s) {[str(p) for p in stale]} "
            "would not be rewritten; use an empty output folder"
        )
    for dest, payload in outputs.items():
        with atomic_path(dest) as tmp:
            tmp.write_bytes(payload)
    for path in stale:  # update mode: a cell of a rebuilt task that has no rows any more
        path.unlink()
    provenance = lay.read_provenance(root)
    if provenance is not None:  # a sample of a demo build stays marked synthetic
        write_json_atomic(out_root / lay.PROVENANCE_FILE, {**provenance, "sampled_from": str(root)})
    manifest_path = out_root / "manifest.csv"
    if update:
        return mf.upsert_rows(manifest_path, rows_out, EVAL_MANIFEST_COLUMNS, "eval_manifest",
                              order=listed)
    result = pd.DataFrame(rows_out, columns=EVAL_MANIFEST_COLUMNS)
    write_csv_atomic(manifest_path, result)
    return result


def _task_sample(root: Path, out_root: Path, task: str, manifest: pd.DataFrame,
                 receipts: pd.DataFrame, rows_per_task: int, post_cutoff_date: str,
                 cutoff: str) -> tuple[dict[Path, bytes], list[dict[str, Any]]]:
    """One task's two cells: the files to write (none for an empty cell) and manifest rows."""
    outputs: dict[Path, bytes] = {}
    rows_out: list[dict[str, Any]] = []
    sidecar, sidecar_sha = _checked_sidecar(root, task, manifest, receipts)
    prompt_path, _, prompt_file, split_file = _task_files(root, task, manifest)
    pre = sp.split_prefix(sidecar, "pre_cutoff_test", rows_per_task)
    post = sp.eval_post_cutoff_rows(sidecar, rows_per_task, post_cutoff_date=post_cutoff_date)
    cells = {
        cell: np.sort(sidecar.index.get_indexer(chosen.index))
        for cell, chosen in (("pre_cutoff", pre), ("post_cutoff", post))
    }
    wanted = {int(i) for rows in cells.values() for i in rows}
    lines = _selected_lines(
        prompt_path, wanted, len(sidecar), receipts.at[task, "prompt_sha256"]
    )
    for cell, rows in cells.items():
        payload = b"".join(lines[i] for i in rows.tolist())
        for i in rows.tolist():
            _checked_record(lines[i], sidecar, i, prompt_path)
        dest = lay.eval_sample_path(out_root, cell, task)
        if len(rows):
            outputs[dest] = payload
        rows_out.append(
            {
                "task_id": task,
                "split": cell,
                "rows": len(rows),
                "requested_rows": rows_per_task,
                "post_cutoff_date": post_cutoff_date,
                "source_split_cutoff_date": cutoff,
                "source_prompt_file": prompt_file,
                "source_prompt_sha256": receipts.at[task, "prompt_sha256"],
                "source_split_file": split_file,
                "source_split_sha256": sidecar_sha,
                "prompt_file": f"{mf.EVAL_SAMPLE_DIR}/{cell}/{task}.jsonl" if len(rows) else "",
                "prompt_sha256": hashlib.sha256(payload).hexdigest() if len(rows) else "",
            }
        )
    return outputs, rows_out


def export_sft(
    root: str | Path,
    out_path: str | Path,
    tasks: Sequence[str],
    n: int = 6000,
) -> pd.DataFrame:
    """Chat-format SFT records: the first n train rows by split_position of baseline tasks.

    One JSONL line per row: {"task_id", "id", "time", "synthetic", "messages": [system, user,
    assistant]}, tasks in the given order, rows in split_position order. Returns rows per task.
    """
    root = Path(root)
    manifest, receipts = _manifests(root)
    modes = dict(zip(manifest["task_id"], manifest["mode"], strict=True))
    records = []
    counts = []
    bar = progress(tasks, "SFT export: tasks' train rows", unit="task")
    for task in bar:
        if task not in modes:
            raise ConfigError(f"{root}/manifest.csv has no task {task}; build it first")
        if modes[task] != lay.MODE_LABELS[Mode.baseline]:
            raise ConfigError(
                f"task {task} is a {modes[task]!r} task; "
                "the SFT set covers baseline tasks only (spec 6.2)"
            )
        sidecar, _ = _checked_sidecar(root, task, manifest, receipts)
        prompt_path = _task_files(root, task, manifest)[0]
        synthetic = lay.is_synthetic(root, task)
        chosen = sp.split_prefix(sidecar, "train", n).sort_values(
            "split_position", kind="mergesort"
        )
        rows = sidecar.index.get_indexer(chosen.index).tolist()
        lines = _selected_lines(
            prompt_path, set(rows), len(sidecar), receipts.at[task, "prompt_sha256"]
        )
        for i in rows:
            record = _checked_record(lines[i], sidecar, i, prompt_path)
            records.append(
                {
                    "task_id": task,
                    "id": record["id"],
                    "time": record["time"],
                    "synthetic": synthetic,
                    "messages": [
                        {"role": "system", "content": record["system"]},
                        {"role": "user", "content": record["user"]},
                        {"role": "assistant", "content": record["assistant"]},
                    ],
                }
            )
        counts.append({"task_id": task, "rows": len(chosen)})
        bar.set_postfix_str(f"{len(records):,} rows")
    write_jsonl_atomic(out_path, records)
    return pd.DataFrame(counts, columns=["task_id", "rows"])
