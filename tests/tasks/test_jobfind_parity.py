"""Byte parity of a labor_cps_jobfind build with what the reference pipeline's writers produce.

`python -m hhx stage=build task=labor_cps_jobfind` on the synthetic demo (and once with the real
FRED-QD vintage of ../shared); then every published file is rebuilt here from the facts of the
reference writers (`01_make_table.py` / `table_schema.write_public_table`, `02_render_prompts.py`,
`task_publication.task_manifest_row` / `build_authoritative_splits`, `select_evalsample.py`,
spec 00_common.md 3.4, 4.2, 5, 6.1) and compared byte for byte:
- table: the official columns; integer columns (age, famsize, nchild, durunemp_baseline: the
  reference collects them as Python ints) as integers, macro columns as pandas float text;
- prompts: one `json.dumps(record, ensure_ascii=True)` line per table row, in table order, with
  the reference's system prompt, answer and no-change lines, and the 20 macro numbers shown as
  `{:.2f}` of the values pandas 2.2.3 reads back from the table text;
- split sidecar, splits/manifest.csv, manifest.csv (written, re-read and rewritten by pandas as
  the reference does), split_config.toml, READY.json's keys;
- eval sample: both cells selected, copied and listed as `select_evalsample.py` does.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from hhx.bench import csvnum
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS
from hhx.tasks.registry import load_task, task_names
from tests.conftest import SHARED

pytestmark = pytest.mark.slow
TASK = "labor_cps_jobfind"
SYSTEM = ("You are an American person answering questions about your work, job search, "
          "and labor-force situation.")
INT_COLUMNS = ["famsize", "nchild", "age", "durunemp_baseline"]
SIDECAR = ["id", "time", "release_date", "split", "split_quarter", "within_period_order",
           "split_position"]


def build(tmp: Path, *overrides: str) -> Path:
    root = tmp / "data" / "householdbench"
    cmd = [sys.executable, "-m", "hhx", "stage=build", f"task={TASK}", "tracking=none",
           f"data.root={root}", f"data.raw_dir={tmp / 'raw'}",
           f"data.intermediate_dir={tmp / 'intermediate'}", "survey.demo.n_households=4000",
           f"hydra.run.dir={tmp / 'run'}", *overrides]
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return root


@pytest.fixture(scope="module", params=["synthetic_macro", "real_fred_qd"])
def release(request, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp(request.param)
    if request.param == "synthetic_macro":
        return build(tmp)
    fred = SHARED / "data" / "fred_qd" / "FRED-QD_vintage_to_2025Q2.csv"
    if not fred.is_file():
        pytest.skip("../shared is absent (the real FRED-QD vintage)")
    return build(tmp, f"data.fred_qd={fred}")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def to_csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode("utf-8")


def text_table(root: Path) -> pd.DataFrame:
    return pd.read_csv(root / "tabular" / f"{TASK}.csv", dtype=str, keep_default_na=False)


def test_table_has_the_official_columns_and_number_text(release):
    task = load_task(TASK)
    table = text_table(release)
    assert list(table.columns) == ["id", "time", "release_date", *task.targets,
                                   *task.prompt_predictors]
    for col in INT_COLUMNS:
        assert table[col].str.fullmatch(r"-?[0-9]+").all(), col
    for col in CORE_MACRO_COLUMNS:  # pandas' float64 text is the shortest repr
        values = table[col]
        assert (values == values.map(lambda t: repr(float(t)))).all(), col
    # the file is what pandas writes for that frame: ints as int64, macro columns as float64
    frame = table.copy()
    for col in INT_COLUMNS:
        frame[col] = frame[col].astype("int64")
    for col in CORE_MACRO_COLUMNS:
        frame[col] = frame[col].astype("float64")
    assert to_csv(frame) == (release / "tabular" / f"{TASK}.csv").read_bytes()


def _macro_numbers(row: dict[str, str]) -> list[str]:
    """The 20 numbers of the core paragraph as the reference shows them (spec 3.4)."""
    out = []
    for series in ("gdp_growth_qoq", "unemployment_rate", "headline_cpi_qoq", "fedfunds_rate"):
        out += [f"{csvnum.precise_xstrtod(row[f'{series}_lag{k}']):.2f}" for k in (4, 3, 2, 1)]
    for col in ("gdp_growth_qoq_5y_compound", "unemployment_rate_5y_mean",
                "headline_cpi_qoq_5y_compound", "fedfunds_rate_5y_mean"):
        out.append(f"{csvnum.precise_xstrtod(row[col]):.2f}")
    return out


def test_prompt_lines_are_the_reference_renderer_s(release):
    table = text_table(release).to_dict("records")
    lines = (release / "prompts" / f"{TASK}.jsonl").read_bytes().splitlines(keepends=True)
    assert len(lines) == len(table)
    for row, line in zip(table, lines, strict=True):
        record = json.loads(line)
        assert list(record) == ["id", "time", "release_date", "system", "user", "assistant",
                                "naive_baseline"]
        assert line == (json.dumps(record, ensure_ascii=True, allow_nan=False) + "\n").encode()
        assert (record["id"], record["time"]) == (row["id"].strip(), row["time"])
        assert record["release_date"] == row["release_date"].strip()[:10]
        assert record["system"] == SYSTEM
        assert record["assistant"] == json.dumps([row["target"].strip()], ensure_ascii=True)
        assert record["naive_baseline"] == '["unemployed"]'
        paragraph = next(p for p in record["user"].split("\n\n")
                         if p.startswith("You are also aware of recent national"))
        # four quarterly paths, oldest first, then the four five-year values
        assert re.findall(r"(-?[0-9]+\.[0-9]{2})%", paragraph) == _macro_numbers(row), row["id"]


def test_sidecar_and_split_manifest_are_the_reference_s(release):
    root = release
    sidecar_path = root / "splits" / f"{TASK}.csv"
    sidecar = pd.read_csv(sidecar_path, dtype=str, keep_default_na=False)
    table = text_table(root)
    assert sidecar[["id", "time", "release_date"]].equals(table[["id", "time", "release_date"]])
    frame = sidecar.astype({"within_period_order": "int64", "split_position": "int64"})
    assert list(frame.columns) == SIDECAR
    assert to_csv(frame) == sidecar_path.read_bytes()
    cutoff = "2026-01-31"
    post = sidecar["release_date"] > cutoff
    summary = {
        "task_id": TASK, "full_eligible_rows": len(sidecar),  # < 500,000 rows: all exported
        "pre_cutoff_eligible_rows": int((~post).sum()),
        "post_cutoff_eligible_rows": int(post.sum()),
        "pre_cutoff_exported_rows": int((~post).sum()),
        "post_cutoff_exported_rows": int(post.sum()),
        "exported_rows": len(sidecar), "fallback_used": False,
    }
    row = {"task_id": TASK, "sidecar_file": f"data/householdbench/splits/{TASK}.csv",
           "sidecar_sha256": sha(sidecar_path), **summary,
           "table_sha256": sha(root / "tabular" / f"{TASK}.csv"),
           "prompt_sha256": sha(root / "prompts" / f"{TASK}.jsonl"),
           "prompt_key_check": "exact_full_jsonl_key_reconciliation"}
    assert to_csv(pd.DataFrame([row])) == (root / "splits" / "manifest.csv").read_bytes()


def test_manifest_is_the_reference_s(release):
    root = release
    task = load_task(TASK)
    records = [json.loads(x) for x in (root / "prompts" / f"{TASK}.jsonl").read_text().splitlines()]
    times = [r["time"][:10] for r in records]
    releases = [r["release_date"][:10] for r in records]
    with (root / "tabular" / f"{TASK}.csv").open(newline="") as fh:
        header = next(csv.reader(fh))
    post = sum(r > "2026-01-31" for r in releases)
    row = {"task_id": TASK, "dataset": "cps", "topic": task.topic, "mode": "Baseline prediction",
           "prompt_file": f"data/householdbench/prompts/{TASK}.jsonl",
           "tabular_file": f"data/householdbench/tabular/{TASK}.csv",
           "tabular_columns": len(header), "min_time": min(times), "max_time": max(times),
           "min_release_date": min(releases), "max_release_date": max(releases),
           "eligible_rows": len(records), "benchmark_rows": len(records),
           "post_cutoff_rows": post, "split_file": ""}
    columns = list(row)
    first = pd.DataFrame([row], columns=columns).to_csv(index=False)
    # add_split_fields_to_main_manifest: re-read, set split_file, write again
    again = pd.read_csv(io.StringIO(first), dtype={"task_id": "string"})
    again["split_file"] = again["task_id"].map(lambda t: f"data/householdbench/splits/{t}.csv")
    assert to_csv(again) == (root / "manifest.csv").read_bytes()


def test_split_config_and_ready(release):
    registry = [load_task(n) for n in task_names()]
    fallback = sorted(t.name for t in registry if t.split_unit.value == "row")
    settings = {"cutoff_date": "2026-01-31", "seed": 42, "train_share": 8 / 10,
                "validation_share": 1 / 10, "pre_cutoff_test_share": 1 / 10,
                "minimum_validation_fallback_rows": 100,
                "minimum_pre_cutoff_test_fallback_rows": 100, "historical_export_cap": 500_000,
                "historical_train_budget": 400_000, "historical_validation_budget": 50_000,
                "historical_pre_cutoff_test_budget": 50_000, "row_fallback_tasks": fallback}
    lines = ["# Generated from scripts/utils/sampling.py and scripts/2_tasks/task_registry.json."]
    lines += [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    lines += [f"\n[tasks.{TASK}]", 'order = "time_typed_id_id"', "typed_id_components = []"]
    assert (release / "splits" / "split_config.toml").read_text() == "\n".join(lines) + "\n"
    raw = (release / "splits" / "READY.json").read_text()
    ready = json.loads(raw)
    assert raw == json.dumps(ready, indent=2, sort_keys=True) + "\n"
    assert ready["fallback_tasks"] == fallback and ready["task_count"] == 1
    assert ready["total_records"] == len(text_table(release))


def _interleave(sizes: list[int], prefix: int) -> list[list[int]]:
    """The scaled-deficit order of spec 5.5: positions per queue (ties -> the last queue)."""
    total, used = sum(sizes), [0] * len(sizes)
    out: list[list[int]] = [[] for _ in sizes]
    for position in range(1, min(prefix, total) + 1):
        deficits = [position * s - u * total if u < s else -(1 << 62)
                    for s, u in zip(sizes, used, strict=True)]
        best = max(deficits)
        q = max(i for i, d in enumerate(deficits) if d == best)
        out[q].append(position)
        used[q] += 1
    return out


def test_eval_sample_is_the_reference_selection(release):
    root = release
    sample = root.parent / "householdbench_evalsample"
    sidecar = pd.read_csv(root / "splits" / f"{TASK}.csv", dtype=str, keep_default_na=False)
    position = sidecar["split_position"].astype(int)
    pre = sidecar.index[(sidecar["split"] == "pre_cutoff_test") & (position <= 200)].tolist()
    post_rows = sidecar[(sidecar["split"] == "post_cutoff_test")
                        & (sidecar["release_date"] > "2026-02-16")]
    quarters = sorted(post_rows["split_quarter"].unique())
    queues = [post_rows[post_rows["split_quarter"] == q].assign(
        o=lambda f: f["within_period_order"].astype(int)).sort_values("o").index.tolist()
        for q in quarters]
    chosen = _interleave([len(q) for q in queues], 200)
    post = sorted(queue[i] for queue, got in zip(queues, chosen, strict=True)
                  for i in range(len(got)))
    lines = (root / "prompts" / f"{TASK}.jsonl").read_bytes().splitlines(keepends=True)
    prompt_sha = sha(root / "prompts" / f"{TASK}.jsonl")
    rows = []
    for cell, indices in (("pre_cutoff", sorted(pre)), ("post_cutoff", post)):
        payload = b"".join(lines[i] for i in indices)
        path = sample / cell / f"{TASK}.jsonl"
        if indices:
            assert path.read_bytes() == payload
        else:
            assert not path.exists()
        rows.append({"task_id": TASK, "split": cell, "rows": len(indices),
                     "requested_rows": 200, "post_cutoff_date": "2026-02-16",
                     "source_split_cutoff_date": "2026-01-31",
                     "source_prompt_file": f"data/householdbench/prompts/{TASK}.jsonl",
                     "source_prompt_sha256": prompt_sha,
                     "source_split_file": f"data/householdbench/splits/{TASK}.csv",
                     "source_split_sha256": sha(root / "splits" / f"{TASK}.csv"),
                     "prompt_file": (f"data/householdbench_evalsample/{cell}/{TASK}.jsonl"
                                     if indices else ""),
                     "prompt_sha256": hashlib.sha256(payload).hexdigest() if indices else ""})
    assert len(pre) == min(200, int((sidecar["split"] == "pre_cutoff_test").sum())) > 0
    assert to_csv(pd.DataFrame(rows)) == (sample / "manifest.csv").read_bytes()
