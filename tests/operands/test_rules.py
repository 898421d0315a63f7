"""GPU030-GPU032: which node, which cause, which line and column."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.core.finding import Severity
from tests.conftest import cluster_policy, helm_release, write
from tests.operands.build import all_labels, daemonset, findings, lab_daemonsets, node

CLUSTERPOLICY = cluster_policy("  operator: {defaultRuntime: containerd}\n")


def at(f) -> tuple[str, int, int]:
    return (f.location.file, f.location.line, f.location.column)


# --- GPU030 operand-chain-broken ----------------------------------------------------------------


def test_gpu030_device_plugin_without_toolkit_missing_label(tmp_path: Path):
    lab_daemonsets(tmp_path)
    write(tmp_path, "nodes/a.yaml", node("gpu-a", all_labels()))
    write(tmp_path, "nodes/c.yaml", node("gpu-c", {"driver": "true", "device-plugin": "true"}))
    [f] = findings(tmp_path, "GPU030")
    assert f.severity == Severity.ERROR
    assert at(f) == ("nodes/c.yaml", 5, 3)  # labels: the toolkit label is missing
    assert f.object.name == "gpu-c"
    assert f.message == (
        "node gpu-c runs device-plugin without container-toolkit: label "
        "nvidia.com/gpu.deploy.container-toolkit missing (nodes/c.yaml:5); the device plugin "
        "advertises nvidia.com/gpu there, so pods are scheduled onto the node and never see a "
        "GPU, and nothing reports an error"
    )
    assert "kubectl label node gpu-c nvidia.com/gpu.deploy.container-toolkit=true" in f.hint


def test_gpu030_points_at_a_false_label(tmp_path: Path):
    lab_daemonsets(tmp_path)
    write(tmp_path, "n.yaml", node("gpu-a", {**all_labels(), "container-toolkit": "false"}))
    [f] = findings(tmp_path, "GPU030")
    assert at(f) == ("n.yaml", 9, 5)
    assert "runs device-plugin, gpu-feature-discovery and dcgm-exporter without " in f.message
    assert f.path == ["metadata", "labels", "nvidia.com/gpu.deploy.container-toolkit"]


def test_gpu030_points_at_the_taint_that_keeps_the_toolkit_away(tmp_path: Path):
    lab_daemonsets(tmp_path, ("driver", "device-plugin"))
    write(tmp_path, "operands/tk.yaml", daemonset("container-toolkit", tolerations=""))
    spec = "taints:\n- {key: nvidia.com/gpu, value: present, effect: NoSchedule}\n"
    write(tmp_path, "n.yaml", node("gpu-a", all_labels(), spec=spec))
    [f] = findings(tmp_path, "GPU030")
    assert at(f) == ("n.yaml", 15, 5)
    assert "taint nvidia.com/gpu=present:NoSchedule not tolerated (n.yaml:15)" in f.message
    assert f.hint.startswith("Tolerate the taint in the container-toolkit DaemonSet")


@pytest.mark.parametrize(
    ("driver", "config", "broken"),
    [
        (None, None, True),  # nobody said the driver is on the host
        ("false", None, False),  # pre-installed on this node
        ("True", None, True),
        (None, "  driver: {enabled: false}\n", False),  # pre-installed cluster-wide
    ],
)
def test_gpu030_driver_link(tmp_path: Path, driver, config, broken):
    lab_daemonsets(tmp_path)
    if config is not None:
        write(tmp_path, "cp.yaml", CLUSTERPOLICY + config)
    labels = all_labels(skip=("driver",))
    if driver is not None:
        labels["driver"] = driver
    write(tmp_path, "n.yaml", node("gpu-a", labels))
    found = findings(tmp_path, "GPU030")
    assert [f.message.split(":")[0] for f in found] == (
        ["node gpu-a runs container-toolkit without driver"] if broken else []
    )


def test_gpu030_operator_pods_wait_in_init_containers(tmp_path: Path):
    write(tmp_path, "cp.yaml", CLUSTERPOLICY)
    write(tmp_path, "n.yaml", node("gpu-a", {"container-toolkit": "false"}))
    [f] = findings(tmp_path, "GPU030")
    assert at(f) == ("n.yaml", 8, 5)
    assert "wait in init containers for container-toolkit and never start" in f.message


def test_gpu030_toolkit_disabled_cluster_wide_is_the_hosts(tmp_path: Path):
    write(tmp_path, "cp.yaml", CLUSTERPOLICY + "  toolkit: {enabled: false}\n")
    write(tmp_path, "n.yaml", node("gpu-a"))
    assert findings(tmp_path, "GPU030") == []


def test_gpu030_ignores_dependencies_the_repo_does_not_describe(tmp_path: Path):
    write(tmp_path, "ds.yaml", daemonset("device-plugin"))  # no toolkit DaemonSet at all
    write(tmp_path, "n.yaml", node("gpu-a", all_labels()))
    assert findings(tmp_path, "GPU030") == []


def _pooled(operand: str, count: int) -> list[str]:
    """``count`` DaemonSets of ``operand``, `<operand>-<i>`, each selecting only the nodes of
    pool p<i> (example.com/pool)."""
    selector = f'        nvidia.com/gpu.deploy.{operand}: "true"\n'
    return [
        daemonset(operand, f"{operand}-{i}").replace(
            selector, selector + f"        example.com/pool: p{i}\n"
        )
        for i in range(count)
    ]


def test_gpu030_cites_five_causes_and_counts_the_rest(tmp_path: Path):
    """Seven container-toolkit DaemonSets, one per pool, none of them for gpu-a's: five causes
    cited, two counted, and the message still ends with the consequence (GPU030 `check`,
    rules/wording.py `clauses`)."""
    lab_daemonsets(tmp_path, ("driver", "device-plugin"))
    write(tmp_path, "operands/toolkit.yaml", "---\n".join(_pooled("container-toolkit", 7)))
    write(tmp_path, "n.yaml", node("gpu-a", {**all_labels(), "example.com/pool": "other"}))
    [f] = findings(tmp_path, "GPU030")
    assert f.message.count("node has example.com/pool=other, not p") == 5
    assert "; DaemonSet container-toolkit-4: node has" in f.message
    assert "container-toolkit-5" not in f.message
    assert "(operands/toolkit.yaml:" in f.message
    assert "; and 2 more reasons; the device plugin advertises nvidia.com/gpu there" in f.message
    assert f.message.endswith("and nothing reports an error")


# --- GPU031 gpu-node-missing-operands ---------------------------------------------------------


def test_gpu031_node_no_operand_reaches_because_of_a_taint(tmp_path: Path):
    lab_daemonsets(tmp_path)
    write(tmp_path, "a.yaml", node("gpu-a", all_labels()))
    spec = "taints:\n- {key: dedicated, value: inference, effect: NoSchedule}\n"
    write(tmp_path, "t.yaml", node("gpu-t", all_labels(), spec=spec))
    [f] = findings(tmp_path, "GPU031")
    assert f.severity == Severity.WARNING
    assert at(f) == ("t.yaml", 15, 5)
    assert f.message == (
        "GPU node gpu-t gets no GPU Operator operand (driver, container-toolkit, device-plugin, "
        "gpu-feature-discovery, dcgm-exporter): taint dedicated=inference:NoSchedule not "
        "tolerated (t.yaml:15)"
    )


def test_gpu031_operands_false_with_the_operator(tmp_path: Path):
    write(tmp_path, "cp.yaml", CLUSTERPOLICY)
    write(tmp_path, "a.yaml", node("gpu-a"))
    write(tmp_path, "b.yaml", node("gpu-b", {"operands": "false"}))
    [f] = findings(tmp_path, "GPU031")
    assert at(f) == ("b.yaml", 8, 5)
    assert "gpu-b gets no GPU Operator operand" in f.message
    assert "nvidia.com/gpu.deploy.operands=false: the operator removes every" in f.message


def test_gpu031_all_labels_false(tmp_path: Path):
    lab_daemonsets(tmp_path)
    write(tmp_path, "a.yaml", node("gpu-a", all_labels("false")))
    [f] = findings(tmp_path, "GPU031")
    assert at(f) == ("a.yaml", 9, 5)  # the first operand that is meant to run: the toolkit
    assert "container-toolkit: label nvidia.com/gpu.deploy.container-toolkit=false" in f.message


def test_gpu031_lacks_an_operand_every_other_gpu_node_runs(tmp_path: Path):
    lab_daemonsets(tmp_path)
    write(tmp_path, "a.yaml", node("gpu-a", all_labels()))
    write(tmp_path, "b.yaml", node("gpu-b", all_labels()))
    write(tmp_path, "c.yaml", node("gpu-c", all_labels(skip=("dcgm-exporter",))))
    [f] = findings(tmp_path, "GPU031")
    assert at(f) == ("c.yaml", 5, 3)
    assert f.message == (
        "GPU node gpu-c lacks dcgm-exporter, which runs on every other GPU node (2): label "
        "nvidia.com/gpu.deploy.dcgm-exporter missing (c.yaml:5)"
    )


@pytest.mark.parametrize(
    "labels_c",
    [
        {**all_labels(), "driver": "false"},  # pre-installed driver: on purpose
        {
            "driver": "true",
            "device-plugin": "true",
            "gpu-feature-discovery": "true",
            "dcgm-exporter": "true",
        },  # the toolkit: GPU030's finding, not a second one
    ],
)
def test_gpu031_leaves_intended_and_chain_gaps_alone(tmp_path: Path, labels_c):
    lab_daemonsets(tmp_path)
    write(tmp_path, "a.yaml", node("gpu-a", all_labels()))
    write(tmp_path, "c.yaml", node("gpu-c", labels_c))
    assert findings(tmp_path, "GPU031") == []


def test_gpu031_mig_manager_only_on_mig_capable_nodes(tmp_path: Path):
    write(tmp_path, "cp.yaml", CLUSTERPOLICY)
    a100 = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
    write(tmp_path, "a.yaml", node("gpu-a", a100))
    write(tmp_path, "b.yaml", node("gpu-b", a100))
    write(tmp_path, "c.yaml", node("gpu-c", {"nvidia.com/gpu.product": "Tesla-T4"}))
    assert findings(tmp_path, "GPU031") == []


def test_gpu031_single_gpu_node_has_nobody_to_compare_with(tmp_path: Path):
    lab_daemonsets(tmp_path)
    write(tmp_path, "a.yaml", node("gpu-a", all_labels(skip=("dcgm-exporter",))))
    assert findings(tmp_path, "GPU031") == []


def test_gpu031_cites_five_causes_and_counts_the_rest(tmp_path: Path):
    """Seven dcgm-exporter DaemonSets, one per pool: gpu-a and gpu-b run one each, gpu-c none;
    its message cites five causes and counts two (GPU031 `check`, rules/wording.py
    `clauses`)."""
    lab_daemonsets(tmp_path, ("driver", "container-toolkit", "device-plugin"))
    write(tmp_path, "operands/dcgm.yaml", "---\n".join(_pooled("dcgm-exporter", 7)))
    for name, pool in (("gpu-a", "p0"), ("gpu-b", "p1"), ("gpu-c", "other")):
        labels = {**all_labels(skip=("gpu-feature-discovery",)), "example.com/pool": pool}
        write(tmp_path, f"{name}.yaml", node(name, labels))
    [f] = findings(tmp_path, "GPU031")
    assert f.message.startswith(
        "GPU node gpu-c lacks dcgm-exporter, which runs on every other GPU node (2): DaemonSet "
    )
    assert f.message.count("node has example.com/pool=other, not p") == 5
    assert "dcgm-exporter-5" not in f.message
    assert f.message.endswith("not p4 (operands/dcgm.yaml:102); and 2 more reasons")


# --- GPU032 operand-taint-not-tolerated -------------------------------------------------------


def test_gpu032_handwritten_daemonset_at_its_tolerations(tmp_path: Path):
    write(tmp_path, "ds.yaml", daemonset("device-plugin"))
    spec = "taints:\n- {key: dedicated, value: inference, effect: NoSchedule}\n"
    write(tmp_path, "a.yaml", node("gpu-a", all_labels(), spec=spec))
    [f] = findings(tmp_path, "GPU032")
    assert f.severity == Severity.WARNING
    assert at(f) == ("ds.yaml", 14, 7)
    assert f.message == (
        "DaemonSet gpu-operator/nvidia-device-plugin-daemonset (device-plugin) does not "
        "tolerate taint dedicated=inference:NoSchedule on GPU node(s) gpu-a: the DaemonSet "
        "controller does not count them in desiredNumberScheduled, so device-plugin never "
        "runs there"
    )
    assert "{key: dedicated, operator: Exists, effect: NoSchedule}" in f.hint


def test_gpu032_daemonset_without_tolerations_points_at_its_pod_spec(tmp_path: Path):
    write(tmp_path, "ds.yaml", daemonset("device-plugin", tolerations=""))
    spec = "taints:\n- {key: nvidia.com/gpu, value: present, effect: NoSchedule}\n"
    write(tmp_path, "a.yaml", node("gpu-a", all_labels(), spec=spec))
    [f] = findings(tmp_path, "GPU032")
    assert at(f) == ("ds.yaml", 11, 5)


def test_gpu032_custom_daemonsets_tolerations_without_nvidia_gpu(tmp_path: Path):
    write(
        tmp_path,
        "cp.yaml",
        CLUSTERPOLICY
        + "  daemonsets:\n    tolerations:\n"
        + "    - {key: dedicated, operator: Exists, effect: NoSchedule}\n",
    )
    taint = "taints:\n- {key: nvidia.com/gpu, value: present, effect: NoSchedule}\n"
    write(tmp_path, "a.yaml", node("gpu-a", spec=taint))
    write(tmp_path, "b.yaml", node("gpu-b", spec=taint))
    [f] = findings(tmp_path, "GPU032")
    assert at(f) == ("cp.yaml", 8, 5)
    assert f.object.kind == "ClusterPolicy"
    assert (
        "(driver, container-toolkit, device-plugin, gpu-feature-discovery, dcgm-exporter, dcgm, "
        "operator-validator)"
    ) in f.message
    assert "on GPU node(s) gpu-a, gpu-b" in f.message
    assert "daemonsets.tolerations replaces the default nvidia.com/gpu:NoSchedule" in f.message
    assert (
        f.hint == "Add {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule} to "
        "daemonsets.tolerations."
    )


def test_gpu032_ignores_taints_on_nodes_the_daemonset_does_not_select(tmp_path: Path):
    write(tmp_path, "ds.yaml", daemonset("device-plugin"))
    spec = "taints:\n- {key: dedicated, value: inference, effect: NoSchedule}\n"
    write(tmp_path, "a.yaml", node("gpu-a", {"device-plugin": "false"}, spec=spec))
    write(tmp_path, "c.yaml", node("cpu-a", {"device-plugin": "true"}, spec=spec, gpu=False))
    assert findings(tmp_path, "GPU032") == []


def test_gpu032_names_five_tainted_nodes_and_counts_the_rest(tmp_path: Path):
    """Seven GPU nodes with a taint the device plugin does not tolerate: five named, two
    counted, and the message still says what the controller does (GPU032 `check`)."""
    write(tmp_path, "ds.yaml", daemonset("device-plugin"))
    spec = "taints:\n- {key: dedicated, value: inference, effect: NoSchedule}\n"
    for i in range(7):
        write(tmp_path, f"n{i}.yaml", node(f"gpu-{i}", all_labels(), spec=spec))
    [f] = findings(tmp_path, "GPU032")
    assert (
        "on GPU node(s) gpu-0, gpu-1, gpu-2, gpu-3, gpu-4 and 2 more: the DaemonSet controller "
    ) in f.message
    assert f.message.endswith("so device-plugin never runs there")


# --- each cause's fix (found by a review of every rule's fixes) ------------------------------

KERNEL = {"feature.node.kubernetes.io/kernel-version.full": "5.15.0-119-generic"}
OS_RELEASE = {
    "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
    "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
}
DEFAULT_CR = """\
apiVersion: nvidia.com/v1alpha1
kind: NVIDIADriver
metadata: {name: default}
spec:
  default: true
  driverType: gpu
  repository: nvcr.io/nvidia
  image: driver
  version: "550.90.07"
