"""The steps of `stage=evaluate` (hhx/stages/evaluate.py), one module each, in the order it runs
them: `plan` (the `EvalRun` read once from the config), `load` (the task and its evaluated rows),
`predict`, `scoring` (the official scorer, metrics, coverage), `record` (files, run_info.json,
MLflow) and `report` (the console table and the run's markdown note)."""
