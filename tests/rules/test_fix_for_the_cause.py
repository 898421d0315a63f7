"""Each fix is right for the cause that made the finding (found by a review that built a repo
per cause of every rule): what the fix names would resolve the finding, is not impossible and
not already done, and the message counts in the singular and plural."""

from __future__ import annotations

from pathlib import Path

from gpudrv_check.core.finding import Finding
from gpudrv_check.engine.run import check
from gpudrv_check.read.config import Config
from tests.conftest import cluster_policy, gpu_node, write


def found(root: Path, rule: str, operator: str | None = None) -> list[Finding]:
    config = Config(matrix=None)
    if operator is not None:
        config.operator.version = operator
    return [f for f in check(root, config).findings if f.rule == rule]


def test_gpu017_one_node_has(tmp_path: Path) -> None:
    write(tmp_path, "nodes.yaml", gpu_node("g1") + "---\n" + CPU_NODE)
    write(tmp_path, "pod.yaml", RUNTIME_POD)
    [f] = found(tmp_path, "GPU017")
    assert "1 of the 2 nodes it can land on has no GPU" in f.message


CPU_NODE = (
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: cpu1\n"
    "  labels: {kubernetes.io/hostname: cpu1}\n"
)
RUNTIME_POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: r, namespace: default}\n"
    "spec:\n  runtimeClassName: nvidia\n  containers: [{name: c, image: busybox}]\n"
)


def test_gpu025_max_unavailable_zero_is_fixed_with_one(tmp_path: Path) -> None:
    """0 is an integer already: "write it as an integer" did nothing (nvidia/upgrade.py
    `_max_unavailable_problem`: 0 admits no node; the chart renders 0 as 25%)."""
    write(tmp_path, "nodes.yaml", gpu_node("n1"))
    policy = (
        "  driver:\n    upgradePolicy:\n      autoUpgrade: true\n      maxUnavailable: 0\n"
        "      podDeletion: {timeoutSeconds: 300}\n"
    )
    write(tmp_path, "cp.yaml", cluster_policy(policy))
    [f] = found(tmp_path, "GPU025")
    assert f.hint is not None and f.hint.startswith("Set maxUnavailable: 1")


def test_gpu022_cleared_by_sandbox_workloads_and_skip_values(tmp_path: Path) -> None:
    """With sandbox workloads the controller clears the state labels whatever autoUpgrade says
    (upgrade_controller.go): the fix names sandboxWorkloads, not autoUpgrade, already on. A
    skip label of "false" means what the controller does (not said); an empty one is shown."""
    extra1 = (
        "    nvidia.com/gpu-driver-upgrade-state: upgrade-failed\n"
        '    nvidia.com/gpu-driver-upgrade.skip: ""\n'
    )
    extra2 = '    nvidia.com/gpu-driver-upgrade.skip: "false"\n'
    write(tmp_path, "n1.yaml", gpu_node("n1") + extra1)  # more labels of the node
    write(tmp_path, "n2.yaml", gpu_node("n2") + extra2)
    policy = (
        "  sandboxWorkloads:\n    enabled: true\n"
        "  driver:\n    upgradePolicy:\n      autoUpgrade: true\n"
    )
    write(tmp_path, "cp.yaml", cluster_policy(policy))
    findings = found(tmp_path, "GPU022")
    assert all("n2" not in f.message for f in findings)
    [cleared] = [f for f in findings if "removes" in f.message]
    assert cleared.hint is not None and "sandboxWorkloads.enabled off" in cleared.hint
    assert "autoUpgrade on" not in cleared.hint
    [empty] = [f for f in findings if "skip=" in f.message]
    assert "nvidia.com/gpu-driver-upgrade.skip='', but" in empty.message


def test_gpu012_a_bound_pod_is_not_pending_and_gets_no_node_selector(tmp_path: Path) -> None:
    """spec.nodeName bypasses the scheduler: no "Pending with Insufficient", and a nodeSelector
    that does not match the bound node would make its kubelet reject it."""
    write(tmp_path, "nodes.yaml", CPU_NODE)
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: q, namespace: default}\nspec:\n"
        "  nodeName: cpu1\n  containers:\n  - name: c\n    image: busybox\n"
        "    resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    write(tmp_path, "pod.yaml", pod)
    [f] = found(tmp_path, "GPU012")
    assert "Pending" not in f.message and "no scheduler places it" in f.message
    assert f.hint is not None and f.hint.startswith("Bind the pod to a GPU node")
    assert "nodeSelector" not in f.hint


