"""Records: dataclasses whose methods are made when first used.

`dataclasses.dataclass` writes the source of `__init__`, `__repr__`, `__eq__`, `__hash__` and,
for a frozen class, `__setattr__` and `__delattr__`, and compiles each one as the class is
created: 821 compilations for the 180 dataclasses a `check` imports (ours and pydantic's),
about a quarter of the start-up of a small repo's run, although a run calls about one in eight
of those methods (`check examples/lab`: 95 `__init__`, 9 `__hash__`, one `__eq__`, one
`__repr__`).

`record` takes the same options as the dataclasses we write (`frozen`, `slots`, `eq`,
`kw_only`, `repr`) and gives a class that behaves like the dataclass would (the same fields,
`dataclasses.fields`/`replace`/`asdict`, `__match_args__`, slots, the hash and equality rules
of the dataclass documentation, `FrozenInstanceError`, `__post_init__`), with two differences
nobody should see: `__init__` binds its arguments in Python for the class's first few instances
and is then written and compiled (it has to be generated code for the classes a run makes
thousands of: it is the hottest method of a run; most classes are made a few times, and
compiling theirs cost more than making them), and `__repr__`, `__eq__`,
`__hash__`, `__setattr__` and `__delattr__` are ordinary functions over the field names, made
without compiling anything. The standard `dataclass` still collects the fields and builds the
slotted class; it is only asked not to generate methods.

tests/core/test_records.py checks each behaviour against `dataclasses.dataclass` itself.
"""

from __future__ import annotations

import abc
import dataclasses
import re
import reprlib
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_kwargs: Any) -> Callable[[Any], Any]:
        return lambda decorator: decorator


_T = TypeVar("_T", bound=type)


class _FactorySentinel:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _FactorySentinel()
#: an InitVar annotation, written or as a string (`from __future__ import annotations`)
_INITVAR = re.compile(r"(?:dataclasses\.)?InitVar(?:\[|\Z)")


@overload
def record(cls: _T, /) -> _T: ...


@overload
def record(
    *,
    frozen: bool = False,
    slots: bool = False,
    eq: bool = True,
    kw_only: bool = False,
    repr: bool = True,
) -> Callable[[_T], _T]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def record(
    cls: Any = None,
    /,
    *,
    frozen: bool = False,
    slots: bool = False,
    eq: bool = True,
    kw_only: bool = False,
    repr: bool = True,  # noqa: A002 - the dataclass option's name
) -> Any:
    """A dataclass (`frozen`, `slots`, `eq`, `kw_only`, `repr` as `dataclasses.dataclass`
    takes them) whose methods cost nothing until used."""

    def wrap(cls: Any) -> Any:
        return _make(cls, frozen=frozen, slots=slots, eq=eq, kw_only=kw_only, want_repr=repr)

    return wrap if cls is None else wrap(cls)


