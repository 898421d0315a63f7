"""JUnit XML: one test suite per rule, one test case per rule × object.

A test case fails (`<failure>`) when the object has a finding of the rule at or above the
`--fail-on` level, so the JUnit verdict agrees with the exit code; findings below it are listed
in `<system-out>` of a passing case; suppressed findings make a `<skipped>` case. A rule without
findings has one case, `all objects`: passing when the rule ran, `<skipped>` with the reason when
it did not (no node inventory, no matrix: the summary's skipped rules) or was left out by
--select/--ignore, so no rule passes that checked nothing.

The document is valid against the JUnit schema CI plugins check reports against (the Jenkins
xUnit plugin's junit-10.xsd, which it validates every JUnit input with, and which pytest's
default `junit_family=xunit2` follows): no `file`/`line` attributes on a test case (the
location is the first line of each finding's text) and no `skipped` count on `<testsuites>`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from typing import TYPE_CHECKING

from gpudrv_check.core.finding import Finding
from gpudrv_check.report import suppression_text

if TYPE_CHECKING:
    from gpudrv_check.report import Report

_THRESHOLD = {"error": 3, "warning": 2, "info": 1, "never": 99}
# characters XML 1.0 cannot carry at all
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _subject(f: Finding) -> str:
    return str(f.object) if f.object is not None else f.location.file


def _line(report: Report, f: Finding) -> str:
    loc = f.location
    text = (
        f"{report.uri(loc.file)}:{loc.line}:{loc.column}: {f.severity.value} {f.rule} {f.message}"
    )
    if f.hint:
        text += f"\n    fix: {f.hint}"
    if f.suppressed_by:
        text += f"\n    suppressed by {suppression_text(f)}"
    return text


def render(report: Report, *, colour: bool = False) -> str:
    threshold = _THRESHOLD[report.summary.fail_on]
    cases: dict[str, dict[str, list[Finding]]] = defaultdict(lambda: defaultdict(list))
    for f in report.all_findings:
        cases[f.rule][_subject(f)].append(f)
    rule_ids = sorted(set(report.rules) | set(cases))
    not_run = {
        rule: f"not checked: {group['reason']}; see {group['see']}"
        for group in report.summary.skipped_rules
        for rule in group["rules"]
    }
    not_run.update((rule, "left out by --select/--ignore") for rule in report.not_selected)
    root = ET.Element("testsuites", name="gpudrv-check")
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for rule_id in rule_ids:
        policy = report.rule(rule_id)
        suite_name = f"{rule_id} {policy.name}" if policy else rule_id
        suite = ET.SubElement(root, "testsuite", name=suite_name)
        counts = {"tests": 0, "failures": 0, "skipped": 0}
        by_subject = cases.get(rule_id, {})
        if not by_subject:
            case = ET.SubElement(suite, "testcase", classname=rule_id, name="all objects")
            counts["tests"] += 1
            if rule_id in not_run:
                ET.SubElement(case, "skipped", message=_clean(not_run[rule_id]))
                counts["skipped"] += 1
        for subject in sorted(by_subject):
            findings = by_subject[subject]
            first = findings[0]
            case = ET.SubElement(suite, "testcase", classname=rule_id, name=_clean(subject))
            counts["tests"] += 1
            failing = [f for f in findings if not f.suppressed_by and f.severity.rank >= threshold]
            body = _clean("\n".join(_line(report, f) for f in findings))
            if failing:
                failure = ET.SubElement(
                    case,
                    "failure",
                    message=_clean(failing[0].message),
                    type=failing[0].severity.value,
                )
                failure.text = body
                counts["failures"] += 1
            elif all(f.suppressed_by for f in findings):
                skipped = ET.SubElement(case, "skipped", message=_clean(suppression_text(first)))
                skipped.text = body
                counts["skipped"] += 1
            else:
                ET.SubElement(case, "system-out").text = body
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("errors", "0")
    for key in ("tests", "failures"):  # `skipped` is no attribute of <testsuites> (the xsd)
        root.set(key, str(totals[key]))
    root.set("errors", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
