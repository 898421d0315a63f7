"""A node file edit that changes only label values no rule reads keeps the partition cache
(issue 22: one changed node file): engine/cache/partition.py keys the partitions by each node
file's view (`node_view`: everything but its string label values) and the values of the label
keys the last run read (core/label_reads.py). What these tests hold:

- the view leaves out the string label values and nothing else (positions, keys, every other
  value, a label's type);
- after such an edit a cached run takes every partition from the cache and says what a run
  without cache says; after an edit of a label a rule reads, or one that moves a line, it
  evaluates them all again;
- the premise, on every rule case, the examples and a generated fleet: changing the value of
  every label the run did not read changes no finding.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from gpudrv_check.engine.cache.partition import node_view
from gpudrv_check.read.manifests import parse_manifest_bytes
from tests.conftest import (
    ROOT,
    counting_rules,
    generated_corpus,
    recording_plans,
    run_main,
    write,
)
from tests.rules.cases import case_files, read_case, write_repo

NODE = """apiVersion: v1
kind: Node
metadata:
  name: n1
  labels:
    topology.kubernetes.io/zone: zone-a
    nvidia.com/gpu.present: "true"
    nvidia.com/gpu.count: 8
  annotations:
    note: x
spec:
  taints:
  - {key: k, effect: NoSchedule}
