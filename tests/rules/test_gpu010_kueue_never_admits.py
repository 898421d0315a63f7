"""GPU010 for a workload Kueue never admits (model/kueue.py `never_admitted`): reported only
when the repo settles it, at the queue label, with the fix for the cause, and instead of a
placement finding about pods that never exist. Each test cites the kubernetes-sigs/kueue file
and function it follows; the expected values are ours, worked out from that code."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.core.finding import Finding
from gpudrv_check.engine.run import check
from gpudrv_check.model import kueue as kq
from gpudrv_check.model.workload import Workload
from gpudrv_check.read.config import Config, parse_config
from gpudrv_check.read.manifests import parse_manifest_bytes
from tests.conftest import write
from tests.model.test_kueue_review import admitted, docs

NODES = """
apiVersion: gpudrv-check.io/v1alpha1
kind: NodeInventory
nodes:
  - name: a100-1
    labels: {nvidia.com/gpu.present: "true", gpu: a100}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    capacity: {nvidia.com/gpu: "8"}
  - name: cpu-1
    labels: {kubernetes.io/os: linux}
"""

FLAVOR = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: a100}
spec:
  nodeLabels: {gpu: a100}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
"""
ALL = "  namespaceSelector: {}\n"


def cluster_queue(
    extra: str = ALL, covered: str = "[cpu, nvidia.com/gpu]", flavors: str = "[a100]"
) -> str:
    names = [n.strip() for n in flavors.strip("[]").split(",")]
    listed = "".join(
        f"        - name: {n}\n"
        "          resources: [{name: cpu, nominalQuota: 64}, {name: nvidia.com/gpu, "
        "nominalQuota: 8}]\n"
        for n in names
    )
    return (
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: gpus}\n"
        f"spec:\n{extra}  resourceGroups:\n    - coveredResources: {covered}\n"
        f"      flavors:\n{listed}"
    )


def local_queue(name: str = "team", namespace: str = "ml", extra: str = "") -> str:
    return (
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\n"
        f"metadata: {{name: {name}, namespace: {namespace}}}\n"
        f"spec: {{clusterQueue: gpus{extra}}}\n"
    )


def job(
    labels: str = "{kueue.x-k8s.io/queue-name: team}",
    resources: str = "{limits: {nvidia.com/gpu: 1}}",
    pod: str = "",
) -> str:
    return f"""apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: ml
  labels: {labels}
spec:
  template:
    spec:
      restartPolicy: Never
{pod}      containers:
        - name: trainer
          image: nvcr.io/nvidia/pytorch:24.05-py3
          resources: {resources}
"""


def held(text: str, config: Config | None = None) -> kq.Refusal | None:
    """The certain refusal of the (only) workload of `text`, after admission."""
    (workload,) = admitted(text, config)
    verdict = kq.Kueue(parse_manifest_bytes("w.yaml", text.encode()).manifests).never_admits(
        workload
    )
    return verdict[1] if verdict is not None else None


def findings(root: Path, *rules: str, config: Config | None = None) -> list[Finding]:
    parsed = config or parse_config({"matrix": None}, "c.yaml")
    return [f for f in check(root, parsed).findings if f.rule in rules]


def repo(root: Path, queues: str, workload: str) -> None:
    write(root, "nodes.yaml", NODES)
    write(root, "queues.yaml", queues)
    write(root, "job.yaml", workload)


# --- certain: Kueue never admits it ------------------------------------------------------------


# apis/kueue/v1beta2/clusterqueue_types.go namespaceSelector ("Defaults to null which is a
# nothing selector"); pkg/cache/scheduler/clusterqueue.go takes LabelSelectorAsSelector(nil),
# which matches nothing; pkg/workload/resources.go ValidateAdmissibility: ErrNamespaceMismatch
def test_unset_namespace_selector(tmp_path: Path) -> None:
    repo(tmp_path, docs(FLAVOR, cluster_queue(""), local_queue()), job())
    (finding,) = findings(tmp_path, "GPU010")
    assert finding.message == (
        "ClusterQueue gpus has no namespaceSelector, which selects no namespace (`{}` selects "
        "all): Kueue keeps Job ml/train suspended and never creates its pods (LocalQueue "
        "ml/team, ClusterQueue gpus)."
    )
    assert finding.hint is not None
    assert finding.hint.startswith("Add `namespaceSelector: {}` (every namespace) to ClusterQueue")
    assert "{matchLabels: {kubernetes.io/metadata.name: ml}}" in finding.hint
    assert finding.severity.value == "error"
    # the queue-name label: job.yaml line 6, the key's column
    assert (finding.location.file, finding.location.line, finding.location.column) == (
        "job.yaml",
        6,
        12,
    )
    assert finding.path == ["metadata", "labels", "kueue.x-k8s.io/queue-name"]


