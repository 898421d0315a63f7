"""Custom declarative policies: loading errors at file:line:col, matching, and where a failing
assertion is reported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpudrv_check.engine.run import check
from gpudrv_check.read.config import ConfigError, load_config
from tests.conftest import MATRIX, ROOT, gpu_node, run_main, write

EXAMPLES = ROOT / "policies" / "examples"

ZONE_POLICY = """
id: ACME001
name: gpu-node-zone
severity: warning
message: GPU node {name} has no zone
match:
  kinds: [Node]
  labelSelector: {matchLabels: {nvidia.com/gpu.present: "true"}}
assert:
  type: object
  properties:
    metadata:
      properties:
        labels: {required: [topology.kubernetes.io/zone]}
"""


def _repo(tmp_path: Path, policy: str, *manifests: tuple[str, str]) -> Path:
    write(tmp_path, "support-matrix.csv", MATRIX)
    write(tmp_path, ".gpudrv-check.yaml", "policies: [policy.yaml]\n")
    write(tmp_path, "policy.yaml", policy)
    for rel, text in manifests:
        write(tmp_path, rel, text)
    return tmp_path


def _found(root: Path, rule: str | None = None) -> list[tuple[str, str, int, int]]:
    run = check(root, load_config(root))
    return [
        (f.rule, f.location.file, f.location.line, f.location.column)
        for f in run.findings
        if rule is None or f.rule == rule
    ]


def _load_error(tmp_path: Path, policy: str) -> ConfigError:
    root = _repo(tmp_path, policy)
    with pytest.raises(ConfigError) as err:
        check(root, load_config(root))
    return err.value


# --- malformed policies: a usage error (exit 2) at the offending line -----------------------

BAD_POLICIES = [
    pytest.param(
        ZONE_POLICY.replace("severity: warning", "severity: fatal"),
        (3, 1),
        "severity",
        id="bad-severity",
    ),
    pytest.param(ZONE_POLICY.replace("id: ACME001", "id: GPU100"), (1, 1), "reserved", id="gpu-id"),
    pytest.param(ZONE_POLICY.replace("id: ACME001", "id: acme"), (1, 1), "id", id="id-pattern"),
    pytest.param(
        ZONE_POLICY.replace("match:", "matches: {}\nmatch:"),
        (5, 1),
        "unknown key 'matches'",
        id="extra",
    ),
    pytest.param(
        ZONE_POLICY.replace("kinds: [Node]", "kinds: [Node]\n  kind: Node"),
        (7, 3),
        "unknown key 'kind'",
        id="extra-in-match",
    ),
    pytest.param(
        ZONE_POLICY.replace("{name}", "{node}"),
        (4, 1),
        "unknown placeholder {node}",
        id="placeholder",
    ),
    # a format spec or conversion would be applied to repo text: a crash or a huge message
    *(
        pytest.param(
            ZONE_POLICY.replace("{name}", spec), (4, 1), "conversion or format spec", id=spec
        )
        for spec in ("{name:d}", "{name!x}", "{name!r}", "{name:{kind}}", "{name:>100000000}")
    ),
    pytest.param(
        ZONE_POLICY.replace(
            '{matchLabels: {nvidia.com/gpu.present: "true"}}',
            "{matchExpressions: [{key: a, operator: Gt, values: ['1']}]}",
        ),
        (7, 47),  # the `operator` key inside the flow mapping
        "labelSelector",
        id="bad-selector",
    ),
    pytest.param(
        ZONE_POLICY.replace("type: object", "type: objekt"),
        (9, 3),
        "not a valid JSON Schema",
        id="bad-schema",
    ),
    pytest.param(
        ZONE_POLICY.replace("name: gpu-node-zone", "name: duplicate-node"),
        (2, 1),
        "taken by GPU004",
        id="builtin-name",
    ),
    pytest.param(
        ZONE_POLICY.replace(
            "labels: {required:", "labels: {$ref: 'https://example.com/s.json', required:"
        ),
        (13, 18),
        "only local references",
        id="remote-ref",
    ),
    pytest.param("id: [\n", (1, 6), "YAML syntax", id="yaml-syntax"),  # where the text ends
    pytest.param("- a\n- b\n", (1, 1), "must be a mapping", id="not-a-mapping"),
    pytest.param(
        ZONE_POLICY.replace("message: GPU node {name} has no zone\n", ""),
        (1, 1),
        "'message' is a required property",
        id="missing-message",
    ),
]


@pytest.mark.parametrize(("policy", "where", "text"), BAD_POLICIES)
def test_malformed_policy_is_a_config_error_at_its_line(tmp_path, policy, where, text):
    err = _load_error(tmp_path, policy)
    assert err.file == "policy.yaml"
    assert (err.line, err.column) == where, str(err)
    assert text in str(err)


LOCAL_REF = """
id: ACME004
name: local-ref
severity: error
message: bad zone
match: {kinds: [Node]}
assert:
  $defs:
    zone: {type: string, pattern: "^[a-z]+-[0-9]$"}
  properties:
    metadata:
      properties:
        labels:
          properties:
            topology.kubernetes.io/zone: {$ref: "#/$defs/zone"}
