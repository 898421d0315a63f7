"""`--kustomize`: where findings land when the build reorders, selects, JSON-patches, merges
by key, expands Lists, rewrites images or generates objects (read/kustomize.py
`source_location`), and how a Component's namespace applies without `--kustomize`
(read/kustomization.py `applied_namespaces`). Each test first checks the fact of kustomize it
rests on against the real `kubectl kustomize` (or `kustomize build`) output."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gpudrv_check.read.kustomization import applied_namespaces
from gpudrv_check.read.kustomize import kustomize_command
from gpudrv_check.read.yaml_docs import parse_text
from tests.conftest import MATRIX, run_main, write
from tests.gitops.test_kustomization_namespace import NODES

needs_kustomize = pytest.mark.skipif(
    kustomize_command() is None, reason="neither kustomize nor kubectl is on PATH"
)

OLD = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"  # runs on the 550 driver of NODES
NEW = "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu22.04"  # needs a newer driver: GPU011
SELECTOR = "spec.template.spec.nodeSelector"
IMAGE = "spec.template.spec.containers.0.image"

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      nodeSelector:
        kubernetes.io/hostname: gpu-0
      containers:
      - name: {name}
        image: {image}
        resources:
          limits:
            nvidia.com/gpu: 1
"""

PDB = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: trainer-pdb
spec:
  maxUnavailable: 0
  selector:
    matchLabels:
      app: trainer
"""

SELECTOR_PATCH = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  template:
    spec:
      nodeSelector:
        {key}: {value}
"""


def _repo(root: Path, trainer: str = OLD, worker: str = OLD, pdb: bool = False) -> None:
    write(root, "support-matrix.csv", MATRIX)
    write(root, "inventory/nodes.yaml", NODES)
    write(root, "base/trainer.yaml", DEPLOYMENT.format(name="trainer", image=trainer))
    write(root, "base/worker.yaml", DEPLOYMENT.format(name="worker", image=worker))
    resources = "resources:\n" + ("- pdb.yaml\n" if pdb else "") + "- trainer.yaml\n- worker.yaml\n"
    if pdb:
        write(root, "base/pdb.yaml", PDB)
    write(root, "base/kustomization.yaml", resources)


def _render(root: Path, directory: str) -> list[dict]:
    command = kustomize_command()
    assert command is not None
    out = subprocess.run(
        [*command, str(root / directory)], capture_output=True, text=True, check=True
    ).stdout
    return [d.data for d in parse_text(out).docs]


def _object(docs: list[dict], kind: str, name: str, namespace: str | None = None) -> dict:
    (found,) = [
        d
        for d in docs
        if d["kind"] == kind
        and d["metadata"]["name"] == name
        and d["metadata"].get("namespace") == namespace
    ]
    return found


def _findings(root: Path, *args: str) -> list[tuple[str, str, str, str]]:
    """(rule, kind/namespace/name, file:line:column, path) of each finding."""
    done = run_main("check", str(root), "--no-cache", "--format", "json", *args)
    assert done.returncode in (0, 1), done.stderr
    out = []
    for f in json.loads(done.stdout)["findings"]:
        obj, at = f.get("object") or {}, f["location"]
        out.append(
            (
                f["rule"],
                f"{obj.get('kind')}/{obj.get('namespace')}/{obj.get('name')}",
                f"{at['file']}:{at['line']}:{at['column']}",
                ".".join(map(str, f.get("path") or [])),
            )
        )
    return sorted(out)


@needs_kustomize
def test_fifo_order_pairs_each_object_with_its_own_file(tmp_path: Path):
    """`sortOptions: order: fifo` keeps the resources' order; the origin render (legacy
    order) lists them otherwise, so objects pair up by identity, not position."""
    _repo(tmp_path, worker=NEW, pdb=True)
    write(
        tmp_path,
        "overlays/prod/kustomization.yaml",
        "namespace: prod\nresources:\n- ../../base\nsortOptions:\n  order: fifo\n",
    )
    kinds = [d["kind"] for d in _render(tmp_path, "overlays/prod")]
    assert kinds == ["PodDisruptionBudget", "Deployment", "Deployment"]  # fifo, as listed
    assert _findings(tmp_path, "--kustomize") == [
        ("GPU011", "Deployment/prod/worker", "base/worker.yaml:18:9", IMAGE),
        (
            "GPU020",
            "PodDisruptionBudget/prod/trainer-pdb",
            "base/pdb.yaml:6:3",
            "spec.maxUnavailable",
        ),
    ]


