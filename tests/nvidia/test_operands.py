"""The operand catalog, its defaults, tolerations and node labelling."""

from __future__ import annotations

import pytest

from gpudrv_check.nvidia.operands import (
    OPERAND_NAMES,
    OPERANDS,
    default_operand_toleration,
    dependencies,
    deploy_label,
    driver_settings,
    expected_deploy_labels,
    has_mig_capable_gpu,
    operand_for_deploy_label,
    operands_from_operator_config,
    operands_on_node,
    operator_config_problems,
    operator_tolerations,
    workload_config,
)

CATALOG = [
    # name, ClusterPolicy/Helm key, DaemonSet, CR default when unset, chart default
    ("driver", "driver", "nvidia-driver-daemonset", True, True),
    ("container-toolkit", "toolkit", "nvidia-container-toolkit-daemonset", True, True),
    ("device-plugin", "devicePlugin", "nvidia-device-plugin-daemonset", True, True),
    ("gpu-feature-discovery", "gfd", "gpu-feature-discovery", True, True),
    ("dcgm-exporter", "dcgmExporter", "nvidia-dcgm-exporter", True, True),
    ("dcgm", "dcgm", "nvidia-dcgm", True, False),
    # assets/state-mps-control-daemon: selects device-plugin nodes with nvidia.com/mps.capable
    ("mps-control-daemon", "devicePlugin", "nvidia-device-plugin-mps-control-daemon", True, True),
    ("operator-validator", "validator", "nvidia-operator-validator", None, None),
    ("node-status-exporter", "nodeStatusExporter", "nvidia-node-status-exporter", False, False),
    ("mig-manager", "migManager", "nvidia-mig-manager", True, True),
    (
        "sandbox-device-plugin",
        "sandboxDevicePlugin",
        "nvidia-sandbox-device-plugin-daemonset",
        False,
        True,
    ),
    (  # assets/state-kata-device-plugin, v26.3 on
        "kata-sandbox-device-plugin",
        "kataSandboxDevicePlugin",
        "nvidia-kata-sandbox-device-plugin-daemonset",
        False,
        True,
    ),
    ("sandbox-validator", None, "nvidia-sandbox-validator", None, None),
    ("vfio-manager", "vfioManager", "nvidia-vfio-manager", False, True),
    ("vgpu-manager", "vgpuManager", "nvidia-vgpu-manager-daemonset", False, False),
    ("vgpu-device-manager", "vgpuDeviceManager", "nvidia-vgpu-device-manager", False, True),
    ("kata-manager", "kataManager", "nvidia-kata-manager", False, False),
    ("cc-manager", "ccManager", "nvidia-cc-manager", False, True),
]


@pytest.mark.parametrize(("name", "key", "daemonset", "crd", "chart"), CATALOG)
def test_catalog(name, key, daemonset, crd, chart) -> None:
    entry = OPERANDS[name]
    assert (entry.spec_key, entry.daemonset) == (key, daemonset)
    assert (entry.default_enabled, entry.chart_default_enabled) == (crd, chart)
    label = "device-plugin" if name == "mps-control-daemon" else name
    assert deploy_label(name) == f"nvidia.com/gpu.deploy.{label}"
    assert operand_for_deploy_label(f"nvidia.com/gpu.deploy.{label}") == label


# controllers/state_manager.go isStateEnabled per release; getEffectiveStateLabels (v26.3 on)
@pytest.mark.parametrize(
    ("release", "mode", "on"),
    [
        ("v25.10.0", None, {"sandbox-device-plugin", "kata-manager", "cc-manager"}),
        ("v25.10.0", "kata", {"sandbox-device-plugin", "kata-manager", "cc-manager"}),  # no modes
        ("v26.3.0", None, {"sandbox-device-plugin", "kata-manager"}),  # kubevirt: the default
        ("v26.3.0", "kata", {"kata-sandbox-device-plugin", "kata-manager", "cc-manager"}),
        ("v26.7.0", "kubevirt", {"sandbox-device-plugin"}),  # kata-manager: always off
        ("v26.7.0", "kata", {"kata-sandbox-device-plugin", "cc-manager"}),
    ],
)
def test_sandbox_operands_per_release(release, mode, on) -> None:
    values = {
        "sandboxWorkloads": {"enabled": True, **({"mode": mode} if mode else {})},
        **{
            key: {"enabled": True}
            for key in (
                "sandboxDevicePlugin",
                "kataSandboxDevicePlugin",
                "kataManager",
                "ccManager",
            )
        },
    }
    enabled = operands_from_operator_config(values, "clusterpolicy", release)
    names = {"sandbox-device-plugin", "kata-sandbox-device-plugin", "kata-manager", "cc-manager"}
    assert {name for name in names if enabled[name]} == on
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.workload.config": "vm-passthrough"}
    deploy = expected_deploy_labels(labels, True, "container", release, mode)
    kata = "nvidia.com/gpu.deploy.kata-sandbox-device-plugin" in deploy
    assert kata is (mode == "kata" and release != "v25.10.0")
    assert ("nvidia.com/gpu.deploy.sandbox-device-plugin" in deploy) is not kata


