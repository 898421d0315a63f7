"""Operand placement per node: the seed's situations, deploy label values, taints, sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.model.operands import (
    DISABLED,
    LABEL,
    MODE_BOTH,
    MODE_DAEMONSETS,
    MODE_NONE,
    MODE_OPERATOR,
    OPERANDS_OFF,
    OPERATOR,
    REPO,
    SELECTOR,
    TAINT,
)
from tests.conftest import cluster_policy, write
from tests.operands.build import (
    all_labels,
    daemonset,
    desired,
    lab_daemonsets,
    node,
    placement,
    states,
)

ALL_YES = dict.fromkeys(
    ("driver", "container-toolkit", "device-plugin", "gpu-feature-discovery", "dcgm-exporter"),
    "yes",
)


# --- the seed's situations (hand-written DaemonSets, as in the lab) ---------------------------


def test_two_gpu_nodes_the_driver_runs_on_one_only(tmp_path: Path):
    lab_daemonsets(tmp_path)
    write(tmp_path, "nodes/a.yaml", node("gpu-a", all_labels()))
    write(tmp_path, "nodes/b.yaml", node("gpu-b", {**all_labels(), "driver": "false"}))
    p = placement(tmp_path)
    assert p.mode == MODE_DAEMONSETS
    assert states(p, "gpu-a") == ALL_YES
    assert states(p, "gpu-b") == {**ALL_YES, "driver": "pre-installed"}
    assert desired(p)["nvidia-driver-daemonset"] == 1
    assert desired(p)["nvidia-device-plugin-daemonset"] == 2
    assert p.breaks == {}  # a pre-installed driver satisfies the toolkit


def test_removing_one_deploy_label_removes_that_operand_from_the_node(tmp_path: Path):
    lab_daemonsets(tmp_path)
    write(tmp_path, "nodes/a.yaml", node("gpu-a", all_labels()))
    write(tmp_path, "nodes/b.yaml", node("gpu-b", all_labels()))
    assert desired(placement(tmp_path))["nvidia-dcgm-exporter"] == 2

    write(tmp_path, "nodes/b.yaml", node("gpu-b", all_labels(skip=("dcgm-exporter",))))
    p = placement(tmp_path)
    assert desired(p)["nvidia-dcgm-exporter"] == 1
    assert states(p, "gpu-b") == {**ALL_YES, "dcgm-exporter": "no (label)"}
    [cause] = p.cells["gpu-b"]["dcgm-exporter"].causes
    assert cause.detail == "label nvidia.com/gpu.deploy.dcgm-exporter missing"
    # a missing label points at the node's labels mapping
    assert (cause.location.file, cause.location.line, cause.location.column) == (
        "nodes/b.yaml",
        5,
        3,
    )
    assert p.breaks == {}  # nothing depends on the exporter


def test_labels_set_by_hand_give_a_device_plugin_without_toolkit(tmp_path: Path):
    lab_daemonsets(tmp_path)
    write(tmp_path, "nodes/a.yaml", node("gpu-a", all_labels()))
    write(tmp_path, "nodes/c.yaml", node("gpu-c", {"driver": "true", "device-plugin": "true"}))
    p = placement(tmp_path)
    assert states(p, "gpu-c")["device-plugin"] == "yes"
    assert states(p, "gpu-c")["container-toolkit"] == "no (label)"
    [chain] = p.breaks["gpu-c"]
    assert (chain.missing, chain.running, chain.waits) == (
        "container-toolkit",
        ("device-plugin",),
        False,
    )
    assert [c.kind for c in chain.causes] == [LABEL]


@pytest.mark.parametrize(
    ("labels", "chain"),
    [
        (all_labels(), None),  # labelled like the first node: judged the same, all fine
        ({"driver": "true", "device-plugin": "true"}, ("container-toolkit", ("device-plugin",))),
        (all_labels(skip=("driver",)), ("driver", ("container-toolkit",))),
    ],
)
def test_a_third_node_added_later_is_judged_the_same_way(tmp_path: Path, labels, chain):
    lab_daemonsets(tmp_path)
    write(tmp_path, "nodes/a.yaml", node("gpu-a", all_labels()))
    write(tmp_path, "nodes/b.yaml", node("gpu-b", all_labels()))
    before = desired(placement(tmp_path))
    write(tmp_path, "nodes/c.yaml", node("gpu-c", labels))
    p = placement(tmp_path)
    for operand, name in (("device-plugin", "nvidia-device-plugin-daemonset"),):
        grows = labels.get(operand) == "true"
        assert desired(p)[name] == before[name] + grows
    found = [(b.missing, b.running) for b in p.breaks.get("gpu-c", [])]
    assert found == ([] if chain is None else [chain])
    assert "gpu-a" not in p.breaks and "gpu-b" not in p.breaks


@pytest.mark.parametrize(
    ("taint", "counted"),
    [
        ("{key: dedicated, value: inference, effect: NoSchedule}", False),
        ("{key: dedicated, value: inference, effect: NoExecute}", False),
        ("{key: dedicated, value: inference, effect: PreferNoSchedule}", True),
        ("{key: nvidia.com/gpu, value: present, effect: NoSchedule}", True),  # tolerated
        ("{key: nvidia.com/gpu, value: present, effect: NoExecute}", False),  # only NoSchedule
        ("{key: node.kubernetes.io/unschedulable, effect: NoSchedule}", True),  # DS default
        ("{key: node.kubernetes.io/not-ready, effect: NoExecute}", True),  # DS default
        ("{key: node.kubernetes.io/memory-pressure, effect: NoSchedule}", True),  # DS default
        ("{key: node.kubernetes.io/network-unavailable, effect: NoSchedule}", False),
    ],
)
def test_a_tainted_node_is_not_counted_in_desired_number_scheduled(tmp_path, taint, counted):
    lab_daemonsets(tmp_path)
    write(tmp_path, "nodes/a.yaml", node("gpu-a", all_labels()))
    write(tmp_path, "nodes/t.yaml", node("gpu-t", all_labels(), spec=f"taints:\n- {taint}\n"))
    p = placement(tmp_path)
    for ds in p.daemonsets:
        assert ds.desired_number_scheduled == 1 + counted
        assert [n for n, _ in ds.tainted_out] == ([] if counted else ["gpu-t"])
    if not counted:
        cell = p.cells["gpu-t"]["device-plugin"]
        assert cell.text == "no (taint)"
        assert cell.causes[0].location.line == 15  # the taint item


def test_host_network_daemonset_tolerates_network_unavailable(tmp_path: Path):
    write(tmp_path, "ds.yaml", daemonset("device-plugin", extra_spec="hostNetwork: true\n"))
    spec = "taints:\n- {key: node.kubernetes.io/network-unavailable, effect: NoSchedule}\n"
    write(tmp_path, "n.yaml", node("gpu-a", all_labels(), spec=spec))
    assert desired(placement(tmp_path)) == {"nvidia-device-plugin-daemonset": 1}


def test_a_cordoned_node_still_gets_operand_pods(tmp_path: Path):
    lab_daemonsets(tmp_path)
    write(tmp_path, "n.yaml", node("gpu-a", all_labels(), spec="unschedulable: true\n"))
    p = placement(tmp_path)
    assert states(p, "gpu-a") == ALL_YES


@pytest.mark.parametrize(
    ("value", "running", "detail"),
    [
        ("true", True, None),
        ("false", False, "label nvidia.com/gpu.deploy.device-plugin=false"),
        ("True", False, 'label nvidia.com/gpu.deploy.device-plugin=True (only "true" matches)'),
        ("", False, 'label nvidia.com/gpu.deploy.device-plugin= (only "true" matches)'),
        (None, False, "label nvidia.com/gpu.deploy.device-plugin missing"),
    ],
)
def test_only_exactly_true_matches(tmp_path: Path, value, running, detail):
    write(tmp_path, "ds.yaml", daemonset("device-plugin"))
    labels = {} if value is None else {"device-plugin": value}
    write(tmp_path, "n.yaml", node("gpu-a", labels))
    cell = placement(tmp_path).cells["gpu-a"]["device-plugin"]
    assert cell.running is running
    assert [c.detail for c in cell.causes] == ([] if detail is None else [detail])


# --- which DaemonSets are operands ------------------------------------------------------------

AFFINITY = """\
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: nvidia.com/gpu.deploy.gpu-feature-discovery, operator: In, values: ["true"]}
"""


def _plain_ds(name: str, spec: str) -> str:
    return daemonset("x", name).replace(
        '      nodeSelector:\n        nvidia.com/gpu.deploy.x: "true"\n', spec
    )


@pytest.mark.parametrize(
    ("spec", "operand"),
    [
        ('      nodeSelector:\n        nvidia.com/gpu.deploy.dcgm: "true"\n', "dcgm"),
        ("      " + AFFINITY.replace("\n", "\n      ").rstrip() + "\n", "gpu-feature-discovery"),
        ('      nodeSelector:\n        nvidia.com/gpu.deploy.operands: "true"\n', None),
        ('      nodeSelector:\n        nvidia.com/gpu.deploy.unknown: "true"\n', None),
        ('      nodeSelector:\n        nvidia.com/gpu.present: "true"\n', None),
        (
            "      affinity:\n        nodeAffinity:\n"
            "          preferredDuringSchedulingIgnoredDuringExecution:\n"
            "          - weight: 1\n            preference:\n              matchExpressions:\n"
            "              - {key: nvidia.com/gpu.deploy.driver, operator: In, values: ['true']}\n",
            None,
        ),
    ],
)
def test_operand_daemonsets_are_found_by_their_deploy_label_selection(tmp_path, spec, operand):
    write(tmp_path, "ds.yaml", _plain_ds("some-ds", spec))
    write(tmp_path, "n.yaml", node("gpu-a", all_labels()))
    p = placement(tmp_path)
    assert [ds.operand for ds in p.daemonsets] == ([] if operand is None else [operand])
    assert p.mode == (MODE_NONE if operand is None else MODE_DAEMONSETS)


def test_affinity_selected_operand_explains_the_label(tmp_path: Path):
    spec = "      " + AFFINITY.replace("\n", "\n      ").rstrip() + "\n"
    write(tmp_path, "ds.yaml", _plain_ds("gfd", spec))
    write(tmp_path, "n.yaml", node("gpu-a", {"gpu-feature-discovery": "false"}))
    [cause] = placement(tmp_path).cells["gpu-a"]["gpu-feature-discovery"].causes
    assert cause.detail == "label nvidia.com/gpu.deploy.gpu-feature-discovery=false"


def test_other_selector_requirements_are_named(tmp_path: Path):
    write(
        tmp_path,
        "ds.yaml",
        daemonset("device-plugin").replace(
            '"true"\n', '"true"\n        kubernetes.io/arch: arm64\n', 1
        ),
    )
    write(tmp_path, "n.yaml", node("gpu-a", all_labels()))
    [cause] = placement(tmp_path).cells["gpu-a"]["device-plugin"].causes
    assert cause.kind == SELECTOR
    assert "node has no label kubernetes.io/arch" in cause.detail
    assert (cause.location.file, cause.location.line) == ("ds.yaml", 14)


def test_one_operand_several_daemonsets_precompiled_per_kernel(tmp_path: Path):
    kernel = "feature.node.kubernetes.io/kernel-version.full"
    for k in ("5.15.0-119-generic", "6.8.0-45-generic"):
        write(
            tmp_path,
            f"ds-{k}.yaml",
            daemonset("driver", f"nvidia-driver-{k}").replace(
                '"true"\n', f'"true"\n        {kernel}: {k}\n', 1
            ),
        )
    write(tmp_path, "a.yaml", node("a", {"driver": "true", kernel: "5.15.0-119-generic"}))
    write(tmp_path, "b.yaml", node("b", {"driver": "true", kernel: "6.8.0-52-generic"}))
    p = placement(tmp_path)
    assert p.operands == ("driver",)
    assert p.cells["a"]["driver"].daemonsets == ("nvidia-driver-5.15.0-119-generic",)
    assert not p.cells["b"]["driver"].running
    assert {c.kind for c in p.cells["b"]["driver"].causes} == {SELECTOR}
    assert desired(p) == {
        "nvidia-driver-5.15.0-119-generic": 1,
        "nvidia-driver-6.8.0-45-generic": 0,
    }


# --- nvidia.com/gpu.deploy.operands=false: the operator's mechanism, reproduced ----------------

CLUSTERPOLICY = cluster_policy("  operator: {defaultRuntime: containerd}\n")


def test_operands_false_without_an_operator_does_not_stop_handwritten_daemonsets(tmp_path):
    lab_daemonsets(tmp_path)
    write(tmp_path, "n.yaml", node("gpu-a", {**all_labels(), "operands": "false"}))
    p = placement(tmp_path)
    assert states(p, "gpu-a") == ALL_YES
    [note] = p.notes
    assert note.startswith("gpu-a: nvidia.com/gpu.deploy.operands=false has no effect here")


def test_operands_false_with_the_operator_removes_every_deploy_label(tmp_path: Path):
    lab_daemonsets(tmp_path)
    write(tmp_path, "cp.yaml", CLUSTERPOLICY)
    write(tmp_path, "n.yaml", node("gpu-a", {**all_labels(), "operands": "false"}))
    p = placement(tmp_path)
    assert p.mode == MODE_BOTH
    assert {cell.text for cell in p.cells["gpu-a"].values()} == {"no (operands=false)"}
    assert all(ds.desired_number_scheduled == 0 for ds in p.daemonsets)
    cause = p.cells["gpu-a"]["driver"].causes[0]
    assert cause.kind == OPERANDS_OFF and cause.location.line == 13


# --- operands derived from the operator configuration -----------------------------------------


def test_clusterpolicy_defaults_the_operator_labels_gpu_nodes(tmp_path: Path):
    write(tmp_path, "cp.yaml", CLUSTERPOLICY)
    write(tmp_path, "a.yaml", node("gpu-a"))
    write(tmp_path, "b.yaml", node("gpu-b", {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}))
    write(tmp_path, "c.yaml", node("cpu", gpu=False))
    p = placement(tmp_path)
    assert p.mode == MODE_OPERATOR
    assert p.operands == (
        "driver",
        "container-toolkit",
        "device-plugin",
        "gpu-feature-discovery",
        "dcgm-exporter",
        "dcgm",  # on when a ClusterPolicy leaves it unset
        "operator-validator",
        "mig-manager",
    )
    assert {op for op, c in p.cells["gpu-a"].items() if not c.running} == {"mig-manager"}
    assert all(c.running for c in p.cells["gpu-b"].values())  # MIG-capable
    assert "cpu" not in p.cells and p.hidden_nodes == 1
    assert all(ds.source == OPERATOR for ds in p.daemonsets)
    assert {ds.namespace for ds in p.daemonsets} == {"gpu-operator"}
    assert p.breaks == {}


HELMRELEASE = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: gpu-operator
  namespace: flux-system
spec:
  targetNamespace: nvidia-gpu-operator
  chart:
    spec:
      chart: gpu-operator
      version: v25.10.0
  values:
    driver:
      enabled: false
    toolkit:
      enabled: false
"""


