"""Review of required pod anti-affinity spreading against kube-scheduler and the API server.

Each row names the upstream file and function whose behaviour it expects:

- the API server merges ``matchLabelKeys``/``mismatchLabelKeys`` into the term's selector with
  the labels the pod has when it is created (pkg/registry/core/pod/strategy.go
  ``applyMatchLabelKeysAndMismatchLabelKeys``), from 1.31 on (pkg/features/kube_features.go
  ``MatchLabelKeysInPodAffinity``; pkg/api/pod/util.go
  ``dropDisabledMatchLabelKeysFieldInPodAffinity`` drops both before);
- those labels include the controller's: pkg/controller/deployment/sync.go ``getNewReplicaSet``
  (``pod-template-hash``), pkg/controller/statefulset/stateful_set_utils.go ``updateIdentity``
  (``statefulset.kubernetes.io/pod-name``, ``apps.kubernetes.io/pod-index``),
  pkg/registry/batch/job/strategy.go ``generateSelector`` (``job-name``, ``controller-uid``),
  pkg/controller/job/indexed_job_utils.go ``addCompletionIndexLabel``;
- the InterPodAffinity filter (pkg/scheduler/framework/plugins/interpodaffinity/filtering.go
  ``satisfyPodAntiAffinity``) refuses a node whose domain holds a pod the term selects;
- a CronJob's Job runs its ``parallelism`` pods side by side (pkg/controller/cronjob/utils.go
  ``getJobFromTemplate2`` copies the job template; pkg/controller/job ``manageJob``).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gpudrv_check.core.finding import Finding, Severity
from gpudrv_check.engine.run import check
from gpudrv_check.k8s.podaffinity import (
    NO_SIBLING_LABELS,
    AntiAffinityTerm,
    SiblingLabels,
    controller_labels,
    term_selects_own_pods,
)
from gpudrv_check.read.config import Config, RuleSettings
from tests.conftest import MATRIX, write

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
LABELS = {"app": "w"}
SELF = {"matchLabels": LABELS}

DEPLOYMENT = controller_labels("Deployment", "w", {})
STATEFULSET = controller_labels("StatefulSet", "w", {})
JOB = controller_labels("Job", "train", {})
INDEXED_JOB = controller_labels("Job", "train", {"completionMode": "Indexed"})
MANUAL_JOB = controller_labels("Job", "train", {"manualSelector": True})
CRON_JOB = controller_labels("CronJob", None, {})


def term(selector: object = None, match: tuple = (), mismatch: tuple = ()) -> AntiAffinityTerm:
    return AntiAffinityTerm(
        index=0,
        topology_key=HOST,
        label_selector=SELF if selector is None else selector,
        match_label_keys=match,
        mismatch_label_keys=mismatch,
    )


def exists(key: str) -> dict:
    return {"matchExpressions": [{"key": key, "operator": "Exists"}]}


# (id, term, controller labels, label keys applied, selects the pod's own siblings)
SELF_ROWS = [
    # strategy.go applyMatchLabelKeysAndMismatchLabelKeys + sync.go getNewReplicaSet: every pod
    # of a ReplicaSet holds the same pod-template-hash, so NotIn (own hash) selects none of them
    (
        "Deployment mismatchLabelKeys pod-template-hash",
        term(mismatch=("pod-template-hash",)),
        DEPLOYMENT,
        True,
        False,
    ),
    # ... and In (own hash) keeps them selected
    (
        "Deployment matchLabelKeys pod-template-hash",
        term(match=("pod-template-hash",)),
        DEPLOYMENT,
        True,
        True,
    ),
    # stateful_set_utils.go updateIdentity: each pod has a name label of its own
    (
        "StatefulSet matchLabelKeys pod-name",
        term(match=("statefulset.kubernetes.io/pod-name",)),
        STATEFULSET,
        True,
        False,
    ),
    (
        "StatefulSet mismatchLabelKeys pod-index",
        term(mismatch=("apps.kubernetes.io/pod-index",)),
        STATEFULSET,
        True,
        True,
    ),
    # generateSelector: job-name is the Job's name, on every pod of the Job
    ("Job selector on job-name", term({"matchLabels": {"job-name": "train"}}), JOB, True, True),
    (
        "Job selector on batch job-name",
        term({"matchLabels": {"batch.kubernetes.io/job-name": "train"}}),
        JOB,
        True,
        True,
    ),
    (
        "Job selector on another Job's name",
        term({"matchLabels": {"job-name": "x"}}),
        JOB,
        True,
        False,
    ),
    # generateSelector is skipped with manualSelector: true
    (
        "manualSelector Job has no job-name",
        term({"matchLabels": {"job-name": "train"}}),
        MANUAL_JOB,
        True,
        False,
    ),
    # the controller-uid value is the Job's UID: set, unknown, the same on each pod
    ("Job selector controller-uid Exists", term(exists("controller-uid")), JOB, True, True),
    (
        "Job mismatchLabelKeys controller-uid",
        term(mismatch=("controller-uid",)),
        JOB,
        True,
        False,
    ),
    # indexed_job_utils.go addCompletionIndexLabel: an index per pod, only for Indexed Jobs
    (
        "Indexed Job matchLabelKeys completion index",
        term(match=("batch.kubernetes.io/job-completion-index",)),
        INDEXED_JOB,
        True,
        False,
    ),
    (
        "NonIndexed Job matchLabelKeys completion index (key absent: ignored)",
        term(match=("batch.kubernetes.io/job-completion-index",)),
        JOB,
        True,
        True,
    ),
    # a CronJob names each Job after its schedule: job-name is set but not known here
    ("CronJob selector job-name Exists", term(exists("job-name")), CRON_JOB, True, True),
    # util.go dropDisabledMatchLabelKeysFieldInPodAffinity: before 1.31 the keys are dropped
    (
        "keys dropped before 1.31",
        term(mismatch=("pod-template-hash",)),
        DEPLOYMENT,
        False,
        True,
    ),
]


@pytest.mark.parametrize(
    ("anti", "siblings", "keys", "expected"),
    [row[1:] for row in SELF_ROWS],
    ids=[row[0] for row in SELF_ROWS],
)
def test_term_selects_own_pods_at_creation(
    anti: AntiAffinityTerm, siblings: SiblingLabels, keys: bool, expected: bool
) -> None:
    assert (
        term_selects_own_pods(anti, "ml", LABELS, None, siblings=siblings, label_keys=keys)
        is expected
    )


def test_null_selector_selects_nothing_even_with_keys() -> None:
    """strategy.go applyMatchLabelKeysAndMismatchLabelKeys leaves a nil selector alone."""
    anti = AntiAffinityTerm(
        index=0, topology_key=HOST, label_selector=None, match_label_keys=("app",)
    )
    assert term_selects_own_pods(anti, "ml", LABELS, siblings=DEPLOYMENT) is False


def test_job_template_label_wins_over_generated() -> None:
    """generateSelector adds job-name only when the template lacks it."""
    anti = term({"matchLabels": {"job-name": "mine"}})
    assert term_selects_own_pods(anti, "ml", {**LABELS, "job-name": "mine"}, siblings=JOB)


def test_controller_labels_of_other_kinds() -> None:
    """ReplicaSet and ReplicationController pods carry the template's labels only."""
    assert controller_labels("ReplicaSet", "w", {}) == NO_SIBLING_LABELS
    assert controller_labels("ReplicationController", "w", None) == NO_SIBLING_LABELS
    assert controller_labels("Job", None, "not a mapping").shared["job-name"] is None


