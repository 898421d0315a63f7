"""CUDA fit: which driver a workload's images need, and which driver each node runs.

The table is ``policies/cuda.yaml`` extended by the config's ``cuda:`` key (same format; user
rows override, user image rules are tried first). A node's driver comes from the GPU Feature
Discovery labels: ``nvidia.com/cuda.driver-version.full``, else ``…driver-version.major/minor/
revision``, else the deprecated ``nvidia.com/cuda.driver.major/minor/rev``.

Two floors, chosen by the GPU011 parameter ``minor_version_compatibility``:

- with it (the default), a CUDA X.Y runtime needs the driver branch of *minor version
  compatibility* for major X (12.x: 525, 13.x: 580); below that it does not start. Between that
  and the release's own minimum it starts with feature limits (no JIT of newer PTX, some newer
  APIs fail);
- without it, the release's own minimum (``min_driver``) is the floor.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Mapping
from dataclasses import field, replace
from functools import lru_cache
from typing import Any

from gpudrv_check.core.finding import quoted
from gpudrv_check.core.records import record
from gpudrv_check.k8s.numbers import parse_digits
from gpudrv_check.model.node import Node
from gpudrv_check.model.workload import Container, Workload
from gpudrv_check.nvidia.cuda import (
    CudaTable,
    DriverRequirement,
    DriverVerdict,
    driver_check,
    driver_requirement,
    merge_tables,
    parse_cuda_table,
)
from gpudrv_check.read.config import Config

DRIVER_FULL_LABEL = "nvidia.com/cuda.driver-version.full"
#: (major, minor, revision) label keys: current GFD names first, then the deprecated ones
DRIVER_PART_LABELS = (
    (
        "nvidia.com/cuda.driver-version.major",
        "nvidia.com/cuda.driver-version.minor",
        "nvidia.com/cuda.driver-version.revision",
    ),
    ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev"),
)
_TABLE_KEYS = frozenset(("version", "min_driver", "minor_version_compat", "images", "releases"))


@lru_cache(maxsize=1)
def builtin_cuda_table() -> CudaTable:
    """policies/cuda.yaml (read by read/packaged.py), as a table."""
    from gpudrv_check.read.packaged import packaged_yaml

    # its expressions are the package's, checked against unbounded backtracking by a test
    table, problems = parse_cuda_table(packaged_yaml("policies", "cuda.yaml"), guarded=False)
    if problems:
        raise RuntimeError(f"broken built-in policies/cuda.yaml: {problems}")
    return table


def cuda_table(config: Config) -> CudaTable:
    """The built-in table extended by the config's ``cuda:``; a malformed extension is a
    configuration error (exit 2), not something to skip silently."""
    base = builtin_cuda_table()
    extension = config.cuda
    if not extension:
        return base
    unknown = sorted((k for k in extension if k not in _TABLE_KEYS), key=str)
    if unknown:
        raise config.error(
            f"cuda: unknown key {quoted(str(unknown[0]))} "
            f"(expected {', '.join(sorted(_TABLE_KEYS))})",
            "cuda",
            unknown[0],
        )
    parsed, problems = parse_cuda_table(extension, base.releases)
    if problems:
        where = _problem_path(problems[0], extension)
        raise config.error(f"cuda: {problems[0]}", "cuda", *where)
    return merge_tables(base, parsed)


def _problem_path(problem: str, data: Any) -> tuple[str | int, ...]:
    """The key path a CUDA table problem names (`images[2].tag_regex: ...`,
    `min_driver.12.10: ...`), for its line: the text before the first ": ", followed in the
    data itself, as keys may hold dots ("12.10"); as far as it leads."""
    text, node = problem.split(": ", 1)[0], data
    path: list[str | int] = []
    while text:
        if isinstance(node, list):
            index = text[1:].split("]", 1)[0] if text.startswith("[") else ""
            if not index.isdigit() or int(index) >= len(node):
                break
            path.append(int(index))
            node, text = node[int(index)], text[len(index) + 2 :].lstrip(".")
            continue
        if not isinstance(node, dict):
            break
        # the longest key the text goes on with (`24.07` before `24`)
        keys = [k for k in node if isinstance(k, str) and _leads(text, k)]
        if not keys:
            break
        key = max(keys, key=len)
        path.append(key)
        node, text = node[key], text[len(key) :].lstrip(".")
    return tuple(path)


def _leads(text: str, key: str) -> bool:
    return text.startswith(key) and text[len(key) : len(key) + 1] in ("", ".", "[")


@record(frozen=True)
class NodeDriver:
    version: str  # "550.90.07", or a branch alone ("550") when only the major is labelled
    # the label key holding the branch, for affinity suggestions; "" when the node carries only
    # the full version (no label an integer `Gt` can read)
    major_label: str


def node_driver(node: Node) -> NodeDriver | None:
    """The node's driver version from its GFD labels, or None when it has none."""
    labels = node.labels
    full = labels.get(DRIVER_FULL_LABEL, "").strip()
    for major_key, minor_key, rev_key in DRIVER_PART_LABELS:
        major = labels.get(major_key, "").strip()
        if parse_digits(major) is None:
            continue
        if full and full.split(".")[0] == major:
            return NodeDriver(full, major_key)
        parts = [major]
        minor = labels.get(minor_key, "").strip()
        if parse_digits(minor) is not None:
            parts.append(minor)
            rev = labels.get(rev_key, "").strip()
            if parse_digits(rev) is not None:
                parts.append(rev)
        return NodeDriver(".".join(parts), major_key)
    if full and parse_digits(full.split(".")[0]) is not None:
        return NodeDriver(full, "")
    return None


