"""Required pod anti-affinity over a workload's own pods when some eligible nodes lack the
term's topologyKey: the capacity simulation (model/occupancy.py), the scheduler's message and
GPU021, against kube-scheduler.

Each row names the upstream file and function whose behaviour it expects:

- pkg/scheduler/framework/plugins/interpodaffinity/filtering.go: ``topologyToMatchedTermCount
  .update`` counts a pod a term selects under (key, value) only when its node carries the key,
  and ``satisfyPodAntiAffinity`` refuses a node only through a key it carries: a node without
  the key takes any number of the pods as far as that term goes; the pods on the other nodes
  take one domain each. ``Filter`` fails such a node Unschedulable with
  ``ErrReasonAntiAffinityRulesNotMatch`` ("node(s) didn't match pod anti-affinity rules");
- pkg/scheduler/apis/config/v1/default_plugins.go ``getDefaultPlugins``: NodeResourcesFit, then
  PodTopologySpread, then InterPodAffinity; the framework reports the first filter failing on a
  node (framework/runtime ``RunFilterPlugins``);
- pkg/scheduler/framework/plugins/noderesources/fit.go ``fitsRequest`` ("Insufficient
  nvidia.com/gpu"); pkg/scheduler/framework/plugins/podtopologyspread/filtering.go ``Filter``
  (the skew reason);
- pkg/scheduler/framework/types.go ``FitError.Error`` (the histogram, sorted as strings) and the
  DefaultPreemption PostFilter (pkg/scheduler/framework/preemption ``SelectVictimsOnNode``:
  "No preemption victims found for incoming pod" on each Unschedulable node, every pod of a
  repo having the same priority), after DynamicResources' "no new claims to deallocate".
"""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest

from gpudrv_check.core.finding import Finding, Severity
from gpudrv_check.engine.run import check
from gpudrv_check.model.occupancy import (
    REASON_ANTI_AFFINITY,
    Occupancy,
    anti_affinity_refusals,
    decode_inputs,
)
from gpudrv_check.read.config import Config
from tests.conftest import MATRIX, run_main, write

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
ANTI = REASON_ANTI_AFFINITY
SPREAD = "node(s) didn't match pod topology spread constraints"
GPU = "Insufficient nvidia.com/gpu"


def node(name: str, zone: str | None = None, gpus: int = 1) -> str:
    labels = f"{{{HOST}: {name}, nvidia.com/gpu.present: 'true'"
    labels += f", {ZONE}: {zone}}}" if zone else "}"
    return (
        f"- apiVersion: v1\n  kind: Node\n  metadata:\n    name: {name}\n"
        f"    labels: {labels}\n"
        f"  status:\n    allocatable: {{nvidia.com/gpu: '{gpus}', pods: '110'}}\n"
    )


def workload(
    count: int,
    keys: tuple[str, ...] = (ZONE,),
    kind: str = "Deployment",
    spread: str = "",
    name: str = "w",
    namespace: str = "ml",
) -> str:
    """`count` pods requesting one GPU each, one required self anti-affinity term per key."""
    terms = "".join(
        f"    - labelSelector: {{matchLabels: {{app: {name}}}}}\n      topologyKey: {key}\n"
        for key in keys
    )
    spec = (
        ("restartPolicy: Never\n" if kind == "Job" else "")
        + (f"topologySpreadConstraints: {spread}\n" if spread else "")
        + "containers:\n- name: main\n  image: registry.example/app:1.0\n"
        + "  resources: {limits: {nvidia.com/gpu: 1}}\n"
        + (
            "affinity:\n  podAntiAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n"
            + terms
            if keys
            else ""
        )
    )
    head = f"metadata: {{name: {name}, namespace: {namespace}}}\nspec:\n"
    if kind == "Job":
        head = f"apiVersion: batch/v1\nkind: Job\n{head}  parallelism: {count}\n"
    else:
        head = f"apiVersion: apps/v1\nkind: {kind}\n{head}  replicas: {count}\n"
        head += f"  selector: {{matchLabels: {{app: {name}}}}}\n"
    template = f"metadata: {{labels: {{app: {name}}}}}\nspec:\n" + textwrap.indent(spec, "  ")
    return head + "  template:\n" + textwrap.indent(template, "    ")


