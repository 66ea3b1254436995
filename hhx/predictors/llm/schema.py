"""JSON schema of a task's answer, for optional constrained decoding.

The schema fixes what a grammar can: the array length, numbers where numbers are expected, the
label enum of each categorical field, probability vectors of the right length within [0, 1].
It cannot make probabilities sum to one; the parser still checks that.
"""

from __future__ import annotations

from typing import Any

from hhx.config import TargetType, TaskConfig


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
