"""The strict official answer parser (spec 00_common.md section 7.1).

A response is valid only if it is exactly the task's answer array: same length, numbers where
numbers are expected, labels from the task's label set (case-sensitive), probability vectors that
lie in [0, 1] and sum to one within 1e-6. Error strings are the official ones, byte for byte,
because users compare `error_counts` with the reference scorer's. Two repairs exist, both opt-in
and both tried only after the strict parse failed, so they can only turn invalid rows valid.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from dataclasses import dataclass
from typing import Any

from hhx.config import Shape, TargetType, TaskConfig
from hhx.errors import DataError
from hhx.scoring.extract import NESTING_TOO_DEEP, extract, scalar_run

PROBABILITY_SUM_TOLERANCE = 1e-6
THINK_CLOSE = "</think>"

# `$`, and a comma between a digit and exactly three digits. This also matches the real element
# separator in compact "[3333,2576,757]", which is why the repair only runs after a strict failure.
_CURRENCY = re.compile(r"\$")
_THOUSANDS_COMMA = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_SEPARATORS = " \t\r\n,"
_DECODER = json.JSONDecoder()


class ScoringError(DataError, ValueError):
    """Unscorable input (bad gold row, duplicate prediction ids...): one line, no traceback.

    A ValueError too, as the reference scorer raises ValueError for the same conditions.
    `side` says which input is at fault ("gold" or "predictions") so file-level callers can
    name the file.
    """

    def __init__(self, message: str, side: str | None = None) -> None:
        super().__init__(message)
        self.side = side


@dataclass
class ParseResult:
    valid: bool
    value: list | None
    error: str | None
    repaired: bool = False


@dataclass(frozen=True)
class AnswerSpec:
    """The parts of a task that parsing and metrics need, as immutable tuples (built once)."""

    task: str
    target_type: str  # numeric | categorical | distribution
    shape: str  # array | distribution_array
    names: tuple[str, ...]  # fields or distributions, in answer order
    labels: tuple[tuple[Any, ...], ...]  # per element; () for numeric fields


def answer_spec(task: TaskConfig | AnswerSpec) -> AnswerSpec:
    """Condense a TaskConfig (or a Hydra DictConfig of one) into an AnswerSpec."""
    if isinstance(task, AnswerSpec):
        return task
    if not isinstance(task, TaskConfig):
        from hhx.tasks.registry import as_task  # local: registry imports omegaconf machinery

        task = as_task(task)
    target_type = TargetType(task.target_type).value
    shape = Shape(task.shape).value
    if target_type == "distribution":
        names = tuple(d.name for d in task.distributions)
        labels = tuple(tuple(d.labels) for d in task.distributions)
    else:
        names = tuple(f.name for f in task.fields)
        labels = tuple(tuple(f.labels or ()) for f in task.fields)
    if not names:
        raise ScoringError(f"task {task.name}: no answer fields or distributions configured")
    return AnswerSpec(task.name, target_type, shape, names, labels)


# --------------------------------------------------------------------------------------------
# Extraction of one JSON value from model text


def strip_think(text: str) -> str:
    """Keep what follows the FIRST `</think>` (no opening tag needed), trimmed."""
    if THINK_CLOSE in text:
        text = text.split(THINK_CLOSE, 1)[1]
    return text.strip()


def extract_json_value(raw: Any) -> Any:
    """Return the JSON value a response holds; non-strings are returned unchanged.

    Whole text first; else the first list/object found by decoding at every `[`, `{` or `"`
    (so markdown fences and prose around the answer are tolerated); else the first decodable
    string; else the text itself (which then fails the type checks). An integer literal beyond
    Python's digit limit at any of those starts makes the answer invalid (ValueError, as in the
    reference); nesting beyond the decoder's limit is `nesting_too_deep`. Linear time
    (`hhx.scoring.extract`).
    """
    if not isinstance(raw, str):
        return raw
    text = strip_think(raw.strip())
    if not text:
        raise ValueError("empty_response")
    return extract(text)


# --------------------------------------------------------------------------------------------
# Validation of a decoded value (raises ValueError with the official error string)


def _is_number(value: Any) -> bool:
    # JSON gives int/float; numpy scalars (in-memory predictions) are Real too. bool never counts.
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _number(value: Any, name: str) -> float:
    if not _is_number(value):
        raise ValueError(f"{name}:expected_number")
    try:
        number = float(value)
    except OverflowError:  # an integer beyond the float range (the reference crashes here)
        raise ValueError(f"{name}:non_finite_number") from None
    if not math.isfinite(number):
        raise ValueError(f"{name}:non_finite_number")
    return number


def _label(value: Any, name: str, labels: tuple[Any, ...]) -> Any:
    if isinstance(value, str):
        label: Any = value
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        label = int(value)
    elif isinstance(value, float) and value.is_integer():
        label = int(value)
    else:
        raise ValueError(f"{name}:expected_categorical_label")
    if label not in labels:
        allowed = ",".join(str(x) for x in labels)
        raise ValueError(f"{name}:invalid_label:{label!r};allowed={allowed}")
    return label


def _validate_array(decoded: Any, spec: AnswerSpec) -> list:
    if not isinstance(decoded, list):
        raise ValueError("expected_json_array")
    if len(decoded) != len(spec.names):
        raise ValueError(f"expected_{len(spec.names)}_array_elements")
    if spec.target_type == "categorical":
        return [_label(v, n, lab) for v, n, lab in zip(decoded, spec.names, spec.labels)]
    return [_number(v, n) for v, n in zip(decoded, spec.names)]


def _validate_distributions(decoded: Any, spec: AnswerSpec) -> list:
    if not isinstance(decoded, list):
        raise ValueError("expected_distribution_array")
    if len(decoded) != len(spec.names):
        raise ValueError(f"expected_{len(spec.names)}_distributions")
    out: list[list[float]] = []
    for vector, name, labels in zip(decoded, spec.names, spec.labels):
        if not isinstance(vector, list):
            raise ValueError(f"{name}:expected_probability_vector")
        if len(vector) != len(labels):
            raise ValueError(f"{name}:expected_{len(labels)}_probabilities")
        probs: list[float] = []
        for v in vector:  # type, finiteness and range checked value by value, in order
            p = _number(v, name)
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"{name}:probability_out_of_range")
            probs.append(p)
        # Built-in sum (Neumaier-compensated since 3.12), as the reference; no renormalisation.
        if not math.isclose(sum(probs), 1.0, rel_tol=0.0, abs_tol=PROBABILITY_SUM_TOLERANCE):
            raise ValueError(f"{name}:probabilities_must_sum_to_one")
        out.append(probs)
    return out


def validate_value(decoded: Any, spec: AnswerSpec) -> list:
    """Check a decoded JSON value against the answer format; return it normalised."""
    if spec.shape == "distribution_array":
        return _validate_distributions(decoded, spec)
    return _validate_array(decoded, spec)


def _strict(raw: Any, spec: AnswerSpec) -> ParseResult:
    try:
        value = validate_value(extract_json_value(raw), spec)
    except ValueError as exc:
        return ParseResult(False, None, str(exc))
    return ParseResult(True, value, None)


# --------------------------------------------------------------------------------------------
# Opt-in repairs


def _top_level_lists(text: str, most: int) -> list[list] | None:
    """The lists among the consecutive JSON values separated by whitespace/commas (decoding
    stops at the first position that does not decode), or None once there are more than
    `most` (then no renesting can fit). Runs of scalars are skipped by one regular expression
    that accepts exactly what the decoder would decode there, so the scan stays linear."""
    skip: Any = scalar_run()  # matches everywhere (possibly empty): its match is never None
    lists: list[list] = []
    i, n = 0, len(text)
    while i < n:
        i = skip.match(text, i).end()
        while i < n and text[i] in _SEPARATORS:
            i += 1
        if i >= n:
            break
        try:
            value, i = _DECODER.raw_decode(text, i)
        except json.JSONDecodeError:
            break
        if isinstance(value, list):
            lists.append(value)
            if len(lists) > most:
                return None
    return lists


def _renest(text: str, spec: AnswerSpec) -> list | None:
    """Rebuild a distribution answer that lost its outer list, or None if ambiguous.

    Accepts one top-level vector per distribution with the right lengths, or one flat vector
    whose length is the sum of the lengths (split in order). Never truncates or pads.
    """
    sizes = [len(labels) for labels in spec.labels]
    vectors = _top_level_lists(text, max(len(sizes), 1))
    if vectors is None:
        return None
    if len(vectors) == len(sizes) and all(len(v) == k for v, k in zip(vectors, sizes)):
        return vectors
    if len(vectors) == 1 and len(vectors[0]) == sum(sizes):
        flat, out = vectors[0], []
        for k in sizes:
            out.append(flat[:k])
            flat = flat[k:]
        return out
    return None


def repair_number_text(text: str) -> str:
    """Drop `$` and thousands separators ("[-$21,000]" -> "[-21000]")."""
    return _THOUSANDS_COMMA.sub("", _CURRENCY.sub("", text))


# --------------------------------------------------------------------------------------------
# Public entry points


def parse_answer(
    task: TaskConfig | AnswerSpec,
    raw: Any,
    *,
    repair_number_formatting: bool = False,
    repair_distribution_nesting: bool = False,
) -> ParseResult:
    """Parse one response. Repairs only run on a string that failed strict parsing."""
    spec = answer_spec(task)
    result = _strict(raw, spec)
    if result.valid or not isinstance(raw, str):
        return result
    if repair_distribution_nesting and spec.shape == "distribution_array":
        try:
            rebuilt = _renest(strip_think(raw.strip()), spec)
        except (ValueError, RecursionError):  # a value the decoder refuses: nothing to renest
            rebuilt = None
        if rebuilt is not None:
            try:
                return ParseResult(True, validate_value(rebuilt, spec), None, repaired=True)
            except ValueError:
                return result  # still invalid: the original error explains the response better
    if repair_number_formatting and spec.target_type == "numeric":
        fixed = repair_number_text(raw)
        if fixed != raw:
            retry = _strict(fixed, spec)
            if retry.valid:
                return ParseResult(True, retry.value, None, repaired=True)
    return result


def parse_gold(task: TaskConfig | AnswerSpec, raw: Any) -> list:
    """Parse a reference answer (`assistant`) strictly; failure is an input error."""
    spec = answer_spec(task)
    result = _strict(raw, spec)
    if not result.valid or result.value is None:
        raise ScoringError(f"Invalid gold answer for {spec.task}: {result.error}", side="gold")
    return result.value


def parse_naive_baseline(task: TaskConfig | AnswerSpec, raw: Any) -> list:
    """Parse a numeric task's no-change answer (`naive_baseline`) strictly."""
    spec = answer_spec(task)
    if spec.target_type != "numeric":
        raise ScoringError(
            f"Invalid naive baseline request for {spec.task}: naive baselines are parsed only "
            f"for numeric tasks (this one is {spec.target_type})"
        )
    result = _strict(raw, spec)
    if not result.valid or result.value is None:
        raise ScoringError(f"Invalid naive baseline for {spec.task}: {result.error}", side="gold")
    return result.value


# Error families for counting across tasks and fields.
_SCORER_CODES = {"missing_prediction", "time_mismatch", "empty_response", "expected_json_array",
                 "expected_distribution_array", NESTING_TOO_DEEP}
_SIZED = re.compile(r"^expected_\d+_(array_elements|distributions|probabilities)$")


def error_code(error: str) -> str:
    """Map a detailed error to its family: field prefix, label detail and counts dropped.

    `labor_force_status:invalid_label:'x';allowed=...` -> `invalid_label`;
    `expected_3_array_elements` -> `expected_n_array_elements`;
    `inflation_1y:expected_10_probabilities` -> `expected_n_probabilities`;
    the scorer's response-field errors -> `missing_response_field`; Python's "Exceeds the
    limit (4300 digits) ..." -> `integer_too_long`.
    """
    if error in _SCORER_CODES:
        return error
    if error.startswith("Prediction row has no"):
        return "missing_response_field"
    if error.startswith("Exceeds the limit"):  # Python's int() digit limit, reached in the JSON
        return "integer_too_long"
    _, sep, rest = error.partition(":")
    code = rest.split(":", 1)[0] if sep else error
    match = _SIZED.match(code)
    if match:
        return f"expected_n_{match.group(1)}"
    return code
