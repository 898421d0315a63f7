"""Command line: argument parsing and exit codes only; the work is in `commands/`.

Exit codes: 0 clean, 1 findings at or above the failure level (or a MISSING image, a blocked
plan), 2 usage or configuration errors. Nothing else, whatever the input.
"""

from __future__ import annotations

import os
import sys

from gpudrv_check import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import NoReturn


EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
# 128 + the signal number, as a shell reports a process the signal ended
EXIT_SIGINT, EXIT_SIGTERM = 130, 143
#: `--format` choices of `check` (modules in gpudrv_check/report/; kept here so that parsing
#: does not import the report package)
REPORT_FORMATS = ("text", "json", "sarif", "junit", "github", "gitlab", "markdown")


def _parser_classes() -> tuple[type, type]:
    """argparse is imported only when a parser is built (`--version` answers without it)."""
    import argparse

    class _Ordered(argparse.Action):
        """Collects --format and --output in command-line order, so each --output can be paired
        with the --format written just before it."""

        def __call__(self, parser, namespace, values, option_string=None):
            sequence = list(getattr(namespace, "report_args", None) or [])
            sequence.append((self.dest, values))
            namespace.report_args = sequence

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:  # argparse exits 2 too; keep our wording
            self.print_usage(sys.stderr)
            sys.stderr.write(f"{self.prog}: error: {message}\n")
            raise SystemExit(EXIT_USAGE)

    return _Ordered, _Parser


def _positive_int(text: str) -> int:
    from gpudrv_check.core.finding import quoted
    from gpudrv_check.k8s.numbers import parse_int64

    value = parse_int64(text.strip())
    if value is None or value < 1:
        import argparse

        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {quoted(text)}")
    return value


def _operator_version(text: str) -> str:
    from gpudrv_check.k8s.numbers import oversized_number

    if oversized_number(text) is not None:
        import argparse

        from gpudrv_check.read.config import operator_version_error

        raise argparse.ArgumentTypeError(operator_version_error(text))
    return text


def _repo_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "path",
        nargs="?",
        default=None,
        metavar="PATH",
        help="root of the GitOps repo (default: .); - reads a manifest stream from stdin",
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
        type=_operator_version,
        help="GPU Operator release, selects the OS-tag rule (default: newest)",
    )
    p.add_argument(
        "--jobs",
        type=_positive_int,
        metavar="N",
        help="processes parsing files when there are many (default: the number of cores); "
        "the output is the same for any N",
    )
    p.add_argument(
        "--rev",
        metavar="REV",
        help="check PATH as committed at a git revision (read from the object store; the "
        "working tree and the index are not touched)",
    )
    p.add_argument(
        "--kustomize",
        action="store_true",
        help="render each Kustomize root (kustomize build / kubectl kustomize, offline, no "
        "plugins, no Helm) and check the rendered objects",
    )
    p.add_argument(
        "--stdin-name",
        metavar="NAME",
        help="file name for locations when PATH is - (default: <stdin>)",
    )
    p.add_argument(
        "--inventory",
        metavar="FILE",
        action="append",
        help="extra node inventory file (Node objects or a NodeInventory); repeatable",
    )
    p.add_argument(
        "--cluster",
        metavar="NAME",
        help="in a repo of several clusters, check only this one (see docs/clusters.md)",
    )
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="list what was read and what was skipped, and why (stderr)",
    )


