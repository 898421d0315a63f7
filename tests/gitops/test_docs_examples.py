"""The CI examples in docs/examples work: each is parsed, and the exact gpudrv-check command lines
it contains are run against a two-commit copy of examples/flux (the head adds a node whose
driver image was never built).

A command using a flag this build does not know yet (the sarif/github/gitlab formats and
`--output` come with the outputs work) is skipped with the reason instead of failing.
"""

from __future__ import annotations

import importlib.util
import json
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


ACTION = ROOT / "action.yml"
ARGOCD = ROOT / "integrations" / "argocd"
# the current major versions (Node 24) of the actions the examples and action.yml use
CURRENT = {
    "actions/checkout": "v6",
    "actions/setup-python": "v6",
    "github/codeql-action/upload-sarif": "v4",
}


def _uses(doc: Any) -> list[str]:
    found: list[str] = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += [value] if key == "uses" and isinstance(value, str) else _uses(value)
    elif isinstance(doc, list):
        for value in doc:
            found += _uses(value)
    return found


def test_examples_are_wired_as_their_ci_systems_expect():
    gh = load("github-actions.yml")
    [job] = gh["jobs"].values()
    checkout = next(
        s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout")
    )
    assert checkout["with"]["fetch-depth"] == 0  # --base needs the base commit
    [step] = [s for s in job["steps"] if str(s.get("uses", "")).endswith("/gpudrv-check@v0.1.0")]
    inputs = _safe_load(ACTION.read_text(encoding="utf-8"))["inputs"]
    assert set(step["with"]) <= set(inputs)  # only inputs the action has
    assert step["with"]["base"] == "${{ github.event.pull_request.base.sha }}"
    assert gh["permissions"]["security-events"] == "write"

    gl = load("gitlab-ci.yml")
    mr, default = gl["gpudrv-check"], gl["gpudrv-check-default-branch"]
    assert mr["variables"]["GIT_DEPTH"] == "0"
    assert mr["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    # the widget compares with the default branch's report: that branch makes one too
    assert default["rules"] == [{"if": "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH"}]
    report = gl[".gpudrv-check"]["artifacts"]["reports"]["codequality"]
    for job_ in (mr, default):
        assert job_["extends"] == ".gpudrv-check"
        assert any(f"--output {report}" in line for line in job_["script"])
    assert gl[".gpudrv-check"]["timeout"] == "15 minutes"

    flux = load("flux-validate.yml")
    assert all("--kustomize" in c for c, _ in workflow_commands("flux-validate.yml"))
    for workflow in (gh, flux):
        assert all(j["timeout-minutes"] <= 30 for j in workflow["jobs"].values())


def test_examples_and_the_action_use_current_action_versions():
    action = _safe_load(ACTION.read_text(encoding="utf-8"))
    for doc in (load("github-actions.yml"), load("flux-validate.yml"), action):
        for uses in _uses(doc):
            name, _, version = uses.partition("@")
            if name in CURRENT:
                assert version == CURRENT[name], uses


def test_the_action_skips_the_sarif_upload_on_pull_requests_from_forks():
    steps = _safe_load(ACTION.read_text(encoding="utf-8"))["runs"]["steps"]
    [upload] = [s for s in steps if "upload-sarif" in s.get("uses", "")]
    condition = " ".join(upload["if"].split())
    assert "github.event.pull_request.head.repo.full_name == github.repository" in condition
    assert "inputs.upload-sarif == 'true'" in condition


def _schema(name: str) -> dict:
    """A schemastore schema as check-jsonschema vendors it (a test dependency)."""
    found = importlib.util.find_spec("check_jsonschema")
    if found is None or found.origin is None:
        pytest.skip("check-jsonschema is not installed (pip install -e '.[test]')")
    path = Path(found.origin).parent / "builtin_schemas" / "vendor" / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ("github-workflows", DOCS / "github-actions.yml"),
        ("github-workflows", DOCS / "flux-validate.yml"),
        ("github-actions", ACTION),
        ("gitlab-ci", DOCS / "gitlab-ci.yml"),
    ],
    ids=lambda v: v if isinstance(v, str) else v.name,
)
def test_ci_files_validate_against_their_schemastore_schemas(schema: str, path: Path):
    from jsonschema import Draft7Validator

    doc = _safe_load(path.read_text(encoding="utf-8"))
    errors = sorted(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in Draft7Validator(_schema(schema)).iter_errors(doc)
    )
    assert errors == []


