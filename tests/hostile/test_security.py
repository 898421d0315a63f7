"""Nothing from the repo is executed and nothing goes to the network, checked in the real CLI
process: a sitecustomize on PYTHONPATH records (and refuses) every connection and process spawn
before gpudrv-check starts."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from tests.conftest import run_cli

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

    socket.socket.connect = _refuse("connect")
    socket.socket.connect_ex = _refuse("connect")
    socket.create_connection = _refuse("connect")
    socket.getaddrinfo = _refuse("resolve")
    subprocess.Popen.__init__ = _refuse("spawn")
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