def build_parser() -> argparse.ArgumentParser:
    _Ordered, _Parser = _parser_classes()
    parser = _Parser(
        prog="gpudrv-check",
        description="Offline policy checks for Kubernetes GPU clusters kept in Git.",
    )
    parser.add_argument("--version", action="version", version=f"gpudrv-check {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("check", help="run every rule and report findings")
    _repo_options(p)
    p.set_defaults(report_args=[])
    p.add_argument(
        "--format",
        dest="format",
        action=_Ordered,
        choices=REPORT_FORMATS,
        help="report format; repeatable (default: text, or github when GITHUB_ACTIONS=true)",
    )
    p.add_argument(
        "--output",
        dest="output",
        action=_Ordered,
        metavar="FILE",
        help="write the --format just before it to FILE ('-': stdout); the summary line "
        "still goes to stdout",
    )
    p.add_argument(
        "--baseline",
        metavar="FILE",
        help="report only findings not recorded in FILE (written by --write-baseline)",
    )
    p.add_argument(
        "--write-baseline",
        metavar="FILE",
        help="record every current finding in FILE; they are then reported as baselined",
    )
    p.add_argument(
        "--fail-on",
        choices=("error", "warning", "info", "never"),
        default=None,
        help="lowest severity that makes the exit code 1 (default: error)",
    )
    p.add_argument(
        "--base",
        metavar="REV",
        help="pull-request mode: report only findings that are new since git revision REV",
    )
    p.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="content-hash cache of parsed files and results (default: "
        "$XDG_CACHE_HOME/gpudrv-check or ~/.cache/gpudrv-check)",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="neither read nor write the cache",
    )

    p = sub.add_parser("audit", help="driver images each GPU node needs vs the support matrix")
    _repo_options(p)

    p = sub.add_parser("tag", help="print the precompiled driver image tag of one node")
    p.add_argument("node", metavar="NODE")
    _repo_options(p)

    p = sub.add_parser(
        "operands", help="which GPU Operator operand runs on which node, and DaemonSet counts"
    )
    _repo_options(p)
    p.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )

    p = sub.add_parser("place", help="the nodes each workload can land on, or why none")
    _repo_options(p)
    p.add_argument(
        "--workload",
        metavar="KIND/NAMESPACE/NAME",
        help="only this workload, with every node's verdict",
    )
    p.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )

    p = sub.add_parser("report", help="driver facts as KEY=value lines (nodes, skew, states)")
    _repo_options(p)
    p.add_argument("--node", metavar="NAME", help="add this node's TAG= and UPGRADE_STATE=")
    p.add_argument("--format", choices=("text", "json"), default="text")

    p = sub.add_parser("plan", help="the ordered driver upgrade of one node, step by step")
    p.add_argument("node", metavar="NODE")
    p.add_argument(
        "--driver", metavar="VERSION", required=True, help="target driver version, e.g. 550.90.07"
    )
    _repo_options(p)
    p.add_argument(
        "--write",
        action="store_true",
        help="record steps 1 and 4 in the repo: append the matrix row, rewrite the node's "
        "driver labels",
    )
    p.add_argument(
        "--timeout",
        metavar="DURATION",
        default="300s",
        help="--timeout of the drain command (default: 300s)",
    )
    p.add_argument("--format", choices=("text", "json"), default="text")

    p = sub.add_parser(
        "rehearse", help="rehearse the operator's driver upgrade over every GPU node"
    )
    _repo_options(p)
    target = p.add_mutually_exclusive_group()
    target.add_argument(
        "--driver", metavar="VERSION", help="target driver version (default: driver.version)"
    )
    target.add_argument(
        "--to-matrix",
        action="store_true",
        help="each node to the newest driver branch the support matrix has for it",
    )
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")

    from gpudrv_check.cli.commands.inventory import add_parser as add_inventory

    add_inventory(sub)

    p = sub.add_parser("rules", help="list the built-in rules")
    p.add_argument("--format", choices=("text", "markdown"), default="text")

    p = sub.add_parser("explain", help="show the documentation of one rule")
    p.add_argument("rule", metavar="RULE", help="rule id (GPU001) or name (driver-image-missing)")
    return parser


def _is_late_path(args: argparse.Namespace, extras: list[str]) -> bool:
    return (
        len(extras) == 1
        and not extras[0].startswith("-")
        and hasattr(args, "path")
        and args.path is None
    )


def _never_fail_to_print() -> None:
    """A terminal that cannot show a character gets an escape, not an UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    _never_fail_to_print()
    if list(sys.argv[1:] if argv is None else argv) == ["--version"]:
        # the common probe answers before the parser (and its subcommands) is even built
        sys.stdout.write(f"gpudrv-check {__version__}\n")
        return EXIT_OK
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras and _is_late_path(args, extras):
        # `plan NODE --driver V PATH`: argparse fills the positionals before the options, so
        # a PATH written after them comes back unrecognised
        args.path = extras.pop()
    if extras:
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    if hasattr(args, "path") and args.path is None:
        args.path = "."
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    from gpudrv_check.core.signals import Terminated, terminate_on_sigterm

    try:
        from gpudrv_check.cli.commands import dispatch

        with terminate_on_sigterm():
            return dispatch(args)
    except KeyboardInterrupt:
        sys.stderr.write("gpudrv-check: interrupted\n")
        return EXIT_SIGINT
    except Terminated:
        sys.stderr.write("gpudrv-check: terminated\n")
        return EXIT_SIGTERM
    except BrokenPipeError:
        # a closed pipe (`| head`) is not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except Exception as err:  # the last line of defence: never a traceback, never exit 3+
        from gpudrv_check.core.finding import printable
        from gpudrv_check.read.config import ConfigError

        if isinstance(err, ConfigError):
            sys.stderr.write(f"gpudrv-check: error: {printable(str(err), ' ')}\n")
            return EXIT_USAGE
        if isinstance(err, MemoryError):
            sys.stderr.write(OUT_OF_MEMORY)
            return EXIT_USAGE
        if os.environ.get("GPUDRV_CHECK_DEBUG"):
            raise
        sys.stderr.write(
            f"gpudrv-check: internal error: {type(err).__name__}: {printable(str(err), ' ')}\n"
            "This is a bug in gpudrv-check; rerun with GPUDRV_CHECK_DEBUG=1 for the traceback "
            "and report it.\n"
        )
        return EXIT_USAGE


OUT_OF_MEMORY = (
    "gpudrv-check: error: out of memory while checking; exclude large generated files "
    "(`exclude:` in .gpudrv-check.yaml), lower max_total_bytes or max_file_bytes, or allow "
    "the process more memory\n"
)


def run() -> None:
    """The console script: main() with the cyclic collector off from start to end, then an
    exit that skips tearing the run down. The process ends with os._exit, so no collection is
    ever needed; re-enabled, the collector would scan the whole model once before the exit."""
    import gc

    gc.disable()
    exit_now(main())


def exit_now(code: int) -> None:
    """Flush what was written and end the process with `code` at once.

    A large run leaves millions of objects (its model) that the interpreter would otherwise
    free one by one at exit - a second or more of doing nothing useful. Everything the run
    writes is complete by now: reports and cache entries are closed and renamed into place,
    worker processes joined; only the standard streams are buffered.
    """
    if sys.gettrace() is not None or sys.getprofile() is not None:
        sys.exit(code)  # a profiler, coverage or a debugger reports at exit: let it
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be said
            pass
    os._exit(code)
