"""A node file's facts kept in the per-file cache (issue 22: one changed workload file). Once a
run has decoded a file of `kind: Node` objects, its entry keeps what the model makes of each
object (model/inventory.py `node_file_facts`: the node's fields and its findings), and the next
runs build those nodes from them, with the objects' trees decoded only when something asks for
one (core/manifest.py `CachedManifest`, engine/cache/files.py `FilesCache.result`). What these
tests hold:

- the facts give the very nodes and findings `_node_from_object` gives (every field, the
  taints as located trees, the labels recording reads), on objects with every problem the
  inventory reports, and keeping them records no label read;
- a cached run over such nodes, after edits of workloads and of nodes, says byte for byte what
  a run without cache says, in every output format (findings located in the undecoded files,
  an ignore annotation on a node);
- an edit run of a workload decodes no node tree of a generated fleet;
- a kept value of the wrong shape is no facts (the file is decoded as before), and trees that
  do not decode are parsed again from the file.
"""

from __future__ import annotations

import copy
import marshal
import pickle
import re
import shutil
from dataclasses import fields, replace
from pathlib import Path

import pytest

from gpudrv_check.core import label_reads
from gpudrv_check.core.label_reads import NodeLabels
from gpudrv_check.core.manifest import CachedManifest, Manifest
from gpudrv_check.engine import run as run_mod
from gpudrv_check.engine.cache import files as files_mod
from gpudrv_check.engine.cache.files import FileEntry
from gpudrv_check.engine.cache.partition import node_view
from gpudrv_check.model.inventory import (
    _node_from_facts,
    _node_from_object,
    loaded_node_facts,
    node_file_facts,
)
from gpudrv_check.read.codec import encode
from gpudrv_check.read.manifests import parse_manifest_bytes
from tests.conftest import ROOT, generated_corpus, gpu_deployment, run_main, write
from tests.fuzz.targets import tree_difference

# every problem model/inventory.py reports on a Node object, and the values it converts
NODES = """apiVersion: v1
kind: Node
metadata:
  name: gpu-a
  labels:
    nvidia.com/gpu.present: "true"
    nvidia.com/gpu.count: 8
    nvidia.com/cuda.driver-version.major: "535"
    nvidia.com/cuda.driver-version.minor: "104"
    nvidia.com/cuda.driver-version.revision: "05"
    bad key!: x
    ok: not a valid value!
    flag: true
    listed: [a]
  annotations:
    gpudrv-check.io/ignore: 7
    typed: 1.50
    empty: null
    listed: [x]
spec:
  unschedulable: "yes"
  taints:
  - {key: nvidia.com/gpu, value: present, effect: NoSchedule}
  - {key: nvidia.com/gpu, value: again, effect: NoSchedule}
  - {key: "", effect: Sometimes}
status:
  capacity: {nvidia.com/gpu: "8", cpu: "-1", memory: lots}
  allocatable: {nvidia.com/gpu: 1.5, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  labels: {a: b}
---
apiVersion: v1
kind: Node
metadata:
  name: Bad_Name
  labels: [not, a, map]
  annotations:
    gpudrv-check.io/ignore: "GPU002 # known"
spec:
  unschedulable: true
  taints: {key: x}
status:
  capacity: [8]
"""


def _manifests(text: str = NODES, rel: str = "inventory/nodes.yaml") -> list[Manifest]:
    return parse_manifest_bytes(rel, text.encode()).manifests


def _as_cached(manifest: Manifest, value) -> CachedManifest:
    """What `FilesCache.result` makes of one kept object (its tree already in, here)."""
    header = (
        manifest.file,
        manifest.doc,
        manifest.api_version,
        manifest.kind,
        manifest.name,
        manifest.namespace,
        manifest.item,
    )
    cached = CachedManifest.undecoded(header, loaded_node_facts(value), None)
    cached.data = manifest.data
    return cached