"""

# (how the node file is changed, whether its view stays the same)
VIEW_ROWS = [
    ("zone value, in place", ("zone: zone-a", "zone: zone-b"), True),
    ("zone value, quoted", ("zone: zone-a", 'zone: "zone-a"'), True),
    ("a trailing comment", ("zone: zone-a", "zone: zone-a  # here"), True),
    ("gpu.present value", ('present: "true"', 'present: "false"'), True),
    ("zone value, longer", ("zone: zone-a", "zone: a-much-longer-zone-name"), True),
    ("a label key renamed", ("kubernetes.io/zone:", "kubernetes.io/region:"), False),
    ("a label added (lines move)", ("  labels:\n", "  labels:\n    extra: y\n"), False),
    ("a label value's type", ("zone: zone-a", "zone: 7"), False),
    ("a number label's value", ("gpu.count: 8", "gpu.count: 4"), False),
    ("an annotation", ("note: x", "note: y"), False),
    ("a taint", ("effect: NoSchedule", "effect: NoExecute"), False),
    ("the name", ("name: n1", "name: n2"), False),
    # the same tree: a key written quoted starts where it started
    ("a key quoted", ("    nvidia.com/gpu.present", "    'nvidia.com/gpu.present'"), True),
    (
        "two labels swapped",
        (
            '    topology.kubernetes.io/zone: zone-a\n    nvidia.com/gpu.present: "true"\n',
            '    nvidia.com/gpu.present: "true"\n    topology.kubernetes.io/zone: zone-a\n',
        ),
        False,
    ),
]


@pytest.mark.parametrize(("what", "edit", "same"), VIEW_ROWS, ids=[r[0] for r in VIEW_ROWS])
def test_a_node_view_leaves_out_the_string_label_values_alone(what, edit, same):
    old, new = edit
    assert old in NODE
    before = node_view(parse_manifest_bytes("n.yaml", NODE.encode()))
    after = node_view(parse_manifest_bytes("n.yaml", NODE.replace(old, new, 1).encode()))
    assert before is not None and after is not None
    assert (before[0] == after[0]) is same, what
    # the values apart, by key (the number label is not among them: it is read as text)
    assert dict(zip(*before[1][0], strict=True)) == {
        "topology.kubernetes.io/zone": "zone-a",
        "nvidia.com/gpu.present": "true",
    }


def test_only_a_file_of_nodes_has_a_view():
    deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n"
    assert node_view(parse_manifest_bytes("d.yaml", deployment.encode())) is None
    mixed = NODE + "---\n" + deployment
    assert node_view(parse_manifest_bytes("m.yaml", mixed.encode())) is None
    assert node_view(parse_manifest_bytes("e.yaml", b"")) is None
    two = node_view(parse_manifest_bytes("two.yaml", (NODE + "---\n" + NODE).encode()))
    assert two is not None and len(two[1]) == 2
    # a Node of another API: not one the model reads as a node (model/inventory.py)
    other = NODE.replace("apiVersion: v1", "apiVersion: example.com/v1")
    assert node_view(parse_manifest_bytes("o.yaml", other.encode())) is None


def test_a_view_keeps_the_values_read_and_a_malformed_one_none():
    from gpudrv_check.engine.cache.partition import view_values

    view = node_view(parse_manifest_bytes("n.yaml", NODE.encode()))
    other = node_view(parse_manifest_bytes("n.yaml", NODE.replace("zone-a", "zone-b").encode()))
    assert view is not None and other is not None
    zone, present = "topology.kubernetes.io/zone", "nvidia.com/gpu.present"
    for reads, same in (
        (frozenset(), True),  # no value read
        (frozenset({present}), True),  # one, not the zone
        (frozenset({present, "absent"}), True),
        (frozenset({zone}), False),  # the zone's value read: one index
        (frozenset({zone, present}), False),  # several indexes
    ):
        assert (view_values(view, reads, {}) == view_values(other, reads, {})) is same, reads
    # a memo made for one set of reads is that set's: the same digests through it
    memo: dict = {}
    assert view_values(view, frozenset({zone}), memo) == view_values(view, frozenset({zone}), {})
    rest, ((keys, values),) = view
    for bad in (
        (rest, ((keys, values[:-1]),)),  # values and keys apart
        (rest, ((keys, [*values]),)),  # a list where a tuple is stored
        (rest, ((keys,),)),
        (rest, (((*keys[:-1], 7), values),)),  # a key that is no string
        (rest, ("x",)),
    ):
        assert view_values(bad, frozenset({zone}), {}) is None, bad


# --- a cached run after a node edit -------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generated_corpus(tmp_path_factory.mktemp("views") / "repo", 12, 90)


@pytest.fixture
def repo(corpus: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    shutil.copytree(corpus, copy)
    return copy


def _node(root: Path) -> Path:
    return sorted((root / "inventory" / "nodes").glob("*.yaml"))[0]


def _sub(path: Path, pattern: str, new: str) -> None:
    text = path.read_text()
    changed, count = re.subn(pattern, new, text, count=1)
    assert count == 1, pattern
    path.write_text(changed)


@pytest.mark.slow
def test_an_edit_of_a_label_value_nothing_reads_keeps_every_partition(repo, tmp_path, monkeypatch):
    """...and the cluster-wide findings, which are found again only when a value one of their
    rules read changed (GPU001's evaluations counted; a fresh run evaluates it once)."""
    calls = counting_rules(monkeypatch, "GPU001")
    planned = recording_plans(monkeypatch)
    cache = tmp_path / "cache"
    args = ("check", str(repo), "--fail-on", "never", "--format", "json")

    def cached(cluster: str) -> str:
        """'all', 'none' or 'some' partitions taken; the output is a fresh run's; `cluster`:
        whether GPU001's findings are 'taken' or 'found' again."""
        del planned[:]
        before = calls["GPU001"]
        out = run_main(*args, "--cache-dir", str(cache))
        assert out.returncode == 0, out.stderr
        taken, total = len(planned[0].clean), len(planned[0].keys)  # the first reading's
        fresh = run_main(*args, "--no-cache")
        assert out.stdout == fresh.stdout
        assert total > 10
        assert calls["GPU001"] - before == {"taken": 1, "found": 2}[cluster]
        return "all" if taken == total else "none" if taken == 0 else "some"

    node = _node(repo)
    assert cached("found") == "none"  # cold
    _sub(node, r"zone: zone-\d", "zone: zone-9")  # no workload reads a zone
    assert cached("taken") == "all"
    _sub(node, r"zone: zone-9", "zone: zone-8")
    assert cached("taken") == "all"
    # read by placement and by GPU001 (the driver image)
    _sub(node, r'driver-version.major: "\d+"', 'driver-version.major: "999"')
    assert cached("found") == "none"
    _sub(node, r"zone: zone-8", "zone: zone-7")
    assert cached("taken") == "all"
    _sub(node, r"    kubernetes.io/os: linux\n", "    kubernetes.io/os: linux\n    extra: a\n")
    assert cached("found") == "none"  # the lines below moved
    _sub(node, r"extra: a", "extra: b")  # a label nothing reads
    assert cached("taken") == "all"
    # a workload starts to select the zone: its namespace is evaluated again, and from then
    # on the zone is a label the run reads
    workload = sorted((repo / "apps" / "team-0").glob("*.yaml"))[0]
    selector = "      nodeSelector: {topology.kubernetes.io/zone: z}\n"
    _sub(workload, r"      containers:", selector + "\\g<0>")
    assert cached("taken") == "some"
    _sub(node, r"zone: zone-7", "zone: zone-6")
    # the partitions read the zone now; the cluster rules never did: theirs are taken
    assert cached("taken") == "none"


@pytest.mark.slow
def test_an_edit_that_keeps_every_key_takes_the_last_simulation_without_decoding_it(
    repo, tmp_path, monkeypatch
):
    """When every partition is clean under the key the stored simulation inputs name for it
    (`Plan.known_outcomes`), those inputs are this run's: the model's own workloads take their
    outcomes from the last simulation and no cached demand is decoded (or encoded, digested);
    the cached outcomes are still compared with it, from the records alone: one that differs
    has its namespace evaluated again (a guard: the full comparison found it too)."""
    from gpudrv_check.engine.cache.partition import (
        CACHE_KIND,
        PartitionEntry,
        entry_name,
        store_entry,
    )
    from gpudrv_check.model import occupancy as occupancy_mod

    decoded: list[int] = []
    real_decode = occupancy_mod.decode_inputs

    def decode(cached, occupancy):
        decoded.append(len(cached[1]))
        return real_decode(cached, occupancy)

    monkeypatch.setattr(occupancy_mod, "decode_inputs", decode)
    plans = recording_plans(monkeypatch)
    cache = tmp_path / "cache"
    args = ("check", str(repo), "--fail-on", "never", "--format", "json")

    def cached() -> list[bool]:
        """Which readings knew the outcomes; the output is a fresh run's."""
        del plans[:], decoded[:]
        out = run_main(*args, "--cache-dir", str(cache))
        assert out.returncode == 0, out.stderr
        assert out.stdout == run_main(*args, "--no-cache").stdout
        return [p.known_outcomes() is not None for p in plans]

    node = _node(repo)
    assert cached() == [False]  # cold
    _sub(node, r"zone: zone-\d", "zone: zone-9")  # no workload reads a zone: every key kept
    assert cached() == [True] and decoded == []
    # a cached outcome that is not the last simulation's: its namespace is read again
    plan = plans[0]
    namespace = next(ns for ns in sorted(plan.clean) if plan.stored[ns].outcome)
    entry = PartitionEntry.loaded(
        plan.cache.load(CACHE_KIND, entry_name(plan.name, namespace), plan.keys[namespace])
    )
    assert entry is not None
    workload = sorted(entry.outcome)[0]
    count, pending, message, short = entry.outcome[workload]
    outcome = {**entry.outcome, workload: (count, pending, message + " (not so)", short)}
    store_entry(plan.cache, plan.name, namespace, entry._replace(outcome=outcome))
    _sub(node, r"zone: zone-9", "zone: zone-8")
    assert cached() == [True, False]  # the second reading evaluates that namespace again
    # ... whose demands are the stored ones: none decoded (`Plan.outcomes_if_same`)
    assert namespace not in plans[1].clean and decoded == []
    _sub(node, r"zone: zone-8", "zone: zone-7")
    assert cached() == [True] and decoded == []  # and all is as it was
    # one that lacks a workload the last simulation has: the same (the dicts compared whole)
    plan = plans[0]
    entry = PartitionEntry.loaded(
        plan.cache.load(CACHE_KIND, entry_name(plan.name, namespace), plan.keys[namespace])
    )
    assert entry is not None and workload in entry.outcome
    lacking = {k: v for k, v in entry.outcome.items() if k != workload}
    store_entry(plan.cache, plan.name, namespace, entry._replace(outcome=lacking))
    _sub(node, r"zone: zone-7", "zone: zone-5")
    assert cached() == [True, False] and namespace not in plans[1].clean
    _sub(node, r"zone: zone-5", "zone: zone-4")
    assert cached() == [True] and decoded == []
    # a workload edit: its namespace is evaluated; its demands are the stored ones (a line
    # added), so no other's is decoded; one that changes them has every demand decoded
    workload_file = sorted((repo / "apps" / "team-0").glob("*.yaml"))[0]
    workload_file.write_text(workload_file.read_text() + "\n")
    assert cached() == [False] and decoded == []
    text = workload_file.read_text()
    changed = re.sub(r"replicas: \d+", "replicas: 97", text, count=1)
    if changed == text:  # (a kind without replicas: its GPU request instead)
        changed = re.sub(r"nvidia.com/gpu: \"?\d+\"?", "nvidia.com/gpu: 7", text, count=1)
    assert changed != text
    workload_file.write_text(changed)
    assert not any(cached()) and decoded  # (read twice when other outcomes move)


def test_a_custom_policy_keys_every_node_file_by_its_bytes(tmp_path):
    """A custom policy may read a node's tree, which no NodeLabels records: the partitions
    are keyed by every value then (`_reads_now`)."""
    from gpudrv_check.engine.cache.partition import OCCUPANCY_KIND
    from gpudrv_check.engine.cache.store import entry_fields

    root, cache = tmp_path / "repo", tmp_path / "cache"
    write(root, "nodes/a.yaml", NODE)
    write(root, "apps/d.yaml", _deployment("a"))
    write(root, "apps/e.yaml", _deployment("b"))

    def reads() -> object:
        out = run_main("check", str(root), "--fail-on", "never", "--cache-dir", str(cache))
        assert out.returncode == 0, out.stderr
        (entry,) = cache.glob(f"{OCCUPANCY_KIND}-*.bin")
        return entry_fields(entry.read_bytes())[2][4]

    assert isinstance(reads(), tuple)
    write(root, "policies/p.yaml", POLICY)
    write(root, ".gpudrv-check.yaml", "policies: [policies/p.yaml]\n")
    assert reads() is None


def test_what_the_stored_simulation_reads_of_the_labels_is_among_the_reads(tmp_path):
    """The simulation's inputs, stored with the partitions, read the labels (the nodes a
    workload can land on); with every rule that reads them off, the capacity model is first
    built when the run stores them, and what it read is among the reads kept (`merge` takes
    them after)."""
    from gpudrv_check.engine.cache.partition import OCCUPANCY_KIND
    from gpudrv_check.engine.cache.store import entry_fields

    root, cache = tmp_path / "repo", tmp_path / "cache"
    off = "{enabled: false}"
    disabled = ("GPU010", "GPU011", "GPU012", "GPU020", "GPU021", "GPU024")
    rules = "".join(f"  {r}: {off}\n" for r in disabled)
    write(root, ".gpudrv-check.yaml", "rules:\n" + rules)
    room = '  allocatable: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "8", pods: "110"}\n'
    untainted = NODE.split("spec:\n")[0]  # the workloads tolerate no taint
    node = untainted.replace("  labels:\n", "  labels:\n    pool: a\n") + "status:\n" + room
    write(root, "nodes/a.yaml", node)
    selecting = _deployment("a").replace(
        "    spec:\n", "    spec:\n      nodeSelector: {pool: a}\n", 1
    )
    write(root, "apps/d.yaml", selecting)
    write(root, "apps/e.yaml", _deployment("b"))
    out = run_main("check", str(root), "--fail-on", "never", "--cache-dir", str(cache))
    assert out.returncode == 0, out.stderr
    (entry,) = cache.glob(f"{OCCUPANCY_KIND}-*.bin")
    tables, by_namespace, _, _, reads = entry_fields(entry.read_bytes())[2]
    assert by_namespace["a"][1], "the workload's demand is stored"
    assert "pool" in reads


def _deployment(namespace: str) -> str:
    return (
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d, namespace: {namespace}}}\n"
        "spec:\n  replicas: 1\n  selector: {matchLabels: {app: d}}\n  template:\n"
        "    metadata: {labels: {app: d}}\n    spec:\n      containers:\n"
        "      - {name: c, image: i, resources: {limits: {nvidia.com/gpu: 1}}}\n"
    )


