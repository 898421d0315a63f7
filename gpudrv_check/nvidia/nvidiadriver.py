"""NVIDIADriver (``nvidia.com/v1alpha1``): which CR owns a GPU node and which pools it renders.

With ``driver.useNvidiaDriverCRD`` the ClusterPolicy renders no driver; every ``NVIDIADriver``
CR renders one driver DaemonSet per *node pool* of the GPU nodes it owns. Pure functions:
label mappings and parsed specs in, results out; nothing raises on bad input.

Owner assignment (upstream ``internal/nvidiadriver/nvidiadriver.go`` ``AssignOwners``, v26.7):

- a node belongs to the unique non-default CR whose ``nodeSelector`` matches it (a nil selector
  means ``nvidia.com/gpu.present=true``, ``GetNodeSelector``), else to the ``default: true`` CR;
- two matching non-default CRs, two defaults, a default with a ``nodeSelector``, or a selector
  on the reserved ``nvidia.com/gpu-operator.driver.owner`` label are errors
  (``classifyDrivers``, ``ValidateNodeSelector``, ``desiredOwnerForNode``); AssignOwners then
  stops before it labels any node, so no CR owns anything.

Before v26.7 there is no ``default`` field and no owner label: each CR selects its nodes by its
``nodeSelector`` and any node selected by two CRs makes every CR's reconcile fail
(``internal/validator/validator.go`` ``nodeSelectorValidator.Validate``).

Node pools (``internal/state/nodepool.go`` ``getNodePools``): one per OS tag (``getOSTag``),
and in precompiled mode per OS tag and kernel. A node without the OS labels (or, precompiled,
the kernel label) is skipped. v26.7 truncates ``rhel``/``rocky``/``ol`` to the major version and
selects such a pool on ``VERSION_ID.major``: a node without that label is skipped too. Before,
every pool selects the exact ``VERSION_ID``, although v26.3 already names ``rocky9`` (and
``rhel10``) pools by the major version.

A pool is keyed by its name, and the first node the operator lists under that name sets the
pool's selector; a later node of the same name that the selector does not match is in no
DaemonSet (v26.3 ``rocky`` 9.2 next to 9.4; precompiled kernels that differ only in the
architecture, which the pool name drops). The operator's node cache has no order, so which
node comes first is not defined: here the first by name stands for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from typing import Any

from gpudrv_check.core.finding import MAX_NAMES, names
from gpudrv_check.core.records import record
from gpudrv_check.k8s.nodeaffinity import node_selector_map_matches
from gpudrv_check.nvidia.driver_image import (
    GPU_PRESENT_LABEL,
    KERNEL_VERSION_LABEL,
    OS_RELEASE_ID_LABEL,
    OS_VERSION_ID_LABEL,
    ImageRefResult,
    driver_image_reference,
    operator_release,
    os_tag,
    sanitized_kernel_version,
)
from gpudrv_check.nvidia.upgrade import effective_upgrade_policy

API_GROUP = "nvidia.com"
KIND = "NVIDIADriver"
#: the label AssignOwners writes on each GPU node (internal/consts/consts.go, v26.7)
OWNER_LABEL = "nvidia.com/gpu-operator.driver.owner"
OS_VERSION_ID_MAJOR_LABEL = "feature.node.kubernetes.io/system-os_release.VERSION_ID.major"
#: v26.7 added ``spec.default``, the owner label and a per-CR ``spec.upgradePolicy``
OWNER_ASSIGNMENT_SINCE: tuple[int, int] = (26, 7)
#: the chart's default CR (templates/nvidiadriver.yaml)
CHART_DEFAULT_CR = "default"

# owner-assignment problems
MULTIPLE_DEFAULTS = "multiple-defaults"
DEFAULT_WITH_SELECTOR = "default-with-selector"
RESERVED_LABEL = "reserved-label"
OVERLAP = "overlap"


@record(frozen=True)
class DriverCR:
    """The parts of an NVIDIADriver spec that decide ownership and images."""

    name: str
    default: bool = False
    node_selector: Mapping[str, str] | None = None  # None: unset (GetNodeSelector's default)
    use_precompiled: bool = False
    repository: str | None = None
    image: str | None = None
    version: str | None = None
    driver_type: str = "gpu"
    tolerations: tuple[Mapping[str, Any], ...] = ()
    upgrade_policy: Any = None  # the raw spec.upgradePolicy
    # spec.image not written: the API server fills in the CRD's default (DEFAULT_CR_IMAGE)
    image_unset: bool = False

    def selector(self) -> Mapping[str, str]:
        """``GetNodeSelector``: the nodeSelector, or ``nvidia.com/gpu.present=true`` when unset."""
        if self.node_selector is None:
            return {GPU_PRESENT_LABEL: "true"}
        return self.node_selector


@record(frozen=True)
class OwnerProblem:
    """An error that stops owner assignment, about one CR (``key`` names the spec field)."""

    driver: str
    kind: str
    message: str
    key: tuple[str, ...]
    nodes: tuple[str, ...] = ()


@record
class Ownership:
    """Which CR owns each GPU node (``None``: no CR), and what stops the assignment."""

    owner: dict[str, str | None] = field(default_factory=dict)
    problems: list[OwnerProblem] = field(default_factory=list)


@record(frozen=True)
class NodePool:
    """One driver DaemonSet of a CR: the nodes sharing its OS tag (and kernel, precompiled)."""

    driver: str
    name: str  # getNodePools' pool name: <os-tag>[-<sanitized kernel>]
    os_tag: str
    kernel: str | None
    node_selector: Mapping[str, str]
    nodes: tuple[str, ...]


@record(frozen=True)
class SkippedNode:
    """An owned node no pool takes: no driver DaemonSet selects it."""

    node: str
    missing_label: str  # or NO_OS_TAG / POOL_EXCLUDED
    # POOL_EXCLUDED: the pool of the node's name, and the label its selector reads otherwise
    pool: NodePool | None = None
    label: str = ""


#: the CRD's default of spec.image (api/nvidia/v1alpha1/nvidiadriver_types.go,
#: `+kubebuilder:default=nvcr.io/nvidia/driver`)
DEFAULT_CR_IMAGE = "nvcr.io/nvidia/driver"

#: `SkippedNode.missing_label` of a node whose OS labels the operator forms no OS tag from
NO_OS_TAG = "\0no-os-tag"
#: `SkippedNode.missing_label` of a node whose pool (by name) selects another value of a label
POOL_EXCLUDED = "\0pool-excluded"
#: from v26.7 a truncated OS tag's pool selects VERSION_ID.major (nodepool.go getNodePools)
VERSION_MAJOR_SELECTOR_SINCE: tuple[int, int] = (26, 7)


def _text(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return str(value)
    return value if isinstance(value, str) and value else None


def _string_map(value: object) -> Mapping[str, str] | None:
    if not isinstance(value, Mapping):
        return None
    return {str(k): str(v) for k, v in value.items() if isinstance(v, (str, int, bool))}


def parse_driver_cr(name: str, spec: object) -> DriverCR:
    """A CR's spec (``spec`` of the object) as ``DriverCR``; unusable fields read as unset."""
    spec = spec if isinstance(spec, Mapping) else {}
    tolerations = spec.get("tolerations")
    raw_selector = spec.get("nodeSelector")
    return DriverCR(
        name=name,
        default=spec.get("default") is True,
        node_selector=_string_map(raw_selector),
        use_precompiled=spec.get("usePrecompiled") is True,
        repository=_text(spec.get("repository")),
        image=_text(spec.get("image")),
        image_unset=spec.get("image") is None,
        version=_text(spec.get("version")),
        driver_type=_text(spec.get("driverType")) or "gpu",
        tolerations=tuple(t for t in tolerations if isinstance(t, Mapping))
        if isinstance(tolerations, list)
        else (),
        upgrade_policy=spec.get("upgradePolicy"),
    )


