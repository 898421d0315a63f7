"""Driver upgrade states and the upgrade policy defaults."""

from __future__ import annotations

import pytest

from gpudrv_check.nvidia.upgrade import (
    CRD_UPGRADE_POLICY_DEFAULTS,
    STATE_MEANINGS,
    UPGRADE_SKIP_LABEL,
    UPGRADE_STATE_LABEL,
    UPGRADE_STATES,
    effective_upgrade_policy,
    is_known_state,
    is_stuck_candidate,
    skip_requested,
    state_index,
    state_meaning,
    upgrade_policy_problems,
    upgrade_state,
)

# k8s-operator-libs pkg/upgrade/consts.go, in declaration order
UPSTREAM_ORDER = [
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
    "upgrade-done",
    "upgrade-failed",
]

# the eight states the lab (step 8) lists, in the documentation's order
LAB_STATES = [
    "upgrade-required",
    "cordon-required",
    "pod-deletion-required",
    "drain-required",
    "pod-restart-required",
    "validation-required",
    "uncordon-required",
    "upgrade-done",
]


def test_labels() -> None:
    assert UPGRADE_STATE_LABEL == "nvidia.com/gpu-driver-upgrade-state"
    assert UPGRADE_SKIP_LABEL == "nvidia.com/gpu-driver-upgrade.skip"


def test_states_match_upstream_order() -> None:
    assert list(UPGRADE_STATES) == UPSTREAM_ORDER


def test_lab_states_are_in_flow_order() -> None:
    indexes = [state_index(state) for state in LAB_STATES]
    assert None not in indexes
    assert indexes == sorted(indexes)


def test_every_state_has_a_meaning() -> None:
    for state in ("", *UPGRADE_STATES):
        assert state_meaning(state)
    assert set(STATE_MEANINGS) == {"", *UPGRADE_STATES}


@pytest.mark.parametrize(
    ("value", "known", "index"),
    [
        ("", True, None),
        ("upgrade-required", True, 0),
        ("cordon-required", True, 1),
        ("wait-for-jobs-required", True, 2),
        ("pod-deletion-required", True, 3),
        ("drain-required", True, 4),
        ("node-maintenance-required", True, 5),
        ("post-maintenance-required", True, 6),
        ("pod-restart-required", True, 7),
        ("validation-required", True, 8),
        ("uncordon-required", True, 9),
        ("upgrade-done", True, 10),
        ("upgrade-failed", True, None),
        ("Upgrade-Done", False, None),
        ("drain", False, None),
        (None, False, None),
        (3, False, None),
    ],
)
def test_known_states_and_index(value, known, index) -> None:
    assert is_known_state(value) is known
    assert state_index(value) == index


@pytest.mark.parametrize(
    ("state", "stuck"),
    [
        ("upgrade-required", False),
        ("cordon-required", False),
        ("pod-deletion-required", True),
        ("drain-required", True),
        ("validation-required", True),
        ("uncordon-required", True),
        ("upgrade-done", False),
        ("upgrade-failed", False),
        ("", False),
        (None, False),
    ],
)
def test_is_stuck_candidate(state, stuck) -> None:
    assert is_stuck_candidate(state) is stuck


@pytest.mark.parametrize(
    ("labels", "state", "skip"),
    [
        ({UPGRADE_STATE_LABEL: "drain-required"}, "drain-required", False),
        ({UPGRADE_SKIP_LABEL: "true"}, "", True),
        ({UPGRADE_SKIP_LABEL: "True"}, "", False),
        ({UPGRADE_STATE_LABEL: 5}, "", False),
        ({}, "", False),
        (None, "", False),
    ],
)
def test_node_labels(labels, state, skip) -> None:
    assert upgrade_state(labels) == state
    assert skip_requested(labels) is skip