# pkg/controller/core/workload_controller.go reconcileOnLocalQueueActiveState ("LocalQueue %s
# is stopped") and reconcileOnClusterQueueActiveState; pkg/cache/scheduler/clusterqueue.go
# updateQueueStatus (isStopped: the ClusterQueue is pending) and pkg/scheduler/scheduler.go
# nominate ("ClusterQueue %s is inactive")
@pytest.mark.parametrize(
    ("cq_extra", "lq_extra", "cause", "reason", "fix"),
    [
        (
            "",
            ", stopPolicy: Hold",
            kq.LOCAL_QUEUE_STOPPED,
            "LocalQueue ml/team has stopPolicy Hold, so it admits no workload",
            "Remove `stopPolicy` from LocalQueue ml/team",
        ),
        (
            "  stopPolicy: HoldAndDrain\n",
            "",
            kq.CLUSTER_QUEUE_STOPPED,
            "ClusterQueue gpus has stopPolicy HoldAndDrain, so it admits no workload",
            "Remove `stopPolicy` from ClusterQueue gpus",
        ),
        (
            "  stopPolicy: Hold\n",
            "",
            kq.CLUSTER_QUEUE_STOPPED,
            "ClusterQueue gpus has stopPolicy Hold, so it admits no workload",
            "Remove `stopPolicy` from ClusterQueue gpus",
        ),
    ],
)
def test_stop_policy(
    tmp_path: Path, cq_extra: str, lq_extra: str, cause: str, reason: str, fix: str
) -> None:
    text = docs(FLAVOR, cluster_queue(ALL + cq_extra), local_queue(extra=lq_extra), job())
    refusal = held(text)
    assert refusal is not None and refusal.cause == cause
    repo(tmp_path, docs(FLAVOR, cluster_queue(ALL + cq_extra), local_queue(extra=lq_extra)), job())
    (finding,) = findings(tmp_path, "GPU010")
    assert finding.message.startswith(reason + ": Kueue keeps Job ml/train suspended")
    assert finding.hint is not None and finding.hint.startswith(fix)


NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata: {name: ml, labels: {team: a}}\n"


# pkg/workload/resources.go ValidateAdmissibility: the selector against the Namespace's labels;
# the API server labels every Namespace kubernetes.io/metadata.name (NamespaceDefaultLabelName)
@pytest.mark.parametrize(
    ("selector", "namespace", "certain"),
    [
        ("{matchLabels: {team: b}}", True, True),
        ("{matchExpressions: [{key: team, operator: DoesNotExist}]}", True, True),
        ("{matchLabels: {kubernetes.io/metadata.name: other}}", False, True),
        (
            "{matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, "
            "values: [ml]}]}",
            False,
            True,
        ),
        # the labels of a Namespace the repo does not hold are not known
        ("{matchLabels: {team: b}}", False, False),
        ("{matchExpressions: [{key: team, operator: Exists}]}", False, False),
    ],
)
def test_namespace_selector_that_does_not_select(
    selector: str, namespace: bool, certain: bool
) -> None:
    parts = [FLAVOR, cluster_queue(f"  namespaceSelector: {selector}\n"), local_queue(), job()]
    if namespace:
        parts.append(NAMESPACE)
    refusal = held(docs(*parts))
    if not certain:
        assert refusal is None
        return
    assert refusal is not None and refusal.cause == kq.NAMESPACE_NOT_SELECTED
    assert refusal.details == (
        (
            "kubernetes.io/metadata.name=ml, team=a"
            if namespace
            else "kubernetes.io/metadata.name=ml"
        ),
    )


def test_namespace_selector_message_and_fix(tmp_path: Path) -> None:
    queues = docs(FLAVOR, cluster_queue("  namespaceSelector: {matchLabels: {team: b}}\n"))
    repo(tmp_path, docs(queues, local_queue(), NAMESPACE), job())
    (finding,) = findings(tmp_path, "GPU010")
    assert finding.message == (
        "the namespaceSelector of ClusterQueue gpus does not select namespace ml (labels "
        "kubernetes.io/metadata.name=ml, team=a): Kueue keeps Job ml/train suspended and never "
        "creates its pods (LocalQueue ml/team, ClusterQueue gpus)."
    )
    assert finding.hint == (
        "Make the namespaceSelector of ClusterQueue gpus select namespace ml (`{}` selects every "
        "namespace), or give Namespace ml labels it matches, or send the workload to a "
        "LocalQueue of a ClusterQueue that selects it."
    )


