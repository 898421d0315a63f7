"""Shared test helpers: small repos built in tmp_path, and the installed CLI as a subprocess."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-slow",
        action="store_true",
        help="also run the tests marked slow (CI does: the README's test command)",
    )


#: the package's runtime dependencies (pyproject.toml `dependencies`) by the module each provides
RUNTIME_MODULES = {
    "pydantic": "pydantic",
    "ruamel.yaml": "ruamel.yaml",
    "ruamel.yaml.clib": "_ruamel_yaml",
    "jsonschema": "jsonschema",
    "gitpython": "git",
}


def missing_dependencies() -> list[str]:
    """The runtime dependencies this interpreter cannot import (looked up, not imported)."""
    from importlib.util import find_spec

    missing = []
    for name, module in RUNTIME_MODULES.items():
        try:
            found = find_spec(module) is not None
        except (ImportError, ValueError):  # a parent package missing (ruamel for ruamel.yaml)
            found = False
        if not found:
            missing.append(name)
    return missing


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under an interpreter without the package's dependencies, every test is skipped with
    what to install (the checker cannot read a file without them); a run without --run-slow
    (or an explicit -m) leaves out the tests marked slow."""
    missing = missing_dependencies()
    if missing:
        reason = (
            f"gpudrv-check's dependencies are not installed ({', '.join(missing)}): "
            "pip install -e '.[test]' (see the README)"
        )
        for item in items:
            item.add_marker(pytest.mark.skip(reason=reason))
    if config.getoption("--run-slow") or config.getoption("markexpr"):
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]


def cli_command() -> list[str]:
    """The installed console script when there is one, else `python -m gpudrv_check`."""
    script = Path(sys.executable).parent / "gpudrv-check"
    if script.exists():
        return [str(script)]
    found = shutil.which("gpudrv-check")
    return [found] if found else [sys.executable, "-m", "gpudrv_check"]


def cli_env(**extra: str) -> dict[str, str]:
    """The environment the CLI runs in by default in tests, with `extra` set: this one, but
    GITHUB_ACTIONS (on GitHub Actions `check` defaults to --format github; tests expect text
    unless asked)."""
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    env.update(extra)
    return env