def test_mps_control_daemon_needs_mps_capable_and_toolkit_ready() -> None:
    base = {"nvidia.com/gpu.deploy.device-plugin": "true"}
    assert "mps-control-daemon" not in operands_on_node(base)
    assert "mps-control-daemon" in operands_on_node({**base, "nvidia.com/mps.capable": "true"})
    assert dependencies("mps-control-daemon") == ("container-toolkit", "operator-validator")


def test_catalog_is_complete() -> None:
    assert list(OPERAND_NAMES) == [row[0] for row in CATALOG]


@pytest.mark.parametrize(
    "key",
    [
        "nvidia.com/gpu.deploy.operands",
        "nvidia.com/gpu.deploy.unknown",
        "nvidia.com/gpu.present",
        "gpu.deploy.driver",
        "",
        None,
        7,
    ],
)
def test_not_an_operand_label(key) -> None:
    assert operand_for_deploy_label(key) is None


@pytest.mark.parametrize("name", ["operands", "toolkit", None, 3])
def test_deploy_label_unknown(name) -> None:
    assert deploy_label(name) is None


@pytest.mark.parametrize(
    ("name", "workload", "needs"),
    [
        ("driver", None, ()),
        ("container-toolkit", None, ("driver",)),
        ("device-plugin", None, ("container-toolkit", "operator-validator")),  # toolkit-ready
        (
            "gpu-feature-discovery",
            None,
            ("container-toolkit", "operator-validator"),
        ),  # toolkit-ready
        ("dcgm", None, ("container-toolkit", "operator-validator")),  # toolkit-ready
        ("dcgm-exporter", None, ("container-toolkit", "operator-validator")),  # toolkit-ready
        ("mig-manager", None, ("container-toolkit", "operator-validator")),  # toolkit-ready
        ("operator-validator", None, ("driver", "container-toolkit", "device-plugin")),
        ("node-status-exporter", None, ()),
        ("vgpu-device-manager", None, ("vgpu-manager",)),
        ("sandbox-device-plugin", None, ()),
        ("sandbox-device-plugin", "vm-passthrough", ("vfio-manager",)),
        ("sandbox-device-plugin", "vm-vgpu", ("vgpu-device-manager",)),
        ("sandbox-validator", "vm-vgpu", ("vgpu-manager", "vgpu-device-manager")),
        ("unknown", None, ()),
        (None, None, ()),
    ],
)
def test_dependencies(name, workload, needs) -> None:
    assert dependencies(name, workload) == needs


def test_default_toleration_is_a_fresh_copy() -> None:
    toleration = default_operand_toleration()
    assert toleration == {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    toleration["key"] = "changed"
    assert default_operand_toleration()["key"] == "nvidia.com/gpu"


CUSTOM = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
DEFAULT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({}, [DEFAULT]),
        ({"daemonsets": {}}, [DEFAULT]),
        ({"daemonsets": {"tolerations": []}}, [DEFAULT]),
        ({"daemonsets": {"tolerations": None}}, [DEFAULT]),
        ({"daemonsets": {"tolerations": [CUSTOM]}}, [CUSTOM]),  # replaces, does not add
        ({"daemonsets": {"tolerations": [CUSTOM, DEFAULT]}}, [CUSTOM, DEFAULT]),
        ({"daemonsets": {"tolerations": [CUSTOM, "junk"]}}, [CUSTOM]),
        ({"kind": "ClusterPolicy", "spec": {"daemonsets": {"tolerations": [CUSTOM]}}}, [CUSTOM]),
        ("not a mapping", [DEFAULT]),
    ],
)
def test_operator_tolerations(values, expected) -> None:
    assert operator_tolerations(values) == expected


