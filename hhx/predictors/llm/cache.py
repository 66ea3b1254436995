"""Persistent response cache: one SQLite file shared by every model, run and process.

A key is the SHA-256 of everything that determines an answer (see `plan.request_identity`), so
one model's answer is never served for another's request. Only successful responses are stored,
each committed as it arrives: a crash or Ctrl-C loses nothing, and a rerun sends only what is
missing. WAL mode and a busy timeout let several processes write at once.

Single flight across processes: before a request is sent its key is *claimed* (table `claims`,
taken in one write transaction with the check that no answer exists). A process that finds a key
claimed by a live owner does not send it but waits for the owner's answer; a claim whose owner died
(its process is gone, or its lease was not renewed for `lease_s`) is taken over. So two runs that
share the cache never pay for the same request twice.

A full disk never loses a paid answer: a reserve file (`<cache>.reserve`, `reserve_bytes`) is
kept beside the database; when a write fails for lack of space the reserve is deleted and the
write retried, so every answer already paid for (those in flight included) is stored, and the
run then stops with one line (`StorageFull`).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from hhx.errors import PredictorError

CACHE_FILE = "llm_responses.sqlite"
RESERVE_BYTES = 8 << 20  # room for thousands of answers once the disk is full
LEASE_S = 30.0  # a claim not renewed for this long is abandoned (its owner hung or died)
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    response TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    expires_at REAL NOT NULL
)""",
)
Claim = Literal["answered", "mine", "busy"]


class StorageFull(PredictorError):
    """The disk under the cache is full; `saved` says whether the answer was stored anyway."""

    def __init__(self, message: str, saved: bool) -> None:
        super().__init__(message)
        self.saved = saved