def run_cli(
    *args: str,
    cwd: Path | None = None,
    input: str | None = None,
    env: dict | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess:
    if env is None:
        env = cli_env()
    return subprocess.run(
        [*cli_command(), *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def run_main(
    *args: str,
    cwd: Path | None = None,
    input: str | None = None,
    env: dict | None = None,
    timeout: float = 120,  # noqa: ARG001 (run_cli's signature: the call sites stay the same)
) -> subprocess.CompletedProcess:
    """`run_cli` in this process: the CLI's `main()` with the same arguments, working
    directory, environment, standard input and captured output, and its exit code.

    For tests whose subject is what a command answers (output, exit code), not the process
    (console script, signals, hash seed, locale, a TTY): those use `run_cli`. It spares a
    Python start-up and every import per call, most of the suite's time (issue 22). The
    console script differs only in `run()`: the collector off and `os._exit` at the end
    (tests/cli/test_startup.py runs that one as a process)."""
    from gpudrv_check.cli import main

    if env is None:
        env = cli_env()
    streams = sys.stdin, sys.stdout, sys.stderr
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", newline="")
    stderr = io.TextIOWrapper(err, encoding="utf-8", newline="")
    stdin = io.TextIOWrapper(io.BytesIO((input or "").encode()), encoding="utf-8")
    try:
        os.environ.clear()
        os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        try:
            code = main(list(args))
        except SystemExit as exit_:  # argparse's usage errors and --help
            code = exit_.code if isinstance(exit_.code, int) else 2
        stdout.flush()
        stderr.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(list(args), code, _text(out), _text(err))


def _text(data: io.BytesIO) -> str:
    """Captured bytes as `subprocess.run(text=True)` decodes them (universal newlines)."""
    data.seek(0)
    return io.TextIOWrapper(data, encoding="utf-8").read()


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def generated_corpus(out: Path, nodes: int, workloads: int) -> Path:
    """benchmarks/gen_corpus.py's GitOps repo at `out`: `nodes` GPU nodes, `workloads`
    workloads of every kind, budgets, operand DaemonSets and the bulk a real repo holds."""
    subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gen_corpus.py"), str(out)]
        + ["--nodes", str(nodes), "--workloads", str(workloads)],
        check=True,
        capture_output=True,
    )
    return out


def counting_rules(monkeypatch: pytest.MonkeyPatch, *rules: str) -> dict[str, int]:
    """How many times each of these built-in rules is evaluated from now on (as the engine
    takes their checks from `registered`)."""
    from gpudrv_check.rules import RULE_MODULES

    calls = dict.fromkeys(rules, 0)
    for module in RULE_MODULES:
        if module.ID in calls:

            def counted(ctx, real=module.check, rule=module.ID):
                calls[rule] += 1
                return real(ctx)

            monkeypatch.setattr(module, "check", counted)
    return calls


def recording_plans(monkeypatch: pytest.MonkeyPatch) -> list:
    """Every partition plan made from now on (engine/cache/partition.py `Plan`, as the files
    cache takes `plan`), in the order made: a second reading's (`redo`) after the first."""
    from gpudrv_check.engine.cache import files as files_mod

    made: list = []
    real = files_mod.plan

    def recording(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(files_mod, "plan", recording)
    return made


@pytest.fixture
def lab_repo(tmp_path: Path) -> Path:
    """A private copy of examples/lab (tests may edit it)."""
    dest = tmp_path / "lab"
    shutil.copytree(EXAMPLES / "lab", dest)
    return dest


MATRIX = "driver_branch,kernel,os_tag\n550,5.15.0-119-generic,ubuntu22.04\n"
#: a document the line reader (read/block_yaml.py) leaves to the event builder (an anchor and
#: an alias), and which is no object: appended to the files of a repo meant to be read by
#: worker processes (they start only for files the line reader does not read,
#: read/manifests.py)
BUILDER_DOC = "---\nnotes: &n read by the event builder\nagain: *n\n"


def gpu_node(
    name: str,
    branch: str = "550",
    kernel: str = "5.15.0-119-generic",
    os_id: str = "ubuntu",
    version: str = "22.04",
    extra: str = "",
) -> str:
    return textwrap.dedent(f"""\
        apiVersion: v1
        kind: Node
        metadata:
          name: {name}
          labels:
            kubernetes.io/hostname: {name}
            nvidia.com/gpu.present: "true"
            nvidia.com/cuda.driver-version.major: "{branch}"
            feature.node.kubernetes.io/kernel-version.full: {kernel}
            feature.node.kubernetes.io/system-os_release.ID: {os_id}
            feature.node.kubernetes.io/system-os_release.VERSION_ID: "{version}"
        """) + textwrap.dedent(extra)


def gpu_deployment(name: str, replicas: object, gpus: int = 1, spec_lines: str = "") -> str:
    """A Deployment `name` in namespace `ml` whose pods ask for `gpus` GPUs, `replicas` as
    written; `spec_lines` go in its pod spec before the containers (indented six spaces)."""
    return f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: ml}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
{spec_lines}      containers:
      - {{name: c, image: x, resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}}}
"""


def cluster_policy(spec: str = "") -> str:
    """The ClusterPolicy `cluster-policy`; `spec` holds its spec's keys, indented by two."""
    return (
        "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata:\n  name: cluster-policy\n"
        "spec:\n" + spec
    )


def helm_release(version: str, rest: str = "") -> str:
    """The Flux HelmRelease gpu-operator/gpu-operator of the gpu-operator chart at `version`;
    `rest` continues its spec (`  values:` ...)."""
    return (
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n"
        "  name: gpu-operator\n  namespace: gpu-operator\nspec:\n  chart:\n    spec:\n"
        f"      chart: gpu-operator\n      version: {version}\n" + rest
    )


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory):
    """Runs of the CLI in tests cache under a temporary XDG_CACHE_HOME, never the user's own."""
    import os

    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture
def clean_partitions(monkeypatch: pytest.MonkeyPatch) -> list[set[str]]:
    """The namespaces each cached run took from the partition cache (as merge saw the plan;
    a run without the cache has no plan and is not listed)."""
    from gpudrv_check.engine.cache import partition

    seen: list[set[str]] = []
    merge = partition.merge

    def spy(run) -> None:
        seen.append(set(run.content.plan.clean) if run.content.plan is not None else set())
        merge(run)

    monkeypatch.setattr(partition, "merge", spy)
    return seen
