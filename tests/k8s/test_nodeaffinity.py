"""Node placement semantics (docs/kubernetes.md §1; upstream nodeaffinity_test.go, selector.go)."""

from __future__ import annotations

import itertools

import pytest

from gpudrv_check.k8s import nodeaffinity as na
from gpudrv_check.k8s.labels import Problem
from gpudrv_check.k8s.nodeaffinity import (
    REQUIRED_AFFINITY_PATH,
    Check,
    expression_problems,
    field_requirement_matches,
    field_requirement_problems,
    is_empty_term,
    node_selector_map_explanations,
    node_selector_map_matches,
    node_selector_matches,
    parse_int64,
    pod_matches_node_affinity,
    pod_placement_explanations,
    required_node_affinity,
    requirement_matches,
    term_explanations,
    term_matches,
    term_problems,
    validate_node_selector,
    validate_node_selector_map,
    validate_pod_node_placement,
    validate_preferred_terms,
)

DRIVER = "nvidia.com/cuda.driver.major"
NAME = "metadata.name"


def expr(key: object, operator: object, *values: object) -> dict[str, object]:
    """One matchExpressions / matchFields entry."""
    out: dict[str, object] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def term(*expressions: object, fields: list[object] | None = None) -> dict[str, object]:
    out: dict[str, object] = {}
    if expressions:
        out["matchExpressions"] = list(expressions)
    if fields is not None:
        out["matchFields"] = fields
    return out


def required(*terms: object) -> dict[str, object]:
    return {"nodeSelectorTerms": list(terms)}


def pod(
    node_selector: object = None, terms: object = "absent", *, raw_required: object = "absent"
) -> dict[str, object]:
    """A pod spec with an optional nodeSelector and required node affinity."""
    spec: dict[str, object] = {}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if terms != "absent":
        raw_required = {"nodeSelectorTerms": terms}
    if raw_required != "absent":
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": raw_required}
        }
    return spec


# --- parse_int64: Go strconv.ParseInt(s, 10, 64) -----------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("550", 550),
        ("0206", 206),  # leading zeros are fine
        ("+7", 7),
        ("-7", -7),
        ("-0", 0),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        ("0" * 5000 + "1", 1),  # long but in range: no Python int-digits limit error
        ("9223372036854775808", None),  # out of range
        ("-9223372036854775809", None),
        ("1" * 5000, None),
        ("", None),
        ("+", None),
        ("-", None),
        (" 1", None),
        ("1 ", None),
        ("1\n", None),
        ("1_000", None),  # underscores only with base 0 in Go
        ("0x10", None),
        ("1.0", None),
        ("1e3", None),
        ("٣", None),  # non-ASCII digit: Python int() would accept it, Go does not
        ("++1", None),
        (550, None),
        (None, None),
    ],
)
def test_parse_int64(text: object, expected: int | None) -> None:
    assert parse_int64(text) == expected


# --- one matchExpressions entry ------------------------------------------------------------------

