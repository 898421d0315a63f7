"""Without ruamel.yaml's C extension (ruamel.yaml.clib has no wheel for every platform, and
ruamel.yaml 0.19 no longer pulls it in), the reader uses the pure-Python parser instead of
failing at the first file: same event classes, the same documents and positions."""

from __future__ import annotations

import sys

import pytest

from gpudrv_check.read import yaml_docs
from gpudrv_check.read.yaml_docs import parse_text

TEXT = "a: [1, {b: 'c'}]\nkind: Node\nmetadata:\n  name: node-1\n---\n- 0x10\n- ~\n"


def _shape(parsed):
    return [(d.data, d.data.pos if hasattr(d.data, "pos") else None) for d in parsed.docs]


def test_without_the_c_extension_the_pure_parser_reads_the_same(monkeypatch: pytest.MonkeyPatch):
    expected = parse_text(TEXT)
    monkeypatch.setitem(sys.modules, "ruamel.yaml.cyaml", None)  # import raises ImportError
    monkeypatch.setitem(sys.modules, "_ruamel_yaml", None)
    got = parse_text(TEXT)
    assert not got.problems and not got.failed
    assert _shape(got) == _shape(expected)
    assert [d.data for d in got.docs] == [
        {"a": [1, {"b": "c"}], "kind": "Node", "metadata": {"name": "node-1"}},
        [16, None],
    ]


def test_without_the_c_extension_a_syntax_error_is_a_problem_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setitem(sys.modules, "ruamel.yaml.cyaml", None)
    monkeypatch.setitem(sys.modules, "_ruamel_yaml", None)
    got = parse_text("a: [1, 2\n")
    assert got.failed
    assert got.problems and got.problems[0].line >= 1
    assert yaml_docs is not None
