"""core/validated.py: dataclasses that pydantic validates when a person wrote them, and that are
rebuilt without it from what was validated before (the config: read/config.py)."""

from __future__ import annotations

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
