"""A check lets its trees and model go before it renders the reports (issue 22: the peak RSS of
a large repo was reached while rendering, with the whole model still held). The command runs
with the collector off (cli/__init__.py `run`), so the model must be freed by reference
counting alone: the derived models cached on the repo refer back to it (Repo.forget)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from gpudrv_check.cli.commands import check as check_command
from tests.conftest import run_main

LAB = Path(__file__).resolve().parents[2] / "examples" / "lab"


@pytest.mark.parametrize(("fmt", "released"), [("text", True), ("json", True), ("html", False)])
def test_the_model_is_gone_before_the_reports_are_rendered(monkeypatch, fmt, released):
    seen: dict[str, weakref.ref] = {}
    build, render = check_command.build_report, check_command._render_all

    def keep_refs(run, *args, **kwargs):
        repo = run.repo
        seen["repo"], seen["disruption"] = weakref.ref(repo), weakref.ref(repo.disruption)
        seen["node"] = weakref.ref(repo.nodes[0])
        return build(run, *args, **kwargs)

    alive: dict[str, bool] = {}

    def look(*args, **kwargs):
        alive.update({name: ref() is not None for name, ref in seen.items()})
        return render(*args, **kwargs)

    monkeypatch.setattr(check_command, "build_report", keep_refs)
    monkeypatch.setattr(check_command, "_render_all", look)
    enabled = gc.isenabled()
    gc.disable()  # as the console script runs: nothing but reference counting frees
    try:
        result = run_main("check", str(LAB), "--no-cache", "--format", fmt, "--fail-on", "never")
    finally:
        if enabled:
            gc.enable()
    assert result.returncode == 0, result.stderr
    assert set(alive) == {"repo", "disruption", "node"}
    # html renders sections of the model: it keeps it; the others let all of it go
    assert alive == dict.fromkeys(alive, not released)
