"""`record` (gpudrv_check/core/records.py) against `dataclasses.dataclass` itself.

Each test builds the same class body twice, once with the standard decorator and once with
`record`, and asserts that instances behave alike: construction, defaults and factories,
`__post_init__`, repr, equality, hashing, frozenness, slots, pickling, copying and the
`dataclasses` functions. What the Python documentation of `dataclasses` specifies is the
reference (the hash table under "unsafe_hash", "frozen instances", "slots").
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import KW_ONLY, FrozenInstanceError, field
from typing import Any, ClassVar

import pytest

from gpudrv_check.core import records
from gpudrv_check.core.records import record

BOTH = [
    pytest.param(dataclasses.dataclass, id="dataclass"),
    pytest.param(record, id="record"),
]


def _shapes(deco: Any) -> dict[str, type]:
    """A family of class shapes, made with `deco` (dataclass or record)."""

    @deco
    class Plain:
        a: int
        b: str = "x"
        c: list[int] = field(default_factory=list)

    @deco(frozen=True)
    class Frozen:
        a: int
        b: tuple[int, ...] = ()
        note: str = field(default="n", compare=False)
        hidden: int = field(default=0, repr=False)

    @deco(frozen=True, slots=True)
    class FrozenSlots:
        a: int
        b: str = "y"

    @deco(slots=True)
    class Slots:
        a: int
        b: dict[str, int] = field(default_factory=dict)

    @deco(slots=True, kw_only=True)
    class KwOnly:
        a: int
        b: int = 2

    @deco(eq=False)
    class Identity:
        a: int

    @deco
    class Post:
        a: int
        doubled: int = field(default=0, init=False)
        seen: list[int] = field(default_factory=list, init=False)

        def __post_init__(self) -> None:
            self.doubled = self.a * 2

    @deco(frozen=True)
    class OwnHash:
        a: int

        def __hash__(self) -> int:
            return 7

    @deco(frozen=True)
    class OwnEq:
        a: int
        b: int

        def __eq__(self, other: object) -> bool:
            return isinstance(other, OwnEq) and self.a == other.a

    @deco
    class Empty:
        pass

    @deco(frozen=True)
    class One:
        a: Any

    @deco
    class Mixed:
        a: int
        b: int = field(default=1, kw_only=True)
        c: int = 3

    # what records.py `_collect` leaves to `dataclass`: a ClassVar, the KW_ONLY marker, a
    # name of the module bound to ClassVar, slots over a base
    @deco
    class WithClassVar:
        a: int
        shared: ClassVar[int] = 3
        b: str = field(default="m", metadata={"unit": "s"})

    @deco
    class Marked:
        a: int
        _: KW_ONLY
        b: int = 0

    @deco(frozen=True)
    class Aliased:
        a: int
        counter: Counted = 0

    @deco
    class Derived(Plain):
        d: int = 4
        b: str = "over"

    @deco(slots=True)
    class SlotsOverBase(Plain):
        e: int = 5

    @deco(frozen=True)
    class FrozenDerived(Frozen):
        c: int = 7

    return {k: v for k, v in locals().items() if isinstance(v, type)}


Counted = ClassVar[int]  # `dataclass` takes `counter: Counted` for a ClassVar: it looks it up


STD = _shapes(dataclasses.dataclass)
OURS = _shapes(record)


def _pair(name: str) -> tuple[type, type]:
    return STD[name], OURS[name]


def _outcome(fn: Any) -> Any:
    try:
        return ("ok", fn())
    except Exception as err:  # the kind and text of the error are compared
        return (type(err).__name__, str(err).replace("record", "").split(".")[-1])


CALLS = [
    ("Plain", (1,), {}),
    ("Plain", (1, "z"), {}),
    ("Plain", (1,), {"c": [5]}),
    ("Plain", (), {}),
    ("Plain", (1, "z", [1], 9), {}),
    ("Plain", (1,), {"d": 2}),
    ("Frozen", (1, (2,), "note", 4), {}),
    ("FrozenSlots", (1,), {"b": "q"}),
    ("Slots", (1,), {}),
    ("KwOnly", (), {"a": 1}),
    ("KwOnly", (1,), {}),
    ("Identity", (3,), {}),
    ("Post", (4,), {}),
    ("Post", (4,), {"doubled": 1}),
    ("Empty", (), {}),
    ("One", ("v",), {}),
    ("Mixed", (1, 2), {"b": 5}),
    ("Mixed", (1, 2, 3), {}),
    ("OwnHash", (1,), {}),
    ("OwnEq", (1, 2), {}),
    ("WithClassVar", (1,), {}),
    ("WithClassVar", (1, "n"), {}),
    ("Marked", (1,), {"b": 2}),
    ("Marked", (1, 2), {}),
    ("Aliased", (1,), {}),
    ("Derived", (1, "q", [2], 3), {}),
    ("Derived", (1,), {}),
    ("SlotsOverBase", (1,), {"e": 6}),
    ("FrozenDerived", (1,), {}),
    ("FrozenDerived", (1, (2,), "n", 3, 9), {}),
]


def _builds(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    try:
        cls(*args, **kwargs)
    except TypeError:
        return False
    return True


def _fields(obj: Any) -> list[tuple[str, Any]]:
    return [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)]


@pytest.mark.parametrize("generic", [True, False], ids=["generic init", "compiled init"])
@pytest.mark.parametrize(("name", "args", "kwargs"), CALLS)
def test_construction_matches_the_dataclass(name, args, kwargs, generic, monkeypatch):
    if not generic:  # every instance made by the compiled __init__
        monkeypatch.setattr(records, "GENERIC_CALLS", 0)
    std, ours = STD[name], _shapes(record)[name]
    a = _outcome(lambda: _fields(std(*args, **kwargs)))
    b = _outcome(lambda: _fields(ours(*args, **kwargs)))
    assert a == b
    if a[0] == "ok":
        # repr names the class by its qualified name, which differs only in the factory
        assert repr(std(*args, **kwargs)) == repr(ours(*args, **kwargs))


def test_defaults_from_a_factory_are_new_for_each_instance():
    plain = OURS["Plain"]
    one, two = plain(1), plain(2)
    one.c.append(1)
    assert two.c == [] and one.c == [1]
    post = OURS["Post"]
    assert post(1).seen is not post(1).seen


@pytest.mark.parametrize("name", sorted(STD))
def test_equality_and_hashing_follow_the_dataclass_rules(name):
    std, ours = _pair(name)
    args, kwargs = next((a, k) for n, a, k in CALLS if n == name and _builds(std, a, k))
    s1, s2 = std(*args, **kwargs), std(*args, **kwargs)
    o1, o2 = ours(*args, **kwargs), ours(*args, **kwargs)
    assert (s1 == s2) == (o1 == o2)
    assert (s1 != s2) == (o1 != o2)
    assert (std.__hash__ is None) == (ours.__hash__ is None)
    if std.__hash__ is not None:
        assert (hash(o1) == hash(o2)) == (hash(s1) == hash(s2))
        if std.__hash__ is not object.__hash__:
            # a generated hash is the hash of the tuple of hashed fields, as the dataclass's
            assert hash(o1) == hash(s1)
    assert o1 != object() and (o1 == object()) is False


def test_compare_false_fields_are_left_out_of_eq_and_hash():
    frozen = OURS["Frozen"]
    assert frozen(1, (), "a") == frozen(1, (), "b")
    assert hash(frozen(1, (), "a")) == hash(frozen(1, (), "b"))
    assert frozen(1) != frozen(2)
    assert hash(OURS["One"]("v")) == hash(STD["One"]("v")) == hash(("v",))


def test_a_subclass_instance_is_not_equal():
    base = OURS["Plain"]

    class Sub(base):  # type: ignore[misc, valid-type]
        pass

    assert base(1) != Sub(1)
    assert Sub(1) == Sub(1)


@pytest.mark.parametrize("deco", BOTH)
def test_frozen_instances_refuse_assignment_and_deletion(deco):
    shapes = _shapes(deco)
    for name in ("Frozen", "FrozenSlots"):
        obj = shapes[name](1)
        with pytest.raises(FrozenInstanceError, match="cannot assign to field 'a'"):
            obj.a = 2
        with pytest.raises(FrozenInstanceError, match="cannot delete field 'a'"):
            del obj.a
        assert obj.a == 1
    # a name that is no field: the dataclass's frozen slotted class raises TypeError from a
    # super() call (CPython's own bug with slots=True), record raises FrozenInstanceError
    with pytest.raises(FrozenInstanceError):
        OURS["FrozenSlots"](1).other = 1
    with pytest.raises(FrozenInstanceError):
        OURS["Frozen"](1).other = 1


@pytest.mark.parametrize("deco", BOTH)
def test_slots_pickle_copy_and_replace(deco):
    shapes = _shapes(deco)
    for name, args in (("FrozenSlots", (1, "q")), ("Slots", (1, {"k": 1})), ("Frozen", (1, (2,)))):
        cls = shapes[name]
        obj = cls(*args)
        assert copy.copy(obj) == obj and copy.deepcopy(obj) == obj
        assert dataclasses.replace(obj, a=5).a == 5
        assert dataclasses.asdict(obj)["a"] == 1
        if "Slots" in name:
            assert not hasattr(obj, "__dict__") and "a" in cls.__slots__
    # pickling needs importable classes: module-level records below
    for obj in (_PickledFrozenSlots(1, "q"), _PickledFrozen(2), _PickledSlots(3)):
        assert pickle.loads(pickle.dumps(obj)) == obj


@record(frozen=True, slots=True)
class _PickledFrozenSlots:
    a: int
    b: str = "y"


@record(frozen=True)
class _PickledFrozen:
    a: int


@record(slots=True)
class _PickledSlots:
    a: int


def _field_facts(f: dataclasses.Field) -> tuple:
    return (
        f.name,
        f.type,
        f.default,
        f.default_factory,
        f.init,
        f.repr,
        f.hash,
        f.compare,
        dict(f.metadata),
        f.kw_only,
        f._field_type,  # type: ignore[attr-defined]
    )


@pytest.mark.parametrize("name", sorted(STD))
def test_the_dataclasses_functions_see_the_same_class(name):
    std, ours = _pair(name)
    assert dataclasses.is_dataclass(ours)
    assert [_field_facts(f) for f in dataclasses.fields(std)] == [
        _field_facts(f) for f in dataclasses.fields(ours)
    ]
    # every field dataclasses keeps (ClassVars too), and what the class holds under its name
    assert [_field_facts(f) for f in std.__dataclass_fields__.values()] == [
        _field_facts(f) for f in ours.__dataclass_fields__.values()
    ]
    for f in std.__dataclass_fields__.values():
        assert repr(getattr(std, f.name, "absent")) == repr(getattr(ours, f.name, "absent"))
    assert getattr(std, "__match_args__", None) == getattr(ours, "__match_args__", None)
    assert std.__dict__.get("__slots__") == ours.__dict__.get("__slots__")
    # every name the class holds (methods made or not: `__replace__` since 3.13, the pickling
    # methods of a frozen slotted class...), though records write their own methods
    assert sorted(std.__dict__) == sorted(ours.__dict__)
    assert std.__qualname__ == ours.__qualname__
    assert [b.__qualname__ for b in std.__mro__] == [b.__qualname__ for b in ours.__mro__]
    std_params, our_params = std.__dataclass_params__, ours.__dataclass_params__
    for attribute in records._PARAM_NAMES:
        if attribute != "init":  # records make their own __init__: dataclass was asked for none
            assert getattr(std_params, attribute) == getattr(our_params, attribute), attribute


def test_only_the_annotations_dataclass_must_read_are_left_to_it(monkeypatch):
    """records.py `_collect` does the dataclass's work for the plain classes (every record of
    ours but the subclasses of frozen ones) and hands the others to `dataclass`."""
    left = []
    real = dataclasses.dataclass

    def spy(cls: type, **options: Any) -> Any:
        left.append(cls.__name__)
        return real(cls, **options)

    monkeypatch.setattr(records.dataclasses, "dataclass", spy)
    _shapes(record)
    assert sorted(left) == ["Aliased", "Marked", "SlotsOverBase", "WithClassVar"]


def test_init_is_generic_for_a_few_instances_then_compiled():
    """A record's first `GENERIC_CALLS` instances are made by binding the arguments in
    Python (records.py `_Binding`: most classes of a run are made a few times, and compiling
    their `__init__` cost more than making them); the next one compiles the class's own."""

    @record(frozen=True)
    class Later:
        a: int
        b: list[int] = field(default_factory=list)

    stub = Later.__dict__["__init__"]
    made = [Later(i) for i in range(records.GENERIC_CALLS)]
    assert Later.__dict__["__init__"] is stub
    assert [m.a for m in made] == list(range(records.GENERIC_CALLS)) and made[0].b is not made[1].b
    Later(-1)
    real = Later.__dict__["__init__"]
    assert real is not stub
    assert real.__code__.co_varnames[:2] == ("self", "a")
    Later(2)
    assert Later.__dict__["__init__"] is real

    class Child(Later):  # an undecorated subclass uses the base's
        pass

    assert Child(3).a == 3


