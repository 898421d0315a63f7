"""The GPU Operator's driver upgrade controller: which pods it removes, which nodes it admits.

Pure semantics, each function citing the upstream code it reproduces:
- NVIDIA/gpu-operator ``cmd/gpu-operator/main.go``: ``WithPodDeletionEnabled(gpuPodSpecFilter)``
  and ``WithValidationEnabled("app=nvidia-operator-validator")``; ``gpuPodSpecFilter`` selects
  pods whose *containers* (not init containers) name a resource starting ``nvidia.com/gpu`` or
  ``nvidia.com/mig-`` in limits or requests.
- NVIDIA/gpu-operator ``controllers/upgrade_controller.go`` ``Reconcile``: autoUpgrade off or
  ``sandboxWorkloads.enabled`` removes every node's upgrade-state label
  (``removeNodeUpgradeStateLabels``); the drain selector always gets
  ``nvidia.com/gpu-driver-upgrade-drain.skip!=true`` appended.
- NVIDIA/k8s-operator-libs ``pkg/upgrade/common_manager.go`` ``GetTotalManagedNodes``,
  ``GetUpgradesInProgress``, ``GetCurrentUnavailableNodes``, ``GetUpgradesAvailable``;
  ``pkg/upgrade/upgrade_inplace.go`` ``ProcessUpgradeRequiredNodes`` (admission);
  ``pkg/upgrade/upgrade_requestor.go`` (requestor mode: no admission limit of its own).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from gpudrv_check.core.records import record
from gpudrv_check.k8s.intstr import scaled_value, scaling_error

#: main.go: the pods the default flow deletes carry one of these resource-name prefixes
GPU_RESOURCE_PREFIXES = ("nvidia.com/gpu", "nvidia.com/mig-")
#: main.go WithValidationEnabled: the pod validation-required waits for on the node
VALIDATOR_POD_SELECTOR = "app=nvidia-operator-validator"
#: validation_manager.go validationTimeoutSeconds: not Ready this long -> upgrade-failed
VALIDATION_TIMEOUT_SECONDS = 600
#: upgrade_controller.go UpgradeSkipDrainLabelSelector, appended to every drain podSelector
DRAIN_SKIP_SELECTOR = "nvidia.com/gpu-driver-upgrade-drain.skip!=true"
DRAIN_SKIP_LABEL = "nvidia.com/gpu-driver-upgrade-drain.skip"
#: upgrade_controller.go plannedRequeueInterval: a reconcile at least every 2 minutes
REQUEUE_SECONDS = 120
#: ScheduleCheckOnPodCompletion: the pods of these kinds never complete (Running or Pending)
NEVER_COMPLETE_KINDS = frozenset(
    ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController", "DaemonSet")
)
#: pod_manager.go SchedulePodEviction, when the policy has no podDeletion object
POD_DELETION_SPEC_EMPTY = "pod deletion spec should not be empty"

# GetTotalManagedNodes counts these states (node-maintenance-required and
# post-maintenance-required are not among them)
_MANAGED = (
    "",
    "upgrade-done",
    "upgrade-required",
    "cordon-required",
    "wait-for-jobs-required",
    "pod-deletion-required",
    "upgrade-failed",
    "drain-required",
    "pod-restart-required",
    "uncordon-required",
    "validation-required",
)
_NOT_IN_PROGRESS = ("", "upgrade-done", "upgrade-required")


def is_gpu_pod(pod_spec: object) -> bool:
    """gpuPodSpecFilter (main.go): a container asks for an nvidia.com/gpu* or mig- resource."""
    if not isinstance(pod_spec, Mapping):
        return False
    containers = pod_spec.get("containers")
    if not isinstance(containers, list):
        return False
    for container in containers:
        resources = container.get("resources") if isinstance(container, Mapping) else None
        if not isinstance(resources, Mapping):
            continue
        for section in ("limits", "requests"):
            amounts = resources.get(section)
            if isinstance(amounts, Mapping) and any(
                isinstance(k, str) and k.startswith(GPU_RESOURCE_PREFIXES) for k in amounts
            ):
                return True
    return False


def drain_selector(pod_selector: str) -> str:
    """The drain podSelector the controller really uses (upgrade_controller.go Reconcile)."""
    return f"{pod_selector},{DRAIN_SKIP_SELECTOR}" if pod_selector else DRAIN_SKIP_SELECTOR


def max_unavailable_error(value: object) -> str | None:
    """Why GetScaledValueFromIntOrPercent rejects ``value`` (ProcessUpgradeRequiredNodes then
    returns the error on every reconcile), or None."""
    return None if value is None else scaling_error(value)


def max_unavailable_limit(value: object, total: int) -> int | None:
    """maxUnavailable scaled against the ``total`` managed nodes, rounded up (unset: every
    node); None when GetScaledValueFromIntOrPercent rejects it."""
    return total if value is None else scaled_value(value, total, round_up=True)


def total_managed(states: Mapping[str, int]) -> int:
    """GetTotalManagedNodes: nodes with a driver pod, in the states it counts."""
    return sum(states.get(s, 0) for s in _MANAGED)


def upgrades_in_progress(states: Mapping[str, int]) -> int:
    """GetUpgradesInProgress: managed nodes not unknown, done or upgrade-required (so
    upgrade-failed nodes hold a slot)."""
    return total_managed(states) - sum(states.get(s, 0) for s in _NOT_IN_PROGRESS)


def upgrades_available(
    states: Mapping[str, int], unavailable: int, max_parallel: int, max_unavailable: int
) -> int:
    """GetUpgradesAvailable. ``unavailable`` is GetCurrentUnavailableNodes (cordoned or
    NotReady nodes among the managed ones); cordon-required nodes are added here as upstream."""
    if max_parallel == 0:
        available = states.get("upgrade-required", 0)
    else:
        available = max_parallel - upgrades_in_progress(states)
    current = unavailable + states.get("cordon-required", 0)
    available = min(available, max_unavailable)
    if current >= max_unavailable:
        return 0
    if max_unavailable < total_managed(states) and current + available > max_unavailable:
        return max_unavailable - current
    return available


@record(frozen=True)
class NodeStatus:
    """What admission reads of one node with a driver pod."""

    name: str
    state: str  # the upgrade-state label ("" when absent)
    unschedulable: bool = False
    ready: bool = True
    skip: bool = False  # nvidia.com/gpu-driver-upgrade.skip == "true"


@record(frozen=True)
class Admission:
    admitted: tuple[str, ...]  # moved upgrade-required -> cordon-required this reconcile
    upgrades_available: int
    max_unavailable: int
    total: int
    error: str | None = None  # the reconcile fails before admitting anything


def unavailable_nodes(nodes: Iterable[NodeStatus]) -> int:
    """GetCurrentUnavailableNodes: cordoned, else NodeReady not True."""
    return sum(1 for n in nodes if n.unschedulable or not n.ready)


def admit(
    nodes: list[NodeStatus],
    max_parallel: int,
    max_unavailable: object,
    requestor: bool = False,
) -> Admission:
    """ProcessUpgradeRequiredNodes over the upgrade-required nodes, in ``nodes`` order.

    In-place mode: maxUnavailable (int or "N%", scaled against the managed nodes, rounded up;
    unset = every node) and maxParallelUpgrades (0 = unlimited) bound the slots; a node with
    the skip label stays; with no slot left a cordoned node still goes ahead. Requestor mode
    (upgrade_requestor.go) hands every upgrade-required node to the maintenance operator at
    once (node-maintenance-required), which applies its own limits.
    """
    states = Counter(n.state for n in nodes)
    total = total_managed(states)
    waiting = [n for n in nodes if n.state == "upgrade-required"]
    if requestor:
        handed = tuple(n.name for n in waiting if not n.skip)
        return Admission(handed, len(handed), total, total)
    limit = max_unavailable_limit(max_unavailable, total)
    if limit is None:
        return Admission((), 0, 0, total, max_unavailable_error(max_unavailable))
    managed = [n for n in nodes if n.state in _MANAGED]
    available = upgrades_available(states, unavailable_nodes(managed), max_parallel, limit)
    first = available
    admitted: list[str] = []
    for node in waiting:
        if node.skip:
            continue
        if available <= 0 and not node.unschedulable:
            continue
        admitted.append(node.name)
        available -= 1
    return Admission(tuple(admitted), first, limit, total)
