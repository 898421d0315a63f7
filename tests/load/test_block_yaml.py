"""The line reader (read/block_yaml.py): exactly the event builder's trees, or it declines.

Each accepted text is compared with `parse_events` (the libyaml event builder alone) tree for
tree: documents and their start, every key and item with its position, key order, the raw text
of typed scalars, value types; under the engine's skim plan and without one. The fuzz targets
(tests/fuzz/test_fuzz.py `test_the_line_reader_*`) do the same on generated and mutated texts.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpudrv_check.core.reads import NOTHING_SKIPPED
from gpudrv_check.read import block_yaml
from gpudrv_check.read.block_yaml import parse_block
from gpudrv_check.read.yaml_docs import LAYOUTS, POSITIONS, parse_events, parse_text
from gpudrv_check.rules.plan import skim_plan
from tests.conftest import generated_corpus
from tests.fuzz.targets import target_block, tree_difference

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["skim", "whole"])
def plan(request: pytest.FixtureRequest):
    """The engine's skim plan, and none (derived when a test asks: collecting this module
    reads no file and needs no YAML parser)."""
    return skim_plan() if request.param == "skim" else NOTHING_SKIPPED


def assert_same(text: str, plan) -> None:
    """The line reader accepts `text` and gives exactly what the builder gives."""
    fast = parse_block(text, plan)
    assert fast is not None, "declined"
    slow = parse_events(text, plan)
    assert not slow.problems and not slow.failed
    assert [(d.index, d.pos) for d in fast.docs] == [(d.index, d.pos) for d in slow.docs]
    for mine, theirs in zip(fast.docs, slow.docs, strict=True):
        assert tree_difference(mine.data, theirs.data) is None


DEPLOYMENT = """\
# a comment before the document
apiVersion: apps/v1
kind: Deployment
metadata:
  name: train   # a trailing comment
  namespace: "team-a"
  labels: {}
spec:
  replicas: 4
  paused: false
  template:
    spec:
      nodeSelector:
        nvidia.com/gpu.present: 'true'
      containers:
      - name: main
        image: nvcr.io/nvidia/cuda:12.4.1-base
        args: ["--epochs", "10"]
        env:
        - name: A
          value: b
        resources:
          limits:
            nvidia.com/gpu: 8
            memory: 512Gi
      tolerations:
        -   key: nvidia.com/gpu
            operator: Exists
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: a, operator: In, value: '1', n: 2}
"""

NODE = """\
apiVersion: v1
kind: Node
metadata:
  name: gpu-0
  labels:
    nvidia.com/cuda.driver-version.major: "535"
    feature.node.kubernetes.io/system-os_release.VERSION_ID: 22.04
status:
  capacity:
    cpu: "96"
  images:
  - names: [a, b]
    sizeBytes: 1
  nodeInfo:
    kernelVersion: 5.15.0-125-generic
"""

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  names: {kind: Widget, plural: widgets}
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        properties:
          count: {type: integer, minimum: 0}
          name: {type: string, pattern: '^[a-z0-9-]+$'}
"""


# block scalars: literal and folded, each chomping, empty lines (bare and with spaces, fewer or
# more than the indentation: `  \n` is a line of two spaces), more-indented lines, comments in
# and after the text
BLOCK_SCALARS = """\
data:
  script.sh: |
    #!/bin/sh
    set -e   # not a comment

      indented
  \n    end
  folded: >
    one
    two

    three
      more indented
    four
  strip: |-
    x


  keep: |+
    x


  clipped: >-  # a comment
    a b
    c
# a comment at column 0 ends the scalar
next: 1
"""


