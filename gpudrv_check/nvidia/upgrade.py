"""The GPU Operator's driver upgrade state machine and its upgrade policy.

Swapping a driver unloads a kernel module, so the upgrade controller first cordons the node and
removes the GPU workloads, which goes through the eviction API and its PodDisruptionBudgets.
It records where each node stands in the node label ``nvidia.com/gpu-driver-upgrade-state``, so
one label value tells where an upgrade stopped: a node stuck in ``pod-deletion-required`` or
``drain-required`` is almost always waiting on a budget, not on the driver.

States and their order come from NVIDIA/k8s-operator-libs ``pkg/upgrade/consts.go``; the policy
defaults from ``api/upgrade/v1alpha1/upgrade_spec.go`` (CRD) and the gpu-operator Helm chart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudrv_check.core.records import record
from gpudrv_check.core.yaml_scalars import resolve_plain
from gpudrv_check.k8s.intstr import parse_int_or_percent, scaling_error
from gpudrv_check.k8s.selector_string import parse_selector

#: Node label holding the upgrade state (``nvidia.com/%s-driver-upgrade-state`` with ``gpu``).
UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
#: Node label that, set to ``"true"``, makes the controller skip the node.
UPGRADE_SKIP_LABEL = "nvidia.com/gpu-driver-upgrade.skip"
#: Node annotation the operator sets on GPU nodes while ``autoUpgrade`` is on.
AUTO_UPGRADE_ANNOTATION = "nvidia.com/gpu-driver-upgrade-enabled"

#: The empty state: upgrades disabled, or the node not processed yet.
UPGRADE_STATE_UNKNOWN = ""
UPGRADE_STATE_FAILED = "upgrade-failed"
UPGRADE_STATE_DONE = "upgrade-done"

#: The states a node walks through, in order. ``node-maintenance-required`` and
#: ``post-maintenance-required`` replace cordon/drain when an external maintenance operator
#: does the node operations.
UPGRADE_FLOW: tuple[str, ...] = (
    "upgrade-required",
    "cordon-required",
    "wait-for-jobs-required",
    "pod-deletion-required",
    "drain-required",
    "node-maintenance-required",
    "post-maintenance-required",
    "pod-restart-required",
    "validation-required",
    "uncordon-required",
    UPGRADE_STATE_DONE,
)

#: Every non-empty state value the controller writes.
UPGRADE_STATES: tuple[str, ...] = (*UPGRADE_FLOW, UPGRADE_STATE_FAILED)

#: One line per state: what it means and, when stuck, where to look.
STATE_MEANINGS: Mapping[str, str] = {
    UPGRADE_STATE_UNKNOWN: "upgrades are disabled or the node has not been processed yet",
    "upgrade-required": "the driver pod is out of date; nothing has been done to the node yet",
    "cordon-required": "the node is about to be made unschedulable",
    "wait-for-jobs-required": "waiting for the pods selected by waitForCompletion to finish",
    "pod-deletion-required": "evicting pods that use a GPU; a PodDisruptionBudget can block this",
    "drain-required": "pod deletion was not enough; draining the node (drain.enable) "
    "evicts non-GPU pods too",
    "node-maintenance-required": "an external maintenance operator is cordoning/draining the node",
    "post-maintenance-required": "maintenance done; the driver pod is to be restarted",
    "pod-restart-required": "the driver pod is restarted to load the new driver",
    "validation-required": "waiting for the validator to confirm the new driver works",
    "uncordon-required": "the new driver is ready; the node is to be made schedulable again",
    UPGRADE_STATE_DONE: "the driver is up to date and the node is schedulable",
    UPGRADE_STATE_FAILED: "the upgrade failed; the node needs manual attention",
}

#: States in which the node has been (or is being) cordoned by the upgrade.
CORDONED_STATES: frozenset[str] = frozenset(UPGRADE_FLOW[2:-1])

# Defaults of DriverUpgradePolicySpec (kubebuilder:default markers in k8s-operator-libs).
CRD_UPGRADE_POLICY_DEFAULTS: Mapping[str, Any] = {
    "autoUpgrade": False,
    "maxParallelUpgrades": 1,
    "maxUnavailable": "25%",
    "waitForCompletion": {"podSelector": "", "timeoutSeconds": 0},
    "podDeletion": {
        "podSelector": "",
        "force": False,
        "timeoutSeconds": 300,
        "deleteEmptyDir": False,
    },
    "drain": {
        "enable": False,
        "force": False,
        "podSelector": "",
        "timeoutSeconds": 300,
        "deleteEmptyDir": False,
    },
}
# The gpu-operator chart turns autoUpgrade on; everything else matches the CRD.
HELM_UPGRADE_POLICY_DEFAULTS: Mapping[str, Any] = {
    **CRD_UPGRADE_POLICY_DEFAULTS,
    "autoUpgrade": True,
}
# The chart names pod deletion "gpuPodDeletion" and renders it as the CRD's "podDeletion".
HELM_POD_DELETION_KEY = "gpuPodDeletion"

_BOOL_FIELDS = frozenset({"autoUpgrade", "force", "deleteEmptyDir", "enable"})
_INT_FIELDS = frozenset({"maxParallelUpgrades", "timeoutSeconds"})
_STR_FIELDS = frozenset({"podSelector"})


def is_known_state(value: object) -> bool:
    """True for the empty state and every state the upgrade controller writes."""
    return value == UPGRADE_STATE_UNKNOWN or value in UPGRADE_STATES


def state_index(value: object) -> int | None:
    """Position of ``value`` in ``UPGRADE_FLOW`` (``upgrade-required`` is 0).

    ``None`` for the empty state, ``upgrade-failed`` and unknown values, which are not steps.
    """
    if not isinstance(value, str):
        return None
    try:
        return UPGRADE_FLOW.index(value)
    except ValueError:
        return None


def state_meaning(value: object) -> str | None:
    """The one-line meaning of a state, or ``None`` for an unknown value."""
    return STATE_MEANINGS.get(value) if isinstance(value, str) else None


def upgrade_state(labels: object) -> str:
    """A node's upgrade state from its labels; ``""`` when absent or not text."""
    if not isinstance(labels, Mapping):
        return UPGRADE_STATE_UNKNOWN
    value = labels.get(UPGRADE_STATE_LABEL)
    return value if isinstance(value, str) else UPGRADE_STATE_UNKNOWN