def _make(cls: Any, *, frozen: bool, slots: bool, eq: bool, kw_only: bool, want_repr: bool) -> Any:
    body = cls.__dict__
    if frozen:
        for name in ("__setattr__", "__delattr__"):
            if name in body:
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    # the dataclasses among the bases (records or not): frozen alike, as the dataclass asks
    params = [b.__dict__["__dataclass_params__"] for b in cls.__mro__[1:] if _is_dataclass(b)]
    frozen_base = any(p.frozen for p in params)
    if params and frozen_base != frozen:
        kind, other = ("frozen", "non-frozen") if frozen else ("non-frozen", "frozen")
        raise TypeError(f"cannot inherit {kind} dataclass from a {other} one")
    own_hash = body.get("__hash__", MISSING)
    explicit_hash = not (own_hash is MISSING or (own_hash is None and "__eq__" in body))
    own = {
        name
        for name in ("__init__", "__repr__", "__eq__", "__getstate__", "__setstate__")
        if name in body
    }
    documented = bool(body.get("__doc__"))
    if not documented:  # written below; the dataclass would write it with inspect.signature
        cls.__doc__ = cls.__name__  # (a tenth of a millisecond a class, 4 ms of a start-up)
    # asked for no method; `frozen` as the bases are, for the dataclass's own inheritance check
    collected = _collect(cls, slots, kw_only)
    if collected is None:
        cls = dataclasses.dataclass(
            cls, init=False, repr=False, eq=False, frozen=frozen_base, slots=slots, kw_only=kw_only
        )
    else:
        cls = collected
    for name, value in cls.__dict__.get("__dataclass_fields__", {}).items():
        if type(value.type) is dataclasses.InitVar or _INITVAR.match(str(value.type)):
            raise TypeError(f"record {cls.__name__}: InitVar field {name} is not supported")
    fields = dataclasses.fields(cls)
    defaulted = None
    for f in fields:
        if f.init and f.kw_only is not True:
            if f.default is not MISSING or f.default_factory is not MISSING:
                defaulted = f.name
            elif defaulted is not None:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
    # what the class is, for `dataclasses` and for the dataclasses that derive from it
    made = cls.__dict__["__dataclass_params__"]
    made.init, made.repr, made.eq, made.frozen = True, want_repr, eq, frozen
    if not documented:  # the dataclass's docstring: the class and its fields
        cls.__doc__ = f"{cls.__name__}({', '.join(f.name for f in fields if f.init)})"
    if "__init__" not in own:
        cls.__init__ = _lazy_init(cls, fields, frozen)
    if want_repr and "__repr__" not in own:
        cls.__repr__ = _repr(tuple(f.name for f in fields if f.repr))
    if eq:
        compared = tuple(f.name for f in fields if f.compare)
        if "__eq__" not in own:
            cls.__eq__ = _eq(compared)
        if not explicit_hash:
            if frozen:
                hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
                cls.__hash__ = _hash(hashed)
            else:
                cls.__hash__ = None
    if frozen:
        names = frozenset(f.name for f in fields)
        cls.__setattr__, cls.__delattr__ = _frozen(cls, names)
        if slots:  # what the class and its subclasses pickle and copy (their own fields)
            if "__getstate__" not in own:
                cls.__getstate__ = _getstate
            if "__setstate__" not in own:
                cls.__setstate__ = _setstate
    # methods added after the dataclass looked may be the abstract ones a base declared
    abc.update_abstractmethods(cls)
    return cls


#: `dataclasses`' own marks: an ordinary field's type (`Field._field_type`), and the options
#: object a dataclass holds (`__dataclass_params__`), copied from one made by `dataclass`
_ORDINARY = dataclasses._FIELD  # type: ignore[attr-defined]
_PARAMS_MADE: Any = dataclasses.dataclass(
    type("_Made", (), {"__doc__": "-"}), init=False, slots=True
)
_PARAMS = _PARAMS_MADE.__dict__["__dataclass_params__"]
#: whether `dataclass` leaves the first class's `__weakref__` descriptor in a slotted one (it
#: has dropped it since 3.11.3, gh-102069)
_KEEPS_WEAKREF = "__weakref__" in _PARAMS_MADE.__dict__
#: `dataclasses._MODULE_IDENTIFIER_RE`: how a string annotation names what it annotates with
_ANNOTATION_HEAD = re.compile(r"^(?:\s*(\w+)\s*\.)?\s*(\w+)")
_SPECIAL_WORDS = ("ClassVar", "InitVar", "KW_ONLY")