# pkg/scheduler/flavorassigner/flavorassigner.go assignFlavors / findFlavorForPodSets:
# "resource %s unavailable in ClusterQueue" (default quotaCheckStrategy BlockUndeclared,
# apis/config/v1beta2 configuration_types.go); a zero request is skipped (#8079)
def test_a_resource_no_group_covers(tmp_path: Path) -> None:
    resources = "{limits: {nvidia.com/gpu: 1, memory: 8Gi, ephemeral-storage: 1Gi}}"
    repo(tmp_path, docs(FLAVOR, cluster_queue(), local_queue()), job(resources=resources))
    (finding,) = findings(tmp_path, "GPU010")
    assert finding.message == (
        "its pods request ephemeral-storage, memory, which no resourceGroup of ClusterQueue gpus "
        'covers ("resource ephemeral-storage unavailable in ClusterQueue", …): Kueue keeps Job '
        "ml/train suspended and never creates its pods (LocalQueue ml/team, ClusterQueue gpus)."
    )
    assert finding.hint is not None and finding.hint.startswith(
        "Add ephemeral-storage, memory to the coveredResources of a resourceGroup of "
        "ClusterQueue gpus, with a nominalQuota in each of its flavors, or stop requesting them"
    )
    zero = job(resources="{limits: {nvidia.com/gpu: 1}, requests: {memory: 0}}")
    assert held(docs(FLAVOR, cluster_queue(), local_queue(), zero)) is None


# flavorassigner.go checkFlavorForPodSets ("untolerated taint %s in flavor %s", "flavor %s
# doesn't match node affinity") and fitsResourceQuota (more than the maximum capacity, the
# nominalQuota without a cohort, never fits)
@pytest.mark.parametrize(
    ("flavor", "cq_extra", "pod", "detail", "fix"),
    [
        (
            FLAVOR,
            ALL,
            "      nodeSelector: {gpu: b200}\n",
            "flavor a100 doesn't match node affinity, its nodeLabels being gpu=a100",
            "Make the nodeSelector or required node affinity match a flavor's nodeLabels",
        ),
        (
            FLAVOR.replace(
                "  tolerations:",
                "  nodeTaints: [{key: pool, value: x, effect: NoSchedule}]\n  tolerations:",
            ),
            ALL,
            "",
            "untolerated taint pool=x:NoSchedule in flavor a100",
            "Tolerate the flavor's nodeTaints in the pod template",
        ),
    ],
)
def test_no_flavor_fits(
    tmp_path: Path, flavor: str, cq_extra: str, pod: str, detail: str, fix: str
) -> None:
    repo(tmp_path, docs(flavor, cluster_queue(cq_extra), local_queue()), job(pod=pod))
    (finding,) = findings(tmp_path, "GPU010")
    assert finding.message == (
        f"no flavor of ClusterQueue gpus for nvidia.com/gpu fits its pods ({detail}): Kueue keeps "
        "Job ml/train suspended and never creates its pods (LocalQueue ml/team, ClusterQueue "
        "gpus)."
    )
    assert finding.hint is not None and finding.hint.startswith(fix)


def test_nominal_quota_below_one_pod_without_cohort() -> None:
    """flavorassigner.go fitsResourceQuota: a request above PotentialAvailable (the nominalQuota
    when the ClusterQueue has no cohort) is NoFit; with a cohort it may borrow."""
    queues = cluster_queue().replace("nominalQuota: 8", "nominalQuota: 0")
    refusal = held(
        docs(FLAVOR, queues, local_queue(), job(resources="{limits: {nvidia.com/gpu: 2}}"))
    )
    assert refusal is not None and refusal.cause == kq.NO_FLAVOR_FITS
    assert refusal.details == (
        "insufficient quota for nvidia.com/gpu in flavor a100: one pod requests 2 > maximum "
        "capacity 0, and the ClusterQueue has no cohort to borrow from",
    )
    cohort = cluster_queue(ALL + "  cohort: all\n").replace("nominalQuota: 8", "nominalQuota: 0")
    assert held(docs(FLAVOR, cohort, local_queue(), job())) is None


