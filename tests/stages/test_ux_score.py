"""stage=score by split: the split's evaluated rows as gold, a warning (or exit 1 with the flag)
when few predictions match gold keys. In-process on a toy release (tests/bench/test_layout.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from hhx.config import DataConfig, DataSource, HhxConfig, ScoreConfig
from hhx.stages import score as score_stage
from tests.bench.test_layout import toy_release, toy_task


def cfg_for(root: Path, **score: object):
    cfg = OmegaConf.structured(HhxConfig)
    cfg.task = OmegaConf.structured(toy_task())
    cfg.data = OmegaConf.structured(DataConfig(source=DataSource.official, root=str(root),
                                               max_examples=20))
    cfg.score = OmegaConf.structured(ScoreConfig(**score))
    return cfg


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def release(tmp_path: Path):
    root = tmp_path / "hb"
    parts = toy_release(root, toy_task())
    return root, parts


def whole_gold_and_20_predictions(tmp_path, root, parts):
    prompts = parts["prompts"]
    gold = write_jsonl(tmp_path / "gold.jsonl", prompts.to_dict("records"))
    from hhx.bench.layout import load_bench_task

    bench = load_bench_task(root, toy_task(), source="official", synthetic=True)
    first = bench.eval_examples("pre_cutoff_test", 20)
    preds = write_jsonl(tmp_path / "preds.jsonl", [
        {"id": r.id, "time": r.time, "prediction": json.loads(r.assistant)}
        for r in first.itertuples()])
    return gold, preds


def test_whole_prompt_file_as_gold_warns_that_few_predictions_match(tmp_path, release, capsys):
    root, parts = release
    gold, preds = whole_gold_and_20_predictions(tmp_path, root, parts)
    out = score_stage.run(cfg_for(root, gold=str(gold), predictions=str(preds)))
    err = capsys.readouterr().err
    assert out["result"]["num_examples"] == len(parts["prompts"]) > 20
    assert "warning: only 20 of" in err and "score.split" in err


def test_fail_flag_exits_non_zero(tmp_path, release):
    root, parts = release
    gold, preds = whole_gold_and_20_predictions(tmp_path, root, parts)
    with pytest.raises(score_stage.FewMatches) as info:
        score_stage.run(cfg_for(root, gold=str(gold), predictions=str(preds),
                                fail_below_min_match=True))
    assert info.value.exit_code == 1 and "only 20 of" in str(info.value)


def test_split_scores_only_the_evaluated_rows(tmp_path, release, capsys):
    root, parts = release
    gold, preds = whole_gold_and_20_predictions(tmp_path, root, parts)
    for kw in ({"gold": str(gold)}, {}):  # gold cut to the split, or taken from the data
        out = score_stage.run(cfg_for(root, predictions=str(preds), split="pre_cutoff_test",
                                      fail_below_min_match=True, **kw))
        result = out["result"]
        assert result["num_examples"] == 20 and result["coverage_rate"] == 1.0
        assert result["valid_response_rate"] == 1.0 and out["primary_score"] == 1.0
    assert "warning" not in capsys.readouterr().err
