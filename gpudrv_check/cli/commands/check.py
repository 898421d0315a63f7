"""`gpudrv-check check`: every rule and custom policy, in one or more report formats.

Pairing of `--format` and `--output` (written in any number, in order):
- `--format F --output FILE` writes F to FILE: an `--output` belongs to the `--format` written
  just before it;
- a `--format` with no `--output` after it goes to stdout; at most one may;
- `--output FILE` with no `--format` anywhere writes the default format to FILE;
- with no `--format`, the default is `text`, or `github` when GITHUB_ACTIONS=true.
When no report goes to stdout, the one-line summary does.

`--base REV` (pull-request mode) reports, in every format, only the findings that are new since
REV, matched by fingerprint (engine/compare.py); the summary counts new, fixed and unchanged.
"""

from __future__ import annotations

import codecs
import dataclasses
import errno
import os
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpudrv_check import __version__
from gpudrv_check.cli import keep_until_exit
from gpudrv_check.cli.commands.common import load_source, make_source
from gpudrv_check.cli.options import CheckOptions, cache_key
from gpudrv_check.core.finding import Finding, terminal_bytes, terminal_text
from gpudrv_check.engine.cache.inputs import RunInputs, outside_holds, valid_outside
from gpudrv_check.engine.phases import phase
from gpudrv_check.read.config_file import (
    DEFAULT_MAX_FILE_BYTES,
    MAX_BASELINE_BYTES,
    ConfigError,
    find_config,
)
from gpudrv_check.report import MODEL_FORMATS

if TYPE_CHECKING:
    from gpudrv_check.engine.run import Run

# formats a person reads as they come (JSON, SARIF, JUnit, GitLab escape in their own syntax)
_TERMINAL_FORMATS = frozenset(("text", "concise", "markdown", "github"))
_COLOUR_FORMATS = frozenset(("text", "concise"))
_THRESHOLD = {"error": 3, "warning": 2, "info": 1, "never": 99}
STDOUT = "-"


def exit_code(findings: list[Finding], fail_on: str) -> int:
    return exit_code_of({f.severity.value for f in findings}, fail_on)


def exit_code_of(severities: Iterable[str], fail_on: str) -> int:
    """1 when a finding of one of these severities meets --fail-on, else 0."""
    threshold = _THRESHOLD[fail_on]
    return 1 if any(_THRESHOLD[s] >= threshold for s in severities) else 0


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


def _apply_baselines(run: Run, options: CheckOptions) -> str | None:
    """--write-baseline records the findings; --baseline (or the one just written) then
    moves the recorded ones to `run.suppressed`. Returns the baseline file in use."""
    baseline = options.baseline
    written = options.write_baseline
    if not baseline and not written:
        return None  # (the module is not even imported)
    from gpudrv_check.engine.baseline import apply_baseline, read_baseline, render_baseline

    root = _checked_root(options)
    accepted = read_baseline(baseline, root) if baseline else None
    if written:
        write_output(written, render_baseline(run.findings), "baseline ", root)
        sys.stderr.write(f"gpudrv-check: wrote {len(run.findings)} finding(s) to {written}\n")
        accepted, baseline = read_baseline(written, root), written
    if accepted is None:
        return None
    run.findings, known = apply_baseline(run.findings, accepted, baseline or "")
    run.suppressed.extend(known)
    return baseline


def base_findings(options: CheckOptions, base: str) -> list[Finding]:
    """The findings at the base revision. A revision that cannot be read is a usage error; a
    base that has no PATH yet, or cannot be checked (no matrix yet, a broken config), has no
    findings: everything at the head counts as new, and stderr says why."""
    from gpudrv_check.read.git import NotAtRevision

    try:
        source = make_source(options, rev=base)
    except NotAtRevision as err:
        reason = str(err).split(";")[0]
    else:
        try:
            base_run = load_source(options, source)
        except ConfigError as err:
            reason = str(err)
        else:
            from gpudrv_check.engine.run import evaluate

            evaluate(base_run)
            select_rules(base_run, options)
            return base_run.findings
    sys.stderr.write(
        f"gpudrv-check: warning: the base {base} cannot be checked ({reason}); every finding "
        "counts as new\n"
    )
    return []


