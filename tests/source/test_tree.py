"""The walk: sorted, bounded, never leaves the root, never blocks, never hides a path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpudrv_check.read.tree import WorkingTree, display_name


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (b"plain.yaml", "plain.yaml"),
        ("caf\u00e9.yaml".encode(), "caf\u00e9.yaml"),  # printable UTF-8 stays as it is
        (b"new\nline.yaml", "new\\x0aline.yaml"),
        (b"\x1b[2J.yaml", "\\x1b[2J.yaml"),
        (b"latin1-\xe9.yaml", "latin1-\\xe9.yaml"),  # not UTF-8
        ("rlo-\u202egnp.yaml".encode(), "rlo-\\u202egnp.yaml"),  # bidi override
        ("nel\u0085.yaml".encode(), "nel\\x85.yaml"),
    ],
)
def test_display_name_escapes_what_could_forge_a_report_line(raw: bytes, shown: str):
    assert display_name(os.fsdecode(raw)) == shown


def test_odd_names_are_listed_escaped_and_read_by_their_real_name(tmp_path: Path):
    raw = os.path.join(os.fsencode(tmp_path), b"bad\n\xff.yaml")
    with open(raw, "wb") as f:
        f.write(b"kind: x\n")
    tree = WorkingTree(tmp_path)
    [ref] = tree.list_manifests([]).files
    assert ref.rel == "bad\\x0a\\xff.yaml"
    assert tree.read(ref.rel) == b"kind: x\n"


def test_links_fifos_and_loops_are_listed_as_skipped(tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.yaml").write_text("kind: x\n")
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    (root / "d" / "a.yaml").write_text("kind: a\n")
    (root / "file-link.yaml").symlink_to(outside / "o.yaml")
    (root / "dir-link").symlink_to(outside, target_is_directory=True)
    (root / "d" / "loop").symlink_to("..", target_is_directory=True)
    (root / "self.yaml").symlink_to("self.yaml")
    os.mkfifo(root / "fifo.yaml")
    listing = WorkingTree(root).list_manifests([])
    assert [f.rel for f in listing.files] == ["d/a.yaml"]
    assert [(s.rel, s.reason) for s in listing.skipped] == [
        ("d/loop/", "symbolic link to a directory, not followed"),
        ("dir-link/", "symbolic link to a directory, not followed"),
        ("fifo.yaml", "not a regular file (FIFO, socket, device)"),
        ("file-link.yaml", "symbolic link, not followed"),
        ("self.yaml", "symbolic link, not followed"),
    ]


def test_a_directory_met_twice_is_walked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A bind mount of a parent looks like a plain directory with the parent's inode."""
    (tmp_path / "a" / "mount").mkdir(parents=True)
    (tmp_path / "a" / "x.yaml").write_text("kind: x\n")
    real_fstat = os.fstat
    root_id = os.stat(tmp_path)

    def fake_fstat(fd, *args, **kwargs):
        # the walk lists directories by descriptor (no PATH_MAX, no link followed)
        if os.readlink(f"/proc/self/fd/{fd}").endswith("a/mount"):
            return root_id
        return real_fstat(fd, *args, **kwargs)

    monkeypatch.setattr(os, "fstat", fake_fstat)
    listing = WorkingTree(tmp_path).list_manifests([])
    assert [f.rel for f in listing.files] == ["a/x.yaml"]
    assert [(s.rel, s.reason) for s in listing.skipped] == [
        ("a/mount/", "directory already walked (mount loop)")
    ]


def test_a_directory_that_cannot_be_listed_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    (tmp_path / "locked").mkdir()
    (tmp_path / "ok.yaml").write_text("kind: x\n")
    real_scandir = os.scandir

    def scandir(path="."):
        shown = os.readlink(f"/proc/self/fd/{path}") if isinstance(path, int) else str(path)
        if shown.rstrip("/").endswith("locked"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    listing = WorkingTree(tmp_path).list_manifests([])
    assert [(f.rel, f.error) for f in listing.files] == [
        ("locked/", "cannot list directory: Permission denied"),
        ("ok.yaml", None),
    ]


def test_excluded_and_skipped_directories(tmp_path: Path):
    for rel in ("charts/c.yaml", ".git/config.yaml", "k8s/a.yaml", ".gpudrv-check.yaml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("a: 1\n")
    listing = WorkingTree(tmp_path).list_manifests(["charts/"])
    assert [f.rel for f in listing.files] == ["k8s/a.yaml"]
    assert [(s.rel, s.reason) for s in listing.skipped] == [("charts/", "excluded by config")]