def test_gpu011_the_expression_keeps_the_nodes_labelled_otherwise(tmp_path: Path) -> None:
    """The old nodes carry nvidia.com/cuda.driver.major, the new one only
    cuda.driver-version.major: `cuda.driver.major Gt 569` would remove the new node too (Gt on a
    missing label does not match). The fix falls back to the hostnames (model/cuda.py
    `excluding_expression`: the key must be every driver's)."""
    old = [
        gpu_node(name, branch=branch).replace("cuda.driver-version.major", "cuda.driver.major")
        for name, branch in (("n1", "550"), ("n3", "535"))
    ]
    write(tmp_path, "nodes.yaml", "---\n".join([*old, gpu_node("n2", branch="570")]))
    deployment = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: default}\n"
        "spec:\n  replicas: 1\n  selector: {matchLabels: {app: d}}\n  template:\n"
        "    metadata: {labels: {app: d}}\n    spec:\n      containers:\n      - name: c\n"
        "        image: nvcr.io/nvidia/cuda:12.8.0-base-ubuntu22.04\n"
        "        resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    write(tmp_path, "dep.yaml", deployment)
    [f] = found(tmp_path, "GPU011")
    assert f.hint is not None
    assert 'key: kubernetes.io/hostname, operator: NotIn, values: ["n1", "n3"]' in f.hint
    assert "cuda.driver.major" not in f.hint


def test_gpu002_labels_there_but_no_os_tag(tmp_path: Path) -> None:
    """VERSION_ID "testing" is there; the operator release forms no OS tag from it. The finding
    said the label was missing (NVIDIADriver mode) and asked to run NFD again."""
    write(tmp_path, "nodes.yaml", gpu_node("n1", os_id="debian", version="testing"))
    write(
        tmp_path,
        "nd.yaml",
        "apiVersion: nvidia.com/v1alpha1\nkind: NVIDIADriver\nmetadata: {name: gpu}\n"
        'spec:\n  repository: nvcr.io/nvidia\n  image: driver\n  version: "550.90.07"\n',
    )
    [f] = found(tmp_path, "GPU002", operator="v26.3.0")
    assert "has no" not in f.message and "cannot form an OS tag" in f.message
    assert f.hint is not None and "Node Feature Discovery" not in f.hint
    line = "    feature.node.kubernetes.io/system-os_release.VERSION_ID"
    text = (tmp_path / "nodes.yaml").read_text().splitlines()
    assert f.location.line == next(i for i, t in enumerate(text, 1) if t.startswith(line))


def test_gpu004_counts_the_definitions(tmp_path: Path) -> None:
    inventory = (
        "apiVersion: gpudrv-check.io/v1alpha1\nkind: NodeInventory\nnodes:\n"
        "- name: c\n- name: c\n- name: c\n"
    )
    write(tmp_path, "inv.yaml", inventory)
    said = [f.message.split(" (first")[0] for f in found(tmp_path, "GPU004")]
    assert said == ["node 'c' is defined twice", "node 'c' is defined 3 times"]


def test_gpu005_names_the_field_in_the_documents_words(tmp_path: Path) -> None:
    """jsonschema says `None is not of type 'string'`: Python's words, no field."""
    inventory = (
        "apiVersion: gpudrv-check.io/v1\nkind: NodeInventory\nnodes:\n- name:\n  labels: {}\n"
    )
    write(tmp_path, "inv.yaml", inventory)
    said = sorted(f.message for f in found(tmp_path, "GPU005"))
    assert said == [
        'inventory: apiVersion must be "gpudrv-check.io/v1alpha1", not "gpudrv-check.io/v1"',
        "inventory: nodes[0].name must be a string, not null",
    ]


def test_gpu006_the_row_fix_follows_the_header(tmp_path: Path) -> None:
    """The columns may come in any order: the fix writes the row in the header's."""
    write(tmp_path, "nodes.yaml", gpu_node("n1"))
    write(tmp_path, "support-matrix.csv", "os_tag,kernel,driver_branch\nubuntu22.04,550\n")
    config = Config()
    [f] = [f for f in check(tmp_path, config).findings if f.rule == "GPU006"]
    assert f.hint == (
        "Write the row as `<os_tag>,<kernel>,<branch>`, e.g. `ubuntu22.04,5.15.0-119-generic,550`."
    )


