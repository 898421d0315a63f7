"""The partition cache with a kustomization's `namespace:` (read/kustomization.py
`applied_namespaces`): files are planned in the namespaces the run puts their objects in, so
a cached run says what a run without the cache says."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import write
from tests.performance.test_incremental import (
    JOB,
    PDB_ALL,
    _both,
    _deployment,
    _edit,
    _edit_other_namespace,
    _lab_nodes,
    _same_after,
)


def _repo(root: Path) -> None:
    root.mkdir()
    _lab_nodes(root)
    # a Deployment that names no namespace, built into team-a by its kustomization...
    write(root, "team-a/kustomization.yaml", "namespace: team-a\nresources: [web.yaml]\n")
    write(
        root, "team-a/web.yaml", _deployment("web", "team-a").replace("  namespace: team-a\n", "")
    )
    # ...and a budget that names team-a, in a file of team-a's partition
    write(root, "budgets/pdb.yaml", PDB_ALL.format(ns="team-a"))
    write(root, "team-c/job.yaml", JOB)


def test_a_budget_sees_a_workload_its_kustomization_puts_in_its_namespace(
    tmp_path,
    clean_partitions,
):
    root = tmp_path / "repo"
    _repo(root)
    _same_after(root, tmp_path / "cache", _edit_other_namespace)
    cached, fresh = _both(root, tmp_path / "cache" / "text", "concise")
    assert cached == fresh
    assert "budgets/pdb.yaml" in fresh and "GPU020" in fresh  # the budget covers team-a/web
    # the budget and the Deployment are one partition, taken from the cache as one
    assert {"team-a"} in clean_partitions
    # an edit of the Deployment is an edit of team-a: the budget's finding follows it
    _same_after(
        root,
        tmp_path / "cache",
        lambda r: _edit(r / "team-a" / "web.yaml", "replicas: 2", "replicas: 3"),
    )
    assert "of 3 replicas" in _both(root, tmp_path / "cache" / "text", "concise")[1]


def test_a_changed_kustomization_namespace_is_seen_by_a_cached_run(tmp_path):
    root = tmp_path / "repo"
    _repo(root)

    def move(repo: Path) -> None:
        _edit(repo / "team-a" / "kustomization.yaml", "namespace: team-a", "namespace: team-b")

    _same_after(root, tmp_path / "cache", move)
    cached, fresh = _both(root, tmp_path / "cache" / "text", "concise")
    assert cached == fresh and "GPU020" not in fresh  # the budget covers nothing now
    # and back, after an edit elsewhere was cached in between
    _same_after(root, tmp_path / "cache", _edit_other_namespace)
    _same_after(
        root,
        tmp_path / "cache",
        lambda r: _edit(r / "team-a" / "kustomization.yaml", "team-b", "team-a"),
    )
    cached, fresh = _both(root, tmp_path / "cache" / "text", "concise")
    assert cached == fresh and fresh.startswith("budgets/pdb.yaml:7:3: error GPU020")