"""


def test_local_references_resolve(tmp_path):
    node = gpu_node("gpu-1").replace(
        "  labels:\n", "  labels:\n    topology.kubernetes.io/zone: A\n"
    )
    root = _repo(tmp_path, LOCAL_REF, ("n.yaml", node))
    assert _found(root, "ACME004") == [("ACME004", "n.yaml", 6, 5)]


def test_duplicate_ids_across_documents(tmp_path):
    err = _load_error(tmp_path, ZONE_POLICY + "---\n" + ZONE_POLICY.replace("gpu-node-zone", "z2"))
    assert (err.line, err.column) == (16, 1)  # `id:` of the second document
    assert "id ACME001 is already used at policy.yaml:1" in str(err)


def test_policy_path_outside_the_repo_is_refused(tmp_path):
    write(tmp_path, ".gpudrv-check.yaml", "matrix: null\npolicies:\n  - ../elsewhere.yaml\n")
    with pytest.raises(ConfigError) as err:
        check(tmp_path, load_config(tmp_path))
    assert (err.value.file, err.value.line, err.value.column) == (".gpudrv-check.yaml", 3, 5)


def test_missing_policy_file(tmp_path):
    write(tmp_path, ".gpudrv-check.yaml", "matrix: null\npolicies: [nope.yaml]\n")
    with pytest.raises(ConfigError) as err:
        check(tmp_path, load_config(tmp_path))
    assert "not found" in str(err.value) and err.value.line == 2


@pytest.mark.parametrize("where", ["policies", "policies/team"], ids=["folder", "subfolder"])
def test_an_unreadable_policies_folder_is_a_usage_error_naming_it(tmp_path, monkeypatch, where):
    """Issue 23: a `policies/` folder that cannot be listed dropped its policies with one GPU000
    from the manifest walk. Now it is a config error at the `policies:` entry, naming the folder.
    (Simulated: the tests run as root, which reads a mode-000 folder.)"""
    import os

    write(tmp_path, ".gpudrv-check.yaml", "matrix: null\npolicies: [policies]\n")
    write(tmp_path, "policies/team/zone.yaml", ZONE_POLICY)
    real = os.scandir
    denied = str(tmp_path / where)

    def scandir(path=".", *args):
        if os.fspath(path) == denied:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path, *args)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(ConfigError) as err:
        check(tmp_path, load_config(tmp_path))
    assert f"cannot read folder '{where}': Permission denied" in str(err.value)
    assert (err.value.file, err.value.line) == (".gpudrv-check.yaml", 2)


# --- matching and locations --------------------------------------------------------------

NODE_ZONED = gpu_node("zoned", extra="")  # labels added below
CPU_NODE = """
apiVersion: v1
kind: Node
metadata:
  name: cpu-1
  labels: {kubernetes.io/hostname: cpu-1}
