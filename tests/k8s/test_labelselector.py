"""metav1.LabelSelector semantics: one row per rule (docs/kubernetes.md §8; apimachinery
selector tests)."""

from __future__ import annotations

import pytest

from gpudrv_check.k8s.labelselector import (
    EVERYTHING,
    INVALID,
    NOTHING,
    Problem,
    selector_key,
    selector_matches,
    validate_label_selector,
)

TRAINER = {"app": "trainer", "tier": "gpu"}


def expr(key: object, operator: object, values: object = None) -> dict[str, object]:
    """One matchExpressions entry; values omitted when None."""
    out: dict[str, object] = {"key": key, "operator": operator}
    if values is not None:
        out["values"] = values
    return out


def exprs(*items: object) -> dict[str, object]:
    """A selector made of matchExpressions only."""
    return {"matchExpressions": list(items)}


MATCH_ROWS = [
    # nil vs empty: the PDB policy/v1 and pod-affinity rule
    ("absent selector matches nothing", None, TRAINER, False),
    ("empty selector matches everything", {}, TRAINER, True),
    ("empty selector matches a pod without labels", {}, {}, True),
    (
        "empty matchLabels and matchExpressions match everything",
        {"matchLabels": {}, "matchExpressions": []},
        TRAINER,
        True,
    ),
    (
        "null matchLabels and matchExpressions match everything",
        {"matchLabels": None, "matchExpressions": None},
        TRAINER,
        True,
    ),
    # matchLabels
    ("matchLabels equal", {"matchLabels": {"app": "trainer"}}, TRAINER, True),
    ("matchLabels other value", {"matchLabels": {"app": "other"}}, TRAINER, False),
    ("matchLabels key missing", {"matchLabels": {"team": "ml"}}, TRAINER, False),
    (
        "matchLabels entries are ANDed",
        {"matchLabels": {"app": "trainer", "team": "ml"}},
        TRAINER,
        False,
    ),
    ("matchLabels value is case sensitive", {"matchLabels": {"app": "Trainer"}}, TRAINER, False),
    (
        "matchLabels null value means empty string",
        {"matchLabels": {"app": None}},
        {"app": ""},
        True,
    ),
    (
        "matchLabels null value does not match a set value",
        {"matchLabels": {"app": None}},
        TRAINER,
        False,
    ),
    (
        "prefixed key",
        {"matchLabels": {"nvidia.com/gpu.present": "true"}},
        {"nvidia.com/gpu.present": "true"},
        True,
    ),
    # In
    ("In listed value", exprs(expr("app", "In", ["x", "trainer"])), TRAINER, True),
    ("In unlisted value", exprs(expr("app", "In", ["x", "y"])), TRAINER, False),
    ("In key missing", exprs(expr("team", "In", ["ml"])), TRAINER, False),
    ("In empty string value", exprs(expr("app", "In", [""])), {"app": ""}, True),
    # NotIn
    ("NotIn key missing matches", exprs(expr("team", "NotIn", ["ml"])), TRAINER, True),
    ("NotIn listed value", exprs(expr("app", "NotIn", ["trainer"])), TRAINER, False),
    ("NotIn unlisted value", exprs(expr("app", "NotIn", ["web"])), TRAINER, True),
    # Exists / DoesNotExist
    ("Exists present", exprs(expr("app", "Exists")), TRAINER, True),
    ("Exists present with empty value", exprs(expr("app", "Exists")), {"app": ""}, True),
    ("Exists missing", exprs(expr("team", "Exists")), TRAINER, False),
    ("Exists with empty values list", exprs(expr("app", "Exists", [])), TRAINER, True),
    ("DoesNotExist missing", exprs(expr("team", "DoesNotExist")), TRAINER, True),
    ("DoesNotExist present", exprs(expr("app", "DoesNotExist")), TRAINER, False),
    # matchLabels AND matchExpressions
    (
        "matchLabels and expressions both hold",
        {"matchLabels": {"app": "trainer"}, "matchExpressions": [expr("tier", "In", ["gpu"])]},
        TRAINER,
        True,
    ),
    (
        "matchLabels holds, expression fails",
        {"matchLabels": {"app": "trainer"}, "matchExpressions": [expr("tier", "NotIn", ["gpu"])]},
        TRAINER,
        False,
    ),
    (
        "contradictory requirements match nothing",
        exprs(expr("app", "In", ["trainer"]), expr("app", "NotIn", ["trainer"])),
        TRAINER,
        False,
    ),
    # invalid selectors select nothing (eviction skips the PDB; the scheduler fails the term)
    ("In without values is invalid", exprs(expr("app", "In", [])), TRAINER, False),
    (
        "NotIn without values is invalid, not match-all",
        exprs(expr("team", "NotIn")),
        TRAINER,
        False,
    ),
    ("Exists with values is invalid", exprs(expr("app", "Exists", ["trainer"])), TRAINER, False),
    (
        "Gt is a node-affinity operator, not a label-selector one",
        exprs(expr("tier", "Gt", ["1"])),
        {"tier": "2"},
        False,
    ),
    ("operators are case sensitive", exprs(expr("app", "in", ["trainer"])), TRAINER, False),
    (
        "illegal operator (upstream TestInvalidSelectors)",
        exprs(expr("app", "illegal", ["x"])),
        TRAINER,
        False,
    ),
    (
        "key with two slashes (upstream TestInvalidSelectors)",
        {"matchLabels": {"k8s.io/too/many/slashes": "value"}},
        {"k8s.io/too/many/slashes": "value"},
        False,
    ),
    (
        "invalid matchLabels value",
        {"matchLabels": {"app": "bad value"}},
        {"app": "bad value"},
        False,
    ),
    ("invalid value in an expression", exprs(expr("app", "In", ["trainer", "-x"])), TRAINER, False),
    (
        "one invalid expression invalidates the whole selector",
        {"matchLabels": {"app": "trainer"}, "matchExpressions": [expr("x", "In")]},
        TRAINER,
        False,
    ),
    # lenient decoding drops unknown fields: a typo leaves `{}`, which matches everything
    (
        "misspelt matchlabels decodes to an empty selector",
        {"matchlabels": {"app": "web"}},
        TRAINER,
        True,
    ),
    # wrong types
    ("selector string", "app=trainer", TRAINER, False),
    ("selector list", [{"matchLabels": {"app": "trainer"}}], TRAINER, False),
    ("matchLabels number value", {"matchLabels": {"replicas": 1}}, {"replicas": "1"}, False),
    ("labels of a wrong type count as none (Exists)", exprs(expr("app", "Exists")), ["app"], False),
    ("labels of a wrong type count as none (empty selector)", {}, "app=trainer", True),
    ("non-string label values are ignored", exprs(expr("gpu", "Exists")), {"gpu": 1}, False),
]


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [row[1:] for row in MATCH_ROWS],
    ids=[row[0] for row in MATCH_ROWS],
)
def test_selector_matches(selector: object, labels: object, expected: bool) -> None:
    assert selector_matches(selector, labels) is expected


