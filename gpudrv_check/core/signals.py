"""Signals: SIGINT and SIGTERM end a run cleanly (exit 130/143, no traceback, no partial
output), and worker processes never outlive the run that started them."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class Terminated(BaseException):
    """SIGTERM arrived: unwinds like KeyboardInterrupt (temporary files are removed)."""


def _raise_terminated(signum: int, frame: object) -> None:  # noqa: ARG001
    raise Terminated


@contextmanager
def terminate_on_sigterm() -> Iterator[None]:
    """SIGTERM raises Terminated in the main thread while the block runs."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread (embedded): leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def worker_start(parent: int) -> None:
    """In a worker process, first thing: die with the parent, leave signals to it.

    The kernel sends SIGKILL when the parent dies (PR_SET_PDEATHSIG, Linux); a parent that is
    already gone (it died before this ran) ends the worker at once. SIGINT from the terminal
    reaches the whole process group: the parent handles it, the worker ignores it (no second
    traceback); SIGTERM ends a worker at once and silently.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent()
    if os.getppid() != parent:
        os._exit(1)
    if hasattr(signal, "pthread_sigmask"):  # held since the fork (signals_held): now they act
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)


_HELD = {signal.SIGINT, signal.SIGTERM}


@contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait (blocked, not lost) while the block runs: a worker forked in it
    cannot take one before `worker_start` has set what it does; the parent takes them after."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl: the parent still kills us on its way out
        pass


def kill_workers(pool: object) -> None:
    """End a process pool's workers now (the run is being interrupted): no join, no wait for
    a worker blocked writing a result nobody will read."""
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        try:
            process.kill()
        except (OSError, ValueError, AttributeError):
            pass
    shutdown = getattr(pool, "shutdown", None)
    if shutdown is not None:
        shutdown(wait=False, cancel_futures=True)


class BudgetExceeded(Exception):
    """A block ran past its time budget (see `time_budget`)."""


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Raise BudgetExceeded in the block once it has run `seconds` (SIGALRM, main thread).

    A regular expression that backtracks checks for signals as it runs, so this ends it. An
    outer timer (a caller's own SIGALRM limit) keeps its deadline and its handler. Outside the
    main thread, or where SIGALRM does not exist, the block runs unbounded.
    """
    import threading
    import time

    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        yield
        return
    start = time.monotonic()
    outer_left, _ = signal.getitimer(signal.ITIMER_REAL)
    outer_handler = signal.getsignal(signal.SIGALRM)

    def expired(signum: int, frame: FrameType | None) -> None:
        if outer_left and time.monotonic() - start >= outer_left - 1e-3:
            if callable(outer_handler):
                outer_handler(signum, frame)  # the outer deadline came first
            return
        raise BudgetExceeded

    signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, min(seconds, outer_left) if outer_left else seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, outer_handler)
        if outer_left:
            left = outer_left - (time.monotonic() - start)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6))
