"""A wheel built with `pip wheel .` carries conf/ (setup.py copies it to hhx/conf), and an
installed hhx finds it there (hhx/paths.py)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.heavy
def test_the_wheel_carries_every_config(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "-q", "-w", str(tmp_path), str(REPO)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("hhx-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"hhx/conf/{p.relative_to(REPO / 'conf')}" for p in (REPO / "conf").rglob("*.yaml")}
    assert shipped and shipped <= names
    assert "hhx/conf/config.yaml" in names and "hhx/conf/paths/default.yaml" in names


def test_an_installed_package_reads_its_own_conf(tmp_path, monkeypatch):
    from hhx import paths

    pkg = tmp_path / "site-packages" / "hhx"
    (pkg / "conf").mkdir(parents=True)
    monkeypatch.setattr(paths, "PACKAGE", pkg)
    assert paths.conf_dir() == pkg / "conf"  # no working copy beside it
    monkeypatch.setattr(paths, "PACKAGE", REPO / "hhx")
    assert paths.conf_dir() == REPO / "conf"