TOO_LONG = "a" * 64

VALIDATE_ROWS = [
    ("absent selector is valid", None, []),
    ("empty selector is valid", {}, []),
    (
        "full valid selector",
        {
            "matchLabels": {"app": "trainer", "nvidia.com/gpu.present": ""},
            "matchExpressions": [expr("tier", "In", ["gpu", "a.b_c-d"]), expr("x", "Exists")],
        },
        [],
    ),
    ("null matchLabels value is valid (decodes to '')", {"matchLabels": {"app": None}}, []),
    (
        "In without values",
        exprs(expr("app", "In")),
        [(("matchExpressions", 0, "values"), "must be specified")],
    ),
    (
        "NotIn with empty values",
        exprs(expr("app", "NotIn", [])),
        [(("matchExpressions", 0, "values"), "must be specified")],
    ),
    (
        "Exists with values",
        exprs(expr("app", "Exists", ["x"])),
        [(("matchExpressions", 0, "values"), "may not be specified")],
    ),
    (
        "DoesNotExist with values",
        exprs(expr("a", "DoesNotExist"), expr("b", "DoesNotExist", ["x"])),
        [(("matchExpressions", 1, "values"), "may not be specified")],
    ),
    (
        "unknown operator",
        exprs(expr("app", "Equals", ["x"])),
        [(("matchExpressions", 0, "operator"), "not a valid selector operator")],
    ),
    (
        "missing operator",
        exprs({"key": "app", "values": ["x"]}),
        [(("matchExpressions", 0, "operator"), "not a valid selector operator")],
    ),
    (
        "key with two slashes",
        {"matchLabels": {"k8s.io/too/many/slashes": "v"}},
        [(("matchLabels", "k8s.io/too/many/slashes"), "optional DNS subdomain prefix")],
    ),
    (
        "key name longer than 63",
        {"matchLabels": {TOO_LONG: "v"}},
        [(("matchLabels", TOO_LONG), "no more than 63")],
    ),
    (
        "key prefix must be lowercase DNS",
        {"matchLabels": {"Example.com/app": "v"}},
        [(("matchLabels", "Example.com/app"), "RFC 1123")],
    ),
    ("empty prefix", {"matchLabels": {"/app": "v"}}, [(("matchLabels", "/app"), "prefix part")]),
    (
        "empty expression key",
        exprs(expr("", "Exists")),
        [(("matchExpressions", 0, "key"), "must be non-empty")],
    ),
    (
        "key ending in a dash",
        exprs(expr("app-", "Exists")),
        [(("matchExpressions", 0, "key"), "alphanumeric")],
    ),
    (
        "label value starting with a dash",
        {"matchLabels": {"app": "-web"}},
        [(("matchLabels", "app"), "alphanumeric")],
    ),
    (
        "label value longer than 63",
        {"matchLabels": {"app": TOO_LONG}},
        [(("matchLabels", "app"), "no more than 63")],
    ),
    (
        "invalid value inside values",
        exprs(expr("app", "In", ["ok", "not ok"])),
        [(("matchExpressions", 0, "values", 1), "alphanumeric")],
    ),
    ("selector is a string", "app=web", [((), "must be an object")]),
    ("matchLabels is a list", {"matchLabels": ["app=web"]}, [(("matchLabels",), "object")]),
    (
        "matchExpressions is an object",
        {"matchExpressions": {"key": "a"}},
        [(("matchExpressions",), "array")],
    ),
    ("expression is a string", exprs("app In (web)"), [(("matchExpressions", 0), "object")]),
    (
        "values is a string",
        exprs(expr("app", "In", "web")),
        [(("matchExpressions", 0, "values"), "array")],
    ),
    (
        "matchLabels number value",
        {"matchLabels": {"replicas": 2}},
        [(("matchLabels", "replicas"), "must be a string")],
    ),
    (
        "non-string value in values",
        exprs(expr("app", "In", ["web", 3])),
        [(("matchExpressions", 0, "values", 1), "must be a string")],
    ),
    (
        "misspelt matchlabels",
        {"matchlabels": {"app": "web"}},
        [(("matchlabels",), "unknown field")],
    ),
    (
        "misspelt values: required and unknown",
        exprs({"key": "app", "operator": "In", "value": ["web"]}),
        [
            (("matchExpressions", 0, "values"), "must be specified"),
            (("matchExpressions", 0, "value"), "unknown field"),
        ],
    ),
]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [row[1:] for row in VALIDATE_ROWS],
    ids=[row[0] for row in VALIDATE_ROWS],
)
def test_validate_label_selector(
    selector: object, expected: list[tuple[tuple[str | int, ...], str]]
) -> None:
    problems = validate_label_selector(selector)
    assert all(isinstance(p, Problem) for p in problems)
    assert [p.path for p in problems] == [path for path, _ in expected]
    for problem, (_, fragment) in zip(problems, expected, strict=True):
        assert fragment in problem.message