def test_the_facts_give_the_nodes_and_findings_the_objects_give():
    manifests = _manifests()
    kept = node_file_facts(manifests)
    assert kept is not None
    # as the cache stores and loads them: builtin values only
    kept = marshal.loads(marshal.dumps(kept))
    assert len(kept) == len(manifests) == 3
    for manifest, value in zip(manifests, kept, strict=True):
        expected_findings: list = []
        expected = _node_from_object(manifest, expected_findings)
        got_findings: list = []
        got = _node_from_facts(_as_cached(manifest, value), got_findings)
        assert [f.record() for f in got_findings] == [f.record() for f in expected_findings]
        if expected is None:
            assert got is None
            continue
        assert got is not None
        for f in fields(expected):
            mine, theirs = getattr(got, f.name), getattr(expected, f.name)
            if f.name == "manifest":
                assert mine == theirs  # a CachedManifest equals the Manifest of its object
            elif f.name == "taints":
                assert len(mine) == len(theirs)
                for a, b in zip(mine, theirs, strict=True):
                    assert tree_difference(a, b) is None  # located, as read
            else:
                assert (type(mine), mine) == (type(theirs), theirs), f.name
    # two builds from one object (two clusters of a repo) do not share a container
    cached = _as_cached(manifests[0], kept[0])
    one, two = _node_from_facts(cached, []), _node_from_facts(cached, [])
    assert one is not None and two is not None
    for name in ("labels", "annotations", "taints", "capacity", "allocatable"):
        assert getattr(one, name) == getattr(two, name)
        assert getattr(one, name) is not getattr(two, name), name
    # among the findings the inventory made of these objects: GPU040 and GPU007
    rules = {r[0] for _, records in kept for r in records}
    assert {"GPU040", "GPU007"} <= rules


def test_keeping_facts_records_no_label_read():
    label_reads.reset()
    assert node_file_facts(_manifests()) is not None
    assert label_reads.snapshot() == ()


def test_a_file_with_any_other_object_has_no_facts():
    text = NODES + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
    assert node_file_facts(_manifests(text)) is None
    other_api = NODES.replace("apiVersion: v1", "apiVersion: example.com/v1", 1)
    assert node_file_facts(_manifests(other_api)) is None


GOOD = (("n", {}, {}, [], False, {}, {}), ())


@pytest.mark.parametrize(
    "bad",
    [
        None,
        "x",
        (None,),
        (None, ("not a record",)),
        (GOOD[0],),  # no records
        (("n", {"k": 1}, {}, [], False, {}, {}), ()),  # a label value not a string
        (("n", {}, {}, ["no tree"], False, {}, {}), ()),  # a taint not a mapping
        (("n", {}, {}, [], "no", {}, {}), ()),
        (("n", {}, {}, [], False, {}, {}, "extra"), ()),
        (("n", NodeLabels(), {}, [], False, {}, {}), ()),  # another class of dict
    ],
)
def test_a_kept_value_of_another_shape_is_no_facts(bad):
    assert loaded_node_facts(GOOD) is not None  # the shape they depart from
    assert loaded_node_facts(bad) is None


def _entry(text: str = NODES, rel: str = "inventory/nodes.yaml") -> tuple[FileEntry, object]:
    """A node file's entry as a run that decoded it keeps it (its blob and facts)."""
    result = parse_manifest_bytes(rel, text.encode())
    cache = files_mod.FilesCache(None)  # type: ignore[arg-type]
    view = node_view(result)
    cache.fresh[rel] = FileEntry(result.digest, False, encode(result), ((), 0), view)
    cache._keep_facts(rel, result)
    return cache.fresh[rel], result


def test_a_cached_node_file_gives_its_objects_undecoded_and_decodes_them_when_asked():
    entry, result = _entry()
    cache = files_mod.FilesCache(None)  # type: ignore[arg-type]
    cache.fresh["inventory/nodes.yaml"] = entry
    again = cache.result("inventory/nodes.yaml")
    assert again is not None
    assert [m.__class__ for m in again.manifests] == [CachedManifest] * 3
    assert all(m._lazy is not None for m in again.manifests)
    assert [(m.doc, m.kind, m.name) for m in again.manifests] == [
        (m.doc, m.kind, m.name) for m in result.manifests
    ]
    first = again.manifests[0]
    assert first.annotations == {"gpudrv-check.io/ignore": "7", "typed": "1.50", "empty": ""}
    assert first._lazy is not None  # the annotations came from the facts
    trees = first._lazy[0]
    assert tree_difference(first.data, result.manifests[0].data) is None
    assert first._lazy is None and trees.trees is not None  # the file decoded at once
    assert all(m._lazy[0] is trees for m in again.manifests[1:])  # the others take theirs
    for mine, theirs in zip(again.manifests, result.manifests, strict=True):
        assert mine == theirs and theirs == mine
        assert tree_difference(mine.data, theirs.data) is None
    for copied in (copy.copy(again.manifests[1]), pickle.loads(pickle.dumps(again.manifests[1]))):
        assert copied.__class__ is Manifest and copied == again.manifests[1]
    moved = replace(again.manifests[1], namespace="x")
    assert moved.namespace == "x" and moved.facts is None  # rebuilt from its tree, not facts


