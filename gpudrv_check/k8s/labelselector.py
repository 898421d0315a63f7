"""metav1.LabelSelector semantics: matching, validation and a canonical key.

Mirrors k8s.io/apimachinery ``LabelSelectorAsSelector`` (apis/meta/v1/helpers.go),
``labels.Requirement.Matches`` (pkg/labels/selector.go) and ``ValidateLabelSelector``
(apis/meta/v1/validation/validation.go):

- ``matchLabels`` and every ``matchExpressions`` entry are ANDed.
- ``In`` needs the key present with a listed value; ``NotIn`` also matches objects lacking
  the key; ``Exists`` / ``DoesNotExist`` test presence. ``In``/``NotIn`` need at least one
  value, ``Exists``/``DoesNotExist`` take none.
- An absent or null selector matches **nothing**; an empty one (``{}``, or only empty
  ``matchLabels``/``matchExpressions``) matches **everything**. PodDisruptionBudget in
  policy/v1 and pod (anti-)affinity terms both go through ``LabelSelectorAsSelector`` and so
  share this rule.
- A selector that fails conversion (unknown operator, wrong value count, bad key or value
  syntax, wrong JSON types) is an error upstream; every consumer we model then selects
  nothing (the eviction API skips such a PDB, the scheduler fails the affinity term), so
  :func:`selector_matches` returns ``False`` for it.

Inputs are plain JSON-like data and may have wrong types; nothing here raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from gpudrv_check.core.finding import quoted
from gpudrv_check.core.records import record
from gpudrv_check.k8s.labels import (
    MAPPINGS,
    Problem,
    json_type_name,
    label_key_errors,
    label_value_errors,
)

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
OPERATORS: tuple[str, ...] = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)

_SELECTOR_FIELDS = frozenset({"matchLabels", "matchExpressions"})
_REQUIREMENT_FIELDS = frozenset({"key", "operator", "values"})


@record(frozen=True)
class Requirement:
    """One ANDed condition of a selector; ``values`` is sorted and deduplicated."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` (already sanitised to str -> str) satisfy this requirement."""
        if self.operator == IN:
            return self.key in labels and labels[self.key] in self.values
        if self.operator == NOT_IN:
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == EXISTS:
            return self.key in labels
        if self.operator == DOES_NOT_EXIST:
            return self.key not in labels
        return False


SelectorKind = Literal["nothing", "everything", "requirements", "invalid"]


@record(frozen=True)
class SelectorKey:
    """Canonical, hashable form of a selector: equal keys select exactly the same objects.

    ``kind`` is ``nothing`` (absent/null selector), ``everything`` (empty selector),
    ``requirements`` (ANDed ``requirements``) or ``invalid`` (conversion fails upstream).
    ``matchLabels: {k: v}`` becomes ``k In (v)``, the same set semantics as upstream Equals.
    """

    kind: SelectorKind
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: object) -> bool:
        """Whether an object with ``labels`` is selected; labels of a wrong type count as none."""
        if self.kind == "everything":
            return True
        if self.kind != "requirements":
            return False
        return self.matches_clean(_clean_labels(labels))

    def matches_clean(self, labels: Mapping[str, str]) -> bool:
        """``matches`` for labels already known to be a str -> str mapping."""
        if self.kind == "everything":
            return True
        if self.kind != "requirements":
            return False
        for req in self.requirements:
            if not req.matches(labels):
                return False
        return True


NOTHING = SelectorKey("nothing")
EVERYTHING = SelectorKey("everything")
INVALID = SelectorKey("invalid")


def _clean_labels(labels: object) -> dict[str, str]:
    """Keep only str -> str entries; the API server would not store anything else."""
    if not isinstance(labels, MAPPINGS):
        return {}
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}


def _as_string(value: object) -> str | None:
    """A JSON string field as Go decodes it: null leaves the zero value ''."""
    if value is None:
        return ""
    return value if isinstance(value, str) else None


def _compile(selector: object) -> tuple[SelectorKey, list[Problem], list[Problem]]:
    """Convert a selector; returns (key, fatal problems, strict-decoding-only problems)."""
    if selector is None:
        return NOTHING, [], []
    if not isinstance(selector, MAPPINGS):
        return INVALID, [Problem((), f"must be an object, not {json_type_name(selector)}")], []
    fatal: list[Problem] = []
    strict: list[Problem] = []
    for field in selector:
        if field not in _SELECTOR_FIELDS:
            # Lenient decoding drops it (and may leave `{}`, i.e. match-all); strict rejects it.
            strict.append(Problem((str(field),), f"unknown field {quoted(field)}"))
    requirements: list[Requirement] = []
    requirements += _compile_match_labels(selector.get("matchLabels"), fatal)
    requirements += _compile_match_expressions(selector.get("matchExpressions"), fatal, strict)
    if fatal:
        return INVALID, fatal, strict
    if not requirements:
        return EVERYTHING, [], strict
    unique = sorted(set(requirements), key=lambda r: (r.key, r.operator, r.values))
    return SelectorKey("requirements", tuple(unique)), [], strict


