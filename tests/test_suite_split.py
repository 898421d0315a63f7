"""The `slow` marker (issue 15): a plain local run leaves the slowest tests out, CI runs all."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT


def test_the_readme_test_command_is_the_one_ci_runs_and_it_runs_everything():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    [command] = re.findall(r"&& (python -m pytest [^\n]*)\n", readme)
    assert "--run-slow" in command
    # the slow tests spread over every core (issue 22): workers, and work stealing between them
    assert "-n auto" in command and "--dist worksteal" in command
    assert f"\n{command}\n" in ci


def test_slow_is_registered_and_marks_some_tests():
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--markers", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert "@pytest.mark.slow:" in proc.stdout
    here = ROOT / "tests" / "test_suite_split.py"
    tests = [p for p in (ROOT / "tests").rglob("test_*.py") if p != here]
    marked = [p for p in tests if "pytest.mark.slow" in p.read_text(encoding="utf-8")]
    assert marked
