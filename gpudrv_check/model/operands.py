"""Operand placement: which GPU Operator operand DaemonSet runs on which node, and why not.

Where the operand DaemonSets come from:

- **the repo**: any DaemonSet whose pod template selects, by ``nodeSelector`` or required node
  affinity, on a ``nvidia.com/gpu.deploy.<operand>`` label is that operand (several DaemonSets
  may share one operand, e.g. one precompiled driver DaemonSet per kernel);
- **the operator configuration** (a ClusterPolicy, or gpu-operator chart values in a Flux
  HelmRelease / Argo CD Application): one DaemonSet per operand it enables, selecting on its
  deploy label ``"true"`` and carrying ``daemonsets.tolerations`` when that list is non-empty,
  else the assets' ``nvidia.com/gpu:NoSchedule`` toleration.

When both exist, a DaemonSet in the repo wins for its operand (it is the concrete object the
controller runs); the other operands are derived from the configuration.

Node labels: with an operator configuration in the repo, the operator rewrites the deploy
labels of every ``nvidia.com/gpu.present=true`` node before any DaemonSet sees them
(``nvidia.operands.expected_deploy_labels``, upstream ``updateGPUStateLabels``): a missing label
is added as ``"true"``, an admin's value is kept, and ``nvidia.com/gpu.deploy.operands=false``
removes them all. That removal is the *only* way that label works: no DaemonSet selects on it.
So without an operator configuration the labels are read as written, and hand-written
DaemonSets still land on a node labelled ``operands=false`` (a note says so). Nodes that are
not GPU nodes lose every deploy label when their ``gpu.present=true`` is stale (no NVIDIA PCI
label), and from v26.7 always.

Placement per (DaemonSet, node) is ``repo.placement``'s verdict with the DaemonSet controller's
own tolerations; ``desiredNumberScheduled`` counts the nodes where the controller's
``NodeShouldRunDaemonPod`` holds: node name, node selector/affinity and NoSchedule/NoExecute
taints (it does not look at resources), so a node with an untolerated taint is not counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any

from gpudrv_check.core.finding import Location
from gpudrv_check.core.label_reads import NodeLabels, entries
from gpudrv_check.core.located import LMap, Path
from gpudrv_check.core.manifest import Manifest, value_at
from gpudrv_check.core.records import record
from gpudrv_check.k8s.nodeaffinity import (
    REQUIRED_AFFINITY_PATH,
    RequiredNodeAffinity,
    pod_placement_explanations,
    required_node_affinity,
)
from gpudrv_check.k8s.taints import (
    daemonset_pod_tolerations,
    first_untolerated_taint,
    node_taints,
)
from gpudrv_check.model.node import Node
from gpudrv_check.model.placement import INSUFFICIENT_GPU, NODE_NAME, Placement, Verdict
from gpudrv_check.model.workload import POD_SPEC_PATHS, Workload
from gpudrv_check.nvidia.operands import (
    CLUSTERPOLICY,
    DEFAULT_OPERAND_TOLERATION,
    DEPLOY_OPERANDS_LABEL,
    GPU_PRESENT_LABEL,
    HELM,
    OPERAND_NAMES,
    OPERANDS,
    WORKLOAD_CONFIG_LABEL,
    WORKLOAD_CONFIGS,
    default_workload,
    dependencies,
    driver_settings,
    expected_deploy_labels,
    has_mig_capable_gpu,
    operand_for_deploy_label,
    operands_from_operator_config,
    operator_tolerations,
    sandbox_workloads_enabled,
    workload_config,
)
from gpudrv_check.read.policy import builtin

if TYPE_CHECKING:
    from gpudrv_check.model.operator import OperatorConfig
    from gpudrv_check.model.repo import Repo

# where a DaemonSet came from
REPO = "repo"
OPERATOR = "operator"

# modes: which source the operand set was built from
MODE_NONE = "none"
MODE_DAEMONSETS = "daemonsets"
MODE_OPERATOR = "operator"
MODE_BOTH = "operator+daemonsets"

# why an operand does not run on a node
LABEL = "label"  # its deploy label is missing or not "true"
OPERANDS_OFF = "operands=false"  # the operator removed every deploy label
SELECTOR = "selector"  # another nodeSelector / affinity requirement of the DaemonSet
TAINT = "taint"  # a NoSchedule/NoExecute taint the DaemonSet does not tolerate
DISABLED = "disabled"  # switched off in the operator configuration
NODE_NAME_CAUSE = "node-name"  # the pod template names another node
GPUS = "gpus"  # the pod requests more nvidia.com/gpu than the node offers
POOL_LABEL = "pool-label"  # a label every NVIDIADriver pool selects on (NFD's OS release...)
POOL_SELECTOR = "pool-selector"  # the pool of the node's name selects another value of a label
WORKLOAD_TYPE = "workload-type"  # the operator sets the deploy label on other workload types
NOT_GPU = "not-gpu"  # the operator strips deploy labels from a node that is no GPU node

DRIVER = "driver"
VGPU_MANAGER = "vgpu-manager"
TOOLKIT = "container-toolkit"
DEVICE_PLUGIN = "device-plugin"
MIG_MANAGER = "mig-manager"
DEFAULT_NAMESPACE = "gpu-operator"

_SOURCE_NAMES = {
    "clusterpolicy": "ClusterPolicy",
    "helmrelease": "HelmRelease values",
    "application": "Application values",
}


@record(frozen=True)
class Cause:
    """One reason an operand does not run on a node, and where it is written."""

    kind: str
    detail: str
    location: Location
    about: Manifest | Node = field(compare=False)  # the object the reason is written in
    path: Path = field(compare=False)  # key path inside that object
    # TAINT: the tolerations list to add to, when it is not the configuration's
    # daemonsets.tolerations (an NVIDIADriver's spec.tolerations), as `text (file:line)`
    tolerate_in: str | None = field(default=None, compare=False)

    def cited(self) -> str:
        return f"{self.detail} ({self.location.file}:{self.location.line})"


@record
class OperandDaemonSet:
    """An operand DaemonSet, from the repo or derived from the operator configuration."""

    operand: str
    name: str
    namespace: str
    source: str  # REPO | OPERATOR
    workload: Workload
    about: Manifest  # the DaemonSet (repo) or the operator configuration's object (operator)
    path: Path  # where it is declared inside `about`
    tolerations_path: Path  # where its tolerations are written inside `about`
    tolerations: list  # as its pods carry them, DaemonSet controller defaults included
    affinity: RequiredNodeAffinity
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # node name -> placement
    desired: list[str] = field(default_factory=list)  # nodes the controller counts
    # nodes whose labels it selects but whose taint it does not tolerate: not counted
    tainted_out: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    # NVIDIADriver pools: the tolerations list that *adds* to nvidia.com/gpu for these pods,
    # written `text (file:line)`; None for the configuration's own operands and repo DaemonSets
    tolerate_in: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def desired_number_scheduled(self) -> int:
        return len(self.desired)

    @property
    def location(self) -> Location:
        return self.about.location(self.path)

    @property
    def declared_at(self) -> Location:
        """The DaemonSet's name in the repo, or the configuration key it is derived from."""
        if self.source == REPO:
            return self.about.location(("metadata", "name"))
        return self.location

    @property
    def tolerations_location(self) -> Location:
        return self.about.location(self.tolerations_path)


