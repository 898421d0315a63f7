"""Files a pull request controls: nothing outside the root is read or written, no read is
unbounded or blocks, and a write is whole or not at all (read/safe_io.py).

Each test is an attack that got through before safe_io: links at or above an output, a
committed baseline that is /dev/zero, a FIFO or a sparse giant, `inventory:` naming a link out
of the root, a file swapped between the walk and the read, link loops, links into unreadable
directories, and a manifest deeper than PATH_MAX.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import stat
import subprocess
from pathlib import Path

import pytest

from gpudrv_check.read.manifests import read_repo
from tests.conftest import EXAMPLES, cli_command, cli_env, run_cli
from tests.hostile import corpus
from tests.hostile.conftest import time_limit

SECRET = "TOP-SECRET-do-not-print"


def _lab(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "lab", root)
    return root


def _usage_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    return result.stderr


# --- writes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("--format", "sarif", "--output", "{dest}"),
        ("--write-baseline", "{dest}"),
    ],
    ids=["output", "write-baseline"],
)
def test_a_committed_link_at_an_output_is_replaced_not_followed(tmp_path: Path, args):
    root = _lab(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (root / "out.json").symlink_to(victim)
    argv = [a.replace("{dest}", "out.json") for a in args]
    result = run_cli("check", ".", "--no-cache", *argv, cwd=root)
    # the baseline just written accepts every finding: exit 0
    assert result.returncode == (0 if "--write-baseline" in argv else 1), result.stderr
    assert victim.read_text() == "precious\n"
    out = root / "out.json"
    assert not out.is_symlink() and json.loads(out.read_text())


def test_a_committed_directory_link_cannot_direct_an_output_out_of_the_root(tmp_path: Path):
    root = _lab(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "reports").symlink_to(outside, target_is_directory=True)
    result = run_cli(
        "check", ".", "--no-cache", "--format", "sarif", "--output", "reports/r.sarif", cwd=root
    )
    err = _usage_error(result)
    assert "leaves the repo root; not written" in err
    assert list(outside.iterdir()) == []


def test_a_cached_result_cannot_direct_an_output_out_of_the_root_either(tmp_path: Path):
    """A run the result cache answers writes its reports through the same check (`_replay`):
    a committed link that pointed inside the root when the result was cached, and points out
    of it now, directs nothing out."""
    root = _lab(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "inside").mkdir()
    (root / "reports").symlink_to("inside", target_is_directory=True)
    args = ["check", ".", "--cache-dir", str(tmp_path / "cache"), "--format", "sarif"]
    args += ["--output", "reports/r.sarif"]
    first = run_cli(*args, cwd=root)
    assert first.returncode == 1 and (root / "inside" / "r.sarif").is_file(), first.stderr
    (root / "inside" / "r.sarif").unlink()
    (root / "reports").unlink()
    (root / "reports").symlink_to(outside, target_is_directory=True)
    again = run_cli(*args, cwd=root, env=cli_env(GPUDRV_CHECK_PHASES="1"))
    assert "phase read" not in again.stderr  # answered by the result cache
    assert "leaves the repo root; not written" in _usage_error(again)
    assert list(outside.iterdir()) == []


def test_an_output_that_is_a_fifo_is_written_into(tmp_path: Path):
    """`--output` a FIFO (as a shell's process substitution `>(…)` gives one): the report goes
    into it, as a shell's `>` would write it, and the FIFO stays a FIFO."""
    import threading

    root = _lab(tmp_path)
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as handle:
            received.append(handle.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    with time_limit(60):
        result = run_cli(
            "check", ".", "--no-cache", "--format", "json", "--output", str(fifo), cwd=root
        )
        reader.join(30)
    assert result.returncode == 1, result.stderr
    assert json.loads(received[0])["findings"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_an_output_fifo_nobody_reads_is_an_error_not_a_wait(tmp_path: Path):
    root = _lab(tmp_path)
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    with time_limit(60):
        result = run_cli(
            "check", ".", "--no-cache", "--format", "json", "--output", str(fifo), cwd=root
        )
    assert "is a FIFO no process reads; not written" in _usage_error(result)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_an_output_link_out_of_the_root_to_a_device_is_followed(tmp_path: Path):
    """`--output /dev/stdout` (a link to /proc/self/fd/1) or a link the user made to
    /dev/null: a device is written into, never replaced by a regular file (as root, that put
    a file where /dev/null was)."""
    root = _lab(tmp_path)
    link = tmp_path / "null"
    link.symlink_to("/dev/null")
    result = run_cli(
        "check", ".", "--no-cache", "--format", "sarif", "--output", str(link), cwd=root
    )
    assert result.returncode == 1, result.stderr
    assert link.is_symlink() and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    shown = run_cli(
        "check", ".", "--no-cache", "--format", "json", "--output", "/dev/stdout", cwd=root
    )
    assert shown.returncode == 1 and json.loads(shown.stdout.split("\n6 files")[0])


def test_a_link_in_the_root_to_a_fifo_is_replaced_not_followed(tmp_path: Path):
    """Inside the checked root no link is followed, whatever it points to."""
    root = _lab(tmp_path)
    fifo = tmp_path / "outside.fifo"
    os.mkfifo(fifo)
    (root / "out.json").symlink_to(fifo)
    result = run_cli(
        "check", ".", "--no-cache", "--format", "json", "--output", "out.json", cwd=root
    )
    assert result.returncode == 1, result.stderr
    out = root / "out.json"
    assert not out.is_symlink() and json.loads(out.read_text())
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def _file_size_limit(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.slow
@pytest.mark.parametrize("option", ["--output", "--write-baseline"])
def test_a_failed_write_leaves_the_old_file_intact(tmp_path: Path, option: str):
    """A full disk, as the file-size limit makes one: the old file survives, no temp file."""
    root = _lab(tmp_path)
    old = json.dumps({"old": "x" * 100}) + "\n"
    (root / "kept.json").write_text(old)
    argv = ["--format", "json", "--output"] if option == "--output" else [option]
    result = subprocess.run(
        [*cli_command(), "check", ".", "--no-cache", *argv, "kept.json"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_file_size_limit(1000),
    )
    assert _usage_error(result).startswith("gpudrv-check: error: cannot write")
    assert (root / "kept.json").read_text() == old
    assert sorted(p.name for p in root.iterdir() if p.name.endswith(".tmp")) == []


# --- reads ------------------------------------------------------------------------------------


def test_a_baseline_that_is_a_link_to_dev_zero_is_refused(tmp_path: Path):
    root = _lab(tmp_path)
    (root / ".gpudrv-baseline.json").symlink_to("/dev/zero")
    with time_limit(60):
        result = run_cli("check", ".", "--baseline", ".gpudrv-baseline.json", cwd=root)
    assert "leaves the repo root" in _usage_error(result)


def test_a_committed_fifo_baseline_is_refused_without_blocking(tmp_path: Path):
    root = _lab(tmp_path)
    os.mkfifo(root / "b.json")
    with time_limit(60):
        result = run_cli("check", ".", "--no-cache", "--baseline", "b.json", cwd=root, timeout=60)
    assert "not a regular file" in _usage_error(result)


@pytest.mark.parametrize("what", ["baseline", "matrix"])
def test_a_sparse_giant_is_refused_by_its_size_before_reading(tmp_path: Path, what: str):
    root = _lab(tmp_path)
    name = ".gpudrv-baseline.json" if what == "baseline" else "support-matrix.csv"
    with open(root / name, "wb") as fh:
        fh.truncate(20 * 1024**3)  # 20 GiB of holes: nothing is allocated
    args = ["--baseline", name] if what == "baseline" else []
    with time_limit(60):
        result = run_cli("check", ".", "--no-cache", *args, cwd=root, timeout=60)
    err = _usage_error(result)
    assert str(20 * 1024**3) in err and "over" in err


def test_inventory_in_the_config_cannot_be_a_link_out_of_the_root(tmp_path: Path):
    root = _lab(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "nodes.yaml").write_text(
        corpus.BAD_NODE.format(name=SECRET).replace("maybe", SECRET)
    )
    (root / "nodes.yaml").symlink_to(outside / "nodes.yaml")
    with (root / ".gpudrv-check.yaml").open("a") as fh:
        fh.write("inventory: [nodes.yaml]\n")
    result = run_cli("check", ".", "--no-cache", "--format", "json", cwd=root)
    err = _usage_error(result)
    assert "inventory path 'nodes.yaml' leaves the repo root" in err
    assert SECRET not in err + result.stdout


def test_link_loops_do_not_abort_the_run(tmp_path: Path):
    root = _lab(tmp_path)
    for a, b in (("a.yaml", "b.yaml"), ("m1.csv", "m2.csv"), ("d1", "d2")):
        (root / a).symlink_to(b)
        (root / b).symlink_to(a)
    result = run_cli("check", ".", "--no-cache", "--format", "json", "--verbose", cwd=root)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert {f["rule"] for f in json.loads(result.stdout)["findings"]} >= {"GPU020"}
    assert "skipped a.yaml: symbolic link, not followed" in result.stderr


class _Entry:
    """A directory entry whose link target cannot be reached: stat says EACCES (a link into a
    directory the user may not search; root may search any, so the test stands in for it)."""

    def __init__(self, entry: os.DirEntry) -> None:
        self._entry = entry

    def __getattr__(self, name: str):
        return getattr(self._entry, name)

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        if follow_symlinks and self._entry.name.startswith("into-locked"):
            raise PermissionError(13, "Permission denied", self._entry.name)
        return self._entry.is_dir(follow_symlinks=follow_symlinks)

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        if follow_symlinks and self._entry.name.startswith("into-locked"):
            raise PermissionError(13, "Permission denied", self._entry.name)
        return self._entry.is_file(follow_symlinks=follow_symlinks)


class _Listing:
    def __init__(self, inner) -> None:
        self._inner = inner

    def __enter__(self):
        return (_Entry(e) for e in self._inner.__enter__())

    def __exit__(self, *exc) -> None:
        self._inner.__exit__(*exc)


def test_a_link_into_an_unreadable_directory_does_not_abort_the_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from gpudrv_check.read.tree import WorkingTree

    root = tmp_path / "repo"
    root.mkdir()
    (root / "node.yaml").write_text(corpus.BAD_NODE.format(name="n"))
    (root / "into-locked").symlink_to(tmp_path / "locked", target_is_directory=True)
    (root / "into-locked.yaml").symlink_to(tmp_path / "locked" / "x.yaml")
    real = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path=".": _Listing(real(path)))
    listing = WorkingTree(root).list_manifests([])
    assert [f.rel for f in listing.files] == ["node.yaml"]
    assert [(s.rel, s.reason) for s in listing.skipped] == [
        ("into-locked.yaml", "symbolic link, not followed")
    ]


# --- the walk, then the read ------------------------------------------------------------------


def _swap_after_walk(tmp_path: Path, make) -> tuple[object, str]:
    from gpudrv_check.read.tree import WorkingTree

    root = tmp_path / "repo"
    root.mkdir()
    (root / "node.yaml").write_text(corpus.BAD_NODE.format(name="n"))
    tree = WorkingTree(root)
    [ref] = tree.list_manifests([]).files
    (root / "node.yaml").unlink()
    make(root / "node.yaml")
    return tree, ref.rel


def test_a_file_swapped_for_a_link_after_the_walk_is_not_followed(tmp_path: Path):
    outside = tmp_path / "secret.yaml"
    outside.write_text(corpus.BAD_NODE.format(name=SECRET))
    tree, rel = _swap_after_walk(tmp_path, lambda p: p.symlink_to(outside))
    ref = tree.list_manifests([]).files  # cached listing: the walk saw a regular file
    [result] = read_repo(tree, ref, 1_000_000).files
    [problem] = result.problems
    assert problem.rule == "GPU000"
    assert "cannot read: a symbolic link, not followed" in problem.message
    assert not result.manifests


def test_a_file_swapped_for_a_fifo_after_the_walk_does_not_block(tmp_path: Path):
    tree, rel = _swap_after_walk(tmp_path, os.mkfifo)
    with time_limit(20):
        [result] = read_repo(tree, tree.list_manifests([]).files, 1_000_000).files
    [problem] = result.problems
    assert "not a regular file" in problem.message


def test_a_directory_swapped_for_a_link_after_the_walk_is_not_followed(tmp_path: Path):
    from gpudrv_check.read.safe_io import Refused
    from gpudrv_check.read.tree import WorkingTree

    root = tmp_path / "repo"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "node.yaml").write_text("kind: x\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "node.yaml").write_text(SECRET)
    tree = WorkingTree(root)
    assert [f.rel for f in tree.list_manifests([]).files] == ["sub/node.yaml"]
    shutil.rmtree(root / "sub")
    (root / "sub").symlink_to(outside, target_is_directory=True)
    with pytest.raises(Refused, match="symbolic link, not followed"):
        WorkingTree(root).read("sub/node.yaml")


def test_a_manifest_deeper_than_path_max_is_read(tmp_path: Path):
    """46 directories of 100 characters: the path is longer than PATH_MAX (4096)."""
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "lab", root)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    depth = 46
    try:
        for _ in range(depth):
            os.mkdir("d" * 100, dir_fd=fd)
            child = os.open("d" * 100, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        node = os.open("deep.yaml", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(node, corpus.BAD_NODE.format(name="deep").encode())
        os.close(node)
    finally:
        os.close(fd)
    result = run_cli("check", str(root), "--no-cache", "--format", "json")
    assert result.returncode == 1, result.stderr
    deep = "/".join(["d" * 100] * depth) + "/deep.yaml"
    assert len(deep) > 4096
    found = {(f["rule"], f["location"]["file"]) for f in json.loads(result.stdout)["findings"]}
    assert ("GPU040", deep) in found


def test_a_file_is_read_whole_whatever_its_size_said(tmp_path: Path, monkeypatch):
    """read_descriptor reads up to the end of the file: in one read when fstat's size is the
    file's, on until the end when the file has more (it grew, or its size lies, as procfs
    files say 0), and never past the limit."""
    import stat as stat_mod

    from gpudrv_check.read import safe_io

    path = tmp_path / "f.yaml"
    path.write_bytes(b"a: 1\n" * 1000)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert safe_io.read_descriptor(fd, 10**6) == b"a: 1\n" * 1000
    finally:
        os.close(fd)

    real_fstat = os.fstat
    for said in (0, 7, 4999):  # a size that is less than what the file holds

        def lying(fd, said=said):
            info = real_fstat(fd)
            fields = list(info)
            fields[stat_mod.ST_SIZE] = said
            return os.stat_result(fields)

        monkeypatch.setattr(safe_io.os, "fstat", lying)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert safe_io.read_descriptor(fd, 10**6) == b"a: 1\n" * 1000
            os.lseek(fd, 0, os.SEEK_SET)
            with pytest.raises(safe_io.TooLarge):
                safe_io.read_descriptor(fd, 4000)  # more than the limit: refused
        finally:
            os.close(fd)
        monkeypatch.setattr(safe_io.os, "fstat", real_fstat)
