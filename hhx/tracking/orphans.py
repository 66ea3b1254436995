"""Runs left RUNNING by a process that died without ending them.

A run hhx opens is ended by the process that opened it: FINISHED, FAILED with its reason, KILLED on
a Ctrl-C. A process killed outright (SIGKILL, the out-of-memory killer, a lost terminal or
machine) ends nothing, and MLflow would show its run RUNNING for ever. So every run hhx opens
carries the identity of its process (`hhx.host`, `hhx.pid`, `hhx.process`: the kernel's boot id,
PID namespace and the process's start time), and whenever hhx opens the experiment again
(`hhx.tracking.mlflow_run.ensure_experiment`: every evaluate, build, leaderboard and fine-tuning
run) it ends the RUNNING runs whose process is gone: KILLED, `hhx.status=killed`, and a
`hhx.failure_reason` that says which process ended and how to resume.

A run is only ended when this machine can tell for certain that its process has ended: same host
name and PID namespace, and an earlier boot or no live process with that PID and start time. Runs
of other machines (a shared tracking server) or of another container are left alone; one without
the tags (opened by another tool, or an older hhx) too. A resumed run (a fine-tuning output_dir, re-opened RUNNING) takes the new process's tags.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

HOST_TAG = "hhx.host"
PID_TAG = "hhx.pid"
PROCESS_TAG = "hhx.process"  # "<boot id>/<pid namespace>/<start time in clock ticks>"


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _start_ticks(pid: int) -> str | None:
    """The process's start time after boot (clock ticks, field 22 of /proc/<pid>/stat)."""
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    # the command name (field 2) is in parentheses and may hold spaces: split after it
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def _pid_namespace(pid: int | str = "self") -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def process_identity(pid: int | None = None) -> str | None:
    """`<boot id>/<pid namespace>/<start ticks>` of a live process; None where /proc cannot say
    (not Linux, or the process is gone)."""
    pid = os.getpid() if pid is None else pid
    boot, ns, start = (_read("/proc/sys/kernel/random/boot_id"), _pid_namespace(pid),
                       _start_ticks(pid))
    if boot is None or ns is None or start is None:
        return None
    return f"{boot}/{ns}/{start}"


def process_tags(pid: int | None = None) -> dict[str, str]:
    """The tags that name the process running a run (this one by default)."""
    pid = os.getpid() if pid is None else pid
    tags = {HOST_TAG: socket.gethostname(), PID_TAG: str(pid)}
    identity = process_identity(pid)
    if identity is not None:
        tags[PROCESS_TAG] = identity
    return tags


def process_gone(tags: dict[str, str]) -> bool:
    """Whether the process these run tags name has certainly ended (False when unsure)."""
    recorded = tags.get(PROCESS_TAG)
    pid = tags.get(PID_TAG, "")
    if tags.get(HOST_TAG) != socket.gethostname() or not recorded or not pid.isdigit():
        return False
    mine = process_identity()
    if mine is None:
        return False
    boot, ns, _ = recorded.split("/", 2) if recorded.count("/") >= 2 else ("", "", "")
    my_boot, my_ns, _ = mine.split("/", 2)
    if ns != my_ns:
        return False  # another container's processes are not visible from here
    if boot != my_boot:
        return True  # the machine rebooted since: every process of that boot has ended
    return process_identity(int(pid)) != recorded  # gone, or the PID now names another process


def reap_orphans(client: Any, experiment_id: str) -> list[str]:
    """End KILLED the experiment's RUNNING runs whose process has died; returns their ids."""
    host = socket.gethostname().replace("'", "")
    if process_identity() is None:
        return []
    runs = client.search_runs(
        [experiment_id],
        filter_string=f"attributes.status = 'RUNNING' and tags.`{HOST_TAG}` = '{host}'",
        max_results=1000,
    )
    ended = []
    for run in runs:
        tags = run.data.tags
        if not process_gone(tags):
            continue
        client.set_tag(run.info.run_id, "hhx.status", "killed")
        client.set_tag(run.info.run_id, "hhx.failure_reason", (
            f"its process (pid {tags.get(PID_TAG)} on {tags.get(HOST_TAG)}) ended without "
            "ending the run (killed: SIGKILL, out of memory, or the machine went down); run the "
            "same command again: what hhx keeps (paid answers, fine-tuning checkpoints) is reused"))
        client.set_terminated(run.info.run_id, status="KILLED")
        ended.append(run.info.run_id)
    return ended