@record(frozen=True)
class Cell:
    """One operand on one node."""

    operand: str
    running: bool
    daemonsets: tuple[str, ...] = ()  # the DaemonSets whose pod runs there
    causes: tuple[Cause, ...] = ()  # why not, when not running
    preinstalled: bool = False  # the driver label is "false": the driver is on the host
    disabled: bool = False  # the operand is off in the operator configuration

    @property
    def text(self) -> str:
        """The table cell: yes, pre-installed, or no (first reason)."""
        if self.running:
            return "yes"
        if self.preinstalled:
            return "pre-installed"
        kind = self.causes[0].kind if self.causes else "?"
        return f"no ({kind})"


@record(frozen=True)
class ChainBreak:
    """Operands running on a node while one they depend on does not."""

    node: Node
    missing: str
    running: tuple[str, ...]  # the dependents that run, catalog order
    causes: tuple[Cause, ...]
    waits: bool  # the dependents are operator pods whose init containers wait for `missing`


@record
class OperandPlacement:
    mode: str
    config: OperatorConfig | None
    enabled: dict[str, bool] | None  # per operand, from the configuration
    operands: tuple[str, ...]  # table columns, catalog order
    daemonsets: list[OperandDaemonSet]
    rows: list[Node]  # nodes shown: GPU nodes and nodes an operand reaches or is labelled for
    cells: dict[str, dict[str, Cell]]  # node name -> operand -> cell, for every row
    breaks: dict[str, list[ChainBreak]]  # node name -> broken links
    labels: dict[str, dict[str, str]]  # node name -> labels as the DaemonSets see them
    notes: list[str] = field(default_factory=list)
    hidden_nodes: int = 0
    #: node name -> its GPU workload type (container, vm-passthrough, vm-vgpu; None: not known)
    workloads: dict[str, str | None] = field(default_factory=dict)

    @property
    def gpu_rows(self) -> list[Node]:
        return [n for n in self.rows if n.is_gpu]

    def daemonsets_of(self, operand: str) -> list[OperandDaemonSet]:
        return [ds for ds in self.daemonsets if ds.operand == operand]

    def running(self, node: str) -> tuple[str, ...]:
        return tuple(op for op, cell in self.cells.get(node, {}).items() if cell.running)

    def chain(self, node: str) -> str:
        """`broken` (a link is missing: GPU030), `ok` (operands run), or `none`."""
        if self.breaks.get(node):
            return "broken"
        return "ok" if self.running(node) else "none"


# --- finding operand DaemonSets in the repo ---------------------------------------------------


def _deploy_selection(pod_spec: Any) -> tuple[str, Path] | None:
    """(operand, path in the pod spec) of the first deploy label the spec selects on."""
    if not isinstance(pod_spec, Mapping):
        return None
    selector = pod_spec.get("nodeSelector")
    if isinstance(selector, Mapping):
        for key in selector:
            operand = operand_for_deploy_label(key)
            if operand is not None:
                return operand, ("nodeSelector", key)
    required: Any = pod_spec
    for step in REQUIRED_AFFINITY_PATH:
        required = required.get(step) if isinstance(required, Mapping) else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    for i, term in enumerate(terms if isinstance(terms, list) else []):
        expressions = term.get("matchExpressions") if isinstance(term, Mapping) else None
        for j, expression in enumerate(expressions if isinstance(expressions, list) else []):
            key = expression.get("key") if isinstance(expression, Mapping) else None
            operand = operand_for_deploy_label(key)
            if operand is not None:
                return operand, (
                    *REQUIRED_AFFINITY_PATH,
                    "nodeSelectorTerms",
                    i,
                    "matchExpressions",
                    j,
                )
    return None


