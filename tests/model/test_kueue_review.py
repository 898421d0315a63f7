"""Kueue: which LocalQueue a workload goes to, whether its ClusterQueue admits it, and which
ResourceFlavors it gets (model/kueue.py). Each test cites the kubernetes-sigs/kueue file and
function it follows; the expected values are ours, worked out from that code."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from gpudrv_check.core.finding import Finding
from gpudrv_check.engine.run import check
from gpudrv_check.model.admission import admit
from gpudrv_check.model.kueue import Kueue
from gpudrv_check.model.workload import Workload, build_workloads
from gpudrv_check.model.workload_kinds import workload_kinds
from gpudrv_check.read.config import Config, parse_config
from gpudrv_check.read.manifests import parse_manifest_bytes
from tests.conftest import write

TOLERATE_GPU = "  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"


def flavor(name: str, spec: str) -> str:
    """A ResourceFlavor `name` whose spec is the lines `spec`."""
    return (
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\n"
        f"metadata: {{name: {name}}}\nspec:\n{spec}"
    )


FLAVORS = (
    flavor("h100", "  nodeLabels: {gpu: h100}\n" + TOLERATE_GPU)
    + "---\n"
    + flavor("a100", "  nodeLabels: {gpu: a100}\n" + TOLERATE_GPU)
)


def cluster_queue(spec_extra: str = "  namespaceSelector: {}\n", gpu_quota: str = "8") -> str:
    return f"""
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {{name: gpus}}
spec:
{spec_extra}  resourceGroups:
    - coveredResources: [cpu, nvidia.com/gpu]
      flavors:
        - name: h100
          resources:
            - {{name: cpu, nominalQuota: 64}}
            - {{name: nvidia.com/gpu, nominalQuota: {gpu_quota}}}
        - name: a100
          resources: [{{name: cpu, nominalQuota: 64}}, {{name: nvidia.com/gpu, nominalQuota: 8}}]
"""


def local_queue(name: str = "team", namespace: str = "research", extra: str = "") -> str:
    return f"""
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {{name: {name}, namespace: {namespace}}}
spec: {{clusterQueue: gpus{extra}}}
"""


def job(
    labels: str = "{kueue.x-k8s.io/queue-name: team}",
    pod: str = "",
    resources: str = "{limits: {nvidia.com/gpu: 1}}",
    namespace: str = "research",
    template_labels: str = "{}",
) -> str:
    return f"""
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: {namespace}
  labels: {labels}
spec:
  template:
    metadata:
      labels: {template_labels}
    spec:
      restartPolicy: Never
{pod}      containers:
        - name: c
          image: nvcr.io/nvidia/pytorch:24.05-py3
          resources: {resources}