def test_gpu014_the_fix_names_the_branch_of_the_version(tmp_path: Path) -> None:
    """The message said "use '535'", the static fix `"550"` and spoke of NVIDIADriver CRs."""
    write(tmp_path, "nodes.yaml", gpu_node("n1"))
    policy = (
        "  driver:\n    usePrecompiled: true\n    repository: nvcr.io/nvidia\n    image: driver\n"
        '    version: "535.183.06"\n'
    )
    write(tmp_path, "cp.yaml", cluster_policy(policy))
    [f] = found(tmp_path, "GPU014")
    assert f.hint is not None and f.hint.startswith(
        'Set the version to the driver branch (`"535"`)'
    )
    assert "NVIDIADriver" not in f.hint


def test_gpu014_an_nvidiadriver_without_image_gets_the_crd_default(tmp_path: Path) -> None:
    """spec.image defaults to nvcr.io/nvidia/driver (nvidiadriver_types.go
    `+kubebuilder:default`), which the operator joins after the repository: the pods pull
    nvcr.io/nvidia/nvcr.io/nvidia/driver:550..., which does not exist."""
    write(tmp_path, "nodes.yaml", gpu_node("n1"))
    cr = (
        "apiVersion: nvidia.com/v1alpha1\nkind: NVIDIADriver\nmetadata: {name: default}\n"
        'spec:\n  repository: nvcr.io/nvidia\n  version: "550"\n  usePrecompiled: true\n'
    )
    write(tmp_path, "nd.yaml", cr)
    [f] = found(tmp_path, "GPU014")
    assert "nvcr.io/nvidia/nvcr.io/nvidia/driver:550" in f.message
    assert f.hint == "Set spec.image to the image's name in the repository, e.g. `image: driver`."


def _with_matrix(root: Path, rows: str) -> list[Finding]:
    write(root, "support-matrix.csv", "driver_branch,kernel,os_tag\n" + rows)
    return [f for f in check(root, Config()).findings if f.rule == "GPU001"]


def test_gpu001_a_non_precompiled_driver_pulls_no_image_per_kernel(tmp_path: Path) -> None:
    """Without usePrecompiled the operator pulls `<version>-<os-tag>` (resolveDriverTag), which
    builds its module on the node: no pull fails, whatever the kernel. It said the pod would
    fail to pull and to build that image; a kernel the matrix lacks is a warning now."""
    nodes = [gpu_node("n1", "535"), gpu_node("n2", "535", kernel="5.15.0-200-generic")]
    write(tmp_path, "nodes.yaml", "---\n".join(nodes))
    policy = '  driver:\n    repository: r.io/nv\n    version: "535.183.06"\n'
    write(tmp_path, "cp.yaml", cluster_policy(policy))
    [f] = _with_matrix(tmp_path, "535,5.15.0-119-generic,ubuntu22.04\n")
    assert f.severity.value == "warning" and "n2 runs kernel 5.15.0-200-generic" in f.message
    assert "fail to pull" not in f.message
    assert f.hint is not None and not f.hint.startswith("Build and push")
    # precompiled: the image is per kernel, and missing
    write(
        tmp_path,
        "cp.yaml",
        cluster_policy(policy.replace("535.183.06", "535") + "    usePrecompiled: true\n"),
    )
    [f] = _with_matrix(tmp_path, "535,5.15.0-119-generic,ubuntu22.04\n")
    assert f.severity.value == "error" and "fail to pull" in f.message


def test_gpu001_a_kernel_the_matrix_has_for_another_branch(tmp_path: Path) -> None:
    """The node's kernel is in the matrix, for branch 550 only: "keep the node on a kernel the
    matrix has" was done already; the fix names the branches the matrix has for it."""
    write(tmp_path, "nodes.yaml", gpu_node("n1", "535"))
    [f] = _with_matrix(tmp_path, "550,5.15.0-119-generic,ubuntu22.04\n")
    assert f.hint is not None
    assert f.hint.endswith("or run a driver branch the matrix has for this kernel (550).")


def _cr(name: str, extra: str = "") -> str:
    return (
        f"apiVersion: nvidia.com/v1alpha1\nkind: NVIDIADriver\nmetadata:\n  name: {name}\n"
        'spec:\n  repository: nvcr.io/nvidia\n  image: driver\n  version: "550.90.07"\n' + extra
    )


