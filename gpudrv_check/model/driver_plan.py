"""The driver the GPU Operator really installs on each GPU node, when the repo configures it.

Without an operator configuration (no ClusterPolicy, chart values or NVIDIADriver CR) the
checker keeps the lab's model: each node's tag comes from its own labels (``model/driver.py``).
With one, the operator decides (docs/operator.md has the facts and their upstream sources):

- **ClusterPolicy** (or the chart values rendering it): one driver for the cluster. The version
  is ``driver.version`` (the node labels say what runs *now*); the OS tag is the one of
  whichever GPU node the operator lists first, for every node (``getGPUNodeOSInfo``).
- **NVIDIADriver** (``driver.useNvidiaDriverCRD``): each GPU node's owning CR
  (``nvidia.nvidiadriver.assign_owners``) renders one DaemonSet per node pool, each with the
  pool's own OS tag and, precompiled, kernel.
- ``driver.enabled: false``: no node's driver is the operator's.

Nodes whose driver the operator does not install (``gpu.deploy.driver=false``,
``gpu.deploy.operands=false``, sandbox workloads ``vm-passthrough``/``vm-vgpu``) carry a reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any

from gpudrv_check.core.finding import MAX_NAMES, Location, names, plural, quoted
from gpudrv_check.core.located import Path
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.core.records import record
from gpudrv_check.core.yaml_scalars import resolve_plain
from gpudrv_check.model.node import Node
from gpudrv_check.nvidia.driver_image import (
    DEPLOY_DRIVER_LABEL,
    DEPLOY_OPERANDS_LABEL,
    GPU_PRESENT_LABEL,
    MISSING_KERNEL_LABEL_ERROR,
    ClusterOsTag,
    NodeDriverFacts,
    OsConflict,
    TagResult,
    chart_driver_version,
    cluster_os_tag,
    driver_branch,
    driver_image_reference,
    operator_release,
    os_tag,
    precompiled_os_conflicts,
    precompiled_tag,
    precompiled_version_problem,
)
from gpudrv_check.nvidia.nvidiadriver import (
    CHART_DEFAULT_CR,
    DEFAULT_IMAGE_ONLY,
    DEFAULT_WITH_SELECTOR,
    MULTIPLE_DEFAULTS,
    NO_OS_TAG,
    OWNER_LABEL,
    POOL_EXCLUDED,
    RESERVED_LABEL,
    DriverCR,
    NodePool,
    SkippedNode,
    assign_owners,
    cr_upgrade_policy,
    has_owner_assignment,
    node_pools,
    parse_driver_cr,
    pool_image,
)
from gpudrv_check.nvidia.operands import (
    CLUSTERPOLICY as CP_SOURCE,
)
from gpudrv_check.nvidia.operands import (
    HELM,
    WORKLOAD_CONTAINER,
    WORKLOAD_VM_VGPU,
    default_workload,
    driver_settings,
    sandbox_workloads_enabled,
    workload_config,
)
from gpudrv_check.read.policy import builtin

LABELS = "labels"  # no operator configuration: the node labels are the whole story
CLUSTERPOLICY = "clusterpolicy"
NVIDIADRIVER = "nvidiadriver"
DISABLED = "disabled"  # driver.enabled: false

# the rules of the problems the plan finds, by name (their ids: read/policy.py `builtin`)
LABEL_MISSING = "driver-tag-label-missing"
OS_CONFLICT = "precompiled-os-conflict"
OS_MIXED = "driver-os-tag-mixed"
VERSION_FORM = "driver-image-spec-invalid"
OWNER_CONFLICT = "nvidiadriver-owner-conflict"
UPGRADE_PENDING = "driver-version-change"

MIXED_OS_FIX = (
    "Run one OS release on every GPU node of the cluster, or let NVIDIADriver CRs install the "
    "driver (driver.useNvidiaDriverCRD: true / driver.nvidiaDriverCRD.enabled: true): they "
    "render one driver DaemonSet per OS (node pool)."
)


@record(frozen=True)
class DriverSource:
    """Where a node's driver spec is written: a config's ``driver`` section or an NVIDIADriver."""

    kind: str  # CLUSTERPOLICY | NVIDIADRIVER
    name: str  # how messages name it
    manifest: Manifest
    base: Path  # the driver spec's path inside the manifest
    embedded: bool = False  # the spec sits in a values string: only its start is known
    cr: DriverCR | None = None
    layers_location: Any = None  # OperatorConfig.location for layered chart values

    def path(self, *key: str) -> Path:
        return self.base if self.embedded else (*self.base, *key)

    def location(self, *key: str) -> Location:
        if self.layers_location is not None:
            return self.layers_location(("driver", *key))
        return self.manifest.location(self.path(*key))


@record(frozen=True)
class NodeDriver:
    """What the operator installs on one GPU node."""

    node: Node
    managed: bool
    reason: str = ""  # why the operator installs no driver here
    source: DriverSource | None = None
    result: TagResult = TagResult(None)  # <version>-<kernel>-<os-tag>, the matrix row's form
    matrix_key: tuple[str, str, str] | None = None
    reference: str | None = None  # the full image reference, when the registry is known
    version: str | None = None  # the version the spec installs; None: the labels' branch
    current: str | None = None  # the driver the labels say runs now
    current_branch: str | None = None
    pool: NodePool | None = None
    left_out_of: NodePool | None = None  # the pool of its name, whose selector excludes it
    other_os_tags: tuple[str, ...] = ()  # ClusterPolicy with mixed OS: tags it may get instead
    upgrade_policy: dict | None = None

    @property
    def next_branch(self) -> str | None:
        return driver_branch(self.version) if self.version else self.current_branch

    @property
    def upgrades(self) -> bool:
        """The spec installs another branch than the labels say runs now."""
        return bool(
            self.version and self.current_branch and self.next_branch != self.current_branch
        )

    @property
    def changes(self) -> bool:
        """The spec installs another driver than the labels say runs now: another branch, or
        within the branch another full version when both are full (a branch-only spec or label
        cannot tell a change inside the branch)."""
        if self.upgrades:
            return True
        spec, now = self.version or "", self.current or ""
        return "." in spec and "." in now and spec != now


@record(frozen=True)
class DriverProblem:
    """A finding the plan makes: rule id, the object and key it is about, text."""

    rule: str
    about: Manifest | Node
    path: Path
    location: Location
    message: str
    hint: str | None = None


@record
class DriverPlan:
    mode: str
    nodes: dict[str, NodeDriver] = field(default_factory=dict)  # GPU node name -> plan
    problems: list[DriverProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    pools: list[tuple[DriverSource, NodePool, str | None]] = field(default_factory=list)
    cluster_os: ClusterOsTag | None = None
    precompiled: bool = False

    def of_rule(self, rule: str) -> list[DriverProblem]:
        return [p for p in self.problems if p.rule == rule]


# --- building the plan -------------------------------------------------------------------------


def driver_plan(repo: Any) -> DriverPlan:
    """The repo's driver plan (computed once per run)."""
    if "driver_plan" not in repo.extras:
        repo.extras["driver_plan"] = _build(repo)
    return repo.extras["driver_plan"]


