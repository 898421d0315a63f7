"""`gpudrv-check check`: every rule and custom policy, in one or more report formats.

Pairing of `--format` and `--output` (written in any number, in order):
- `--format F --output FILE` writes F to FILE: an `--output` belongs to the `--format` written
  just before it;
- a `--format` with no `--output` after it goes to stdout; at most one may;
- `--output FILE` with no `--format` anywhere writes the default format to FILE;
- with no `--format`, the default is `text`, or `github` when GITHUB_ACTIONS=true.
When no report goes to stdout, the one-line summary does.

`--base REV` (pull-request mode) reports, in every format, only the findings that are new since
REV, matched by fingerprint (compare.py); the summary counts new, fixed and unchanged.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

from gpudrv_check import __version__
from gpudrv_check.commands.common import load_run, load_source, make_source
from gpudrv_check.config import ConfigError
from gpudrv_check.engine import Run, evaluate
from gpudrv_check.model.finding import Finding

_THRESHOLD = {"error": 3, "warning": 2, "info": 1, "never": 99}
STDOUT = "-"


def exit_code(findings: list[Finding], fail_on: str) -> int:
    threshold = _THRESHOLD[fail_on]
    return 1 if any(f.severity.rank >= threshold for f in findings) else 0


def default_format(environ: dict[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return "github" if env.get("GITHUB_ACTIONS") == "true" else "text"


def pair_outputs(sequence: list[tuple[str, str]], default: str) -> list[tuple[str, str]]:
    """[(format, destination)] from the ordered --format/--output arguments (see module doc)."""
    formats = [value for kind, value in sequence if kind == "format"]
    pairs: list[list[str]] = []
    previous = ""
    for kind, value in sequence:
        if kind == "format":
            pairs.append([value, STDOUT])
        elif not formats:
            pairs.append([default, value])
        elif previous == "format" and pairs[-1][1] == STDOUT:
            pairs[-1][1] = value
        else:
            raise ConfigError(
                f"--output {value}: an --output must follow the --format it writes "
                "(e.g. --format sarif --output results.sarif)"
            )
        previous = kind
    if not pairs:
        pairs.append([default, STDOUT])
    to_stdout = [fmt for fmt, dest in pairs if dest == STDOUT]
    if len(to_stdout) > 1:
        raise ConfigError(
            f"formats {', '.join(to_stdout)} would all go to stdout; give all but one an --output"
        )
    files = [dest for _, dest in pairs if dest != STDOUT]
    for dest in files:
        if files.count(dest) > 1:
            raise ConfigError(f"--output {dest} is given twice")
    return [(fmt, dest) for fmt, dest in pairs]


def _apply_baselines(run: Run, args: argparse.Namespace) -> str | None:
    """--write-baseline records the findings; --baseline (or the one just written) then
    moves the recorded ones to `run.suppressed`. Returns the baseline file in use."""
    from gpudrv_check.baseline import apply_baseline, read_baseline, render_baseline

    baseline = getattr(args, "baseline", None)
    accepted = read_baseline(baseline) if baseline else None
    written = getattr(args, "write_baseline", None)
    if written:
        try:
            Path(written).write_text(render_baseline(run.findings), encoding="utf-8")
        except OSError as err:
            raise ConfigError(f"cannot write baseline {written}: {err.strerror}") from None
        sys.stderr.write(f"gpudrv-check: wrote {len(run.findings)} finding(s) to {written}\n")
        accepted, baseline = read_baseline(written), written
    if accepted is None:
        return None
    run.findings, known = apply_baseline(run.findings, accepted, baseline or "")
    run.suppressed.extend(known)
    return baseline


def base_findings(args: argparse.Namespace, base: str) -> list[Finding]:
    """The findings at the base revision. A revision that cannot be read is a usage error; a
    base that has no PATH yet, or cannot be checked (no matrix yet, a broken config), has no
    findings: everything at the head counts as new, and stderr says why."""
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


def build_report(run: Run, code: int, baseline: str | None, root: str, comparison=None):
    from gpudrv_check.exemptions import BY_ANNOTATION, BY_BASELINE, BY_CONFIG
    from gpudrv_check.report import Report, Summary, path_prefix, suppression_source

    config = run.repo.config
    by = Counter(suppression_source(f) for f in run.suppressed)
    summary = Summary(
        files=len(run.content.files),
        objects=run.content.object_count,
        skipped_documents=sum(len(f.skipped) for f in run.content.files),
        counts=run.counts(),
        suppressed=len(run.suppressed),
        suppressed_by={k: by[k] for k in (BY_ANNOTATION, BY_CONFIG, BY_BASELINE) if by[k]},
        fail_on=config.fail_on,
        exit_code=code,
        baseline=baseline,
    )
    if comparison is not None:
        summary.base = comparison.base
        summary.new = len(comparison.new)
        summary.fixed = len(comparison.fixed)
        summary.unchanged = len(comparison.unchanged)
    run.suppressed.sort(key=Finding.sort_key)
    from gpudrv_check.engine import rule_enabled

    fired = {f.rule for f in (*run.findings, *run.suppressed)}
    rules = {
        rule_id: policy
        for rule_id, policy in run.rules.items()
        if rule_id in fired or rule_enabled(config, rule_id, run.rules)
    }
    return Report(
        findings=run.findings,
        suppressed=run.suppressed,
        rules=rules,
        summary=summary,
        repo=run.repo,
        path_prefix=path_prefix(root) if root != "-" else "",
        tool_version=__version__,
    )


def run(args: argparse.Namespace) -> int:
    from gpudrv_check.report import render
    from gpudrv_check.report.text import render_summary, use_colour

    pairs = pair_outputs(list(getattr(args, "report_args", None) or []), default_format())
    check_run = load_run(args)
    evaluate(check_run)
    baseline = _apply_baselines(check_run, args)
    comparison = None
    base = getattr(args, "base", None)
    if base is not None:
        from gpudrv_check.compare import compare

        comparison = compare(base_findings(args, base), check_run.findings, base)
        check_run.findings = comparison.new  # only what this change introduces, and gates
    code = exit_code(check_run.findings, check_run.repo.config.fail_on)
    report = build_report(check_run, code, baseline, args.path, comparison)
    if getattr(args, "verbose", False):
        for f in report.suppressed:
            sys.stderr.write(f"suppressed {f.location}: {f.rule} {f.message} ({f.suppressed_by})\n")
    for fmt, dest in pairs:
        if dest == STDOUT:
            sys.stdout.write(render(fmt, report, colour=fmt == "text" and use_colour(sys.stdout)))
            continue
        try:
            Path(dest).write_text(render(fmt, report), encoding="utf-8")
        except OSError as err:
            raise ConfigError(f"cannot write {dest}: {err.strerror}") from None
    if all(dest != STDOUT for _, dest in pairs):
        sys.stdout.write(render_summary(report) + "\n")
    return code