"""
POOL_NODES = "---\n".join(
    [
        node("gpu-0", {**KERNEL, **OS_RELEASE}),
        node("gpu-1", KERNEL),  # no OS release: in no pool
        cluster_policy("  driver:\n    useNvidiaDriverCRD: true\n"),
        DEFAULT_CR,
    ]
)


def test_a_node_no_driver_pool_selects_is_given_the_label_not_a_deploy_label(tmp_path):
    """NVIDIADriver pools select on NFD's OS-release labels: a node without them is in no pool.
    The fix said to set nvidia.com/gpu.deploy.driver=true, which the operator sets already and
    which puts the node in no pool."""
    write(tmp_path, "all.yaml", POOL_NODES)
    [f] = findings(tmp_path, "GPU030")
    assert "gpu-1" in f.message
    assert f.hint is not None and "gpu.deploy.driver=true" not in f.hint
    assert f.hint.startswith(
        "Give gpu-1 the label feature.node.kubernetes.io/system-os_release.ID, which every "
        "NVIDIADriver pool selects on"
    )


SANDBOX = "---\n".join(
    [
        node("gpu-0"),
        node(
            "gpu-1", {"nvidia.com/gpu.workload.config": "vm-passthrough", "device-plugin": "true"}
        ),
        cluster_policy(
            '  sandboxWorkloads:\n    enabled: true\n  driver:\n    version: "550.90.07"\n'
        ),
    ]
)


def test_a_gpu_node_is_compared_with_the_nodes_of_its_workload_type(tmp_path):
    """With sandbox workloads, the operator keeps each GPU node's deploy labels to its workload
    type (`updateGPUStateLabels`): a vm-passthrough node runs no device plugin and a container
    node no sandbox validator, by design. GPU031 warned of each, with a fix to label the node
    (which the operator undoes); a node is now compared with the GPU nodes of its type."""
    write(tmp_path, "all.yaml", SANDBOX)
    assert findings(tmp_path, "GPU031") == []
    # a second container node whose dcgm-exporter an admin switched off: that one is said
    write(tmp_path, "all.yaml", SANDBOX + "---\n" + node("gpu-2", {"dcgm-exporter": "false"}))
    [f] = findings(tmp_path, "GPU031")
    assert f.message.startswith(
        "GPU node gpu-2 lacks dcgm-exporter, which runs on every other GPU node of its workload "
        "type, container (1)"
    )
    assert f.hint is not None and "nvidia.com/gpu.deploy.dcgm-exporter=true" in f.hint


@pytest.mark.parametrize(
    ("kind", "operand", "fix"),
    [
        # a deploy label the operator sets only on another workload type: never a label the
        # operator would take off again
        ("workload-type", "device-plugin", "set nvidia.com/gpu.workload.config on gpu-1"),
        ("disabled", "dcgm-exporter", "Set dcgmExporter.enabled: true in the operator config"),
        ("node-name", "device-plugin", "Drop nodeName from the pod template of the device-plugin"),
    ],
)
def test_each_cause_has_its_own_fix(kind, operand, fix):
    from gpudrv_check.core.finding import Location
    from gpudrv_check.model.operands import Cause, remedy

    cause = Cause(kind, "why", Location("n.yaml", 5, 3), None, ())  # type: ignore[arg-type]
    hint = remedy(cause, operand, "gpu-1")
    assert hint is not None and fix in hint and "kubectl label" not in hint


def test_an_operand_requesting_more_gpus_than_the_node_has_is_fixed_at_its_request(tmp_path):
    """The cause is the DaemonSet's request: the finding's cause points there (it pointed at
    the node's name) and the fix says to lower it (it gave the generic label-or-taint fix)."""
    labels = {"container-toolkit": "true", "device-plugin": "true"}
    status = 'status:\n  allocatable: {nvidia.com/gpu: "8", pods: "110"}\n'
    write(tmp_path, "nodes.yaml", node("gpu-0", labels) + status)
    request = "        resources:\n          limits: {nvidia.com/gpu: 16}\n"
    toolkit = daemonset("container-toolkit") + request  # its container is the last item
    write(tmp_path, "container-toolkit.yaml", toolkit)
    write(tmp_path, "device-plugin.yaml", daemonset("device-plugin"))
    [f] = findings(tmp_path, "GPU030")
    line = toolkit.splitlines().index("          limits: {nvidia.com/gpu: 16}") + 1
    assert (f.location.file, f.location.line) == ("container-toolkit.yaml", line)
    assert f.hint is not None and f.hint.startswith(
        "Lower the nvidia.com/gpu request of the container-toolkit DaemonSet to what gpu-0 offers"
    )


# GPU017 reads the container toolkit's cell: v26.3.0/v26.7.0 controllers/state_manager.go
# gpuStateLabels gives vm-passthrough and vm-vgpu nodes no gpu.deploy.container-toolkit, so no
# toolkit configures the nvidia handler there although the node has GPUs
RUNTIME_POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: r, namespace: default}\n"
    "spec:\n  runtimeClassName: nvidia\n  containers: [{name: c, image: busybox}]\n"
)
SANDBOX_POLICY = "  sandboxWorkloads: {enabled: true}\n  vfioManager: {enabled: true}\n"


