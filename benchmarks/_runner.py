"""The benchmarks' phase runner: each measured phase runs in a fresh Python process.

A benchmark script calls `run_phase(__file__, name, "--work", str(work), ...)`; the child is the
same script started with `--phase <name> ...`, which does the work and ends with
`print_phase(result)`: one JSON line holding the result plus `peak_mb`, the child's own peak
resident memory, so no phase inherits another's memory. A failed phase stops the benchmark with
the tail of its stderr.

The peak is the kernel's high-water mark of the child's own address space (`VmHWM` in
/proc/self/status), not `ru_maxrss`: Linux carries the parent's peak into a child's ru_maxrss
across fork and exec (the old address space's peak is folded in at exec), so with ru_maxrss every
phase read the benchmark process's own peak (the synthetic generator's ~1.2 GB), whatever the
phase used.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

STDERR_TAIL = 3000  # characters of a failed phase's stderr shown


def peak_mb() -> float:
    """This process's own peak resident memory in MB (VmHWM; ru_maxrss where /proc is absent)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    # ru_maxrss is KiB on Linux, bytes on macOS; it may include the parent's peak (see above)
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


def print_phase(result: dict[str, Any]) -> None:
    """The child's last stdout line: `result` with this process's `peak_mb` (unless set)."""
    print(json.dumps({**result, "peak_mb": result.get("peak_mb", peak_mb())}))


def run_phase(script: str | Path, name: str, *args: str) -> dict[str, Any]:
    """Run `script --phase name *args` in a new interpreter; its last stdout line as a dict."""
    proc = subprocess.run([sys.executable, str(script), "--phase", name, *args],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"phase {name} failed:\n{proc.stderr[-STDERR_TAIL:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])
