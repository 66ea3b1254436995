"""A newcomer's mistakes, through `python -m hhx` as they type them: each is one line on stderr
(with "did you mean" where a close name exists), exits non-zero and leaves no run folder, sweep
folder or MLflow store behind (nothing ran). An open-weight model without its weights stops in
seconds with the network blocked, without asking the hub."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def hhx(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "HYDRA_FULL_ERROR": "0", "PYTHONPATH": str(REPO), "HHX_ROOT": str(root),
            **(env or {})}
    full.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.run([sys.executable, "-m", "hhx", *args], cwd=root, env=full,
                          capture_output=True, text=True, timeout=600)


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith("hhx: error: ") and proc.returncode != 0
    return lines[0]


def left_nothing(root: Path) -> None:
    left = sorted(p.name for p in root.iterdir())
    assert not {"outputs", "multirun", "mlflow.db"} & set(left), left


MISTAKES = [
    (("task=labor_cps_jobfnd",), "did you mean task=labor_cps_jobfind?"),
    (("model=no_chang",), "did you mean model=no_change?"),
    (("data.max_exampls=5",), "did you mean data.max_examples=5?"),
    (("modle=no_change",), "did you mean model=no_change?"),
    (("stage=evaluat",), "did you mean stage=evaluate?"),
    (("data=offical",), "did you mean data=official?"),
    (("model=openai_compatible",), "model.name is required"),
    (("stage=describe", "task=labor_cps_jobfnd"), "did you mean task=labor_cps_jobfind?"),
    (("model.xgbost.threads=1",), "did you mean model.xgboost.threads=1?"),
    (("data.max_examples=many",), "data.max_examples=many: not a valid integer"),
    (("task=no_such_task",), "one of: cons_cex_categories,"),  # no close name: every task
]


@pytest.mark.parametrize(("args", "expected"), MISTAKES, ids=[" ".join(a) for a, _ in MISTAKES])
def test_a_mistake_is_one_line_with_the_closest_name_and_leaves_nothing(tmp_path, args, expected):
    proc = hhx(tmp_path, *args)
    line = one_error_line(proc)
    assert expected in line, line
    assert "+modle" not in line and "Traceback" not in proc.stderr
    left_nothing(tmp_path)


def test_a_misspelt_sweep_value_is_one_line_and_leaves_no_sweep_folder_or_run(tmp_path):
    import sqlite3

    line = one_error_line(hhx(tmp_path, "--multirun", "model=no_chang,xgboost"))
    assert "did you mean model=no_change?" in line
    assert not (tmp_path / "multirun").exists() and not (tmp_path / "outputs").exists()
    if (tmp_path / "mlflow.db").exists():  # the sweep prepares the store first: no run in it
        with sqlite3.connect(tmp_path / "mlflow.db") as db:
            assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0


def test_a_required_setting_names_what_it_is(tmp_path):
    line = one_error_line(hhx(tmp_path, "model=openai_compatible"))
    assert "model=openai_compatible needs it: the served model name" in line
    assert "add model.name=<value>" in line


def test_an_unset_api_key_is_one_line_before_any_run_is_opened(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    line = one_error_line(hhx(tmp_path, "model=gpt_5_mini"))
    assert "OPENAI_API_KEY is not set" in line
    left_nothing(tmp_path)  # no FAILED MLflow run, no run folder: nothing was attempted


class Trap:
    """A local 'hub' that accepts connections and counts them (none may come)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()


def closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return sock.getsockname()[1]


NETWORKS = {  # HF_HUB_OFFLINE=0: whatever the caller's shell says, only the case's own counts
    "offline flag": lambda trap: {"HF_HUB_OFFLINE": "1",
                                  "HF_ENDPOINT": f"http://127.0.0.1:{trap.port}"},
    "no network, no flag": lambda trap: {"HF_HUB_OFFLINE": "0",
                                         "HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}"},
    "hub reachable": lambda trap: {"HF_HUB_OFFLINE": "0",
                                   "HF_ENDPOINT": f"http://127.0.0.1:{trap.port}"},
}


