"""GPU010-GPU012 and GPU040 (pod placement fields) on small repos: which finding, at which key."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gpudrv_check.core.finding import Finding, Severity
from gpudrv_check.engine.run import check
from gpudrv_check.read.config import Config, parse_config
from tests.conftest import write

NODES = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: gpu-550
    labels:
      kubernetes.io/hostname: gpu-550
      nvidia.com/gpu.present: "true"
      nvidia.com/cuda.driver.major: "550"
      nvidia.com/cuda.driver.minor: "90"
      nvidia.com/cuda.driver.rev: "07"
  spec:
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  status:
    allocatable: {nvidia.com/gpu: "2"}
- apiVersion: v1
  kind: Node
  metadata:
    name: gpu-515
    labels:
      kubernetes.io/hostname: gpu-515
      nvidia.com/gpu.present: "true"
      nvidia.com/cuda.driver.major: "515"
      nvidia.com/cuda.driver.minor: "65"
      nvidia.com/cuda.driver.rev: "01"
  spec:
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  status:
    allocatable: {nvidia.com/gpu: "1"}
- apiVersion: v1
  kind: Node
  metadata:
    name: cpu-1
    labels: {kubernetes.io/hostname: cpu-1}
"""
TOLERATE = """\
  tolerations:
  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
"""


def pod(body: str, name: str = "p") -> str:
    return f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: ml\nspec:\n" + body


def at(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """1-based (line, column) of the nth occurrence of `needle` in `text`."""
    index = -1
    for _ in range(nth + 1):
        index = text.index(needle, index + 1)
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def run(root: Path, config: Config | None = None) -> list[Finding]:
    return check(root, config or Config(matrix=None)).findings


def found(root: Path, rule: str, config: Config | None = None) -> list[Finding]:
    return [f for f in run(root, config) if f.rule == rule]


def where(f: Finding) -> tuple[str, int, int]:
    return (f.location.file, f.location.line, f.location.column)


# --- GPU040: constraints the API server (or the scheduler) refuses ---------------------------

AFFINITY = """\
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {expression}
"""


@pytest.mark.parametrize(
    ("body", "needle", "words", "rejected"),
    [
        (
            AFFINITY.format(expression='{key: k, operator: Gt, values: ["1", "2"]}'),
            "values",
            "must have exactly one value when operator is Gt or Lt",
            True,
        ),
        (
            AFFINITY.format(expression='{key: k, operator: Exists, values: ["1"]}'),
            "values",
            "must be empty when operator is Exists or DoesNotExist",
            True,
        ),
        (
            AFFINITY.format(expression='{key: k, operator: In, values: ["-bad-"]}'),
            '"-bad-"',
            "invalid label value '-bad-'",
            True,
        ),
        (
            AFFINITY.format(expression="{key: k, operator: In, values: [550]}"),
            "550",
            "must be a string, not integer; quote it in YAML",
            True,
        ),
        (
            AFFINITY.format(expression='{key: k, operator: Gt, values: ["5.5"]}'),
            '"5.5"',
            "the API server accepts it but the scheduler matches no node with it",
            False,
        ),
        (
            "  nodeSelector:\n    nvidia.com/gpu.present: true\n",
            "nvidia.com/gpu.present",
            "value must be a string, not boolean; quote it",
            True,
        ),
        (
            "  tolerations:\n  - {key: '', operator: Equal, value: x}\n",
            "operator",
            "must be Exists when key is empty",
            True,
        ),
        (
            "  tolerations:\n  - {key: nvidia.com/gpu, operator: Exists, effect: noschedule}\n",
            "effect",
            "did you mean 'NoSchedule'?",
            True,
        ),
        ("  tolerations: {key: a}\n", "tolerations", "must be a list of tolerations", True),
    ],
)
def test_gpu040_at_the_offending_key(
    tmp_path: Path, body: str, needle: str, words: str, rejected: bool
) -> None:
    text = pod(body + "  containers: [{name: c, image: busybox}]\n")
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "pod.yaml", text)
    [f] = found(tmp_path, "GPU040")  # once per workload
    assert where(f) == ("pod.yaml", *at(text, needle))
    assert words in f.message and f.message.startswith("spec.")
    # refused by the API server: error; accepted but a dead term: warning
    assert f.severity is (Severity.ERROR if rejected else Severity.WARNING)
    # an object the API server refuses has no pods: GPU010 leaves it to GPU040
    assert bool(found(tmp_path, "GPU010")) is not rejected