def _text_renderer():
    """How the text report on stdout renders a finding (its width, and the function): the
    partition cache keeps each finding's text, and a run at the same width takes it."""
    from gpudrv_check.report.text import finding_text

    width = stdout_width()
    fixes: dict[str, list[str]] = {}  # a hint's lines at this width, wrapped once
    return (width, lambda finding: finding_text(finding, width, fixes))


def stdout_width() -> int:
    """The width the text format wraps to on stdout (report/text.py `terminal_width`)."""
    from gpudrv_check.report.text import terminal_width

    return terminal_width(sys.stdout)


def select_rules(run: Run, options: CheckOptions) -> None:
    """--select and --ignore (rule ids or names, built-in or custom): the findings of the
    rules left out are dropped, reported and suppressed alike; an unknown rule is an error."""
    if not options.select and not options.ignore:
        return
    from gpudrv_check.read.policy import find_rule

    def ids(flag: str, keys: tuple[str, ...]) -> set[str]:
        found = set()
        for key in keys:
            policy = find_rule(key, run.rules)
            if policy is None:
                raise ConfigError(f"{flag} {key}: unknown rule (see `gpudrv-check rules`)")
            found.add(policy.id)
        return found

    selected = ids("--select", options.select) if options.select else None
    ignored = ids("--ignore", options.ignore)

    def wanted(f: Finding) -> bool:
        return (selected is None or f.rule in selected) and f.rule not in ignored

    run.findings = [f for f in run.findings if wanted(f)]
    run.suppressed = [f for f in run.suppressed if wanted(f)]
    run.not_selected = frozenset(
        r for r in run.rules if (selected is not None and r not in selected) or r in ignored
    )


def build_report(
    run: Run,
    code: int,
    baseline: str | None,
    root: str,
    comparison=None,
    keep_repo: bool = True,
):
    """The report of a run; `keep_repo`: whether it holds the repo model (the formats of
    report.MODEL_FORMATS render sections from it), else only the findings and the summary."""
    from gpudrv_check.engine.exemptions import BY_ANNOTATION, BY_BASELINE, BY_CONFIG
    from gpudrv_check.report import Report, Summary, path_prefix, suppression_source

    config = run.repo.config
    by = Counter(suppression_source(f) for f in run.suppressed)
    summary = Summary(
        files=run.content.file_count,
        objects=run.content.object_count,
        skipped_documents=run.content.skipped_documents,
        counts=run.counts(),
        suppressed=len(run.suppressed),
        suppressed_by={k: by[k] for k in (BY_ANNOTATION, BY_CONFIG, BY_BASELINE) if by[k]},
        fail_on=config.fail_on,
        exit_code=code,
        baseline=baseline,
    )
    _say_what_was_not_checked(run, summary)
    summary.clusters = [
        {
            "name": sub.cluster.name,
            "files": len(sub.cluster.files),
            "nodes": len(sub.repo.nodes),
            "found_by": sub.cluster.how,
        }
        for sub in run.clusters
        if sub.cluster is not None
    ]
    if comparison is not None:
        summary.base = comparison.base
        summary.new = len(comparison.new)
        summary.fixed = len(comparison.fixed)
        summary.unchanged = len(comparison.unchanged)
    run.suppressed.sort(key=Finding.sort_key)
    from gpudrv_check.engine.run import rule_enabled

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
        repo=run.repo if keep_repo else None,
        path_prefix=path_prefix(root) if root != "-" else "",
        tool_version=__version__,
        disk_paths=run.content.disk_names,
        not_selected=run.not_selected,
    )


def _say_what_was_not_checked(run: Run, summary) -> None:
    from gpudrv_check.engine.run import rule_enabled
    from gpudrv_check.model import coverage

    config = run.repo.config
    enabled = [r for r in run.rules if rule_enabled(config, r, run.rules)]
    missing = coverage.missing_inputs(run.repo, run.matrix_missing is not None)
    matrix_file = run.matrix_missing or config.matrix or "support-matrix.csv"
    summary.notes = coverage.notes(enabled, run.skipped_rules, missing, matrix_file, run.unknowns)
    summary.skipped_rules = [group.as_dict() for group in run.skipped_rules]


