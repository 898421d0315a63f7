"""`-` as PATH: a rendered stream on stdin; inventory and matrix from the config or flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import MATRIX, gpu_node, run_main, write

NEW_KERNEL = "6.8.0-52-generic"

WORKLOAD = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: x}
data: {a: b}
---
"""


def test_stream_with_inventory_flags_and_stdin_name(tmp_path: Path):
    write(tmp_path, "support-matrix.csv", MATRIX)
    write(tmp_path, "inv/old.yaml", gpu_node("old"))
    write(tmp_path, "inv/new.yaml", gpu_node("new", kernel=NEW_KERNEL))
    stream = WORKLOAD + gpu_node("streamed", kernel=NEW_KERNEL)
    result = run_main(
        "check",
        "-",
        "--stdin-name",
        "overlays/prod (rendered)",
        "--inventory",
        "inv/old.yaml",
        "--inventory",
        "inv/new.yaml",
        "--format",
        "json",
        cwd=tmp_path,
        input=stream,
    )
    assert result.returncode == 1, result.stderr
    doc = json.loads(result.stdout)
    got = sorted(
        (f["object"]["name"], f["location"]["file"], f["location"]["line"], f["location"]["column"])
        for f in doc["findings"]
    )
    assert got == [
        ("new", "inv/new.yaml", 9, 5),
        ("streamed", "overlays/prod (rendered)", 14, 5),
    ]
    assert doc["summary"]["files"] == 3


@pytest.mark.slow
def test_inventory_and_matrix_from_the_config(tmp_path: Path):
    write(tmp_path, ".gpudrv-check.yaml", "matrix: ledger.csv\ninventory: [cluster/nodes.yaml]\n")
    write(tmp_path, "ledger.csv", MATRIX)
    write(tmp_path, "cluster/nodes.yaml", gpu_node("n", kernel=NEW_KERNEL))
    result = run_main("audit", "-", cwd=tmp_path, input=WORKLOAD)
    assert (result.returncode, result.stdout) == (1, f"n MISSING 550-{NEW_KERNEL}-ubuntu22.04\n")
    fixed = run_main("audit", "-", "--matrix", "none", cwd=tmp_path, input=WORKLOAD)
    assert fixed.returncode == 2 and "audit needs a support matrix" in fixed.stderr


def test_default_stdin_name_and_yaml_errors_located(tmp_path: Path):
    result = run_main(
        "check",
        "-",
        "--matrix",
        "none",
        "--format",
        "concise",
        cwd=tmp_path,
        input="apiVersion: v1\nkind: [\n",
    )
    assert result.returncode == 1
    assert result.stdout.startswith("<stdin>:")
    assert "GPU000" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("check", "-", "--rev", "HEAD"), "cannot read from stdin"),
        (("check", "-", "--base", "main"), "cannot read from stdin"),
        (("check", "-", "--kustomize"), "pipe the rendered stream"),
        (("check", ".", "--stdin-name", "x.yaml"), "it needs - as PATH"),
        (
            ("check", "-", "--inventory", "nope.yaml", "--matrix", "none"),
            "inventory file not found",
        ),
        (("audit", "-"), "support matrix not found"),  # check warns instead (issue 13)
    ],
)
def test_stdin_usage_errors(tmp_path: Path, args: tuple[str, ...], needle: str):
    result = run_main(*args, cwd=tmp_path, input="")
    assert result.returncode == 2
    assert needle in result.stderr and "Traceback" not in result.stderr


def test_helm_templates_are_reported_once_not_as_yaml_errors(tmp_path: Path):
    write(tmp_path, "support-matrix.csv", MATRIX)
    write(tmp_path, "charts/gpu/Chart.yaml", "apiVersion: v2\nname: gpu\nversion: 1.0.0\n")
    write(
        tmp_path,
        "charts/gpu/templates/ds.yaml",
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: {{ .Release.Name }}\n"
        "{{- if .Values.x }}\nspec: {}\n{{- end }}\n",
    )
    write(tmp_path, "raw/templated.yaml", "kind: {{ .Values.kind }}\nmetadata: {{ x }}: y\n")
    result = run_main("check", str(tmp_path), "--format", "json")
    doc = json.loads(result.stdout)
    got = sorted((f["rule"], f["location"]["file"], f["location"]["line"]) for f in doc["findings"])
    assert got == [
        ("GPU009", "charts/gpu/Chart.yaml", 1),  # once per chart, at its Chart.yaml (issue 13)
        ("GPU009", "raw/templated.yaml", 1),
    ]
    assert result.returncode == 0  # a warning: the rest of the repo is checked


class _Stream:
    """A byte stream that counts what is read from it, and never ends on its own."""

    def __init__(self, size: int) -> None:
        self.left, self.taken = size, 0

    def read(self, n: int = -1) -> bytes:
        assert n >= 0, "an unbounded read of standard input"
        n = min(n, self.left)
        self.left -= n
        self.taken += n
        return b"#" * n


def test_standard_input_is_read_up_to_the_limit_only():
    from gpudrv_check.read.stdin import StdinSource

    stream = _Stream(50 * 1024 * 1024)
    source = StdinSource("<stdin>", None, Path("."), stream)
    source.limit = 1000
    (ref,) = source.list_manifests([]).files
    assert stream.taken == 1001  # one byte past the limit says it is over; nothing more is held
    assert ref.error is not None and "over the max_file_bytes limit of 1000 bytes" in ref.error
    small = StdinSource("<stdin>", None, Path("."), _Stream(10))
    small.limit = 1000
    (ref,) = small.list_manifests([]).files
    assert (ref.size, ref.error, small.read("<stdin>")) == (10, None, b"#" * 10)


def test_a_stream_over_max_file_bytes_is_a_finding_and_the_rest_is_checked(tmp_path: Path):
    write(tmp_path, ".gpudrv-check.yaml", "max_file_bytes: 200\n")
    stream = WORKLOAD + "# " + "x" * 500 + "\n"
    result = run_main(
        "check", "-", "--matrix", "none", "--format", "json", cwd=tmp_path, input=stream
    )
    report = json.loads(result.stdout)
    (finding,) = [f for f in report["findings"] if f["rule"] == "GPU000"]
    assert "standard input is over the max_file_bytes limit of 200 bytes" in finding["message"]
    assert finding["location"] == {"file": "<stdin>", "line": 1, "column": 1}
    assert result.returncode == 1
