"""Findings carry one printable line: nothing from a hostile repo reaches a terminal raw."""

from __future__ import annotations

import dataclasses

import pytest

from gpudrv_check.core.finding import MAX_MESSAGE, Finding, Location, ObjectRef, printable


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", "plain"),
        ("caf\u00e9 \u4e2d", "caf\u00e9 \u4e2d"),
        ("a\x1b[31mb", "a\\x1b[31mb"),
        ("bell\x07", "bell\\x07"),
        ("nel\x85", "nel\\x85"),
        ("ls\u2028ps\u2029", "ls\\u2028ps\\u2029"),
        ("rlo\u202eevil", "rlo\\u202eevil"),
        ("lone\ud800", "lone\\ud800"),
        ("two\nlines", "two\\x0alines"),
    ],
)
def test_printable_escapes(text, expected):
    assert printable(text) == expected


def test_messages_and_hints_are_one_line():
    f = Finding(
        rule="GPU000",
        severity="error",
        message="first\nsecond\r\n::error file=x::forged\x1b[0m",
        hint="a\nb",
        location=Location(file="new\nline.yaml", line=1, column=1),
        object=ObjectRef(kind="Node", name="n\x1b"),
    )
    assert f.message == "first second ::error file=x::forged\\x1b[0m"
    assert f.hint == "a b"
    assert f.location.file == "new\\x0aline.yaml"
    assert f.object.name == "n\\x1b"


def test_a_huge_message_is_cut():
    f = Finding(rule="GPU005", severity="error", message="x" * 10**6, location=Location(file="a"))
    assert len(f.message) == MAX_MESSAGE and f.message.endswith("…")


def _finding(**changes) -> Finding:
    base = {
        "rule": "GPU010",
        "severity": "warning",
        "message": "m",
        "hint": "h",
        "location": Location(file="a.yaml", line=3, column=5),
        "object": ObjectRef(kind="Deployment", name="x", namespace="ml"),
        "path": ("spec", "replicas", 0),
        "cluster": "prod",
    }
    return Finding(**{**base, **changes})


def test_a_record_reads_back_as_the_same_finding():
    for f in (_finding(), _finding(object=None, hint=None, cluster=None, suppressed_by="b")):
        again = Finding.from_record(f.record())
        assert again == f and again.path == ["spec", "replicas", 0]
        assert again.severity.value == f.severity.value == f.record()[1]
        # made without their __init__: every field set all the same, equal and hashed alike
        for made in (again, again.location, again.object):
            if made is not None:
                for field in dataclasses.fields(made):
                    getattr(made, field.name)
        assert again.rendered is None and hash(again.location) == hash(f.location)
        assert again.object is None or hash(again.object) == hash(f.object)


def test_a_text_printable_leaves_as_it_is_reads_back_too():
    """A no-break space, an ideographic space, a soft hyphen, a BOM, a private-use character:
    `str.isprintable` refuses them, `printable` leaves them (a review found the first version
    of `from_record` refusing such records, which are ours: a cache miss on every run)."""
    odd = "a\u00a0b\u3000c\u00add\ufeffe\ue000"
    f = _finding(message=f"m {odd}", hint=f"h {odd}", location=Location(file=f"dir/{odd}.yaml"))
    f = f.copy_with(object=ObjectRef(kind=f"K{odd}", name=odd, namespace=odd))
    assert f.message == f"m {odd}" and f.location.file == f"dir/{odd}.yaml"
    assert Finding.from_record(f.record()) == f


@pytest.mark.parametrize(
    "record",
    [
        None,
        (),
        ("GPU010",) * 11,  # line and column are not numbers
        _finding().record()[:10],
        _finding().record()[:5] + ("3",) + _finding().record()[6:],
        _finding().record()[:7] + (("Deployment",),) + _finding().record()[8:],
        _finding().record()[:8] + ((1.5,),) + _finding().record()[9:],
        _finding().record()[:1] + ("fatal",) + _finding().record()[2:],
        _finding().record()[:1] + (["error"],) + _finding().record()[2:],  # unhashable
        _finding().record()[:5] + (True,) + _finding().record()[6:],  # a bool is no line
        _finding().record()[:7] + (("Deployment", 3, None),) + _finding().record()[8:],
        _finding().record()[:7] + (("Deployment", "x", b"ns"),) + _finding().record()[8:],
        _finding().record()[:8] + ((1.5,),) + _finding().record()[9:],
        _finding().record()[:8] + (["spec"],) + _finding().record()[9:],  # a list, not a tuple
        _finding().record()[:10] + (7,),  # the cluster
        (*_finding().record(), None),  # 12 fields
        # texts a Finding would have made printable and cut: no record of ours
        _finding().record()[:2] + ("a\x1bb",) + _finding().record()[3:],
        _finding().record()[:3] + ("h" * (MAX_MESSAGE + 1),) + _finding().record()[4:],
        _finding().record()[:4] + ("a\nb.yaml",) + _finding().record()[5:],
        _finding().record()[:7] + (("Deployment", "x\x00", "ml"),) + _finding().record()[8:],
    ],
)
def test_what_is_not_a_record_is_refused(record):
    with pytest.raises(ValueError):
        Finding.from_record(record)
    # in a batch (engine/cache/partition.py `validated`): refused alike, the record after a
    # good one of the same object too (an object tuple holding a list is no key: ValueError)
    refs: dict = {}
    Finding.from_record(_finding().record(), refs)
    with pytest.raises(ValueError):
        Finding.from_record(record, refs)
    unhashable = _finding().record()[:7] + (("Deployment", ["x"], None),) + _finding().record()[8:]
    with pytest.raises(ValueError):
        Finding.from_record(unhashable, refs)


