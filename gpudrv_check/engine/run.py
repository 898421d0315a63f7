"""read → model → evaluate: one run of the checker over a repo."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Collection, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpudrv_check.core.finding import Finding, Location, Severity
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.core.records import record
from gpudrv_check.engine.phases import phase, say_workers
from gpudrv_check.model.clusters import Cluster, discover
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
from gpudrv_check.read.policy import (
    RulePolicy,
    builtin,
    catalog,
    rule_settings,
    validate_rule_settings,
)
from gpudrv_check.read.safe_io import is_dir, is_file
from gpudrv_check.read.source import Source, clean_rel
from gpudrv_check.read.tree import FileRef, Listing, Skipped, WorkingTree

if TYPE_CHECKING:
    from gpudrv_check.read.custom_policy import CustomPolicy


@record
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
    # a repo of several clusters: one run per cluster (the rules evaluate those), else []
    clusters: list[Run] = field(default_factory=list)
    cluster: Cluster | None = None  # the cluster this run is, in a repo of several
    # how the text report renders one finding, (width, function), when this run writes one:
    # the partition cache stores each finding's text with it, for the runs that take it from
    # the cache (engine/cache/partition.py); None: no text report
    text_renderer: tuple[int, Callable[[Finding], str]] | None = None
    # the rules --select/--ignore left out (cli/commands/check.py `select_rules`)
    not_selected: frozenset[str] = frozenset()

    def forget_models(self) -> None:
        """Done with the model of this run and of its clusters: see `Repo.forget`."""
        for run in (self, *self.clusters):
            run.repo.forget()

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
        if not is_file(path):
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
        if "matrix" in config.written:
            raise config.error_at(message, "matrix")
        raise MatrixMissing(message, rel)
    return parse_matrix(rel, _read_repo_file(source, config, rel, "matrix"))


def _read_repo_file(source: Source, config: Config, rel: str, what: str) -> bytes:
    """A file the config names (matrix, inventory): links may not leave the root, size and
    kind are checked on the open file (read/safe_io.py)."""
    from gpudrv_check.read.safe_io import Refused, TooLarge

    limit, setting = _limit(config, what)
    try:
        return source.read(rel, limit, follow_inside=True)
    except TooLarge as err:
        raise ConfigError(
            f"{_WHAT[what]} {rel} is {err.size} bytes, over {setting} ({limit})"
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


def _limit(config: Config, what: str) -> tuple[int, str]:
    """The size limit of a file the config names, and the setting that sets it."""
    if what == "inventory":
        return config.max_inventory_bytes, "max_inventory_bytes"
    return config.max_file_bytes, "max_file_bytes"


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


def _large_inventories(
    source: Source, config: Config, inventory: Sequence[str], files: Sequence[FileRef]
) -> set[str]:
    """Named inventory files that the walk found over max_file_bytes or over
    max_inventory_bytes: named by the config's `inventory:`, a cluster's
    `clusters.NAME.inventory`, or `--inventory` inside the repo. Each is read with
    max_inventory_bytes, as the docs promise for every named inventory (one under
    max_file_bytes but over a lower max_inventory_bytes was read as a manifest, whatever the
    setting said, while the same file excluded from the walk was refused: a review)."""
    every = [*config.inventory, *(rel for c in config.clusters.values() for rel in c.inventory)]
    named = {_config_path(source, config, rel, "inventory") for rel in every}
    named |= {_shown(Path(given), source.disk_root, given) for given in inventory}
    limit = min(config.max_file_bytes, config.max_inventory_bytes)
    return {f.rel for f in files if f.rel in named and f.size > limit}


def _extra_inventory(
    source: Source,
    config: Config,
    inventory: Sequence[str],
    listed: set[str],
    big: Collection[str] = (),
) -> list[FileResult]:
    """Inventory files named by the config (inside the repo) and by `--inventory` (on disk),
    and the named ones the walk left to be read here (`big`, `_large_inventories`)."""
    from gpudrv_check.read.safe_io import TooLarge, read_named

    results = []
    for rel in [*config.inventory, *sorted(big)]:
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
        if not is_file(path):
            raise ConfigError(f"inventory file not found: {given}")
        shown = _shown(path, source.disk_root, given)
        if shown in listed:
            continue
        listed.add(shown)
        try:
            data = read_named(path, config.max_inventory_bytes, source.disk_root)
        except TooLarge as err:
            raise ConfigError(
                f"inventory {given} is {err.size} bytes, over max_inventory_bytes "
                f"({config.max_inventory_bytes})"
            ) from None
        except OSError as err:
            raise ConfigError(f"cannot read inventory {given}: {err.strerror}") from None
        results.append(parse_manifest_bytes(shown, data))
    return results


def _render_problem(problem) -> Finding:
    return Finding(
        rule=builtin("not-checkable").id,
        severity=builtin("not-checkable").severity,
        message=problem.message,
        hint="Fix the kustomization so `kustomize build` works offline, or render it yourself "
        "and pipe the output to `gpudrv-check check -`.",
        location=Location(file=problem.file, line=problem.line, column=problem.column),
    )


def _validate_named_files(source: Source, config: Config) -> None:
    """Every file and folder the config names for the manifests' side (`inventory:`, each
    cluster's `paths`, `inventory` and `matrix`) is inside the repo and there, else a usage
    error at its key: a typo would check a cluster without its files, nodes or matrix."""
    from gpudrv_check.model.clusters import clean_path

    for index, rel in enumerate(config.inventory):
        _named_file(source, config, rel, ("inventory", index))
    for name, settings in config.clusters.items():
        for index, path in enumerate(settings.paths):
            where = ("clusters", name, "paths", index)
            target = clean_path(path)
            if target is None:
                raise config.error_at(_leaves(where, path), *where)
            if target and not _present(source, target):
                raise config.error_at(f"{_key(where)}: {path!r} not found", *where)
        for index, rel in enumerate(settings.inventory):
            _named_file(source, config, rel, ("clusters", name, "inventory", index))
        if settings.matrix is not None:
            _named_file(source, config, settings.matrix, ("clusters", name, "matrix"))


def _named_file(source: Source, config: Config, rel: str, where: tuple) -> None:
    clean = clean_rel(rel)
    if clean is None:
        raise config.error_at(_leaves(where, rel), *where)
    if not source.exists(clean):
        raise config.error_at(f"{_key(where)}: file {rel!r} not found", *where)


def _key(where: tuple) -> str:
    return ".".join(str(step) for step in where)


def _leaves(where: tuple, path: str) -> str:
    return f"{_key(where)}: {path!r} leaves the repo root; config paths stay inside the repo"


def _present(source: Source, rel: str) -> bool:
    """A file or folder of the source; a source that cannot list folders is taken at its
    word (stdin, a Kustomize rendering)."""
    if source.exists(rel):
        return True
    if isinstance(source, WorkingTree):
        return is_dir(source.root / rel)
    files_under = getattr(source, "files_under", None)
    return files_under is None or bool(files_under(rel))


def _the_one_cluster(config: Config) -> Config:
    """A repo that declares one cluster is checked as one cluster, as ever, but with that
    cluster's own inventory, matrix and operator settings (they were dropped, silently)."""
    [settings] = config.clusters.values()
    update: dict[str, Any] = {
        "inventory": [
            *config.inventory,
            *(r for r in settings.inventory if r not in config.inventory),
        ]
    }
    if settings.matrix is not None:
        update["matrix"] = settings.matrix
    if settings.operator is not None:
        update["operator"] = settings.operator
    return config.with_(**update)