def test_a_call_the_generic_init_does_not_bind_compiles_the_init_at_once():
    """An argument missing, unknown, given twice or in excess: the compiled `__init__` says
    so, as the dataclass's does (test_construction_matches_the_dataclass compares the texts)."""

    @record
    class Once:
        a: int

    stub = Once.__dict__["__init__"]
    with pytest.raises(TypeError):
        Once(1, a=2)
    assert Once.__dict__["__init__"] is not stub
    assert Once(a=4).a == 4


@pytest.mark.parametrize("deco", BOTH)
def test_class_definition_errors_match(deco):
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        @deco
        class Bad:
            a: int = 1
            b: int

    with pytest.raises(TypeError, match="Cannot overwrite attribute __setattr__"):

        @deco(frozen=True)
        class OwnSet:
            a: int

            def __setattr__(self, name: str, value: Any) -> None:
                pass

    @deco
    class Thawed:
        a: int

    with pytest.raises(TypeError, match="cannot inherit frozen dataclass from a non-frozen one"):

        @deco(frozen=True)
        class Cold(Thawed):
            b: int = 0

    with pytest.raises(ValueError, match="mutable default"):

        @deco
        class Shared:
            a: list[int] = []  # noqa: RUF012

    class Mixin:
        b = field(default=3)

    @deco
    class Mixed(Mixin):  # a Field of a base that is no dataclass: its default, as dataclass
        b: int

    assert Mixed().b == 3 and Mixed.b == 3

    class Bare:
        c = field()

    with pytest.raises(AttributeError):

        @deco
        class FromBare(Bare):  # dataclass deletes the Field: the base holds it (its error)
            c: int