# --- whole repos ---------------------------------------------------------------------------


def node(name: str, zone: str | None = None, gpus: int = 1) -> str:
    labels = f"{{kubernetes.io/hostname: {name}, nvidia.com/gpu.present: 'true'"
    labels += f", {ZONE}: {zone}}}" if zone else "}"
    return (
        f"- apiVersion: v1\n  kind: Node\n  metadata:\n    name: {name}\n"
        f"    labels: {labels}\n"
        f"  status:\n    allocatable: {{nvidia.com/gpu: '{gpus}', pods: '110'}}\n"
    )


ANTI = """\
affinity:
  podAntiAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
    - labelSelector: {selector}
      topologyKey: {key}
{keys}"""


def pod_spec(selector: str, key: str, keys: str) -> str:
    return (
        "containers:\n- name: main\n  image: registry.example/app:1.0\n"
        "  resources: {limits: {nvidia.com/gpu: 1}}\n"
        + ANTI.format(selector=selector, key=key, keys=textwrap.indent(keys, "    "))
    )


def workload(
    kind: str,
    count: int,
    selector: str = "{matchLabels: {app: w}}",
    key: str = HOST,
    keys: str = "",
    extra: str = "",
) -> str:
    """A workload `w` in `ml` with `count` pods side by side."""
    if kind == "CronJob":
        head = "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: w, namespace: ml}\nspec:\n"
        head += "  schedule: '0 * * * *'\n  jobTemplate:\n    spec:\n"
        head += f"      parallelism: {count}\n{textwrap.indent(extra, '      ')}      template:\n"
        indent = "        "
    elif kind == "Job":
        head = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: w, namespace: ml}\nspec:\n"
        head += f"  parallelism: {count}\n{textwrap.indent(extra, '  ')}  template:\n"
        indent = "    "
    else:
        head = f"apiVersion: apps/v1\nkind: {kind}\nmetadata: {{name: w, namespace: ml}}\nspec:\n"
        head += f"  replicas: {count}\n  selector: {{matchLabels: {{app: w}}}}\n"
        head += f"{textwrap.indent(extra, '  ')}  template:\n"
        indent = "    "
    body = "metadata: {labels: {app: w}}\nspec:\n" + textwrap.indent(
        ("restartPolicy: Never\n" if kind in ("Job", "CronJob") else "")
        + pod_spec(selector, key, keys),
        "  ",
    )
    return head + textwrap.indent(body, indent)


