"""Damaged CPS extracts never build: a csv.gz cut short and a file that is not gzip give one
line naming the file and what is wrong, and no intermediate is left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.surveys.cps.ipums import build
from hhx.surveys.synthetic.cps.ipums import write_synthetic_cps


@pytest.fixture(scope="module")
def extract(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("cps") / "good.csv.gz"
    return write_synthetic_cps(path, seed=2, n_households=60, start="2024-01", end="2024-02",
                               compresslevel=1).read_bytes()  # fmt: skip


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        ("cut", "the compressed file ends early"),
        ("cut_early", "the compressed file ends early"),
        ("not_gzip", "not a gzip file"),
    ],
)
def test_damaged_extract_is_one_line(extract: bytes, tmp_path: Path, damage, expected) -> None:
    path = tmp_path / "cps_basic.csv.gz"
    data = {
        "cut": extract[: len(extract) * 2 // 3],
        "cut_early": extract[:200],
        "not_gzip": b"YEAR,MONTH\n2024,1\n",
    }[damage]
    path.write_bytes(data)
    with pytest.raises(DataError) as info:
        build(SurveyConfig(name="cps", raw={"cps_basic": path.name}), tmp_path, tmp_path / "out")
    message = str(info.value)
    assert message.startswith(str(path)) and expected in message and "\n" not in message
    assert not list((tmp_path / "out").glob("*.parquet"))  # nothing half-written