def test_gpu040_message_names_the_field_path(tmp_path: Path) -> None:
    text = pod(AFFINITY.format(expression='{key: k, operator: Gt, values: ["1", "2"]}'))
    write(tmp_path, "pod.yaml", text)
    [f] = found(tmp_path, "GPU040")
    assert f.message == (
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
        "nodeSelectorTerms[0].matchExpressions[0].values: must have exactly one value when "
        "operator is Gt or Lt"
    )


# --- GPU010 ------------------------------------------------------------------------------------


def test_gpu010_at_the_affinity_term_with_nearest_values(tmp_path: Path) -> None:
    text = pod(
        TOLERATE
        + AFFINITY.format(
            expression='{key: nvidia.com/cuda.driver.major, operator: Gt, values: ["560"]}'
        )
    )
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "pod.yaml", text)
    [f] = found(tmp_path, "GPU010")
    assert where(f) == ("pod.yaml", *at(text, "matchExpressions"))
    assert f.message == (
        "Pod ml/p stays Pending: 0/3 nodes are available: 3 node(s) didn't match Pod's node "
        "affinity/selector. no new claims to deallocate, preemption: 0/3 nodes are available: 3 "
        "Preemption is not helpful "
        "for scheduling. Why: the affinity term requires nvidia.com/cuda.driver.major Gt 560, "
        "which removes cpu-1, gpu-515, gpu-550; highest in inventory is 550 on gpu-550."
    )
    assert "gpudrv-check place --workload Pod/ml/p" in f.hint


def test_gpu010_untolerated_taint_points_at_the_pod_spec(tmp_path: Path) -> None:
    text = pod('  nodeSelector: {nvidia.com/gpu.present: "true"}\n')
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "pod.yaml", text)
    [f] = found(tmp_path, "GPU010")
    assert where(f) == ("pod.yaml", 6, 1)  # `spec:`: there is no tolerations list to fix
    assert (
        "1 node(s) didn't match Pod's node affinity/selector, 2 node(s) had untolerated taint(s)"
        in f.message
    )
    assert "untolerated taint nvidia.com/gpu=present:NoSchedule on gpu-515, gpu-550" in f.message
    assert "{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}" in f.hint


def test_gpu010_insufficient_gpus_at_the_request(tmp_path: Path) -> None:
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: big, namespace: ml}\nspec:\n"
        "  replicas: 2\n  template:\n    spec:\n"
        + textwrap.indent(TOLERATE, "    ")
        + '      nodeSelector: {nvidia.com/gpu.present: "true"}\n'
        "      containers:\n      - name: c\n        image: busybox\n"
        "        resources:\n          limits:\n            nvidia.com/gpu: 4\n"
    )
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "deploy.yaml", text)
    [f] = found(tmp_path, "GPU010")
    assert where(f) == ("deploy.yaml", *at(text, "nvidia.com/gpu: 4"))
    assert f.message.startswith(
        "Deployment ml/big: its pods stay Pending: 0/3 nodes are available: 1 node(s) didn't "
        "match Pod's node affinity/selector, 2 Insufficient nvidia.com/gpu."
    )
    assert (
        "each pod requests 4 nvidia.com/gpu; the most any node offers is 2 (on gpu-550)"
        in f.message
    )


def test_gpu010_node_name_not_in_inventory(tmp_path: Path) -> None:
    text = pod("  nodeName: gpu-999\n")
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "pod.yaml", text)
    [f] = found(tmp_path, "GPU010")
    assert where(f) == ("pod.yaml", 7, 3)
    assert f.message.startswith("Pod ml/p never runs: spec.nodeName is gpu-999")