#: a policy reading a node label's value from the node's tree (tests/policies)
POLICY = """
id: ACME001
name: gpu-node-zone
severity: warning
message: GPU node {name} is in zone a
match:
  kinds: [Node]
assert:
  type: object
  properties:
    metadata:
      properties:
        labels:
          properties:
            topology.kubernetes.io/zone: {not: {const: zone-a}}
"""


# --- the premise: a label value no run reads changes no finding -------------------------------


def _flipped(value: str) -> str:
    """Another value, one any reader would notice."""
    return {"true": "false", "false": "true", "": "x"}.get(value, value + "-other")


def _findings(root: Path, monkeypatch, unread: frozenset[str] | None) -> tuple[list, object]:
    """(every finding of a check, the label keys read); with `unread` given, every string
    label value of a key outside it changed before any rule runs."""
    from gpudrv_check.core import label_reads
    from gpudrv_check.engine.run import evaluate, load
    from gpudrv_check.model import inventory
    from gpudrv_check.read.config import load_config

    if unread is not None:
        keep = unread

        def masked(plain: dict) -> label_reads.NodeLabels:
            return label_reads.NodeLabels(
                {
                    k: v if k in keep or not isinstance(v, str) else _flipped(v)
                    for k, v in plain.items()
                }
            )

        monkeypatch.setattr(inventory, "NodeLabels", masked)
    label_reads.reset()
    try:
        run = load(root, load_config(root), matrix_optional=True)
        evaluate(run)
    finally:
        monkeypatch.undo()
    records = [f.record() for f in (*run.findings, *run.suppressed)]
    return records, label_reads.snapshot()