def test_helm_values_disabled_operands_are_provided_by_the_host(tmp_path: Path):
    write(tmp_path, "hr.yaml", HELMRELEASE)
    write(tmp_path, "a.yaml", node("gpu-a"))
    p = placement(tmp_path)
    # dcgm is off by default in the chart (and not written): no column
    assert "dcgm" not in p.operands
    assert states(p, "gpu-a")["driver"] == "no (disabled)"
    assert states(p, "gpu-a")["container-toolkit"] == "no (disabled)"
    cause = p.cells["gpu-a"]["driver"].causes[0]
    assert cause.kind == DISABLED and (cause.location.line, cause.location.column) == (14, 7)
    assert p.breaks == {}  # host driver and host toolkit
    assert {ds.namespace for ds in p.daemonsets} == {"nvidia-gpu-operator"}


def test_an_admins_false_label_survives_the_operator_and_breaks_the_chain(tmp_path: Path):
    write(tmp_path, "cp.yaml", CLUSTERPOLICY)
    write(tmp_path, "a.yaml", node("gpu-a", {"container-toolkit": "false"}))
    p = placement(tmp_path)
    [chain] = p.breaks["gpu-a"]
    assert chain.missing == "container-toolkit" and chain.waits is True
    assert chain.running == (
        "device-plugin",
        "gpu-feature-discovery",
        "dcgm-exporter",
        "dcgm",
        "operator-validator",
    )


