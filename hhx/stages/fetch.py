"""`stage=fetch`: download the official HouseholdBench release from the Hugging Face Hub into the
layout `data=official` reads.

    python -m hhx stage=fetch data=official                          # eval sample: 17 tasks, 13 MB
    python -m hhx stage=fetch data=official +fetch.release=full      # full release: 6.5 GB
    python -m hhx stage=fetch data=official +fetch.tasks=[cons_sce_growth,house_sce_move]
    python -m hhx stage=fetch data=official +fetch.release=full +fetch.raw=true  # + supplied raw

Where the files come from (hhx/bench/catalog.py): the eval sample is the top of
`householdbench/householdbench-eval` (`{pre_cutoff,post_cutoff}/<task>.jsonl`, `manifest.csv`;
its `data/` Parquet copies are skipped); the full release is the `householdbench/` folder of
`householdbench/householdbench-full` (`tabular/`, `prompts/`, `splits/`, `baselines/`,
`manifest.csv`), and its `raw/` folder the 94 supplied raw inputs, which go to data=raw's
raw_dir (conf/data/raw.yaml) for rebuilding. Options (`+fetch.<key>=`): release (eval | full),
tasks (all | a list; default all 17 released tasks, or the `task=` given), raw (true: also the
supplied raw inputs), revision (a branch, tag or commit; default main).

Where they go: `data.root` when given, else `<data_dir>/official/householdbench_evalsample`
(eval) or `<data_dir>/official/householdbench` (full). Files are fetched with `huggingface_hub`
(HF_ENDPOINT, HF_TOKEN, HF_HOME / HF_HUB_CACHE honoured; with HF_HUB_OFFLINE=1 nothing is asked
of the Hub: one line says what is already here) into its cache, checked against the Hub's
checksum (sha256 for LFS files, the git blob id otherwise), then linked (or copied) into place
through a temporary name and an atomic rename. A rerun skips what is in place and checked
(`hhx_fetch.json` in the root records each file's checksum and the commit); a file cut short is
one line and is fetched again by the next run.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from hhx.bench import catalog as cat
from hhx.errors import ConfigError, DataError
from hhx.io import write_json_atomic

STATE_FILE = "hhx_fetch.json"
RELEASES = ("eval", "full")
LABELS = {"eval": "eval sample", "full": "full release", "raw": "supplied raw inputs"}
OPTIONS = ("release", "tasks", "raw", "revision")
DEFAULT_ENDPOINT = "https://huggingface.co"
# Files of a release that belong to no one task (kept whatever the task selection).
SHARED_FILES = {"manifest.csv", "LICENSE.md", "README.md", "splits/manifest.csv",
                "splits/split_config.toml", "splits/READY.json", "baselines/manifest.csv",
                "baselines/READY.json"}


@dataclass(frozen=True)
class Remote:
    """One file to fetch: its path in the repository, where it goes, size and checksum."""

    path: str
    dest: Path
    size: int
    sha256: str | None  # LFS files
    blob_id: str  # git blob id (sha1 of "blob <size>\0" + content)


@dataclass(frozen=True)
class Plan:
    repo: str
    folder: str  # the repository folder that maps onto `root` ("" = the top)
    root: Path
    tasks: tuple[str, ...]
    release: str


# --------------------------------------------------------------------------------------------
# settings


def options(cfg: DictConfig) -> dict[str, Any]:
    given = cfg.get("fetch") or {}
    plain = OmegaConf.to_container(given, resolve=True) if OmegaConf.is_config(given) else given
    if not isinstance(plain, dict):
        raise ConfigError("fetch: use +fetch.<key>=<value> with keys " + ", ".join(OPTIONS))
    for key in plain:
        if key not in OPTIONS:
            close = difflib.get_close_matches(str(key), OPTIONS, n=1)
            hint = f"; did you mean fetch.{close[0]}" if close else ""
            raise ConfigError(f"fetch.{key!s}: unknown setting{hint} (known: {', '.join(OPTIONS)})")
    out = {"release": "eval", "tasks": None, "raw": False, "revision": "main", **plain}
    if out["release"] not in RELEASES:
        raise ConfigError(f"fetch.release={out['release']}: choose eval (the eval sample, "
                          f"{cat.EVAL_SAMPLE_MB} MB) or full (the full release, "
                          f"{cat.FULL_RELEASE_GB} GB)")
    return out


def _task_given(cfg: DictConfig) -> str | None:
    """The `task=` of the command line, if any (the config's default task is not a choice)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        overrides = HydraConfig.get().overrides.task
    except (ValueError, ImportError):
        return None
    for item in overrides:
        key, _, value = str(item).partition("=")
        if key == "task":
            return value
    return None


def selected_tasks(cfg: DictConfig, wanted: Any) -> list[str]:
    """The tasks to fetch: `fetch.tasks` (all | a list), else the task= given, else all."""
    released = cat.downloadable_tasks()
    if wanted is None:
        given = _task_given(cfg)
        wanted = [given] if given else "all"
    if wanted == "all":
        return released
    names = [wanted] if isinstance(wanted, str) else [str(t) for t in wanted]
    for name in names:
        row = cat.catalog().get(name)
        if row is None:
            close = difflib.get_close_matches(name, list(cat.catalog()), n=1)
            hint = f"; did you mean {close[0]}" if close else ""
            raise ConfigError(f"fetch: unknown task {name!r}{hint}")
        if not row.downloadable:
            raise ConfigError(
                f"fetch: {name} is not in the official release ({row.licence}); rebuild it "
                f"from your own files with data=raw (needs: {row.own_downloads}); see README "
                "'Real data'")
    return names


def default_root(cfg: DictConfig, release: str) -> Path:
    """data.root with data=official, else <data_dir>/official/<the reference's folder name>
    (another data group's root is its own build, never a download's place)."""
    from hhx.bounds import enum_text

    official = enum_text(cfg.data.source) == "official"
    if official and not OmegaConf.is_missing(cfg.data, "root"):
        return Path(str(cfg.data.root))
    name = "householdbench_evalsample" if release == "eval" else "householdbench"
    return Path(str(cfg.paths.data_dir)) / "official" / name


def raw_dir(cfg: DictConfig) -> Path:
    from hhx.stages.listing import _data_config

    return Path(_data_config("raw", cfg).raw_dir)


def plans(cfg: DictConfig, opts: dict[str, Any]) -> list[Plan]:
    tasks = tuple(selected_tasks(cfg, opts["tasks"]))
    root = default_root(cfg, opts["release"])
    if opts["release"] == "eval":
        out = [Plan(cat.EVAL_REPO, "", root, tasks, "eval")]
    else:
        out = [Plan(cat.FULL_REPO, cat.FULL_RELEASE_DIR, root, tasks, "full")]
    if opts["raw"]:
        out.append(Plan(cat.FULL_REPO, cat.FULL_RAW_DIR, raw_dir(cfg), (), "raw"))
    return out


def expected_files(plan: Plan) -> list[str]:
    """What the plan's root holds once fetched, known without the Hub (offline count)."""
    if plan.release == "raw":
        return []
    per_task = cat.eval_sample_files if plan.release == "eval" else cat.release_files
    return ["manifest.csv", *(f for t in plan.tasks for f in per_task(t))]


# --------------------------------------------------------------------------------------------
# the Hub


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def offline() -> bool:
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
               for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def cache_dir() -> str:
    """HF_HUB_CACHE, else HF_HOME/hub, read now (huggingface_hub reads them at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface")
    return os.path.join(os.path.expanduser(home), "hub")


def hub_error(exc: BaseException, what: str) -> str:
    """One line for a Hub failure: what failed, why, the fix."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, GatedRepoError):
        return f"{what}: the dataset needs an accepted licence and a login; set HF_TOKEN"
    if isinstance(exc, RevisionNotFoundError):
        return f"{what}: no such revision; check +fetch.revision"
    if isinstance(exc, RepositoryNotFoundError):
        return (f"{what}: not found at {endpoint()} (or it needs a login: set HF_TOKEN); "
                "check HF_ENDPOINT")
    if isinstance(exc, HfHubHTTPError):
        status = getattr(getattr(exc, "response", None), "status_code", "?")
        return f"{what}: the Hub answered HTTP {status}; try again later"
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
    return (f"{what}: cannot reach the Hugging Face Hub at {endpoint()} ({first}); check the "
            "network or HF_ENDPOINT, or set HF_HUB_OFFLINE=1 to see what is already here")


def resolve_commit(api: Any, repo: str, revision: str) -> str:
    try:
        return str(api.dataset_info(repo, revision=revision).sha)
    except Exception as exc:
        raise DataError(hub_error(exc, f"fetch: {repo}@{revision}")) from None


def remote_files(api: Any, plan: Plan, commit: str) -> list[Remote]:
    """The plan's files in the repository at `commit`, with the selection applied (the
    release's folder, plus the dataset's LICENSE.md and README.md at its top)."""
    try:  # the whole tree: a few hundred entries, one request
        entries = list(api.list_repo_tree(plan.repo, recursive=True, revision=commit,
                                          repo_type="dataset"))
    except Exception as exc:
        raise DataError(hub_error(exc, f"fetch: listing {plan.repo}")) from None
    out = []
    for entry in entries:
        if not hasattr(entry, "size"):  # a folder
            continue
        rel = relative_path(plan, entry.path)
        if rel is not None:
            lfs = getattr(entry, "lfs", None)
            out.append(Remote(entry.path, plan.root / rel, int(entry.size),
                              lfs.sha256 if lfs is not None else None, entry.blob_id))
    return sorted(out, key=lambda r: r.path)


def relative_path(plan: Plan, path: str) -> str | None:
    """Where a repository file goes under the plan's root (None: not part of the plan)."""
    prefix = f"{plan.folder}/" if plan.folder else ""
    if plan.release == "raw":
        return path[len(prefix):] if path.startswith(prefix) else None
    if path.startswith(prefix):
        rel = path[len(prefix):]
    elif path in ("LICENSE.md", "README.md"):  # the full dataset's notices, at its top
        rel = path
    else:
        return None
    if plan.release == "eval" and (rel.startswith("data/") or rel.startswith(".")):
        return None  # the dataset viewer's Parquet copies; .gitattributes
    stem = Path(rel).name.split(".")[0]
    if stem in cat.catalog():
        return rel if stem in plan.tasks else None
    return rel if rel in SHARED_FILES else None


# --------------------------------------------------------------------------------------------
# files


def checksum_ok(path: Path, remote: Remote) -> bool:
    """The file's content matches the Hub's checksum (sha256 for LFS, the git blob id else)."""
    if remote.sha256:
        digest = hashlib.sha256()
    else:
        digest = hashlib.sha1()  # noqa: S324 - git's blob id, not a security use
        digest.update(f"blob {path.stat().st_size}\0".encode())
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest() == (remote.sha256 or remote.blob_id)


def read_state(root: Path) -> dict[str, Any]:
    try:
        return json.loads((root / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}


def in_place(remote: Remote, state: dict[str, Any]) -> bool:
    """Fetched and checked before: same checksum recorded, same size on disk."""
    recorded = (state.get("files") or {}).get(remote.path)
    return (recorded == (remote.sha256 or remote.blob_id) and remote.dest.is_file()
            and remote.dest.stat().st_size == remote.size)


def place(src: Path, dest: Path) -> None:
    """`src` at `dest` through a temporary name and an atomic rename (a hard link when the
    cache is on the same disk, else a copy)."""
    import shutil

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    tmp.unlink(missing_ok=True)
    try:
        os.link(src, tmp)
    except OSError:
        shutil.copyfile(src, tmp)
    os.replace(tmp, dest)


def drop_cached(path: str) -> None:
    """Remove a bad file from the Hub cache (the snapshot link and its blob) so a rerun fetches
    it again."""
    link = Path(path)
    blob = link.resolve()
    link.unlink(missing_ok=True)
    if blob != link:
        blob.unlink(missing_ok=True)


class Progress:
    """Bytes done of the plan's total, with rate and ETA, printed at most every `every` s."""

    def __init__(self, total: int, files: int, every: float = 2.0):
        self.total, self.files, self.every = total, files, every
        self.done = self.current = 0
        self.index = 0
        self.start = self.last = time.monotonic()

    def line(self, name: str) -> str:
        elapsed = max(time.monotonic() - self.start, 1e-6)
        got = self.done + self.current
        rate = got / elapsed
        eta = (self.total - got) / rate if rate > 0 else float("nan")
        eta_text = f"{int(eta // 60)}:{int(eta % 60):02d}" if eta == eta else "?"
        return (f"fetch: [{self.index}/{self.files}] {name}: {mb(got)} of {mb(self.total)} "
                f"({100 * got / max(self.total, 1):.0f}%), {mb(rate)}/s, ETA {eta_text}")

    def tick(self, name: str, current: int) -> None:
        self.current = current
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            print(self.line(name), flush=True)

    def file_done(self, name: str, size: int) -> None:
        """A line when the last one is `every` s old, and for the last file."""
        self.done += size
        self.current = 0
        now = time.monotonic()
        if now - self.last >= self.every or self.index == self.files:
            self.last = now
            print(self.line(name), flush=True)


def mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB" if n < 1e9 else f"{n / 1e9:.2f} GB"


def _bar_class(progress: Progress, name: str) -> type:
    """A tqdm class huggingface_hub's download drives: it feeds `progress`, shows nothing."""
    from tqdm.std import tqdm

    class Bar(tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.pop("name", None)
            super().__init__(*args, **{**kwargs, "disable": True})
            self.got = int(kwargs.get("initial") or 0)

        def update(self, n: float | None = 1) -> bool | None:
            self.got += int(n or 0)
            progress.tick(name, self.got)
            return None

    return Bar


def download(remote: Remote, repo: str, commit: str, progress: Progress) -> None:
    """One file: from the Hub (or its cache) into place, checked; one line when it fails."""
    from huggingface_hub import hf_hub_download

    try:
        cached = hf_hub_download(repo, remote.path, repo_type="dataset",
                                 revision=commit, cache_dir=cache_dir(), endpoint=endpoint(),
                                 tqdm_class=_bar_class(progress, remote.path))
    except Exception as exc:
        if "Consistency check failed" in str(exc) or type(exc).__name__ == "RemoteProtocolError":
            raise DataError(f"fetch: {repo}/{remote.path}: the download was cut short ("
                            f"expected {remote.size:,} bytes); run the same command again to "
                            "fetch it again") from None
        raise DataError(hub_error(exc, f"fetch: {repo}/{remote.path}")) from None
    if Path(cached).stat().st_size != remote.size or not checksum_ok(Path(cached), remote):
        drop_cached(cached)
        raise DataError(f"fetch: {repo}/{remote.path}: content does not match the Hub's "
                        f"checksum {(remote.sha256 or remote.blob_id)[:12]} (a bad download, "
                        "removed from the cache); run the same command again")
    place(Path(cached).resolve(), remote.dest)  # the blob, not the cache's relative link
    progress.file_done(remote.path, remote.size)


def required_files(plan: Plan) -> list[str]:
    """What each selected task must have in the repository (relative to the plan's root): its
    pre-cutoff eval-sample file, or its table, prompts and split sidecar."""
    if plan.release == "raw":
        return []
    if plan.release == "eval":
        return [f for t in plan.tasks for f in cat.eval_sample_files(t)]
    return [f for t in plan.tasks for f in cat.release_files(t) if not f.startswith("baselines/")]


def check_complete(plan: Plan, remotes: list[Remote], where: str) -> None:
    have = {r.dest for r in remotes}
    missing = [f for f in required_files(plan) if plan.root / f not in have]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise DataError(f"fetch: {where} has no {missing[0]}{more}; the release's layout is not "
                        "the one hhx knows (hhx/bench/catalog.py); try +fetch.revision=<tag>")


def fetch_plan(api: Any, plan: Plan, revision: str) -> tuple[str, int]:
    """Fetch one plan; returns (commit, files fetched now)."""
    commit = resolve_commit(api, plan.repo, revision)
    remotes = remote_files(api, plan, commit)
    if not remotes:
        raise DataError(f"fetch: {plan.repo}@{commit[:8]} has no files for "
                        f"{plan.folder or 'the selection'}; check +fetch.revision")
    where = f"{plan.repo}@{commit[:8]}" + (f"/{plan.folder}" if plan.folder else "")
    check_complete(plan, remotes, where)
    state = read_state(plan.root)
    if state.get("repo") not in (None, plan.repo):
        raise DataError(f"fetch: {plan.root} holds {state['repo']}, not {plan.repo}; choose "
                        "another data.root")
    todo = [r for r in remotes if not in_place(r, state)]
    total = sum(r.size for r in todo)
    print(f"fetch: {where}: {len(remotes)} files, {len(todo)} to download ({mb(total)}) into "
          f"{plan.root}", flush=True)
    files = dict(state.get("files") or {})
    progress = Progress(total, len(todo))
    for remote in todo:
        progress.index += 1
        download(remote, plan.repo, commit, progress)
        files[remote.path] = remote.sha256 or remote.blob_id
        write_json_atomic(plan.root / STATE_FILE, {"repo": plan.repo, "commit": commit,
                                                   "files": files})  # a rerun resumes here
    if not todo:
        write_json_atomic(plan.root / STATE_FILE, {"repo": plan.repo, "commit": commit,
                                                   "files": files})
    return commit, len(todo)


def offline_line(plan: Plan) -> str:
    want = expected_files(plan)
    if plan.release == "raw":
        here = sum(1 for _ in plan.root.rglob("*") if _.is_file()) if plan.root.is_dir() else 0
        return (f"fetch: offline (HF_HUB_OFFLINE=1): nothing downloaded; {here} raw files already "
                f"in {plan.root}")
    present = [f for f in want if (plan.root / f).is_file()]
    tasks = [t for t in plan.tasks if all((plan.root / f).is_file() for f in
             (cat.eval_sample_files(t) if plan.release == "eval" else cat.release_files(t)))]
    return (f"fetch: offline (HF_HUB_OFFLINE=1): nothing downloaded; {len(present)} of "
            f"{len(want)} files of the {LABELS[plan.release]} already in {plan.root} "
            f"({len(tasks)} of {len(plan.tasks)} tasks complete)")


def next_command(plan: Plan) -> str:
    task = plan.tasks[0]
    if plan.release == "eval":
        return (f"python -m hhx data=official data.root={plan.root} data.layout=eval_sample "
                f"data.split=pre_cutoff data.max_examples=200 task={task} model=no_change")
    return (f"python -m hhx data=official data.root={plan.root} data.max_examples=200 "
            f"task={task} model=xgboost")


def run(cfg: DictConfig) -> dict[str, Any]:
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    opts = options(cfg)
    todo = plans(cfg, opts)
    if offline():
        lines = [offline_line(p) for p in todo]
        for line in lines:
            print(line)
        return {"offline": True, "lines": lines}
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint())
    out: dict[str, Any] = {"offline": False, "plans": []}
    for plan in todo:
        commit, fetched = fetch_plan(api, plan, str(opts["revision"]))
        out["plans"].append({"repo": plan.repo, "folder": plan.folder, "root": str(plan.root),
                             "commit": commit, "fetched": fetched, "tasks": list(plan.tasks)})
    main = todo[0]
    if main.release != "raw":
        print(f"fetch: done: {len(main.tasks)} tasks in {main.root}; run one:\n  "
              f"{next_command(main)}")
    return out