def nvidiadriver_manifests(manifests: list[Manifest]) -> list[Manifest]:
    return [
        m
        for m in manifests
        if m.kind == "NVIDIADriver" and m.api_version.split("/", 1)[0] == "nvidia.com" and m.name
    ]


def _build(repo: Any) -> DriverPlan:
    from gpudrv_check.model.driver import operator_version

    config = repo.operator
    crs = nvidiadriver_manifests(repo.manifests)
    if config is None and not crs:
        return DriverPlan(LABELS)
    version = operator_version(repo)
    if config is not None:
        source = CP_SOURCE if config.source == "clusterpolicy" else HELM
        settings = driver_settings(config.values, source)
        # the NVIDIADriver controller checks useNvidiaDriverCRD only, not driver.enabled
        # (nvidiadriver_controller.go Reconcile): with it the CRs install drivers either way
        crd = settings.use_nvidia_driver_crd
        if not settings.enabled and not (crd and (crs or _chart_default_cr(config, version))):
            return _disabled_plan(repo, config)
        if not crd:
            return _cluster_policy_plan(repo, config, settings, version)
    return _nvidiadriver_plan(repo, config, crs, version)


def _disabled_plan(repo: Any, config: Any) -> DriverPlan:
    plan = DriverPlan(DISABLED)
    for node in _gpu_nodes(repo):
        plan.nodes[node.name] = NodeDriver(
            node, False, f"driver.enabled is false in the {config.describe()}"
        )
    return plan


def _gpu_nodes(repo: Any) -> list[Node]:
    return sorted(repo.gpu_nodes, key=lambda n: n.name)


#: an NVIDIADriver of this driverType is the vGPU host manager: its DaemonSet selects
#: VGPU_MANAGER_LABEL instead of gpu.deploy.driver (manifests/state-driver/0500_daemonset.yaml)
VGPU_HOST_MANAGER = "vgpu-host-manager"
VGPU_MANAGER_LABEL = "nvidia.com/gpu.deploy.vgpu-manager"


def _unmanaged_reason(
    node: Node, sandbox: bool, default: str, version: object, driver_type: str = "gpu"
) -> str:
    """Why the operator renders no driver pod for the node ('' when it does)."""
    labels = node.labels
    if labels.get(DEPLOY_OPERANDS_LABEL) == "false":
        return f"{DEPLOY_OPERANDS_LABEL}=false: the operator removes every operand from it"
    workload = workload_config(labels, sandbox, default)
    if driver_type == VGPU_HOST_MANAGER:
        return _vgpu_host_manager_reason(labels, workload)
    if workload != WORKLOAD_CONTAINER:
        return (
            f"sandbox workload {workload}: the operator deploys no driver container there "
            "(vfio-manager or the vGPU manager instead)"
        )
    value = labels.get(DEPLOY_DRIVER_LABEL)
    if value == "false":
        return f"{DEPLOY_DRIVER_LABEL}=false: the driver is pre-installed on the host"
    release = operator_release(version)
    if value == "" and release is not None and release < (26, 7):
        # v26.7 treats an empty state label as absent and sets it to "true" (addGPUStateLabels)
        return f'{DEPLOY_DRIVER_LABEL} is empty: the driver DaemonSet selects only "true"'
    return ""


def _vgpu_host_manager_reason(labels: Mapping[str, str], workload: str) -> str:
    """A vgpu-host-manager CR's pods run where the operator sets gpu.deploy.vgpu-manager: on
    vm-vgpu nodes (gpuStateLabels), unless an admin's "false" stays."""
    if workload != WORKLOAD_VM_VGPU:
        return (
            f"its NVIDIADriver is of driverType {VGPU_HOST_MANAGER}, whose DaemonSet selects "
            f"{VGPU_MANAGER_LABEL}=true, which the operator sets only on {WORKLOAD_VM_VGPU} nodes "
            f"(this one is {workload})"
        )
    if labels.get(VGPU_MANAGER_LABEL) == "false":
        return f"{VGPU_MANAGER_LABEL}=false: the vGPU manager is kept off the node"
    return ""


def _facts(repo: Any, node: Node) -> NodeDriverFacts:
    from gpudrv_check.model.driver import node_facts

    return node_facts(node, repo)


def _current(facts: Any) -> str | None:
    return facts.driver_version or facts.driver_major


def _source_of_config(config: Any) -> DriverSource:
    base = (*config.values_path, "driver")
    located = config.location if config.layers else None
    from gpudrv_check.model.operands import config_name

    return DriverSource(
        CLUSTERPOLICY,
        config_name(config),
        config.manifest,
        tuple(config.values_path) if config.embedded else base,
        config.embedded,
        layers_location=located,
    )