REQUIREMENT_ROWS = [
    # In needs the key present with a listed value (docs/kubernetes.md §1)
    ("In: listed value", expr("gpu", "In", "a100", "h100"), {"gpu": "h100"}, True),
    ("In: key absent", expr("gpu", "In", "a100"), {}, False),
    ("In: value not listed", expr("gpu", "In", "a100"), {"gpu": "t4"}, False),
    ("In: empty value listed", expr("gpu", "In", ""), {"gpu": ""}, True),
    ("In: empty value not listed", expr("gpu", "In", "a100"), {"gpu": ""}, False),
    ("In: case matters", expr("gpu", "In", "A100"), {"gpu": "a100"}, False),
    # NotIn and DoesNotExist match nodes lacking the key
    ("NotIn: key absent", expr("gpu", "NotIn", "a100"), {}, True),
    ("NotIn: value excluded", expr("gpu", "NotIn", "a100"), {"gpu": "a100"}, False),
    ("NotIn: other value", expr("mem-type", "NotIn", "DDR", "DDR2"), {"mem-type": "DDR3"}, True),
    ("Exists: present", expr("GPU", "Exists"), {"GPU": "NVIDIA-GRID-K1"}, True),
    ("Exists: present, empty value", expr("GPU", "Exists"), {"GPU": ""}, True),
    ("Exists: absent", expr("GPU", "Exists"), {}, False),
    ("DoesNotExist: absent", expr("GPU", "DoesNotExist"), {"other": "x"}, True),
    ("DoesNotExist: present", expr("GPU", "DoesNotExist"), {"GPU": ""}, False),
    # Gt/Lt: strict int64 comparison, fail on missing or non-integer node value
    (
        "Gt: leading zeros (upstream)",
        expr("kernel-version", "Gt", "0204"),
        {"kernel-version": "0206"},
        True,
    ),
    ("Gt: lab step 5, 550", expr(DRIVER, "Gt", "560"), {DRIVER: "550"}, False),
    ("Gt: lab step 5, 535", expr(DRIVER, "Gt", "560"), {DRIVER: "535"}, False),
    ("Gt: newer driver", expr(DRIVER, "Gt", "560"), {DRIVER: "570"}, True),
    ("Gt: equal is not greater", expr(DRIVER, "Gt", "560"), {DRIVER: "560"}, False),
    ("Lt: less", expr(DRIVER, "Lt", "550"), {DRIVER: "535"}, True),
    ("Lt: equal is not less", expr(DRIVER, "Lt", "550"), {DRIVER: "550"}, False),
    ("Lt: negative", expr("n", "Lt", "0"), {"n": "-1"}, True),
    ("Gt: plus sign on node", expr("n", "Gt", "560"), {"n": "+570"}, True),
    ("Gt: int64 max", expr("n", "Gt", "9223372036854775806"), {"n": "9223372036854775807"}, True),
    ("Gt: node value overflows", expr("n", "Gt", "0"), {"n": "9223372036854775808"}, False),
    ("Gt: key missing", expr(DRIVER, "Gt", "1"), {}, False),
    ("Gt: node value not an integer", expr("k", "Gt", "5"), {"k": "5.15"}, False),
    ("Gt: node value with space", expr("k", "Gt", "5"), {"k": " 6"}, False),
    ("Gt: node value empty", expr("k", "Lt", "5"), {"k": ""}, False),
    ("Gt: requirement has leading zeros", expr("k", "Gt", "007"), {"k": "8"}, True),
    # invalid requirements match nothing, even where the operator alone would say yes
    ("Exists with values (upstream)", expr("foo", "Exists", "bar", "baz"), {"foo": "bar"}, False),
    ("In without values", expr("gpu", "In"), {"gpu": ""}, False),
    ("NotIn without values", expr("gpu", "NotIn"), {}, False),
    ("DoesNotExist with values", expr("gpu", "DoesNotExist", "x"), {}, False),
    ("Gt with two values", expr("n", "Gt", "1", "2"), {"n": "5"}, False),
    ("Gt with no value", expr("n", "Gt"), {"n": "5"}, False),
    ("Gt with non-integer value", expr("n", "Gt", "abc"), {"n": "5"}, False),
    ("Lt with 0x value", expr("n", "Lt", "0x10"), {"n": "5"}, False),
    ("lower-case operator", expr("gpu", "in", "a100"), {"gpu": "a100"}, False),
    ("unknown operator", expr("gpu", "Equals", "a100"), {"gpu": "a100"}, False),
    ("empty operator", expr("gpu", "", "a100"), {"gpu": "a100"}, False),
    ("invalid key", expr("invalid key", "Exists"), {"invalid key": "x"}, False),
    ("empty key", expr("", "DoesNotExist"), {}, False),
    (
        "invalid value (upstream)",
        expr("foo", "NotIn", "invalid value: ___@#$%^"),
        {"foo": "bar"},
        False,
    ),
    ("value too long", expr("foo", "NotIn", "a" * 64), {}, False),
    # wrong JSON types
    ("values hold an integer", expr(DRIVER, "In", 550), {DRIVER: "550"}, False),
    ("values is a string", {"key": "k", "operator": "In", "values": "a"}, {"k": "a"}, False),
    ("values is an object", {"key": "k", "operator": "In", "values": {}}, {"k": "a"}, False),
    ("key is an integer", expr(5, "Exists"), {"5": "x"}, False),
    ("operator is null", {"key": "k", "operator": None}, {"k": "x"}, False),
    ("requirement is a list", ["k", "Exists"], {"k": "x"}, False),
    ("requirement is null", None, {}, False),
    ("labels hold a non-string value", expr("k", "DoesNotExist"), {"k": 1}, True),
    ("labels is a list", expr("k", "DoesNotExist"), ["k"], True),
    ("labels is null", expr("k", "Exists"), None, False),
]


@pytest.mark.parametrize(
    ("req", "labels", "expected"),
    [row[1:] for row in REQUIREMENT_ROWS],
    ids=[row[0] for row in REQUIREMENT_ROWS],
)
def test_requirement_matches(req: object, labels: object, expected: bool) -> None:
    assert requirement_matches(req, labels) is expected


