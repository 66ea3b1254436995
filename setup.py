"""The wheel carries conf/ as package data (hhx/conf), so an installed hhx composes its configs
without the working copy (hhx/paths.py `conf_dir`). Everything else is in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithConf(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the working copy's conf/
        target = Path(self.build_lib) / "hhx" / "conf"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(Path(__file__).parent / "conf", target,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildPyWithConf})
