"""examples/quickstart.ipynb runs, top to bottom, on a real Jupyter kernel (nbclient + ipykernel
from the dev lock), in a project root of its own: so the notebook the README points to never goes
stale. Its outputs are checked for what each section promises (scores of the two references, the
user's own predictor, the few-shot variant labelled as such, the leaderboard ranking all of them,
a figure)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "examples" / "quickstart.ipynb"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("nbclient") is None
                       or importlib.util.find_spec("llama_cpp") is None,
                       reason="nbclient and llama-cpp-python come with `bash setup.sh --dev`"),
]


def _text(cell: dict) -> str:
    """Everything a code cell showed: streams, results (plain text and HTML), errors."""
    parts = []
    for out in cell.get("outputs", []):
        parts.append(out.get("text", ""))
        data = out.get("data", {})
        parts += [data.get("text/plain", ""), data.get("text/html", "")]
    return "\n".join(p if isinstance(p, str) else "".join(p) for p in parts)


def test_the_quickstart_notebook_runs_and_shows_what_it_promises(tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    root = tmp_path / "project"
    root.mkdir()
    (root / ".hhx-root").write_text("")
    work = tmp_path / "examples"
    shutil.copytree(REPO / "examples", work)
    monkeypatch.setenv("HHX_ROOT", str(root))  # the kernel inherits it: data, runs, MLflow there
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("HHX_PROGRESS", "0")
    # the root's own MLflow store, as a reader's kernel has it (not the test session's variable)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)

    nb = nbformat.read(work / NOTEBOOK.name, as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=900,
                   resources={"metadata": {"path": str(work)}}).execute()

    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    shown = {c.source.splitlines()[0]: _text(c) for c in code}
    everything = "\n".join(shown.values())

    assert "labor_cps_jobfind" in everything and "SYNTHETIC" in everything.upper()
    assert "ridge_of_mine" in everything
    assert "few_shot k=3" in everything  # the variant's label, never the official model's name

    # what the notebook's runs left in its root: an MLflow store, the leaderboard ranking them all
    assert (root / "mlflow.db").is_file() and (root / "mlruns").is_dir()
    assert not (work / "mlruns").exists()  # artifacts beside the store, not in the notebook's folder
    board = root / "outputs" / "leaderboard"
    ranks = (board / "leaderboard.csv").read_text()
    for model in ("no_change", "xgboost", "ridge_of_mine", "smollm2_135m [few_shot k=3]"):
        assert model in ranks, (model, ranks)
    assert (board / "figures" / "task_labor_cps_jobfind.png").stat().st_size > 10_000
    summary = json.loads((board / "leaderboard.json").read_text())
    assert summary.get("synthetic") is True
    # the committed notebook carries no outputs (it is run here, not stored run)
    stored = json.loads(NOTEBOOK.read_text())
    assert all(not c.get("outputs") for c in stored["cells"] if c["cell_type"] == "code")


def test_the_readmes_python_blocks_run_as_written(tmp_path):
    """The README's Python API and "Your own predictor" blocks, in order, in a fresh interpreter
    whose project root is a folder of its own: what a reader copies works."""
    import re
    import subprocess
    import sys

    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"),
                        re.S)
    assert len(blocks) >= 2 and "hhx.evaluate" in blocks[0] and "RidgeOfMine" in blocks[1]
    script = tmp_path / "readme_blocks.py"
    script.write_text("\n".join(blocks) + "\nprint('ranked:', sorted(board.ranks['model']))\n")
    root = tmp_path / "project"
    root.mkdir()
    env = {**__import__("os").environ, "HHX_ROOT": str(root), "PYTHONPATH": str(REPO),
           "HHX_PROGRESS": "0"}
    env.pop("MLFLOW_TRACKING_URI", None)  # the root's own store, as a reader has it
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ranked:" in done.stdout and "xgboost" in done.stdout
    assert (root / "outputs" / "leaderboard" / "leaderboard.csv").is_file()
    assert (root / "mlflow.db").is_file() and not (tmp_path / "mlruns").exists()