def has_owner_assignment(operator_version: object) -> bool:
    """Whether the release assigns owners with ``default`` CRs (v26.7 on; unknown = newest)."""
    release = operator_release(operator_version)
    return release is None or release >= OWNER_ASSIGNMENT_SINCE


def _selector_problems(drivers: Sequence[DriverCR]) -> list[OwnerProblem]:
    """``ValidateNodeSelector`` for every CR, and more than one default (``classifyDrivers``)."""
    problems = []
    for cr in drivers:
        selector = cr.node_selector or {}
        if cr.default and selector:
            problems.append(
                OwnerProblem(
                    cr.name,
                    DEFAULT_WITH_SELECTOR,
                    f'default NVIDIADriver "{cr.name}" cannot use nodeSelector',
                    ("nodeSelector",),
                )
            )
        if OWNER_LABEL in selector:
            problems.append(
                OwnerProblem(
                    cr.name,
                    RESERVED_LABEL,
                    f'NVIDIADriver "{cr.name}" nodeSelector cannot use reserved label '
                    f'"{OWNER_LABEL}"',
                    ("nodeSelector", OWNER_LABEL),
                )
            )
    defaults = [cr.name for cr in drivers if cr.default]
    if len(defaults) > 1:
        for name in defaults:
            problems.append(
                OwnerProblem(
                    name,
                    MULTIPLE_DEFAULTS,
                    f"multiple default NVIDIADrivers found: [{' '.join(defaults)}]",
                    ("default",),
                )
            )
    return problems


