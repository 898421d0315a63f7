"""`--rev REV`: the tree of a commit, read from the object store, with its own config and matrix."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MATRIX, gpu_node, run_main, write
from tests.gitops.conftest import commit, git

NEW_KERNEL = "6.8.0-52-generic"


def _findings(result: subprocess.CompletedProcess) -> list[tuple[str, str, int, int]]:
    doc = json.loads(result.stdout)
    return [
        (f["rule"], f["location"]["file"], f["location"]["line"], f["location"]["column"])
        for f in doc["findings"]
    ]


@pytest.mark.slow
def test_rev_reads_the_commit_not_the_working_tree_or_the_index(git_repo: Path):
    write(git_repo, "support-matrix.csv", MATRIX)
    write(git_repo, "nodes/a.yaml", gpu_node("a"))
    commit(git_repo, "clean")
    # uncommitted and staged edits must not leak into --rev HEAD
    write(git_repo, "nodes/b.yaml", gpu_node("b", kernel=NEW_KERNEL))
    git(git_repo, "add", "nodes/b.yaml")
    write(git_repo, "nodes/c.yaml", gpu_node("c", kernel=NEW_KERNEL))
    index = (git_repo / ".git" / "index").read_bytes()
    status = git(git_repo, "status", "--porcelain")

    at_head = run_main("check", str(git_repo), "--rev", "HEAD", "--format", "json")
    on_disk = run_main("check", str(git_repo), "--format", "json")

    assert at_head.returncode == 0, at_head.stderr
    assert _findings(at_head) == []
    assert on_disk.returncode == 1
    assert {f[1] for f in _findings(on_disk)} == {"nodes/b.yaml", "nodes/c.yaml"}
    assert hashlib.sha256((git_repo / ".git" / "index").read_bytes()).digest() == (
        hashlib.sha256(index).digest()
    )
    assert git(git_repo, "status", "--porcelain") == status


@pytest.mark.slow
def test_rev_uses_the_config_and_matrix_of_that_revision(git_repo: Path):
    write(git_repo, ".gpudrv-check.yaml", "matrix: ledger/images.csv\n")
    write(git_repo, "ledger/images.csv", MATRIX)
    write(git_repo, "nodes/a.yaml", gpu_node("a", kernel=NEW_KERNEL))
    old = commit(git_repo, "node without image")
    write(git_repo, "ledger/images.csv", MATRIX + f"550,{NEW_KERNEL},ubuntu22.04\n")
    commit(git_repo, "image built")
    # the working tree now points elsewhere: --rev must not read it
    write(git_repo, ".gpudrv-check.yaml", "matrix: gone.csv\n")

    at_old = run_main("audit", str(git_repo), "--rev", old)
    at_new = run_main("audit", str(git_repo), "--rev", "HEAD")
    on_disk = run_main("audit", str(git_repo))

    assert (at_old.returncode, at_old.stdout) == (1, f"a MISSING 550-{NEW_KERNEL}-ubuntu22.04\n")
    assert (at_new.returncode, at_new.stdout) == (0, "OK\n")
    assert on_disk.returncode == 2 and "support matrix not found" in on_disk.stderr


@pytest.mark.slow
def test_rev_checks_a_subdirectory_as_the_root(git_repo: Path):
    write(git_repo, "clusters/prod/support-matrix.csv", MATRIX)
    write(git_repo, "clusters/prod/nodes.yaml", gpu_node("p", kernel=NEW_KERNEL))
    write(git_repo, "clusters/dev/nodes.yaml", "not: [valid\n")
    commit(git_repo, "two clusters")
    result = run_main(
        "check", str(git_repo / "clusters" / "prod"), "--rev", "HEAD", "--format", "json"
    )
    assert result.returncode == 1, result.stderr
    assert _findings(result) == [("GPU001", "nodes.yaml", 9, 5)]


@pytest.mark.slow
def test_rev_reads_a_directory_deleted_from_the_disk_since(git_repo: Path):
    """PATH is read from the object store at the revision: a directory removed since (git rm)
    is checked as it was, exactly as from a checkout that still has it; a PATH that never
    held a directory is still a usage error, and without --rev a gone PATH is one."""
    write(git_repo, "clusters/prod/support-matrix.csv", MATRIX)
    write(git_repo, "clusters/prod/nodes.yaml", gpu_node("p", kernel=NEW_KERNEL))
    old = commit(git_repo, "prod")
    git(git_repo, "rm", "-rq", "clusters")
    commit(git_repo, "prod retired")
    prod = git_repo / "clusters" / "prod"
    assert not prod.exists()
    result = run_main("check", str(prod), "--rev", old, "--format", "json")
    assert result.returncode == 1, result.stderr
    assert _findings(result) == [("GPU001", "nodes.yaml", 9, 5)]
    gone = run_main("check", str(prod / "nodes"), "--rev", old)
    assert gone.returncode == 2 and "clusters/prod/nodes/ does not exist at revision" in (
        gone.stderr
    )
    on_disk = run_main("check", str(prod))
    assert on_disk.returncode == 2 and "not a directory" in on_disk.stderr
    # a file in PATH's place is not a directory at any revision's say-so
    write(git_repo, "clusters/prod", "a file now\n")
    assert run_main("check", str(prod), "--rev", old).returncode == 2


@pytest.mark.slow
def test_rev_skips_symlinks_and_honours_exclude(git_repo: Path):
    write(git_repo, "support-matrix.csv", MATRIX)
    write(git_repo, ".gpudrv-check.yaml", "exclude: [vendor/]\n")
    write(git_repo, "vendor/n.yaml", gpu_node("v", kernel=NEW_KERNEL))
    write(git_repo, "real/n.yaml", gpu_node("r"))
    os.symlink("../vendor/n.yaml", git_repo / "real" / "link.yaml")
    commit(git_repo, "links")
    result = run_main("check", str(git_repo), "--rev", "HEAD", "-v")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "skipped real/link.yaml: symbolic link, not followed" in result.stderr
    assert "skipped vendor/: excluded by config" in result.stderr


def test_rev_reads_a_file_name_that_is_not_utf8_shown_escaped(git_repo: Path):
    """git lists the name's bytes; a name that is not UTF-8 is read, and shown with its bytes
    escaped, as the working tree's walk reads and shows it (read/tree.py `display_name`): it
    was skipped, so a commit could hold a manifest no check of the index or revision read."""
    write(git_repo, "support-matrix.csv", MATRIX)
    write(git_repo, "real/n.yaml", gpu_node("r"))
    write(git_repo, "real/caf\u00e9.yaml", gpu_node("u"))  # UTF-8: read
    bad = os.fsencode(str(git_repo / "real")) + b"/latin1-\xe9.yaml"
    with open(bad, "wb") as fh:
        fh.write(gpu_node("l", kernel=NEW_KERNEL).encode())
    commit(git_repo, "names")
    on_disk = run_main("check", str(git_repo), "--format", "json", "--no-cache")
    for args in (("--rev", "HEAD"), ("--staged",)):
        result = run_main("check", str(git_repo), *args, "-v", "--no-cache")
        assert result.returncode == 1, result.stdout + result.stderr
        assert "read    real/latin1-\\xe9.yaml: 1 object(s)" in result.stderr
        assert "read    real/caf\u00e9.yaml: 1 object(s)" in result.stderr  # UTF-8, not ASCII
        assert "real/latin1-\\xe9.yaml" in result.stdout and "GPU001" in result.stdout
        as_json = run_main("check", str(git_repo), *args, "--format", "json", "--no-cache")
        assert _findings(as_json) == _findings(on_disk)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("make", "args", "needle"),
    [
        ("repo", ("--rev", "no-such-branch"), "unknown revision 'no-such-branch'"),
        ("repo", ("--rev", "HEAD~5"), "unknown revision 'HEAD~5'"),
        ("plain", ("--rev", "HEAD"), "is not inside a git repository"),
        ("repo-sub", ("--rev", "HEAD"), "does not exist at revision 'HEAD'"),
        ("shallow", ("--rev", "HEAD~1"), "`fetch-depth: 0`"),
        ("shallow", ("--base", "HEAD~1"), "a shallow clone"),
    ],
)
def test_git_errors_exit_2_with_what_to_do(
    tmp_path: Path, git_repo: Path, make: str, args: tuple[str, ...], needle: str
):
    write(git_repo, "support-matrix.csv", MATRIX)
    write(git_repo, "n.yaml", gpu_node("a"))
    commit(git_repo, "one")
    write(git_repo, "m.yaml", gpu_node("b"))
    commit(git_repo, "two")
    target = git_repo
    if make == "plain":
        target = tmp_path / "plain"
        target.mkdir()
    elif make == "repo-sub":
        target = git_repo / "new-dir"
        target.mkdir()
    elif make == "shallow":
        target = tmp_path / "shallow"
        subprocess.run(
            ["git", "clone", "-q", "--depth", "1", f"file://{git_repo}", str(target)],
            check=True,
            capture_output=True,
        )
    command = "check"
    result = run_main(command, str(target), *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert needle in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1  # one line, not a log


@pytest.mark.slow
def test_gitpython_is_imported_only_for_rev_and_base(git_repo: Path):
    write(git_repo, "support-matrix.csv", MATRIX)
    write(git_repo, "n.yaml", gpu_node("a"))
    commit(git_repo, "one")
    probe = (
        "import sys\n"
        "from gpudrv_check.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "print(code, 'git' in sys.modules)\n"
    )

    def imported(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True
        )
        return done.stdout.strip().splitlines()[-1]

    assert imported("check", str(git_repo)) == "0 False"
    assert imported("audit", str(git_repo)) == "0 False"
    assert imported("check", str(git_repo), "--rev", "HEAD") == "0 True"


@pytest.mark.slow
def test_a_clean_checkout_reads_the_same_at_head(git_repo: Path):
    import shutil

    from tests.conftest import EXAMPLES

    shutil.copytree(EXAMPLES / "lab", git_repo, dirs_exist_ok=True)
    shutil.copy(git_repo / "steps" / "node3.yaml", git_repo / "k8s" / "node3.yaml")
    write(git_repo, "k8s/broken.yaml", "apiVersion: v1\nkind: [\n")
    commit(git_repo, "lab")
    for command in ("check", "audit"):
        disk = run_main(
            command, str(git_repo), "-v", *(("--format", "json") if command == "check" else ())
        )
        head = run_main(
            command,
            str(git_repo),
            "-v",
            "--rev",
            "HEAD",
            *(("--format", "json") if command == "check" else ()),
        )
        assert (head.returncode, head.stdout, head.stderr) == (
            disk.returncode,
            disk.stdout,
            disk.stderr,
        )


@pytest.mark.slow
def test_rev_reads_custom_policies_of_that_revision(git_repo: Path):
    import shutil

    from tests.conftest import ROOT

    write(git_repo, ".gpudrv-check.yaml", "matrix: null\npolicies: [custom/]\n")
    (git_repo / "custom").mkdir()
    shutil.copy(
        ROOT / "policies" / "examples" / "driver-branch-allowed.yaml",
        git_repo / "custom" / "branch.yaml",
    )
    write(git_repo, "n.yaml", gpu_node("old-branch", branch="535"))
    commit(git_repo, "policy")
    shutil.rmtree(git_repo / "custom")  # gone from the working tree, still in the commit
    at_head = run_main("check", str(git_repo), "--rev", "HEAD", "--format", "concise")
    on_disk = run_main("check", str(git_repo))
    assert at_head.returncode == 1, at_head.stderr
    assert "n.yaml:8:5: error ORG002 GPU node old-branch: driver branch '535'" in at_head.stdout
    assert on_disk.returncode == 2 and "policies: 'custom/' not found" in on_disk.stderr


def test_a_damaged_blob_at_the_revision_is_a_finding_at_its_file(git_repo: Path):
    """Issue 23: a corrupt loose object ended `check --rev` in an internal error (the batch
    reader's ValueError). Now that file is a GPU000 "cannot read" and the rest is checked."""
    write(git_repo, "support-matrix.csv", MATRIX)
    write(git_repo, "nodes/a.yaml", gpu_node("a"))
    write(git_repo, "nodes/b.yaml", gpu_node("b", kernel=NEW_KERNEL))
    commit(git_repo, "two nodes")
    sha = git(git_repo, "rev-parse", "HEAD:nodes/a.yaml").strip()
    loose = git_repo / ".git" / "objects" / sha[:2] / sha[2:]
    loose.chmod(0o644)
    loose.write_bytes(b"not zlib at all")
    result = run_main("check", str(git_repo), "--rev", "HEAD", "--format", "json")
    assert result.returncode == 1, result.stderr
    assert "internal error" not in result.stderr
    findings = json.loads(result.stdout)["findings"]
    damaged = [f for f in findings if f["location"]["file"] == "nodes/a.yaml"]
    assert [f["rule"] for f in damaged] == ["GPU000"]
    assert "damaged" in damaged[0]["message"]
    assert any(f["location"]["file"] == "nodes/b.yaml" for f in findings)  # the rest is checked


def test_a_revision_written_out_for_kustomize_is_bounded(git_repo: Path, tmp_path: Path):
    """`--rev --kustomize` writes the revision's files out for kustomize to read: never a file
    over the limit, never more than the total (in path order); what is left out is returned
    (the kustomize source names it when a build fails)."""
    from gpudrv_check.read.git import GitTree

    write(git_repo, "a.yaml", "a: 1\n")
    write(git_repo, "big.yaml", "x: " + "y" * 500 + "\n")
    write(git_repo, "c.yaml", "c: " + "z" * 60 + "\n")
    write(git_repo, "d.yaml", "d: 4\n")
    commit(git_repo, "files of several sizes")
    tree = GitTree(git_repo, "HEAD")
    dest = tmp_path / "out"
    try:
        left_out = tree.materialize(dest, limit=100, total=60)
    finally:
        tree.close()
    written = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    # big.yaml (504 bytes) is over the limit; c.yaml (64) over the 55 left after a.yaml (5)
    assert left_out == ["big.yaml", "c.yaml"]
    assert written == ["a.yaml", "d.yaml"]
    assert (dest / "a.yaml").read_text() == "a: 1\n"


@pytest.mark.parametrize("entry", [".policies/", "policies/"])
def test_policy_files_are_the_same_from_every_source(git_repo: Path, entry: str):
    """Review dp, dp2: `policies: [.policies/]` was found on disk but "not found" with --staged
    or --rev, and a dot-file inside a policies folder was read from the disk only. One rule
    now: the entry is read whatever its name, dot-names below it are not."""
    from gpudrv_check.read.config import load_config
    from gpudrv_check.read.git import GitTree, IndexTree
    from gpudrv_check.read.policies import policy_files

    write(git_repo, ".gpudrv-check.yaml", f"matrix: null\npolicies: [{entry}]\n")
    folder = entry.rstrip("/")
    for rel in ("p.yaml", ".extra.yaml", ".hidden/q.yaml", "team/r.yaml"):
        write(git_repo, f"{folder}/{rel}", "id: X\n")
    commit(git_repo, "policies")
    config = load_config(git_repo)
    expected = [f"{folder}/p.yaml", f"{folder}/team/r.yaml"]
    assert policy_files(git_repo, config) == expected
    assert policy_files(git_repo, config, IndexTree(git_repo)) == expected
    assert policy_files(git_repo, config, GitTree(git_repo, "HEAD")) == expected