def test_gpu010_daemonset_and_cordoned_nodes(tmp_path: Path) -> None:
    nodes = NODES.replace("  spec:\n    taints", "  spec:\n    unschedulable: true\n    taints")
    ds = (
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: ml}\nspec:\n"
        "  template:\n    spec:\n"
        + textwrap.indent(TOLERATE, "    ")
        + '      nodeSelector: {nvidia.com/gpu.present: "true"}\n'
    )
    write(tmp_path, "nodes.yaml", nodes)
    write(tmp_path, "ds.yaml", ds)
    # DaemonSet pods tolerate the cordon: they land on the two cordoned GPU nodes
    assert found(tmp_path, "GPU010") == []
    write(tmp_path, "ds.yaml", ds.replace(textwrap.indent(TOLERATE, "    "), ""))
    [f] = found(tmp_path, "GPU010")
    assert f.message.startswith(
        "DaemonSet ml/agent runs on no node: 0/3 nodes run a pod of this DaemonSet: 1 node(s) "
        "didn't match Pod's node affinity/selector, 2 node(s) had untolerated taint(s)."
    )
    assert where(f) == ("ds.yaml", 6, 5)  # the pod template's spec


@pytest.mark.parametrize(
    "text",
    [
        # scaled to zero: no pods to place
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 0\n"
        "  template:\n    spec:\n      nodeSelector: {x: z}\n",
        # the API server refuses it (GPU040)
        pod("  nodeSelector: {x: 1}\n"),
    ],
)
def test_gpu010_skips_workloads_without_pods(tmp_path: Path, text: str) -> None:
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "w.yaml", text)
    assert found(tmp_path, "GPU010") == []


def test_placement_rules_need_an_inventory(tmp_path: Path) -> None:
    body = (
        "  nodeSelector: {x: z}\n  containers:\n  - name: c\n"
        "    image: nvcr.io/nvidia/pytorch:25.03-py3\n"
        "    resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    write(tmp_path, "pod.yaml", pod(body))
    assert [f.rule for f in run(tmp_path)] == []


# --- GPU011 ------------------------------------------------------------------------------------


def cuda_pod(image: str) -> str:
    return TOLERATE + f"  containers:\n  - name: train\n    image: {image}\n"


def test_gpu011_warning_names_the_old_nodes_and_the_expression(tmp_path: Path) -> None:
    text = pod(cuda_pod("nvcr.io/nvidia/pytorch:23.08-py3"))
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "pod.yaml", text)
    [f] = found(tmp_path, "GPU011")
    assert where(f) == ("pod.yaml", *at(text, "image:"))
    assert f.severity is Severity.WARNING
    assert f.message == (
        "Pod ml/p: image nvcr.io/nvidia/pytorch:23.08-py3 carries CUDA 12.2.1, which needs driver "
        "branch 525 or newer (minor version compatibility; 535.86.09 for full support); 1 of the "
        "3 nodes it can land on is older: gpu-515 (515.65.01); a pod placed there fails at run "
        "time"
    )
    assert '{key: nvidia.com/cuda.driver.major, operator: Gt, values: ["524"]}' in f.hint


def test_gpu011_error_when_every_node_is_too_old(tmp_path: Path) -> None:
    text = pod(
        cuda_pod("nvcr.io/nvidia/cuda:13.0.0-runtime-ubuntu24.04")
        + '  nodeSelector: {nvidia.com/gpu.present: "true"}\n'
    )
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "pod.yaml", text)
    [f] = found(tmp_path, "GPU011")
    assert f.severity is Severity.ERROR
    assert (
        "every node it can land on is older: gpu-515 (515.65.01), gpu-550 (550.90.07)" in f.message
    )
    assert f.hint.startswith("No node it can land on has a new enough driver")


