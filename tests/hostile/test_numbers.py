"""Numbers past Python's int() digit limit (4,300 digits here, 5,000 in the issue) and huge but
well-formed ones, at each of the eight places issue 23 names: a finding at the key (GPU040),
or the upstream behaviour for a value Go cannot parse, or a usage error for a flag; never an
internal error. All parsing goes through gpudrv_check/k8s/numbers.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.k8s import numbers
from tests.conftest import MATRIX, gpu_node, run_main, write

HUGE = "9" * 5001
BIG = "9" * 25  # within int() limits, past int64


def _node(extra: str = "", **labels: str) -> str:
    return gpu_node("n1", **labels, extra=extra)


POD = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n"
    '    image: x\n    resources:\n      limits:\n        nvidia.com/gpu: "{n}"\n'
)
CUDA_POD = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: cuda\nspec:\n  containers:\n  - name: c\n"
    "    image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04\n    resources:\n      limits:\n"
    "        nvidia.com/gpu: 1\n"
)
PDB = (
    "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: b\nspec:\n"
    '  minAvailable: "{n}%"\n  selector: {}\n'
)
RELEASE = (
    "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: gpu-operator\n"
    "spec:\n  chart:\n    spec:\n      chart: gpu-operator\n      version: v26.{n}.0\n"
    "  valuesFrom:\n  - kind: ConfigMap\n    name: vals\n    targetPath: driver.x[{n}]\n"
)

# place -> (files, extra CLI args, expected (rule, file, line, column) or None)
PLACES = {
    "node-allocatable": (
        {"n.yaml": _node('status:\n  allocatable:\n    nvidia.com/gpu: "{n}"\n')},
        (),
        ("GPU040", "n.yaml", 14, 5),
    ),
    "node-capacity": (
        {"n.yaml": _node('status:\n  capacity:\n    nvidia.com/gpu: "{n}"\n')},
        (),
        ("GPU040", "n.yaml", 14, 5),
    ),
    "gpu-request": ({"n.yaml": _node(), "p.yaml": POD}, (), ("GPU040", "p.yaml", 11, 9)),
    "pdb-percentage": ({"n.yaml": _node(), "b.yaml": PDB, "p.yaml": CUDA_POD}, (), None),
    "driver-label": ({"n.yaml": _node(branch="{n}"), "p.yaml": CUDA_POD}, (), None),
    "rhel-version-id": (
        {"n.yaml": _node(os_id="rhel", version="{n}")},
        ("--operator-version", "v26.3.0"),
        None,
    ),
    "chart-version-and-target-path": ({"n.yaml": _node(), "h.yaml": RELEASE}, (), None),
    "config-operator-version": (
        {"n.yaml": _node(), ".gpudrv-check.yaml": "operator:\n  version: v26.{n}.0\n"},
        (),
        "usage",
    ),
    "flag-operator-version": ({"n.yaml": _node()}, ("--operator-version", "v26.{n}.0"), "usage"),
}


@pytest.mark.slow
@pytest.mark.parametrize("digits", [HUGE, BIG], ids=["5001-digits", "25-digits"])
@pytest.mark.parametrize("place", sorted(PLACES))
def test_huge_numbers_are_findings_or_usage_errors(tmp_path: Path, place: str, digits: str):
    files, args, expected = PLACES[place]
    for rel, text in files.items():
        write(tmp_path, rel, text.replace("{n}", digits))
    write(tmp_path, "support-matrix.csv", MATRIX)
    proc = run_main(
        "check",
        str(tmp_path),
        "--no-cache",
        "--format",
        "json",
        *(a.replace("{n}", digits) for a in args),
    )
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    if expected == "usage":
        assert proc.returncode == 2
        assert "operator version" in proc.stderr and "at most 19 digits" in proc.stderr
        assert len(proc.stderr) < 2000  # the value is quoted cut, not whole
        return
    assert proc.returncode in (0, 1), proc.stderr
    if expected is not None:
        import json

        found = [
            (f["rule"], f["location"]["file"], f["location"]["line"], f["location"]["column"])
            for f in json.loads(proc.stdout)["findings"]
        ]
        assert expected in found


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("0206", 206),
        ("+5", 5),
        ("-9223372036854775808", -(2**63)),
        ("9223372036854775807", 2**63 - 1),
        ("9223372036854775808", None),  # Go: value out of range
        ("0" * 6000 + "7", 7),  # leading zeros are fine, however many
        (HUGE, None),
        ("²", None),  # str.isdigit() says yes; int() and Go say no
        ("1_000", None),
        (" 1", None),
        (5, None),
    ],
)
def test_parse_int64_is_go_strconv_parseint(text: object, expected: int | None):
    assert numbers.parse_int64(text) == expected


def test_gpu_count():
    assert numbers.gpu_count(2) == (2, None)
    assert numbers.gpu_count("8") == (8, None)
    assert numbers.gpu_count(True)[0] is None
    assert numbers.gpu_count("1.5") == (None, "not a whole number")
    assert numbers.gpu_count(HUGE) == (None, numbers.TOO_LARGE)
    assert numbers.gpu_count(2**70) == (None, numbers.TOO_LARGE)
    assert numbers.oversized_number("v25.10.0") is None
    assert numbers.oversized_number(f"v{BIG}.1") == BIG


def test_a_jobs_flag_past_the_digit_limit_is_a_usage_error(tmp_path: Path):
    proc = run_main("check", str(tmp_path), "--jobs", HUGE)
    assert proc.returncode == 2 and "--jobs" in proc.stderr and len(proc.stderr) < 2000
