"""Generated demo files are the same bytes whenever they are written: no clock in a gzip header
(time and the temporary file's name), in a zip member's date, or in a Stata file's time stamp."""

from __future__ import annotations

import gzip
import hashlib
import time
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from hhx.surveys.registry import load_survey
from hhx.surveys.synthetic import STATA_TIME_STAMP
from hhx.surveys.synthetic.demo import write_demo

SMALL = {
    "cps": {"n_households": 40, "start": "2019-01", "end": "2019-03"},
    "census": {"n_households": 15},
    "cps_ui_policy": {},
    "sce_financing": {},
    "cex_interview": {"years": [2008], "n_cu_per_quarter": 3},
}


def _generate(root: Path) -> dict[str, str]:
    for name, settings in SMALL.items():
        write_demo(load_survey(name), root, seed=11, overrides=settings or None)
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_two_generations_a_while_apart_are_byte_identical(tmp_path):
    first = _generate(tmp_path / "a")
    time.sleep(1.1)  # another second in every header that holds one
    second = _generate(tmp_path / "b")
    assert first.keys() == second.keys() and len(first) > 8
    assert [k for k in first if first[k] != second[k]] == []
    assert not [p for p in (tmp_path / "a").rglob(".*hhx-*.tmp")]  # no scratch file left


def test_headers_hold_no_clock(tmp_path):
    root = tmp_path / "raw"
    _generate(root)
    for gz in root.rglob("*.gz"):
        head = gz.read_bytes()[:10]
        assert head[3] & 0x08 == 0, f"{gz}: a file name in the gzip header"  # FNAME flag
        assert head[4:8] == b"\0\0\0\0", f"{gz}: a time in the gzip header"
    for dta in root.rglob("*.dta"):
        with pd.io.stata.StataReader(dta) as reader:
            assert reader.time_stamp == STATA_TIME_STAMP.strftime("%d %b %Y %H:%M")
    census = next(root.rglob("census.gz"))
    with gzip.open(census) as fh, pd.io.stata.StataReader(fh) as reader:
        assert reader.time_stamp == STATA_TIME_STAMP.strftime("%d %b %Y %H:%M")
    for archive in root.rglob("*.zip"):
        with zipfile.ZipFile(archive) as zf:
            assert len({i.date_time for i in zf.infolist()}) == 1, archive