def simulate(root: Path, nodes: list[str], text: str):
    write(root, "support-matrix.csv", MATRIX)
    (root / "nodes.yaml").write_text("apiVersion: v1\nkind: List\nitems:\n" + "".join(nodes))
    (root / "w.yaml").write_text(text)
    run = check(root, Config(matrix=None))
    (w,) = run.repo.workloads
    record = run.repo.occupancy.replicas(w)
    assert record is not None
    return run, record


def findings(run, rule: str) -> list[Finding]:
    return [f for f in run.findings if f.rule == rule]


def message(nodes: int, reasons: str, victims: int) -> str:
    """The scheduler's message with every Unschedulable node a preemption candidate."""
    return (
        f"0/{nodes} nodes are available: {reasons}. no new claims to deallocate, preemption: "
        f"0/{nodes} nodes are available: {victims} No preemption victims found for incoming pod."
    )


MIXED = [node("a1", "za"), node("a2", "za"), node("u1")]
HOST_SPREAD = (
    f"[{{maxSkew: 1, topologyKey: {HOST}, whenUnsatisfiable: DoNotSchedule, "
    "labelSelector: {matchLabels: {app: w}}}]"
)

# (id, nodes, workload, nodes the pods take (None: Pending), the message, GPU021, GPU010)
ROWS = [
    # filtering.go update + satisfyPodAntiAffinity: za takes one pod, u1 (no zone) one as its
    # GPU allows; the third finds a1 and u1 full (fit.go fitsRequest, before InterPodAffinity)
    # and a2 refused by the term (ErrReasonAntiAffinityRulesNotMatch): the review's case
    (
        "one zone and a node without the key, 3 replicas",
        MIXED,
        workload(3),
        ["a1", "u1", None],
        message(3, f"1 {ANTI}, 2 {GPU}", 3),
        Severity.ERROR,
        True,
    ),
    # satisfyPodAntiAffinity: u1 lacks the key, so the term never refuses it: it takes every
    # pod its 4 GPUs hold
    (
        "the node without the key has room for the rest",
        [node("a1", "za"), node("a2", "za"), node("u1", gpus=4)],
        workload(4),
        ["a1", "u1", "u1", "u1"],
        "",
        None,
        False,
    ),
    # ... and once its GPUs are taken, the next pod reads what FitError.Error counts
    (
        "the node without the key fills up",
        [node("a1", "za"), node("a2", "za"), node("u1", gpus=2)],
        workload(4),
        ["a1", "u1", "u1", None],
        message(3, f"1 {ANTI}, 2 {GPU}", 3),
        Severity.ERROR,
        True,
    ),
    # update: one pod per zone (za, zb), one per node without the key as its room allows
    (
        "two zones and two nodes without the key",
        [node("a1", "za"), node("a2", "za"), node("b1", "zb"), node("u1"), node("u2")],
        workload(5),
        ["a1", "b1", "u1", "u2", None],
        message(5, f"1 {ANTI}, 4 {GPU}", 5),
        Severity.ERROR,
        True,
    ),
    # fitsRequest before InterPodAffinity: a2 has no GPU at all, so no node is refused by the
    # term: room alone keeps the pod Pending (GPU010's), the domains do not bind. a2's request
    # exceeds its allocatable: unresolvable since 1.34 (fit.go, PR 131345), so preemption
    # reads "not helpful" there (the histogram sorted as strings: FitError.Error)
    (
        "room alone keeps the pod Pending",
        [node("a1", "za"), node("a2", "za", gpus=0), node("u1")],
        workload(3),
        ["a1", "u1", None],
        f"0/3 nodes are available: 3 {GPU}. no new claims to deallocate, preemption: 0/3 nodes "
        "are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims "
        "found for incoming pod.",
        None,
        True,
    ),
    # no node carries the key: the term refuses nothing (satisfyPodAntiAffinity)
    (
        "no node carries the key",
        [node("u1"), node("u2")],
        workload(3),
        ["u1", "u2", None],
        message(2, f"2 {GPU}", 2),
        None,
        True,
    ),
    # two terms: every node carries the hostname, so u1 and u2 take one pod each (their own
    # pair), za one (satisfyPodAntiAffinity checks every term); the fourth pod finds every node
    # refused with room left: the anti-affinity alone (GPU021's, not GPU010's)
    (
        "hostname and zone terms",
        [node("a1", "za", 2), node("a2", "za", 2), node("u1", gpus=2), node("u2", gpus=2)],
        workload(4, (HOST, ZONE)),
        ["a1", "u1", "u2", None],
        message(4, f"4 {ANTI}", 4),
        Severity.ERROR,
        False,
    ),
    # default_plugins.go: PodTopologySpread before InterPodAffinity. a2 (za held) may never
    # take a pod, so the hostname skew's global minimum stays 0 (podtopologyspread
    # filtering.go Filter): a1, u1, u2 hold one each and refuse a fourth for the skew, which
    # the filter before InterPodAffinity reports (a1 fails both)
    (
        "topology spread is checked before the anti-affinity",
        [node("a1", "za", 4), node("a2", "za", 4), node("u1", gpus=4), node("u2", gpus=4)],
        workload(4, spread=HOST_SPREAD),
        ["a1", "u1", "u2", None],
        message(4, f"1 {ANTI}, 3 {SPREAD}", 4),
        Severity.ERROR,
        False,
    ),
    # every eligible node carries the key: one pod per zone, as before (the static GPU021)
    (
        "every node carries the key",
        [node("a1", "za"), node("a2", "za"), node("b1", "zb")],
        workload(3),
        ["a1", "b1", None],
        message(3, f"1 {ANTI}, 2 {GPU}", 3),
        Severity.ERROR,
        True,
    ),
]