def run(options: CheckOptions) -> int:
    from gpudrv_check.report.text import use_colour

    pairs = pair_outputs(list(options.report_args), default_format())
    colour = use_colour(sys.stdout, options.color)
    with phase("inputs"):
        reuse = _result_cache(options, pairs, colour)
    if reuse is not None and reuse.hit is not None:
        return _replay(reuse.hit, pairs, reuse.fail_on, _checked_root(options))
    actions: list[tuple[str, str, list[bytes | str]]] = []
    stderr = sys.stderr
    tee = _Tee(stderr) if reuse is not None else None
    if tee is not None:
        sys.stderr = tee
    findings: list[Finding] = []
    try:
        code = _check(
            options,
            pairs,
            colour,
            actions,
            reuse.data if reuse is not None else None,
            reuse.context if reuse is not None else None,
            reuse.source if reuse is not None else None,
            findings,
            reuse.settings if reuse is not None else None,
        )
    finally:
        sys.stderr = stderr
    for kind, dest, pieces in actions:
        _emit(kind, dest, pieces, _checked_root(options))
    # not when a file changed while the run read it: the key names content it did not read
    if reuse is not None and tee is not None and not getattr(reuse.data, "unsettled", False):
        with phase("result cache"):
            reuse.store(findings, tee.text, actions)
    keep_until_exit(findings, actions, reuse, tee)  # freed by the exit, not here
    return code


def _check(
    options: CheckOptions,
    pairs: list[tuple[str, str]],
    colour: bool,
    actions: list[tuple[str, str, list[bytes | str]]],
    data: dict[str, bytes] | None,
    context: str | None = None,
    reuse_source=None,  # the source the result cache already listed (walked once per run)
    gating: list[Finding] | None = None,  # receives the findings the exit code is taken from
    settings=None,  # gives the config the result cache found (validated then or now), or None
) -> int:
    """One check; what it writes is appended to ``actions`` as (stdout|file, dest, pieces of text).
    With `context` (the digest of every input but the manifest files), namespaces whose files
    did not change take their findings from the partition cache (engine/cache/partition.py)."""
    from gpudrv_check.cli.commands.common import load_source, print_listing
    from gpudrv_check.core.label_reads import reset

    reset()  # which node label values this check reads (engine/cache/partition.py)
    source = reuse_source if reuse_source is not None else make_source(options)
    if any(fmt in MODEL_FORMATS for fmt, _ in pairs):
        # a report that renders sections of the model (the HTML report's upgrade rehearsal
        # walks every workload and budget) reads the whole model: the partition cache gives
        # back the findings of the namespaces it answers for, not their objects
        context = None
    config = settings() if settings is not None else None
    check_run = load_source(options, source, data, context, config)
    if options.verbose:
        print_listing(check_run)
    from gpudrv_check.engine.run import evaluate

    if ("text", STDOUT) in pairs:
        check_run.text_renderer = _text_renderer()
    evaluate(check_run)
    select_rules(check_run, options)
    baseline = _apply_baselines(check_run, options)
    comparison = None
    base = options.base
    if base is not None:
        from gpudrv_check.engine.compare import compare
        from gpudrv_check.engine.exemptions import BY_BASELINE
        from gpudrv_check.report import suppression_source

        accepted = [f for f in check_run.suppressed if suppression_source(f) == BY_BASELINE]
        comparison = compare(base_findings(options, base), check_run.findings, base, accepted)
        check_run.findings = comparison.new  # only what this change introduces, and gates
    code = exit_code(check_run.findings, check_run.repo.config.fail_on)
    if gating is not None:
        gating.extend(check_run.findings)
    keep_repo = any(fmt in MODEL_FORMATS for fmt, _ in pairs)
    report = build_report(check_run, code, baseline, options.path, comparison, keep_repo)
    if not keep_repo:
        # the trees and the model are not needed past this point by a report that does not
        # show them: they go before the reports are rendered (10k workloads: peak RSS
        # 301 -> 268 MB)
        check_run.forget_models()
    del check_run
    report.quiet = options.quiet
    if options.verbose:
        from gpudrv_check.report import suppression_text

        for f in report.suppressed:
            line = f"suppressed {f.location}: {f.rule} {f.message} ({suppression_text(f)})"
            sys.stderr.write(terminal_text(line) + "\n")
    with phase("render"):
        _render_all(report, pairs, colour, actions, options.quiet)
    keep_until_exit(report)  # freed by the exit, not here
    return code


