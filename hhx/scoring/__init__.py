"""Scoring: the strict official parser, the metrics and the scorer (reference-compatible)."""

from hhx.scoring.metrics import compute_metrics
from hhx.scoring.parser import ParseResult, ScoringError, error_code, parse_answer
from hhx.scoring.scorer import describe, result_json, score_files, score_task, write_result

__all__ = [
    "ParseResult",
    "ScoringError",
    "compute_metrics",
    "describe",
    "error_code",
    "parse_answer",
    "score_files",
    "result_json",
    "score_task",
    "write_result",
]