@pytest.mark.parametrize(
    "text",
    [
        DEPLOYMENT,
        NODE,
        CRD,
        DEPLOYMENT + "---\n" + NODE + "---\n" + CRD,
        "a: 1\n---\nb: 2\n---\n",  # an empty last document
        "---\n# only a comment\n",  # an explicit empty document
        "--- # c\na: 1\n...x: 2\n".replace("...x: 2\n", ""),
        "- a\n- b: 1\n  c:\n  - d\n-   e: [x]\n",  # a list at the root
        "  a: 1\n  b:\n    c: 2\n",  # an indented root
        "a:\nb: ~\nc: null\nd: ''\ne: \"\"\n",  # nulls and empty strings
        "k: yes\nn: 0x1F\no: 017\nf: 1e3\ng: .5\nh: -.inf\ni: 1_000\nj: 99999999999999999999\n",
        "'it''s': \"a: b\"\n\"x y\": 'z # not a comment'\n",  # quoted keys and values
        "k: a#b\nl: a b  # c\nm: é\u00a0x\nn: -a\n",  # plain scalars with odd inner characters
        "a: [ ]\nb: { }\nc: []   # c\n",  # empty flow collections
        "a:\n  - x\n  -  y\nb:\n- z\n",  # indented and indentless lists
        "a: {k  : v, 'q' : w}\nb: [b c, d  e ,f]\n",  # blanks inside and around flow scalars
        BLOCK_SCALARS,
        "a: |\n  no line break at the end",
        "- |\n  x\n\n- >-\n  a\n  b\n",  # block scalar items
        "- name: a\n  script: |+\n    echo 1\n\n\n  b: 2\n",  # in a compact mapping
    ],
    ids=[
        "deployment",
        "node",
        "crd",
        "three-documents",
        "empty-last-document",
        "explicit-empty",
        "marker-comment",
        "root-list",
        "indented-root",
        "nulls",
        "typed-scalars",
        "quoted",
        "plain-inner",
        "empty-flow",
        "lists",
        "flow-blanks",
        "block-scalars",
        "block-scalar-at-end",
        "block-scalar-items",
        "block-scalar-keep",
    ],
)
def test_these_are_read_by_the_line_reader_exactly_as_the_builder_reads_them(text, plan):
    assert_same(text, plan)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("a: &x 1\nb: *x\n", "anchor and alias"),
        ("a: !!str 1\n", "tag"),
        ("a: |2\n  text\n", "block scalar with an indentation indicator"),
        ("a: >-1\n text\n", "folded scalar with an indentation indicator"),
        ("a: |\nb: 1\n", "block scalar with no text (empty)"),
        ("a: |\n\n", "block scalar with no text before the end"),
        ("a: |\n\n      \n  text\n", "leading empty line indented deeper than the text"),
        ("a: | text\n", "text after a block scalar's header"),
        ("a: |#c\n  text\n", "a comment with no blank after the header"),
        ("a:\n  b: |\n  text\n", "the text no deeper than its mapping: an empty scalar"),
        ("a: one\n  two\n", "plain scalar over two lines"),
        ("a: [1,\n  2]\n", "flow list over two lines"),
        ('a: "x\\ty"\n', "escape in double quotes"),
        ("a: 'x\n  y'\n", "quoted scalar over two lines"),
        ("a: 1\na: 2\n", "duplicate key"),
        ("a: {b: 1, b: 2}\n", "duplicate key in a flow mapping"),
        ("<<: {a: 1}\n", "merge key"),
        ("a:\tb\n", "tab"),
        ("a: b\r\n", "CR line end"),
        ("\ufeffa: b\n", "byte order mark"),
        ("a: 1\n...\n", "document end marker"),
        ("%YAML 1.1\n---\na: 1\n", "directive"),
        ("? a\n: b\n", "complex key"),
        ("- - a\n", "list in a list on one line"),
        ("-\n", "empty item"),
        ("a: {image: a/b:1.0}\n", "colon in a flow scalar (flow_colons reads it)"),
        ("a: [b?c]\n", "question mark in a flow scalar (libyaml refuses it)"),
        ("a: [b,]\n", "trailing comma"),
        ("x" * 1001 + ": 1\n", "a key libyaml finds too long"),
        ("~: 1\n", "null key"),
        ("a: 1\n b: 2\n", "more indented than its mapping"),
        ("a: b: c\n", "mapping value inside a plain scalar"),
        ("a:\n  b: 1\n c: 2\n", "an indentation between two levels"),
        ("a: 1\n- b\n", "list item where a key belongs"),
        ("a: \x07\n", "a character YAML refuses"),
        ("a:\n" + "".join("  " * i + "- x:\n" for i in range(130)), "nesting too deep"),
        ("a: '" + "[" * 130 + "'\n", "brackets the builder counts as nested too deep"),
        ("'" + "''" * 512 + "': 1\n", "a quoted key written longer than libyaml takes"),
        ("- '" + "''" * 512 + "': x\n", "the same key in a list item"),
        ("a: {" + "k" * 1025 + ": v}\n", "a flow mapping's key longer than libyaml takes"),
        ("a: {" + "k" * 1020 + "      : v}\n", "the same, counted to its colon"),
    ],
)
def test_what_the_line_reader_leaves_to_the_builder(text, why, plan):
    assert parse_block(text, plan) is None, why
    # the reader's entry point still reads it, by the builder
    via_entry = parse_text(text, plan)
    built = parse_events(text, plan)
    assert [p.message for p in via_entry.problems] == [p.message for p in built.problems]
    assert len(via_entry.docs) == len(built.docs)
    for mine, theirs in zip(via_entry.docs, built.docs, strict=True):
        assert tree_difference(mine.data, theirs.data) is None