def _render_all(report, pairs: list[tuple[str, str]], colour: bool, actions, quiet: bool) -> None:
    """Every requested format of the report, as actions (stdout or a file)."""
    from gpudrv_check.report import iter_pieces
    from gpudrv_check.report.text import render_summary

    # each report in pieces (report/__init__.py `iter_pieces`): written, and cached, a
    # piece at a time, each encoded once (UTF-8): the stream, the file and `marshal` take
    # the bytes as they are (a 14 MB report was encoded three times, a warm run decoded it)
    for fmt, dest in pairs:
        if dest == STDOUT:
            coloured = fmt in _COLOUR_FORMATS and colour
            pieces = iter_pieces(fmt, dataclasses.replace(report, width=stdout_width()), coloured)
            if fmt in _TERMINAL_FORMATS:  # read on a terminal: no raw control character
                # a piece ends between files' blocks, never inside a colour code
                commands = fmt == "github"  # its own lines are the annotations
                out: list[bytes | str] = [
                    terminal_bytes(p, colour=coloured, commands=commands) for p in pieces
                ]
            else:
                out = [_encoded(p) for p in pieces]
            actions.append(("stdout", "", out))
        else:
            actions.append(("file", dest, [_encoded(p) for p in iter_pieces(fmt, report)]))
    if all(dest != STDOUT for _, dest in pairs):  # the summary, or nothing with --quiet
        summary = [] if quiet else [_encoded(render_summary(report) + "\n")]
        actions.append(("stdout", "", summary))


def _encoded(text: str) -> bytes | str:
    """A piece of a report as it is written: its UTF-8, or the text itself when it holds what
    UTF-8 cannot encode (a lone surrogate: written, or refused, as the stream's or the file's
    own encoding does)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text


#: how much of a report is encoded at a time on its way to stdout or stderr
_WRITE_SLICE = 1 << 20


def _emit(kind: str, dest: str, pieces: list[bytes | str], root: str) -> None:
    """A report's pieces (UTF-8, or text: `_encoded`): to stdout a piece at a time, to a file
    whole (written atomically)."""
    if kind == "file":
        if all(piece.__class__ is bytes for piece in pieces):
            _perform(kind, dest, b"".join(pieces), root)  # type: ignore[arg-type]
        else:
            _perform(kind, dest, "".join(_text(piece) for piece in pieces), root)
    else:
        for piece in pieces:
            _perform(kind, dest, piece)


def _text(piece: bytes | str) -> str:
    """A piece as text (a result entry's bytes are vouched for by its MAC, not decoded when
    loaded: a damaged one gives replacement characters here, never stops the run)."""
    return piece.decode("utf-8", "replace") if isinstance(piece, bytes) else piece


def _perform(kind: str, dest: str, text: bytes | str, root: str = "") -> None:
    if kind in ("stdout", "stderr"):
        stream = sys.stdout if kind == "stdout" else sys.stderr
        if isinstance(text, bytes):
            buffer = _utf8_buffer(stream)
            if buffer is not None:
                stream.flush()  # what was written as text goes first
                _write_all(buffer, text)
                if stream.line_buffering:  # a terminal: out now, as a line of text would be
                    buffer.flush()
                return
            text = _text(text)
        # a slice at a time: the stream encodes what it is given in one piece, and a large
        # report's bytes would be a second copy of it at the run's peak of memory
        for at in range(0, len(text), _WRITE_SLICE):
            stream.write(text[at : at + _WRITE_SLICE])
    else:
        write_output(dest, text, root=root)


def _write_all(buffer: Any, data: bytes) -> None:
    """`data` written whole to a binary stream: a buffered one takes it at once; the raw file
    under an unbuffered stdout (`python -u`, PYTHONUNBUFFERED) may take part of it (a signal
    during a write to a pipe)."""
    view = memoryview(data)
    while view:
        written = buffer.write(view)
        if not written:  # None: a non-blocking stdout that cannot take more now
            raise BlockingIOError(errno.EAGAIN, "standard output would block")
        view = view[written:]


def _utf8_buffer(stream: Any) -> Any:
    """The binary buffer under the interpreter's own stdout or stderr when it would write
    UTF-8 bytes as they are (its encoding UTF-8, a line feed written as one: POSIX), or None:
    the bytes are then decoded and written as text (another PYTHONIOENCODING, a stream put in
    their place, whose newline translation cannot be asked)."""
    if stream is not sys.__stdout__ and stream is not sys.__stderr__:
        return None
    buffer = getattr(stream, "buffer", None)
    encoding = getattr(stream, "encoding", None)
    if buffer is None or not isinstance(encoding, str) or os.linesep != "\n":
        return None
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return None
    return buffer if name == "utf-8" else None


def _checked_root(options: CheckOptions) -> str:
    """The directory on disk that is checked (links below it may not direct a write out)."""
    path = options.path or "."
    return "" if path == "-" else path


def write_output(dest: str, text: bytes | str, what: str = "", root: str = "") -> None:
    """A report or baseline file (text, or its UTF-8), written atomically (read/safe_io.py
    `write_atomic`); below the checked `root` a committed link cannot direct it out of the
    root."""
    from gpudrv_check.read.safe_io import write_atomic

    try:
        write_atomic(dest, text if isinstance(text, bytes) else text.encode("utf-8"), root)
    except OSError as err:
        raise ConfigError(f"cannot write {what}{dest}: {err.strerror}") from None


def _replay(hit: Outcome, pairs: list[tuple[str, str]], fail_on: str, root: str) -> int:
    """A cached result: its stderr and reports, written where this run's arguments say; the
    exit code worked out again from its findings' severities and this run's --fail-on."""
    _perform("stderr", "", hit.stderr)
    for (_, dest), pieces in zip(pairs, hit.reports, strict=True):
        _emit("stdout" if dest == STDOUT else "file", dest, pieces, root)
    if hit.summary is not None:
        _emit("stdout", "", hit.summary, root)
    return hit.exit_code(fail_on)


class _Tee:
    """stderr, also kept as text: what a cached result replays."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return False  # the progress line looks at the real stderr, never at this

    @property
    def text(self) -> str:
        return "".join(self.parts)


