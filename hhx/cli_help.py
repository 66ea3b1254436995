"""`hhx --help`: stages, config groups (read from conf/), examples — without importing Hydra,
MLflow or XGBoost, so it answers at once. Hydra's own help stays behind `--hydra-help`."""

from __future__ import annotations

from pathlib import Path

from hhx.catalog import STAGES
from hhx.paths import conf_dir

EXAMPLES = (
    ("hhx", "XGBoost vs no-change on labor_cps_jobfind, synthetic demo data"),
    ("hhx task=cons_sce_growth model=no_change", "another task and model"),
    ("hhx stage=list", "what can run here"),
    ("hhx stage=fetch data=official", "download the official eval sample (README 'Real data')"),
    ("hhx stage=describe task=labor_cps_ui", "a task's definition, metric and an example"),
    ("hhx data=official data.root=/path/to/release data.max_examples=200 task=cons_sce_growth",
     "the official release (max_examples is required there: a number or null for all)"),
    ("hhx stage=build task=all", "build every task hhx can build"),
    ("hhx --multirun task=labor_cps_jobfind,labor_cps_ui model=xgboost,no_change",
     "a sweep: one job per task x model"),
    ("hhx stage=score task=<t> score.gold=<prompts.jsonl> score.predictions=<preds.jsonl> "
     "score.split=pre_cutoff_test", "score predictions made elsewhere"),
    ("hhx stage=leaderboard", "the leaderboard and report of the runs so far"),
    ("hhx task=<own task> task_path=[/abs/my_tasks]",
     "a task of your own from its folder (examples/own_task; marked not official; task=own)"),
    ("hhx --cfg job task=labor_cps_ui", "print the composed config, run nothing"),
)


def config_groups(root: Path | None = None) -> dict[str, list[str]]:
    """group -> its options (YAML files under conf/, nested groups as `a/b`)."""
    root = root or conf_dir()
    groups: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.yaml")):
        rel = path.relative_to(root)
        if len(rel.parts) < 2 or rel.parts[0] == "hydra":
            continue
        groups.setdefault("/".join(rel.parts[:-1]), []).append(path.stem)
    return groups


def help_text() -> str:
    lines = ["hhx: evaluate LLMs and classical references on HouseholdBench.", "",
             "usage: hhx [-v] [--multirun] [--cfg job] [key=value ...]   (or: python -m hhx ...)",
             "  -v, --verbose: libraries' messages on the console too (always in the run's app.log)",
             "",
             "Stages (stage=<name>):"]
    lines += [f"  {stage.name:<12} {stage.help}" for stage in STAGES]
    lines += ["", "Config groups (group=option; any key: group.key=value):"]
    for group, options in config_groups().items():
        shown = ", ".join(options) if len(options) <= 8 else (
            ", ".join(options[:6]) + f", ... ({len(options)} in all; hhx stage=list)")
        lines.append(f"  {group:<22} {shown}")
    lines += ["", "Examples:"]
    for cmd, what in EXAMPLES:
        lines += [f"  {cmd}", f"      {what}"]
    lines += ["", "Paths: data, run folders and mlflow.db live under one project root: $HHX_ROOT, "
              "else the enclosing", "  hhx working copy (or folder holding a .hhx-root file), "
              "else the current folder (paths.root=...).",
              "  MLFLOW_TRACKING_URI is used when tracking.uri is not given.",
              "Tab completion (bash): eval \"$(hhx -sc install=bash)\"",
              "Hydra's own help: hhx --hydra-help"]
    return "\n".join(lines)
