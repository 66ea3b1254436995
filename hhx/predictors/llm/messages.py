"""Prompt records -> chat messages: only `system` and `user` are ever sent to a model."""

from __future__ import annotations

import pandas as pd

from hhx.errors import DataError

REQUIRED_COLUMNS = ("id", "time", "system", "user")

Messages = list[dict[str, str]]


def build_messages(examples: pd.DataFrame, source: str = "examples") -> list[Messages]:
    """One [system, user] message list per row; a missing column or empty user text is an error.

    The reference answer (`assistant`) and `naive_baseline` never reach the model.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in examples.columns]
    if missing:
        raise DataError(
            f"{source}: prompt records lack column(s) {', '.join(missing)}; "
            f"expected the official prompt-record columns {', '.join(REQUIRED_COLUMNS)}"
        )
    out: list[Messages] = []
    for pos, (rid, system, user) in enumerate(
        zip(examples["id"], examples["system"], examples["user"], strict=True)
    ):
        if not isinstance(user, str) or not user.strip():
            raise DataError(f"{source}: row {pos} (id={rid}) has an empty `user` prompt")
        messages: Messages = []
        if isinstance(system, str) and system.strip():
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": user})
        out.append(messages)
    return out