@pytest.mark.parametrize(
    ("req", "node_name", "expected"),
    [
        (expr(NAME, "In", "node_1"), "node_1", True),
        (expr(NAME, "In", "node_1"), "node_2", False),
        (expr(NAME, "NotIn", "node_1"), "node_1", False),
        (expr(NAME, "NotIn", "node_1"), "node_2", True),
        (expr(NAME, "In", "host_1", "host_2"), "host_1", False),  # exactly one value
        (expr(NAME, "In"), "host_1", False),
        (expr(NAME, "Exists"), "host_1", False),  # only In/NotIn
        (expr(NAME, "Gt", "1"), "host_1", False),
        # the scheduler's field set only holds metadata.name: any other key reads as ""
        (expr("spec.unschedulable", "In", ""), "host_1", True),
        (expr("spec.unschedulable", "In", "true"), "host_1", False),
        (expr(NAME, "In", 5), "5", False),
        ("metadata.name", "host_1", False),
        (expr(NAME, "In", "host_1"), None, False),
    ],
)
def test_field_requirement_matches(req: object, node_name: object, expected: bool) -> None:
    assert field_requirement_matches(req, node_name) is expected


# --- terms ----------------------------------------------------------------------------------------

GPU = {"GPU": "NVIDIA-GRID-K1"}

TERM_ROWS = [
    ("empty term matches nothing", {}, "n", GPU, False),
    ("empty expression list", {"matchExpressions": []}, "n", GPU, False),
    ("null lists", {"matchExpressions": None, "matchFields": None}, "n", GPU, False),
    (
        "expressions are ANDed: both hold",
        term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")),
        "n",
        GPU,
        True,
    ),
    (
        "expressions are ANDed: one fails",
        term(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")),
        "n",
        GPU,
        False,
    ),
    (
        "fields match, labels do not (upstream)",
        term(expr("label_1", "In", "label_1_val"), fields=[expr(NAME, "In", "host_1")]),
        "host_1",
        {},
        False,
    ),
    (
        "fields and labels match (upstream)",
        term(expr("label_1", "In", "label_1_val"), fields=[expr(NAME, "In", "host_1")]),
        "host_1",
        {"label_1": "label_1_val"},
        True,
    ),
    (
        "labels match, fields do not (upstream)",
        term(expr("foo", "In", "bar"), fields=[expr(NAME, "In", "node_1")]),
        "node_2",
        {"foo": "bar"},
        False,
    ),
    (
        "fields only",
        term(fields=[expr(NAME, "In", "node_1")]),
        "node_1",
        {},
        True,
    ),
    (
        "node without a name: matchFields not consulted (upstream len(nodeFields) > 0)",
        term(expr("foo", "In", "bar"), fields=[expr(NAME, "In", "node_1")]),
        "",
        {"foo": "bar"},
        True,
    ),
    (
        "one invalid expression spoils the term",
        term(expr("foo", "In", "bar"), expr("foo", "Gt", "x")),
        "n",
        {"foo": "bar"},
        False,
    ),
    (
        "invalid matchFields spoils the term",
        term(expr("foo", "In", "bar"), fields=[expr(NAME, "In", "a", "b")]),
        "a",
        {"foo": "bar"},
        False,
    ),
    ("term is a list", [expr("foo", "Exists")], "n", {"foo": "x"}, False),
    ("term is null", None, "n", {}, False),
    ("matchExpressions is an object", {"matchExpressions": {}}, "n", {}, False),
    (
        "matchExpressions is an object, fields fine",
        {"matchExpressions": {"key": "a"}, "matchFields": [expr(NAME, "In", "n")]},
        "n",
        {},
        False,
    ),
]


@pytest.mark.parametrize(
    ("term_", "node_name", "labels", "expected"),
    [row[1:] for row in TERM_ROWS],
    ids=[row[0] for row in TERM_ROWS],
)
def test_term_matches(term_: object, node_name: object, labels: object, expected: bool) -> None:
    assert term_matches(term_, node_name, labels) is expected


@pytest.mark.parametrize(
    ("term_", "empty"),
    [({}, True), ({"matchExpressions": []}, True), ({"matchFields": None}, True)]
    + [(term(expr("a", "Exists")), False), ({"matchExpressions": "x"}, False), (None, False)],
)
def test_is_empty_term(term_: object, empty: bool) -> None:
    assert is_empty_term(term_) is empty


def test_term_problems_paths() -> None:
    bad = term(expr("ok", "Exists"), expr("k", "Gt", "1", "2"), fields=[expr(NAME, "Lt", "n")])
    assert [p.path for p in term_problems(bad)] == [
        ("matchExpressions", 1, "values"),
        ("matchFields", 0, "operator"),
    ]
    assert term_problems(term(expr("ok", "Exists"))) == []
    assert term_problems({}) == []  # empty is not a parse error; it just matches nothing


# --- node selectors: terms ORed, invalid terms skipped (LazyErrorNodeSelector)

HOST_1 = {"label_1": "label_1_val"}
INVALID_THEN_VALID = required(
    term(fields=[expr(NAME, "In", "host_1", "host_2")]),
    term(expr("label_1", "In", "label_1_val"), fields=[expr(NAME, "In", "host_1")]),
    term(expr("invalid key", "In", "label_value")),
)

SELECTOR_ROWS = [
    (
        "terms ORed, first matches",
        required(term(expr("foo", "In", "bar", "value2")), term(expr("diffkey", "In", "wrong"))),
        "n",
        {"foo": "bar"},
        True,
    ),
    (
        "second term matches (upstream)",
        required(
            term(expr("label_1", "In", "label_1_val")), term(fields=[expr(NAME, "In", "host_1")])
        ),
        "host_1",
        {},
        True,
    ),
    (
        "two terms both fail (upstream)",
        required(
            term(fields=[expr(NAME, "In", "node_1")]), term(expr("foo", "In", "not-match-to-bar"))
        ),
        "node_2",
        {"foo": "bar"},
        False,
    ),
    ("invalid terms skipped, valid one still counts", INVALID_THEN_VALID, "host_1", HOST_1, True),
    ("invalid terms skipped, valid one fails", INVALID_THEN_VALID, "host_2", HOST_1, False),
    ("only an invalid term", required(term(expr("k", "Gt", "abc"))), "n", {"k": "5"}, False),
    (
        "non-integer Gt term skipped, other term counts",
        required(term(expr("k", "Gt", "abc")), term(expr("k", "Exists"))),
        "n",
        {"k": "5"},
        True,
    ),
    (
        "empty term skipped, other term counts",
        required({}, term(expr("k", "Exists"))),
        "n",
        {"k": "5"},
        True,
    ),
    ("only an empty term", required({}), "n", {"k": "5"}, False),
    (
        "malformed terms skipped",
        required(None, "x", [1], term(expr("k", "Exists"))),
        "n",
        {"k": ""},
        True,
    ),
    ("empty terms list", required(), "n", {"k": ""}, False),
    ("null terms list", {"nodeSelectorTerms": None}, "n", {}, False),
    ("no terms key", {}, "n", {}, False),
    ("terms is an object", {"nodeSelectorTerms": {"matchExpressions": []}}, "n", {}, False),
    ("selector is null", None, "n", {}, False),
    ("selector is a list", [term(expr("k", "DoesNotExist"))], "n", {}, False),
]


@pytest.mark.parametrize(
    ("selector", "node_name", "labels", "expected"),
    [row[1:] for row in SELECTOR_ROWS],
    ids=[row[0] for row in SELECTOR_ROWS],
)
def test_node_selector_matches(
    selector: object, node_name: object, labels: object, expected: bool
) -> None:
    assert node_selector_matches(selector, node_name, labels) is expected


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        (None, {}, True),
        ({}, {"a": "b"}, True),
        ({"foo": "bar"}, {"foo": "bar"}, True),
        ({"foo": "bar"}, {}, False),  # missing labels (upstream)
        ({"foo": "bar"}, {"foo": "bar", "baz": "blah"}, True),  # superset
        ({"foo": "bar", "baz": "blah"}, {"foo": "bar"}, False),  # subset
        ({"foo": ""}, {"foo": ""}, True),
        ({"foo": ""}, {}, False),  # "" still needs the key
        # docs/operator.md "Operands": a deploy label other than exactly "true" does not match
        ({"nvidia.com/gpu.deploy.driver": "true"}, {"nvidia.com/gpu.deploy.driver": "True"}, False),
        (
            {"nvidia.com/gpu.deploy.driver": "true"},
            {"nvidia.com/gpu.deploy.driver": "false"},
            False,
        ),
        ({"nvidia.com/gpu.present": True}, {"nvidia.com/gpu.present": "true"}, False),  # YAML bool
        ({"k": 550}, {"k": "550"}, False),
        (["foo"], {"foo": "bar"}, False),
        ("foo=bar", {"foo": "bar"}, False),
        ({"foo": "bar"}, None, False),
    ],
)
def test_node_selector_map_matches(selector: object, labels: object, expected: bool) -> None:
    assert node_selector_map_matches(selector, labels) is expected


