"""`stage=fetch` against a local stand-in of the Hugging Face Hub (tests/helpers/hub_stub.py; HF_ENDPOINT
points at it, no network): the eval sample and the full release land in the layouts
`data=official` reads, a rerun downloads nothing, offline mode asks nothing of the Hub, and a
truncated or corrupted file, a task the release does not ship and an unreachable Hub are one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hhx.bench import catalog as cat
from tests.helpers.hub_stub import HubStub

REPO = Path(__file__).resolve().parents[2]
TASK = "cons_sce_growth"
OTHER = "house_sce_move"


def prompt_lines(n: int) -> bytes:
    rows = []
    for i in range(n):
        rows.append({"id": f"h{i}", "time": f"20{15 + i % 9}-0{1 + i % 9}-01",
                     "release_date": "2024-03-15", "system": "You predict spending growth.",
                     "user": f"Household {i}. Predict the growth in percent.",
                     "assistant": f"[{(i % 7) - 3}.0]", "naive_baseline": f"[{i % 3}.0]"})
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def eval_repo() -> dict[str, bytes]:
    files = {"manifest.csv": b"task_id,split,rows\n", "LICENSE.md": b"terms\n",
             "README.md": b"card\n", ".gitattributes": b"*.jsonl lfs\n",
             "data/pre_cutoff-00000.parquet": b"PAR1 viewer copy"}
    for task in cat.downloadable_tasks():
        for rel in cat.eval_sample_files(task):
            files[rel] = prompt_lines(12 if task == TASK else 3)
    return files


def full_repo() -> dict[str, bytes]:
    files = {"householdbench/manifest.csv": b"task_id\n", "LICENSE.md": b"terms\n",
             "householdbench/splits/manifest.csv": b"task_id\n",
             "raw/release_dates/release_sce.csv": b"a,b\n1,2\n",
             "raw/micro/sce/core/x.xlsx": b"xlsx bytes"}
    for task in (TASK, OTHER):
        for rel in cat.release_files(task):
            files[f"householdbench/{rel}"] = f"{task} {rel}\n".encode()
    return files


@pytest.fixture
def hub():
    with HubStub({cat.EVAL_REPO: eval_repo(), cat.FULL_REPO: full_repo()},
                 lfs={f"pre_cutoff/{TASK}.jsonl"}) as stub:
        yield stub


def hhx(tmp_path: Path, hub: HubStub | None, *args: str, offline: bool = False,
        timeout: float = 120, token: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HOME": str(tmp_path / "hf_home"),
           "HF_HUB_DISABLE_TELEMETRY": "1"}
    for name in ("HF_HUB_CACHE", "HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        env.pop(name, None)
    if token:
        env["HF_TOKEN"] = token
    env["HF_ENDPOINT"] = hub.url if hub is not None else "http://127.0.0.1:9"
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run([sys.executable, "-m", "hhx", *args, "tracking=none",
                           f"paths.root={tmp_path}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def errors(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.strip()]


def test_fetch_eval_sample_then_evaluate_it_and_a_rerun_downloads_nothing(tmp_path, hub):
    proc = hhx(tmp_path, hub, "stage=fetch", "data=official")
    assert proc.returncode == 0, proc.stderr
    root = tmp_path / "data" / "official" / "householdbench_evalsample"
    assert (root / "pre_cutoff" / f"{TASK}.jsonl").read_bytes() == prompt_lines(12)
    assert (root / "post_cutoff" / f"{TASK}.jsonl").is_file()
    assert (root / "manifest.csv").is_file() and (root / "LICENSE.md").is_file()
    assert not (root / "data").exists() and not (root / ".gitattributes").exists()
    assert {p.stem for p in (root / "pre_cutoff").glob("*.jsonl")} == set(cat.downloadable_tasks())
    assert "ETA" in proc.stdout and "data.layout=eval_sample" in proc.stdout
    assert not [line for line in proc.stderr.splitlines() if "Traceback" in line]

    got = len(hub.requests)
    again = hhx(tmp_path, hub, "stage=fetch", "data=official")
    assert again.returncode == 0, again.stderr
    assert "0 to download" in again.stdout
    assert not [r for r in hub.requests[got:] if "/resolve/" in r[1]]  # nothing downloaded

    run = hhx(tmp_path, None, "data=official", f"data.root={root}", "data.layout=eval_sample",
              "data.split=pre_cutoff", "data.max_examples=200", f"task={TASK}",
              "model=no_change")
    assert run.returncode == 0, run.stderr
    assert "relmae" in run.stdout.lower()


def test_fetch_full_release_of_one_task_and_the_supplied_raw_inputs(tmp_path, hub):
    proc = hhx(tmp_path, hub, "stage=fetch", "data=official", "+fetch.release=full",
               f"task={OTHER}", "+fetch.raw=true", token="hf_test_token")
    assert proc.returncode == 0, proc.stderr
    assert "Bearer hf_test_token" in hub.auth  # HF_TOKEN goes with the requests
    assert (tmp_path / "hf_home" / "hub").is_dir()  # the Hub cache under HF_HOME
    root = tmp_path / "data" / "official" / "householdbench"
    for rel in cat.release_files(OTHER):
        assert (root / rel).read_bytes() == f"{OTHER} {rel}\n".encode()
    assert not (root / "prompts" / f"{TASK}.jsonl").exists()  # not selected
    assert (root / "manifest.csv").is_file() and (root / "splits" / "manifest.csv").is_file()
    assert (root / "LICENSE.md").read_bytes() == b"terms\n"  # the dataset's notices
    raw = tmp_path / "data" / "raw"  # data=raw's raw_dir
    assert (raw / "release_dates" / "release_sce.csv").read_bytes() == b"a,b\n1,2\n"
    assert (raw / "micro" / "sce" / "core" / "x.xlsx").is_file()
    assert json.loads((root / "hhx_fetch.json").read_text())["repo"] == cat.FULL_REPO


def test_offline_mode_asks_nothing_and_says_what_is_here(tmp_path, hub):
    assert hhx(tmp_path, hub, "stage=fetch", "data=official", f"task={TASK}").returncode == 0
    got = len(hub.requests)
    proc = hhx(tmp_path, hub, "stage=fetch", "data=official", offline=True)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("fetch: offline (HF_HUB_OFFLINE=1)")
    assert "1 of 17 tasks complete" in lines[0]
    assert len(hub.requests) == got


@pytest.mark.parametrize("fault", ["cut", "corrupt"])
def test_a_truncated_or_corrupted_file_is_one_line_and_the_next_run_repairs_it(
        tmp_path, hub, fault):
    name = f"pre_cutoff/{TASK}.jsonl"
    if fault == "cut":
        hub.cut[name] = 100
    else:
        hub.corrupt.add(name)
    proc = hhx(tmp_path, hub, "stage=fetch", "data=official", f"task={TASK}")
    assert proc.returncode != 0
    assert errors(proc) == [errors(proc)[0]] and name in errors(proc)[0]
    assert "run the same command again" in errors(proc)[0]
    dest = tmp_path / "data" / "official" / "householdbench_evalsample" / name
    assert not dest.exists()  # nothing half-written in the layout
    hub.cut.clear()
    hub.corrupt.clear()
    assert hhx(tmp_path, hub, "stage=fetch", "data=official", f"task={TASK}").returncode == 0
    assert dest.read_bytes() == prompt_lines(12)


def test_a_task_the_release_does_not_ship_and_an_unreachable_hub_are_one_line(tmp_path, hub):
    proc = hhx(tmp_path, hub, "stage=fetch", "data=official", "task=labor_cps_jobfind")
    assert proc.returncode != 0 and len(errors(proc)) == 1
    assert "data=raw" in errors(proc)[0] and "IPUMS" in errors(proc)[0]
    proc = hhx(tmp_path, hub, "stage=fetch", "data=official", "+fetch.relase=full")
    assert len(errors(proc)) == 1 and "did you mean fetch.release" in errors(proc)[0]
    del hub.files[cat.EVAL_REPO][f"pre_cutoff/{OTHER}.jsonl"]  # the Hub's layout changed
    proc = hhx(tmp_path, hub, "stage=fetch", "data=official")
    assert len(errors(proc)) == 1 and f"has no pre_cutoff/{OTHER}.jsonl" in errors(proc)[0]
    assert not (tmp_path / "data" / "official").exists()  # checked before any download
    proc = hhx(tmp_path, None, "stage=fetch", "data=official", timeout=60)
    assert proc.returncode != 0 and len(errors(proc)) == 1
    assert "cannot reach the Hugging Face Hub" in errors(proc)[0]