def _repo_daemonsets(workloads: list[Workload]) -> list[OperandDaemonSet]:
    found = []
    for workload in workloads:
        if workload.kind != "DaemonSet":
            continue
        selection = _deploy_selection(workload.pod_spec)
        if selection is None:
            continue
        operand, path = selection
        spec = workload.pod_spec
        found.append(
            OperandDaemonSet(
                operand=operand,
                name=workload.name or "?",
                namespace=workload.namespace,
                source=REPO,
                workload=workload,
                about=workload.manifest,
                path=(*workload.spec_path, *path),
                tolerations_path=(*workload.spec_path, "tolerations"),
                tolerations=daemonset_pod_tolerations(
                    spec.get("tolerations"), workload.host_network
                ),
                affinity=required_node_affinity(spec),
            )
        )
    return found


# --- deriving them from the operator configuration -------------------------------------------


def _config_source(config: OperatorConfig) -> str:
    return CLUSTERPOLICY if config.source == "clusterpolicy" else HELM


def _operator_namespace(config: OperatorConfig) -> str:
    m = config.manifest
    candidates = (
        m.get("spec", "targetNamespace"),  # HelmRelease
        m.get("spec", "destination", "namespace"),  # Application
        m.namespace if config.source == "helmrelease" else None,
    )
    for value in candidates:
        if isinstance(value, str) and value:
            return value
    return DEFAULT_NAMESPACE


def _precompiled_driver_daemonsets(repo: Repo, config: OperatorConfig) -> list[OperandDaemonSet]:
    """A precompiled ClusterPolicy driver: one DaemonSet per GPU-node kernel, named
    ``nvidia-driver-daemonset-<sanitized kernel>-<ID+VERSION_ID>`` and selecting that kernel
    (object_controls.go ``precompiledDriverDaemonsets``, ``TransformDriver``)."""
    from gpudrv_check.model.driver import node_facts
    from gpudrv_check.nvidia.driver_image import KERNEL_VERSION_LABEL, sanitized_kernel_version

    kernels: dict[str, str] = {}
    for node in sorted(repo.gpu_nodes, key=lambda n: n.name):
        facts = node_facts(node, repo)
        if facts.kernel is not None:
            kernels.setdefault(facts.kernel, facts.os_release or "")
    return [
        _derived_daemonset(
            DRIVER,
            config,
            f"{OPERANDS[DRIVER].daemonset}-{sanitized_kernel_version(kernel)}-{release}",
            {KERNEL_VERSION_LABEL: kernel},
        )
        for kernel, release in sorted(kernels.items())
    ]


def _derived_daemonset(
    operand: str,
    config: OperatorConfig,
    name: str | None = None,
    extra: Mapping[str, str] | None = None,
    release: tuple[int, int] | None = None,
) -> OperandDaemonSet:
    entry = OPERANDS[operand]
    since = entry.asset_toleration_since
    # the chart renders its values.yaml list when the values leave daemonsets.tolerations out
    chart_list = _config_source(config) == HELM and "tolerations" not in (
        config.get("daemonsets") or {}
    )
    bare = since is not None and release is not None and release < since and not chart_list
    tolerations = operator_tolerations(config.values, asset_tolerates=not bare)
    own = dict(entry.selector_in(release))
    selector = {entry.deploy_label: "true", **own, **(extra or {})}
    section = (entry.spec_key,) if entry.spec_key and config.get(entry.spec_key) else ()
    return _rendered_daemonset(
        operand,
        name or entry.daemonset,
        _operator_namespace(config),
        config.manifest,
        selector,
        tolerations,
        config_key_path(config, *section),
        config_key_path(config, "daemonsets", "tolerations"),
    )


def _rendered_daemonset(
    operand: str,
    name: str,
    namespace: str,
    about: Manifest,
    selector: dict[str, str],
    tolerations: list[dict[str, Any]],
    path: Path,
    tolerations_path: Path,
) -> OperandDaemonSet:
    """The DaemonSet the operator renders from `about` (its configuration or NVIDIADriver CR),
    as a synthetic manifest in `about`'s file so findings point at what declares it."""
    pod_spec = {"nodeSelector": selector, "tolerations": tolerations}
    manifest = Manifest(
        file=about.file,
        doc=about.doc,
        data={
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"template": {"spec": pod_spec}},
        },
        api_version="apps/v1",
        kind="DaemonSet",
        name=name,
        namespace=namespace,
    )
    workload = Workload(manifest=manifest, spec_path=POD_SPEC_PATHS["DaemonSet"], pod_spec=pod_spec)
    return OperandDaemonSet(
        operand=operand,
        name=name,
        namespace=namespace,
        source=OPERATOR,
        workload=workload,
        about=about,
        path=path,
        tolerations_path=tolerations_path,
        tolerations=daemonset_pod_tolerations(tolerations, False),
        affinity=required_node_affinity(pod_spec),
    )


