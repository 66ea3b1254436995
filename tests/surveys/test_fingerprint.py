"""Input fingerprints by the reference rule (spec 1.1) and the checksum checks (spec 11.2)."""

from __future__ import annotations

import gzip
import hashlib
import zipfile
from pathlib import Path

import pytest

from hhx.errors import DataError
from hhx.surveys.base import check_fingerprint, input_sha256


def test_zip_fingerprint_ignores_member_order_and_compression(tmp_path: Path):
    members = {"b.csv": b"x,y\n1,2\n", "a.csv": b"hello\n"}
    one, two = tmp_path / "one.zip", tmp_path / "two.zip"
    with zipfile.ZipFile(one, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in ("b.csv", "a.csv"):
            zf.writestr(name, members[name])
    with zipfile.ZipFile(two, "w", zipfile.ZIP_STORED) as zf:
        for name in ("a.csv", "b.csv"):
            zf.writestr(name, members[name])
    # by hand: members sorted by name; name + NUL + 8-byte big-endian size + bytes
    expected = hashlib.sha256()
    for name in sorted(members):
        data = members[name]
        expected.update(name.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    assert input_sha256(one) == input_sha256(two) == expected.hexdigest()


def test_gz_fingerprint_is_that_of_the_decompressed_bytes(tmp_path: Path):
    data = b"YEAR,MONTH\n2020,1\n"
    a, b = tmp_path / "a.csv.gz", tmp_path / "b.csv.gz"
    a.write_bytes(gzip.compress(data, compresslevel=1, mtime=0))
    b.write_bytes(gzip.compress(data, compresslevel=9, mtime=12345))
    assert a.read_bytes() != b.read_bytes()
    assert input_sha256(a) == input_sha256(b) == hashlib.sha256(data).hexdigest()


def test_checks_presence_mismatch_and_malformed(tmp_path: Path):
    path = tmp_path / "x.csv"
    path.write_bytes(b"abc")
    check_fingerprint(path, "")  # empty checksum: presence only
    check_fingerprint(path, hashlib.sha256(b"abc").hexdigest())
    path.write_bytes(b"abd")
    with pytest.raises(DataError, match="fingerprint differs"):
        check_fingerprint(path, hashlib.sha256(b"abc").hexdigest())
    with pytest.raises(DataError, match="Invalid input fingerprint"):
        check_fingerprint(path, "ABC123")
    with pytest.raises(DataError, match="not found"):
        check_fingerprint(tmp_path / "missing.csv", "")