@pytest.mark.parametrize("network", list(NETWORKS))
def test_open_weights_missing_stop_in_seconds_without_asking_the_hub(tmp_path, network):
    trap = Trap()
    env = {**NETWORKS[network](trap), "HF_HOME": str(tmp_path / "hf"), "CUDA_VISIBLE_DEVICES": "",
           "HF_HUB_CACHE": str(tmp_path / "hf" / "hub")}
    started = time.monotonic()
    proc = hhx(tmp_path, "task=labor_cps_jobfind", "model=qwen35_4b", env=env)
    seconds = time.monotonic() - started
    line = one_error_line(proc)
    print(f"{network}: stopped after {seconds:.1f} s")  # measured: ~3 s beside a busy machine
    for part in ("model qwen35_4b", "Qwen/Qwen3.5-4B", str(tmp_path / "hf" / "hub"),
                 "model.model_path=<folder with config.json>", "download Qwen/Qwen3.5-4B",
                 "no CUDA device here"):
        assert part in line, line
    assert trap.connections == 0  # the hub was never asked (no retries, online or not)
    assert "huggingface_hub" not in proc.stderr and "retry" not in proc.stderr.lower()
    # before the demo data is built or MLflow opened: nothing is left behind
    left_nothing(tmp_path)
    assert not (tmp_path / "data").exists()
    # a generous ceiling (the promise is ~10 s): a busy machine must not fail the test
    assert seconds < 60, seconds


def test_a_model_path_that_does_not_exist_is_named(tmp_path):
    proc = hhx(tmp_path, "model=qwen35_4b", f"model.model_path={tmp_path}/nowhere",
               env={"HF_HUB_OFFLINE": "1"})
    line = one_error_line(proc)
    assert f"model.model_path={tmp_path}/nowhere: no such folder" in line
    left_nothing(tmp_path)


def test_weights_in_the_hf_cache_or_a_folder_pass(tmp_path, monkeypatch):
    from omegaconf import OmegaConf

    from hhx.errors import PredictorError
    from hhx.predictors.llm.weights_check import check_local_weights

    hub = tmp_path / "hub"
    snap = hub / "models--org--tiny" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (hub / "models--org--tiny" / "refs").mkdir()
    (hub / "models--org--tiny" / "refs" / "main").write_text("abc123")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(hub))
    model = OmegaConf.create({"name": "tiny", "model_id": "org/tiny", "model_path": None})
    check_local_weights(model, "transformers")  # found in the cache: no error
    with pytest.raises(PredictorError, match="weights for org/other not found"):
        check_local_weights(OmegaConf.merge(model, {"model_id": "org/other"}), "vllm")
    check_local_weights(OmegaConf.merge(model, {"model_path": str(snap)}), "vllm")


CTRL_C = {  # (arguments, what says the dry run is under way: its first line; it builds nothing)
    "basic launcher": (("experiment=paper_main",), "dry run: pricing"),
    "joblib workers": (("hydra/launcher=joblib", "model=no_change,xgboost",
                        "task=labor_cps_jobfind,labor_cps_ui"), "dry run: pricing"),
}


@pytest.mark.parametrize("case", list(CTRL_C))
def test_ctrl_c_in_a_dry_run_is_one_line_and_leaves_no_sweep_folder(tmp_path, case):
    args, ready = CTRL_C[case]
    env = {**os.environ, "HYDRA_FULL_ERROR": "0", "PYTHONPATH": str(REPO),
           "HHX_ROOT": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hhx", "--multirun", *args, "+dry_run=true", "tracking=none"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # until it is under way (a generous ceiling: the timeout)
        assert first.startswith(ready), (first, proc.communicate()[1][-2000:])
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C goes to the terminal's whole process group
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # hhx's own progress lines may come first; then one line and nothing else (no traceback,
    # no worker's warning)
    lines = [ln for ln in err.splitlines() if ln.strip() and " elapsed" not in ln]
    assert len(lines) == 1 and "hhx: error: interrupted (Ctrl-C)" in lines[0], err[-3000:]
    assert proc.returncode == 130
    assert not (tmp_path / "multirun").exists() and not (tmp_path / "outputs").exists()