TOLERATIONS = """\
  daemonsets:
    tolerations:
    - {key: dedicated, operator: Exists, effect: NoSchedule}
"""


@pytest.mark.parametrize(("custom", "counted"), [(False, 1), (True, 0)])
def test_daemonsets_tolerations_replace_the_default(tmp_path: Path, custom, counted):
    write(tmp_path, "cp.yaml", CLUSTERPOLICY + (TOLERATIONS if custom else ""))
    taints = "taints:\n- {key: nvidia.com/gpu, value: present, effect: NoSchedule}\n"
    write(tmp_path, "a.yaml", node("gpu-a", spec=taints))
    p = placement(tmp_path)
    # the MIG manager is labelled on MIG-capable nodes only
    counts = {ds.desired_number_scheduled for ds in p.daemonsets if ds.operand != "mig-manager"}
    assert counts == {counted}
    if custom:
        assert {c.kind for cell in p.cells["gpu-a"].values() for c in cell.causes} >= {TAINT}


def test_repo_daemonsets_win_over_the_configuration_for_their_operand(tmp_path: Path):
    write(tmp_path, "cp.yaml", CLUSTERPOLICY + "  devicePlugin: {enabled: false}\n")
    write(tmp_path, "ds.yaml", daemonset("device-plugin", "my-device-plugin"))
    write(tmp_path, "a.yaml", node("gpu-a"))
    p = placement(tmp_path)
    sources = {ds.operand: (ds.source, ds.name) for ds in p.daemonsets}
    assert sources["device-plugin"] == (REPO, "my-device-plugin")
    assert sources["driver"] == (OPERATOR, "nvidia-driver-daemonset")
    assert states(p, "gpu-a")["device-plugin"] == "yes"
    assert any("disables it, but DaemonSet(s) gpu-operator/my-device-plugin" in n for n in p.notes)


def test_no_operands_anywhere(tmp_path: Path):
    write(tmp_path, "a.yaml", node("gpu-a", all_labels()))
    p = placement(tmp_path)
    assert (p.mode, p.operands, p.daemonsets, p.breaks) == (MODE_NONE, (), [], {})
