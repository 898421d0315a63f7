"""Table tests for the upgrade controller's semantics (nvidia/upgrade_controller.py), each row
following the upstream function it names:

- k8s-operator-libs pkg/upgrade/common_manager.go GetTotalManagedNodes, GetUpgradesInProgress,
  GetCurrentUnavailableNodes, GetUpgradesAvailable;
- pkg/upgrade/upgrade_inplace.go ProcessUpgradeRequiredNodes (admission, the cordoned
  exception, the skip label), upgrade_requestor.go ProcessUpgradeRequiredNodes;
- gpu-operator cmd/gpu-operator/main.go gpuPodSpecFilter; controllers/upgrade_controller.go
  (the implicit drain skip selector); intstr.GetScaledValueFromIntOrPercent (rounding up).
"""

from __future__ import annotations

import pytest

from gpudrv_check.k8s.selector_string import parse_selector
from gpudrv_check.nvidia.upgrade import upgrade_policy_findings
from gpudrv_check.nvidia.upgrade_controller import (
    NodeStatus,
    admit,
    drain_selector,
    is_gpu_pod,
    total_managed,
    upgrades_available,
    upgrades_in_progress,
)

REQ = "upgrade-required"


def nodes(*specs: str) -> list[NodeStatus]:
    """`n0:upgrade-required:cordoned:notready:skip` -> NodeStatus."""
    out = []
    for spec in specs:
        name, state, *flags = spec.split(":")
        out.append(
            NodeStatus(
                name,
                "" if state == "unknown" else state,
                unschedulable="cordoned" in flags,
                ready="notready" not in flags,
                skip="skip" in flags,
            )
        )
    return out


# (case, nodes, maxParallelUpgrades, maxUnavailable, admitted, upgradesAvailable, limit)
ADMISSION = [
    ("one slot, first node", ["a:upgrade-required", "b:upgrade-required"], 1, "25%", ("a",), 1, 1),
    (
        "maxParallelUpgrades 0 = unlimited, bounded by maxUnavailable",
        [f"n{i}:upgrade-required" for i in range(8)],
        0,
        "25%",
        ("n0", "n1"),
        2,
        2,
    ),
    (
        "percentages round up: 10% of 3 nodes is 1",
        ["a:upgrade-required", "b:upgrade-required", "c:upgrade-required"],
        0,
        "10%",
        ("a",),
        1,
        1,
    ),
    (
        "maxUnavailable unset: every node",
        ["a:upgrade-required", "b:upgrade-required", "c:upgrade-required"],
        0,
        None,
        ("a", "b", "c"),
        3,
        3,
    ),
    (
        "maxUnavailable 0 admits nothing",
        ["a:upgrade-required", "b:upgrade-required"],
        0,
        0,
        (),
        0,
        0,
    ),
    (
        "a cordoned node starts even without a free slot",
        ["a:upgrade-required", "b:upgrade-required:cordoned"],
        1,
        "100%",
        ("a", "b"),
        1,
        2,
    ),
    (
        "a cordoned node uses the maxUnavailable budget",
        ["a:upgrade-required", "b:upgrade-done:cordoned", "c:upgrade-done", "d:upgrade-done"],
        1,
        "25%",
        (),
        0,
        1,
    ),
    (
        "a NotReady node uses the budget",
        ["a:upgrade-required", "b:upgrade-done:notready", "c:upgrade-done", "d:upgrade-done"],
        1,
        1,
        (),
        0,
        1,
    ),
    (
        "one cordoned upgrade-failed node with maxParallelUpgrades 1 stops every other node",
        ["a:upgrade-failed:cordoned", "b:upgrade-required", "c:upgrade-required"],
        1,
        "100%",
        (),
        0,
        3,
    ),
    (
        "an upgrade-failed node holds a parallel slot",
        ["a:upgrade-failed", "b:upgrade-required", "c:upgrade-required"],
        2,
        "100%",
        ("b",),
        1,
        3,
    ),
    (
        "the skip label keeps a node out, the next one is admitted",
        ["a:upgrade-required:skip", "b:upgrade-required"],
        1,
        "50%",
        ("b",),
        1,
        1,
    ),
    (
        "cordon-required nodes count as unavailable",
        ["a:cordon-required", "b:upgrade-required", "c:upgrade-required", "d:upgrade-done"],
        0,
        2,
        ("b",),
        1,
        2,
    ),
]