def test_an_unhashable_default_is_refused_as_dataclass_refuses_it():
    """`dataclass` refuses any unhashable default since 3.11 (a list, dict or set before)."""

    def make(deco: Any) -> Any:
        def build() -> Any:
            @deco
            class Buffered:
                a: bytearray = bytearray(b"x")  # noqa: RUF009

            return Buffered().a

        return _outcome(build)

    assert make(record) == make(dataclasses.dataclass)


def test_a_field_named_self(monkeypatch):
    @record
    class Odd:
        self: int

    assert Odd(1).self == 1
    assert Odd(self=2).self == 2  # the generic __init__ takes its instance positionally only
    monkeypatch.setattr(records, "GENERIC_CALLS", 0)
    assert Odd(self=3).self == 3 and Odd(4).self == 4  # and the compiled one, by name


def test_recursive_repr_is_cut():
    @record
    class Node:
        child: Any = None

    n = Node()
    n.child = n
    assert repr(n).endswith("(child=...)")


# found by review: a frozen slotted record's state is its own fields, in a subclass too
@record(frozen=True, slots=True)
class _StateBase:
    x: int


@record(frozen=True)
class _StateChild(_StateBase):
    y: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class _StdStateBase:
    x: int


@dataclasses.dataclass(frozen=True)
class _StdStateChild(_StdStateBase):
    y: int = 0