@needs_kustomize
def test_a_patch_of_another_branch_is_not_blamed(tmp_path: Path):
    """Two teams patch the same base Deployment, each in its own namespace: the finding on
    team-b's worker is at team-b's patch, never at team-a's (applied last in the walk)."""
    _repo(tmp_path)
    write(tmp_path, "base/kustomization.yaml", "resources:\n- worker.yaml\n")
    write(tmp_path, "cluster/kustomization.yaml", "resources:\n- ../team-b\n- ../team-a\n")
    for team, major in (("team-a", '"550"'), ("team-b", '"999"')):
        write(
            tmp_path,
            f"{team}/kustomization.yaml",
            f"namespace: {team}\nresources:\n- ../base\npatches:\n- path: sel.yaml\n",
        )
        patch = SELECTOR_PATCH.format(
            name="worker", key="nvidia.com/cuda.driver.major", value=major
        )
        write(tmp_path, f"{team}/sel.yaml", patch)
    docs = _render(tmp_path, "cluster")
    selector = "nvidia.com/cuda.driver.major"
    a = _object(docs, "Deployment", "worker", "team-a")["spec"]["template"]["spec"]
    b = _object(docs, "Deployment", "worker", "team-b")["spec"]["template"]["spec"]
    assert (a["nodeSelector"][selector], b["nodeSelector"][selector]) == ("550", "999")
    assert _findings(tmp_path, "--kustomize") == [
        ("GPU010", "Deployment/team-b/worker", "team-b/sel.yaml:9:9", f"{SELECTOR}.{selector}"),
    ]


@needs_kustomize
def test_a_strategic_merge_patch_with_a_target_is_pointed_at(tmp_path: Path):
    """A `patches` entry with `target:` applies its strategic-merge patch to what the target
    selects (the name an anchored regular expression), whatever name the patch carries."""
    _repo(tmp_path)
    write(
        tmp_path,
        "overlays/prod/kustomization.yaml",
        "namespace: prod\nresources:\n- ../../base\npatches:\n- path: sel.yaml\n"
        "  target:\n    kind: Deployment\n    name: work.*\n",
    )
    write(
        tmp_path,
        "overlays/prod/sel.yaml",
        SELECTOR_PATCH.format(name="not-important", key="gpu", value="none-such"),
    )
    docs = _render(tmp_path, "overlays/prod")
    worker = _object(docs, "Deployment", "worker", "prod")["spec"]["template"]["spec"]
    trainer = _object(docs, "Deployment", "trainer", "prod")["spec"]["template"]["spec"]
    assert worker["nodeSelector"]["gpu"] == "none-such" and "gpu" not in trainer["nodeSelector"]
    assert _findings(tmp_path, "--kustomize") == [
        ("GPU010", "Deployment/prod/worker", "overlays/prod/sel.yaml:9:9", f"{SELECTOR}.gpu"),
    ]


OPS = """\
- op: add
  path: /spec/template/metadata/labels/team
  value: a
- op: replace
  path: /spec/template/spec/nodeSelector/nvidia.com~1cuda.driver.major
  value: "999"
"""


@needs_kustomize
@pytest.mark.parametrize("form", ["file", "legacy", "inline"])
def test_json6902_operations_are_pointed_at(tmp_path: Path, form: str):
    """JSON 6902 operations (a file under `patches` with a target, `patchesJson6902`, an
    inline `patch: |-`): a finding on the key an `add`/`replace` sets is at its `value`."""
    _repo(tmp_path)
    write(
        tmp_path,
        "base/worker.yaml",
        DEPLOYMENT.format(name="worker", image=OLD).replace(
            "kubernetes.io/hostname: gpu-0", 'nvidia.com/cuda.driver.major: "550"'
        ),
    )
    head = "namespace: prod\nresources:\n- ../../base\n"
    target = "  target:\n    kind: Deployment\n    name: worker\n"
    if form == "file":
        kz = head + "patches:\n- path: ops.yaml\n" + target
    elif form == "legacy":
        kz = head + "patchesJson6902:\n- path: ops.yaml\n" + target
    else:
        inline = "".join(f"    {line}\n" for line in OPS.splitlines())
        kz = head + "patches:\n" + target.replace("  target", "- target", 1) + "  patch: |-\n"
        kz += inline
    write(tmp_path, "overlays/prod/kustomization.yaml", kz)
    if form != "inline":
        write(tmp_path, "overlays/prod/ops.yaml", OPS)
    docs = _render(tmp_path, "overlays/prod")
    selector = _object(docs, "Deployment", "worker", "prod")["spec"]["template"]["spec"]
    assert selector["nodeSelector"] == {"nvidia.com/cuda.driver.major": "999"}
    # the second operation's `value`, not the first's (it sets another key)
    at = "overlays/prod/ops.yaml:6:3"
    if form == "inline":  # the operation's line inside the kustomization's block scalar
        at = "overlays/prod/kustomization.yaml:14:7"
    path = "spec.template.spec.nodeSelector.nvidia.com/cuda.driver.major"
    assert _findings(tmp_path, "--kustomize") == [("GPU010", "Deployment/prod/worker", at, path)]


