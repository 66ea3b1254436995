"""hhx/surveys by family: size limits and the demo's generator table."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from hhx.surveys.freshness import module_file
from hhx.surveys.synthetic.demo import GENERATOR_MODULE, WRITERS

ROOT = Path(__file__).resolve().parents[2]


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_survey_files_and_functions_are_within_the_size_limits():
    assert _tool("size_limits").violations(ROOT / "hhx" / "surveys") == []


def test_size_limits_reports_a_long_function_and_a_long_file(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(85))
    (tmp_path / "long.py").write_text(f"def f():\n{body}" + "y = 1\n" * 600)
    found = _tool("size_limits").violations(tmp_path)
    assert len(found) == 2
    assert "686 lines (file limit" in found[0] and "f(): 86 lines" in found[1]


def test_every_demo_writer_names_generator_modules_that_exist():
    assert set(GENERATOR_MODULE) == set(WRITERS)
    for name, modules in GENERATOR_MODULE.items():
        for m in (modules,) if isinstance(modules, str) else modules:
            assert module_file(f"hhx.surveys.synthetic.{m}") is not None, (name, m)
