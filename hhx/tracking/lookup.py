"""Find runs already in MLflow: the FINISHED run of a sweep cell (resume), by its identity tag."""

from __future__ import annotations

from dataclasses import dataclass, field

CELL_TAG = "hhx.cell_key"


@dataclass
class FoundRun:
    run_id: str
    metrics: dict[str, float] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)


def finished_cells(uri: str, experiment: str, keys: list[str]) -> dict[str, FoundRun]:
    """cell key -> its latest FINISHED run, for the keys found (an absent experiment: none)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None or not keys:
        return {}
    found: dict[str, FoundRun] = {}
    # MLflow's filter grammar has no IN for tags: one query per key (a job looks up its own).
    for key in dict.fromkeys(keys):
        runs = client.search_runs(
            [exp.experiment_id],
            filter_string=f"tags.`{CELL_TAG}` = '{key}' and attributes.status = 'FINISHED'",
            order_by=["attributes.start_time DESC"],
            max_results=1,
        )
        if runs:
            run = runs[0]
            found[key] = FoundRun(run.info.run_id, dict(run.data.metrics), dict(run.data.tags))
    return found
