"""Build and evaluate the demo grid in a fresh root and write a digest of everything it produced.

Used to prove that a refactor preserves behaviour: run it on both sides of the change and diff the
two digests (`--compare A.json B.json`). Every file under the root is hashed (release layout,
intermediates, demo raw files, baselines, predictions, details, result JSON) after the root path is
replaced by `<ROOT>` in text files; MLflow runs are read from the SQLite store (params, tags and
metrics keyed by run name). Only what differs between two identical runs by nature is left out:
timestamps, durations, run ids, logs, lock files and Hydra's own copy of the command line.

    python tools/demo_grid.py --out /tmp/before.json            # in the checkout to measure
    python tools/demo_grid.py --compare /tmp/before.json /tmp/after.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

# The grid: every task built; no-change on every task; XGBoost on every task with 30 rounds (the
# whole path, in minutes instead of hours) and on jobfind with the reference settings; the CPU LLM
# on one task (the LLM path: prompts, answer schema, cache, aggregation); the leaderboard.
COMMANDS: list[list[str]] = [
    ["stage=build", "task=all"],
    ["--multirun", "task=all", "model=no_change"],
    ["--multirun", "task=all", "model=xgboost", "model.xgboost.n_estimators=30"],
    ["task=labor_cps_jobfind", "model=xgboost"],
    ["task=labor_cps_jobfind", "model=smollm2_135m", "data.max_examples=4"],
    ["stage=leaderboard"],
]

# Names whose values differ between two identical runs (times, ids, machine-dependent sizes).
_VOLATILE_KEY = re.compile(
    r"(time|seconds|_s$|duration|elapsed|run_id|date|host|pid|wall|throughput|per_s|tokens_per|"
    r"latency|started|finished_at|created|uptime|peak_|rss|cpu_|mlflow\.(user|source|log-model)"
    r"|run_dir|run_name|process|sweep_job|sweep_id)",
    re.IGNORECASE,
)
_SKIP_FILES = re.compile(
    r"(\.log$|\.lock$|/\.hydra/|run_info\.json$|sweep_fingerprints\.json$|/mlruns/|mlflow\.db"
    r"|/\.hhx/|__pycache__|/cache/|\.ubj$|leaderboard.*\.(png|svg|pdf|html)$)"
)
_STAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}[/_T ]\d{2}[-:]\d{2}[-:]\d{2}(\.\d+)?|\b\d{2}-\d{2} \d{2}:\d{2}\b"
)
# A time or thread count written inside a text field (JSON in a CSV/Parquet cell), e.g. "latency_s": 1.2
_VOLATILE_TEXT = re.compile(
    r'"{1,2}([A-Za-z_]*(?:seconds|latency|elapsed|_s|n_jobs|_ms)[A-Za-z_]*)"{1,2}\s*:\s*-?[0-9.eE+-]+'
)
_RUN_ID = re.compile(r"\b[0-9a-f]{32}\b")
# Fields inside JSON, CSV and Parquet files that measure time or memory, not results.
_VOLATILE_FIELD = re.compile(
    r"(seconds|_s$|^wall|latency|duration|elapsed|start_time|end_time|timestamp|created_at|per_s$"
    r"|peak_rss|peak_mb|^run_id$|sweep_id|started_at|updated_at|^created|written_at|^code$|^n_jobs$"
    # hashes of files that hold the fields above (the files themselves are digested)
    r"|model_identity_sha256|output_ready_sha256|model_manifest_sha256|^source$|^url$|process)",
    re.IGNORECASE,
)


def run_grid(root: Path, python: str) -> None:
    env = {**os.environ, "HHX_ROOT": str(root), "HHX_NO_PROGRESS": "1"}
    for args in COMMANDS:
        print("+ hhx", " ".join(args), flush=True)
        proc = subprocess.run([python, "-m", "hhx", *args], env=env, cwd=os.getcwd())
        if proc.returncode != 0:
            sys.exit(f"demo_grid: `hhx {' '.join(args)}` failed (exit {proc.returncode})")


def _strip(value: object) -> object:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not _VOLATILE_FIELD.search(str(k))}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _normalise(data: bytes, root: Path, suffix: str = "") -> bytes:
    if suffix in {".csv", ".parquet"}:
        frame = _read_table(data, suffix)
        if frame is not None:
            kept = [c for c in frame.columns if not _VOLATILE_FIELD.search(str(c))]
            text = frame[kept].to_csv(index=False)
            if suffix == ".parquet" and len(kept) == frame.shape[1] and text == _VOLATILE_TEXT.sub(
                r'"\1": <N>', text
            ):
                return data  # nothing volatile: the file's own bytes (types included)
            data = (text + str(frame[kept].dtypes.to_dict())).encode()
        elif suffix == ".parquet":
            return data
    if suffix == ".json":
        try:
            data = json.dumps(_strip(json.loads(data)), sort_keys=True).encode()
        except ValueError:
            pass
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    text = _RUN_ID.sub("<ID>", text.replace(str(root), "<ROOT>"))
    text = _VOLATILE_TEXT.sub(r'"\1": <N>', text)
    return _STAMP.sub("<STAMP>", text).encode()


def _read_table(data: bytes, suffix: str):  # -> pandas.DataFrame | None
    import io

    import pandas as pd

    try:
        if suffix == ".parquet":
            return pd.read_parquet(io.BytesIO(data))
        return pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
    except Exception:  # not a table: hashed as it is
        return None


def _run_key(rel: str) -> str:
    # outputs/<date>/<time>_<stage>_<task>_<model>/... -> outputs/<stage>_<task>_<model>/...
    return re.sub(r"outputs/[^/]+/\d{2}-\d{2}-\d{2}_", "outputs/", _STAMP.sub("<STAMP>", rel))


def file_digest(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if _SKIP_FILES.search("/" + rel):
            continue
        out[_run_key(rel)] = hashlib.sha256(_normalise(path.read_bytes(), root, path.suffix)).hexdigest()
    return out


def mlflow_digest(root: Path) -> dict[str, dict[str, str]]:
    db = root / "mlflow.db"
    if not db.exists():
        return {}
    con = sqlite3.connect(db)
    runs: dict[str, str] = {}
    seen: dict[str, int] = {}
    for run, name in con.execute("select run_uuid, name from runs order by start_time"):
        name = re.sub(r"sweep \d{2}-\d{2}-\d{2}", "sweep", _STAMP.sub("<STAMP>", str(name)))
        seen[name] = seen.get(name, 0) + 1
        runs[run] = f"{name} #{seen[name]}" if seen[name] > 1 else name
    out: dict[str, dict[str, str]] = {}
    for table, value in (("params", "value"), ("tags", "value"), ("latest_metrics", "value")):
        for run, key, val in con.execute(f"select run_uuid, key, {value} from {table}"):
            if _VOLATILE_KEY.search(key):
                continue
            name = runs.get(run, run)
            text = _STAMP.sub("<STAMP>", str(val).replace(str(root), "<ROOT>"))
            text = re.sub(r"sweep \d{2}-\d{2}-\d{2}", "sweep", _RUN_ID.sub("<ID>", text))
            out.setdefault(name, {})[f"{table}:{key}"] = text
    con.close()
    return out


def compare(a: Path, b: Path) -> int:
    left, right = json.loads(a.read_text()), json.loads(b.read_text())
    diffs = 0
    for section in ("files", "mlflow"):
        la, rb = left[section], right[section]
        for key in sorted(set(la) | set(rb)):
            if la.get(key) != rb.get(key):
                diffs += 1
                if diffs <= 60:
                    print(f"{section}: {key}: {_short(la.get(key))} != {_short(rb.get(key))}")
    print(f"{len(left['files'])} files, {len(left['mlflow'])} MLflow runs compared; {diffs} differ")
    return 1 if diffs else 0


def _short(value: object) -> str:
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)[:400]
    return str(value)[:80]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="where to write the digest JSON")
    ap.add_argument("--root", type=Path, help="root to build in (default: a new temp folder)")
    ap.add_argument("--keep", action="store_true", help="keep the root afterwards")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    ap.add_argument("--digest-only", action="store_true", help="digest --root as it is (no runs)")
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    if not args.out:
        ap.error("--out is required unless --compare")
    root = args.root or Path(tempfile.mkdtemp(prefix="hhx-grid-"))
    root.mkdir(parents=True, exist_ok=True)
    if not args.digest_only:
        run_grid(root.resolve(), sys.executable)
    digest = {"files": file_digest(root.resolve()), "mlflow": mlflow_digest(root.resolve())}
    args.out.write_text(json.dumps(digest, indent=1, sort_keys=True))
    print(f"digest: {len(digest['files'])} files, {len(digest['mlflow'])} runs -> {args.out}")
    if not args.keep and not args.root:
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