def _collect(cls: Any, slots: bool, kw_only: bool) -> Any:
    """What `dataclasses.dataclass(cls, init=False, repr=False, eq=False, slots=slots,
    kw_only=kw_only)` makes of `cls` (fields, defaults, `__match_args__`, `__replace__` since
    3.13, slots), without its per-field checks for the annotations only it handles; None when
    the class has one of those (a ClassVar, InitVar or KW_ONLY annotation, or one that may name
    them: the words, or a name bound to them in the class's module), an annotation that is not
    a string (every module of ours defers them) or not evaluated yet (3.14), a Field without
    annotation or held by a base that is no dataclass, slots over a base other than `object`,
    or `__slots__` of its own: `dataclass` does it. About a quarter of the time `dataclass`
    takes (a class of six fields: 25 against 95-115 µs; 150 classes a run);
    tests/core/test_records.py compares the two on Python 3.10 to 3.13."""
    body = cls.__dict__
    if "__annotations__" not in body and "__annotate__" in body:
        return None  # annotations evaluated when asked (3.14, without the future import)
    annotations = body.get("__annotations__", {})
    if slots and (cls.__bases__ != (object,) or "__slots__" in body):
        return None
    module = sys.modules.get(cls.__module__)
    namespace = module.__dict__ if module is not None else {}
    for text in annotations.values():
        if text.__class__ is not str or any(word in text for word in _SPECIAL_WORDS):
            return None
        head = _ANNOTATION_HEAD.match(text)
        if head is not None and _special(namespace.get(head.group(2))):
            return None
    if any(isinstance(v, dataclasses.Field) and k not in annotations for k, v in body.items()):
        return None  # `dataclass` says what is wrong
    if any(
        isinstance(getattr(cls, k, None), dataclasses.Field)
        for k in annotations.keys() - body.keys()
    ):
        return None  # a Field a base that is no dataclass holds: `dataclass` deals with it
    fields: dict[str, dataclasses.Field[Any]] = {}
    for base in cls.__mro__[-1:0:-1]:
        inherited = getattr(base, "__dataclass_fields__", None)
        if inherited is not None:
            fields.update(inherited)
    own = []
    for name, text in annotations.items():
        default = getattr(cls, name, MISSING)
        if isinstance(default, dataclasses.Field):
            made = default
        else:
            if isinstance(default, types.MemberDescriptorType):
                default = MISSING  # a slot of a base: no default
            made = dataclasses.field(default=default)  # type: ignore[arg-type]
        made.name, made.type = name, text
        made._field_type = _ORDINARY  # type: ignore[attr-defined]
        if made.kw_only is MISSING:
            made.kw_only = kw_only
        if _MUTABLE(made.default):
            raise ValueError(
                f"mutable default {type(made.default)} for field {name} is not allowed: "
                "use default_factory"
            )
        fields[name] = made
        own.append(made)
    cls.__dataclass_fields__ = fields
    params = object.__new__(_PARAMS.__class__)
    for attribute in _PARAM_NAMES:
        setattr(params, attribute, getattr(_PARAMS, attribute))
    options = {"kw_only": kw_only, "slots": slots}  # kept by the options object since 3.12
    for attribute in options.keys() & set(_PARAM_NAMES):
        setattr(params, attribute, options[attribute])
    cls.__dataclass_params__ = params
    for f in own:  # a class attribute holding a Field holds its default (or is no more)
        if isinstance(body.get(f.name), dataclasses.Field):
            if f.default is MISSING:
                delattr(cls, f.name)
            else:
                setattr(cls, f.name, f.default)
    if _REPLACE and "__replace__" not in body:
        cls.__replace__ = _replace
    if "__match_args__" not in body:
        matched = tuple(f.name for f in fields.values() if f.init and not f.kw_only)
        cls.__match_args__ = matched  # type: ignore[misc]
    if slots:
        names = dict(body)
        names["__slots__"] = tuple(fields)
        for name in fields:
            names.pop(name, None)
        names.pop("__dict__", None)
        if not _KEEPS_WEAKREF:
            names.pop("__weakref__", None)
        qualname = cls.__qualname__
        cls = type(cls)(cls.__name__, cls.__bases__, names)
        cls.__qualname__ = qualname
    return cls


def _unhashable(value: Any) -> bool:
    return value.__class__.__hash__ is None


def _listed_mutable(value: Any) -> bool:
    return isinstance(value, (list, dict, set))


#: the defaults `dataclass` refuses as mutable: any unhashable one since 3.11, a list, dict or
#: set before
_MUTABLE = _unhashable if sys.version_info >= (3, 11) else _listed_mutable
#: `dataclass` gives every class `__replace__` (what `copy.replace` calls) since 3.13
_REPLACE = sys.version_info >= (3, 13)


def _replace(self: Any, /, **changes: Any) -> Any:
    return dataclasses.replace(self, **changes)