class Outcome:
    """What a whole-result cache entry holds: how many findings of each severity the exit code
    is worked out from, and what was rendered, by format, in the order of the arguments; never
    a destination or an exit code (the run that replays it decides those).

    A report is stored in the pieces it was rendered in (`iter_pieces`): `marshal` encodes a
    string that is not ASCII into a bytes object of its own before copying it into the entry,
    which for one report of 14 MB (10k workloads) made the store the run's peak of memory."""

    def __init__(
        self,
        severities: dict[str, int],
        stderr: str,
        reports: list[list[bytes | str]],
        summary: list[bytes | str] | None,
        outside: dict[str, str] | None = None,
    ) -> None:
        self.severities, self.stderr, self.reports = severities, stderr, reports
        self.summary = summary
        #: what the run found at the files it read or looked for that the key does not name
        #: (the source's `outside`): the entry holds only while each is found so again
        self.outside = outside or {}

    @staticmethod
    def pack(
        findings: list[Finding],
        stderr: str,
        actions: list[tuple[str, str, list[bytes | str]]],
        outside: dict[str, str] | None = None,
    ) -> tuple:
        reports = [list(pieces) for _kind, _, pieces in actions]
        severities = dict(Counter(f.severity.value for f in findings))
        return (severities, stderr, reports, dict(outside or {}))

    def holds(self, source: Any) -> bool:
        """Whether every file outside the key is found as the run found it."""
        return outside_holds(self.outside, source)

    @classmethod
    def unpack(cls, value: object, pairs: list[tuple[str, str]]) -> Outcome | None:
        """The outcome of a stored value, or None when it is not one for these outputs."""
        if not (isinstance(value, tuple) and len(value) == 4):
            return None
        severities, stderr, texts, outside = value
        if not valid_outside(outside):
            return None  # a path that leaves the root is never looked at again
        if not (
            isinstance(severities, dict)
            and all(
                k in _THRESHOLD and k != "never" and isinstance(n, int) and n > 0
                for k, n in severities.items()
            )
            and isinstance(stderr, str)
            and isinstance(texts, list)
            and all(
                t.__class__ is list and all(p.__class__ is bytes or p.__class__ is str for p in t)
                for t in texts
            )
            and len(texts) - len(pairs) in (0, 1)
        ):
            return None
        summary_wanted = all(dest != STDOUT for _, dest in pairs)
        if (len(texts) == len(pairs) + 1) != summary_wanted:
            return None
        reports = texts[: len(pairs)]  # one per --format, in order: the pairs are in the key
        summary = texts[-1] if summary_wanted else None
        return cls(severities, stderr, reports, summary, outside)

    def exit_code(self, fail_on: str) -> int:
        """As `exit_code` of the findings the counts were taken from."""
        return exit_code_of(self.severities, fail_on)


