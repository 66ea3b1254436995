"""`stage=list`: what can run here — every task and model, and what each needs.

    python -m hhx stage=list                                   # demo and data/raw checked
    python -m hhx stage=list data=official data.root=<download>  # also the official release

Tasks: survey, target type, years and rows of the official release (hhx/bench/catalog.csv),
whether the release ships it (`download`: `stage=fetch`) or it is rebuilt from one's own files
(`rebuild`), whether hhx builds it, and what data is here: `demo` (generated on demand; `built`
once it is), `raw` (the task's own input files under the raw layout of conf/data/raw.yaml — its
survey's first, then what they depend on — and which are missing, with who provides each),
`official` (the task's files in data.root with data=official, or where `stage=fetch` puts them).
Models: backend, what they need and what of it is missing here (the extra to install, the
weights, a GPU, an API key: hhx/predictors/needs.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from hhx.bounds import enum_text
from hhx.config import DataConfig, ModelConfig
from hhx.paths import register_resolvers
from hhx.predictors.base import model_schema
from hhx.predictors.needs import missing, needs
from hhx.surveys.registry import with_dependencies
from hhx.tasks.registry import CONF_DIR, load_task, task_names


def _data_config(name: str, cfg: DictConfig | None = None) -> DataConfig:
    """conf/data/<name>.yaml with its folders under this run's project root (`paths`)."""
    paths = cfg.paths if cfg is not None and cfg.get("paths") is not None else {"data_dir": "data"}
    root = OmegaConf.create({"paths": OmegaConf.to_container(paths, resolve=True)
                             if OmegaConf.is_config(paths) else paths})
    root.data = OmegaConf.merge(OmegaConf.structured(DataConfig),
                                OmegaConf.load(CONF_DIR / "data" / f"{name}.yaml"))
    OmegaConf.resolve(root)
    return OmegaConf.to_object(root.data)  # type: ignore[return-value]


def model_configs() -> dict[str, tuple[ModelConfig, bool]]:
    """conf/model/<name>.yaml -> (its config, whether it is a template taking model.name)."""
    register_resolvers()  # custom.yaml's name is `${hhx.custom_name:...}`
    out = {}
    for path in sorted((CONF_DIR / "model").glob("*.yaml")):
        raw = OmegaConf.load(path)
        assert isinstance(raw, DictConfig)
        raw.pop("defaults", None)  # its backend's own schema (model_schema)
        template = OmegaConf.is_missing(raw, "name")
        if template:
            raw.name = path.stem  # a template (e.g. openai_compatible): the name comes later
        root = OmegaConf.create({"model": raw})  # interpolations name `model.<key>`
        OmegaConf.resolve(root)
        schema = model_schema(str(raw.get("backend")))
        merged = OmegaConf.merge(OmegaConf.structured(schema), root.model)
        model = OmegaConf.to_object(merged)
        assert isinstance(model, ModelConfig)
        out[path.stem] = (model, template)
    return out


def model_rows() -> list[dict[str, Any]]:
    """Every model: backend, what it needs and what of that is missing here."""
    rows = []
    for name, (model, template) in model_configs().items():
        gaps = missing(model, template)
        rows.append({"model": name, "backend": enum_text(model.backend),
                     "needs": needs(model, template),
                     "missing here": "; ".join(gaps) if gaps else "nothing"})
    return rows


def task_inputs(task_name: str, raw_dir: Path) -> list[Path]:
    """The task's own raw inputs under `raw_dir`: its sources' files in the order the task names
    them (its survey first), then those of the sources they depend on (optional files left out)."""
    return task_inputs_of(load_task(task_name).intermediates, raw_dir)


def task_inputs_of(sources: list[str], raw_dir: Path) -> list[Path]:
    surveys = with_dependencies(sources)
    order = list(sources) + [n for n in surveys if n not in sources]
    seen, out = set(), []
    for name in order:
        survey = surveys[name]
        for key, rel in survey.raw.items():
            if rel and key not in survey.optional_raw:
                path = Path(rel).expanduser()
                path = path if path.is_absolute() else raw_dir / path
                if path not in seen:
                    seen.add(path)
                    out.append(path)
    return out


def _missing_raw(task_name: str, raw_dir: Path) -> list[Path]:
    """The task's raw inputs (`task_inputs`) absent under `raw_dir`, its own survey's first."""
    return [p for p in task_inputs(task_name, raw_dir) if not p.exists()]


def _rel(path: Path, raw_dir: Path) -> str:
    return path.relative_to(raw_dir).as_posix() if path.is_relative_to(raw_dir) else str(path)


def raw_state(task_name: str, raw_dir: Path) -> str:
    """`raw`, or what is missing: the first file, who provides it, and how many more."""
    from hhx.bench.catalog import provider_of

    inputs = task_inputs(task_name, raw_dir)
    missing = [p for p in inputs if not p.exists()]
    # the task's own survey first (not the macro series every task reads), and within it the
    # files only the user can get (IPUMS, PSID, ICPSR ...) before the supplied ones
    own = set(task_inputs_of(load_task(task_name).intermediates[:1], raw_dir))
    missing.sort(key=lambda p: (p not in own, provider_of(_rel(p, raw_dir)) is None))
    if not missing:
        return f"raw ({len(inputs)} files here)"
    rel = _rel(missing[0], raw_dir)
    who = provider_of(rel) or "supplied: +fetch.raw=true"
    return f"raw: {len(missing)} of {len(inputs)} files missing, first {rel} ({who})"


