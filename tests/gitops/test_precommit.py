"""The real pre-commit runs this project's hook (`try-repo`) in a temporary git repo.

pre-commit builds the hook's environment itself: it pip-installs this checkout (hatchling and
the runtime dependencies come from the configured package index), which takes a while once per
test session. The test skips, with the reason, when pre-commit is not installed, when this is
not a git checkout, or when that install cannot reach a package index.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT
from tests.gitops.conftest import GIT_ENV, commit, git

OFFLINE_SIGNS = (
    "Could not find a version that satisfies",
    "No matching distribution found",
    "Temporary failure in name resolution",
    "Failed to establish a new connection",
    "Network is unreachable",
)
TAG = "550-6.8.0-52-generic-ubuntu24.04"


def _safe_load(text: str):
    """Plain data from YAML text (ruamel's safe loader, imported where it is used)."""
    from ruamel.yaml import YAML

    return YAML(typ="safe").load(text)


def test_hook_manifest_declares_a_whole_repo_hook():
    [hook] = _safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "gpudrv-check"
    assert hook["entry"] == "gpudrv-check check"
    assert (hook["language"], hook["pass_filenames"], hook["require_serial"]) == (
        "python",
        False,
        True,
    )
    files = re.compile(hook["files"])
    for name in ("a.yaml", "k8s/b.yml", "x.json", "support-matrix.csv", "pyproject.toml"):
        assert files.search(name), name
    for name in ("README.md", "main.py", "yaml.txt"):
        assert not files.search(name), name


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


def _try_repo(repo: Path, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    env.pop("GITHUB_ACTIONS", None)  # keep the text format whatever CI runs this
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pre_commit",
            "try-repo",
            str(ROOT),
            "gpudrv-check",
            "--color=never",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )


def _skip_if_offline(result: subprocess.CompletedProcess, home: Path) -> None:
    log = home / "pre-commit.log"
    text = result.stdout + result.stderr + (log.read_text() if log.exists() else "")
    if "An error has occurred" in text and any(sign in text for sign in OFFLINE_SIGNS):
        pytest.skip("pre-commit could not install the hook: no package index reachable")


@pytest.mark.slow
def test_pre_commit_refuses_a_node_without_an_image_until_the_matrix_has_it(
    git_repo: Path, pre_commit_home: Path
):
    if importlib.util.find_spec("pre_commit") is None:
        pytest.skip("pre-commit is not installed (pip install -e '.[test]')")
    if not (ROOT / ".git").exists():
        pytest.skip("this project is not a git checkout: pre-commit try-repo needs one")
    repo = git_repo
    shutil.copytree(EXAMPLES / "lab", repo, dirs_exist_ok=True)
    # the lab's step-5 pod is Pending on purpose (an error of its own): not this test's subject
    (repo / "k8s" / "cuda13-job.yaml").unlink()
    # and the budget has the headroom of lab step 7, so the drain rules (GPU020) stay quiet
    pdb = repo / "k8s" / "pdb.yaml"
    pdb.write_text(pdb.read_text().replace("minAvailable: 4", "minAvailable: 3"))
    commit(repo, "cluster")

    # a node joins with a kernel nobody built a driver image for
    shutil.copy(repo / "steps" / "node3.yaml", repo / "k8s" / "node3.yaml")
    git(repo, "add", "k8s/node3.yaml")
    refused = _try_repo(repo, pre_commit_home)
    _skip_if_offline(refused, pre_commit_home)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "gpudrv-check" in refused.stdout and "Failed" in refused.stdout
    assert f"k8s/node3.yaml:14:5: error GPU001 node lab-node-3 needs driver image {TAG}" in (
        refused.stdout
    )

    # the image is built: one matrix row, and the same commit passes
    with open(repo / "support-matrix.csv", "a") as matrix:
        matrix.write("550,6.8.0-52-generic,ubuntu24.04\n")
    git(repo, "add", "support-matrix.csv")
    passed = _try_repo(repo, pre_commit_home)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout
