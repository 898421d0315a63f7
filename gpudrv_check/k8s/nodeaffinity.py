"""Node placement: ``spec.nodeSelector`` and required node affinity, as the scheduler sees them.

Reproduces ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity`` (``GetRequiredNodeAffinity``,
``LazyErrorNodeSelector``), the requirement semantics of ``k8s.io/apimachinery/pkg/labels``
(``NewRequirement``, ``Requirement.Matches``) and the API-server checks of
``pkg/apis/core/validation`` (``ValidateNodeSelector``, ``ValidateNodeSelectorRequirement``,
``ValidateNodeFieldSelectorRequirement``, ``ValidatePreferredSchedulingTerms``).

Rules reproduced:

- ``nodeSelector`` (every key present with an equal value) AND required node affinity.
- ``nodeSelectorTerms`` are ORed; inside a term all ``matchExpressions`` and ``matchFields`` are
  ANDed. A nil or empty terms list, or a term with neither expressions nor fields, matches nothing.
- ``In`` needs the key with a listed value; ``NotIn`` and ``DoesNotExist`` match nodes lacking the
  key; ``Gt``/``Lt`` compare strictly as int64 (Go ``strconv.ParseInt`` base 10: leading zeros
  and a sign are fine) and fail on a node whose value is missing or not an integer.
- A term the scheduler cannot parse (bad operator, wrong value count, non-integer ``Gt`` value,
  invalid label key or value) matches nothing, and the other terms are still evaluated: the
  scheduler ignores these parse errors "for backwards compatibility".
- ``matchFields`` compares ``metadata.name`` with ``In``/``NotIn`` and exactly one value; on a
  node with an empty name the scheduler skips ``matchFields`` (upstream ``len(nodeFields) > 0``).

Matching follows the scheduler; the ``validate_*`` functions report what the API server rejects
plus what it accepts but the scheduler can never match. Inputs are JSON-like data that may have
the wrong types: nothing here raises; a malformed piece is reported by ``validate_*`` and matches
nothing. Node labels that are not ``str -> str`` are ignored, as no real Node can carry them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from gpudrv_check.core.finding import quoted
from gpudrv_check.core.label_reads import NodeLabels
from gpudrv_check.core.records import record
from gpudrv_check.k8s.labels import (
    MAPPINGS,
    Path,
    Problem,
    dns1123_subdomain_errors,
    json_type_name,
    label_key_errors,
    label_value_errors,
)
from gpudrv_check.k8s.numbers import parse_int64

__all__ = [
    "OPERATORS",
    "FIELD_OPERATORS",
    "NODE_NAME_FIELD",
    "REQUIRED_AFFINITY_PATH",
    "Check",
    "RequiredNodeAffinity",
    "parse_int64",
    "expression_problems",
    "field_requirement_problems",
    "term_problems",
    "is_empty_term",
    "validate_node_selector",
    "validate_node_selector_map",
    "validate_preferred_terms",
    "validate_pod_node_placement",
    "requirement_matches",
    "field_requirement_matches",
    "term_matches",
    "node_selector_matches",
    "node_selector_map_matches",
    "required_node_affinity",
    "pod_matches_node_affinity",
    "prefilter_node_names",
    "term_explanations",
    "node_selector_map_explanations",
    "pod_placement_explanations",
]

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_OPERATORS = ("In", "NotIn")
NODE_NAME_FIELD = "metadata.name"
REQUIRED_AFFINITY_PATH: Path = (
    "affinity",
    "nodeAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
)

_OPERATOR_LIST = ", ".join(OPERATORS)


class Check(NamedTuple):
    """How one requirement fared against one node, for "explain" output.

    ``path`` is relative to the object passed in (term or pod spec); ``detail`` is a short
    human sentence; an expression the scheduler cannot parse has ``matched=False`` and a
    ``detail`` starting with ``"invalid: "``.
    """

    path: Path
    matched: bool
    detail: str


# --- reading JSON-like input without trusting its shape ----------------------------------------


def _text_field(obj: Mapping[str, object], name: str) -> str | None:
    """A string field, "" when absent or null (Go's zero value), None when of another type."""
    value = obj.get(name)
    if value is None:
        return ""
    return value if isinstance(value, str) else None


def _wrong_type(path: Path, expected: str, value: object) -> Problem:
    return Problem(path, f"must be {expected}, not {json_type_name(value)}")


def _read_values(req: Mapping[str, object]) -> tuple[list[object] | None, list[Problem]]:
    """The ``values`` list (``[]`` when absent) and its type problems; None if not a list."""
    raw = req.get("values")
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return None, [_wrong_type(("values",), "a list of strings", raw)]
    problems = [
        Problem(("values", j), f"must be a string, not {json_type_name(v)}; quote it in YAML")
        for j, v in enumerate(raw)
        if not isinstance(v, str)
    ]
    return raw, problems


def _read_list(obj: Mapping[str, object], name: str) -> tuple[list[object], list[Problem]]:
    """A list field (``[]`` when absent or null) and a problem when it is of another type."""
    raw = obj.get(name)
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], [_wrong_type((name,), "a list", raw)]
    return raw, []


