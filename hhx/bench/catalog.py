"""The 32 tasks as the official release describes them, and where their real data comes from.

`catalog.csv` (beside this module; each row names its source) holds, per task: topic, survey,
mode, target type, number of targets, years, benchmark rows, post-cutoff rows, SFT rows, eval-sample
test rows (pre / post cutoff), whether the official release ships the task (`download`) or it must
be rebuilt from the user's own survey files (`rebuild`), those files, the licence situation, and a
typical prompt length (an estimate from hhx's synthetic demo, used by `+dry_run=true`).

Facts (reference `Jn-Huang/householdbench_eval` @148abfb, README "Getting the data"; spec
00_common.md 0, 1.2, 9.4):
- The release lives on the Hugging Face Hub in two dataset repositories:
  `householdbench/householdbench-eval` (the eval sample, 13 MB: `{pre_cutoff,post_cutoff}/<task>.jsonl`
  and `manifest.csv`; its `data/` folder holds Parquet copies for the dataset viewer only) and
  `householdbench/householdbench-full` (6.5 GB: the release layout under `householdbench/` —
  `tabular/`, `prompts/`, `splits/`, `baselines/`, `manifest.csv` — and the 94 supplied raw inputs
  under `raw/`, the layout `data=raw` reads). Each holds a `LICENSE.md` with the source notices.
- 17 tasks (4 CEX Interview, 13 SCE) are released; the other 15 use IPUMS (CPS, Census), PSID,
  Michigan or ICPSR (CEX Diary 1982-89) data that may not be redistributed: rebuild them with
  `data=raw` from one's own downloads (13 files from the providers).
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

CATALOG_CSV = Path(__file__).with_name("catalog.csv")
EVAL_REPO = "householdbench/householdbench-eval"
FULL_REPO = "householdbench/householdbench-full"
FULL_RELEASE_DIR = "householdbench"  # the release layout's folder inside FULL_REPO
FULL_RAW_DIR = "raw"  # the supplied raw inputs inside FULL_REPO
EVAL_SAMPLE_MB = 13  # README sizes: used when the Hub cannot be asked (offline, dry run)
FULL_RELEASE_GB = 6.5
# The 13 files a rebuild needs from their providers (spec 00_common.md 1.2), by raw-path prefix;
# every other raw input is supplied in FULL_REPO's raw/ folder.
OWN_DOWNLOADS = {  # README "Real data" says where each is requested
    "micro/cex/diary/icpsr": "your ICPSR download",
    "micro/cps/cps_basic": "your IPUMS CPS extract",
    "micro/census/census": "your IPUMS USA extract",
    "micro/mich/mich.csv": "your Michigan SCA extract",
    "micro/psid-shelf": "your PSID-SHELF download",
    "macro/fred-qd": "your FRED-QD download",
}


@dataclass(frozen=True)
class CatalogRow:
    task: str
    topic: str
    survey: str
    mode: str
    target_type: str
    targets: int
    years: str
    rows: int
    post_cutoff_rows: int
    sft_rows: int
    test_pre: int
    test_post: int
    release: str  # download | rebuild
    own_downloads: str
    licence: str
    prompt_chars: int
    source: str

    @property
    def downloadable(self) -> bool:
        return self.release == "download"


_INTS = {"targets", "rows", "post_cutoff_rows", "sft_rows", "test_pre", "test_post",
         "prompt_chars"}


@functools.cache
def catalog() -> dict[str, CatalogRow]:
    """task -> its catalog row, in the file's (alphabetical) order."""
    with open(CATALOG_CSV, newline="", encoding="utf-8") as handle:
        # the CSV's columns are CatalogRow's fields (tests/bench/test_catalog.py)
        return {row["task"]: CatalogRow(**{k: int(v) if k in _INTS else v  # type: ignore[arg-type]
                                           for k, v in row.items()})
                for row in csv.DictReader(handle)}


def downloadable_tasks() -> list[str]:
    return [name for name, row in catalog().items() if row.downloadable]


def provider_of(raw_path: str) -> str | None:
    """Who provides a raw input the user must download (None: supplied in the full release)."""
    for prefix, provider in OWN_DOWNLOADS.items():
        if raw_path.startswith(prefix):
            return provider
    return None


def eval_sample_files(task: str) -> list[str]:
    """The task's files in the eval-sample repository (empty for a task it does not ship)."""
    row = catalog().get(task)
    if row is None or not row.downloadable:
        return []
    out = [f"pre_cutoff/{task}.jsonl"] if row.test_pre else []
    return out + ([f"post_cutoff/{task}.jsonl"] if row.test_post else [])


def release_files(task: str) -> list[str]:
    """The task's files in the release layout (relative to the release root)."""
    row = catalog().get(task)
    if row is None or not row.downloadable:
        return []
    return [f"tabular/{task}.csv", f"prompts/{task}.jsonl", f"splits/{task}.csv",
            f"baselines/{task}.csv"]


def table_rows() -> list[dict[str, str]]:
    """The catalog as printable rows (stage=list, README)."""
    return [{"task": r.task, "survey": r.survey, "target": r.target_type, "years": r.years,
             "rows": f"{r.rows:,}", "test pre/post": f"{r.test_pre}/{r.test_post or '-'}",
             "data": "download" if r.downloadable else "rebuild (data=raw)",
             "licence": r.licence.split(":")[0].split(",")[0]}
            for r in catalog().values()]
