"""Real repos, as a new user first runs the checker on them (issue 13): never an internal error,
no finding but the real problems, and what was not checked said.

Each folder here is a small repo modelled on what public GitOps and GPU repos hold (written for
these tests): Ansible next to manifests, vendored code, CI and editor settings, generated and
git-ignored output, documents that are not Kubernetes objects, Helm charts, Terraform templates,
Flux and envsubst placeholders, flow YAML, copies of one object, generateName, and repos
without a support matrix or a node inventory. `dot-NAME` files are copied as `.NAME` (a real
`.gitignore` here would hide the shape's own files from this project's git). Each runs through
the installed CLI; SHAPES lists its exact findings as (rule, file, line) and its exit code.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import ROOT, run_main

HERE = Path(__file__).resolve().parent
MATRIX_WARNING = ("GPU001", "support-matrix.csv", 1)
NO_NODES = (
    "no node inventory: GPU001-003, GPU010-013, GPU016-017, GPU020-022, GPU030-034 skipped; "
    'see README "Where the nodes come from"'
)

#: shape -> (findings, exit code)
SHAPES: dict[str, tuple[set[tuple[str, str, int]], int]] = {
    "ansible": ({MATRIX_WARNING}, 0),
    "vendored": ({MATRIX_WARNING}, 0),
    "ci-editor": ({MATRIX_WARNING}, 0),
    "gitignored": ({MATRIX_WARNING}, 0),
    "exclude-globs": ({MATRIX_WARNING}, 0),
    "non-k8s": ({MATRIX_WARNING}, 0),
    "jsonc": ({MATRIX_WARNING}, 0),
    "custom-tags": ({MATRIX_WARNING}, 0),
    "helm": (
        {
            MATRIX_WARNING,
            ("GPU009", "charts/triton/Chart.yaml", 1),
            ("GPU009", "charts/triton/charts/common/Chart.yaml", 1),
        },
        0,
    ),
    "terraform": (
        {
            MATRIX_WARNING,
            ("GPU009", "modules/gpu-pool/templates/device-plugin-config.yaml", 1),
            ("GPU009", "modules/gpu-pool/templates/nodeclass.yaml", 1),
        },
        0,
    ),
    "flux-postbuild": (set(), 0),
    "envsubst": (set(), 0),
    "flow-yaml": (set(), 0),
    # the one real problem (a Job no node can take), once for its two identical copies; the
    # base copy the overlay replaces: an info that says which file is checked
    "copies": (
        {("GPU010", "clusters/east/preprocess.yaml", 10), ("GPU009", "base/trainer.yaml", 4)},
        1,
    ),
    # a real problem too: no node has an H100
    "generate-name": ({("GPU010", "jobs/benchmark.yaml", 12)}, 1),
    "no-matrix": ({MATRIX_WARNING}, 0),
    "no-inventory": ({MATRIX_WARNING}, 0),
    "unmodelled": (set(), 0),
    # one repo per workload kind of policies/workloads.yaml (issue 18): a GPU workload that
    # lands on the A100 nodes, and one that cannot (GPU010, or GPU012 when only the CPU node
    # is left)
    "kind-argo-workflow": ({("GPU010", "workflows/train.yaml", 32)}, 1),
    "kind-inferenceservice": ({("GPU010", "serving/isvc.yaml", 21)}, 1),
    "kind-jaxjob": ({("GPU010", "training/jaxjob.yaml", 27)}, 1),
    "kind-jobset": ({("GPU010", "jobs/jobset.yaml", 36)}, 1),
    "kind-knative-service": ({("GPU010", "serving/ksvc.yaml", 24)}, 1),
    # Kueue injects the flavor's node labels: the finding points at the queue-name label
    "kind-kueue": ({("GPU010", "queues/jobs.yaml", 75)}, 1),
    # vllm's group of 2 pods takes all 8 GPUs of both A100 nodes: vllm-split's leaders find
    # them full (shared capacity, issue 17), and its workers do not tolerate the taint
    "kind-leaderworkerset": (
        {("GPU010", "serving/lws.yaml", 33), ("GPU010", "serving/lws.yaml", 35)},
        1,
    ),
    "kind-mpijob": ({("GPU010", "training/mpijob.yaml", 37)}, 1),
    "kind-nimservice": ({("GPU012", "nim/nimservice.yaml", 28)}, 1),
    "kind-paddlejob": ({("GPU010", "training/paddlejob.yaml", 27)}, 1),
    "kind-pytorchjob": ({("GPU010", "training/pytorchjob.yaml", 37)}, 1),
    "kind-raycluster": ({("GPU010", "ray/rayclusters.yaml", 43)}, 1),
    "kind-rayjob": ({("GPU012", "ray/rayjobs.yaml", 40)}, 1),
    "kind-rayservice": ({("GPU010", "ray/rayservice.yaml", 51)}, 1),
    "kind-tfjob": ({("GPU010", "training/tfjob.yaml", 37)}, 1),
    # a runtime no node can take, and a TrainJob on the other runtime asking 16 GPUs per node
    "kind-trainingruntime": (
        {("GPU010", "trainer/runtimes.yaml", 39), ("GPU010", "trainer/runtimes.yaml", 65)},
        1,
    ),
    "kind-volcano-job": ({("GPU010", "batch/vcjob.yaml", 33)}, 1),
    "kind-xgboostjob": ({("GPU010", "training/xgboostjob.yaml", 37)}, 1),
}


def _copy(shape: str, dest: Path) -> Path:
    shutil.copytree(HERE / shape, dest)
    for path in sorted(dest.rglob("dot-*")):
        path.rename(path.with_name("." + path.name[len("dot-") :]))
    return dest


def _check(root: Path, *args: str):
    result = run_main("check", str(root), "--no-cache", *args)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result
    return result


def test_every_shape_has_a_folder_and_a_row():
    folders = {p.name for p in HERE.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert folders == set(SHAPES)


@pytest.mark.slow
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_only_real_problems(shape: str, tmp_path: Path):
    root = _copy(shape, tmp_path / shape)
    result = _check(root, "--format", "json")
    doc = json.loads(result.stdout)
    got = {(f["rule"], f["location"]["file"], f["location"]["line"]) for f in doc["findings"]}
    findings, code = SHAPES[shape]
    assert got == findings, doc["findings"]
    assert result.returncode == code
    assert doc["summary"]["exit_code"] == code
    schema = json.loads((ROOT / "schemas" / "output.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)


def _verbose(shape: str, tmp_path: Path) -> str:
    return _check(_copy(shape, tmp_path / shape), "-v").stderr


def test_ansible_lists_are_skipped_silently(tmp_path: Path):
    err = _verbose("ansible", tmp_path)
    assert "skipped playbooks/gpu-nodes.yml#0: a list, not a Kubernetes object" in err
    assert "skipped roles/gpu/tasks/main.yaml#0: a list, not a Kubernetes object" in err


@pytest.mark.slow
def test_vendored_and_ci_folders_are_excluded_and_said_so(tmp_path: Path):
    err = _verbose("vendored", tmp_path)
    for folder in ("vendor/", "third_party/", "node_modules/", "tools/lint/testdata/"):
        assert f"skipped {folder}: excluded by default" in err
    err = _verbose("ci-editor", tmp_path)
    for folder in (".github/", ".gitlab/", ".vscode/", ".devcontainer/", ".idea/"):
        assert f"skipped {folder}: excluded by default" in err
    # outside those folders, CI and tool configs are documents without apiVersion/kind
    assert "skipped .gitlab-ci.yml#0: no apiVersion/kind" in err
    assert "skipped renovate.json#0: no apiVersion/kind" in err


def test_defaults_are_overridable(tmp_path: Path):
    root = _copy("vendored", tmp_path / "vendored")
    (root / ".gpudrv-check.yaml").write_text('exclude: ["!vendor/"]\n')
    doc = json.loads(_check(root, "--format", "json").stdout)
    files = {f["location"]["file"] for f in doc["findings"]}
    assert "vendor/github.com/acme/operator/config/manager.yaml" in files


@pytest.mark.slow
def test_gitignore_and_exclude_globs(tmp_path: Path):
    err = _verbose("gitignored", tmp_path)
    assert "skipped rendered/: ignored by .gitignore" in err
    assert "skipped apps/scratch.local.yaml: ignored by .gitignore" in err
    err = _verbose("exclude-globs", tmp_path)
    assert "skipped generated/crds.yaml: excluded by config" in err
    assert "read    generated/keep.yaml: 1 object(s)" in err  # `!` takes it back
    assert "read    generated/nested/quota.yaml: 1 object(s)" in err  # `*` stays in its folder


@pytest.mark.slow
def test_jsonc_and_foreign_documents_are_skipped(tmp_path: Path):
    err = _verbose("jsonc", tmp_path)
    assert "skipped dashboard/tsconfig.json#0: no apiVersion/kind" in err
    assert "skipped dashboard/.eslintrc.json#0: no apiVersion/kind" in err
    err = _verbose("non-k8s", tmp_path)
    for rel in ("mkdocs.yml", "homeassistant/configuration.yaml", "deploy/values.yaml"):
        assert f"skipped {rel}#0: no apiVersion/kind" in err


def test_placeholders_are_unknown_and_said_once(tmp_path: Path):
    result = _check(_copy("envsubst", tmp_path / "envsubst"))
    notes = [line for line in result.stdout.splitlines() if line.startswith("note: ")]
    assert notes == [
        "note: placeholders ${ACCELERATOR}, ${REGISTRY}, ${SERVE_REPLICAS}, ${VLLM_TAG} (Flux "
        "postBuild or envsubst) are unknown values: 2 finding(s) built on the 1 object(s) "
        "holding them not reported; a Flux Kustomization's postBuild.substitute gives them values"
    ]


@pytest.mark.slow
def test_flux_values_are_used(tmp_path: Path):
    """With the Kustomization's values the Deployments (its own and the base its kustomization
    builds on) are checked as Flux applies them: a product no node has is a real GPU010."""
    root = _copy("flux-postbuild", tmp_path / "flux")
    apps = root / "clusters" / "prod" / "apps.yaml"
    apps.write_text(apps.read_text().replace("NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"))
    doc = json.loads(_check(root, "--format", "json").stdout)
    assert [(f["rule"], f["location"]["file"]) for f in doc["findings"]] == [
        ("GPU010", "apps/base/serve.yaml"),
        ("GPU010", "apps/prod/train.yaml"),
    ]
    assert all("NVIDIA-H100-80GB-HBM3" in f["message"] for f in doc["findings"])
    assert "notes" not in doc["summary"]


def test_a_base_two_clusters_fill_in_differently_is_unknown(tmp_path: Path):
    root = _copy("flux-postbuild", tmp_path / "flux")
    staging = root / "clusters" / "staging"
    staging.mkdir()
    text = (root / "clusters" / "prod" / "apps.yaml").read_text()
    (staging / "apps.yaml").write_text(
        text.replace("name: apps", "name: apps-staging")
        .replace("./apps/prod", "./apps/base")
        .replace("NVIDIA-A100-SXM4-80GB", "NVIDIA-L4")
    )
    result = _check(root)
    assert result.returncode == 0, result.stdout
    # REPLICAS comes from the same ConfigMap for both: known; the product differs: unknown
    assert (
        "note: placeholders ${GPU_PRODUCT} (Flux postBuild or envsubst) are unknown values: 1 "
        "finding(s) built on the 1 object(s) holding them not reported" in result.stdout
    )


@pytest.mark.slow
def test_copies_that_differ_say_which_file_wins(tmp_path: Path):
    result = _check(_copy("copies", tmp_path / "copies"), "--format", "concise")
    assert (
        "base/trainer.yaml:4:3: info GPU009 Deployment ml/trainer is also in "
        "overlays/prod/trainer.yaml, which differs and is the copy checked (deepest path first, "
        "as an overlay sits below its base; then path order); this copy is not checked"
        in result.stdout
    )
    err = _check(tmp_path / "copies", "-v").stderr
    assert "copies  PodDisruptionBudget ml/trainer is written identically in" in err


@pytest.mark.slow
def test_first_run_without_matrix_or_inventory(tmp_path: Path):
    """What it checked, what it skipped, the two files to add; exit 0."""
    root = _copy("no-inventory", tmp_path / "repo")
    result = _check(root, "--format", "concise")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("support-matrix.csv:1:1: warning GPU001 no support matrix")
    assert lines[1:] == [
        "note: checked GPU000, GPU004-009, GPU014-015, GPU023-025, GPU040",
        "note: " + NO_NODES,
        "note: to check them, add nodes.yaml (a NodeInventory, or the output of `kubectl get "
        'nodes -o yaml`; see README "Where the nodes come from") and support-matrix.csv (header '
        "`driver_branch,kernel,os_tag`, one row per driver image built)",
        "3 files, 3 objects read; 0 errors, 1 warning",
    ]
    doc = json.loads(_check(root, "--format", "json").stdout)
    assert doc["summary"]["skipped_rules"] == [
        {
            "rules": [
                *("GPU001", "GPU002", "GPU003", "GPU010", "GPU011", "GPU012"),
                *("GPU013", "GPU016", "GPU017"),
                *("GPU020", "GPU021", "GPU022", "GPU030", "GPU031", "GPU032", "GPU033", "GPU034"),
            ],
            "reason": "no node inventory",
            "see": 'README "Where the nodes come from"',
        }
    ]
    sarif = json.loads(_check(root, "--format", "sarif").stdout)
    [invocation] = sarif["runs"][0]["invocations"]
    texts = [n["message"]["text"] for n in invocation["toolExecutionNotifications"]]
    assert 'no node inventory: rules skipped; see README "Where the nodes come from"' in texts
    assert NO_NODES in texts
    # audit still needs the matrix
    assert run_main("audit", str(root)).returncode == 2


def test_unmodelled_gpu_workloads_are_named_in_verbose(tmp_path: Path):
    err = _verbose("unmodelled", tmp_path)
    assert (
        "unmodelled 2 object(s) request GPUs in kinds not modelled yet (their placement and "
        "drivers are not checked): Notebook/kubeflow/jupyter, SeldonDeployment/models/iris" in err
    )


KIND_SHAPES = sorted(shape for shape in SHAPES if shape.startswith("kind-"))


@pytest.mark.parametrize("shape", KIND_SHAPES)
def test_each_kind_has_a_gpu_workload_that_lands(shape: str, tmp_path: Path):
    """The other half of each kind repo: `place` puts a GPU template of it on the A100 nodes."""
    root = _copy(shape, tmp_path / shape)
    result = run_main("place", str(root), "--format", "json")
    doc = json.loads(result.stdout)
    placed = [w for w in doc["workloads"] if w["status"] == "placed" and w["gpus"]]
    assert any(set(w["nodes"]) == {"gpu-a100-1", "gpu-a100-2"} for w in placed), doc


def test_every_table_kind_has_a_repo():
    """Adding a kind to policies/workloads.yaml means adding its repo here."""
    from gpudrv_check.model.workload_kinds import builtin_kind_table

    written: set[tuple[str, str]] = set()
    for shape in KIND_SHAPES:
        for path in (HERE / shape).rglob("*.yaml"):
            for doc in path.read_text().split("\n---"):
                api = next(
                    (
                        ln.split(":", 1)[1].strip()
                        for ln in doc.splitlines()
                        if ln.startswith("apiVersion:")
                    ),
                    "",
                )
                kind = next(
                    (
                        ln.split(":", 1)[1].strip()
                        for ln in doc.splitlines()
                        if ln.startswith("kind:")
                    ),
                    "",
                )
                written.add((api.rpartition("/")[0], kind))
    # a CronWorkflow, ClusterWorkflowTemplate and RayJob submitter share their kin's templates
    shared = {("argoproj.io", "CronWorkflow"), ("argoproj.io", "ClusterWorkflowTemplate")}
    missing = builtin_kind_table().names - written - shared
    assert not missing, sorted(missing)