def _parallel(job_text: str, spec: str, annotations: str = "") -> str:
    """`job_text` with `spec` lines (`parallelism: 4`) under its spec, and annotations."""
    out = job_text.replace("spec:\n  template:", f"spec:\n{spec}  template:", 1)
    if annotations:
        out = out.replace(
            "  namespace: ml\n", f"  namespace: ml\n  annotations: {annotations}\n", 1
        )
    return out


# (why, the Job's spec lines, annotations, the misfit said or None: admitted)
POD_SET_ROWS = [
    # jobs/job/job_controller.go PodSets: one pod set of podsCount() pods; flavorassigner.go
    # assignFlavors weighs its TotalRequests (4 x 3 = 12 GPUs) against the nominalQuota 8
    (
        "parallelism 4 of 3 GPUs each",
        "  parallelism: 4\n",
        "",
        "its 4 pods request 12 in all > maximum capacity 8",
    ),
    # podsCount: completions caps parallelism (2 x 3 = 6 fits in 8)
    ("completions caps it", "  parallelism: 4\n  completions: 2\n", "", None),
    # parallelism defaults to 1: one pod of 3 fits
    ("parallelism unset", "", "", None),
    # partial admission (job_controller.go minPodsCount): Kueue may admit as few as 2 pods
    # (6 GPUs fit in 8), so the Job is admitted
    ("min-parallelism 2", "  parallelism: 4\n", "{kueue.x-k8s.io/job-min-parallelism: '2'}", None),
    # ... but not with 3 at least (9 GPUs)
    (
        "min-parallelism 3",
        "  parallelism: 4\n",
        "{kueue.x-k8s.io/job-min-parallelism: '3'}",
        "the fewest pods it may run with (3) request 9 in all > maximum capacity 8",
    ),
    # an annotation Kueue's Job webhook refuses (not below the count, not a number): the Job is
    # not created as written, nothing is certain
    ("min-parallelism 4", "  parallelism: 4\n", "{kueue.x-k8s.io/job-min-parallelism: '4'}", None),
    ("min-parallelism x", "  parallelism: 4\n", "{kueue.x-k8s.io/job-min-parallelism: x}", None),
    # no pods: the zero-count pod set asks for nothing (assignFlavors' probe is a preference)
    ("parallelism 0", "  parallelism: 0\n", "", None),
]


@pytest.mark.parametrize(
    ("why", "spec", "annotations", "misfit"), POD_SET_ROWS, ids=[r[0] for r in POD_SET_ROWS]
)
def test_the_quota_weighs_the_pods_of_the_job_together(why, spec, annotations, misfit) -> None:
    text = _parallel(job(resources="{limits: {nvidia.com/gpu: 3}}"), spec, annotations)
    refusal = held(docs(FLAVOR, cluster_queue(), local_queue(), text))
    if misfit is None:
        assert refusal is None, why
        return
    assert refusal is not None and refusal.cause == kq.NO_FLAVOR_FITS
    assert refusal.details == (
        f"insufficient quota for nvidia.com/gpu in flavor a100: {misfit}, and the ClusterQueue "
        "has no cohort to borrow from",
    )


def test_pods_the_pod_integration_admits_are_weighed_one_by_one() -> None:
    # a queue label on the template only: each pod is its own workload (jobs/pod), so a Job of
    # 4 pods of 3 GPUs fits a quota of 8 pod by pod
    template_only = _parallel(job(labels="{}"), "  parallelism: 4\n").replace(
        "  template:\n    spec:",
        "  template:\n    metadata: {labels: {kueue.x-k8s.io/queue-name: team}}\n    spec:",
        1,
    )
    text = template_only.replace("nvidia.com/gpu: 1}", "nvidia.com/gpu: 3}")
    assert held(docs(FLAVOR, cluster_queue(), local_queue(), text)) is None


def test_a_job_over_its_quota_in_all_is_reported(tmp_path: Path) -> None:
    text = _parallel(job(resources="{limits: {nvidia.com/gpu: 3}}"), "  parallelism: 4\n")
    repo(tmp_path, docs(FLAVOR, cluster_queue(), local_queue()), text)
    (finding,) = findings(tmp_path, "GPU010")
    assert finding.message.startswith(
        "no flavor of ClusterQueue gpus for nvidia.com/gpu fits its pods (insufficient quota for "
        "nvidia.com/gpu in flavor a100: its 4 pods request 12 in all > maximum capacity 8"
    )


