"""GPU020 (budget blocks drain), GPU024 (two PDBs) and GPU040 for PDB specs, end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write
from tests.upgrade.conftest import (
    anti_affinity,
    deployment,
    findings,
    gpu_cluster,
    located,
    messages,
    pdb,
    where,
)

SELECT = "  selector:\n    matchLabels:\n      app: trainer\n"


def repo(tmp_path: Path, budget: str, nodes: int = 4, workload: str | None = None) -> Path:
    gpu_cluster(tmp_path, nodes)
    write(tmp_path, "trainer.yaml", workload or deployment("trainer", 4))
    write(tmp_path, "pdb.yaml", pdb("trainer-pdb", budget))
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize(
    ("budget", "key", "numbers"),
    [
        ("  minAvailable: 4\n", "minAvailable", "minAvailable 4 of 4 pods → 0 disruptions allowed"),
        ("  minAvailable: 100%\n", "minAvailable", "minAvailable 100% of 4 replicas = 4 must"),
        ("  maxUnavailable: 0\n", "maxUnavailable", "maxUnavailable 0 of 4 replicas = 4 must"),
        ("  maxUnavailable: 0%\n", "maxUnavailable", "maxUnavailable 0% of 4 replicas"),
    ],
)
def test_gpu020_at_the_budget_key(tmp_path: Path, budget: str, key: str, numbers: str):
    root = repo(tmp_path, budget + SELECT)
    line, column = where(root, "pdb.yaml", key)
    assert located(root, "GPU020") == [("pdb.yaml", line, column, "error")]
    (message,) = messages(root, "GPU020")
    assert numbers in message
    assert (
        'HTTP 429 "Cannot evict pod as it would violate the pod\'s disruption budget."' in message
    )
    assert "gpu-0, gpu-1, gpu-2, gpu-3" in message


@pytest.mark.slow
@pytest.mark.parametrize(
    "budget",
    [
        "  minAvailable: 3\n",
        "  minAvailable: 75%\n",
        "  maxUnavailable: 1\n",
        "  maxUnavailable: 25%\n",
    ],
)
def test_one_disruption_clears_gpu020(tmp_path: Path, budget: str):
    root = repo(tmp_path, budget + SELECT)
    assert located(root, "GPU020") == []


def test_gpu020_fix_names_the_change(tmp_path: Path):
    root = repo(tmp_path, "  minAvailable: 4\n" + SELECT)
    (finding,) = [f for f in findings(root) if f["rule"] == "GPU020"]
    assert finding["hint"].startswith("Set minAvailable: 3: at full health that lets 1 pod be")
    assert finding["path"] == ["spec", "minAvailable"]


@pytest.mark.slow
def test_neither_field_set_sits_on_spec(tmp_path: Path):
    root = repo(tmp_path, SELECT)
    line, column = where(root, "pdb.yaml", "spec:")
    assert located(root, "GPU020") == [("pdb.yaml", line, column, "error")]
    assert (
        "no minAvailable or maxUnavailable → 0 disruptions allowed" in messages(root, "GPU020")[0]
    )


def test_percentage_over_job_pods_is_the_fail_safe(tmp_path: Path):
    job = (
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: nightly\n  namespace: ml\n"
        "spec:\n  parallelism: 3\n  template:\n    metadata:\n      labels:\n        app: trainer\n"
        "    spec:\n      restartPolicy: Never\n      containers:\n      - name: main\n"
        "        image: busybox\n"
    )
    root = repo(tmp_path, "  maxUnavailable: 1\n" + SELECT, workload=job)
    (message,) = messages(root, "GPU020")
    assert "Job nightly has no scale subresource" in message and "fail-safe" in message
    hint = [f for f in findings(root) if f["rule"] == "GPU020"][0]["hint"]
    assert "minAvailable: 2 (and remove maxUnavailable)" in hint


@pytest.mark.slow
def test_pending_replicas_are_not_healthy(tmp_path: Path):
    """4 replicas, one per node, 3 nodes: minAvailable 3 still leaves nothing to evict."""
    workload = deployment("trainer", 4, extra_spec=anti_affinity())
    root = repo(tmp_path, "  minAvailable: 3\n" + SELECT, nodes=3, workload=workload)
    (message,) = messages(root, "GPU020")
    assert "minAvailable 3 of 4 pods, 3 healthy → 0 disruptions allowed" in message
    assert "1 of 4 replicas of Deployment trainer can never be scheduled" in message
    assert located(root, "GPU021")[0][3] == "error"
    # with a fourth node the same budget leaves one disruption
    root4 = repo(tmp_path / "four", "  minAvailable: 3\n" + SELECT, nodes=4, workload=workload)
    assert located(root4, "GPU020") == []


def test_no_gpu020_when_the_pods_cannot_land_on_gpu_nodes(tmp_path: Path):
    pinned = deployment("trainer", 4, extra_spec="      nodeSelector:\n        pool: cpu\n")
    root = repo(tmp_path, "  minAvailable: 4\n" + SELECT, workload=pinned)
    write(
        root,
        "cpu.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: cpu-0\n  labels:\n    pool: cpu\n",
    )
    assert located(root, "GPU020") == []


def test_no_gpu020_for_daemonset_pods(tmp_path: Path):
    ds = (
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\n  namespace: ml\n"
        "spec:\n  selector:\n    matchLabels:\n      app: trainer\n  template:\n    metadata:\n"
        "      labels:\n        app: trainer\n    spec:\n      containers:\n      - name: a\n"
        "        image: busybox\n"
    )
    root = repo(tmp_path, "  minAvailable: 100%\n" + SELECT, workload=ds)
    assert located(root, "GPU020") == []  # drain --ignore-daemonsets never evicts them


@pytest.mark.slow
@pytest.mark.parametrize(
    ("namespace", "api", "selector", "covered"),
    [
        ("ml", "policy/v1", SELECT, True),
        ("other", "policy/v1", SELECT, False),
        ("ml", "policy/v1", "  selector: {}\n", True),  # policy/v1: {} covers the namespace
        ("ml", "policy/v1beta1", "  selector: {}\n", False),  # v1beta1: {} covers nothing
        ("ml", "policy/v1", "", False),  # no selector: covers nothing
        ("ml", "policy/v1", "  selector:\n    matchLabels:\n      app: db\n", False),
    ],
)
def test_coverage(tmp_path: Path, namespace: str, api: str, selector: str, covered: bool):
    gpu_cluster(tmp_path, 4)
    write(tmp_path, "trainer.yaml", deployment("trainer", 4))
    write(tmp_path, "pdb.yaml", pdb("p", "  minAvailable: 4\n" + selector, namespace, api))
    assert bool(located(tmp_path, "GPU020")) is covered


@pytest.mark.slow
def test_gpu024_two_pdbs(tmp_path: Path):
    root = repo(tmp_path, "  maxUnavailable: 1\n" + SELECT)
    write(root, "all.yaml", pdb("everything", "  maxUnavailable: 1\n  selector: {}\n"))
    line, column = where(root, "trainer.yaml", "labels:")
    assert located(root, "GPU024") == [("trainer.yaml", line, column, "error")]
    (message,) = messages(root, "GPU024")
    assert "ml/everything (all.yaml:7:3), ml/trainer-pdb (pdb.yaml:7:3)" in message
    assert (
        'HTTP 500 "This pod has more than one PodDisruptionBudget, which the eviction '
        'subresource does not support."'
    ) in message


@pytest.mark.slow
def test_gpu024_ignores_an_invalid_second_pdb(tmp_path: Path):
    root = repo(tmp_path, "  maxUnavailable: 1\n" + SELECT)
    write(root, "bad.yaml", pdb("bad", "  maxUnavailable: 150%\n  selector: {}\n"))
    assert located(root, "GPU024") == []
    assert [loc[:3] for loc in located(root, "GPU040")] == [
        ("bad.yaml", *where(root, "bad.yaml", "maxUnavailable"))
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("body", "needle", "text"),
    [
        (
            "  minAvailable: 1\n  maxUnavailable: 1\n" + SELECT,
            "maxUnavailable",
            "cannot be both set",
        ),
        ("  maxUnavailable: 1\n  minAvailable: 1\n" + SELECT, "minAvailable", "cannot be both set"),
        ("  minAvailable: -1\n" + SELECT, "minAvailable", "must be greater than or equal to 0"),
        ("  minAvailable: 1.5\n" + SELECT, "minAvailable", "not number 1.5"),
        (
            "  minAvailable: 1\n  selector:\n    matchExpressions:\n    - key: app\n"
            "      operator: In\n",
            "key: app",
            "spec.selector.matchExpressions[0].values: must be specified",
        ),
    ],
)
def test_gpu040_for_invalid_pdb_specs(tmp_path: Path, body: str, needle: str, text: str):
    root = repo(tmp_path, body)
    line, column = where(root, "pdb.yaml", needle)
    found = [f for f in findings(root) if f["rule"] == "GPU040"]
    assert [(f["location"]["line"], f["location"]["column"]) for f in found] == [(line, column)]
    assert text in found[0]["message"]
    assert located(root, "GPU020") == []  # an invalid PDB is not in force


@pytest.mark.slow
def test_gpu024_names_five_budgets_and_counts_the_rest(tmp_path: Path):
    """Seven budgets over one workload's pods: five named with their places, two counted, and
    the message whole (listing every budget of a label a hundred select overran MAX_MESSAGE
    and cut off what the eviction API does); rules/wording.py `names`."""
    root = repo(tmp_path, "  maxUnavailable: 1\n" + SELECT)
    for i in range(6):
        write(root, f"all-{i}.yaml", pdb(f"all-{i}", "  maxUnavailable: 1\n  selector: {}\n"))
    (message,) = messages(root, "GPU024")
    assert "covered by 7 PodDisruptionBudgets (" in message
    assert message.count(".yaml:7:3)") == 5
    assert "ml/all-0 (all-0.yaml:7:3), ml/all-1 (all-1.yaml:7:3)" in message
    assert "(all-4.yaml:7:3) and 2 more): the eviction API refuses them" in message
    assert message.endswith("so no drain of a node running them can finish")


@pytest.mark.slow
def test_gpu020_describes_five_pending_workloads_and_counts_the_rest(tmp_path: Path):
    """Eight workloads under one budget whose pods repel each other on three nodes: the note
    describes five and counts three, and the message is whole (GPU020 `pending_note`)."""
    gpu_cluster(tmp_path, 3)
    for i in range(8):
        write(
            tmp_path,
            f"w{i}.yaml",
            deployment(f"w{i}", 4, labels="app: trainer", extra_spec=anti_affinity()),
        )
    write(tmp_path, "pdb.yaml", pdb("trainer-pdb", "  minAvailable: 100%\n" + SELECT))
    (message,) = messages(tmp_path, "GPU020")
    note = message.split(". Note: ", 1)[1]
    assert note.count(" of 4 ") == 5
    assert note.endswith("; and 3 more covered workloads have pods that can never be healthy")
    assert not message.endswith("…")


def test_gpu020_gpu_node_names_are_the_sorted_union_of_the_members_sets():
    """GPU020 `_GpuNodeNames` (bit masks over the nodes' sorted names) names what sorting the
    union of the drained members' GPU-node sets names: the first five and a count."""
    import random
    from types import SimpleNamespace

    from gpudrv_check.rules.GPU020_pdb_blocks_drain.rule import _GpuNodeNames
    from gpudrv_check.rules.wording import names

    rng = random.Random(20)
    nodes = [SimpleNamespace(name=f"gpu-{i}") for i in range(40)]
    sets = [frozenset(rng.sample([n.name for n in nodes], rng.randint(1, 12))) for _ in range(6)]
    found = _GpuNodeNames(nodes)
    for _ in range(60):
        members = [
            SimpleNamespace(gpu_names=rng.choice([*sets, frozenset()]))
            for _ in range(rng.randint(0, 4))
        ]
        union = sorted(frozenset().union(*(m.gpu_names for m in members)))
        assert found.text(members) == names(union)  # type: ignore[arg-type]
    assert found.text([]) == ""
