"""SARIF 2.1.0 for code scanning (GitHub, Azure DevOps, IDE viewers).

One run: the tool with every rule of the run (a built-in rule's help from its generated page,
rules/docs.py, and `helpUri` to it when the package declares a Documentation URL; a custom
policy's from the policy; `properties.precision` and `properties.problem.severity`, which code
scanning sorts and filters alerts by), and one result per reported finding with its physical
location (start line and column, no end: `_region`; columns count Unicode code points, as the
YAML reader does) and a partial fingerprint that survives line shifts.

Suppressed findings (annotation, config exemption, baseline) are left out: GitHub code
scanning ignores SARIF `suppressions` and would open an alert for each
(github/codeql-action#1230); a tool notification counts them instead.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from gpudrv_check.core.finding import Finding, Severity, unique_fingerprints

if TYPE_CHECKING:
    from gpudrv_check.read.policy import RulePolicy
    from gpudrv_check.report import Report

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
FINGERPRINT_KEY = "gpudrvCheck/v1"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
# code scanning's own scale for results that are not security alerts
# (docs.github.com, "SARIF support for code scanning", reportingDescriptor object)
PROBLEM_SEVERITY = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "recommendation",
}
# every rule reasons over the repo's own objects with the scheduler's and the operator's
# rules, not heuristics; what it cannot know (a live cluster) keeps it from "very-high"
PRECISION = "high"


def _rule(policy: RulePolicy) -> dict[str, Any]:
    markdown = f"**Why it matters**\n\n{policy.why}\n\n**How to fix**\n\n{policy.fix}"
    rule: dict[str, Any] = {
        "id": policy.id,
        "name": policy.name,
        "shortDescription": {"text": policy.title},
        "fullDescription": {"text": policy.why},
        "help": {"text": f"{policy.why}\n\nHow to fix: {policy.fix}", "markdown": markdown},
        "defaultConfiguration": {"level": LEVELS[policy.severity]},
        "properties": {
            "category": policy.category,
            "tags": [policy.category],
            "precision": PRECISION,
            "problem.severity": PROBLEM_SEVERITY[policy.severity],
        },
    }
    if policy.source != "custom":
        # a built-in rule: its generated page (rules/docs.py), linked and carried whole
        from gpudrv_check.rules.docs import help_uri, page

        uri = help_uri(policy.id)
        # the schema's helpUri is "format": "uri", an absolute URI; without a Documentation
        # URL in [project.urls] there is only the page's path in the repo, which is not one
        if urlsplit(uri).scheme:
            rule["helpUri"] = uri
        rule["help"]["markdown"] = page(policy)
    return rule


def _region(finding: Finding) -> dict[str, Any]:
    """Start line and column, no end. The end of the key (SARIF 2.1.0 §3.30: `endColumn` is
    the column after its last character) is not known here: the reader keeps where a key
    starts, not how it is written (`"team"` in JSON or a quoted YAML key, an escape, or a key
    the object lacks, which points at its mapping), so `column + len(key)` was wrong for all
    of those. Left out, it defaults to the end of the line (§3.30), which holds the key."""
    loc = finding.location
    return {"startLine": loc.line, "startColumn": loc.column}


def _result(
    report: Report, finding: Finding, index: dict[str, int], fingerprint: str
) -> dict[str, Any]:
    text = finding.message + (f"\nFix: {finding.hint}" if finding.hint else "")
    location: dict[str, Any] = {
        "physicalLocation": {
            "artifactLocation": {
                "uri": report.link(finding.location.file),
                "uriBaseId": "%SRCROOT%",
            },
            "region": _region(finding),
        }
    }
    if finding.object is not None:
        location["logicalLocations"] = [
            {
                "name": finding.object.name or "?",
                "fullyQualifiedName": str(finding.object),
                "kind": "object",
            }
        ]
    result: dict[str, Any] = {
        "ruleId": finding.rule,
        "level": LEVELS[finding.severity],
        "message": {"text": text},
        "locations": [location],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
    }
    if finding.rule in index:
        result["ruleIndex"] = index[finding.rule]
    if report.summary.baseline:
        result["baselineState"] = "new"  # the baseline's own findings are suppressed
    if finding.path:
        result["properties"] = {"path": [str(p) for p in finding.path]}
    return result


def _invocation(report: Report) -> dict[str, Any]:
    """The run's exit code, and what it did not check as notifications (rules skipped, and
    why, each naming its rules; the other notes of the summary)."""
    out: dict[str, Any] = {"executionSuccessful": True, "exitCode": report.summary.exit_code}
    notifications = [
        {
            "level": "note",
            "message": {"text": f"{group['reason']}: rules skipped; see {group['see']}"},
            "properties": {"rules": group["rules"]},
        }
        for group in report.summary.skipped_rules
    ]
    notifications.extend(
        {"level": "note", "message": {"text": note}} for note in report.summary.notes
    )
    if report.suppressed:
        by = ", ".join(f"{n} by {k}" for k, n in sorted(report.summary.suppressed_by.items()))
        notifications.append(
            {
                "level": "note",
                "message": {
                    "text": f"{len(report.suppressed)} suppressed finding(s) not included"
                    + (f" ({by})" if by else "")
                },
            }
        )
    if notifications:
        out["toolExecutionNotifications"] = notifications
    return out


def sarif_log(report: Report) -> dict[str, Any]:
    rules = list(report.rules.values())
    index = {policy.id: i for i, policy in enumerate(rules)}
    findings = report.findings
    fingerprints = unique_fingerprints(findings)
    results = [_result(report, f, index, fp) for f, fp in zip(findings, fingerprints, strict=True)]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "gpudrv-check",
                        "version": report.tool_version,
                        "semanticVersion": report.tool_version,
                        "rules": [_rule(p) for p in rules],
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
                "invocations": [_invocation(report)],
            }
        ],
    }


def render(report: Report, *, colour: bool = False) -> str:
    from gpudrv_check.report import json_safe

    return json_safe(json.dumps(sarif_log(report), indent=2, ensure_ascii=False)) + "\n"