def _special(value: Any) -> bool:
    """Whether a name of the class's module stands for what `dataclass` treats apart."""
    return (
        value is typing.ClassVar
        or value is dataclasses.InitVar
        or value is dataclasses.KW_ONLY
        or getattr(value, "__origin__", None) is typing.ClassVar
        or isinstance(value, dataclasses.InitVar)
    )


#: the attributes of `dataclasses`' options object (six in 3.11, ten in 3.12)
_PARAM_NAMES = tuple(getattr(_PARAMS.__class__, "__slots__", None) or vars(_PARAMS))


def _is_dataclass(cls: type) -> bool:
    return "__dataclass_fields__" in cls.__dict__ and "__dataclass_params__" in cls.__dict__


def _getter(names: tuple[str, ...]) -> Callable[[Any], Any]:
    """A function giving the values of `names`: a tuple of them, but the value itself when
    there is one name (`_eq` and `_hash` make it a tuple)."""
    if not names:
        return lambda _obj: ()
    return attrgetter(*names)


def _repr(names: tuple[str, ...]) -> Callable[[Any], str]:
    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({inner})"

    return __repr__


def _eq(names: tuple[str, ...]) -> Callable[[Any, Any], Any]:
    """`__eq__` as the dataclass writes it: the tuples of compared fields, for an object of
    the very same class."""
    values = _getter(names)
    if len(names) == 1:

        def __eq__(self: Any, other: Any) -> Any:
            if other.__class__ is self.__class__:
                return (values(self),) == (values(other),)
            return NotImplemented

    else:

        def __eq__(self: Any, other: Any) -> Any:
            if other.__class__ is self.__class__:
                return values(self) == values(other)
            return NotImplemented

    return __eq__


def _hash(names: tuple[str, ...]) -> Callable[[Any], int]:
    """`__hash__` as the dataclass writes it: the hash of the tuple of hashed fields."""
    values = _getter(names)
    if len(names) == 1:

        def __hash__(self: Any) -> int:
            return hash((values(self),))

    else:

        def __hash__(self: Any) -> int:
            return hash(values(self))

    return __hash__


def _frozen(cls: Any, names: frozenset[str]) -> tuple[Callable[..., None], Callable[..., None]]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __setattr__, __delattr__


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(dataclasses.fields(self), state, strict=False):
        object.__setattr__(self, f.name, value)


#: the instances a record makes with its generic `__init__` (`_Binding`) before it compiles
#: its own: a class made a few times in a run is never compiled (a small repo's check makes 51
#: of its 66 records fewer times than this: 7 ms of compiling, 4 % of the run), and a class
#: made thousands of times is compiled after these few, as before
GENERIC_CALLS = 32


