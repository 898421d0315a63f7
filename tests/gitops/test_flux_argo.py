"""Flux HelmRelease (values, valuesFrom, chart version) and Argo CD Application as the operator
configuration: merge order, locations, the OS-tag rule, and the full driver image reference."""

from __future__ import annotations

import base64
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from gpudrv_check.model.operator import find_operator_configs
from gpudrv_check.read.embedded import EmbeddedYaml
from gpudrv_check.read.manifests import parse_manifest_bytes
from tests.conftest import gpu_node, helm_release, run_main, write

HR_HEAD = helm_release("v25.10.0")


def configmap(name: str, key: str, text: str, namespace: str = "gpu-operator") -> str:
    body = textwrap.indent(text, "    ")
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\n"
        f"data:\n  {key}: |\n{body}"
    )


def operator(*docs: str):
    stream = "---\n".join(docs)
    result = parse_manifest_bytes("repo.yaml", stream.encode())
    assert result.problems == []
    [config] = find_operator_configs(result.manifests, EmbeddedYaml())
    return config


def test_values_from_merge_in_order_then_spec_values_on_top():
    config = operator(
        configmap(
            "one", "values.yaml", "driver:\n  repository: a.example/nvidia\n  version: '535'\n"
        ),
        configmap("two", "values.yaml", "driver:\n  version: '550'\n  usePrecompiled: true\n"),
        HR_HEAD
        + "  valuesFrom:\n  - kind: ConfigMap\n    name: one\n  - kind: ConfigMap\n    name: two\n"
        + "  values:\n    driver:\n      repository: b.example/nvidia\n",
    )
    assert config.get("driver", "version") == "550"  # the later reference wins
    assert config.get("driver", "repository") == "b.example/nvidia"  # spec.values wins over all
    assert config.get("driver", "usePrecompiled") is True
    assert config.chart_version == "v25.10.0"
    # each value is located in the document that sets it
    where = config.location(("driver", "repository"))  # the spec.values key
    assert (where.line, where.column) == (40, 7)
    where = config.location(("driver", "version"))  # ConfigMap two, its data key
    assert (where.line, where.column) == (18, 3)
    assert [layer.label for layer in config.layers] == [
        "ConfigMap/one[values.yaml]",
        "ConfigMap/two[values.yaml]",
        "spec.values",
    ]


@pytest.mark.parametrize(
    ("ref", "docs", "path", "value", "note"),
    [
        # valuesKey names another key; targetPath sets one value, typed as Helm --set types it
        (
            "{kind: ConfigMap, name: v, valuesKey: version, targetPath: driver.version}",
            [configmap("v", "version", "550\n")],
            ("driver", "version"),
            550,
            None,
        ),
        (
            "{kind: ConfigMap, name: v, valuesKey: repo, targetPath: driver.repository}",
            [configmap("v", "repo", "'registry.example/nvidia'\n")],
            ("driver", "repository"),
            "registry.example/nvidia",
            None,
        ),
        (
            "{kind: ConfigMap, name: v, valuesKey: custom.yaml}",
            [configmap("v", "custom.yaml", "driver: {image: drv}\n")],
            ("driver", "image"),
            "drv",
            None,
        ),
        # Secrets: base64 data, or stringData
        (
            "{kind: Secret, name: s}",
            [
                "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: gpu-operator}\n"
                "data:\n  values.yaml: "
                + base64.b64encode(b"driver: {image: secret-drv}\n").decode()
                + "\n"
            ],
            ("driver", "image"),
            "secret-drv",
            None,
        ),
        (
            "{kind: Secret, name: s}",
            [
                "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"
                "stringData:\n  values.yaml: 'driver: {image: plain}'\n"
            ],
            ("driver", "image"),
            "plain",
            None,
        ),
        (
            "{kind: Secret, name: s}",
            [
                "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"
                "data: {values.yaml: 'ENC[AES256_GCM]'}\nsops: {version: 3.8.1}\n"
            ],
            ("driver", "image"),
            None,
            "is SOPS-encrypted",
        ),
        # references the repo does not hold, or in another namespace: noted, not guessed
        (
            "{kind: ConfigMap, name: absent, optional: true}",
            [],
            ("driver", "image"),
            None,
            "is not in the repo",
        ),
        (
            "{kind: ConfigMap, name: v}",
            [configmap("v", "values.yaml", "driver: {image: x}\n", namespace="other")],
            ("driver", "image"),
            None,
            "Flux fails the release if it is missing",
        ),
        (
            "{kind: ConfigMap, name: v, valuesKey: nope}",
            [configmap("v", "values.yaml", "driver: {image: x}\n")],
            ("driver", "image"),
            None,
            "has no key 'nope'",
        ),
    ],
)
def test_values_from_references(ref, docs, path, value, note):
    config = operator(*docs, HR_HEAD + f"  valuesFrom:\n  - {ref}\n")
    assert config.get(*path) == value
    if note is None:
        assert config.notes == []
    else:
        [text] = config.notes
        assert note in text