def _baseline_rels(source: Source, paths: Sequence[str]) -> set[str]:
    """The baseline files among the repo's paths (POSIX, relative to its root). A path is
    given relative to the working directory, as the baseline is read from the disk also with
    --rev: the same path in the revision is that baseline committed."""
    root = Path(source.disk_root).resolve()
    found = set()
    for given in paths:
        try:
            rel = Path(os.path.abspath(given)).relative_to(root)
        except ValueError:  # outside the root (or a link's target: not resolved, as listed)
            continue
        found.add(rel.as_posix())
    return found


def load(
    root: Path | Source,
    config: Config,
    matrix_override: str | None = None,
    inventory: Sequence[str] = (),
    options: ReadOptions | None = None,
    matrix_optional: bool = False,
    cluster: str | None = None,
    baselines: Sequence[str] = (),
) -> Run:
    """Read a repo (a directory, or any source: a git revision, stdin, Kustomize renderings)
    into the model the rules evaluate. `matrix_optional`: an absent default matrix is one
    warning (`check`), not a usage error. `baselines`: the --baseline/--write-baseline files
    as given (relative to the working directory), never read as manifests."""
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
    # the exclusions first, as check's whole-result key reads them (check.py `_result_cache`):
    # of two errors of a config, a run says the same one with the cache and without it
    exclusions = from_config(config)
    files = policy_files(Path(source.disk_root), config, settings)
    custom = load_custom_policies(Path(source.disk_root), config, files, settings)
    rules = all_rules(custom)
    validate_rule_settings(config, rules)
    validate_exemptions(config, rules)
    _validate_named_files(source, config)
    if cluster is None and len(config.clusters) == 1:
        config = _the_one_cluster(config)
    matrix_missing = None
    try:
        matrix = load_matrix(source, config, matrix_override)
    except MatrixMissing as err:
        if not matrix_optional:
            raise
        matrix, matrix_missing = None, err.rel
    listing = source.list_manifests(exclusions)
    if files:
        # policy files are configuration, not manifests
        listing.files = [f for f in listing.files if f.rel not in files]
        listing.skipped = sorted(
            [*listing.skipped, *(Skipped(rel, "custom policy file") for rel in files)],
            key=lambda s: s.rel,
        )
    own = _baseline_rels(source, baselines) & {f.rel for f in listing.files}
    if own:
        # a committed baseline is the checker's own output (JSON), not a manifest: read as one
        # it is a GPU000 once it outgrows max_file_bytes, and counted as a file read
        listing.files = [f for f in listing.files if f.rel not in own]
        listing.skipped = sorted(
            [*listing.skipped, *(Skipped(rel, "baseline file") for rel in own)],
            key=lambda s: s.rel,
        )
    big = _large_inventories(source, config, inventory, listing.files)
    if big:
        # read below with max_inventory_bytes (_extra_inventory), not as over-limit manifests
        listing.files = [f for f in listing.files if f.rel not in big]
    if not custom:
        # what no built-in rule reads is not built, unless a custom policy may assert on it;
        # a kind the workload table reads (Knative's Service) keeps its content
        from gpudrv_check.model.workload_kinds import workload_kinds
        from gpudrv_check.rules.plan import current_plan

        plan = current_plan()
        read_kinds = {k.kind for k in workload_kinds(config).kinds}
        plan = replace(plan, kinds=plan.kinds - read_kinds)
        options = replace(options or ReadOptions(), skim=plan)
    options = replace(options or ReadOptions(), max_total_bytes=config.max_total_bytes)
    with phase("read"):
        content = read_repo(source, listing.files, config.max_file_bytes, options)
    say_workers()
    content.files.extend(
        _extra_inventory(source, config, inventory, {f.rel for f in listing.files}, big)
    )
    read = content.manifests  # a new list per access: built once
    unknowns = substitute(read, content.placeholder_files, source)  # fills in, in place
    kustomizations = _kustomizations(source, content, config.max_file_bytes)
    every = discover(config.clusters, [f.rel for f in content.files], read, kustomizations)
    clusters = _chosen(every, cluster)
    if not clusters:
        with phase("model"):
            run = _model(
                source, config, content, listing, matrix, matrix_missing, custom, rules, unknowns
            )
        if content.plan is not None and content.plan.clean and _reads_all_namespaces(run.repo):
            # a rule reads every namespace in this run (a `reads:` entry with `when:`): read
            # the namespaces the partition cache would have answered for too
            again = _every_namespace(options)
            return load(
                source, config, matrix_override, inventory, again, matrix_optional, None, baselines
            )
        redo = _capacity_changed(run)
        if redo:
            # the nodes' shared capacity went otherwise for some clean partitions: read them
            # too (or every file, when the cached inputs are unusable), as a full run would
            again = _evaluating_again(options, None if redo is True else redo)
            return load(
                source, config, matrix_override, inventory, again, matrix_optional, None, baselines
            )
        return run
    if content.plan is not None:  # the partition cache does not know clusters: read all
        content = read_repo(source, listing.files, config.max_file_bytes, _every_namespace(options))
        content.files.extend(
            _extra_inventory(source, config, inventory, {f.rel for f in listing.files}, big)
        )
        unknowns = substitute(content.manifests, content.placeholder_files, source)
    run = _model(source, config, content, listing, matrix, matrix_missing, custom, rules, unknowns)
    listed = {f.rel for f in content.files}
    # a cluster's `clusters.NAME.inventory` is applied to that cluster, as its paths are: not
    # a node file of no cluster's, which every cluster would read
    applied = set().union(*(c.files | _own_inventory(source, config, c) for c in every))
    unassigned_nodes = {
        f.rel
        for f in content.files
        if f.rel not in applied and any(_is_node_file(m) for m in f.manifests)
    }
    for found in clusters:
        run.clusters.append(
            _cluster_run(
                source,
                config,
                content,
                listing,
                found,
                matrix_override,
                matrix,
                matrix_missing,
                custom,
                rules,
                unknowns,
                listed,
                unassigned_nodes,
            )
        )
    run.findings = [
        *content.problems,
        *(_render_problem(p) for p in getattr(source, "problems", ())),
    ]
    return run


