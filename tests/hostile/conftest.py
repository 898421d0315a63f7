"""Fixtures for the hostile corpus: no network, a time limit, the corpus built once."""

from __future__ import annotations

import signal
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES
from tests.hostile import corpus


class NetworkUsed(AssertionError):
    pass


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a hostile repo never opens a connection (in-process runs)."""

    def refuse(*args, **kwargs):
        raise NetworkUsed(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


class TimeLimit(AssertionError):
    pass


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Fail (instead of hanging the suite) when the block runs longer than `seconds`."""

    def expired(signum, frame):  # noqa: ARG001
        raise TimeLimit(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="session")
def hostile_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lab (with lab-node-3 joined) plus the whole corpus under hostile/. Do not modify."""
    base = tmp_path_factory.mktemp("hostile")
    corpus.copy_lab(EXAMPLES / "lab", base / "repo")
    corpus.build(base / "repo", base / "outside")
    return base / "repo"


@pytest.fixture(scope="session")
def lab_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("lab-only")
    corpus.copy_lab(EXAMPLES / "lab", base / "repo")
    return base / "repo"
