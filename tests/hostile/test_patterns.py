"""Regular expressions and references a pull request controls: a custom policy's `pattern`
(and `patternProperties`), `cuda.images[].tag_regex`, and `$ref`. A pattern that can backtrack
without bound, or a reference that does not resolve or leads back to itself, is a usage error
at its file:line:col before anything runs (core/regex_guard.py, read/policies.py)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from gpudrv_check.core.regex_guard import pattern_problem
from tests.conftest import EXAMPLES, run_cli
from tests.hostile.conftest import time_limit

# (a pattern, why it blows up); each is refused
CATASTROPHIC = [
    r"^(a+)+$",  # the issue's: 35 `a`s and a `!` never finish
    r"(a*)*b",
    r"^(\d+\.?)*$",
    r"^([a-z]+[0-9]*)+$",
    r"^(aa|a)*$",
    r"^(a?a)+$",
    r"^(-?[a-z]+)*$",
    r"^(a+){2,100}$",
    r"(.*a){12}",  # polynomial of degree 12
    r"^((ab)+)+$",
]
# patterns of real schemas and of the shipped CUDA table: accepted
SAFE = [
    r"^[a-z0-9]+(-[a-z0-9]+)*$",
    r"^[A-Z][A-Z0-9]*[0-9]{3}$",
    r"^(?P<cuda>\d+\.\d+(?:\.\d+)?)-",
    r"-cuda(?P<cuda>\d+\.\d+(?:\.\d+)?)-",
    r"^v?\d+(\.\d+)*$",
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z]+$",
    r"^(\d{1,3}\.){3}\d{1,3}$",
    r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$",
    r"^(ab?)*$",
]


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_catastrophic_patterns_are_refused(pattern: str):
    problem = pattern_problem(pattern)
    assert problem is not None and "backtrack without bound" in problem


@pytest.mark.parametrize("pattern", SAFE)
def test_ordinary_patterns_are_accepted(pattern: str):
    assert pattern_problem(pattern) is None


def test_every_shipped_tag_regex_passes_the_guard():
    from gpudrv_check.core.resources import read_resource
    from gpudrv_check.read.yaml_docs import parse_text

    table = parse_text(read_resource("policies", "cuda.yaml")).docs[0].data
    patterns = [
        image[key]
        for image in table["images"]
        for key in ("tag_regex", "repository_regex")
        if image.get(key)
    ]
    assert patterns
    assert [p for p in patterns if pattern_problem(p)] == []


POLICY = """\
id: ORG900
name: label-shape
severity: error
message: "{{name}}: {{error}}"
match:
  kinds: [Node]