# --- not certain: nothing is said, as before ---------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # no LocalQueue team in the repo (jobframework: "LocalQueue %s doesn't exist" may not hold)
        docs(FLAVOR, cluster_queue(""), local_queue("other"), job()),
        # no ClusterQueue gpus in the repo
        docs(FLAVOR, local_queue(), job()),
        # a stopped LocalQueue whose ClusterQueue the repo lacks: the repo shows the pair partly
        docs(FLAVOR, local_queue(extra=", stopPolicy: Hold"), job()),
        # a stopPolicy the API server refuses: the queue in the cluster is not this one
        docs(FLAVOR, cluster_queue(ALL + "  stopPolicy: Paused\n"), local_queue(), job()),
        # a flavor not in the repo, and the one that is does not fit: the other may
        docs(
            FLAVOR,
            cluster_queue(flavors="[a100, h100]"),
            local_queue(),
            job(pod="      nodeSelector: {gpu: h100}\n"),
        ),
        # a malformed selector: the API server refuses the ClusterQueue
        docs(
            FLAVOR,
            cluster_queue("  namespaceSelector: {matchLabels: {team: [a]}}\n"),
            local_queue(),
            job(),
        ),
    ],
    ids=[
        "no-local-queue",
        "no-cluster-queue",
        "lq-stopped-cq-absent",
        "bad-stop-policy",
        "missing-flavor",
        "bad-selector",
    ],
)
def test_uncertain_refusals_say_nothing(tmp_path: Path, text: str) -> None:
    assert held(text) is None
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "all.yaml", text)
    assert not [f for f in findings(tmp_path, "GPU010") if "Kueue" in f.message]


def test_a_certain_refusal_after_an_uncertain_one() -> None:
    """pkg/cache/scheduler/clusterqueue.go: a missing flavor only makes the ClusterQueue
    inactive, which the repo cannot tell; the uncovered memory (findFlavorForPodSets) refuses
    the Job whatever that flavor is."""
    text = docs(
        FLAVOR,
        cluster_queue(flavors="[a100, h100]"),
        local_queue(),
        job(resources="{limits: {nvidia.com/gpu: 1, memory: 1Gi}}"),
    )
    refusal = held(text)
    assert refusal is not None and refusal.cause == kq.UNCOVERED_RESOURCE
    assert refusal.details == ("memory",)


# --- which queue, where the finding points ------------------------------------------------------

CRON_JOB = """apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
  namespace: ml
spec:
  schedule: "0 0 * * *"
  jobTemplate:
    metadata:
      labels: {kueue.x-k8s.io/queue-name: team}
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: c
              image: nvcr.io/nvidia/pytorch:24.05-py3
              resources: {limits: {nvidia.com/gpu: 1}}
"""

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ml
  labels: {kueue.x-k8s.io/queue-name: team}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: c
          image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04
          resources: {limits: {nvidia.com/gpu: 1}}
