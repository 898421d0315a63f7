"""The caches for a git source (read/git.py: the index with `--staged`, the pre-commit hook's
source, and a revision with `--rev`): a file's digest is the object id git lists, so a run
the whole-result cache answers for reads no blob, and after a staged edit only what the edit
can affect is read again. Every cached run says what a run without the cache says, byte for
byte (tests/performance/test_incremental.py holds the same rule for the working tree)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpudrv_check.read.git import GitTree, IndexTree
from tests.conftest import generated_corpus, run_main
from tests.gitops.conftest import commit, git


@pytest.fixture
def corpus_repo(git_repo: Path) -> Path:
    """A generated GitOps repo (several namespaces, shared node files), committed."""
    generated_corpus(git_repo, 12, 90)
    commit(git_repo, "corpus")
    return git_repo


@pytest.fixture
def blob_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files a git source reads from the object store, one by one or in a batch (the
    index's own reads, which take loose objects without git, and a revision's)."""
    reads: list[str] = []
    for cls in (GitTree, IndexTree):
        real_blob, real_fetch = cls.__dict__["_blob"], cls.__dict__["_fetch"]

        def blob(self, rel, entry, real=real_blob):
            reads.append(rel)
            return real(self, rel, entry)

        def fetch(self, rels, real=real_fetch):
            reads.extend(rels)
            return real(self, rels)

        monkeypatch.setattr(cls, "_blob", blob)
        monkeypatch.setattr(cls, "_fetch", fetch)
    return reads


def _scalable(root: Path) -> list[Path]:
    """A workload file that writes a replica count, one per namespace, in namespace order."""
    found: dict[str, Path] = {}
    for path in sorted((root / "apps").rglob("*.yaml")):
        if path.parent.name not in found and re.search(r"replicas: \d+", path.read_text()):
            found[path.parent.name] = path
    assert len(found) >= 4, found
    return [found[name] for name in sorted(found)]


def _edit_replicas(path: Path, replicas: int) -> None:
    path.write_text(re.sub(r"replicas: \d+", f"replicas: {replicas}", path.read_text(), count=1))


def test_the_hook_reads_nothing_again_when_nothing_was_staged(corpus_repo, tmp_path, blob_reads):
    args = ("check", str(corpus_repo), "--staged", "--fail-on", "never")
    cached = (*args, "--cache-dir", str(tmp_path / "cache"))
    fresh = run_main(*args, "--no-cache").stdout
    assert run_main(*cached).stdout == fresh
    manifests = {p.relative_to(corpus_repo).as_posix() for p in corpus_repo.rglob("*.yaml")}
    assert manifests <= set(blob_reads)  # cold: every manifest
    blob_reads.clear()
    assert run_main(*cached).stdout == fresh
    assert not set(blob_reads) & manifests  # the result cache answered: no manifest read
    # an edit on disk that is not staged changes nothing the hook checks
    _edit_replicas(_scalable(corpus_repo)[1], 7)
    blob_reads.clear()
    assert run_main(*cached).stdout == fresh
    assert not set(blob_reads) & manifests


def _staged_edits(root: Path, cache: Path, edited: Path, reads: list[str]) -> list[set[str]]:
    """Two staged edits of `edited`, each followed by a cached hook run that must say what a
    run without cache says: per run, the manifest blobs it read (`reads`: blob_reads)."""
    args = ("check", str(root), "--staged", "--fail-on", "never")
    rel = edited.relative_to(root).as_posix()
    manifests = {p.relative_to(root).as_posix() for p in root.rglob("*.yaml")}
    read_per_run = []
    for replicas in (9, 3):
        _edit_replicas(edited, replicas)
        git(root, "add", rel)
        reads.clear()
        out = run_main(*args, "--cache-dir", str(cache)).stdout
        read_per_run.append(set(reads) & manifests)
        assert out == run_main(*args, "--no-cache").stdout
    return read_per_run