ALL_OFF_SANDBOX = {
    "sandbox-device-plugin",
    "sandbox-validator",
    "vfio-manager",
    "vgpu-manager",
    "vgpu-device-manager",
    "kata-manager",
    "cc-manager",
}


@pytest.mark.parametrize(("source", "dcgm"), [("clusterpolicy", True), ("helm", False)])
def test_defaults_when_unset(source, dcgm) -> None:
    enabled = operands_from_operator_config({}, source)
    assert enabled["dcgm"] is dcgm
    assert enabled["node-status-exporter"] is False
    for name in (
        "driver",
        "container-toolkit",
        "device-plugin",
        "gpu-feature-discovery",
        "dcgm-exporter",
        "operator-validator",
        "mig-manager",
    ):
        assert enabled[name] is True
    for name in ALL_OFF_SANDBOX:
        assert enabled[name] is False


@pytest.mark.parametrize(
    ("values", "source", "name", "expected"),
    [
        ({"driver": {"enabled": False}}, "clusterpolicy", "driver", False),
        ({"toolkit": {"enabled": False}}, "helm", "container-toolkit", False),
        ({"devicePlugin": {"enabled": False}}, "clusterpolicy", "device-plugin", False),
        ({"dcgm": {"enabled": True}}, "helm", "dcgm", True),
        ({"nodeStatusExporter": {"enabled": True}}, "clusterpolicy", "node-status-exporter", True),
        ({"validator": {"enabled": False}}, "clusterpolicy", "operator-validator", True),
        # the chart renders "false" unquoted, a ClusterPolicy would reject the string
        ({"driver": {"enabled": "false"}}, "helm", "driver", False),
        ({"driver": {"enabled": "false"}}, "clusterpolicy", "driver", True),
        ({"driver": {"enabled": 0}}, "clusterpolicy", "driver", True),
        ({"driver": "off"}, "clusterpolicy", "driver", True),
        # sandbox operands need sandboxWorkloads.enabled
        (
            {"sandboxDevicePlugin": {"enabled": True}},
            "clusterpolicy",
            "sandbox-device-plugin",
            False,
        ),
        (
            {"sandboxWorkloads": {"enabled": True}, "sandboxDevicePlugin": {"enabled": True}},
            "clusterpolicy",
            "sandbox-device-plugin",
            True,
        ),
        ({"sandboxWorkloads": {"enabled": True}}, "clusterpolicy", "sandbox-device-plugin", False),
        ({"sandboxWorkloads": {"enabled": True}}, "helm", "sandbox-device-plugin", True),
        ({"sandboxWorkloads": {"enabled": True}}, "clusterpolicy", "sandbox-validator", True),
        ({"sandboxWorkloads": {"enabled": True}}, "helm", "vgpu-manager", False),
        (
            {"kind": "ClusterPolicy", "spec": {"dcgm": {"enabled": False}}},
            "clusterpolicy",
            "dcgm",
            False,
        ),
    ],
)
def test_operands_from_operator_config(values, source, name, expected) -> None:
    assert operands_from_operator_config(values, source)[name] is expected


def test_non_mapping_config_uses_defaults() -> None:
    assert operands_from_operator_config(None) == operands_from_operator_config({})


def test_operator_config_problems() -> None:
    values = {
        "driver": {"enabled": "false"},
        "toolkit": {"enabled": True},
        "dcgm": {"enabled": "yes"},
    }
    assert operator_config_problems(values) == [
        "driver.enabled: expected true or false, got 'false'",
        "dcgm.enabled: expected true or false, got 'yes'",
    ]
    assert operator_config_problems(values, "helm") == [
        "dcgm.enabled: expected true or false, got 'yes'",
    ]


def test_driver_settings_defaults() -> None:
    settings = driver_settings({})
    assert (settings.enabled, settings.use_precompiled, settings.use_nvidia_driver_crd) == (
        True,
        False,
        False,
    )
    assert (settings.repository, settings.image, settings.version) == (None, None, None)
    assert settings.upgrade_policy["autoUpgrade"] is False
    helm = driver_settings({}, "helm")
    assert (helm.repository, helm.image) == ("nvcr.io/nvidia", "driver")
    assert helm.upgrade_policy["autoUpgrade"] is True


