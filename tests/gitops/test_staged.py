"""`--staged`: the repo as the git index holds it, what the next commit records (the pre-commit
hook's source): untracked and ignored files, unstaged edits and staged deletions as git sees
them, read from the object store (read/git.py IndexTree)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import MATRIX, gpu_node, run_main, write
from tests.gitops.conftest import commit, git

NEW_KERNEL = "6.8.0-52-generic"


def _nodes(root: Path, *args: str) -> list[str]:
    result = run_main("check", str(root), "--staged", "--format", "json", "--no-cache", *args)
    assert result.returncode in (0, 1), result.stderr
    return sorted(f["object"]["name"] for f in json.loads(result.stdout)["findings"] if f["object"])


def test_the_index_not_the_working_tree(git_repo: Path):
    write(git_repo, "support-matrix.csv", MATRIX)
    write(git_repo, "k8s/a.yaml", gpu_node("a", kernel=NEW_KERNEL))
    write(git_repo, "k8s/b.yaml", gpu_node("b", kernel=NEW_KERNEL))
    commit(git_repo, "two nodes without images")
    assert _nodes(git_repo) == ["a", "b"]
    write(git_repo, "k8s/untracked.yaml", gpu_node("u", kernel=NEW_KERNEL))
    write(git_repo, ".gitignore", "tmp/\n")
    write(git_repo, "tmp/ignored.yaml", gpu_node("i", kernel=NEW_KERNEL))
    write(git_repo, "k8s/a.yaml", gpu_node("a"))  # fixed on disk, not staged
    git(git_repo, "rm", "-q", "k8s/b.yaml")  # a staged deletion
    assert _nodes(git_repo) == ["a"]
    git(git_repo, "add", "k8s/a.yaml")
    assert _nodes(git_repo) == []
    git(git_repo, "add", "k8s/untracked.yaml")
    assert _nodes(git_repo) == ["u"]
    on_disk = run_main("check", str(git_repo), "--format", "json", "--no-cache")
    names = {f["object"]["name"] for f in json.loads(on_disk.stdout)["findings"] if f["object"]}
    assert names == {"u"}  # .gitignore keeps tmp/ out on disk too; b is gone from disk


def test_a_directory_inside_the_repository_and_its_config(git_repo: Path):
    root = git_repo / "clusters" / "prod"
    write(root, "support-matrix.csv", MATRIX)
    write(root, "n.yaml", gpu_node("node-n", kernel=NEW_KERNEL))
    write(git_repo, "elsewhere/n.yaml", gpu_node("other", kernel=NEW_KERNEL))
    git(git_repo, "add", "-A")
    result = run_main("check", str(root), "--staged", "--format", "concise", "--no-cache")
    assert result.returncode == 1
    assert result.stdout.startswith("n.yaml:9:5: error GPU001 node node-n ")  # paths from PATH
    assert "other" not in result.stdout
    # the staged matrix is the one read: a row only on disk does not count
    with open(root / "support-matrix.csv", "a") as matrix:
        matrix.write(f"550,{NEW_KERNEL},ubuntu22.04\n")
    assert run_main("check", str(root), "--staged", "--no-cache").returncode == 1
    git(git_repo, "add", "-A")
    assert run_main("check", str(root), "--staged", "--no-cache").returncode == 0


def test_usage_errors(git_repo: Path, tmp_path: Path):
    both = run_main("check", str(git_repo), "--staged", "--rev", "HEAD")
    assert both.returncode == 2 and "give one of them" in both.stderr
    stdin = run_main("check", "-", "--staged", input="kind: Node\n")
    assert stdin.returncode == 2 and "cannot read from stdin" in stdin.stderr
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    nogit = run_main("check", str(outside), "--staged")
    assert nogit.returncode == 2 and "not inside a git repository" in nogit.stderr
    # the option given is the one named (read/git.py words it for --rev and --base)
    assert "--staged reads the git index" in nogit.stderr and "drop --staged" in nogit.stderr
    assert "--rev" not in nogit.stderr and "--base" not in nogit.stderr
    assert "Traceback" not in both.stderr + stdin.stderr + nogit.stderr
