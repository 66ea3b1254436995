"""NY Fed Survey of Consumer Expectations public microdata (core + topical modules) -> parquet.

Facts: shared/spec/00_common.md 1.3 (SCE row), 1.8 and 2 (SCE release rule); the SCE tasks of
10_tasks (12-17, 19) and 20_tasks (0.6, 7-10, 12-13) read the outputs.

Inputs (`survey.raw`, relative to data.raw_dir; conf/survey/sce.yaml): the nine NY Fed workbooks
of spec 1.8, read with openpyxl in read-only mode:

| key | module | sheet(s) | header row (0-based) | id / date / weight |
|---|---|---|---|---|
| core_13_16, core_17_19, core_20_24, core_latest | core | `Data` | 1 | userid / date / weight |
| household_spending | household_spending | `Data` | 1 | userid / date / - |
| labor_market | labor_market | `Data` | 1 | userid / date / - |
| public_policy | public_policy | `Data` | 10 | userid / date / - |
| housing | housing | `Data {year}`, `Codebook {year}` 2014-24 | 0 | userid / year*100+2 / weights |
| job_search | job_search | `Data` | 0 | userid / year*100+10 / survey_weight |

A key set to null or '' skips that workbook on purpose (e.g. `survey.raw.core_latest=null`);
a key that names a file that is not there is an error naming the file. At least one core
workbook is required. The key `release_crosswalk` names the reference's `release_sce.csv`
(validated by hhx.surveys.macro.release_dates as the reference's reader does), which then supplies
release_date and release_date_source; it must cover every module-month read. When that file is
absent (or the key null) the build says so in one line and uses the lag rule (the reference's
builder stops).

Outputs, one row per respondent x survey month per module (`sce_<module>.parquet`), the
reference builder's (`scripts/1_preprocessing/sce.py`) columns and rules, each part documented
in the module that makes it:
- hhx.surveys.sce.items: the workbook specs, item tables and label maps;
- hhx.surveys.sce.workbook: reading the workbooks and sheets (every workbook column as read);
- hhx.surveys.sce.structural: the structural columns and release dates;
- hhx.surveys.sce.derived: the companion, density, label and module-specific columns, the core
  weights of the modules and the one-row-per-respondent-month check.

`sce_release_manifest.parquet`: one row per raw file, as upstream (release_id and release_date
of its latest row, the sources used, survey months covered, download URL, SHA-256); the notes
text is hhx's own.

Difference from the reference: a workbook can be skipped on purpose (null key: that module gets
no table).
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.surveys.base import (
    BuildReport,
    input_sha256,
    raw_path,
    sidecar_path,
    write_outputs,
)
from hhx.surveys.macro.release_dates import optional_crosswalk
from hhx.surveys.sce.derived import (
    add_core_derived,
    attach_core_weights,
    check_unique,
    finish_module,
    housing_codebook_labels,
)
from hhx.surveys.sce.items import BY_KEY, MODULE_URLS, MODULES, RELEASE_DATE_STATUS, WORKBOOKS
from hhx.surveys.sce.structural import ReleaseCrosswalk, _concat, _slug, structural
from hhx.surveys.sce.workbook import Piece, _read_all

MANIFEST_NAME = "sce_release_manifest"


# ---------------------------------------------------------------------------------------------
# Build


MANIFEST_COLUMNS = [
    "source", "release_id", "release_date", "official_release_date", "release_date_source",
    "release_date_status", "release_date_unit", "microdata_release_lag_months",
    "reference_period_start", "reference_period_end", "module", "raw_file", "download_url",
    "sha256", "task_ready", "leakage_ready", "notes",
]  # fmt: skip


def manifest_rows(table: pd.DataFrame, paths: dict[str, Path]) -> pd.DataFrame:
    """One row per raw file (the reference's `sce_release_manifest`): latest row-level release
    date, the sources used, the survey months covered, the file's SHA-256."""
    rows = []
    for (module, raw_file), part in table.groupby(["module", "raw_file"], sort=True):
        release = str(part["release_date"].max())
        sources = "; ".join(sorted(part["release_date_source"].dropna().astype(str).unique()))
        first = part["survey_date"].min().date().isoformat()
        last = part["survey_date"].max().date().isoformat()
        slug = _slug(Path(raw_file).stem)
        rows.append({
            "source": "sce", "release_id": f"sce_{module}_{slug}_{release.replace('-', '_')}",
            "release_date": release, "official_release_date": "",
            "release_date_source": sources, "release_date_status": RELEASE_DATE_STATUS,
            "release_date_unit": "max_row_level_inferred_microdata_release_date",
            "microdata_release_lag_months": int(part["microdata_release_lag_months"].max()),
            "reference_period_start": first, "reference_period_end": last,
            "module": module, "raw_file": raw_file, "download_url": MODULE_URLS[module],
            "sha256": input_sha256(paths[raw_file]), "task_ready": 0, "leakage_ready": 1,
            "notes": (f"{len(part)} respondent-month rows, survey months {first} to {last}; "
                      "row eligibility uses each row's own release_date."),
        })  # fmt: skip
    return pd.DataFrame(rows, columns=MANIFEST_COLUMNS)


def _resolve(survey: SurveyConfig, raw_dir: Path) -> tuple[list[tuple[str, Path]], list[str]]:
    """(workbooks to read, keys skipped on purpose); every named file must exist."""
    jobs, skipped = [], []
    for spec in WORKBOOKS:
        if spec.key in survey.raw and not (survey.raw[spec.key] or "").strip():
            skipped.append(spec.key)
            continue
        path = raw_path(survey, spec.key, raw_dir, hint=spec.path)
        if not path.is_file():
            raise DataError(f"{path}: {spec.what} workbook not found; download it from "
                            f"{MODULE_URLS[spec.module]} and place it there, or set "
                            f"survey.raw.{spec.key}=null to build without it")
        jobs.append((spec.key, path))
    if not any(BY_KEY[k].module == "core" for k, _ in jobs):
        raise ConfigError(f"survey {survey.name}: every core workbook is skipped; the modules "
                          "join the core survey, so set at least one of raw.core_13_16, "
                          "raw.core_17_19, raw.core_20_24, raw.core_latest")
    return jobs, skipped


def build_tables(
    pieces: list[Piece], crosswalk: ReleaseCrosswalk | None = None
) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Sheets as read -> ({module: table}, manifest)."""
    by_module: dict[str, list[pd.DataFrame]] = {}
    for piece in pieces:
        frame = structural(piece, crosswalk)
        if piece.module == "housing":
            codebook = housing_codebook_labels(
                piece, frame, [p for p in pieces if p.module == "housing" and p is not piece])
            frame = pd.concat([frame, pd.DataFrame(codebook, index=frame.index)], axis=1)
        by_module.setdefault(piece.module, []).append(frame)
    paths = {f"{p.path.parent.name}/{p.path.name}": p.path for p in pieces}

    tables, manifests = {}, []
    core = add_core_derived(_concat(by_module["core"]))
    for module in MODULES:
        if module not in by_module:
            continue
        table = core if module == "core" else _concat(by_module[module])
        check_unique(table, module)
        if module in ("household_spending", "labor_market", "public_policy"):
            table = attach_core_weights(table, core, module)
        manifests.append(manifest_rows(table, paths))
        tables[module] = finish_module(table, module)
    return tables, pd.concat(manifests, ignore_index=True)


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read the SCE workbooks named in `survey.raw` and write the module tables + manifest."""
    started = time.perf_counter()
    jobs, skipped = _resolve(survey, raw_dir)
    path = optional_crosswalk(survey, "release_crosswalk", raw_dir, "SCE",
                              "the lag rule (survey month + the module's lag)")
    crosswalk = ReleaseCrosswalk.read(path) if path is not None else None
    pieces = [p for group in _read_all(jobs) for p in group]
    tables, manifest = build_tables(pieces, crosswalk)
    frames = {f"sce_{module}": table for module, table in tables.items()}
    frames[MANIFEST_NAME] = manifest
    inputs = [p for _, p in jobs] + ([crosswalk.path] if crosswalk else [])
    report = write_outputs(survey, out_dir, frames, inputs, started)
    # A skipped module leaves no table: an older build's would not match the manifest.
    for module in MODULES:
        if module not in tables:
            stale = Path(out_dir) / f"sce_{module}.parquet"
            stale.unlink(missing_ok=True)
            sidecar_path(stale).unlink(missing_ok=True)
    return report