def test_driver_settings_read_the_same_shape() -> None:
    section = {
        "enabled": True,
        "usePrecompiled": True,
        "repository": "registry.local/nvidia",
        "image": "driver",
        "version": 550,
        "upgradePolicy": {"drain": {"enable": True}},
    }
    for source, values in (
        ("clusterpolicy", {"spec": {"driver": section}, "kind": "ClusterPolicy"}),
        ("helm", {"driver": section}),
    ):
        settings = driver_settings(values, source)
        assert settings.use_precompiled is True
        assert (settings.repository, settings.image, settings.version) == (
            "registry.local/nvidia",
            "driver",
            "550",
        )
        assert settings.upgrade_policy["drain"]["enable"] is True


@pytest.mark.parametrize(
    ("values", "source", "expected"),
    [
        ({"driver": {"useNvidiaDriverCRD": True}}, "clusterpolicy", True),
        ({"driver": {"nvidiaDriverCRD": {"enabled": True}}}, "helm", True),
        ({"driver": {"useNvidiaDriverCRD": True}}, "helm", False),
    ],
)
def test_nvidia_driver_crd_switch(values, source, expected) -> None:
    assert driver_settings(values, source).use_nvidia_driver_crd is expected


CONTAINER_LABELS = {
    "nvidia.com/gpu.deploy.driver": "true",
    "nvidia.com/gpu.deploy.container-toolkit": "true",
    "nvidia.com/gpu.deploy.device-plugin": "true",
    "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
    "nvidia.com/gpu.deploy.dcgm": "true",
    "nvidia.com/gpu.deploy.dcgm-exporter": "true",
    "nvidia.com/gpu.deploy.node-status-exporter": "true",
    "nvidia.com/gpu.deploy.operator-validator": "true",
}
GPU = {"nvidia.com/gpu.present": "true"}


def test_container_node_labels() -> None:
    assert expected_deploy_labels(GPU) == CONTAINER_LABELS


def test_admin_values_are_kept() -> None:
    labels = {**GPU, "nvidia.com/gpu.deploy.driver": "false"}
    assert expected_deploy_labels(labels)["nvidia.com/gpu.deploy.driver"] == "false"
    labels = {**GPU, "nvidia.com/gpu.deploy.driver": "pre-installed"}
    assert expected_deploy_labels(labels)["nvidia.com/gpu.deploy.driver"] == "pre-installed"


def test_operands_false_removes_everything() -> None:
    labels = {**GPU, **CONTAINER_LABELS, "nvidia.com/gpu.deploy.operands": "false"}
    assert expected_deploy_labels(labels) == {}


DP = {"nvidia.com/gpu.deploy.device-plugin": "true"}


@pytest.mark.parametrize(
    ("labels", "present", "release", "expected"),
    [
        # v25.10.0 / v26.3.0 labelGPUNodes: a node never marked present keeps its labels
        (DP, None, "v25.10.0", DP),
        (DP, None, "v26.3.0", DP),
        # v26.7.0 nodelabeling_controller.go updateGPUStateLabels: !hasCommonGPULabel ->
        # removeAllGPUStateLabels
        (DP, None, "v26.7.0", {}),
        (DP, None, None, {}),
        # labelGPUNodes (v25.10/v26.3), reconcileCommonGPULabel (v26.7): gpu.present=true
        # without an NVIDIA PCI label is reset to false and the state labels go
        ({**GPU, **DP}, False, "v25.10.0", {}),
        ({**GPU, **DP}, False, "v26.3.0", {}),
        ({**GPU, **DP}, False, "v26.7.0", {}),
    ],
)
def test_non_gpu_node_labels_per_release(labels, present, release, expected) -> None:
    deploy = expected_deploy_labels(labels, False, "container", release, None, present)
    assert deploy == expected
    assert expected_deploy_labels(None) == {}


