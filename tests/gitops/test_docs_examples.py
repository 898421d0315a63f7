"""The CI examples in docs/examples work: each is parsed, and the exact gpudrv-check command lines
it contains are run against a two-commit copy of examples/flux (the head adds a node whose
driver image was never built).

A command using a flag this build does not know yet (the sarif/github/gitlab formats and
`--output` come with the outputs work) is skipped with the reason instead of failing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# the examples are read while collecting (they parametrize the tests): without the project's
# dependencies installed, skip the module rather than fail collection
pytest.importorskip("ruamel.yaml", reason="install the test extras: pip install -e '.[test]'")

from gpudrv_check.read.kustomize import kustomize_command
from tests.conftest import EXAMPLES, ROOT
from tests.gitops.conftest import GIT_ENV, commit, git

DOCS = ROOT / "docs" / "examples"
NEW_NODE = "lab-node-3"
# GitHub expressions the examples use, and what they are in the test's pull request
EXPRESSIONS = {"github.event.pull_request.base.sha": "BASE"}


def _safe_load(text: str):
    """Plain data from YAML text (ruamel's safe loader, imported where it is used)."""
    from ruamel.yaml import YAML

    return YAML(typ="safe").load(text)


def load(name: str) -> Any:
    return _safe_load((DOCS / name).read_text(encoding="utf-8"))


def _commands(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("gpudrv-check ")]


def workflow_commands(name: str) -> list[tuple[str, dict[str, str]]]:
    """(command line, step env) of every gpudrv-check line in a GitHub Actions workflow."""
    out = []
    for job in load(name)["jobs"].values():
        for step in job["steps"]:
            env = {k: str(v) for k, v in (step.get("env") or {}).items()}
            out += [(c, env) for c in _commands(step.get("run", ""))]
    return out


def gitlab_commands(name: str) -> list[tuple[str, dict[str, str]]]:
    out = []
    for job in load(name).values():
        if isinstance(job, dict) and "script" in job:
            out += [(c, {}) for line in job["script"] for c in _commands(line)]
    return out


CASES = [
    *(("github-actions.yml", c, e) for c, e in workflow_commands("github-actions.yml")),
    *(("gitlab-ci.yml", c, e) for c, e in gitlab_commands("gitlab-ci.yml")),
    *(("flux-validate.yml", c, e) for c, e in workflow_commands("flux-validate.yml")),
]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """examples/flux committed as the base; the head commit adds lab-node-3 (kernel 6.8.0-52)."""
    if shutil.which("git") is None:
        pytest.skip("git is not on PATH")
    root = tmp_path_factory.mktemp("docs") / "repo"
    shutil.copytree(EXAMPLES / "flux", root)
    git(root, "init", "-q", "-b", "main")
    base = commit(root, "base")
    shutil.copy(root / "steps" / "node3.yaml", root / "inventory" / "node3.yaml")
    with open(root / "inventory" / "kustomization.yaml", "a") as k:
        k.write("  - node3.yaml\n")
    commit(root, "add lab-node-3")
    return root, base


def _env(base: str, step_env: dict[str, str], extra_path: str = "") -> dict[str, str]:
    env = {**os.environ, **GIT_ENV}
    env.pop("GITHUB_ACTIONS", None)
    env["PATH"] = os.pathsep.join(
        p for p in (extra_path, str(Path(sys.executable).parent), env.get("PATH", "")) if p
    )
    env["CI_MERGE_REQUEST_DIFF_BASE_SHA"] = base  # GitLab's merge base of the merge request
    for key, value in step_env.items():
        for expression, meaning in EXPRESSIONS.items():
            value = re.sub(r"\$\{\{\s*" + re.escape(expression) + r"\s*\}\}", meaning, value)
        env[key] = base if value == "BASE" else value
    return env


def _skip_unknown_flags(result: subprocess.CompletedProcess, command: str) -> None:
    if result.returncode == 2 and re.search(
        r"invalid choice|unrecognized arguments", result.stderr
    ):
        reason = result.stderr.strip().splitlines()[-1]
        pytest.skip(f"this build does not know a flag of `{command}` yet ({reason})")


@pytest.mark.slow
@pytest.mark.parametrize(("example", "command", "step_env"), CASES)
def test_example_command_lines_run(sample, example: str, command: str, step_env: dict):
    root, base = sample
    if "--kustomize" in command and kustomize_command() is None:
        pytest.skip("neither kustomize nor kubectl is on PATH")
    result = subprocess.run(
        ["bash", "-c", command],
        cwd=root,
        env=_env(base, step_env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    _skip_unknown_flags(result, command)
    assert "Traceback" not in result.stderr
    expected = 0 if "--fail-on never" in command else 1  # the head has one new finding
    assert result.returncode == expected, result.stdout + result.stderr
    output = re.search(r"--output\s+(\S+)", command)
    if output:
        report = root / output.group(1)
        assert report.is_file() and report.stat().st_size > 0
        assert NEW_NODE in report.read_text()
    else:
        assert NEW_NODE in result.stdout
    if "--base" in command:  # only the new node: the lab's nodes are old news
        assert "lab-node-0" not in result.stdout


def test_examples_are_wired_as_their_ci_systems_expect():
    gh = load("github-actions.yml")
    steps = gh["jobs"]["gpudrv-check"]["steps"]
    checkout = next(s for s in steps if str(s.get("uses", "")).startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0  # --base needs the base commit
    sarif_step = next(s for s in steps if "--format sarif" in s.get("run", ""))
    upload = next(s for s in steps if "upload-sarif" in str(s.get("uses", "")))
    assert f"--output {upload['with']['sarif_file']}" in sarif_step["run"]
    assert gh["permissions"]["security-events"] == "write"

    gl = load("gitlab-ci.yml")["gpudrv-check"]
    assert gl["variables"]["GIT_DEPTH"] == "0"
    report = gl["artifacts"]["reports"]["codequality"]
    assert any(f"--output {report}" in line for line in gl["script"])

    flux = load("flux-validate.yml")
    assert all("--kustomize" in c for c, _ in workflow_commands("flux-validate.yml"))
    assert flux["jobs"]

    cmp = load("argocd-cmp.yaml")
    assert (cmp["apiVersion"], cmp["kind"]) == ("argoproj.io/v1alpha1", "ConfigManagementPlugin")
    assert cmp["spec"]["generate"]["command"] == ["sh", "-c"]


def _kustomize_on_path(tmp: Path) -> str:
    """A directory whose `kustomize` is the real one, or `kubectl kustomize` behind that name."""
    if shutil.which("kustomize"):
        return ""
    if not shutil.which("kubectl"):
        pytest.skip("neither kustomize nor kubectl is on PATH")
    shim = tmp / "bin" / "kustomize"
    shim.parent.mkdir(parents=True, exist_ok=True)
    shim.write_text('#!/bin/sh\n[ "$1" = build ] && shift\nexec kubectl kustomize "$@"\n')
    shim.chmod(0o755)
    return str(shim.parent)


@pytest.mark.slow
def test_argocd_plugin_refuses_to_render_a_repo_with_errors(sample, tmp_path: Path):
    root, base = sample
    plugin = load("argocd-cmp.yaml")["spec"]["generate"]
    extra = _kustomize_on_path(tmp_path)
    app = "clusters/prod"

    def generate() -> subprocess.CompletedProcess:
        env = _env(base, {}, extra)
        env["ARGOCD_APP_SOURCE_PATH"] = app
        return subprocess.run(
            [*plugin["command"], *plugin["args"]],
            cwd=root / app,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    refused = generate()
    assert refused.returncode != 0
    assert refused.stdout == ""  # no manifests: Argo CD syncs nothing
    assert f"GPU001 node {NEW_NODE} needs driver image" in refused.stderr

    with open(root / "support-matrix.csv", "a") as matrix:
        matrix.write("550,6.8.0-52-generic,ubuntu24.04\n")
    try:
        rendered = generate()
    finally:
        git(root, "checkout", "-q", "--", "support-matrix.csv")
    assert rendered.returncode == 0, rendered.stderr
    assert f"name: {NEW_NODE}" in rendered.stdout and "kind: HelmRelease" in rendered.stdout