"""


QUEUES = FLAVORS + "---" + cluster_queue() + "---" + local_queue()


def docs(*parts: str) -> str:
    return "\n---\n".join(textwrap.dedent(p).strip("\n") for p in parts) + "\n"


def admitted(text: str, config: Config | None = None) -> list[Workload]:
    """The workloads of `text` after admission (model/admission.py admit)."""
    result = parse_manifest_bytes("w.yaml", text.encode())
    found, _ = build_workloads(result.manifests, workload_kinds(None))
    admit(found, result.manifests, config or Config())
    return found


def only(text: str, config: Config | None = None) -> Workload:
    (workload,) = admitted(text, config)
    return workload


def selector(workload: Workload) -> dict[str, Any]:
    value = workload.pod_spec.get("nodeSelector") if workload.pod_spec else None
    return dict(value) if isinstance(value, dict) else {}


def tolerations(workload: Workload) -> list[dict[str, Any]]:
    value = workload.pod_spec.get("tolerations") if workload.pod_spec else None
    return [dict(t) for t in value] if isinstance(value, list) else []


def refusal(text: str) -> str:
    """Why Kueue assigns the (only) workload of `text` no flavor ("" when it assigns one)."""
    result = parse_manifest_bytes("w.yaml", text.encode())
    (workload,) = build_workloads(result.manifests, workload_kinds(None))[0]
    kueue = Kueue(result.manifests)
    queue = kueue.queue(workload)
    assert queue is not None
    return kueue.assign(workload, queue, workload.pod_spec)[1]


AFFINITY = """      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
{terms}
"""


def affinity(*terms: str) -> str:
    return AFFINITY.format(terms="\n".join(f"              - {t}" for t in terms))


# --- the flavor a resource group assigns -------------------------------------------------------


# pkg/scheduler/flavorassigner/flavorassigner.go checkFlavorForPodSets and flavorSelector: the
# required node affinity, cut to the flavor's label keys, must match the flavor's nodeLabels
@pytest.mark.parametrize(
    ("terms", "flavor"),
    [
        (["matchExpressions: [{key: gpu, operator: In, values: [a100]}]"], "a100"),
        (["matchExpressions: [{key: gpu, operator: NotIn, values: [h100]}]"], "a100"),
        # terms are ORed: the first that fits a flavor decides for it
        (
            [
                "matchExpressions: [{key: gpu, operator: In, values: [b200]}]",
                "matchExpressions: [{key: gpu, operator: In, values: [a100]}]",
            ],
            "a100",
        ),
        # a term with no expression on a flavor key matches every flavor: the first is taken
        (["matchExpressions: [{key: zone, operator: In, values: [z1]}]"], "h100"),
        (
            [
                "matchExpressions: [{key: gpu, operator: In, values: [a100]}]",
                "matchFields: [{key: metadata.name, operator: In, values: [n1]}]",
            ],
            "h100",
        ),
    ],
)
def test_required_node_affinity_chooses_the_flavor(terms: list[str], flavor: str) -> None:
    workload = only(docs(QUEUES, job(pod=affinity(*terms))))
    assert workload.admitted == [f"Kueue ResourceFlavor {flavor}"]
    assert selector(workload) == {"gpu": flavor}


def test_node_selector_on_a_flavor_key_chooses_the_flavor() -> None:
    """flavorassigner.go flavorSelector: the nodeSelector cut to the flavor's label keys."""
    workload = only(docs(QUEUES, job(pod="      nodeSelector: {gpu: a100, zone: z1}\n")))
    assert workload.admitted == ["Kueue ResourceFlavor a100"]
    assert selector(workload) == {"gpu": "a100", "zone": "z1"}


def test_prefer_no_schedule_taint_of_a_flavor_does_not_turn_it_down() -> None:
    """flavorassigner.go checkFlavorForPodSets: FindMatchingUntoleratedTaint over NoSchedule and
    NoExecute taints only."""
    tainted = FLAVORS.replace(
        "  nodeLabels: {gpu: h100}\n  tolerations: [{key: nvidia.com/gpu, operator: Exists, "
        "effect: NoSchedule}]",
        "  nodeLabels: {gpu: h100}\n"
        "  nodeTaints: [{key: spot, value: x, effect: PreferNoSchedule}]",
    )
    assert only(docs(tainted, cluster_queue(), local_queue(), job())).admitted == [
        "Kueue ResourceFlavor h100"
    ]
    no_execute = tainted.replace("PreferNoSchedule", "NoExecute")
    assert only(docs(no_execute, cluster_queue(), local_queue(), job())).admitted == [
        "Kueue ResourceFlavor a100"
    ]


TAINTED_FIRST = (
    flavor(
        "h100",
        "  nodeLabels: {gpu: h100}\n"
        "  nodeTaints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]\n",
    )
    + "---\n"
    + flavor("a100", "  nodeLabels: {gpu: a100}\n" + TOLERATE_GPU)
)