@pytest.mark.parametrize(
    ("nodes", "text", "taken", "said", "gpu021", "gpu010"),
    [row[1:] for row in ROWS],
    ids=[row[0] for row in ROWS],
)
def test_pods_placed_message_and_findings(
    tmp_path: Path,
    nodes: list[str],
    text: str,
    taken: list[str | None],
    said: str,
    gpu021: Severity | None,
    gpu010: bool,
) -> None:
    run, record = simulate(tmp_path, nodes, text)
    assert record.nodes == taken
    assert record.message == said
    assert [f.severity for f in findings(run, "GPU021")] == ([gpu021] if gpu021 else [])
    assert bool(findings(run, "GPU010")) is gpu010


def test_gpu021_words_the_nodes_without_the_key(tmp_path: Path) -> None:
    """The review's case: GPU021 at the term's topologyKey, naming the domain and the node
    without the key, and the replicas that can run."""
    run, _ = simulate(tmp_path, MIXED, workload(3))
    (finding,) = findings(run, "GPU021")
    assert finding.message == (
        f"Deployment w asks for 3 replicas, but its required pod anti-affinity on {ZONE} "
        f"allows one per {ZONE} domain and it can land on only 1 eligible {ZONE} domain "
        f"(za: a1, a2), besides 1 node without {ZONE} (u1) that takes no more of them: "
        "1 replica stays Pending already"
    )
    assert finding.hint is not None and finding.hint.startswith("Lower replicas to 2,")
    lines = (tmp_path / "w.yaml").read_text().splitlines()
    (line,) = [i + 1 for i, t in enumerate(lines) if t.strip() == f"topologyKey: {ZONE}"]
    assert (finding.location.file, finding.location.line) == ("w.yaml", line)


def test_gpu021_speaks_of_a_jobs_parallelism(tmp_path: Path) -> None:
    """A Job's pods side by side are its parallelism (pkg/controller/job ``manageJob``); the
    same filtering.go ``satisfyPodAntiAffinity`` keeps the third one Pending."""
    run, record = simulate(tmp_path, MIXED, workload(3, kind="Job"))
    assert record.nodes == ["a1", "u1", None]
    (finding,) = findings(run, "GPU021")
    assert finding.message.startswith("Job w runs 3 pods at once, but its required pod")
    assert finding.message.endswith("1 pod stays Pending already")
    assert finding.hint is not None and finding.hint.startswith("Lower parallelism to 2,")


def test_no_drain_warning_while_nodes_without_the_key_take_the_pods(tmp_path: Path) -> None:
    """Two pods on a1 (za) and u1: a drained pod may move to u1 (no pair of the term there,
    satisfyPodAntiAffinity), so the no-spare-domain warning is not given."""
    nodes = [node("a1", "za"), node("u1", gpus=2)]
    run, record = simulate(tmp_path, nodes, workload(2))
    assert record.nodes == ["a1", "u1"]
    assert findings(run, "GPU021") == []


