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


def test_the_rules_examples_are_part_of_the_identity():
    """A rule's `cases/` are read by a check: the SARIF report's help text for each rule lists
    them (rules/docs.py `page`), and a result entry holds the report; so an edited example
    must make the entries of the code before a miss (a review found them left out)."""
    package = Path(store.__file__).resolve().parents[2]  # the gpudrv_check folder
    examples = sorted(package.glob("rules/GPU*/cases/*.yaml"))
    assert examples
    named = {rel for rel, _, _ in store._stamps(package)}
    assert {p.relative_to(package).as_posix() for p in examples} <= named


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


def test_a_key_digests_values_with_their_types_alike_in_every_process():
    """engine/cache/store.py `digest`: builtin values by `marshal` version 0 (no interned-string
    mark, no references), anything else by its repr; equal values give equal keys, values
    that read differently do not."""
    import os
    import subprocess
    import sys

    from gpudrv_check.engine.cache.store import digest

    parts = (("apps/a.yaml", "d" * 64), [1, 2.5, None, True, b"x", {"k": (1,)}], "x")
    joined = "".join(["apps/", "a.yaml"])  # equal, not the same (interned) object
    assert digest((joined, "d" * 64), *parts[1:]) == digest(*parts)
    # the same key in another process (another string hash seed)
    code = (
        "from gpudrv_check.engine.cache.store import digest; "
        "print(digest(('apps/a.yaml', 'd' * 64), [1, 2.5, None, True, b'x', {'k': (1,)}], 'x'))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "7"},
    )
    assert other.stdout.strip() == digest(*parts)
    distinct = [1, 1.0, True, "1", b"1", (1,), [1], None, 0, -0.0, 0.0, ("a", "b"), ("ab",)]
    assert len({digest(value) for value in distinct}) == len(distinct)
    assert digest("a", "b") != digest("ab") != digest(("a", "b"))

    class Text(str):
        pass

    # a value marshal does not take: by its repr, still told from other values
    assert digest(Text("a")) == digest(Text("a")) != digest("b")
