"""`--format github`: the runner reads no line as a workflow command but ours, whatever the
repo names its files or writes in its values.

The runner tries every line of a step's log with two parsers (actions/runner
src/Runner.Common/ActionCommand.cs, applied in that order by
src/Runner.Worker/ActionCommandManager.cs TryProcessCommand); `_parse_v2` and `_parse_legacy`
port them (ordinal comparisons; command names compared ignoring case, as the runner's
`_registeredCommands` does), and every line of the output goes through both.
"""

from __future__ import annotations

import pytest

from gpudrv_check.core.finding import Finding, Location, Severity
from gpudrv_check.report import Report, Summary
from gpudrv_check.report.github import log_line, render

# the commands a runner registers (ActionCommandManager.Initialize and the extensions), and
# what a forged `stop-commands` would register: its token
REGISTERED = {
    "error", "warning", "notice", "debug", "group", "endgroup", "add-mask", "stop-commands",
    "echo", "add-matcher", "remove-matcher", "set-output", "save-state", "add-path", "set-env",
    "internal-set-repo-path", "token",
}  # fmt: skip
# .NET Char.IsWhiteSpace: what `TrimStart()` trims
_DOTNET_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
_DOTNET_SPACE += "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def _command(info: str) -> str | None:
    name = info.split(" ", 1)[0]
    return name.lower() if name.lower() in REGISTERED else None


def _parse_v2(message: str) -> str | None:
    """ActionCommand.TryParseV2: `::name props::data` after the leading white space."""
    message = message.lstrip(_DOTNET_SPACE)
    if not message.startswith("::"):
        return None
    end = message.find("::", 2)
    return None if end < 0 else _command(message[2:end])


def _parse_legacy(message: str) -> str | None:
    """ActionCommand.TryParse: `##[name props]data` anywhere in the line."""
    at = message.find("##[")
    if at < 0:
        return None
    end = message.find("]", at)
    return None if end < 0 else _command(message[at + 3 : end])


def _runner_commands(text: str) -> list[tuple[str, str]]:
    """(command, line) for each line the runner would take as a command (ReadLine: lines end
    at LF, CR or CRLF)."""
    out = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        name = _parse_v2(line) or _parse_legacy(line)
        if name:
            out.append((name, line))
    return out


HOSTILE_FILES = [
    "::error title=Forged::pwned.yaml",
    "\u3000::warning::ideographic space.yaml",
    "\u00a0::notice::nbsp.yaml",
    "x ##[error]legacy.yaml",
    "##[stop-commands]token.yaml",
    "#\u00ad#[set-output name=a]soft hyphen.yaml",
    "cr\r::error::after-cr.yaml",
    "ls\u2028::error::after-ls.yaml",
]
HOSTILE_MESSAGES = [
    "label value 'y ##[error]forged-by-value'",
    "::add-mask::secret",
    "a\n::error::after a line feed",
    "##[group]fold me",
]


def _hostile_report() -> Report:
    """Twelve errors (two past the budget of ten) with hostile files and messages, and a
    summary whose notes and baseline are hostile too."""
    names = HOSTILE_FILES + [f"k8s/n{i}.yaml" for i in range(12 - len(HOSTILE_FILES))]
    messages = HOSTILE_MESSAGES * 3
    findings = [
        Finding(
            rule="GPU040",
            severity=Severity.ERROR,
            message=messages[i],
            location=Location(file=name, line=i + 1),
        )
        for i, name in enumerate(names)
    ]
    findings.sort(key=Finding.sort_key)
    summary = Summary(notes=["::error::note", "see ##[warning]x"], baseline="::b##[error]")
    return Report(
        findings=findings, suppressed=[], rules={}, summary=summary, path_prefix="deploy/"
    )


@pytest.mark.parametrize("order", ["sorted", "reversed"])
def test_no_line_but_our_annotations_parses_as_a_command(order):
    report = _hostile_report()
    if order == "reversed":  # the overflow holds other files
        report.findings.reverse()
    text = render(report)
    ours = [line for line in text.split("\n") if line.startswith(("::error ", "::notice "))]
    assert len(ours) == 11  # ten errors and the notice that counts the rest
    assert _runner_commands(text) == [(line[2:].split(" ", 1)[0], line) for line in ours]


def test_overflow_lines_name_the_file_as_the_annotations_do():
    """README "Outputs for CI": paths from the working directory (`Report.uri`)."""
    findings = [
        Finding(
            rule="GPU001",
            severity=Severity.ERROR,
            message=f"m{i}",
            location=Location(file=f"k8s/e{i:02}.yaml", line=i + 1),
        )
        for i in range(12)
    ]
    report = Report(
        findings=findings, suppressed=[], rules={}, summary=Summary(), path_prefix="deploy/"
    )
    log = [line for line in render(report).split("\n") if line.startswith("  ")]
    assert log == [
        "  deploy/k8s/e10.yaml:11:1: error GPU001 m10",
        "  deploy/k8s/e11.yaml:12:1: error GPU001 m11",
    ]


def test_log_line_escapes_only_what_a_parser_could_take():
    assert log_line("  k8s/a.yaml:1:1: error GPU001 fine: a::b [x] #1") == (
        "  k8s/a.yaml:1:1: error GPU001 fine: a::b [x] #1"
    )
    assert log_line("  ::error::x") == "  \\x3a:error::x"
    assert log_line("a ##[error]b") == "a ##\\x5berror]b"
    assert log_line("\x1b[2J\r") == "\\x1b[2J\\x0d"


def test_the_output_is_the_same_bytes_every_time():
    assert render(_hostile_report()) == render(_hostile_report())


@pytest.mark.parametrize("fmt", ["text", "concise"])
def test_a_terminal_report_holds_no_command_either(fmt):
    """The text formats, read in a CI log (the README's own CI example runs `--format text`),
    quote the same hostile names and values: core/finding.py `no_runner_commands` leaves no
    line either parser takes (terminal_text applies it to every terminal report)."""
    from gpudrv_check.core.finding import terminal_text
    from gpudrv_check.report import iter_pieces

    text = terminal_text("".join(iter_pieces(fmt, _hostile_report())))
    assert "forged-by-value" in text and "legacy.yaml" in text
    assert _runner_commands(text) == []
