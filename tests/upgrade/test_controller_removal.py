"""How the upgrade controller removes pods, rehearsed (`rehearse`) and planned (`plan`).

Each row names the upstream file and function whose behaviour it expects; the expected values
are worked out here from that code, not copied from it. Two GPU nodes (gpu-0, gpu-1) on driver
550, a ClusterPolicy with `autoUpgrade: true, maxParallelUpgrades: 1, maxUnavailable: "50%"`,
so gpu-0 goes first and gpu-1 waits for it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import cluster_policy, helm_release, run_main, write
from tests.upgrade.conftest import gpu_cluster

GPU = "        resources: {limits: {nvidia.com/gpu: 1}}\n"
DRAIN_OFF = "      podDeletion: {}\n"
DRAIN_ON = "      podDeletion: {}\n      drain: {enable: true}\n"


def policy(body: str) -> str:
    head = (
        "  driver:\n    upgradePolicy:\n      autoUpgrade: true\n"
        '      maxParallelUpgrades: 1\n      maxUnavailable: "50%"\n'
    )
    return cluster_policy(head + body)


def daemonset(name: str, resources: str = GPU) -> str:
    return (
        f"apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: {name}\n  namespace: ml\n"
        f"spec:\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n"
        f"    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n"
        f"      - name: main\n        image: example/agent:1\n" + resources
    )


def mirror_pod(name: str, node: str = "gpu-0") -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: ml\n"
        "  annotations: {kubernetes.io/config.mirror: abc}\n  labels: {app: static}\n"
        f"spec:\n  nodeName: {node}\n  containers:\n  - name: main\n    image: example/s:1\n"
        "    resources: {limits: {nvidia.com/gpu: 1}}\n"
    )


def bare_pod(name: str, annotations: str = "", node: str = "gpu-0") -> str:
    """A pod without controller on ``node`` asking for no GPU (a static pod's mirror with
    ``annotations: {kubernetes.io/config.mirror: …}``)."""
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: kube-system\n"
        f"{annotations}  labels: {{component: proxy}}\nspec:\n  nodeName: {node}\n"
        "  containers:\n  - name: proxy\n    image: registry.k8s.io/kube-proxy:v1.30.0\n"
    )


# a GPU pod on gpu-0 that pod deletion cannot remove (emptyDir, deleteEmptyDir false), so the
# node goes to drain-required, and a drain that may delete emptyDir pods
SCRATCH_TRAINER = (
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: trainer\n  namespace: ml\n"
    "spec:\n  replicas: 1\n  selector:\n    matchLabels: {app: trainer}\n  template:\n"
    "    metadata:\n      labels: {app: trainer}\n    spec:\n"
    "      nodeSelector: {kubernetes.io/hostname: gpu-0}\n      containers:\n"
    "      - name: main\n        image: example/t:1\n" + GPU + "      volumes:\n"
    "      - {name: scratch, emptyDir: {}}\n"
)
DRAIN_SCRATCH = "      podDeletion: {}\n      drain: {enable: true, deleteEmptyDir: true}\n"
MIRROR = "  annotations: {kubernetes.io/config.mirror: abc123}\n"


def make_repo(tmp_path: Path, body: str, *workloads: str) -> Path:
    root = tmp_path / "repo"
    gpu_cluster(root, 2)
    write(root, "clusterpolicy.yaml", policy(body))
    if workloads:
        (root / "work.yaml").write_text("---\n".join(workloads))
    return root


def rehearse(root: Path) -> tuple[int, dict]:
    result = run_main("rehearse", str(root), "--driver", "550.127.05", "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def first_node(out: dict) -> tuple[str, str] | None:
    """gpu-0's stall (state, reason), or None when it reached upgrade-done."""
    stall = next((s for s in out["stalls"] if s["node"] == "gpu-0"), None)
    return None if stall is None else (stall["state"], stall["reason"])