def _every_namespace(options: ReadOptions) -> ReadOptions:
    """The same reading with no partition plan: every file decoded and evaluated."""
    from gpudrv_check.engine.cache.files import FilesCache

    cache = options.cache
    if isinstance(cache, FilesCache):
        cache = FilesCache(cache.cache, None)
    return replace(options, cache=cache)


def _evaluating_again(options: ReadOptions, redo: frozenset[str] | None) -> ReadOptions:
    """The same reading with a plan that does not take these namespaces (None: any) from the
    cache: they are decoded, evaluated and stored again."""
    from gpudrv_check.engine.cache.files import FilesCache

    cache = options.cache
    assert isinstance(cache, FilesCache)  # a partial run has a plan: it came from one
    prior = cache.redo
    combined = None if redo is None or prior is None else prior | redo
    return replace(options, cache=FilesCache(cache.cache, cache.context, combined))


def _capacity_changed(run: Run) -> frozenset[str] | bool:
    """After a partial run's model: the clean partitions whose workloads' capacity outcome
    (model/occupancy.py) differs from the one cached with their findings; True when the cached
    inputs are unusable; an empty set (falsy) when the cache answers for them all."""
    from gpudrv_check.engine.cache.partition import Plan, verify

    plan = run.content.plan
    if not isinstance(plan, Plan) or not plan.partial:
        return frozenset()
    with phase("capacity"):
        differ = verify(run)
    return True if differ is None else differ


