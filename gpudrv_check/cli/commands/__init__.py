"""One module per command; each takes its typed options (cli/options.py) and returns the
exit code."""

from __future__ import annotations

import gc
import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpudrv_check.cli.options import Options

_MODULES = {
    "check": "check",
    "audit": "audit",
    "tag": "tag",
    "operands": "operands",
    "place": "place",
    "report": "report",
    "plan": "plan",
    "rehearse": "rehearse",
    "rules": "rules",
    "inventory": "inventory",
    "explain": "rules",
    "completion": "completion",
}


def dispatch(options: Options) -> int:
    # The cyclic garbage collector is off for the run (and in the worker processes forked
    # from it). A run builds millions of long-lived objects (located trees, the model) and
    # frees almost nothing before it ends, so every collection would scan them for nothing:
    # ~20 % of a large repo's time, and more with worker results arriving in bulk. What a
    # run leaves in reference cycles is its own model, garbage only once it is over;
    # callers that stay alive (tests, embedding) get the collector back afterwards.
    enabled = gc.isenabled()
    gc.disable()
    try:
        module = importlib.import_module(f"gpudrv_check.cli.commands.{_MODULES[options.command]}")
        return module.run(options)
    finally:
        if enabled:
            gc.enable()