CRD_DEFAULTS = {
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


@pytest.mark.parametrize("raw", [None, {}, {"waitForCompletion": None}])
def test_crd_defaults(raw) -> None:
    assert effective_upgrade_policy(raw) == CRD_DEFAULTS
    assert upgrade_policy_problems(raw) == []


def test_helm_defaults_turn_auto_upgrade_on() -> None:
    assert effective_upgrade_policy(None, "helm") == {**CRD_DEFAULTS, "autoUpgrade": True}


def test_overrides_are_kept() -> None:
    raw = {
        "autoUpgrade": True,
        "maxParallelUpgrades": 0,
        "maxUnavailable": 2,
        "drain": {"enable": True, "podSelector": "app=trainer", "timeoutSeconds": 600},
        "podDeletion": {"force": True},
    }
    policy = effective_upgrade_policy(raw)
    assert policy["autoUpgrade"] is True
    assert policy["maxParallelUpgrades"] == 0
    assert policy["maxUnavailable"] == 2
    assert policy["drain"] == {
        "enable": True,
        "force": False,
        "podSelector": "app=trainer",
        "timeoutSeconds": 600,
        "deleteEmptyDir": False,
    }
    assert policy["podDeletion"]["force"] is True
    assert policy["podDeletion"]["timeoutSeconds"] == 300


@pytest.mark.parametrize(
    ("raw", "source", "timeout"),
    [
        ({"gpuPodDeletion": {"timeoutSeconds": 60}}, "helm", 60),
        ({"gpuPodDeletion": {"timeoutSeconds": 60}}, "clusterpolicy", 300),
        # gpu-operator templates/clusterpolicy.yaml (v25.3.0, main) renders podDeletion from
        # .Values.driver.upgradePolicy.gpuPodDeletion.* only: a podDeletion key is not read
        ({"podDeletion": {"timeoutSeconds": 90}}, "helm", 300),
        ({"podDeletion": {"timeoutSeconds": 90}, "gpuPodDeletion": {}}, "helm", 300),
        ({"podDeletion": {"timeoutSeconds": 90}}, "clusterpolicy", 90),
    ],
)
def test_helm_pod_deletion_key(raw, source, timeout) -> None:
    assert effective_upgrade_policy(raw, source)["podDeletion"]["timeoutSeconds"] == timeout


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"autoUpgrade": "true"}, "autoUpgrade: invalid value 'true'"),
        ({"maxParallelUpgrades": -1}, "maxParallelUpgrades: invalid value -1"),
        ({"maxParallelUpgrades": True}, "maxParallelUpgrades: invalid value True"),
        ({"maxUnavailable": "25"}, "maxUnavailable: invalid value '25'"),
        ({"maxUnavailable": "x%"}, "maxUnavailable: invalid value 'x%'"),
        ({"drain": {"enable": "yes"}}, "drain.enable: invalid value 'yes'"),
        ({"drain": {"timeoutSeconds": "300"}}, "drain.timeoutSeconds: invalid value '300'"),
        ({"drain": ["enable"]}, "drain is not a mapping"),
        ("autoUpgrade", "upgradePolicy is not a mapping"),
    ],
)
def test_invalid_values_fall_back_and_are_reported(raw, problem) -> None:
    assert problem in upgrade_policy_problems(raw)
    policy = effective_upgrade_policy(raw)
    for key, default in CRD_UPGRADE_POLICY_DEFAULTS.items():
        if not isinstance(default, dict):
            assert policy[key] == default


@pytest.mark.parametrize(
    ("written", "kept"),
    [
        # the CRD's int-or-string takes any of these and GetScaledValueFromIntOrPercent
        # scales them (strconv.Atoi reads a sign), so the controller uses them as written
        (-1, -1),
        ("-10%", "-10%"),
        ("+50%", "+50%"),
        ("0%", "0%"),
        # not a percentage: every reconcile fails (GPU025 error); the default stands here
        ("5", "25%"),
        ("+5", "25%"),
        ("5.5%", "25%"),
    ],
)
def test_max_unavailable_as_intstr_parses_it(written, kept) -> None:
    assert effective_upgrade_policy({"maxUnavailable": written})["maxUnavailable"] == kept


