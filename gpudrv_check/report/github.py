"""GitHub Actions workflow commands: one annotation per finding, then the summary line.

`::error file=k8s/node3.yaml,line=14,col=5,title=GPU001::message` (`warning` and `notice` for
the other severities). Chosen automatically when GITHUB_ACTIONS=true and no --format is given.
Escaping follows the runner: in the message `%`, CR and LF become `%25`, `%0D`, `%0A`; property
values also escape `:` and `,` (`%3A`, `%2C`).

GitHub shows at most 10 annotations of each type per step and 50 per job (actions/toolkit,
docs/problem-matchers.md, "Limitations"); the rest are dropped without a word. So when the
findings do not fit, the most severe come first, up to 10 errors, 10 warnings and 9 notices,
then one notice says how many were not annotated and where they are: listed in this step's
log right below it and in the SARIF report.

Every line that is not one of our commands goes through `log_line`, so the runner reads none
of them as a command whatever a repo names its files or writes in its labels. The runner tries
each line of the log with two parsers (actions/runner src/Runner.Common/ActionCommand.cs,
called by ActionCommandManager.TryProcessCommand): `TryParseV2` takes a line that starts with
`::` once leading white space is trimmed (`TrimStart`), and the legacy `TryParse` takes `##[`
anywhere in the line. Leading spaces therefore protect nothing. The text is escaped in our own
`\\x..` style instead of wrapped in `::stop-commands::<token>`: escaping keeps the output a
function of the findings alone (byte-identical across runs) and leaves the runner no state,
where a token would have to be one the repo's author cannot write into the text it encloses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpudrv_check.core.finding import Finding, Severity, no_runner_commands, printable

if TYPE_CHECKING:
    from gpudrv_check.report import Report

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
#: annotations GitHub shows per type in one step
PER_TYPE = 10


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(report: Report, f: Finding) -> str:
    loc = f.location
    props = ",".join(
        f"{key}={escape_property(value)}"
        for key, value in (
            ("file", report.path(loc.file, controls=False)),
            ("line", str(loc.line)),
            ("col", str(loc.column)),
            ("title", f.rule),
        )
    )
    message = f.message + (f"\nfix: {f.hint}" if f.hint else "")
    return f"::{COMMANDS[f.severity]} {props}::{escape_data(message)}"


def log_line(text: str) -> str:
    """`text` as a plain line of the step's log: printable (the runner reads the log with
    `StreamReader.ReadLine`, ProcessInvoker.StartReadStream, which ends a line at CR too; the
    space is then the only blank .NET's TrimStart trims) and read as no workflow command
    (core/finding.py `no_runner_commands`)."""
    return no_runner_commands(printable(text))


def overflow_line(report: Report, f: Finding) -> str:
    """`file:line:col: severity RULE message`, the file as the annotations name it."""
    loc = f.location
    where = f"{report.uri(loc.file)}:{loc.line}:{loc.column}"
    return log_line(f"  {where}: {f.severity.value} {f.rule} {f.message}")


def budget(findings: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """(annotated, left over): all of them when each type fits in a step, else the most
    severe first, keeping one notice for the count of the rest."""
    per_type = {s: sum(1 for f in findings if f.severity is s) for s in Severity}
    if all(n <= PER_TYPE for n in per_type.values()):
        return findings, []
    ranked = sorted(findings, key=lambda f: -f.severity.rank)  # stable: report order within
    room = {s: PER_TYPE for s in Severity}
    room[Severity.INFO] -= 1  # the notice that counts the rest
    shown, rest = [], []
    for f in ranked:
        if room[f.severity] > 0:
            room[f.severity] -= 1
            shown.append(f)
        else:
            rest.append(f)
    return shown, rest


def render(report: Report, *, colour: bool = False) -> str:
    from gpudrv_check.report.text import render_summary

    shown, rest = budget(report.findings)
    lines = [annotation(report, f) for f in shown]
    if rest:
        counts = ", ".join(
            f"{n} {COMMANDS[s]}{'s' if n != 1 else ''}"
            for s in sorted(Severity, key=lambda s: -s.rank)
            if (n := sum(1 for f in rest if f.severity is s))
        )
        lines.append(
            f"::notice title=gpudrv-check::{len(rest)} more finding(s) not annotated ({counts}): "
            "GitHub shows 10 annotations of each type per step; they are listed in this step's "
            "log below, and all findings are in the SARIF report (code scanning)"
        )
        lines.extend(overflow_line(report, f) for f in rest)
    lines.extend(log_line(line) for line in render_summary(report).split("\n"))
    return "\n".join(lines) + "\n"