def test_gpu015_before_v26_7_the_fix_knows_no_default_cr(tmp_path: Path) -> None:
    """Before v26.7 there is no `spec.default` and no owner label: each CR takes every node its
    selector matches (a CR without one, every GPU node). The fix said to keep one default."""
    write(tmp_path, "nodes.yaml", gpu_node("n1") + "    pool: a\n---\n" + gpu_node("n2"))
    write(tmp_path, "nd.yaml", _cr("a", "  nodeSelector: {pool: a}\n") + "---\n" + _cr("b"))
    findings = found(tmp_path, "GPU015", operator="v25.10.0")
    assert findings and all(f.hint is not None for f in findings)
    for f in findings:
        assert "default" not in (f.hint or "").split("(")[0]
        assert f.hint is not None and f.hint.startswith(
            "Make the nodeSelectors of the CRs disjoint"
        )
        assert "assigns no NVIDIADriver owner" not in f.message


def test_gpu015_the_charts_default_cr_and_another_default(tmp_path: Path) -> None:
    """v26.7: the chart deploys its own default CR; with another `default: true` CR the fix on
    the chart's names driver.nvidiaDriverCRD.deployDefaultCR: false."""
    write(tmp_path, "nodes.yaml", gpu_node("n1"))
    release = (
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\n"
        "metadata: {name: gpu-operator, namespace: gpu-operator}\nspec:\n"
        "  chart:\n    spec: {chart: gpu-operator, version: v26.7.0}\n"
        '  values:\n    driver:\n      repository: nvcr.io/nvidia\n      version: "550.90.07"\n'
        "      nvidiaDriverCRD:\n        enabled: true\n"
    )
    write(tmp_path, "hr.yaml", release)
    write(tmp_path, "nd.yaml", _cr("main", "  default: true\n"))
    hints = {f.location.file: f.hint for f in found(tmp_path, "GPU015")}
    assert (hints["hr.yaml"] or "").startswith(
        "Set driver.nvidiaDriverCRD.deployDefaultCR: false in the chart values"
    )
    assert (hints["nd.yaml"] or "").startswith("Keep `default: true` on one CR only")


def test_gpu003_under_a_cluster_policy_the_fix_is_cluster_wide(tmp_path: Path) -> None:
    """usePrecompiled is one switch for every node of a ClusterPolicy, and getKernelVersionsMap
    lists every GPU node (state_manager.go `init`): "run the non-precompiled driver on these
    nodes" could not be done. While the conflict stands no driver DaemonSet is rendered, so
    GPU016 does not say that a node moves to another branch."""
    nodes = [
        gpu_node("n1", "535"),
        gpu_node("n2", "535", version="24.04") + '    nvidia.com/gpu.deploy.driver: "false"\n',
    ]
    write(tmp_path, "nodes.yaml", "---\n".join(nodes))
    policy = (
        "  driver:\n    enabled: true\n    usePrecompiled: true\n    repository: nvcr.io/nvidia\n"
        '    image: driver\n    version: "550"\n'
    )
    write(tmp_path, "cp.yaml", cluster_policy(policy))
    findings = found(tmp_path, "GPU003")
    assert len(findings) == 2
    for f in findings:
        assert f.hint is not None and "driver.usePrecompiled: false" in f.hint
        assert "on these nodes" not in f.hint
    assert found(tmp_path, "GPU016") == []


def test_gpu040_each_resources_error_gets_its_fix(tmp_path: Path) -> None:
    """ValidateResourceRequirements' causes: the extended-resource fix was given for all."""
    cases = {
        "neg": ('{requests: {cpu: "-1"}}', "Write a quantity of 0 or more."),
        "over": ('{requests: {cpu: "2"}, limits: {cpu: "1"}}', "Request no more than the limit"),
        "fmt": ('{limits: {memory: "1x"}}', "Write a Kubernetes quantity"),
        "name": ("{limits: {gpu: 1}}", "Name a standard resource"),
    }
    for name, (resources, _) in cases.items():
        pod = (
            f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: ml}}\nspec:\n"
            f"  containers:\n  - name: c\n    image: busybox\n    resources: {resources}\n"
        )
        write(tmp_path, f"{name}.yaml", pod)
    by_file: dict[str, set[str]] = {}
    for f in found(tmp_path, "GPU040"):
        by_file.setdefault(f.location.file, set()).add(f.hint or "")
    for name, (_, fix) in cases.items():
        hints = by_file[f"{name}.yaml"]
        assert all(h.startswith(fix) for h in hints), (name, hints)