def _pool_daemonsets(repo: Repo, config: OperatorConfig) -> list[OperandDaemonSet]:
    """One driver DaemonSet per NVIDIADriver node pool (internal/state/driver.go: one per pool,
    nodeSelector = gpu.deploy.driver=true + the pool's selector, tolerations added to the
    asset's nvidia.com/gpu one)."""
    from gpudrv_check.model.driver_plan import NVIDIADRIVER, VGPU_HOST_MANAGER, driver_plan
    from gpudrv_check.nvidia.nvidiadriver import driver_tolerations, parse_driver_cr

    plan = driver_plan(repo)
    if plan.mode != NVIDIADRIVER:
        return []
    out = []
    namespace = _operator_namespace(config)
    for source, pool, _reference in plan.pools:
        cr = source.cr or parse_driver_cr(pool.driver, {})
        name = f"nvidia-{cr.driver_type}-driver-{pool.driver}-{pool.name}"
        operand = DRIVER
        if cr.driver_type == VGPU_HOST_MANAGER:
            # getDriverName; the asset selects gpu.deploy.vgpu-manager (0500_daemonset.yaml)
            name, operand = f"nvidia-vgpu-manager-{pool.driver}-{pool.name}", VGPU_MANAGER
        tolerations = driver_tolerations(cr)
        selector = {OPERANDS[operand].deploy_label: "true", **pool.node_selector}
        if source.cr is None:
            # the chart's default CR: templates/nvidiadriver.yaml copies daemonsets.tolerations
            # into its spec.tolerations
            tolerations_path = config_key_path(config, "daemonsets", "tolerations")
            label = "daemonsets.tolerations (the chart copies it into its default NVIDIADriver)"
        else:
            tolerations_path = source.path("tolerations")
            label = f"spec.tolerations of NVIDIADriver {cr.name}"
        ds = _rendered_daemonset(
            operand,
            name,
            namespace,
            source.manifest,
            selector,
            tolerations,
            source.path(),
            tolerations_path,
        )
        at = source.manifest.location(tolerations_path)
        ds.tolerate_in = f"{label} ({at.file}:{at.line})"
        out.append(ds)
    return out


def _any_node_has(repo: Repo, selector: tuple[tuple[str, str], ...]) -> bool:
    return any(all(n.labels.get(k) == v for k, v in selector) for n in repo.nodes)


def _version(repo: Repo) -> str | None:
    from gpudrv_check.model.driver import operator_version

    return operator_version(repo)


def _pool_owners(repo: Repo) -> dict[str, dict[str, str]]:
    """The owner label AssignOwners writes (v26.7) on each node a pool takes."""
    from gpudrv_check.model.driver import operator_version
    from gpudrv_check.model.driver_plan import NVIDIADRIVER, driver_plan
    from gpudrv_check.nvidia.nvidiadriver import OWNER_LABEL, has_owner_assignment

    plan = driver_plan(repo)
    if plan.mode != NVIDIADRIVER or not has_owner_assignment(operator_version(repo)):
        return {}
    return {name: {OWNER_LABEL: pool.driver} for _, pool, _ in plan.pools for name in pool.nodes}


def config_key_path(config: OperatorConfig, *path: str) -> Path:
    """A key path inside the configuration's manifest (the values block when embedded)."""
    if config.embedded:
        return tuple(config.values_path)
    return (*config.values_path, *path)


def config_name(config: OperatorConfig) -> str:
    kind = _SOURCE_NAMES.get(config.source, config.source)
    return f"{kind} {config.manifest.name or '?'}"


# --- node labels as the DaemonSets see them ---------------------------------------------------


def _operator_labels(
    node: Node, sandbox: bool, default: str, version: object = None, mode: object = None
) -> dict[str, str]:
    """Every node goes through the relabelling: it also strips the deploy labels of nodes
    that are not (or no longer) GPU nodes."""
    # a copy wrapped in a NodeLabels below: what the DaemonSets' placement reads of it is
    # recorded by key (core/label_reads.py `entries`)
    kept = {k: v for k, v in entries(node.labels).items() if operand_for_deploy_label(k) is None}
    # gpu.present as the operator keeps it (from NFD's PCI labels when the repo has them)
    if node.is_gpu:
        kept[GPU_PRESENT_LABEL] = "true"
    elif _stale_gpu_present(node):
        kept[GPU_PRESENT_LABEL] = "false"
    kept.update(expected_deploy_labels(node.labels, sandbox, default, version, mode, node.is_gpu))
    return NodeLabels(kept)


def _stale_gpu_present(node: Node) -> bool:
    """`gpu.present=true` written on a node NFD shows no NVIDIA GPU on: the operator resets it."""
    return not node.is_gpu and node.labels.get(GPU_PRESENT_LABEL) == "true"


# --- explaining a node the DaemonSet does not reach -------------------------------------------


def _taint_text(taint: Mapping) -> str:
    key, value, effect = taint.get("key") or "", taint.get("value") or "", taint.get("effect")
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def taint_path(node: Node, taint: Mapping) -> Path:
    """Where a taint is written in the node's object (the cordon: `spec.unschedulable`). The
    taint is the tree's own item, or, for a node built from the per-file cache's facts
    (model/inventory.py `_node_from_facts`), a copy that starts where the item starts."""
    raw = node.manifest.get(*node.taints_path)
    pos = taint.pos if taint.__class__ is LMap else None
    for index, item in enumerate(raw if isinstance(raw, list) else []):
        if item is taint or (pos is not None and item.__class__ is LMap and item.pos == pos):
            return (*node.taints_path, index)
    for index, item in enumerate(raw if isinstance(raw, list) else []):
        if isinstance(item, Mapping) and all(
            (item.get(f) or "") == (taint.get(f) or "") for f in ("key", "value", "effect")
        ):
            return (*node.taints_path, index)
    return node.unschedulable_path if node.unschedulable else node.taints_path


def _selected_key(pod_spec: Mapping, path: Path) -> str | None:
    """The label key a failed nodeSelector entry or match expression reads."""
    if len(path) == 2 and path[0] == "nodeSelector":
        return str(path[1])
    node = value_at(pod_spec, path)
    key = node.get("key") if isinstance(node, Mapping) else None
    return key if isinstance(key, str) else None