def official_roots(cfg: DictConfig) -> list[Path]:
    """Where the official files may be: data.root with data=official, else where stage=fetch
    puts the eval sample and the full release."""
    if enum_text(cfg.data.source) == "official" and not OmegaConf.is_missing(cfg.data, "root"):
        return [Path(str(cfg.data.root))]
    base = Path(str(cfg.paths.data_dir)) / "official" if cfg.get("paths") else Path("data")
    return [base / "householdbench", base / "householdbench_evalsample"]


def official_state(task_name: str, roots: list[Path], downloadable: bool) -> str | None:
    for root in roots:
        if (root / "prompts" / f"{task_name}.jsonl").is_file():
            return "official release"
        if any((root / c / f"{task_name}.jsonl").is_file() for c in ("pre_cutoff", "post_cutoff")):
            return "official eval sample"
    if downloadable:
        return "official: not fetched (stage=fetch data=official)"
    return None


def task_rows(cfg: DictConfig) -> list[dict[str, Any]]:
    from hhx.bench.catalog import catalog

    demo, raw = _data_config("demo", cfg), _data_config("raw", cfg)
    roots, facts = official_roots(cfg), catalog()
    rows = []
    for name in task_names():
        task, row = load_task(name), facts.get(name)
        builds = bool(task.builder)
        present = []
        if builds:
            built = (Path(demo.root) / "prompts" / f"{name}.jsonl").is_file()
            present.append("demo (built)" if built else "demo")
            present.append(raw_state(name, Path(raw.raw_dir)))
        official = official_state(name, roots, row is not None and row.downloadable)
        if official:
            present.append(official)
        rows.append({"task": name, "survey": row.survey if row else task.survey,
                     "target": task.target_type.value, "years": row.years if row else "?",
                     "rows": f"{row.rows:,}" if row else "?",
                     "release": ("download" if row.downloadable else "rebuild") if row else "?",
                     "hhx builds": "yes" if builds else "no", "data here": "; ".join(present)})
    return rows


def own_task_rows(cfg: DictConfig) -> list[dict[str, Any]]:
    """The tasks of one's own task folders (hhx/tasks/own.py), each marked not official."""
    from hhx.tasks.own import NOT_OFFICIAL, has_release, own_tasks

    demo, raw = _data_config("demo", cfg), _data_config("raw", cfg)
    rows = []
    for name, folder in sorted(own_tasks().items()):
        task = load_task(name)
        if task.builder:
            built = (Path(demo.root) / "prompts" / f"{name}.jsonl").is_file()
            present = ["demo (built)" if built else "demo", raw_state(name, Path(raw.raw_dir))]
        else:
            present = ["release files here" if has_release(name) else "release files missing"]
        rows.append({"task": name, "origin": NOT_OFFICIAL, "survey": task.survey,
                     "target": task.target_type.value,
                     "built by": f"builder {task.builder}" if task.builder else "prebuilt",
                     "folder": str(folder), "data here": "; ".join(present)})
    return rows


def licence_lines() -> list[str]:
    """Per survey: whether the release ships it, its terms, what a rebuild needs of one's own."""
    from hhx.bench.catalog import catalog

    seen: dict[str, str] = {}
    for row in catalog().values():
        key = f"{row.survey} ({'download' if row.downloadable else 'rebuild'})"
        needs = "" if row.downloadable else f"; rebuild needs: {row.own_downloads}"
        seen.setdefault(key, f"  {key}: {row.licence}{needs}")
    return list(seen.values())


def _table(rows: list[dict[str, Any]]) -> str:
    cols = list(rows[0])
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    line = "  ".join(c.ljust(widths[c]) for c in cols)
    body = ["  ".join(str(r[c]).ljust(widths[c]) for c in cols) for r in rows]
    return "\n".join([line, "  ".join("-" * widths[c] for c in cols), *body])


def run(cfg: DictConfig) -> dict[str, Any]:
    tasks = task_rows(cfg)
    models = model_rows()
    print(f"Tasks ({len(tasks)}; {sum(r['release'] == 'download' for r in tasks)} in the "
          "official release (stage=fetch data=official), the others rebuilt from your own files "
          f"(data=raw); {sum(r['hhx builds'] == 'yes' for r in tasks)} built by hhx; facts: "
          "hhx/bench/catalog.csv):")
    print(_table(tasks))
    print("(raw: under " + _data_config("raw", cfg).raw_dir + "; official: in "
          + " or ".join(str(p) for p in official_roots(cfg)) + ")")
    print("Licences and what a rebuild needs (README 'Real data'):")
    print("\n".join(licence_lines()))
    own = own_task_rows(cfg)
    if own:
        print(f"\nOwn tasks ({len(own)}; NOT official: from your task folders, task=own runs them "
              "all, task=all stays the official tasks):")
        print(_table(own))
    print(f"\nModels ({len(models)}):")
    print(_table(models))
    print("\nRun one: python -m hhx task=<task> model=<model>   "
          "(data=demo by default; data=raw or data=official data.root=<dir>)")
    return {"tasks": tasks, "models": models, **({"own_tasks": own} if own else {})}
