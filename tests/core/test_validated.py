"""core/validated.py: dataclasses that pydantic validates when a person wrote them, and that are
rebuilt without it from what was validated before (the config: read/config.py)."""

from __future__ import annotations

import collections
from dataclasses import field
from typing import Literal

import pytest
from pydantic import ValidationError

from gpudrv_check.core.finding import Severity
from gpudrv_check.core.records import record
from gpudrv_check.core.validated import build, dump, internal, model_of, spec, validate
from gpudrv_check.read import config as config_module
from gpudrv_check.read.config import Config, parse_config


def _twice(value: object) -> object:
    return [value] if isinstance(value, str) else value


def _not_x(value: str) -> str:
    if value == "x":
        raise ValueError("x is not allowed")
    return value


@record(kw_only=True)
class Inner:
    names: list[str] = field(default_factory=list, metadata=spec(before=_twice, min_length=1))
    level: Severity | None = field(default=None, metadata=spec(strict=False))


@record(kw_only=True)
class Outer:
    count: int = field(default=1, metadata=spec(gt=0))
    label: str = field(default="a", metadata=spec(after=_not_x))
    mode: Literal["on", "off"] = "on"
    inner: Inner = field(default_factory=Inner)
    by_name: dict[str, Inner] = field(default_factory=dict)
    where: str = field(default="", metadata=internal())


def test_validate_takes_what_pydantic_takes_and_nothing_else():
    value, written = validate(Outer, {"count": 2, "by_name": {"a": {"names": "one"}}})
    assert value == Outer(count=2, by_name={"a": Inner(names=["one"])})
    assert written == {"count", "by_name"}
    assert validate(Outer, {"inner": {"names": ["n"], "level": "info"}})[0].inner.level is (
        Severity.INFO
    )  # the enum in lax mode (`strict=False`), as the config's rule severities
    for bad, kind in (
        ({"count": 0}, "greater_than"),
        ({"count": True}, "int_type"),  # strict: never coerced
        ({"count": "2"}, "int_type"),
        ({"label": "x"}, "value_error"),
        ({"mode": "auto"}, "literal_error"),
        ({"inner": {"names": []}}, "too_short"),
        ({"inner": 3}, "model_type"),
        ({"where": "here"}, "extra_forbidden"),  # an internal field is no key of the file
        ({"other": 1}, "extra_forbidden"),
    ):
        with pytest.raises(ValidationError) as err:
            validate(Outer, bad)
        assert err.value.errors()[0]["type"] == kind, bad
    assert model_of(Outer) is model_of(Outer)  # made once


def test_build_gives_back_what_dump_took_without_pydantic():
    value, _ = validate(Outer, {"count": 3, "inner": {"names": ["n"], "level": "error"}})
    plain = dump(value)
    assert plain["inner"] == {"names": ["n"], "level": "error"}  # the enum as its value
    assert "where" not in plain
    assert build(Outer, plain) == value
    assert build(Outer, {}) == Outer()  # a missing key takes its default
    for bad in ([], {"other": 1}, {"inner": []}, {"inner": {"level": "fatal"}}):
        with pytest.raises((TypeError, ValueError)):
            build(Outer, bad)


def test_a_config_rebuilt_from_its_dump_is_the_validated_one(monkeypatch: pytest.MonkeyPatch):
    """What engine/cache/config.py stores (`dump`) and a later run rebuilds without pydantic."""
    data = {
        "matrix": None,
        "fail_on": "warning",
        "labels": {"driver_branch": "example.com/branch"},
        "operator": {"version": "v25.10.0"},
        "clusters": {"a": {"paths": ["a/"], "operator": {"version": "25.3.1"}}},
        "rules": {"GPU010": {"severity": "warning", "params": {"scheduler_version": "1.33"}}},
        "exemptions": [{"rule": "GPU001", "kind": "Node", "reason": "lab"}],
        "cluster": {"admission": ["ExtendedResourceToleration"]},
        "cuda": {"min_driver": {"12.10": "580.1"}},
    }
    config = parse_config(data, "c.yaml")
    known = (dump(config), sorted(config.written))
    assert config_module._rebuilt(known) is not None

    def refuse(*_args: object) -> None:
        raise AssertionError("validated again: the known values were not used")

    with monkeypatch.context() as patched:
        patched.setattr(config_module, "validate", refuse)
        rebuilt = parse_config(data, "c.yaml", known)
    assert rebuilt == config and rebuilt.dump_json() == config.dump_json()
    assert rebuilt.written == config.written and rebuilt.source == "c.yaml"
    assert rebuilt.rules["GPU010"].severity is Severity.WARNING
    assert rebuilt.labels.driver_branch == ["example.com/branch"]
    # values of another shape than a config's: validated again, the same config
    assert parse_config(data, "c.yaml", ({"bogus": 1}, [])) == config


