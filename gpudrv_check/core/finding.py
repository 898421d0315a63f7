"""Findings: what a rule found, where, and what to do about it."""

from __future__ import annotations

import hashlib
import re
import reprlib
from collections.abc import Callable, Iterable
from dataclasses import field, replace
from enum import Enum
from typing import Any

from gpudrv_check.core.lazy_re import lazy_compile, lazy_compile_bytes
from gpudrv_check.core.records import record
from gpudrv_check.core.scope import effective_namespace

# control, line-separator and bidi-override characters: from a hostile repo they could forge
# report lines, terminal escapes or CI annotations, or hide text ("Trojan source")
_UNPRINTABLE = lazy_compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_LINE_BREAKS = lazy_compile("\r\n|[\n\r]")
#: the numbers of a message a fingerprint leaves out (lines, columns, sizes, counts)
_DIGITS = lazy_compile("[0-9]+")
MAX_MESSAGE = 2000


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, line_breaks: str | None = None) -> str:
    """`text` with every unprintable character escaped (`\\x1b`); line breaks become
    `line_breaks` when given (messages read on as one line), else are escaped too."""
    if _UNPRINTABLE.search(text) is None:
        return text
    if line_breaks is not None:
        text = _LINE_BREAKS.sub(line_breaks, text)
    return _UNPRINTABLE.sub(_escape, text)


# what a terminal must not receive raw: `_UNPRINTABLE` but for line feed and tab
_TERMINAL_UNSAFE = lazy_compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
# the colour codes report/text.py writes itself (kept when colour is on)
_OWN_COLOUR = lazy_compile("\x1b\\[(?:0|3[136])m")


# the bytes of UTF-8 text a terminal may receive raw, but for the lead bytes of the characters
# `_TERMINAL_UNSAFE` has above ASCII (checked with the bytes that follow them)
_TERMINAL_SAFE_BYTES = bytes(range(0x20, 0x7F)) + b"\t\n" + bytes(range(0x80, 0x100))
_TERMINAL_SAFE_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n"
# the UTF-8 of those characters: C1 controls (U+0080-U+009F), then the line and paragraph
# separators and the direction marks, embeddings, overrides and isolates (U+200E-U+2069)
_C1_SECOND = frozenset(range(0x80, 0xA0))
_E2_UNSAFE = frozenset(
    bytes(pair)
    for pair in [(0x80, 0x8E), (0x80, 0x8F), *((0x80, b) for b in range(0xA8, 0xAF))]
    + [(0x81, b) for b in range(0xA6, 0xAA)]
)
# lead bytes past which a text is scanned by the expression instead (each costs a step here)
_MANY_LEADS = 4096
#: the C1 controls' UTF-8 (C2 80-9F), and the unsafe ones of U+2000-U+207F (E2 80 xx, E2 81 xx)
_C2_UNSAFE = frozenset(bytes((0xC2, b)) for b in _C1_SECOND)
_E2_UNSAFE_UTF8 = frozenset(b"\xe2" + pair for pair in _E2_UNSAFE)
#: where the characters of U+2000-U+207F start. A two-byte needle is looked for by `re`'s
#: literal search three times faster than by `bytes.find` or `in` (which keep stopping at
#: the frequent first byte: 11 against 4 ms over a 14 MB report); one byte by `memchr`
_E2_LEADS = lazy_compile_bytes(b"\xe2[\x80\x81]")
#: what the runner may read as a workflow command in a UTF-8 text (`no_runner_commands`)
_RUNNER_HASH = lazy_compile_bytes(b"#\\[")
_RUNNER_COLONS = lazy_compile_bytes(b"::")


def terminal_safe(text: str) -> bool:
    """Whether `text` holds nothing `_TERMINAL_UNSAFE` matches. A report (megabytes of it in a
    large repo) is checked on its UTF-8 bytes, several times faster than the expression's scan
    of every character: deleting the safe bytes leaves the ASCII controls, and the few other
    unsafe characters start with the bytes C2 or E2, found with `bytes.find`."""
    if text.isascii():
        return not text.encode("ascii").translate(None, _TERMINAL_SAFE_ASCII)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: unsafe, as the expression says
        return _TERMINAL_UNSAFE.search(text) is None
    return _safe_utf8(data, text)