def _label_map(labels: object) -> dict[str, str]:
    """Node labels as ``str -> str``; anything else is dropped since no real Node carries it."""
    if labels.__class__ is NodeLabels:
        # a node's labels, every value a string (model/inventory.py): as they are, so that
        # what a term reads of them is recorded by key (core/label_reads.py); every read here
        # is by a string key, which a key written as a number never equals, dropped or not
        return labels
    if not isinstance(labels, MAPPINGS):
        return {}
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}


def _prefixed(prefix: Path, problems: list[Problem]) -> list[Problem]:
    return [p._replace(path=prefix + p.path) for p in problems]


def _operator_problem(operator: object, allowed: tuple[str, ...], what: str) -> Problem | None:
    if operator is None or operator == "":
        return Problem(("operator",), f"required: must be one of {', '.join(allowed)}")
    if not isinstance(operator, str):
        return _wrong_type(("operator",), "a string", operator)
    if operator in allowed:
        return None
    hint = next(
        (f"; did you mean {quoted(op)}?" for op in allowed if op.lower() == operator.lower()), ""
    )
    return Problem(
        ("operator",),
        f"unsupported {what} {quoted(operator)}: must be one of {', '.join(allowed)}{hint}",
    )


# --- matchExpressions ---------------------------------------------------------------------------


@record(frozen=True, slots=True)
class _Expression:
    """A matchExpressions entry the scheduler accepted."""

    key: str
    operator: str
    values: tuple[str, ...]
    bound: int | None  # the parsed Gt/Lt value

    def evaluate(self, labels: Mapping[str, str]) -> tuple[bool, str]:
        key, op = self.key, self.operator
        present = key in labels
        value = labels.get(key, "")
        shown = f"{key}={value}"
        listed = "[" + ", ".join(repr(v) for v in self.values) + "]"
        if op == "In":
            if not present:
                return False, f"node has no label {key}"
            if value in self.values:
                return True, f"{shown} is in {listed}"
            return False, f"{shown} is not in {listed}"
        if op == "NotIn":
            if not present:
                return True, f"node has no label {key}, and NotIn matches nodes without it"
            if value in self.values:
                return False, f"{shown} is one of the excluded values {listed}"
            return True, f"{shown} is not in {listed}"
        if op in ("Exists", "DoesNotExist"):
            detail = f"node has label {shown}" if present else f"node has no label {key}"
            return present == (op == "Exists"), detail
        # Gt / Lt: the node's value must itself parse as int64.
        if not present:
            return False, f"node has no label {key}"
        number = parse_int64(value)
        if number is None or self.bound is None:
            return False, f"{shown} is not an integer"
        if op == "Gt":
            verdict = number > self.bound
            return verdict, f"{shown} is {'' if verdict else 'not '}greater than {self.bound}"
        verdict = number < self.bound
        return verdict, f"{shown} is {'' if verdict else 'not '}less than {self.bound}"


