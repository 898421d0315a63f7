"""Command line: argument parsing and exit codes only; the work is in `commands/`.

The parsed arguments become typed option objects (`cli/options.py`) before any command runs.

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
    from typing import Any, NoReturn


EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
# 128 + the signal number, as a shell reports a process the signal ended
EXIT_SIGINT, EXIT_SIGTERM = 130, 143
#: `--format` choices of `check` (modules in gpudrv_check/report/; kept here so that parsing
#: does not import the report package)
REPORT_FORMATS = (
    "text",
    "concise",
    "json",
    "sarif",
    "junit",
    "github",
    "gitlab",
    "markdown",
    "html",
)
#: `inventory import --max-bytes` default: a 20,000-node `kubectl get nodes -o json` is about
#: 12 MB with its images lists (here, so that building the parser imports no command module)
INVENTORY_MAX_BYTES = 256 * 1024 * 1024


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

    class _Width:
        """argparse's formatter at the width argparse gives it, worked out without importing
        `shutil` (with `bz2` and `lzma`: about 3 ms of every run, for the one call
        argparse makes of it, as each argument is added)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if len(args) < 4 and kwargs.get("width") is None:  # (prog, indent, position, width)
                kwargs["width"] = terminal_columns() - 2  # as argparse.HelpFormatter takes it
            super().__init__(*args, **kwargs)

    class _Formatter(_Width, argparse.HelpFormatter):
        pass

    class _RawFormatter(_Width, argparse.RawDescriptionHelpFormatter):
        pass

    ours = {argparse.HelpFormatter: _Formatter, argparse.RawDescriptionHelpFormatter: _RawFormatter}

    class _Parser(argparse.ArgumentParser):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            given = kwargs.get("formatter_class", argparse.HelpFormatter)
            kwargs["formatter_class"] = ours.get(given, given)
            super().__init__(*args, **kwargs)

        def error(self, message: str) -> NoReturn:  # argparse exits 2 too; keep our wording
            self.print_usage(sys.stderr)
            sys.stderr.write(f"{self.prog}: error: {message}\n")
            raise SystemExit(EXIT_USAGE)

    return _Ordered, _Parser