def _repository_yaml() -> list[Path]:
    skip = {".git", ".venv", "node_modules", "__pycache__"}
    found = []
    for folder in ("tests", "examples", "docs", "policies", "schemas", "gpudrv_check"):
        for path in sorted((ROOT / folder).rglob("*")):
            if skip & set(path.parts) or path.suffix not in (".yaml", ".yml"):
                continue
            if path.is_file() and not path.is_symlink():
                found.append(path)
    return found


def test_every_yaml_file_of_the_repository_reads_as_the_builder_reads_it():
    """Hundreds of real and hostile files (the lab, rule cases, the hostile corpus)."""
    files = _repository_yaml()
    assert len(files) > 300
    accepted = 0
    for path in files:
        data = path.read_bytes()
        target_block(data)  # asserts equality for each plan it accepts
        try:
            accepted += parse_block(data.decode("utf-8")) is not None
        except UnicodeDecodeError:
            pass
    # most of what people write is in the subset (a hostile corpus is not)
    assert accepted > len(files) // 3


def test_the_benchmark_corpus_is_read_whole_by_the_line_reader(tmp_path):
    """Every file of a generated corpus (benchmarks/gen_corpus.py: workloads, nodes, CRDs with
    flow mappings, ConfigMaps) is in the subset, and reads as the builder reads it."""
    out = generated_corpus(tmp_path / "corpus", 20, 100)
    files = sorted(p for p in out.rglob("*.yaml"))
    assert len(files) > 100
    for path in files:
        text = path.read_text(encoding="utf-8")
        for plan in (skim_plan(), NOTHING_SKIPPED):
            assert_same(text, plan)


def test_positions_and_layouts_are_the_shared_ones():
    """As the builder shares them: one tuple per (line, column) and one key-position dict per
    layout across files (the trees of a large repo are mostly the same shapes)."""
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: b\n"
    first = parse_block(text)
    again = parse_block(text.replace("name: a", "name: c"))
    assert first is not None and again is not None
    one, two = first.docs[0].data, again.docs[0].data
    assert one["metadata"].kpos is two["metadata"].kpos
    assert all(POSITIONS[pos] is pos for pos in one.kpos.values())
    assert LAYOUTS[(*one.kpos, *one.kpos.values())] is one.kpos


_TWO_LISTS = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  tolerations:\n  - key: a\n"
    "    operator: Exists\n  - key: b\n  args: [x, {name}]\n"
)


def test_item_positions_are_shared_by_sequences_laid_out_alike():
    """Memory (issue 22): sequences whose items sit at the same positions share one ipos list
    (ITEM_LAYOUTS), in the line reader, the event builder and a file decoded from the cache
    or a worker (read/codec.py); each tree's items and their positions are still its own."""
    from gpudrv_check.read.codec import decode, encode
    from gpudrv_check.read.manifests import parse_manifest_bytes
    from gpudrv_check.read.yaml_docs import ITEM_LAYOUTS

    block = parse_block(_TWO_LISTS.format(name="a"))
    built = parse_text(_TWO_LISTS.format(name="b") + "  x: !!str 1\n")  # a tag: the builder
    assert block is not None and built.problems == []
    assert block_yaml.parse_block(_TWO_LISTS.format(name="b") + "  x: !!str 1\n") is None
    one, two = block.docs[0].data["spec"], built.docs[0].data["spec"]
    for key, expected in (("tolerations", [(7, 5), (9, 5)]), ("args", [(10, 10), (10, 13)])):
        assert one[key].ipos == expected and one[key].ipos is two[key].ipos
        assert ITEM_LAYOUTS[tuple(expected)] is one[key].ipos
        assert all(POSITIONS[pos] is pos for pos in one[key].ipos)
    assert (one["args"], two["args"]) == (["x", "a"], ["x", "b"])
    data = _TWO_LISTS.format(name="c").encode()
    again = decode(encode(parse_manifest_bytes("c.yaml", data, False, NOTHING_SKIPPED, "")))
    decoded = again.manifests[0].data["spec"]
    assert decoded["tolerations"].ipos is one["tolerations"].ipos
    # a layout the decoder meets first: shared by the next file decoded
    data = _TWO_LISTS.format(name="d").replace("  args:", "\n\n  args:").encode()
    stored = encode(parse_manifest_bytes("d.yaml", data, False, NOTHING_SKIPPED, ""))
    ITEM_LAYOUTS.pop(((12, 10), (12, 13)))
    first, second = (decode(stored).manifests[0].data["spec"]["args"] for _ in range(2))
    assert first.ipos == [(12, 10), (12, 13)] and first.ipos is second.ipos


