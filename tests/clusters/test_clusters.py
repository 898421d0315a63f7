"""Several clusters in one repo (docs/clusters.md): each checked against its own nodes.

Discovery rows follow how each tool decides what a path applies: kustomize `build` (a folder's
kustomization `resources`), Flux kustomize-controller (`spec.path`; a folder without a
kustomization is every manifest of its tree: fluxcd/pkg kustomize `generateKustomization`),
Argo CD (`spec.source.path`, `sources[].path`; `directory.recurse`; ApplicationSet `list`
generator elements filled into `template`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from gpudrv_check.core.finding import Finding, Location, Severity
from tests.conftest import EXAMPLES, ROOT, run_main, write

MULTI = EXAMPLES / "multi-cluster"


def _findings(out: str) -> list[dict]:
    return json.loads(out)["findings"]


def test_each_cluster_problem_is_reported_once_in_its_cluster() -> None:
    result = run_main("check", str(MULTI), "--format", "json")
    assert result.returncode == 1, result.stderr
    found = [(f["cluster"], f["rule"], f["location"]["file"]) for f in _findings(result.stdout)]
    assert found == [
        ("production", "GPU010", "apps/production/trainer.yaml"),
        ("production", "GPU001", "clusters/production/nodes.yaml"),
        ("staging", "GPU001", "clusters/staging/nodes.yaml"),
    ]
    messages = [f["message"] for f in _findings(result.stdout)]
    assert messages[0].startswith("[production] Job inference/trainer: its pods stay Pending")
    assert "0/2 nodes are available" in messages[0]  # production's two nodes, not four
    # gpu-0 is in both clusters: two nodes, no GPU004
    assert "GPU004" not in result.stdout
    schema = json.loads((ROOT / "schemas" / "output.schema.json").read_text())
    jsonschema.validate(json.loads(result.stdout), schema)
    assert json.loads(result.stdout)["summary"]["clusters"] == [
        {
            "name": "production",
            "files": 7,
            "nodes": 2,
            "found_by": "Flux: clusters/production/ and the paths its Kustomizations apply",
        },
        {
            "name": "staging",
            "files": 6,
            "nodes": 2,
            "found_by": "Flux: clusters/staging/ and the paths its Kustomizations apply",
        },
    ]


def test_audit_names_the_cluster_of_each_node() -> None:
    result = run_main("audit", str(MULTI))
    assert result.returncode == 1
    assert result.stdout == (
        "production/gpu-1 MISSING 550-6.8.0-49-generic-ubuntu24.04\n"
        "staging/gpu-1 MISSING 550-6.8.0-52-generic-ubuntu24.04\n"
    )


def test_cluster_option_checks_one_cluster_as_a_repo_of_one() -> None:
    result = run_main("check", str(MULTI), "--cluster", "staging", "--format", "concise")
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if " error " in line]
    assert lines == [
        "clusters/staging/nodes.yaml:19:5: error GPU001 node gpu-1 needs driver image "
        "550-6.8.0-52-generic-ubuntu24.04, which is not in the support matrix "
        "(support-matrix.csv); its driver pod would fail to pull and its GPUs vanish"
    ]
    assert run_main("audit", str(MULTI), "--cluster", "staging").stdout == (
        "gpu-1 MISSING 550-6.8.0-52-generic-ubuntu24.04\n"
    )
    unknown = run_main("check", str(MULTI), "--cluster", "qa")
    assert unknown.returncode == 2
    assert "no cluster named 'qa' (clusters: production, staging)" in unknown.stderr


def test_one_node_commands_need_a_cluster_when_there_are_several() -> None:
    result = run_main("place", str(MULTI))
    assert result.returncode == 2
    assert "several clusters (production, staging): choose one with --cluster" in result.stderr
    result = run_main("place", str(MULTI), "--cluster", "production", "--format", "json")
    assert result.returncode == 1
    assert "trainer" in result.stdout


def test_verbose_says_how_each_cluster_was_found() -> None:
    result = run_main("check", str(MULTI), "-v")
    assert (
        "cluster production: 7 file(s), 2 node(s); Flux: clusters/production/ and the paths "
        "its Kustomizations apply\n" in result.stderr
    )
    assert "cluster staging: 6 file(s), 2 node(s);" in result.stderr


def test_a_shared_problem_is_said_once_naming_every_cluster(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(MULTI, repo)
    deployment = repo / "apps" / "base" / "inference" / "deployment.yaml"
    deployment.write_text(deployment.read_text().replace("nvidia.com/gpu: 1", "nvidia.com/gpu: 9"))
    result = run_main("check", str(repo), "--format", "json")
    shared = [f for f in _findings(result.stdout) if f["location"]["file"].startswith("apps/base")]
    assert len(shared) == 1
    assert shared[0]["cluster"] == "production,staging"
    assert shared[0]["message"].startswith("[production, staging] Deployment inference/server")


def test_the_cluster_is_part_of_the_fingerprint() -> None:
    base = Finding(
        rule="GPU001",
        severity=Severity.ERROR,
        message="m",
        location=Location(file="f", line=1, column=1),
        path=["a"],
    )
    staging = base.copy_with(cluster="staging")
    production = base.copy_with(cluster="production")
    assert len({base.fingerprint(), staging.fingerprint(), production.fingerprint()}) == 3


NODE = """apiVersion: gpudrv-check.io/v1alpha1
kind: NodeInventory
nodes:
- name: gpu-0
  labels:
    nvidia.com/gpu.present: "true"
    nvidia.com/cuda.driver.major: "{major}"
  allocatable: {{nvidia.com/gpu: "8"}}
