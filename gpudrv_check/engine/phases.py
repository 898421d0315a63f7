"""Where one run's time goes: CPU and wall seconds per phase, on stderr when the environment
sets GPUDRV_CHECK_PHASES (issue 22 profiles large repos with it); nothing otherwise.

    GPUDRV_CHECK_PHASES=1 gpudrv-check check big-repo --jobs 2

Each line is `gpudrv-check: phase NAME cpu C wall W peak P MB` (P: the largest resident size of
this process so far), in the order the phases ended, then the CPU of the worker processes (they
parse files while this process does too). Timers read the clocks only when asked to: a run
without the variable pays one dictionary lookup per phase.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

ENV = "GPUDRV_CHECK_PHASES"


def enabled() -> bool:
    return bool(os.environ.get(ENV))


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as phase `name` (said when it ends) if GPUDRV_CHECK_PHASES is set."""
    if not enabled():
        yield
        return
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        yield
    finally:
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        _say(f"gpudrv-check: phase {name} cpu {cpu:.3f} wall {wall:.3f}{_peak()}\n")


def _say(line: str) -> None:
    """Write a timing line to the process's own stderr: never into what `check` captures of
    its stderr for the result cache (a warm run would replay the timings of the run that
    filled it)."""
    stream = sys.__stderr__ if sys.__stderr__ is not None else sys.stderr
    stream.write(line)
    stream.flush()


def _peak() -> str:
    """` peak N MB`: the largest resident size of this process so far (where the peak of a run
    is reached), or nothing where the platform does not say."""
    try:
        import resource
    except ImportError:  # not on this platform
        return ""
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return f" peak {kib / (1 << 20 if sys.platform == 'darwin' else 1 << 10):.0f} MB"


def say_workers() -> None:
    """The CPU seconds of the worker processes this run waited for, if asked for."""
    if not enabled():
        return
    try:
        import resource
    except ImportError:  # not on this platform
        return
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    _say(f"gpudrv-check: phase workers cpu {usage.ru_utime + usage.ru_stime:.3f}\n")
