"""The support matrix CSV: tolerant of the ways people write it, strict about what a row is."""

from __future__ import annotations

from gpudrv_check.read.matrix import parse_matrix


def test_plain_matrix():
    m = parse_matrix("m.csv", b"driver_branch,kernel,os_tag\n550,5.15.0-119-generic,ubuntu22.04\n")
    assert [r.key for r in m.rows] == [("550", "5.15.0-119-generic", "ubuntu22.04")]
    assert m.rows[0].line == 2
    assert m.problems == []
    assert m.has("550", "5.15.0-119-generic", "ubuntu22.04")


def test_bom_crlf_comments_blank_lines_and_extra_columns():
    data = (
        "\ufeff# images we built\r\n\r\nos_tag,driver_branch,kernel,registry\r\n"
        "ubuntu24.04,550,6.8.0-45-generic,internal\r\n# retired:\r\n"
    ).encode()
    m = parse_matrix("m.csv", data)
    assert m.problems == []
    assert [(r.key, r.line) for r in m.rows] == [(("550", "6.8.0-45-generic", "ubuntu24.04"), 4)]


def test_malformed_and_duplicate_rows_are_findings_at_their_line():
    data = (
        b"driver_branch,kernel,os_tag\n"
        b"550,5.15.0-119-generic,ubuntu22.04\n"
        b"550,5.15.0-119-generic\n"
        b"abc,5.15.0-119-generic,ubuntu22.04\n"
        b"550,5.15.0-119-generic,ubuntu22.04\n"
    )
    m = parse_matrix("m.csv", data)
    assert len(m.rows) == 1
    got = [(p.rule, p.location.line, p.severity.value) for p in m.problems]
    assert got == [("GPU006", 3, "error"), ("GPU006", 4, "error"), ("GPU006", 5, "warning")]
    assert "first on line 2" in m.problems[2].message


def test_missing_header_column():
    m = parse_matrix("m.csv", b"branch,kernel,os\n550,k,u\n")
    assert m.rows == []
    assert m.problems[0].location.line == 1
    assert "driver_branch" in m.problems[0].message


def test_empty_matrix_is_reported():
    m = parse_matrix("m.csv", b"# nothing yet\n")
    assert m.rows == [] and m.problems and "empty" in m.problems[0].message


def test_an_unreadable_matrix_is_a_usage_error_naming_it(tmp_path, monkeypatch):
    """Issue 23: an unreadable support-matrix.csv was an internal error (the OSError of the
    read). Simulated, as the tests run as root: the read fails with EACCES."""
    import pytest

    from gpudrv_check.engine.run import check
    from gpudrv_check.read.config import ConfigError, load_config
    from gpudrv_check.read.tree import WorkingTree
    from tests.conftest import MATRIX, gpu_node, write

    write(tmp_path, "support-matrix.csv", MATRIX)
    write(tmp_path, "n.yaml", gpu_node("n1"))
    real = WorkingTree.read

    def read(self, rel, *args, **kwargs):
        if rel == "support-matrix.csv":
            raise PermissionError(13, "Permission denied", rel)
        return real(self, rel, *args, **kwargs)

    monkeypatch.setattr(WorkingTree, "read", read)
    with pytest.raises(ConfigError) as err:
        check(tmp_path, load_config(tmp_path))
    assert "cannot read support matrix support-matrix.csv: Permission denied" in str(err.value)