def assign_owners(
    drivers: Sequence[DriverCR],
    gpu_nodes: Mapping[str, Mapping[str, str]],
    operator_version: object = None,
    all_nodes: Mapping[str, Mapping[str, str]] | None = None,
) -> Ownership:
    """The CR owning each GPU node, as the given operator release decides it.

    ``gpu_nodes`` maps node name to labels (GPU nodes only); ``all_nodes`` every node (GPU or
    not; default ``gpu_nodes``), which releases before v26.7 check for overlaps. On any problem
    the result owns no node: upstream returns the first error before labelling anything; every
    problem is listed here so all can be fixed at once.
    """
    if not has_owner_assignment(operator_version):
        return _assign_by_selector(drivers, gpu_nodes, all_nodes or gpu_nodes)
    result = Ownership(problems=_selector_problems(drivers))
    defaults = [cr for cr in drivers if cr.default]
    fallback = defaults[0].name if len(defaults) == 1 else None
    others = [cr for cr in drivers if not cr.default]
    overlaps: dict[tuple[str, ...], list[str]] = {}
    matching: Sequence[str]  # a list here, a tuple key in the loop over overlaps
    for node in sorted(gpu_nodes):
        labels = gpu_nodes[node]
        matching = [cr.name for cr in others if node_selector_map_matches(cr.selector(), labels)]
        if len(matching) > 1:
            overlaps.setdefault(tuple(matching), []).append(node)
        result.owner[node] = matching[0] if len(matching) == 1 else fallback
    result.problems.extend(_overlap_problems(overlaps, _same_node_message))
    return _owning_none_on_problem(result)


def _assign_by_selector(
    drivers: Sequence[DriverCR],
    gpu_nodes: Mapping[str, Mapping[str, str]],
    all_nodes: Mapping[str, Mapping[str, str]],
) -> Ownership:
    """Before v26.7: each CR takes the GPU nodes its selector matches; an overlap on any node,
    GPU or not (``getNVIDIADriverSelectedNodes`` lists by the selector alone), fails them all."""
    result = Ownership()
    overlaps: dict[tuple[str, ...], list[str]] = {}
    matching: Sequence[str]  # a list here, a tuple key in the loop over overlaps
    for node, labels in sorted({**all_nodes, **gpu_nodes}.items()):
        matching = [cr.name for cr in drivers if node_selector_map_matches(cr.selector(), labels)]
        if node in gpu_nodes:
            result.owner[node] = matching[0] if len(matching) == 1 else None
        if len(matching) > 1:
            overlaps.setdefault(tuple(matching), []).append(node)
    result.problems.extend(_overlap_problems(overlaps, _conflicting_selectors_message))
    return _owning_none_on_problem(result)


def _overlap_problems(
    overlaps: Mapping[tuple[str, ...], list[str]],
    message: Callable[[str, tuple[str, ...], list[str]], str],
) -> list[OwnerProblem]:
    """One OVERLAP problem per CR of each set of CRs matching the same nodes, in that order."""
    return [
        OwnerProblem(name, OVERLAP, message(name, matching, nodes), ("nodeSelector",), tuple(nodes))
        for matching, nodes in overlaps.items()
        for name in matching
    ]