def skip_requested(labels: object) -> bool:
    """True when the node carries ``nvidia.com/gpu-driver-upgrade.skip=true``."""
    return isinstance(labels, Mapping) and labels.get(UPGRADE_SKIP_LABEL) == "true"


def is_stuck_candidate(value: object) -> bool:
    """True for states where a node sits cordoned mid-upgrade (worth a look if it stays)."""
    return isinstance(value, str) and value in CORDONED_STATES


def _valid_max_unavailable(value: object) -> bool:
    """What the controller can scale (GetScaledValueFromIntOrPercent): the CRD takes any
    int-or-string, so a sign is kept ("-1", "+50%": strconv.Atoi reads both), and a value
    that scales to 0 or less admits no node (a GPU025 warning), not the default."""
    return scaling_error(value) is None


def _field_ok(name: str, value: object) -> bool:
    if name in _BOOL_FIELDS:
        return isinstance(value, bool)
    if name in _INT_FIELDS:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if name in _STR_FIELDS:
        return isinstance(value, str)
    if name == "maxUnavailable":
        return _valid_max_unavailable(value)
    return False


#: The chart's template (templates/clusterpolicy.yaml, v25.3.0 and main) prints every
#: upgradePolicy field unquoted, these ones through Sprig's `| default`, which replaces an
#: empty value (nil, false, 0, "", an empty list or map) by the given one.
HELM_TEMPLATE_DEFAULTS: Mapping[str, Any] = {
    "autoUpgrade": False,
    "maxParallelUpgrades": 0,
    "maxUnavailable": "25%",
    "force": False,
    "deleteEmptyDir": False,
    "enable": False,
}


def _unquoted(text: str) -> object:
    """What a string printed unquoted into YAML reads back as when the API server decodes the
    rendered manifest: null when empty, else the plain scalar as Kubernetes' decoder types it
    (core/yaml_scalars.py, the readers' own resolver: YAML 1.1 words, Go's integer bases)."""
    return None if not text else resolve_plain(text)


def _helm_rendered(name: str, value: object) -> object:
    """A field of the values as the ClusterPolicy the chart renders holds it: the template's
    default for an empty value (`not value` is Sprig's `empty` for YAML data), else the value
    printed unquoted and read back (`"2"` is 2, `"false"` is false, `"25%"` stays)."""
    if name in HELM_TEMPLATE_DEFAULTS and not value:
        return HELM_TEMPLATE_DEFAULTS[name]
    return _unquoted(value) if isinstance(value, str) else value


def _raw_section(raw: Mapping[str, Any], name: str, source: str) -> object:
    # the chart's template fills the ClusterPolicy's podDeletion from gpuPodDeletion.* only
    # (clusterpolicy.yaml, v25.3.0 and later): a podDeletion key in the values is not read
    if source == "helm" and name == "podDeletion":
        return raw.get(HELM_POD_DELETION_KEY)
    return raw.get(name)


