"""Hand-built PSID worlds for the PSID task tests: a few persons and their waves, written as the
two release archives (the synthetic generator's writer), built by hhx.surveys.psid.shelf with a
release-date crosswalk, and a macro context whose values are simple functions of the quarter."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import SurveyConfig
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS, KEY_COLUMNS, PSID_ASSET_MACRO_COLUMNS
from hhx.surveys.psid import shelf as psid
from hhx.surveys.psid.main_study import DEFAULT_VARIABLE_MAP, EXPECTED_WAVES, read_variable_map
from hhx.surveys.synthetic.macro.release_dates import synthetic_psid_crosswalk, write_crosswalk
from hhx.surveys.synthetic.psid import shelf as synth
from hhx.tasks.context import BuildContext
from hhx.tasks.registry import load_task

WAVES = list(EXPECTED_WAVES)
VARMAP = read_variable_map(DEFAULT_VARIABLE_MAP)


class World:
    """Rows of the long file and Complete Main Study values, added person by person."""

    def __init__(self) -> None:
        self.rows: dict[tuple[int, int], dict[str, Any]] = {}
        self.main: dict[int, dict[str, float]] = {}
        self._fuid = 0

    def person(self, pid: int, *, sex: int = 1, birth: int = 1940, race: int = 1,
               sampstat: int = 1, lineage: float | None = None) -> None:
        """A person, absent (panel_current 0) in every wave until `wave()` places them."""
        lineage = float(pid // 1000) if lineage is None else lineage
        for wave in WAVES:
            self.rows[(pid, wave)] = {"id": pid, "year": wave, "rel": 0, "sampstat": sampstat,
                                      "lineage": lineage, "response": 1, "panel_current": 0,
                                      "demo_sex": sex, "demo_birth_year": birth,
                                      "race_eth_maj_col": race}
        self.main.setdefault(pid, {})

    def family(self, wave: int, members: dict[int, int], **values: Any) -> int:
        """Current rows of a family-wave: members {pid: rel}; `values` go to every member's row
        (family measures) unless given per person as {pid: value}."""
        self._fuid += 1
        for pid, rel in members.items():
            row = self.rows[(pid, wave)]
            row.update(fuid=self._fuid, rel=rel, response=0, panel_current=1, fw=1.0,
                       demo_age_gen=float(wave - row["demo_birth_year"]), geo_region=1,
                       geo_metro=1, home_stat=2, fam_partnered=float(2 in members.values()),
                       fam_married=float(2 in members.values()), fam_size=float(len(members)),
                       fam_size_chi=0.0, race_eth_maj_col=row["race_eth_maj_col"])
            for key, value in values.items():
                row[key] = value[pid] if isinstance(value, dict) else value
        return self._fuid

    def main_values(self, pids: Iterable[int], **values: float) -> None:
        """Complete Main Study V-variables (family values: give every current member)."""
        for pid in pids:
            self.main[pid].update(values)

    # ----------------------------------------------------------------------------------------
    def frames(self) -> synth.PsidWorld:
        shelf = pd.DataFrame(list(self.rows.values()))
        for column in synth.SHELF_COLUMNS:
            if column not in shelf.columns:
                shelf[column] = np.nan
        shelf = synth._shelf_types(shelf)
        names = sorted({n for s in VARMAP.values() for n in (s.variable, s.accuracy) if n},
                       key=lambda v: int(v[1:]))
        ids = sorted(self.main)
        columns: dict[str, Any] = {
            "ER30000": np.ones(len(ids), dtype=np.int8),
            "ER30001": np.array([i // 1000 for i in ids], dtype=np.int16),
            "ER30002": np.array([i % 1000 for i in ids], dtype=np.int16),
            "ID": np.array(ids, dtype=np.int32)}
        for name in names:
            columns[name] = np.array([float(self.main[i].get(name, np.nan)) for i in ids])
        main = pd.DataFrame(columns)
        return synth.PsidWorld(shelf=shelf, main_study=main, families=pd.DataFrame(),
                               variable_map=VARMAP)

    def build(self, folder: Path) -> Path:
        """Archives + crosswalk -> psid_main.parquet in `folder/inter`; returns that folder."""
        long_zip, main_zip = synth.write_psid_archives(self.frames(), folder / "l.zip",
                                                       folder / "m.zip")
        crosswalk = write_crosswalk(folder / "release_psid.csv", synthetic_psid_crosswalk(seed=3),
                                    seed=3)
        survey = SurveyConfig(name="psid", raw={"shelf_long": str(long_zip),
                                                "main_study": str(main_zip),
                                                "release_dates": str(crosswalk)})
        psid.build(survey, folder, folder / "inter")
        return folder / "inter"


def release_date(wave: int) -> str:
    table = synthetic_psid_crosswalk(seed=3)
    return str(table.loc[table["year"] == wave, "release_date"].iloc[0])


def macro_value(column: str, origin: int) -> float:
    """The test macro context: a distinct value per column and origin quarter."""
    k = ([*CORE_MACRO_COLUMNS, *PSID_ASSET_MACRO_COLUMNS].index(column) + 1)
    return round(k * 0.25 + (origin % 40) * 0.01, 2)


def macro_context(first: int = 1960, last: int = 2030) -> pd.DataFrame:
    quarters = np.arange(first * 4 + 1, last * 4 + 5)
    frame = pd.DataFrame({"eligible_origin_q_index": quarters,
                          "macro_reference_q_index": quarters - 1,
                          "macro_reference_year": (quarters - 1 - 1) // 4,
                          "macro_reference_quarter": (quarters - 1 - 1) % 4 + 1,
                          "macro_reference_date": "x"})
    for column in [*CORE_MACRO_COLUMNS, *PSID_ASSET_MACRO_COLUMNS]:
        frame[column] = [macro_value(column, int(q)) for q in quarters]
    assert set(KEY_COLUMNS) <= set(frame.columns)
    return frame


def context(task: str, inter: Path) -> BuildContext:
    return BuildContext(load_task(task), inter, macro_context())


def spread(values: list[float]) -> Callable[[int], float]:
    """i -> values[i]: filler families that set the yearly cutoffs around the tested ones."""
    return lambda i: values[i]


def main_study(world: World, pids: Iterable[int], wave: int, *, codes: dict[str, float] | None = None,
               **values: float) -> None:
    """Complete Main Study values of one wave on each of `pids`' records: `values` keyed
    <concept>_<role> (e.g. annual_hours_rp=2000, food_at_home_family=3000), accuracy code 0;
    `codes`: job-end reason codes keyed the same way (job_end_reason_employed_rp=3)."""
    for pid in pids:
        for key, value in values.items():
            concept, role = key.rsplit("_", 1)
            spec = VARMAP[(concept, role, wave)]
            world.main[pid][spec.variable] = value
            if spec.accuracy:
                world.main[pid][spec.accuracy] = 0.0
        for key, code in (codes or {}).items():
            concept, role = key.rsplit("_", 1)
            world.main[pid][VARMAP[(concept, role, wave)].variable] = code
