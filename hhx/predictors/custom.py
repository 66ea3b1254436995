"""Your own predictor: `python -m hhx model=custom model.target=<target>` (conf/model/custom.yaml).

`model.target` names, in this order of lookup:
- `registered:<name>`: an object handed to `register_instance(obj, name)` in this process (what
  the Python API does with `hhx.evaluate(model=obj)`); it is known by its name (its model name,
  its sweep cell), so two different objects need two names;
- `module.attr` or `module:attr` (`attr` may be dotted): imported as Python's `-m` would, the
  current folder first on the path;
- a bare name: an entry point of the group `hhx.predictors` (an installed package registers
  `[project.entry-points."hhx.predictors"] ridge = "my_pkg.models:Ridge"`).

What it names, told apart by its methods:
- a class implementing the Predictor protocol (hhx/predictors/protocol.py): `fit(task)` and
  `predict(task, examples) -> list[PredictionRow]`; `save(out_dir)` and `run_metrics()` are
  optional. It is made with `model.params` as keyword arguments;
- an object already made, with those methods;
- a function `predict(rows, **params) -> list`: one answer per row, in order (`rows` below);
- a scikit-learn style estimator (`fit(X, y)` / `predict(X)`, a class or an object): fitted once
  per output on the task's features (hhx/predictors/features.py; numeric and categorical
  outputs, distributions as the per-label probabilities it predicts, projected).

An answer is what the official scorer reads (hhx/scoring/parser.py), one JSON-able list per row:
- `array` tasks (numeric or categorical): one element per answer field, in the task's field
  order (`hhx describe`): numbers (int or float) for a numeric task, e.g. `[0.25]` or
  `[1200.0, 3.5]`; labels from the field's label set, case-sensitive, e.g. `["employed"]`;
- `distribution_array` tasks: one probability vector per distribution, each with one value per
  label in [0, 1] summing to 1 (within 1e-6), e.g. `[[0.1, 0.6, 0.3]]`;
- None: no answer for that row (the run's coverage counts it; see `min_coverage`).
That is the form the no-change baseline answers in (each prompt record's `naive_baseline`).
A class may also return raw text in `PredictionRow.prediction` (as an LLM does): the scorer
parses it, an unparsable text counting as an invalid answer. Any other malformed answer, a wrong
count or an answer out of order stops the run with one line naming the row.

`rows` (the function form): the evaluated examples, in order — `id`, `time`, `release_date`,
`system`, `user` (the prompt), `naive_baseline` (the no-change answer as JSON text), `split`,
`split_position` — joined with the task table's predictors (`prompt_predictors`, and
`prompt_month` where the prompt names the month) when the release layout has the table. The gold
answer (`assistant`, the table's targets) is left out. (The protocol form gets the task itself:
never read `assistant` or the targets of the evaluated rows.)
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hhx.config import ModelConfig
from hhx.errors import ConfigError, HhxError, PredictorError
from hhx.predictors.protocol import PredictionRow, PredictorConfig

if TYPE_CHECKING:
    import pandas as pd

    from hhx.bench.layout import BenchTask
    from hhx.config import TaskConfig

ENTRY_POINT_GROUP = "hhx.predictors"
REGISTERED = "registered:"
_NAME = re.compile(r"^[A-Za-z_][\w.\-]*$")
_INSTANCES: dict[str, Any] = {}
FORMS = ("a Predictor class (fit(task), predict(task, examples); hhx/predictors/protocol.py), "
         "an object with those methods, or a function predict(rows) -> list of answers")


@dataclass
class CustomModelConfig(ModelConfig):
    """conf/model/custom.yaml's schema (`BackendSpec.settings` of the custom backend): only this
    model's config carries these fields (its YAML takes `schema/model/custom` in its defaults
    list), so every other model's config, hash and logged params stay as they were."""

    # "module.attr", "module:attr", an entry point of the group `hhx.predictors`, or what
    # register_instance returned: a Predictor class, an object, a function.
    target: str | None = None
    # Keyword arguments of the class (or the function); Any so that `model.params={alpha: 1}`
    # works without `++` (and `+model.params.alpha=1` too).
    params: Any = None


# --------------------------------------------------------------------------------------------
# naming what model.target names