class _Explainer:
    def __init__(
        self, operator_mode: bool, labels: dict[str, dict[str, str]], version: object = None
    ) -> None:
        from gpudrv_check.nvidia.driver_image import operator_release

        self.operator_mode = operator_mode
        self.labels = labels
        release = operator_release(version)
        # v26.7 updateGPUStateLabels strips every node without gpu.present=true
        self.strips_non_gpu = release is None or release >= (26, 7)

    def not_gpu_cause(self, node: Node, key: str) -> Cause | None:
        """Why a deploy label cannot stay on a node that is no GPU node, or None (before
        v26.7 the labels of a node never marked present are left as written)."""
        stale = _stale_gpu_present(node)
        if not (stale or self.strips_non_gpu):
            return None
        if stale:
            why = (
                f"{node.name} has {GPU_PRESENT_LABEL}=true but no NVIDIA PCI label from NFD "
                "(feature.node.kubernetes.io/pci-10de.present), so the operator sets it to "
                "false and removes every nvidia.com/gpu.deploy.* label"
            )
        else:
            why = (
                "the operator removes every nvidia.com/gpu.deploy.* label from a node without "
                f"{GPU_PRESENT_LABEL}=true"
            )
        written = key in node.labels
        verb = "removed" if written else "missing"
        # at the label the operator removes, else at the stale gpu.present
        where = GPU_PRESENT_LABEL if stale and not written else key
        return Cause(
            NOT_GPU,
            f"label {key} {verb}: {why}",
            node.label_location(where),
            node,
            node.label_path(where),
        )

    def label_cause(self, node: Node, key: str) -> Cause:
        seen = self.labels[node.name]
        operand = operand_for_deploy_label(key)
        if self.operator_mode and node.is_gpu and node.labels.get(DEPLOY_OPERANDS_LABEL) == "false":
            return Cause(
                OPERANDS_OFF,
                f"label {DEPLOY_OPERANDS_LABEL}=false: the operator removes every "
                "nvidia.com/gpu.deploy.* label from the node",
                node.label_location(DEPLOY_OPERANDS_LABEL),
                node,
                node.label_path(DEPLOY_OPERANDS_LABEL),
            )
        value = seen.get(key)
        if self.operator_mode and not node.is_gpu and value is None:
            cause = self.not_gpu_cause(node, key)
            if cause is not None:
                return cause
        if value is None:
            detail = f"label {key} missing"
            if self.operator_mode and not node.is_gpu:
                detail += ": the operator labels only nodes with nvidia.com/gpu.present=true"
            elif self.operator_mode and operand == MIG_MANAGER:
                detail += ": the operator adds it only on MIG-capable nodes"
            elif self.operator_mode:
                # the operator sets every deploy label of the node's workload type
                # (`expected_deploy_labels`): a missing one is another type's, and labelling
                # the node would be undone
                if key in node.labels:
                    detail += " (the operator removes it: not for this node's GPU workload type)"
                else:
                    detail += ": the operator sets it only on nodes of another GPU workload type"
                return Cause(
                    WORKLOAD_TYPE, detail, node.label_location(key), node, node.label_path(key)
                )
        elif value == "false":
            detail = f"label {key}=false"
            if operand == DRIVER:
                detail += ": driver pre-installed on the host"
        else:
            detail = f'label {key}={value} (only "true" matches)'
        return Cause(LABEL, detail, node.label_location(key), node, node.label_path(key))

    def causes(self, ds: OperandDaemonSet, node: Node, verdict: Verdict) -> list[Cause]:
        seen = self.labels[node.name]
        spec = ds.workload.pod_spec if isinstance(ds.workload.pod_spec, Mapping) else {}
        out: list[Cause] = []
        if verdict.reason == NODE_NAME:
            path = (*ds.workload.spec_path, "nodeName")
            out.append(
                Cause(
                    NODE_NAME_CAUSE,
                    f"the pod template is bound to node {ds.workload.node_name}",
                    ds.about.location(path),
                    ds.about,
                    path,
                )
            )
            return out
        if not ds.affinity.matches(node.name, seen):
            deploy_key = OPERANDS[ds.operand].deploy_label
            for check in pod_placement_explanations(spec, node.name, seen):
                if check.matched:
                    continue
                if _selected_key(spec, check.path) == deploy_key:
                    cause = self.label_cause(node, deploy_key)
                else:
                    path = (*ds.workload.spec_path, *check.path)
                    cause = Cause(
                        SELECTOR,
                        f"DaemonSet {ds.name}: {check.detail}",
                        ds.about.location(path),
                        ds.about,
                        path,
                    )
                if cause not in out:
                    out.append(cause)
        taints = node_taints({"taints": node.taints, "unschedulable": node.unschedulable})
        taint = first_untolerated_taint(taints, ds.tolerations)
        if taint is not None:
            path = taint_path(node, taint)
            out.append(
                Cause(
                    TAINT,
                    f"taint {_taint_text(taint)} not tolerated",
                    node.location(path),
                    node,
                    path,
                    tolerate_in=ds.tolerate_in,
                )
            )
        if verdict.reason == INSUFFICIENT_GPU:
            # at the request, in the DaemonSet's file: what to lower
            path = ds.workload.gpu_request_path() or ds.workload.spec_path
            out.append(
                Cause(
                    GPUS,
                    f"{ds.name} requests {ds.workload.gpus} nvidia.com/gpu, more than the node "
                    "offers",
                    ds.about.location(path),
                    ds.about,
                    path,
                )
            )
        return out