def _tag_for(
    repo: Any,
    node: Node,
    spec_version: str | None,
    precompiled: bool,
    ostag: str | None,
) -> tuple[TagResult, tuple[str, str, str] | None]:
    """The matrix-form tag and row for a node: the spec's version (or the labels' branch)."""
    from gpudrv_check.model.driver import label_keys

    keys = label_keys(repo.config)
    facts = _facts(repo, node)
    part = spec_version if precompiled else driver_branch(spec_version)
    missing = []
    if part is None:
        part = facts.driver_major
        if part is None:
            missing.append(str(tuple(keys["driver_major"])[0]))
    # the kernel is in the image only when precompiled; else only the matrix row needs it
    need_kernel = precompiled or repo.matrix is not None
    if facts.kernel is None and need_kernel:
        missing.append(str(keys["kernel"]))
    if facts.os_id is None:
        missing.append(str(keys["os_id"]))
    if facts.os_version_id is None:
        missing.append(str(keys["os_version_id"]))
    if missing:
        return TagResult(None, missing=tuple(missing)), None
    if ostag is None:
        error = "the OS tag cannot be formed from the node's OS labels"
        return TagResult(None, error=error, no_os_tag=True), None
    if facts.kernel is None:
        return TagResult(f"{part}-{ostag}"), None  # <version>-<os-tag>: no matrix to look in
    tag = precompiled_tag(part, facts.kernel, ostag)
    if tag is None:
        return TagResult(None, error=f"'{part}-{facts.kernel}-{ostag}' is not a valid tag"), None
    return TagResult(tag), (str(part), str(facts.kernel), ostag)


def _reference(
    repository: str | None, image: str | None, version: str | None, kernel, ostag, precompiled
) -> str | None:
    if not version and not (image and not repository):
        return None  # the version comes from the operator's environment or the chart default
    if version and not (repository and image):
        return None  # no image path the operator can pull (GPU014)
    result = driver_image_reference(repository, image, version, kernel, ostag, precompiled)
    return result.reference


def _cluster_policy_plan(repo: Any, config: Any, settings: Any, version: object) -> DriverPlan:
    plan = DriverPlan(CLUSTERPOLICY, precompiled=settings.use_precompiled)
    source = _source_of_config(config)
    values = config.values
    cp_source = CP_SOURCE if config.source == "clusterpolicy" else HELM
    sandbox = sandbox_workloads_enabled(values, cp_source)
    default = default_workload(values)
    gpu = _gpu_nodes(repo)
    facts = {n.name: _facts(repo, n) for n in gpu}
    plan.cluster_os = cluster_os_tag(((n.name, _os_labels(facts[n.name])) for n in gpu), version)
    spec_version = settings.version
    for node in gpu:
        f = facts[node.name]
        reason = _unmanaged_reason(node, sandbox, default, version)
        if reason:
            plan.nodes[node.name] = NodeDriver(node, False, reason, source, current=_current(f))
            continue
        ostag = os_tag(f.os_id, f.os_version_id, version)
        result, key = _tag_for(repo, node, spec_version, settings.use_precompiled, ostag)
        others = (
            tuple(t for t in plan.cluster_os.by_tag if t != ostag) if plan.cluster_os.mixed else ()
        )
        reference = None
        if key is not None:
            repository = _explicit(config, "repository")
            # with a registry but no version, the matrix row's branch is the precompiled tag
            guess = key[0] if settings.use_precompiled and repository else None
            reference = _reference(
                repository,
                settings.image,
                spec_version or guess,
                key[1],
                ostag,
                settings.use_precompiled,
            )
        plan.nodes[node.name] = NodeDriver(
            node,
            True,
            source=source,
            result=result,
            matrix_key=key,
            reference=reference,
            version=spec_version if driver_branch(spec_version) else None,
            current=_current(f),
            current_branch=f.driver_major,
            other_os_tags=others,
            upgrade_policy=settings.upgrade_policy,
        )
    chart = _chart_version(config, version) if config.source != "clusterpolicy" else None
    if config.deleted("driver", "version"):
        chart = None  # Helm drops the null: the template renders no version, values.yaml's none
    if chart and config.values_unknown:
        chart = ""  # driver.version may be set where the repo does not show: not the default
    _cluster_policy_problems(repo, plan, source, settings, version, chart)
    return plan


def _chart_version(config: Any, version: object) -> str:
    """The chart's default ``driver.version`` (values.yaml) the values fall back to: of the
    chart version written (with its patch), else of the operator version, else the newest."""
    for written in (config.chart_version, version):
        text = written.strip().lstrip("~^=> ") if isinstance(written, str) else None
        found = chart_driver_version(text)
        if found is not None:
            return found
    return chart_driver_version("v26.7.0") or ""


def _explicit(config: Any, key: str) -> str | None:
    """``driver.<key>`` as written (not the chart default: a default registry is a guess)."""
    value = config.get("driver", key)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _os_labels(facts: Any) -> Mapping[str, object]:
    from gpudrv_check.nvidia.driver_image import OS_RELEASE_ID_LABEL, OS_VERSION_ID_LABEL

    return {OS_RELEASE_ID_LABEL: facts.os_id, OS_VERSION_ID_LABEL: facts.os_version_id}


def _managed(plan: DriverPlan) -> list[NodeDriver]:
    return [entry for entry in plan.nodes.values() if entry.managed]