def _kustomizations(source: Source, content: RepoContent, limit: int) -> dict[str, list[Any]]:
    """The documents of the repo's kustomization files (most name no kind, so they are no
    manifests), for what each applies (model/clusters.py)."""
    from gpudrv_check.read.kustomization import is_kustomization
    from gpudrv_check.read.text import decode_text
    from gpudrv_check.read.yaml_docs import parse_text

    out: dict[str, list[Any]] = {}
    for result in content.files:
        if not is_kustomization(result.rel):
            continue
        if result.manifests:
            out[result.rel] = [m.data for m in result.manifests]
            continue
        try:
            data = source.read(result.rel, limit)
        except OSError:
            continue  # said when the file itself was read
        text, problem = decode_text(data)
        if text is not None and problem is None:
            out[result.rel] = [doc.data for doc in parse_text(text).docs]
    return out


def _chosen(clusters: list[Cluster], name: str | None) -> list[Cluster]:
    """The clusters to check: all of them, or the one `--cluster` names."""
    if name is None:
        return clusters if len(clusters) > 1 else []
    found = [c for c in clusters if c.name == name]
    if not found:
        names = ", ".join(c.name for c in clusters) or "none: the repo is one cluster"
        raise ConfigError(f"no cluster named {name!r} (clusters: {names})")
    return found


