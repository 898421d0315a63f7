"""SIGTERM and SIGINT during `check --jobs 2`: exit 143/130, no traceback, no partial output,
and no worker left behind holding the caller's pipes (the caller sees EOF)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import BUILDER_DOC, cli_command, gpu_node

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir(), reason="finds the workers through /proc (Linux)"
)

# enough that the run is still going when the signal arrives, even when the test process is
# descheduled for a while after it saw the workers (a CI run on 2 busy cores once sent it after
# a 4,000-file run had finished: exit 0); the signal ends the run, so only the writing costs
FILES = 12000


@pytest.fixture(scope="module")
def big_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("signals") / "repo"
    for i in range(FILES):
        path = root / f"nodes/{i // 100:03d}/node-{i:05d}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(gpu_node(f"node-{i:05d}") + BUILDER_DOC)  # workers read them
    return root


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def _wait_for_workers(proc: subprocess.Popen) -> list[int]:
    """Polls until the run has forked its workers (a wait for an event, not a timed check)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        workers = _children(proc.pid)
        if workers:
            return workers
        time.sleep(0.01)
    pytest.fail(f"no worker appeared (exit {proc.returncode})")


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")  # a zombie runs nothing and holds no pipe


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_ends_the_run_and_its_workers(big_repo: Path, tmp_path: Path, signum, code):
    out = tmp_path / "report.json"
    proc = subprocess.Popen(
        [*cli_command(), "check", str(big_repo), "--matrix", "none", "--jobs", "2"]
        + ["--no-cache", "--format", "json", "--output", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # a shell starts a background job with SIGINT ignored, and Python keeps an inherited
        # SIG_IGN: the run under test gets the disposition a terminal gives it
        preexec_fn=_default_sigint,
    )
    workers = _wait_for_workers(proc)
    if signum == signal.SIGINT:
        os.killpg(proc.pid, signum)  # Ctrl-C reaches the whole process group
    else:
        proc.send_signal(signum)  # a CI runner's cancel: the checker only
    # EOF on both pipes: no worker is left holding them (the old code hung here)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert stderr.strip() in ("gpudrv-check: terminated", "gpudrv-check: interrupted")
    assert stdout == ""
    assert list(tmp_path.iterdir()) == []  # no report, no temporary file
    for pid in workers:
        for _ in range(1000):  # the kernel delivers the parent-death signal asynchronously
            if _gone(pid):
                break
            time.sleep(0.01)
        assert _gone(pid), f"worker {pid} outlived the run"