# (case, upstream, policy body, workloads, gpu-0's stall state or None, words of its reason)
REMOVAL = [
    (
        "gpu-daemonset",
        "pod_manager.go SchedulePodEviction + filters.go daemonSetFilter",
        DRAIN_OFF,
        [daemonset("gpu-agent")],
        "upgrade-failed",
        ["DaemonSet ml/gpu-agent", "Cannot delete all required pods"],
    ),
    (
        "gpu-daemonset-drain",
        "pod_manager.go updateNodeToDrainOrFailed; the drain skips DaemonSet pods",
        DRAIN_ON,
        [daemonset("gpu-agent")],
        None,
        [],
    ),
    (
        "plain-daemonset",
        "main.go gpuPodSpecFilter: no GPU asked, nothing counted",
        DRAIN_OFF,
        [daemonset("log-agent", resources="")],
        None,
        [],
    ),
    (
        "gpu-mirror-pod",
        "pod_manager.go SchedulePodEviction + filters.go mirrorPodFilter",
        DRAIN_OFF,
        [mirror_pod("static-gpu")],
        "upgrade-failed",
        ["Pod ml/static-gpu", "mirror pod", "Cannot delete all required pods"],
    ),
    (
        "drain-skips-mirror-pod",
        "filters.go mirrorPodFilter: skipped before unreplicatedFilter",
        DRAIN_SCRATCH,
        [SCRATCH_TRAINER, bare_pod("static-proxy-gpu-0", MIRROR)],
        None,
        [],
    ),
    (
        "drain-refuses-bare-pod",
        "filters.go unreplicatedFilter: no controller, drain.force false",
        DRAIN_SCRATCH,
        [SCRATCH_TRAINER, bare_pod("proxy-gpu-0")],
        "upgrade-failed",
        ["drain: Pod/kube-system/proxy-gpu-0#0", "no controller"],
    ),
]


@pytest.mark.parametrize(
    ("case", "upstream", "body", "workloads", "state", "words"),
    REMOVAL,
    ids=[row[0] for row in REMOVAL],
)
def test_pod_removal_as_the_controller_does_it(
    tmp_path: Path,
    case: str,
    upstream: str,
    body: str,
    workloads: list[str],
    state: str | None,
    words: list[str],
) -> None:
    code, out = rehearse(make_repo(tmp_path, body, *workloads))
    stall = first_node(out)
    assert (stall[0] if stall else None) == state, (case, upstream, stall)
    assert code == (0 if state is None else 1)
    for word in words:
        assert stall is not None and word in stall[1], (case, word, stall)


def test_a_gpu_daemonset_fails_the_node_before_any_eviction(tmp_path: Path) -> None:
    # SchedulePodEviction compares the counts before DeleteOrEvictPods: the trainer stays
    trainer = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: trainer\n  namespace: ml\n"
        "spec:\n  replicas: 2\n  selector:\n    matchLabels: {app: trainer}\n  template:\n"
        "    metadata:\n      labels: {app: trainer}\n    spec:\n      containers:\n"
        "      - name: main\n        image: example/t:1\n" + GPU
    )
    _, out = rehearse(make_repo(tmp_path, DRAIN_OFF, daemonset("gpu-agent"), trainer))
    assert [e for w in out["waves"] for e in w["evictions"]] == []
    assert out["stalls"][0]["location"] == "work.yaml:4:3"


def trainer(replicas: int = 2, labels: str = "{app: trainer}") -> str:
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: trainer\n  namespace: ml\n"
        f"spec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: trainer}}\n"
        f"  template:\n    metadata:\n      labels: {labels}\n    spec:\n      containers:\n"
        "      - name: main\n        image: example/t:1\n" + GPU
    )


def budget(name: str, rule: str = "", selector: str = "matchLabels: {app: trainer}") -> str:
    return (
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n"
        f"  name: {name}\n  namespace: ml\nspec:\n  selector: {{{selector}}}\n{rule}"
    )


# (case, upstream, policy body, workloads, gpu-0's stall state or None, words, seconds the
# clock shows when gpu-0 leaves pod-deletion-required or None)
REFUSALS = [
    (
        "pdb-no-rule",
        "disruption.go updatePdbStatus: expectedCount <= 0 -> 0 allowed",
        DRAIN_OFF,
        [trainer(), budget("trainer-pdb")],
        "upgrade-failed",
        ["PodDisruptionBudget ml/trainer-pdb", "0 disruptions allowed", "HTTP 429"],
        300,
    ),
    (
        "pdb-max-unavailable-1",
        "disruption.go getExpectedPodCount: 2 replicas - 1 = 1 healthy required",
        DRAIN_OFF,
        [trainer(), budget("trainer-pdb", "  maxUnavailable: 1\n")],
        None,
        [],
        0,
    ),
    (
        "two-pdbs",
        "eviction.go: more than one PDB -> 500; drain.go evictPods retries only 429",
        "      podDeletion: {timeoutSeconds: 0}\n",
        [trainer(), budget("a", "  maxUnavailable: 1\n"), budget("b", "  maxUnavailable: 1\n")],
        "upgrade-failed",
        ["2 PodDisruptionBudgets (ml/a, ml/b)", "HTTP 500", "podDeletion fails at once"],
        0,
    ),
    (
        "two-pdbs-then-drain",
        "pod_manager.go updateNodeToDrainOrFailed; drain_manager.go ScheduleNodesDrain fails",
        DRAIN_ON,
        [trainer(), budget("a", "  maxUnavailable: 1\n"), budget("b", "  maxUnavailable: 1\n")],
        "upgrade-failed",
        ["HTTP 500", "drain fails at once"],
        0,
    ),
]


