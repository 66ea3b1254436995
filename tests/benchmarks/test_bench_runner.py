"""The benchmarks' phase runner reports each phase's own peak memory, not its parent's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _runner import peak_mb, run_phase  # noqa: E402

PHASE = """
import sys
sys.path.insert(0, {bench!r})
from _runner import print_phase
if "--phase" in sys.argv:
    blob = bytearray({mb} * 1024 * 1024)  # touched: bytearray zero-fills its pages
    print_phase({{"rows": len(blob)}})
"""


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux /proc")
def test_a_phase_does_not_inherit_the_parents_peak(tmp_path: Path) -> None:
    bench = str(Path(__file__).resolve().parents[2] / "benchmarks")
    script = tmp_path / "phase.py"
    script.write_text(PHASE.format(bench=bench, mb=40))
    ballast = bytearray(300 * 1024 * 1024)  # the parent's peak: >= 300 MB above its start
    assert peak_mb() > 300
    small = run_phase(script, "small")
    del ballast
    assert small["rows"] == 40 * 1024 * 1024
    # the child's own peak: its interpreter plus 40 MB, far below the parent's 300 MB ballast
    assert 40 <= small["peak_mb"] < 200, small