def test_a_batch_shares_one_object_per_identity():
    """The findings of one partition entry read back with a shared `refs`: the records of one
    object share its ObjectRef (frozen), each finding equal to the one read alone."""
    a = _finding()
    b = _finding(rule="GPU011", message="other", location=Location(file="a.yaml", line=9))
    c = _finding(object=ObjectRef(kind="Deployment", name="y", namespace="ml"))
    refs: dict = {}
    read = [Finding.from_record(f.record(), refs) for f in (a, b, c)]
    assert read == [a, b, c] == [Finding.from_record(f.record()) for f in (a, b, c)]
    assert read[0].object is read[1].object and read[2].object is not read[0].object
    assert len(refs) == 2


def test_a_copy_is_made_printable_and_cut_as_a_new_finding():
    f = _finding().copy_with(message="x\n" + "y" * (MAX_MESSAGE * 2), severity="error")
    assert f.message.startswith("x y") and len(f.message) == MAX_MESSAGE
    assert f.severity.value == "error" and f.path == ["spec", "replicas", 0]


def test_a_text_is_kept_as_printable_would_leave_it_on_every_character():
    """core/finding.py `_kept` (what `from_record` asks of each text) checks an ASCII text on
    its bytes: on every character below U+3000 and around the surrogates, alone, amid ASCII
    and amid other text, it says what `printable` would leave as it is."""
    from gpudrv_check.core.finding import _kept, printable

    for code in [*range(0x3000), *range(0xD7F0, 0xE010), 0xFEFF, 0x10FFFF]:
        char = chr(code)
        for text in (char, f"ok {char} x" * 40, f"{char}" * 3 + "é"):
            assert _kept(text) is (printable(text) == text), repr(text[:8])
    assert _kept("a" * 500) and not _kept("a" * 500 + "\x7f") and not _kept("\x00")


def test_a_batch_of_records_is_kept_exactly_when_each_of_its_texts_is():
    """core/finding.py `texts_kept` (what engine/cache/partition.py `validated` asks of an
    entry's records at once, then `from_record(..., kept=True)`) agrees with `_kept` of each
    record's message, hint and file: every character below U+3000 and around the surrogates
    put in each of the three, in a batch of good records; a record of another shape is no
    batch of kept texts (each record is then checked, and refused, alone)."""
    from gpudrv_check.core.finding import _kept, texts_kept

    good = [_finding().record(), _finding(hint=None).record(), _finding(message="→ é").record()]
    assert texts_kept(good) and texts_kept([])
    for code in [*range(0x3000), *range(0xD7F0, 0xE010), 0xFEFF, 0x10FFFF]:
        for at in (2, 3, 4):  # the message, the hint, the file
            record = list(_finding().record())
            record[at] = f"x{chr(code)}y"
            batch = [*good, tuple(record), *good]
            assert texts_kept(batch) is _kept(record[at]), (hex(code), at)
    for bad in (None, (), ("GPU010", "error", 3, None, "a.yaml"), ("r", "e", "m", 5, "f")):
        assert not texts_kept([*good, bad]), bad


def test_an_entry_with_one_unprintable_text_is_refused_whole():
    """A partition entry whose records' joined texts are not kept is checked record by
    record: the one record with a control character refuses the entry (as before the
    batch check), and the records of an entry that passes read back as the findings."""
    from gpudrv_check.core.finding import texts_kept
    from gpudrv_check.engine.cache.partition import PartitionEntry

    a, b = _finding(), _finding(rule="GPU011", message="other → 2", hint=None)
    entry = PartitionEntry("k", [a.record(), b.record()], [a.record()], {})
    assert entry.validated() == ([a, b], [a])
    for at in (2, 3, 4):
        broken = list(b.record() if at != 3 else a.record())
        broken[at] = "x\x1by"
        assert entry._replace(findings=[a.record(), tuple(broken)]).validated() is None
        assert entry._replace(suppressed=[tuple(broken)]).validated() is None
    # what indexes like a record without being one: its texts pass, the record does not
    for other in ("a record?", {2: "m", 3: None, 4: "a.yaml"}, list(a.record())):
        assert texts_kept([a.record(), other])
        assert entry._replace(findings=[a.record(), other]).validated() is None