SAME_KEY_ROWS = [
    (
        "matchLabels equals In with one value",
        {"matchLabels": {"app": "web"}},
        exprs(expr("app", "In", ["web"])),
    ),
    (
        "value order and duplicates do not matter",
        exprs(expr("app", "In", ["b", "a", "b"])),
        exprs(expr("app", "In", ["a", "b"])),
    ),
    (
        "expression order does not matter",
        exprs(expr("a", "Exists"), expr("b", "DoesNotExist")),
        exprs(expr("b", "DoesNotExist"), expr("a", "Exists")),
    ),
    (
        "repeated requirement is idempotent",
        {"matchLabels": {"app": "web"}, "matchExpressions": [expr("app", "In", ["web"])]},
        {"matchLabels": {"app": "web"}},
    ),
    ("empty forms are all match-all", {}, {"matchLabels": {}, "matchExpressions": []}),
    (
        "Exists with [] equals Exists without values",
        exprs(expr("a", "Exists", [])),
        exprs(expr("a", "Exists")),
    ),
]


@pytest.mark.parametrize(
    ("left", "right"), [row[1:] for row in SAME_KEY_ROWS], ids=[row[0] for row in SAME_KEY_ROWS]
)
def test_selector_key_equal(left: object, right: object) -> None:
    assert selector_key(left) == selector_key(right)
    assert hash(selector_key(left)) == hash(selector_key(right))