def expression_problems(req: object) -> list[Problem]:
    """Why a ``matchExpressions`` entry is invalid; ``[]`` when the scheduler accepts it.

    Covers the API-server checks (operator, value count, label key, label values) and the
    scheduler-only one (a ``Gt``/``Lt`` value that is not an int64, which the API server lets
    through but which makes the whole term match no node). Paths are relative to ``req``.
    """
    if not isinstance(req, MAPPINGS):
        return [_wrong_type((), "an object with key, operator and values", req)]
    problems: list[Problem] = []
    values, value_problems = _read_values(req)
    problems.extend(value_problems)
    operator = req.get("operator")
    op_problem = _operator_problem(operator, OPERATORS, "operator")
    if op_problem is not None:
        problems.append(op_problem)
    elif values is not None:
        if operator in ("In", "NotIn") and not values:
            problems.append(
                Problem(("values",), "must have at least one value when operator is In or NotIn")
            )
        elif operator in ("Exists", "DoesNotExist") and values:
            problems.append(
                Problem(("values",), "must be empty when operator is Exists or DoesNotExist")
            )
        elif operator in ("Gt", "Lt"):
            if len(values) != 1:
                problems.append(
                    Problem(("values",), "must have exactly one value when operator is Gt or Lt")
                )
            for j, v in enumerate(values):
                if isinstance(v, str) and parse_int64(v) is None:
                    problems.append(
                        Problem(
                            ("values", j),
                            f"{quoted(v)} is not an integer: Gt and Lt compare 64-bit integers; "
                            "the API server accepts it but the scheduler matches no node with it",
                            scheduler_only=True,
                        )
                    )
    key = _text_field(req, "key")
    if key is None:
        problems.append(_wrong_type(("key",), "a string", req.get("key")))
    else:
        key_errors = label_key_errors(key)
        if key_errors:
            problems.append(
                Problem(("key",), f"invalid label key {quoted(key)}: {'; '.join(key_errors)}")
            )
    for j, v in enumerate(values or []):
        if isinstance(v, str):
            errors = label_value_errors(v)
            if errors:
                problems.append(
                    Problem(("values", j), f"invalid label value {quoted(v)}: {'; '.join(errors)}")
                )
    return problems


def _compile_expression(req: object) -> _Expression | None:
    """The scheduler's parse of one expression; None when it would be a parse error."""
    if not isinstance(req, MAPPINGS) or expression_problems(req):
        return None
    values = tuple(str(v) for v in req.get("values") or ())
    operator = str(req["operator"])
    bound = parse_int64(values[0]) if operator in ("Gt", "Lt") else None
    return _Expression(str(req.get("key") or ""), operator, values, bound)


def requirement_matches(req: object, labels: object) -> bool:
    """True when one ``matchExpressions`` entry matches a node's labels.

    An entry the scheduler cannot parse matches nothing.
    """
    compiled = _compile_expression(req)
    return compiled is not None and compiled.evaluate(_label_map(labels))[0]


# --- matchFields --------------------------------------------------------------------------------


@record(frozen=True, slots=True)
class _Field:
    """A matchFields entry the scheduler accepted."""

    key: str
    operator: str
    value: str

    def evaluate(self, node_name: str) -> tuple[bool, str]:
        # The scheduler's field set only has metadata.name; any other key reads as "".
        actual = node_name if self.key == NODE_NAME_FIELD else ""
        what = "node name" if self.key == NODE_NAME_FIELD else f"field {self.key}"
        if self.operator == "In":
            if actual == self.value:
                return True, f"{what} is {quoted(self.value)}"
            return False, f"{what} is {quoted(actual)}, not {quoted(self.value)}"
        if actual != self.value:
            return True, f"{what} is {quoted(actual)}, not {quoted(self.value)}"
        return False, f"{what} is the excluded {quoted(self.value)}"


def _field_parse_problems(req: object) -> list[Problem]:
    """What the scheduler rejects in a matchFields entry (operator, exactly one value)."""
    if not isinstance(req, MAPPINGS):
        return [_wrong_type((), "an object with key, operator and values", req)]
    problems: list[Problem] = []
    values, value_problems = _read_values(req)
    problems.extend(value_problems)
    op_problem = _operator_problem(req.get("operator"), FIELD_OPERATORS, "matchFields operator")
    if op_problem is not None:
        problems.append(op_problem)
    elif values is not None and len(values) != 1:
        problems.append(Problem(("values",), "must have exactly one value (a node name)"))
    if _text_field(req, "key") is None:
        problems.append(_wrong_type(("key",), "a string", req.get("key")))
    return problems