def _repos(tmp_path: Path) -> list[Path]:
    out = []
    for i, path in enumerate(case_files()):
        root = tmp_path / f"case{i}"
        write_repo(read_case(path), root)
        out.append(root)
    out.extend(p for p in sorted((ROOT / "examples").iterdir()) if p.is_dir())
    out.append(generated_corpus(tmp_path / "generated", 10, 60))
    return out


@pytest.mark.slow
def test_changing_every_label_value_no_run_reads_changes_no_finding(tmp_path, monkeypatch):
    """Over every rule case, every example and a generated fleet: a check records the label
    keys whose values it reads; the same check with every other string label value changed
    (after validation: the values as the rules see them) finds exactly the same. The repos
    where a check reads every value (nothing to change) are counted, not skipped silently."""
    changed = everything = 0
    for root in _repos(tmp_path):
        found, read = _findings(root, monkeypatch, None)
        if read is None:
            everything += 1
            continue
        again, _ = _findings(root, monkeypatch, frozenset(read))
        assert again == found, root
        changed += 1
    # every repo but those defining a node twice (build_inventory compares the copies' labels
    # whole: the multi-cluster example)
    assert changed >= 70 and everything <= 2, (changed, everything)


def _rewrite_unread(root: Path, read: frozenset[str]) -> int:
    """Every string label value of a key outside `read`, in every file of Node objects alone,
    written again as another value on its own line (the positions as they were); how many."""
    import json

    from gpudrv_check.core.located import LMap

    count = 0
    for path in sorted(root.rglob("*.y*ml")):
        text = path.read_text()
        result = parse_manifest_bytes(path.name, text.encode())
        if node_view(result) is None:
            continue
        lines = text.split("\n")
        for m in result.manifests:
            labels = m.data.get("metadata", {}).get("labels")
            if labels.__class__ is not LMap:
                continue
            for key, value in labels.items():
                if key in read or value.__class__ is not str:
                    continue
                line, column = labels.kpos[key]
                written = lines[line - 1]
                head = written[: column - 1]
                if not re.fullmatch(r" *", head) or "#" in written:
                    continue  # not a block mapping line of its own: left as it is
                match = re.match(r'([^:\'"]+|"[^"]*"|\'[^\']*\'):[ ]+\S', written[column - 1 :])
                if match is None:
                    continue
                prefix = written[: column - 1 + match.end() - 1]
                lines[line - 1] = prefix + json.dumps(_flipped(value))
                count += 1
        path.write_text("\n".join(lines))
    return count


