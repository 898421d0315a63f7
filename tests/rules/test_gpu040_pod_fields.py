"""GPU040 for pod-spec fields the API server rejects one by one (k8s/podfields.py).

Each row names the upstream function it follows: k8s.io/kubernetes
pkg/apis/core/validation/validation.go (1.31-1.34) ``ValidatePodSpec`` and what it calls
(``ValidateNodeName``, ``ValidatePriorityClassName``, ``ValidateRuntimeClassName``,
``ValidatePreemptionPolicy``, ``validatePodHostNetworkDeps``, ``validateOverhead``,
``validateContainers``, ``validateInitContainers``, ``validateContainerCommon``,
``validateInitContainerRestartPolicy``); pkg/apis/core/v1 ``SetDefaults_Pod``
(``defaultHostNetworkPorts``); plugin/pkg/admission/runtimeclass ``validateOverhead``."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.k8s.podfields import (
    dns1123_subdomain_messages,
    pod_field_problems,
    validate_pod_fields,
)
from gpudrv_check.model.workload import build_workloads
from gpudrv_check.read.manifests import parse_manifest_bytes
from tests.conftest import write
from tests.rules.test_placement_rules import at, found, where

SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
T = "spec.template.spec"


def deployment(spec: str, name: str = "d") -> str:
    """A Deployment whose pod spec holds `spec` (lines indented by 4 under `spec:`)."""
    body = "".join(f"      {line}\n" for line in spec.splitlines())
    return (
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: ml}}\n"
        "spec:\n  selector: {matchLabels: {app: d}}\n  template:\n"
        "    metadata: {labels: {app: d}}\n    spec:\n" + body
    )


C = "containers: [{name: c, image: busybox}]"

# (upstream function, pod spec lines, message before " (the API server rejects …)", fix start)
REJECTED = [
    (
        "ValidatePodSpec / ValidateNodeName (NameIsDNSSubdomain)",
        f"nodeName: GPU_Node-1\n{C}",
        f'{T}.nodeName: Invalid value: "GPU_Node-1": {SUBDOMAIN}',
        "Write the node's name as the cluster registers it",
    ),
    (
        "ValidatePodSpec / ValidateNodeName: IsDNS1123Subdomain's length and regex errors",
        f"nodeName: {'a' * 251}.-x\n{C}",
        f'{T}.nodeName: Invalid value: "{"a" * 251}.-x": must be no more than 253 characters; '
        f"{SUBDOMAIN}",
        "Write the node's name as the cluster registers it",
    ),
    (
        "ValidatePodSpec / ValidatePriorityClassName (NameIsDNSSubdomain)",
        f"priorityClassName: High_Priority\n{C}",
        f'{T}.priorityClassName: Invalid value: "High_Priority": {SUBDOMAIN}',
        "Name an existing PriorityClass",
    ),
    (
        "ValidatePodSpec / ValidateRuntimeClassName (NameIsDNSSubdomain)",
        f"runtimeClassName: NVIDIA\n{C}",
        f'{T}.runtimeClassName: Invalid value: "NVIDIA": {SUBDOMAIN}',
        "Name an existing RuntimeClass",
    ),
    (
        'ValidatePodSpec: spec.RuntimeClassName != nil, so "" is validated too',
        f'runtimeClassName: ""\n{C}',
        f'{T}.runtimeClassName: Invalid value: "": {SUBDOMAIN}',
        "Remove runtimeClassName",
    ),
    (
        "ValidatePreemptionPolicy: field.NotSupported",
        f"preemptionPolicy: Always\n{C}",
        f'{T}.preemptionPolicy: Unsupported value: "Always": supported values: '
        '"PreemptLowerPriority", "Never"',
        "Write `preemptionPolicy: PreemptLowerPriority`",
    ),
    (
        'ValidatePreemptionPolicy: "" is field.Required',
        f'preemptionPolicy: ""\n{C}',
        f"{T}.preemptionPolicy: Required value",
        "Write `preemptionPolicy: PreemptLowerPriority`",
    ),
    (
        "validatePodHostNetworkDeps: a set hostPort must equal containerPort",
        "hostNetwork: true\ncontainers:\n- name: c\n  image: busybox\n"
        "  ports: [{containerPort: 8080}, {containerPort: 9400, hostPort: 9500}]",
        f"{T}.containers[0].ports[1].hostPort: Invalid value: 9500: must match `containerPort` "
        "when `hostNetwork` is true",
        "With hostNetwork the container listens on the node's own port: set hostPort to the "
        "containerPort (9400)",
    ),
    (
        "validateOverhead (ValidateContainerResourceRequirements of Limits: overhead)",
        f"runtimeClassName: kata\noverhead: {{cpu: -250m, memory: 120Mi}}\n{C}",
        f'{T}.overhead.limits[cpu]: Invalid value: "-250m": must be greater than or equal to 0',
        "Write each overhead amount as 0 or more.",
    ),
    (
        "validateOverhead: ValidateResourceQuantityValue (an extended resource is whole)",
        f"runtimeClassName: kata\noverhead: {{cpu: 250m, example.com/foo: 500m}}\n{C}",
        f'{T}.overhead.limits[example.com/foo]: Invalid value: "500m": must be an integer',
        "Write a whole number for an extended resource's overhead.",
    ),
    (
        "validateInitContainers / validateContainerCommon: image required",
        f"initContainers: [{{name: setup}}]\n{C}",
        f"{T}.initContainers[0].image: Required value",
        "Give the init container an image",
    ),
    (
        "validateContainerCommon: len(ctr.Image) == 0 (an empty image)",
        f'initContainers: [{{name: setup, image: ""}}]\n{C}',
        f"{T}.initContainers[0].image: Required value",
        "Give the init container an image",
    ),
    (
        "validateInitContainerRestartPolicy: only Always (field.NotSupported)",
        f"initContainers: [{{name: proxy, image: envoy, restartPolicy: always}}]\n{C}",
        f'{T}.initContainers[0].restartPolicy: Unsupported value: "always": supported values: '
        '"Always"',
        "Write `restartPolicy: Always` to run this init container as a sidecar",
    ),
    (
        "validateContainers: restartPolicy may not be set for non-init containers",
        "containers: [{name: c, image: busybox, restartPolicy: Sometimes}]",
        f"{T}.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
        "Remove restartPolicy from the container",
    ),
]


@pytest.mark.parametrize(("upstream", "spec", "message", "fix"), REJECTED)
def test_each_field_the_api_server_rejects(
    tmp_path: Path, upstream: str, spec: str, message: str, fix: str
) -> None:
    write(tmp_path, "d.yaml", deployment(spec))
    [f] = found(tmp_path, "GPU040")
    assert f.message == f"{message} (the API server rejects the Deployment)", upstream
    assert (f.hint or "").startswith(fix), (upstream, f.hint)


# (upstream function, pod spec lines): accepted by the API server, nothing said
ACCEPTED = [
    ("ValidateNodeName: a subdomain", f"nodeName: gpu-1.rack-2.example\n{C}"),
    ("ValidatePodSpec: len(spec.NodeName) > 0 only", f'nodeName: ""\n{C}'),
    ("ValidatePriorityClassName", f"priorityClassName: system-node-critical\n{C}"),
    ("ValidatePodSpec: len(spec.PriorityClassName) > 0 only", f'priorityClassName: ""\n{C}'),
    ("ValidateRuntimeClassName", f"runtimeClassName: nvidia\n{C}"),
    ("ValidatePodSpec: RuntimeClassName nil (null)", f"runtimeClassName: null\n{C}"),
    ("ValidatePreemptionPolicy", f"preemptionPolicy: Never\n{C}"),
    ("ValidatePreemptionPolicy", f"preemptionPolicy: PreemptLowerPriority\n{C}"),
    ("ValidatePodSpec: PreemptionPolicy nil (null)", f"preemptionPolicy: null\n{C}"),
    (
        "validatePodHostNetworkDeps: a template may leave hostPort 0",
        "hostNetwork: true\ncontainers:\n- {name: c, image: x, ports: [{containerPort: 80}]}\n"
        "- {name: e, image: x, ports: [{containerPort: 9400, hostPort: 9400}]}",
    ),
    (
        "validatePodHostNetworkDeps: only spec.containers are checked",
        f"hostNetwork: true\ninitContainers:\n- {{name: i, image: x, "
        f"ports: [{{containerPort: 80, hostPort: 81}}]}}\n{C}",
    ),
    (
        "validatePodHostNetworkDeps: without hostNetwork a hostPort is free",
        "containers:\n- {name: c, image: x, ports: [{containerPort: 80, hostPort: 8080}]}",
    ),
    ("validateOverhead", f"runtimeClassName: kata\noverhead: {{cpu: 250m, memory: 120Mi}}\n{C}"),
    (
        "validateInitContainerRestartPolicy: Always (a sidecar)",
        f"initContainers: [{{name: proxy, image: envoy, restartPolicy: Always}}]\n{C}",
    ),
    # ContainerRestartRules (beta, on by default in 1.35) accepts these: left out
    (
        "ContainerRestartRules: an ordinary init container's OnFailure / Never",
        f"initContainers: [{{name: a, image: x, restartPolicy: Never}}, "
        f"{{name: b, image: x, restartPolicy: OnFailure}}]\n{C}",
    ),
    (
        "ContainerRestartRules: a regular container's Always / OnFailure / Never",
        "containers: [{name: a, image: x, restartPolicy: Always}, "
        "{name: b, image: x, restartPolicy: Never}]",
    ),
    ("validateContainerCommon on a regular container: not this check's", "containers: [{name: c}]"),
]


@pytest.mark.parametrize(("upstream", "spec"), ACCEPTED)
def test_what_the_api_server_accepts_is_not_reported(
    tmp_path: Path, upstream: str, spec: str
) -> None:
    write(tmp_path, "d.yaml", deployment(spec))
    assert found(tmp_path, "GPU040") == [], upstream


def test_the_finding_sits_at_the_offending_key(tmp_path: Path) -> None:
    text = deployment(
        "nodeName: Node_1\nhostNetwork: true\ninitContainers:\n- name: setup\n"
        "containers:\n- name: c\n  image: x\n  ports:\n  - {containerPort: 80, hostPort: 81}"
    )
    write(tmp_path, "d.yaml", text)
    spots = sorted(where(f)[1:] for f in found(tmp_path, "GPU040"))
    assert spots == sorted([at(text, "nodeName"), at(text, "name: setup"), at(text, "hostPort")])


def test_a_pod_is_rejected_and_a_cron_job_names_its_own_path(tmp_path: Path) -> None:
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\nspec:\n"
        "  priorityClassName: Critical\n  containers: [{name: c, image: x}]\n"
    )
    cron = (
        "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: cj, namespace: ml}\nspec:\n"
        "  schedule: '* * * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n"
        "          restartPolicy: Never\n          preemptionPolicy: Sometimes\n"
        "          containers: [{name: c, image: x}]\n"
    )
    write(tmp_path, "p.yaml", pod)
    write(tmp_path, "cj.yaml", cron)
    said = sorted(
        (f.location.file, f.message.split(": ")[0], f.message.rpartition(" (")[2])
        for f in found(tmp_path, "GPU040")
    )
    assert said == [
        (
            "cj.yaml",
            "spec.jobTemplate.spec.template.spec.preemptionPolicy",
            "the API server rejects the CronJob)",
        ),
        ("p.yaml", "spec.priorityClassName", "the API server rejects the Pod)"),
    ]


def test_overhead_without_a_runtime_class_is_refused_by_admission(tmp_path: Path) -> None:
    """plugin/pkg/admission/runtimeclass validateOverhead: no RuntimeClass (runtimeClassName
    nil) and Overhead set: "pod rejected: Pod Overhead set without corresponding RuntimeClass
    defined Overhead". With a runtimeClassName the RuntimeClass in the cluster decides (not
    said); an empty `overhead: {}` does not reach a controller's pods (omitempty)."""
    write(tmp_path, "d.yaml", deployment(f"overhead: {{cpu: 250m}}\n{C}"))
    write(tmp_path, "e.yaml", deployment(f"overhead: {{}}\n{C}", name="e"))
    write(tmp_path, "k.yaml", deployment(f"runtimeClassName: kata\noverhead: {{cpu: 1}}\n{C}", "k"))
    [f] = found(tmp_path, "GPU040")
    assert f.location.file == "d.yaml"
    assert f.message == (
        f"{T}.overhead: pod rejected: Pod Overhead set without corresponding RuntimeClass "
        "defined Overhead (the RuntimeClass admission plugin rejects every pod of the Deployment)"
    )
    assert (f.hint or "").startswith("Remove overhead: the RuntimeClass admission plugin")


