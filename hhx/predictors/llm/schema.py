"""A task's answer shape: its JSON schema (for constrained decoding) and its token budget.

The schema fixes what a grammar can: the array length, numbers where numbers are expected, the
label enum of each categorical field, probability vectors of the right length within [0, 1].
It cannot make probabilities sum to one; the parser still checks that.

The budget (`answer_tokens`) is an upper bound on the tokens a valid answer takes, from the
answer's shape as the parser knows it (`AnswerSpec`): the longest label of each categorical field,
a generous width per number and per probability, separators and brackets, plus room for a code
fence and whitespace. A token is at least one character of such text, so characters bound tokens.
"""

from __future__ import annotations

import json
from typing import Any

from hhx.config import TargetType, TaskConfig
from hhx.scoring.parser import AnswerSpec

NUMBER_CHARS = 16  # "-1234567.8912345": wider than any survey amount, with decimals
PROBABILITY_CHARS = 8  # "0.333333"
SLACK_TOKENS = 32  # ```json fences, whitespace a grammar allows, the end token


def _array_chars(items: list[int]) -> int:
    return 2 + sum(items) + 2 * max(0, len(items) - 1)  # brackets and ", " separators


def answer_chars(spec: AnswerSpec) -> int:
    """Characters of the longest valid answer (compact JSON with ", " separators)."""
    if spec.shape == "distribution_array":
        return _array_chars([_array_chars([PROBABILITY_CHARS] * len(labels))
                             for labels in spec.labels])
    if spec.target_type == "categorical":
        return _array_chars([max(len(json.dumps(label)) for label in labels)
                             for labels in spec.labels])
    return _array_chars([NUMBER_CHARS] * len(spec.names))


def answer_tokens(spec: AnswerSpec) -> int:
    """The answer budget before any reasoning allowance (decoding.max_tokens=auto)."""
    return answer_chars(spec) + SLACK_TOKENS


def _fixed_array(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}


def answer_schema(task: TaskConfig) -> dict[str, Any]:
    """The answer array's schema (JSON Schema 2020-12 `prefixItems`, one entry per element)."""
    target = TargetType(task.target_type)
    if target is TargetType.distribution:
        vectors = []
        for dist in task.distributions:
            prob = {"type": "number", "minimum": 0, "maximum": 1}
            vectors.append(_fixed_array([prob] * len(dist.labels)))
        return _fixed_array(vectors)
    if target is TargetType.categorical:
        return _fixed_array([{"type": "string", "enum": list(f.labels or [])} for f in task.fields])
    return _fixed_array([{"type": "number"} for _ in task.fields])


def response_format(schema: dict[str, Any], style: str) -> dict[str, Any]:
    """The OpenAI-style `response_format` carrying a schema, in the dialect a server accepts.

    "openai": `json_schema` (not strict: strict mode needs an object at the root, our answers are
    arrays). "llamacpp": `json_object` with a `schema` (llama.cpp answers HTTP 500 to json_schema).
    """
    if style == "llamacpp":
        return {"type": "json_object", "schema": schema}
    if style == "openai":
        return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
    raise ValueError(f"unknown json_schema_style {style!r}; use openai or llamacpp")