@pytest.mark.parametrize(
    "facts",
    [
        "x",
        ((), (), (), ()),  # no object: a file with a view has some
        (((), None), ((None, ()),), (), ()),  # a header of another shape
        ((("f", 0, "v1", "ConfigMap", "c", None, None),), ((None, ()),), (), ()),
        ((("f", 0, "v1", "Node", "n", None, None),), ((None, ()),), ("bad",), ()),
        ((("f", 0, "v1", "Node", "n", None, None),), ((None, ()),), (), (("a", 1),)),
        "one object less",  # headers and facts of another count than the view's objects
        "another file",  # a header naming another file
    ],
)
def test_kept_facts_of_another_shape_are_passed_over_and_the_file_decoded(facts):
    """(A review forged the first two with a valid MAC: every later run stopped on an internal
    error when a finding asked where a node is.)"""
    entry, result = _entry()
    headers, kept, problems, skipped = entry.facts
    if facts == "one object less":
        facts = (headers[:-1], kept[:-1], problems, skipped)
    elif facts == "another file":
        facts = (
            ((*headers[0][:0], "elsewhere.yaml", *headers[0][1:]), *headers[1:]),
            kept,
            problems,
            skipped,
        )
    cache = files_mod.FilesCache(None)  # type: ignore[arg-type]
    cache.fresh["inventory/nodes.yaml"] = entry._replace(facts=facts)
    again = cache.result("inventory/nodes.yaml")
    assert again is not None
    assert [m.__class__ for m in again.manifests] == [Manifest] * 3  # decoded, as before
    assert cache.fresh["inventory/nodes.yaml"].facts == entry.facts  # kept again, right


def test_a_result_naming_another_file_keeps_its_facts_under_the_file_asked_for():
    """The facts go with the entry the run asked for, whatever path the cached result names
    (a review's forged entry stopped every run on a KeyError)."""
    result = parse_manifest_bytes("elsewhere.yaml", NODES.encode())
    rel = "inventory/nodes.yaml"
    cache = files_mod.FilesCache(None)  # type: ignore[arg-type]
    cache.fresh[rel] = FileEntry(result.digest, False, encode(result), ((), 0), node_view(result))
    assert cache.result(rel) is not None
    assert cache.fresh[rel].facts is not None and "elsewhere.yaml" not in cache.fresh


def test_reading_kept_facts_leaves_the_entry_as_it_can_be_stored():
    """A taint with a mapping in it: its facts decoded for a run, the entry still holds builtin
    values only, so the bucket it sits in is stored when a file of it changes (a review found
    the decoding filled the cached value with located maps, which `marshal` refuses: the
    bucket was never stored again)."""
    text = NODES.replace(
        "  - {key: nvidia.com/gpu, value: present, effect: NoSchedule}\n",
        "  - {key: nvidia.com/gpu, value: present, effect: NoSchedule, extra: {x: [1]}}\n",
    )
    entry, _ = _entry(text)
    stored = marshal.dumps(entry.stored())
    cache = files_mod.FilesCache(None)  # type: ignore[arg-type]
    cache.fresh["inventory/nodes.yaml"] = FileEntry(*marshal.loads(stored))
    again = cache.result("inventory/nodes.yaml")
    assert again is not None and again.manifests[0].facts[0][3][0]["extra"] == {"x": [1]}
    after = marshal.dumps(cache.fresh["inventory/nodes.yaml"].stored())  # builtins only
    assert marshal.loads(after) == marshal.loads(stored)


def test_trees_that_do_not_decode_are_parsed_again():
    entry, result = _entry()
    cache = files_mod.FilesCache(None)  # type: ignore[arg-type]
    cache.fresh["inventory/nodes.yaml"] = entry._replace(blob=b"not an encoded result")
    asked: list[str] = []

    def reparse():
        asked.append("again")
        return parse_manifest_bytes("inventory/nodes.yaml", NODES.encode())

    again = cache.result("inventory/nodes.yaml", reparse)
    assert again is not None and not asked
    assert tree_difference(again.manifests[2].data, result.manifests[2].data) is None
    assert asked == ["again"]
    alone = cache.result("inventory/nodes.yaml")  # nothing to parse again with
    assert alone is not None
    # no tree to be had: each object an empty one at the file's start, and the run goes on
    where = alone.manifests[0].location(("metadata", "name"))
    assert (where.line, where.column) == (1, 1)