def _cluster_policy_problems(
    repo: Any,
    plan: DriverPlan,
    source: DriverSource,
    settings: Any,
    version: object,
    chart: str | None = None,
) -> None:
    managed = _managed(plan)
    if not managed:
        return
    cluster = plan.cluster_os
    if cluster is not None and cluster.mixed:
        groups = _os_groups(cluster)
        plan.problems.append(
            DriverProblem(
                builtin(OS_MIXED).id,
                source.manifest,
                source.path(),
                source.location(),
                f"the {source.name} builds every driver image with ONE OS tag, read from "
                "whichever GPU node the operator lists first (its node cache has no order), but "
                f"the GPU nodes run {len(cluster.by_tag)} OS releases: {groups}; the nodes of "
                "the other releases get a driver image built for the wrong OS",
                MIXED_OS_FIX,
            )
        )
    if chart is None:  # the chart's values.yaml fills in repository, image and version
        _image_spec_problem(plan, source, settings, version)
    if settings.use_precompiled:
        why = precompiled_version_problem(settings.version)
        if why is None and settings.version is None and chart:
            _chart_version_problem(plan, source, chart, "ClusterPolicy")
        if why is not None:
            plan.problems.append(
                DriverProblem(
                    builtin(VERSION_FORM).id,
                    source.manifest,
                    source.path("version"),
                    source.location("version"),
                    f"driver.usePrecompiled is true and driver.version is {settings.version!r}: "
                    f"{why}",
                    _precompiled_version_fix(settings.version),
                )
            )
        _kernel_os_conflicts(repo, plan, source)
    if not plan.of_rule(builtin(OS_CONFLICT).id) and not plan.of_rule(builtin(LABEL_MISSING).id):
        # while `init` fails no driver DaemonSet is rendered, no node moves
        _upgrade_problem(plan, source, managed, settings.version)


#: v26.7 ImagePath refuses a spec with some of repository, image, version (clusterpolicy_types.go)
IMAGE_SPEC_CHECKED_SINCE: tuple[int, int] = (26, 7)
_EXAMPLES = {
    "repository": "`repository: nvcr.io/nvidia`",
    "image": "`image: driver`",
    "version": '`version: "550.90.07"`',
}


def _image_spec_problem(
    plan: DriverPlan, source: DriverSource, settings: Any, version: object
) -> None:
    """GPU014 for a ClusterPolicy that sets some of repository, image and version but not all:
    the CRD has no default for them, and the operator's DRIVER_IMAGE applies only when
    repository and version are both unset (``imagePath``, ``resolveDriverTag``)."""
    fields = {
        "repository": settings.repository,
        "image": settings.image,
        "version": settings.version,
    }
    if not (settings.repository or settings.version) or all(fields.values()):
        return
    missing = [key for key, value in fields.items() if not value]
    written = [key for key, value in fields.items() if value]
    shown = ", ".join(f"{key}={value or ''}" for key, value in fields.items())
    release = operator_release(version)
    if not settings.use_precompiled and (release is None or release >= IMAGE_SPEC_CHECKED_SINCE):
        outcome = (
            'the operator fails the driver state with "invalid image specification: repository, '
            f'image and version must all be set ({shown})" and renders no driver DaemonSet'
        )
    else:
        # before v26.7, and precompiled in every release, the parts are joined as they are
        repo, image, tag = (value or "" for value in fields.values())
        tail = "-<kernel>-<os-tag>" if settings.use_precompiled else "-<os-tag>"
        outcome = (
            f"the operator joins them as they are, into {repo}/{image}:{tag}{tail}, which is no "
            "valid image reference: the driver pods fail with InvalidImageName"
        )
    plan.problems.append(
        DriverProblem(
            builtin(VERSION_FORM).id,
            source.manifest,
            source.path(),
            source.location(),
            f"the {source.name} sets driver.{' and driver.'.join(written)} but not "
            f"driver.{' or driver.'.join(missing)}: {outcome}",
            f"Set driver.{', driver.'.join(missing)} in the {source.name} (e.g. "
            f"{', '.join(_EXAMPLES[key] for key in missing)}; the CRD has no default), or unset "
            "repository and version to use the operator's DRIVER_IMAGE.",
        )
    )


def _chart_version_problem(plan: DriverPlan, source: DriverSource, chart: str, into: str) -> None:
    """GPU014 for precompiled chart values without ``driver.version``: the chart's values.yaml
    fills in a full version (templates/clusterpolicy.yaml, nvidiadriver.yaml render it)."""
    plan.problems.append(
        DriverProblem(
            builtin(VERSION_FORM).id,
            source.manifest,
            source.path("usePrecompiled"),
            source.location("usePrecompiled"),
            "driver.usePrecompiled is true and driver.version is unset, so the chart renders "
            f"its default {chart} (values.yaml) into the {into}: "
            f"{precompiled_version_problem(chart)}",
            f'Set driver.version to the driver branch (`"{driver_branch(chart)}"` for the '
            "chart's default) in the values, or turn usePrecompiled off to run the chart's "
            "full-version driver image that compiles its module on the node.",
        )
    )


def _os_groups(cluster: ClusterOsTag) -> str:
    """GPU013's `tag (nodes)` groups. The first MAX_NAMES tags are written out with the first
    MAX_NAMES nodes of each, the rest counted (a tag's every node made a message longer than a
    finding holds, cut before it said what the operator does: core/finding.py MAX_MESSAGE)."""
    tags = list(cluster.by_tag.items())
    groups = [f"{tag} ({names(list(nodes[:MAX_NAMES]), total=len(nodes))})" for tag, nodes in tags]
    more = len(tags) - MAX_NAMES
    if more <= 0:
        return "; ".join(groups)
    return "; ".join([*groups[:MAX_NAMES], f"and {plural(more, 'more release')}"])


def os_conflict_others(conflict: OsConflict, releases: Mapping[str, str]) -> dict[str, str]:
    """GPU003: for each OS release of ``conflict`` (``releases``: node name -> its release),
    the nodes of the conflict on another release as a message lists them, `name (release)`:
    the first MAX_NAMES by name, the rest counted (every one of them made a message longer than
    a finding holds). The text depends on the release alone, so it is made once per release."""
    out: dict[str, str] = {}
    for name in conflict.nodes:
        mine = releases[name]
        if mine in out:
            continue
        others = [other for other in conflict.nodes if releases[other] != mine]
        shown = [f"{other} ({releases[other]})" for other in others[:MAX_NAMES]]
        out[mine] = names(shown, total=len(others))
    return out


