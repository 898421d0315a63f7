"""The cache's entries belong to the code that wrote them (engine/cache/store.py
`code_identity`): a checkout installed in place keeps its version while its files change, and
an entry of the code before an edit must not be taken for this code's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpudrv_check import __version__
from gpudrv_check.engine.cache import store
from gpudrv_check.engine.cache.store import Cache


def _tree(root: Path) -> None:
    (root / "pkg" / "__pycache__").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("A = 1\n")
    (root / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (root / "b.yaml").write_text("b: 1\n")


def test_the_stamps_are_every_file_but_bytecode_in_path_order(tmp_path: Path):
    _tree(tmp_path)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "secret.py").write_text("x\n")
    os.symlink(outside, tmp_path / "linked")  # a link is a file name here, never followed
    stamps = store._stamps(tmp_path)
    assert [rel for rel, _, _ in stamps] == ["b.yaml", "linked", "pkg/a.py"]
    assert stamps[2][1] == len("A = 1\n")


def test_the_rules_examples_are_not_code(tmp_path: Path):
    """A rule's `cases/` are what the tests run: no check reads them, so editing one keeps the
    cache (and the identity is not paid for their 71 files on every run)."""
    _tree(tmp_path)
    (tmp_path / "pkg" / "cases").mkdir()
    (tmp_path / "pkg" / "cases" / "pass-one.yaml").write_text("files: {}\n")
    (tmp_path / "pkg" / "cases.py").write_text("C = 1\n")  # files so named are code
    (tmp_path / "pkg" / "__pycache__" / "cases").write_text("")  # (in a folder left out)
    (tmp_path / "cases").write_text("")
    stamps = [rel for rel, _, _ in store._stamps(tmp_path)]
    assert stamps == ["b.yaml", "cases", "pkg/a.py", "pkg/cases.py"]
    package = Path(store.__file__).resolve().parents[2]
    assert any(package.glob("rules/GPU*/cases/*.yaml"))  # what is left out exists
    assert not any("/cases/" in rel for rel, _, _ in store._stamps(package))


def test_an_edit_that_keeps_the_size_still_changes_the_stamps(tmp_path: Path):
    _tree(tmp_path)
    before = store._stamps(tmp_path)
    path = tmp_path / "pkg" / "a.py"
    path.write_text("A = 2\n")
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000))
    assert store._stamps(tmp_path) != before


def test_the_identity_names_the_version_and_the_package_files():
    identity = store.code_identity()
    assert identity.startswith(f"{__version__}+") and len(identity) == len(__version__) + 17
    assert identity == store.code_identity()  # once per process


def test_an_entry_of_other_code_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cache = Cache(tmp_path / "cache")
    monkeypatch.setattr(store, "_CODE", ["0.1.0+before-the-edit"])
    cache.store("result", "repo", "key", ("found",))
    assert cache.load("result", "repo", "key") == ("found",)
    monkeypatch.setattr(store, "_CODE", ["0.1.0+after-the-edit"])
    assert cache.load("result", "repo", "key") is None
