"""Colons in flow scalars, as Kubernetes' YAML decoder reads them (issue 13).

Rows follow go-yaml's yaml_parser_scan_plain_scalar (scannerc.go): inside `{}`/`[]` a plain
scalar ends at `:` only when a blank follows (or at `,[]{}`), so `a:b` is one scalar.
"""

from __future__ import annotations

import pytest

from gpudrv_check.read.yaml_docs import parse_text

ROWS = [
    (
        "c: {image: nvcr.io/nvidia/cuda:12.4.1-base}\n",
        {"c": {"image": "nvcr.io/nvidia/cuda:12.4.1-base"}},
    ),
    ("c: [a:b, c, 'x:y']\n", {"c": ["a:b", "c", "x:y"]}),
    ("c: {a: b:c, d:e:f}\n", {"c": {"a": "b:c", "d:e:f": None}}),
    ("c: {a:b}\n", {"c": {"a:b": None}}),
    ("c: [a:, b]\n", {"c": ["a:", "b"]}),
    ("c: [{x: 'q', y: h:1}, {z: 2}]\n", {"c": [{"x": "q", "y": "h:1"}, {"z": 2}]}),
]


@pytest.mark.parametrize(("text", "data"), ROWS)
def test_colon_inside_a_flow_scalar_is_part_of_it(text: str, data: dict):
    parsed = parse_text(text)
    assert not parsed.failed and not parsed.problems
    assert [d.data for d in parsed.docs] == [data]


def test_positions_do_not_move():
    parsed = parse_text("a: 1\nc: {image: x/y:1, other: z}\n")
    c = parsed.docs[0].data["c"]
    assert c.key_pos("other") == (2, 19)


def test_a_real_syntax_error_after_it_is_still_reported():
    parsed = parse_text("c: {a: b:c\n")
    assert parsed.failed
    [problem] = parsed.problems
    assert problem.message.startswith("YAML syntax error: did not find expected ',' or '}'")
    assert "\ue000" not in problem.message


def test_many_colons_read_in_one_go_quoted_and_block_ones_unchanged():
    text = "".join(f"c{i}: {{image: nvcr.io/nvidia/cuda:12.{i}-base}}\n" for i in range(500))
    text += 'q: "k:v"\nu: http://h:80/p\nj: {"a":1}\n'
    parsed = parse_text(text)
    assert not parsed.failed and not parsed.problems
    data = parsed.docs[0].data
    assert data["c499"] == {"image": "nvcr.io/nvidia/cuda:12.499-base"}
    assert (data["q"], data["u"], data["j"]) == ("k:v", "http://h:80/p", {"a": 1})
