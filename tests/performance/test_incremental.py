"""The partition cache (incremental.py): after any edit, a cached run says exactly what a run
without the cache says, byte for byte, while re-reading only what the edit can affect."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpudrv_check.cache import Cache
from gpudrv_check.config import load_config
from gpudrv_check.incremental import plan, summarize
from gpudrv_check.load.manifests import ReadOptions, parse_manifest_bytes, read_repo
from gpudrv_check.source.tree import WorkingTree
from tests.conftest import run_cli, write

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus") / "repo"
    subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gen_corpus.py"), str(out)]
        + ["--nodes", "16", "--workloads", "150"],
        check=True,
        capture_output=True,
    )
    return out


@pytest.fixture
def repo(corpus: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    shutil.copytree(corpus, copy)
    return copy


def _both(root: Path, cache: Path, fmt: str = "text") -> tuple[str, str]:
    """(cached run, run without any cache): stdout of each."""
    args = ("check", str(root), "--fail-on", "never", "--format", fmt)
    cached = run_cli(*args, "--cache-dir", str(cache))
    fresh = run_cli(*args, "--no-cache")
    assert cached.returncode == 0, cached.stderr
    assert fresh.returncode == 0, fresh.stderr
    return cached.stdout, fresh.stdout


def _workload(root: Path, namespace: str) -> Path:
    for path in sorted((root / "apps" / namespace).glob("*.yaml")):
        return path
    raise AssertionError(f"no workload in {namespace}")


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def _replicas(root: Path) -> None:
    path = _workload(root, "team-0")
    text = path.read_text()
    path.write_text(re.sub(r"replicas: \d+", "replicas: 9", text, count=1))


def _pdb(root: Path) -> None:
    for path in sorted((root / "apps").rglob("*.yaml")):
        text = path.read_text()
        if "kind: PodDisruptionBudget" in text and "maxUnavailable: 1" in text:
            path.write_text(text.replace("maxUnavailable: 1", "maxUnavailable: 0", 1))
            return
    raise AssertionError("no PDB to edit")


def _node_label(root: Path) -> None:
    path = sorted((root / "inventory").rglob("*.yaml"))[0]
    text = path.read_text()
    path.write_text(re.sub(r"kernel-version.full: \S+", "kernel-version.full: 9.9.9-unbuilt", text))


def _delete(root: Path) -> None:
    _workload(root, "team-1").unlink()


def _new_namespace(root: Path) -> None:
    text = _workload(root, "team-2").read_text().replace("team-2", "brand-new")
    write(root, "apps/brand-new/extra.yaml", text)


def _into_daemonset_namespace(root: Path) -> None:
    path = _workload(root, "team-3")
    path.write_text(path.read_text().replace("namespace: team-3", "namespace: gpu-operator"))


def _exempt(root: Path) -> None:
    path = _workload(root, "team-4")
    text = path.read_text()
    path.write_text(
        text.replace(
            "metadata:\n",
            "metadata:\n  annotations:\n    gpudrv-check.io/ignore: GPU010,GPU011,GPU020  # t\n",
            1,
        )
    )


def _break_yaml(root: Path) -> None:
    path = _workload(root, "team-5")
    path.write_text(path.read_text() + "\n  broken: [\n")


def _config(root: Path) -> None:
    write(root, ".gpudrv-check.yaml", "rules:\n  GPU011:\n    severity: warning\n")


def _mixed_file(root: Path) -> None:
    a = _workload(root, "team-6").read_text()
    b = _workload(root, "team-7").read_text()
    write(root, "apps/mixed.yaml", a.rstrip("\n") + "\n---\n" + b)


EDITS = {
    "workload replicas": _replicas,
    "budget": _pdb,
    "node label (shared)": _node_label,
    "file deleted": _delete,
    "new namespace": _new_namespace,
    "moved into a DaemonSet namespace": _into_daemonset_namespace,
    "exemption annotation": _exempt,
    "broken YAML": _break_yaml,
    "config": _config,
    "file mixing namespaces": _mixed_file,
}


@pytest.mark.parametrize("edit", list(EDITS.values()), ids=list(EDITS))
def test_after_an_edit_the_cached_run_says_what_a_fresh_run_says(repo, tmp_path, edit):
    cache = tmp_path / "cache"
    cold, fresh = _both(repo, cache)
    assert cold == fresh
    edit(repo)
    after, fresh_after = _both(repo, cache)
    assert after == fresh_after
    assert after != cold or edit is _exempt  # the edit mattered (an exemption may hide nothing)
    # and the edit undone: back to the first answer, from the cache
    assert _both(repo, cache, "json")[0] == _both(repo, tmp_path / "other", "json")[0]


def test_two_edits_in_a_row_and_every_output_format(repo, tmp_path):
    cache = tmp_path / "cache"
    _both(repo, cache)
    for edit in (_replicas, _pdb, _exempt):
        edit(repo)
        for fmt in ("json", "sarif", "text"):
            cached, fresh = _both(repo, cache, fmt)
            assert cached == fresh, fmt


def _read(root: Path, cache: Path, context: str = "ctx"):
    config = load_config(root, None)
    source = WorkingTree(root)
    listing = source.list_manifests(config.exclude)
    options = ReadOptions(cache=Cache(cache), context=context)
    return read_repo(source, listing.files, config.max_file_bytes, options)


def test_only_the_edited_namespace_is_read_again(repo, tmp_path):
    cache = tmp_path / "cache"
    first = _read(repo, cache)
    assert not first.plan.clean  # nothing cached yet: every partition is evaluated
    namespaces = set(first.plan.partition_of.values())
    assert "team-0" in namespaces and "gpu-operator" not in namespaces  # DaemonSets: shared
    # store what a run would: every partition evaluated, no findings (enough for the plan)
    first.plan.cache.store(
        "partitions", first.plan.name, "", {ns: (k, [], []) for ns, k in first.plan.keys.items()}
    )
    _replicas(repo)
    second = _read(repo, cache)
    assert second.plan.clean == namespaces - {"team-0"}
    read = {f.rel for f in second.files}
    assert any(rel.startswith("apps/team-0/") for rel in read)
    assert not any(rel.startswith("apps/team-1/") for rel in read)
    assert any(rel.startswith("inventory/") for rel in read)  # shared files are always read
    # counted all the same
    assert second.file_count == first.file_count
    assert second.object_count == first.object_count
    # another context (arguments, config, matrix...) and every partition is evaluated again
    assert not _read(repo, cache, "other").plan.clean


def test_a_shared_edit_evaluates_every_partition(repo, tmp_path):
    cache = tmp_path / "cache"
    first = _read(repo, cache)
    first.plan.cache.store(
        "partitions", first.plan.name, "", {ns: (k, [], []) for ns, k in first.plan.keys.items()}
    )
    assert _read(repo, cache).plan.clean  # unchanged: all from the cache
    _node_label(repo)
    assert not _read(repo, cache).plan.clean


def test_partitions_follow_kinds_and_namespaces(tmp_path):
    def summary(text: str):
        return summarize(parse_manifest_bytes("x.yaml", text.encode()))

    deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: a}\n"
    pdb = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p}\n"
    ds = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x, namespace: b}\n"
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: a}\n"
    files = [
        ("deploy.yaml", "1", summary(deploy)),
        ("pdb-default.yaml", "2", summary(pdb)),
        ("ds.yaml", "3", summary(ds)),
        ("b-deploy.yaml", "4", summary(deploy.replace("namespace: a", "namespace: b"))),
        ("cm.yaml", "5", summary(cm)),
        ("mixed.yaml", "6", summary(deploy + "---\n" + pdb)),
        ("broken.yaml", "7", summary("kind: [\n")),
        ("error.yaml", "8", None),
    ]
    p = plan(Cache(tmp_path), "n", "ctx", files)
    assert p.partition_of == {"deploy.yaml": "a", "pdb-default.yaml": "default"}