@record(slots=True)
class CudaFit:
    """How one image of a workload fares on the nodes the workload can land on."""

    container: Container
    need: DriverRequirement
    floor: str  # the driver below which the image does not start
    too_old: list[tuple[Node, str]] = field(default_factory=list)  # below the floor
    limited: list[tuple[Node, str]] = field(default_factory=list)  # minor version compatibility
    fine: list[tuple[Node, str]] = field(default_factory=list)
    unknown: list[Node] = field(default_factory=list)  # no driver label, or undecidable

    @property
    def all_too_old(self) -> bool:
        """Every node it can land on is older: none runs it, and none is unknown (a node
        without driver labels is not judged)."""
        return bool(self.too_old) and not self.limited and not self.fine and not self.unknown


@lru_cache(maxsize=4096)
def _at_least(node_version: str, minimum: str) -> bool | None:
    """Whether a driver meets a minimum (None: undecidable); few distinct pairs per run."""
    verdict = driver_check(node_version, minimum).verdict
    if verdict is DriverVerdict.OK:
        return True
    if verdict is DriverVerdict.TOO_OLD:
        return False
    return None


@record(slots=True)
class _Column:
    """One node list's drivers, for every fit over that list: in the list's order, each node
    with a driver as (node, version) and each GPU node without one as (node, None) (a node
    with neither has nothing for CUDA to need); those with a driver apart, those without,
    and the distinct versions."""

    nodes: list[Node]  # the list itself: its id keys the memo, which holds it
    order: list[tuple[Node, str | None]]
    present: list[tuple[Node, str]]
    unknown: list[Node]
    versions: tuple[str, ...]


def _column(nodes: list[Node], memo: dict) -> _Column:
    """The column of ``nodes``, once per list (kept in ``memo``): each node's driver as by
    name, the first node of a name giving it for every node of that name (the memo's
    `driver-pairs`, filled in as nodes are met), each node's driver read once (`_driver_of`,
    which `_drivers_of` reads too)."""
    columns: dict[int, _Column] = memo.setdefault(("cuda", "columns"), {})
    drivers: dict[str, tuple[Node, str] | None] = memo.setdefault(("cuda", "driver-pairs"), {})
    by_node = memo.setdefault(_BY_NODE, {})
    found = columns.get(id(nodes))
    if found is not None and found.nodes is nodes:
        return found
    order: list[tuple[Node, str | None]] = []
    present: list[tuple[Node, str]] = []
    unknown: list[Node] = []
    seen: dict[str, None] = {}
    for node in nodes:
        if node.name not in drivers:
            driver = _driver_of(node, by_node)
            drivers[node.name] = (node, driver.version) if driver is not None else None
        pair = drivers[node.name]
        if pair is None:
            if node.is_gpu:  # a GPU node whose driver no label says: not judged, and said
                unknown.append(node)
                order.append((node, None))
            continue  # no GPU: no NVIDIA driver runs there, nothing for CUDA to need
        if pair[0] is not node:  # another node of the same name: its driver, as by name
            pair = (node, pair[1])
        present.append(pair)
        order.append(pair)
        seen[pair[1]] = None
    made = columns[id(nodes)] = _Column(nodes, order, present, unknown, tuple(seen))
    return made


