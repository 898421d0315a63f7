"""The event-built loader: values as Kubernetes reads them, positions of every key and item."""

from __future__ import annotations

import time

import pytest

from gpudrv_check.core.located import LMap, LSeq, locate, scalar_text
from gpudrv_check.read.yaml_docs import MAX_DEPTH, parse_text, resolve_plain


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("550", 550),
        ("0", 0),
        ("-3", -3),
        ("22.04", 22.04),
        ("true", True),
        ("yes", True),  # YAML 1.1, as sigs.k8s.io/yaml reads it
        ("off", False),
        ("~", None),
        ("null", None),
        ("0x10", 16),
        ("0755", 0o755),
        ("5.15.0-119-generic", "5.15.0-119-generic"),
        ("ubuntu22.04", "ubuntu22.04"),
        ("1.2.3", "1.2.3"),
        ("-", "-"),
    ],
)
def test_plain_scalars_resolve_like_the_kubernetes_decoder(text, expected):
    assert resolve_plain(text) == expected
    assert type(resolve_plain(text)) is type(expected)


# sigs.k8s.io/yaml yaml.go `yamlToJSONTarget` + `convertToJSONableObject` (a float64 is handed to
# encoding/json as go-yaml read it) and Go's encoding/json `floatEncoder` ('f' notation from
# 1e-6 to 1e21): what the API server reads for a YAML float (core/yaml_scalars.py `json_number`)
JSON_NUMBER_ROWS = [
    ("2.0", 2),
    ("1e3", 1000),
    ("1E3", 1000),
    ("-0.0", 0),
    ("+4.", 4),
    ("1_0.0", 10),
    ("1e20", 10**20),  # 'f' notation: the literal 100000000000000000000
    # the shortest digits that read back as the float, as encoding/json writes them, not the
    # float's exact binary value (1152921504606846976)
    ("1.152921504606847e18", 1152921504606847000),
    ("123456789.123e10", 1234567891230000000),
    ("2.5", 2.5),
    (".5", 0.5),
    ("1e21", 1e21),  # 'e' notation from 1e21: "1e+21", no integer literal
    ("-1e21", -1e21),
    # an integer literal past 64 bits: go-yaml's float, left a float (yaml_scalars.py)
    ("18446744073709551616", 18446744073709551616.0),
]


@pytest.mark.parametrize(("text", "expected"), JSON_NUMBER_ROWS)
def test_a_float_is_read_as_the_number_the_api_server_reads(text, expected):
    assert resolve_plain(text) == expected
    assert type(resolve_plain(text)) is type(expected)


def test_both_readers_read_an_integral_float_as_its_integer_and_keep_its_text():
    # the line reader (read/block_yaml.py) and the event builder give the same tree; the text
    # as written stays for messages (`scalar_text`)
    from gpudrv_check.read.block_yaml import parse_block
    from gpudrv_check.read.yaml_docs import parse_events

    text = "replicas: 2.0\nhalf: 2.5\nq: '2.0'\n"
    fast = parse_block(text)
    assert fast is not None  # the line reader read it
    for parsed in (fast, parse_events(text)):
        doc = parsed.docs[0].data
        assert (doc["replicas"], doc["half"], doc["q"]) == (2, 2.5, "2.0")
        assert type(doc["replicas"]) is int
        assert scalar_text(doc, "replicas") == "2.0"
    # go-yaml's !!float is a float64 too (yaml_docs.py `_resolve_tagged`)
    tagged = parse_text("a: !!float 3\nb: !!float 2.5\n").docs[0].data
    assert (tagged["a"], tagged["b"]) == (3, 2.5) and type(tagged["a"]) is int


def test_the_tools_own_files_keep_their_floats():
    # the config and custom policies: no API server reads them, so `1.0` stays 1.0 (a count
    # there refuses it; a CUDA table refuses a version written 12.0), found by the written text
    from gpudrv_check.read.yaml_docs import keep_written_floats

    text = "a: 2.0\nb: 2\nc: [1e3, 0x10, 5, 2.5]\nd: {e: -0.0, f: '3.0'}\n"
    doc = parse_text(text).docs[0].data
    assert doc["a"] == 2 and type(doc["a"]) is int  # as a manifest reads it
    keep_written_floats(doc)
    assert (doc["a"], doc["b"], doc["c"], doc["d"]) == (
        2.0,
        2,
        [1000.0, 16, 5, 2.5],
        {"e": 0.0, "f": "3.0"},
    )
    assert [type(v) for v in (doc["a"], doc["b"], *doc["c"])] == [
        float,
        int,
        float,
        int,
        int,
        float,
    ]
    assert scalar_text(doc, "a") == "2.0"


def test_positions_of_keys_and_items_are_one_based():
    doc = parse_text("a: 1\nb:\n  - x\n  - y: 2\n").docs[0].data
    assert isinstance(doc, LMap)
    assert doc.kpos == {"a": (1, 1), "b": (2, 1)}
    assert isinstance(doc["b"], LSeq)
    assert doc["b"].ipos == [(3, 5), (4, 5)]
    assert locate(doc, ("b", 1, "y")) == (4, 5)
    # a missing step resolves to the deepest existing key
    assert locate(doc, ("b", 1, "zzz")) == (4, 5)
    assert locate(doc, ("nope",)) == (1, 1)


