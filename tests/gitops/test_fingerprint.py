"""Finding identity for PR mode: what keeps a fingerprint, what changes it, and counting."""

from __future__ import annotations

import pytest

from gpudrv_check.core.finding import Finding, Location, ObjectRef, Severity
from gpudrv_check.engine.compare import compare
from gpudrv_check.read.matrix import parse_matrix

NODE = ObjectRef(kind="Node", name="a")


def finding(
    rule: str = "GPU001",
    file: str = "n.yaml",
    line: int = 9,
    obj: ObjectRef | None = NODE,
    path: tuple = ("metadata", "labels", "k"),
    message: str = "m",
) -> Finding:
    return Finding(
        rule=rule,
        severity=Severity.ERROR,
        message=message,
        location=Location(file=file, line=line, column=5),
        object=obj,
        path=list(path),
    )


@pytest.mark.parametrize(
    ("other", "same"),
    [
        (finding(line=30), True),  # lines added above
        (finding(file="moved/n.yaml"), True),  # file moved
        (finding(message="reworded"), True),  # message text is not identity when a path is
        (finding(rule="GPU002"), False),
        (finding(obj=ObjectRef(kind="Node", name="b")), False),
        (finding(path=("metadata", "labels", "other")), False),
        # findings about a file, not an object: file and message, not the line
        (finding(obj=None, path=(), line=3), None),
    ],
)
def test_fingerprint_identity(other: Finding, same: bool | None):
    base = finding()
    if same is None:  # file-level findings compare among themselves
        moved = finding(obj=None, path=(), line=40)
        assert other.fingerprint() == moved.fingerprint()
        assert other.fingerprint() != finding(obj=None, path=(), file="x.yaml").fingerprint()
        assert other.fingerprint() != finding(obj=None, path=(), message="x").fingerprint()
        return
    assert (other.fingerprint() == base.fingerprint()) is same


def test_matrix_row_findings_keep_identity_when_rows_are_inserted_above():
    before = parse_matrix("m.csv", b"driver_branch,kernel,os_tag\n550,k1,ubuntu22.04\nbad row\n")
    after = parse_matrix(
        "m.csv",
        b"driver_branch,kernel,os_tag\n535,k0,ubuntu22.04\n550,k1,ubuntu22.04\nbad row\n",
    )
    [old], [new] = before.problems, after.problems
    assert (old.location.line, new.location.line) == (3, 4)
    assert old.fingerprint() == new.fingerprint()


@pytest.mark.parametrize(
    ("base", "head", "expected"),
    [
        ([], [finding()], (1, 0, 0)),
        ([finding()], [], (0, 1, 0)),
        ([finding()], [finding(line=50)], (0, 0, 1)),
        # a second identical finding is new even though its fingerprint is known
        ([finding()], [finding(), finding(line=20)], (1, 0, 1)),
        ([finding(), finding(line=20)], [finding()], (0, 1, 1)),
        ([finding(rule="GPU002")], [finding()], (1, 1, 0)),
    ],
)
def test_compare_counts_fingerprints(base, head, expected):
    result = compare(base, head)
    assert (len(result.new), len(result.fixed), len(result.unchanged)) == expected
    assert result.summary() == "{} new, {} fixed, {} unchanged".format(*expected)
