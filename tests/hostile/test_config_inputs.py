"""Broken configs, matrices and paths: an error at the file's line (exit 2) or a GPU006 finding
at the matrix line; never a traceback, and never a read outside the repo root."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, run_main
from tests.hostile import corpus

SECRET = "TOP-SECRET-do-not-print"


def _error(root: Path, *args: str) -> str:
    result = run_main("check", str(root), *args, timeout=120)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stdout == ""
    return result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("content", "where", "part"),
    [
        (b"matrix: x.csv\n\texclude: []\n", "2:1", "tab character"),
        (b"matrix: [\n", "1:10", "syntax error"),  # the end of the text, not past it
        (b"matrix: a.csv\nmatrix: b.csv\n", "2:1", "duplicate key 'matrix'"),
        (b"exclude: [charts/, 3]\n", "1:20", "exclude.1"),
        (b"max_file_bytes: lots\n", "1:1", "max_file_bytes"),
        (b"max_file_bytes: 0\n", "1:1", "greater than 0"),
        (b"fail_on: sometimes\n", "1:1", "fail_on"),
        (b"operator:\n  verison: v25.10.0\n", "2:3", "unknown key 'operator.verison'"),
        (b"rules:\n  GPU999: {enabled: false}\n", "2:3", "unknown rule 'GPU999'"),
        (b"- a\n- b\n", "1:1", "must be a mapping"),
        (b"matrix: a.csv\n---\nmatrix: b.csv\n", "1:1", "single YAML document"),
        (b"a: &a [*a]\n", "1:8", "no complete anchor"),
        (b"matrix: caf\xe9.csv\n", "1:12", "invalid UTF-8"),
        (b"matrix: \x07\n", "1:9", "U+0007"),
        (b"matrix: !!python/object/apply:os.system [id]\n", "1:9", "not constructed"),
        (b"matrix: " + b"[" * 5000 + b"\n", "1:1", "nesting deeper"),
        (b"max_file_bytes: " + b"9" * 5000 + b"\n", "1:1", "max_file_bytes"),
    ],
    ids=lambda v: v if isinstance(v, str) and ":" in v else None,
)
def test_broken_yaml_config_is_an_error_at_its_line(tmp_path: Path, content, where, part):
    (tmp_path / ".gpudrv-check.yaml").write_bytes(content)
    err = _error(tmp_path, "--matrix", "none")
    assert err.startswith(f"gpudrv-check: error: .gpudrv-check.yaml:{where}: "), err
    assert part in err


@pytest.mark.slow
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"[tool.gpudrv-check\nmatrix = 1\n", "pyproject.toml:1:"),
        (b'[tool.gpudrv-check]\nmatrix = "a"\nmatrix = "b"\n', "pyproject.toml:3:"),
        (b"[tool.gpudrv-check]\nexclude = " + b"[" * 5000 + b"\n", "pyproject.toml"),
        (b"[tool.gpudrv-check]\nmatrix = 'caf\xe9'\n", "pyproject.toml: not UTF-8 text"),
        (b"[tool.gpudrv-check]\nmax_file_bytes = -1\n", "pyproject.toml"),
        (b"[tool.gpudrv-check]\nmax_file_bytes = " + b"9" * 5000 + b"\n", "pyproject.toml"),
    ],
)
def test_broken_pyproject_is_an_error(tmp_path: Path, content, expected):
    (tmp_path / "pyproject.toml").write_bytes(content)
    err = _error(tmp_path, "--matrix", "none")
    assert err.startswith(f"gpudrv-check: error: {expected}"), err


def test_config_that_is_a_link_out_of_the_repo_is_not_read(tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.yaml").write_text(f"{SECRET}: 1\n")
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".gpudrv-check.yaml").symlink_to(outside / "secret.yaml")
    err = _error(root, "--matrix", "none")
    assert "leaves the repo root" in err and SECRET not in err


@pytest.mark.slow
@pytest.mark.parametrize(
    "matrix",
    ["../outside/secret.csv", "/etc/passwd", "link.csv", "dir-link/secret.csv", "a/../../x.csv"],
)
def test_matrix_path_cannot_leave_the_repo(tmp_path: Path, matrix: str):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.csv").write_text(f"driver_branch,kernel,os_tag\n{SECRET},x,y\n")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "link.csv").symlink_to(outside / "secret.csv")
    (root / "dir-link").symlink_to(outside, target_is_directory=True)
    (root / ".gpudrv-check.yaml").write_text(f"matrix: {matrix}\n")
    err = _error(root)
    assert err.startswith("gpudrv-check: error: .gpudrv-check.yaml:1:1: matrix path"), err
    assert "leaves the repo root" in err and SECRET not in err


def test_matrix_over_the_size_limit_is_refused(tmp_path: Path):
    (tmp_path / "support-matrix.csv").write_bytes(b"driver_branch,kernel,os_tag\n" + b"#\n" * 600)
    (tmp_path / ".gpudrv-check.yaml").write_text("max_file_bytes: 1000\n")
    err = _error(tmp_path)
    assert "over max_file_bytes" in err


MALFORMED_MATRIX = (
    b"\xef\xbb\xbfdriver_branch,kernel,os_tag\r\n"  # 1: BOM and CRLF are fine
    b"550,5.15.0-119-generic,ubuntu22.04\r\n"  # 2: lab-node-0
    b'"550,unclosed quote\r\n'  # 3
    b"535,5.15.0-107-generic\r\n"  # 4: too few fields
    b"five-fifty,5.15.0-119-generic,ubuntu22.04\r\n"  # 5: branch not a number
    b"550,5.15.0-119-generic,ubuntu22.04\r\n"  # 6: duplicate of line 2
    b"550,bad\x0bkernel,ubuntu22.04\xc2\x85\r\n"  # 7: VT and NEL do not end a line
    b"535,5.15.0-107-generic,ubuntu22.04\r\n"  # 8: lab-node-1
    b"550,6.8.0-45-generic,ubuntu24.04\r\n"  # 9: lab-node-2
    b"550,\x00,x\r\n"  # 10: NUL
)


def test_malformed_matrix_rows_are_findings_at_their_line(tmp_path: Path):
    root = tmp_path / "lab"
    corpus.copy_lab(EXAMPLES / "lab", root)
    (root / "k8s" / "node3.yaml").unlink()
    (root / "support-matrix.csv").write_bytes(MALFORMED_MATRIX)
    result = run_main("check", str(root), "--format", "json", timeout=120)
    assert "Traceback" not in result.stderr
    found = {
        (f["rule"], f["location"]["file"], f["location"]["line"])
        for f in json.loads(result.stdout)["findings"]
        if f["rule"] == "GPU006"
    }
    assert found == {("GPU006", "support-matrix.csv", n) for n in (3, 4, 5, 6, 7, 10)}
    # the good rows (2, 8, 9) are still used: every lab node has its image
    audit = run_main("audit", str(root), timeout=120)
    assert (audit.returncode, audit.stdout) == (0, "OK\n")
    assert "support-matrix.csv:3:1:" in audit.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "data",
    [b"", b"\xff\xfe\x00\x00", "a,b\n".encode("utf-16"), b"\x00" * 100, b"#only a comment\n"],
    ids=["empty", "utf32-bom", "utf16", "nul", "comment"],
)
def test_unusable_matrix_is_one_finding_not_a_crash(tmp_path: Path, data: bytes):
    (tmp_path / "support-matrix.csv").write_bytes(data)
    result = run_main("check", str(tmp_path), "--format", "json", timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    [finding] = json.loads(result.stdout)["findings"]
    assert finding["rule"] == "GPU006" and finding["location"]["line"] >= 1