class _Reuse:
    """The whole-result cache entry of one check: looked up before anything is parsed."""

    def __init__(
        self,
        cache,
        inputs: RunInputs,
        source=None,
        pairs: list[tuple[str, str]] | None = None,
        fail_on: str = "error",
        named: set[str] | None = None,
    ) -> None:
        """`named`: the files whose content the key holds (the source records reads of any
        other file from now on, `watch`, and the entry stores what they held)."""
        named = named or set()
        self.cache, self.inputs = cache, inputs
        self.name, self.key, self.data = inputs.name, inputs.result_key, inputs.data
        # every input but the manifest files (engine/cache/partition.py)
        self.context = inputs.context_key
        self.source = source  # the source listed and read for the key
        self.pairs, self.fail_on = pairs or [], fail_on
        self.settings: Any = None  # gives the validated config (`_result_cache`)
        found = cache.load("result", self.name, self.key)
        self.hit = Outcome.unpack(found, self.pairs) if found is not None else None
        if self.hit is not None and not self.hit.holds(source):
            self.hit = None  # a file the key does not name changed since
        watch = getattr(source, "watch", None)
        if self.hit is None and watch is not None:
            watch(named)

    def store(self, findings: list[Finding], stderr: str, actions) -> None:
        outside = getattr(self.source, "outside", None)
        value = Outcome.pack(findings, stderr, actions, outside)
        # the reports in pieces, never as one copy of them all (engine/cache/store.py)
        self.cache.store("result", self.name, self.key, value, streamed=True)


