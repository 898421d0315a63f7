"""`--rev` takes every revision syntax git knows: a result, or a usage error that says why;
never an internal error (git itself resolves the name, read/git.py `resolve_tree`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, run_main
from tests.gitops.conftest import commit, git


@pytest.fixture(scope="module")
def lab_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not on PATH")
    root = tmp_path_factory.mktemp("rev") / "repo"
    shutil.copytree(EXAMPLES / "lab", root)
    git(root, "init", "-q", "-b", "main")
    commit(root, "lab")
    shutil.copy(root / "steps" / "node3.yaml", root / "k8s" / "node3.yaml")
    commit(root, "lab-node-3 joins")
    return root


# revisions that name a commit: checked (exit 0 or 1, findings of that commit)
RESOLVING = [
    "HEAD@{yesterday}",
    "HEAD@{1.week.ago}",
    "HEAD@{0}",
    "main@{0}",
    "@",
    "HEAD~1",
    "HEAD^",
    ":/lab-node-3",
    "main^{commit}",
    "HEAD@{1}",
]
# valid syntax that names no commit here: a usage error naming the revision
NOT_A_COMMIT = [
    "HEAD^{tree}",
    "HEAD:k8s",
    "HEAD@{upstream}",
    "main@{push}",
    "HEAD@{-1}",
    "HEAD@{99}",
    "HEAD~99",
    ":/no such message",
    "-n",
    "--all",
    "x\ny",
]


@pytest.mark.slow
@pytest.mark.parametrize("rev", RESOLVING)
def test_a_revision_git_resolves_is_checked(lab_history: Path, rev: str):
    result = run_main("check", str(lab_history), f"--rev={rev}")
    assert result.returncode in (0, 1), result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert "read;" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("rev", NOT_A_COMMIT)
def test_a_revision_that_names_no_commit_is_a_usage_error(lab_history: Path, rev: str):
    result = run_main("check", str(lab_history), f"--rev={rev}")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.startswith("gpudrv-check: error: unknown revision "), result.stderr


def test_the_reflog_time_syntax_reads_that_commit(lab_history: Path):
    """`HEAD@{1}` is the commit before the last one: the lab without lab-node-3."""
    head = run_main("audit", str(lab_history), "--rev=HEAD")
    before = run_main("audit", str(lab_history), "--rev=HEAD@{1}")
    assert (head.returncode, before.returncode) == (1, 0), (head.stderr, before.stderr)
    assert "lab-node-3 MISSING" in head.stdout and before.stdout == "OK\n"