def test_with_counts_the_fields_it_replaces_as_written():
    """engine/run.py takes one cluster's matrix into the config with `with_`: a matrix so
    named must exist, as pydantic's `model_copy(update=...)` counted it in `model_fields_set`."""
    config = Config()
    assert "matrix" not in config.written
    assert "matrix" in config.with_(matrix="m.csv").written
    assert config.with_(matrix="m.csv").matrix == "m.csv" and config.matrix != "m.csv"


def _full(cls, data):
    """What the whole model (every field) gives: values, written keys, or its errors."""
    from gpudrv_check.core.validated import _from_model

    try:
        model = model_of(cls).model_validate(data)
    except ValidationError as err:
        return "errors", err.errors(include_url=False)
    return _from_model(cls, model), frozenset(model.model_fields_set)


def _partial(cls, data):
    try:
        return validate(cls, data)
    except ValidationError as err:
        return "errors", err.errors(include_url=False)


CONFIGS = [
    {},
    {"matrix": "m.csv", "exclude": ["steps/"]},
    {"fail_on": "warning", "max_file_bytes": 0},  # an error among good keys
    {"fail_on": "sometimes", "other": 1, "exclude": "x"},  # errors and an unknown key, in order
    {"zzz": 1, "aaa": 2},  # unknown keys alone
    {"rules": {"GPU010": {"severity": "info", "params": {"scheduler_version": "1.30"}}}},
    {"operator": {"version": "v25.3.0"}, "labels": {}},
    {"operator": 3},
    {"clusters": {"a": {"path": "clusters/a"}}, "gitignore": "yes"},
    {"exemptions": [{"rule": "GPU010"}], "policies": ["p/"]},
    {"source": "x.yaml"},  # an internal field is no key (eb0d513)
    {"where": 1, "matrix": None},
    {1: "a"},
]


@pytest.mark.parametrize("data", CONFIGS)
def test_a_model_of_the_written_keys_gives_what_the_whole_model_gives(data):
    # validate() builds pydantic's schema of the fields the file writes only (issue 22: the
    # whole config's took most of a small repo's run); values, written keys and every error
    # (type, place, order) are the whole model's
    assert _partial(Config, data) == _full(Config, data)
    outer = {k: v for k, v in data.items() if k in ("count", "label", "inner")} or data
    assert _partial(Outer, outer) == _full(Outer, outer)


def test_the_model_of_a_file_is_built_for_its_keys_only():
    validate(Config, {"matrix": "m.csv"})
    only = model_of(Config, frozenset({"matrix"}))
    assert set(only.model_fields) == {"matrix"}
    assert len(model_of(Config).model_fields) > 10


# --- plain_validate: what pydantic takes as it is, without pydantic ---------------------------