def _as_rendered(name: str, value: object, source: str) -> object:
    """A scalar field as the ClusterPolicy holds it; None (unset) keeps the default, which
    for chart values is the chart's values.yaml."""
    if source != "helm" or value is None:
        return value
    return _helm_rendered(name, value)


def _merge(raw: object, source: str, problems: list[str] | None) -> dict[str, Any]:
    defaults = HELM_UPGRADE_POLICY_DEFAULTS if source == "helm" else CRD_UPGRADE_POLICY_DEFAULTS
    if raw is not None and not isinstance(raw, Mapping):
        if problems is not None:
            problems.append("upgradePolicy is not a mapping")
        raw = None
    raw = raw or {}
    effective: dict[str, Any] = {}
    for name, default in defaults.items():
        value = _raw_section(raw, name, source)
        if not isinstance(default, Mapping):
            value = _as_rendered(name, value, source)
        if isinstance(default, Mapping):
            section: dict[str, Any] = dict(default)
            if value is not None and not isinstance(value, Mapping):
                if problems is not None:
                    problems.append(f"{name} is not a mapping")
            elif value is not None:
                for field in default:
                    field_value = _as_rendered(field, value.get(field), source)
                    if field_value is None:
                        continue
                    if _field_ok(field, field_value):
                        section[field] = field_value
                    elif problems is not None:
                        problems.append(f"{name}.{field}: invalid value {field_value!r}")
            effective[name] = section
        elif value is None:
            effective[name] = default
        elif _field_ok(name, value):
            effective[name] = value
        else:
            effective[name] = default
            if problems is not None:
                problems.append(f"{name}: invalid value {value!r}")
    return effective


def effective_upgrade_policy(raw: object, source: str = "clusterpolicy") -> dict[str, Any]:
    """``driver.upgradePolicy`` with every default filled in, in the ClusterPolicy shape.

    ``source="clusterpolicy"`` applies the CRD defaults (``autoUpgrade`` false,
    ``maxParallelUpgrades`` 1, ``maxUnavailable`` 25%, ``waitForCompletion.timeoutSeconds`` 0 =
    wait forever, pod deletion and drain timeouts 300 s, ``drain.enable`` false).
    ``source="helm"`` applies the gpu-operator chart defaults instead, which differ only in
    ``autoUpgrade`` (true), reads the chart's ``gpuPodDeletion`` as ``podDeletion``, and reads
    each field as the chart renders it (``HELM_TEMPLATE_DEFAULTS``, ``_helm_rendered``).

    Sub-objects missing from ``raw`` are filled as if present: the CRD only defaults an object
    that exists, but a missing one behaves the same (no drain, default timeouts). Values of the
    wrong type fall back to the default; ``upgrade_policy_problems`` lists them.
    """
    return _merge(raw, "helm" if source == "helm" else "clusterpolicy", None)


def upgrade_policy_problems(raw: object, source: str = "clusterpolicy") -> list[str]:
    """Fields of an upgrade policy whose values ``effective_upgrade_policy`` had to ignore."""
    problems: list[str] = []
    _merge(raw, "helm" if source == "helm" else "clusterpolicy", problems)
    return problems


@record(frozen=True)
class PolicyProblem:
    """A value of ``driver.upgradePolicy`` the controller reads otherwise than it looks."""

    path: tuple[str, ...]  # relative to upgradePolicy (() for the policy itself)
    message: str
    severity: str  # "error" | "warning"
    hint: str | None = None  # the fix, when the path alone does not decide it


def controller_max_unavailable(raw: object, source: str = "clusterpolicy") -> object:
    """maxUnavailable as the ClusterPolicy holds it (chart values: as the chart renders them);
    None when not written."""
    value = raw.get("maxUnavailable") if isinstance(raw, Mapping) else None
    return _as_rendered("maxUnavailable", value, source)


#: how to write maxUnavailable, per source: the chart prints the value unquoted
_MAX_UNAVAILABLE_HINTS = {
    "clusterpolicy": 'Write maxUnavailable as an integer (`2`) or a percentage string (`"25%"`).',
    "helm": "Write maxUnavailable as a whole number (`2`; the chart prints it unquoted, so "
    '`"2"` is 2 as well) or a percentage (`25%`).',
}