#: how GPU003 names the release of a node without OS labels (the operator reads "")
NO_RELEASE = "no OS release labels"


def _kernel_os_conflicts(
    repo: Any, plan: DriverPlan, source: DriverSource, crd: bool = False
) -> None:
    """GPU003 / GPU002: ``getKernelVersionsMap`` lists every GPU node (``gpu.present=true``,
    managed or not: pre-installed, operands off, sandbox) and fails ``init`` on a node without
    the kernel label, or on one kernel with two ``ID``+``VERSION_ID`` (missing labels read as
    ``""``): the whole ClusterPolicy stops reconciling."""
    from gpudrv_check.model.driver import label_keys

    keys = label_keys(repo.config)
    triples = []
    for name, entry in sorted(plan.nodes.items()):
        f = _facts(repo, entry.node)
        triples.append((name, f.kernel, f"{f.os_id or ''}{f.os_version_id or ''}"))
        if f.kernel is None and not entry.managed:
            # a managed node's missing kernel is GPU002 already (its tag needs it)
            _no_kernel_problem(plan, source, entry, str(keys["kernel"]))
    releases = {t[0]: t[2] or NO_RELEASE for t in triples}
    for conflict in precompiled_os_conflicts(triples):
        others = os_conflict_others(conflict, releases)
        for name in conflict.nodes:
            node = plan.nodes[name].node
            mine = releases[name]
            key = str(keys["os_version_id"])
            plan.problems.append(
                DriverProblem(
                    builtin(OS_CONFLICT).id,
                    node,
                    node.label_path(key),
                    node.label_location(key),
                    f"GPU node {name} runs kernel {conflict.kernel} "
                    f"{'without OS release labels' if mine == NO_RELEASE else 'on ' + mine}, like "
                    f"{others[mine]} on another OS release; with precompiled drivers the "
                    f'operator fails "{conflict.message}" before any state, so the whole '
                    f"{source.name} stops reconciling",
                    _os_conflict_fix([n for n in conflict.nodes if releases[n] == NO_RELEASE], crd),
                )
            )


def _os_conflict_fix(unlabelled: list[str], crd: bool = False) -> str:
    if crd:
        return (
            "The NVIDIADriver CRs decide precompiled per CR: set driver.usePrecompiled: false "
            "in the ClusterPolicy (chart values before v26.7.0 render it there even with "
            "nvidiaDriverCRD.enabled; v26.7.0 leaves it out), "
            + (
                f"or give {names(unlabelled)} the OS release labels."
                if unlabelled
                else "or run one OS release on the nodes of this kernel."
            )
        )
    if unlabelled:
        return (
            f"Give {names(unlabelled)} the OS release labels (Node Feature Discovery writes them; "
            "is it deployed there?): the operator compares every GPU node's, also where the "
            "driver is pre-installed. Or set driver.usePrecompiled: false."
        )
    # usePrecompiled is one switch for every node of a ClusterPolicy, and getKernelVersionsMap
    # lists every GPU node (managed or not)
    return (
        "Run one OS release on the nodes of this kernel, or set driver.usePrecompiled: false "
        "(every node then builds its module), or move to NVIDIADriver CRs "
        "(driver.useNvidiaDriverCRD: true), which pool nodes by OS release and kernel."
    )


def _no_kernel_problem(plan: DriverPlan, source: DriverSource, entry: NodeDriver, key: str) -> None:
    """GPU002 for a GPU node whose driver is not the operator's but whose kernel label
    getKernelVersionsMap still needs (apierrors.NewNotFound for the label)."""
    node = entry.node
    plan.problems.append(
        DriverProblem(
            builtin(LABEL_MISSING).id,
            node,
            node.labels_path,
            node.label_location(key),
            f"GPU node {node.name} has no {key} label; its driver is not the operator's "
            f"({entry.reason}), but with precompiled drivers the operator reads the kernel of "
            f'every GPU node and fails "{MISSING_KERNEL_LABEL_ERROR}" before any state, so the '
            f"whole {source.name} stops reconciling",
            "Make sure Node Feature Discovery runs on the node (or add the label to the inventory "
            "export); or set driver.usePrecompiled: false.",
        )
    )


def _upgrade_problem(
    plan: DriverPlan, source: DriverSource, entries: list[NodeDriver], version: str | None
) -> None:
    """GPU016: the nodes whose driver the next reconcile replaces. The operator renders the
    DaemonSet with the spec's version: any change of its image, within one branch too, puts
    every node on it as its driver pod is replaced (the upgrade controller, or by hand)."""
    moving = [e for e in entries if e.changes]
    if not moving:
        return
    # the first few, then a count: every node of a large pool made a message longer than a
    # finding holds, cut before it said when they move (core/finding.py MAX_MESSAGE)
    nodes = names(
        [f"{e.node.name} (runs {e.current})" for e in moving[:MAX_NAMES]], total=len(moving)
    )
    branch = driver_branch(version)
    other = [e.node.name for e in moving if e.upgrades]
    if len(other) == len(moving):
        verb = "moves" if len(moving) == 1 else "move"
        when = f"which {verb} to branch {branch} when the driver pod is replaced"
    else:
        # the same branch, another version: the pods are replaced all the same
        also = f" (and moving {names(other)} to branch {branch})" if other else ""
        when = f"whose driver restarts on it when the driver pod is replaced{also}"
    what = "NVIDIADriver " + source.name if source.kind == NVIDIADRIVER else source.name
    plan.problems.append(
        DriverProblem(
            builtin(UPGRADE_PENDING).id,
            source.manifest,
            source.path("version"),
            source.location("version"),
            f"the {what} installs driver {version} (branch {branch}): the next reconcile renders "
            f"it for {nodes}, {when}",
        )
    )