def test_a_job_is_matched_by_its_template_a_pod_by_the_pod() -> None:
    """flavorassigner.go checkFlavorForPodSets reads the Workload's pod template: a Job's as
    written (jobs/job: PodSets from spec.template), a bare Pod's as the API server stored it,
    with the ExtendedResourceToleration plugin's toleration (jobs/pod: PodSets from the pod)."""
    config = parse_config(
        {"matrix": None, "cluster": {"admission": ["ExtendedResourceToleration"]}}, "c.yaml"
    )
    queued = docs(TAINTED_FIRST, cluster_queue(), local_queue())
    assert only(docs(queued, job()), config).admitted[-1] == "Kueue ResourceFlavor a100"
    pod = """
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: research, labels: {kueue.x-k8s.io/queue-name: team}}
spec:
  containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]
"""
    assert only(docs(queued, pod), config).admitted[-1] == "Kueue ResourceFlavor h100"


TWO_GROUPS = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: spot}
spec:
  nodeLabels: {pool: spot}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: gpu-any}
spec:
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: gpus}
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [cpu, memory]
      flavors:
        - name: spot
          resources: [{name: cpu, nominalQuota: 64}, {name: memory, nominalQuota: 256Gi}]
    - coveredResources: [nvidia.com/gpu]
      flavors:
        - name: gpu-any
          resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
