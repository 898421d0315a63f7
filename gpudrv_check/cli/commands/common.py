"""What the repo commands share: the source, the config and the repo, verbose listings."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpudrv_check.cli.options import CheckOptions, RepoOptions
from gpudrv_check.core.finding import printable
from gpudrv_check.read.config_file import ConfigError, FoundConfig, find_config
from gpudrv_check.read.source import Source

if TYPE_CHECKING:
    from gpudrv_check.engine.run import Run
    from gpudrv_check.model.driver_plan import DriverPlan
    from gpudrv_check.read.config import Config
    from gpudrv_check.read.manifests import ReadOptions


def make_source(
    options: RepoOptions, rev: str | None = None, blob_sizes: dict[bytes, int] | None = None
) -> Source:
    """Where the files come from: PATH on disk, at a git revision, in the index, or stdin.
    `blob_sizes`: for the index, the sizes of blobs an earlier run measured (read/git.py)."""
    path = options.path
    staged = options.staged and rev is None
    rev = rev if rev is not None else options.rev
    kustomize = options.kustomize
    stdin_name = options.stdin_name
    base = options.base if isinstance(options, CheckOptions) else None
    if options.staged and options.rev is not None:
        raise ConfigError("--staged checks the index, --rev a commit: give one of them")
    if path == "-":
        if rev is not None or base or options.staged:
            raise ConfigError("--rev/--base/--staged read git; they cannot read from stdin (-)")
        if kustomize:
            raise ConfigError(
                "--kustomize renders the repo itself; with stdin (-) pipe the rendered stream "
                "instead: `kustomize build DIR | gpudrv-check check -`"
            )
        if sys.stdin is None or sys.stdin.isatty():
            raise ConfigError(
                "PATH is - (read manifests from standard input) but stdin is a terminal; pipe a "
                "stream in, e.g. `kustomize build overlays/prod | gpudrv-check check -`"
            )
        from gpudrv_check.read.stdin import DEFAULT_STDIN_NAME, StdinSource

        return StdinSource.from_stdin(stdin_name or DEFAULT_STDIN_NAME, Path("."))
    if stdin_name is not None:
        raise ConfigError("--stdin-name names standard input; it needs - as PATH")
    root = Path(path)
    # at a revision, PATH is read from the object store: it may be gone from the disk (a
    # directory deleted since), though not replaced by something else
    if not root.is_dir() and not (rev is not None and not staged and not _exists(root)):
        raise ConfigError(f"not a directory: {path}")
    source: Source
    if staged:
        source = _index_tree(root, blob_sizes)
    elif rev is not None:
        from gpudrv_check.read.git import GitTree

        source = GitTree(root, rev)
    else:
        from gpudrv_check.read.tree import WorkingTree

        source = WorkingTree(root)
    if kustomize:
        from gpudrv_check.read.kustomize import KustomizeSource

        source = KustomizeSource(source)
    return source


def _exists(path: Path) -> bool:
    """Whether anything, a dangling link included, is at `path`."""
    return os.path.lexists(path)


def _index_tree(root: Path, blob_sizes: dict[bytes, int] | None = None) -> Source:
    """The index below `root` (`--staged`)."""
    from gpudrv_check.read.git import IndexTree

    return IndexTree(root, blob_sizes)


def repo_config(
    options: RepoOptions,
    source: Source | None = None,
    found: FoundConfig | None = None,
    known: Any = None,
) -> tuple[Path, Config]:
    """The config of the checked source (of its revision, with --rev), with flag overrides;
    `found`: the config file already found and read (read/config_file.py `find_config`);
    `known`: what an earlier run validated the same bytes and flags to (read/config.py
    `parse_config`)."""
    if source is None:
        source = make_source(options)
    from gpudrv_check.read.config import parse_found
    from gpudrv_check.read.policy import validate_rule_keys

    root = Path(source.disk_root)
    if found is None:
        found = find_config(root, options.config, source=source)
    config = parse_found(found, known)
    validate_rule_keys(config)
    if options.operator_version:
        config.operator.version = options.operator_version
    if isinstance(options, CheckOptions) and options.fail_on:
        config.fail_on = options.fail_on
    return root, config


def load_run(options: RepoOptions, rev: str | None = None) -> Run:
    """Load the repo the options name; `rev` overrides --rev (the base in PR mode)."""
    run = load_source(options, make_source(options, rev))
    if options.verbose and rev is None:
        print_listing(run)
    return run


def load_source(
    options: RepoOptions,
    source: Source,
    data: dict[str, bytes] | None = None,
    context: str | None = None,
    config: Config | None = None,
) -> Run:
    """Read the source into a run; `config`: its config, validated with the flags already
    (`repo_config`; check's result cache validates it to name the key)."""
    from gpudrv_check.engine.run import load

    if config is None:
        _, config = repo_config(options, source)
    bound = getattr(source, "bound", None)  # a source that reads ahead (stdin, kustomize)
    if bound is not None:
        bound(config.max_file_bytes, config.max_total_bytes)
    progress = Progress.on_terminal()
    reading = read_options(options, progress, data, context)
    try:
        optional = isinstance(options, CheckOptions)
        own = (
            (options.baseline, options.write_baseline) if isinstance(options, CheckOptions) else ()
        )
        run = load(
            source,
            config,
            options.matrix,
            options.inventory,
            reading,
            optional,
            options.cluster,
            [path for path in own if path],
        )
    finally:
        if progress is not None:
            progress.done()
    if not isinstance(options, CheckOptions) and not options.verbose:
        say_unread(run, config.max_file_bytes)
    if run.clusters and options.command not in MULTI_CLUSTER_COMMANDS:
        if len(run.clusters) > 1:
            names = ", ".join(sub.cluster.name for sub in run.clusters if sub.cluster)
            raise ConfigError(
                f"the repo holds several clusters ({names}): choose one with --cluster NAME"
            )
        return run.clusters[0]
    return run


def say_unread(run: Run, max_bytes: int) -> None:
    """Files over max_file_bytes, and files that do not parse, once on stderr: `check` reports
    each as GPU000, but a command without findings would otherwise answer as if they did not
    exist (`audit`: OK)."""
    over = sorted(f.rel for f in run.listing.files if f.size > max_bytes)
    if over:
        sys.stderr.write(
            f"gpudrv-check: note: {len(over)} file(s) over max_file_bytes ({max_bytes}) not "
            f"read: {_some(over)}; a node export: name it under `inventory:` in "
            ".gpudrv-check.yaml (read up to max_inventory_bytes), else raise max_file_bytes\n"
        )
    from gpudrv_check.read.policy import builtin  # pydantic: not for runs that load nothing

    unreadable = builtin("unreadable-file").id
    broken = sorted(
        {p.location.file for p in run.content.problems if p.rule == unreadable} - set(over)
    )
    if broken:
        sys.stderr.write(
            f"gpudrv-check: note: {len(broken)} file(s) not read whole: {_some(broken)}; "
            "what they hold is not in this answer (`gpudrv-check check` says why)\n"
        )


def _some(rels: list[str]) -> str:
    return ", ".join(printable(rel) for rel in rels[:3]) + (", ..." if len(rels) > 3 else "")


#: the commands that report on every cluster of a repo at once (the others take --cluster)
MULTI_CLUSTER_COMMANDS = frozenset(("check", "audit"))


def jobs_wanted(options: RepoOptions) -> int:
    """--jobs N, else the number of cores this process may use."""
    if options.jobs:
        return options.jobs
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def read_options(
    options: RepoOptions,
    progress: Progress | None = None,
    data: dict | None = None,
    context: str | None = None,
) -> ReadOptions:
    """Processes, cache and progress line for reading the files.

    `check` caches; see engine/cache/store.py.
    """
    from gpudrv_check.read.manifests import ReadOptions

    cache = None
    if isinstance(options, CheckOptions) and not options.no_cache:
        from gpudrv_check.engine.cache.files import FilesCache
        from gpudrv_check.engine.cache.store import Cache, default_dir

        cache_dir = options.cache_dir
        cache = FilesCache(Cache(Path(cache_dir) if cache_dir else default_dir()), context)
    return ReadOptions(
        jobs=jobs_wanted(options),
        cache=cache,
        progress=progress.update if progress is not None else None,
        data=data,
    )


class Progress:
    """`files read of total` on stderr, rewritten in place: only on a terminal, and only once
    the run has taken about a second (quick runs stay silent). Never part of any report."""

    DELAY = 1.0

    def __init__(self, stream) -> None:
        self.stream = stream
        self.start = time.monotonic()
        self.shown = False

    @classmethod
    def on_terminal(cls, stream=None) -> Progress | None:
        stream = stream if stream is not None else sys.stderr
        try:
            tty = stream is not None and stream.isatty()
        except (AttributeError, ValueError, OSError):
            tty = False
        return cls(stream) if tty else None

    def update(self, done: int, total: int) -> None:
        if time.monotonic() - self.start < self.DELAY:
            return
        self.shown = True
        self.stream.write(f"\rgpudrv-check: read {done} of {total} files")
        self.stream.flush()

    def done(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


def print_listing(run: Run) -> None:
    out = sys.stderr
    for result in run.content.files:
        kinds = printable(", ".join(f"{m.kind}/{m.name or '?'}" for m in result.manifests))
        out.write(f"read    {result.rel}: {len(result.manifests)} object(s) {kinds}\n")
        for skipped in result.skipped:
            out.write(f"skipped {skipped.rel}: {skipped.reason}\n")
        for problem in result.problems:
            out.write(f"problem {problem.location}: {problem.rule} {problem.message}\n")
    for skipped in run.listing.skipped:
        out.write(f"skipped {skipped.rel}: {skipped.reason}\n")
    matrix = run.repo.matrix
    if matrix is None and run.matrix_missing is not None:
        out.write(f"matrix  none: {run.matrix_missing} not found (GPU001 skipped)\n")
    elif matrix is None:
        out.write("matrix  none (driver image checks that need it are off)\n")
    else:
        out.write(f"matrix  {matrix.file}: {len(matrix.rows)} row(s)\n")
    operator = run.repo.operator
    if operator is not None:
        out.write(f"operator {operator.describe()}\n")
        for note in operator.notes:
            out.write(f"operator note: {note}\n")
    from gpudrv_check.model.driver import operator_version_source

    version, why = operator_version_source(run.repo)
    out.write(f"os-tag  rule of operator {version or 'newest'} ({why})\n")
    out.write(f"gpus    {run.repo.extras.get('gpu_presence', 'as written')}\n")
    from gpudrv_check.model.driver_plan import driver_plan

    plan = driver_plan(run.repo)
    out.write(f"driver  {_plan_text(plan)}\n")
    for note in plan.notes:
        out.write(f"driver note: {note}\n")
    for one in run.clusters or [run]:
        where = f"[{one.cluster.name}] " if one.cluster is not None and run.clusters else ""
        for copies in one.copies:
            out.write(f"copies  {where}{printable(copies.describe())}\n")
    from gpudrv_check.model.coverage import unmodelled_gpu_workloads
    from gpudrv_check.model.workload_kinds import workload_kinds

    table = workload_kinds(run.repo.config)
    modelled = {id(w.manifest) for w in run.repo.workloads}
    unmodelled = unmodelled_gpu_workloads(run.repo.manifests, table, modelled)
    if unmodelled:
        names = ", ".join(str(m.ref) for m in unmodelled)
        out.write(
            f"unmodelled {len(unmodelled)} object(s) request GPUs in kinds not modelled yet "
            f"(their placement and drivers are not checked): {printable(names)}\n"
        )
    for sub in run.clusters:
        assert sub.cluster is not None
        out.write(
            f"cluster {printable(sub.cluster.name)}: {len(sub.cluster.files)} file(s), "
            f"{len(sub.repo.nodes)} node(s); {sub.cluster.how}\n"
        )
    skipped_docs = run.content.skipped_documents
    out.write(
        f"total   {run.content.file_count} file(s), {run.content.object_count} object(s), "
        f"{skipped_docs} document(s) skipped, {len(run.listing.skipped)} path(s) skipped, "
        f"{sum(len(one.repo.nodes) for one in run.clusters or [run])} node(s)\n"
    )


def _plan_text(plan: DriverPlan) -> str:
    """How the driver images are decided, for the listing."""
    texts = {
        "labels": "images from each node's labels (no operator configuration)",
        "clusterpolicy": "one ClusterPolicy driver"
        + (" (precompiled)" if plan.precompiled else ""),
        "nvidiadriver": f"NVIDIADriver CRs, {len(plan.pools)} pool(s)",
        "disabled": "driver.enabled is false: no driver is the operator's",
    }
    return texts.get(plan.mode, plan.mode)