# --- building the whole picture ---------------------------------------------------------------


def _node_workload(
    labels: Mapping[str, str], operator_mode: bool, sandbox: bool, default: str
) -> str | None:
    if operator_mode:
        return workload_config(labels, sandbox, default)
    value = labels.get(WORKLOAD_CONFIG_LABEL)
    return value if value in WORKLOAD_CONFIGS else None


def build_operand_placement(repo: Repo) -> OperandPlacement:
    config = repo.operator
    repo_ds = _repo_daemonsets(repo.workloads)
    notes: list[str] = []
    enabled: dict[str, bool] | None = None
    sandbox, default = False, "container"
    # sandboxWorkloads.mode (kubevirt or kata): kept apart from `mode` below, which names the
    # sources of the operand set; the relabelling needs it for vm-passthrough nodes
    sandbox_mode_value = None
    if config is not None:
        sandbox_mode_value = config.get("sandboxWorkloads", "mode")
        values = config.values
        source = _config_source(config)
        enabled = operands_from_operator_config(values, source, _version(repo))
        sandbox = sandbox_workloads_enabled(values, source)
        default = default_workload(values)
    if config is None and not repo_ds:
        mode = MODE_NONE
    elif config is None:
        mode = MODE_DAEMONSETS
    elif not repo_ds:
        mode = MODE_OPERATOR
    else:
        mode = MODE_BOTH
    operator_mode = config is not None

    daemonsets = sorted(repo_ds, key=lambda d: (OPERAND_NAMES.index(d.operand), d.key))
    in_repo = {ds.operand for ds in repo_ds}
    columns: list[str] = sorted(in_repo, key=OPERAND_NAMES.index)
    if config is not None and enabled is not None:
        derived: list[OperandDaemonSet] = []
        settings = driver_settings(config.values, _config_source(config))
        for entry in OPERANDS.values():
            if entry.sandbox and not sandbox:
                continue
            if entry.name in in_repo:
                if not enabled[entry.name]:
                    notes.append(
                        f"{entry.name}: the {config_name(config)} disables it, but DaemonSet(s) "
                        f"{', '.join(d.key for d in repo_ds if d.operand == entry.name)} in the "
                        "repo deploy it; modelled from the repo"
                    )
                continue
            explicit = (
                entry.spec_key is not None and config.get(entry.spec_key, "enabled") is not None
            )
            # NVIDIADriver CRs reconcile whatever driver.enabled says (nvidiadriver_controller.go)
            pools = _pool_daemonsets(repo, config) if entry.name == DRIVER else []
            if (
                entry.name == DRIVER
                and (enabled[DRIVER] or pools)
                and settings.use_nvidia_driver_crd
            ):
                derived.extend(pools)
                columns.append(entry.name)
                columns.extend(ds.operand for ds in pools)  # vgpu-host-manager CRs
                if not pools:
                    notes.append(
                        "driver: driver.useNvidiaDriverCRD is set and no NVIDIADriver renders a "
                        "driver DaemonSet (no CR, or none owns a GPU node)"
                    )
                continue
            if entry.name == VGPU_MANAGER and settings.use_nvidia_driver_crd:
                continue  # step skips state-vgpu-manager: NVIDIADriver CRs deploy it
            if entry.extra_selector and not _any_node_has(repo, entry.extra_selector):
                continue  # e.g. no MPS-capable node: a column of "no" says nothing
            if entry.name == DRIVER and enabled[DRIVER] and settings.use_precompiled:
                derived.extend(_precompiled_driver_daemonsets(repo, config))
                columns.append(entry.name)
            elif enabled[entry.name]:
                from gpudrv_check.nvidia.driver_image import operator_release

                release = operator_release(_version(repo))
                derived.append(_derived_daemonset(entry.name, config, release=release))
                columns.append(entry.name)
            elif explicit:
                columns.append(entry.name)
        if repo_ds and derived:
            notes.append(
                "DaemonSets in the repo are used for "
                f"{', '.join(sorted(in_repo, key=OPERAND_NAMES.index))}; the other operands are "
                f"derived from the {config_name(config)}"
            )
        daemonsets.extend(derived)
        if len(repo.operator_configs) > 1:
            others = ", ".join(
                f"{c.manifest.file}:{c.manifest.location().line}" for c in repo.operator_configs[1:]
            )
            notes.append(
                f"several operator configurations: {config_name(config)} "
                f"({config.manifest.file}) is used, not {others}"
            )
    columns = sorted(set(columns), key=OPERAND_NAMES.index)

    # node labels as the DaemonSets will see them
    labels: dict[str, dict[str, str]] = {}
    changed = False
    owners = _pool_owners(repo) if operator_mode else {}
    for node in repo.nodes:
        seen = (
            _operator_labels(node, sandbox, default, _version(repo), sandbox_mode_value)
            if operator_mode
            else node.labels
        )
        if node.name in owners:
            seen = NodeLabels({**entries(seen), **owners[node.name]})
        labels[node.name] = seen
        # which placement answers, not what it answers: the relabelled one is made as the
        # repo's (overheads, scheduler release, MIG-derived allocatable), so equal labels
        # place alike; compared without recording (core/label_reads.py)
        changed = changed or (seen is not node.labels and dict.__ne__(seen, node.labels))
    if changed:
        from gpudrv_check.model.mig import mig_allocatable

        base = repo.placement
        placement = Placement(
            [replace(n, labels=labels[n.name]) for n in repo.nodes],
            base.overheads,
            base.release,
            mig_allocatable(repo),
        )
    else:
        placement = repo.placement

    nodes = sorted(repo.nodes, key=lambda n: n.name)
    for ds in daemonsets:
        ds.verdicts = placement.verdicts(ds.workload, daemonset=True)
        for node in nodes:
            v = ds.verdicts[node.name]
            if v.ok or v.reason == INSUFFICIENT_GPU:
                ds.desired.append(node.name)
            elif v.taint is not None and ds.affinity.matches(node.name, labels[node.name]):
                ds.tainted_out.append((node.name, v.taint))

    reached = {name for ds in daemonsets for name in ds.desired}
    rows = [
        n
        for n in nodes
        if n.is_gpu
        or n.name in reached
        or any(operand_for_deploy_label(k) for k in labels[n.name])
        or any(operand_for_deploy_label(k) for k in n.labels)
    ]
    explainer = _Explainer(operator_mode, labels, _version(repo))
    cells: dict[str, dict[str, Cell]] = {}
    for node in rows:
        row: dict[str, Cell] = {}
        for operand in columns:
            row[operand] = _cell(operand, node, daemonsets, explainer, config, enabled, repo)
        cells[node.name] = row

    breaks: dict[str, list[ChainBreak]] = {}
    workloads: dict[str, str | None] = {}
    for node in rows:
        workload = _node_workload(labels[node.name], operator_mode, sandbox, default)
        workloads[node.name] = workload
        found = _chain_breaks(node, cells[node.name], daemonsets, workload)
        if found:
            breaks[node.name] = found

    if not operator_mode:
        for node in rows:
            if node.labels.get(DEPLOY_OPERANDS_LABEL) != "false":
                continue
            still = [op for op, cell in cells[node.name].items() if cell.running]
            if still:
                notes.append(
                    f"{node.name}: {DEPLOY_OPERANDS_LABEL}=false has no effect here: the GPU "
                    "Operator implements it by removing the node's per-operand labels, and no "
                    "operator configuration is in the repo; hand-written DaemonSets select only "
                    f"on their own label, so {', '.join(still)} still run there"
                )
    return OperandPlacement(
        mode=mode,
        config=config,
        enabled=enabled,
        operands=tuple(columns),
        daemonsets=daemonsets,
        rows=rows,
        cells=cells,
        breaks=breaks,
        labels=labels,
        notes=notes,
        hidden_nodes=len(nodes) - len(rows),
        workloads=workloads,
    )