def test_gpu011_info_under_minor_version_compatibility_and_strict_mode(tmp_path: Path) -> None:
    text = pod(
        cuda_pod("nvcr.io/nvidia/pytorch:24.07-py3")
        + "  nodeSelector: {kubernetes.io/hostname: gpu-550}\n"
    )
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "pod.yaml", text)
    [f] = found(tmp_path, "GPU011")
    assert f.severity is Severity.INFO
    assert "gpu-550 (550.90.07) runs it only under CUDA minor version compatibility" in f.message
    strict = parse_config(
        {"matrix": None, "rules": {"GPU011": {"params": {"minor_version_compatibility": False}}}},
        "c.yaml",
    )
    [f] = found(tmp_path, "GPU011", strict)
    assert f.severity is Severity.ERROR
    assert "which needs driver 555.42.06 or newer; every node it can land on is older" in f.message


def test_gpu011_unknown_images_are_not_guessed_unless_the_config_maps_them(tmp_path: Path) -> None:
    text = pod(cuda_pod("registry.local/ml/train:v3-cu13.0"))
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "pod.yaml", text)
    assert found(tmp_path, "GPU011") == []
    config = parse_config(
        {
            "matrix": None,
            "cuda": {
                "images": [
                    {
                        "id": "ours",
                        "repository": "registry.local/ml/train",
                        "tag_regex": r"-cu(\d+\.\d+)$",
                    }
                ]
            },
        },
        "c.yaml",
    )
    [f] = found(tmp_path, "GPU011", config)
    assert "carries CUDA 13.0" in f.message and f.severity is Severity.ERROR


# --- GPU012 ------------------------------------------------------------------------------------


def test_gpu012_gpu_request_that_reaches_only_cpu_nodes(tmp_path: Path) -> None:
    nodes = NODES.replace('    allocatable: {nvidia.com/gpu: "2"}\n', "    phase: x\n").replace(
        '    allocatable: {nvidia.com/gpu: "1"}\n', "    phase: x\n"
    )
    text = pod(
        "  nodeSelector: {kubernetes.io/hostname: cpu-1}\n"
        "  containers:\n  - name: c\n    image: busybox\n"
        "    resources: {requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 1}}\n"
    )
    write(tmp_path, "nodes.yaml", nodes)
    write(tmp_path, "pod.yaml", text)
    [f] = found(tmp_path, "GPU012")
    assert where(f) == ("pod.yaml", *at(text, "nvidia.com/gpu: 1}", 1))  # limits over requests
    assert f.message == (
        "Pod ml/p requests 1 nvidia.com/gpu per pod, but none of the nodes it can land on has a "
        'GPU (cpu-1: nvidia.com/gpu.present is not "true" and no nvidia.com/gpu capacity is '
        'given); its pods would stay Pending with "Insufficient nvidia.com/gpu"'
    )
    assert found(tmp_path, "GPU010") == []
    # reaching a GPU node as well is fine
    write(tmp_path, "pod.yaml", text.replace("{kubernetes.io/hostname: cpu-1}", "{}") + TOLERATE)
    assert found(tmp_path, "GPU012") == []


def test_gpu010_replicas_the_gpu_nodes_have_no_room_for_never_land_on_a_cpu_node(
    tmp_path: Path,
) -> None:
    """cpu-1 lists no allocatable and is no GPU node: nothing is known of its cpu or memory,
    but it holds no nvidia.com/gpu (no device plugin runs there), so the scheduler finds it
    short for every GPU pod (NodeResourcesFit; unresolvable, so preemption is not helpful
    there). The 4th replica, for which the GPU nodes (2 + 1 GPUs) have no room, stays Pending;
    it used to "land" on cpu-1."""
    deployment = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ml}\nspec:\n"
        "  replicas: 4\n  selector: {matchLabels: {app: d}}\n  template:\n"
        "    metadata: {labels: {app: d}}\n    spec:\n"
        "      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"
        "      containers:\n      - name: c\n        image: busybox\n"
        "        resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "deploy.yaml", deployment)
    [f] = found(tmp_path, "GPU010")
    assert f.message.startswith(
        "Deployment ml/d: 1 of 4 pods stay Pending (Deployment/ml/d#3), the nodes they may use "
        "being full: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu. no new claims to "
        "deallocate, preemption: 0/3 nodes are available: 1 Preemption is not helpful for "
        "scheduling, 2 No preemption victims found for incoming pod."
    ), f.message
    assert found(tmp_path, "GPU012") == []