def _expected_running(caps: list[tuple[str | None, int]], replicas: int) -> int:
    """filtering.go `satisfyPodAntiAffinity` with one zone term, whatever node the scheduler
    scores first: a node without the key takes as many pods as its GPUs, each zone one pod
    if some node of it has a GPU; so this many run, in any order of choice."""
    free = sum(gpus for zone, gpus in caps if zone is None)
    zones = {zone for zone, gpus in caps if zone is not None and gpus > 0}
    return min(replicas, free + len(zones))


@pytest.mark.parametrize("seed", range(20))
def test_how_many_run_is_what_any_scheduling_order_gives(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    caps = [(rng.choice((None, "za", "zb", "zc")), rng.randint(0, 3)) for _ in range(5)]
    if all(gpus == 0 for _, gpus in caps):
        caps[0] = (caps[0][0], 1)
    replicas = rng.randint(2, 9)
    nodes = [node(f"n{i}", zone, gpus) for i, (zone, gpus) in enumerate(caps)]
    _, record = simulate(tmp_path, nodes, workload(replicas))
    assert record.placed == _expected_running(caps, replicas), caps
    zone_of = {f"n{i}": zone for i, (zone, _) in enumerate(caps)}
    zoned = [zone_of[n] for n in record.nodes if n is not None and zone_of[n] is not None]
    assert len(zoned) == len(set(zoned))  # never two pods in one zone


@pytest.mark.parametrize(
    ("said", "refused"),
    [
        # types.go FitError.Error: "<count> <reason>", sorted as strings, joined by ", "
        (message(3, f"1 {ANTI}, 2 {GPU}", 3), 1),
        (message(12, f"10 {ANTI}, 2 {GPU}", 12), 10),
        (message(4, f"4 {ANTI}", 4), 4),
        (message(3, f"3 {GPU}", 3), 0),
        ("", 0),
    ],
)
def test_refusals_read_from_the_message(said: str, refused: int) -> None:
    assert anti_affinity_refusals(said) == refused


def test_stored_inputs_keep_the_nodes_without_the_key(tmp_path: Path) -> None:
    """The partition cache's record of the demand (model/occupancy.py `InputTables`): u1
    holds no pair, and the decoded demand places the pods as the fresh one did."""
    run, _ = simulate(tmp_path, MIXED, workload(3))
    occupancy = run.repo.occupancy
    (demand,) = occupancy.demands
    assert demand.domains == {"a1": ((ZONE, "za"),), "a2": ((ZONE, "za"),)}
    tables, records = occupancy.encoded()
    fresh = Occupancy.__new__(Occupancy)
    fresh._alloc = occupancy._alloc
    fresh._request_ids, fresh._requests = {}, []
    (decoded,) = decode_inputs((tables.stored(), records), fresh)
    assert decoded.domains == demand.domains


def test_a_cached_run_sees_another_namespace_fill_the_node_without_the_key(
    tmp_path: Path,
) -> None:
    """A pod of another namespace, placed first (file order), takes u1's GPU: the mixed
    workload's second replica then finds za held and u1 full (satisfyPodAntiAffinity,
    fitsRequest); the cached run, which took the mixed workload's namespace from the cache,
    says what a run without the cache says."""
    root, cache = tmp_path / "repo", tmp_path / "cache"
    write(root, "support-matrix.csv", MATRIX)
    (root / "nodes.yaml").write_text("apiVersion: v1\nkind: List\nitems:\n" + "".join(MIXED))
    filler = workload(0, keys=(), name="f", namespace="a-first").replace(
        "containers:", f"nodeSelector: {{{HOST}: u1}}\n      containers:"
    )
    write(root, "a-first/f.yaml", filler)
    write(root, "z-last/w.yaml", workload(2, namespace="z-last"))

    def both() -> str:
        args = ("check", str(root), "--fail-on", "never", "--select", "GPU010,GPU021")
        cached = run_main(*args, "--cache-dir", str(cache))
        fresh = run_main(*args, "--no-cache")
        assert cached.returncode == 0, cached.stderr
        assert cached.stdout == fresh.stdout
        return cached.stdout

    assert "GPU021" not in both()  # a1 and u1 take the two replicas
    (root / "a-first" / "f.yaml").write_text(filler.replace("replicas: 0", "replicas: 1"))
    said = " ".join(both().split())
    assert "Deployment w asks for 2 replicas" in said
    assert "1 replica stays Pending already" in said