def _typed(value):
    """`value` with the type of every piece spelled out (an LSeq equal to a list is not one)."""
    import dataclasses
    import enum

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (
            type(value).__name__,
            [(f.name, _typed(getattr(value, f.name))) for f in dataclasses.fields(value)],
        )
    if isinstance(value, dict):
        return (type(value).__name__, [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return (type(value).__name__, [_typed(v) for v in value])
    if isinstance(value, enum.Enum):
        return (type(value).__name__, value.value)
    return (type(value).__name__, repr(value))


_ANY_SCALARS = [None, True, False, 0, 1, -3, 10**20, 2.0, 2.5, "x", "", "info"]
_ANY = [*_ANY_SCALARS, [], ["a"], [1], {}, {"k": 1}, {"a": ["b"]}, {1: "a"}]


def _generated(hint, rng, depth=0):
    """A value for a field of type `hint`: mostly of its shape, sometimes anything."""
    import dataclasses
    import enum
    import typing

    from gpudrv_check.core.validated import _fields, _hints, _is_union

    if hint is typing.Any or (depth and rng.random() < 0.12) or depth > 4:
        return rng.choice(_ANY)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is str:
        return rng.choice(["a", "steps/", "", "x", "v25.10.0", "25.3", "m.csv"])
    if hint is bool:
        return rng.choice([True, False])
    if hint is int:
        return rng.choice([1, 0, -1, 5, 10**6, 10**30])
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return rng.choice(["info", "warning", "error", "fatal", "INFO"])
    if dataclasses.is_dataclass(hint):
        names = [f.name for f in _fields(hint)]
        hints = _hints(hint)
        out = {
            n: _generated(hints[n], rng, depth + 1)
            for n in rng.sample(names, rng.randint(0, min(3, len(names))))
        }
        if rng.random() < 0.05:
            out[rng.choice(["other", "source", 1])] = 1
        return out
    if origin is list:
        return [_generated(args[0], rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if origin is dict:
        keys = ["a", "GPU010", "GPU001", "12.10"]
        return {
            rng.choice(keys): _generated(args[1], rng, depth + 1) for _ in range(rng.randint(0, 2))
        }
    if _is_union(origin):
        inner = [a for a in args if a is not type(None)]
        return None if rng.random() < 0.2 else _generated(rng.choice(inner), rng, depth)
    if origin is typing.Literal:
        return rng.choice([*args, "sometimes"])
    raise AssertionError(f"no generator for {hint!r}")


def _as_read(data):
    """`data` as the config reader gives it: written as JSON (which is YAML) and read back,
    located mappings and lists, integral floats kept as written (read/config.py)."""
    import json

    from gpudrv_check.read.yaml_docs import keep_written_floats, parse_text

    parsed = parse_text(json.dumps(data))
    assert not parsed.problems
    out = parsed.docs[0].data
    keep_written_floats(out)
    return out


def test_plain_validate_gives_what_pydantic_gives_or_declines():
    """core/validated.py `plain_validate` (the lab's check imports no pydantic) against the
    whole pydantic model on 4,000 generated configs, as Python values and as read from a file:
    where it takes one, pydantic takes it too, to an equal config of the same types with the
    same written keys; what it declines pydantic validates (or refuses) as before. It must
    take a good share, or the test would hold for a function that declines everything."""
    import random

    from gpudrv_check.core.validated import plain_validate

    rng = random.Random(22)
    taken = declined_valid = refused = 0
    for i in range(4000):
        data = _generated(Config, rng)
        if i % 2:
            data = _as_read(data) if all(type(k) is str for k in data) else data
        plain = plain_validate(Config, data)
        full = _full(Config, data)
        if plain is None:
            declined_valid += full[0] != "errors"
            refused += full[0] == "errors"
            continue
        taken += 1
        assert full[0] != "errors", (data, full)
        assert _typed(plain[0]) == _typed(full[0]), data
        assert plain[1] == full[1], data
    # (seed 22: 2,225 taken, 29 declined that pydantic takes, the rest refused)
    assert taken > 1000 and declined_valid > 10 and refused > 1000, (taken, declined_valid)


@pytest.mark.parametrize(
    ("data", "taken"),
    [
        ({"matrix": "m.csv", "exclude": ["steps/"]}, True),  # the lab's
        ({}, True),
        ({"fail_on": "warning", "gitignore": False, "max_file_bytes": 10}, True),
        ({"labels": {"driver_branch": "a/b"}}, True),  # the `before` validator applied
        ({"operator": {"version": "v25.10.0"}}, True),  # the `after` validator passes
        ({"operator": {"version": "x"}}, False),  # ... or raises: pydantic words the error
        ({"max_file_bytes": 0}, False),  # gt
        ({"max_file_bytes": True}, False),  # a bool is no int in strict mode
        ({"max_file_bytes": 2.0}, False),
        ({"rules": {"GPU010": {"severity": "info"}}}, False),  # an enum: lax
        ({"rules": {"GPU010": {"params": {"scheduler_version": "1.30"}}}}, True),
        ({"clusters": {"a": {"inventory": ["n.yaml"]}}}, False),  # `paths` is required
        ({"clusters": {"a": {"paths": []}}}, False),  # min_length
        ({"exclude": ("a",)}, False),  # a tuple: not what a reader gives
        # other container classes are pydantic's (one may read otherwise than it stores)
        (collections.OrderedDict(matrix="m.csv"), False),
        ({"exclude": collections.UserList(["a"])}, False),
        ({"operator": collections.defaultdict(list, version="v25.10.0")}, False),
        ({"source": "x.yaml"}, False),  # an internal field is no key
        ({1: "a"}, False),
    ],
)
def test_plain_validate_takes_plain_values_only(data, taken):
    from gpudrv_check.core.validated import plain_validate

    plain = plain_validate(Config, data)
    assert (plain is not None) is taken
    if taken:
        assert plain == _full(Config, data)