"""


def test_each_job_of_a_cron_job_is_weighed_as_a_job() -> None:
    # cronjob_controllerv2 getJobFromTemplate2: each Job takes the template's spec, so its pod
    # set is podsCount() of it (4 x 3 GPUs > 8); Deployment pods are weighed one at a time
    parallel = CRON_JOB.replace(
        "    spec:\n      template:", "    spec:\n      parallelism: 4\n      template:"
    )
    text = parallel.replace("nvidia.com/gpu: 1}", "nvidia.com/gpu: 3}")
    refusal = held(docs(FLAVOR, cluster_queue(), local_queue(), text))
    assert refusal is not None and refusal.details == (
        "insufficient quota for nvidia.com/gpu in flavor a100: its 4 pods request 12 in all > "
        "maximum capacity 8, and the ClusterQueue has no cohort to borrow from",
    )
    web = DEPLOYMENT.replace("replicas: 1", "replicas: 4").replace("gpu: 1}", "gpu: 3}")
    assert held(docs(FLAVOR, cluster_queue(), local_queue(), web)) is None


def test_a_queued_stateful_set_is_weighed_as_one_pod_group() -> None:
    # jobs/statefulset/statefulset_webhook.go Default: a StatefulSet with the queue label makes
    # its pods one group of `replicas` (GroupTotalCountAnnotation), admitted together: 4 pods
    # of 3 GPUs do not fit a nominalQuota of 8; with the label on its template only, each pod
    # is its own workload (the pod integration) and fits
    stateful = (
        DEPLOYMENT.replace("kind: Deployment", "kind: StatefulSet")
        .replace("replicas: 1", "replicas: 4\n  serviceName: web")
        .replace("gpu: 1}", "gpu: 3}")
    )
    refusal = held(docs(FLAVOR, cluster_queue(), local_queue(), stateful))
    assert refusal is not None and refusal.details == (
        "insufficient quota for nvidia.com/gpu in flavor a100: its 4 pods request 12 in all > "
        "maximum capacity 8, and the ClusterQueue has no cohort to borrow from",
    )
    template_only = stateful.replace("  labels: {kueue.x-k8s.io/queue-name: team}\n", "").replace(
        "metadata: {labels: {app: web}}",
        "metadata: {labels: {app: web, kueue.x-k8s.io/queue-name: team}}",
    )
    assert held(docs(FLAVOR, cluster_queue(), local_queue(), template_only)) is None


# jobframework QueueNameForObject (the object's label), kubernetes cronjob_controllerv2
# getJobFromTemplate2 (a CronJob's Jobs take the jobTemplate's labels), jobframework/defaults.go
# ApplyDefaultLocalQueue (the namespace's `default` LocalQueue), jobs/pod/pod_webhook.go Default
# and pkg/controller/jobs/pod/constants SchedulingGateName (the pod integration's gate)
@pytest.mark.parametrize(
    ("workload", "queue", "line", "column", "outcome"),
    [
        (
            CRON_JOB,
            "team",
            10,
            16,
            "Kueue keeps each Job of CronJob ml/nightly suspended and never creates its pods "
            "(LocalQueue ml/team, ClusterQueue gpus).",
        ),
        (
            job("{}"),
            "default",
            5,
            3,
            "Kueue keeps Job ml/train suspended and never creates its pods (the namespace "
            "default LocalQueue ml/default, ClusterQueue gpus).",
        ),
        (
            DEPLOYMENT,
            "team",
            6,
            12,
            "the pods of Deployment ml/web keep Kueue's scheduling gate kueue.x-k8s.io/admission "
            "and never run (LocalQueue ml/team, ClusterQueue gpus).",
        ),
    ],
    ids=["cronjob", "default-queue", "deployment"],
)
def test_where_the_finding_points(
    tmp_path: Path, workload: str, queue: str, line: int, column: int, outcome: str
) -> None:
    repo(tmp_path, docs(FLAVOR, cluster_queue(""), local_queue(queue)), workload)
    (finding,) = findings(tmp_path, "GPU010")
    assert finding.message.endswith("(`{}` selects all): " + outcome)
    assert (finding.location.line, finding.location.column) == (line, column)


PYTORCH_JOB = """apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: ptj, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        metadata: {labels: {kueue.x-k8s.io/queue-name: team}}
        spec:
          containers:
            - name: pytorch
              image: nvcr.io/nvidia/pytorch:24.05-py3
              resources: {limits: {nvidia.com/gpu: 1}}
"""


def test_a_pod_template_label_of_a_kind_kueue_does_not_integrate(tmp_path: Path) -> None:
    """config/components/manager/controller_manager_config.yaml leaves kubeflow.org/pytorchjob
    out: the template's label reaches the pods, which the pod integration gates."""
    repo(tmp_path, docs(FLAVOR, cluster_queue(""), local_queue()), PYTORCH_JOB)
    (finding,) = findings(tmp_path, "GPU010")
    assert (
        "the pods of PyTorchJob ml/ptj Master replicas keep Kueue's scheduling gate"
        in finding.message
    )
    assert finding.path == [
        "spec", "pytorchReplicaSpecs", "Master", "template", "metadata", "labels",
        "kueue.x-k8s.io/queue-name",
    ]  # fmt: skip


RAY_CLUSTER = """apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: llm
  namespace: ml
  labels: {kueue.x-k8s.io/queue-name: team}
spec:
  headGroupSpec:
    template:
      spec:
        nodeSelector: {pool: head}
        containers: [{name: head, image: rayproject/ray:2.9.0, resources: {limits: {cpu: 2}}}]
  workerGroupSpecs:
    - groupName: gpu
      replicas: 1
      template:
        spec:
          containers:
            - name: worker
              image: rayproject/ray:2.9.0-gpu
              resources: {limits: {nvidia.com/gpu: 1, memory: 8Gi}}
"""