def _disabled_cause(operand: str, config: OperatorConfig) -> Cause:
    entry = OPERANDS[operand]
    key = entry.spec_key or operand
    written = config.get(key, "enabled") is not None
    path = config_key_path(config, key, "enabled") if written else config_key_path(config)
    detail = (
        f"disabled in the {config_name(config)} ({key}.enabled: false)"
        if written
        else f"off by default in the {config_name(config)} ({key}.enabled unset)"
    )
    return Cause(DISABLED, detail, config.manifest.location(path), config.manifest, path)


def _no_pool_cause(repo: Repo, node: Node, config: OperatorConfig | None) -> Cause | None:
    """Why no NVIDIADriver pool takes the node, at the CR or configuration that says so."""
    from gpudrv_check.model.driver_plan import NVIDIADRIVER, OWNER_CONFLICT, driver_plan

    plan = driver_plan(repo)
    entry = plan.nodes.get(node.name)
    if plan.mode != NVIDIADRIVER or entry is None or entry.pool is not None:
        return None
    conflicts = plan.of_rule(builtin(OWNER_CONFLICT).id)
    if conflicts:
        first = conflicts[0]
        detail = "no NVIDIADriver owns it: the owner assignment fails (GPU015)"
        return Cause(SELECTOR, detail, first.location, first.about, first.path)
    missing = entry.result.missing
    excluded = entry.result.excluded_by
    if entry.managed and excluded and entry.left_out_of is not None:
        detail = f"the NVIDIADriver pool {entry.left_out_of.name} selects another {excluded}"
        path = (*node.labels_path, excluded)
        return Cause(POOL_SELECTOR, detail, node.label_location(excluded), node, path)
    if entry.managed and missing:
        detail = f"its NVIDIADriver's node pools need the label {missing[0]}"
        path = (*node.labels_path, missing[0])
        return Cause(POOL_LABEL, detail, node.label_location(missing[0]), node, path)
    reason = entry.reason or "no NVIDIADriver owns it"
    about = config.manifest if config is not None else node.manifest
    path = config_key_path(config, "driver") if config is not None else node.labels_path
    return Cause(SELECTOR, reason, about.location(path), about, path)


def _cell(operand, node, daemonsets, explainer, config, enabled, repo) -> Cell:
    own = [ds for ds in daemonsets if ds.operand == operand]
    preinstalled = operand == DRIVER and node.labels.get(OPERANDS[DRIVER].deploy_label) == "false"
    if operand == DRIVER and not preinstalled:
        cause = _no_pool_cause(repo, node, config)
        if cause is not None and not any(ds.verdicts[node.name].ok for ds in own):
            return Cell(operand, False, causes=(cause,))
    if not own:
        if config is not None and enabled is not None and not enabled.get(operand, False):
            cause = _disabled_cause(operand, config)
            return Cell(operand, False, causes=(cause,), preinstalled=preinstalled, disabled=True)
        return Cell(operand, False, preinstalled=preinstalled)
    running = tuple(ds.name for ds in own if ds.verdicts[node.name].ok)
    if running:
        return Cell(operand, True, daemonsets=running)
    causes: list[Cause] = []
    for ds in own:
        for cause in explainer.causes(ds, node, ds.verdicts[node.name]):
            if cause not in causes:
                causes.append(cause)
    return Cell(operand, False, causes=tuple(causes), preinstalled=preinstalled)