# --- NVIDIADriver ------------------------------------------------------------------------------


def _chart_default_cr(config: Any, version: object) -> tuple[DriverCR, DriverSource] | None:
    """The chart's ``default`` CR (templates/nvidiadriver.yaml) from HelmRelease values."""
    if config is None or config.source == "clusterpolicy":
        return None
    crd = config.get("driver", "nvidiaDriverCRD")
    if not isinstance(crd, dict) or crd.get("enabled") is not True:
        return None
    if crd.get("deployDefaultCR") is False:
        return None
    driver = config.get("driver") if isinstance(config.get("driver"), dict) else {}
    if driver.get("enabled") is False and _chart_needs_driver_enabled(config, version):
        return None
    spec: dict[str, Any] = {
        "repository": driver.get("repository") or "nvcr.io/nvidia",
        "image": driver.get("image") or "driver",
        "version": driver.get("version"),
        "usePrecompiled": driver.get("usePrecompiled") is True,
        "driverType": crd.get("driverType") or "gpu",
        "tolerations": config.get("daemonsets", "tolerations"),
    }
    if has_owner_assignment(version):
        spec["default"] = True
        spec["upgradePolicy"] = driver.get("upgradePolicy")
    elif isinstance(crd.get("nodeSelector"), dict) and crd.get("nodeSelector"):
        spec["nodeSelector"] = crd.get("nodeSelector")
    base = _source_of_config(config)
    source = DriverSource(
        NVIDIADRIVER,
        f"{CHART_DEFAULT_CR} (the chart's default CR, from the {base.name})",
        base.manifest,
        base.base,
        base.embedded,
        layers_location=base.layers_location,
    )
    return parse_driver_cr(CHART_DEFAULT_CR, spec), source


#: the chart renders its default CR only with driver.enabled from v25.10.1 (nvidiadriver.yaml)
DEFAULT_CR_NEEDS_DRIVER_ENABLED_SINCE = (25, 10, 1)


def _chart_needs_driver_enabled(config: Any, version: object) -> bool:
    """Whether the chart's templates/nvidiadriver.yaml has its `if .Values.driver.enabled`
    guard: from v25.10.1 (v25.10.0 renders the default CR whatever driver.enabled says). The
    chart version written decides, else the operator version; unknown = newest."""
    for written in (config.chart_version, version):
        release = _release_with_patch(written)
        if release is not None:
            return release >= DEFAULT_CR_NEEDS_DRIVER_ENABLED_SINCE
    return True


def _release_with_patch(version: object) -> tuple[int, int, int] | None:
    text = version.strip().lstrip("~^=> ") if isinstance(version, str) else None
    release = operator_release(text)
    if release is None or text is None:
        return None
    parts = text.lstrip("v").split(".")
    patch = parts[2].split("-")[0] if len(parts) > 2 else "0"
    return (*release, int(patch) if patch.isdigit() else 0)


def _cr_sources(
    config: Any, crs: list[Manifest], version: object
) -> list[tuple[DriverCR, DriverSource]]:
    out = []
    for m in crs:
        cr = parse_driver_cr(str(m.name), m.get("spec"))
        out.append((cr, DriverSource(NVIDIADRIVER, str(m.name), m, ("spec",), cr=cr)))
    chart = _chart_default_cr(config, version)
    if chart is not None and all(cr.name != CHART_DEFAULT_CR for cr, _ in out):
        out.append(chart)
    return sorted(out, key=lambda pair: pair[0].name)


#: the chart quotes `driver.version` in its default NVIDIADriver from v26.7.0 (nvidiadriver.yaml
#: `version: {{ .Values.driver.version | quote }}`, NVIDIA/gpu-operator 9202ddcf); before it
#: wrote the value bare, so a branch such as "550" rendered as the YAML integer 550
DEFAULT_CR_VERSION_QUOTED_SINCE = (26, 7, 0)


def _rejected_default_cr(plan: DriverPlan, config: Any, version: object) -> bool:
    """Whether the chart's default NVIDIADriver is refused by the API server: before v26.7.0
    the chart writes `driver.version` unquoted, and a version YAML reads as a number (a
    branch, "550") makes `spec.version` no string, which the CRD requires (`type: string`).
    The release then fails on that object and no default CR exists: GPU014, at the version."""
    value = config.get("driver", "version") if config is not None else None
    if isinstance(value, bool) or value is None:
        return False
    text = value if isinstance(value, str) else str(value)
    typed = resolve_plain(text) if isinstance(value, str) and text else value
    if isinstance(typed, bool) or not isinstance(typed, (int, float)):
        return False
    for written in (config.chart_version, version):
        release = _release_with_patch(written)
        if release is not None:
            if release >= DEFAULT_CR_VERSION_QUOTED_SINCE:
                return False
            break
    else:
        return False  # unknown: the newest chart, which quotes it
    base = _source_of_config(config)
    plan.problems.append(
        DriverProblem(
            builtin(VERSION_FORM).id,
            base.manifest,
            base.path("version"),
            config.location(("driver", "version")),
            f"driver.version {quoted(text)} is written bare into the chart's default "
            f"NVIDIADriver (templates/nvidiadriver.yaml before v26.7.0), where YAML reads it as "
            f"the number {typed}: the API server refuses the CR (spec.version must be a string), "
            "the Helm release fails on it, and no default NVIDIADriver installs a driver",
            "Set driver.version to a full version (e.g. `550.90.07`), which YAML reads as text, "
            "or upgrade the chart to v26.7.0 or later, which quotes it; or write the "
            "NVIDIADriver CR yourself (deployDefaultCR: false) with a quoted version.",
        )
    )
    return True