def test_quoted_scalars_stay_strings_and_typed_ones_keep_their_text():
    doc = parse_text('q: "550"\nn: 550\nv: 22.10\n').docs[0].data
    assert doc["q"] == "550" and doc["n"] == 550
    assert scalar_text(doc, "n") == "550"
    assert scalar_text(doc, "v") == "22.10"  # not 22.1


def test_multiple_documents_keep_their_index_and_start():
    parsed = parse_text("a: 1\n---\nb: 2\n---\n")
    assert [(d.index, d.pos) for d in parsed.docs] == [
        (0, (1, 1)),
        (1, (2, 1)),
        (2, (4, 1)),
    ]  # at the `---` marker
    assert parsed.docs[2].data is None


def test_duplicate_key_is_reported_at_the_second_key():
    parsed = parse_text("metadata:\n  name: a\n  name: b\n")
    [problem] = parsed.problems
    assert (problem.rule, problem.line, problem.column) == ("GPU008", 3, 3)
    assert parsed.docs[0].data["metadata"]["name"] == "b"


def test_syntax_error_has_the_parsers_position():
    parsed = parse_text("a: 1\n\tb: 2\n")
    [problem] = parsed.problems
    assert problem.rule == "GPU000"
    assert (problem.line, problem.column) == (2, 1)
    assert "tab" in problem.message


def test_unclosed_quote_is_a_syntax_error():
    [problem] = parse_text('a: "open\nb: 2\n').problems
    assert problem.rule == "GPU000" and "syntax" in problem.message


def test_unknown_tags_are_reported_and_never_constructed():
    parsed = parse_text("a: !Ref foo\nb: !!python/object:os.system echo\n")
    assert [(p.rule, p.line, p.column) for p in parsed.problems] == [
        ("GPU009", 1, 4),
        ("GPU009", 2, 4),
    ]
    assert parsed.docs[0].data == {"a": "foo", "b": "echo"}


def test_merge_keys_apply_and_explicit_keys_win():
    doc = parse_text("base: &b {k: v, n: 1}\nm:\n  <<: *b\n  k: mine\n").docs[0].data
    assert doc["m"] == {"k": "mine", "n": 1}


def test_alias_bomb_is_bounded_and_reported():
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        prev, cur = chr(96 + i), chr(97 + i)
        lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 10) + "]")
    start = time.process_time()
    parsed = parse_text("\n".join(lines) + "\n")
    assert time.process_time() - start < 5  # generous: an unbounded expansion never ends
    assert parsed.docs == []
    assert parsed.problems[0].rule == "GPU000"
    assert "alias bomb" in parsed.problems[0].message


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 20_000])
def test_deep_flow_nesting_is_refused_without_recursion(depth):
    parsed = parse_text("[" * depth + "]" * depth)
    assert parsed.docs == []
    assert parsed.problems[0].rule == "GPU000" and "nesting" in parsed.problems[0].message


def test_deep_block_nesting_is_refused_without_recursion():
    depth = MAX_DEPTH + 5
    text = "".join(" " * i + "k:\n" for i in range(depth)) + " " * depth + "v\n"
    parsed = parse_text(text)
    assert parsed.docs == []
    assert "nesting" in parsed.problems[0].message


def test_non_scalar_key_is_reported():
    parsed = parse_text("? [a, b]\n: v\n")
    assert parsed.problems and parsed.problems[0].rule == "GPU000"


_SAME_SHAPE = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: ml\n"
    "spec:\n  containers:\n  - name: main\n    image: nvcr.io/nvidia/pytorch:24.07-py3\n"
)


def test_files_of_one_shape_share_key_positions_and_strings():
    """Memory (issue 22): mappings laid out alike share one kpos dict, and equal texts are one
    string object, across files; positions and values are still each file's own."""
    a = parse_text(_SAME_SHAPE.format(name="a")).docs[0].data
    b = parse_text(_SAME_SHAPE.format(name="b")).docs[0].data
    assert a["metadata"].kpos is b["metadata"].kpos
    assert a["metadata"].key_pos("namespace") == (5, 3)
    image_a = a["spec"]["containers"][0]["image"]
    image_b = b["spec"]["containers"][0]["image"]
    assert image_a == image_b and image_a is image_b
    assert (a["metadata"]["name"], b["metadata"]["name"]) == ("a", "b")
    other = parse_text("metadata:\n  name: c\n\n  namespace: ml\n").docs[0].data
    assert other["metadata"].kpos is not a["metadata"].kpos  # another layout: its own
    assert other["metadata"].key_pos("namespace") == (4, 3)


def test_a_key_renamed_after_parsing_keeps_the_other_mappings_positions():
    """read/flow_colons.py renames keys after the parse (`d:e:f`): in a copy of the shared
    kpos, so another mapping of the same layout keeps its own keys and positions."""
    first = parse_text("c: {a: b:c, d:e:f}\n").docs[0].data["c"]
    second = parse_text("c: {a: b:c, d:e:f}\n").docs[0].data["c"]
    for c in (first, second):
        assert dict(c.kpos) == {"a": (1, 5), "d:e:f": (1, 13)}
    plain = parse_text("c: {a: 1, x: 2}\n").docs[0].data["c"]
    assert dict(plain.kpos) == {"a": (1, 5), "x": (1, 11)}