def _safe_utf8(data: bytes, text: str) -> bool:
    """`terminal_safe` of `text` given its UTF-8 bytes `data`."""
    if data.translate(None, _TERMINAL_SAFE_BYTES):
        return False
    # the unsafe characters above ASCII are led by C2 (C1 controls) or by E2 80 and E2 81
    # (U+2000-U+207F): a report's arrows (E2 86 92) and other symbols need no look; a lead
    # is always followed by its continuation bytes (the text was encoded as UTF-8)
    looks = 0
    at = data.find(b"\xc2")
    while at >= 0:
        looks += 1
        if looks > _MANY_LEADS:  # so many: the expression scans the text instead
            return _TERMINAL_UNSAFE.search(text) is None
        if data[at : at + 2] in _C2_UNSAFE:
            return False
        at = data.find(b"\xc2", at + 2)
    for match in _E2_LEADS.finditer(data):
        looks += 1
        if looks > _MANY_LEADS:
            return _TERMINAL_UNSAFE.search(text) is None
        at = match.start()
        if data[at : at + 3] in _E2_UNSAFE_UTF8:
            return False
    return True


def terminal_bytes(text: str, colour: bool = False, commands: bool = False) -> bytes:
    """`terminal_text(text, colour, commands)` in UTF-8. A text that needs no change (a
    report, nearly always) is encoded once and checked on those bytes, which are what is
    written and cached (`check`'s reports: the stream, `marshal` and the file would each have
    encoded the text again)."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escaped by terminal_text
        return terminal_text(text, colour, commands).encode("utf-8")
    if not _safe_utf8(data, text):
        return terminal_text(text, colour, commands).encode("utf-8")
    if not commands and (_RUNNER_HASH.search(data) or _RUNNER_COLONS.search(data)):
        return no_runner_commands(text).encode("utf-8")
    return data


def terminal_text(text: str, colour: bool = False, commands: bool = False) -> str:
    """Text for a terminal: every control character escaped (`\\x1b`) but line feeds and
    tabs, so repo text cannot clear the screen, set the clipboard (OSC 52) or rewrite a line
    (CR); with `colour`, the report's own colour codes are kept. A terminal is also a CI log:
    no line of it reads as a GitHub Actions workflow command (`no_runner_commands`), unless
    `commands`: the text is the github format, whose own lines are commands and which makes
    every other line safe itself (report/github.py `log_line`)."""
    guard = _keep if commands else no_runner_commands
    if terminal_safe(text):
        return guard(text)
    if not colour:
        return guard(_TERMINAL_UNSAFE.sub(_escape, text))
    pieces = _OWN_COLOUR.split(text)
    codes = _OWN_COLOUR.findall(text)
    out = [_TERMINAL_UNSAFE.sub(_escape, pieces[0])]
    for code, piece in zip(codes, pieces[1:], strict=True):
        out += [code, _TERMINAL_UNSAFE.sub(_escape, piece)]
    return guard("".join(out))


def _keep(text: str) -> str:
    return text


#: a line whose first characters but blanks are `::` (actions/runner ActionCommand.TryParseV2
#: trims the line's start, then wants `::` first): blanks are what .NET's TrimStart trims
#: (char.IsWhiteSpace: tab, the space, U+00A0, U+3000 and the other Zs), here every
#: whitespace character but the line feed that ends the line
_RUNNER_V2 = lazy_compile(r"^([^\S\n]*):(?=:)", re.MULTILINE)


def no_runner_commands(text: str) -> str:
    """`text` (printable but for line feeds and tabs) with nothing the GitHub Actions runner
    reads as a workflow command, whatever repo text it quotes: the runner parses every line of
    a step's output. A `::` that starts a line but for blanks is written `\\x3a:`
    (`TryParseV2`), and every `#[` `#\\x5b`: the legacy `TryParse` finds `##[` anywhere in a
    line with `string.IndexOf(string)`, a culture-aware comparison that may skip a character
    such as U+00AD between the two `#`, so no `[` may follow a `#`. The tool's own text holds
    neither, so only quoted repo text changes."""
    if "#[" in text:
        text = text.replace("#[", "#\\x5b")
    if "::" in text:
        text = _RUNNER_V2.sub(r"\1\\x3a", text)
    return text


#: how much of a value a message quotes: a message names the value, it does not carry it
QUOTE_LIMIT = 120


def quoted(value: object, limit: int = QUOTE_LIMIT) -> str:
    """`repr(value)` for a message, cut to about `limit` characters, without ever building the
    whole repr of a large value (a hostile file's megabyte string, or a tree of aliases). A
    small value reads exactly as `repr` writes it."""
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return repr(value[:limit]) + f"… ({len(value)} characters)"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"an integer of {value.bit_length()} bits"
    if isinstance(value, (dict, list, tuple, set)):
        if _small(value, [limit]):
            return repr(value)
        return _Short(limit).repr(value)
    text = repr(value)
    return text if len(text) <= limit * 2 else text[: limit * 2] + "…"


def _small(value: object, budget: list[int]) -> bool:
    """Whether `value` is a tree of at most `budget[0]` characters of scalars (about)."""
    if isinstance(value, dict):
        items: Iterable[object] = (x for kv in value.items() for x in kv)
    elif isinstance(value, (list, tuple, set)):
        items = value
    else:
        budget[0] -= len(value) if isinstance(value, str) else 8
        return budget[0] >= 0
    budget[0] -= 2
    return budget[0] >= 0 and all(_small(item, budget) for item in items)


class _Short(reprlib.Repr):
    """reprlib's cut repr, also for subclasses of dict and list (the located trees)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.maxlevel, self.maxdict, self.maxlist, self.maxtuple, self.maxset = 2, 4, 4, 4, 4
        self.maxstring = self.maxother = min(limit, 60)

    def repr1(self, x: object, level: int) -> str:
        if isinstance(x, dict):
            return self.repr_dict(x, level)
        if isinstance(x, list):
            return self.repr_list(x, level)
        if isinstance(x, tuple):
            return self.repr_tuple(x, level)
        return super().repr1(x, level)


#: how many names a message lists before it counts the rest: a list of every node, key or cause
#: of a large repo made messages longer than MAX_MESSAGE, cut before they said what happens
MAX_NAMES = 5


def names(items: list[str], limit: int = MAX_NAMES, total: int | None = None) -> str:
    """`a, b, c` or `a, b, c and 4 more`. ``total``: how many there are when ``items`` holds
    only the first of them (at least ``limit`` of them, so that none is spelled out for a
    long list that is cut at once)."""
    count = len(items) if total is None else total
    if count <= limit:
        return ", ".join(items)
    return f"{', '.join(items[:limit])} and {count - limit} more"


def clauses(items: list[str], noun: str, limit: int = MAX_NAMES, total: int | None = None) -> str:
    """`a; b; c` or `a; b; c; d; e; and 4 more <noun>s`: clauses (each may hold commas of its
    own) joined by semicolons, the first ``limit`` written out and the rest counted in
    ``noun``. ``total`` as in `names`."""
    count = len(items) if total is None else total
    if count <= limit:
        return "; ".join(items)
    return "; ".join([*items[:limit], f"and {plural(count - limit, 'more ' + noun)}"])


def plural(count: int, noun: str) -> str:
    """`1 replica` / `3 replicas`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.ERROR: 3, Severity.WARNING: 2, Severity.INFO: 1}


def _line_of_text(value: str) -> str:
    """A message or fix as one printable line, cut to MAX_MESSAGE characters (a message
    quoting a hostile value must not carry megabytes into every report)."""
    if not value.isprintable():  # str.isprintable is false for every _UNPRINTABLE character
        value = printable(value, line_breaks=" ")
    return value if len(value) <= MAX_MESSAGE else value[: MAX_MESSAGE - 1] + "…"


def _shown(value: str | None) -> str | None:
    return value if value is None or value.isprintable() else printable(value)


@record(frozen=True, slots=True)
class Location:
    """File (relative to the checked root, POSIX separators), 1-based line and column."""

    file: str
    line: int = 1
    column: int = 1

    def __post_init__(self) -> None:
        if not self.file.isprintable():
            object.__setattr__(self, "file", printable(self.file))

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@record(frozen=True, slots=True)
class ObjectRef:
    """The Kubernetes object a finding is about."""

    kind: str
    name: str | None = None
    namespace: str | None = None

    def __post_init__(self) -> None:
        name, namespace = self.name, self.namespace
        if (
            not self.kind.isprintable()
            or (name is not None and not name.isprintable())
            or (namespace is not None and not namespace.isprintable())
        ):
            for key in ("kind", "name", "namespace"):
                value = getattr(self, key)
                if value is not None and not value.isprintable():
                    object.__setattr__(self, key, printable(value))

    def __str__(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{ns}{self.name or '?'}"


#: one finding as `Finding.record` writes it (marshal-able builtins, for the caches)
Record = tuple[Any, ...]


@record(slots=True, kw_only=True)
class Finding:
    """One problem: a stable rule id, a severity, a message a person can act on, and a fix hint.

    A plain slotted class rather than a pydantic model: a large repo has tens of thousands of
    findings, each made by the checker itself (pydantic validates the files people write:
    config, policies, matrix), and what a finding quotes from a repo is made printable and cut
    here, whoever builds it."""

    rule: str
    severity: Severity
    message: str
    hint: str | None = None
    location: Location
    object: ObjectRef | None = None
    # key path inside the object (e.g. ["metadata", "labels", "x"]): identity that survives
    # line shifts, used by baselines and pull-request mode
    path: list[str | int] = field(default_factory=list)
    suppressed_by: str | None = None
    # the cluster(s) the finding is about, in a repo of several (model/clusters.py); None: the
    # repo is one cluster, or the finding is about a file, whatever cluster applies it
    cluster: str | None = None
    # its block of the text report as rendered for the partition cache, (width, text): the
    # report takes it instead of wrapping the message again (report/text.py); never copied
    # (copy_with makes a finding of its own)
    rendered: tuple[int, str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.severity.__class__ is not Severity:
            self.severity = Severity(self.severity)
        self.message = _line_of_text(self.message)
        if self.hint is not None:
            self.hint = _line_of_text(self.hint)
        if self.path.__class__ is not list:
            self.path = list(self.path)

    def copy_with(self, **changes: Any) -> Finding:
        """A copy with `changes` (field=value), made printable and cut as a new one is."""
        return replace(self, **changes)

    def record(self) -> Record:
        """The finding as marshal-able builtins (`from_record` reads them back)."""
        loc, obj = self.location, self.object
        return (
            self.rule,
            self.severity.value,
            self.message,
            self.hint,
            loc.file,
            loc.line,
            loc.column,
            None if obj is None else (obj.kind, obj.name, obj.namespace),
            tuple(self.path),
            self.suppressed_by,
            self.cluster,
        )

    @classmethod
    def from_record(
        cls, value: Any, refs: dict[tuple, ObjectRef] | None = None, kept: bool = False
    ) -> Finding:
        """The finding `record` wrote; ValueError for anything else (a cache entry is checked,
        never trusted to be of the right shape). `marshal` makes builtin values only, so each
        is checked by its exact class (a run reads back every cached finding: this is on the
        path of every edit run). A record holds what a Finding holds, its texts made printable
        (`printable` leaves them as they are) and cut already: one that does not is no record
        of ours (refused, not made printable), and the objects are made without their
        `__init__` checks (half the time). `refs`: the objects already made from the records
        of the same batch (a workload has several findings), shared as they are frozen.
        `kept`: the caller found that `printable` leaves the record's message, hint and file
        as they are (`texts_kept`, for a batch at once); their lengths are still checked."""
        if value.__class__ is not tuple or len(value) != 11:
            raise ValueError("not a finding record")
        rule, severity, message, hint, file, line, column, obj, path, by, cluster = value
        if (
            rule.__class__ is not str
            or severity.__class__ is not str
            or message.__class__ is not str
            or file.__class__ is not str
            or line.__class__ is not int
            or column.__class__ is not int
            or path.__class__ is not tuple
            or not (hint is None or hint.__class__ is str)
            or not (by is None or by.__class__ is str)
            or not (cluster is None or cluster.__class__ is str)
        ):
            raise ValueError("not a finding record")
        if not (len(message) <= MAX_MESSAGE and (kept or (_kept(message) and _kept(file)))):
            raise ValueError("not a finding record")
        if hint is not None and not (len(hint) <= MAX_MESSAGE and (kept or _kept(hint))):
            raise ValueError("not a finding record")
        for step in path:
            if step.__class__ is not str and step.__class__ is not int:
                raise ValueError("not a finding record")
        level = _SEVERITIES.get(severity)
        if level is None:
            raise ValueError("not a finding record")
        ref = None
        if obj is not None:
            if not (obj.__class__ is tuple and len(obj) == 3 and obj[0].__class__ is str):
                raise ValueError("not a finding record")
            kind, name, namespace = obj
            if not (name is None or name.__class__ is str) or not (
                namespace is None or namespace.__class__ is str
            ):
                raise ValueError("not a finding record")
            ref = refs.get(obj) if refs is not None else None  # (hashable: checked above)
            if ref is None:
                ref = _object_ref(kind, name, namespace)
                if refs is not None:
                    refs[obj] = ref
        where = _new(Location)
        _set_file(where, file)
        _set_line(where, line)
        _set_column(where, column)
        made = _new(cls)
        made.rule = rule
        made.severity = level
        made.message = message
        made.hint = hint
        made.location = where
        made.object = ref
        made.path = list(path)
        made.suppressed_by = by
        made.cluster = cluster
        made.rendered = None
        return made

    def sort_key(self) -> tuple:
        loc = self.location
        return (loc.file, loc.line, loc.column, self.rule, self.message)

    def fingerprint(self, version: int = 2) -> str:
        """Stable identity: rule, object identity and key path inside the object.

        Not the line or the file, so edits above the object, moving it to another file, or
        inserting a node above it in an inventory keep it. The object's namespace is the one
        it lives in (`default` for a namespaced object that names none: writing it out is no
        new finding). Findings with no key path add the message, its numbers left out (a
        YAML error names its line: a line added above is no new error); findings about no
        object (a file that cannot be read) use file and message. Two findings can share a
        fingerprint: baselines count occurrences, and `unique_fingerprints` numbers repeats
        for formats that need one per result. `version`: 1 gives the fingerprints baselines
        of version 1 recorded (the namespace as written, the message whole).
        """
        message = "" if self.path else self.message
        if self.object is not None:
            ref = self.object
            namespace = (
                ref.namespace if version == 1 else effective_namespace(ref.kind, ref.namespace)
            )
            identity: tuple[str, ...] = ("object", ref.kind, namespace or "", ref.name or "")
        else:
            identity = ("file", self.location.file)
        if message and version != 1:
            message = _DIGITS.sub("#", message)
        path = "/".join(str(p) for p in self.path)
        raw = "\x1f".join((self.rule, *identity, path, message))
        if self.cluster is not None:  # the same object in two clusters is two findings
            raw += "\x1fcluster\x1f" + self.cluster
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


_SEVERITIES = {level.value: level for level in Severity}
# `from_record`'s way to make a record's objects without their `__init__` (the slots set one by
# one, through their descriptors for the frozen ones: `_slot_setter`)
_new = object.__new__


def _object_ref(kind: str, name: str | None, namespace: str | None) -> ObjectRef:
    """The ObjectRef of a record's kind, name and namespace (strings or None, checked by
    `from_record`), refused unless `printable` leaves them as they are."""
    if not (
        _kept(kind) and (name is None or _kept(name)) and (namespace is None or _kept(namespace))
    ):
        raise ValueError("not a finding record")
    ref = _new(ObjectRef)
    _set_kind(ref, kind)
    _set_name(ref, name)
    _set_namespace(ref, namespace)
    return ref


def _slot_setter(cls: type, name: str) -> Callable[[Any, Any], None]:
    """What sets the slot `name` of a frozen record: its descriptor's `__set__` (a third less
    time than `object.__setattr__` by name)."""
    return cls.__dict__[name].__set__


_set_file = _slot_setter(Location, "file")
_set_line = _slot_setter(Location, "line")
_set_column = _slot_setter(Location, "column")
_set_kind = _slot_setter(ObjectRef, "kind")
_set_name = _slot_setter(ObjectRef, "name")
_set_namespace = _slot_setter(ObjectRef, "namespace")


def _kept(text: str) -> bool:
    """Whether `printable` leaves `text` as it is (what a Finding keeps of any text: a text
    `str.isprintable` refuses, such as one with a no-break space, may be kept too). A long
    ASCII text on its bytes, as `terminal_safe` checks one: deleting the printable ones
    leaves its controls (an edit run checks every cached finding's texts, messages of 500
    characters on average at 10k: a workload edit there -0.8 % instructions)."""
    if len(text) > 64 and text.isascii():  # (a short one costs less as it is)
        return not text.encode("ascii").translate(None, _PRINTABLE_ASCII)
    return text.isprintable() or _UNPRINTABLE.search(text) is None


def texts_kept(records: list[Any]) -> bool:
    """Whether `printable` leaves the message, hint and file of every record of `records` as
    they are (what `Finding.from_record` checks of each, given `kept`), found on their joined
    text at once: `_kept` asks of each character alone whether the expression matches it, so
    the joined text passes exactly when each part does (an edit run checks every cached
    finding's texts, three checks of 1.3 us a finding: reading 50,582 cached findings at 40k
    workloads 160-180 -> 135-145 ms). False also when a record has not the shape of one:
    `from_record` then checks it and refuses it."""
    try:
        joined = "".join([text for r in records for text in (r[2], r[3] or "", r[4])])
    except (TypeError, IndexError, KeyError, MemoryError):
        return False
    return _kept(joined)


#: the ASCII characters `printable` leaves as they are
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F))


def unique_fingerprints(findings: list[Finding]) -> list[str]:
    """One fingerprint per finding, unique within the list: the n-th repeat of a fingerprint
    (in the list's order) gets a derived one, so consumers that key on it lose nothing."""
    seen: dict[str, int] = {}
    out = []
    for f in findings:
        base = f.fingerprint()
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.append(base if n == 0 else hashlib.sha256(f"{base}:{n}".encode()).hexdigest()[:32])
    return out