def test_a_pod_under_two_pdbs_does_not_stop_the_other_evictions(tmp_path: Path) -> None:
    # drain.go evictPods: one goroutine per pod; the 500 ends only its own pod's eviction
    other = trainer(1).replace("trainer", "server")
    root = make_repo(tmp_path, DRAIN_OFF, trainer(), budget("a"), budget("b"), other)
    _, out = rehearse(root)
    assert [e["pod"] for w in out["waves"] for e in w["evictions"]] == ["Deployment/ml/server#0"]
    assert first_node(out) is not None


@pytest.mark.parametrize(
    ("case", "upstream", "body", "workloads", "state", "words", "seconds"),
    REFUSALS,
    ids=[row[0] for row in REFUSALS],
)
def test_evictions_as_the_api_server_answers_them(
    tmp_path: Path,
    case: str,
    upstream: str,
    body: str,
    workloads: list[str],
    state: str | None,
    words: list[str],
    seconds: int,
) -> None:
    _, out = rehearse(make_repo(tmp_path, body, *workloads))
    stall = first_node(out)
    assert (stall[0] if stall else None) == state, (case, upstream, stall)
    for word in words:
        assert stall is not None and word in stall[1], (case, word, stall)
    left = next(
        w["seconds"]
        for w in out["waves"]
        for m in w["nodes"]
        if m["node"] == "gpu-0" and m["from"] == "pod-deletion-required"
    )
    assert left == seconds, (case, upstream)


def pinned_pod(name: str, volumes: str = "") -> str:
    """A GPU pod without controller that can run only on gpu-0."""
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: ml\nspec:\n"
        "  nodeSelector: {kubernetes.io/hostname: gpu-0}\n  containers:\n  - name: main\n"
        "    image: example/n:1\n    resources: {limits: {nvidia.com/gpu: 1}}\n" + volumes
    )


SCRATCH = "  volumes:\n  - {name: scratch, emptyDir: {}}\n"

# (case, upstream, policy body, workloads, plan step 3's status, words of its blocker or of
# a note naming the workload)
PLAN_DRAIN = [
    (
        "bare-pod-force",
        "pod_manager.go SchedulePodEviction: Force from podDeletion; filters.go unreplicatedFilter",
        "      podDeletion: {force: true}\n",
        [pinned_pod("notebook")],
        "ready",
        [],
    ),
    (
        "bare-pod-no-force",
        "filters.go unreplicatedFilter; pod_manager.go updateNodeToDrainOrFailed",
        DRAIN_OFF,
        [pinned_pod("notebook")],
        "blocked",
        ["Pod ml/notebook", "no controller", "upgrade-failed"],
    ),
    (
        "emptydir-pinned",
        "filters.go localStorageFilter: DeleteEmptyDirData from podDeletion.deleteEmptyDir",
        "      podDeletion: {force: true}\n",
        [pinned_pod("notebook", SCRATCH)],
        "blocked",
        ["local storage (emptyDir)", "upgrade-failed"],
    ),
    (
        "emptydir-allowed",
        "filters.go localStorageFilter: DeleteEmptyDirData true",
        "      podDeletion: {force: true, deleteEmptyDir: true}\n",
        [pinned_pod("notebook", SCRATCH)],
        "ready",
        [],
    ),
    (
        "emptydir-then-drain",
        "pod_manager.go updateNodeToDrainOrFailed -> drain_manager.go with drain's own flags",
        "      podDeletion: {force: true}\n"
        "      drain: {enable: true, force: true, deleteEmptyDir: true}\n",
        [pinned_pod("notebook", SCRATCH)],
        "ready",
        ["the drain removes it"],
    ),
    (
        "emptydir-may-run-here",
        "the plan blocks only on certainty: one replica over two nodes",
        DRAIN_OFF,
        [SCRATCH_TRAINER.replace("      nodeSelector: {kubernetes.io/hostname: gpu-0}\n", "")],
        "ready",
        ["may run on gpu-0", "local storage (emptyDir)"],
    ),
    (
        "gpu-daemonset",
        "pod_manager.go SchedulePodEviction + filters.go daemonSetFilter",
        DRAIN_OFF,
        [daemonset("gpu-agent")],
        "blocked",
        ["DaemonSet ml/gpu-agent", "Cannot delete all required pods", "upgrade-failed"],
    ),
]