def test_an_entry_whose_facts_and_view_agree_but_not_the_file_takes_trees_by_place():
    """A damaged entry that passed its MAC with one object less in its facts and its view
    alike: the file's trees are matched to the objects by document (a second review's forged
    entry stopped the run with an internal error when a finding asked where a node is)."""
    entry, result = _entry()
    headers, kept, problems, skipped = entry.facts
    view = (entry.view[0], entry.view[1][1:])
    cache = files_mod.FilesCache(None)  # type: ignore[arg-type]
    cache.fresh["inventory/nodes.yaml"] = entry._replace(
        facts=(headers[1:], kept[1:], problems, skipped), view=view
    )

    def reparse():
        return parse_manifest_bytes("inventory/nodes.yaml", NODES.encode())

    again = cache.result("inventory/nodes.yaml", reparse)
    assert again is not None and [m.doc for m in again.manifests] == [1, 2]
    assert tree_difference(again.manifests[1].data, result.manifests[2].data) is None
    assert again.manifests[0].location(()) == result.manifests[1].location(())


# -- whole runs --------------------------------------------------------------------------------

# a single-GPU Deployment (tests/conftest.py) in a namespace of its own, tolerating the GPU
# taint, with a CUDA image GPU011 reads
WORKLOAD = (
    gpu_deployment(
        "train", 2, spec_lines="      tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n"
    )
    .replace("namespace: ml", "namespace: team-a")
    .replace("image: x", "image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04")
)

SECOND = """apiVersion: v1
kind: Node
metadata:
  name: gpu-b
  annotations: {gpudrv-check.io/ignore: GPU001}
  labels:
    nvidia.com/gpu.present: "true"
    nvidia.com/cuda.driver-version.major: "470"
    feature.node.kubernetes.io/system-os_release.ID: ubuntu
    feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04"
    feature.node.kubernetes.io/kernel-version.full: 5.15.0-125-generic
status:
  allocatable: {nvidia.com/gpu: "8", cpu: "90", memory: 500Gi, pods: "110"}
"""


def test_a_taint_from_the_facts_is_located_where_the_tree_has_it(tmp_path, monkeypatch):
    """GPU031 says where the taint that keeps an operand off a node is written: a node built
    from the facts holds copies of its taints, found in the tree by where they start (a review
    found the cached run pointing at an earlier, malformed taint with the same fields)."""
    root = tmp_path / "repo"
    write(
        root,
        "node.yaml",
        """
        apiVersion: v1
        kind: Node
        metadata:
          name: gpu-1
          labels:
            nvidia.com/gpu.present: "true"
            nvidia.com/gpu.deploy.device-plugin: "true"
        spec:
          taints:
          - {key: dedicated, value: false, effect: NoSchedule}
          - {key: dedicated, effect: NoSchedule}
        """,
    )
    write(
        root,
        "ds.yaml",
        """
        apiVersion: apps/v1
        kind: DaemonSet
        metadata: {name: nvidia-device-plugin-daemonset, namespace: gpu-operator}
        spec:
          selector: {matchLabels: {app: dp}}
          template:
            metadata: {labels: {app: dp}}
            spec:
              nodeSelector: {nvidia.com/gpu.deploy.device-plugin: "true"}
              containers: [{name: device-plugin, image: registry.k8s.io/pause:3.9}]
        """,
    )
    other = write(root, "other.yaml", "# nothing\n")
    counts = _counting(monkeypatch)
    cache = tmp_path / "cache"
    for _ in range(3):
        other.write_text(other.read_text() + "\n")
        _same(root, cache)
    assert counts["undecoded"] > 0
    args = ("check", str(root), "--fail-on", "never", "--format", "concise")
    cached = run_main(*args, "--cache-dir", str(cache)).stdout
    assert "node.yaml:11:5: warning GPU031" in cached  # the second taint, as without cache


def _repo(root: Path) -> Path:
    write(root, "inventory/nodes.yaml", NODES)
    write(root, "inventory/gpu-b.yaml", SECOND)
    # the same node copied into another file: one node; another with the same name: reported
    write(root, "inventory/copy.yaml", SECOND)
    write(root, "inventory/dup.yaml", SECOND.replace("470", "550"))
    write(root, "apps/team-a/train.yaml", WORKLOAD)
    write(root, "apps/team-b/serve.yaml", WORKLOAD.replace("team-a", "team-b"))
    return root