def test_a_custom_resources_template_is_not_validated(tmp_path: Path) -> None:
    """Only the core kinds' templates are validated when the object is created."""
    volcano = (
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: v, namespace: ml}\n"
        "spec:\n  tasks:\n  - name: w\n    replicas: 1\n    template:\n      spec:\n"
        "        nodeName: Bad_Node\n        initContainers: [{name: i}]\n"
        "        containers: [{name: c, image: x}]\n"
    )
    write(tmp_path, "v.yaml", volcano)
    assert found(tmp_path, "GPU040") == []


def test_a_rejected_workload_gets_no_pods() -> None:
    """api_rejects: the placement rules leave the object to GPU040."""
    text = deployment(f"preemptionPolicy: never\n{C}")
    manifests = parse_manifest_bytes("d.yaml", text.encode()).manifests
    [workload], findings = build_workloads(manifests)
    assert workload.api_rejects and not workload.placeable
    assert [f.rule for f in findings] == ["GPU040"]


@pytest.mark.parametrize(
    "spec",
    [
        {"nodeName": "{{ .Values.nodeName }}"},
        {"priorityClassName": "${PRIORITY_CLASS}"},
        {"runtimeClassName": '{{ .Values.runtimeClass | default "nvidia" }}'},
        {"preemptionPolicy": "${POLICY}"},
        {"initContainers": [{"name": "i", "image": "x", "restartPolicy": "{{ .Values.rp }}"}]},
        # a value of the wrong type is the decoder's to refuse, not validation's
        {"nodeName": 12, "priorityClassName": True, "preemptionPolicy": 1},
        {"hostNetwork": True, "containers": [{"ports": [{"containerPort": "80", "hostPort": 81}]}]},
    ],
)
def test_unknown_values_say_nothing(spec: dict) -> None:
    assert validate_pod_fields(spec) == ()