def _cluster_run(
    source: Source,
    config: Config,
    content: RepoContent,
    listing: Listing,
    found: Cluster,
    matrix_override: str | None,
    matrix: Matrix | None,
    matrix_missing: str | None,
    custom: list[CustomPolicy],
    rules: dict[str, RulePolicy],
    unknowns: Unknowns,
    listed: set[str],
    unassigned_nodes: set[str],
) -> Run:
    """One cluster's model: its files, its inventory, its matrix and operator settings, and
    the node files no cluster applies (a repo-level inventory is every cluster's)."""
    update: dict = {"inventory": found.inventory}
    if found.matrix is not None:
        update["matrix"] = found.matrix
    if found.operator is not None:
        update["operator"] = found.operator
    sub_config = config.with_(**update)
    mine = found.files | _own_inventory(source, config, found) | _shared(config) | unassigned_nodes
    files = [f for f in content.files if f.rel in mine]
    extra = _extra_inventory(source, sub_config, (), set(listed))
    sub = RepoContent(
        files=[*files, *extra],
        skipped=content.skipped,
        placeholder_files={r for r in content.placeholder_files if r in found.files},
    )
    if found.matrix is not None and matrix_override is None:
        matrix, matrix_missing = load_matrix(source, sub_config, None), None
    run = _model(
        source,
        sub_config,
        sub,
        listing,
        matrix,
        matrix_missing,
        custom,
        rules,
        Unknowns(by_object=unknowns.by_object),
        file_problems=False,
    )
    run.cluster = found
    return run


def _is_node_file(m: Manifest) -> bool:
    from gpudrv_check.model.inventory import is_inventory

    return (m.kind == "Node" and m.api_version == "v1") or is_inventory(m)


def _own_inventory(source: Source, config: Config, found: Cluster) -> set[str]:
    """The inventory files the config names for this one cluster (`clusters.NAME.inventory`)."""
    return {_config_path(source, config, rel, "inventory") for rel in found.inventory}


def _shared(config: Config) -> set[str]:
    """Inventory files the repo's config names: every cluster reads them."""
    return {clean_rel(rel) or rel for rel in config.inventory}