def test_a_subclass_of_a_frozen_slotted_record_copies_and_pickles_its_own_fields():
    for cls in (_StateChild, _StdStateChild):
        obj = cls(1, 2)
        assert copy.copy(obj).y == 2 and copy.deepcopy(obj).y == 2
        assert pickle.loads(pickle.dumps(obj)) == obj


@pytest.mark.parametrize("base_frozen", [False, True])
@pytest.mark.parametrize("child_frozen", [False, True])
@pytest.mark.parametrize(
    ("base_deco", "child_deco"),
    [(record, dataclasses.dataclass), (dataclasses.dataclass, record), (record, record)],
)
def test_records_and_dataclasses_derive_from_each_other_as_dataclasses_do(
    base_deco, child_deco, base_frozen, child_frozen
):
    def make(base_deco_, child_deco_):
        @base_deco_(frozen=base_frozen)
        class Base:
            a: int

        def child():
            @child_deco_(frozen=child_frozen)
            class Child(Base):
                b: int = 0

            return Child

        return Base, child

    _, std_child = make(dataclasses.dataclass, dataclasses.dataclass)
    _, our_child = make(base_deco, child_deco)
    expected = _outcome(lambda: (std_child()(1, 2).b, dataclasses.fields(std_child())[1].name))
    got = _outcome(lambda: (our_child()(1, 2).b, dataclasses.fields(our_child())[1].name))
    assert got == expected
    if expected[0] == "ok":
        params = our_child().__dataclass_params__
        assert (params.frozen, params.init, params.eq) == (child_frozen, True, True)


