"""Capacity is shared by pod priority (model/occupancy.py): the PriorityClass `value` the
Priority admission plugin gives each pod (model/admission.py `pod_priority`) orders the pods
that take room, as kube-scheduler's queue pops them, and the Pending message still reads
"No preemption victims found for incoming pod" (no pod placed before it has a lower priority).

Upstream, per row:
- pkg/scheduler/framework/plugins/queuesort/priority_sort.go `PrioritySort.Less`: the higher
  `corev1helpers.PodPriority` first, then the earlier timestamp (here: file order);
- plugin/pkg/admission/priority/admission.go `admitPod`: the named class's value, with no name
  `getDefaultPriority` (the globalDefault class, else DefaultPriorityWhenNoDefaultClassExists,
  0), "no PriorityClass with name … was found" for a missing one, "the integer value of
  priority (…) must not be provided in pod spec" for a written `spec.priority` that differs;
  `validatePriorityClass`: "Only one default can exist" (a second globalDefault is refused);
- pkg/apis/scheduling/types.go SystemPriorityClasses: system-node-critical 2000001000,
  system-cluster-critical 2000000000, in every cluster; HighestUserDefinablePriority 1e9 and
  pkg/apis/scheduling/validation ValidatePriorityClass (a user class above it is refused);
- pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go
  `SelectVictimsOnNode`: "No preemption victims found for incoming pod" when no pod of the node
  has a lower priority; preemption.go `PodEligibleToPreemptOthers`: "not eligible due to
  preemptionPolicy=Never."; a DaemonSet pod of a lower priority is a victim like any pod, so a
  higher-priority workload takes room before it.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest

from gpudrv_check.engine.run import load
from gpudrv_check.model.occupancy import (
    Demand,
    InputsError,
    InputTables,
    Nodes,
    Occupancy,
    decode_inputs,
)
from gpudrv_check.read.config import Config
from tests.conftest import gpu_deployment, write
from tests.performance.test_incremental import GPU_NODE, _both, _edit, _gpu_deployment

NODE = """apiVersion: v1
kind: Node
metadata: {name: n0, labels: {kubernetes.io/hostname: n0, nvidia.com/gpu.present: "true"}}
status: {allocatable: {cpu: "16", pods: "110", nvidia.com/gpu: "2"}}
"""

NO_VICTIMS = (
    "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. no new claims to deallocate, "
    "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
)
NEVER = (
    "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. no new claims to deallocate, "
    "preemption: not eligible due to preemptionPolicy=Never."
)


def _class(name: str, value: object, default: bool = False, policy: str | None = None) -> str:
    out = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
    out += f"metadata: {{name: {name}}}\nvalue: {value}\n"
    out += "globalDefault: true\n" if default else ""
    out += f"preemptionPolicy: {policy}\n" if policy else ""
    return out


def _deploy(name: str, replicas: int, gpus: int, klass: str | None = None, extra: str = "") -> str:
    named = f"      priorityClassName: {klass}\n" if klass else ""
    return gpu_deployment(name, replicas, gpus, named + extra)


def _daemonset(name: str, gpus: int, klass: str | None = None) -> str:
    return _deploy(name, 1, gpus, klass).replace("kind: Deployment", "kind: DaemonSet")


def _outcomes(root: Path, files: dict[str, str]) -> dict[str, tuple]:
    """Per workload name: (the index of each Pending pod, the message)."""
    write(root, "nodes.yaml", NODE)
    for path, text in files.items():
        write(root, path, text)
    repo = load(root, Config(), matrix_override="none").repo
    occupancy = repo.occupancy
    out = {}
    for workload in repo.workloads:
        record = occupancy.replicas(workload)
        if record is not None:
            out[workload.name] = (tuple(record.pending), record.message)
    return out


TRAIN = _deploy("a-train", 2, 1, "training")  # first in file order, 2 single-GPU replicas
INFER = _deploy("b-infer", 1, 1, "inference")  # after it, one single-GPU replica
CLASSES = _class("training", 100) + "---\n" + _class("inference", 1000)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # priority_sort.go Less: inference (1000) pops before training (100) although written
        # after it; training's second replica finds the node full of pods of at least its
        # priority: SelectVictimsOnNode "No preemption victims found"
        (
            {"classes.yaml": CLASSES, "a.yaml": TRAIN, "b.yaml": INFER},
            {"a-train": ((1,), NO_VICTIMS), "b-infer": ((), "")},
        ),
        # one priority for both: Less falls back to the timestamp, file order
        (
            {
                "classes.yaml": CLASSES,
                "a.yaml": TRAIN,
                "b.yaml": INFER.replace("inference", "training"),
            },
            {"a-train": ((), ""), "b-infer": ((0,), NO_VICTIMS)},
        ),
        # admitPod/getDefaultPriority: a pod naming no class takes the globalDefault one's
        # value (1000 over training's 100)
        (
            {
                "classes.yaml": _class("training", 100) + "---\n" + _class("d", 1000, True),
                "a.yaml": TRAIN,
                "b.yaml": _deploy("b-infer", 1, 1),
            },
            {"a-train": ((1,), NO_VICTIMS), "b-infer": ((), "")},
        ),
        # no globalDefault: DefaultPriorityWhenNoDefaultClassExists, 0, below training's 100
        (
            {"classes.yaml": _class("training", 100), "a.yaml": _deploy("a-x", 1, 2)}
            | {"b.yaml": _deploy("b-train", 1, 1, "training")},
            {"a-x": ((0,), NO_VICTIMS), "b-train": ((), "")},
        ),
        # SystemPriorityClasses: system-cluster-critical exists in every cluster (the repo
        # holds no class at all), 2000000000 over the 0 of a pod naming none
        (
            {
                "a.yaml": _deploy("a-x", 1, 2),
                "b.yaml": _deploy("b-y", 1, 1, "system-cluster-critical"),
            },
            {"a-x": ((0,), NO_VICTIMS), "b-y": ((), "")},
        ),
        # admitPod: a class the repo does not hold may be the cluster's (else the pod is
        # refused): its priority is not known, so no workload is reordered (file order)
        (
            {"classes.yaml": CLASSES, "a.yaml": TRAIN, "b.yaml": INFER}
            | {"c.yaml": _deploy("c-z", 1, 1, "elsewhere")},
            {"a-train": ((), ""), "b-infer": ((0,), NO_VICTIMS), "c-z": ((0,), NO_VICTIMS)},
        ),
        # admitPod: a written spec.priority that differs from the class's value is forbidden
        # ("must not be provided in pod spec"): not known, file order
        (
            {"classes.yaml": CLASSES, "a.yaml": TRAIN}
            | {"b.yaml": _deploy("b-infer", 1, 1, "inference", "      priority: 5\n")},
            {"a-train": ((), ""), "b-infer": ((0,), NO_VICTIMS)},
        ),
        # ... and one equal to it is accepted: inference first
        (
            {"classes.yaml": CLASSES, "a.yaml": TRAIN}
            | {"b.yaml": _deploy("b-infer", 1, 1, "inference", "      priority: 1000\n")},
            {"a-train": ((1,), NO_VICTIMS), "b-infer": ((), "")},
        ),
        # ValidatePriorityClass refuses a value that is no int32, or a user value above
        # HighestUserDefinablePriority: no such class, priority not known, file order
        (
            {"classes.yaml": _class("training", 100) + "---\n" + _class("inference", '"high"')}
            | {"a.yaml": TRAIN, "b.yaml": INFER},
            {"a-train": ((), ""), "b-infer": ((0,), NO_VICTIMS)},
        ),
        (
            {"classes.yaml": _class("training", 100) + "---\n" + _class("inference", 1000000001)}
            | {"a.yaml": TRAIN, "b.yaml": INFER},
            {"a-train": ((), ""), "b-infer": ((0,), NO_VICTIMS)},
        ),
        # validatePriorityClass: a second globalDefault is refused, the first (file order)
        # stays the default: 50 for the pod naming none, below training's 100
        (
            {
                "classes.yaml": _class("training", 100)
                + "---\n"
                + _class("low", 50, True)
                + "---\n"
                + _class("high", 1000, True),
                "a.yaml": _deploy("a-x", 1, 2),
                "b.yaml": _deploy("b-train", 1, 1, "training"),
            },
            {"a-x": ((0,), NO_VICTIMS), "b-train": ((), "")},
        ),
        # a class written twice: the API server keeps the first (AlreadyExists; `value` is
        # immutable), 1000 here
        (
            {"classes.yaml": CLASSES + "---\n" + _class("inference", 1), "a.yaml": TRAIN}
            | {"b.yaml": INFER},
            {"a-train": ((1,), NO_VICTIMS), "b-infer": ((), "")},
        ),
        # PodEligibleToPreemptOthers: the class's preemptionPolicy Never words the message
        (
            {
                "classes.yaml": _class("training", 100, policy="Never")
                + "---\n"
                + _class("inference", 1000),
                "a.yaml": TRAIN,
                "b.yaml": INFER,
            },
            {"a-train": ((1,), NEVER), "b-infer": ((), "")},
        ),
    ],
)
def test_pods_take_room_by_priority(tmp_path: Path, files: dict, expected: dict):
    assert _outcomes(tmp_path, files) == expected


def test_a_higher_priority_workload_takes_room_before_a_daemonset(tmp_path: Path):
    # SelectVictimsOnNode: the DaemonSet's pod (priority 0) is a victim of the 1000 workload,
    # which therefore takes both GPUs; the DaemonSet pod finds none
    found = _outcomes(
        tmp_path,
        {
            "classes.yaml": _class("inference", 1000),
            "a.yaml": _daemonset("a-agent", 1),
            "b.yaml": _deploy("b-infer", 1, 2, "inference"),
        },
    )
    assert found == {"a-agent": ((0,), ""), "b-infer": ((), "")}


def test_a_daemonset_of_the_same_priority_is_still_placed_first(tmp_path: Path):
    # as without priorities: the DaemonSet's pod is on the node before the workloads
    found = _outcomes(
        tmp_path,
        {
            "classes.yaml": _class("inference", 1000),
            "a.yaml": _deploy("a-infer", 1, 2, "inference"),
            "b.yaml": _daemonset("b-agent", 1, "inference"),
        },
    )
    assert found == {"a-infer": ((0,), NO_VICTIMS), "b-agent": ((), "")}


def _demand(priority: int | None) -> Demand:
    requests = {"nvidia.com/gpu": Fraction(1)}
    nodes = Nodes(("n0",), Counter())
    return Demand(
        ("f", 0, -1), "k", False, False, 1, nodes, requests, None, None, "p#", 0, priority=priority
    )


def test_the_stored_record_carries_the_priority(tmp_path: Path):
    write(tmp_path, "nodes.yaml", NODE)
    write(tmp_path, "classes.yaml", CLASSES)
    write(tmp_path, "a.yaml", TRAIN)
    write(tmp_path, "b.yaml", INFER)
    repo = load(tmp_path, Config(), matrix_override="none").repo
    occupancy = repo.occupancy
    tables, records = occupancy.encoded()
    assert [r[12] for r in records] == [100, 1000]  # file order, each with its priority
    decoded = decode_inputs((tables.stored(), records), Occupancy(repo))
    assert [d.priority for d in decoded] == [100, 1000]
    # a priority that is not an int (or a bool) does not decode: the cache is not used
    for bad in ("100", True, 1.5):
        broken = [(*records[0][:12], bad, *records[0][13:])]
        with pytest.raises(InputsError):
            decode_inputs((tables.stored(), broken), Occupancy(repo))
    # a record of the layout before priorities (12 fields) is refused too
    with pytest.raises(InputsError):
        decode_inputs((tables.stored(), [records[0][:12]]), Occupancy(repo))


@pytest.mark.parametrize("priority", [0, -5, 2000001000, None])
def test_a_demand_encodes_its_priority(priority: int | None):
    record = InputTables().record(_demand(priority))
    assert len(record) == 13 and record[12] == priority  # spread (none here) would be 14th


def test_a_class_edit_in_one_namespace_reorders_capacity_with_another_cached(
    tmp_path: Path, clean_partitions: list[set[str]]
):
    """Two GPUs; team-a and team-b each one single-GPU replica, team-c one: team-c's stays
    Pending in file order. Once team-c names the high class it takes room first and team-b's
    replica stays Pending; team-a's outcome is unchanged and comes from the cache, with its
    stored priority ordered against the fresh ones as a full run orders them."""
    root, cache = tmp_path / "repo", tmp_path / "cache"
    root.mkdir()
    write(root, "nodes.yaml", GPU_NODE)
    write(root, "classes.yaml", _class("high", 1000))
    write(root, "team-a/a.yaml", _gpu_deployment("a", "team-a", 1))
    write(root, "team-b/b.yaml", _gpu_deployment("b", "team-b", 1))
    write(root, "team-c/c.yaml", _gpu_deployment("c", "team-c", 1))
    cold = _both(root, cache)
    assert cold[0] == cold[1]
    assert "Deployment team-c/c: 1 of 1 pods stay Pending" in " ".join(cold[0].split())
    _edit(root / "team-c" / "c.yaml", "    spec:\n", "    spec:\n      priorityClassName: high\n")
    cached, fresh = _both(root, cache)
    assert cached == fresh
    said = " ".join(cached.split())
    assert "Deployment team-b/b: 1 of 1 pods stay Pending" in said
    assert "team-c/c: 1 of 1 pods stay Pending" not in said
    assert clean_partitions[-1] == {"team-a"}  # team-a's demand decoded from the cache
    # the class's value below the 0 of the pods naming none: team-c's replica last again
    _edit(root / "classes.yaml", "value: 1000", "value: -10")
    cached, fresh = _both(root, cache)
    assert cached == fresh
    said = " ".join(cached.split())
    assert "Deployment team-c/c: 1 of 1 pods stay Pending" in said
    assert "team-b/b: 1 of 1 pods stay Pending" not in said
    # undone: file order again, from the cache as a full run says
    _edit(root / "classes.yaml", "value: -10", "value: 1000")
    _edit(root / "team-c" / "c.yaml", "      priorityClassName: high\n", "")
    cached, fresh = _both(root, cache)
    assert cached == fresh == cold[0]