@pytest.mark.parametrize(
    ("spec", "workload", "severity", "detail"),
    [
        # a vm-passthrough node: no toolkit, so no runtime (gpuStateLabels[vm-passthrough])
        (
            SANDBOX_POLICY,
            "vm-passthrough",
            "error",
            "pt-a: label nvidia.com/gpu.deploy.container-toolkit missing: the operator sets it "
            "only on nodes of another GPU workload type (n.yaml:5)",
        ),
        # a container node: the toolkit runs, no finding
        (SANDBOX_POLICY, "container", None, None),
        # toolkit.enabled: false: the hosts' toolkit, so GPUs decide as before (isStateEnabled)
        (SANDBOX_POLICY + "  toolkit: {enabled: false}\n", "vm-passthrough", None, None),
    ],
)
def test_gpu017_uses_the_toolkit_cell(tmp_path: Path, spec, workload, severity, detail):
    write(tmp_path, "cp.yaml", cluster_policy(spec))
    labels = {"nvidia.com/gpu.workload.config": workload}
    write(tmp_path, "n.yaml", node("pt-a", labels))
    write(tmp_path, "p.yaml", RUNTIME_POD)
    found = findings(tmp_path, "GPU017")
    if severity is None:
        assert found == []
        return
    [f] = found
    assert (f.location.file, f.location.line, f.location.column) == ("p.yaml", 5, 3)
    assert f.severity.value == severity
    assert f"has no NVIDIA container toolkit (pt-a; {detail})" in f.message
    assert f.hint == (
        "Keep the pod on nodes the container toolkit runs on (`nodeSelector: {nvidia.com/gpu."
        'deploy.container-toolkit: "true"}`, or `scheduling.nodeSelector` on the RuntimeClass), '
        "or drop `runtimeClassName` if the pod needs no GPU."
    )