def repo(tmp_path: Path, nodes: list[str], text: str) -> Path:
    write(tmp_path, "support-matrix.csv", MATRIX)
    (tmp_path / "nodes.yaml").write_text("apiVersion: v1\nkind: List\nitems:\n" + "".join(nodes))
    (tmp_path / "w.yaml").write_text(text)
    return tmp_path


def config(release: str | None = None) -> Config:
    if release is None:
        return Config(matrix=None)
    return Config(
        matrix=None, rules={"GPU010": RuleSettings(params={"scheduler_version": release})}
    )


def placed(root: Path, release: str | None = None) -> tuple[list[str | None], list[Finding]]:
    """Where each pod of `w` runs (None: Pending) and the GPU021 findings."""
    run = check(root, config(release))
    (w,) = run.repo.workloads
    record = run.repo.occupancy.replicas(w)
    assert record is not None
    return list(record.nodes), [f for f in run.findings if f.rule == "GPU021"]


TWO_NODES = [node("a", gpus=2), node("b", gpus=2)]

# (id, workload, nodes the pods take: None = Pending, GPU021 severity or None)
REPO_ROWS = [
    # filtering.go satisfyPodAntiAffinity: 2 nodes, the third pod finds no node
    ("Deployment plain self term", workload("Deployment", 3), ["a", "b", None], Severity.ERROR),
    # strategy.go + getNewReplicaSet: NotIn (own hash) selects no sibling: no cap
    (
        "Deployment mismatchLabelKeys pod-template-hash",
        workload("Deployment", 3, keys="  mismatchLabelKeys: [pod-template-hash]\n"),
        ["a", "b", "a"],
        None,
    ),
    # strategy.go + updateIdentity: In (own pod name) selects no sibling: no cap
    (
        "StatefulSet matchLabelKeys pod-name",
        workload(
            "StatefulSet",
            3,
            keys="  matchLabelKeys: [statefulset.kubernetes.io/pod-name]\n",
            extra="serviceName: w\n",
        ),
        ["a", "b", "a"],
        None,
    ),
    # generateSelector: the pods carry job-name: w, so the term selects them: one per node
    (
        "Job selector on job-name",
        workload("Job", 3, selector="{matchLabels: {job-name: w}}"),
        ["a", "b", None],
        Severity.ERROR,
    ),
    # addCompletionIndexLabel: an index per pod, In (own index) selects no sibling
    (
        "Indexed Job matchLabelKeys completion index",
        workload(
            "Job",
            3,
            keys="  matchLabelKeys: [batch.kubernetes.io/job-completion-index]\n",
            extra="completions: 3\ncompletionMode: Indexed\n",
        ),
        ["a", "b", "a"],
        None,
    ),
    # getJobFromTemplate2 + manageJob: each Job of the CronJob runs 3 pods, one per node
    ("CronJob parallelism", workload("CronJob", 3), ["a", "b", None], Severity.ERROR),
]


