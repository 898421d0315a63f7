"""`--format github` within GitHub's annotation limits: 10 per type per step, 50 per job
(actions/toolkit docs/problem-matchers.md, "Limitations"). The most severe first, then one
notice with the count; the rest stay readable in the log, never as workflow commands."""

from __future__ import annotations

from gpudrv_check.core.finding import Finding, Location, Severity
from gpudrv_check.report import Report, Summary
from gpudrv_check.report.github import budget, render


def _findings(errors: int, warnings: int, infos: int) -> list[Finding]:
    out = []
    for severity, count in (
        (Severity.INFO, infos),
        (Severity.WARNING, warnings),
        (Severity.ERROR, errors),
    ):  # noqa: E501
        out += [
            Finding(
                rule="GPU001",
                severity=severity,
                message=f"{severity.value} {i}",
                location=Location(file=f"k8s/{severity.value}-{i:02}.yaml", line=i + 1),
            )
            for i in range(count)
        ]
    return sorted(out, key=Finding.sort_key)


def _report(findings: list[Finding]) -> Report:
    return Report(findings=findings, suppressed=[], rules={}, summary=Summary())


def _commands(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("::")]


def test_a_report_that_fits_is_unchanged_in_order():
    findings = _findings(3, 10, 10)
    shown, rest = budget(findings)
    assert shown == findings and rest == []
    assert "more finding(s) not annotated" not in render(_report(findings))


def test_over_budget_the_most_severe_first_then_one_notice_with_the_count():
    findings = _findings(14, 12, 30)
    text = render(_report(findings))
    commands = _commands(text)
    kinds = [c.split(" ", 1)[0] for c in commands]
    assert kinds == ["::error"] * 10 + ["::warning"] * 10 + ["::notice"] * 10
    per_type = {k: kinds.count(k) for k in set(kinds)}
    assert max(per_type.values()) <= 10 and len(commands) <= 50
    assert commands[-1].startswith(
        "::notice title=gpudrv-check::27 more finding(s) not annotated "
        "(4 errors, 2 warnings, 21 notices)"
    )
    assert "log below" in commands[-1] and "SARIF" in commands[-1]
    # the errors annotated are the first ten in report order
    assert [c.split("::")[-1] for c in commands[:10]] == [f"error {i}" for i in range(10)]
    # the rest is in the log, as plain lines that no runner reads as a command
    log = [line for line in text.splitlines() if line.startswith("  k8s/")]
    assert len(log) == 27
    assert log[0] == "  k8s/error-10.yaml:11:1: error GPU001 error 10"
    assert len(_commands(text)) == 30


def test_one_type_over_budget_is_enough_to_count_the_rest():
    shown, rest = budget(_findings(0, 0, 11))
    assert len(shown) == 9 and len(rest) == 2  # nine notices and the one that counts