def test_gpu040_taints_and_budgets_name_the_field_and_its_fix(tmp_path: Path) -> None:
    node = (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec:\n  taints:\n"
        "  - {key: a, value: b}\n  - {value: c, effect: NoSchedule}\n"
        "  - {key: e, effect: NoSchedule}\n  - {key: e, effect: NoSchedule}\n"
    )
    write(tmp_path, "n.yaml", node)
    pdb = (
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p, namespace: t}\n"
        "spec:\n  maxUnavailable: 1\n  unhealthyPodEvictionPolicy: Never\n"
        "  selector: {matchLabels: {app: t}}\n"
    )
    write(tmp_path, "pdb.yaml", pdb)
    said = {f.message.split(":")[0]: f.hint for f in found(tmp_path, "GPU040")}
    assert (said["spec.taints[0].effect"] or "").startswith("Give the taint an effect")
    assert (said["spec.taints[1].key"] or "").startswith("Give the taint a key")
    assert (said["spec.taints[3]"] or "").startswith("Keep one taint per key and effect")
    [budget] = [h for m, h in said.items() if m.startswith("PodDisruptionBudget")]
    assert budget == "Write unhealthyPodEvictionPolicy: IfHealthyBudget or AlwaysAllow."


def test_gpu040_invalid_labels_of_a_pod_template_or_a_pod(tmp_path: Path) -> None:
    """apimachinery ValidateLabels, through ValidateObjectMeta of the pod template and of a Pod:
    the API server rejects them; nothing was said (found by the review)."""
    deployment = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ml}\nspec:\n"
        "  selector: {matchLabels: {app: d}}\n  template:\n"
        "    metadata: {labels: {app: d, 'bad key!': ok, fine: 'bad value!'}}\n"
        "    spec: {containers: [{name: c, image: busybox}]}\n"
    )
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml, labels: {'bad key!': x}}\n"
        "spec: {containers: [{name: c, image: busybox}]}\n"
    )
    good = pod.replace("'bad key!'", "app.kubernetes.io/name").replace("name: p,", "name: q,")
    write(tmp_path, "d.yaml", deployment)
    write(tmp_path, "p.yaml", pod)
    write(tmp_path, "q.yaml", good)
    said = sorted(
        (f.location.file, f.message.split(": name part")[0].split(": a valid")[0])
        for f in found(tmp_path, "GPU040")
    )
    assert said == [
        ("d.yaml", 'spec.template.metadata.labels: Invalid value: "bad key!"'),
        ("d.yaml", 'spec.template.metadata.labels: Invalid value: "bad value!"'),
        ("p.yaml", 'metadata.labels: Invalid value: "bad key!"'),
    ]


def test_gpu040_a_job_with_negative_parallelism_or_completions(tmp_path: Path) -> None:
    """batch/validation ValidateJobSpec: ValidateNonnegativeField on both; the model read -1 as
    the Job's pod count."""
    job = (
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: ml}\nspec:\n"
        "  parallelism: -1\n  completions: -2\n  template:\n"
        "    spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}\n"
    )
    write(tmp_path, "j.yaml", job)
    said = sorted(f.message for f in found(tmp_path, "GPU040"))
    assert said == [
        "spec.completions: Invalid value: -2: must be greater than or equal to 0",
        "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
    ]


def test_gpu040_container_names_as_the_api_server_checks_them(tmp_path: Path) -> None:
    """core/validation validateContainerCommon (a name, a DNS-1123 label) and
    validateContainers / validateInitContainers (unique; an init container is checked against
    the app containers, so the collision is said at the init container). A custom resource's
    template (a Volcano Job) is validated only in its pods: nothing is said about it."""
    deployment = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ml}\nspec:\n"
        "  selector: {matchLabels: {app: d}}\n  template:\n    metadata: {labels: {app: d}}\n"
        "    spec:\n      initContainers: [{name: main, image: busybox}]\n"
        "      containers:\n      - {name: Main_1, image: busybox}\n"
        "      - {name: main, image: busybox}\n      - {name: main, image: busybox}\n"
        "      - {image: busybox}\n"
    )
    volcano = (
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: v, namespace: ml}\n"
        "spec:\n  tasks: [{name: w, replicas: 1, template: {spec: {containers: [{image: x}]}}}]\n"
    )
    write(tmp_path, "d.yaml", deployment)
    write(tmp_path, "v.yaml", volcano)
    said = sorted(
        (f.location.file, f.message.split(": a lowercase")[0]) for f in found(tmp_path, "GPU040")
    )
    spec = "spec.template.spec"
    assert said == [
        ("d.yaml", f'{spec}.containers[0].name: Invalid value: "Main_1"'),
        ("d.yaml", f'{spec}.containers[2].name: Duplicate value: "main"'),
        ("d.yaml", f"{spec}.containers[3].name: Required value"),
        ("d.yaml", f'{spec}.initContainers[0].name: Duplicate value: "main"'),
    ]
