"""Nothing from the repo is executed and nothing goes to the network, checked in the real CLI
process: a sitecustomize on PYTHONPATH records (and refuses) every connection and process spawn
before gpudrv-check starts. `--kustomize` may start the programs GPUDRV_GUARD_ALLOW names
(recorded); a fake API server that the caller's kubeconfig points at proves they connect to
nothing either."""

from __future__ import annotations

import http.server
import json
import os
import textwrap
import threading
from pathlib import Path

import pytest

from gpudrv_check.read.kustomize import kustomize_command
from tests.conftest import MATRIX, gpu_node, run_cli, write

GUARD = textwrap.dedent(
    """
    import os, socket, subprocess

    _LOG = os.environ["GPUDRV_GUARD_LOG"]

    def _refuse(what):
        def refuse(*args, **kwargs):
            with open(_LOG, "a") as log:
                log.write(f"{what} {args!r}\\n")
            raise PermissionError(f"{what} refused by the test guard")
        return refuse

    _ALLOW = set(filter(None, os.environ.get("GPUDRV_GUARD_ALLOW", "").split(",")))
    _popen_init = subprocess.Popen.__init__

    def _popen(self, args, *rest, **kwargs):
        program = os.path.basename(str(args[0] if isinstance(args, (list, tuple)) else args))
        if program in _ALLOW:
            with open(_LOG, "a") as log:
                log.write(f"allowed-spawn {program} env={sorted(kwargs.get('env') or {})}\\n")
            return _popen_init(self, args, *rest, **kwargs)
        return _refuse("spawn")(self, args, *rest, **kwargs)

    socket.socket.connect = _refuse("connect")
    socket.socket.connect_ex = _refuse("connect")
    socket.create_connection = _refuse("connect")
    socket.getaddrinfo = _refuse("resolve")
    subprocess.Popen.__init__ = _popen
    for name in ("system", "popen", "execv", "execve", "execvp", "execvpe", "fork",
                 "forkpty", "posix_spawn", "posix_spawnp", "spawnv", "spawnve"):
        if hasattr(os, name):
            setattr(os, name, _refuse(name))
    """
)


@pytest.fixture(scope="module")
def guarded_env(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("guard")
    (folder / "sitecustomize.py").write_text(GUARD)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), env.get("PYTHONPATH")]))
    env["GPUDRV_GUARD_LOG"] = str(folder / "attempts.log")
    return env


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ("check", "{root}"),
        ("check", "{root}", "--format", "json", "--verbose"),
        ("audit", "{root}"),
        ("tag", "lab-node-0", "{root}"),
    ],
    ids=lambda argv: "-".join(a for a in argv if not a.startswith("{")),
)
def test_no_process_and_no_connection(hostile_repo: Path, guarded_env: dict, argv):
    log = Path(guarded_env["GPUDRV_GUARD_LOG"])
    log.unlink(missing_ok=True)
    result = run_cli(*(a.replace("{root}", str(hostile_repo)) for a in argv), env=guarded_env)
    assert result.returncode in (0, 1), result.stderr
    assert "refused by the test guard" not in result.stderr
    assert not log.exists(), log.read_text()


def test_the_guard_works(tmp_path: Path, guarded_env: dict):
    """The guard is really loaded in the CLI's process (else the test above proves nothing)."""
    log = Path(guarded_env["GPUDRV_GUARD_LOG"])
    log.unlink(missing_ok=True)
    probe = tmp_path / "probe.py"
    probe.write_text("import os\ntry:\n    os.system('true')\nexcept PermissionError:\n    pass\n")
    import subprocess
    import sys

    subprocess.run([sys.executable, str(probe)], env=guarded_env, check=True, timeout=60)
    assert log.read_text().startswith("system")


class _FakeApiServer(http.server.ThreadingHTTPServer):
    """An API server on 127.0.0.1 that records every request (kubectl asks for /version)."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                server.requests.append(self.path)
                body = json.dumps({"major": "1", "minor": "30", "gitVersion": "v1.30.0"})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)


KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster: {{server: "http://127.0.0.1:{port}"}}
contexts:
- name: prod
  context: {{cluster: prod, user: admin}}
current-context: prod
users:
- name: admin
  user: {{token: caller-secret-token}}
"""