@needs_kustomize
def test_containers_are_matched_by_name_not_by_index(tmp_path: Path):
    """A strategic-merge patch merges containers by `name`: kustomize renders the patch's
    container (the base's second) first, so rendered container 1 is the base's container 0,
    not the base's container 1 (a sidecar whose image line says nothing about it)."""
    _repo(tmp_path, trainer=NEW)
    base = DEPLOYMENT.format(name="trainer", image=NEW)
    base += "      - name: sidecar\n        image: busybox\n"
    write(tmp_path, "base/trainer.yaml", base)
    write(
        tmp_path,
        "overlays/prod/kustomization.yaml",
        "namespace: prod\nresources:\n- ../../base\npatches:\n- path: sidecar.yaml\n",
    )
    write(
        tmp_path,
        "overlays/prod/sidecar.yaml",
        """\
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: trainer
        spec:
          template:
            spec:
              containers:
              - name: sidecar
                image: busybox:1.36
        """,
    )
    docs = _render(tmp_path, "overlays/prod")
    containers = _object(docs, "Deployment", "trainer", "prod")["spec"]["template"]["spec"][
        "containers"
    ]
    assert [(c["name"], c["image"]) for c in containers] == [
        ("sidecar", "busybox:1.36"),
        ("trainer", NEW),
    ]
    path = "spec.template.spec.containers.1.image"
    assert _findings(tmp_path, "--kustomize") == [
        ("GPU011", "Deployment/prod/trainer", "base/trainer.yaml:18:9", path),
    ]


@needs_kustomize
def test_objects_of_a_list_keep_their_lines(tmp_path: Path):
    """kustomize expands a `kind: List` resource into its items; each is found in it."""
    _repo(tmp_path)
    items = DEPLOYMENT.format(name="worker", image=OLD).replace(
        "kubernetes.io/hostname: gpu-0", "gpu: none-such"
    )
    listed = "apiVersion: v1\nkind: List\nitems:\n" + "".join(
        ("- " if i == 0 else "  ") + line + "\n" for i, line in enumerate(items.splitlines())
    )
    write(tmp_path, "base/worker.yaml", listed)
    write(
        tmp_path, "overlays/prod/kustomization.yaml", "namespace: prod\nresources:\n- ../../base\n"
    )
    docs = _render(tmp_path, "overlays/prod")
    assert [d["kind"] for d in docs] == ["Deployment", "Deployment"]  # no List left
    assert _findings(tmp_path, "--kustomize") == [
        ("GPU010", "Deployment/prod/worker", "base/worker.yaml:18:11", f"{SELECTOR}.gpu"),
    ]


@needs_kustomize
def test_an_images_entry_that_set_the_image_is_the_place(tmp_path: Path):
    """`images:` rewrites the tag of every container image of that name: the finding is at
    the entry's `newTag`, not at the base line that still holds the old tag."""
    _repo(tmp_path)
    write(
        tmp_path,
        "overlays/prod/kustomization.yaml",
        "namespace: prod\nresources:\n- ../../base\nimages:\n- name: nvcr.io/nvidia/cuda\n"
        "  newTag: 12.8.0-base-ubuntu22.04\n",
    )
    docs = _render(tmp_path, "overlays/prod")
    images = {
        d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0]["image"] for d in docs
    }
    assert images == {"trainer": NEW, "worker": NEW}
    path = "spec.template.spec.containers.0.image"
    assert _findings(tmp_path, "--kustomize") == [
        ("GPU011", "Deployment/prod/trainer", "overlays/prod/kustomization.yaml:6:3", path),
        ("GPU011", "Deployment/prod/worker", "overlays/prod/kustomization.yaml:6:3", path),
    ]