def test_a_staged_edit_reads_its_namespace_and_says_what_a_fresh_run_says(
    corpus_repo, tmp_path, blob_reads
):
    cache = tmp_path / "cache"
    run_main("check", str(corpus_repo), "--staged", "--fail-on", "never", "--cache-dir", str(cache))
    edited, clean = _scalable(corpus_repo)[:2]
    rel = edited.relative_to(corpus_repo).as_posix()
    clean_dir = clean.parent.relative_to(corpus_repo).as_posix() + "/"
    first, second = _staged_edits(corpus_repo, cache, edited, blob_reads)
    for read in (first, second):
        assert rel in read
        assert not any(r.startswith(clean_dir) for r in read)  # a clean namespace
    # the second edit: the shared files decode what the first one stored, unread
    assert second == {rel}


def test_the_index_and_the_working_tree_keep_their_own_results(corpus_repo, tmp_path, blob_reads):
    """The pre-commit hook (`--staged`) and a check of the files on disk alternate without
    displacing each other's whole result."""
    cache = ("--cache-dir", str(tmp_path / "cache"))
    staged = ("check", str(corpus_repo), "--staged", "--fail-on", "never", *cache)
    disk = ("check", str(corpus_repo), "--fail-on", "never", *cache)
    (corpus_repo / "apps" / "untracked.yaml").write_text("kind: Pod\nmetadata: [\n")  # on disk
    first_staged, first_disk = run_main(*staged).stdout, run_main(*disk).stdout
    assert first_staged != first_disk
    manifests = {p.relative_to(corpus_repo).as_posix() for p in corpus_repo.rglob("*.yaml")}
    blob_reads.clear()
    assert run_main(*staged).stdout == first_staged
    assert run_main(*disk).stdout == first_disk
    assert not set(blob_reads) & manifests  # the staged run was its result entry's


def test_a_revision_is_cached_by_its_object_ids(corpus_repo, tmp_path, blob_reads):
    first = git(corpus_repo, "rev-parse", "HEAD")
    _edit_replicas(_scalable(corpus_repo)[3], 13)
    second = commit(corpus_repo, "team-3 scaled")
    cache = ("--cache-dir", str(tmp_path / "cache"))
    for rev in (first, second, first):
        args = ("check", str(corpus_repo), "--rev", rev, "--fail-on", "never")
        assert run_main(*args, *cache).stdout == run_main(*args, "--no-cache").stdout
    manifests = {p.relative_to(corpus_repo).as_posix() for p in corpus_repo.rglob("*.yaml")}
    blob_reads.clear()
    args = ("check", str(corpus_repo), "--rev", first, "--fail-on", "never", *cache)
    run_main(*args)
    assert not set(blob_reads) & manifests  # the same revision again: its whole result


def test_worker_processes_name_files_by_the_digest_they_are_given(monkeypatch):
    """A git source's files are named by object id in the per-file cache: the parse in
    worker processes keeps the digest the reader passes (read/manifests.py _parse_chunk)."""
    from gpudrv_check.read import manifests
    from tests.conftest import BUILDER_DOC, gpu_node

    handed: list[int] = []
    real = manifests._share_out

    def share_out(pool, theirs, *args, **kwargs):
        handed.append(len(theirs))  # the chunks the worker processes parse
        return real(pool, theirs, *args, **kwargs)

    monkeypatch.setattr(manifests, "_share_out", share_out)

    count = manifests.SAMPLE_FILES + manifests.PARALLEL_MIN_FILES + 10
    todo = [
        (i, f"nodes/n{i:04d}.yaml", (gpu_node(f"node-{i}") + BUILDER_DOC).encode(), False)
        for i in range(count)
    ]
    digests = {i: f"git:{i:040x}" for i in range(count)}
    both = manifests._parse_all(todo, 2, lambda: None, digests=digests)
    assert handed and handed[0] > 0  # workers parsed some of them
    assert {i: r.digest for i, r in both.items()} == digests


def test_reading_a_kustomization_first_does_not_read_every_blob(corpus_repo, tmp_path, blob_reads):
    """read_repo reads the repo's kustomization files before the manifests (their patches
    are not checked alone): it tells a git source what it will read before that, or the first
    read would fetch every listed blob in one batch, cache or not."""
    (corpus_repo / "apps" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n"
    )
    commit(corpus_repo, "a kustomization")
    cache = tmp_path / "cache"
    run_main("check", str(corpus_repo), "--staged", "--fail-on", "never", "--cache-dir", str(cache))
    edited = _scalable(corpus_repo)[0]
    rel = edited.relative_to(corpus_repo).as_posix()
    second = _staged_edits(corpus_repo, cache, edited, blob_reads)[1]
    assert second == {rel, "apps/kustomization.yaml"}