@pytest.mark.parametrize(
    ("case", "upstream", "body", "workloads", "status", "words"),
    PLAN_DRAIN,
    ids=[row[0] for row in PLAN_DRAIN],
)
def test_plan_drain_follows_the_controllers_policy(
    tmp_path: Path,
    case: str,
    upstream: str,
    body: str,
    workloads: list[str],
    status: str,
    words: list[str],
) -> None:
    root = make_repo(tmp_path, body, *workloads)
    result = run_main("plan", "gpu-0", str(root), "--driver", "550.127.05", "--format", "json")
    drain = json.loads(result.stdout)["steps"][2]
    assert drain["status"] == status, (case, upstream, drain)
    said = [i["message"] for i in drain["blockers"] or drain["notes"][1:]]
    for word in words:
        assert any(word in text for text in said), (case, word, said)
    if not words:
        assert said == [], (case, said)


def admission_repo(tmp_path: Path, max_unavailable: str, cordoned: bool = False) -> Path:
    root = make_repo(tmp_path, DRAIN_OFF)
    if cordoned:  # gpu-1 cordoned by hand
        nodes = (root / "nodes.yaml").read_text()
        head, sep, tail = nodes.partition("name: gpu-1\n")
        (root / "nodes.yaml").write_text(head + sep + tail + "spec:\n  unschedulable: true\n")
    text = (root / "clusterpolicy.yaml").read_text()
    (root / "clusterpolicy.yaml").write_text(
        text.replace('maxUnavailable: "50%"', f"maxUnavailable: {max_unavailable}")
    )
    return root


# (case, upstream, maxUnavailable as written, gpu-1 cordoned, nodes that reach upgrade-done)
ADMISSION = [
    ("minus-one", "GetUpgradesAvailable: 0 unavailable >= -1 -> 0", "-1", False, []),
    ("minus-percent", "ceil(-10% x 2) = 0 -> 0 available", '"-10%"', False, []),
    ("plus-percent", 'strconv.Atoi("+50") = 50: ceil(50% x 2) = 1', '"+50%"', False, [0, 1]),
    (
        "minus-one-cordoned",
        "ProcessUpgradeRequiredNodes: a cordoned node goes ahead without a slot",
        "-1",
        True,
        [1],
    ),
]


@pytest.mark.parametrize(
    ("case", "upstream", "written", "cordoned", "done"),
    ADMISSION,
    ids=[row[0] for row in ADMISSION],
)
def test_max_unavailable_signed(
    tmp_path: Path, case: str, upstream: str, written: str, cordoned: bool, done: list[int]
) -> None:
    _, out = rehearse(admission_repo(tmp_path, written, cordoned))
    reached = sorted(
        m["node"] for w in out["waves"] for m in w["nodes"] if m["to"] == "upgrade-done"
    )
    assert reached == [f"gpu-{i}" for i in done], (case, upstream)


def test_an_unparsable_wait_selector_stops_every_reconcile_there(tmp_path: Path) -> None:
    # pod_manager.go ScheduleCheckOnPodCompletion returns ListPods' error; ApplyState returns
    # it before ProcessPodDeletionRequiredNodes, so the node never leaves the state
    body = DRAIN_OFF + '      waitForCompletion: {podSelector: "job in (a"}\n'
    code, out = rehearse(make_repo(tmp_path, body))
    assert code == 1
    state, reason = first_node(out) or ("", "")
    assert state == "wait-for-jobs-required"
    assert "'job in (a' is not a label selector" in reason
    assert out["stalls"][0]["location"] == "clusterpolicy.yaml:12:27"


def test_an_unparsable_drain_selector_fails_the_drain(tmp_path: Path) -> None:
    # drain_manager.go ScheduleNodesDrain: RunNodeDrain's GetPodsForDeletion fails on
    # labels.Parse -> upgrade-failed; the emptyDir trainer sends the node to the drain
    body = '      podDeletion: {}\n      drain: {enable: true, podSelector: "app in (a"}\n'
    code, out = rehearse(make_repo(tmp_path, body, SCRATCH_TRAINER))
    assert code == 1
    walked = [m["to"] for w in out["waves"] for m in w["nodes"] if m["node"] == "gpu-0"]
    assert walked[-2:] == ["drain-required", "upgrade-failed"]
    state, reason = first_node(out) or ("", "")
    assert "is not a label selector, so the drain fails" in reason