@pytest.mark.slow
def test_a_cached_run_after_rewriting_every_unread_label_value_says_what_a_fresh_run_says(
    tmp_path, monkeypatch
):
    """The premise end to end, through the files: over every rule case, a cached check, then
    every string label value no run read rewritten in the node files themselves, then a
    cached check again, which must say what a check without cache says (the partitions it
    took from the cache included)."""
    from gpudrv_check.core import label_reads

    planned = recording_plans(monkeypatch)
    reused = rewritten = 0
    for i, path in enumerate(case_files()):
        root, cache = tmp_path / f"case{i}", tmp_path / f"cache{i}"
        write_repo(read_case(path), root)
        args = ("check", str(root), "--fail-on", "never", "--format", "json")
        first = run_main(*args, "--cache-dir", str(cache))
        assert first.returncode == 0, first.stderr
        read = label_reads.snapshot()
        if read is None or not _rewrite_unread(root, frozenset(read)):
            continue
        rewritten += 1
        del planned[:]
        cached = run_main(*args, "--cache-dir", str(cache))
        fresh = run_main(*args, "--no-cache")
        assert cached.stdout == fresh.stdout, path
        if planned and planned[0].keys and len(planned[0].clean) == len(planned[0].keys):
            reused += 1
    assert rewritten >= 40 and reused >= 15, (rewritten, reused)