def cache_key(identity: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a request's identity (sorted keys, no whitespace)."""
    blob = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def is_storage_full(exc: BaseException) -> bool:
    """SQLite's SQLITE_FULL ("database or disk is full"), ENOSPC, or the I/O error SQLite reports
    when a WAL write finds no space."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc).lower()
    return isinstance(exc, sqlite3.Error) and ("full" in text or "disk i/o error" in text)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


class ResponseCache:
    """Key -> response dict: `get_many`, `claim`, `put` (commits at once), `release`."""

    def __init__(
        self,
        path: str | Path,
        busy_timeout_s: float = 60.0,
        reserve_bytes: int | None = None,
        lease_s: float = LEASE_S,
    ) -> None:
        self.path = Path(path)
        self.reserve_path = self.path.with_name(self.path.name + ".reserve")
        self.reserve_bytes = RESERVE_BYTES if reserve_bytes is None else reserve_bytes
        self.lease_s = lease_s
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.owner = f"{self.host}:{self.pid}:{uuid.uuid4().hex[:12]}"
        self.reserve_used = False
        self._lock = threading.Lock()
        self._beat: threading.Thread | None = None
        self._beat_stop = threading.Event()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Autocommit: every statement outside BEGIN is its own transaction, durable on return.
            self._conn = sqlite3.connect(
                self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL survives a crash
            for statement in _SCHEMA:
                self._conn.execute(statement)
        except (sqlite3.Error, OSError) as exc:
            if is_storage_full(exc):
                raise PredictorError(
                    f"response cache {self.path}: the disk is full; free space there (or set "
                    "paths.cache_dir elsewhere) and rerun"
                ) from None
            raise PredictorError(
                f"response cache {self.path}: cannot open ({exc}); check paths.cache_dir"
            ) from None
        self._ensure_reserve()

    # --- the reserve ----------------------------------------------------------------------------

    def _ensure_reserve(self) -> None:
        """Create the reserve file (real blocks, not a sparse file) if it is missing."""
        if self.reserve_bytes <= 0:
            return
        try:
            if self.reserve_path.is_file() and self.reserve_path.stat().st_size >= self.reserve_bytes:
                return
            fd = os.open(self.reserve_path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.posix_fallocate(fd, 0, self.reserve_bytes)
            finally:
                os.close(fd)
        except OSError as exc:
            self.reserve_path.unlink(missing_ok=True)
            if is_storage_full(exc):
                raise PredictorError(
                    f"response cache {self.path}: the disk is full (no room for the "
                    f"{self.reserve_bytes >> 20} MiB that keep paid answers safe); free space "
                    "there (or set paths.cache_dir elsewhere) and rerun"
                ) from None
            raise PredictorError(f"response cache {self.reserve_path}: cannot write ({exc})") from None

    def _release_reserve(self) -> bool:
        if not self.reserve_path.exists():
            return False
        self.reserve_path.unlink(missing_ok=True)
        self.reserve_used = True
        return True

    # --- reads ----------------------------------------------------------------------------------

    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        wanted = list(dict.fromkeys(keys))
        found: dict[str, dict[str, Any]] = {}
        with self._lock:
            for start in range(0, len(wanted), 500):  # stay under SQLite's variable limit
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, response FROM responses WHERE key IN ({marks})", chunk
                ).fetchall()
                for key, blob in rows:
                    found[key] = json.loads(blob)
        return found

    def get(self, key: str) -> dict[str, Any] | None:
        return self.get_many([key]).get(key)

    # --- single flight --------------------------------------------------------------------------

    def _owner_alive(self, host: str, pid: int, expires_at: float, now: float) -> bool:
        if expires_at <= now:
            return False
        return host != self.host or _pid_alive(pid)

    def claim(self, key: str) -> Claim:
        """`answered` (a response is stored), `mine` (this process may send it) or `busy` (a live
        owner is sending it). Check and claim are one write transaction across processes."""
        now = time.time()
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                if self._conn.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone():
                    state: Claim = "answered"
                else:
                    row = self._conn.execute(
                        "SELECT owner, host, pid, expires_at FROM claims WHERE key = ?", (key,)
                    ).fetchone()
                    if row and row[0] != self.owner and self._owner_alive(row[1], row[2], row[3], now):
                        state = "busy"
                    else:
                        self._conn.execute(
                            "INSERT OR REPLACE INTO claims (key, owner, host, pid, expires_at)"
                            " VALUES (?, ?, ?, ?, ?)",
                            (key, self.owner, self.host, self.pid, now + self.lease_s),
                        )
                        state = "mine"
                self._conn.execute("COMMIT")
            except BaseException as exc:
                self._rollback()
                if isinstance(exc, (sqlite3.Error, OSError)) and is_storage_full(exc):
                    # Nothing is sent for this key; the reserve goes to answers still in flight.
                    self._release_reserve()
                    raise StorageFull(
                        f"the disk under the response cache {self.path.parent} is full: no "
                        "further request is sent; free space there and rerun the same command",
                        saved=True,
                    ) from None
                raise
        return state

    def release(self, keys: Iterable[str]) -> None:
        """Give up this process's claims on keys it will not answer (failed, interrupted)."""
        keys = list(keys)
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                try:
                    self._conn.execute(
                        f"DELETE FROM claims WHERE owner = ? AND key IN ({marks})",
                        [self.owner, *chunk],
                    )
                except sqlite3.Error:
                    pass  # an unreleased claim only expires after lease_s

    def release_all(self) -> None:
        with self._lock:
            try:
                self._conn.execute("DELETE FROM claims WHERE owner = ?", (self.owner,))
            except sqlite3.Error:
                pass

    def start_heartbeat(self) -> None:
        """Renew this process's claims every lease_s / 3 (a daemon thread) until stopped."""
        if self._beat is not None:
            return
        self._beat_stop.clear()

        def beat() -> None:
            while not self._beat_stop.wait(self.lease_s / 3):
                with self._lock:
                    try:
                        self._conn.execute(
                            "UPDATE claims SET expires_at = ? WHERE owner = ?",
                            (time.time() + self.lease_s, self.owner),
                        )
                    except sqlite3.Error:
                        pass  # a full disk or a busy database: the next beat tries again

        self._beat = threading.Thread(target=beat, name="hhx-cache-heartbeat", daemon=True)
        self._beat.start()

    def stop_heartbeat(self) -> None:
        if self._beat is not None:
            self._beat_stop.set()
            self._beat.join(timeout=2)
            self._beat = None

    # --- writes ---------------------------------------------------------------------------------

    def put(self, key: str, response: dict[str, Any], backend: str, model: str) -> None:
        """Store one successful response and drop this process's claim on it, in one commit.
        The first write of a key wins (same request, same key).

        On a full disk the reserve is released and the write retried; the answer is then stored
        and StorageFull(saved=True) says the run must stop. StorageFull(saved=False) only when
        even that failed (the caller keeps the answer in memory).
        """
        blob = json.dumps(response, ensure_ascii=True, allow_nan=False)
        row = (key, time.time(), backend, model, blob)
        with self._lock:
            try:
                self._insert_locked(row)
                return
            except (sqlite3.Error, OSError) as exc:
                self._rollback()
                if not is_storage_full(exc):
                    raise
                released = self._release_reserve()
            saved = False
            if released:
                try:
                    self._insert_locked(row)
                    saved = True
                except (sqlite3.Error, OSError):
                    self._rollback()
        where = self.path.parent
        if saved:
            raise StorageFull(
                f"the disk under the response cache {where} is full: answers received so far are "
                "stored (using the space kept in reserve); free space there and rerun the same "
                "command to continue",
                saved=True,
            )
        raise StorageFull(
            f"the disk under the response cache {where} is full and the reserve is used up: "
            "free space there and rerun the same command",
            saved=False,
        )

    def _insert_locked(self, row: tuple[Any, ...]) -> None:
        self._conn.execute("BEGIN IMMEDIATE")
        self._conn.execute(
            "INSERT OR IGNORE INTO responses (key, created_at, backend, model, response)"
            " VALUES (?, ?, ?, ?, ?)",
            row,
        )
        self._conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (row[0], self.owner))
        self._conn.execute("COMMIT")

    def _rollback(self) -> None:
        if self._conn.in_transaction:
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self.stop_heartbeat()
        self.release_all()
        with self._lock:
            self._conn.close()