def test_gpu025_says_so_at_the_selector(tmp_path: Path) -> None:
    body = (
        '      podDeletion: {}\n      waitForCompletion: {podSelector: "job in (a"}\n'
        '      drain:\n        enable: true\n        podSelector: "app in (a"\n'
    )
    root = make_repo(tmp_path, body)
    result = run_main("check", str(root), "--format", "json", "--select", "GPU025", "--no-cache")
    found = [
        (f["location"]["line"], f["location"]["column"], f["severity"])
        for f in json.loads(result.stdout)["findings"]
    ]
    assert found == [(12, 27, "error"), (15, 9, "error")]


def test_an_unparsable_wait_selector_holds_the_later_steps_too(tmp_path: Path) -> None:
    # upgrade_state.go ApplyState returns at ProcessWaitForJobsRequiredNodes' error, so
    # ProcessValidationRequiredNodes never runs for gpu-1 while gpu-0 waits
    state = "nvidia.com/gpu-driver-upgrade-state"
    root = make_repo(tmp_path, DRAIN_OFF + '      waitForCompletion: {podSelector: "a in (b"}\n')
    labels = {"gpu-0": {state: "wait-for-jobs-required"}, "gpu-1": {state: "validation-required"}}
    gpu_cluster(root, 2, labels)
    _, out = rehearse(root)
    stalls = {s["node"]: (s["state"], s["reason"]) for s in out["stalls"]}
    assert stalls["gpu-1"][0] == "validation-required"
    assert stalls["gpu-1"][1].startswith("every reconcile fails before validation-required")


def helm_repo(tmp_path: Path, upgrade_policy: str, *workloads: str) -> Path:
    """gpu-0 and gpu-1 with a Flux HelmRelease of the chart whose values hold
    ``upgrade_policy`` (keys indented for driver.upgradePolicy)."""
    root = tmp_path / "repo"
    gpu_cluster(root, 2)
    write(root, "gpu-operator.yaml", helm_release("v25.3.0", HELM_VALUES + upgrade_policy))
    if workloads:
        (root / "work.yaml").write_text("---\n".join(workloads))
    return root


HELM_VALUES = (
    "  values:\n    driver:\n      upgradePolicy:\n"
    '        autoUpgrade: true\n        maxUnavailable: "50%"\n'
)
FREE_TRAINER = SCRATCH_TRAINER.replace("      nodeSelector: {kubernetes.io/hostname: gpu-0}\n", "")


@pytest.mark.parametrize(
    ("case", "values", "state"),
    [
        # templates/clusterpolicy.yaml: podDeletion.deleteEmptyDir comes from
        # gpuPodDeletion.deleteEmptyDir | default false; a podDeletion key is not read
        ("podDeletion-key", "        podDeletion: {deleteEmptyDir: true}\n", "upgrade-failed"),
        ("gpuPodDeletion-key", "        gpuPodDeletion: {deleteEmptyDir: true}\n", None),
    ],
)
def test_chart_values_for_pod_deletion(tmp_path: Path, case: str, values: str, state) -> None:
    _, out = rehearse(helm_repo(tmp_path, values, FREE_TRAINER))
    stall = first_node(out)
    assert (stall[0] if stall else None) == state, (case, stall)


@pytest.mark.parametrize(
    ("case", "values", "admitted"),
    [
        # templates/clusterpolicy.yaml prints both unquoted: "2" is the int 2
        (
            "quoted-numbers",
            '        maxParallelUpgrades: "2"\n        maxUnavailable: "2"\n',
            ["gpu-0", "gpu-1"],
        ),
        # `| default false` keeps the non-empty string, printed as false: the controller is off
        # and the rehearsal says it rehearses autoUpgrade: true with the rest as written
        ("quoted-false", '        autoUpgrade: "false"\n', ["gpu-0"]),
    ],
)
def test_chart_values_as_rendered(tmp_path: Path, case: str, values: str, admitted) -> None:
    root = helm_repo(tmp_path, values)
    (root / "gpu-operator.yaml").write_text(
        (root / "gpu-operator.yaml").read_text().replace("        autoUpgrade: true\n", "", 1)
    )
    code, out = rehearse(root)
    assert (code, out["admitted"]) == (0, admitted), case
    off = any("does not turn the upgrade controller on" in n for n in out["notes"])
    assert off is (case == "quoted-false"), out["notes"]
