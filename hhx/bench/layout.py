"""The official release and eval-sample layouts: strict readers, atomic writers, `BenchTask`.

Everything downstream of the task builders (predictors, scoring, the eval sample, the SFT export)
reads tasks only through `load_bench_task`, so a user's download of the official release (or of
its eval sample) and hhx's own builds are interchangeable. Release layout under `root`:

    tabular/<task>.csv      public table (spec 4.1; typing and number text in `table`)
    prompts/<task>.jsonl    prompt records, same row order (spec 4.2)
    splits/<task>.csv       split sidecar, same row order (spec 5.6)
    manifest.csv, splits/{manifest.csv,split_config.toml,READY.json} (written as the reference
    writes them, `manifests`), hhx_provenance.json (hhx builds only)

Eval-sample layout: `{root}/pre_cutoff/<task>.jsonl`, `{root}/post_cutoff/<task>.jsonl` and
`{root}/manifest.csv` (`evalsample`; a build writes it beside the release, `<root>_evalsample`).
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hhx import __version__
from hhx.config import Mode, TaskConfig
from hhx.errors import ConfigError, DataError
from hhx.io import atomic_path, file_lock, write_csv_atomic, write_json_atomic

from . import manifests as mf
from . import splits as sp
from .table import _LAYOUT_HINT, _column_mismatch, _first, coerce_table, read_table
from .table import official_values as official_values  # re-exported: part of the layout API
from .table import table_columns as table_columns
from .table import target_domains as target_domains
from .table import text_columns as text_columns

PROMPT_KEYS = ("id", "time", "release_date", "system", "user", "assistant", "naive_baseline")
# The release metadata lives in `manifests`; these names stay importable from here.
MANIFEST_COLUMNS = mf.MANIFEST_COLUMNS
SPLIT_MANIFEST_COLUMNS = mf.SPLIT_MANIFEST_COLUMNS
SUMMARY_COLUMNS = mf.SUMMARY_COLUMNS
PROMPT_KEY_CHECK = mf.PROMPT_KEY_CHECK
sha256_file = mf.sha256_file
stored_cutoff = mf.stored_cutoff
PROVENANCE_FILE = "hhx_provenance.json"
EVAL_SAMPLE_DIRS = {"pre_cutoff": "pre_cutoff_test", "post_cutoff": "post_cutoff_test"}
MODE_LABELS = {Mode.baseline: "Baseline prediction", Mode.policy: "Policy response prediction"}
_NO_TRAINING = "the eval-sample layout has no training rows; point data.root at the full release"


# --------------------------------------------------------------------------------------------
# Paths


def release_paths(root: str | Path, task_name: str) -> dict[str, Path]:
    """Where one task's files live in the release layout."""
    r = Path(root)
    return {
        "table": r / "tabular" / f"{task_name}.csv",
        "prompts": r / "prompts" / f"{task_name}.jsonl",
        "sidecar": r / "splits" / f"{task_name}.csv",
        "manifest": r / "manifest.csv",
        "split_manifest": r / "splits" / "manifest.csv",
        "ready": r / "splits" / "READY.json",
        "provenance": r / PROVENANCE_FILE,
    }


def eval_sample_split(split: str) -> str:
    """Eval-sample folder for a split name: pre_cutoff / post_cutoff (spec 7.5).

    `pre_cutoff_test` is accepted for the pre-cutoff cell (its rows are the first 200 test rows).
    `post_cutoff_test` is refused: the eval-sample post cell drops rows released up to
    2026-02-16 and re-interleaves, so it is not a prefix of that split.
    """
    if split in EVAL_SAMPLE_DIRS:
        return split
    if split == "pre_cutoff_test":
        return "pre_cutoff"
    if split == "post_cutoff_test":
        raise ConfigError(
            "data.split=post_cutoff_test: the eval-sample post-cutoff cell keeps only rows "
            f"released after {sp.EVAL_POST_CUTOFF_DATE}; set data.split=post_cutoff "
            "(same rows on either layout)"
        )
    raise ConfigError(
        f"data.split={split!r} is not in the eval sample; use pre_cutoff or post_cutoff"
    )


def eval_sample_path(root: str | Path, split: str, task_name: str) -> Path:
    """`{root}/{split}/{task}.jsonl` of the eval-sample layout."""
    return Path(root) / eval_sample_split(split) / f"{task_name}.jsonl"


# --------------------------------------------------------------------------------------------
# Prompt records (spec 4.2)


def _no_constants(token: str) -> Any:
    raise ValueError(f"{token} is not allowed")