def _action_step(name: str) -> dict:
    steps = _safe_load(ACTION.read_text(encoding="utf-8"))["runs"]["steps"]
    return next(s for s in steps if s.get("name") == name)


def _action_env(step: dict, inputs: dict[str, str]) -> dict[str, str]:
    """The step's env with `${{ inputs.x }}` as the workflow would give them."""
    defaults = {
        k: str(v.get("default", ""))
        for k, v in _safe_load(ACTION.read_text(encoding="utf-8"))["inputs"].items()
    }
    values = {**defaults, **inputs}
    return {
        key: re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: values[m.group(1)], str(raw))
        for key, raw in step.get("env", {}).items()
    }


def test_the_action_checks_a_pull_request_and_writes_the_sarif(sample, tmp_path: Path):
    root, base = sample
    check, sarif = _action_step("Check"), _action_step("Every finding as SARIF")
    outputs = tmp_path / "github-output"
    for step, inputs in ((check, {"base": base}), (sarif, {"base": base})):
        env = {**_env(base, {}), **_action_env(step, inputs), "GITHUB_OUTPUT": str(outputs)}
        env.pop("GITHUB_ACTIONS", None)
        done = subprocess.run(
            ["bash", "-e", "-c", step["run"]],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if step is check:  # annotations of the new finding only, and the step fails
            assert done.returncode == 1, done.stdout + done.stderr
            assert done.stdout.startswith("::error file=inventory/node3.yaml,")
            assert "lab-node-0" not in done.stdout
        else:
            assert done.returncode == 0, done.stderr
    log = json.loads((root / "gpudrv-check.sarif").read_text())
    assert any(NEW_NODE in r["message"]["text"] for r in log["runs"][0]["results"])
    assert outputs.read_text() == "file=gpudrv-check.sarif\n"


@pytest.mark.parametrize(("inputs", "code"), [({}, 0), ({"fail-on": "info"}, 1)])
def test_the_action_leaves_fail_on_to_the_config_unless_given(
    sample, tmp_path: Path, inputs: dict, code: int
):
    """Review: the action passed `--fail-on error` always, so a repo's `fail_on:` was
    overridden under the action; now the input, when set, and else the config decide."""
    shared, base = sample
    root = tmp_path / "repo"
    shutil.copytree(shared, root, ignore=shutil.ignore_patterns(".git"))
    config = root / ".gpudrv-check.yaml"
    kept = config.read_text() if config.exists() else ""
    config.write_text(kept + "fail_on: never\n")
    check = _action_step("Check")
    env = {**_env(base, {}), **_action_env(check, {"base": "", **inputs})}
    env.pop("GITHUB_ACTIONS", None)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    done = subprocess.run(
        ["bash", "-e", "-c", check["run"]],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == code, done.stdout + done.stderr


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


def _plugin(root: Path, app: str, verb: str, extra: str, source_path: str | None = None):
    """`gpudrv-check-cmp VERB` as the Argo CD sidecar runs it: in the app's directory of the
    repo copy, with ARGOCD_APP_SOURCE_PATH set, the helper and gpudrv-check on PATH."""
    env = _env("", {}, os.pathsep.join(p for p in (extra, str(ARGOCD)) if p))
    env["ARGOCD_APP_SOURCE_PATH"] = app if source_path is None else source_path
    return subprocess.run(
        ["gpudrv-check-cmp", verb],
        cwd=root / app,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_argocd_plugin_config_runs_the_helper_from_the_sidecar_image():
    plugin = _safe_load((ARGOCD / "plugin.yaml").read_text(encoding="utf-8"))
    assert (plugin["apiVersion"], plugin["kind"]) == (
        "argoproj.io/v1alpha1",
        "ConfigManagementPlugin",
    )
    assert plugin["spec"]["discover"] == {"find": {"command": ["gpudrv-check-cmp", "discover"]}}
    assert plugin["spec"]["generate"] == {"command": ["gpudrv-check-cmp", "generate"]}
    dockerfile = (ARGOCD / "Dockerfile").read_text(encoding="utf-8").splitlines()
    # Argo CD reads the plugin config there, and runs sidecars as its user 999
    assert (
        "COPY integrations/argocd/plugin.yaml /home/argocd/cmp-server/config/plugin.yaml"
        in dockerfile
    )
    assert "COPY integrations/argocd/gpudrv-check-cmp /usr/local/bin/gpudrv-check-cmp" in dockerfile
    assert "USER 999" in dockerfile
    assert any(d.startswith("RUN pip install") and "/src/gpudrv-check" in d for d in dockerfile)
    assert any(d.startswith("COPY --from=kustomize /app/kustomize ") for d in dockerfile)
    patch = _safe_load((ARGOCD / "repo-server-patch.yaml").read_text(encoding="utf-8"))
    assert patch["metadata"]["name"] == "argocd-repo-server"
    [sidecar] = patch["spec"]["template"]["spec"]["containers"]
    assert sidecar["command"] == ["/var/run/argocd/argocd-cmp-server"]
    assert sidecar["securityContext"]["runAsUser"] == 999
    mounts = {m["mountPath"]: m["name"] for m in sidecar["volumeMounts"]}
    assert mounts["/var/run/argocd"] == "var-files"  # the cmp-server binary, the socket
    assert mounts["/home/argocd/cmp-server/plugins"] == "plugins"
    assert (ARGOCD / "gpudrv-check-cmp").stat().st_mode & 0o111


@pytest.mark.parametrize("source_path", ["clusters/prod", "./clusters/prod/", "clusters/prod//"])
def test_argocd_plugin_discovers_only_repos_that_opt_in(sample, tmp_path: Path, source_path):
    root, _ = sample
    app = "clusters/prod"
    found = _plugin(root, app, "discover", "", source_path)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip().endswith("/.gpudrv-check.yaml")  # examples/flux opted in
    other = tmp_path / "other"
    shutil.copytree(root, other, ignore=shutil.ignore_patterns(".git", ".gpudrv-check.yaml"))
    ignored = _plugin(other, app, "discover", "", source_path)
    assert (ignored.returncode, ignored.stdout) == (0, "")  # another Kustomize app: not ours
    plain = _plugin(root, "inventory/..", "discover", "", ".")  # the root is no Kustomize root
    assert (plain.returncode, plain.stdout) == (0, "")


@pytest.mark.slow
def test_argocd_plugin_refuses_to_render_a_repo_with_errors(sample, tmp_path: Path):
    root, _ = sample
    extra = _kustomize_on_path(tmp_path)
    app = "clusters/prod"
    refused = _plugin(root, app, "generate", extra, "./clusters/prod/")
    assert refused.returncode != 0
    assert refused.stdout == ""  # no manifests: Argo CD syncs nothing
    assert f"GPU001 node {NEW_NODE} needs driver image" in refused.stderr

    with open(root / "support-matrix.csv", "a") as matrix:
        matrix.write("550,6.8.0-52-generic,ubuntu24.04\n")
    try:
        rendered = _plugin(root, app, "generate", extra)
    finally:
        git(root, "checkout", "-q", "--", "support-matrix.csv")
    assert rendered.returncode == 0, rendered.stderr
    assert f"name: {NEW_NODE}" in rendered.stdout and "kind: HelmRelease" in rendered.stdout
