"""Skimmed and unskimmed runs, cached and fresh runs, give the same bytes, for every rule.

The skim plan (what the reader leaves out) and the partition kinds (what the namespace cache
reuses) are derived from the rules' declared reads (rules/plan.py); if a declaration were
wrong, a rule would see less in one run than in another. Compared here: the JSON report of
`check` (every finding of every rule, suppressed ones too) with the reader's skim of today, with
no skim at all, with the derived plan, and with the partition cache cold, warm and after edits.
The heavy variant (a larger generated corpus) is marked slow.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpudrv_check.cli import main
from tests.conftest import EXAMPLES, write
from tests.rules.test_reads import generated_corpus

EXAMPLE_DIRS = sorted(p for p in EXAMPLES.iterdir() if p.is_dir())


def _report(root: Path, capsys, *args: str) -> str:
    capsys.readouterr()
    code = main(["check", str(root), "--format", "json", "--jobs", "1", *args])
    out = capsys.readouterr().out
    return f"{code}\n{out}"


def _skimmed_as(monkeypatch, variant: str) -> None:
    """The engine's plan (rules/plan.py `current_plan`, the derived one) swapped for another."""
    from gpudrv_check.core.reads import NOTHING_SKIPPED, SkimPlan
    from gpudrv_check.rules import plan
    from tests.rules.test_reads import BEFORE_CONTAINER, BEFORE_KINDS, BEFORE_NODE_STATUS

    if variant == "none":
        monkeypatch.setattr(plan, "current_plan", lambda: NOTHING_SKIPPED)
    elif variant == "before":
        before = SkimPlan(BEFORE_KINDS, BEFORE_NODE_STATUS, BEFORE_CONTAINER)
        monkeypatch.setattr(plan, "current_plan", lambda: before)


def _same_skimmed_or_not(root: Path, monkeypatch, capsys) -> str:
    today = _report(root, capsys, "--no-cache")
    for variant in ("none", "before"):
        with monkeypatch.context() as patch:
            _skimmed_as(patch, variant)
            assert _report(root, capsys, "--no-cache") == today, f"skim {variant}: {root.name}"
    return today


def _same_cached_or_fresh(root: Path, cache: Path, capsys) -> None:
    fresh = _report(root, capsys, "--no-cache")
    assert _report(root, capsys, "--cache-dir", str(cache)) == fresh  # cold
    assert _report(root, capsys, "--cache-dir", str(cache)) == fresh  # warm


def _edit_each_namespace_once(root: Path, cache: Path, capsys) -> None:
    """One file changed at a time, in turn in each folder holding workloads: the cached run
    (the other namespaces from the cache) says what a fresh run says."""
    folders: set[Path] = set()
    for path in sorted(root.rglob("*.yaml")):
        text = path.read_text()
        if "replicas: " not in text or path.parent in folders:
            continue
        folders.add(path.parent)
        path.write_text(text.replace("replicas: ", "replicas: 1", 1))
        assert _report(root, capsys, "--cache-dir", str(cache)) == _report(
            root, capsys, "--no-cache"
        ), f"after editing {path.relative_to(root)}"
        if len(folders) == 3:
            break


@pytest.mark.parametrize("example", EXAMPLE_DIRS, ids=lambda p: p.name)
def test_examples_same_bytes_skimmed_or_not_cached_or_fresh(
    example: Path, tmp_path: Path, monkeypatch, capsys
):
    root = tmp_path / example.name
    shutil.copytree(example, root)
    _same_skimmed_or_not(root, monkeypatch, capsys)
    _same_cached_or_fresh(root, tmp_path / "cache", capsys)
    _edit_each_namespace_once(root, tmp_path / "cache", capsys)


def _corpus_same_bytes(tmp_path: Path, monkeypatch, capsys, nodes: int, workloads: int) -> None:
    root = generated_corpus(tmp_path / "corpus", nodes=nodes, workloads=workloads)
    report = _same_skimmed_or_not(root, monkeypatch, capsys)
    assert '"rule": "GPU0' in report  # the corpus makes rules speak
    _same_cached_or_fresh(root, tmp_path / "cache", capsys)
    _edit_each_namespace_once(root, tmp_path / "cache", capsys)


def test_generated_corpus_same_bytes_skimmed_or_not_cached_or_fresh(
    tmp_path: Path, monkeypatch, capsys
):
    _corpus_same_bytes(tmp_path, monkeypatch, capsys, nodes=12, workloads=60)


@pytest.mark.slow
def test_larger_generated_corpus_same_bytes(tmp_path: Path, monkeypatch, capsys):
    _corpus_same_bytes(tmp_path, monkeypatch, capsys, nodes=200, workloads=1000)


def test_a_cluster_rule_reading_other_namespaces_survives_the_partition_cache(
    tmp_path: Path, capsys
):
    """GPU025 reads the Deployments of every namespace (a waitForCompletion selector over
    pods that never complete). Editing another namespace took team/ from the partition cache
    and hid its Deployment from GPU025: the finding vanished from the cached run. Its read is
    declared `scope: cluster` `when:` that selector is set, and such a run reads every
    namespace (engine/run.py `load`)."""
    node = (EXAMPLES / "lab" / "k8s" / "nodes.yaml").read_text()
    write(tmp_path, "nodes.yaml", node)
    shutil.copy(EXAMPLES / "lab" / "support-matrix.csv", tmp_path / "support-matrix.csv")
    write(
        tmp_path,
        "cp.yaml",
        """
        apiVersion: nvidia.com/v1
        kind: ClusterPolicy
        metadata: {name: cluster-policy}
        spec:
          driver:
            upgradePolicy:
              autoUpgrade: true
              podDeletion: {}
              waitForCompletion: {podSelector: app=web}
        """,
    )
    deployment = """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: {name}, namespace: {ns}}}
        spec:
          replicas: 1
          selector: {{matchLabels: {{app: {name}}}}}
          template:
            metadata: {{labels: {{app: {name}}}}}
            spec:
              containers:
              - name: main
                image: registry.example/app:1.0
                resources: {{limits: {{nvidia.com/gpu: 1}}}}
        """
    write(tmp_path, "team/web.yaml", deployment.format(name="web", ns="team"))
    write(tmp_path, "other/x.yaml", deployment.format(name="x", ns="other"))
    cache = tmp_path / ".cache-dir"
    first = _report(tmp_path, capsys, "--cache-dir", str(cache))
    assert "GPU025" in first
    other = tmp_path / "other" / "x.yaml"
    other.write_text(other.read_text().replace("replicas: 1", "replicas: 2"))
    cached = _report(tmp_path, capsys, "--cache-dir", str(cache))
    assert cached == _report(tmp_path, capsys, "--no-cache")
    assert "GPU025" in cached
