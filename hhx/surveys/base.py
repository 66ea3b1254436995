"""What every survey builder returns, and the input fingerprint rule of the reference (spec 1.1)."""

from __future__ import annotations

import gzip
import hashlib
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.io import write_json_atomic, write_parquet_atomic
from hhx.surveys.compressed import intact


@dataclass
class BuildReport:
    """Provenance of one survey build, logged to MLflow by the build stage."""

    survey: str
    outputs: dict[str, str] = field(default_factory=dict)  # intermediate name -> parquet path
    rows: dict[str, int] = field(default_factory=dict)  # intermediate name -> row count
    inputs: dict[str, str] = field(default_factory=dict)  # raw path -> sha256 fingerprint
    seconds: float = 0.0
    synthetic: bool = False
    # other counts worth a look, name -> count (e.g. SCE financing's codes outside the codebook,
    # kept as the reference keeps them); logged as metrics `counts.<survey>.<name>`
    counts: dict[str, int] = field(default_factory=dict)


def enabled_improvements(survey: SurveyConfig, known: dict[str, str] | tuple[str, ...],
                         builder: str) -> frozenset[str]:
    """The deviations from the reference that `survey.improvements` enables (each off by
    default); a name the builder does not know is refused with the names it does."""
    names = frozenset(str(n) for n in (getattr(survey, "improvements", None) or ()))
    unknown = sorted(names - set(known))
    if unknown:
        raise ConfigError(f"survey {survey.name}: unknown improvements {unknown}; the {builder} "
                          f"builder knows {', '.join(known)}")
    return names


def require_file(path: Path, what: str, source: str) -> Path:
    """Fail with the expected path and where the public file comes from."""
    if not path.is_file():
        raise DataError(f"{path}: {what} not found; download it from {source} and place it there")
    return path


def input_sha256(path: str | Path) -> str:
    """Fingerprint as the reference does: zip members (name, size, bytes) sorted by name; gz
    decompressed; anything else plain. Ignores compression level, member order and gzip headers."""
    p = Path(path)
    digest = hashlib.sha256()
    with intact(p):  # a damaged archive is named here, the first place that reads it whole
        if p.suffix in (".zip", ".gz") and p.stat().st_size == 0:
            raise EOFError("empty")  # gzip reads an empty file as an empty stream
        if p.suffix == ".zip":
            with zipfile.ZipFile(p) as zf:
                for info in sorted(zf.infolist(), key=lambda i: i.filename):
                    if info.is_dir():
                        continue
                    digest.update(info.filename.encode("utf-8") + b"\0")
                    digest.update(info.file_size.to_bytes(8, "big"))
                    with intact(p, info.filename), zf.open(info) as fh:
                        for chunk in iter(lambda: fh.read(1 << 20), b""):
                            digest.update(chunk)
        elif p.suffix == ".gz":
            with gzip.open(p, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
        else:
            with p.open("rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
    return digest.hexdigest()


def check_fingerprint(path: str | Path, expected: str) -> None:
    """Empty expected = presence only; otherwise it must be 64 lowercase hex and match."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: input file not found")
    if not expected:
        return
    if len(expected) != 64 or any(c not in "0123456789abcdef" for c in expected):
        raise DataError(f"{p}: Invalid input fingerprint {expected!r} (need 64 lowercase hex digits)")
    actual = input_sha256(p)
    if actual != expected:
        raise DataError(f"{p}: input fingerprint differs (expected {expected}, got {actual})")


def raw_path(survey: SurveyConfig, key: str, raw_dir: str | Path, hint: str = "") -> Path:
    """`survey.raw[key]`, relative to raw_dir unless absolute; unset -> says what to point at."""
    if not survey.raw.get(key):
        where = f"point it at {hint}" if hint else f"see conf/survey/{survey.name}.yaml"
        raise ConfigError(f"survey {survey.name}: raw.{key} is not set; {where}")
    value = Path(survey.raw[key]).expanduser()  # type: ignore[arg-type]  # set: checked above
    return value if value.is_absolute() else Path(raw_dir) / value


def sidecar_path(path: Path) -> Path:
    """Where a generator's `<file>.synthetic.json` marker sits (hhx.surveys.synthetic)."""
    return path.with_name(path.name + ".synthetic.json")


def has_synthetic_sidecar(path: Path) -> bool:
    return sidecar_path(path).is_file()


def mark_synthetic(output: Path, synthetic: bool, inputs: list[str]) -> None:
    """Give an output built from generated inputs the same sidecar, so a builder reading it
    (e.g. the state macro panel) passes the label on; drop a stale one otherwise."""
    if synthetic:
        write_json_atomic(sidecar_path(output), {"synthetic": True, "built_from": inputs,
                                                 "note": "built from generated raw files"})
    else:
        sidecar_path(output).unlink(missing_ok=True)


def finish_report(
    survey: SurveyConfig,
    outputs: dict[str, Path | str],
    rows: dict[str, int],
    inputs: dict[str, str] | list[Path],
    started: float,
) -> BuildReport:
    """The report of a finished build: fingerprints (computed when `inputs` is a list of paths),
    time, and the synthetic label, which any generated input passes on to every output."""
    fingerprints = inputs if isinstance(inputs, dict) else {str(p): input_sha256(p) for p in inputs}
    synthetic = any(has_synthetic_sidecar(Path(p)) for p in fingerprints)
    for out in outputs.values():
        mark_synthetic(Path(out), synthetic, sorted(fingerprints))
    return BuildReport(
        survey=survey.name,
        outputs={name: str(path) for name, path in outputs.items()},
        rows=rows,
        inputs=fingerprints,
        seconds=time.perf_counter() - started,
        synthetic=synthetic,
    )


def write_outputs(
    survey: SurveyConfig,
    out_dir: str | Path,
    frames: dict[str, pd.DataFrame],
    inputs: list[Path],
    started: float,
) -> BuildReport:
    """Write each frame as `<out_dir>/<name>.parquet` atomically and report the build."""
    outputs: dict[str, Path | str] = {name: write_parquet_atomic(Path(out_dir) / f"{name}.parquet", frame)
               for name, frame in frames.items()}
    rows = {name: len(frame) for name, frame in frames.items()}
    return finish_report(survey, outputs, rows, inputs, started)
