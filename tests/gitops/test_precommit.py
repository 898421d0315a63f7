"""The real pre-commit runs this project's hook (`try-repo`) in a temporary git repo.

pre-commit builds the hook's environment itself: it pip-installs this checkout (hatchling and
the runtime dependencies come from the configured package index), which takes a while once per
test session. The test skips, with the reason, when pre-commit is not installed, when this is
not a git checkout, or when that install cannot reach a package index.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, MATRIX, ROOT, gpu_node, run_cli, write
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


def test_hook_manifest_declares_a_whole_repo_hook_over_the_index():
    [hook] = _safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "gpudrv-check"
    assert hook["entry"] == "gpudrv-check check --staged"
    assert (hook["language"], hook["pass_filenames"], hook["require_serial"]) == (
        "python",
        False,
        True,
    )
    # pre-commit gives a hook's `files` filter no deleted file (pre_commit/git.py
    # get_staged_files: --diff-filter=ACMRTUXB): a deletion-only commit runs it only this way
    assert hook["always_run"] is True and "files" not in hook
    # the index is what a commit records; a push or a commit message has no index to check
    assert hook["stages"] == ["pre-commit", "pre-merge-commit", "manual"]
    assert hook["minimum_pre_commit_version"] == "3.2.0"  # the first with these stage names


def test_the_documented_rev_is_this_release():
    """docs/README.md's `rev:` is `v` + the version in pyproject.toml; when this checkout has
    release tags, it is one of them."""
    import re as regex

    version = regex.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), regex.M)
    assert version is not None
    docs = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    revs = regex.findall(r"^\s+rev: (\S+)", docs, regex.M)
    assert revs == [f"v{version.group(1)}"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert all(rev == f"v{version.group(1)}" for rev in regex.findall(r"rev: (v\S+)", readme))
    if shutil.which("git") and (ROOT / ".git").exists():
        tags = subprocess.run(
            ["git", "tag", "--list", "v*"], cwd=ROOT, capture_output=True, text=True
        ).stdout.split()
        if tags:
            assert revs[0] in tags, f"tag {revs[0]} is missing: git tag {revs[0]}"


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pre-commit store for the whole run, shared by the xdist workers (their base
    temporary folders sit side by side): the hook's environment, a pip install of this
    checkout, is built once, not once per worker. pre-commit locks its store while it installs
    (pre_commit/store.py `Store.exclusive_lock`), so two workers may use it at once."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    home = shared / "pre-commit-home"
    home.mkdir(exist_ok=True)
    return home


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
    assert "\nk8s/node3.yaml\n  14:5 error GPU001 node lab-node-3 needs driver image" in (
        refused.stdout
    )
    assert f"needs driver image {TAG}" in " ".join(refused.stdout.split())

    # the image is built: one matrix row, and the same commit passes
    with open(repo / "support-matrix.csv", "a") as matrix:
        matrix.write("550,6.8.0-52-generic,ubuntu24.04\n")
    git(repo, "add", "support-matrix.csv")
    passed = _try_repo(repo, pre_commit_home)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout


def _needs_pre_commit() -> None:
    if importlib.util.find_spec("pre_commit") is None:
        pytest.skip("pre-commit is not installed (pip install -e '.[test]')")
    if not (ROOT / ".git").exists():
        pytest.skip("this project is not a git checkout: pre-commit try-repo needs one")


def test_pre_commit_checks_the_commit_not_the_working_tree(git_repo: Path, pre_commit_home: Path):
    """An untracked or ignored bad file never counts; a commit that only deletes a node runs
    the hook, and fails when a workload loses its last node."""
    _needs_pre_commit()
    repo = git_repo
    write(repo, "support-matrix.csv", MATRIX)
    write(repo, "k8s/node-a.yaml", gpu_node("a"))
    write(repo, "k8s/node-b.yaml", gpu_node("b").replace("  labels:\n", "  labels:\n    pool: b\n"))
    write(
        repo,
        "k8s/pod.yaml",
        """
        apiVersion: v1
        kind: Pod
        metadata: {name: trainer, namespace: ml}
        spec:
          nodeSelector: {pool: b}
          containers: [{name: c, image: busybox}]
        """,
    )
    write(repo, ".gitignore", "scratch/\n")
    commit(repo, "cluster")

    # a node nobody built an image for, untracked and ignored: on disk, not in the commit
    write(repo, "k8s/node3.yaml", gpu_node("c", kernel="6.8.0-52-generic"))
    write(repo, "scratch/node4.yaml", gpu_node("d", kernel="6.8.0-52-generic"))
    write(repo, "README.md", "the cluster\n")
    git(repo, "add", "README.md")
    on_disk = run_cli("check", str(repo), "--format", "concise")
    assert on_disk.returncode == 1 and "k8s/node3.yaml" in on_disk.stdout  # it would count
    passed = _try_repo(repo, pre_commit_home)
    _skip_if_offline(passed, pre_commit_home)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout and "node3" not in passed.stdout
    commit(repo, "readme")

    # a commit that only deletes: pre-commit passes the hook no file, it runs all the same
    (repo / "k8s" / "node3.yaml").unlink()
    git(repo, "rm", "-q", "k8s/node-b.yaml")
    refused = _try_repo(repo, pre_commit_home)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "(no files to check)" not in refused.stdout and "Failed" in refused.stdout
    assert "GPU010 Pod ml/trainer stays Pending" in " ".join(refused.stdout.split())
