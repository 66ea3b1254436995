"""Persistent response cache: one SQLite file shared by every model, run and process.

A key is the SHA-256 of everything that determines an answer (see `plan.request_identity`), so
one model's answer is never served for another's request. Only successful responses are stored,
each committed as it arrives: a crash or Ctrl-C loses nothing, and a rerun sends only what is
missing. WAL mode and a busy timeout let several processes write at once.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hhx.errors import PredictorError

CACHE_FILE = "llm_responses.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    response TEXT NOT NULL
)
"""


def cache_key(identity: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a request's identity (sorted keys, no whitespace)."""
    blob = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """Key -> response dict. `get_many` for lookups, `put` commits one response at once."""

    def __init__(self, path: str | Path, busy_timeout_s: float = 60.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            # Autocommit: every INSERT is its own transaction, durable once it returns.
            self._conn = sqlite3.connect(
                self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL survives a crash
            self._conn.execute(_SCHEMA)
        except sqlite3.Error as exc:
            raise PredictorError(
                f"response cache {self.path}: cannot open ({exc}); check paths.cache_dir"
            ) from None

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

    def put(self, key: str, response: dict[str, Any], backend: str, model: str) -> None:
        """Store one successful response; the first write of a key wins (same request, same key)."""
        blob = json.dumps(response, ensure_ascii=True, allow_nan=False)
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO responses (key, created_at, backend, model, response)"
                " VALUES (?, ?, ?, ?, ?)",
                (key, time.time(), backend, model, blob),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()