ODD_SPECS = [
    "  affinity: [a]\n",
    "  affinity: {nodeAffinity: [x]}\n",
    "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [x]}}\n",
    "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
    "{nodeSelectorTerms: x}}}\n",
    "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
    "{nodeSelectorTerms: [x, {matchExpressions: [1, {key: 2}]}, {matchFields: x}]}}}\n",
    "  nodeSelector: [a, b]\n",
    "  nodeSelector: {1: 2}\n",
    "  tolerations: [a, {key: 1}, {effect: [x]}]\n",
    "  nodeName: 7\n",
    "  preemptionPolicy: [x]\n",
    "  containers: [{image: 5, resources: {limits: [x]}}, x]\n",
    "  containers: [{image: nvcr.io/nvidia/pytorch, resources: {limits: {nvidia.com/gpu: -1}}}]\n",
]


@pytest.mark.parametrize("body", ODD_SPECS)
def test_odd_pod_specs_never_raise(tmp_path: Path, body: str, capsys, monkeypatch) -> None:
    from gpudrv_check.cli import main

    monkeypatch.setenv("GPUDRV_CHECK_DEBUG", "1")  # an internal error raises instead of exit 2
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "pod.yaml", pod(body))
    rules = {f.rule for f in run(tmp_path)}
    assert rules <= {"GPU002", "GPU010", "GPU011", "GPU012", "GPU040"}
    for args in (["check"], ["place"], ["place", "--format", "json"]):
        assert main([*args, str(tmp_path), "--matrix", "none"]) in (0, 1)
        err = capsys.readouterr().err
        assert "Traceback" not in err and "internal error" not in err


def _branch_555_nodes(old: int) -> str:
    """`old` nodes on driver 555.40.01 and one on 555.42.06 (one branch: no Gt parts them)."""
    items = []
    for i in range(old + 1):
        minor, rev = ("42", "06") if i == old else ("40", "01")
        name = f"gpu-{i}"
        items.append(
            f"- apiVersion: v1\n  kind: Node\n  metadata:\n    name: {name}\n    labels:\n"
            f"      kubernetes.io/hostname: {name}\n"
            '      nvidia.com/gpu.present: "true"\n'
            '      nvidia.com/cuda.driver.major: "555"\n'
            f'      nvidia.com/cuda.driver.minor: "{minor}"\n'
            f'      nvidia.com/cuda.driver.rev: "{rev}"\n'
        )
    return "apiVersion: v1\nkind: List\nitems:\n" + "".join(items)


@pytest.mark.parametrize(("old", "listed"), [(10, True), (11, False)])
def test_gpu011_names_at_most_ten_hosts_to_keep_off(tmp_path: Path, old: int, listed: bool):
    """Old nodes on the branch of the one that runs the image: a `kubernetes.io/hostname NotIn`
    of up to MAX_HOSTNAMES names (model/cuda.py `excluding_expression`); past that the fix
    says to part them by a label, never a fleet's names in a hint cut at MAX_MESSAGE."""
    write(tmp_path, "nodes.yaml", _branch_555_nodes(old))
    write(tmp_path, "pod.yaml", pod(cuda_pod("nvcr.io/nvidia/pytorch:24.07-py3")))
    [f] = found(tmp_path, "GPU011")
    assert f.severity is Severity.INFO
    assert "run it only under CUDA minor version compatibility" in f.message
    names = ", ".join(f'"gpu-{i}"' for i in sorted(range(old), key=str))
    expression = f"{{key: kubernetes.io/hostname, operator: NotIn, values: [{names}]}}"
    if listed:
        assert expression in f.hint
    else:
        assert "NotIn" not in f.hint
        assert f.hint.startswith(
            "Keep it off those nodes with a required node affinity on a label that only they "
            "(or only the others) carry; or upgrade the driver on gpu-0, gpu-1, gpu-10, gpu-2, "
            "gpu-3 and 6 more to 555.42.06 or newer."
        )