"""


def test_node_without_zone_is_reported_at_its_labels(tmp_path):
    zoned = gpu_node("gpu-2").replace(
        "    kubernetes.io/hostname: gpu-2\n",
        "    kubernetes.io/hostname: gpu-2\n    topology.kubernetes.io/zone: a\n",
    )
    root = _repo(
        tmp_path,
        ZONE_POLICY,
        ("nodes/gpu-1.yaml", gpu_node("gpu-1")),
        ("nodes/gpu-2.yaml", zoned),
        ("nodes/cpu.yaml", CPU_NODE),
    )
    # `labels:` of gpu-1 is at line 5, column 3: the deepest key of a `required` error
    assert _found(root, "ACME001") == [("ACME001", "nodes/gpu-1.yaml", 5, 3)]


def test_inventory_nodes_are_validated_as_node_objects_and_located_in_their_entry(tmp_path):
    inventory = """
    apiVersion: gpudrv-check.io/v1alpha1
    kind: NodeInventory
    nodes:
    - name: gpu-a
      labels: {nvidia.com/gpu.present: "true", topology.kubernetes.io/zone: a}
    - name: gpu-b
      labels:
        nvidia.com/gpu.present: "true"
    - name: cpu-c
      labels: {}
    """
    root = _repo(tmp_path, ZONE_POLICY, ("inventory.yaml", inventory))
    run = check(root, load_config(root))
    [finding] = [f for f in run.findings if f.rule == "ACME001"]
    assert (finding.location.line, finding.location.column) == (7, 3)
    assert str(finding.object) == "Node/gpu-b"
    # identity inside the object, not the inventory index
    assert finding.path == ["metadata", "labels"]
    assert (
        finding.message == "GPU node gpu-b has no zone (metadata.labels: missing key "
        "'topology.kubernetes.io/zone')"
    )


WRONG_VALUE = """
id: ACME002
name: branch
severity: error
message: "{kind} {name}: {error}"
match: {kinds: [Node]}
assert:
  properties:
    metadata:
      properties:
        labels:
          properties:
            nvidia.com/cuda.driver-version.major: {enum: ["550", "570"]}
"""


def test_wrong_value_is_located_at_its_key(tmp_path):
    root = _repo(tmp_path, WRONG_VALUE, ("n.yaml", gpu_node("gpu-1", branch="535")))
    run = check(root, load_config(root))
    [f] = [f for f in run.findings if f.rule == "ACME002"]
    assert (f.location.line, f.location.column) == (8, 5)
    assert f.message == "Node gpu-1: '535' is not one of ['550', '570']"
    assert f.severity.value == "error"


EXTRA_KEY = """
id: ACME003
name: no-extra-annotations
severity: info
message: unexpected annotation
match: {kinds: [ConfigMap], namespaces: ["team-*"]}
assert:
  properties:
    metadata:
      properties:
        annotations:
          propertyNames: {pattern: "^example.com/"}
          additionalProperties: false
          properties:
            example.com/owner: {type: string}
"""

CONFIGMAPS = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  namespace: team-x
  annotations:
    example.com/owner: me
    other: x
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: b
  annotations:
    other: x
"""


def test_additional_properties_point_at_the_extra_key_and_namespaces_are_globs(tmp_path):
    root = _repo(tmp_path, EXTRA_KEY, ("cm.yaml", CONFIGMAPS))
    found = _found(root, "ACME003")
    # only `a` is in team-*; `b` has no namespace, i.e. `default`
    assert ("ACME003", "cm.yaml", 8, 5) in found
    assert all(line < 10 for _, _, line, _ in found)


AFFINITY = (EXAMPLES / "gpu-workload-driver-affinity.yaml").read_text()

GPU_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: train
  namespace: ml
spec:
  template:
    spec:
      containers:
      - name: c
        image: nvcr.io/nvidia/pytorch:24.07-py3
        resources:
          limits: {nvidia.com/gpu: 1}