def test_skimmed_values_are_kept_empty_at_their_position():
    parsed = parse_block(NODE, skim_plan())
    assert parsed is not None
    status = parsed.docs[0].data["status"]
    assert status["images"] == [] and status["images"].pos == (12, 3)
    assert status["nodeInfo"] == {} and status["nodeInfo"].pos == (15, 5)
    assert status["capacity"] == {"cpu": "96"}  # read by the rules: built
    # with the empty positions every kept-empty collection shares, as the builder keeps them
    from gpudrv_check.read.yaml_docs import ITEM_LAYOUTS

    tagged = NODE + "extra: !!str x\n"  # a tag: the event builder reads it
    assert parse_block(tagged, skim_plan()) is None
    built = parse_text(tagged, skim_plan()).docs[0].data["status"]
    for kept in (status, built):
        assert kept["images"].ipos is ITEM_LAYOUTS[()] and kept["nodeInfo"].kpos is LAYOUTS[()]
    flow = parse_block("kind: Node\nstatus:\n  images: [a]\n  nodeInfo: {a: b}\n", skim_plan())
    assert flow is not None
    kept = flow.docs[0].data["status"]
    assert kept["images"].ipos is ITEM_LAYOUTS[()] and kept["nodeInfo"].kpos is LAYOUTS[()]


def test_the_lines_remembered_are_forgotten_when_reading_ends():
    block_yaml.forget()
    first = parse_block("a: 1\nb: two\n")
    assert first is not None
    assert "a: 1" not in block_yaml._LINES  # seen once: not kept
    again = parse_block("a: 1\nb: three\n")
    assert again is not None
    assert "a: 1" in block_yaml._LINES
    remembered = parse_block("a: 1\nb: three\n")  # `a: 1` from the memo
    assert remembered is not None and remembered.docs[0].data == again.docs[0].data
    assert remembered.docs[0].data.kpos == again.docs[0].data.kpos
    block_yaml.forget()
    assert not block_yaml._LINES and not any(block_yaml._SEEN)
    assert parse_block("a: 1\nb: two\n") is not None  # and read again the same way
    assert "a: 1" not in block_yaml._LINES  # a new run: seen once again


@pytest.mark.parametrize(
    "text",
    [
        "a: [b" + " " * 200_000 + "c]\n",
        "a: {k: b" + " " * 200_000 + "c}\n",
        "- [b" + " " * 200_000 + "c\n",  # not closed: declined
        "a: [b" + " " * 200_000 + ":]\n",  # a colon: declined
    ],
    ids=["list", "mapping", "unclosed", "colon"],
)
def test_a_long_run_of_blanks_in_a_flow_scalar_is_read_in_one_pass(text):
    """Hostile input stays bounded (review of the line reader: a lazy scalar pattern before
    ` *,` went back over the whole run of blanks for each character, quadratic: 200k blanks
    would take minutes). Read as the builder reads it, or declined."""
    for plan in (skim_plan(), NOTHING_SKIPPED):
        if parse_block(text, plan) is not None:
            assert_same(text, plan)


