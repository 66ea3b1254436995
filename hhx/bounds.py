"""Value rules declared on the config fields they constrain, the one check that reads them, and
the text of an enum value (`enum_text`).

A field of a config dataclass (hhx/config.py) carries its rule in its metadata:

    k: int = field(default=1, metadata=at_least(1))
    top_p: float | None = field(default=None, metadata=between(0, 1, low_ok=False))
    tie_rule: str = field(default="first_draw", metadata=one_of(TieRule))

`declared(HhxConfig)` collects them by dotted key; hhx/config_check.py checks a composed config
against every rule before any stage, hhx/predictors/llm/settings.py the model, decoding and
aggregation rules when it builds the LLM settings from a config that skipped the app.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import typing
from enum import Enum
from typing import Any

RANGE = "hhx.range"  # (lowest, highest, whether the lowest is allowed); None = unbounded there
CHOICES = "hhx.choices"  # the allowed values, as text


def enum_text(obj: Any) -> str:
    """An enum member's value (a config's Backend, Mode ...), else the object as text."""
    return str(obj.value if hasattr(obj, "value") else obj)


def between(low: float | None, high: float | None, *, low_ok: bool = True) -> dict[str, Any]:
    return {RANGE: (low, high, low_ok)}


def at_least(low: float) -> dict[str, Any]:
    return between(low, None)


def more_than(low: float) -> dict[str, Any]:
    return between(low, None, low_ok=False)


def one_of(values: type[Enum]) -> dict[str, Any]:
    """The field holds one of the enum's values as text (so logs and hashes keep the text)."""
    return {CHOICES: tuple(str(member.value) for member in values)}


def _nested(hint: Any) -> type | None:
    """The config dataclass a field holds (also through `X | None`), else None."""
    options = typing.get_args(hint) or (hint,)
    found = [o for o in options if dataclasses.is_dataclass(o)]
    return found[0] if len(found) == 1 and isinstance(found[0], type) else None


@functools.cache
def declared(schema: type, prefix: str = "") -> dict[str, dict[str, Any]]:
    """dotted key -> the rule metadata of every constrained field under `schema` (read only)."""
    hints = typing.get_type_hints(schema)
    out: dict[str, dict[str, Any]] = {}
    for f in dataclasses.fields(schema):
        key = f"{prefix}{f.name}"
        if RANGE in f.metadata or CHOICES in f.metadata:
            out[key] = dict(f.metadata)
        inner = _nested(hints[f.name])
        if inner is not None:
            out.update(declared(inner, f"{key}."))
    return out


def range_problem(key: str, value: Any, rule: tuple[float | None, float | None, bool]) -> str | None:
    """Why `key=value` is out of its range, in one line (None: it is not, or not a number)."""
    low, high, low_ok = rule
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"{key}={value} must be a finite number"
    shown = f"{value:g}" if isinstance(value, float) else str(value)
    if low is not None and (value < low or (value == low and not low_ok)):
        return f"{key}={shown} must be {'at least' if low_ok else 'more than'} {low:g}"
    if high is not None and value > high:
        return f"{key}={shown} must be at most {high:g}"
    return None


def rule_problem(key: str, value: Any, rule: dict[str, Any]) -> str | None:
    """Why `key=value` breaks its declared rule (None: it keeps it)."""
    if RANGE in rule:
        return range_problem(key, value, rule[RANGE])
    text = enum_text(value)
    if value is not None and text not in rule[CHOICES]:
        return f"{key}={text} is not one of {', '.join(rule[CHOICES])}"
    return None
