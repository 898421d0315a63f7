"""read → model → evaluate: one run of the checker over a repo."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from gpudrv_check.config import Config, ConfigError, inside_root
from gpudrv_check.load.inventory import build_inventory
from gpudrv_check.load.manifests import RepoContent, read_repo
from gpudrv_check.load.matrix import Matrix, parse_matrix
from gpudrv_check.model.finding import Finding, Severity
from gpudrv_check.model.repo import Repo
from gpudrv_check.model.workload import build_workloads
from gpudrv_check.source.tree import Listing, WorkingTree


@dataclass
class Run:
    """Everything one run read and found."""

    repo: Repo
    content: RepoContent
    listing: Listing
    findings: list[Finding] = field(default_factory=list)
    suppressed: list[Finding] = field(default_factory=list)

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
        return parse_matrix(shown, _read_limited(path, shown, config.max_file_bytes))
    if config.matrix is None:
        return None
    rel = config.matrix
    if inside_root(root, rel) is None:
        raise config.error_at(
            f"matrix path {rel!r} leaves the repo root; config paths stay inside the repo",
            "matrix",
        )
    path = root / rel
    if not path.is_file():
        raise ConfigError(
            f"support matrix not found: {path} (set `matrix:` in .gpudrv-check.yaml, pass "
            "--matrix FILE, or --matrix none to check without one)"
        )
    return parse_matrix(rel, _read_limited(path, rel, config.max_file_bytes))


def _read_limited(path: Path, shown: str, max_bytes: int) -> bytes:
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise ConfigError(
                f"support matrix {shown} is {size} bytes, over max_file_bytes ({max_bytes})"
            )
        return path.read_bytes()
    except OSError as err:
        raise ConfigError(f"cannot read support matrix {shown}: {err.strerror}") from None


def load(root: Path, config: Config, matrix_override: str | None = None) -> Run:
    """Read the repo at `root` into the model the rules evaluate."""
    if not root.is_dir():
        raise ConfigError(f"not a directory: {root}")
    matrix = load_matrix(root, config, matrix_override)
    tree = WorkingTree(root)
    listing = tree.list_manifests(config.exclude)
    content = read_repo(tree, listing.files, config.max_file_bytes)
    manifests = content.manifests
    nodes, node_findings = build_inventory(manifests)
    workloads, workload_findings = build_workloads(manifests)
    repo = Repo(
        root=str(root),
        config=config,
        manifests=manifests,
        nodes=nodes,
        matrix=matrix,
        files_read=len(listing.files),
        workloads=workloads,
    )
    run = Run(repo=repo, content=content, listing=listing)
    run.findings.extend(content.problems)
    run.findings.extend(node_findings)
    run.findings.extend(workload_findings)
    if matrix is not None:
        run.findings.extend(matrix.problems)
    return run


def evaluate(run: Run) -> None:
    """Run every enabled rule and settle severities, order and duplicates."""
    from gpudrv_check.rules import registered
    from gpudrv_check.rules.context import Context

    config = run.repo.config
    ctx = Context(run.repo)
    for rule_id, check in registered().items():
        if not rule_enabled(config, rule_id):
            continue
        run.findings.extend(check(ctx))
    run.findings = settle(run.findings, config)


def rule_settings(config: Config, rule_id: str):
    from gpudrv_check.policy import catalog

    policy = catalog().get(rule_id)
    for key, settings in config.rules.items():
        if key.upper() == rule_id or (policy is not None and key == policy.name):
            return settings
    return None


def rule_enabled(config: Config, rule_id: str) -> bool:
    settings = rule_settings(config, rule_id)
    return settings is None or settings.enabled


def settle(findings: list[Finding], config: Config) -> list[Finding]:
    """Apply the config (disabled rules, severity overrides), sort, and drop exact repeats."""
    out: list[Finding] = []
    seen: set[tuple] = set()
    for finding in findings:
        settings = rule_settings(config, finding.rule)
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
    """Config `rules:` keys must name a rule, by id or slug."""
    from gpudrv_check.policy import by_id_or_name

    for key in config.rules:
        if by_id_or_name(key) is None:
            raise config.error_at(f"rules: unknown rule {key!r}", "rules", key)
