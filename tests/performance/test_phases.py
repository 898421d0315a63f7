"""GPUDRV_CHECK_PHASES (engine/phases.py): per-phase timings on stderr when asked, nothing
otherwise. Only the shape of the lines is pinned, never a time."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

LAB = Path(__file__).resolve().parents[2] / "examples" / "lab"
LINE = re.compile(
    r"gpudrv-check: phase (\S+(?: \S+)?) cpu \d+\.\d{3}( wall \d+\.\d{3}( peak \d+ MB)?)?"
)


def _check(env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != "GPUDRV_CHECK_PHASES"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "gpudrv_check",
            "check",
            str(LAB),
            "--no-cache",
            "--fail-on",
            "never",
        ],
        capture_output=True,
        text=True,
        env={**base, **env},
        check=True,
    )


def test_phases_are_said_when_asked_and_the_report_is_unchanged():
    quiet, timed = _check({}), _check({"GPUDRV_CHECK_PHASES": "1"})
    assert "phase" not in quiet.stderr
    assert timed.stdout == quiet.stdout
    lines = [line for line in timed.stderr.splitlines() if line.startswith("gpudrv-check: phase")]
    assert all(LINE.fullmatch(line) for line in lines), lines
    names = [LINE.fullmatch(line).group(1) for line in lines]
    assert names[:4] == ["inputs", "read", "workers", "model"]
    assert "rule GPU001" in names and names[-2:] == ["settle", "render"]


def test_timings_are_not_replayed_by_the_result_cache(tmp_path):
    """The run that fills the whole-result cache is timed; the warm run that replays its
    stderr (warnings, notes) must not say that run's timings as its own."""
    cache = {"XDG_CACHE_HOME": str(tmp_path)}
    argv = [sys.executable, "-m", "gpudrv_check", "check", str(LAB), "--fail-on", "never"]
    env = {k: v for k, v in os.environ.items() if k != "GPUDRV_CHECK_PHASES"}
    timed = subprocess.run(
        argv, capture_output=True, text=True, env={**env, **cache, "GPUDRV_CHECK_PHASES": "1"}
    )
    warm = subprocess.run(argv, capture_output=True, text=True, env={**env, **cache})
    assert "gpudrv-check: phase read" in timed.stderr
    assert warm.stdout == timed.stdout and warm.stdout
    assert "phase" not in warm.stderr