@pytest.mark.parametrize(
    ("case", "specs", "parallel", "limit", "admitted", "available", "scaled"),
    ADMISSION,
    ids=[row[0] for row in ADMISSION],
)
def test_admission_follows_process_upgrade_required_nodes(
    case, specs, parallel, limit, admitted, available, scaled
) -> None:
    result = admit(nodes(*specs), parallel, limit)
    assert (result.admitted, result.upgrades_available, result.max_unavailable) == (
        admitted,
        available,
        scaled,
    ), case


def test_a_quoted_number_is_an_error_every_reconcile() -> None:
    # GetScaledValueFromIntOrPercent: "5" is a string that is not a percentage
    result = admit(nodes("a:upgrade-required"), 1, "5")
    assert result.admitted == ()
    assert result.error is not None and "not a percentage" in result.error


def test_requestor_mode_hands_every_node_over() -> None:
    # upgrade_requestor.go: no slot arithmetic; skip label still honoured
    result = admit(
        nodes("a:upgrade-required", "b:upgrade-required:skip", "c:upgrade-required"),
        1,
        "25%",
        requestor=True,
    )
    assert result.admitted == ("a", "c")


def test_managed_nodes_leave_out_the_maintenance_states() -> None:
    # GetTotalManagedNodes lists eleven states; node-maintenance-required is not among them
    states = {"": 1, "upgrade-done": 2, "node-maintenance-required": 5, "upgrade-failed": 1}
    assert total_managed(states) == 4
    assert upgrades_in_progress(states) == 1
    assert upgrades_available(states, 0, 1, 4) == 0


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}, True),
        ({"containers": [{"resources": {"requests": {"nvidia.com/gpu.shared": 1}}}]}, True),
        ({"containers": [{"resources": {"limits": {"nvidia.com/mig-1g.10gb": 1}}}]}, True),
        ({"containers": [{"resources": {"limits": {"cpu": "1"}}}]}, False),
        # init containers are not looked at by gpuPodSpecFilter
        (
            {
                "initContainers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}],
                "containers": [{}],
            },
            False,
        ),
        ({"containers": "broken"}, False),
        (None, False),
    ],
)
def test_gpu_pod_filter_follows_main_go(spec, expected) -> None:
    assert is_gpu_pod(spec) is expected


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("", {"app": "web"}, True),
        ("app in (trainer)", {"app": "trainer"}, True),
        ("app in (trainer)", {"app": "web"}, False),
        ("tier!=db", {}, True),
        ("app=web,tier", {"app": "web"}, False),
        ("!batch", {"batch": "x"}, False),
    ],
)
def test_string_selectors(selector, labels, expected) -> None:
    matcher = parse_selector(selector)
    assert matcher is not None and matcher(labels) is expected


def test_drain_selector_always_carries_the_skip_label() -> None:
    # upgrade_controller.go: UpgradeSkipDrainLabelSelector appended to every podSelector
    assert drain_selector("") == "nvidia.com/gpu-driver-upgrade-drain.skip!=true"
    assert drain_selector("app=x") == "app=x,nvidia.com/gpu-driver-upgrade-drain.skip!=true"
    matcher = parse_selector(drain_selector("app=x"))
    assert matcher is not None
    assert matcher({"app": "x"}) is True
    assert matcher({"app": "x", "nvidia.com/gpu-driver-upgrade-drain.skip": "true"}) is False