def _fit(
    container: Container,
    need: DriverRequirement,
    nodes: list[Node],
    minor_compat: bool,
    memo: dict,
) -> CudaFit | None:
    """Each node list is read once for every fit over it (`_column`, kept in ``memo``): a
    fit judges each driver version once and sorts the nodes by it, or copies the list whole
    when every version lands alike (most fits: a fleet runs few versions)."""
    floor = need.compat_branch if minor_compat and need.compat_branch else need.min_driver
    if floor is None:
        return None  # neither the release nor its major is in the table: nothing to compare
    column = _column(nodes, memo)
    fit = CudaFit(container, need, floor)
    # per driver version, the list its nodes go to; None where the comparison is undecidable
    bucket: dict[str | None, list[tuple[Node, str]] | None] = {None: None}
    for version in column.versions:
        starts = _at_least(version, floor)
        if starts is None:
            bucket[version] = None
        elif not starts:
            bucket[version] = fit.too_old
        elif need.min_driver and _at_least(version, need.min_driver) is False:
            bucket[version] = fit.limited
        else:
            bucket[version] = fit.fine
    if sum(listed is None for listed in bucket.values()) > 1:
        # undecidable nodes join the driverless ones in `unknown`, in the list's order
        for entry in column.order:
            listed = bucket[entry[1]]
            if listed is None:
                fit.unknown.append(entry[0])
            else:
                listed.append(entry)  # type: ignore[arg-type]  # a version: a driver's pair
        return fit
    fit.unknown.extend(column.unknown)
    targets = {id(listed): listed for listed in bucket.values() if listed is not None}
    if len(targets) == 1:  # every version lands alike: the whole column, in order
        next(iter(targets.values())).extend(column.present)
    else:
        for pair in column.present:
            bucket[pair[1]].append(pair)  # type: ignore[union-attr]
    return fit


def cuda_fits(
    workload: Workload,
    nodes: list[Node],
    table: CudaTable,
    minor_compat: bool = True,
    memo: dict | None = None,
    nodes_key: Hashable | None = None,
) -> list[CudaFit]:
    """One fit per container image the table knows, worst first (most nodes too old, then most
    nodes with feature limits). Images the table does not know are not guessed.

    With ``memo`` (e.g. ``Placement.memo``) and ``nodes_key`` naming the node set (e.g. the
    workload's constraint key), images and node drivers are looked up once per run.
    """
    memo = {} if memo is None else memo
    fits = []
    for container in workload.containers:
        if not container.image:
            continue
        need_key = ("cuda", "need", id(table), container.image)
        if need_key not in memo:
            memo[need_key] = driver_requirement(table, container.image)
        need = memo[need_key]
        if need is None:
            continue
        fit_key = ("cuda", "fit", id(table), container.image, nodes_key, minor_compat)
        shared = memo.get(fit_key) if nodes_key is not None else None
        if shared is None:
            shared = _fit(container, need, nodes, minor_compat, memo)
            if nodes_key is not None:
                memo[fit_key] = shared or False
        if shared:
            fits.append(replace(shared, container=container))
    fits.sort(key=lambda f: (-len(f.too_old), -len(f.limited), f.container.path))
    return fits


@lru_cache(maxsize=4096)  # a fleet runs a few driver versions
def _branch(version: str) -> int:
    """The branch (major) of a driver version, -1 when it is not a number."""
    number = parse_digits(version.split(".")[0])
    return -1 if number is None else number


#: the most node names a suggested `kubernetes.io/hostname NotIn` lists: a fix to copy, not a
#: fleet's inventory (a longer list overran a finding's MAX_MESSAGE and was cut mid-YAML)
MAX_HOSTNAMES = 10


