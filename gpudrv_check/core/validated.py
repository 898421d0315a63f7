"""Dataclasses that pydantic validates when, and only when, a person wrote what they hold.

The config (read/config.py) and the built-in rules' metadata (read/policy.py) are dataclasses.
What a user writes (`.gpudrv-check.yaml`, `[tool.gpudrv-check]`) is validated by `validate`:
a pydantic model made from the dataclass (its fields, types, defaults, and the constraints and
validators in each field's `metadata`), strict and closed to unknown keys unless the class says
otherwise (`__validation__`), then turned into the dataclass. What was validated before, or
ships with the package and is validated by the tests, is turned into the dataclass by `build`,
without pydantic: a check whose config was validated by an earlier run (engine/cache/config.py)
or that has none imports no pydantic at all (importing it and building the models was about a
fifth of a 1k-workload repo's run after one edit: README, Performance). Nor does a config whose
every value pydantic would take as it is (`plain_validate`: a string for a string, a list of
strings for a list of them); anything else, and every error, is pydantic's.

`dump` gives a dataclass back as builtin values (enums as their values), what `build` takes.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar, cast

from gpudrv_check.core.located import LMap, LSeq

_T = TypeVar("_T")

#: a field of the dataclass that is not a key of the file (where it came from, positions)
INTERNAL = "internal"
#: the name of a dataclass's own pydantic options (`extra`, `strict`), over `_DEFAULTS`
OPTIONS = "__validation__"
_DEFAULTS = {"extra": "forbid", "strict": True}
#: metadata keys taken as pydantic `Field` arguments; `before` and `after` are validators
_CONSTRAINTS = ("gt", "min_length", "strict")


def spec(
    *,
    before: Callable[[Any], Any] | None = None,
    after: Callable[[Any], Any] | None = None,
    **constraints: Any,
) -> dict[str, Any]:
    """A field's `metadata`: pydantic constraints (`gt`, `min_length`, `strict`) and a
    validator run before (`before`) or after (`after`) the type is checked."""
    unknown = set(constraints) - set(_CONSTRAINTS)
    if unknown:
        raise TypeError(f"not a constraint: {sorted(unknown)}")
    out = dict(constraints)
    if before is not None:
        out["before"] = before
    if after is not None:
        out["after"] = after
    return out


def internal() -> dict[str, Any]:
    return {INTERNAL: True}


def _fields(cls: type) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(cls) if not f.metadata.get(INTERNAL)]


@cache
def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _is_union(origin: Any) -> bool:
    return origin is typing.Union or origin is types.UnionType


# --- without pydantic ----------------------------------------------------------------------


def build(cls: type[_T], data: Any) -> _T:
    """The dataclass of plain `data` already known to be valid (what `dump` gave, or package
    data the tests validate): nested dataclasses, lists, mappings and enums made from their
    builtin values; a missing key takes the field's default. TypeError or ValueError when
    `data` has not the dataclass's shape."""
    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__}: not a mapping")
    made = _makers(cast(Any, cls), build)
    if not made.keys() >= data.keys():
        unknown = set(data) - set(made)
        raise TypeError(f"{cls.__name__}: unknown keys {sorted(map(str, unknown))}")
    return cls(**{name: made[name](value) for name, value in data.items()})


def _built(hint: Any, value: Any, make: Callable[[Any, Any], Any] = build) -> Any:
    """`value` made the type `hint` says, `make(cls, value)` making each dataclass in it (from a
    mapping: `build`; from its pydantic model: `_from_model`)."""
    return _maker(hint, make)(value)


@cache
def _makers(cls: Any, make: Callable[[Any, Any], Any]) -> dict[str, Callable[[Any], Any]]:
    """Per field of `cls` (internal ones left out), what makes its value (`_maker`)."""
    hints = _hints(cls)
    return {f.name: _maker(hints[f.name], make) for f in _fields(cls)}


def _same(value: Any) -> Any:
    return value