def field_requirement_problems(req: object) -> list[Problem]:
    """Why a ``matchFields`` entry is invalid; ``[]`` when valid.

    Only ``metadata.name`` with ``In``/``NotIn`` and exactly one valid node name is allowed.
    Paths are relative to ``req``.
    """
    problems = _field_parse_problems(req)
    if not isinstance(req, MAPPINGS):
        return problems
    key = _text_field(req, "key")
    if key is not None and key != NODE_NAME_FIELD:
        problems.append(
            Problem(
                ("key",),
                f"unsupported field {quoted(key)}: matchFields supports only metadata.name",
            )
        )
    values = req.get("values")
    if key == NODE_NAME_FIELD and isinstance(values, list):
        for j, v in enumerate(values):
            errors = dns1123_subdomain_errors(v) if isinstance(v, str) else []
            if errors:
                problems.append(
                    Problem(("values", j), f"invalid node name {quoted(v)}: {'; '.join(errors)}")
                )
    return problems


def _compile_field(req: object) -> _Field | None:
    if not isinstance(req, MAPPINGS) or _field_parse_problems(req):
        return None
    values = req["values"]  # a one-string list, checked by _field_parse_problems
    return _Field(str(req.get("key") or ""), str(req["operator"]), str(values[0]))


def field_requirement_matches(req: object, node_name: object) -> bool:
    """True when one ``matchFields`` entry matches the node name; an unparsable entry never does."""
    compiled = _compile_field(req)
    name = node_name if isinstance(node_name, str) else ""
    return compiled is not None and compiled.evaluate(name)[0]


# --- terms --------------------------------------------------------------------------------------


def _term_lists(term: object) -> tuple[list[object], list[object], list[Problem]]:
    """A term's expressions, fields and shape problems."""
    if not isinstance(term, MAPPINGS):
        return [], [], [_wrong_type((), "an object with matchExpressions and/or matchFields", term)]
    expressions, problems = _read_list(term, "matchExpressions")
    fields, field_problems = _read_list(term, "matchFields")
    return expressions, fields, problems + field_problems


def is_empty_term(term: object) -> bool:
    """True for a term with neither matchExpressions nor matchFields: it matches no node."""
    expressions, fields, problems = _term_lists(term)
    return not problems and not expressions and not fields


def term_problems(term: object) -> list[Problem]:
    """The scheduler's parse errors for one term; a term with any of these matches no node.

    An empty term is not a parse error (see :func:`is_empty_term`). Paths are relative to
    ``term``.
    """
    expressions, fields, problems = _term_lists(term)
    for i, req in enumerate(expressions):
        problems.extend(_prefixed(("matchExpressions", i), expression_problems(req)))
    for i, req in enumerate(fields):
        problems.extend(_prefixed(("matchFields", i), _field_parse_problems(req)))
    return problems


@record(frozen=True, slots=True)
class _Term:
    """A non-empty term the scheduler parsed."""

    expressions: tuple[_Expression, ...]
    fields: tuple[_Field, ...]

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        if not all(e.evaluate(labels)[0] for e in self.expressions):
            return False
        # Upstream only consults matchFields when the node has a name.
        return not node_name or all(f.evaluate(node_name)[0] for f in self.fields)


def _compile_term(term: object) -> _Term | None:
    """None for an empty or unparsable term: both match nothing."""
    expressions, fields, problems = _term_lists(term)
    if problems or (not expressions and not fields):
        return None
    compiled_expressions: list[_Expression] = []
    for req in expressions:
        expression = _compile_expression(req)
        if expression is None:
            return None
        compiled_expressions.append(expression)
    compiled_fields: list[_Field] = []
    for req in fields:
        field = _compile_field(req)
        if field is None:
            return None
        compiled_fields.append(field)
    return _Term(tuple(compiled_expressions), tuple(compiled_fields))


