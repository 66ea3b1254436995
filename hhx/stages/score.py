"""`stage=score`: score predictions made anywhere, in the official formats, like the reference scorer.

    python -m hhx stage=score task=<t> score.gold=<prompts.jsonl> score.predictions=<preds.jsonl> \
        score.output=<result.json>

The result file is the reference scorer's, byte for byte (`hhx.scoring.result_json`: sorted keys,
indent 2, NaN/Infinity as Python's json writes them); `score.include_details=false` drops
`details` as its `--no-details` does. Unreadable inputs are one-line errors, never tracebacks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from hhx.errors import ConfigError
from hhx.scoring import score_files, write_result
from hhx.tasks.registry import as_task


def run(cfg: DictConfig) -> dict[str, Any]:
    task = as_task(cfg.task)
    sc = cfg.score
    for key in ("gold", "predictions"):
        if not sc[key]:
            raise ConfigError(f"stage=score needs score.{key}=<path to a JSONL file>")
    result = score_files(
        task,
        Path(sc.gold),
        Path(sc.predictions),
        prediction_field=sc.prediction_field,
        repair_number_formatting=bool(sc.repair_number_formatting),
        repair_distribution_nesting=bool(sc.repair_distribution_nesting),
        include_details=bool(sc.include_details),
    )
    if sc.output:
        write_result(Path(sc.output), result)
    summary = {k: v for k, v in result.items() if k not in ("details", "valid_example_ids",
                                                            "invalid_examples")}
    print(json.dumps(summary, indent=2))
    return {"primary_score": result["metrics"].get("primary_score"), "result": result}