def _lazy_init(cls: Any, fields: tuple[dataclasses.Field[Any], ...], frozen: bool) -> Any:
    binding: list[_Binding] = []  # made by the first call
    made = 0

    def __init__(self: Any, /, *args: Any, **kwargs: Any) -> None:
        nonlocal made
        made += 1
        if not binding:
            binding.append(_Binding(cls, fields, frozen))
        if made <= GENERIC_CALLS and binding[0].bind(self, args, kwargs):
            return
        real = _compile_init(cls, binding[0])
        if cls.__dict__.get("__init__") is __init__:
            type.__setattr__(cls, "__init__", real)
        real(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__module__ = cls.__module__
    return __init__


# what `_Binding` does with each field, in field order (the compiled `__init__`'s lines)
_PARAMETER, _DEFAULT, _FACTORY_PARAMETER, _FACTORY_ONLY, _DEFAULT_ONLY = range(5)


class _Binding:
    """The compiled `__init__`'s work without compiling it: the arguments bound to the fields
    as Python binds them to that function's parameters, then each field assigned in order
    (its argument, its default, a new value of its factory) and `__post_init__` called.
    `bind` takes only calls whose binding is plain (no missing, unknown, repeated or extra
    argument) and touches nothing otherwise: the compiled `__init__` then raises what the
    dataclass's would."""

    __slots__ = ("frozen", "keyword", "names", "positional", "post", "required", "set", "steps")

    def __init__(self, cls: Any, fields: tuple[dataclasses.Field[Any], ...], frozen: bool):
        slots = "__slots__" in cls.__dict__
        positional: list[str] = []
        keyword: list[str] = []
        names: set[str] = set()
        required: set[str] = set()
        steps: list[tuple[str, int, Any]] = []
        for f in fields:
            if f.init:
                names.add(f.name)
                (keyword if f.kw_only is True else positional).append(f.name)
                if f.default is not MISSING:
                    steps.append((f.name, _DEFAULT, f.default))
                elif f.default_factory is not MISSING:
                    steps.append((f.name, _FACTORY_PARAMETER, f.default_factory))
                else:
                    steps.append((f.name, _PARAMETER, None))
                    required.add(f.name)
            elif f.default_factory is not MISSING:
                steps.append((f.name, _FACTORY_ONLY, f.default_factory))
            elif f.default is not MISSING and slots:
                # (without slots the class attribute holding the default is what is read, as
                # in the dataclass's __init__)
                steps.append((f.name, _DEFAULT_ONLY, f.default))
        self.positional, self.keyword = tuple(positional), tuple(keyword)
        self.frozen = frozen
        self.names = frozenset(names)
        self.required = frozenset(required)
        self.steps = tuple(steps)
        self.set = object.__setattr__ if frozen else setattr
        self.post = hasattr(cls, "__post_init__")

    def bind(self, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        positional = self.positional
        if len(args) > len(positional):
            return False
        given = dict(zip(positional, args, strict=False))  # fewer args: the rest by name
        for name, value in kwargs.items():
            if name in given or name not in self.names:
                return False
            given[name] = value
        if not self.required <= given.keys():
            return False
        put = self.set
        for name, how, extra in self.steps:
            if how == _PARAMETER:
                put(obj, name, given[name])
            elif how == _DEFAULT:
                put(obj, name, given[name] if name in given else extra)
            elif how == _FACTORY_PARAMETER:
                put(obj, name, given[name] if name in given else extra())
            elif how == _FACTORY_ONLY:
                put(obj, name, extra())
            else:
                put(obj, name, extra)
        if self.post:
            obj.__post_init__()
        return True


def _compile_init(cls: Any, binding: _Binding) -> Any:
    """Write and compile the class's `__init__` from its binding's steps: parameters in field
    order (keyword-only ones after `*`), each default or factory, the assignments (through
    `object.__setattr__` for a frozen class) and the call of `__post_init__`."""
    me = "self" if "self" not in binding.names else "__record_self__"
    env: dict[str, Any] = {"__record_factory__": _FACTORY, "__record_object__": object}
    param: dict[str, str] = {}
    lines: list[str] = []
    for name, how, extra in binding.steps:
        if how == _PARAMETER:
            param[name] = value = name
        elif how == _DEFAULT:
            env[f"__default_{name}__"] = extra
            param[name], value = f"{name}=__default_{name}__", name
        elif how == _FACTORY_PARAMETER:
            env[f"__factory_{name}__"] = extra
            param[name] = f"{name}=__record_factory__"
            value = f"__factory_{name}__() if {name} is __record_factory__ else {name}"
        elif how == _FACTORY_ONLY:
            env[f"__factory_{name}__"] = extra
            value = f"__factory_{name}__()"
        else:
            env[f"__default_{name}__"] = extra
            value = f"__default_{name}__"
        if binding.frozen:
            lines.append(f"  __record_object__.__setattr__({me}, {name!r}, {value})")
        else:
            lines.append(f"  {me}.{name} = {value}")
    if binding.post:
        lines.append(f"  {me}.__post_init__()")
    params = [me, *(param[name] for name in binding.positional)]
    if binding.keyword:
        params += ["*", *(param[name] for name in binding.keyword)]
    source = (
        f"def __make__({', '.join(env)}):\n"
        f" def __init__({', '.join(params)}):\n"
        + ("\n".join(f" {line}" for line in lines) or "  pass")
        + "\n return __init__\n"
    )
    namespace: dict[str, Any] = {}
    exec(source, {}, namespace)  # noqa: S102 - text written here from field names
    init = namespace["__make__"](**env)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    return init