# --- the fix is right for the cause (found by a review of every rule's fixes) ---------------

HINT_NODES = """\
apiVersion: v1
kind: Node
metadata:
  name: a-node
  labels: {pool: inference, nvidia.com/gpu.present: "true"}
spec:
  taints:
  - {key: dedicated, value: infer, effect: NoSchedule}
status:
  allocatable: {nvidia.com/gpu: "8", cpu: "64", memory: 512Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: b-node
  labels: {pool: batch, nvidia.com/gpu.present: "true"}
spec:
  unschedulable: true
status:
  allocatable: {nvidia.com/gpu: "8", cpu: "64", memory: 512Gi, pods: "110"}
"""


def test_gpu010_the_cordon_of_the_admitted_node_not_another_nodes_taint(tmp_path: Path) -> None:
    """The only node the nodeSelector admits is cordoned (NodeUnschedulable); a node it refuses
    anyway carries a taint. The fix named that taint, which no toleration would get past the
    cordon: the taint is now taken from the nodes the affinity admits."""
    write(tmp_path, "nodes.yaml", HINT_NODES)
    write(tmp_path, "p.yaml", pod("  nodeSelector: {pool: batch}\n  containers: [{name: c}]\n"))
    [f] = found(tmp_path, "GPU010")
    assert f.hint is not None and "uncordon" in f.hint and "dedicated" not in f.hint
    # admitted and tainted: the toleration of that taint
    write(tmp_path, "p.yaml", pod("  nodeSelector: {pool: inference}\n  containers: [{name: c}]\n"))
    [f] = found(tmp_path, "GPU010")
    assert f.hint is not None and "{key: dedicated, operator: Exists" in f.hint


@pytest.mark.parametrize(
    ("limits", "words"),
    [
        ("{memory: 1Ti}", "Request less memory per pod, or bind it to a node with enough memory"),
        ("{nvidia.com/gpu: 9}", "Request less nvidia.com/gpu per pod, or bind it to a node"),
    ],
)
def test_gpu010_a_bound_pod_is_not_helped_by_another_node(tmp_path: Path, limits, words) -> None:
    """spec.nodeName bypasses the scheduler: only that node's kubelet admits the pod, so "add
    a node with enough ..." cannot help; the fix says to request less, bind elsewhere or let the
    scheduler choose."""
    write(tmp_path, "nodes.yaml", HINT_NODES.replace("unschedulable: true", "taints: []"))
    body = f"  nodeName: b-node\n  containers:\n  - name: c\n    resources: {{limits: {limits}}}\n"
    write(tmp_path, "p.yaml", pod(body))
    [f] = found(tmp_path, "GPU010")
    assert f.hint is not None and words in f.hint and "add a node" not in f.hint
    assert "drop spec.nodeName" in f.hint


def test_gpu010_a_pinned_name_is_not_matched_by_a_label(tmp_path: Path) -> None:
    """matchFields metadata.name matches a node's name: "label a node so that it matches" was
    impossible; the fix says to name a node of the inventory or drop the pin."""
    write(tmp_path, "nodes.yaml", HINT_NODES)
    term = "{matchFields: [{key: metadata.name, operator: In, values: [gpu-c]}]}"
    affinity = (
        "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
        f"        nodeSelectorTerms: [{term}]\n  containers: [{{name: c}}]\n"
    )
    write(tmp_path, "p.yaml", pod(affinity))
    [f] = found(tmp_path, "GPU010")
    assert f.hint is not None and f.hint.startswith("Name a node of the inventory")
    assert "label a node" not in f.hint