@needs_kustomize
def test_a_generated_config_map_is_at_its_generator_entry(tmp_path: Path):
    """A configMapGenerator's ConfigMap (origin `configuredIn` the kustomization) is at the
    `literals` or `files` item of the key a finding is about."""
    write(tmp_path, "support-matrix.csv", MATRIX)
    write(tmp_path, "inventory/nodes.yaml", NODES)
    write(
        tmp_path,
        "op/cp.yaml",
        "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\n"
        "spec:\n  devicePlugin:\n    config: {name: time-slicing-config, default: any}\n",
    )
    write(
        tmp_path,
        "op/any",
        "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
        "      replicas: 1\n",
    )
    options = "generatorOptions:\n  disableNameSuffixHash: true\n"
    write(
        tmp_path,
        "op/kustomization.yaml",
        "namespace: gpu-operator\nresources:\n- cp.yaml\nconfigMapGenerator:\n"
        "- name: time-slicing-config\n  literals:\n  - other=1\n  files:\n  - any\n" + options,
    )
    (config,) = [d for d in _render(tmp_path, "op") if d["kind"] == "ConfigMap"]
    name = config["metadata"]["name"]
    assert name == "time-slicing-config"
    assert config["data"]["other"] == "1" and "timeSlicing" in config["data"]["any"]
    found = [f for f in _findings(tmp_path, "--kustomize") if f[1].startswith("ConfigMap/")]
    assert found == [  # each key at its own item: the `literals` one, the `files` one
        ("GPU033", f"ConfigMap/gpu-operator/{name}", "op/kustomization.yaml:7:5", "data.other"),
        ("GPU033", f"ConfigMap/gpu-operator/{name}", "op/kustomization.yaml:9:5", "data.any"),
    ]


COMPONENT = "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"


def _namespaces(root: Path) -> dict[str, tuple[str | None, ...]]:
    kustomizations = {
        str(p.relative_to(root)): parse_text(p.read_text()).docs[0].data
        for p in root.rglob("kustomization.yaml")
    }
    listed = {str(p.relative_to(root)) for p in root.rglob("*.yaml")}
    return applied_namespaces(kustomizations, listed)


@needs_kustomize
def test_a_component_namespace_applies_to_its_parents_resources(tmp_path: Path):
    """Without --kustomize: a Component's `namespace:` puts its parent's resources in it,
    the last component's winning; the parent's own namespace, or an outer one, wins over
    it. Each case is what `kubectl kustomize` renders."""
    write(tmp_path, "base/kustomization.yaml", "resources:\n- cm.yaml\n")
    write(tmp_path, "base/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    write(tmp_path, "comp/kustomization.yaml", COMPONENT + "namespace: comp-ns\n")
    write(tmp_path, "comp2/kustomization.yaml", COMPONENT + "namespace: comp2-ns\n")
    cases = {
        "bare": ("resources: [../base]\ncomponents: [../comp]\n", "comp-ns"),
        "two": ("resources: [../base]\ncomponents: [../comp, ../comp2]\n", "comp2-ns"),
        "own": ("namespace: own-ns\nresources: [../base]\ncomponents: [../comp]\n", "own-ns"),
    }
    for name, (kz, namespace) in cases.items():
        write(tmp_path, "app/kustomization.yaml", kz)
        (rendered,) = _render(tmp_path, "app")
        assert rendered["metadata"]["namespace"] == namespace, name
        assert _namespaces(tmp_path) == {"base/cm.yaml": (namespace,)}, name
    # an outer kustomization's namespace wins over the component's of the one it builds on
    write(tmp_path, "app/kustomization.yaml", cases["bare"][0])
    write(tmp_path, "top/kustomization.yaml", "namespace: top-ns\nresources: [../app]\n")
    (rendered,) = _render(tmp_path, "top")
    assert rendered["metadata"]["namespace"] == "top-ns"
    assert _namespaces(tmp_path) == {"base/cm.yaml": ("top-ns",)}


@needs_kustomize
def test_a_container_appended_by_json6902_is_at_its_value(tmp_path: Path):
    """An `add` to `/containers/-` appends: the rendered container it made is at the op's
    `value`, and the base's own container (rendered index 0) is not blamed on it."""
    _repo(tmp_path, trainer=NEW)
    write(
        tmp_path,
        "overlays/prod/kustomization.yaml",
        "resources:\n- ../../base\npatches:\n- path: add.yaml\n"
        "  target:\n    kind: Deployment\n    name: worker\n",
    )
    write(
        tmp_path,
        "overlays/prod/add.yaml",
        f"""\
        - op: add
          path: /spec/template/spec/containers/-
          value:
            name: extra
            image: {NEW}
        """,
    )
    docs = _render(tmp_path, "overlays/prod")
    spec = _object(docs, "Deployment", "worker")["spec"]["template"]["spec"]
    assert [(c["name"], c["image"]) for c in spec["containers"]] == [
        ("worker", OLD),
        ("extra", NEW),
    ]
    assert _findings(tmp_path, "--kustomize") == [
        ("GPU011", "Deployment/None/trainer", "base/trainer.yaml:18:9", IMAGE),
        ("GPU011", "Deployment/None/worker", "overlays/prod/add.yaml:5:5", IMAGE.replace("0", "1")),
    ]