def _compile_terms(node_selector: object) -> tuple[_Term, ...]:
    """The terms of a v1 NodeSelector that can match anything (LazyErrorNodeSelector)."""
    if not isinstance(node_selector, MAPPINGS):
        return ()
    terms = node_selector.get("nodeSelectorTerms")
    if not isinstance(terms, list):
        return ()
    compiled = (_compile_term(term) for term in terms)
    return tuple(t for t in compiled if t is not None)


def _node_name(node_name: object) -> str:
    return node_name if isinstance(node_name, str) else ""


def term_matches(term: object, node_name: object, labels: object) -> bool:
    """True when a node matches one ``nodeSelectorTerms`` entry (expressions and fields ANDed).

    An empty term or one the scheduler cannot parse matches nothing.
    """
    compiled = _compile_term(term)
    return compiled is not None and compiled.matches(_node_name(node_name), _label_map(labels))


def node_selector_matches(node_selector: object, node_name: object, labels: object) -> bool:
    """True when a node matches a v1 NodeSelector (e.g. required node affinity).

    Terms are ORed; a missing or empty terms list matches nothing; an invalid term matches
    nothing while the other terms still count. ``None`` itself matches nothing (the pod-level
    functions treat an absent selector as "no constraint").
    """
    name, node_labels = _node_name(node_name), _label_map(labels)
    return any(term.matches(name, node_labels) for term in _compile_terms(node_selector))


def node_selector_map_matches(node_selector: object, labels: object) -> bool:
    """True when every ``spec.nodeSelector`` entry equals the node's label.

    ``None`` or ``{}`` imposes nothing; a selector that is not a ``str -> str`` map is something
    the API server rejects, so it matches nothing.
    """
    pairs = _selector_pairs(node_selector)
    if pairs is None:
        return False
    node_labels = _label_map(labels)
    return all(k in node_labels and node_labels[k] == v for k, v in pairs)


def selector_value(value: object) -> object:
    """A ``nodeSelector`` value as the API server decodes it: JSON ``null`` (YAML ``~``,
    ``null`` or nothing) into a ``map[string]string`` entry is the empty string (encoding/json
    stores the zero value)."""
    return "" if value is None else value


def _selector_pairs(node_selector: object) -> tuple[tuple[str, str], ...] | None:
    """The nodeSelector as pairs; None when it is malformed (and so matches nothing)."""
    if node_selector is None:
        return ()
    if not isinstance(node_selector, MAPPINGS):
        return None
    pairs: list[tuple[str, str]] = []
    for key, raw in node_selector.items():
        value = selector_value(raw)
        if not isinstance(key, str) or not isinstance(value, str):
            return None
        pairs.append((key, value))
    return tuple(pairs)


# --- the pod's whole required placement ---------------------------------------------------------


@record(frozen=True, slots=True)
class RequiredNodeAffinity:
    """A pod's ``spec.nodeSelector`` and required node affinity, parsed once for many nodes.

    Mirrors upstream ``GetRequiredNodeAffinity(pod)``; build it with
    :func:`required_node_affinity` and call :meth:`matches` per node.
    """

    selector: tuple[tuple[str, str], ...] | None  # None: malformed, matches nothing
    terms: tuple[_Term, ...] | None  # None: no required node affinity at all
    unmatchable: bool = False  # a malformed affinity block that the API server would reject

    def matches(self, node_name: object, labels: object) -> bool:
        """True when a node named ``node_name`` with ``labels`` satisfies both constraints."""
        if self.unmatchable or self.selector is None:
            return False
        node_labels = _label_map(labels)
        if not all(k in node_labels and node_labels[k] == v for k, v in self.selector):
            return False
        if self.terms is None:
            return True
        name = _node_name(node_name)
        return any(term.matches(name, node_labels) for term in self.terms)


def _required_selector(pod_spec: Mapping[str, object]) -> tuple[bool, object]:
    """(ok, requiredDuringScheduling... or None); ok is False when the affinity is malformed."""
    affinity = pod_spec.get("affinity")
    if affinity is None:
        return True, None
    if not isinstance(affinity, MAPPINGS):
        return False, None
    node_affinity = affinity.get("nodeAffinity")
    if node_affinity is None:
        return True, None
    if not isinstance(node_affinity, MAPPINGS):
        return False, None
    return True, node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")