def test_argo_application_target_revision_and_values_object():
    config = operator(
        """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: gpu-operator, namespace: argocd}
spec:
  sources:
  - repoURL: https://helm.ngc.nvidia.com/nvidia
    chart: gpu-operator
    targetRevision: v26.7.0
    helm:
      valuesObject:
        driver: {repository: registry.example/nvidia}
"""
    )
    assert config.chart_version == "v26.7.0"
    assert config.get("driver", "repository") == "registry.example/nvidia"
    assert config.location(("driver", "repository")).line == 11


def test_argo_helm_parameters_win_over_the_values():
    """Argo CD's Helm guide: "parameters > valuesObject > values > valueFiles > helm repository
    values.yaml"; each parameter is `--set` (strvals typedVal: 550 an integer, 1.0 text) or
    `--set-string` with forceString, located at its `value` (review: they were ignored)."""
    config = operator(
        """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: gpu-operator, namespace: argocd}
spec:
  source:
    repoURL: https://helm.ngc.nvidia.com/nvidia
    chart: gpu-operator
    targetRevision: v26.7.0
    helm:
      valuesObject:
        driver: {version: "550.90.07", repository: registry.example/nvidia}
      parameters:
      - name: driver.version
        value: "535.183.06"
      - name: driver.upgradePolicy.maxParallelUpgrades
        value: "3"
      - name: devicePlugin.config.default
        value: "7"
        forceString: true
      - name: toolkit.enabled
        value: "FALSE"
"""
    )
    assert config.get("driver", "version") == "535.183.06"
    assert config.get("driver", "repository") == "registry.example/nvidia"  # kept
    assert config.get("driver", "upgradePolicy", "maxParallelUpgrades") == 3
    assert config.get("devicePlugin", "config", "default") == "7"
    assert config.get("toolkit", "enabled") is False
    assert config.location(("driver", "version")).line == 14  # the parameter's value
    assert config.location(("driver", "repository")).line == 11


RHEL_NODE = gpu_node("r", kernel="5.14.0-427.13.1.el9_4.x86_64", os_id="rhel", version="9.4")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("chart_version", "config", "flag", "tag_os"),
    [
        ("v25.10.0", None, None, "rhel9.4"),  # up to v25.10: ID + VERSION_ID
        ("v26.7.0", None, None, "rhel9"),  # v26.7: rhel truncated to the major version
        ("26.7.x", None, None, "rhel9"),
        (">=25.3.0 <27.0.0", None, None, "rhel9"),  # a range pins nothing: the newest rule
        ("v26.7.0", "v25.10.0", None, "rhel9.4"),  # the config wins when set
        ("v25.10.0", None, "v26.7.0", "rhel9"),  # and the flag over both
    ],
)
def test_chart_version_selects_the_os_tag_rule(
    tmp_path: Path, chart_version: str, config: str | None, flag: str | None, tag_os: str
):
    write(tmp_path, "nodes/r.yaml", RHEL_NODE)
    write(
        tmp_path,
        "flux/gpu-operator.yaml",
        HR_HEAD.replace("v25.10.0", f"'{chart_version}'") + "  values: {}\n",
    )
    if config:
        write(tmp_path, ".gpudrv-check.yaml", f"operator: {{version: {config}}}\n")
    args = ["tag", "r", str(tmp_path)] + (["--operator-version", flag] if flag else [])
    result = run_main(*args)
    assert (result.returncode, result.stdout) == (
        0,
        f"550-5.14.0-427.13.1.el9_4.x86_64-{tag_os}\n",
    ), result.stderr