def terminal_columns() -> int:
    """`shutil.get_terminal_size().columns`, as that function works it out: $COLUMNS when a
    positive whole number, else the width of the terminal on the process's first standard
    output, else 80 (it reads $LINES too, and asks the terminal when that one is not set,
    which can change nothing of the columns). A terminal that says 0 columns (one whose size
    is not set yet) gives 80 since Python 3.11 and 0 before (Lib/shutil.py: the fallback for
    a zero size came in 3.11), as argparse's own formatter then takes it."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80
    return size.columns or (80 if sys.version_info >= (3, 11) else 0)


def _positive_int(text: str) -> int:
    from gpudrv_check.core.finding import quoted
    from gpudrv_check.k8s.numbers import parse_int64

    value = parse_int64(text.strip())
    if value is None or value < 1:
        import argparse

        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {quoted(text)}")
    return value


def _operator_version(text: str) -> str:
    from gpudrv_check.read.config_file import operator_version_problem

    problem = operator_version_problem(text)
    if problem is not None:
        import argparse

        raise argparse.ArgumentTypeError(problem)
    return text


def _repo_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "path",
        nargs="?",
        default=None,
        metavar="PATH",
        help="root of the GitOps repo (default: the nearest directory up from here, within its "
        "git repository, that holds .gpudrv-check.yaml; else .); - reads a manifest stream "
        "from stdin",
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
        help="GPU Operator release, selects the OS-tag rule (default: the gpu-operator chart "
        "version the repo deploys, else newest)",
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
        "--staged",
        action="store_true",
        help="check PATH as the git index holds it, what the next commit records (untracked "
        "and ignored files and unstaged edits do not count; the pre-commit hook uses it)",
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


#: per command: what it does (the --help description) and examples (the --help epilog)
HELP: dict[str, tuple[str, str]] = {
    "check": (
        "Run every rule and custom policy over the repo and report the findings, grouped by "
        "file (--format concise: one line each). Exit 1 when a finding is at or above "
        "--fail-on, 2 on a usage or configuration error.",
        "gpudrv-check check\n"
        "gpudrv-check check deploy/ --select GPU001,GPU010 --quiet\n"
        "gpudrv-check check . --base origin/main --format github\n"
        "gpudrv-check check . --format sarif --output gpudrv-check.sarif --fail-on never\n"
        "kustomize build overlays/prod | gpudrv-check check - --inventory nodes.yaml",
    ),
    "audit": (
        "The driver image each GPU node needs, checked against the support matrix: "
        "`<node> MISSING <tag>` per missing image (exit 1), else OK.",
        "gpudrv-check audit\ngpudrv-check audit . --kustomize",
    ),
    "tag": (
        "The precompiled driver image tag (<branch>-<kernel>-<os-tag>) of one node.",
        "gpudrv-check tag lab-node-3",
    ),
    "operands": (
        "Which GPU Operator operand runs on which node, why not, the broken chains (exit 1) "
        "and each operand DaemonSet's desiredNumberScheduled.",
        "gpudrv-check operands examples/operands\ngpudrv-check operands . --format json",
    ),
    "place": (
        "The nodes each workload's pods can land on, or what the scheduler would report and "
        "why no node is left; how its CUDA images fit those nodes' drivers.",
        "gpudrv-check place\ngpudrv-check place . --workload Deployment/ml/trainer",
    ),
    "report": (
        "Driver facts as KEY=value lines: GPU nodes, skew, matrix rows, upgrade states.",
        "gpudrv-check report\ngpudrv-check report . --node lab-node-3",
    ),
    "plan": (
        "The ordered driver upgrade of one node: image, headroom, drain, relabel, uncordon, "
        "each ready or blocked with the file:line to change (exit 1 when one is blocked).",
        "gpudrv-check plan lab-node-3 --driver 550.90.07\n"
        "gpudrv-check plan lab-node-3 --driver 550.90.07 --write",
    ),
    "rehearse": (
        "The GPU Operator's driver upgrade over the whole fleet, reconcile by reconcile, until "
        "every node is upgrade-done or the rehearsal stalls (exit 1).",
        "gpudrv-check rehearse\ngpudrv-check rehearse . --to-matrix --format markdown",
    ),
    "rules": ("The built-in rules.", "gpudrv-check rules\ngpudrv-check rules --format markdown"),
    "explain": (
        "The documentation of one rule, by id or name.",
        "gpudrv-check explain GPU001\ngpudrv-check explain driver-image-missing",
    ),
    "inventory": (
        "Read a `kubectl get nodes -o json` (or -o yaml) export and write a compact, sorted "
        "NodeInventory with only what the checker reads. Importing an unchanged cluster again "
        "gives the same bytes (docs/inventory.md).",
        "kubectl get nodes -o json | gpudrv-check inventory import - > inventory/nodes.yaml\n"
        "gpudrv-check inventory import nodes.json --write\n"
        "gpudrv-check inventory import nodes.json --write --cluster staging",
    ),
    "completion": (
        "A shell completion script for gpudrv-check on stdout.",
        'eval "$(gpudrv-check completion bash)"     # in ~/.bashrc\n'
        'eval "$(gpudrv-check completion zsh)"      # in ~/.zshrc',
    ),
}


def _inventory_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("import",), help="what to do (import)")
    p.add_argument("file", metavar="FILE", help="the export; - reads standard input")
    p.add_argument(
        "--labels-prefix",
        metavar="PREFIX",
        action="append",
        help="also keep labels starting with PREFIX (e.g. example.com/); repeatable",
    )
    p.add_argument(
        "--source-name",
        metavar="NAME",
        help="what the header says the file was made from (default: the file's name)",
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument("--output", metavar="FILE", help="write FILE (atomically) instead of stdout")
    out.add_argument(
        "--write",
        action="store_true",
        help="update the inventory file the config names, keeping its comments",
    )
    p.add_argument("--root", metavar="PATH", help="the repo for --write (default: .)")
    p.add_argument(
        "--cluster",
        metavar="NAME",
        help="with --write: update that cluster's inventory file (docs/clusters.md)",
    )
    p.add_argument(
        "--config", metavar="FILE", help="config file (default: ROOT/.gpudrv-check.yaml)"
    )
    p.add_argument(
        "--max-bytes",
        metavar="N",
        type=_positive_int,
        help=f"largest export read (default: {INVENTORY_MAX_BYTES})",
    )


def _command(sub, name: str, short: str) -> argparse.ArgumentParser:
    """A subcommand with its description and examples in --help."""
    import argparse

    description, examples = HELP[name]
    return sub.add_parser(
        name,
        help=short,
        description=description,
        epilog="examples:\n" + "\n".join("  " + line for line in examples.splitlines()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _rule_list(text: str) -> list[str]:
    """`--select GPU001,GPU010` (repeatable: `--select GPU001 --select GPU010`)."""
    return [part.strip() for part in text.split(",") if part.strip()]


def _check_options(p: argparse.ArgumentParser, ordered: type) -> None:
    p.set_defaults(report_args=[])
    p.add_argument(
        "--format",
        dest="format",
        action=ordered,
        choices=REPORT_FORMATS,
        help="report format; repeatable (default: text, or github when GITHUB_ACTIONS=true)",
    )
    p.add_argument(
        "--output",
        dest="output",
        action=ordered,
        metavar="FILE",
        help="write the --format just before it to FILE ('-': stdout); when no report goes to "
        "stdout, the summary line does",
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
        "--select",
        metavar="RULE[,RULE...]",
        type=_rule_list,
        action="extend",
        help="only these rules, by id or name (comma-separated; repeatable)",
    )
    p.add_argument(
        "--ignore",
        metavar="RULE[,RULE...]",
        type=_rule_list,
        action="extend",
        help="not these rules, by id or name (comma-separated; repeatable)",
    )
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="errors only and no summary (text and concise formats)",
    )
    p.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the severities (default: auto: on a terminal, unless NO_COLOR is set or "
        "FORCE_COLOR asks for it)",
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


def _format_option(p: argparse.ArgumentParser, *choices: str) -> None:
    p.add_argument(
        "--format",
        choices=choices or ("text", "json"),
        default="text",
        help="output format (default: text)",
    )


def _check_parser(sub, ordered) -> None:
    p = _command(sub, "check", "run every rule and report findings")
    _repo_options(p)
    _check_options(p, ordered)


def _audit_parser(sub, _ordered) -> None:
    p = _command(sub, "audit", "driver images each GPU node needs vs the support matrix")
    _repo_options(p)


def _tag_parser(sub, _ordered) -> None:
    p = _command(sub, "tag", "print the precompiled driver image tag of one node")
    p.add_argument("node", metavar="NODE")
    _repo_options(p)


def _operands_parser(sub, _ordered) -> None:
    p = _command(
        sub, "operands", "which GPU Operator operand runs on which node, and DaemonSet counts"
    )
    _repo_options(p)
    _format_option(p)


def _place_parser(sub, _ordered) -> None:
    p = _command(sub, "place", "the nodes each workload can land on, or why none")
    _repo_options(p)
    p.add_argument(
        "--workload",
        metavar="KIND/NAMESPACE/NAME",
        help="only this workload, with every node's verdict",
    )
    _format_option(p)


def _report_parser(sub, _ordered) -> None:
    p = _command(sub, "report", "driver facts as KEY=value lines (nodes, skew, states)")
    _repo_options(p)
    p.add_argument("--node", metavar="NAME", help="add this node's TAG= and UPGRADE_STATE=")
    _format_option(p)


def _plan_parser(sub, _ordered) -> None:
    p = _command(sub, "plan", "the ordered driver upgrade of one node, step by step")
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
    _format_option(p)


def _rehearse_parser(sub, _ordered) -> None:
    p = _command(sub, "rehearse", "rehearse the operator's driver upgrade over every GPU node")
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
    _format_option(p, "text", "json", "markdown")


def _inventory_command(sub, _ordered) -> None:
    _inventory_parser(_command(sub, "inventory", "import node facts from `kubectl get nodes`"))


def _rules_parser(sub, _ordered) -> None:
    p = _command(sub, "rules", "list the built-in rules")
    _format_option(p, "text", "markdown")


def _explain_parser(sub, _ordered) -> None:
    p = _command(sub, "explain", "show the documentation of one rule")
    p.add_argument("rule", metavar="RULE", help="rule id (GPU001) or name (driver-image-missing)")


def _completion_parser(sub, _ordered) -> None:
    p = _command(sub, "completion", "print a shell completion script")
    p.add_argument("shell", choices=("bash", "zsh"), help="the shell")


#: each command's parser, in the order --help lists them
_COMMAND_PARSERS = {
    "check": _check_parser,
    "audit": _audit_parser,
    "tag": _tag_parser,
    "operands": _operands_parser,
    "place": _place_parser,
    "report": _report_parser,
    "plan": _plan_parser,
    "rehearse": _rehearse_parser,
    "inventory": _inventory_command,
    "rules": _rules_parser,
    "explain": _explain_parser,
    "completion": _completion_parser,
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command-line parser; `only`: a command, whose parser alone is built (what a run of
    that command parses the same way, at half the cost: the others are never consulted)."""
    import argparse

    _Ordered, _Parser = _parser_classes()
    parser = _Parser(
        prog="gpudrv-check",
        description="Offline policy checks for Kubernetes GPU clusters kept in Git.",
        epilog="`gpudrv-check COMMAND --help` describes a command, with examples.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"gpudrv-check {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, add in _COMMAND_PARSERS.items():
        if only is None or name == only:
            add(sub, _Ordered)
    return parser


def _only_command(argv: Sequence[str]) -> str | None:
    """The command `argv` runs when it starts with one (argparse takes the first word that is
    not an option as the command, and the top level has no option taking a value); None
    otherwise (`--help`, no command, an unknown one: the full parser says what there is)."""
    if argv and argv[0] in _COMMAND_PARSERS:
        return argv[0]
    return None


def command_words() -> dict[str, tuple[list[str], dict[str, list[str]]]]:
    """Per command: its long option strings, and the choices of the options that have them
    (what shell completion offers; read from the parser, so it never drifts)."""
    import argparse

    found: dict[str, tuple[list[str], dict[str, list[str]]]] = {}
    for action in build_parser()._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for name, sub in action.choices.items():
            flags: set[str] = set()
            choices: dict[str, list[str]] = {}
            for option in sub._actions:
                flags.update(s for s in option.option_strings if s.startswith("--"))
                for flag in option.option_strings if option.choices else ():
                    choices[flag] = [str(c) for c in option.choices or ()]
            found[name] = (sorted(flags), choices)
    return found


def _is_late_path(args: argparse.Namespace, extras: list[str]) -> bool:
    return (
        len(extras) == 1
        and not extras[0].startswith("-")
        and hasattr(args, "path")
        and args.path is None
    )


def default_path(cwd: str | None = None) -> str:
    """PATH when none is given: the nearest directory from the working directory up that
    holds `.gpudrv-check.yaml`, not past the top of its git repository; else `.`."""
    start = os.path.abspath(cwd or os.getcwd())
    here = start
    while True:
        if os.path.isfile(os.path.join(here, ".gpudrv-check.yaml")):
            return "." if here == start else os.path.relpath(here, start)
        parent = os.path.dirname(here)
        if parent == here or os.path.exists(os.path.join(here, ".git")):
            return "."
        here = parent


def _never_fail_to_print() -> None:
    """A terminal that cannot show a character gets an escape, not an UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def _closed_streams_dropped() -> None:
    """A standard stream closed when the process started (`>&-`) is None in Python: what is
    written to it is dropped, as `>/dev/null` drops it (a run writing its reports to files
    still writes them, and its exit code says what it found)."""
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - until the exit
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - until the exit


def main(argv: Sequence[str] | None = None) -> int:
    _closed_streams_dropped()
    _never_fail_to_print()
    words = list(sys.argv[1:] if argv is None else argv)
    if words == ["--version"]:
        # the common probe answers before the parser (and its subcommands) is even built
        sys.stdout.write(f"gpudrv-check {__version__}\n")
        return EXIT_OK
    parser = build_parser(_only_command(words))
    args, extras = parser.parse_known_args(words)
    if extras and _is_late_path(args, extras):
        # `plan NODE --driver V PATH`: argparse fills the positionals before the options, so
        # a PATH written after them comes back unrecognised
        args.path = extras.pop()
    if extras:
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if hasattr(args, "path") and args.path is None:
        args.path = default_path()
    from gpudrv_check.core.signals import Terminated, terminate_on_sigterm

    try:
        from gpudrv_check.cli.commands import dispatch
        from gpudrv_check.cli.options import from_namespace

        options = from_namespace(args)
        with terminate_on_sigterm():
            return dispatch(options)
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
        from gpudrv_check.read.config_file import ConfigError

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


#: what a run still holds when it returns, kept from being freed object by object: set (to a
#: list) by the console script, whose process ends with os._exit (`exit_now`);
#: None in a caller that stays alive (tests, embedding), which gets everything freed as usual
_KEPT: list | None = None


def keep_until_exit(*values: object) -> None:
    """Hold ``values`` until the process ends when the console script runs: a large run's
    findings and reports are tens of thousands of objects, freed one by one as its frames
    return, just before an exit that frees nothing."""
    if _KEPT is not None:
        _KEPT.extend(values)


def keep_at_exit() -> None:
    """From now on, what a run keeps (`keep_until_exit`) is never freed: the console script's
    process ends with os._exit."""
    global _KEPT
    if _KEPT is None:
        _KEPT = []


def run() -> None:
    """The console script: main() with the cyclic collector off from start to end, then an
    exit that skips tearing the run down. The process ends with os._exit, so no collection is
    ever needed; re-enabled, the collector would scan the whole model once before the exit."""
    import gc

    gc.disable()
    no_pydantic_plugins()
    lazy_modules()
    keep_at_exit()
    exit_now(main())


#: the pydantic module that finds plugins: it imports importlib.metadata (and email, zipfile,
#: csv with it) and scans every installed package's entry points, about 10 ms of each run
_PLUGIN_LOADER = "pydantic.plugin._loader"


def no_pydantic_plugins() -> None:
    """The console script runs no pydantic plugin: a plugin is code of whatever package in the
    environment declares one, run on every validation (it may log or send what it sees, and
    the checker contacts no network); pydantic documents the same choice as
    `PYDANTIC_DISABLE_PLUGINS=__all__`. Done by giving pydantic, before it first builds a
    model, a plugin loader that finds none, so that the real one is never imported."""
    if _PLUGIN_LOADER in sys.modules:
        return  # pydantic built a model already: its plugins were looked up then
    import types

    loader = types.ModuleType(_PLUGIN_LOADER)
    loader.get_plugins = tuple  # type: ignore[attr-defined]  # () whatever asks
    sys.modules[_PLUGIN_LOADER] = loader


#: standard modules the console script loads when first used (`lazy_modules`): `inspect`,
#: which `dataclasses` imports (with `ast`, `dis`, `tokenize`) to write a class's docstring and,
#: since 3.12, to read the annotations of a class it makes, both of which records do
#: themselves; `ipaddress`, which `urllib.parse` imports (for `pathlib`) to check a bracketed
#: host in a URL. About 4 ms of `python -X importtime` a check never uses.
LAZY_MODULES = ("inspect", "ipaddress")


def lazy_modules(names: Sequence[str] = LAZY_MODULES) -> None:
    """Put a stand-in for each of `names` not imported yet in `sys.modules`: the first
    attribute asked of it imports the real module, which takes its place there and lends the
    stand-in its names, so that every use sees the module itself, behind an `import` or a
    `from ... import` alike. (importlib.util.LazyLoader cannot do this: an `import` statement
    reads the module's `__spec__`, which loads it.)"""
    import types

    class _StandIn(types.ModuleType):
        def __getattr__(self, attribute: str) -> object:
            name = self.__name__
            if sys.modules.get(name) is self:
                del sys.modules[name]
            import importlib

            real = importlib.import_module(name)
            self.__dict__.update(real.__dict__)
            return getattr(real, attribute)

    for name in names:
        if name not in sys.modules:
            sys.modules[name] = _StandIn(name)


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
        except (OSError, ValueError, AttributeError):  # a closed pipe or stream (None: closed
            pass  # when the process started): nothing more can be said
    os._exit(code)
