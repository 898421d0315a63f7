"""Each GPU node's driver image: the tag it needs and whether the matrix has it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from gpudrv_check.core.finding import quoted
from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.core.records import record
from gpudrv_check.model.node import Node
from gpudrv_check.model.repo import Repo
from gpudrv_check.nvidia.driver_image import (
    DEPLOY_DRIVER_LABEL,
    DEPLOY_OPERANDS_LABEL,
    TagResult,
    driver_image_reference,
    operator_release,
    tag_from_facts,
)
from gpudrv_check.read.config import Config

if TYPE_CHECKING:
    from gpudrv_check.model.driver_plan import DriverPlan, NodeDriver

# the chart's default `driver.image` (deployments/gpu-operator/values.yaml)
DEFAULT_DRIVER_IMAGE = "driver"

# a chart version that pins one release: `v25.10.0`, `=25.10.0`, `~25.10.1`, `25.10.x`
_PINNED = lazy_compile(r"^[=~^]?\s*v?(\d+)\.(\d+)(?:\.(\d+|x|X|\*))?(?:[-+][0-9A-Za-z.-]+)?$")


class LabelKeys(TypedDict):
    """Where `nvidia.driver_image` reads each node fact: label keys by fact name."""

    driver_major: tuple[str, ...]  # tried in order
    kernel: str
    os_id: str
    os_version_id: str


def label_keys(config: Config) -> LabelKeys:
    """The config's label keys in the names `nvidia.driver_image` reads."""
    keys = config.labels
    return {
        "driver_major": tuple(keys.driver_branch),
        "kernel": keys.kernel,
        "os_id": keys.os_id,
        "os_version_id": keys.os_version_id,
    }


def chart_release(version: str | None) -> str | None:
    """The operator release a chart version pins (`v25.10.0`, `~25.10.1` -> `25.10`), or None.

    Ranges (`>=25.3.0 <26`), `*` and anything else that does not name one month's release give
    None: the OS-tag rule is then the newest one, as when nothing is known.
    """
    if not isinstance(version, str):
        return None
    match = _PINNED.match(version.strip())
    if match is None or version.strip().startswith("^"):
        return None
    text = f"{match.group(1)}.{match.group(2)}"
    return text if operator_release(text) is not None else None


def operator_version_source(repo: Repo) -> tuple[str | None, str]:
    """The operator release that selects the OS-tag rule, and where it came from.

    `--operator-version` / `operator.version` in the config win when set: they are explicit, and
    a chart version may be a range. Otherwise the gpu-operator chart version the repo deploys
    (HelmRelease `spec.chart.spec.version`, Argo CD `targetRevision`) is used when it pins one
    release. Otherwise None: the newest rule.
    """
    explicit = repo.config.operator.version
    if explicit:
        return explicit, "operator.version / --operator-version"
    operator = repo.operator
    if operator is not None and operator.chart_version:
        release = chart_release(operator.chart_version)
        if release is not None:
            return release, f"chart version {operator.chart_version} of {operator.manifest.ref}"
        return None, f"chart version {quoted(operator.chart_version)} pins no single release"
    return None, "no operator version in config or repo"


def operator_version(repo: Repo) -> str | None:
    if "operator_version" not in repo.extras:
        repo.extras["operator_version"] = operator_version_source(repo)[0]
    return repo.extras["operator_version"]


def node_tag(node: Node, repo: Repo) -> TagResult:
    """The driver image tag the node needs (worked out once per node and run).

    With an operator configuration in the repo, the tag the operator's plan installs
    (``model/driver_plan.py``: the spec's version, the cluster's or the pool's OS tag); else the
    node's own labels, as the lab's drv-tag.sh.
    """
    planned = planned_driver(node, repo)
    if planned is not None and planned.managed:
        return planned.result
    memo = repo.extras.setdefault("node_tags", {})
    found = memo.get(id(node))
    if found is None or found[0] is not node:
        facts, missing = _facts(node, repo)  # Node.labels: a dict, validated as one
        found = memo[id(node)] = (node, tag_from_facts(facts, missing, operator_version(repo)))
    return found[1]


def planned_driver(node: Node, repo: Repo) -> NodeDriver | None:
    """What the operator configuration installs on the node; None without one."""
    from gpudrv_check.model.driver_plan import LABELS, driver_plan

    plan = driver_plan(repo)
    if plan.mode == LABELS:
        return None
    return plan.nodes.get(node.name)


def node_facts(node: Node, repo: Repo):  # noqa: ANN201 - NodeDriverFacts, imported lazily
    """The node's driver, kernel and OS facts under the config's label keys (once per node)."""
    return _facts(node, repo)[0]


def _facts(node: Node, repo: Repo) -> tuple[Any, tuple[str, ...]]:
    """`driver_facts` of the node's labels, read once per node: its facts and the tag facts
    missing (node_tag and node_facts both need them)."""
    from gpudrv_check.nvidia.driver_image import driver_facts

    memo = repo.extras.setdefault("node_facts", {})
    found = memo.get(id(node))
    if found is None or found[0] is not node:
        found = memo[id(node)] = (node, *driver_facts(node.labels, label_keys(repo.config)))
    return found[1], found[2]


def driver_managed(node: Node) -> bool:
    """Whether the operator installs this node's driver (not pre-installed on the host)."""
    labels = node.labels
    return (
        labels.get(DEPLOY_DRIVER_LABEL) != "false" and labels.get(DEPLOY_OPERANDS_LABEL) != "false"
    )