def test_methods_a_base_declares_abstract_are_provided():
    import abc

    class Shape(abc.ABC):
        @abc.abstractmethod
        def __repr__(self) -> str: ...

    for deco in (dataclasses.dataclass, record):

        @deco
        class Square(Shape):
            side: int

        assert "side=3" in repr(Square(3))


def test_init_is_of_the_class_module_and_defaults_stay_on_the_class():
    @record
    class Defaults:
        a: int
        later: int = field(default=5, init=False)

    obj = Defaults(1)
    assert type(obj).__init__.__module__ == __name__
    assert obj.later == 5 and "later" not in vars(obj)  # as the dataclass: the class attribute
    assert Defaults.__doc__ == "Defaults(a)"


def test_an_undocumented_record_is_made_without_inspecting_its_signature(monkeypatch):
    """The dataclass documents a class without a docstring by its signature, from
    `inspect.signature` (a tenth of a millisecond a class, 4 ms of a start-up's 42 records);
    a record writes its own (`Name(fields)`), so it never asks."""
    import inspect

    def refuse(*_args, **_kwargs):
        raise AssertionError("inspect.signature called")

    monkeypatch.setattr(inspect, "signature", refuse)

    @record(frozen=True, slots=True)
    class Plain:
        a: int
        b: str = "x"

    @record
    class Documented:
        """Said here."""

        a: int

    assert Plain.__doc__ == "Plain(a, b)" and Documented.__doc__ == "Said here."
    assert Plain(1) == Plain(1, "x")


def test_every_dataclass_of_the_package_is_a_record():
    """The package's classes are made with `record` (README Performance, Start-up): a class
    made with `dataclass` itself compiles its methods as it is created (model/envsubst.py's
    `Func` did, on every run that imports it). Only core/records.py calls `dataclass`."""
    import ast
    from pathlib import Path

    package = Path(records.__file__).resolve().parents[1]
    calls = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "records.py" and path.parent.name == "core":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named = (isinstance(node, ast.Name) and node.id == "dataclass") or (
                isinstance(node, ast.Attribute) and node.attr == "dataclass"
            )
            imported = isinstance(node, ast.ImportFrom) and node.module == "dataclasses"
            if named or (imported and any(a.name == "dataclass" for a in node.names)):
                calls.append(f"{path.relative_to(package)}:{node.lineno}")
    assert calls == []
