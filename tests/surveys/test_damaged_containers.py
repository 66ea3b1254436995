"""A damaged compressed input stops with one line naming the file (and member), whichever reader
meets the damage first. The build stage fingerprints every raw file before a reader opens it, so
the fingerprint meets a cut-short archive first: each container at several cut points, an empty
file, a file of another format and a corrupt member inside an intact archive. The whole command
is run once on the audit's case (a CPS extract cut in half)."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from hhx.errors import DataError
from hhx.surveys.base import input_sha256
from hhx.surveys.synthetic.cps.ipums import write_synthetic_cps

CUTS = (0, 10, 1 / 3, 1 / 2, -20)  # bytes kept: none, ten, a third, half, all but the last 20


def _stata_bytes() -> bytes:
    buf = io.BytesIO()
    frame = pd.DataFrame({"pid": range(2000), "wave": [1999 + i % 20 for i in range(2000)],
                          "earnings": [float(i * 37 % 9000) for i in range(2000)]})
    frame.to_stata(buf, write_index=False, version=118)
    return buf.getvalue()


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _csv() -> bytes:
    return "".join(f"{i},{i * 7 % 13},{i * 3.5}\n" for i in range(20000)).encode()


CONTAINERS = {
    "cps_basic.csv.gz": lambda: gzip.compress(_csv()),
    "intrvw08.zip": lambda: _zip({"intrvw08/fmli081.csv": _csv(), "intrvw08/memi081.csv": _csv()}),
    "PSIDSHELF_LONG.zip": lambda: _zip({"PSIDSHELF_1968_2021_LONG.dta": _stata_bytes()}),
}


def _cut(data: bytes, cut: float) -> bytes:
    keep = int(len(data) * cut) if isinstance(cut, float) else (cut if cut >= 0 else len(data) + cut)
    return data[:keep]


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("name", sorted(CONTAINERS))
def test_a_cut_short_container_is_one_line_naming_the_file(tmp_path, name, cut):
    path = tmp_path / name
    path.write_bytes(_cut(CONTAINERS[name](), cut))
    with pytest.raises(DataError) as info:
        input_sha256(path)
    message = str(info.value)
    assert message.startswith(str(path)) and "\n" not in message
    assert "download the file again" in message
    if cut == 0:
        assert "empty (0 bytes)" in message


@pytest.mark.parametrize("name", sorted(CONTAINERS))
def test_a_file_of_another_format_is_named(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"YEAR,MONTH\n2024,1\n" * 50)
    with pytest.raises(DataError, match=r"not a (gzip file|complete zip archive)") as info:
        input_sha256(path)
    assert str(info.value).startswith(str(path))


def test_a_corrupt_member_inside_an_intact_zip_names_the_member(tmp_path):
    data = bytearray(CONTAINERS["PSIDSHELF_LONG.zip"]())
    start = data.index(b"PSIDSHELF_1968_2021_LONG.dta") + 200  # inside the deflated bytes
    data[start:start + 64] = bytes(64)
    path = tmp_path / "PSIDSHELF_LONG.zip"
    path.write_bytes(bytes(data))
    with pytest.raises(DataError) as info:
        input_sha256(path)
    assert str(info.value).startswith(f"{path}!PSIDSHELF_1968_2021_LONG.dta: ")


def test_intact_containers_fingerprint_as_before(tmp_path):
    for name, make in CONTAINERS.items():
        (tmp_path / name).write_bytes(make())
        assert len(input_sha256(tmp_path / name)) == 64


@pytest.mark.slow
def test_the_build_command_on_a_cps_extract_cut_in_half(tmp_path):
    raw = tmp_path / "raw" / "micro" / "cps"
    raw.mkdir(parents=True)
    whole = write_synthetic_cps(raw / "cps_basic.csv.gz", seed=3, n_households=80,
                                start="2024-01", end="2024-03", compresslevel=1).read_bytes()
    (raw / "cps_basic.csv.gz").write_bytes(whole[: len(whole) // 2])
    proc = subprocess.run(
        [sys.executable, "-m", "hhx", "stage=build", "survey=cps", "data=raw",
         f"data.raw_dir={tmp_path}/raw", f"data.intermediate_dir={tmp_path}/inter",
         f"data.root={tmp_path}/bench", "tracking=none"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**__import__("os").environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    errors = [ln for ln in proc.stderr.splitlines() if "error" in ln.lower()]
    assert len(errors) == 1 and "cps_basic.csv.gz: the compressed file ends early" in errors[0]
    assert not list(tmp_path.rglob("*.parquet"))