"""
JOB = """apiVersion: batch/v1
kind: Job
metadata: {{name: {name}, namespace: ml}}
spec:
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {{nvidia.com/cuda.driver.major: "{major}"}}
      containers:
      - name: c
        image: example.com/train:1
        resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""


def _gpu010(repo: Path, *args: str) -> list[tuple]:
    result = run_main("check", str(repo), "--matrix", "none", "--format", "json", *args)
    assert result.returncode in (0, 1), result.stderr
    return [
        (f.get("cluster"), f["location"]["file"])
        for f in _findings(result.stdout)
        if f["rule"] == "GPU010"
    ]


def test_argo_cd_applications_are_grouped_by_destination(tmp_path: Path) -> None:
    write(tmp_path, "envs/a/nodes.yaml", NODE.format(major=550))
    write(tmp_path, "envs/a/job.yaml", JOB.format(name="fits", major=550))
    write(tmp_path, "envs/b/nodes.yaml", NODE.format(major=535))
    write(tmp_path, "envs/b/job.yaml", JOB.format(name="lands-nowhere", major=550))
    write(tmp_path, "envs/b/sub/ignored.yaml", JOB.format(name="not-applied", major=999))
    apps = ""
    for env, cluster in (("a", "east"), ("b", "west")):
        apps += f"""---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {{name: {env}, namespace: argocd}}
spec:
  project: default
  source: {{repoURL: https://example.com/repo.git, path: envs/{env}}}
  destination: {{name: {cluster}, namespace: ml}}
"""
    write(tmp_path, "argocd/apps.yaml", apps)
    # a plain directory: envs/b/sub/ is not applied without directory.recurse
    assert _gpu010(tmp_path) == [("west", "envs/b/job.yaml")]
    assert _gpu010(tmp_path, "--cluster", "east") == []


def test_an_applicationset_list_generator_is_expanded(tmp_path: Path) -> None:
    write(tmp_path, "envs/a/nodes.yaml", NODE.format(major=550))
    write(tmp_path, "envs/a/job.yaml", JOB.format(name="fits", major=550))
    write(tmp_path, "envs/b/nodes.yaml", NODE.format(major=535))
    write(tmp_path, "envs/b/job.yaml", JOB.format(name="lands-nowhere", major=550))
    write(tmp_path, "envs/b/sub/applied.yaml", JOB.format(name="deep", major=999))
    write(
        tmp_path,
        "argocd/appset.yaml",
        """apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: envs, namespace: argocd}
spec:
  generators:
  - list:
      elements:
      - {env: a, cluster: east}
      - {env: b, cluster: west}
  template:
    metadata: {name: '{{env}}'}
    spec:
      project: default
      source:
        repoURL: https://example.com/repo.git
        path: 'envs/{{.env}}'
        directory: {recurse: true}
      destination: {name: '{{cluster}}', namespace: ml}
""",
    )
    assert _gpu010(tmp_path) == [("west", "envs/b/job.yaml"), ("west", "envs/b/sub/applied.yaml")]


def test_clusters_declared_in_the_config(tmp_path: Path) -> None:
    write(tmp_path, "one/nodes.yaml", NODE.format(major=550))
    write(tmp_path, "two/nodes.yaml", NODE.format(major=535))
    write(tmp_path, "shared/job.yaml", JOB.format(name="j", major=550))
    write(
        tmp_path,
        ".gpudrv-check.yaml",
        "clusters:\n  one: {paths: [one, shared]}\n  two: {paths: [two, shared/job.yaml]}\n",
    )
    assert _gpu010(tmp_path) == [("two", "shared/job.yaml")]