# the shapes of block scalars generated below: where the scalar is (its parent's indentation),
# its header, the lines of its text (at, below and past its indentation, empty, blank,
# comment-like) and what follows it
_CONTEXTS = [
    ("a: {h}\n", 0),
    ("x:\n  a: {h}\n", 2),
    ("- {h}\n", 0),
    ("k:\n  - {h}\n", 2),
    ("- n: 1\n  a: {h}\n", 2),
    ("- a: {h}\n", 2),
    ("k:\n- {h}\n", 0),
]
_HEADERS = ["|", "|-", "|+", ">", ">-", ">+", "|  # c", ">- #c"]
_AFTER = ["", "\n", "\nz: 1\n", "\n---\nz: 1\n", "\n# end\n", "\n\n"]


def _block_lines(indent: int) -> list[str]:
    pad = " " * indent
    return [
        pad + "text",
        pad + "two words",
        pad + " more",
        pad + "  deeper x",
        "",
        " ",
        pad,
        pad + " ",
        pad + "# not a comment",
        "# col0",
        " " * max(indent - 1, 0) + "less",
    ]


@pytest.mark.parametrize("seed", range(4))
def test_generated_block_scalars_read_as_the_builder_reads_them(seed):
    """libyaml's block scalar rules (scanner.c `yaml_parser_scan_block_scalar`): thousands of
    generated scalars, each read by the line reader exactly as the builder reads it, or left
    to the builder; most are read (only those with no text and texts libyaml refuses are
    not)."""
    import random

    rng = random.Random(seed)
    accepted = 0
    for _ in range(1500):
        context, parent = rng.choice(_CONTEXTS)
        indent = parent + rng.choice([1, 2, 2, 2, 3])
        body = [rng.choice(_block_lines(indent)) for _ in range(rng.randint(0, 5))]
        head = context.format(h=rng.choice(_HEADERS)).rstrip("\n")
        text = head + "\n" + "\n".join(body) + rng.choice(_AFTER)
        target_block(text.encode())  # asserts equality wherever the line reader accepts
        accepted += parse_block(text) is not None
    assert accepted > 500


def test_the_ascii_check_of_a_text_agrees_with_the_expression_on_every_character():
    # block_yaml._outside: ASCII texts by deleting their allowed bytes, other short ones by
    # their distinct characters, long ones by OUTSIDE_CHARS
    from gpudrv_check.read.block_yaml import _BY_CHARACTER, OUTSIDE_CHARS, _outside

    for code in [*range(0x3000), *range(0xD7F0, 0xE010), *range(0xFEF0, 0x10010), 0x10FFFF]:
        char = chr(code)
        for text in (char, f"a: b\n{char}\n", f"{char}é"):
            assert _outside(text) is (re.search(OUTSIDE_CHARS, text) is not None), repr(text)
    long = "é" * _BY_CHARACTER
    for code in (0x09, 0x0A, 0x7F, 0xA0, 0x2028, 0x202A, 0xD800, 0xFEFF, 0xFF00, 0xFFFE, 0x10000):
        for text in (long + chr(code), chr(code) + long):
            assert _outside(text) is (re.search(OUTSIDE_CHARS, text) is not None), hex(code)
    assert not _outside("kind: Pod\nmetadata:\n  name: x\n" * 100)
    assert _outside("a:\tb\n") and _outside("a: b\r\n") and _outside("a: \x7f\n")


def test_flow_nesting_is_measured_as_before_over_the_brackets_alone():
    # yaml_docs._flow_depth_exceeds: the brackets are walked as a list first; the line where
    # the depth passes the limit is found as before (every opener +1, every closer -1, not
    # below 0), for texts past the cheap count
    import random

    from gpudrv_check.read.yaml_docs import _flow_depth_exceeds

    def walk(text: str, limit: int) -> int:
        depth = 0
        for at, char in enumerate(text):
            if char in "[{":
                depth += 1
                if depth > limit:
                    return text.count("\n", 0, at) + 1
            elif char in "]}" and depth:
                depth -= 1
        return 0

    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(rng.choice("[]{}a\n ") for _ in range(rng.randint(0, 60)))
        limit = rng.randint(0, 6)
        assert _flow_depth_exceeds(text, limit) == walk(text, limit), (text, limit)
    deep = "a: " + "[" * 129 + "]" * 129
    assert _flow_depth_exceeds("x\n" + deep, 128) == 2
    assert _flow_depth_exceeds("[]" * 2000, 128) == 0
    # past the brackets listed whole: walked match by match, the same answers
    many = "[]" * 60_000
    assert _flow_depth_exceeds(many, 128) == 0
    assert _flow_depth_exceeds(many + "\n" + "{" * 129, 128) == 2
