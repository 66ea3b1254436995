"""A new backend is one module, one catalog entry and one YAML (ARCHITECTURE.md, "A new
predictor backend"), settings of its own included.

The contributor's three touch points are made here outside the repository: the module
`majority_backend.py` (a predictor answering the train split's most frequent label, with a
setting of its own, `model.label`, in a ModelConfig subclass beside it), the `BackendSpec` a
contributor adds to `BACKENDS` in hhx/catalog.py (added by a launcher before hhx's config is
imported, which is when the `Backend` enum is read from the table) and `conf/model/majority.yaml`
(on Hydra's search path). Then the real `python -m hhx` entry point runs it on a demo task: it
predicts, is scored, tracked with its own setting as a param, and the setting is its models' only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest

from hhx.bench.layout import load_bench_task
from hhx.tasks.registry import load_task

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
TASK = "labor_cps_jobfind"

MODULE = '''
"""The train split's most frequent answer (a backend added the way a contributor adds one)."""
from __future__ import annotations

import json
from dataclasses import dataclass

from hhx.config import ModelConfig
from hhx.predictors.protocol import PredictionRow


@dataclass
class MajorityConfig(ModelConfig):
    label: str | None = None  # answer this label instead of the train split's most frequent


class Majority:
    name = "majority"

    def __init__(self, label):
        self.label = label

    def fit(self, task):
        if self.label is None:
            train = task.split_frame("train", cap=None)
            self.label = str(train[task.spec.targets[0]].value_counts().idxmax())
        return self

    def predict(self, task, examples):
        return [PredictionRow(id=str(r.id), time=str(r.time), prediction=[self.label])
                for r in examples.itertuples(index=False)]

    def save(self, out_dir):
        return []

    def run_metrics(self):
        return {}


def make(cfg):
    return Majority(cfg.model.label)
'''

ENTRY = '''
"""What a contributor adds to hhx/catalog.py's BACKENDS; then `python -m hhx`."""
from hhx import catalog

catalog.BACKENDS["majority"] = catalog.BackendSpec(
    "majority", "majority_backend:make", catalog.Kind.fits,
    catalog.Resources(gpus=0, cpus=1, mem_gb=4, time_min=30), needs="nothing (CPU)",
    settings="majority_backend:MajorityConfig", tagged=("label",))

from hhx.app import main  # noqa: E402  (after the entry: the Backend enum reads the table)

main()
'''

YAML = """\
defaults:
  - /schema/model/majority@_here_
  - _self_
name: majority
backend: majority
description: the train split's most frequent label (a contributor's new backend)
"""


@pytest.fixture(scope="module")
def contributor(tmp_path_factory) -> Path:
    """The module, the entry and the YAML, in a folder of their own."""
    root = tmp_path_factory.mktemp("new_backend")
    (root / "majority_backend.py").write_text(MODULE)
    (root / "launch.py").write_text(ENTRY)
    (root / "conf" / "model").mkdir(parents=True)
    (root / "conf" / "model" / "majority.yaml").write_text(YAML)
    return root


def hhx(root: Path, *overrides: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "HYDRA_FULL_ERROR": "0", "HHX_NO_PROGRESS": "1",
           "PYTHONPATH": os.pathsep.join([str(root), str(REPO), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, str(root / "launch.py"), f"tracking.uri=sqlite:///{root}/mlflow.db",
           f"hydra.searchpath=[file://{root / 'conf'}]", f"task={TASK}", *overrides]
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(overrides)} failed ({proc.returncode}):\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def predictions(root: Path, folder: str) -> list[list[str]]:
    (run_dir,) = (root / "outputs").rglob(folder)
    lines = (run_dir / "predictions" / f"{TASK}.jsonl").read_text().splitlines()
    return [json.loads(line)["prediction"] for line in lines]


def test_a_new_backend_with_a_setting_of_its_own_runs_end_to_end(contributor):
    hhx(contributor, "model=majority", "data.max_examples=40")
    bench = load_bench_task(contributor / "data" / "demo" / "householdbench", load_task(TASK))
    train = bench.split_frame("train", cap=None)
    counts = train[bench.spec.targets[0]].value_counts()
    majority, other = str(counts.index[0]), str(counts.index[-1])
    assert majority != other
    assert predictions(contributor, f"*_evaluate_{TASK}_majority") == [[majority]] * 40

    # its own setting: an override, a param in MLflow, and a result of its own
    hhx(contributor, "model=majority", f"model.label={other}", "data.max_examples=40",
        "hydra.run.dir=outputs/other")
    assert predictions(contributor, "other") == [[other]] * 40
    mlflow.set_tracking_uri(f"sqlite:///{contributor}/mlflow.db")
    found = mlflow.search_runs(experiment_names=["hhx"])
    found = found[found["tags.hhx.backend"] == "majority"]
    assert sorted(found["params.model.label"].fillna("")) == sorted(["None", other])
    assert sorted(found["tags.hhx.majority.label"].fillna("")) == sorted(["", other])  # tagged
    assert set(found["status"]) == {"FINISHED"}
    result = json.loads(next((contributor / "outputs" / "other" / "result").glob("*.json"))
                        .read_text())
    assert result["task"] == TASK


def test_its_setting_is_its_models_only(contributor):
    """Another backend's model does not take `model.label`: one line naming the key."""
    proc = hhx(contributor, "model=no_change", "model.label=x", check=False)
    assert proc.returncode != 0
    assert "label" in proc.stderr and "Traceback" not in proc.stderr