def test_subdomain_messages_follow_is_dns1123_subdomain() -> None:
    """apimachinery validate/content/dns.go IsDNS1123Subdomain (len in bytes, then the regex)."""
    assert dns1123_subdomain_messages("gpu-1.example.com") == ()
    assert dns1123_subdomain_messages("a.") == (SUBDOMAIN,)
    assert dns1123_subdomain_messages("é" * 127) == (
        "must be no more than 253 characters",
        SUBDOMAIN,
    )


def test_results_are_remembered_by_what_they_read() -> None:
    """core/memo.py: two specs that write the checked fields alike share one result."""
    one = {"nodeName": "N", "containers": [{"name": "a", "image": "x"}], "tolerations": []}
    two = {"nodeName": "N", "containers": [{"name": "b", "image": "y"}]}
    assert pod_field_problems(one) is pod_field_problems(two)
    assert pod_field_problems({"containers": [{"name": "c", "image": "x"}]}) == ()


def test_a_remembered_result_keeps_where_the_key_is() -> None:
    """An init container without an image key is reported at the container; with `image:`
    (null) at the key: the two must not share a remembered result."""
    bare = {"initContainers": [{"name": "i"}], "containers": [{"name": "c", "image": "x"}]}
    null = {"initContainers": [{"name": "i", "image": None}], "containers": bare["containers"]}
    assert [p.path for p in pod_field_problems(bare)] == [("initContainers", 0)]
    assert [p.path for p in pod_field_problems(null)] == [("initContainers", 0, "image")]