# GPU032/GPU030 on NVIDIADriver pools: v26.7.0 manifests/state-driver/0500_daemonset.yaml gives
# the driver pods nvidia.com/gpu plus the CR's spec.tolerations; the ClusterPolicy's
# daemonsets.tolerations does not reach them
ND_POLICY = cluster_policy(
    "  driver: {useNvidiaDriverCRD: true}\n"
    "  daemonsets:\n    tolerations:\n"
    "    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n"
    "    - {key: dedicated, operator: Exists, effect: NoSchedule}\n"
)
ND = (
    "apiVersion: nvidia.com/v1alpha1\nkind: NVIDIADriver\nmetadata: {name: default}\n"
    "spec:\n  repository: nvcr.io/nvidia\n  image: driver\n  version: '570.124.06'\n"
)
OS_LABELS = {
    "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
    "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
}
DEDICATED = "taints:\n- {key: dedicated, value: gpu, effect: NoSchedule}\n"


@pytest.mark.parametrize(
    ("cr", "line"),
    [
        (ND, 4),  # no spec.tolerations: at the CR's spec
        (ND + "  tolerations:\n  - {key: other, operator: Exists}\n", 8),
    ],
)
def test_gpu032_points_nvidiadriver_pools_at_the_crs_tolerations(tmp_path: Path, cr, line):
    write(tmp_path, "cp.yaml", ND_POLICY)
    write(tmp_path, "nd.yaml", cr)
    write(tmp_path, "n.yaml", node("gpu-a", OS_LABELS, spec=DEDICATED))
    [f] = findings(tmp_path, "GPU032")
    assert (f.location.file, f.location.line) == ("nd.yaml", line)
    assert f.object.kind == "NVIDIADriver"
    at = f"spec.tolerations of NVIDIADriver default (nd.yaml:{line})"
    assert f.message.startswith(
        "the driver DaemonSet(s) nvidia-gpu-driver-default-ubuntu22.04 do not tolerate taint "
        f"dedicated=gpu:NoSchedule on GPU node(s) gpu-a: their pods carry "
        f"nvidia.com/gpu:NoSchedule plus {at}, not daemonsets.tolerations;"
    )
    assert f.hint == (
        f"Add {{key: dedicated, operator: Exists, effect: NoSchedule}} to {at}, or remove the "
        "taint from the node(s)."
    )
    [chain] = findings(tmp_path, "GPU030")
    assert chain.hint.startswith(
        f"Tolerate the taint in the driver DaemonSet: add it to {at}, which adds to the default "
        "nvidia.com/gpu toleration; or remove the taint from gpu-a"
    )


def test_gpu032_chart_default_cr_takes_daemonsets_tolerations(tmp_path: Path):
    # v26.7.0 deployments/gpu-operator/templates/nvidiadriver.yaml: the default CR's
    # spec.tolerations is daemonsets.tolerations
    values = (
        "  values:\n    driver:\n      nvidiaDriverCRD: {enabled: true}\n"
        "    daemonsets:\n      tolerations:\n      - {key: other, operator: Exists}\n"
    )
    write(tmp_path, "hr.yaml", helm_release("v26.7.0", values))
    write(tmp_path, "n.yaml", node("gpu-a", OS_LABELS, spec=DEDICATED))
    found = findings(tmp_path, "GPU032")
    [f] = [f for f in found if f.message.startswith("the driver DaemonSet(s)")]
    assert (f.location.file, f.location.line, f.location.column) == ("hr.yaml", 15, 7)
    assert "not daemonsets.tolerations" not in f.message
    assert f.hint == (
        "Add {key: dedicated, operator: Exists, effect: NoSchedule} to daemonsets.tolerations "
        "(the chart copies it into its default NVIDIADriver) (hr.yaml:15), or remove the taint "
        "from the node(s)."
    )