"""
CPU_DEPLOYMENT = GPU_DEPLOYMENT.replace("name: train", "name: web").replace(
    "limits: {nvidia.com/gpu: 1}", "limits: {cpu: 1}"
)
ZERO_GPU = GPU_DEPLOYMENT.replace("name: train", "name: zero").replace("gpu: 1", 'gpu: "0"')
GPU_CRONJOB = """
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  schedule: "0 0 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          affinity:
            nodeAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                nodeSelectorTerms:
                - matchExpressions:
                  - {key: nvidia.com/cuda.driver-version.major, operator: Gt, values: ["549"]}
                - matchExpressions:
                  - {key: kubernetes.io/hostname, operator: In, values: [a]}
          containers:
          - name: c
            resources: {requests: {nvidia.com/gpu: "2"}}
"""
GPU_POD_OK = """
apiVersion: v1
kind: Pod
metadata:
  name: ok
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: nvidia.com/cuda.driver.major, operator: Gt, values: ["560"]}
  containers:
  - name: c
    resources: {limits: {nvidia.com/gpu: 1}}
"""


def test_gpu_workload_affinity_example_on_pod_specs(tmp_path):
    root = _repo(
        tmp_path,
        AFFINITY,
        ("train.yaml", GPU_DEPLOYMENT),
        ("web.yaml", CPU_DEPLOYMENT),
        ("zero.yaml", ZERO_GPU),
        ("cron.yaml", GPU_CRONJOB),
        ("pod.yaml", GPU_POD_OK),
    )
    run = check(root, load_config(root))
    got = {
        (f.location.file, f.location.line, f.location.column, tuple(f.path))
        for f in run.findings
        if f.rule == "ORG003"
    }
    assert got == {
        # the pod spec (`spec:` of the template) lacks `affinity`
        ("train.yaml", 8, 5, ("spec", "template", "spec")),
        # the second term has no driver expression: located at that term's matchExpressions
        (
            "cron.yaml",
            17,
            19,
            (
                "spec",
                "jobTemplate",
                "spec",
                "template",
                "spec",
                "affinity",
                "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms",
                1,
                "matchExpressions",
            ),
        ),
    }


def test_every_shipped_example_loads_and_fires(tmp_path):
    write(tmp_path, "support-matrix.csv", MATRIX)
    shutil.copytree(EXAMPLES, tmp_path / "policies")
    write(tmp_path, ".gpudrv-check.yaml", "policies: [policies]\n")
    write(tmp_path, "nodes.yaml", gpu_node("gpu-1", branch="535"))
    write(tmp_path, "train.yaml", GPU_DEPLOYMENT)
    run = check(tmp_path, load_config(tmp_path))
    assert sorted(p.id for p in run.custom_policies) == ["ORG001", "ORG002", "ORG003"]
    assert {f.rule for f in run.findings} >= {"ORG001", "ORG002", "ORG003"}
    # policy files are configuration: never read as manifests
    assert all(not f.rel.startswith("policies/") for f in run.content.files)


def test_config_can_disable_or_reseverity_a_custom_policy_by_id_or_name(tmp_path):
    root = _repo(tmp_path, ZONE_POLICY, ("n.yaml", gpu_node("gpu-1")))
    write(
        root,
        ".gpudrv-check.yaml",
        "policies: [policy.yaml]\nrules: {gpu-node-zone: {severity: error}}\n",
    )
    [f] = [f for f in check(root, load_config(root)).findings if f.rule == "ACME001"]
    assert f.severity.value == "error"
    write(
        root, ".gpudrv-check.yaml", "policies: [policy.yaml]\nrules: {acme001: {enabled: false}}\n"
    )
    assert _found(root, "ACME001") == []


@pytest.mark.slow
def test_custom_policy_end_to_end(tmp_path):
    root = _repo(tmp_path, ZONE_POLICY, ("nodes/gpu-1.yaml", gpu_node("gpu-1")))
    result = run_main("check", str(root), "--format", "json")
    assert result.returncode == 0, result.stderr  # a warning does not fail by default
    doc = json.loads(result.stdout)
    [f] = [f for f in doc["findings"] if f["rule"] == "ACME001"]
    assert f["location"] == {"file": "nodes/gpu-1.yaml", "line": 5, "column": 3}
    assert f["severity"] == "warning"
    failed = run_main("check", str(root), "--fail-on", "warning", "--format", "concise")
    assert failed.returncode == 1
    assert "nodes/gpu-1.yaml:5:3: warning ACME001 GPU node gpu-1 has no zone" in failed.stdout


def test_malformed_policy_end_to_end_exits_2_with_its_location(tmp_path):
    root = _repo(tmp_path, ZONE_POLICY.replace("severity: warning", "severity: loud"))
    result = run_main("check", str(root))
    assert result.returncode == 2
    assert result.stderr.startswith("gpudrv-check: error: policy.yaml:3:1: policy: severity:")
    assert "Traceback" not in result.stderr


def test_a_format_spec_in_a_message_exits_2_at_the_message(tmp_path):
    """Review p_fmt: `{name:d}` raised ValueError while formatting a finding (internal error)."""
    root = _repo(tmp_path, ZONE_POLICY.replace("{name}", "{name:d}"))
    result = run_main("check", str(root), "--no-cache")
    assert result.returncode == 2
    assert result.stderr.startswith("gpudrv-check: error: policy.yaml:4:1: message: {name:d}")
    assert "internal error" not in result.stderr


@pytest.mark.parametrize(
    ("second", "where", "text"),
    [
        (
            "id: ACME002\nname: acme001\n",
            (17, 1),
            "name 'acme001' is taken by ACME001 (policy.yaml:1)",
        ),
        ("id: ACME002\nname: gpu010\n", (17, 1), "name 'gpu010' is taken by GPU010"),
    ],
    ids=["name-is-an-id", "name-is-a-builtin-id"],
)
def test_an_id_or_name_another_rule_answers_to_is_refused(tmp_path, second, where, text):
    """Review amb: a policy named `org001` next to ORG001 (or `gpu010`) was accepted, and
    `rules: {org001: ...}` then meant either (ids and names are matched in any case)."""
    policy = ZONE_POLICY.replace("id: ACME001\nname: gpu-node-zone\n", second)
    err = _load_error(tmp_path, ZONE_POLICY + "---\n" + policy)
    assert (err.line, err.column) == where, str(err)
    assert text in str(err)


def test_a_policy_may_be_named_as_its_own_id(tmp_path):
    root = _repo(tmp_path, ZONE_POLICY.replace("name: gpu-node-zone", "name: acme001"))
    assert _found(root) is not None


def test_explain_and_rules_know_the_repos_custom_policies(tmp_path, monkeypatch):
    """Review s3: `explain ACME001` (or its name) said "unknown rule", and `rules` did not
    list it; both read the config of the working directory, as `check .` does."""
    root = _repo(tmp_path, ZONE_POLICY)
    monkeypatch.chdir(root)
    for key in ("ACME001", "acme001", "gpu-node-zone"):
        explained = run_main("explain", key)
        assert explained.returncode == 0, explained.stderr
        assert explained.stdout.startswith("ACME001 gpu-node-zone (warning, custom)\n")
    listed = run_main("rules")
    assert "ACME001  warning  gpu-node-zone" in listed.stdout
    assert run_main("explain", "GPU001").returncode == 0
    unknown = run_main("explain", "ACME002")
    assert (unknown.returncode, unknown.stderr) == (
        2,
        "gpudrv-check: error: unknown rule 'ACME002'\n",
    )
    write(root, "policy.yaml", ZONE_POLICY.replace("{name}", "{name:d}"))
    broken = run_main("explain", "ACME001")
    assert broken.returncode == 2 and "policy.yaml:4:1: message:" in broken.stderr
