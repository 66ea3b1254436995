"""The demo's housing-wave names and the lock-in universe they give (house_sce_lockin reads the
loan status from the first of qh5, HQH5 that the housing table has at all, as the reference)."""

from __future__ import annotations

from hhx.surveys.sce.items import HOUSING_YEARS
from hhx.surveys.synthetic.sce.microdata import LOCKIN_YEARS, _housing_names, _panel
from hhx.tasks.sce.house_sce_lockin import CANONICAL, ORDINARY


def test_only_the_lockin_waves_use_the_lower_case_names():
    for year in HOUSING_YEARS:
        names = _housing_names(year)
        lock = year in LOCKIN_YEARS
        assert ("lock" in names) == lock
        assert names["loan"] == ("qh5" if lock else "HQH5"), year
        assert names["rate"] == ("qh5m2_1" if lock else "HQH5m2_1"), year
        assert names["move"] in ORDINARY
        for concept, canonical in (("local", "local_home_value"), ("price", "purchase_price"),
                                   ("value", "current_home_value"), ("balance", "loan_balance"),
                                   ("partner", "partnered"), ("loan", "loan_status")):
            assert names[concept] in CANONICAL[canonical], (year, concept)
    assert _housing_names(2014)["local"] == "HQ1_1"  # the 2014 codebook's names


def test_lockin_entrants_join_in_the_lockin_februaries_only():
    import numpy as np

    first, last = 2022 * 12, 2024 * 12 + 5
    base = _panel(np.random.default_rng(1), first, last, 2)
    more = _panel(np.random.default_rng(1), first, last, 2, lockin_entrants=5)
    assert base.equals(more.iloc[: len(base)])  # regular cohorts unchanged
    extra = more.iloc[len(base):]
    entry = extra[extra["tenure"] == 1]["month_index"]
    assert sorted(entry.unique()) == [2023 * 12 + 1, 2024 * 12 + 1]
    assert len(entry) == 10


def test_xgboost_names_distribution_outputs_by_their_seeded_group():
    from hhx.predictors.xgboost import outputs_for
    from hhx.tasks.registry import load_task

    for name in ("house_sce_lockin", "house_sce_move", "labor_sce_risk"):
        task = load_task(name)
        assert sorted(o.name for o in outputs_for(task)) == sorted(task.xgb_seeds), name
