"""read → model → evaluate: one run of the checker over a repo."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from gpudrv_check.core.finding import Finding, Location, Severity
from gpudrv_check.model.coverage import SkippedRules
from gpudrv_check.model.disruption import build_pdbs
from gpudrv_check.model.identity import Copies, one_per_identity
from gpudrv_check.model.inventory import build_inventory
from gpudrv_check.model.placeholders import Unknowns, substitute
from gpudrv_check.model.repo import Repo
from gpudrv_check.model.workload import build_workloads
from gpudrv_check.read.config import Config, ConfigError
from gpudrv_check.read.exclude import from_config
from gpudrv_check.read.manifests import (
    FileResult,
    ReadOptions,
    RepoContent,
    parse_manifest_bytes,
    read_repo,
)
from gpudrv_check.read.matrix import Matrix, parse_matrix
from gpudrv_check.read.policy import RulePolicy, catalog, rule_settings, validate_rule_settings
from gpudrv_check.read.source import Source, clean_rel
from gpudrv_check.read.tree import Listing, Skipped, WorkingTree

if TYPE_CHECKING:
    from gpudrv_check.read.custom_policy import CustomPolicy


@dataclass
class Run:
    """Everything one run read and found."""

    repo: Repo
    content: RepoContent
    listing: Listing
    findings: list[Finding] = field(default_factory=list)
    suppressed: list[Finding] = field(default_factory=list)
    custom_policies: list[CustomPolicy] = field(default_factory=list)
    # every rule of this run, by id: the built-in catalog and the custom policies
    rules: dict[str, RulePolicy] = field(default_factory=lambda: dict(catalog()))
    source: Source | None = None
    # the default support-matrix.csv is absent (check runs without it and says so), or None
    matrix_missing: str | None = None
    # identities written in several files: the copy the rules read, and the others
    copies: list[Copies] = field(default_factory=list)
    # rules not evaluated for want of input (nodes, the matrix), grouped by reason
    skipped_rules: list[SkippedRules] = field(default_factory=list)
    # `${VAR}` placeholders no Flux Kustomization fills in, per object
    unknowns: Unknowns = field(default_factory=Unknowns)

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in Severity}
        for f in self.findings:
            out[f.severity.value] += 1
        return out


def _shown(path: Path, base: Path, given: str) -> str:
    """A path from the command line as findings name it: relative to the checked root if inside."""
    try:
        shown = os.path.relpath(path.resolve(), base.resolve()).replace(os.sep, "/")
    except ValueError:
        return given
    return given if shown.startswith("..") else shown


def _config_path(source: Source, config: Config, rel: str, what: str) -> str:
    clean = clean_rel(rel)
    if clean is None:
        raise config.error_at(
            f"{what} path {rel!r} leaves the repo root; config paths stay inside the repo", what
        )
    return clean


class MatrixMissing(ConfigError):
    """The default support-matrix.csv is absent (a usage error for all but `check`)."""

    def __init__(self, message: str, rel: str) -> None:
        super().__init__(message)
        self.rel = rel


def load_matrix(source: Source | Path, config: Config, override: str | None) -> Matrix | None:
    """The support matrix: `--matrix FILE` (relative to the working directory), else config.

    The config's matrix is read through the source, so `--rev` uses the matrix of that revision.
    Raises MatrixMissing when the default matrix, named by no config or flag, is absent.
    """
    if isinstance(source, Path):
        source = WorkingTree(source)
    if override is not None:
        if override.lower() == "none":
            return None
        path = Path(override)
        if not path.is_file():
            raise ConfigError(f"support matrix not found: {override}")
        return parse_matrix(
            _shown(path, source.disk_root, override),
            _read_limited(path, override, config.max_file_bytes, source.disk_root),
        )
    if config.matrix is None:
        return None
    rel = _config_path(source, config, config.matrix, "matrix")
    if isinstance(source, WorkingTree) and source.exists(rel) and not source.resolve_inside(rel):
        raise config.error_at(
            f"matrix path {rel!r} leaves the repo root; config paths stay inside the repo",
            "matrix",
        )
    if not source.exists(rel):
        where = f" at {source.label}" if not isinstance(source, WorkingTree) else ""
        message = (
            f"support matrix not found: {Path(source.disk_root) / rel}{where} (set `matrix:` in "
            ".gpudrv-check.yaml, pass --matrix FILE, or --matrix none to check without one)"
        )
        if "matrix" in config.model_fields_set:
            raise ConfigError(message)
        raise MatrixMissing(message, rel)
    return parse_matrix(rel, _read_repo_file(source, config, rel, "matrix"))


def _read_repo_file(source: Source, config: Config, rel: str, what: str) -> bytes:
    """A file the config names (matrix, inventory): links may not leave the root, size and
    kind are checked on the open file (read/safe_io.py)."""
    from gpudrv_check.read.safe_io import Refused, TooLarge

    try:
        return source.read(rel, config.max_file_bytes, follow_inside=True)
    except TooLarge as err:
        raise ConfigError(
            f"{_WHAT[what]} {rel} is {err.size} bytes, over max_file_bytes "
            f"({config.max_file_bytes})"
        ) from None
    except Refused as err:
        if "leaves the repo root" in (err.strerror or ""):
            raise config.error_at(
                f"{what} path {rel!r} leaves the repo root; config paths stay inside the repo",
                what,
            ) from None
        raise config.error_at(f"cannot read {_WHAT[what]} {rel}: {err.strerror}", what) from None
    except OSError as err:  # unreadable, or swapped for something that is not a file
        reason = err.strerror or type(err).__name__
        raise config.error_at(f"cannot read {_WHAT[what]} {rel}: {reason}", what) from None


_WHAT = {"matrix": "support matrix", "inventory": "inventory"}


def _read_limited(path: Path, shown: str, max_bytes: int, root: Path | str = "") -> bytes:
    """A file named on the command line (read/safe_io.py `read_named`)."""
    from gpudrv_check.read.safe_io import TooLarge, read_named

    try:
        return read_named(path, max_bytes, root)
    except TooLarge as err:
        raise ConfigError(
            f"support matrix {shown} is {err.size} bytes, over max_file_bytes ({max_bytes})"
        ) from None
    except OSError as err:
        raise ConfigError(f"cannot read support matrix {shown}: {err.strerror}") from None


def _extra_inventory(
    source: Source, config: Config, inventory: Sequence[str], listed: set[str]
) -> list[FileResult]:
    """Inventory files named by the config (inside the repo) and by `--inventory` (on disk)."""
    from gpudrv_check.read.safe_io import read_named

    results = []
    for rel in config.inventory:
        clean = _config_path(source, config, rel, "inventory")
        if clean in listed:
            continue
        if not source.exists(clean):
            raise ConfigError(f"inventory file not found: {clean}", config.source)
        listed.add(clean)
        data = _read_repo_file(source, config, clean, "inventory")
        results.append(parse_manifest_bytes(clean, data))
    for given in inventory:
        path = Path(given)
        if not path.is_file():
            raise ConfigError(f"inventory file not found: {given}")
        shown = _shown(path, source.disk_root, given)
        if shown in listed:
            continue
        listed.add(shown)
        try:
            data = read_named(path, config.max_file_bytes, source.disk_root)
        except OSError as err:
            raise ConfigError(f"cannot read inventory {given}: {err.strerror}") from None
        results.append(parse_manifest_bytes(shown, data))
    return results


def _render_problem(problem) -> Finding:
    return Finding(
        rule="GPU009",
        severity=Severity.WARNING,
        message=problem.message,
        hint="Fix the kustomization so `kustomize build` works offline, or render it yourself "
        "and pipe the output to `gpudrv-check check -`.",
        location=Location(file=problem.file, line=problem.line, column=problem.column),
    )


def load(
    root: Path | Source,
    config: Config,
    matrix_override: str | None = None,
    inventory: Sequence[str] = (),
    options: ReadOptions | None = None,
    matrix_optional: bool = False,
) -> Run:
    """Read a repo (a directory, or any source: a git revision, stdin, Kustomize renderings)
    into the model the rules evaluate. `matrix_optional`: an absent default matrix is one
    warning (`check`), not a usage error."""
    if isinstance(root, Path):
        if not root.is_dir():
            raise ConfigError(f"not a directory: {root}")
        source: Source = WorkingTree(root)
    else:
        source = root
    from gpudrv_check.engine.exemptions import validate_exemptions
    from gpudrv_check.read.policies import load_custom_policies, policy_files

    # the repo's own configuration files (custom policies) come from the same source as the
    # manifests: a revision's policies with --rev; the working directory's with stdin
    settings = getattr(source, "config_source", source)
    files = policy_files(Path(source.disk_root), config, settings)
    custom = load_custom_policies(Path(source.disk_root), config, files, settings)
    rules = all_rules(custom)
    validate_rule_settings(config, rules)
    validate_exemptions(config, rules)
    matrix_missing = None
    try:
        matrix = load_matrix(source, config, matrix_override)
    except MatrixMissing as err:
        if not matrix_optional:
            raise
        matrix, matrix_missing = None, err.rel
    listing = source.list_manifests(from_config(config))
    if files:
        # policy files are configuration, not manifests
        listing.files = [f for f in listing.files if f.rel not in files]
        listing.skipped = sorted(
            [*listing.skipped, *(Skipped(rel, "custom policy file") for rel in files)],
            key=lambda s: s.rel,
        )
    if not custom:
        # nothing reads the content of these kinds unless a custom policy asserts on it
        from gpudrv_check.model.workload_kinds import workload_kinds
        from gpudrv_check.read.manifests import SKIM_KINDS

        # a kind the workload table reads (Knative's Service) keeps its content
        read_kinds = {k.kind for k in workload_kinds(config).kinds}
        options = replace(options or ReadOptions(), skim=SKIM_KINDS - read_kinds)
    options = replace(options or ReadOptions(), max_total_bytes=config.max_total_bytes)
    content = read_repo(source, listing.files, config.max_file_bytes, options)
    content.files.extend(
        _extra_inventory(source, config, inventory, {f.rel for f in listing.files})
    )
    read = content.manifests  # a new list per access: built once
    unknowns = substitute(read, content.placeholder_files, source)  # fills in, in place
    manifests, copies = one_per_identity(read)
    nodes, node_findings = build_inventory(manifests)
    from gpudrv_check.model.node import apply_gpu_presence

    gpu_presence = apply_gpu_presence(nodes)
    from gpudrv_check.model.workload_kinds import workload_kinds

    workloads, workload_findings = build_workloads(manifests, workload_kinds(config))
    from gpudrv_check.model.admission import admit

    admit(workloads, manifests, config)
    pdbs, pdb_findings = build_pdbs(manifests)
    repo = Repo(
        root=str(source.disk_root),
        config=config,
        manifests=manifests,
        nodes=nodes,
        matrix=matrix,
        files_read=content.file_count,
        workloads=workloads,
        pdbs=pdbs,
    )
    repo.extras["gpu_presence"] = gpu_presence
    repo.cuda_table  # noqa: B018 - a malformed `cuda:` config is a usage error before any output
    run = Run(
        repo=repo,
        content=content,
        listing=listing,
        custom_policies=custom,
        rules=rules,
        source=source,
        matrix_missing=matrix_missing,
        copies=copies,
        unknowns=unknowns,
    )
    if matrix_missing is not None:
        run.findings.append(matrix_missing_finding(matrix_missing))
    for group in copies:
        run.findings.extend(group.findings())
    run.findings.extend(content.problems)
    run.findings.extend(node_findings)
    run.findings.extend(workload_findings)
    run.findings.extend(pdb_findings)
    run.findings.extend(_render_problem(p) for p in getattr(source, "problems", ()))
    if matrix is not None:
        run.findings.extend(matrix.problems)
    return run


def matrix_missing_finding(rel: str) -> Finding:
    """The one warning of a check without the support matrix (the rules that need it skip)."""
    from gpudrv_check.model.coverage import MATRIX_HEADER

    return Finding(
        rule="GPU001",
        severity=Severity.WARNING,
        message=f"no support matrix ({rel}): the driver images of GPU nodes are not checked",
        hint=f"Create {rel} with the header `{MATRIX_HEADER}` and one row per precompiled "
        "driver image you have built (e.g. `550,5.15.0-119-generic,ubuntu22.04`), or point "
        "`matrix:` in .gpudrv-check.yaml at yours; `--matrix none` checks without one, silently.",
        location=Location(file=rel, line=1, column=1),
    )


def all_rules(custom: list[CustomPolicy]) -> dict[str, RulePolicy]:
    rules = dict(catalog())
    for policy in custom:
        rules[policy.id] = policy.rule_policy()
    return dict(sorted(rules.items()))


def evaluate(run: Run) -> None:
    """Run every enabled rule and custom policy; settle severities, order and duplicates;
    move exempted findings to `run.suppressed`."""
    from gpudrv_check.engine.exemptions import apply_exemptions
    from gpudrv_check.model.coverage import missing_inputs, skipped_rules
    from gpudrv_check.rules import registered
    from gpudrv_check.rules.context import Context
    from gpudrv_check.rules.declarative import check_within_budget

    config = run.repo.config
    ctx = Context(run.repo, run.rules)
    checks = {r: c for r, c in registered().items() if rule_enabled(config, r, run.rules)}
    missing = missing_inputs(run.repo, run.matrix_missing is not None)
    run.skipped_rules = skipped_rules(run.rules, checks, missing)
    not_run = {r for group in run.skipped_rules for r in group.rules}
    for rule_id, check in checks.items():
        if rule_id not in not_run:
            run.findings.extend(check(ctx))
    for policy in run.custom_policies:
        if rule_enabled(config, policy.id, run.rules):
            run.findings.extend(check_within_budget(ctx, policy))
    run.findings = run.unknowns.filter(run.findings)
    settled = settle(_note_origins(run, run.findings), config, run.rules)
    run.findings, suppressed = apply_exemptions(settled, run.repo, run.rules)
    run.suppressed.extend(suppressed)
    if run.content.plan is not None:
        from gpudrv_check.engine.cache.partition import merge

        merge(run)  # the findings of the namespaces this run did not read again


def _note_origins(run: Run, findings: list[Finding]) -> list[Finding]:
    """Findings in a rendered Kustomize stream name the repo file their object came from."""
    origins = getattr(run.source, "origins", None)
    rendered = getattr(run.source, "rendered", None)
    if origins is None or not rendered:
        return findings
    starts: dict[str, list[tuple[int, int]]] = {}
    for m in run.repo.manifests:
        if m.file in rendered:
            starts.setdefault(m.file, []).append((getattr(m.data, "pos", (1, 1))[0], m.doc))
    out = []
    for f in findings:
        docs = starts.get(f.location.file)
        if docs:
            doc = max(((line, d) for line, d in docs if line <= f.location.line), default=None)
            paths = origins(f.location.file)
            if doc is not None and doc[1] < len(paths) and paths[doc[1]]:
                f = f.model_copy(update={"message": f"{f.message} (source: {paths[doc[1]]})"})
        out.append(f)
    return out


def rule_enabled(config: Config, rule_id: str, rules: dict[str, RulePolicy] | None = None) -> bool:
    settings = rule_settings(config, rule_id, rules)
    return settings is None or settings.enabled


def settle(
    findings: list[Finding], config: Config, rules: dict[str, RulePolicy] | None = None
) -> list[Finding]:
    """Apply the config (disabled rules, severity overrides), sort, and drop exact repeats."""
    from gpudrv_check.read.policy import catalog

    policies = catalog()
    out: list[Finding] = []
    seen: set[tuple] = set()
    for finding in findings:
        if not finding.hint and finding.rule in policies:
            # every finding carries a fix hint: the rule's own when the producer had none
            finding = finding.model_copy(update={"hint": policies[finding.rule].fix})
        settings = rule_settings(config, finding.rule, rules)
        if settings is not None:
            if not settings.enabled:
                continue
            if settings.severity is not None:
                finding = finding.model_copy(update={"severity": settings.severity})
        key = (finding.rule, finding.location, finding.message)
        if key in seen:
            continue
        seen.add(key)
        out.append(finding)
    out.sort(key=Finding.sort_key)
    return out


def check(
    root: Path | Source,
    config: Config,
    matrix_override: str | None = None,
    inventory: Sequence[str] = (),
) -> Run:
    run = load(root, config, matrix_override, inventory)
    evaluate(run)
    return run


def validate_rule_keys(config: Config) -> None:
    """Config `rules:` keys name a built-in rule (custom policies are checked once loaded)."""
    if not config.policies:
        validate_rule_settings(config)