# gpu-operator deployments/gpu-operator/templates/clusterpolicy.yaml (v25.3.0 and main) prints
# each field unquoted; autoUpgrade, maxParallelUpgrades, maxUnavailable, force, deleteEmptyDir
# and enable through `| default …`; the rendered text is read as YAML 1.1 (sigs.k8s.io/yaml)
HELM_RENDERED = [
    # (values, where in the effective policy, value there)
    ({"maxUnavailable": "2"}, ("maxUnavailable",), 2),
    ({"maxUnavailable": "0"}, ("maxUnavailable",), 0),  # a non-empty string: no default
    ({"maxUnavailable": 0}, ("maxUnavailable",), "25%"),  # `| default "25%"`
    ({"maxUnavailable": "25%"}, ("maxUnavailable",), "25%"),
    ({"maxUnavailable": "0x10"}, ("maxUnavailable",), 16),  # go-yaml v2: ParseInt base 0
    ({"autoUpgrade": "false"}, ("autoUpgrade",), False),
    ({"autoUpgrade": "off"}, ("autoUpgrade",), False),  # YAML 1.1
    ({"autoUpgrade": False}, ("autoUpgrade",), False),  # `| default false`
    ({"maxParallelUpgrades": "3"}, ("maxParallelUpgrades",), 3),
    ({"maxParallelUpgrades": 0}, ("maxParallelUpgrades",), 0),  # `| default 0`
    ({"gpuPodDeletion": {"force": "true"}}, ("podDeletion", "force"), True),
    ({"gpuPodDeletion": {"timeoutSeconds": "600"}}, ("podDeletion", "timeoutSeconds"), 600),
    ({"gpuPodDeletion": {"timeoutSeconds": ""}}, ("podDeletion", "timeoutSeconds"), 300),  # null
    ({"drain": {"enable": "yes"}}, ("drain", "enable"), True),
    ({"drain": {"podSelector": "app=web"}}, ("drain", "podSelector"), "app=web"),
]


@pytest.mark.parametrize(("values", "path", "expected"), HELM_RENDERED)
def test_chart_values_read_as_the_chart_renders_them(values, path, expected) -> None:
    policy: object = effective_upgrade_policy(values, "helm")
    for key in path:
        assert isinstance(policy, dict)
        policy = policy[key]
    assert policy == expected
    assert type(policy) is type(expected)


def test_a_clusterpolicy_is_read_as_written() -> None:
    # no template: the API server would refuse "2" for an int field; the default stands
    policy = effective_upgrade_policy({"maxParallelUpgrades": "2", "autoUpgrade": "false"})
    assert (policy["maxParallelUpgrades"], policy["autoUpgrade"]) == (1, False)


def test_defaults_are_not_shared_between_calls() -> None:
    first = effective_upgrade_policy(None)
    first["drain"]["enable"] = True
    assert effective_upgrade_policy(None)["drain"]["enable"] is False


@pytest.mark.parametrize(
    ("printed", "read"),
    [
        ("", None),  # `key: ` rendered from an empty string: null
        ("2", 2),
        ("false", False),
        ("off", False),  # YAML 1.1 words (go-yaml v2 resolve table)
        ("25%", "25%"),
        ("0o17", 15),  # Go's base prefixes (strconv.ParseInt base 0)
        ("_1", "_1"),  # no number starts with `_` (resolve's first-character hint)
        ("1_0", 10),
    ],
)
def test_a_value_the_chart_prints_unquoted_reads_back_as_the_readers_read_it(printed, read):
    """templates/clusterpolicy.yaml prints each upgradePolicy field unquoted; the API server
    decodes the rendered text as it decodes any manifest (core/yaml_scalars.py resolve_plain,
    the same resolver the readers use)."""
    from gpudrv_check.nvidia.upgrade import _unquoted

    value = _unquoted(printed)
    assert value == read and type(value) is type(read)