def register_instance(obj: object, name: str | None = None) -> str:
    """Make `obj` (a predictor object, a class, a function) resolvable by `model.target` in this
    process; returns the target text (`registered:<name>`). `name` defaults to the object's class
    name (a function's or a class's own name); registering a name again replaces its object."""
    label = name or getattr(obj, "__name__", None) or type(obj).__name__
    if not _NAME.match(str(label)):
        raise ConfigError(f"register_instance name {label!r}: use letters, digits, _ . - "
                          "(it becomes the model's name)")
    _INSTANCES[str(label)] = obj
    return f"{REGISTERED}{label}"


def resolve_target(target: str) -> Any:
    """The object `target` names (the module docstring's order); one line when it names none."""
    text = target.strip()
    if text.startswith(REGISTERED):
        key = text[len(REGISTERED):]
        if key not in _INSTANCES:
            known = ", ".join(sorted(_INSTANCES)) or "none"
            raise ConfigError(f"model.target={text}: no object registered as {key!r} in this "
                              f"process (registered: {known}); register_instance(obj, name) "
                              "returns the target to give")
        return _INSTANCES[key]
    if ":" in text:
        module_name, attr = text.split(":", 1)
        return _attribute(text, _import(text, module_name), attr)
    if "." in text:
        return _dotted(text)
    return _entry_point(text)


def _importable_here() -> None:
    """The current folder on the import path, as `python -m` puts it (a target in ./my_model.py)."""
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)


class TargetNotFound(ConfigError):
    """The module a target names is not on the import path."""


def _import(target: str, module_name: str) -> Any:
    _importable_here()
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(f"{exc.name}.")):
            raise TargetNotFound(
                f"model.target={target}: module {module_name!r} not found (no {exc.name!r} on the "
                f"import path: run from the folder that holds it, or add it to PYTHONPATH)"
            ) from None
        raise ConfigError(f"model.target={target}: importing {module_name} failed: {exc}") from None
    except Exception as exc:  # the user's module raised while importing: one line, no traceback
        raise ConfigError(f"model.target={target}: importing {module_name} failed: "
                          f"{type(exc).__name__}: {exc}".splitlines()[0]) from None


def _attribute(target: str, module: Any, attr: str) -> Any:
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            where = getattr(obj, "__name__", type(obj).__name__)
            raise ConfigError(f"model.target={target}: {where} has no attribute {part!r}")
        obj = getattr(obj, part)
    return obj


def _dotted(target: str) -> Any:
    """`a.b.C`: the longest importable module prefix, then the attributes after it (a missing
    module is named as the longest prefix that failed, not as a missing attribute)."""
    parts = target.split(".")
    first: TargetNotFound | None = None
    for cut in range(len(parts) - 1, 0, -1):
        try:
            module = _import(target, ".".join(parts[:cut]))
        except TargetNotFound as exc:
            first = first or exc
            continue
        if first is not None and not hasattr(module, parts[cut]):
            raise first
        return _attribute(target, module, ".".join(parts[cut:]))
    assert first is not None
    raise first