def _compile_match_labels(match_labels: object, fatal: list[Problem]) -> list[Requirement]:
    """``matchLabels`` entries as ``In`` requirements, recording problems in ``fatal``."""
    if match_labels is None:
        return []
    if not isinstance(match_labels, MAPPINGS):
        fatal.append(
            Problem(("matchLabels",), f"must be an object, not {json_type_name(match_labels)}")
        )
        return []
    requirements: list[Requirement] = []
    for key, raw_value in match_labels.items():
        path: tuple[str | int, ...] = ("matchLabels", str(key))
        value = _as_string(raw_value)
        if not isinstance(key, str):
            fatal.append(Problem(path, f"label key must be a string, not {json_type_name(key)}"))
            continue
        errors = [f"key {quoted(key)}: {msg}" for msg in label_key_errors(key)[:1]]
        if value is None:
            errors.append(f"value must be a string, not {json_type_name(raw_value)}")
        else:
            errors += [f"value {quoted(value)}: {msg}" for msg in label_value_errors(value)[:1]]
        fatal += [Problem(path, msg) for msg in errors]
        if not errors and value is not None:
            requirements.append(Requirement(key, IN, (value,)))
    return requirements


def _compile_match_expressions(
    expressions: object, fatal: list[Problem], strict: list[Problem]
) -> list[Requirement]:
    """``matchExpressions`` as requirements, recording problems in ``fatal`` / ``strict``."""
    if expressions is None:
        return []
    if not isinstance(expressions, (list, tuple)):
        fatal.append(
            Problem(("matchExpressions",), f"must be an array, not {json_type_name(expressions)}")
        )
        return []
    requirements: list[Requirement] = []
    for index, expr in enumerate(expressions):
        base: tuple[str | int, ...] = ("matchExpressions", index)
        if not isinstance(expr, MAPPINGS):
            fatal.append(Problem(base, f"must be an object, not {json_type_name(expr)}"))
            continue
        for field in expr:
            if field not in _REQUIREMENT_FIELDS:
                strict.append(Problem((*base, str(field)), f"unknown field {quoted(field)}"))
        before = len(fatal)
        requirement = _compile_requirement(expr, base, fatal)
        if requirement is not None and len(fatal) == before:
            requirements.append(requirement)
    return requirements


def _compile_requirement(
    expr: Mapping[object, object], base: tuple[str | int, ...], fatal: list[Problem]
) -> Requirement | None:
    """One ``matchExpressions`` entry; problems go to ``fatal``."""
    key = _as_string(expr.get("key"))
    operator = _as_string(expr.get("operator"))
    raw_values = expr.get("values")
    if key is None:
        fatal.append(
            Problem((*base, "key"), f"must be a string, not {json_type_name(expr.get('key'))}")
        )
    else:
        fatal += [Problem((*base, "key"), msg) for msg in label_key_errors(key)[:1]]
    values: list[str] = []
    if raw_values is not None and not isinstance(raw_values, (list, tuple)):
        fatal.append(
            Problem((*base, "values"), f"must be an array, not {json_type_name(raw_values)}")
        )
    elif raw_values is not None:
        for i, raw in enumerate(raw_values):
            value = _as_string(raw)
            if value is None:
                fatal.append(
                    Problem((*base, "values", i), f"must be a string, not {json_type_name(raw)}")
                )
            else:
                fatal += [
                    Problem((*base, "values", i), msg) for msg in label_value_errors(value)[:1]
                ]
                values.append(value)
    if operator is None:
        fatal.append(
            Problem(
                (*base, "operator"), f"must be a string, not {json_type_name(expr.get('operator'))}"
            )
        )
        return None
    if operator in (IN, NOT_IN):
        if raw_values is None or (isinstance(raw_values, (list, tuple)) and not raw_values):
            fatal.append(
                Problem((*base, "values"), "must be specified when `operator` is 'In' or 'NotIn'")
            )
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if isinstance(raw_values, (list, tuple)) and raw_values:
            fatal.append(
                Problem(
                    (*base, "values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
    else:
        fatal.append(
            Problem(
                (*base, "operator"),
                f"{quoted(operator)} is not a valid selector operator (use {', '.join(OPERATORS)})",
            )
        )
        return None
    if key is None:
        return None
    return Requirement(key, operator, tuple(sorted(set(values))))


def selector_key(selector: object) -> SelectorKey:
    """Canonical hashable form of ``selector``, so identical selectors are evaluated once.

    Two selectors with equal keys select the same objects (order of ``matchLabels``,
    ``matchExpressions`` and ``values`` and duplicates do not matter).
    """
    return _compile(selector)[0]


def checked_selector_key(selector: object) -> tuple[SelectorKey, list[Problem]]:
    """``selector_key(selector)`` and ``validate_label_selector(selector)`` in one pass."""
    key, fatal, strict = _compile(selector)
    return key, fatal + strict


def selector_matches(selector: object, labels: object) -> bool:
    """Whether ``selector`` (a metav1.LabelSelector as parsed JSON) selects ``labels``.

    Absent/null selects nothing, ``{}`` selects everything, an invalid selector selects
    nothing (see the module docstring for why).
    """
    return selector_key(selector).matches(labels)


def validate_label_selector(selector: object) -> list[Problem]:
    """Problems the API server reports for ``selector``; paths are relative to it.

    Covers ValidateLabelSelector (operators, value counts, key and value syntax), the JSON
    types the decoder accepts, and unknown fields (which ``kubectl apply`` rejects with its
    default strict field validation; dropped silently they can turn a selector into ``{}``).
    An absent/null selector is valid.
    """
    _, fatal, strict = _compile(selector)
    return fatal + strict
