"""Predictors as plain functions: `predict(rows, **params) -> list`, one answer per row.

    python -m hhx task=labor_cps_jobfind model=custom \
        model.target=examples.custom_predictor.rules.short_spells_find_work

`rows` is a DataFrame of the evaluated examples (id, time, release_date, system, user,
naive_baseline, split, split_position) with the task table's predictors beside them; the gold
answer is not in it. An answer is what the official scorer reads: a list with one element per
answer field (`[label]` or `[number]`), or one probability vector per distribution.
"""

from __future__ import annotations

import json

import pandas as pd


def no_change(rows: pd.DataFrame) -> list:
    """The no-change baseline again: each row's `naive_baseline`, as it is."""
    return [json.loads(text) for text in rows["naive_baseline"]]


def short_spells_find_work(rows: pd.DataFrame, weeks: int = 4) -> list:
    """labor_cps_jobfind: `employed` after an unemployment spell of at most `weeks` weeks, else
    the no-change answer (`+model.params.weeks=10` changes the threshold)."""
    answers = []
    for baseline, spell in zip(rows["naive_baseline"], rows["durunemp_baseline"], strict=True):
        short = pd.notna(spell) and float(spell) <= weeks
        answers.append(["employed"] if short else json.loads(baseline))
    return answers
