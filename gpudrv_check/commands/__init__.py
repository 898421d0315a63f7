"""One module per command; each takes the parsed arguments and returns the exit code."""

from __future__ import annotations

import argparse
import importlib

_MODULES = {
    "check": "check",
    "audit": "audit",
    "tag": "tag",
    "operands": "operands",
    "place": "place",
    "rules": "rules",
    "explain": "rules",
}


def dispatch(args: argparse.Namespace) -> int:
    module = importlib.import_module(f"gpudrv_check.commands.{_MODULES[args.command]}")
    return module.run(args)