def _model(
    source: Source,
    config: Config,
    content: RepoContent,
    listing: Listing,
    matrix: Matrix | None,
    matrix_missing: str | None,
    custom: list[CustomPolicy],
    rules: dict[str, RulePolicy],
    unknowns: Unknowns,
    file_problems: bool = True,
) -> Run:
    """The model the rules evaluate, built from what was read; `file_problems`: with the
    findings about the files themselves (a cluster's run leaves them to the repo's)."""
    manifests, copies = one_per_identity(content.manifests)
    nodes, node_findings = build_inventory(manifests)
    from gpudrv_check.model.node import apply_gpu_presence
    from gpudrv_check.read.embedded import EmbeddedYaml

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
        embedded=EmbeddedYaml(),
    )
    repo.extras["gpu_presence"] = gpu_presence
    from gpudrv_check.engine.cache.partition import Plan

    if isinstance(content.plan, Plan) and content.plan.partial:
        # what the nodes' shared capacity needs of the workloads this run did not read
        repo.extras["occupancy_inputs"] = content.plan.cached_inputs()
        # and the last simulation's outcomes, taken when its inputs are the same demands
        repo.extras["occupancy_memo"] = (content.plan.inputs_key, content.plan.memo)
        # which are known to be when every partition is the one the last storing run keyed
        repo.extras["occupancy_known"] = content.plan.known_outcomes()
        # or, when the demands of the partitions read again turn out to be the stored ones
        repo.extras["occupancy_same"] = content.plan.outcomes_if_same
    if config.cuda:
        # a malformed `cuda:` config is a usage error before any output (without one, the
        # table is the built-in one, made when a rule first asks: GPU011 asks of a repo with
        # nodes only)
        repo.cuda_table  # noqa: B018
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
    if file_problems:
        run.findings.extend(content.problems)
    run.findings.extend(node_findings)
    run.findings.extend(workload_findings)
    run.findings.extend(pdb_findings)
    if file_problems:
        run.findings.extend(_render_problem(p) for p in getattr(source, "problems", ()))
    if matrix is not None:
        run.findings.extend(matrix.problems)
    return run


def _reads_all_namespaces(repo: Repo) -> bool:
    from gpudrv_check.rules import reading_all_namespaces

    return bool(reading_all_namespaces(repo))