def _same_node_message(_name: str, matching: tuple[str, ...], nodes: list[str]) -> str:
    """From v26.7: upstream names one node; the other nodes of the set are counted after it,
    the first MAX_NAMES of them named (all of them made a message longer than a finding holds,
    cut before it said what the operator does: core/finding.py MAX_MESSAGE)."""
    rest = nodes[1:]
    listed = ", ".join(rest[:MAX_NAMES])
    among = ": " if len(rest) <= MAX_NAMES else ", among them "
    also = f" (and {len(rest)} more{among}{listed})" if rest else ""
    return f"multiple NVIDIADrivers match the same node {nodes[0]}: [{' '.join(matching)}]{also}"


def _conflicting_selectors_message(name: str, matching: tuple[str, ...], nodes: list[str]) -> str:
    """Before v26.7: every CR of the set named, and its nodes, the first MAX_NAMES of them
    named and the rest counted (as `_same_node_message`)."""
    return (
        f"conflicting NVIDIADriver NodeSelectors found for resource: {name} "
        f"(node(s) {names(nodes)} selected by {', '.join(matching)})"
    )


def _owning_none_on_problem(result: Ownership) -> Ownership:
    """Upstream returns the first error before labelling any node: a problem leaves all unowned."""
    if result.problems:
        result.owner = {node: None for node in result.owner}
    return result


def _pool_of(
    cr: DriverCR, labels: Mapping[str, str], operator_version: object
) -> tuple[str, str | None, dict[str, str]] | str:
    """(OS tag, kernel, pool selector) for one node, or the label whose absence skips it."""
    os_id, version = labels.get(OS_RELEASE_ID_LABEL), labels.get(OS_VERSION_ID_LABEL)
    if not os_id:
        return OS_RELEASE_ID_LABEL
    if not version:
        return OS_VERSION_ID_LABEL
    tag = os_tag(os_id, version, operator_version)
    if tag is None:
        return NO_OS_TAG
    selector = {**cr.selector(), GPU_PRESENT_LABEL: "true", OS_RELEASE_ID_LABEL: os_id}
    if has_owner_assignment(operator_version):
        selector[OWNER_LABEL] = cr.name
    if not tag.endswith(version) and _selects_version_major(operator_version):
        major = labels.get(OS_VERSION_ID_MAJOR_LABEL)
        if not major:
            return OS_VERSION_ID_MAJOR_LABEL
        selector[OS_VERSION_ID_MAJOR_LABEL] = major
    else:
        selector[OS_VERSION_ID_LABEL] = version
    kernel = None
    if cr.use_precompiled:
        kernel = labels.get(KERNEL_VERSION_LABEL) or None
        if kernel is None:
            return KERNEL_VERSION_LABEL
        selector[KERNEL_VERSION_LABEL] = kernel
    return tag, kernel, selector


def _selects_version_major(operator_version: object) -> bool:
    """Whether a truncated OS tag's pool selects ``VERSION_ID.major`` (v26.7 on; unknown =
    newest); before, every pool selects the exact ``VERSION_ID``."""
    release = operator_release(operator_version)
    return release is None or release >= VERSION_MAJOR_SELECTOR_SINCE


def _excluding_label(pool: Mapping[str, str], own: Mapping[str, str]) -> str | None:
    """The first label the pool's selector reads with another value than the node's own pool
    selector (``_pool_of``) does: both hold the same keys, from the same CR."""
    return next((k for k, v in pool.items() if own.get(k) != v), None)


def node_pools(
    cr: DriverCR, owned: Mapping[str, Mapping[str, str]], operator_version: object = None
) -> tuple[list[NodePool], list[SkippedNode]]:
    """The pools (one driver DaemonSet each) of the nodes ``cr`` owns, sorted by name."""
    pools: dict[str, tuple[str, str | None, dict[str, str], list[str]]] = {}
    excluded: list[tuple[str, str, str]] = []  # node, pool name, label
    skipped = []
    for node in sorted(owned):
        found = _pool_of(cr, owned[node], operator_version)
        if isinstance(found, str):
            skipped.append(SkippedNode(node, found))
            continue
        tag, kernel, selector = found
        name = f"{tag}-{sanitized_kernel_version(kernel)}" if kernel else tag
        first = pools.setdefault(name, (tag, kernel, selector, []))
        # getNodePools keeps the first node's pool of each name: its selector decides
        label = _excluding_label(first[2], selector)
        if label is None:
            first[3].append(node)
        else:
            excluded.append((node, name, label))
    out = {
        name: NodePool(cr.name, name, tag, kernel, selector, tuple(nodes))
        for name, (tag, kernel, selector, nodes) in sorted(pools.items())
    }
    for node, name, label in excluded:
        skipped.append(SkippedNode(node, POOL_EXCLUDED, out[name], label))
    return list(out.values()), sorted(skipped, key=lambda s: s.node)


