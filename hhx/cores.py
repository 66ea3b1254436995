"""How many CPU cores this process may use for its own threads.

`usable_cores()`: the cores the OS lets this process run on (its affinity mask: what SLURM's
cgroups and `taskset` give it). `job_cores()`: the same, capped by `OMP_NUM_THREADS` when it is
set to a positive integer. That variable is how parallel jobs share a machine: joblib's process
workers (`hydra/launcher=joblib`) get `OMP_NUM_THREADS = cores // n_jobs` from joblib itself,
and cluster job scripts commonly set it to the job's CPUs. llama.cpp sizes its threads by it
(fixed for a run), so two parallel jobs on two cores use one thread each instead of four threads
contending for two cores (llama.cpp's threads wait for each other at every step, so one
descheduled thread stalls them all). `user_thread_limit()`: the OMP_NUM_THREADS a *user* set
(in a joblib worker, the one the sweep started with), which caps XGBoost.

`busy_cores()`: the cores other work keeps busy right now (llama.cpp avoids them when it loads).
`CoreMeter`: the cores *other processes* kept busy since its last reading (this process's own
CPU time taken out), for work that can change its thread count as it goes: XGBoost's fits start
on the job's share (`job_cores`) and re-size their threads every few seconds
(hhx/predictors/xgboost.py `ThreadPlan`), so two parallel sweep jobs fit on one core each and
the last job left running gets both. Thread counts do not
change XGBoost's results (its `hist` sums are deterministic across threads; tests/test_cores.py).
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask), at least one."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _thread_count(value: str) -> int | None:
    # OpenMP also allows a nesting list ("4,2"); its first level is this process's threads
    head = value.strip().split(",", 1)[0]
    return int(head) if head.isdigit() and int(head) > 0 else None


def thread_limit() -> int | None:
    """`OMP_NUM_THREADS` as a positive integer, or None when unset or not one."""
    return _thread_count(os.environ.get("OMP_NUM_THREADS", ""))


# The parent of a sweep records the user's OMP_NUM_THREADS here (hhx/sweeps/callback.py) before
# joblib's workers start with their own share in OMP_NUM_THREADS.
USER_LIMIT_VAR = "HHX_USER_OMP_NUM_THREADS"


def user_thread_limit() -> int | None:
    """The OMP_NUM_THREADS the user set: in a joblib worker the one its sweep started with
    (joblib's own share, cores // n_jobs, is not a user's limit), else OMP_NUM_THREADS."""
    if USER_LIMIT_VAR not in os.environ:
        return thread_limit()
    return _thread_count(os.environ[USER_LIMIT_VAR])


def job_cores() -> int:
    """The cores this job's threads should use: usable cores, capped by OMP_NUM_THREADS."""
    cores = usable_cores()
    limit = thread_limit()
    return min(cores, limit) if limit is not None else cores


def _stat_ticks() -> tuple[int, int]:
    """(all CPUs' ticks user..steal, idle + iowait ticks) from /proc/stat's first line (guest
    time is inside user already)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields[:8]), fields[3] + (fields[4] if len(fields) > 4 else 0)


def busy_cores(interval: float = 0.25) -> float:
    """Cores busy over the next `interval` seconds (/proc/stat; this process sleeps meanwhile,
    so it is other work). Not the 1-minute load average: that still holds this process's own
    work of the last minute (the demo build before the model loads), which would halve the
    threads of a run on an otherwise idle machine. Falls back to it where /proc is absent."""
    try:
        total0, idle0 = _stat_ticks()
        time.sleep(interval)
        total1, idle1 = _stat_ticks()
    except (OSError, ValueError, IndexError):
        try:
            return float(os.getloadavg()[0])
        except OSError:
            return 0.0
    elapsed = total1 - total0
    if elapsed <= 0:
        return 0.0
    return (os.cpu_count() or 1) * (1 - (idle1 - idle0) / elapsed)


class CoreMeter:
    """Cores other processes kept busy between readings (Linux /proc; elsewhere always 0)."""

    def __init__(self) -> None:
        self.cpus = os.cpu_count() or 1
        self.tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.own = 0.0  # the cores this process kept busy, at the last reading
        self._last = self._sample()

    def _sample(self) -> tuple[int, int, float] | None:
        try:
            total, idle = _stat_ticks()
        except (OSError, ValueError, IndexError):
            return None
        own = os.times()
        return total, idle, own.user + own.system

    def other_busy(self) -> float:
        now, last = self._sample(), self._last
        self._last = now
        if now is None or last is None or now[0] <= last[0]:
            return 0.0
        elapsed = now[0] - last[0]  # ticks summed over all CPUs
        busy = self.cpus * (1 - (now[1] - last[1]) / elapsed)
        self.own = (now[2] - last[2]) * self.tick / (elapsed / self.cpus)  # this process's
        return max(0.0, busy - self.own)


def share_threads(configured: int, other_busy: float) -> int:
    """Threads for this process: the usable cores others leave free, at most `configured`."""
    return max(1, min(configured, usable_cores() - round(other_busy)))