# One decoder for every line: NaN/Infinity tokens are errors, as in the release files.
_STRICT_JSON = json.JSONDecoder(parse_constant=_no_constants)


def check_prompt_record(record: Any, where: str) -> None:
    """Exactly the 7 keys, all strings; 10-char release_date; assistant/baseline JSON lists."""
    if not isinstance(record, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(record).__name__}")
    keys = set(record)
    if keys != set(PROMPT_KEYS):
        extra = sorted(keys - set(PROMPT_KEYS))
        missing = [k for k in PROMPT_KEYS if k not in keys]
        raise DataError(
            f"{where}: prompt record keys must be exactly {list(PROMPT_KEYS)}"
            + (f"; extra {extra}" if extra else "")
            + (f"; missing {missing}" if missing else "")
        )
    for key in PROMPT_KEYS:
        if not isinstance(record[key], str):
            raise DataError(f"{where}: {key} must be a string, got {type(record[key]).__name__}")
    if not record["id"]:
        raise DataError(f"{where}: id is empty")
    if len(record["release_date"]) != 10:
        raise DataError(
            f"{where}: release_date {record['release_date']!r} must be YYYY-MM-DD (10 characters)"
        )
    for key in ("assistant", "naive_baseline"):
        try:
            value = _STRICT_JSON.decode(record[key])
        except ValueError as exc:
            raise DataError(f"{where}: {key} is not valid JSON ({exc})") from None
        if not isinstance(value, list):
            raise DataError(
                f"{where}: {key} must decode to a JSON list, got {type(value).__name__}"
            )