@pytest.mark.skipif(kustomize_command() is None, reason="neither kustomize nor kubectl on PATH")
def test_kustomize_contacts_no_api_server(tmp_path: Path, guarded_env: dict):
    """The caller's kubeconfig (and in-cluster variables) point at a live API server: the
    kustomize run is started (and recorded) but nothing reaches the server."""
    root = tmp_path / "repo"
    write(root, "support-matrix.csv", MATRIX)
    write(root, "overlays/prod/kustomization.yaml", "resources: [nodes.yaml]\n")
    write(root, "overlays/prod/nodes.yaml", gpu_node("a", kernel="6.8.0-52-generic"))
    server = _FakeApiServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        home = tmp_path / "home"
        write(home, ".kube/config", KUBECONFIG.format(port=port))
        env = dict(guarded_env)
        env.update(
            HOME=str(home),
            KUBECONFIG=str(home / ".kube/config"),
            KUBERNETES_SERVICE_HOST="127.0.0.1",
            KUBERNETES_SERVICE_PORT=str(port),
            GPUDRV_GUARD_ALLOW="kubectl,kustomize",
        )
        log = Path(env["GPUDRV_GUARD_LOG"])
        log.unlink(missing_ok=True)
        result = run_cli("check", str(root), "--kustomize", "--format", "json", env=env)
    finally:
        server.shutdown()
        server.server_close()
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)["findings"]
    # rendered, and located in the repo file the node comes from
    assert ("GPU001", "overlays/prod/nodes.yaml") in {
        (f["rule"], f["location"]["file"]) for f in findings
    }
    assert any("as rendered by kustomize build overlays/prod" in f["message"] for f in findings)
    assert server.requests == []
    spawned = log.read_text().splitlines()
    assert spawned and all(line.startswith("allowed-spawn kub") for line in spawned), spawned
    # the tool's environment is the clean one: none of the caller's cluster settings
    assert all("KUBERNETES_SERVICE_HOST" not in line for line in spawned)


def test_kustomize_bases_outside_the_root_are_refused_with_a_finding(tmp_path: Path):
    """`../` past the root and a linked directory leading out are not rendered (kustomize
    itself would follow both: LoadRestrictionsRootOnly only confines files, not bases)."""
    from gpudrv_check.read.kustomize import plan
    from gpudrv_check.read.tree import WorkingTree

    outside = tmp_path / "outside"
    write(outside, "kustomization.yaml", "resources: [n.yaml]\n")
    write(outside, "n.yaml", gpu_node("outside-node"))
    root = tmp_path / "repo"
    write(root, "up/kustomization.yaml", "resources:\n- ../../outside\n")
    write(root, "linked/kustomization.yaml", "resources:\n- ./base\n")
    (root / "linked" / "base").symlink_to(outside, target_is_directory=True)
    write(root, "patched/kustomization.yaml", "patches:\n- path: p.yaml\n")
    (root / "patched" / "p.yaml").symlink_to(outside / "n.yaml")
    tree = WorkingTree(root)
    the_plan = plan(tree, tree.list_manifests([]))
    found = {
        (b.file, b.line, b.column): b.message
        for k in the_plan.kustomizations.values()
        for b in k.blockers
    }
    assert set(found) == {
        ("up/kustomization.yaml", 2, 3),
        ("linked/kustomization.yaml", 2, 3),
        ("patched/kustomization.yaml", 2, 3),
    }
    assert all("leaves the checked root" in m for m in found.values())


def test_a_kustomize_binary_is_preferred_over_kubectl(tmp_path: Path, monkeypatch):
    """`kubectl kustomize` embeds an older kustomize and, on common images, asks the API
    server for its version first: the standalone binary wins when both are on PATH."""
    for name in ("kubectl", "kustomize"):
        tool = tmp_path / name
        tool.write_text("#!/bin/sh\nexit 1\n")
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert kustomize_command() == ["kustomize", "build"]
    (tmp_path / "kustomize").unlink()
    assert kustomize_command() == ["kubectl", "kustomize"]