def test_a_kustomize_overlay_folds_its_base_into_the_cluster(tmp_path: Path) -> None:
    for name, major in (("staging", 550), ("production", 535)):
        write(
            tmp_path,
            f"clusters/{name}/flux.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
            "metadata: {name: apps, namespace: flux-system}\n"
            f"spec: {{path: ./overlays/{name}}}\n",
        )
        write(tmp_path, f"clusters/{name}/nodes.yaml", NODE.format(major=major))
        write(tmp_path, f"overlays/{name}/kustomization.yaml", "resources: [../../base]\n")
    write(tmp_path, "base/kustomization.yaml", "resources: [job.yaml]\n")
    write(tmp_path, "base/job.yaml", JOB.format(name="j", major=550))
    write(tmp_path, "base/unlisted.yaml", JOB.format(name="not-applied", major=999))
    assert _gpu010(tmp_path) == [("production", "base/job.yaml")]


def test_a_repo_of_one_cluster_is_unchanged() -> None:
    flux = EXAMPLES / "flux"
    result = run_main("check", str(flux), "--format", "json")
    assert all("cluster" not in f for f in _findings(result.stdout))
    assert "[" not in "".join(f["message"][:1] for f in _findings(result.stdout))


@pytest.mark.skipif(
    not (shutil.which("kustomize") or shutil.which("kubectl")), reason="needs kustomize or kubectl"
)
def test_overlay_roots_under_kustomize_are_clusters(tmp_path: Path) -> None:
    write(tmp_path, "base/kustomization.yaml", "resources: [job.yaml]\n")
    write(tmp_path, "base/job.yaml", JOB.format(name="j", major=550))
    for name, major in (("staging", 550), ("production", 535)):
        write(
            tmp_path,
            f"overlays/{name}/kustomization.yaml",
            "resources: [../../base, nodes.yaml]\n",
        )
        # kustomize wants a name on every object it accumulates
        nodes = NODE.format(major=major).replace("nodes:\n", "metadata: {name: nodes}\nnodes:\n")
        write(tmp_path, f"overlays/{name}/nodes.yaml", nodes)
    found = _gpu010(tmp_path, "--kustomize")
    # located in the repo file the object came from (kustomize origin annotations)
    assert found == [("production", "base/job.yaml")]


def _application(name: str, path: str, destination: str) -> str:
    return f"""---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {{name: {name}, namespace: argocd}}
spec:
  project: default
  source: {{repoURL: https://example.com/repo.git, path: {path}}}
  destination: {{{destination}, namespace: ml}}
"""


def test_in_cluster_by_name_and_by_address_is_one_cluster(tmp_path: Path) -> None:
    """argo-cd common/common.go KubernetesInternalAPIServerAddr is the cluster Argo CD runs
    in, which util/db/cluster.go names `in-cluster`: one cluster, one set of nodes."""
    write(tmp_path, "nodes.yaml", NODE.format(major=535))
    write(tmp_path, "apps/train/job.yaml", JOB.format(name="train", major=550))
    write(tmp_path, "apps/serve/job.yaml", JOB.format(name="serve", major=550))
    apps = _application("train", "apps/train", "name: in-cluster")
    apps += _application("serve", "apps/serve", 'server: "https://kubernetes.default.svc"')
    write(tmp_path, "argocd/apps.yaml", apps)
    # one cluster: the findings name none, and both Jobs are placed on the repo's node
    assert _gpu010(tmp_path) == [(None, "apps/serve/job.yaml"), (None, "apps/train/job.yaml")]
    verbose = run_main("check", str(tmp_path), "--matrix", "none", "-v")
    assert "cluster in-cluster" not in verbose.stderr


def test_an_application_of_the_repo_root_applies_its_top_level_files(tmp_path: Path) -> None:
    """`path: .` is the repo root: its manifests (below it only with directory.recurse)."""
    write(tmp_path, "nodes.yaml", NODE.format(major=535))
    write(tmp_path, "job.yaml", JOB.format(name="root-job", major=550))
    write(tmp_path, "staging/nodes.yaml", NODE.format(major=550))
    write(tmp_path, "staging/job.yaml", JOB.format(name="staged", major=550))
    apps = _application("prod", ".", "name: prod") + _application(
        "staging", "staging", "name: staging"
    )
    write(tmp_path, "argocd/apps.yaml", apps)
    assert _gpu010(tmp_path) == [("prod", "job.yaml")]
    verbose = run_main("check", str(tmp_path), "--matrix", "none", "-v")
    assert "cluster prod: 3 file(s), 1 node(s)" in verbose.stderr  # apps.yaml, job, nodes