def _chain_breaks(
    node: Node, row: Mapping[str, Cell], daemonsets: list[OperandDaemonSet], workload: str | None
) -> list[ChainBreak]:
    needed_by: dict[str, list[str]] = {}
    for operand, cell in row.items():
        if not cell.running:
            continue
        for need in dependencies(operand, workload):
            dep = row.get(need)
            # no column: no DaemonSet in the repo and not in the configuration, i.e. outside
            # what the repo describes (a host component); a pre-installed driver or an operand
            # the configuration turns off (the host provides it, the validator skips it) also
            # satisfies the link
            if dep is None or dep.running or dep.preinstalled or dep.disabled:
                continue
            needed_by.setdefault(need, []).append(operand)
    out = []
    for missing in sorted(needed_by, key=OPERAND_NAMES.index):
        running = tuple(sorted(needed_by[missing], key=OPERAND_NAMES.index))
        waits = all(
            ds.source == OPERATOR
            for ds in daemonsets
            if ds.operand in running and node.name in ds.desired
        )
        out.append(ChainBreak(node, missing, running, row[missing].causes, waits))
    return out


def mig_capable(node: Node) -> bool:
    return has_mig_capable_gpu(node.labels)


def default_toleration_replaced(config: OperatorConfig | None) -> bool:
    """Whether a non-empty `daemonsets.tolerations` replaces the default toleration."""
    if config is None:
        return False
    tolerations = operator_tolerations(config.values)
    return tolerations != [dict(DEFAULT_OPERAND_TOLERATION)]


def taint_text(taint: Mapping) -> str:
    """`key=value:Effect` (or `key:Effect` without a value), as kubectl prints a taint."""
    return _taint_text(taint)


def remedy(cause: Cause, operand: str | None, node: str) -> str | None:
    """What to change so `operand` (None: every operand) runs on `node`; None: no advice."""
    what = f"the {operand} DaemonSet" if operand else "the operand DaemonSets"
    if cause.kind == LABEL:
        key = OPERANDS[operand].deploy_label if operand else cause.path[-1]
        return (
            f"Label the node `kubectl label node {node} {key}=true --overwrite` (in the repo: "
            f'{key}: "true" on {node})'
        )
    if cause.kind == OPERANDS_OFF:
        return (
            f"Remove {DEPLOY_OPERANDS_LABEL}=false from {node} if its GPUs should be used; the "
            "operator then labels it again"
        )
    if cause.kind == TAINT and cause.tolerate_in is not None:
        # NVIDIADriver pods: the CR's list is added to nvidia.com/gpu (state-driver
        # 0500_daemonset.yaml); the ClusterPolicy's daemonsets.tolerations does not reach them
        return (
            f"Tolerate the taint in {what}: add it to {cause.tolerate_in}, which adds to the "
            f"default nvidia.com/gpu toleration; or remove the taint from {node}"
        )
    if cause.kind == TAINT:
        return (
            f"Tolerate the taint in {what} (for operator-managed DaemonSets: "
            "daemonsets.tolerations, which replaces the default, so keep nvidia.com/gpu in it), "
            f"or remove the taint from {node}"
        )
    if cause.kind == SELECTOR:
        return f"Make the node selector and affinity of {what} match {node}"
    if cause.kind == POOL_LABEL:
        label = cause.path[-1]
        return (
            f"Give {node} the label {label}, which every NVIDIADriver pool selects on: Node "
            "Feature Discovery writes it on a running node (is NFD deployed there?); in the repo, "
            f"add it to {node}'s labels"
        )
    if cause.kind == POOL_SELECTOR:
        return (
            f"Give {node} its own NVIDIADriver (a nodeSelector that picks it), or bring its "
            f"{cause.path[-1]} to the value of the pool's other nodes: the pool's selector comes "
            "from one of them"
        )
    if cause.kind == NOT_GPU:
        return (
            f"Leave {node} without operands if it has no NVIDIA GPU (drop the "
            "nvidia.com/gpu.deploy.* labels from its manifest); if it has one, NFD's "
            "feature.node.kubernetes.io/pci-10de.present=true makes the operator label it "
            f"{GPU_PRESENT_LABEL}=true and then deploy {what} (is NFD running there?)"
        )
    if cause.kind == WORKLOAD_TYPE:
        return (
            f"Leave it off if {node}'s GPUs serve another workload type; else set "
            f"{WORKLOAD_CONFIG_LABEL} on {node} to the type that runs {what} (the operator "
            "keeps each node's deploy labels to its type)"
        )
    if cause.kind == GPUS:
        return (
            f"Lower the nvidia.com/gpu request of {what} to what {node} offers (an operand "
            "usually requests none)"
        )
    if cause.kind == NODE_NAME_CAUSE:
        return (
            f"Drop nodeName from the pod template of {what}: a DaemonSet places a pod on each "
            "node it selects"
        )
    if cause.kind == DISABLED and operand is not None:  # `_disabled_cause`
        key = OPERANDS[operand].spec_key or operand
        return f"Set {key}.enabled: true in the operator configuration if {node} should run it"
    return None
