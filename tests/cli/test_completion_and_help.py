"""Shell completion generated from the parser, and `--help` with a description and examples
for every command."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from gpudrv_check.cli import HELP
from gpudrv_check.cli.options import OPTION_TYPES
from tests.conftest import run_cli


def _complete(script: str, *words: str) -> list[str]:
    """What bash offers for the last of `words` (COMP_WORDS as bash would set them)."""
    quoted = " ".join(f"'{w}'" for w in ("gpudrv-check", *words))
    program = f"{script}\nCOMP_WORDS=({quoted}); COMP_CWORD={len(words)}; _gpudrv_check\n"
    program += 'printf "%s\\n" "${COMPREPLY[@]}"\n'
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True)
    return done.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completion_offers_commands_their_options_and_choices():
    result = run_cli("completion", "bash")
    assert result.returncode == 0, result.stderr
    script = result.stdout
    assert _complete(script, "re") == ["rehearse", "report"]
    assert "--staged" in _complete(script, "check", "--st")
    assert _complete(script, "check", "--fail-on", "") == ["error", "warning", "info", "never"]
    # per command: operands has two formats, check has every report format
    assert _complete(script, "operands", "--format", "") == ["text", "json"]
    assert "concise" in _complete(script, "check", "--format", "")
    assert "--workload" not in _complete(script, "check", "--")


def test_zsh_completion_loads_the_bash_script_through_bashcompinit():
    result = run_cli("completion", "zsh")
    assert result.returncode == 0
    assert result.stdout.startswith("autoload -Uz bashcompinit && bashcompinit\n")
    assert "complete -o filenames -F _gpudrv_check gpudrv-check" in result.stdout


@pytest.mark.parametrize("command", sorted(set(OPTION_TYPES)))
def test_every_command_help_has_a_description_and_examples(command: str):
    args = {"tag": ["NODE"], "plan": ["NODE", "--driver", "1.2.3"], "explain": ["GPU001"]}
    result = run_cli(command, "--help", *args.get(command, []))
    assert result.returncode == 0, result.stderr
    description, examples = HELP[command]
    assert " ".join(description.split()[:6]) in " ".join(result.stdout.split())
    assert "examples:" in result.stdout
    for line in examples.splitlines():
        assert "  " + line in result.stdout
        starts = ("gpudrv-check ", "kustomize ", "eval ", "kubectl ")
        assert line.split("#")[0].strip().startswith(starts)


def _parsers(parser) -> list:
    """`parser` and every subcommand's parser under it."""
    import argparse

    out = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                out.extend(_parsers(sub))
    return out


@pytest.mark.parametrize("columns", [None, "", "abc", "0", "-5", "33", "60", "200"])
def test_help_is_what_argparse_s_own_formatters_write_at_every_width(
    columns: str | None, monkeypatch: pytest.MonkeyPatch
):
    """The parser's formatters (cli/__init__.py `_parser_classes`) take their width from
    `terminal_columns` instead of importing `shutil`: every command's help and usage is what
    argparse's HelpFormatter and RawDescriptionHelpFormatter write themselves (CPython
    Lib/argparse.py `HelpFormatter.__init__`: `shutil.get_terminal_size().columns - 2`)."""
    import argparse

    from gpudrv_check.cli import build_parser

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    stock = {
        argparse.HelpFormatter: argparse.HelpFormatter,
        argparse.RawDescriptionHelpFormatter: argparse.RawDescriptionHelpFormatter,
    }
    parsers = _parsers(build_parser())
    assert len(parsers) == len(OPTION_TYPES) + 1  # the commands' and the program's
    for parser in parsers:
        ours = parser.formatter_class
        theirs = next(s for s in stock if issubclass(ours, s) and ours.__bases__[1] is s)
        texts = [parser.format_help(), parser.format_usage()]
        parser.formatter_class = theirs
        assert [parser.format_help(), parser.format_usage()] == texts, parser.prog


@pytest.mark.parametrize(
    ("columns", "lines"),
    [(None, None), ("", "9"), ("x", None), ("0", "0"), ("-1", "5"), ("47", None)],
)
def test_terminal_columns_is_shutil_s_reading_of_the_environment(
    columns: str | None, lines: str | None, monkeypatch: pytest.MonkeyPatch
):
    from gpudrv_check.cli import terminal_columns

    for name, value in (("COLUMNS", columns), ("LINES", lines)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert terminal_columns() == shutil.get_terminal_size().columns


@pytest.mark.skipif(not hasattr(__import__("os"), "openpty"), reason="no pseudo-terminals here")
@pytest.mark.parametrize(
    ("env_columns", "window"), [(None, 123), ("0", 123), ("71", 123), (None, 0)]
)
def test_terminal_columns_is_shutil_s_reading_of_a_terminal(env_columns: str | None, window: int):
    """On a terminal of 123 columns, or of 0 (a size not set yet: 80 since Python 3.11, 0
    before, as shutil says), its window size set on a pseudo-terminal, in a process whose
    standard output is that terminal."""
    import fcntl
    import os
    import struct
    import sys
    import termios

    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, window, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if env_columns is not None:
        env["COLUMNS"] = env_columns
    code = (
        "import shutil, sys\n"
        "from gpudrv_check.cli import terminal_columns\n"
        "sys.stderr.write(f'{terminal_columns()} {shutil.get_terminal_size().columns}')\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            stdout=follower,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
            check=True,
        )
    finally:
        os.close(follower)
        os.close(leader)
    expected = "71" if env_columns == "71" else str(window)
    if window == 0:
        expected = "80" if sys.version_info >= (3, 11) else "0"
    assert done.stderr.split() == [expected, expected]