def _nvidiadriver_plan(repo: Any, config: Any, crs: list[Manifest], version: object) -> DriverPlan:
    plan = DriverPlan(NVIDIADRIVER)
    sources = _cr_sources(config, crs, version)
    if any(src.cr is None for _, src in sources) and _rejected_default_cr(plan, config, version):
        sources = [(cr, src) for cr, src in sources if src.cr is not None]
    if config is None:
        plan.notes.append(
            "NVIDIADriver CRs are in the repo but no ClusterPolicy or chart values: they are "
            "modelled as if driver.useNvidiaDriverCRD were true"
        )
    values = config.values if config is not None else {}
    cp_source = CP_SOURCE if config is None or config.source == "clusterpolicy" else HELM
    sandbox = sandbox_workloads_enabled(values, cp_source)
    default = default_workload(values)
    fallback = driver_settings(values, cp_source).upgrade_policy
    gpu = _gpu_nodes(repo)
    # gpu.present as the operator keeps it: these are the nodes it lists as GPU nodes
    labels = {n.name: {**n.labels, GPU_PRESENT_LABEL: "true"} for n in gpu}
    ownership = assign_owners([cr for cr, _ in sources], labels, version, _all_labels(repo))
    by_name = dict((cr.name, (cr, src)) for cr, src in sources)
    for problem in ownership.problems:
        cr, src = by_name[problem.driver]
        plan.problems.append(
            DriverProblem(
                builtin(OWNER_CONFLICT).id,
                src.manifest,
                src.path(*problem.key) if src.cr is not None else src.path("nvidiaDriverCRD"),
                _cr_location(src, problem.key),
                f"NVIDIADriver {cr.name}: {problem.message}; "
                + (
                    "the operator assigns no NVIDIADriver owner while this stands, so no CR "
                    "installs a driver on any node"
                    if has_owner_assignment(version)
                    else "while this stands no CR installs a driver on any node"
                ),
                _owner_fix(problem.kind, src.cr is None, version),
            )
        )
    pool_of: _PoolOf = {}
    for cr, src in sources:
        owned = {n.name: labels[n.name] for n in gpu if ownership.owner.get(n.name) == cr.name}
        pools, skipped = node_pools(cr, owned, version)
        image_errors = set()
        for pool in pools:
            image = pool_image(cr, pool)
            if image.error and not (src.cr is None and cr.version is None):
                image_errors.add(image.error)  # the chart default's version is the chart's own
            plan.pools.append((src, pool, image.reference))
            for name in pool.nodes:
                pool_of[name] = (pool, cr, src, None)
        for skip in skipped:
            pool_of[skip.node] = (None, cr, src, skip)
        _cr_version_problems(plan, cr, src, sorted(image_errors))
        if (
            src.cr is None
            and cr.use_precompiled
            and cr.version is None
            and config is not None
            and not config.values_unknown
        ):
            chart = _chart_version(config, version)
            _chart_version_problem(plan, src, chart, "default NVIDIADriver")
    for node in gpu:
        plan.nodes[node.name] = _cr_node(
            repo, node, ownership.owner.get(node.name), pool_of, sandbox, default, version, fallback
        )
    for cr, src in sources:
        entries = [e for e in plan.nodes.values() if e.managed and e.source is src]
        _upgrade_problem(plan, src, entries, cr.version)
    if config is not None and _init_checks_precompiled(config, version):
        _kernel_os_conflicts(repo, plan, _source_of_config(config), crd=True)
    return plan


#: from v26.7.0 the chart leaves `usePrecompiled` out of the ClusterPolicy when
#: nvidiaDriverCRD.enabled (templates/clusterpolicy.yaml `if not .Values.driver.nvidiaDriverCRD
#: .enabled` around it); before, it renders it whatever the CRD setting
PRECOMPILED_LEFT_OUT_WITH_CRD_SINCE = (26, 7, 0)


def _init_checks_precompiled(config: Any, version: object) -> bool:
    """Whether the ClusterPolicy the operator reads has `driver.enabled` (unset: true) and
    `usePrecompiled: true` while the NVIDIADriver CRs install the drivers: state_manager.go
    `init` checks `Driver.IsEnabled() && Driver.UsePrecompiledDrivers()` whatever
    useNvidiaDriverCRD says, and then `getKernelVersionsMap` over every GPU node."""
    driver = config.get("driver") if isinstance(config.get("driver"), dict) else {}
    if driver.get("usePrecompiled") is not True or driver.get("enabled") is False:
        return False
    if config.source == "clusterpolicy":
        return True
    for written in (config.chart_version, version):
        release = _release_with_patch(written)
        if release is not None:
            return release < PRECOMPILED_LEFT_OUT_WITH_CRD_SINCE
    return False  # unknown: the newest chart, which leaves it out


def _all_labels(repo: Any) -> dict[str, dict[str, str]]:
    """Every node's labels, ``gpu.present`` as the operator keeps it on GPU nodes and resets it
    on a node without GPU PCI labels (``labelGPUNodes``)."""
    out = {}
    for node in repo.nodes:
        labels = dict(node.labels)
        if node.is_gpu:
            labels[GPU_PRESENT_LABEL] = "true"
        elif labels.get(GPU_PRESENT_LABEL) == "true":
            labels[GPU_PRESENT_LABEL] = "false"
        out[node.name] = labels
    return out


def _owner_fix(kind: str, chart_default: bool, version: object) -> str:
    """The fix of one owner-assignment error (nvidia/nvidiadriver.py `assign_owners`), as the
    operator release reads the CRs (`spec.default` and the owner label came with v26.7)."""
    if kind == MULTIPLE_DEFAULTS and chart_default:
        return (
            "Set driver.nvidiaDriverCRD.deployDefaultCR: false in the chart values, or drop "
            "`default: true` from your own CR: one CR may be the default."
        )
    if kind == MULTIPLE_DEFAULTS:
        return "Keep `default: true` on one CR only: it takes the nodes no other CR selects."
    if kind == DEFAULT_WITH_SELECTOR:
        return (
            "Drop the nodeSelector of the default CR (it takes every GPU node no other CR "
            "selects), or make it a CR that is not the default."
        )
    if kind == RESERVED_LABEL:
        return (
            f"Select on another label: the operator writes {OWNER_LABEL} itself, naming the CR "
            "that owns the node."
        )
    if has_owner_assignment(version):
        return (
            "Make the nodeSelectors of the non-default CRs disjoint: a node may match one of "
            "them at most (the default CR takes the nodes none matches)."
        )
    return (
        "Make the nodeSelectors of the CRs disjoint: this release gives each CR every node its "
        "selector matches (no default CR before v26.7), and a node matched twice, GPU node or "
        "not, stops them all."
    )