"""


def test_each_resource_group_the_pod_uses_adds_its_flavor() -> None:
    """flavorassigner.go assignFlavors (a flavor per requested resource's group) and
    pkg/podset/podset.go FromAssignment (every assigned flavor's nodeLabels and tolerations)."""
    both = only(
        docs(
            TWO_GROUPS,
            local_queue(),
            job(resources="{requests: {cpu: 4}, limits: {nvidia.com/gpu: 1}}"),
        )
    )
    assert both.admitted == ["Kueue ResourceFlavors spot, gpu-any"]
    assert selector(both) == {"pool": "spot"}
    assert tolerations(both) == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    # a pod that requests no cpu nor memory uses the GPU group only
    gpu_only = only(docs(TWO_GROUPS, local_queue(), job()))
    assert gpu_only.admitted == ["Kueue ResourceFlavor gpu-any"]
    assert selector(gpu_only) == {}


def test_a_pods_group_counts_one_per_pod() -> None:
    """flavorassigner.go assignFlavors: with a group covering `pods`, each pod requests 1."""
    text = docs(
        TWO_GROUPS.replace("[cpu, memory]", "[cpu, memory, pods]").replace(
            "{name: memory, nominalQuota: 256Gi}]",
            "{name: memory, nominalQuota: 256Gi}, {name: pods, nominalQuota: 10}]",
        ),
        local_queue(),
        job(),
    )
    assert only(text).admitted == ["Kueue ResourceFlavors spot, gpu-any"]


def test_a_resource_no_group_covers_admits_nothing() -> None:
    """flavorassigner.go assignFlavors / findFlavorForPodSets: "resource %s unavailable in
    ClusterQueue"; a zero request of it is skipped (#8079)."""
    text = docs(QUEUES, job(resources="{limits: {nvidia.com/gpu: 1, memory: 8Gi}}"))
    workload = only(text)
    assert workload.admitted == [] and selector(workload) == {}
    assert refusal(text) == "resource memory unavailable in ClusterQueue gpus"
    zero = docs(QUEUES, job(resources="{limits: {nvidia.com/gpu: 1}, requests: {memory: 0}}"))
    assert only(zero).admitted == ["Kueue ResourceFlavor h100"]


def test_no_flavor_that_fits_admits_nothing() -> None:
    """flavorassigner.go findFlavorForPodSets: no flavor of the group fits, no assignment."""
    text = docs(QUEUES, job(pod="      nodeSelector: {gpu: b200}\n"))
    assert only(text).admitted == []
    assert refusal(text) == (
        "no flavor of ClusterQueue gpus for nvidia.com/gpu fits (flavors: h100, a100)"
    )


# flavorassigner.go fitsResourceQuota: a request above the flavor's maximum capacity (its
# nominalQuota without a cohort) never fits; with a cohort it may borrow (not modelled)
@pytest.mark.parametrize(
    ("spec_extra", "quota", "flavor"),
    [
        ("  namespaceSelector: {}\n", "0", "a100"),
        ("  namespaceSelector: {}\n", '"1"', "h100"),
        ("  namespaceSelector: {}\n  cohort: all\n", "0", "h100"),
        ("  namespaceSelector: {}\n  cohortName: all\n", "0", "h100"),
    ],
)
def test_nominal_quota_below_one_pod_skips_the_flavor(
    spec_extra: str, quota: str, flavor: str
) -> None:
    text = docs(FLAVORS, cluster_queue(spec_extra, quota), local_queue(), job())
    assert only(text).admitted == [f"Kueue ResourceFlavor {flavor}"]


# --- whether the ClusterQueue admits it ------------------------------------------------------

NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata: {name: research, labels: {team: a}}\n"


# pkg/workload/resources.go ValidateAdmissibility, apis/kueue/v1beta2/clusterqueue_types.go
# namespaceSelector ("null ... no namespaces eligible", `{}` all); every Namespace carries
# kubernetes.io/metadata.name
@pytest.mark.parametrize(
    ("spec_extra", "namespace", "admits"),
    [
        ("", True, False),
        ("  namespaceSelector: {}\n", False, True),
        ("  namespaceSelector: {matchLabels: {team: a}}\n", True, True),
        ("  namespaceSelector: {matchLabels: {team: b}}\n", True, False),
        ("  namespaceSelector: {matchLabels: {team: a}}\n", False, False),
        (
            "  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: research}}\n",
            False,
            True,
        ),
        (
            "  namespaceSelector:\n    matchExpressions:\n"
            "      - {key: kubernetes.io/metadata.name, operator: NotIn, values: [research]}\n",
            False,
            False,
        ),
    ],
)
def test_namespace_selector_of_the_cluster_queue(
    spec_extra: str, namespace: bool, admits: bool
) -> None:
    parts = [FLAVORS, cluster_queue(spec_extra), local_queue(), job()]
    if namespace:
        parts.append(NAMESPACE)
    workload = only(docs(*parts))
    assert (workload.admitted == ["Kueue ResourceFlavor h100"]) is admits
    assert selector(workload) == ({"gpu": "h100"} if admits else {})


def test_unset_namespace_selector_is_the_reason() -> None:
    text = docs(FLAVORS, cluster_queue(""), local_queue(), job())
    assert refusal(text) == (
        "ClusterQueue gpus has no namespaceSelector, which selects no namespace (`{}` selects all)"
    )


# pkg/cache/scheduler/clusterqueue.go updateQueueStatus (isStopped: the ClusterQueue is
# inactive) and pkg/controller/core/workload_controller.go (a stopped LocalQueue's workloads
# are not admitted); "None" is the default
@pytest.mark.parametrize(
    ("cq_extra", "lq_extra", "admits"),
    [
        ("  stopPolicy: Hold\n", "", False),
        ("  stopPolicy: HoldAndDrain\n", "", False),
        ("", ", stopPolicy: Hold", False),
        ("  stopPolicy: None\n", ", stopPolicy: None", True),
    ],
)
def test_stop_policy(cq_extra: str, lq_extra: str, admits: bool) -> None:
    text = docs(
        FLAVORS,
        cluster_queue("  namespaceSelector: {}\n" + cq_extra),
        local_queue(extra=lq_extra),
        job(),
    )
    assert bool(only(text).admitted) is admits


def test_a_missing_flavor_leaves_the_cluster_queue_inactive() -> None:
    """pkg/cache/scheduler/clusterqueue.go updateQueueStatus: missingFlavors make the
    ClusterQueue inactive, even when the flavor that would fit exists."""
    h100_only = FLAVORS.split("---")[0]
    text = docs(h100_only, cluster_queue(), local_queue(), job())
    assert only(text).admitted == []
    assert refusal(text) == "the repo holds no ResourceFlavor a100 (ClusterQueue gpus)"


# --- which queue --------------------------------------------------------------------------------

PYTORCH_JOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: ptj
  namespace: research
  labels: {own}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        metadata: {{labels: {template}}}
        spec:
          containers:
            - name: pytorch
              image: nvcr.io/nvidia/pytorch:24.05-py3
              resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""
QUEUED = "{kueue.x-k8s.io/queue-name: team}"


def test_a_kind_kueue_does_not_integrate_ignores_its_own_label() -> None:
    """config/components/manager/controller_manager_config.yaml leaves kubeflow.org/pytorchjob
    out; a queue-name label on its pod template reaches the pods, which the `pod` integration
    admits (jobs/pod/pod_webhook.go Default)."""
    own = only(docs(QUEUES, PYTORCH_JOB.format(own=QUEUED, template="{}")))
    assert own.admitted == [] and selector(own) == {}
    pods = only(docs(QUEUES, PYTORCH_JOB.format(own="{}", template=QUEUED)))
    assert pods.admitted == ["Kueue ResourceFlavor h100"]
    assert pods.admitted_at == (
        "spec", "pytorchReplicaSpecs", "Master", "template", "metadata", "labels",
        "kueue.x-k8s.io/queue-name",
    )  # fmt: skip


CRON_JOB = """
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
  namespace: research
  labels: {own}
spec:
  schedule: "0 0 * * *"
  jobTemplate:
    metadata:
      labels: {job}
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: c
              image: nvcr.io/nvidia/pytorch:24.05-py3
              resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""


def test_a_cron_jobs_jobs_carry_the_job_templates_label() -> None:
    """kubernetes cronjob_controllerv2 getJobFromTemplate2 gives each Job the jobTemplate's
    labels; Kueue's batch/job integration reads the Job's own label (jobframework
    QueueNameForObject): the CronJob's own label reaches no Job."""
    own = only(docs(QUEUES, CRON_JOB.format(own=QUEUED, job="{}")))
    assert own.admitted == []
    jobs = only(docs(QUEUES, CRON_JOB.format(own="{}", job=QUEUED)))
    assert jobs.admitted == ["Kueue ResourceFlavor h100"]
    assert jobs.admitted_at == (
        "spec", "jobTemplate", "metadata", "labels", "kueue.x-k8s.io/queue-name",
    )  # fmt: skip


def test_the_objects_own_label_wins_over_its_pod_templates() -> None:
    """jobframework/reconciler.go FindAncestorJobManagedByKueue: the pods of a queued Job are
    the Job's; their own label is not read."""
    other = FLAVORS + "---" + cluster_queue() + "---" + local_queue("team")
    other += "---" + local_queue("other").replace("gpus", "elsewhere")
    workload = only(docs(other, job(template_labels="{kueue.x-k8s.io/queue-name: other}")))
    assert workload.admitted == ["Kueue ResourceFlavor h100"]


# jobframework/defaults.go ApplyDefaultLocalQueue (constants.DefaultLocalQueueName) and
# apis/config/v1beta2/defaults.go managedJobsNamespaceSelector (kube-system, kueue-system out)
@pytest.mark.parametrize(
    ("namespace", "note"),
    [
        ("research", "Kueue ResourceFlavor h100 (LocalQueue default of namespace research)"),
        ("kube-system", None),
        ("kueue-system", None),
    ],
)
def test_the_namespaces_default_local_queue(namespace: str, note: str | None) -> None:
    text = docs(
        FLAVORS, cluster_queue(), local_queue("default", namespace), job("{}", namespace=namespace)
    )
    workload = only(text)
    assert workload.admitted == ([note] if note else [])
    if note:
        assert workload.admitted_at == ("metadata", "namespace")


def test_a_bare_pod_in_an_unmanaged_namespace_is_not_queued() -> None:
    """jobs/pod/pod_webhook.go Default: the namespace filter comes before the queue name."""
    pod = """
apiVersion: v1
kind: Pod
metadata: {{name: p, namespace: {ns}, labels: {{kueue.x-k8s.io/queue-name: team}}}}
spec:
  containers: [{{name: c, image: x, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]
"""
    for namespace, expected in (("kube-system", []), ("research", ["Kueue ResourceFlavor h100"])):
        text = docs(
            FLAVORS, cluster_queue(), local_queue(namespace=namespace), pod.format(ns=namespace)
        )
        assert only(text).admitted == expected


# --- what findings say ---------------------------------------------------------------------------

NODES = """
apiVersion: gpudrv-check.io/v1alpha1
kind: NodeInventory
nodes:
  - name: a100-1
    labels: {nvidia.com/gpu.present: "true", gpu: a100, pool: on-demand}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    capacity: {nvidia.com/gpu: "8"}
  - name: cpu-1
    labels: {kubernetes.io/os: linux}
"""


def findings(root: Path, rule: str) -> list[Finding]:
    parsed = parse_config({"matrix": None}, "c.yaml")
    return [f for f in check(root, parsed).findings if f.rule == rule]


def test_a_flavor_of_a_second_group_that_no_node_has(tmp_path: Path) -> None:
    """podset.go FromAssignment: the cpu group's flavor adds pool=spot, which no node has."""
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "q.yaml", docs(TWO_GROUPS, local_queue()))
    text = docs(job(resources="{requests: {cpu: 4}, limits: {nvidia.com/gpu: 1}}"))
    write(tmp_path, "job.yaml", text)
    (finding,) = findings(tmp_path, "GPU010")
    assert "nodeSelector pool=spot removes a100-1, cpu-1" in finding.message
    assert "set outside the pod template: Kueue ResourceFlavors spot, gpu-any." in finding.message
    assert (finding.location.line, finding.location.column) == (6, 12)  # the queue-name label


def test_affinity_and_flavor_agree(tmp_path: Path) -> None:
    """flavorassigner.go flavorSelector: with affinity on gpu=a100 Kueue skips h100, so the
    pods land on the A100 node (before: h100 was injected and GPU010 reported the clash)."""
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "q.yaml", QUEUES)
    terms = "matchExpressions: [{key: gpu, operator: In, values: [a100]}]"
    write(tmp_path, "job.yaml", job(pod=affinity(terms)))
    assert not findings(tmp_path, "GPU010") and not findings(tmp_path, "GPU012")


