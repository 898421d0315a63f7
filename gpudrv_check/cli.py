"""Command line: argument parsing and exit codes only; the work is in `commands/`.

Exit codes: 0 clean, 1 findings at or above the failure level (or a MISSING image, a blocked
plan), 2 usage or configuration errors. Nothing else, whatever the input.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from gpudrv_check import __version__

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 too; keep our wording
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def _repo_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "path", nargs="?", default=".", metavar="PATH", help="root of the GitOps repo (default: .)"
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="config file (default: PATH/.gpudrv-check.yaml or pyproject.toml)",
    )
    p.add_argument(
        "--matrix",
        metavar="FILE",
        help="support matrix CSV (default: PATH/support-matrix.csv); 'none' to skip",
    )
    p.add_argument(
        "--operator-version",
        metavar="VERSION",
        help="GPU Operator release, selects the OS-tag rule (default: newest)",
    )
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="list what was read and what was skipped, and why (stderr)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gpudrv-check",
        description="Offline policy checks for Kubernetes GPU clusters kept in Git.",
    )
    parser.add_argument("--version", action="version", version=f"gpudrv-check {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("check", help="run every rule and report findings")
    _repo_options(p)
    p.add_argument(
        "--format", choices=("text", "json"), default=None, help="output format (default: text)"
    )
    p.add_argument(
        "--fail-on",
        choices=("error", "warning", "info", "never"),
        default=None,
        help="lowest severity that makes the exit code 1 (default: error)",
    )

    p = sub.add_parser("audit", help="driver images each GPU node needs vs the support matrix")
    _repo_options(p)

    p = sub.add_parser("tag", help="print the precompiled driver image tag of one node")
    p.add_argument("node", metavar="NODE")
    _repo_options(p)

    p = sub.add_parser("rules", help="list the built-in rules")
    p.add_argument("--format", choices=("text", "markdown"), default="text")

    p = sub.add_parser("explain", help="show the documentation of one rule")
    p.add_argument("rule", metavar="RULE", help="rule id (GPU001) or name (driver-image-missing)")
    return parser


def _never_fail_to_print() -> None:
    """A terminal that cannot show a character gets an escape, not an UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    _never_fail_to_print()
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        from gpudrv_check.commands import dispatch

        return dispatch(args)
    except KeyboardInterrupt:
        return 130 if os.environ.get("GPUDRV_CHECK_DEBUG") else EXIT_USAGE
    except BrokenPipeError:
        # a closed pipe (`| head`) is not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except Exception as err:  # the last line of defence: never a traceback, never exit 3+
        from gpudrv_check.config import ConfigError
        from gpudrv_check.model.finding import printable

        if isinstance(err, ConfigError):
            sys.stderr.write(f"gpudrv-check: error: {printable(str(err), ' ')}\n")
            return EXIT_USAGE
        if os.environ.get("GPUDRV_CHECK_DEBUG"):
            raise
        sys.stderr.write(
            f"gpudrv-check: internal error: {type(err).__name__}: {printable(str(err), ' ')}\n"
            "This is a bug in gpudrv-check; rerun with GPUDRV_CHECK_DEBUG=1 for the traceback "
            "and report it.\n"
        )
        return EXIT_USAGE


def run() -> None:
    sys.exit(main())