def _precompiled_version_fix(version: object) -> str:
    """The fix of a precompiled driver version that names no built image."""
    branch = driver_branch(version)
    to = f'the driver branch (`"{branch}"`)' if branch else 'a driver branch (e.g. `"550"`)'
    return (
        f"Set the version to {to}, or turn usePrecompiled off to run the full-version driver "
        "image that compiles its module on the node."
    )


def _cr_version_problems(
    plan: DriverPlan, cr: DriverCR, src: DriverSource, image_errors: list[str]
) -> None:
    why = precompiled_version_problem(cr.version) if cr.use_precompiled else None
    hint: str | None = None
    if why is not None:
        image_errors = [f"usePrecompiled is true and version is {cr.version!r}: {why}"]
        hint = _precompiled_version_fix(cr.version)
    for error in image_errors:
        missing = [f for f in ("repository", "image", "version") if not getattr(cr, f)]
        if cr.image_unset and "spec.image is unset" in error:
            hint = "Set spec.image to the image's name in the repository, e.g. `image: driver`."
        if error.startswith(DEFAULT_IMAGE_ONLY):
            hint = (
                "Set spec.repository, spec.image and spec.version in the NVIDIADriver (e.g. "
                '`repository: nvcr.io/nvidia`, `image: driver`, `version: "550.90.07"`): a CR '
                "has no environment default, only the CRD's image name."
            )
        plan.problems.append(
            DriverProblem(
                builtin(VERSION_FORM).id,
                src.manifest,
                src.path("version"),
                _cr_location(src, ("version",)),
                f"NVIDIADriver {cr.name}: {error}",
                hint
                or (
                    f"Set {', '.join('spec.' + f for f in missing)} in the NVIDIADriver: "
                    "repository, image and version are joined into the image path "
                    "(`<repository>/<image>:<version>...`)."
                    if missing
                    else None
                ),
            )
        )


def _cr_location(src: DriverSource, key: tuple[str, ...]) -> Location:
    if src.cr is None:
        return src.location("nvidiaDriverCRD")
    path = src.path(*key)
    while path and src.manifest.get(*path) is None:
        path = path[:-1]
    return src.manifest.location(path)


_PoolOf = dict[str, tuple["NodePool | None", DriverCR, DriverSource, "SkippedNode | None"]]


def _cr_node(
    repo: Any,
    node: Node,
    owner: str | None,
    pool_of: _PoolOf,
    sandbox: bool,
    default: str,
    version: object,
    fallback: dict,
) -> NodeDriver:
    """One GPU node under NVIDIADriver CRs: its owner's pool, tag and image."""
    f = _facts(repo, node)
    current = _current(f)
    if owner is None:
        return NodeDriver(node, False, "no NVIDIADriver owns it", current=current)
    pool, cr, src, skip = pool_of.get(node.name, (None, None, None, None))
    kind = cr.driver_type if cr is not None else "gpu"
    reason = _unmanaged_reason(node, sandbox, default, version, kind)
    missing = skip.missing_label if skip is not None else None
    policy = cr_upgrade_policy(cr, fallback, version) if cr is not None else None
    if reason or cr is None:
        return NodeDriver(node, False, reason or "no driver pool takes it", src, current=current)
    if skip is not None and skip.pool is not None and missing == POOL_EXCLUDED:
        result = _excluded_result(node, skip.pool, skip.label)
        return NodeDriver(
            node,
            True,
            "",
            src,
            result,
            current=current,
            left_out_of=skip.pool,
            upgrade_policy=policy,
        )
    if pool is None and missing == NO_OS_TAG:
        error = (
            f"operator {version} cannot form an OS tag from ID={quoted(f.os_id)} "
            f"VERSION_ID={quoted(f.os_version_id)}"
        )
        result = TagResult(None, error=error, no_os_tag=True)
        return NodeDriver(node, True, "", src, result, current=current, upgrade_policy=policy)
    if pool is None:
        result = TagResult(None, missing=(missing,) if missing else ())
        return NodeDriver(node, True, "", src, result, current=current, upgrade_policy=policy)
    result, key = _tag_for(repo, node, cr.version, cr.use_precompiled, pool.os_tag)
    image = pool_image(cr, pool)
    return NodeDriver(
        node,
        True,
        source=src,
        result=result,
        matrix_key=key,
        reference=image.reference if key is not None else None,
        version=cr.version if driver_branch(cr.version) else None,
        current=current,
        current_branch=f.driver_major,
        pool=pool,
        upgrade_policy=policy,
    )


def _excluded_result(node: Node, pool: NodePool, label: str) -> TagResult:
    """A node the pool of its name leaves out: its selector reads another value of ``label``."""
    wanted, have = pool.node_selector.get(label), node.labels.get(label)
    error = (
        f"NVIDIADriver {pool.driver}'s pool {pool.name} selects {label}={quoted(wanted)}, the "
        "value of whichever of its nodes the operator lists first (its node cache has no order; "
        f"{pool.nodes[0]} here), and {node.name} has {quoted(have)}: no driver DaemonSet selects "
        f"{node.name} (listed the other way round, {pool.nodes[0]} is the one left out)"
    )
    return TagResult(None, error=error, excluded_by=label)