DIFFERENT_KEY_ROWS = [
    ("In vs NotIn", exprs(expr("a", "In", ["x"])), exprs(expr("a", "NotIn", ["x"]))),
    ("absent vs empty", None, {}),
    ("absent vs invalid", None, exprs(expr("a", "In"))),
    ("different values", {"matchLabels": {"a": "x"}}, {"matchLabels": {"a": "y"}}),
]


@pytest.mark.parametrize(
    ("left", "right"),
    [row[1:] for row in DIFFERENT_KEY_ROWS],
    ids=[row[0] for row in DIFFERENT_KEY_ROWS],
)
def test_selector_key_different(left: object, right: object) -> None:
    assert selector_key(left) != selector_key(right)


@pytest.mark.parametrize(
    ("selector", "kind"),
    [(None, NOTHING), ({}, EVERYTHING), (exprs(expr("a", "Bogus")), INVALID), ("x", INVALID)],
    ids=["absent", "empty", "bad operator", "wrong type"],
)
def test_selector_key_special_kinds(selector: object, kind: object) -> None:
    assert selector_key(selector) == kind


def test_selector_key_is_usable_as_cache_key() -> None:
    cache = {selector_key({"matchLabels": {"app": "web"}}): "seen"}
    assert cache[selector_key(exprs(expr("app", "In", ["web"])))] == "seen"


WRONG_TYPES: list[object] = [
    None,
    0,
    1.5,
    True,
    "x",
    [],
    [1],
    {"matchLabels": [1]},
    {"matchLabels": {1: 2}},
    {"matchLabels": {"a": ["b"]}},
    {"matchLabels": {"a": {"b": "c"}}},
    {"matchExpressions": [None, 1, "x", {"key": 1, "operator": 2, "values": 3}]},
    {"matchExpressions": [{"key": ["a"], "operator": None, "values": [None, {}, 1.5]}]},
    {"matchExpressions": [{"key": "a", "operator": "In", "values": [[]]}]},
    {"matchExpressions": [{}]},
    {"matchExpressions": "a"},
    {1: 2, None: 3},
    {"matchLabels": {"a": True}},
    {"matchExpressions": [{"key": "a", "operator": ["In"]}]},
]


@pytest.mark.parametrize("selector", WRONG_TYPES, ids=[repr(s)[:40] for s in WRONG_TYPES])
@pytest.mark.parametrize("labels", [None, {"a": "b"}, ["a"], {"a": 1, 2: "b"}, "a=b"])
def test_wrong_types_never_raise(selector: object, labels: object) -> None:
    assert isinstance(selector_matches(selector, labels), bool)
    assert isinstance(validate_label_selector(selector), list)
    hash(selector_key(selector))