def test_malformed_queues_do_not_crash() -> None:
    """Values of the wrong type anywhere in the chain inject nothing and raise nothing."""
    broken = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
spec: {nodeLabels: [gpu], nodeTaints: 3, tolerations: {a: b}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: gpus}
spec:
  namespaceSelector: all
  stopPolicy: 3
  resourceGroups: 5
"""
    assert only(docs(broken, local_queue(), job())).admitted == []
    unhashable = cluster_queue().replace("- name: a100", "- name: [a100]")
    assert only(docs(FLAVORS, unhashable, local_queue(), job())).admitted == []
    taints = FLAVORS.replace(
        "  nodeLabels: {gpu: h100}\n", "  nodeLabels: {gpu: h100}\n  nodeTaints: 3\n"
    )
    assert only(docs(taints, cluster_queue(), local_queue(), job())).admitted == [
        "Kueue ResourceFlavor h100"
    ]
    groups = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: gpus}
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: nvidia.com/gpu
      flavors: h100
    - 7
    - coveredResources: [nvidia.com/gpu, 3]
      flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: [1]}]}, 4]
"""
    affinity_broken = (
        "      affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:\n"
        "        {nodeSelectorTerms: [{matchExpressions: [{key: [gpu]}, 5]}, 3]}}}\n"
    )
    flavor = FLAVORS.split("---")[0].replace(
        "nodeLabels: {gpu: h100}", "nodeLabels: {gpu: h100}\n  nodeTaints: [{key: x, effect: 5}, 3]"
    )
    workload = only(docs(flavor, groups, local_queue(), job(pod=affinity_broken)))
    assert workload.admitted == ["Kueue ResourceFlavor h100"]