def excluding_expression(
    floor: str, excluded: list[Node], nodes: list[Node], memo: dict | None = None
) -> dict[str, object] | None:
    """A required node-affinity expression that keeps a workload off ``excluded`` (nodes whose
    driver is below ``floor``) and on the rest of ``nodes``, or None.

    ``<driver major label> Gt <floor branch - 1>`` when a whole branch separates them (the usual
    case); else ``kubernetes.io/hostname NotIn [...]`` when the excluded nodes carry that label
    and are at most MAX_HOSTNAMES.
    With ``memo`` (e.g. ``Placement.memo``) each node's driver is read once per run.
    """
    floor_branch = parse_digits(floor.split(".")[0])
    if floor_branch is None:
        return None
    excluded_names = {n.name for n in excluded}
    drivers, ranked, labels = _drivers_of(nodes, memo)

    def branch(name: str) -> int:
        driver = drivers.get(name)
        return _branch(driver.version) if driver is not None else -1

    # the label the expression reads must be the one every node with a driver carries: a kept
    # node labelled otherwise would be removed too (Gt on a missing label does not match)
    keys = set(labels)
    # every node with a driver below the floor's branch is excluded: those are the first of
    # `ranked`, so the test reads them, not every node
    below = ranked[: bisect.bisect_left(ranked, (floor_branch,))]
    separable = all(branch(n) < floor_branch for n in excluded_names) and all(
        name in excluded_names for _, name in below
    )
    if separable and keys and "" not in keys and len(keys) == 1:
        separable = all(drivers.get(n) for n in excluded_names)
    else:
        separable = False
    if separable:
        return {"key": keys.pop(), "operator": "Gt", "values": [str(floor_branch - 1)]}
    hostname = "kubernetes.io/hostname"
    if 0 < len(excluded) <= MAX_HOSTNAMES and all(hostname in n.labels for n in excluded):
        return {
            "key": hostname,
            "operator": "NotIn",
            "values": sorted(n.labels[hostname] for n in excluded),
        }
    return None


#: the memo's key of each node's driver, by the node's identity (`_driver_of`)
_BY_NODE = ("cuda", "driver-of-node")


def _driver_of(node: Node, by_node: dict[int, tuple[Node, NodeDriver | None]]) -> NodeDriver | None:
    """`node_driver` of this node object, read once per run (the entry keeps the node, so its
    id is not reused meanwhile)."""
    entry = by_node.get(id(node))
    if entry is None or entry[0] is not node:
        entry = by_node[id(node)] = (node, node_driver(node))
    return entry[1]


def _drivers_of(
    nodes: list[Node], memo: dict | None
) -> tuple[dict[str, NodeDriver | None], list[tuple[int, str]], frozenset[str]]:
    """Each node's driver by name, (branch, name) of the nodes with one, sorted, and the major
    labels those drivers are read from: once per node list with ``memo`` (placement shares one
    list among the workloads of a constraint set; a fleet's thousands of nodes were read again
    for each image's verdict)."""
    key = ("cuda", "drivers-of-nodes", id(nodes))
    found = memo.get(key) if memo is not None else None
    if found is not None and found[0] is nodes:
        return found[1], found[2], found[3]
    by_node = {} if memo is None else memo.setdefault(_BY_NODE, {})
    drivers: dict[str, NodeDriver | None] = {}
    for n in nodes:
        drivers[n.name] = _driver_of(n, by_node)
    ranked = sorted((_branch(d.version), name) for name, d in drivers.items() if d is not None)
    labels = frozenset(d.major_label for d in drivers.values() if d is not None)
    if memo is not None:  # the entry keeps the list, so its id is not reused meanwhile
        memo[key] = (nodes, drivers, ranked, labels)
    return drivers, ranked, labels


def expression_text(expr: Mapping[str, Any]) -> str:
    """A flow-style YAML rendering: ``{key: k, operator: Gt, values: ["554"]}``."""
    values = ", ".join(f'"{v}"' for v in expr.get("values") or [])
    return f"{{key: {expr['key']}, operator: {expr['operator']}, values: [{values}]}}"
