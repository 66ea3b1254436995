"""K draws -> one answer (paper section 5.2): means for numbers and probability vectors, majority
vote for labels.

Only valid draws (already parsed by the strict parser) are aggregated. Each answer element is
aggregated on its own: a 4-field categorical answer takes the majority of each field.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from hhx.config import TieRule
from hhx.scoring.parser import AnswerSpec


def mean_numbers(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def mean_vectors(vectors: Sequence[Sequence[float]]) -> list[float]:
    """Element-wise mean; a mean of probability vectors is itself one (it stays on the simplex)."""
    width = len(vectors[0])
    return [mean_numbers([v[i] for v in vectors]) for i in range(width)]


def majority_vote(labels: Sequence[Any], allowed: Sequence[Any], tie_rule: str) -> Any:
    """The most frequent label. Ties are broken deterministically:

    - "first_draw": the tied label that appears earliest among the draws (draw order is fixed by
      the draw index, so the result is reproducible and not biased toward any label);
    - "label_order": the tied label listed first in the task's label set.
    """
    rules = [rule.value for rule in TieRule]
    if tie_rule not in rules:
        raise ValueError(f"unknown tie rule {tie_rule!r}; use one of {', '.join(rules)}")
    counts: dict[Any, int] = {}
    first_seen: dict[Any, int] = {}
    for pos, label in enumerate(labels):
        counts[label] = counts.get(label, 0) + 1
        first_seen.setdefault(label, pos)
    top = max(counts.values())
    tied = [label for label, c in counts.items() if c == top]
    if tie_rule == "first_draw":
        return min(tied, key=lambda label: first_seen[label])
    order = {label: i for i, label in enumerate(allowed)}
    return min(tied, key=lambda label: order.get(label, len(order)))


def aggregate(spec: AnswerSpec, parsed: Sequence[list], tie_rule: str = "first_draw") -> list:
    """Aggregate the parsed values of the valid draws (at least one) into one answer."""
    if not parsed:
        raise ValueError("aggregate() needs at least one valid draw")
    n_elems = len(spec.names)
    if spec.target_type == "categorical":
        return [
            majority_vote([p[i] for p in parsed], spec.labels[i], tie_rule) for i in range(n_elems)
        ]
    if spec.target_type == "distribution":
        return [mean_vectors([p[i] for p in parsed]) for i in range(n_elems)]
    return [mean_numbers([p[i] for p in parsed]) for i in range(n_elems)]
