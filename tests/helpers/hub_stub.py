"""A local stand-in for the Hugging Face Hub's HTTP API: the endpoints `huggingface_hub` calls to
resolve a revision, list a dataset's tree and download a file (HEAD then GET on /resolve/). No
network: tests point HF_ENDPOINT at it. `files` maps repo -> {path: bytes}; a path in `lfs` is
served as an LFS file (sha256 checksum), others by git blob id. `cut` maps a path to a number of
bytes: the GET sends only that many (a truncated download); `corrupt` serves changed bytes of
the announced size. `requests` records (method, path) of every request, `auth` the
Authorization headers.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlparse

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def blob_id(data: bytes) -> str:
    return hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()  # noqa: S324


class HubStub:
    def __init__(self, files: dict[str, dict[str, bytes]], lfs: set[str] | None = None):
        self.files, self.lfs = files, set(lfs or ())
        self.cut: dict[str, int] = {}
        self.corrupt: set[str] = set()
        self.requests: list[tuple[str, str]] = []
        self.auth: set[str] = set()  # the Authorization headers seen
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:  # noqa: N802
                stub.serve(self, head=True)

            def do_GET(self) -> None:  # noqa: N802
                stub.serve(self, head=False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> HubStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ----------------------------------------------------------------------------------------

    def _repo(self, parts: list[str]) -> str | None:
        repo = "/".join(parts[:2])
        return repo if repo in self.files else None

    def entry(self, repo: str, path: str) -> dict[str, Any]:
        data = self.files[repo][path]
        out: dict[str, Any] = {"type": "file", "oid": blob_id(data), "size": len(data),
                               "path": path}
        if path in self.lfs:
            out["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data),
                          "pointerSize": 130}
        return out

    def serve(self, h: BaseHTTPRequestHandler, head: bool) -> None:
        url = urlparse(h.path)
        path = unquote(url.path)
        self.requests.append(("HEAD" if head else "GET", path))
        self.auth.add(h.headers.get("Authorization") or "")
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "datasets"]:
            return self.api(h, parts[2:])
        if parts[0] == "datasets" and "resolve" in parts:
            i = parts.index("resolve")
            repo = "/".join(parts[1:i])
            name = "/".join(parts[i + 2:])
            return self.resolve(h, repo, name, head)
        return self.send(h, 404, b'{"error": "not found"}')

    def api(self, h: BaseHTTPRequestHandler, parts: list[str]) -> None:
        repo = self._repo(parts)
        if repo is None:
            return self.send(h, 404, b'{"error": "Repository not found"}',
                             {"X-Error-Code": "RepoNotFound"})
        kind = parts[2] if len(parts) > 2 else ""
        if kind == "revision":
            return self.send(h, 200, json.dumps({"id": repo, "sha": COMMIT}).encode())
        if kind == "tree":
            folder = "/".join(parts[4:])
            names = sorted(p for p in self.files[repo]
                           if not folder or p.startswith(folder + "/"))
            body = [self.entry(repo, p) for p in names]
            return self.send(h, 200, json.dumps(body).encode())
        return self.send(h, 404, b"{}")

    def resolve(self, h: BaseHTTPRequestHandler, repo: str, name: str, head: bool) -> None:
        data = self.files.get(repo, {}).get(name)
        if data is None:
            return self.send(h, 404, b"", {"X-Error-Code": "EntryNotFound"})
        etag = hashlib.sha256(data).hexdigest() if name in self.lfs else blob_id(data)
        headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{etag}"'}
        body = data
        if not head and name in self.corrupt:
            body = bytes(reversed(data))
        if not head and name in self.cut:
            body = data[: self.cut[name]]
        self.send(h, 200, b"" if head else body, headers, length=len(data) if head else None)

    @staticmethod
    def send(h: BaseHTTPRequestHandler, status: int, body: bytes,
             headers: dict[str, str] | None = None, length: int | None = None) -> None:
        h.send_response(status)
        for key, value in (headers or {}).items():
            h.send_header(key, value)
        h.send_header("Content-Length", str(len(body) if length is None else length))
        h.end_headers()
        if body:
            h.wfile.write(body)