@cache
def _maker(hint: Any, make: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    """What makes a value of the type `hint` from its builtin (or model) value, worked out
    once per type: the built-in rules' metadata is 30 classes of the same few types (reading
    each value's type anew was most of building them, 1 M instructions a rule). None stays
    None at every level."""
    origin = typing.get_origin(hint)
    if origin is None:
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            return lambda value: None if value is None else make(hint, value)
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return lambda value: None if value is None else hint(value)
        return _same
    args = typing.get_args(hint)
    if origin is list:
        item = _maker(args[0], make)

        def made_list(value: Any) -> Any:
            if value is None:
                return None
            if not isinstance(value, list):
                raise TypeError("not a list")
            return [item(v) for v in value]

        return made_list
    if origin is dict:
        entry = _maker(args[1], make)

        def made_dict(value: Any) -> Any:
            if value is None:
                return None
            if not isinstance(value, dict):
                raise TypeError("not a mapping")
            return {key: entry(v) for key, v in value.items()}

        return made_dict
    if _is_union(origin):
        inner = [a for a in args if a is not type(None)]
        return _maker(inner[0], make) if len(inner) == 1 else _same
    return _same  # Literal, Annotated: the value as given


def dump(obj: Any) -> Any:
    """A dataclass (and what it holds) as builtin values: mappings in field order, enums as
    their values; internal fields left out."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: dump(getattr(obj, f.name)) for f in _fields(type(obj))}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, list):
        return [dump(item) for item in obj]
    if isinstance(obj, dict):
        return {key: dump(item) for key, item in obj.items()}
    return obj


# --- what pydantic would take as it is --------------------------------------------------------


class _Declined(Exception):
    """`plain_validate` leaves the value to pydantic."""


def plain_validate(cls: type[_T], data: Any) -> tuple[_T, frozenset[str]] | None:
    """What `validate` gives for `data` whose every value already is what its field takes as it
    is, worked out without pydantic; None for anything else, which pydantic then validates
    (and words the error of).

    Taken as it is: a mapping (a `dict` or the readers' `LMap`) whose keys are all fields of
    a class closed to unknown keys and strict (`_DEFAULTS`); a value of the exact type `str`,
    `int` or `bool` (never a subclass, a float for an int, a bool for an int), None where the
    type allows it, one of a Literal's values of the same type, a `list` or `LSeq` (or a
    mapping with `str` keys) of such values, any value for `Any`, a nested class alike; `gt`
    and `min_length` met; a `before` validator applied first and an `after` validator last,
    each declining when it raises. Enums, other unions, lax fields (`strict=False`), other
    container classes and every other type are declined. pydantic's strict mode takes these
    values unchanged (a list or mapping copied into a plain one), so the result is equal:
    tests/core/test_validated.py compares the two on generated configs. A small repo's config
    is such a file: the lab's check imports no pydantic (issue 22; importing it and building
    the models of the two keys the lab writes was a quarter of its run)."""
    if not isinstance(data, dict):
        return None
    try:
        value = _plain_class(cls, data)
    except _Declined:
        return None
    return value, frozenset(data)


_PLAIN_SCALARS = (str, int, bool)
# the containers the config readers make (another subclass may read otherwise than it stores)
_MAPPINGS = (dict, LMap)
_SEQUENCES = (list, LSeq)
_PLAIN_METADATA = frozenset({"gt", "min_length", "before", "after"})


def _plain_class(cls: Any, data: Any) -> Any:
    if data.__class__ not in _MAPPINGS or {**_DEFAULTS, **getattr(cls, OPTIONS, {})} != _DEFAULTS:
        raise _Declined
    fields = {f.name: f for f in _fields(cls)}
    hints = _hints(cls)
    values = {}
    for key, raw in data.items():
        f = fields.get(key) if type(key) is str else None
        if f is None:
            raise _Declined
        values[key] = _plain_field(hints[key], f.metadata, raw)
    if any(_required(f) for name, f in fields.items() if name not in values):
        raise _Declined
    return cls(**values)


def _plain_field(hint: Any, metadata: Any, raw: Any) -> Any:
    if not _PLAIN_METADATA.issuperset(metadata):
        raise _Declined
    if "after" in metadata and ("gt" in metadata or "min_length" in metadata):
        raise _Declined  # (which pydantic checks first is not worth knowing here)
    try:
        value = metadata["before"](raw) if "before" in metadata else raw
    except Exception:
        raise _Declined from None
    out = _plain(hint, value)
    if "gt" in metadata and not (type(out) is int and out > metadata["gt"]):
        raise _Declined
    if "min_length" in metadata and not (
        isinstance(out, (str, list)) and len(out) >= metadata["min_length"]
    ):
        raise _Declined
    if "after" in metadata:
        try:
            out = metadata["after"](out)
        except Exception:
            raise _Declined from None
    return out


def _plain(hint: Any, value: Any) -> Any:
    if hint is Any:
        return value
    origin = typing.get_origin(hint)
    if origin is None:
        if hint in _PLAIN_SCALARS and type(value) is hint:
            return value
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            return _plain_class(hint, value)
        raise _Declined
    args = typing.get_args(hint)
    if origin is list and value.__class__ in _SEQUENCES:
        return [_plain(args[0], item) for item in value]
    if origin is dict and value.__class__ in _MAPPINGS and args[0] is str:
        if not all(type(key) is str for key in value):
            raise _Declined
        return {key: _plain(args[1], item) for key, item in value.items()}
    if _is_union(origin):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _plain(inner[0], value)
    elif origin is typing.Literal:
        if any(type(value) is type(a) and value == a for a in args):
            return value
    raise _Declined


# --- with pydantic -------------------------------------------------------------------------


def validate(cls: type[_T], data: Any) -> tuple[_T, frozenset[str]]:
    """`data` validated as `cls` by pydantic (pydantic.ValidationError when it is not one),
    and the keys it gave at the top (pydantic's `model_fields_set`).

    The model checks only the fields `data` writes at the top: a field it leaves out takes the
    dataclass's default, which no validation changes (no field is required or validated
    across fields), and a key that names no field is refused as by the whole model
    (`extra="forbid"`), with the same errors in the same order. Building pydantic's schema of
    every section of a config cost a small repo's run more than checking it (the lab: 49 ms
    of a 0.18 s run, for a file that writes two keys)."""
    written = frozenset(data) if isinstance(data, dict) else None
    model = model_of(cast(Any, cls), _written_fields(cast(Any, cls), written)).model_validate(data)
    return _from_model(cls, model), frozenset(model.model_fields_set)


def _written_fields(cls: Any, written: frozenset[Any] | None) -> frozenset[str] | None:
    """The fields of `cls` among the keys written (None: all), when the class may leave some
    out: every field has a default and it is closed to unknown keys."""
    if written is None or getattr(cls, OPTIONS, {}).get("extra", _DEFAULTS["extra"]) != "forbid":
        return None
    fields = _fields(cls)
    if any(_required(f) for f in fields):
        return None
    return frozenset(f.name for f in fields if f.name in written)


def _required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _from_model(cls: type[_T], model: Any) -> _T:
    """The dataclass of a validated model (its nested models made dataclasses too); a field
    the model does not have (`validate`: not written) takes the dataclass's default."""
    hints = _hints(cast(Any, cls))
    # (a default of a nested dataclass is that dataclass itself, not a model: all its fields)
    present = getattr(type(model), "model_fields", None)
    return cls(
        **{
            f.name: _built(hints[f.name], getattr(model, f.name), _from_model)
            for f in _fields(cls)
            if present is None or f.name in present
        }
    )