def test_an_object_kueue_admits_whole(tmp_path: Path) -> None:
    """jobs/raycluster: one Workload with a pod set per group; flavorassigner.go assignFlavors
    fails the Workload when one pod set gets no flavor: the head never runs either. One
    finding for the object, and none about where its head (on a node no one has) would go."""
    write(tmp_path, "nodes.yaml", NODES.split("  - name: cpu-1")[0])
    write(tmp_path, "queues.yaml", docs(FLAVOR, cluster_queue(), local_queue()))
    write(tmp_path, "ray.yaml", RAY_CLUSTER)
    (finding,) = findings(tmp_path, "GPU010")
    assert finding.message.startswith(
        "the pods of its worker group gpu request memory, which no resourceGroup of ClusterQueue "
        'gpus covers ("resource memory unavailable in ClusterQueue"): Kueue keeps RayCluster '
        "ml/llm suspended"
    )
    assert finding.location.line == 6


# --- no double report, no cost without Kueue -----------------------------------------------------


def test_no_placement_finding_on_pods_that_never_exist(tmp_path: Path) -> None:
    """Before: nothing was injected and GPU010 reported the bare template's untolerated taint
    on the GPU node. Now the Kueue finding alone, once, whatever the run."""
    write(tmp_path, "nodes.yaml", NODES.split("  - name: cpu-1")[0])
    write(tmp_path, "queues.yaml", docs(FLAVOR, cluster_queue(""), local_queue()))
    write(tmp_path, "job.yaml", job())
    first = findings(tmp_path, "GPU010")
    assert [f.message.split(":")[0] for f in first] == [
        "ClusterQueue gpus has no namespaceSelector, which selects no namespace (`{}` selects all)"
    ]
    assert [f.message for f in findings(tmp_path, "GPU010")] == [f.message for f in first]
    # admitted, the same Job lands on the A100 node
    write(tmp_path, "queues.yaml", docs(FLAVOR, cluster_queue(), local_queue()))
    assert not findings(tmp_path, "GPU010")


def test_a_held_workload_gets_no_gpu012_or_gpu011_about_pods_that_never_exist(
    tmp_path: Path,
) -> None:
    """Without Kueue's flavor the bare template lands on the CPU node only (the GPU node's taint
    is not tolerated): GPU012 said "none of the nodes it can land on has a GPU". Kueue never
    admits the Job (no namespaceSelector: clusterqueue_types.go, a nothing selector), so no pod
    ever asks for a node: the Kueue finding alone."""
    repo(tmp_path, docs(FLAVOR, cluster_queue(""), local_queue()), job())
    assert [f.rule for f in findings(tmp_path, "GPU010", "GPU011", "GPU012")] == ["GPU010"]
    # the same Job without a queue label: the bare template's GPU012 is right then
    write(tmp_path, "job.yaml", job("{team: ml}"))
    assert [f.rule for f in findings(tmp_path, "GPU010", "GPU011", "GPU012")] == ["GPU012"]


def test_a_held_workload_gets_no_unknown_image_info(tmp_path: Path) -> None:
    """GPU011's info "the CUDA version of image ... is not known, so whether the drivers of
    the nodes it lands on run it is not checked" is about the nodes a pod lands on: a Job
    Kueue never admits has no pod (jobframework keeps it suspended), so the Kueue finding
    alone. Admitted, the same Job gets the info."""
    unknown = job().replace("nvcr.io/nvidia/pytorch:24.05-py3", "registry.local/trainer:7")
    repo(tmp_path, docs(FLAVOR, cluster_queue(""), local_queue()), unknown)
    assert [f.rule for f in findings(tmp_path, "GPU010", "GPU011")] == ["GPU010"]
    write(tmp_path, "queues.yaml", docs(FLAVOR, cluster_queue(), local_queue()))
    found = findings(tmp_path, "GPU010", "GPU011")
    assert [(f.rule, f.severity.value) for f in found] == [("GPU011", "info")]
    assert "registry.local/trainer:7 is not known" in found[0].message


def test_a_held_workload_takes_no_room_from_the_others(tmp_path: Path) -> None:
    """A Job Kueue never admits stays suspended (its pods never exist: jobframework keeps
    `suspend`), so it holds none of the GPU node's 8 GPUs: the Deployment after it, which asks
    for all 8, runs. Before, the Job's 8 pods took them in file order and the Deployment was
    reported Pending."""
    tolerate = "      tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n"
    repo(
        tmp_path,
        docs(FLAVOR, cluster_queue(""), local_queue()),
        job(resources="{limits: {nvidia.com/gpu: 8}}", pod=tolerate),
    )
    write(
        tmp_path,
        "serve.yaml",
        """apiVersion: apps/v1
kind: Deployment
metadata: {name: serve, namespace: ml}
spec:
  replicas: 1
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve}}
    spec:
      tolerations: [{key: nvidia.com/gpu, operator: Exists}]
      containers:
        - {name: s, image: x, resources: {limits: {nvidia.com/gpu: 8}}}
""",
    )
    found = findings(tmp_path, "GPU010")
    assert [f.location.file for f in found] == ["job.yaml"]  # the Kueue finding alone
    assert found[0].message.startswith("ClusterQueue gpus has no namespaceSelector")