def test_verbose_says_which_rule_and_why(tmp_path: Path):
    write(tmp_path, "nodes/r.yaml", RHEL_NODE)
    write(tmp_path, "flux/hr.yaml", HR_HEAD.replace("v25.10.0", "v26.7.0"))
    result = run_main("tag", "r", str(tmp_path), "-v")
    assert "os-tag  rule of operator 26.7 (chart version v26.7.0 of HelmRelease" in result.stderr


NODE3 = "lab-node-3 MISSING 550-6.8.0-52-generic-ubuntu24.04"
REF = "registry.example/nvidia/driver:550-6.8.0-52-generic-ubuntu24.04"


def _lab_with_node3(lab_repo: Path) -> Path:
    shutil.copy(lab_repo / "steps" / "node3.yaml", lab_repo / "k8s" / "node3.yaml")
    return lab_repo


REPO_VALUES = "driver: {repository: registry.example/nvidia, usePrecompiled: true}"
CLUSTER_POLICY = (
    "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\n"
    "spec:\n  driver: {repository: registry.example/nvidia, image: driver, version: '550',\n"
    "    usePrecompiled: true}\n"
)
# With an operator configuration the lab's mixed ubuntu22.04/ubuntu24.04 nodes cannot share one
# ClusterPolicy driver (getGPUNodeOSInfo: one OS tag for all): every node gets an OS-CONFLICT line.
CONFLICT = " OS-CONFLICT ubuntu22.04,ubuntu24.04\n"
LAB_NODES = ("lab-node-0", "lab-node-1", "lab-node-2")


def _under_config(node3: str, node1: str = "") -> str:
    lines = [f"{name}{CONFLICT}" for name in LAB_NODES]
    lines[1] = node1 + lines[1]
    return "".join(lines) + node3 + "\n" + "lab-node-3" + CONFLICT


@pytest.mark.slow
@pytest.mark.parametrize(
    ("operator_doc", "expected"),
    [
        (None, NODE3 + "\n"),  # the lab's drv-audit.sh, byte for byte
        (HR_HEAD + "  values:\n    driver: {usePrecompiled: true}\n", _under_config(NODE3)),
        (HR_HEAD + f"  values:\n    {REPO_VALUES}\n", _under_config(f"{NODE3} {REF}")),
        (
            configmap("gpu-values", "values.yaml", REPO_VALUES + "\n")
            + "---\n"
            + HR_HEAD
            + "  valuesFrom:\n  - {kind: ConfigMap, name: gpu-values}\n",
            _under_config(f"{NODE3} {REF}"),
        ),
        (
            CLUSTER_POLICY,
            _under_config(
                f"{NODE3} {REF}",
                # version "550": lab-node-1 (535 now) gets branch 550, whose image was never built
                "lab-node-1 MISSING 550-5.15.0-107-generic-ubuntu22.04 "
                "registry.example/nvidia/driver:550-5.15.0-107-generic-ubuntu22.04\n",
            ),
        ),
    ],
)
def test_audit_names_the_full_image_when_the_registry_is_known(
    lab_repo: Path, operator_doc: str | None, expected: str
):
    repo = _lab_with_node3(lab_repo)
    if operator_doc:
        write(repo, "k8s/gpu-operator.yaml", operator_doc)
    result = run_main("audit", str(repo))
    assert (result.returncode, result.stdout, result.stderr) == (1, expected, "")


def test_gpu001_names_the_full_image(lab_repo: Path):
    repo = _lab_with_node3(lab_repo)
    write(
        repo,
        "k8s/gpu-operator.yaml",
        HR_HEAD + "  values:\n    driver:\n      repository: registry.example/nvidia\n"
        "      usePrecompiled: true\n",
    )
    result = run_main("check", str(repo), "--format", "concise")
    assert result.returncode == 1
    assert (
        f"k8s/node3.yaml:14:5: error GPU001 node lab-node-3 needs driver image {REF}, which is "
        "not in the support matrix"
    ) in result.stdout
    wide = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"} | {"COLUMNS": "400"}
    text = run_main("check", str(repo), env=wide).stdout  # the fix under it, on one line
    assert f"      fix: Build and push the driver image {REF}, then add the row" in text
