"""The smallest PDB change that lets N covered pods be evicted (k8s/disruption.budget_change)."""

from __future__ import annotations

import pytest

from gpudrv_check.k8s.disruption import PodGroup, budget_change, disruption_budget


def pdb(**spec: object) -> dict[str, object]:
    spec.setdefault("selector", {"matchLabels": {"app": "trainer"}})
    return {"metadata": {"name": "p", "namespace": "ml"}, "spec": spec}


def deploy(replicas: int, ready: int | None = None) -> PodGroup:
    return PodGroup("Deployment", "trainer", replicas, replicas, ready)


# (id, pdb, groups, wanted, (field, value, allowed after, drop) or None)
ROWS = [
    ("lab: minAvailable 4 of 4", pdb(minAvailable=4), [deploy(4)], 1, ("minAvailable", 3, 1, None)),
    ("minAvailable above pods", pdb(minAvailable=6), [deploy(4)], 1, ("minAvailable", 3, 1, None)),
    ("two pods pinned", pdb(minAvailable=4), [deploy(4)], 2, ("minAvailable", 2, 2, None)),
    (
        "3 of 4 healthy (one Pending by anti-affinity)",
        pdb(minAvailable=3),
        [deploy(4, ready=3)],
        1,
        ("minAvailable", 2, 1, None),
    ),
    (
        "minAvailable 100% of 4 -> 75%",
        pdb(minAvailable="100%"),
        [deploy(4)],
        1,
        ("minAvailable", "75%", 1, None),
    ),
    (
        "minAvailable 100% of 3 -> 66% (ceil 1.98 = 2)",
        pdb(minAvailable="100%"),
        [deploy(3)],
        1,
        ("minAvailable", "66%", 1, None),
    ),
    (
        "maxUnavailable 0 -> 1",
        pdb(maxUnavailable=0),
        [deploy(4)],
        1,
        ("maxUnavailable", 1, 1, None),
    ),
    (
        "maxUnavailable 0% of 4 -> 1% (ceil 0.04 = 1)",
        pdb(maxUnavailable="0%"),
        [deploy(4)],
        1,
        ("maxUnavailable", "1%", 1, None),
    ),
    (
        "maxUnavailable 0% of 8, two wanted -> 13% (ceil 1.04 = 2)",
        pdb(maxUnavailable="0%"),
        [deploy(8)],
        2,
        ("maxUnavailable", "13%", 2, None),
    ),
    (
        "maxUnavailable over Job pods: fail-safe -> integer minAvailable",
        pdb(maxUnavailable=1),
        [PodGroup("Job", "nightly", None, 3)],
        1,
        ("minAvailable", 2, 1, "maxUnavailable"),
    ),
    (
        "percentage over bare pods -> integer minAvailable",
        pdb(minAvailable="50%"),
        [PodGroup("", "", None, 2)],
        1,
        ("minAvailable", 1, 1, None),
    ),
    (
        "neither field set -> integer minAvailable",
        pdb(),
        [deploy(4)],
        1,
        ("minAvailable", 3, 1, None),
    ),
    ("no healthy pod: nothing to evict", pdb(minAvailable=1), [deploy(2, ready=0)], 1, None),
    ("fewer healthy pods than wanted", pdb(minAvailable=1), [deploy(2)], 3, None),
    ("invalid spec", pdb(minAvailable=1, maxUnavailable=1), [deploy(4)], 1, None),
]


@pytest.mark.parametrize(
    ("pdb_obj", "groups", "wanted", "expected"),
    [row[1:] for row in ROWS],
    ids=[row[0] for row in ROWS],
)
def test_budget_change(pdb_obj, groups, wanted, expected) -> None:
    budget = disruption_budget(pdb_obj, groups)
    change = budget_change(pdb_obj, budget, wanted)
    if expected is None:
        assert change is None
        return
    assert change is not None
    assert (change.field, change.value, change.allowed, change.drop) == expected
    # applying the change really allows what it claims
    spec = {k: v for k, v in pdb_obj["spec"].items() if k not in ("minAvailable", "maxUnavailable")}
    spec[change.field] = change.value
    after = disruption_budget({**pdb_obj, "spec": spec}, groups)
    assert after.disruptions_allowed == change.allowed >= wanted


def test_describe() -> None:
    budget = disruption_budget(pdb(minAvailable=4), [deploy(4)])
    assert budget_change(pdb(minAvailable=4), budget).describe() == "minAvailable: 3"
    job = [PodGroup("Job", "nightly", None, 3)]
    spec = pdb(maxUnavailable=1)
    change = budget_change(spec, disruption_budget(spec, job))
    assert change.describe() == "minAvailable: 2 (and remove maxUnavailable)"
