"""`python -m hhx` with an LLM, as a user runs it (a subprocess, output piped, not a terminal):
runs below min_coverage are logged FAILED and exit non-zero, the leaderboard never lets a
failed run stand in for a finished one, Ctrl-C stops within 2 s and says how to resume, and
progress lines appear although stdout is not a terminal.

The data is a four-prompt official eval-sample layout (no build); the model is the fault server.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import pytest

from hhx.leaderboard.collect import collect_mlflow, collect_runs_dir, select_runs
from tests.conftest import REPO
from tests.helpers.llm_servers import FaultServer, jobfind_prompt, write_eval_sample

pytestmark = pytest.mark.heavy  # each test starts `python -m hhx` several times
SECRET = "sk-test-hhx-run-0123456789abcdef"


def _cmd(work: Path, url: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "hhx", "model=openai_compatible", "model.name=fault",
            f"model.api_base={url}", "model.max_retries=1", "model.retry_base_s=0.05",
            "data=official", f"data.root={work / 'sample'}", "data.layout=eval_sample",
            "data.split=pre_cutoff", "data.max_examples=null", f"paths.cache_dir={work / 'cache'}",
            f"tracking.uri=sqlite:///{work}/mlflow.db", f"hydra.run.dir={work}/runs/${{now:%H-%M-%S-%f}}",
            *extra]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "OPENAI_COMPATIBLE_API_KEY": SECRET,
            "HYDRA_FULL_ERROR": "0"}


def _run(work: Path, url: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(_cmd(work, url, *extra), cwd=work, env=_env(), capture_output=True,
                          text=True, timeout=600)


def test_low_coverage_fails_the_run_and_the_leaderboard_keeps_the_finished_one(tmp_path):
    users = [jobfind_prompt(0), jobfind_prompt(1), jobfind_prompt(2, " [[fault:500:99]]"),
             jobfind_prompt(3, " [[fault:500:99]]")]
    write_eval_sample(tmp_path / "sample", users)
    with FaultServer() as srv:
        # Half the examples cannot be answered: fine at min_coverage=0.4 ...
        ok = _run(tmp_path, srv.url, "min_coverage=0.4")
        assert ok.returncode == 0, ok.stderr[-2000:]
        # ... a FAILED run at the default (0.9): written, logged, non-zero exit, one line.
        bad = _run(tmp_path, srv.url)
    assert bad.returncode == 2, bad.stderr[-2000:]
    error = [ln for ln in bad.stderr.splitlines() if ln.startswith("hhx: error:")]
    assert len(error) == 1 and "coverage 0.50 < min_coverage 0.9" in error[0]
    assert "server_error x2" in error[0] and "logged FAILED" in error[0]
    assert "Traceback" not in bad.stderr and SECRET not in bad.stdout + bad.stderr

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    found = mlflow.search_runs(experiment_names=["hhx"]).sort_values("start_time")
    assert list(found["status"]) == ["FINISHED", "FAILED"]
    assert "min_coverage" in found["tags.hhx.failure_reason"].iloc[1]
    assert list(found["params.decoding.max_tokens"]) == ["auto", "auto"]

    # An endpoint where every request fails: the run stops early, is recorded FAILED too.
    # These requests carry no seed (openai_compatible), so `None` is the seed that fails.
    with FaultServer(fail_seeds=frozenset({None, 42})) as dead:
        stopped = _run(tmp_path, dead.url, f"paths.cache_dir={tmp_path / 'cache2'}")
        assert len({e["rid"] for e in dead.snapshot()}) == 3  # three calls, not four
    assert stopped.returncode == 2 and "no request has succeeded" in stopped.stderr
    found = mlflow.search_runs(experiment_names=["hhx"]).sort_values("start_time")
    assert list(found["status"]) == ["FINISHED", "FAILED", "FAILED"]
    assert "no request has succeeded" in found["tags.hhx.failure_reason"].iloc[2]

    # The failed runs are the latest, yet the finished one stands for the cell; notes say why.
    for records, notes in (collect_mlflow(f"sqlite:///{tmp_path}/mlflow.db", "hhx"),
                           (collect_runs_dir(tmp_path / "runs"), [])):
        selection = select_runs(records, include_synthetic=True)
        (chosen,) = selection.runs
        assert chosen.status == "FINISHED" and chosen.metrics["coverage_rate"] == 0.5
        assert any("left out" in n and "FAILED" in n or "min_coverage" in n
                   for n in notes + selection.notes)


def test_ctrl_c_stops_within_two_seconds_and_the_same_command_resumes(tmp_path):
    users = [jobfind_prompt(i) for i in range(8)]
    write_eval_sample(tmp_path / "sample", users)
    with FaultServer(latency_s=2.5) as srv:
        cmd = _cmd(tmp_path, srv.url, "model.max_concurrency=2")
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        # Interrupt with two requests in flight, after at least one answer.
        while time.monotonic() < deadline:
            log = srv.snapshot()
            if sum(e["status"] == 200 for e in log) >= 1 and sum(
                    e["status"] == "pending" for e in log) >= 2:
                break
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            time.sleep(0.05)
        time.sleep(0.3)
        sent_at = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
        took = time.monotonic() - sent_at
        assert took < 2.0, (took, err[-1500:])
        assert proc.returncode == 130, err[-2000:]
        line = [ln for ln in err.splitlines() if ln.startswith("hhx: error: interrupted")]
        assert len(line) == 1 and "run the same command again to resume" in line[0], err[-2000:]
        # Progress lines although stdout is a pipe: the first one, and the one at the stop.
        assert "fault: 8 requests to send" in out and "requests (" in out, out[-2000:]
        cached = int(line[0].split("interrupted: ")[1].split(" of")[0])
        assert 1 <= cached < 8 and "of 8 requests answered and cached" in line[0]

        first_log = len(srv.snapshot())
        done = subprocess.run(cmd, cwd=tmp_path, env=_env(), capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        resumed = srv.snapshot()[first_log:]
        assert len(resumed) == 8 - cached  # only what the cache lacked