def matrix_missing_finding(rel: str) -> Finding:
    """The one warning of a check without the support matrix (the rules that need it skip)."""
    from gpudrv_check.model.coverage import MATRIX_HEADER

    return Finding(
        rule=builtin("driver-image-missing").id,
        severity=builtin("driver-image-missing").severity_of("matrix-missing"),
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

    if run.clusters:
        _evaluate_clusters(run)
        return
    config = run.repo.config
    ctx = Context(run.repo, run.rules)
    checks = {r: c for r, c in registered().items() if rule_enabled(config, r, run.rules)}
    missing = missing_inputs(run.repo, run.matrix_missing is not None)
    run.skipped_rules = skipped_rules(run.rules, checks, missing)
    not_run = {r for group in run.skipped_rules for r in group.rules}
    kept = _cluster_findings(run)
    for rule_id, check in checks.items():
        if rule_id not in not_run:
            with phase(f"rule {rule_id}"):
                taken = kept.take(rule_id) if kept is not None else None
                if taken is not None:
                    run.findings.extend(taken)
                    continue
                found = list(check(ctx))
                run.findings.extend(found)
                if kept is not None:
                    kept.evaluated(rule_id, found)
    if run.custom_policies:  # pydantic's CustomPolicy: imported only by a repo that has some
        from gpudrv_check.rules.declarative import check_within_budget
    for policy in run.custom_policies:
        if rule_enabled(config, policy.id, run.rules):
            run.findings.extend(check_within_budget(ctx, policy))
    with phase("settle"):
        run.findings = run.unknowns.filter(run.findings)
        settled = settle(_note_origins(run, run.findings), config, run.rules)
        run.findings, suppressed = apply_exemptions(settled, run.repo, run.rules)
        run.suppressed.extend(suppressed)
    if run.content.plan is not None:
        from gpudrv_check.engine.cache.partition import merge, run_outside

        with phase("partition cache"):
            merge(run)  # the findings of the namespaces this run did not read again
            if kept is not None and not run.content.unsettled:
                kept.store(run_outside(run), run)


def _cluster_findings(run: Run) -> Any:
    """The cluster-wide findings kept under this run's context and shared files
    (engine/cache/partition.py `ClusterFindings`), or None without a partition plan."""
    from gpudrv_check.engine.cache.partition import ClusterFindings, Plan
    from gpudrv_check.rules.plan import cacheable_cluster_rules

    plan = run.content.plan
    if not isinstance(plan, Plan):
        return None
    return ClusterFindings(plan, cacheable_cluster_rules())


def _evaluate_clusters(run: Run) -> None:
    """Each cluster's rules on its own model; what several clusters find alike is said once,
    naming them all. The findings about files (syntax, size) are the repo's, named by none."""
    from gpudrv_check.engine.exemptions import apply_exemptions

    for sub in run.clusters:
        evaluate(sub)
    # a finding dropped for an unknown placeholder in several clusters is one finding
    run.unknowns.dropped = len(set().union(*(sub.unknowns.dropped_keys for sub in run.clusters)))
    settled = settle(_note_origins(run, run.findings), run.repo.config, run.rules)
    run.findings, run.suppressed = apply_exemptions(settled, run.repo, run.rules)
    for attr in ("findings", "suppressed"):
        alike: dict[tuple, tuple[Finding, list[str]]] = {}
        for sub in run.clusters:
            assert sub.cluster is not None
            for f in getattr(sub, attr):
                key = (f.rule, f.severity, f.location, f.message, f.suppressed_by)
                alike.setdefault(key, (f, []))[1].append(sub.cluster.name)
        several = len(run.clusters) > 1
        named = [
            f.copy_with(
                cluster=",".join(names),
                message=f"[{', '.join(names)}] {f.message}" if several else f.message,
            )
            for f, names in alike.values()
        ]
        setattr(run, attr, sorted([*getattr(run, attr), *named], key=Finding.sort_key))
    run.skipped_rules = _skipped_by_cluster(run.clusters)


def _skipped_by_cluster(clusters: list[Run]) -> list[SkippedRules]:
    """The rules each cluster skipped: once when every cluster skipped them for that reason."""
    groups: dict[tuple, list[str]] = {}
    for sub in clusters:
        assert sub.cluster is not None
        for group in sub.skipped_rules:
            groups.setdefault((group.rules, group.reason, group.see), []).append(sub.cluster.name)
    out = []
    for (rules, reason, see), names in groups.items():
        if len(names) != len(clusters):
            reason = f"{', '.join(names)}: {reason}"
        out.append(SkippedRules(rules, reason, see))
    return out


def _note_origins(run: Run, findings: list[Finding]) -> list[Finding]:
    """Findings on a rendered Kustomize stream move to the repo file and line their object
    came from (read/kustomize.py `source_location`), and say which root rendered it."""
    locate = getattr(run.source, "source_location", None)
    rendered = getattr(run.source, "rendered", None)
    if locate is None or not rendered:
        return findings
    starts: dict[str, list[tuple[int, int]]] = {}
    for m in run.repo.manifests:
        if m.file in rendered:
            starts.setdefault(m.file, []).append((getattr(m.data, "pos", (1, 1))[0], m.doc))
    out = []
    for f in findings:
        docs = starts.get(f.location.file)
        if docs is not None:
            doc = max(((line, d) for line, d in docs if line <= f.location.line), default=None)
            kind = f.object.kind if f.object else ""
            name = f.object.name if f.object else None
            file, line, column = locate(f.location.file, doc[1] if doc else -1, kind, name, f.path)
            root = posixpath.dirname(file_of_root(f.location.file)) or "."
            f = f.copy_with(
                location=Location(file=file, line=line, column=column),
                message=f"{f.message} (as rendered by kustomize build {root})",
            )
        out.append(f)
    return out


def file_of_root(rendered: str) -> str:
    """The kustomization file of a rendered stream's name."""
    from gpudrv_check.read.kustomization import RENDERED_SUFFIX

    return rendered.removesuffix(RENDERED_SUFFIX)


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
            finding = finding.copy_with(hint=policies[finding.rule].fix)
        settings = rule_settings(config, finding.rule, rules)
        if settings is not None:
            if not settings.enabled:
                continue
            if settings.severity is not None:
                finding = finding.copy_with(severity=settings.severity)
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