def node_selector_terms(pod_spec: object) -> list[Any]:
    """The `nodeSelectorTerms` of a pod spec's required node affinity as written (their items
    unchecked); [] when there is none or it is not a list."""
    affinity = pod_spec.get("affinity") if isinstance(pod_spec, MAPPINGS) else None
    node = affinity.get("nodeAffinity") if isinstance(affinity, MAPPINGS) else None
    required = (
        node.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(node, MAPPINGS)
        else None
    )
    terms = required.get("nodeSelectorTerms") if isinstance(required, MAPPINGS) else None
    return terms if isinstance(terms, list) else []


def required_node_affinity(pod_spec: object) -> RequiredNodeAffinity:
    """Parse a pod spec's placement constraints (nodeSelector AND required node affinity).

    A ``None`` spec is Go's zero value and constrains nothing; any other non-object spec
    matches no node.
    """
    if pod_spec is None:
        return RequiredNodeAffinity(selector=(), terms=None)
    if not isinstance(pod_spec, MAPPINGS):
        return RequiredNodeAffinity(selector=(), terms=None, unmatchable=True)
    selector = _selector_pairs(pod_spec.get("nodeSelector"))
    ok, required = _required_selector(pod_spec)
    if not ok:
        return RequiredNodeAffinity(selector=selector, terms=None, unmatchable=True)
    terms = None if required is None else _compile_terms(required)
    return RequiredNodeAffinity(selector=selector, terms=terms)


def pod_matches_node_affinity(pod_spec: object, node_name: object, labels: object) -> bool:
    """True when a pod spec's nodeSelector AND required node affinity admit the node."""
    return required_node_affinity(pod_spec).matches(node_name, labels)


