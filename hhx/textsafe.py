"""Model text that every UTF-8 writer accepts (Arrow, MLflow, the console).

A model may answer with an unpaired surrogate (`"\\ud800"` as a JSON escape, or raw bytes a lenient
client decoded with `surrogateescape`). Python strings hold it, and the scorer scores it as the
official parser would (it reads the same Python string); JSON writers escape it (`\\ud800`, lossless).
But Arrow, SQLite text and `print` need valid UTF-8 and raise `UnicodeEncodeError`. Such text is
written with each unencodable code point as its `\\uXXXX` escape: text that encodes is unchanged,
byte for byte, so ordinary answers are untouched.
"""

from __future__ import annotations

from typing import Any


def encodable(text: str) -> str:
    """`text`, with every code point UTF-8 cannot encode (lone surrogates) as `\\udXXX`."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def encodable_tree(value: Any) -> Any:
    """`encodable` applied to every string inside nested dicts, lists and tuples."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        return {encodable_tree(k): encodable_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(encodable_tree(v) for v in value)
    return value