@record(frozen=True)
class AuditEntry:
    node: Node
    result: TagResult
    in_matrix: bool
    # `<repository>/<image>:<tag>` when the operator config names the driver repository
    reference: str | None = None
    # with a ClusterPolicy over GPU nodes of several OS releases: the OS tags it may get instead
    other_os_tags: tuple[str, ...] = ()
    planned: NodeDriver | None = None  # from model/driver_plan.py, with a configuration
    # whether the operator installs a precompiled image there (`<branch>-<kernel>-<os-tag>`,
    # the matrix's rows); else it builds the module on the node from `<version>-<os-tag>`, and
    # a kernel the matrix lacks is not validated, not an image that was never built (GPU001)
    precompiled: bool = True

    @property
    def missing(self) -> bool:
        return self.result.ok and not self.in_matrix

    @property
    def unbuilt(self) -> bool:
        """The node needs a precompiled image the matrix does not have (audit's MISSING)."""
        return self.missing and self.precompiled

    @property
    def image(self) -> str | None:
        """The full reference when known, else the tag."""
        return self.reference or self.result.tag


def audit_entries(repo: Repo) -> list[AuditEntry]:
    """Every GPU node with an operator-managed driver, by name, looked up in the matrix."""
    from gpudrv_check.model.driver_plan import LABELS, driver_plan

    plan = driver_plan(repo)
    if plan.mode != LABELS:
        return _planned_entries(repo, plan)
    entries = []
    for node in sorted(repo.gpu_nodes, key=lambda n: n.name):
        if not driver_managed(node):
            continue
        result = node_tag(node, repo)
        found = False
        reference = None
        if result.ok:
            branch, kernel, ostag = _split(result, node, repo)
            if repo.matrix is not None:
                found = repo.matrix.has(branch, kernel, ostag)
            reference = image_reference(repo, branch, kernel, ostag)
        entries.append(AuditEntry(node, result, found, reference))
    return entries


def _planned_entries(repo: Repo, plan: DriverPlan) -> list[AuditEntry]:
    entries = []
    for name in sorted(plan.nodes):
        planned = plan.nodes[name]
        if not planned.managed:
            continue
        found = False
        if planned.matrix_key is not None and repo.matrix is not None:
            found = repo.matrix.has(*planned.matrix_key)
        if planned.source is None:
            precompiled = True  # the node's labels alone: the lab's precompiled tag
        elif planned.pool is not None:
            precompiled = planned.pool.kernel is not None  # a pool names its kernel if so
        else:
            precompiled = plan.precompiled
        entries.append(
            AuditEntry(
                planned.node,
                planned.result,
                found,
                planned.reference,
                planned.other_os_tags,
                planned,
                precompiled,
            )
        )
    return entries


def image_reference(repo: Repo, branch: str, kernel: str, ostag: str) -> str | None:
    """The precompiled image the operator pulls for this tag, when the repo names the registry.

    `driver.repository` must be set in the operator config (ClusterPolicy, HelmRelease values,
    Argo CD values); `driver.image` defaults to the chart's `driver`. The tag is the node's
    (`<branch>-<kernel>-<os-tag>`), the one the support matrix row stands for.
    """
    operator = repo.operator
    if operator is None:
        return None
    repository = operator.get("driver", "repository")
    if not isinstance(repository, str) or not repository.strip():
        return None
    image = operator.get("driver", "image")
    image = image if isinstance(image, str) and image else DEFAULT_DRIVER_IMAGE
    result = driver_image_reference(repository.strip(), image, branch, kernel, ostag, True)
    return result.reference


def _split(result: TagResult, node: Node, repo: Repo) -> tuple[str, str, str]:
    """The (branch, kernel, os_tag) triple behind a tag, for the matrix lookup."""
    from gpudrv_check.nvidia.driver_image import os_tag

    facts = node_facts(node, repo)
    ostag = os_tag(facts.os_id, facts.os_version_id, operator_version(repo)) or ""
    return facts.driver_major or "", facts.kernel or "", ostag


@record(frozen=True)
class FleetCell:
    """GPU nodes that need the same driver image: one cell of the fleet picture."""

    branch: str
    kernel: str
    os_tag: str
    nodes: tuple[str, ...]
    missing: bool  # the image is not in the support matrix (the audit's MISSING)


def fleet(repo: Repo) -> tuple[list[FleetCell], list[str]]:
    """The audited GPU nodes by driver branch × kernel × OS tag (the audit's own entries), and
    the nodes whose tag cannot be computed (MISSING-LABEL)."""
    cells: dict[tuple[str, str, str], list[AuditEntry]] = {}
    unknown: list[str] = []
    for entry in audit_entries(repo):
        if not entry.result.ok:
            unknown.append(entry.node.name)
            continue
        planned = entry.planned
        if planned is not None and planned.matrix_key is not None:
            key = tuple(planned.matrix_key)
        else:
            key = _split(entry.result, entry.node, repo)
        cells.setdefault((key[0], key[1], key[2]), []).append(entry)
    out = [
        FleetCell(b, k, o, tuple(e.node.name for e in entries), any(e.unbuilt for e in entries))
        for (b, k, o), entries in sorted(cells.items())
    ]
    return out, unknown