@pytest.mark.parametrize(
    ("text", "nodes", "severity"),
    [row[1:] for row in REPO_ROWS],
    ids=[row[0] for row in REPO_ROWS],
)
def test_pods_placed_and_gpu021(
    tmp_path: Path, text: str, nodes: list[str | None], severity: Severity | None
) -> None:
    got, findings = placed(repo(tmp_path, TWO_NODES, text))
    assert got == nodes
    assert [f.severity for f in findings] == ([severity] if severity else [])


def test_label_keys_dropped_before_131(tmp_path: Path) -> None:
    """util.go dropDisabledMatchLabelKeysFieldInPodAffinity (MatchLabelKeysInPodAffinity off
    by default before 1.31): the term keeps the siblings apart, and the finding says why."""
    text = workload(
        "Deployment",
        3,
        selector="{matchExpressions: [{key: app, operator: Exists}]}",
        keys="  mismatchLabelKeys: [app]\n",
    )
    root = repo(tmp_path, TWO_NODES, text)
    assert placed(root)[0] == ["a", "b", "a"]  # 1.35: NotIn (own app) selects no sibling
    got, findings = placed(root, "1.30")
    assert got == ["a", "b", None]
    (finding,) = findings
    assert "drops its matchLabelKeys/mismatchLabelKeys before Kubernetes 1.31" in finding.message
    lines = text.splitlines()
    (line,) = [i + 1 for i, t in enumerate(lines) if t.strip() == f"topologyKey: {HOST}"]
    column = lines[line - 1].index("topologyKey") + 1
    assert (finding.location.file, finding.location.line, finding.location.column) == (
        "w.yaml",
        line,
        column,
    )


def test_job_messages_say_parallelism(tmp_path: Path) -> None:
    _, (finding,) = placed(repo(tmp_path, TWO_NODES, workload("Job", 3)))
    assert finding.message.startswith("Job w runs 3 pods at once, but its required pod")
    assert "1 pod stays Pending already" in finding.message
    assert finding.hint is not None and finding.hint.startswith("Lower parallelism to 2,")


def test_error_drain_clause_only_for_nodes_alone_in_their_domain(tmp_path: Path) -> None:
    """Two zones of two nodes each, 3 replicas: one is Pending, and draining a node leaves its
    replica the other node of its zone (satisfyPodAntiAffinity counts pods per domain)."""
    nodes = [node("a1", "za"), node("a2", "za"), node("b1", "zb"), node("b2", "zb")]
    _, (finding,) = placed(repo(tmp_path, nodes, workload("Deployment", 3, key=ZONE)))
    assert finding.severity is Severity.ERROR
    assert finding.message.endswith("1 replica stays Pending already")


def test_error_drain_clause_names_the_lone_nodes(tmp_path: Path) -> None:
    nodes = [node("a1", "za"), node("a2", "za"), node("b1", "zb")]
    _, (finding,) = placed(repo(tmp_path, nodes, workload("Deployment", 3, key=ZONE)))
    assert finding.message.endswith(
        "1 replica stays Pending already, and draining GPU node b1 for a driver upgrade "
        "strands one more"
    )


def test_namespace_name_label_is_the_name() -> None:
    """pkg/apis/core/v1/defaults.go SetDefaults_Namespace overwrites kubernetes.io/metadata.name
    with the Namespace's name, whatever its manifest wrote."""
    anti = AntiAffinityTerm(
        index=0,
        topology_key=HOST,
        label_selector=SELF,
        namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": "ml"}},
    )
    written = {"kubernetes.io/metadata.name": "other"}
    assert term_selects_own_pods(anti, "ml", LABELS, written) is True