@pytest.mark.parametrize(
    ("labels", "mig"),
    [
        ({"nvidia.com/mig.capable": "true"}, True),
        ({"nvidia.com/mig.capable": "false", "nvidia.com/gpu.product": "NVIDIA-A100"}, False),
        ({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}, True),
        ({"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, True),
        ({"nvidia.com/gpu.product": "NVIDIA-A30"}, True),
        ({"nvidia.com/gpu.product": "Tesla-T4"}, False),
        (
            {"nvidia.com/mig.capable": "true", "nvidia.com/vgpu.host-driver-version": "535.54"},
            False,
        ),
        ({}, False),
        (None, False),
    ],
)
def test_mig_capable(labels, mig) -> None:
    assert has_mig_capable_gpu(labels) is mig
    if labels is not None:
        expected = expected_deploy_labels({**GPU, **labels})
        assert ("nvidia.com/gpu.deploy.mig-manager" in expected) is mig


@pytest.mark.parametrize(
    ("labels", "sandbox", "default", "expected"),
    [
        ({"nvidia.com/gpu.workload.config": "vm-passthrough"}, False, "container", "container"),
        ({"nvidia.com/gpu.workload.config": "vm-passthrough"}, True, "container", "vm-passthrough"),
        ({"nvidia.com/gpu.workload.config": "vm-vgpu"}, True, "container", "vm-vgpu"),
        ({"nvidia.com/gpu.workload.config": "bogus"}, True, "vm-passthrough", "vm-passthrough"),
        ({}, True, "container", "container"),
        ({}, True, "bogus", "container"),
        (None, True, "vm-vgpu", "vm-vgpu"),
    ],
)
def test_workload_config(labels, sandbox, default, expected) -> None:
    assert workload_config(labels, sandbox, default) == expected


def test_vm_passthrough_node_labels() -> None:
    labels = {
        **GPU,
        **CONTAINER_LABELS,
        "nvidia.com/gpu.deploy.mig-manager": "true",
        "nvidia.com/gpu.workload.config": "vm-passthrough",
    }
    assert expected_deploy_labels(labels, sandbox_enabled=True) == {
        "nvidia.com/gpu.deploy.sandbox-device-plugin": "true",
        "nvidia.com/gpu.deploy.sandbox-validator": "true",
        "nvidia.com/gpu.deploy.vfio-manager": "true",
        "nvidia.com/gpu.deploy.kata-manager": "true",
        "nvidia.com/gpu.deploy.cc-manager": "true",
    }


def test_vm_vgpu_node_labels() -> None:
    labels = {**GPU, "nvidia.com/gpu.workload.config": "vm-vgpu"}
    assert set(expected_deploy_labels(labels, sandbox_enabled=True)) == {
        "nvidia.com/gpu.deploy.sandbox-device-plugin",
        "nvidia.com/gpu.deploy.vgpu-manager",
        "nvidia.com/gpu.deploy.vgpu-device-manager",
        "nvidia.com/gpu.deploy.sandbox-validator",
        "nvidia.com/gpu.deploy.cc-manager",
    }


def test_operands_on_node() -> None:
    labels = {
        "nvidia.com/gpu.deploy.driver": "false",
        "nvidia.com/gpu.deploy.device-plugin": "true",
        "nvidia.com/gpu.deploy.container-toolkit": "True",  # not exactly "true": no match
        "nvidia.com/gpu.deploy.dcgm": "true",
    }
    assert operands_on_node(labels) == ("device-plugin", "dcgm")
    enabled = operands_from_operator_config({}, "helm")
    assert operands_on_node(labels, enabled) == ("device-plugin",)
    assert operands_on_node(None) == ()


# addGPUStateLabels / removeGPUStateLabels per release: an empty value is absent from v26.7 on;
# a stray state label of another workload type is removed in every release
@pytest.mark.parametrize(
    ("release", "driver"),
    [("v25.10.0", ""), ("v26.3.0", ""), ("v26.7.0", "true"), (None, "true")],
)
def test_empty_and_stray_state_labels_per_release(release, driver) -> None:
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.deploy.driver": "",
        "nvidia.com/gpu.deploy.device-plugin": "false",  # an admin's value stays
        "nvidia.com/gpu.deploy.sandbox-device-plugin": "true",  # stray: a VM operand
        "nvidia.com/gpu.deploy.vfio-manager": "true",
    }
    deploy = expected_deploy_labels(labels, False, "container", release)
    assert deploy["nvidia.com/gpu.deploy.driver"] == driver
    assert deploy["nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert "nvidia.com/gpu.deploy.sandbox-device-plugin" not in deploy
    assert "nvidia.com/gpu.deploy.vfio-manager" not in deploy
