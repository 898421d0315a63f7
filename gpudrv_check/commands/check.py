"""`gpudrv-check check`: every rule, reported as text or JSON; `--base REV` for pull requests."""

from __future__ import annotations

import argparse
import sys

from gpudrv_check.commands.common import load_run, load_source, make_source
from gpudrv_check.engine import evaluate
from gpudrv_check.model.finding import Finding, Severity

_THRESHOLD = {"error": 3, "warning": 2, "info": 1, "never": 99}


def exit_code(findings: list[Finding], fail_on: str) -> int:
    threshold = _THRESHOLD[fail_on]
    return 1 if any(f.severity.rank >= threshold for f in findings) else 0


def base_findings(args: argparse.Namespace, base: str) -> list[Finding]:
    """The findings at the base revision. A revision that cannot be read is a usage error; a
    base that has no PATH yet, or cannot be checked (no matrix yet, a broken config), has no
    findings: everything at the head counts as new, and stderr says why."""
    from gpudrv_check.config import ConfigError
    from gpudrv_check.source.git import NotAtRevision

    try:
        source = make_source(args, rev=base)
    except NotAtRevision as err:
        reason = str(err).split(";")[0]
    else:
        try:
            base_run = load_source(args, source)
        except ConfigError as err:
            reason = str(err)
        else:
            evaluate(base_run)
            return base_run.findings
    sys.stderr.write(
        f"gpudrv-check: warning: the base {base} cannot be checked ({reason}); every finding "
        "counts as new\n"
    )
    return []


def run(args: argparse.Namespace) -> int:
    check_run = load_run(args)
    evaluate(check_run)
    findings = check_run.findings
    comparison = None
    base = getattr(args, "base", None)
    if base is not None:
        from gpudrv_check.compare import compare

        comparison = compare(base_findings(args, base), findings)
        findings = comparison.new  # only what this change introduces is reported and gates
    config = check_run.repo.config
    code = exit_code(findings, config.fail_on)
    counts = {s.value: 0 for s in Severity}
    for f in findings:
        counts[f.severity.value] += 1
    files = len(check_run.content.files)
    objects = check_run.content.object_count
    if (args.format or "text") == "json":
        from gpudrv_check.report import json_report

        summary = {
            "files": files,
            "objects": objects,
            "skipped_documents": sum(len(f.skipped) for f in check_run.content.files),
            "errors": counts[Severity.ERROR.value],
            "warnings": counts[Severity.WARNING.value],
            "info": counts[Severity.INFO.value],
            "suppressed": len(check_run.suppressed),
            "fail_on": config.fail_on,
            "exit_code": code,
        }
        if comparison is not None:
            summary.update(
                base=base,
                new=len(comparison.new),
                fixed=len(comparison.fixed),
                unchanged=len(comparison.unchanged),
            )
        sys.stdout.write(json_report.render(findings, summary))
    else:
        from gpudrv_check.report import text

        summary_line = text.summary_line(files, objects, counts, len(check_run.suppressed))
        if comparison is not None:
            summary_line += f"\n{comparison.summary()} (base {base})"
        sys.stdout.write(text.render(findings, summary_line, text.use_colour(sys.stdout)))
    return code
