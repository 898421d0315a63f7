"""`--staged`: the repo as the git index holds it, what the next commit records (the pre-commit
hook's source): untracked and ignored files, unstaged edits and staged deletions as git sees
them, read from the object store (read/git.py IndexTree)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import MATRIX, cli_env, gpu_node, run_main, write
from tests.gitops.conftest import GIT_ENV, commit, git

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


def test_an_intent_to_add_entry_is_not_staged(git_repo: Path):
    """`git add -N` puts an entry in the index that the next commit does not record (`git
    write-tree` leaves it out; the index lists it with the empty blob's id): --staged reads
    what the commit records, so the hook no longer refuses a commit for a file it leaves
    out. A file staged empty is recorded, and read."""
    write(git_repo, "support-matrix.csv", MATRIX)
    write(git_repo, "k8s/a.yaml", gpu_node("a"))
    commit(git_repo, "clean")
    write(git_repo, "k8s/later.yaml", gpu_node("l", kernel=NEW_KERNEL))
    git(git_repo, "add", "-N", "k8s/later.yaml")
    write(git_repo, "k8s/empty.yaml", "")
    git(git_repo, "add", "k8s/empty.yaml")
    recorded = git(git_repo, "ls-tree", "-r", "--name-only", git(git_repo, "write-tree"))
    assert "k8s/later.yaml" not in recorded.split() and "k8s/empty.yaml" in recorded.split()
    result = run_main("check", str(git_repo), "--staged", "-v", "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "read    k8s/empty.yaml: 0 object(s)" in result.stderr
    assert "later.yaml" not in result.stderr + result.stdout
    git(git_repo, "add", "k8s/later.yaml")  # now staged with its content: read
    assert _nodes(git_repo) == ["l"]


def test_the_repository_git_dir_and_git_work_tree_name(git_repo: Path, tmp_path: Path):
    """As git finds it when GIT_DIR is set (a hook of a bare repository with a separate work
    tree gets GIT_DIR, GIT_WORK_TREE=. and GIT_INDEX_FILE): not the repository above PATH.
    gitpython ignored GIT_DIR when given a path, so every such commit was a usage error."""
    bare, tree = tmp_path / "bare.git", tmp_path / "tree"
    tree.mkdir()
    git(git_repo, "init", "-q", "--bare", str(bare))
    env = cli_env(GIT_DIR=str(bare), GIT_WORK_TREE=".", GIT_INDEX_FILE=str(bare / "index"))
    write(tree, "support-matrix.csv", MATRIX)
    write(tree, "k8s/a.yaml", gpu_node("a", kernel=NEW_KERNEL))
    for args in (("add", "-A"), ("commit", "-q", "--no-verify", "-m", "one")):
        subprocess.run(["git", *args], cwd=tree, env={**env, **GIT_ENV}, check=True)
    write(tree, "k8s/b.yaml", gpu_node("b", kernel=NEW_KERNEL))  # not staged
    for args in (("--staged",), ("--rev", "HEAD")):
        result = run_main("check", ".", *args, "--format", "json", "--no-cache", cwd=tree, env=env)
        assert result.returncode == 1, result.stderr
        names = [f["object"]["name"] for f in json.loads(result.stdout)["findings"]]
        assert names == ["a"]


def test_a_path_that_links_out_of_the_work_tree_is_a_usage_error(git_repo: Path, tmp_path: Path):
    """git holds a link there and nothing below it: the check said nothing of PATH and read
    the whole repository instead (`_prefix` took "outside" for the top)."""
    outside = tmp_path / "elsewhere"
    write(outside, "o.yaml", gpu_node("o", kernel=NEW_KERNEL))
    write(git_repo, "top.yaml", "kind: [\n")
    (git_repo / "deploy").symlink_to(outside)
    commit(git_repo, "a link")
    for args in (("--staged",), ("--rev", "HEAD")):
        result = run_main("check", str(git_repo / "deploy"), *args, "--no-cache")
        assert result.returncode == 2, result.stdout + result.stderr
        assert "is outside the git work tree" in result.stderr
        assert "top.yaml" not in result.stdout


def test_a_name_with_a_control_character_is_listed_escaped(git_repo: Path):
    """-v lists a git source's files as the working tree's walk does: a newline in a name is
    shown escaped, never printed raw (it would forge lines of the listing)."""
    write(git_repo, "new\nline.yaml", "kind: [\n")
    commit(git_repo, "a name with a newline")
    disk = run_main("check", str(git_repo), "-v", "--no-cache", "--matrix", "none")
    for args in (("--staged",), ("--rev", "HEAD")):
        result = run_main("check", str(git_repo), *args, "-v", "--no-cache", "--matrix", "none")
        assert "read    new\\x0aline.yaml: 0 object(s)" in result.stderr
        assert "\nline.yaml" not in result.stderr and result.stdout == disk.stdout