def read_prompts(path: str | Path) -> pd.DataFrame:
    """Read and validate a prompt JSONL file; errors name the line. Blank lines are skipped."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: prompt file not found; {_LAYOUT_HINT}")
    rows: list[dict[str, Any]] = []
    with p.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                record = _STRICT_JSON.decode(line)
            except ValueError as exc:
                raise DataError(f"{p}:{lineno}: invalid JSON ({exc})") from None
            check_prompt_record(record, f"{p}:{lineno}")
            rows.append(record)
    if not rows:
        raise DataError(f"{p}: prompt file has no records")
    # Object columns of Python strings: converting GBs of prompt text to Arrow costs seconds.
    return pd.DataFrame(rows, columns=list(PROMPT_KEYS), dtype=object)


def prompt_line(record: Mapping[str, str], *, compact: bool = False) -> str:
    """One release JSONL line: the 7 keys in order, ASCII-escaped, NaN forbidden (`compact`:
    separators "," and ":", not escaped, as the PSID job-loss tasks' reference renderers write)."""
    fields = {k: record[k] for k in PROMPT_KEYS}
    if compact:
        return json.dumps(fields, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return json.dumps(fields, ensure_ascii=True, allow_nan=False)


# --------------------------------------------------------------------------------------------
# Split sidecar


def read_sidecar(path: str | Path) -> pd.DataFrame:
    """Read `splits/<task>.csv`: the 7 sidecar columns, complete, positions contiguous per split."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: split sidecar not found; {_LAYOUT_HINT}")
    with p.open(encoding="utf-8", newline="") as fh:
        header = next(csv.reader(fh), None)
    if header != list(sp.SIDECAR_COLUMNS):
        _column_mismatch(header or [], list(sp.SIDECAR_COLUMNS), str(p))
    df = pd.read_csv(p, dtype="string", keep_default_na=False, na_values=[""])
    empty = df.isna().any(axis=1)
    if empty.any():
        raise DataError(
            f"{p}: line {_first(empty) + 2} has an empty field; the sidecar must be complete"
        )
    for col in ("within_period_order", "split_position"):
        num = pd.to_numeric(df[col], errors="coerce")
        bad = num.isna() | (num % 1 != 0) | (num < 1)
        if bad.any():
            i = _first(bad)
            raise DataError(
                f"{p}: column {col} line {i + 2}: {df[col].iloc[i]!r} is not a positive integer"
            )
        df[col] = num.astype("int64")
    unknown = ~df["split"].isin(sp.SPLITS)
    if unknown.any():
        i = _first(unknown)
        raise DataError(
            f"{p}: line {i + 2}: unknown split {df['split'].iloc[i]!r} "
            f"(valid: {', '.join(sp.SPLITS)})"
        )
    for split, pos in df.groupby("split")["split_position"]:
        if not np.array_equal(np.sort(pos.to_numpy()), np.arange(1, len(pos) + 1)):
            raise DataError(f"{p}: split_position of {split} is not exactly 1..{len(pos)}")
    return df


def published_sidecar(sidecar: pd.DataFrame, table: pd.DataFrame, where: str) -> pd.DataFrame:
    """Exported sidecar rows in table order, 7 columns; every table row must have one."""
    rows = sidecar
    if "exported" in rows.columns:
        rows = rows.loc[rows["exported"].astype(bool)]
    index = pd.MultiIndex.from_arrays([rows["id"].astype(str), rows["time"].astype(str)])
    want = pd.MultiIndex.from_arrays([table["id"].astype(str), table["time"].astype(str)])
    pos = index.get_indexer(want)
    if (pos < 0).any():
        i = _first(pos < 0)
        raise DataError(
            f"{where}: table row {i} ({table['id'].iloc[i]}, {table['time'].iloc[i]}) "
            "has no exported sidecar row"
        )
    if len(rows) != len(table):
        raise DataError(f"{where}: {len(rows)} exported sidecar rows but {len(table)} table rows")
    out = rows.iloc[pos].loc[:, list(sp.SIDECAR_COLUMNS)].reset_index(drop=True)
    if out["split_position"].isna().any():
        raise DataError(f"{where}: an exported sidecar row lacks split_position")
    out["within_period_order"] = out["within_period_order"].astype("int64")
    out["split_position"] = out["split_position"].astype("int64")
    return out


def check_same_order(frames: Mapping[str, pd.DataFrame], where: str) -> None:
    """Prompt order = table order = sidecar order: equal (id, time, release_date) row by row."""
    names = list(frames)
    base = frames[names[0]]
    for name in names[1:]:
        other = frames[name]
        if len(other) != len(base):
            raise DataError(f"{where}: {names[0]} has {len(base)} rows but {name} has {len(other)}")
        for col in ("id", "time", "release_date"):
            a = base[col].astype(str).to_numpy()
            b = other[col].astype(str).to_numpy()
            diff = a != b
            if diff.any():
                i = _first(diff)
                raise DataError(
                    f"{where}: row {i}: {names[0]} {col}={a[i]!r} but {name} {col}={b[i]!r}; "
                    f"{' , '.join(names)} must list the same rows in the same order"
                )


# --------------------------------------------------------------------------------------------
# BenchTask


@dataclass
class BenchTask:
    """One task as downstream code sees it, whichever layout it came from."""

    spec: TaskConfig
    prompts: pd.DataFrame  # the 7 record columns, prompt-file order
    table: pd.DataFrame | None  # typed public table (release layout only)
    splits: pd.DataFrame | None  # sidecar aligned with prompts/table (release layout only)
    root: Path
    source: str
    synthetic: bool
    layout: str
    split: str | None = None  # eval-sample layout: the cell loaded (pre_cutoff / post_cutoff)

    def eval_examples(self, split: str, limit: int | None) -> pd.DataFrame:
        """Prompt rows to evaluate: the 7 record columns plus `split` and `split_position`.

        Release layout: a split's first `limit` rows by split_position, or an eval-sample cell
        (`pre_cutoff` / `post_cutoff`, at most 200 rows, spec 6.1). Eval-sample layout: the file's
        rows (split_position unknown, so a `limit` below the file's size is refused). Rows are
        returned in prompt-file order.
        """
        if limit is not None and (isinstance(limit, bool) or int(limit) < 0):
            raise ConfigError(
                f"data.max_examples must be a non-negative integer or null, got {limit!r}"
            )
        if self.layout == "eval_sample":
            return self._eval_sample_examples(split, limit)
        assert self.splits is not None
        if split in EVAL_SAMPLE_DIRS:
            n = sp.EVAL_ROWS_PER_TASK if limit is None else min(int(limit), sp.EVAL_ROWS_PER_TASK)
            if split == "pre_cutoff":
                chosen = sp.split_prefix(self.splits, "pre_cutoff_test", n)
            else:
                chosen = sp.eval_post_cutoff_rows(self.splits, n)
        else:
            if split not in sp.SPLITS:
                valid = ", ".join([*sp.SPLITS, *EVAL_SAMPLE_DIRS])
                raise ConfigError(f"data.split={split!r} is not a split; valid: {valid}")
            chosen = sp.split_prefix(self.splits, split, limit)
        rows = np.sort(self.splits.index.get_indexer(chosen.index))
        out = self.prompts.iloc[rows].reset_index(drop=True)
        out["split"] = self.splits["split"].iloc[rows].to_numpy()
        out["split_position"] = pd.array(
            self.splits["split_position"].iloc[rows].to_numpy(), dtype="Int64"
        )
        return out

    def _eval_sample_examples(self, split: str, limit: int | None) -> pd.DataFrame:
        cell = eval_sample_split(split)
        if cell != self.split:
            raise ConfigError(
                f"task {self.spec.name} was loaded from the eval-sample {self.split} file; "
                f"data.split={split!r} needs the {cell} file (load it with split={cell!r})"
            )
        if limit is not None and int(limit) < len(self.prompts):
            raise ConfigError(
                f"data.max_examples={limit} is below the {len(self.prompts)} rows of "
                f"{eval_sample_path(self.root, cell, self.spec.name)}; the eval sample has no "
                "split_position to take a prefix by, so set data.max_examples=null (or >= the file "
                "size) or point data.root at the full release"
            )
        out = self.prompts.reset_index(drop=True).copy()
        out["split"] = EVAL_SAMPLE_DIRS[cell]
        out["split_position"] = pd.array([pd.NA] * len(out), dtype="Int64")
        return out

    def split_frame(self, split: str, cap: int | None, order: str = "position") -> pd.DataFrame:
        """Table rows of `split` with split_position <= cap, + `split`.

        `order="position"`: in split_position order (the SFT export's order). `order="table"`:
        in table (publication) order, as the official XGBoost build takes its fitting rows (it
        selects the prefix keys, then keeps the table's rows that carry them); with row
        subsampling the fitted trees depend on that order (hhx/predictors/xgboost.py).
        """
        if self.table is None or self.splits is None:
            raise DataError(f"task {self.spec.name}: {_NO_TRAINING}")
        if order not in ("position", "table"):
            raise ConfigError(f"split_frame order={order!r}; use 'position' or 'table'")
        chosen = sp.split_prefix(self.splits, split, cap)
        rows = self.splits.index.get_indexer(chosen.index)
        if order == "table":
            rows = np.sort(rows)  # the sidecar is aligned with the table row for row
        else:
            rows = rows[np.argsort(chosen["split_position"].to_numpy(), kind="mergesort")]
        out = self.table.iloc[rows].reset_index(drop=True)
        out["split"] = split
        return out


def read_provenance(root: str | Path) -> dict[str, Any] | None:
    path = Path(root) / PROVENANCE_FILE
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DataError(
            f"{path}: invalid JSON ({exc}); delete it only if this root holds no demo build"
        ) from None


def is_synthetic(root: str | Path, task_name: str) -> bool:
    """Whether hhx's provenance file under `root` marks the task as a synthetic demo build."""
    prov = read_provenance(root)
    if prov is None:
        return False
    entry = prov.get("tasks", {}).get(task_name, {})
    return bool(prov.get("synthetic")) or bool(entry.get("synthetic"))


def load_bench_task(
    root: str | Path,
    task: TaskConfig,
    layout: str = "release",
    split: str | None = None,
    source: str = "official",
    synthetic: bool = False,
) -> BenchTask:
    """Load one task from the release or eval-sample layout, checking every file contract.

    A root that hhx built from demo data carries `hhx_provenance.json`; such tasks always load as
    synthetic, whatever `synthetic` says.
    """
    root = Path(root)
    if layout == "eval_sample":
        if split is None:
            raise ConfigError("the eval-sample layout needs data.split (pre_cutoff or post_cutoff)")
        cell = eval_sample_split(split)
        path = eval_sample_path(root, cell, task.name)
        if not path.is_file():
            raise DataError(
                f"{path}: eval-sample file not found; the eval-sample layout is "
                "{root}/pre_cutoff/<task>.jsonl and {root}/post_cutoff/<task>.jsonl "
                "(tasks without post-cutoff rows have no post_cutoff file)"
            )
        prompts = read_prompts(path)
        is_synth = synthetic or is_synthetic(root, task.name)
        return BenchTask(task, prompts, None, None, root, source, is_synth, layout, split=cell)
    if layout != "release":
        raise ConfigError(f"data.layout={layout!r}; use release or eval_sample")
    paths = release_paths(root, task.name)
    for key in ("table", "prompts", "sidecar"):
        if not paths[key].is_file():
            raise DataError(f"{paths[key]}: not found; {_LAYOUT_HINT} (root {root})")
    table = read_table(paths["table"], task)
    prompts = read_prompts(paths["prompts"])
    sidecar = read_sidecar(paths["sidecar"])
    check_same_order(
        {"prompts": prompts, "table": table, "sidecar": sidecar}, f"task {task.name} under {root}"
    )
    is_synth = synthetic or is_synthetic(root, task.name)
    return BenchTask(task, prompts, table, sidecar, root, source, is_synth, layout)


# --------------------------------------------------------------------------------------------
# Writers


def _check_provenance(root: Path, task_name: str, synthetic: bool) -> None:
    """Demo and real builds never share a root, so a demo task cannot pass for real data."""
    prov = read_provenance(root) or {}
    tasks = {k: bool(v.get("synthetic")) for k, v in prov.get("tasks", {}).items()}
    manifest = root / "manifest.csv"
    if manifest.is_file():  # tasks hhx did not write (e.g. an official download) are real data
        listed = pd.read_csv(manifest, dtype=str, keep_default_na=False).get("task_id", [])
        tasks.update({k: False for k in listed if k not in tasks})
    mixed = [k for k, v in tasks.items() if k != task_name and v != synthetic]
    if mixed:
        kind = "synthetic demo" if not synthetic else "real-data"
        raise DataError(
            f"{root}: already holds {kind} builds ({', '.join(sorted(mixed))}); write "
            f"{'real' if not synthetic else 'demo'} task {task_name} to a separate data.root"
        )


def _update_provenance(root: Path, task_name: str, synthetic: bool) -> Path:
    path = root / PROVENANCE_FILE
    prov = read_provenance(root) or {"generator": "hhx", "synthetic": False, "tasks": {}}
    others = {k: v for k, v in prov.get("tasks", {}).items() if k != task_name}
    others[task_name] = {
        "synthetic": synthetic,
        "written_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "hhx_version": __version__,
    }
    prov.update(
        {"generator": "hhx", "hhx_version": __version__, "synthetic": synthetic, "tasks": others}
    )
    if synthetic:
        prov["note"] = "synthetic demo data generated by hhx; never results about real households"
    return write_json_atomic(path, prov)


def _write_prompts(path: Path, records: list[dict[str, Any]], compact: bool = False) -> None:
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(prompt_line(record, compact=compact) + "\n")


def write_release_task(
    root: str | Path,
    task: TaskConfig,
    table: pd.DataFrame,
    prompts: pd.DataFrame,
    sidecar: pd.DataFrame,
    *,
    synthetic: bool,
    cutoff: str = sp.CUTOFF_DATE,
    seed: int = sp.SAMPLING_SEED,
    compact_prompts: bool = False,
) -> dict[str, Path]:
    """Publish one task in the release layout; each file is written atomically.

    `table`: public columns in order, exported rows in publication order. `prompts`: the 7 record
    columns in the same order. `sidecar`: the full registry from `assign_splits` (with
    `exported`; its row count gives eligible_rows) or the published 7-column sidecar. Then the
    manifests and READY.json are upserted under a lock, and `hhx_provenance.json` records whether
    the build is synthetic.
    """
    root = Path(root)
    paths = release_paths(root, task.name)
    where = f"task {task.name}"
    numeric = set(table_columns(task)) - set(text_columns(task))
    floats = [c for c in table.attrs.get("float_columns", ()) if c in numeric]
    typed = coerce_table(table, task, f"{where} table", float_columns=floats)
    if list(prompts.columns) != list(PROMPT_KEYS):
        raise DataError(
            f"{where}: prompt columns must be exactly {list(PROMPT_KEYS)}, "
            f"got {list(prompts.columns)}"
        )
    public = published_sidecar(sidecar, typed, f"{where} sidecar")
    check_same_order(
        {"table": typed, "prompts": prompts.reset_index(drop=True), "sidecar": public}, where
    )
    summary = sp.sampling_summary(sidecar, task, cutoff=cutoff)
    columns = [prompts[k].to_numpy(dtype=object) for k in PROMPT_KEYS]
    records = [dict(zip(PROMPT_KEYS, values, strict=True)) for values in zip(*columns, strict=True)]
    for i, record in enumerate(records):
        check_prompt_record(record, f"{where} prompt record {i}")

    with file_lock(root / ".hhx_manifest.lock"):  # parallel builds upsert the manifests
        _check_provenance(root, task.name, synthetic)
        write_csv_atomic(paths["table"], typed)
        _write_prompts(paths["prompts"], records, compact_prompts)
        write_csv_atomic(paths["sidecar"], public)
        _update_provenance(root, task.name, synthetic)
        mf.upsert_rows(
            paths["manifest"],
            [mf.manifest_row(task, typed, summary, MODE_LABELS[task.mode])],
            mf.MANIFEST_COLUMNS,
            "manifest",
        )
        split_manifest = mf.upsert_rows(
            paths["split_manifest"],
            [mf.split_manifest_row(task.name, root, summary)],
            mf.SPLIT_MANIFEST_COLUMNS,
            "split_manifest",
        )
        mf.write_split_metadata(root, split_manifest, task, cutoff=cutoff, seed=seed)
    return paths