NOT_TAKEN = (False, None)


@pytest.mark.parametrize(
    ("clean", "replayed", "cluster", "before", "now", "kept"),
    [
        (set(), False, NOT_TAKEN, ("b",), ("a",), ("a",)),  # all made now: what this run read
        ({"ns"}, False, NOT_TAKEN, ("b",), ("a",), ("a", "b")),  # a partition taken: its too
        (set(), True, NOT_TAKEN, ("b",), ("a",), ("a", "b")),  # the simulation replayed
        (set(), False, (True, ("c",)), ("b",), ("a",), ("a", "c")),  # cluster findings taken
        (set(), False, (True, None), ("b",), ("a",), None),  # ...found under every value
        ({"ns"}, False, NOT_TAKEN, None, ("a",), None),  # taken under every value
        (set(), False, NOT_TAKEN, ("b",), None, None),  # this run read every value
    ],
)
def test_the_reads_kept_cover_what_the_run_took_without_reading(
    clean, replayed, cluster, before, now, kept, monkeypatch
):
    from types import SimpleNamespace

    from gpudrv_check.core import label_reads
    from gpudrv_check.engine.cache.partition import Plan, _reads_now

    monkeypatch.setattr(label_reads, "snapshot", lambda: now)
    taken, found_with = cluster
    plan_ = Plan(
        None, "n", clean=set(clean), reads=before, cluster_taken=taken, cluster_reads=found_with
    )
    run = SimpleNamespace(repo=SimpleNamespace(occupancy=SimpleNamespace(replayed=replayed)))
    assert _reads_now(run, plan_) == kept


def test_a_repo_without_partitions_takes_its_cluster_findings_next_run(tmp_path, monkeypatch):
    """The cluster-wide findings hold the label keys they were found with: a repo whose first
    run stores no partition (no simulation inputs, where the partitions' keys are kept) takes
    them on the next run (found by a review: they were looked for under every value and
    stored under what the run read, so never taken)."""
    calls = counting_rules(monkeypatch, "GPU001")
    root, cache = tmp_path / "repo", tmp_path / "cache"
    write(root, "support-matrix.csv", "driver_branch,kernel,os_tag\n")
    write(root, "nodes/a.yaml", NODE)
    args = ("check", str(root), "--fail-on", "never", "--cache-dir", str(cache))
    assert run_main(*args).returncode == 0
    assert calls["GPU001"] == 1
    write(root, "apps/d.yaml", _deployment("a"))  # a partition now; the shared files as they were
    assert run_main(*args).returncode == 0
    assert calls["GPU001"] == 1  # taken