def pool_image(cr: DriverCR, pool: NodePool) -> ImageRefResult:
    """``GetImagePath`` / ``GetPrecompiledImagePath`` for a pool.

    Unlike the ClusterPolicy, the CR has no environment fallback: repository, image and version
    must all be set, unless repository and version are both empty and image is a full path.
    """
    repo, image, version = cr.repository or "", cr.image or "", cr.version or ""
    if cr.image_unset and repo and version:
        return ImageRefResult(
            None,
            error=f"spec.image is unset, so the API server fills in the CRD's default "
            f"{DEFAULT_CR_IMAGE}, and the operator puts the repository before it (ImagePath): "
            f"the driver pods pull {repo}/{DEFAULT_CR_IMAGE}:{version}..., which does not exist",
        )
    if (repo or version) and not (repo and image and version):
        return ImageRefResult(
            None,
            error="invalid image specification: repository, image and version must all be set "
            f"(repository={repo}, image={image}, version={version})",
        )
    if not (repo or version) and cr.image_unset:
        return _default_image_only(cr, pool)
    if not (repo or version) and not image:
        return ImageRefResult(None, error="empty image path provided in the NVIDIADriver spec")
    return driver_image_reference(
        cr.repository, cr.image, cr.version, pool.kernel, pool.os_tag, cr.use_precompiled
    )


#: the start of `_default_image_only`'s error, which `model/driver_plan.py` gives its own fix
DEFAULT_IMAGE_ONLY = "repository, image and version are all unset"


def _default_image_only(cr: DriverCR, pool: NodePool) -> ImageRefResult:
    """No image field written: the CRD's default image is a full path to ``ImagePath``, and
    ``GetImagePath`` appends ``-<os-tag>`` (precompiled ``-<kernel>-<os-tag>``) to its *name*:
    a reference without a tag, which the runtime pulls as ``:latest``."""
    suffix = f"{pool.kernel}-{pool.os_tag}" if cr.use_precompiled else pool.os_tag
    pulled = f"{DEFAULT_CR_IMAGE}-{suffix}:latest"
    return ImageRefResult(
        None,
        error=f"{DEFAULT_IMAGE_ONLY}: the API server fills in the CRD's default image "
        f"{DEFAULT_CR_IMAGE}, which the operator takes as a full path and appends the "
        f"{'kernel and ' if cr.use_precompiled else ''}OS tag to, so the driver pods pull "
        f"{pulled}, which does not exist",
    )


def driver_tolerations(cr: DriverCR) -> list[dict[str, Any]]:
    """The driver pods' tolerations: the asset's ``nvidia.com/gpu`` one *plus* the CR's
    (``manifests/state-driver/0500_daemonset.yaml``: added, unlike ``daemonsets.tolerations``)."""
    base = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    return [base, *(dict(t) for t in cr.tolerations)]


def cr_upgrade_policy(cr: DriverCR, fallback: Any, operator_version: object = None) -> dict:
    """The upgrade policy that drives this CR's nodes.

    v26.7 reads the CR's own ``spec.upgradePolicy``, with ``GetUpgradePolicyWithDefaults``
    (``autoUpgrade`` true when unset entirely); earlier releases use the ClusterPolicy's
    ``driver.upgradePolicy`` (``fallback``, already with its defaults).
    """
    if not has_owner_assignment(operator_version):
        return fallback if isinstance(fallback, dict) else effective_upgrade_policy(None)
    if not isinstance(cr.upgrade_policy, Mapping):
        policy = effective_upgrade_policy(None)
        policy["autoUpgrade"] = True
        return policy
    return effective_upgrade_policy(cr.upgrade_policy)
