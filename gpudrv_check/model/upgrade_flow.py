"""Which upgrade flow the repo's driver upgrades follow, and which pods that flow evicts.

- ``controller``: the operator config turns ``driver.upgradePolicy.autoUpgrade`` on (the chart
  does by default) and sandbox workloads are off: the GPU Operator's upgrade controller
  upgrades the nodes. Its default flow deletes only GPU pods (gpu-operator main.go
  ``gpuPodSpecFilter``) through the eviction API (k8s-operator-libs pod_manager.go
  ``SchedulePodEviction``: a kubectl drain helper with IgnoreAllDaemonSets, the policy's
  podDeletion force / deleteEmptyDir / timeoutSeconds). Only with ``drain.enable`` does a
  failed pod deletion lead to a drain (drain_manager.go ``ScheduleNodesDrain``), which evicts
  the pods matching ``drain.podSelector`` plus the implicit
  ``nvidia.com/gpu-driver-upgrade-drain.skip!=true`` (upgrade_controller.go).
- ``manual``: no such config: the lab's procedure, ``kubectl drain --ignore-daemonsets``,
  which evicts every pod but DaemonSet and mirror pods.
"""

from __future__ import annotations

from dataclasses import field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from gpudrv_check.core.records import record
from gpudrv_check.k8s.selector_string import Matcher, parse_selector
from gpudrv_check.model.operator import OperatorConfig
from gpudrv_check.nvidia.operands import sandbox_workloads_enabled
from gpudrv_check.nvidia.upgrade import controller_max_unavailable, effective_upgrade_policy
from gpudrv_check.nvidia.upgrade_controller import drain_selector, is_gpu_pod

if TYPE_CHECKING:
    from gpudrv_check.model.repo import Repo
    from gpudrv_check.model.workload import Workload

CONTROLLER, MANUAL = "controller", "manual"
POLICY_PATH = ("driver", "upgradePolicy")


def policy_source(config: OperatorConfig) -> str:
    """How the upgrade policy's unset fields are filled: by the chart (its values.yaml and
    template) for chart values, by the CRD for a ClusterPolicy, and by the CRD too when chart
    values set `driver.upgradePolicy: null` (Helm drops the key; the template renders no
    upgradePolicy: `{{- if .Values.driver.upgradePolicy }}`, so autoUpgrade is off)."""
    if config.source == "clusterpolicy" or config.deleted(*POLICY_PATH):
        return "clusterpolicy"
    return "helm"


@record(frozen=True)
class UpgradeFlow:
    kind: str  # CONTROLLER | MANUAL
    config: OperatorConfig | None = None
    policy: dict[str, Any] = field(default_factory=dict)  # effective upgradePolicy

    @property
    def raw_max_unavailable(self) -> object:
        """maxUnavailable as the ClusterPolicy holds it, chart values rendered (the effective
        policy replaces a value it cannot use)."""
        if self.config is None:
            return None
        return controller_max_unavailable(self.config.get(*POLICY_PATH), policy_source(self.config))

    @property
    def drain_enabled(self) -> bool:
        return self.kind == CONTROLLER and self.policy["drain"]["enable"] is True

    @cached_property
    def drain_matcher(self) -> Matcher | None:
        """The drain selector with the implicit skip; None when the selector is invalid."""
        return parse_selector(drain_selector(str(self.policy["drain"]["podSelector"] or "")))

    def deletes(self, workload: Workload) -> bool:
        """The pod-deletion step removes this workload's pods (GPU pods, not DaemonSets)."""
        if workload.kind == "DaemonSet":
            return False
        if workload.mirror_pod:
            return False
        if self.kind == MANUAL:
            return True
        return is_gpu_pod(workload.pod_spec)

    def stops_deletion(self, workload: Workload) -> bool:
        """The controller's pod deletion counts this workload's pods but cannot remove them.

        pod_manager.go SchedulePodEviction counts the pods its filter (main.go
        gpuPodSpecFilter) selects, then compares that count with the pods the drain helper
        would delete; the helper skips DaemonSet pods (filters.go daemonSetFilter, with
        IgnoreAllDaemonSets) and mirror pods (mirrorPodFilter) before any other filter, so a
        GPU pod of either kind makes the counts differ: "Cannot delete all required pods".
        """
        if self.kind != CONTROLLER:
            return False
        if workload.kind != "DaemonSet" and not workload.mirror_pod:
            return False
        return is_gpu_pod(workload.pod_spec)

    def drains(self, workload: Workload) -> bool:
        """A drain after failed pod deletion evicts this workload's pods (drain.enable).

        The drain helper skips DaemonSet and mirror pods before its other filters (kubectl
        filters.go makeFilters: daemonSetFilter, mirrorPodFilter), so neither blocks it.
        """
        if not self.drain_enabled or workload.kind == "DaemonSet" or workload.mirror_pod:
            return False
        matcher = self.drain_matcher
        return matcher is not None and matcher(workload.pod_labels)

    def undeletable(self, workload: Workload, step: str) -> str | None:
        """Why the drain helper of ``step`` (``podDeletion`` or ``drain``, each with its own
        force and deleteEmptyDir) refuses the workload's pods, or None. kubectl filters.go,
        in its order: localStorageFilter (an emptyDir needs deleteEmptyDir), then
        unreplicatedFilter (a pod without controller needs force)."""
        spec = self.policy[step]
        volumes = workload.spec_get("volumes")
        if not spec.get("deleteEmptyDir") and isinstance(volumes, list):
            if any(isinstance(v, dict) and "emptyDir" in v for v in volumes):
                return "cannot delete Pods with local storage (emptyDir)"
        if workload.kind == "Pod" and not spec.get("force"):
            return "cannot delete Pods that declare no controller"
        return None

    def evicts(self, workload: Workload) -> bool:
        """Some step of this flow evicts the workload's pods from a node being upgraded."""
        return self.deletes(workload) or self.drains(workload)

    def describe(self) -> str:
        if self.kind == MANUAL:
            return "kubectl drain (no operator config with driver.upgradePolicy.autoUpgrade)"
        text = "the GPU Operator's upgrade controller: GPU pods deleted through eviction"
        if self.drain_enabled:
            text += ", then a drain of the pods matching " + drain_selector(
                str(self.policy["drain"]["podSelector"] or "")
            )
        return text


def upgrade_flow(repo: Repo) -> UpgradeFlow:
    """The flow of the repo's operator config (the first one), else the manual drain."""
    config = repo.operator
    if config is None:
        return UpgradeFlow(MANUAL)
    source = policy_source(config)
    policy = effective_upgrade_policy(config.get(*POLICY_PATH), source)
    if policy.get("autoUpgrade") is not True or sandbox_workloads_enabled(config.values, source):
        return UpgradeFlow(MANUAL, config, policy)
    return UpgradeFlow(CONTROLLER, config, policy)