def _entry_point(name: str) -> Any:
    points = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    for point in points:
        if point.name == name:
            try:
                return point.load()
            except Exception as exc:
                raise ConfigError(f"model.target={name}: entry point {point.value} failed to "
                                  f"load: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    known = ", ".join(sorted(p.name for p in points)) or "none installed"
    raise ConfigError(f"model.target={name}: no entry point {name!r} in the group "
                      f"{ENTRY_POINT_GROUP} ({known}); a target is module.attr, module:attr or "
                      "an entry point name")


# --------------------------------------------------------------------------------------------
# what the target is


def _arity(method: Any) -> int:
    """Positional parameters a bound method takes (a `*args` counts as many)."""
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 99
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def _missing_methods(obj: Any) -> list[str]:
    return [m for m in ("fit", "predict") if not callable(getattr(obj, m, None))]


def _sklearn_style(obj: Any) -> bool:
    """fit(X, y) / predict(X) rather than fit(task) / predict(task, examples)."""
    return _arity(getattr(obj, "predict")) == 1 and _arity(getattr(obj, "fit")) >= 2


def _instantiate(target: str, cls: type, params: dict[str, Any]) -> Any:
    try:
        return cls(**params)
    except HhxError:
        raise
    except Exception as exc:  # a wrong keyword (TypeError) or the user's __init__ failing
        text = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        raise ConfigError(f"model.target={target}: {cls.__name__}(**model.params) failed: "
                          f"{text} (model.params={params})") from None


def adapt(target: str, obj: Any, params: dict[str, Any], name: str) -> Any:
    """The Predictor for what `target` resolved to (see the module docstring)."""
    if isinstance(obj, type):
        missing = _missing_methods(obj)
        if missing:
            raise ConfigError(f"model.target={target}: class {obj.__name__} is not a predictor: "
                              f"it lacks {', '.join(missing)}; give {FORMS}")
        obj = _instantiate(target, obj, params)
    elif not _missing_methods(obj):
        if params:
            raise ConfigError(f"model.target={target} names an object already made: "
                              "model.params apply to a class or a function")
    elif callable(obj):
        return FunctionPredictor(name, obj, params)
    else:
        raise ConfigError(f"model.target={target}: a {type(obj).__name__} is not a predictor: it "
                          f"lacks {', '.join(_missing_methods(obj))}; give {FORMS}")
    if _sklearn_style(obj):
        from hhx.predictors.features import EstimatorPredictor

        return CustomPredictor(name, EstimatorPredictor(obj))
    return CustomPredictor(name, obj)


def make(cfg: PredictorConfig) -> Any:
    model = cfg.model
    target = getattr(model, "target", None)
    if not target:
        raise ConfigError("model=custom needs model.target=<module.Class | module:function | "
                          "entry point name> (examples/custom_predictor/README.md)")
    raw = getattr(model, "params", None)
    params = _plain(raw) if raw is not None else {}
    if not isinstance(params, dict):
        raise ConfigError(f"model.params={raw!r}: give keyword arguments as a mapping, e.g. "
                          "model.params='{alpha: 1.0}' or +model.params.alpha=1.0")
    return adapt(str(target), resolve_target(str(target)), params, str(model.name))


def _plain(value: Any) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


# --------------------------------------------------------------------------------------------
# the predictors hhx runs


def _call(name: str, what: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The user's code, its failure as one line with where it happened (no traceback)."""
    try:
        return function(*args, **kwargs)
    except HhxError:
        raise
    except Exception as exc:
        import traceback

        frames = traceback.extract_tb(exc.__traceback__)
        where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
        text = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        raise PredictorError(f"model {name}: {what} raised {text}{where}") from exc


class CustomPredictor:
    """A user's predictor behind hhx's contract: optional methods supplied, answers checked."""

    def __init__(self, name: str, inner: Any) -> None:
        self.name, self.inner = name, inner
        self.task: TaskConfig | None = None

    def fit(self, task: BenchTask) -> CustomPredictor:
        self.task = task.spec
        _call(self.name, "fit", self.inner.fit, task)
        return self

    def predict(self, task: BenchTask, examples: pd.DataFrame) -> list[PredictionRow]:
        rows = _call(self.name, "predict", self.inner.predict, task, examples)
        return checked_rows(self.name, task.spec, examples, _as_rows(self.name, rows, examples))

    def save(self, out_dir: Path) -> list[Path]:
        save = getattr(self.inner, "save", None)
        return list(save(out_dir) or []) if callable(save) else []

    def run_metrics(self) -> dict[str, float]:
        metrics = getattr(self.inner, "run_metrics", None)
        return dict(metrics() or {}) if callable(metrics) else {}

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


class FunctionPredictor:
    """A function `predict(rows, **params) -> list` of answers (the module docstring)."""

    def __init__(self, name: str, function: Callable[..., Any], params: dict[str, Any]) -> None:
        self.name, self.function, self.params = name, function, params
        try:
            inspect.signature(function).bind(None, **params)
        except TypeError as exc:
            raise ConfigError(f"model {name}: the function cannot take (rows, **model.params): "
                              f"{exc} (model.params={params})") from None
        except ValueError:  # a builtin without a signature: tried when called
            pass

    def fit(self, task: BenchTask) -> FunctionPredictor:
        return self

    def predict(self, task: BenchTask, examples: pd.DataFrame) -> list[PredictionRow]:
        from hhx.predictors.features import example_rows

        answers = _call(self.name, "the function", self.function, example_rows(task, examples),
                        **self.params)
        answers = list(answers) if answers is not None and not isinstance(answers, str) else None
        if answers is None:
            raise PredictorError(f"model {self.name}: the function returned no list of answers; "
                                 f"return one answer per row ({len(examples)} rows)")
        count(self.name, task.spec, len(answers), examples)
        rows = [PredictionRow(id=str(ex.id), time=str(ex.time), prediction=_jsonable(a))
                for ex, a in zip(examples.itertuples(index=False), answers, strict=True)]
        return checked_rows(self.name, task.spec, examples, rows, text_ok=False)

    def save(self, out_dir: Path) -> list[Path]:
        return []

    def run_metrics(self) -> dict[str, float]:
        return {}


# --------------------------------------------------------------------------------------------
# checking what a predictor answered


def count(name: str, task: TaskConfig, got: int, examples: pd.DataFrame) -> None:
    want = len(examples)
    if got != want:
        which = (f"the first without one is row id {examples['id'].iloc[got]} (time "
                 f"{examples['time'].iloc[got]})" if got < want else f"{got - want} too many")
        raise PredictorError(f"model {name}: predict returned {got} answers for the {want} "
                             f"examples of task {task.name} ({which}); return one per example, "
                             "in order")


def _as_rows(name: str, rows: Any, examples: pd.DataFrame) -> list[PredictionRow]:
    if rows is None or isinstance(rows, (str, bytes)):
        raise PredictorError(f"model {name}: predict returned {type(rows).__name__}, not a list "
                             "of PredictionRow (hhx.predictors.protocol)")
    out: list[PredictionRow] = []
    for i, row in enumerate(rows):
        if isinstance(row, PredictionRow):
            out.append(row)
        elif isinstance(row, Mapping) and {"id", "time", "prediction"} <= set(row):
            out.append(PredictionRow(id=str(row["id"]), time=str(row["time"]),
                                     prediction=row["prediction"]))
        else:
            where = f" (row id {examples['id'].iloc[i]})" if i < len(examples) else ""
            raise PredictorError(f"model {name}: predict's answer {i}{where} is a "
                                 f"{type(row).__name__}; return PredictionRow(id, time, "
                                 "prediction) per example (hhx.predictors.protocol)")
    return out


def _jsonable(answer: Any) -> Any:
    """numpy scalars and arrays as Python numbers and lists (what JSON writes)."""
    if hasattr(answer, "tolist"):
        return answer.tolist()
    if isinstance(answer, (list, tuple)):
        return [_jsonable(a) for a in answer]
    return answer


def checked_rows(name: str, task: TaskConfig, examples: pd.DataFrame,
                 rows: list[PredictionRow], *, text_ok: bool = True) -> list[PredictionRow]:
    """One row per example, in the examples' order, each answer in the official form (text is
    left to the scorer when `text_ok`). Otherwise one line naming the row and what was expected."""
    from hhx.scoring.parser import answer_spec, validate_value

    count(name, task, len(rows), examples)
    spec = answer_spec(task)
    for row, ex in zip(rows, examples.itertuples(index=False), strict=True):
        if (str(row.id), str(row.time)) != (str(ex.id), str(ex.time)):
            raise PredictorError(f"model {name}: an answer for row id {row.id} (time {row.time}) "
                                 f"came where row id {ex.id} (time {ex.time}) was expected; "
                                 "answer the examples in their order")
        row.prediction = _jsonable(row.prediction)
        if row.prediction is None or (text_ok and isinstance(row.prediction, str)):
            continue
        try:
            validate_value(row.prediction, spec)
        except ValueError as exc:
            shown = json.dumps(row.prediction, default=str)
            raise PredictorError(
                f"model {name}: row id {ex.id} (time {ex.time}): answer {shown[:120]} is not an "
                f"answer of task {task.name} ({exc}); expected {answer_form(task)}") from None
    return rows


def answer_form(task: TaskConfig) -> str:
    """The official answer of a task in words, with an example."""
    from hhx.scoring.parser import answer_spec

    spec = answer_spec(task)
    if spec.shape == "distribution_array":
        vectors = ", ".join(f"{n}: {len(lab)} probabilities summing to 1"
                            for n, lab in zip(spec.names, spec.labels, strict=True))
        return f"a list of {len(spec.names)} probability vector(s) [{vectors}]"
    if spec.target_type == "categorical":
        fields = "; ".join(f"{n}: one of {', '.join(map(str, lab))}"
                           for n, lab in zip(spec.names, spec.labels, strict=True))
        return f"a list of {len(spec.names)} label(s) [{fields}]"
    return f"a list of {len(spec.names)} number(s) [{', '.join(spec.names)}]"
