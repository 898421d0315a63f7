"""One module per command; each takes the parsed arguments and returns the exit code."""

from __future__ import annotations

import argparse
import gc
import importlib

_MODULES = {
    "check": "check",
    "audit": "audit",
    "tag": "tag",
    "operands": "operands",
    "place": "place",
    "report": "report",
    "plan": "plan",
    "rules": "rules",
    "explain": "rules",
}


#: garbage-collector thresholds for a run: a check builds a great many long-lived, acyclic
#: objects (the located trees, the model) that the default thresholds (700, 10, 10) rescan
#: again and again for nothing (~20% of a large repo's CPU time); young generations are still
#: collected, so the rare short-lived cycle is freed
GC_THRESHOLDS = (100_000, 50, 1000)


def dispatch(args: argparse.Namespace) -> int:
    gc.set_threshold(*GC_THRESHOLDS)  # before any worker process is forked: they inherit it
    module = importlib.import_module(f"gpudrv_check.commands.{_MODULES[args.command]}")
    return module.run(args)
