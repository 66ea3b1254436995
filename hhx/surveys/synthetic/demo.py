"""The demo's raw files: each source's seeded generator, writing where its survey config reads.

`write_demo(survey, raw_dir, seed=...)` writes one source's synthetic raw files (official
formats, `.synthetic.json` sidecars) at the paths `conf/survey/<name>.yaml` names under
`raw_dir`, with the generator settings of that file's `demo:` block (sizes, spans). A stamp in
`raw_dir/.hhx-demo/` records seed, settings and generator code: the same request writes
nothing again, a changed one rewrites only that source.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hhx.config import SurveyConfig
from hhx.errors import ConfigError
from hhx.io import write_json_atomic
from hhx.surveys.base import raw_path, sidecar_path
from hhx.surveys.freshness import code_digest

STAMP_DIR = ".hhx-demo"
DEMO_VERSION = 1

Writer = Callable[[SurveyConfig, Path, int, dict[str, Any]], list[Path]]
WRITERS: dict[str, Writer] = {}


def writer(name: str) -> Callable[[Writer], Writer]:
    def register(fn: Writer) -> Writer:
        WRITERS[name] = fn
        return fn

    return register


def _at(survey: SurveyConfig, raw_dir: Path, key: str, folder: bool = False) -> Path:
    path = raw_path(survey, key, raw_dir)
    (path if folder else path.parent).mkdir(parents=True, exist_ok=True)
    return path


@writer("cps")
def _cps(survey: SurveyConfig, raw_dir: Path, seed: int, s: dict[str, Any]) -> list[Path]:
    from hhx.surveys.synthetic.cps.ipums import write_synthetic_cps

    written = [write_synthetic_cps(_at(survey, raw_dir, "cps_basic"), seed=seed, **s)]
    return written + _crosswalk(survey, raw_dir, seed, "release_crosswalk", "cps")


def _crosswalk(survey: SurveyConfig, raw_dir: Path, seed: int, key: str, source: str
               ) -> list[Path]:
    """The source's release-date crosswalk where its config reads it, byte for byte the file
    the release_dates demo writes for it (same seed), so either writer may run first."""
    if not survey.raw.get(key):
        return []
    from hhx.surveys.synthetic.macro.release_dates import write_synthetic_crosswalk

    return [write_synthetic_crosswalk(_at(survey, raw_dir, key), source, seed=seed)]


@writer("fred_qd")
def _fred_qd(survey: SurveyConfig, raw_dir: Path, seed: int, s: dict[str, Any]) -> list[Path]:
    from hhx.surveys.synthetic.macro.fred_qd import write_synthetic_fred_qd

    return [write_synthetic_fred_qd(_at(survey, raw_dir, "fred_qd"), seed=seed, **s)]


@writer("cpi")
def _cpi(survey: SurveyConfig, raw_dir: Path, seed: int, s: dict[str, Any]) -> list[Path]:
    from hhx.surveys.synthetic.macro.cpi import write_synthetic_cpi

    return write_synthetic_cpi(_at(survey, raw_dir, "cpi", folder=True), seed=seed, **s)


@writer("cex_interview")
def _cex_interview(survey: SurveyConfig, raw_dir: Path, seed: int, s: dict[str, Any]
                   ) -> list[Path]:
    from hhx.surveys.synthetic.cex.interview import write_synthetic_cex_interview

    paths = write_synthetic_cex_interview(_at(survey, raw_dir, "interview", folder=True),
                                          seed=seed, **s)
    return paths + _cex_crosswalk(survey, raw_dir, seed)


def _cex_crosswalk(survey: SurveyConfig, raw_dir: Path, seed: int) -> list[Path]:
    """The CEX release-date crosswalk both CEX builders read, byte for byte the one the
    release_dates demo writes there (same seed), so either writer may run first."""
    if not survey.raw.get("release_crosswalk"):
        return []
    from hhx.io import write_csv_atomic
    from hhx.surveys.synthetic import generator_label, write_sidecar
    from hhx.surveys.synthetic.macro.release_dates import synthetic_crosswalks

    path = write_csv_atomic(_at(survey, raw_dir, "release_crosswalk"),
                            synthetic_crosswalks(seed=seed)["cex"])
    write_sidecar(path, generator_label("release_dates"),
                  "synthetic release dates (placeholders, not the official dates)", seed=int(seed))
    return [path]


@writer("cex_diary")
def _cex_diary(survey: SurveyConfig, raw_dir: Path, seed: int, s: dict[str, Any]) -> list[Path]:
    from hhx.surveys.synthetic.cex.diary import write_synthetic_cex_diary

    icpsr = _at(survey, raw_dir, "icpsr", folder=True) if survey.raw.get("icpsr") else None
    paths = write_synthetic_cex_diary(_at(survey, raw_dir, "diary", folder=True), seed=seed,
                                      icpsr_dir=icpsr, **s)
    return paths + _cex_crosswalk(survey, raw_dir, seed)


@writer("mich")
def _mich(survey: SurveyConfig, raw_dir: Path, seed: int, s: dict[str, Any]) -> list[Path]:
    from hhx.surveys.synthetic.macro.release_dates import write_synthetic_crosswalk
    from hhx.surveys.synthetic.mich.consumers import write_synthetic_mich

    crosswalk = write_synthetic_crosswalk(_at(survey, raw_dir, "release_dates"), "mich",
                                          seed=seed)
    return [write_synthetic_mich(_at(survey, raw_dir, "mich"), seed=seed, **s), crosswalk]


@writer("census")
def _census(survey: SurveyConfig, raw_dir: Path, seed: int, s: dict[str, Any]) -> list[Path]:
    from hhx.surveys.synthetic.census.decennial import write_synthetic_census
    from hhx.surveys.synthetic.macro.release_dates import write_synthetic_crosswalk

    crosswalk = write_synthetic_crosswalk(_at(survey, raw_dir, "release_dates"), "census",
                                          seed=seed)
    return [write_synthetic_census(_at(survey, raw_dir, "census"), seed=seed, **s), crosswalk]


@writer("cps_ui_policy")
def _ui_policy(survey: SurveyConfig, raw_dir: Path, seed: int, s: dict[str, Any]) -> list[Path]:
    from hhx.surveys.synthetic.cps.ui_policy import write_synthetic_ui_policy

    return [write_synthetic_ui_policy(_at(survey, raw_dir, "ui_policy"), seed=seed, **s)]


@writer("sce")
def _sce(survey: SurveyConfig, raw_dir: Path, seed: int, s: dict[str, Any]) -> list[Path]:
    from hhx.surveys.synthetic.sce.microdata import write_synthetic_sce

    written = write_synthetic_sce(raw_dir / "micro" / "sce", seed=seed, **s)
    out = []
    for key, path in written.items():  # the generator writes the reference layout
        target = raw_path(survey, key, raw_dir) if survey.raw.get(key) else None
        if target is None:
            continue  # a workbook switched off in the config is not needed
        if target.resolve() != path.resolve():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(path, target)
            shutil.move(sidecar_path(path), sidecar_path(target))
        out.append(target)
    return out + _crosswalk(survey, raw_dir, seed, "release_crosswalk", "sce")


@writer("sce_financing")
def _sce_financing(survey: SurveyConfig, raw_dir: Path, seed: int, s: dict[str, Any]
                   ) -> list[Path]:
    from hhx.surveys.synthetic.sce.financing import write_synthetic_fz

    written = [write_synthetic_fz(_at(survey, raw_dir, "sce_financing"), seed=seed, **s)]
    return written + _crosswalk(survey, raw_dir, seed, "release_crosswalk", "sce")


@writer("psid")
def _psid(survey: SurveyConfig, raw_dir: Path, seed: int, s: dict[str, Any]) -> list[Path]:
    from hhx.surveys.synthetic.psid.shelf import write_synthetic_psid

    long_zip, main_zip = _at(survey, raw_dir, "shelf_long"), _at(survey, raw_dir, "main_study")
    write_synthetic_psid(long_zip, main_zip, seed=seed, **s)
    written = [long_zip, main_zip]
    if survey.raw.get("release_dates"):  # the same file the release_dates demo writes
        from hhx.surveys.synthetic.macro.release_dates import write_synthetic_crosswalk

        written.append(write_synthetic_crosswalk(_at(survey, raw_dir, "release_dates"), "psid",
                                                 seed=seed))
    return written


@writer("release_dates")
def _release_dates(survey: SurveyConfig, raw_dir: Path, seed: int, s: dict[str, Any]
                   ) -> list[Path]:
    from hhx.surveys.synthetic.macro.release_dates import write_synthetic_release_dates

    folders = {raw_path(survey, key, raw_dir).parent for key, rel in survey.raw.items() if rel}
    if len(folders) != 1:
        raise ConfigError(
            f"survey {survey.name}: the demo writes all crosswalks into one folder; raw paths "
            f"name {sorted(map(str, folders))}"
        )
    folder = folders.pop()
    folder.mkdir(parents=True, exist_ok=True)
    written = write_synthetic_release_dates(folder, seed=seed, **s)
    return [p for key, p in written.items() if survey.raw.get(key)]


def _state_macro(name: str) -> Writer:
    def write(survey: SurveyConfig, raw_dir: Path, seed: int, s: dict[str, Any]) -> list[Path]:
        from hhx.io import temp_dir
        from hhx.surveys.synthetic.macro.state_macro import write_synthetic_state_macro

        target = _at(survey, raw_dir, name)
        # One generator draws all three files from one stream; keep the one this source reads.
        # (a pid-tagged scratch folder: swept by the next run if this one is killed)
        with temp_dir(target.parent, "demo-") as tmp:
            path = write_synthetic_state_macro(tmp, seed=seed, **s)[name]
            shutil.move(path, target)
            shutil.move(sidecar_path(path), sidecar_path(target))
        return [target]

    return write


for _name in ("fhfa_hpi", "bls_laus", "bea_sainc"):
    WRITERS[_name] = _state_macro(_name)


@writer("state_macro_panel")
def _state_macro_panel(survey: SurveyConfig, raw_dir: Path, seed: int, s: dict[str, Any]
                       ) -> list[Path]:
    """The panel reads its three sources' intermediates and the FRED-QD file: nothing of its
    own to generate beyond that file (written by the fred_qd source when it is the same)."""
    return []


# --------------------------------------------------------------------------------------------


# The generator module(s) behind each writer, below hhx.surveys.synthetic (none: a derived
# source, nothing of its own to generate).
GENERATOR_MODULE: dict[str, str | tuple[str, ...]] = {
    "fred_qd": "macro.fred_qd",
    "cpi": "macro.cpi",
    "release_dates": "macro.release_dates",
    "fhfa_hpi": "macro.state_macro",
    "bls_laus": "macro.state_macro",
    "bea_sainc": "macro.state_macro",
    "state_macro_panel": (),
    "cex_interview": "cex.interview",
    "cex_diary": "cex.diary",
    "cps_ui_policy": "cps.ui_policy",
    "cps": ("cps.ipums", "cps.people", "cps.labor", "cps.ui_policy",  # job finding follows the UI-policy file
            "macro.release_dates"),  # and its release-date crosswalk
    "sce": ("sce.microdata", "macro.release_dates"),
    "sce_financing": ("sce.financing", "macro.release_dates"),
    "psid": ("psid.shelf", "macro.release_dates"),
    "mich": ("mich.consumers", "macro.release_dates"),
    "census": ("census.decennial", "macro.release_dates"),
}


def _code_digest(name: str) -> str:
    """The writer and its generator modules' code (with the reader modules and tables they
    import: a generator writes the codes its reader expects): a changed generator rewrites the
    files."""
    digest = hashlib.sha256(f"{DEMO_VERSION}".encode())
    digest.update(inspect.getsource(WRITERS[name]).encode())
    modules = GENERATOR_MODULE[name]
    names = [f"hhx.surveys.synthetic.{m}" for m in ((modules,) if isinstance(modules, str)
                                                     else modules)]
    if names:
        digest.update(code_digest(*names).encode())
    return digest.hexdigest()


def demo_settings(survey: SurveyConfig) -> dict[str, Any]:
    return dict(survey.demo or {})


def _wanted(survey: SurveyConfig, seed: int, overrides: dict[str, Any] | None) -> dict[str, Any]:
    if survey.name not in WRITERS:
        raise ConfigError(f"survey {survey.name!r} has no demo generator")
    wanted = {
        "survey": survey.name,
        "seed": int(seed),
        "settings": {**demo_settings(survey), **(overrides or {})},
        "raw": {k: v for k, v in survey.raw.items() if v},
        "code": _code_digest(survey.name),
    }
    return json.loads(json.dumps(wanted, default=str))


def current_files(survey: SurveyConfig, raw_dir: str | Path, *, seed: int,
                  overrides: dict[str, Any] | None = None) -> list[Path] | None:
    """The files of an earlier identical request, if all still exist; else None."""
    raw_dir = Path(raw_dir)
    stamp = raw_dir / STAMP_DIR / f"{survey.name}.json"
    try:
        old = json.loads(stamp.read_text()) if stamp.is_file() else {}
    except ValueError:
        old = {}
    files = [raw_dir / p for p in old.get("files", [])]
    if old.get("wanted") == _wanted(survey, seed, overrides) and all(p.exists() for p in files):
        return files
    return None


def write_demo(survey: SurveyConfig, raw_dir: str | Path, *, seed: int,
               overrides: dict[str, Any] | None = None) -> list[Path]:
    """Write `survey`'s demo raw files under `raw_dir` unless the same ones are there."""
    raw_dir = Path(raw_dir)
    files = current_files(survey, raw_dir, seed=seed, overrides=overrides)
    if files is not None:
        return files
    wanted = _wanted(survey, seed, overrides)
    paths = WRITERS[survey.name](survey, raw_dir, int(seed), wanted["settings"])
    rel = sorted(str(Path(p).resolve().relative_to(raw_dir.resolve())) for p in paths)
    write_json_atomic(raw_dir / STAMP_DIR / f"{survey.name}.json", {"wanted": wanted, "files": rel})
    return [raw_dir / p for p in rel]