assert:
{body}
"""


def _policy_repo(tmp_path: Path, body: str) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("support-matrix.csv", "k8s"):
        src = EXAMPLES / "lab" / name
        dest = root / name
        if src.is_dir():
            import shutil

            shutil.copytree(src, dest)
        else:
            dest.write_bytes(src.read_bytes())
    # a label of 35 `a`s and a `!`: what `^(a+)+$` never finishes on
    nodes = root / "k8s" / "nodes.yaml"
    label = "    labels:\n"
    nodes.write_text(
        nodes.read_text().replace(label, label + "      shape: " + "a" * 35 + "!\n", 1)
    )
    (root / "policies").mkdir()
    text = POLICY.format(body=textwrap.indent(textwrap.dedent(body).strip("\n"), "  "))
    (root / "policies" / "shape.yaml").write_text(text)
    (root / ".gpudrv-check.yaml").write_text("matrix: support-matrix.csv\npolicies: [policies]\n")
    return root


def _error_at(root: Path) -> str:
    with time_limit(120):
        result = run_cli("check", str(root), "--no-cache", timeout=120)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    return result.stderr


# body of `assert:`, the line:col of the offending key in policies/shape.yaml, message part
BAD_POLICIES = [
    (
        """
        properties:
          metadata:
            properties:
              labels:
                properties:
                  shape: {pattern: '^(a+)+$'}
        """,
        "13:21",
        "backtrack without bound",
    ),
    (
        """
        properties:
          metadata:
            properties:
              labels:
                patternProperties:
                  '^(x*)*$': {type: string}
        """,
        "13:13",
        "backtrack without bound",
    ),
    (
        """
        properties:
          metadata: {$ref: '#/$defs/missing'}
        """,
        "9:16",
        "does not resolve inside the schema",
    ),
    (  # the broken one of two references in one schema is the one pointed at
        """
        properties:
          metadata: {$ref: '#/$defs/m', $dynamicRef: '#/nope'}
        $defs:
          m: {type: object}
        """,
        "9:35",
        "does not resolve inside the schema",
    ),
    (
        """
        $ref: '#'
        """,
        "8:3",
        "leads back to itself",
    ),
    (
        """
        $defs:
          a: {$ref: '#/$defs/b'}
          b: {allOf: [{$ref: '#/$defs/a'}]}
        properties:
          metadata: {$ref: '#/$defs/a'}
        """,
        "9:9",
        "leads back to itself",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("body", "where", "part"), BAD_POLICIES)
def test_a_bad_pattern_or_reference_is_a_policy_error_at_its_key(
    tmp_path: Path, body: str, where: str, part: str
):
    err = _error_at(_policy_repo(tmp_path, body))
    assert err.startswith(f"gpudrv-check: error: policies/shape.yaml:{where}: assert"), err
    assert part in err


def test_a_local_acyclic_reference_still_works(tmp_path: Path):
    root = _policy_repo(
        tmp_path,
        """
        $defs:
          shape: {type: string, pattern: '^[a-z]+$'}
        properties:
          metadata:
            properties:
              labels:
                properties:
                  shape: {$ref: '#/$defs/shape'}
        """,
    )
    with time_limit(120):
        result = run_cli("check", str(root), "--no-cache", "--format", "json", timeout=120)
    assert result.returncode == 1, result.stderr
    found = [f for f in json.loads(result.stdout)["findings"] if f["rule"] == "ORG900"]
    assert found and all("does not match" in f["message"] for f in found)


def test_a_catastrophic_tag_regex_in_the_config_is_an_error_at_its_key(tmp_path: Path):
    import shutil

    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "lab", root)
    with (root / ".gpudrv-check.yaml").open("a") as fh:
        fh.write(
            "cuda:\n  images:\n  - repository: nvcr.io/nvidia/cuda\n"
            "    tag_regex: '^(?P<cuda>(\\d+)+)x$'\n"
        )
    err = _error_at(root)
    assert err.startswith("gpudrv-check: error: .gpudrv-check.yaml:9:5: cuda: images[0].tag_regex")
    assert "backtrack without bound" in err


def test_a_policy_slower_than_its_budget_is_stopped_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """`^\\d*\\d*\\d*\\d*\\d*\\d*x$` passes the static check (no repetition inside another) but
    costs n**6 on a long run of digits: the per-policy budget stops it with a policy error at
    the policy's file:line:col, and the rest of the run goes on."""
    from gpudrv_check.engine.run import evaluate, load
    from gpudrv_check.read.config import load_config
    from gpudrv_check.rules import declarative

    root = _policy_repo(
        tmp_path,
        """
        properties:
          metadata:
            properties:
              labels:
                properties:
                  digits: {pattern: '^\\d*\\d*\\d*\\d*\\d*\\d*x$'}
        """,
    )
    nodes = root / "k8s" / "nodes.yaml"
    label = "    labels:\n"
    digits = "      digits: '" + "1" * 300 + "'\n"
    nodes.write_text(nodes.read_text().replace(label, label + digits))
    assert pattern_problem(r"^\d*\d*\d*\d*\d*\d*x$") is None
    monkeypatch.setattr(declarative, "POLICY_BUDGET_SECONDS", 0.5)
    with time_limit(120):
        run = load(root, load_config(root))
        evaluate(run)
    stopped = [f for f in run.findings if f.rule == "ORG900"]
    assert [(f.location.file, f.location.line, f.location.column) for f in stopped] == [
        ("policies/shape.yaml", 1, 1)
    ]
    assert "did not finish within 0.5 s" in stopped[0].message
    assert "GPU020" in {f.rule for f in run.findings}  # the built-in rules ran