@cache
def model_of(cls: Any, only: frozenset[str] | None = None) -> Any:
    """The pydantic model that validates what a person writes for `cls` (made once); with
    `only`, one of those fields alone (`validate`)."""
    from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, create_model

    hints = _hints(cls)
    definitions: dict[str, Any] = {}
    for f in _fields(cls):
        if only is not None and f.name not in only:
            continue
        annotation = _modelled(hints[f.name])
        if "before" in f.metadata:
            annotation = typing.Annotated[annotation, BeforeValidator(f.metadata["before"])]
        if "after" in f.metadata:
            annotation = typing.Annotated[annotation, AfterValidator(f.metadata["after"])]
        constraints = {k: f.metadata[k] for k in _CONSTRAINTS if k in f.metadata}
        if f.default is not dataclasses.MISSING:
            info = Field(default=f.default, **constraints)
        elif f.default_factory is not dataclasses.MISSING:
            info = Field(default_factory=f.default_factory, **constraints)
        else:
            info = Field(**constraints)
        definitions[f.name] = (annotation, info)
    options = {**_DEFAULTS, **getattr(cls, OPTIONS, {})}
    return create_model(cls.__name__, __config__=ConfigDict(**options), **definitions)


def _modelled(hint: Any) -> Any:
    """A field's type with each dataclass in it replaced by its model."""
    origin = typing.get_origin(hint)
    if origin is None:
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            return model_of(hint)
        return hint
    args = typing.get_args(hint)
    if origin is list:
        return list[_modelled(args[0])]  # type: ignore[misc]
    if origin is dict:
        return dict[args[0], _modelled(args[1])]  # type: ignore[misc, valid-type]
    if _is_union(origin):
        modelled = tuple(_modelled(a) for a in args)
        union = modelled[0]
        for item in modelled[1:]:
            union = union | item
        return union
    return hint