def test_a_budget_over_a_held_workload_stalls_no_drain(tmp_path: Path) -> None:
    """The held Job's pods never exist (Kueue keeps it suspended), so a budget selecting them
    covers nothing a driver-upgrade drain would evict (disruption.go getPodsForPdb finds no
    pod): no GPU020. Before, minAvailable 1 of its 1 pod read as a drain refused forever."""
    tolerate = "      tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n"
    held_job = job(pod=tolerate).replace(
        "  template:\n", "  template:\n    metadata: {labels: {app: train}}\n", 1
    )
    pdb = (
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\n"
        "metadata: {name: train, namespace: ml}\n"
        "spec: {minAvailable: 1, selector: {matchLabels: {app: train}}}\n"
    )
    repo(tmp_path, docs(FLAVOR, cluster_queue(""), local_queue()), held_job)
    write(tmp_path, "pdb.yaml", pdb)
    assert [f.rule for f in findings(tmp_path, "GPU010", "GPU020")] == ["GPU010"]
    # admitted (namespaceSelector {}), the Job runs and the budget blocks the drain
    write(tmp_path, "queues.yaml", docs(FLAVOR, cluster_queue(), local_queue()))
    assert [f.rule for f in findings(tmp_path, "GPU010", "GPU020")] == ["GPU020"]


def test_a_repo_without_kueue_never_evaluates_a_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`never_admitted` builds nothing per workload when the repo holds no LocalQueue."""

    def refuse(self: kq.Kueue, workload: Workload) -> None:
        raise AssertionError("evaluated")

    monkeypatch.setattr(kq.Kueue, "never_admits", refuse)
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "job.yaml", job("{kueue.x-k8s.io/queue-name: team}"))
    assert [f.rule for f in findings(tmp_path, "GPU010", "GPU012")] == ["GPU012"]


# --- hostile input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "queues",
    [
        local_queue(extra=", stopPolicy: [Hold]") + "---\n" + cluster_queue(""),
        local_queue().replace("clusterQueue: gpus", "clusterQueue: [gpus]")
        + "---\n"
        + cluster_queue(""),
        local_queue() + "---\n" + cluster_queue("  stopPolicy: {a: b}\n"),
        local_queue() + "---\n" + cluster_queue("  namespaceSelector: 5\n"),
        local_queue() + "---\n" + cluster_queue("  namespaceSelector: [a]\n"),
        local_queue()
        + "---\n"
        + "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: gpus}\n"
        "spec: {namespaceSelector: {}, resourceGroups: x}\n",
        local_queue()
        + "---\n"
        + "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: gpus}\n"
        "spec: {namespaceSelector: {}, resourceGroups: [{coveredResources: nvidia.com/gpu, "
        "flavors: [{name: [a100]}, 3]}, 7]}\n",
        local_queue()
        + "---\n"
        + cluster_queue().replace("nominalQuota: 8}", "nominalQuota: {a: 1}}"),
        local_queue() + "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\n"
        "metadata: {name: gpus}\nspec: 3\n",
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: team, "
        "namespace: ml}\nspec: [1]\n---\n" + cluster_queue(""),
        local_queue()
        + "---\n"
        + cluster_queue("  namespaceSelector: {matchLabels: {t: a}}\n")
        + "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ml, labels: [a]}\n",
    ],
)
def test_wrong_types_in_queue_objects_do_not_crash(tmp_path: Path, queues: str) -> None:
    """Each object above is one the API server refuses (or leaves the answer to an object it
    refuses): no crash, and no certain refusal."""
    flavor = FLAVOR.replace(
        "nodeLabels: {gpu: a100}", "nodeLabels: {gpu: a100}\n  nodeTaints: [{key: x, effect: 5}, 3]"
    )
    text = docs(flavor, queues, job())
    assert held(text) is None
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "all.yaml", text)
    assert not [f for f in findings(tmp_path, "GPU010") if "Kueue" in f.message]
