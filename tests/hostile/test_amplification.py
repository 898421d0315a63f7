"""Amplification (issue 23): aliases are budgeted by the bytes they expand to, not only by
nodes; a value quoted in a message is cut to a bounded length; a run reads at most
`max_total_bytes` of manifests. Checked on the findings and, in a subprocess, under an
address-space limit (never on time)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from gpudrv_check.read.yaml_docs import parse_text
from tests.conftest import MATRIX, gpu_node, write

#: address space for a check of the files below: the interpreter and its libraries take
#: ~300 MB here; the unbounded code needed several GB for the 1,000-alias file
LIMIT = 1536 * 1024 * 1024


def alias_file(aliases: int, size: int = 1_000_000) -> str:
    """A ~1 MB Deployment: one large annotation value, aliased `aliases` times as nodeSelector
    values (each an invalid label value: a GPU040 quoting it). The unbounded code took 46 s and
    1.9 GB for 1,000 aliases here (each message built from the whole value)."""
    big = "x" * (size - aliases * 30)
    selector = "".join(f"        k{i}: *big\n" for i in range(aliases))
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: bomb\n  annotations:\n"
        f"    a: &big {big}\nspec:\n  template:\n    spec:\n      nodeSelector:\n{selector}"
        "      containers:\n      - name: c\n        image: x\n"
    )


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _check_limited(root: Path) -> subprocess.CompletedProcess:
    code = "import sys; from gpudrv_check.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "check",
            str(root),
            "--no-cache",
            "--format",
            "json",
            "--jobs",
            "1",
        ],
        capture_output=True,
        text=True,
        preexec_fn=_limited,
        timeout=600,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize("aliases", [1_000, 5_000])
def test_a_megabyte_of_aliased_text_is_an_alias_bomb(tmp_path: Path, aliases: int):
    text = alias_file(aliases)
    assert 900_000 < len(text) < 1_100_000
    parsed = parse_text(text)
    assert [p.rule for p in parsed.problems] == ["GPU000"]
    assert "alias bomb" in parsed.problems[0].message and parsed.docs == []
    write(tmp_path, "bomb.yaml", text)
    write(tmp_path, "n.yaml", gpu_node("n1"))
    write(tmp_path, "support-matrix.csv", MATRIX)
    proc = _check_limited(tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    findings = json.loads(proc.stdout)["findings"]
    assert [(f["rule"], f["location"]["file"]) for f in findings] == [("GPU000", "bomb.yaml")]


def test_a_few_aliases_of_a_large_value_are_read_and_quoted_cut(tmp_path: Path):
    """Under the budget: read, and each GPU040 names the value in a bounded message."""
    write(tmp_path, "d.yaml", alias_file(10, size=100_000))
    write(tmp_path, "support-matrix.csv", MATRIX)
    proc = _check_limited(tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    findings = json.loads(proc.stdout)["findings"]
    assert len([f for f in findings if f["rule"] == "GPU040"]) == 10
    assert all(len(f["message"]) < 600 for f in findings), [f["message"][:200] for f in findings]


def test_small_aliases_many_times_are_still_read(tmp_path: Path):
    """The byte budget does not refuse the ordinary use of anchors (shared labels)."""
    labels = "".join(f"    k{i}: *v\n" for i in range(2_000))
    text = (
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  annotations:\n    a: &v ok\n"
        f"  labels:\n{labels}"
    )
    parsed = parse_text(text)
    assert parsed.problems == [] and len(parsed.docs[0].data["metadata"]["labels"]) == 2_000


def test_every_quoted_value_is_cut(tmp_path: Path):
    """A megabyte driver label: the message that the tag cannot be computed names it, short."""
    value = "7" * 1_000_000
    write(tmp_path, "n.yaml", gpu_node("n1", branch=value))
    write(tmp_path, "support-matrix.csv", MATRIX)
    proc = _check_limited(tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    messages = [f["message"] for f in json.loads(proc.stdout)["findings"]]
    assert messages and all(len(m) < 600 for m in messages), [m[:200] for m in messages]
    from gpudrv_check.core.finding import QUOTE_LIMIT, quoted

    assert len(quoted(value)) < QUOTE_LIMIT + 40 and quoted("short") == "'short'"
    assert len(quoted([value] * 1000)) < 4 * QUOTE_LIMIT


@pytest.mark.parametrize("fmt", ["concise", "markdown", "html", "json", "sarif", "github"])
def test_a_megabyte_upgrade_state_costs_no_report_a_megabyte(tmp_path: Path, fmt: str):
    """A 1,000,000-character upgrade-state label: GPU022 quotes it cut (`quoted`), and the
    upgrade-state tables of markdown and html show it cut, with its length."""
    from gpudrv_check.core.finding import QUOTE_LIMIT
    from tests.conftest import run_main

    def report(state: str) -> str:
        label = f"  labels:\n    nvidia.com/gpu-driver-upgrade-state: {state}\n"
        write(tmp_path, "n.yaml", gpu_node("n1").replace("  labels:\n", label))
        write(tmp_path, "support-matrix.csv", MATRIX)
        proc = run_main("check", str(tmp_path), "--no-cache", "--format", fmt)
        assert proc.returncode == 1, proc.stderr[-2000:]
        return proc.stdout

    short, long = report("s"), report("s" * 1_000_000)
    # GPU040 quotes it too, as a message: cut at 2000 characters
    assert len(long) - len(short) < 8_000
    shown = "s" * QUOTE_LIMIT + ("… " if fmt in ("markdown", "html") else "'… ")
    assert shown + "(1000000 characters)" in long


@pytest.mark.slow
def test_the_input_budget_of_a_run(tmp_path: Path):
    """Over `max_total_bytes`, the rest of the files (in path order) are not read: a GPU000 for
    each, and stderr says so once."""
    from tests.conftest import run_cli

    for i in range(6):
        write(tmp_path, f"nodes/n{i}.yaml", gpu_node(f"n{i}"))
    write(tmp_path, "support-matrix.csv", MATRIX)
    size = (tmp_path / "nodes" / "n0.yaml").stat().st_size
    write(tmp_path, ".gpudrv-check.yaml", f"max_total_bytes: {size * 3 + 1}\n")
    for cache in ("--no-cache", None):
        args = ["check", str(tmp_path), "--format", "json"] + ([cache] if cache else [])
        proc = run_cli(*args)
        assert proc.returncode == 1
        assert proc.stderr.count("input budget") == 1, proc.stderr
        over = [
            f["location"]["file"]
            for f in json.loads(proc.stdout)["findings"]
            if "max_total_bytes" in f["message"]
        ]
        assert over == ["nodes/n3.yaml", "nodes/n4.yaml", "nodes/n5.yaml"]
