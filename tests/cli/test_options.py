"""The command line becomes typed option objects before a command runs (issue 15): commands
take `cli/options.py` dataclasses, never an argparse namespace."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from gpudrv_check.cli import build_parser, default_path
from gpudrv_check.cli.commands import _MODULES, dispatch
from gpudrv_check.cli.options import (
    OPTION_TYPES,
    CheckOptions,
    NodeOptions,
    RepoOptions,
    from_namespace,
)
from tests.conftest import EXAMPLES, ROOT

COMMANDS = ROOT / "gpudrv_check" / "cli" / "commands"


def options(*argv: str):
    return from_namespace(build_parser().parse_args(list(argv)))


def test_check_arguments_become_check_options_with_immutable_sequences():
    got = options(
        "check", "deploy", "--format", "sarif", "--output", "x.sarif", "--inventory", "a.yaml",
        "--inventory", "b.yaml", "--select", "GPU001,GPU010", "--select", "GPU020", "-q",
        "--staged", "--fail-on", "warning",
    )  # fmt: skip
    assert type(got) is CheckOptions
    assert got.path == "deploy"
    assert got.report_args == (("format", "sarif"), ("output", "x.sarif"))
    assert got.inventory == ("a.yaml", "b.yaml")
    assert got.select == ("GPU001", "GPU010", "GPU020")
    assert (got.quiet, got.staged, got.fail_on, got.color) == (True, True, "warning", "auto")
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.path = "elsewhere"  # type: ignore[misc]


def test_every_command_gets_its_own_options_type():
    argv = {
        "check": ["check"],
        "audit": ["audit"],
        "tag": ["tag", "n1"],
        "operands": ["operands"],
        "place": ["place"],
        "report": ["report", "--node", "n1"],
        "plan": ["plan", "n1", "--driver", "550.90.07"],
        "rehearse": ["rehearse", "--to-matrix"],
        "rules": ["rules"],
        "explain": ["explain", "GPU001"],
        "completion": ["completion", "bash"],
        "inventory": ["inventory", "import", "-"],
    }
    assert set(argv) == set(OPTION_TYPES) == set(_MODULES)
    for command, args in argv.items():
        assert type(options(*args)) is OPTION_TYPES[command], command
    assert options("tag", "n1") == NodeOptions(command="tag", node="n1", path=".")


def test_no_command_module_takes_or_imports_an_argparse_namespace():
    for module in sorted(COMMANDS.glob("*.py")):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert all(a.name != "argparse" for a in node.names), module.name
            if isinstance(node, ast.ImportFrom):
                assert node.module != "argparse", module.name
            if isinstance(node, ast.arg) and node.annotation is not None:
                assert "Namespace" not in ast.unparse(node.annotation), (module.name, node.arg)


def test_a_command_runs_from_options_built_without_a_command_line(capsys):
    code = dispatch(
        CheckOptions(
            command="check",
            path=str(EXAMPLES / "lab"),
            report_args=(("format", "json"),),
            no_cache=True,
            jobs=1,
        )
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 1  # the lab is broken on purpose
    assert {f["rule"] for f in doc["findings"]} >= {"GPU010", "GPU020", "GPU021"}


def test_without_matrix_keeps_a_named_matrix():
    assert RepoOptions(command="audit").without_matrix().matrix == "none"
    assert RepoOptions(command="audit", matrix="m.csv").without_matrix().matrix == "m.csv"
    assert type(NodeOptions(command="tag", node="n").without_matrix()) is NodeOptions


def test_path_defaults_to_the_nearest_config_up_to_the_git_top(tmp_path: Path):
    top = tmp_path / "repo"
    (top / ".git").mkdir(parents=True)
    (top / "clusters" / "prod" / "apps").mkdir(parents=True)
    assert default_path(str(top / "clusters" / "prod" / "apps")) == "."  # no config at all
    (top / ".gpudrv-check.yaml").write_text("{}\n")
    assert default_path(str(top / "clusters" / "prod" / "apps")) == "../../.."
    (top / "clusters" / ".gpudrv-check.yaml").write_text("{}\n")
    assert default_path(str(top / "clusters" / "prod")) == ".."
    assert default_path(str(top / "clusters")) == "."
    # never past the top of the repository
    (tmp_path / ".gpudrv-check.yaml").write_text("{}\n")
    (top / ".gpudrv-check.yaml").unlink()
    (top / "clusters" / ".gpudrv-check.yaml").unlink()
    assert default_path(str(top / "clusters")) == "."


_ARGV = [
    ["check", "deploy", "--format", "sarif", "--output", "x.sarif", "--select", "GPU001"],
    ["check", "--fail-on", "warning", "-q", "--staged"],
    ["check", "--fail-on", "sometimes"],  # an invalid choice
    ["check", "--no-such-flag"],
    ["check", "--help"],
    ["audit", "repo", "--matrix", "m.csv"],
    ["tag", "node-1", "repo"],
    ["tag"],  # a positional missing
    ["operands", "--format", "json"],
    ["place", "--workload", "Deployment/ns/x", "--format", "json"],
    ["report", "--node", "n"],
    ["plan", "node-1", "--driver", "550.90.07", "--write", "repo"],
    ["plan", "node-1"],  # --driver required
    ["rehearse", "--driver", "550", "--to-matrix"],  # exclusive options together
    ["inventory", "--help"],
    ["rules", "--format", "markdown"],
    ["explain", "GPU001"],
    ["completion", "zsh"],
    ["completion", "fish"],
    ["nonsense"],
    ["--help"],
    [],
]


def _parsed(parser, argv: list[str]):
    """What a parser makes of argv: its namespace, or its exit code and what it printed."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            return ("parsed", vars(parser.parse_known_args(argv)[0]))
    except SystemExit as stop:
        return ("exit", stop.code, out.getvalue(), err.getvalue())


@pytest.mark.parametrize("argv", _ARGV, ids=lambda argv: " ".join(argv) or "(none)")
def test_the_parser_of_one_command_parses_as_the_whole_parser(argv: list[str]):
    """main() builds only the parser of the command argv starts with (cli/__init__.py
    `_only_command`): every argument list parses to the same namespace, or fails with the same
    message and exit code, as with the parser of every command."""
    from gpudrv_check.cli import _only_command

    only = _only_command(argv)
    assert (only is None) == (not argv or argv[0] not in _MODULES)
    assert _parsed(build_parser(only), argv) == _parsed(build_parser(), argv)