@pytest.mark.parametrize("staged", [True, False], ids=["index", "working-tree"])
def test_a_spent_input_budget_replays_no_whole_result(corpus_repo, tmp_path, staged):
    """The whole-result key charges every listed file to `max_total_bytes`; the run does not
    charge Kustomize patches or policy files. When the key's budget is spent, the files the
    run reads are not all named by the key: such a run takes no whole result from the cache,
    and an edit of the last file is reported (found by review: a cached run replayed the
    output from before the edit)."""
    root = corpus_repo
    (root / "apps" / "team-0" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "patches:\n- path: big-patch.yaml\n"
    )
    (root / "apps" / "team-0" / "big-patch.yaml").write_text(
        "kind: ReplicaSet\n" + "# pad\n" * 3000
    )
    last = root / "zz" / "w.yaml"
    last.parent.mkdir()
    last.write_text(_scalable(root)[0].read_text().replace("namespace: ", "namespace: zz-", 1))
    total = sum(p.stat().st_size for p in root.rglob("*.yaml") if ".git" not in p.parts)
    (root / ".gpudrv-check.yaml").write_text(f"max_total_bytes: {total - 1}\n")
    commit(root, "a budget the patch spends")
    args = ("check", str(root), "--fail-on", "never", *(("--staged",) if staged else ()))
    cached = (*args, "--cache-dir", str(tmp_path / "cache"))
    assert run_main(*cached).stdout == run_main(*args, "--no-cache").stdout
    _edit_replicas(last, 5)
    git(root, "add", "zz/w.yaml")
    after = run_main(*args, "--no-cache").stdout
    assert run_main(*cached).stdout == after


FLUX_APPS = """apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  path: ./apps
  postBuild:
    substitute: {REPLICAS: "3", GPUS: "9"}
"""

PLACEHOLDER_DEPLOY = """apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: ml}}
spec:
  replicas: ${{REPLICAS}}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
      - name: c
        image: nvcr.io/nvidia/pytorch:24.07-py3
        resources: {{limits: {{nvidia.com/gpu: "${{GPUS}}"}}}}
"""


@pytest.mark.parametrize("staged", [True, False], ids=["index", "working-tree"])
def test_a_kustomization_no_listing_names_is_part_of_the_whole_result(git_repo, tmp_path, staged):
    """A Flux Kustomization's scope is the files its folder's kustomization lists
    (model/placeholders.py), and kustomize also reads a file named `Kustomization`, which is
    no manifest: the whole-result key does not name it. The source records what the run read
    outside the key (`watch`) and the entry holds only while each such file is as it was
    (found by review: an edit of that file replayed the output from before it)."""
    root = git_repo
    (root / "clusters").mkdir()
    (root / "clusters" / "apps.yaml").write_text(FLUX_APPS)
    (root / "apps").mkdir()
    for name in ("web", "other"):
        (root / "apps" / f"{name}.yaml").write_text(PLACEHOLDER_DEPLOY.format(name=name))
    (root / "apps" / "Kustomization").write_text("resources:\n- web.yaml\n")
    commit(root, "a Flux scope")
    args = ("check", str(root), "--matrix", "none", *(("--staged",) if staged else ()))
    cached = (*args, "--cache-dir", str(tmp_path / "cache"))
    before = run_main(*args, "--no-cache").stdout
    assert run_main(*cached).stdout == before
    assert "placeholders ${GPUS}, ${REPLICAS}" in before  # other.yaml: outside the scope
    (root / "apps" / "Kustomization").write_text("resources:\n- web.yaml\n- other.yaml\n")
    git(root, "add", "-A")
    after = run_main(*args, "--no-cache").stdout
    assert after != before
    assert run_main(*cached).stdout == after
    assert run_main(*cached).stdout == after  # and the entry stored after the edit holds