def _max_unavailable_problem(raw: Mapping[str, Any], source: str) -> PolicyProblem | None:
    from gpudrv_check.nvidia.upgrade_controller import max_unavailable_error

    written = raw.get("maxUnavailable")
    if written is None:
        return None
    if source == "helm" and written == 0 and not isinstance(written, bool):
        return PolicyProblem(
            ("maxUnavailable",),
            "maxUnavailable 0 is rendered as 25% by the gpu-operator chart "
            '(`| default "25%"` treats 0 as unset): a quarter of the GPU nodes may be '
            "unavailable at once",
            "warning",
            "Write maxUnavailable: 1 (or the count or percentage you mean): the chart renders 0 "
            'as "25%".',
        )
    value = controller_max_unavailable(raw, source)
    # say what the chart made of a string it printed unquoted ("2" -> 2, "5.5" -> 5.5)
    shown = (
        f"the chart prints {written!r} unquoted, so the ClusterPolicy holds {value!r}: "
        if value != written or type(value) is not type(written)
        else ""
    )
    error = max_unavailable_error(value)
    if error is not None:
        return PolicyProblem(
            ("maxUnavailable",),
            f"{shown}{error}. The upgrade controller cannot scale it "
            "(GetScaledValueFromIntOrPercent) and fails every reconcile: no node is upgraded",
            "error",
            _MAX_UNAVAILABLE_HINTS[source],
        )
    parsed = parse_int_or_percent(value)
    # a percentage of at least one node rounds up to 1 or more; 0 or less stays there
    if parsed is not None and parsed.amount <= 0:
        return PolicyProblem(
            ("maxUnavailable",),
            f"{shown}maxUnavailable {value} scales to "
            f"{'0' if parsed.amount == 0 else '0 or less'} and admits no node "
            "(GetUpgradesAvailable: 0 unavailable nodes already reach the limit); only nodes "
            "cordoned by hand are upgraded",
            "warning",
            "Set maxUnavailable: 1 (or more, or a percentage) so that the controller upgrades "
            "nodes.",
        )
    return None


_SELECTOR_HINT = "Write a label selector, such as `app=batch` or `job in (a,b)`."


def _selector_problems(policy: Mapping[str, Any]) -> list[PolicyProblem]:
    """Pod selectors the controller cannot parse (labels.Parse, or the API server's list)."""
    from gpudrv_check.nvidia.upgrade_controller import drain_selector

    problems = []
    wait = str(policy["waitForCompletion"].get("podSelector") or "")
    if wait and parse_selector(wait) is None:
        problems.append(
            PolicyProblem(
                ("waitForCompletion", "podSelector"),
                f"{wait!r} is not a label selector: listing the pods to wait for fails "
                "(pod_manager.go ScheduleCheckOnPodCompletion), so once a node reaches "
                "wait-for-jobs-required every reconcile fails there and the upgrade stops",
                "error",
                _SELECTOR_HINT,
            )
        )
    drain = policy["drain"]
    written = str(drain.get("podSelector") or "")
    # the controller appends the skip selector; the drain parses the whole text
    if drain.get("enable") is True and written and parse_selector(drain_selector(written)) is None:
        problems.append(
            PolicyProblem(
                ("drain", "podSelector"),
                f"{written!r} is not a label selector: the drain cannot list the pods to evict "
                "(drain.go GetPodsForDeletion), so every node that reaches drain-required goes "
                "to upgrade-failed",
                "error",
                _SELECTOR_HINT,
            )
        )
    return problems


def upgrade_policy_findings(raw: object, source: str = "clusterpolicy") -> list[PolicyProblem]:
    """What in ``raw`` stops or changes the upgrade, as the controller reads it.

    ``source`` is ``clusterpolicy`` (a ClusterPolicy written by hand: no chart template fills
    sub-objects) or ``helm`` (chart values). Only reported while ``autoUpgrade`` is on, since
    the controller reads nothing else otherwise (upgrade_controller.go Reconcile).
    """
    source = "helm" if source == "helm" else "clusterpolicy"
    if not isinstance(raw, Mapping):
        return []
    policy = effective_upgrade_policy(raw, source)
    if policy.get("autoUpgrade") is not True:
        return []
    problems: list[PolicyProblem] = []
    found = _max_unavailable_problem(raw, source)
    if found is not None:
        problems.append(found)
    problems.extend(_selector_problems(policy))
    if source == "helm" and raw.get("podDeletion") is not None:
        problems.append(
            PolicyProblem(
                ("podDeletion",),
                "the gpu-operator chart does not read podDeletion in its values: it renders "
                f"the ClusterPolicy's podDeletion from {HELM_POD_DELETION_KEY} (force, "
                "timeoutSeconds, deleteEmptyDir), so these settings are not applied",
                "warning",
                f"Rename the key to {HELM_POD_DELETION_KEY}.",
            )
        )
    if source == "clusterpolicy" and raw.get("podDeletion") is None:
        problems.append(
            PolicyProblem(
                (),
                "no podDeletion: the first node that reaches "
                'pod-deletion-required fails every reconcile with "pod deletion spec should '
                'not be empty" (pod_manager.go SchedulePodEviction) and the upgrade stops there',
                "error",
            )
        )
    return problems
