"""The JSON reader for valid JSON libyaml refuses: same located data, same limits."""

from __future__ import annotations

import pytest

from gpudrv_check.core.located import LMap, scalar_text
from gpudrv_check.read.json_docs import parse_json
from gpudrv_check.read.manifests import parse_document_text, parse_manifest_bytes
from gpudrv_check.read.yaml_docs import MAX_DEPTH, parse_text


def test_values_positions_and_raw_text():
    parsed = parse_json('{"a": [1, 2.50, true, null, "x"],\n "b": {"c": -0}}')
    [doc] = parsed.docs
    data = doc.data
    assert data == {"a": [1, 2.5, True, None, "x"], "b": {"c": 0}}
    assert isinstance(data, LMap) and data.kpos == {"a": (1, 2), "b": (2, 2)}
    assert data["a"].ipos == [(1, 8), (1, 11), (1, 17), (1, 23), (1, 29)]
    assert scalar_text(data["a"], 1) == "2.50"  # the text written, as the YAML reader keeps it
    assert scalar_text(data["b"], "c") == "-0"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"\\ud83d\\ude00"', "\U0001f600"),  # a surrogate pair: libyaml refuses it
        ('"\\udc00"', "\ufffd"),  # a lone surrogate: U+FFFD, as Go's decoder reads it
        ('"\u0085\u007f\ufffe"', "\u0085\u007f\ufffe"),  # raw characters YAML forbids
        ("9223372036854775807", 2**63 - 1),
        ("9223372036854775808", float(2**63)),  # past int64: a float, as Kubernetes reads it
        ("1" * 5000, float("inf")),  # no int() over 4300 digits
        ("1e400", float("inf")),
    ],
)
def test_json_that_yaml_reads_differently_or_not_at_all(text, expected):
    [doc] = parse_json(text).docs
    assert doc.data == expected


def test_a_stream_of_values_is_several_documents():
    parsed = parse_json('{"a": 1}\n{"b": 2} [3]')
    assert [(d.index, d.pos, d.data) for d in parsed.docs] == [
        (0, (1, 1), {"a": 1}),
        (1, (2, 1), {"b": 2}),
        (2, (2, 10), [3]),
    ]


@pytest.mark.parametrize(
    ("text", "pos", "part"),
    [
        ('{"a" 1}', (1, 6), "expected ':'"),
        ("[1,]", (1, 4), "expected a value"),
        ('{"a": 1,}', (1, 9), "expected a quoted key"),
        ('{"a": 1]', (1, 8), "unexpected ']'"),
        ('{"a": "open', (1, 7), "unterminated string"),
        ('{"a": "\t"}', (1, 8), "invalid control character"),
        ("[1, 2", (1, 6), "unexpected end"),
        ("{'a': 1}", (1, 2), "expected a quoted key"),
        ("[01]", (1, 3), "expected ','"),
    ],
)
def test_syntax_errors_are_located(text, pos, part):
    parsed = parse_json(text)
    [problem] = parsed.problems
    assert parsed.failed and problem.rule == "GPU000"
    assert (problem.line, problem.column) == pos
    assert part in problem.message


def test_duplicate_key_at_the_second_key():
    parsed = parse_json('{"a": 1,\n "a": 2}')
    [problem] = parsed.problems
    assert (problem.rule, problem.line, problem.column) == ("GPU008", 2, 2)
    assert parsed.docs[0].data == {"a": 2}


def test_deep_nesting_is_refused_without_recursion():
    parsed = parse_json("[" * 50_000 + "]" * 50_000)
    assert parsed.docs == [] and "nesting deeper" in parsed.problems[0].message
    assert parse_json("[" * MAX_DEPTH + "]" * MAX_DEPTH).docs


@pytest.mark.parametrize(
    ("text", "documents"),
    [
        ('{\n\t"kind":\t"Node"\n}', 1),  # tabs: libyaml reads these as JSON whitespace too
        ('{"kind": "Node", "note": "\\ud83d\\ude00"}', 1),
        ('{"kind": "Node"}\n{"kind": "Pod"}', 2),
    ],
)
def test_json_files_read_without_a_problem(text, documents):
    result = parse_manifest_bytes("x.json", text.encode())
    assert not result.problems
    assert len(result.skipped) == documents  # no apiVersion: read, then skipped


def test_yaml_in_a_json_file_gets_the_yaml_complaint():
    result = parse_manifest_bytes("x.json", b"kind: Node\nmetadata:\n\tname: x\n")
    [problem] = result.problems
    assert "YAML syntax error" in problem.message


def test_the_yaml_reader_still_serves_ordinary_json():
    assert not parse_text('{"a": [1, {"b": null}]}').failed


@pytest.mark.parametrize("char", ["\x85", "\u2028", "\u2029", "\ufeff"])
def test_line_break_characters_inside_json_strings_are_kept(char):
    """YAML 1.1 folds a raw NEL inside a quoted string into a space; JSON keeps it."""
    text = '{"v": "a' + char + 'b"}'
    assert parse_document_text("x.json", text).docs[0].data == {"v": "a" + char + "b"}
