"""`stage=score`: score predictions made anywhere, in the official formats, like the reference scorer.

    python -m hhx stage=score task=<t> score.gold=<prompts.jsonl> score.predictions=<preds.jsonl> \
        score.output=<result.json>
    python -m hhx stage=score task=<t> score.split=pre_cutoff_test score.predictions=<preds.jsonl>

The result file is the reference scorer's, byte for byte (`hhx.scoring.result_json`: sorted keys,
indent 2, NaN/Infinity as Python's json writes them); `score.include_details=false` drops
`details` as its `--no-details` does. Unreadable inputs are one-line errors, never tracebacks.

`score.split=<split>` (hhx's addition; unset = the reference's behaviour) scores against the
split's evaluated rows as `data` selects them (`data.max_examples`, the eval-sample rule): without
`score.gold` the gold rows come from the configured data; with it, the gold file is cut to those
rows. When fewer than `score.min_match` of the gold rows have a prediction the stage warns, and
with `score.fail_below_min_match=true` exits 1 (a result file is still written).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from hhx.errors import ConfigError, HhxError
from hhx.scoring import score_task, write_result
from hhx.scoring.parser import ScoringError
from hhx.scoring.scorer import load_jsonl
from hhx.tasks.registry import as_task

GOLD_KEYS = ["id", "time", "release_date", "system", "user", "assistant", "naive_baseline"]


class FewMatches(HhxError):
    """Fewer predictions match gold keys than score.min_match asks for."""

    exit_code = 1


def split_gold(cfg: DictConfig, task: Any, split: str,
               gold: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The split's evaluated rows (from the configured data), or the gold file cut to them."""
    from hhx.tasks.sources import load_bench

    bench = load_bench(cfg.data, task, cfg.get("survey"))
    examples = bench.eval_examples(split, cfg.data.max_examples)
    if gold is None:
        return examples[GOLD_KEYS].to_dict("records")
    keys = set(zip(examples["id"].astype(str), examples["time"].astype(str), strict=True))
    kept = [g for g in gold if (str(g.get("id")), str(g.get("time"))) in keys]
    if not kept:
        raise ConfigError(f"score.split={split}: none of the {len(gold)} gold rows of "
                          f"{cfg.score.gold} is among the {len(keys)} rows of that split in "
                          f"{bench.root}; check score.gold and data.root")
    return kept


def run(cfg: DictConfig) -> dict[str, Any]:
    task = as_task(cfg.task)
    sc = cfg.score
    split = sc.get("split")
    if not sc.predictions:
        raise ConfigError("stage=score needs score.predictions=<path to a JSONL file>")
    if not sc.gold and not split:
        raise ConfigError("stage=score needs score.gold=<path to a JSONL file> or "
                          "score.split=<split> (its rows from the configured data)")
    gold = load_jsonl(sc.gold, "gold") if sc.gold else None
    if split:
        gold = split_gold(cfg, task, str(split), gold)
    assert gold is not None
    preds = load_jsonl(sc.predictions, "predictions")
    try:
        result = score_task(
            task, gold, preds,
            prediction_field=sc.prediction_field,
            repair_number_formatting=bool(sc.repair_number_formatting),
            repair_distribution_nesting=bool(sc.repair_distribution_nesting),
            include_details=bool(sc.include_details),
        )
    except ScoringError as exc:
        where = {"gold": sc.gold or f"score.split={split}", "predictions": sc.predictions}.get(
            exc.side or "")
        if where is None:
            raise
        raise ScoringError(f"{where}: {exc}", side=exc.side) from None
    if sc.output:
        write_result(Path(sc.output), result)
    summary = {k: v for k, v in result.items() if k not in ("details", "valid_example_ids",
                                                            "invalid_examples")}
    print(json.dumps(summary, indent=2))
    coverage = float(result.get("coverage_rate") or 0.0)
    min_match = float(sc.get("min_match", 0.9))
    if coverage < min_match:
        matched = round(coverage * result["num_examples"])
        line = (f"only {matched} of {result['num_examples']} gold rows have a prediction "
                f"(coverage {coverage:.3f} < score.min_match {min_match:g}); "
                f"{result['num_extra_predictions']} predictions match no gold row. Scored against "
                "the wrong rows? Set score.split=<split> (and data.max_examples) to score only the "
                "rows that were evaluated")
        if sc.get("fail_below_min_match"):
            raise FewMatches(line)
        print(f"hhx: warning: {line}", file=sys.stderr)
    return {"primary_score": result["metrics"].get("primary_score"), "result": result}
