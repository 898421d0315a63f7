"""core/lazy_re.py: a pattern compiled when first used behaves as `re.compile`'s."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import gpudrv_check
from gpudrv_check.core import lazy_re
from gpudrv_check.core.lazy_re import lazy_compile, lazy_compile_bytes

CASES = [
    (r"(\d+)g\.(\d+)gb", 0, ["1g.5gb", "x 3g.20gb y 7g.40gb", "", "g.gb"]),
    (r"^([^\S\n]*):(?=:)", re.MULTILINE, ["::a\n  ::b\nc::", "no", "\t::x"]),
    (r"(?P<key>.*?)(?P<index>(?:\[\d+\])*)$", 0, ["a[1][2]", "b", "[3]"]),
    ("[\x00-\x1f\x7f-\x9f]", 0, ["ok", "a\x1bb\x07", "\x9f"]),
    (r"[a-z]+", re.IGNORECASE, ["ABC def", "123", "x"]),
]


def _same(a, b) -> bool:
    """Equal results: match objects compared by their groups and spans."""
    if isinstance(a, re.Match) or isinstance(b, re.Match):
        return (
            isinstance(a, re.Match)
            and isinstance(b, re.Match)
            and (a.span(), a.groups(), a.groupdict()) == (b.span(), b.groups(), b.groupdict())
        )
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.parametrize("source,flags,texts", CASES)
def test_every_method_gives_what_the_compiled_pattern_gives(source, flags, texts):
    compiled = re.compile(source, flags)
    for text in texts:
        lazy = lazy_compile(source, flags)  # a fresh one each time: the first use compiles
        assert _same(lazy.search(text), compiled.search(text))
        assert _same(lazy_compile(source, flags).match(text), compiled.match(text))
        assert _same(lazy_compile(source, flags).fullmatch(text), compiled.fullmatch(text))
        assert lazy_compile(source, flags).findall(text) == compiled.findall(text)
        assert _same(list(lazy.finditer(text)), list(compiled.finditer(text)))
        assert lazy.sub("<\\g<0>>", text) == compiled.sub("<\\g<0>>", text)
        assert lazy.subn("-", text, count=1) == compiled.subn("-", text, count=1)
        assert lazy.split(text) == compiled.split(text)
    lazy = lazy_compile(source, flags)
    assert (lazy.pattern, lazy.flags, lazy.groups, lazy.groupindex) == (
        compiled.pattern,
        compiled.flags,
        compiled.groups,
        compiled.groupindex,
    )


def test_the_pattern_is_compiled_once_and_only_when_used(monkeypatch):
    calls = []
    real = re.compile
    monkeypatch.setattr(lazy_re.re, "compile", lambda *a: calls.append(a) or real(*a))
    pattern = lazy_compile(r"x+", re.IGNORECASE)
    assert calls == []
    assert pattern.search("aXXb").group() == "XX"
    assert pattern.match("xx") and pattern.sub("y", "axb") == "ayb"
    assert calls == [(r"x+", re.IGNORECASE)]
    assert repr(lazy_compile("a")) == "lazy_compile('a', 0)"


def test_equal_and_hashed_as_the_compiled_pattern():
    """A record holding a pattern compares it (nvidia/cuda.py `ImageRule`): a lazy one is
    equal to the compiled pattern of the same text and flags, and to another lazy one."""
    assert lazy_compile("a+") == re.compile("a+") and re.compile("a+") == lazy_compile("a+")
    assert lazy_compile("a+") == lazy_compile("a+")
    assert lazy_compile("a+") != re.compile("a+", re.IGNORECASE)
    assert lazy_compile("a+") != lazy_compile("b+") and lazy_compile("a+") != "a+"
    assert hash(lazy_compile("a+")) == hash(re.compile("a+"))
    assert len({lazy_compile("a+"), re.compile("a+")}) == 1


@pytest.mark.parametrize("used", [False, True], ids=["fresh", "used"])
def test_copied_and_pickled_as_a_compiled_pattern(used):
    import copy
    import pickle

    pattern = lazy_compile(r"(\d+)g", re.IGNORECASE)
    if used:
        assert pattern.search("3G")
    for other in (copy.copy(pattern), copy.deepcopy(pattern), pickle.loads(pickle.dumps(pattern))):
        assert other == pattern and other.search("x 7G").group(1) == "7"
        assert (other.pattern, other.flags) == (pattern.pattern, pattern.flags)


def test_an_invalid_pattern_raises_when_first_used():
    pattern = lazy_compile("(unclosed")
    with pytest.raises(re.error):
        pattern.search("x")


def test_every_lazy_pattern_of_the_package_compiles():
    """A pattern of ours that does not compile would fail where first used, maybe in a rare
    path: each is compiled here (every module imported), and they are many."""
    found = []
    for info in pkgutil.walk_packages(gpudrv_check.__path__, "gpudrv_check."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, lazy_re._Lazy):
                found.append(f"{info.name}.{name}")
                # asking for its text compiles it (re.error here for a broken one)
                assert value.pattern == value._source, name
                assert value.groups == re.compile(value._source, value._options).groups
    assert len(found) >= 30, found


def test_a_bytes_pattern_compiles_when_used_and_copies_as_one():
    import copy
    import pickle

    pattern = lazy_compile_bytes(rb"#\[")
    assert repr(pattern) == "lazy_compile_bytes(b'#\\\\[', 0)"
    assert pattern.search(b"a #[b").span() == (2, 4) and pattern.search(b"#b[") is None
    for other in (copy.copy(pattern), pickle.loads(pickle.dumps(pattern))):
        assert other == pattern == re.compile(rb"#\[") and other.search(b"#[")