# (case, raw policy, source, [(path, severity)])
POLICY = [
    (
        "quoted number",
        {"autoUpgrade": True, "maxUnavailable": "5", "podDeletion": {}},
        "clusterpolicy",
        [(("maxUnavailable",), "error")],
    ),
    ("no podDeletion on a ClusterPolicy", {"autoUpgrade": True}, "clusterpolicy", [((), "error")]),
    ("the chart renders podDeletion", {"autoUpgrade": True}, "helm", []),
    (
        "0 in chart values becomes 25%",
        {"maxUnavailable": 0},
        "helm",
        [(("maxUnavailable",), "warning")],
    ),
    (
        "0 in a ClusterPolicy admits nothing",
        {"autoUpgrade": True, "maxUnavailable": 0, "podDeletion": {}},
        "clusterpolicy",
        [(("maxUnavailable",), "warning")],
    ),
    (
        # intstr.GetScaledValueFromIntOrPercent keeps the sign; GetUpgradesAvailable: 0 >= -1
        "-1 admits nothing",
        {"autoUpgrade": True, "maxUnavailable": -1, "podDeletion": {}},
        "clusterpolicy",
        [(("maxUnavailable",), "warning")],
    ),
    (
        # strconv.Atoi("-10"); ceil(-10 * n / 100) <= 0 for every n
        "-10% admits nothing",
        {"autoUpgrade": True, "maxUnavailable": "-10%", "podDeletion": {}},
        "clusterpolicy",
        [(("maxUnavailable",), "warning")],
    ),
    (
        "0% admits nothing",
        {"autoUpgrade": True, "maxUnavailable": "0%", "podDeletion": {}},
        "clusterpolicy",
        [(("maxUnavailable",), "warning")],
    ),
    (
        # strconv.Atoi accepts a leading +: the same as 50%
        "+50% is 50%",
        {"autoUpgrade": True, "maxUnavailable": "+50%", "podDeletion": {}},
        "clusterpolicy",
        [],
    ),
    (
        # the chart's `| default "25%"` only replaces empty values: -1 is printed as it is
        "-1 in chart values admits nothing",
        {"maxUnavailable": -1},
        "helm",
        [(("maxUnavailable",), "warning")],
    ),
    (
        # pod_manager.go ScheduleCheckOnPodCompletion: ListPods with the selector fails
        "waitForCompletion selector unparsable",
        {"autoUpgrade": True, "podDeletion": {}, "waitForCompletion": {"podSelector": "a in (b"}},
        "clusterpolicy",
        [(("waitForCompletion", "podSelector"), "error")],
    ),
    (
        # drain.go GetPodsForDeletion: labels.Parse of the selector + the skip selector
        "drain selector unparsable",
        {"autoUpgrade": True, "podDeletion": {}, "drain": {"enable": True, "podSelector": "a,"}},
        "clusterpolicy",
        [(("drain", "podSelector"), "error")],
    ),
    (
        # ProcessDrainNodes: a disabled drain never parses it
        "drain selector unparsable, drain off",
        {"autoUpgrade": True, "podDeletion": {}, "drain": {"podSelector": "a in (b"}},
        "clusterpolicy",
        [],
    ),
    (
        # templates/clusterpolicy.yaml renders podDeletion from gpuPodDeletion.* only
        "podDeletion in chart values is not read",
        {"podDeletion": {"deleteEmptyDir": True}},
        "helm",
        [(("podDeletion",), "warning")],
    ),
    ("gpuPodDeletion in chart values", {"gpuPodDeletion": {"deleteEmptyDir": True}}, "helm", []),
    # templates/clusterpolicy.yaml prints `maxUnavailable: {{ … | default "25%" }}` unquoted
    ('"5" in chart values is 5', {"maxUnavailable": "5"}, "helm", []),
    (
        '"0" in chart values is 0, not 25%',
        {"maxUnavailable": "0"},
        "helm",
        [(("maxUnavailable",), "warning")],
    ),
    (
        '"five" in chart values',
        {"maxUnavailable": "five"},
        "helm",
        [(("maxUnavailable",), "error")],
    ),
    # `autoUpgrade: {{ … | default false }}`: "false" is printed as false
    (
        '"false" in chart values turns it off',
        {"autoUpgrade": "false", "maxUnavailable": "x"},
        "helm",
        [],
    ),
    ("autoUpgrade off: nothing is read", {"maxUnavailable": "5"}, "clusterpolicy", []),
    (
        "valid",
        {"autoUpgrade": True, "maxUnavailable": "10%", "podDeletion": {}},
        "clusterpolicy",
        [],
    ),
]


@pytest.mark.parametrize(("case", "raw", "source", "expected"), POLICY, ids=[p[0] for p in POLICY])
def test_policy_as_the_controller_reads_it(case, raw, source, expected) -> None:
    found = [(p.path, p.severity) for p in upgrade_policy_findings(raw, source)]
    assert found == expected, case


def test_chart_values_hints_say_the_chart_prints_unquoted() -> None:
    found = upgrade_policy_findings({"maxUnavailable": "5.5"}, "helm")
    assert [p.severity for p in found] == ["error"]
    assert found[0].message.startswith(
        "the chart prints '5.5' unquoted, so the ClusterPolicy holds 5.5"
    )
    assert found[0].hint is not None and '`"2"` is 2 as well' in found[0].hint