def _same(root: Path, cache: Path) -> None:
    for fmt in ("text", "json", "sarif"):
        args = ("check", str(root), "--fail-on", "never", "--format", fmt)
        cached = run_main(*args, "--cache-dir", str(cache))
        fresh = run_main(*args, "--no-cache")
        assert cached.returncode == fresh.returncode == 0, cached.stderr
        assert cached.stdout == fresh.stdout
        assert cached.stderr == fresh.stderr


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    counts = {"undecoded": 0, "loads": 0}
    real_undecoded, real_load = files_mod._undecoded, files_mod._Trees._decoded

    def undecoded(*args):
        found = real_undecoded(*args)
        counts["undecoded"] += found is not None
        return found

    def load(self):
        counts["loads"] += 1
        return real_load(self)

    monkeypatch.setattr(files_mod, "_undecoded", undecoded)
    monkeypatch.setattr(files_mod._Trees, "_decoded", load)
    return counts


def _sub(path: Path, pattern: str, new: str) -> None:
    text = path.read_text()
    changed = re.sub(pattern, new, text, count=1)
    assert changed != text
    path.write_text(changed)


def test_cached_runs_over_kept_facts_say_what_a_run_without_cache_says(tmp_path, monkeypatch):
    root = _repo(tmp_path / "repo")
    cache = tmp_path / "cache"
    counts = _counting(monkeypatch)
    workload = root / "apps" / "team-a" / "train.yaml"
    _same(root, cache)  # cold: no result kept
    for replicas in (3, 4, 5):
        _sub(workload, r"replicas: \d+", f"replicas: {replicas}")
        _same(root, cache)
    assert counts["undecoded"] > 0  # the node files came from their facts
    # a node edited: its file decoded again, the others from their facts; every cluster-wide
    # finding made again, those located in the undecoded files among them
    _sub(root / "inventory" / "gpu-b.yaml", r'major: "470"', 'major: "535"')
    _same(root, cache)
    _sub(root / "inventory" / "nodes.yaml", r"name: gpu-a", "name: gpu-c")
    _same(root, cache)
    _sub(root / "inventory" / "gpu-b.yaml", r"ignore: GPU001", "ignore: GPU011")
    _same(root, cache)
    (root / "inventory" / "dup.yaml").unlink()
    _same(root, cache)
    assert counts["loads"] > 0  # some finding asked an undecoded node file where it is


def test_an_edit_of_a_workload_decodes_no_node_tree(tmp_path, monkeypatch):
    root = generated_corpus(tmp_path / "repo", 12, 60)
    cache = tmp_path / "cache"
    nodes = sorted((root / "inventory").rglob("*.yaml"))
    workload = sorted((root / "apps").rglob("*.yaml"))[0]
    args = ("check", str(root), "--fail-on", "never", "--cache-dir", str(cache))
    for replicas in (3, 4):  # cold, then the run that keeps the nodes' results and facts
        _sub(workload, r"replicas: \d+", f"replicas: {replicas}")
        assert run_main(*args).returncode == 0
    counts = _counting(monkeypatch)
    reads: list[int] = []
    real_read = run_mod.read_repo

    def read_repo(*a, **k):
        reads.append(1)
        return real_read(*a, **k)

    monkeypatch.setattr(run_mod, "read_repo", read_repo)
    _sub(workload, r"replicas: \d+", "replicas: 5")
    cached = run_main(*args)
    # every node file from its facts each time the run read the repo (twice when the capacity
    # went otherwise for another namespace), and no tree decoded
    assert reads and counts == {"undecoded": len(nodes) * len(reads), "loads": 0}
    fresh = run_main("check", str(root), "--fail-on", "never", "--no-cache")
    assert cached.stdout == fresh.stdout


@pytest.mark.parametrize("example", ["lab", "flux", "multi-cluster", "operands"])
def test_every_example_says_the_same_over_kept_facts(example, tmp_path, monkeypatch):
    """The examples with a file of Node objects added (their own nodes are NodeInventory
    files; in the multi-cluster repo it sits in no cluster's folder, so each cluster builds
    its nodes from the same objects), through cached runs with a workload file or the node
    file touched before each, against runs without cache."""
    root = tmp_path / example
    shutil.copytree(ROOT / "examples" / example, root)
    node = write(root, "extra-nodes.yaml", NODES + "---\n" + SECOND)
    cache = tmp_path / "cache"
    counts = _counting(monkeypatch)
    others = sorted(p for p in root.rglob("*.yaml") if p != node)
    _same(root, cache)
    for n, path in enumerate((others[0], others[-1], node, others[0])):
        path.write_text(path.read_text() + "\n" * (n + 1))  # new bytes, the same objects
        _same(root, cache)
    assert counts["undecoded"] > 0