# --- whole pod: nodeSelector AND required affinity (upstream TestPodMatchesNodeSelector...)

IN_FOO = [term(expr("foo", "In", "bar", "value2"))]
POD_ROWS = [
    ("no selector", {}, "", {}, True),
    ("missing labels", pod({"foo": "bar"}), "", {}, False),
    ("same labels", pod({"foo": "bar"}), "", {"foo": "bar"}, True),
    ("node labels are superset", pod({"foo": "bar"}), "", {"foo": "bar", "baz": "blah"}, True),
    ("node labels are subset", pod({"foo": "bar", "baz": "blah"}), "", {"foo": "bar"}, False),
    ("In matches", pod(terms=IN_FOO), "", {"foo": "bar"}, True),
    (
        "Gt matches with leading zeros",
        pod(terms=[term(expr("kernel-version", "Gt", "0204"))]),
        "",
        {"kernel-version": "0206"},
        True,
    ),
    (
        "NotIn matches",
        pod(terms=[term(expr("mem-type", "NotIn", "DDR", "DDR2"))]),
        "",
        {"mem-type": "DDR3"},
        True,
    ),
    ("Exists matches", pod(terms=[term(expr("GPU", "Exists"))]), "", GPU, True),
    (
        "affinity does not match",
        pod(terms=[term(expr("foo", "In", "value1", "value2"))]),
        "",
        {"foo": "bar"},
        False,
    ),
    ("nil terms list", pod(terms=None), "", {"foo": "bar"}, False),
    ("empty terms list", pod(terms=[]), "", {"foo": "bar"}, False),
    (
        "term with empty matchExpressions",
        pod(terms=[{"matchExpressions": []}]),
        "",
        {"foo": "bar"},
        False,
    ),
    (
        "affinity without required part",
        {"affinity": {"nodeAffinity": {}}},
        "",
        {"foo": "bar"},
        True,
    ),
    ("required part is null", pod(raw_required=None), "", {}, True),
    (
        "expressions ANDed, match",
        pod(terms=[term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))]),
        "",
        GPU,
        True,
    ),
    (
        "expressions ANDed, no match",
        pod(terms=[term(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER"))]),
        "",
        GPU,
        False,
    ),
    (
        "terms ORed",
        pod(terms=[*IN_FOO, term(expr("diffkey", "In", "wrong", "value2"))]),
        "",
        {"foo": "bar"},
        True,
    ),
    (
        "nodeSelector and affinity both hold",
        pod({"foo": "bar"}, [term(expr("foo", "Exists"))]),
        "",
        {"foo": "bar"},
        True,
    ),
    (
        "affinity holds, nodeSelector does not",
        pod({"foo": "bar"}, [term(expr("foo", "Exists"))]),
        "",
        {"foo": "barrrrrr"},
        False,
    ),
    (
        "nodeSelector holds, affinity does not",
        pod({"foo": "bar"}, [term(expr("foo", "DoesNotExist"))]),
        "",
        {"foo": "bar"},
        False,
    ),
    (
        "invalid value in term",
        pod(terms=[term(expr("foo", "NotIn", "invalid value: ___@#$%^"))]),
        "",
        {"foo": "bar"},
        False,
    ),
    (
        "matchFields In matches",
        pod(terms=[term(fields=[expr(NAME, "In", "node_1")])]),
        "node_1",
        {},
        True,
    ),
    (
        "matchFields In does not match",
        pod(terms=[term(fields=[expr(NAME, "In", "node_1")])]),
        "node_2",
        {},
        False,
    ),
    (
        "two terms: fields fail, expressions match",
        pod(terms=[term(fields=[expr(NAME, "In", "node_1")]), term(expr("foo", "In", "bar"))]),
        "node_2",
        {"foo": "bar"},
        True,
    ),
    (
        "one term: fields fail, expressions match",
        pod(terms=[term(expr("foo", "In", "bar"), fields=[expr(NAME, "In", "node_1")])]),
        "node_2",
        {"foo": "bar"},
        False,
    ),
    (
        "one term: both match",
        pod(terms=[term(expr("foo", "In", "bar"), fields=[expr(NAME, "In", "node_1")])]),
        "node_1",
        {"foo": "bar"},
        True,
    ),
    (
        "two terms: both fail",
        pod(
            terms=[
                term(fields=[expr(NAME, "In", "node_1")]),
                term(expr("foo", "In", "not-match-to-bar")),
            ]
        ),
        "node_2",
        {"foo": "bar"},
        False,
    ),
    # docs/operator.md "CUDA table" / lab step 5: CUDA requirement as required affinity
    (
        "lab step 5: 550 node",
        pod(terms=[term(expr(DRIVER, "Gt", "560"))]),
        "gpu-a",
        {DRIVER: "550"},
        False,
    ),
    (
        "lab step 5: 535 node",
        pod(terms=[term(expr(DRIVER, "Gt", "560"))]),
        "gpu-b",
        {DRIVER: "535"},
        False,
    ),
    (
        "lab step 5: node without the label",
        pod(terms=[term(expr(DRIVER, "Gt", "560"))]),
        "cpu",
        {},
        False,
    ),
    # wrong JSON types
    ("spec is null (Go zero value)", None, "n", {}, True),
    ("spec is a list", [], "n", {}, False),
    ("nodeSelector is a list", pod(["foo"]), "n", {"foo": "bar"}, False),
    (
        "nodeSelector value is a YAML bool",
        pod({"nvidia.com/gpu.present": True}),
        "n",
        {"nvidia.com/gpu.present": "true"},
        False,
    ),
    ("affinity is a list", {"affinity": []}, "n", {}, False),
    ("nodeAffinity is a string", {"affinity": {"nodeAffinity": "x"}}, "n", {}, False),
    (
        "required part is a list",
        pod(raw_required=[term(expr("k", "DoesNotExist"))]),
        "n",
        {},
        False,
    ),
    ("required part is empty", pod(raw_required={}), "n", {}, False),
    (
        "values hold an integer",
        pod(terms=[term(expr(DRIVER, "In", 550))]),
        "n",
        {DRIVER: "550"},
        False,
    ),
]


@pytest.mark.parametrize(
    ("spec", "node_name", "labels", "expected"),
    [row[1:] for row in POD_ROWS],
    ids=[row[0] for row in POD_ROWS],
)
def test_pod_matches_node_affinity(
    spec: object, node_name: object, labels: object, expected: bool
) -> None:
    assert pod_matches_node_affinity(spec, node_name, labels) is expected
    # the parsed form gives the same answer and can be reused across nodes
    assert required_node_affinity(spec).matches(node_name, labels) is expected


def test_required_node_affinity_is_reusable_across_nodes() -> None:
    placement = required_node_affinity(pod({"gpu": "true"}, [term(expr(DRIVER, "Gt", "560"))]))
    nodes = {
        "a": {"gpu": "true", DRIVER: "570"},
        "b": {"gpu": "true", DRIVER: "550"},
        "c": {DRIVER: "580"},
    }
    assert [n for n, labels in nodes.items() if placement.matches(n, labels)] == ["a"]


# --- validation

T0 = ("nodeSelectorTerms", 0)
E0 = (*T0, "matchExpressions", 0)
F0 = (*T0, "matchFields", 0)

VALIDATE_ROWS = [
    (
        "valid",
        required(term(expr(DRIVER, "Gt", "560")), term(fields=[expr(NAME, "In", "gpu-1")])),
        [],
    ),
    ("selector is a list", [], [()]),
    ("no terms key", {}, [("nodeSelectorTerms",)]),
    ("empty terms", required(), [("nodeSelectorTerms",)]),
    ("terms is an object", {"nodeSelectorTerms": {}}, [("nodeSelectorTerms",)]),
    ("term is a string", required("x"), [T0]),
    ("empty term", required({}), [T0]),
    (
        "matchExpressions is an object",
        required({"matchExpressions": {}}),
        [(*T0, "matchExpressions")],
    ),
    ("expression is a list", required(term(["k", "In"])), [E0]),
    ("missing operator", required(term({"key": "k"})), [(*E0, "operator")]),
    ("operator is an integer", required(term(expr("k", 1))), [(*E0, "operator")]),
    ("In needs values", required(term(expr("k", "In"))), [(*E0, "values")]),
    ("Exists takes no values", required(term(expr("k", "Exists", "v"))), [(*E0, "values")]),
    ("Gt takes one value", required(term(expr("k", "Gt", "1", "2"))), [(*E0, "values")]),
    ("Gt value must be an integer", required(term(expr("k", "Gt", "abc"))), [(*E0, "values", 0)]),
    ("invalid key", required(term(expr("bad key", "Exists"))), [(*E0, "key")]),
    ("key is an integer", required(term(expr(7, "Exists"))), [(*E0, "key")]),
    ("invalid value", required(term(expr("k", "In", "ok", "bad value"))), [(*E0, "values", 1)]),
    ("value is an integer", required(term(expr(DRIVER, "In", 550))), [(*E0, "values", 0)]),
    (
        "values is a string",
        required(term({"key": "k", "operator": "In", "values": "a"})),
        [(*E0, "values")],
    ),
    (
        "second expression",
        required(term(expr("a", "Exists"), expr("b", "NotIn"))),
        [(*T0, "matchExpressions", 1, "values")],
    ),
    (
        "second term",
        required(term(expr("a", "Exists")), term(expr("b", "Lt", "x"))),
        [("nodeSelectorTerms", 1, "matchExpressions", 0, "values", 0)],
    ),
    (
        "matchFields other key",
        required(term(fields=[expr("metadata.labels", "In", "x")])),
        [(*F0, "key")],
    ),
    ("matchFields Exists", required(term(fields=[expr(NAME, "Exists")])), [(*F0, "operator")]),
    (
        "matchFields two values",
        required(term(fields=[expr(NAME, "In", "a", "b")])),
        [(*F0, "values")],
    ),
    (
        "matchFields invalid node name",
        required(term(fields=[expr(NAME, "NotIn", "node_1")])),
        [(*F0, "values", 0)],
    ),
    ("matchFields is a string", required({"matchFields": "metadata.name"}), [(*T0, "matchFields")]),
]


@pytest.mark.parametrize(
    ("selector", "paths"),
    [row[1:] for row in VALIDATE_ROWS],
    ids=[row[0] for row in VALIDATE_ROWS],
)
def test_validate_node_selector_paths(selector: object, paths: list[tuple[object, ...]]) -> None:
    assert [p.path for p in validate_node_selector(selector)] == paths


def test_validate_node_selector_messages() -> None:
    problems = validate_node_selector(
        required(term(expr("k", "gt", "5"), expr("k", "Gt", "5.0"), expr(DRIVER, "In", 550)))
    )
    messages = [p.message for p in problems]
    assert "did you mean 'Gt'?" in messages[0]
    assert "not an integer" in messages[1]
    assert "scheduler matches no node" in messages[1]
    assert messages[2] == "must be a string, not integer; quote it in YAML"
    assert all(isinstance(p, Problem) for p in problems)


def test_expression_and_field_problems_are_relative() -> None:
    assert [p.path for p in expression_problems(expr("k", "In"))] == [("values",)]
    assert [p.path for p in field_requirement_problems(expr("x", "In", "n"))] == [("key",)]
    assert expression_problems(None) == [
        Problem((), "must be an object with key, operator and values, not null")
    ]


@pytest.mark.parametrize(
    ("selector", "paths"),
    [
        (None, []),
        ({}, []),
        ({"nvidia.com/gpu.present": "true"}, []),
        ({"nvidia.com/gpu.present": True}, [("nvidia.com/gpu.present",)]),
        ({"k": 550}, [("k",)]),
        # JSON null into map[string]string decodes to "" (encoding/json): a valid empty value
        ({"k": None}, []),
        ({"bad key": "v"}, [("bad key",)]),
        ({"k": "bad value"}, [("k",)]),
        ({"bad key": 1}, [("bad key",), ("bad key",)]),
        ({1: "v"}, [("1",)]),
        (["k"], [()]),
        ("k=v", [()]),
    ],
)
def test_validate_node_selector_map(selector: object, paths: list[tuple[object, ...]]) -> None:
    assert [p.path for p in validate_node_selector_map(selector)] == paths


@pytest.mark.parametrize(
    ("terms", "paths"),
    [
        (None, []),
        ([{"weight": 10, "preference": term(expr("k", "Exists"))}], []),
        ([{"weight": 0, "preference": term(expr("k", "Exists"))}], [(0, "weight")]),
        ([{"weight": 101, "preference": term(expr("k", "Exists"))}], [(0, "weight")]),
        ([{"weight": "5", "preference": term(expr("k", "Exists"))}], [(0, "weight")]),
        ([{"weight": True, "preference": term(expr("k", "Exists"))}], [(0, "weight")]),
        ([{"weight": 1}], [(0, "preference")]),  # missing preference is an empty term
        (
            [{"weight": 1, "preference": term(expr("k", "In"))}],
            [(0, "preference", "matchExpressions", 0, "values")],
        ),
        (["x"], [(0,)]),
        ({}, [()]),
    ],
)
def test_validate_preferred_terms(terms: object, paths: list[tuple[object, ...]]) -> None:
    assert [p.path for p in validate_preferred_terms(terms)] == paths


def test_validate_pod_node_placement_prefixes_paths() -> None:
    spec = pod({"gpu": True}, [term(expr(DRIVER, "Gt", "x"))])
    spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [  # type: ignore[index]
        {"weight": 0, "preference": term(expr("k", "Exists"))}
    ]
    assert [p.path for p in validate_pod_node_placement(spec)] == [
        ("nodeSelector", "gpu"),
        (*REQUIRED_AFFINITY_PATH, "nodeSelectorTerms", 0, "matchExpressions", 0, "values", 0),
        (
            "affinity",
            "nodeAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
            0,
            "weight",
        ),
    ]
    assert validate_pod_node_placement(None) == []
    assert validate_pod_node_placement({}) == []
    assert [p.path for p in validate_pod_node_placement({"affinity": 1})] == [("affinity",)]
    assert [p.path for p in validate_pod_node_placement({"affinity": {"nodeAffinity": []}})] == [
        ("affinity", "nodeAffinity")
    ]


# --- explanations


def test_term_explanations_say_which_expression_failed() -> None:
    t = term(expr("nvidia.com/gpu.present", "In", "true"), expr(DRIVER, "Gt", "560"))
    assert term_explanations(t, "gpu-a", {"nvidia.com/gpu.present": "true", DRIVER: "550"}) == [
        Check(("matchExpressions", 0), True, "nvidia.com/gpu.present=true is in ['true']"),
        Check(("matchExpressions", 1), False, f"{DRIVER}=550 is not greater than 560"),
    ]


@pytest.mark.parametrize(
    ("req", "labels", "matched", "detail"),
    [
        (expr("k", "In", "a"), {}, False, "node has no label k"),
        (expr("k", "In", "a"), {"k": "b"}, False, "k=b is not in ['a']"),
        (
            expr("k", "NotIn", "a"),
            {},
            True,
            "node has no label k, and NotIn matches nodes without it",
        ),
        (expr("k", "NotIn", "a"), {"k": "a"}, False, "k=a is one of the excluded values ['a']"),
        (expr("k", "Exists"), {"k": ""}, True, "node has label k="),
        (expr("k", "DoesNotExist"), {"k": "v"}, False, "node has label k=v"),
        (expr("k", "Lt", "5"), {"k": "x"}, False, "k=x is not an integer"),
        (expr("k", "Lt", "5"), {"k": "4"}, True, "k=4 is less than 5"),
        (expr("k", "Gt", "x"), {"k": "4"}, False, None),
    ],
)
def test_term_explanation_details(
    req: object, labels: object, matched: bool, detail: str | None
) -> None:
    (check,) = term_explanations(term(req), "n", labels)
    assert check.matched is matched
    if detail is None:
        assert check.detail.startswith("invalid: ")
    else:
        assert check.detail == detail


def test_term_explanations_for_fields_and_odd_terms() -> None:
    t = term(fields=[expr(NAME, "In", "gpu-1")])
    assert term_explanations(t, "gpu-2", {}) == [
        Check(("matchFields", 0), False, "node name is 'gpu-2', not 'gpu-1'")
    ]
    assert term_explanations(t, "", {})[0].matched is True
    assert term_explanations({}, "n", {}) == [
        Check((), False, "term has neither matchExpressions nor matchFields")
    ]
    (bad,) = term_explanations({"matchExpressions": 3}, "n", {})
    assert bad.path == ("matchExpressions",) and bad.detail.startswith("invalid: ")


def test_node_selector_map_explanations() -> None:
    got = node_selector_map_explanations(
        {"a": "1", "b": "2", "c": "3", "d": True}, {"a": "1", "b": "9"}
    )
    assert got == [
        Check(("a",), True, "node has a=1"),
        Check(("b",), False, "node has b=9, not 2"),
        Check(("c",), False, "node has no label c"),
        Check(("d",), False, "invalid: value must be a string, not boolean"),
    ]


def test_pod_placement_explanations_paths() -> None:
    spec = pod({"gpu": "true"}, [term(expr(DRIVER, "Gt", "560")), term(expr("zone", "In", "a"))])
    checks = pod_placement_explanations(spec, "n", {"gpu": "true", DRIVER: "550"})
    terms = (*REQUIRED_AFFINITY_PATH, "nodeSelectorTerms")
    assert [(c.path, c.matched) for c in checks] == [
        (("nodeSelector", "gpu"), True),
        ((*terms, 0, "matchExpressions", 0), False),
        ((*terms, 1, "matchExpressions", 0), False),
    ]
    assert pod_placement_explanations(pod(terms=[]), "n", {}) == [
        Check(terms, False, "no node selector terms, so no node matches")
    ]
    assert pod_placement_explanations(None, "n", {}) == []
    assert pod_placement_explanations({}, "n", {}) == []
    assert pod_placement_explanations([], "n", {})[0].detail.startswith("invalid: ")


# --- nothing raises on any JSON-like input

JUNK: list[object] = [
    None,
    True,
    0,
    -1,
    1.5,
    "",
    "x",
    [],
    [None],
    [{}],
    {},
    {"a": 1},
    {1: None},
    {"nodeSelectorTerms": [None, {}, {"matchExpressions": [None, {"key": 1, "values": {}}]}]},
    {"key": [], "operator": {}, "values": [None, 1, []]},
    {"key": "k", "operator": "Gt", "values": ["1"]},
    {"matchFields": [{"key": NAME, "operator": "In", "values": [None]}]},
    {
        "nodeSelector": {"a": []},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}},
    },
    {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": "x"},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": None, "preference": []}
                ],
            }
        }
    },
]

PUBLIC = [
    (na.parse_int64, 1),
    (na.expression_problems, 1),
    (na.field_requirement_problems, 1),
    (na.term_problems, 1),
    (na.is_empty_term, 1),
    (na.validate_node_selector, 1),
    (na.validate_node_selector_map, 1),
    (na.validate_preferred_terms, 1),
    (na.validate_pod_node_placement, 1),
    (na.required_node_affinity, 1),
    (na.requirement_matches, 2),
    (na.field_requirement_matches, 2),
    (na.node_selector_map_matches, 2),
    (na.node_selector_map_explanations, 2),
    (na.term_matches, 3),
    (na.node_selector_matches, 3),
    (na.pod_matches_node_affinity, 3),
    (na.term_explanations, 3),
    (na.pod_placement_explanations, 3),
]


@pytest.mark.parametrize(("function", "arity"), PUBLIC, ids=[f.__name__ for f, _ in PUBLIC])
def test_public_functions_never_raise(function, arity: int) -> None:  # type: ignore[no-untyped-def]
    for args in itertools.product(JUNK, repeat=arity):
        function(*args)
    for spec in JUNK:
        required_node_affinity(spec).matches("n", {"k": "v"})