def _result_cache(options: CheckOptions, pairs, colour: bool) -> _Reuse | None:
    """The cache of whole results, for a check of a directory on disk, of the git index
    (--staged, the pre-commit hook) or of a revision (--rev): keyed by every input (tool
    version, arguments, the environment that picks formats and colour, config, matrix,
    inventory, baseline, and every file's path and digest: its SHA-256 on disk, its git
    object id in the index or a revision). None when it does not apply (--no-cache, stdin,
    --base, --kustomize, --verbose, --write-baseline)."""
    if (
        options.no_cache
        or options.path == "-"
        or any((options.base, options.kustomize, options.verbose))
        or options.write_baseline
    ):
        return None
    from gpudrv_check.cli.commands.common import repo_config
    from gpudrv_check.engine.cache.config import ConfigView, keyed_config
    from gpudrv_check.engine.cache.inputs import (
        BLOB_SIZES,
        STAMPS,
        Stamps,
        blob_inputs,
        budget_spent,
        entry_name,
        manifest_inputs,
        pack_sizes,
        unpack_sizes,
        valid_sizes,
    )
    from gpudrv_check.engine.cache.store import Cache, default_dir
    from gpudrv_check.read.exclude import from_config
    from gpudrv_check.read.policies import policy_files
    from gpudrv_check.read.safe_io import read_named
    from gpudrv_check.report.sections.findings import link_base

    cache_dir = options.cache_dir
    cache = Cache(Path(cache_dir) if cache_dir else default_dir())
    sizes_name = None
    known_sizes = None
    if options.staged and options.rev is None:
        # the index's blob sizes an earlier run measured: read/git.py `IndexTree` then asks
        # git nothing when git's own files answer the rest (the pre-commit hook's warm run)
        sizes_name = entry_name(str(Path(options.path).resolve()), BLOB_SIZES)
        known_sizes = unpack_sizes(
            cache.load(BLOB_SIZES, sizes_name, "", valid=valid_sizes, quiet=True)
        )
    source = make_source(options, blob_sizes=known_sizes)
    if sizes_name is not None and getattr(source, "sizes_learned", False):
        cache.store(BLOB_SIZES, sizes_name, "", pack_sizes(source.blob_sizes()))  # type: ignore[attr-defined]
    root = Path(source.disk_root).resolve()
    # a git source: every file's digest is its object id, listed by git; nothing is read
    # ahead (read_repo says which files it reads, after the per-file cache answered)
    blobs = getattr(source, "blob_digest", None) is not None
    # the entries of a git source are its own: the index and the working tree of one root
    # alternate (the pre-commit hook, the editor) without displacing each other's result
    entry_root = f"{root}\0{type(source).__name__}" if blobs else str(root)
    # validated by an earlier run with the same config bytes: no pydantic (engine/cache/config.py)
    found = find_config(Path(source.disk_root), options.config, source)

    def validate():  # the config found, validated: once per run at most
        return repo_config(options, source, found)[1]

    overrides = (options.operator_version, options.fail_on)
    config, remember = keyed_config(found, overrides, cache, entry_root, validate)
    listing = source.list_manifests(from_config(config))
    if blobs:
        source.expect([])  # type: ignore[attr-defined]
    parts: list[object] = [
        __version__,
        os.getcwd(),
        str(root),
        cache_key(options),
        pairs,
        colour,
        stdout_width(),
        default_format(),
        link_base(),  # where the markdown report links each finding (GITHUB_SHA...)
        config.dump_json(),
        [(s.rel, s.reason) for s in listing.skipped],
    ]

    def outside(path: str | None, limit: int = config.max_file_bytes) -> None:
        # read with the limit the run reads it with: a file over another limit would be
        # keyed as unreadable, and its edits never seen
        if not path or path == "none":
            parts.append(path)
            return
        try:
            parts.append((path, read_named(path, limit, root)))
        except OSError:
            parts.append((path, None))

    named = {ref.rel for ref in listing.files}  # the files whose content the key holds

    def inside(rel: str | None, limit: int = config.max_file_bytes) -> None:
        if rel:
            named.add(rel)
        try:
            if rel and source.exists(rel):
                parts.append((rel, source.read(rel, limit, follow_inside=True)))
            else:
                parts.append((rel, None))
        except (OSError, ValueError):
            parts.append((rel, None))

    outside(options.matrix)  # engine/run.py `_limit`: max_file_bytes
    outside(options.baseline, MAX_BASELINE_BYTES)
    outside(options.config, DEFAULT_MAX_FILE_BYTES)  # read/config_file.py `_read_file`
    for given in options.inventory or ():
        outside(given, config.max_inventory_bytes)
    inside(config.matrix)
    for rel in config.inventory:
        inside(rel, config.max_inventory_bytes)
    for name in sorted(config.clusters):  # a cluster's own inventory and matrix
        for rel in config.clusters[name].inventory:
            inside(rel, config.max_inventory_bytes)
        inside(config.clusters[name].matrix)
    for rel in policy_files(root, config, source):
        inside(rel)
    from gpudrv_check.read.prefetched import Prefetched

    hashed: dict[str, str] = {}
    if blobs:
        files, held = blob_inputs(source, listing, config.max_file_bytes, config.max_total_bytes)
        data: dict[str, bytes] = {}
    else:
        name = entry_name(entry_root, os.getcwd())
        stamps = Stamps.loaded(cache.load(STAMPS, name, ""))  # its shape checked there
        # the files whose stamps vouch for their digest are not read (`held`): read_repo
        # reads them only if the per-file cache does not answer for that digest
        files, data, kept, held = manifest_inputs(
            source, listing, config.max_file_bytes, config.max_total_bytes, stamps
        )
        if kept != stamps:
            cache.store(STAMPS, name, "", kept.stored())
        # the SHA-256 of each file read for the key: read_repo does not hash its bytes again
        hashed = {part[0]: part[1] for part in files if len(part) == 2 and part[0] in data}
    remember()  # what the key reads of the config was read without a usage error
    if budget_spent(files):
        # the input budget is spent: which files the run reads then depends on what it
        # charges (it does not charge Kustomize patches or policy files, which the key's
        # budget counts), so the key may not name every file read: no whole result
        return None
    prefetched = Prefetched(data, held, hashed)
    inputs = RunInputs(entry_root, os.getcwd(), tuple(parts), files, prefetched)
    reuse = _Reuse(cache, inputs, source, pairs, config.fail_on, named)
    # a miss runs the check: on the config validated here, else on what the same bytes were
    # validated to before, rebuilt without pydantic (engine/cache/config.py)
    if isinstance(config, ConfigView):
        known = config.known
        reuse.settings = lambda: repo_config(options, source, found, known)[1]
    else:
        reuse.settings = lambda: config
    return reuse
