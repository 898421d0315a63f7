"""read → model → evaluate: one run of the checker over a repo."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpudrv_check.config import Config, ConfigError
from gpudrv_check.load.inventory import build_inventory
from gpudrv_check.load.manifests import RepoContent, read_repo
from gpudrv_check.load.matrix import Matrix, parse_matrix
from gpudrv_check.model.disruption import build_pdbs
from gpudrv_check.model.finding import Finding, Severity
from gpudrv_check.model.repo import Repo
from gpudrv_check.model.workload import build_workloads
from gpudrv_check.policy import RulePolicy, catalog, rule_settings, validate_rule_settings
from gpudrv_check.source.tree import Listing, Skipped, WorkingTree, inside_root

if TYPE_CHECKING:
    from gpudrv_check.model.custom_policy import CustomPolicy


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

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in Severity}
        for f in self.findings:
            out[f.severity.value] += 1
        return out


def load_matrix(root: Path, config: Config, override: str | None) -> Matrix | None:
    """The support matrix: `--matrix FILE` (relative to the working directory), else config."""
    if override is not None:
        if override.lower() == "none":
            return None
        path = Path(override)
        shown = override
        if not path.is_file():
            raise ConfigError(f"support matrix not found: {override}")
        try:
            shown = os.path.relpath(path.resolve(), root.resolve()).replace(os.sep, "/")
            if shown.startswith(".."):
                shown = override
        except ValueError:
            shown = override
        return parse_matrix(shown, path.read_bytes())
    if config.matrix is None:
        return None
    rel = config.matrix
    if os.path.isabs(rel) or not inside_root(root, rel):
        raise ConfigError(
            f"matrix path {rel!r} leaves the repo root; config paths stay inside the repo",
            config.source,
        )
    path = root / rel
    if not path.is_file():
        raise ConfigError(
            f"support matrix not found: {path} (set `matrix:` in .gpudrv-check.yaml, pass "
            "--matrix FILE, or --matrix none to check without one)"
        )
    return parse_matrix(rel, path.read_bytes())


def load(root: Path, config: Config, matrix_override: str | None = None) -> Run:
    """Read the repo at `root` into the model the rules evaluate."""
    if not root.is_dir():
        raise ConfigError(f"not a directory: {root}")
    from gpudrv_check.exemptions import validate_exemptions
    from gpudrv_check.load.policies import load_custom_policies, policy_files

    files = policy_files(root, config)
    custom = load_custom_policies(root, config, files)
    rules = all_rules(custom)
    validate_rule_settings(config, rules)
    validate_exemptions(config, rules)
    matrix = load_matrix(root, config, matrix_override)
    tree = WorkingTree(root)
    listing = tree.list_manifests(config.exclude)
    if files:
        # policy files are configuration, not manifests
        listing.files = [f for f in listing.files if f.rel not in files]
        listing.skipped = sorted(
            [*listing.skipped, *(Skipped(rel, "custom policy file") for rel in files)],
            key=lambda s: s.rel,
        )
    content = read_repo(tree, listing.files, config.max_file_bytes)
    manifests = content.manifests
    nodes, node_findings = build_inventory(manifests)
    workloads, workload_findings = build_workloads(manifests)
    pdbs, pdb_findings = build_pdbs(manifests)
    repo = Repo(
        root=str(root),
        config=config,
        manifests=manifests,
        nodes=nodes,
        matrix=matrix,
        files_read=len(listing.files),
        workloads=workloads,
        pdbs=pdbs,
    )
    repo.cuda_table  # noqa: B018 - a malformed `cuda:` config is a usage error before any output
    run = Run(repo=repo, content=content, listing=listing, custom_policies=custom, rules=rules)
    run.findings.extend(content.problems)
    run.findings.extend(node_findings)
    run.findings.extend(workload_findings)
    run.findings.extend(pdb_findings)
    if matrix is not None:
        run.findings.extend(matrix.problems)
    return run


def all_rules(custom: list[CustomPolicy]) -> dict[str, RulePolicy]:
    rules = dict(catalog())
    for policy in custom:
        rules[policy.id] = policy.rule_policy()
    return dict(sorted(rules.items()))


def evaluate(run: Run) -> None:
    """Run every enabled rule and custom policy; settle severities, order and duplicates;
    move exempted findings to `run.suppressed`."""
    from gpudrv_check.exemptions import apply_exemptions
    from gpudrv_check.rules import registered
    from gpudrv_check.rules.context import Context
    from gpudrv_check.rules.declarative import check_policy

    config = run.repo.config
    ctx = Context(run.repo, run.rules)
    for rule_id, check in registered().items():
        if not rule_enabled(config, rule_id, run.rules):
            continue
        run.findings.extend(check(ctx))
    for policy in run.custom_policies:
        if rule_enabled(config, policy.id, run.rules):
            run.findings.extend(check_policy(ctx, policy))
    settled = settle(run.findings, config, run.rules)
    run.findings, suppressed = apply_exemptions(settled, run.repo, run.rules)
    run.suppressed.extend(suppressed)


def rule_enabled(config: Config, rule_id: str, rules: dict[str, RulePolicy] | None = None) -> bool:
    settings = rule_settings(config, rule_id, rules)
    return settings is None or settings.enabled


def settle(
    findings: list[Finding], config: Config, rules: dict[str, RulePolicy] | None = None
) -> list[Finding]:
    """Apply the config (disabled rules, severity overrides), sort, and drop exact repeats."""
    from gpudrv_check.policy import catalog

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


def check(root: Path, config: Config, matrix_override: str | None = None) -> Run:
    run = load(root, config, matrix_override)
    evaluate(run)
    return run


def validate_rule_keys(config: Config) -> None:
    """Config `rules:` keys name a built-in rule (custom policies are checked once loaded)."""
    if not config.policies:
        validate_rule_settings(config)