def prefilter_node_names(pod_spec: object) -> frozenset[str] | None:
    """The node names the scheduler's NodeAffinity PreFilter narrows a pod to, or None for all.

    Upstream reads the raw required terms: when *every* term has ``matchFields``
    ``metadata.name In``, the pod can only go to the union over terms of the names each term
    pins (the intersection of its ``In`` lists); other nodes are never filtered. An empty result
    means the terms conflict and the pod fits no node. A term without such a field, or a pod
    without required terms, leaves every node in play.
    """
    if not isinstance(pod_spec, MAPPINGS):
        return None
    ok, required = _required_selector(pod_spec)
    if not ok or not isinstance(required, MAPPINGS):
        return None
    terms = required.get("nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        return None
    names: set[str] = set()
    for term in terms:
        pinned: set[str] | None = None
        fields = term.get("matchFields") if isinstance(term, MAPPINGS) else None
        for req in fields if isinstance(fields, list) else []:
            if not isinstance(req, MAPPINGS):
                continue
            if req.get("key") != NODE_NAME_FIELD or req.get("operator") != "In":
                continue
            raw = req.get("values")
            values = {v for v in raw if isinstance(v, str)} if isinstance(raw, list) else set()
            pinned = values if pinned is None else pinned & values
        if pinned is None:
            return None
        names |= pinned
    return frozenset(names)


# --- validation ---------------------------------------------------------------------------------


def _validate_term(term: object, path: Path) -> list[Problem]:
    expressions, fields, problems = _term_lists(term)
    problems = _prefixed(path, problems)
    for i, req in enumerate(expressions):
        problems.extend(_prefixed(path + ("matchExpressions", i), expression_problems(req)))
    for i, req in enumerate(fields):
        problems.extend(_prefixed(path + ("matchFields", i), field_requirement_problems(req)))
    if is_empty_term(term):
        problems.append(
            Problem(
                path,
                "has neither matchExpressions nor matchFields, so it matches no node",
                scheduler_only=True,
            )
        )
    return problems


def validate_node_selector(node_selector: object) -> list[Problem]:
    """Problems in a v1 NodeSelector such as ``requiredDuringSchedulingIgnoredDuringExecution``.

    Reports what the API server rejects (wrong types, no terms, bad operators, value counts,
    label keys and values, matchFields other than ``metadata.name`` In/NotIn with one node
    name) and what it accepts but can never match (a non-integer ``Gt``/``Lt`` value, an empty
    term). Paths are relative to ``node_selector``.
    """
    if not isinstance(node_selector, MAPPINGS):
        return [_wrong_type((), "an object with nodeSelectorTerms", node_selector)]
    terms = node_selector.get("nodeSelectorTerms")
    if terms is None or terms == []:
        return [Problem(("nodeSelectorTerms",), "must have at least one node selector term")]
    if not isinstance(terms, list):
        return [_wrong_type(("nodeSelectorTerms",), "a list of terms", terms)]
    problems: list[Problem] = []
    for i, term in enumerate(terms):
        problems.extend(_validate_term(term, ("nodeSelectorTerms", i)))
    return problems


def validate_node_selector_map(node_selector: object) -> list[Problem]:
    """Problems in a pod's ``spec.nodeSelector`` map; paths are ``(key,)`` relative to it.

    A non-string value (YAML ``true`` or ``550`` unquoted) is the usual mistake: the API server
    refuses the whole object.
    """
    if node_selector is None:
        return []
    if not isinstance(node_selector, MAPPINGS):
        return [_wrong_type((), "a map of label keys to string values", node_selector)]
    problems: list[Problem] = []
    for key, raw in node_selector.items():
        value = selector_value(raw)
        path: Path = (key if isinstance(key, str) else str(key),)
        key_errors = label_key_errors(key)
        if key_errors:
            problems.append(
                Problem(path, f"invalid label key {quoted(key)}: {'; '.join(key_errors)}")
            )
        if not isinstance(value, str):
            problems.append(
                Problem(path, f"value must be a string, not {json_type_name(value)}; quote it")
            )
            continue
        value_errors = label_value_errors(value)
        if value_errors:
            problems.append(
                Problem(path, f"invalid label value {quoted(value)}: {'; '.join(value_errors)}")
            )
    return problems


def validate_preferred_terms(terms: object) -> list[Problem]:
    """Problems in ``preferredDuringSchedulingIgnoredDuringExecution``; paths relative to it.

    Weights must be integers in 1..100; each ``preference`` is checked like a required term.
    """
    if terms is None:
        return []
    if not isinstance(terms, list):
        return [_wrong_type((), "a list of weighted terms", terms)]
    problems: list[Problem] = []
    for i, item in enumerate(terms):
        if not isinstance(item, MAPPINGS):
            problems.append(_wrong_type((i,), "an object with weight and preference", item))
            continue
        weight = item.get("weight", 0)
        if isinstance(weight, bool) or not isinstance(weight, int):
            problems.append(_wrong_type((i, "weight"), "an integer", weight))
        elif not 1 <= weight <= 100:
            problems.append(Problem((i, "weight"), "must be in the range 1-100"))
        preference = item.get("preference")
        problems.extend(_validate_term({} if preference is None else preference, (i, "preference")))
    return problems


def validate_pod_node_placement(pod_spec: object) -> list[Problem]:
    """All node-placement problems of a pod spec; paths relative to the spec."""
    if pod_spec is None:
        return []
    if not isinstance(pod_spec, MAPPINGS):
        return [_wrong_type((), "an object", pod_spec)]
    problems = _prefixed(
        ("nodeSelector",), validate_node_selector_map(pod_spec.get("nodeSelector"))
    )
    affinity = pod_spec.get("affinity")
    if affinity is None:
        return problems
    if not isinstance(affinity, MAPPINGS):
        return problems + [_wrong_type(("affinity",), "an object", affinity)]
    node_affinity = affinity.get("nodeAffinity")
    if node_affinity is None:
        return problems
    if not isinstance(node_affinity, MAPPINGS):
        return problems + [_wrong_type(("affinity", "nodeAffinity"), "an object", node_affinity)]
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        problems.extend(_prefixed(REQUIRED_AFFINITY_PATH, validate_node_selector(required)))
    preferred_path: Path = (
        "affinity",
        "nodeAffinity",
        "preferredDuringSchedulingIgnoredDuringExecution",
    )
    preferred = node_affinity.get(preferred_path[-1])
    problems.extend(_prefixed(preferred_path, validate_preferred_terms(preferred)))
    return problems


# --- explanations -------------------------------------------------------------------------------


def _invalid(path: Path, problems: list[Problem]) -> Check:
    return Check(path, False, "invalid: " + "; ".join(p.message for p in problems))


def term_explanations(term: object, node_name: object, labels: object) -> list[Check]:
    """Per expression and field of one term, whether it matched this node and why.

    The term matches when it is valid (:func:`term_problems` is empty), not empty, and every
    check matched. Paths are relative to ``term``.
    """
    expressions, fields, problems = _term_lists(term)
    if problems:
        return [_invalid(problems[0].path, problems)]
    if not expressions and not fields:
        return [Check((), False, "term has neither matchExpressions nor matchFields")]
    name, node_labels = _node_name(node_name), _label_map(labels)
    checks: list[Check] = []
    for i, req in enumerate(expressions):
        path: Path = ("matchExpressions", i)
        compiled = _compile_expression(req)
        if compiled is None:
            checks.append(_invalid(path, expression_problems(req)))
        else:
            checks.append(Check(path, *compiled.evaluate(node_labels)))
    for i, req in enumerate(fields):
        path = ("matchFields", i)
        compiled_field = _compile_field(req)
        if compiled_field is None:
            checks.append(_invalid(path, _field_parse_problems(req)))
        elif not name:
            checks.append(Check(path, True, "node has no name, so matchFields is not consulted"))
        else:
            checks.append(Check(path, *compiled_field.evaluate(name)))
    return checks


def node_selector_map_explanations(node_selector: object, labels: object) -> list[Check]:
    """Per ``spec.nodeSelector`` entry, whether the node's label equals it; paths ``(key,)``."""
    if node_selector is None:
        return []
    if not isinstance(node_selector, MAPPINGS):
        return [_invalid((), validate_node_selector_map(node_selector))]
    node_labels = _label_map(labels)
    checks = []
    for key, raw in node_selector.items():
        want = selector_value(raw)
        path: Path = (key if isinstance(key, str) else str(key),)
        if not isinstance(key, str) or not isinstance(want, str):
            checks.append(
                Check(path, False, f"invalid: value must be a string, not {json_type_name(want)}")
            )
        elif key not in node_labels:
            checks.append(Check(path, False, f"node has no label {key}"))
        elif node_labels[key] == want:
            checks.append(Check(path, True, f"node has {key}={want}"))
        else:
            checks.append(Check(path, False, f"node has {key}={node_labels[key]}, not {want}"))
    return checks


def pod_placement_explanations(pod_spec: object, node_name: object, labels: object) -> list[Check]:
    """Every nodeSelector entry and required-affinity requirement of a pod against one node.

    Paths are relative to the pod spec, e.g. ``("affinity", "nodeAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", 0,
    "matchExpressions", 1)``. Terms are ORed, so a node fails the affinity only when every
    term has a failed check.
    """
    if pod_spec is None:
        return []
    if not isinstance(pod_spec, MAPPINGS):
        return [
            Check((), False, f"invalid: pod spec must be an object, not {json_type_name(pod_spec)}")
        ]
    checks = [
        Check(("nodeSelector",) + c.path, c.matched, c.detail)
        for c in node_selector_map_explanations(pod_spec.get("nodeSelector"), labels)
    ]
    ok, required = _required_selector(pod_spec)
    if not ok:
        checks.append(Check(("affinity",), False, "invalid: malformed affinity"))
        return checks
    if required is None:
        return checks
    if not isinstance(required, MAPPINGS):
        checks.append(_invalid(REQUIRED_AFFINITY_PATH, validate_node_selector(required)))
        return checks
    terms = required.get("nodeSelectorTerms")
    terms_path = REQUIRED_AFFINITY_PATH + ("nodeSelectorTerms",)
    if not isinstance(terms, list) or not terms:
        checks.append(Check(terms_path, False, "no node selector terms, so no node matches"))
        return checks
    for i, term in enumerate(terms):
        for c in term_explanations(term, node_name, labels):
            checks.append(Check(terms_path + (i,) + c.path, c.matched, c.detail))
    return checks
