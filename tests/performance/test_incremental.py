"""The partition cache (engine/cache/partition.py): after any edit, a cached run says exactly
what a run without the cache says, byte for byte, while re-reading only what the edit can affect."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from gpudrv_check.engine.cache.files import FilesCache
from gpudrv_check.engine.cache.partition import PartitionEntry, plan, store_entry, summarize
from gpudrv_check.engine.cache.store import Cache, entry_fields
from gpudrv_check.read.config import load_config
from gpudrv_check.read.manifests import ReadOptions, parse_manifest_bytes, read_repo
from gpudrv_check.read.tree import WorkingTree
from tests.conftest import (
    MATRIX,
    cli_env,
    cluster_policy,
    counting_rules,
    generated_corpus,
    run_main,
    write,
)
from tests.fuzz.targets import tree_difference

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generated_corpus(tmp_path_factory.mktemp("corpus") / "repo", 16, 150)


@pytest.fixture
def repo(corpus: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    shutil.copytree(corpus, copy)
    return copy


def _both(root: Path, cache: Path, fmt: str = "text") -> tuple[str, str]:
    """(cached run, run without any cache): stdout of each."""
    args = ("check", str(root), "--fail-on", "never", "--format", fmt)
    cached = run_main(*args, "--cache-dir", str(cache))
    fresh = run_main(*args, "--no-cache")
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


def _copy_that_differs(root: Path) -> None:
    """A deeper copy of a workload with other replicas: one object, an info at the copy not
    checked (issue 13), both in the partition of their namespace."""
    path = _workload(root, "team-8")
    text = re.sub(r"replicas: \d+", "replicas: 7", path.read_text(), count=1)
    write(root, "apps/team-8/overlay/prod/copy.yaml", text)


def _placeholder(root: Path) -> None:
    """A `${VAR}` in a workload: an unknown value, said in the summary; the file is shared."""
    path = _workload(root, "team-9")
    path.write_text(re.sub(r"replicas: \d+", "replicas: ${REPLICAS}", path.read_text(), count=1))


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
    "a copy that differs": _copy_that_differs,
    "a placeholder": _placeholder,
}


@pytest.mark.slow
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
        for fmt in ("json", "sarif", "text", "markdown", "junit", "gitlab", "github"):
            cached, fresh = _both(repo, cache, fmt)
            assert cached == fresh, fmt


def _read(root: Path, cache: Path, context: str = "ctx"):
    config = load_config(root, None)
    source = WorkingTree(root)
    listing = source.list_manifests(config.exclude)
    options = ReadOptions(cache=FilesCache(Cache(cache), context))
    return read_repo(source, listing.files, config.max_file_bytes, options)


def test_only_the_edited_namespace_is_read_again(repo, tmp_path):
    cache = tmp_path / "cache"
    first = _read(repo, cache)
    assert not first.plan.clean  # nothing cached yet: every partition is evaluated
    namespaces = set(first.plan.partition_of.values())
    assert "team-0" in namespaces and "gpu-operator" not in namespaces  # DaemonSets: shared
    # store what a run would: every partition evaluated, no findings (enough for the plan),
    # and the shared-capacity outcome of that full run
    _store_full_run(first)
    _exempt(repo)  # team-4: an annotation, not a capacity demand
    second = _read(repo, cache)
    assert second.plan.clean == namespaces - {"team-4"}
    read = {f.rel for f in second.files}
    assert any(rel.startswith("apps/team-4/") for rel in read)
    assert not any(rel.startswith("apps/team-1/") for rel in read)
    assert any(rel.startswith("inventory/") for rel in read)  # shared files are always read
    # counted all the same
    assert second.file_count == first.file_count
    assert second.object_count == first.object_count
    # another context (arguments, config, matrix...) and every partition is evaluated again
    assert not _read(repo, cache, "other").plan.clean
    # a replica count is planned as any edit: its partition alone (whether the nodes' shared
    # capacity then goes otherwise for another partition is for the run to find, below)
    _replicas(repo)
    assert _read(repo, cache).plan.clean == namespaces - {"team-0", "team-4"}


def _store_full_run(result) -> None:
    """What a full run stores for the plan: every partition evaluated (no findings, no
    workload the nodes' capacity concerns) with its simulation inputs (none)."""
    plan = result.plan
    keys = plan.keys.items()
    for ns, k in keys:
        store_entry(plan.cache, plan.name, ns, PartitionEntry(k, [], [], {}))
    inputs = {ns: (k, ()) for ns, k in keys}
    plan.cache.store("occupancy", plan.name, "", (((), (), ()), inputs, None, {}, plan.reads))


def test_a_shared_edit_evaluates_every_partition(repo, tmp_path):
    cache = tmp_path / "cache"
    first = _read(repo, cache)
    _store_full_run(first)
    assert _read(repo, cache).plan.clean  # unchanged: all from the cache
    _node_label(repo)
    assert not _read(repo, cache).plan.clean


def test_a_result_is_encoded_the_first_time_a_run_needs_it(repo, tmp_path, monkeypatch):
    """A cold run stores each file's summary, not its encoded result (most files are never
    decoded); a run that needs a file from the cache reads it again then and stores its result,
    and the next run decodes it, with the same result."""
    from gpudrv_check.engine.cache import files as files_mod
    from gpudrv_check.read import manifests

    cache = tmp_path / "cache"
    # every file's encoded result as last stored (the entries are spread over buckets, and a
    # run stores only the buckets it changed)
    stored: dict[str, bytes] = {}
    real_store = Cache.store

    def store(self, kind, name, key, value, **how):
        if kind == files_mod.KIND:
            stored.update({rel: entry[2] for rel, entry in value.items()})
        return real_store(self, kind, name, key, value, **how)

    monkeypatch.setattr(Cache, "store", store)
    first = _read(repo, cache)
    assert stored and not any(stored.values())  # summaries only
    _store_full_run(first)
    _exempt(repo)  # team-4 changes: its files and the shared ones are decoded next
    parsed: list[str] = []
    real_parse = manifests.parse_manifest_bytes

    def parse(rel, *args, **kwargs):
        parsed.append(rel)
        return real_parse(rel, *args, **kwargs)

    monkeypatch.setattr(manifests, "parse_manifest_bytes", parse)
    second = _read(repo, cache)
    needed = {rel for rel, blob in stored.items() if blob}
    assert any(rel.startswith("inventory/") for rel in needed)  # shared: read again, stored
    assert not any(rel.startswith("apps/team-1/") for rel in needed)  # clean: never needed
    assert needed <= set(parsed)
    _store_full_run(second)  # as the second run itself would: team-4 is clean from now on
    parsed.clear()
    third = _read(repo, cache)
    assert not parsed  # what the second run stored is decoded now
    as_read = {f.rel: f for f in second.files}
    for decoded in third.files:  # the same results, decoded instead of parsed
        again = as_read[decoded.rel]
        assert [f.record() for f in decoded.problems] == [f.record() for f in again.problems]
        assert len(decoded.manifests) == len(again.manifests)
        for mine, theirs in zip(decoded.manifests, again.manifests, strict=True):
            assert (mine.file, mine.doc, mine.kind, mine.name) == (
                theirs.file,
                theirs.doc,
                theirs.kind,
                theirs.name,
            )
            assert tree_difference(mine.data, theirs.data) is None


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
    files = [(*f, None) for f in files]  # no node file: no view
    without_mixed = [f for f in files if f[0] != "mixed.yaml"]
    p = plan(Cache(tmp_path), "n", "ctx", without_mixed)
    # b has a DaemonSet; a ConfigMap does not make its namespace shared
    assert p.partition_of == {"deploy.yaml": "a", "pdb-default.yaml": "default"}
    # a shared file holding a's Deployment and default's budget: both namespaces are shared
    assert plan(Cache(tmp_path), "n", "ctx", files).partition_of == {}


# --- the counterexamples a review found (each failed before the fix) ----------------------------

LAB = ROOT / "examples" / "lab"


def _deployment(name: str, namespace: str, image: str = "nginx", extra_meta: str = "") -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {namespace}
{extra_meta}spec:
  replicas: 2
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: {name}
        image: {image}
"""


PDB_ALL = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
  namespace: {ns}
spec:
  minAvailable: 100%
  selector:
    matchLabels: {{app: web}}
"""

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: j
  namespace: team-c
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: j
        image: busybox
"""

SERVICE = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: {ns}\n"


def _lab_nodes(root: Path) -> None:
    shutil.copy(LAB / "k8s" / "nodes.yaml", root / "nodes.yaml")
    shutil.copy(LAB / "support-matrix.csv", root / "support-matrix.csv")


def _same_after(root: Path, cache: Path, edit) -> None:
    for fmt in ("text", "json"):
        _both(root, cache / fmt, fmt)
    edit(root)
    for fmt in ("text", "json"):
        cached, fresh = _both(root, cache / fmt, fmt)
        assert cached == fresh, fmt


def _edit_other_namespace(root: Path) -> None:
    _edit(root / "team-c" / "job.yaml", "busybox", "busybox:1.36")


def test_a_budget_in_a_shared_file_still_sees_its_namespace(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    _lab_nodes(root)
    write(root, "team-a/deploy.yaml", _deployment("web", "team-a"))
    write(
        root,
        "team-a/service-and-pdb.yaml",
        SERVICE.format(ns="team-a") + "---\n" + PDB_ALL.format(ns="team-a"),
    )
    write(root, "team-c/job.yaml", JOB)
    _same_after(root, tmp_path / "cache", _edit_other_namespace)
    assert "GPU020" in _both(root, tmp_path / "cache" / "text")[0]


def test_an_annotation_on_a_duplicated_identity_still_applies(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    _lab_nodes(root)
    image = "nvcr.io/nvidia/pytorch:24.07-py3"
    meta = '  annotations:\n    gpudrv-check.io/ignore: "GPU011 # accepted"\n'
    write(root, "team-a/web.yaml", _deployment("web", "team-a", image, meta))
    write(
        root,
        "legacy.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: legacy\n"
        "  namespace: team-a\n---\n" + _deployment("web", "team-a", image),
    )
    write(root, "team-c/job.yaml", JOB)
    _same_after(root, tmp_path / "cache", _edit_other_namespace)
    assert "suppressed" in _both(root, tmp_path / "cache" / "text")[0]


def test_a_pending_explanation_does_not_depend_on_another_namespace(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    _lab_nodes(root)
    for ns, selector in (
        ("team-a", "pool: alpha\n        zone: z1"),
        ("team-b", "zone: z1\n        pool: alpha"),
    ):
        text = _deployment("w", ns).replace(
            "    spec:\n      containers:",
            f"    spec:\n      nodeSelector:\n        {selector}\n      containers:",
        )
        write(root, f"{ns}/w.yaml", text)

    def edit(repo: Path) -> None:
        _edit(repo / "team-b" / "w.yaml", "image: nginx", "image: nginx:1.27")

    _same_after(root, tmp_path / "cache", edit)
    # and each workload's explanation follows its own written order
    text = _both(root, tmp_path / "cache" / "text", "concise")[0]
    b_line = next(line for line in text.splitlines() if line.startswith("team-b/w.yaml"))
    assert b_line.index("zone=z1") < b_line.index("pool=alpha")


def test_a_file_that_turns_into_a_helm_template_is_a_shared_change(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    _lab_nodes(root)
    write(
        root,
        "chart/templates/app.yaml",
        _deployment("web", "team-b") + "---\n" + SERVICE.format(ns="team-b"),
    )
    write(root, "team-b/pdb.yaml", PDB_ALL.format(ns="team-b"))

    def edit(repo: Path) -> None:
        write(
            repo,
            "chart/Chart.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p, "
            "namespace: team-c}\nspec:\n  containers: [{name: c, image: x}]\n",
        )

    _same_after(root, tmp_path / "cache", edit)


def test_every_finding_about_a_partition_object_sits_in_its_partition(repo, tmp_path):
    """The invariant the cache rests on, checked over every rule on a generated corpus: what is
    said about a namespace's workloads and budgets is located in that namespace's files (or
    the namespace is shared), so a rule added later that reports elsewhere fails here."""
    from gpudrv_check.engine import run as engine
    from gpudrv_check.engine.cache.partition import partition_kinds

    content = _read(repo, tmp_path / "cache")
    partition_of = content.plan.partition_of
    partitions = set(partition_of.values())
    run = engine.check(repo, load_config(repo, None))
    assert run.findings
    for finding in [*run.findings, *run.suppressed]:
        where = partition_of.get(finding.location.file)
        obj = finding.object
        if obj is not None and obj.kind in partition_kinds():
            ns = obj.namespace or "default"
            assert where in (ns, None), finding
            assert where is not None or ns not in partitions, finding
        elif where is not None:
            assert obj is None or (obj.namespace or "default") == where, finding


# --- the nodes' shared capacity (model/occupancy.py): a demand edit is planned as any other ----

GPU_NODE = """\
apiVersion: v1
kind: Node
metadata:
  name: gpu-0
  labels: {kubernetes.io/hostname: gpu-0, nvidia.com/gpu.present: "true"}
status:
  allocatable: {cpu: "16", memory: 64Gi, pods: "110", nvidia.com/gpu: "2"}
"""


def _gpu_deployment(name: str, namespace: str, replicas: int) -> str:
    return _deployment(name, namespace).replace("replicas: 2", f"replicas: {replicas}") + (
        "        resources: {limits: {nvidia.com/gpu: 1}}\n"
    )


def _gpu_repo(root: Path) -> None:
    """One node of two GPUs; team-a and team-b each run one single-GPU replica; team-c's
    Deployment requests no GPU."""
    root.mkdir()
    write(root, "nodes.yaml", GPU_NODE)
    write(root, "team-a/a.yaml", _gpu_deployment("a", "team-a", 1))
    write(root, "team-b/b.yaml", _gpu_deployment("b", "team-b", 1))
    write(root, "team-c/c.yaml", _deployment("c", "team-c"))


def test_a_replica_edit_that_keeps_the_other_outcomes_is_a_partial_run(
    tmp_path: Path, clean_partitions: list[set[str]]
):
    root, cache = tmp_path / "repo", tmp_path / "cache"
    _gpu_repo(root)
    _both(root, cache)
    assert clean_partitions[-1] == set()  # the cold run evaluates every partition
    _edit(root / "team-c" / "c.yaml", "replicas: 2", "replicas: 5")  # no GPU: nobody moves
    cached, fresh = _both(root, cache)
    assert cached == fresh
    assert clean_partitions[-1] == {"team-a", "team-b"}  # team-c alone read again
    # and a second run after it still answers from the cache
    _edit(root / "team-c" / "c.yaml", "replicas: 5", "replicas: 4")
    cached = _both(root, cache)[0]
    assert clean_partitions[-1] == {"team-a", "team-b"}
    assert cached == _both(root, tmp_path / "other")[0]


def test_a_replica_edit_that_fills_the_nodes_reads_the_namespace_it_leaves_pending(
    tmp_path: Path, clean_partitions: list[set[str]]
):
    root, cache = tmp_path / "repo", tmp_path / "cache"
    _gpu_repo(root)
    cold = _both(root, cache)[0]
    assert "stay Pending" not in cold
    # team-a's second replica takes the node's last GPU: team-b's replica stays Pending
    _edit(root / "team-a" / "a.yaml", "replicas: 1", "replicas: 2")
    cached, fresh = _both(root, cache)
    assert cached == fresh
    assert "Deployment team-b/b: 1 of 1 pods stay Pending" in " ".join(cached.split())
    # planned partial (team-b, team-c clean); team-b's outcome differed: read again with team-a
    assert clean_partitions[-1] == {"team-c"}
    # undone: team-b runs again, from the cache as a full run says
    _edit(root / "team-a" / "a.yaml", "replicas: 2", "replicas: 1")
    cached, fresh = _both(root, cache)
    assert cached == fresh == cold


@pytest.fixture
def simulations(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Per Occupancy a run builds: whether it took the last simulation's outcomes
    (`replayed`) rather than placing the pods."""
    from gpudrv_check.model import occupancy

    seen: list[bool] = []
    init = occupancy.Occupancy.__init__

    def spy(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        seen.append(self.replayed)

    monkeypatch.setattr(occupancy.Occupancy, "__init__", spy)
    return seen


def test_an_edit_that_changes_no_demand_takes_the_last_simulation(
    tmp_path: Path, clean_partitions: list[set[str]], simulations: list[bool]
):
    """The outcomes of a simulation are stored with the digest of its inputs (model/
    occupancy.py `memo_value`): after an edit that changes no workload's pods, requests or
    placement (an image), the demands encode alike and the run takes those outcomes; every
    report is the one a run without the cache writes."""
    root, cache = tmp_path / "repo", tmp_path / "cache"
    _gpu_repo(root)
    _edit(root / "team-b" / "b.yaml", "replicas: 1", "replicas: 2")  # b's second replica waits
    cold = _both(root, cache)
    assert "stay Pending" in cold[0] and cold[0] == cold[1]
    assert simulations[0] is False  # the cold run simulates
    for image in ("nginx:1.27", "nginx:1.28"):
        _edit(root / "team-a" / "a.yaml", "image: nginx", f"image: {image}")
        simulations.clear()
        cached, fresh = _both(root, cache)
        assert cached == fresh
        assert clean_partitions[-1] == {"team-b", "team-c"}  # team-a read again
        assert simulations == [True, False]  # the cached run replayed; the fresh one placed
        _edit(root / "team-a" / "a.yaml", f"image: {image}", "image: nginx")
        simulations.clear()
        assert _both(root, cache) == cold
        assert simulations[0] is True
    for fmt in ("json", "sarif", "markdown"):
        cached, fresh = _both(root, cache, fmt)
        assert cached == fresh, fmt


@pytest.fixture
def stored_demands(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, int]]:
    """Per Occupancy a run builds: whether it took the last simulation's outcomes because the
    demands of the partitions it read again are the stored ones (`same_as_stored`), and how
    many cached demands it decoded (`decode_inputs`) meanwhile."""
    from gpudrv_check.model import occupancy

    seen: list[tuple[bool, int]] = []
    decoded = [0]
    init, decode = occupancy.Occupancy.__init__, occupancy.decode_inputs

    def counting(value, occ):
        made = decode(value, occ)
        decoded[0] += len(made)
        return made

    def spy(self, *args, **kwargs) -> None:
        decoded[0] = 0
        init(self, *args, **kwargs)
        seen.append((self.same_as_stored, decoded[0]))

    monkeypatch.setattr(occupancy, "decode_inputs", counting)
    monkeypatch.setattr(occupancy.Occupancy, "__init__", spy)
    return seen


def test_an_edit_that_changes_no_demand_decodes_no_cached_demand(
    tmp_path: Path, clean_partitions: list[set[str]], stored_demands: list[tuple[bool, int]]
):
    """Plan.outcomes_if_same: when the demands made of the partition read again encode as
    the records stored for it (an image edit), the run takes the last simulation's outcomes
    without decoding the other partitions' demands, and stores the inputs as they were under
    its keys: the next edit, of this partition or another, finds them so again. A demand
    that changes (a GPU request) is simulated with every demand decoded, as before; every
    report is the one a run without the cache writes."""
    root, cache = tmp_path / "repo", tmp_path / "cache"
    _gpu_repo(root)
    _edit(root / "team-b" / "b.yaml", "replicas: 1", "replicas: 2")  # b's second replica waits
    cold = _both(root, cache)
    assert "stay Pending" in cold[0]
    steps = [
        ("team-a/a.yaml", "image: nginx", "image: nginx:1.27", True),
        ("team-a/a.yaml", "image: nginx:1.27", "image: nginx:1.28", True),
        ("team-b/b.yaml", "image: nginx", "image: nginx:2", True),  # another partition
        # a demand: team-b's outcome moves, so team-b is read again too
        ("team-a/a.yaml", "nvidia.com/gpu: 1", "nvidia.com/gpu: 2", False),
        ("team-c/c.yaml", "image: nginx", "image: nginx:3", True),  # stored by that run
        ("team-a/a.yaml", "nvidia.com/gpu: 2", "nvidia.com/gpu: 1", False),
    ]
    for rel, old, new, same in steps:
        _edit(root / rel, old, new)
        stored_demands.clear()
        cached, fresh = _both(root, cache)
        assert cached == fresh, (rel, new)
        read_again = {"team-a", "team-b", "team-c"} - clean_partitions[-1]
        assert read_again == ({rel.split("/")[0]} if same else {"team-a", "team-b"}), rel
        taken, decoded = stored_demands[0]  # the cached run's first model
        assert taken is same, (rel, new)
        assert (decoded == 0) is same, (rel, new, decoded)
    assert "Deployment team-b/b: 1 of 2 pods stay Pending" in " ".join(cached.split())


def test_a_stored_record_that_differs_from_the_demand_is_no_proof(
    tmp_path: Path, stored_demands: list[tuple[bool, int]], simulations: list[bool]
):
    """Records stored for the partition read again that do not encode its demands as made
    now (an authentically signed entry, damaged) make the run compare the simulation's inputs
    whole, the cached demands decoded; the memo (digest of the inputs as they really were)
    still fits them, so it is taken, and the report is the one without the cache."""
    root, cache = tmp_path / "repo", tmp_path / "cache"
    _gpu_repo(root)
    cold = _both(root, cache)

    def change(value):
        tables, by_namespace, memo, outside, reads = value
        key, (record,) = by_namespace["team-a"]
        by_namespace["team-a"] = (key, ((*record[:6], record[6] + 1, *record[7:]),))
        return (tables, by_namespace, memo, outside, reads)

    _rewrite_entry(cache, "occupancy", change)
    _edit(root / "team-a" / "a.yaml", "image: nginx", "image: nginx:2")
    stored_demands.clear()
    simulations.clear()
    cached, fresh = _both(root, cache)
    assert cached == fresh and cached != cold[0]
    assert stored_demands[0][0] is False and stored_demands[0][1] > 0
    assert simulations[0] is True  # replayed from the memo, after decoding


def test_outcomes_if_same_refuses_stored_records_of_any_shape_without_raising():
    """Plan.outcomes_if_same reads a clean namespace's stored records only to sort and digest
    them (the engine checks their shape first, `verify`): called alone, a record that is a
    mapping, a string, too short or of mixed types makes it answer None, never raise."""
    from gpudrv_check.engine.cache.partition import Plan

    for record in ({"x": 1}, "team-a/a.yaml", ("team-a/a.yaml",), (0, 1, 2), ("f", None, 1)):
        plan_ = Plan(cache=None, name="n")
        plan_.keys, plan_.clean = {"a": "k1", "b": "k2"}, {"a"}
        plan_.memo, plan_.tables = ("0" * 64, {}), ((), (), ())
        plan_.stored_inputs = {"a": ("k1", (record, ("g", 0, -1))), "b": ("k2", ())}
        assert plan_.outcomes_if_same([]) is None, record


def test_an_edit_that_changes_a_demand_simulates_again(
    tmp_path: Path, clean_partitions: list[set[str]], simulations: list[bool]
):
    root, cache = tmp_path / "repo", tmp_path / "cache"
    _gpu_repo(root)
    _both(root, cache)
    for old, new in (("replicas: 1", "replicas: 2"), ("replicas: 2", "replicas: 1")):
        _edit(root / "team-a" / "a.yaml", old, new)
        simulations.clear()
        cached, fresh = _both(root, cache)
        assert cached == fresh
        assert simulations[0] is False  # other demands: the pods placed again
    # requests, not replicas
    _edit(root / "team-a" / "a.yaml", "nvidia.com/gpu: 1", "nvidia.com/gpu: 2")
    simulations.clear()
    cached, fresh = _both(root, cache)
    assert cached == fresh and simulations[0] is False
    assert "Deployment team-b/b: 1 of 1 pods stay Pending" in " ".join(cached.split())


@pytest.mark.parametrize(
    "tamper",
    [
        lambda memo: None,  # no memo
        lambda memo: ("0" * 64, memo[1]),  # another digest
        lambda memo: (memo[0], {}),  # no outcomes
        lambda memo: (memo[0], {k: (9, (), "", ()) for k in memo[1]}),  # other pod counts
        lambda memo: (memo[0], {k: (o[0], (5,), o[2], o[3]) for k, o in memo[1].items()}),
        lambda memo: (memo[0], {k: [*o] for k, o in memo[1].items()}),  # no tuples
        lambda memo: (memo[0], {k: (o[0], o[1], 7, o[3]) for k, o in memo[1].items()}),
        lambda memo: [memo],
    ],
    ids=["none", "digest", "empty", "counts", "pending", "lists", "message", "shape"],
)
def test_a_memo_that_does_not_fit_is_simulated_again(
    tmp_path: Path, simulations: list[bool], tamper
):
    """A stored memo whose digest, shape or outcomes do not fit the run's demands (a damaged
    entry, signed authentically) is never taken: the run places the pods itself."""
    root, cache = tmp_path / "repo", tmp_path / "cache"
    _gpu_repo(root)
    cold = _both(root, cache)

    def change(value):
        tables, by_namespace, memo, outside, reads = value
        assert memo is not None and set(memo[1]) >= {k for k in memo[1] if "team-a" in k}
        return (tables, by_namespace, tamper(memo), outside, reads)

    _rewrite_entry(cache, "occupancy", change)
    _edit(root / "team-c" / "c.yaml", "image: nginx", "image: nginx:2")
    simulations.clear()
    cached, fresh = _both(root, cache)
    assert cached == fresh and cached.replace("nginx:2", "nginx") == cold[0].replace(
        "nginx:2", "nginx"
    )
    assert simulations[0] is False


def _rehearsed_node(name: str, major: str, minor: str, rev: str) -> str:
    """A GPU node of driver major.minor.rev, on the kernel and OS the lab's matrix row names."""
    labels = {
        "nvidia.com/gpu.present": '"true"',
        "nvidia.com/cuda.driver.major": f'"{major}"',
        "nvidia.com/cuda.driver.minor": f'"{minor}"',
        "nvidia.com/cuda.driver.rev": f'"{rev}"',
        "feature.node.kubernetes.io/kernel-version.full": "5.15.0-119-generic",
        "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": '"22.04"',
    }
    written = ", ".join(f"{k}: {v}" for k, v in labels.items())
    return f"apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {{{written}}}\n"


REHEARSED_NODES = (
    _rehearsed_node("n0", "550", "90", "07") + "---\n" + _rehearsed_node("n1", "535", "183", "06")
)

REHEARSED_POLICY = cluster_policy(
    "  driver:\n    usePrecompiled: true\n    repository: registry.example/nvidia\n"
    '    image: driver\n    version: "550.90.07"\n'
    "    upgradePolicy: {autoUpgrade: true, maxParallelUpgrades: 1, podDeletion: {force: true}}\n"
)


BLOCKING_PDB = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pb, namespace: team-b}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {app: wb}}
"""


def _rehearsed_workload(team: str, image: str) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: w{team}, namespace: team-{team}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: w{team}}}}}
  template:
    metadata: {{labels: {{app: w{team}}}}}
    spec:
      containers:
      - name: main
        image: nvcr.io/nvidia/pytorch:{image}
        resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""


@pytest.mark.parametrize("fmt", ["html", "markdown"])
def test_a_report_of_the_model_reads_every_namespace(
    tmp_path: Path, clean_partitions: list[set[str]], fmt: str
):
    """The HTML report's upgrade rehearsal walks every workload and budget of the model, and
    the partition cache gives back findings, not objects: a run asked for a format that
    renders the model (report.MODEL_FORMATS) takes no namespace from it. Found by a review:
    after an edit of team-a, the cached report said the upgrade completes, where team-b's
    budget (whose namespace came from the cache) stalls it."""
    root, cache = tmp_path / "repo", tmp_path / "cache"
    root.mkdir()
    write(root, "nodes.yaml", REHEARSED_NODES)
    write(root, "clusterpolicy.yaml", REHEARSED_POLICY)
    write(root, "support-matrix.csv", MATRIX)
    write(root, "team-a/w.yaml", _rehearsed_workload("a", "24.07-py3"))
    write(root, "team-b/w.yaml", _rehearsed_workload("b", "24.07-py3"))
    write(root, "team-b/pdb.yaml", BLOCKING_PDB)
    cold = _both(root, cache, fmt)
    assert cold[0] == cold[1]
    if fmt == "html":
        assert "Upgrade to 550.90.07 stalls." in cold[0]  # team-b's budget
    for image in ("24.08-py3", "24.09-py3"):
        (root / "team-a" / "w.yaml").write_text(_rehearsed_workload("a", image))
        planned = len(clean_partitions)
        cached, fresh = _both(root, cache, fmt)
        assert cached == fresh
        assert not any(clean_partitions[planned:])  # no namespace from the cache
    # a report of findings alone takes the namespaces the edit left alone, as ever
    assert _both(root, cache, "json")[0]
    (root / "team-a" / "w.yaml").write_text(_rehearsed_workload("a", "24.10-py3"))
    cached, fresh = _both(root, cache, "json")
    assert cached == fresh and clean_partitions[-1] == {"team-b"}


def _rewrite_entry(cache: Path, kind: str, change) -> None:
    """Replace the value of the cache's `kind` entry by `change(value)`, authentically signed
    (what only the cache's owner could write: the run still validates it)."""
    from gpudrv_check.engine.cache import store

    (entry,) = cache.glob(f"{kind}-*.bin")
    _, key, value = store.entry_fields(entry.read_bytes())
    secret = (cache / store.SECRET).read_bytes()
    entry.write_bytes(b"".join(store.entry_bytes(secret, key, change(value))))


@pytest.mark.parametrize(
    "tamper",
    [
        lambda r: (("team-b/b.yaml", *r[1:7], 99, *r[8:]),),  # no such table entry
        lambda r: (("team-c/c.yaml", *r[1:]),),  # a file of another partition
        lambda r: (r[:5],),  # not a record
        lambda r: ((*r[:9], 0, *r[10:]),),  # anti-affinity domains the tables do not hold
        lambda r: (r, r),  # one workload twice
        lambda r: (([r[0]], *r[1:]),),  # a file name that is no string (not even hashable)
    ],
    ids=["table-index", "other-partition", "shape", "domains", "twice", "unhashable-file"],
)
def test_a_tampered_input_record_is_a_full_run(
    tmp_path: Path, clean_partitions: list[set[str]], tamper
):
    root, cache = tmp_path / "repo", tmp_path / "cache"
    _gpu_repo(root)
    _both(root, cache)

    def change(value):
        tables, by_namespace, memo, outside, reads = value
        key, records = by_namespace["team-b"]
        assert len(records) == 1  # b's one Deployment
        return (
            tables,
            {**by_namespace, "team-b": (key, tamper(records[0]))},
            memo,
            outside,
            reads,
        )

    _rewrite_entry(cache, "occupancy", change)
    _edit(root / "team-c" / "c.yaml", "replicas: 2", "replicas: 3")
    cached, fresh = _both(root, cache)
    assert cached == fresh
    assert clean_partitions[-1] == set()  # planned partial, found unusable: every partition


def test_a_tampered_domain_table_is_a_full_run(tmp_path: Path, clean_partitions: list[set[str]]):
    """An anti-affinity domain table naming a node by something that is no string (not even
    hashable): unusable inputs, a full run, never an internal error."""
    root, cache = tmp_path / "repo", tmp_path / "cache"
    _gpu_repo(root)
    _both(root, cache)

    def change(value):
        (nodes, requests, _), by_namespace, memo, outside, reads = value
        domains = (((["gpu-a"], "zone-a"),),)
        return ((nodes, requests, domains), by_namespace, memo, outside, reads)

    _rewrite_entry(cache, "occupancy", change)
    _edit(root / "team-c" / "c.yaml", "replicas: 2", "replicas: 3")
    cached, fresh = _both(root, cache)
    assert cached == fresh
    assert clean_partitions[-1] == set()


def test_a_file_its_stamp_vouches_for_is_read_only_when_its_result_is_needed(
    repo, tmp_path, monkeypatch
):
    """`check` hands read_repo the digests its stamps hold (read/prefetched.py `Prefetched`):
    a file the per-file cache answers for is not read again, unless the run decodes it and
    the cache holds no result for it yet (the first run after a cold one reads the shared
    files for that; the next one decodes them). Every run says what a run without cache says."""
    from gpudrv_check.engine.cache import inputs as inputs_mod

    monkeypatch.setattr(inputs_mod, "RACY_NS", -(10**18))  # every file counts as settled
    reads: list[str] = []
    real_read = WorkingTree.read

    def read(self, rel, *args, **kwargs):
        reads.append(rel)
        return real_read(self, rel, *args, **kwargs)

    monkeypatch.setattr(WorkingTree, "read", read)
    manifests = {p.relative_to(repo).as_posix() for p in repo.rglob("*.yaml")}
    args = ("check", str(repo), "--fail-on", "never")
    cached_args = (*args, "--cache-dir", str(tmp_path / "cache"))

    def cached_run() -> list[str]:
        """A cached run (its output as a run without cache says it): the manifests it read."""
        reads.clear()
        out = run_main(*cached_args).stdout
        read_now = [rel for rel in reads if rel in manifests]
        assert out == run_main(*args, "--no-cache").stdout
        return read_now

    assert set(cached_run()) == manifests  # cold: every file
    _replicas(repo)  # team-0: its files are read; the shared ones have no result stored yet
    edited = _workload(repo, "team-0").relative_to(repo).as_posix()
    second = cached_run()
    assert edited in second
    assert any(rel.startswith("inventory/") for rel in second)  # shared: needed now
    assert not any(rel.startswith("apps/team-1/") for rel in second)  # clean: not read
    path = _workload(repo, "team-0")
    path.write_text(re.sub(r"replicas: \d+", "replicas: 8", path.read_text(), count=1))
    assert cached_run() == [edited]  # the shared files decode what the second run stored


def test_a_held_file_changed_since_its_stamp_is_parsed_as_it_is_now_and_not_stored(tmp_path):
    """A file read late (its stamp vouched for it, the cache holds its summary but no result)
    that changed in between: the run parses what is there now, and the cache does not store
    that result under the digest the stamp held."""
    from gpudrv_check.read.manifests import Prefetched
    from tests.conftest import gpu_node

    write(tmp_path / "repo", "nodes/a.yaml", gpu_node("a"))
    root, cache = tmp_path / "repo", tmp_path / "cache"
    first = _read(root, cache)  # stores the summary of a.yaml, no result
    held = {"nodes/a.yaml": first.files[0].digest}
    (root / "nodes" / "a.yaml").write_text(gpu_node("z"))
    source = WorkingTree(root)
    files = FilesCache(Cache(cache), None)  # no plan: every file is decoded
    options = ReadOptions(cache=files, data=Prefetched({}, held))
    max_bytes = load_config(root, None).max_file_bytes  # as _read: the entries' way of reading
    again = read_repo(source, source.list_manifests([]).files, max_bytes, options)
    assert [m.name for m in again.files[0].manifests] == ["z"]
    entry = files.fresh["nodes/a.yaml"]
    assert entry.digest == held["nodes/a.yaml"]  # a hit on the held digest, read late
    assert not entry.blob  # what it parsed is not stored as what the old digest yields


def test_the_bytes_check_hashed_for_its_key_are_not_hashed_again(tmp_path, monkeypatch):
    """`check` hands read_repo the SHA-256 of each file it read for the whole-result key
    (read/prefetched.py `Prefetched.digests`): the per-file cache takes that digest, and no
    file's bytes are hashed a second time; a run over the same bytes hits it."""
    import hashlib

    from gpudrv_check.read import manifests as manifests_mod
    from gpudrv_check.read.manifests import Prefetched
    from tests.conftest import gpu_node

    root, cache = tmp_path / "repo", tmp_path / "cache"
    write(root, "nodes/a.yaml", gpu_node("a"))
    write(root, "nodes/b.yaml", gpu_node("b"))
    source = WorkingTree(root)
    refs = source.list_manifests([]).files
    data = {ref.rel: (root / ref.rel).read_bytes() for ref in refs}
    digests = {rel: hashlib.sha256(blob).hexdigest() for rel, blob in data.items()}
    hashed: list[int] = []
    real = manifests_mod.hashlib.sha256

    def sha256(*blob: bytes):
        if blob:  # a file's bytes (the cache's own digests feed theirs in with update)
            hashed.append(len(blob[0]))
        return real(*blob)

    monkeypatch.setattr(manifests_mod.hashlib, "sha256", sha256)
    max_bytes = load_config(root, None).max_file_bytes
    files = FilesCache(Cache(cache), None)
    options = ReadOptions(cache=files, data=Prefetched(dict(data), {}, digests))
    content = read_repo(source, refs, max_bytes, options)
    assert hashed == []
    assert {rel: files.fresh[rel].digest for rel in data} == digests
    assert sorted(m.name for f in content.files for m in f.manifests) == ["a", "b"]
    files.save()
    again = FilesCache(Cache(cache), None)
    read_repo(source, refs, max_bytes, ReadOptions(cache=again, data=Prefetched(dict(data))))
    assert len(hashed) == 2  # without digests: hashed here (once each), as check hashed them
    assert {rel: again.fresh[rel].digest for rel in data} == digests


def test_an_edit_run_writes_the_entry_of_its_namespace_alone(repo, tmp_path):
    """Each namespace's findings are an entry of their own (partition.py `entry_name`): a run
    after an edit of one namespace rewrites that namespace's entry and leaves the others as
    they were, and the next run still says what a run without cache says. (The first run
    after a cold one also stores the texts of the others' findings with them, once:
    `_texts_of_clean`.)"""
    cache = tmp_path / "cache"
    first, fresh = _both(repo, cache)
    assert first == fresh

    def entries(cluster: bool = False) -> dict[str, bytes]:
        """The namespaces' entries, or the cluster-wide findings' (base, findings, files read
        outside the key: partition.py `ClusterFindings`)."""
        found = {p.name: p.read_bytes() for p in cache.glob("partitions-*.bin")}
        return {n: b for n, b in found.items() if (len(entry_fields(b)[2]) == 4) == cluster}

    cold = entries()
    cluster = entries(cluster=True)
    assert len(cold) > 2 and len(cluster) == 1  # one per namespace, one for the cluster
    _replicas(repo)  # team-0: every entry stored again, with its texts
    second, fresh = _both(repo, cache)
    assert second == fresh
    before = entries()
    assert set(before) == set(cold) and all(before[name] != cold[name] for name in cold)
    _exempt(repo)  # team-4 only
    third, fresh = _both(repo, cache)
    assert third == fresh
    after = entries()
    changed = {name for name in after if before.get(name) != after[name]}
    assert len(changed) == 1 and set(before) == set(after)
    _replicas(repo)  # team-0 again
    fourth, fresh = _both(repo, cache)
    assert fourth == fresh
    assert entries(cluster=True) == cluster  # no shared file changed: taken, never rewritten


def test_a_file_saved_while_the_run_reads_it_leaves_no_stale_entry(repo, tmp_path, monkeypatch):
    """An editor saves a file between the moment its stamp vouched for it and the moment the
    run reads it (late: its namespace is decoded and the cache holds no result for it). The
    run reports what it read, and stores nothing under the keys it planned with the old
    content: later runs say what a run without cache says (read/manifests.py `_unsettled`)."""
    from gpudrv_check.engine.cache import inputs as inputs_mod
    from gpudrv_check.read import manifests

    monkeypatch.setattr(inputs_mod, "RACY_NS", -(10**18))  # every file counts as settled
    cache = tmp_path / "cache"
    args = ("check", str(repo), "--fail-on", "never")
    run_main(*args, "--cache-dir", str(cache))
    saved, other = _scalable_pair(repo)
    original = saved.read_text()
    rewritten = re.sub(r"replicas: \d+", "replicas: 2", original, count=1)
    assert rewritten != original
    rel = saved.relative_to(repo).as_posix()
    real = manifests._read_bytes

    def read_bytes(source, ref, max_bytes):
        if ref.rel == rel:  # the editor's save lands just before the read
            saved.write_text(rewritten)
        return real(source, ref, max_bytes)

    monkeypatch.setattr(manifests, "_read_bytes", read_bytes)
    _set_replicas(other, 1)  # the namespace of both files is read again
    racing = run_main(*args, "--cache-dir", str(cache)).stdout
    monkeypatch.setattr(manifests, "_read_bytes", real)
    assert racing == run_main(*args, "--no-cache").stdout  # what it read: the saved content
    saved.write_text(original)
    _set_replicas(_workload(repo, "team-4"), 3)  # another namespace: no whole result to replay
    assert run_main(*args, "--cache-dir", str(cache)).stdout == run_main(*args, "--no-cache").stdout


def _scalable_pair(root: Path) -> tuple[Path, Path]:
    """Two workload files of one namespace that write a replica count."""
    for namespace in sorted(p.name for p in (root / "apps").iterdir()):
        found = [
            p
            for p in sorted((root / "apps" / namespace).glob("*.yaml"))
            if re.search(r"replicas: \d+", p.read_text())
        ]
        if len(found) >= 2:
            return found[0], found[1]
    raise AssertionError("no namespace with two scalable workloads")


def _set_replicas(path: Path, replicas: int) -> None:
    text = path.read_text()
    path.write_text(re.sub(r"replicas: \d+", f"replicas: {replicas}", text, count=1))


def test_the_entry_of_a_namespace_gone_from_the_repo_is_dropped(repo, tmp_path):
    """A namespace deleted from the repo (a preview environment, say): the next run that
    stores its own entries drops that namespace's, so the cache does not keep one entry for
    every namespace that ever was (partition.py `Plan.gone`, store.py `Cache.drop`)."""
    from gpudrv_check.engine.cache.partition import entry_name
    from gpudrv_check.engine.cache.store import Cache

    cache = tmp_path / "cache"
    _both(repo, cache)
    name = _read(repo, cache).plan.name
    gone = Cache(cache)._path("partitions", entry_name(name, "team-4"))
    kept = Cache(cache)._path("partitions", entry_name(name, "team-1"))
    assert gone.exists() and kept.exists()
    shutil.rmtree(repo / "apps" / "team-4")
    cached, fresh = _both(repo, cache)
    assert cached == fresh
    assert not gone.exists() and kept.exists()


def _files_stores(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, set[str]]]:
    """The `files` buckets each store call wrote (name -> paths), run by run."""
    from gpudrv_check.engine.cache import files as files_mod

    runs: list[dict[str, set[str]]] = []
    real_store = Cache.store

    def store(self, kind, name, key, value, **how):
        if kind == files_mod.KIND:
            runs[-1][name] = set(value)
        return real_store(self, kind, name, key, value, **how)

    monkeypatch.setattr(Cache, "store", store)
    return runs


def test_an_edit_rewrites_the_bucket_of_its_file_alone(repo, tmp_path, monkeypatch):
    """The per-file entries are spread over buckets by path (engine/cache/files.py `bucket`):
    once the cache is settled, an edit stores the one bucket that holds the edited file, and
    a deleted file's bucket is stored without it."""
    from gpudrv_check.engine.cache import files as files_mod

    cache = tmp_path / "cache"
    runs = _files_stores(monkeypatch)
    for _ in range(3):  # cold, then the runs that store the shared files' results
        runs.append({})
        _both(repo, cache)
    assert len(runs[0]) > 1  # the cold run stored every bucket that has files
    edited = _workload(repo, "team-0")
    _replicas(repo)  # the first edit in team-0 stores its files' results: their buckets
    runs.append({})
    assert _both(repo, cache)[0] == _both(repo, cache)[1]
    _edit(edited, "replicas: 9", "replicas: 3")  # the next one: the file's bucket alone
    runs.append({})
    cached, fresh = _both(repo, cache)
    assert cached == fresh
    rel = edited.relative_to(repo).as_posix()
    assert [rel in paths for paths in runs[-1].values()] == [True]
    gone = sorted((repo / "apps").rglob("*.yaml"))[-1]
    gone_rel = gone.relative_to(repo).as_posix()
    gone.unlink()
    runs.append({})
    cached, fresh = _both(repo, cache)
    assert cached == fresh
    number = files_mod.bucket(gone_rel)
    assert all(gone_rel not in paths for paths in runs[-1].values())
    # its bucket is stored without it (with those of its namespace's files decoded for the
    # first time, whose results are stored now)
    assert any(name.endswith(f"/{number}") for name in runs[-1])


def test_a_damaged_bucket_costs_only_its_files(repo, tmp_path, monkeypatch):
    from gpudrv_check.engine.cache import files as files_mod

    cache = tmp_path / "cache"
    first = _read(repo, cache)
    _store_full_run(first)
    buckets = sorted(cache.glob(f"{files_mod.KIND}-*.bin"))
    assert len(buckets) > 1
    buckets[0].write_bytes(b"damaged")
    hits: list[str] = []
    real_hit = files_mod.FilesCache.hit

    def hit(self, rel, file_digest, helm):
        found = real_hit(self, rel, file_digest, helm)
        if found:
            hits.append(rel)
        return found

    monkeypatch.setattr(files_mod.FilesCache, "hit", hit)
    _read(repo, cache)
    total = len(WorkingTree(repo).list_manifests(load_config(repo, None).exclude).files)
    assert 0 < len(hits) < total  # the other buckets still answer


def test_a_run_after_an_edit_takes_the_texts_of_the_clean_findings_from_the_cache(
    repo, tmp_path, monkeypatch
):
    """The text report of the findings of the namespaces a run takes from the cache is the
    text the cache keeps with them (partition.py `_texts_of_clean`, `Finding.rendered`): the
    first run after a cold one renders and stores them, the next wraps only what it
    evaluated, at its own width and colour; every report is the one a run without cache
    writes."""
    from gpudrv_check.report import text as text_mod

    wrapped: list[str] = []
    real = text_mod.finding_block

    def finding_block(f, *args, **kwargs):
        wrapped.append(f.location.file)
        return real(f, *args, **kwargs)

    monkeypatch.setattr(text_mod, "finding_block", finding_block)
    cache = tmp_path / "cache"
    path = _workload(repo, "team-0")

    def edited_run(*extra: str, env: dict[str, str] | None = None) -> tuple[list[str], int]:
        path.write_text(
            re.sub(r"replicas: \d+", f"replicas: {len(wrapped) % 7 + 2}", path.read_text(), count=1)
        )
        wrapped.clear()
        args = ("check", str(repo), "--fail-on", "never", *extra)
        cached = run_main(*args, "--cache-dir", str(cache), env=env).stdout
        count = len(wrapped)
        assert cached == run_main(*args, "--no-cache", env=env).stdout
        return [rel for rel in wrapped[:count]], count

    run_main("check", str(repo), "--fail-on", "never", "--cache-dir", str(cache))
    first, everything = edited_run()
    assert any(rel.startswith("apps/team-1/") for rel in first)  # rendered for the cache
    second, count = edited_run()
    assert 0 < count < everything
    assert not any(rel.startswith("apps/team-1/") for rel in second)  # the cache's texts
    # another width or colour is another context (engine/cache/inputs.py): its first run
    # evaluates every namespace, its second stores the texts, its third takes them
    for extra, env in (((), cli_env(COLUMNS="70")), (("--color", "always"), None)):
        runs = [edited_run(*extra, env=env)[0] for _ in range(3)]
        assert [any(rel.startswith("apps/team-1/") for rel in run) for run in runs] == [
            True,
            True,
            False,
        ]


@pytest.mark.slow
def test_cluster_wide_findings_are_taken_while_no_shared_file_changes(repo, tmp_path, monkeypatch):
    """partition.py `ClusterFindings`: the rules at `scope: cluster` read no partition's kinds,
    so an edit of a namespace's workloads takes what they found under the same context and
    shared files; an edit of a shared file (a node), of the config, or a damaged entry
    evaluates them again; every run says what a run without cache says."""
    calls = counting_rules(monkeypatch, "GPU001", "GPU030")
    cache = tmp_path / "cache"
    args = ("check", str(repo), "--fail-on", "never", "--format", "json")

    def cached() -> str:
        before = dict(calls)
        out = run_main(*args, "--cache-dir", str(cache))
        assert out.returncode == 0, out.stderr
        fresh = run_main(*args, "--no-cache")
        assert out.stdout == fresh.stdout
        return "evaluated" if calls["GPU001"] > before["GPU001"] + 1 else "taken"

    def replicas(count: int) -> None:  # a different workload edit each time
        path = _workload(repo, "team-0")
        path.write_text(re.sub(r"replicas: \d+", f"replicas: {count}", path.read_text(), count=1))

    assert cached() == "evaluated"  # cold
    assert calls == {"GPU001": 2, "GPU030": 2}  # the cached run and the fresh one
    replicas(5)
    assert cached() == "taken"
    assert calls == {"GPU001": 3, "GPU030": 3}  # the fresh run's alone
    _pdb(repo)
    assert cached() == "taken"
    _node_label(repo)  # a shared file
    assert cached() == "evaluated"
    replicas(6)
    assert cached() == "taken"
    _config(repo)
    assert cached() == "evaluated"
    replicas(7)
    assert cached() == "taken"
    for entry in cache.glob("partitions-*.bin"):  # every entry damaged: each a miss
        entry.write_bytes(entry.read_bytes()[:-3])
    replicas(8)
    assert cached() == "evaluated"


def test_a_cluster_rule_with_a_finding_in_a_partition_file_is_not_kept(tmp_path, monkeypatch):
    """`ClusterFindings.evaluated`: a rule is kept only when every finding it made lies in a
    shared file (a finding in a partition's file would be that file's, found again)."""
    from types import SimpleNamespace

    from gpudrv_check.core import label_reads
    from gpudrv_check.core.finding import Finding, Location, Severity
    from gpudrv_check.engine.cache.partition import ClusterFindings, Plan

    monkeypatch.setattr(label_reads, "snapshot", lambda: None)  # as the plan: every value
    run = SimpleNamespace(repo=SimpleNamespace(), custom_policies=[])
    plan_ = Plan(Cache(tmp_path / "cache"), "repo", partition_of={"apps/a.yaml": "team-a"})

    def finding(file: str) -> Finding:
        return Finding(rule="GPU001", severity=Severity.ERROR, message="m", location=Location(file))

    kept = ClusterFindings(plan_, frozenset({"GPU001", "GPU030"}))
    assert kept.take("GPU001") is None and kept.take("GPU030") is None
    kept.evaluated("GPU001", [finding("nodes/n.yaml"), finding("apps/a.yaml")])
    kept.evaluated("GPU030", [finding("nodes/n.yaml")])
    kept.evaluated("GPU010", [finding("nodes/n.yaml")])  # not a cluster rule: never kept
    kept.store({}, run)
    again = ClusterFindings(plan_, frozenset({"GPU001", "GPU030"}))
    assert again.take("GPU001") is None
    assert [f.location.file for f in again.take("GPU030") or []] == ["nodes/n.yaml"]
    plan_.context = "other"  # another context or shared file: nothing is taken
    assert ClusterFindings(plan_, frozenset({"GPU030"})).take("GPU030") is None


@pytest.mark.slow
def test_a_cluster_rule_that_reads_every_namespace_is_never_taken(repo, tmp_path):
    """GPU025 reads the workloads of every namespace when the upgrade policy waits without a
    timeout on a pod selector (its `reads:` entry `when:`): its findings depend on those
    workloads, so they are never kept with the cluster-wide findings (rules/plan.py
    `cacheable_cluster_rules`); a run where no partition is clean evaluates every namespace
    with a plan, and took a stale GPU025 before."""
    from gpudrv_check.rules.plan import cacheable_cluster_rules

    assert "GPU025" not in cacheable_cluster_rules() and "GPU001" in cacheable_cluster_rules()
    write(
        repo,
        "gpu-operator/cluster-policy.yaml",
        cluster_policy(
            "  driver:\n    upgradePolicy:\n      autoUpgrade: true\n      podDeletion: {}\n"
            "      waitForCompletion:\n        podSelector: app=app-1\n"
        ),
    )
    cache = tmp_path / "cache"
    args = ("check", str(repo), "--fail-on", "never", "--format", "json")
    for step in range(3):
        if step:  # the selected workloads' label changes: GPU025 goes, then comes back
            old, new = ("app: app-1", "app: app-1x") if step == 1 else ("app: app-1x", "app: app-1")
            for path in sorted((repo / "apps").rglob("*.yaml")):
                text = path.read_text()
                if old + "\n" in text:
                    path.write_text(text.replace(old + "\n", new + "\n"))
            # and a comment in one file of every namespace: no partition is clean, so this
            # run evaluates them all, with a plan, under the same shared files
            for namespace in sorted((repo / "apps").iterdir()):
                path = sorted(namespace.glob("*.yaml"))[0]
                path.write_text(path.read_text() + f"# edit {step}\n")
        cached = run_main(*args, "--cache-dir", str(cache))
        fresh = run_main(*args, "--no-cache")
        assert cached.stdout == fresh.stdout, step
        assert ('"GPU025"' in fresh.stdout) == (step != 1)


PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: pj
  namespace: team-a
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        metadata:
          labels: {app: pj}
        spec:
          containers:
          - name: c
            image: busybox
            resources:
              limits: {nvidia.com/gpu: 1}
"""

PDB_PJ = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: pdb-{n}
  namespace: team-a
spec:
  maxUnavailable: 0
  selector:
    matchLabels: {{app: pj}}
"""


def test_a_table_workload_in_a_shared_file_still_sees_its_namespace_budgets(
    tmp_path: Path, clean_partitions: list[set[str]]
):
    """A PyTorchJob is a kind of the workload table, no partitioned kind: its file is shared,
    evaluated on every run, and what GPU024 says about it reads the budgets of team-a's own
    file. An edit of another namespace took team-a from the cache, its budgets unread: the
    finding went (partition.py `_sharing_workloads`: such a namespace is never stored)."""
    root = tmp_path / "repo"
    root.mkdir()
    _lab_nodes(root)
    write(root, "team-a/pytorchjob.yaml", PYTORCHJOB)
    write(root, "team-a/pdbs.yaml", PDB_PJ.format(n=1) + "---\n" + PDB_PJ.format(n=2))
    write(root, "team-c/job.yaml", JOB)
    _same_after(root, tmp_path / "cache", _edit_other_namespace)
    assert clean_partitions[-1] == set()  # team-c was edited; team-a is never taken
    cached, fresh = _both(root, tmp_path / "cache" / "text")
    said = " ".join(cached.split())  # as wrapped at any width
    assert cached == fresh and "GPU024 the pods of PyTorchJob pj" in said
    assert "covered by 2 PodDisruptionBudgets" in said


FLUX_INFRA = """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: infra
  namespace: flux-system
spec:
  path: ./infra
  postBuild:
    substitute:
      DRIVER: "535"
"""

FLUX_NODE = """\
apiVersion: v1
kind: Node
metadata:
  name: gpu-0
  labels:
    kubernetes.io/hostname: gpu-0
    nvidia.com/gpu.present: "true"
    nvidia.com/cuda.driver-version.major: "${DRIVER}"
status:
  capacity: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}
  allocatable: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}
"""


@pytest.mark.parametrize(
    "edit",
    [
        lambda root: (root / "infra" / "Kustomization").write_text("resources: []\n"),
        lambda root: (root / "infra" / "Kustomization").unlink(),
    ],
    ids=["edited", "deleted"],
)
def test_a_file_read_outside_the_listing_is_part_of_every_partition_key(
    tmp_path: Path, clean_partitions: list[set[str]], edit
):
    """The kustomization of a Flux scope, in no listing (excluded; a `Kustomization` file is
    listed since kustomize's third name is read), decides which files `${DRIVER}` is filled
    in (model/placeholders.py). The
    partition and cluster-wide entries are stored with what the run found at such files, and
    taken only while each is found so again (engine/cache/inputs.py `outside_holds`): the
    namespaces' findings (GPU011 on team-a's Deployment, from the node's driver) follow it."""
    root = tmp_path / "repo"
    write(root, "clusters/prod/infra.yaml", FLUX_INFRA)
    write(root, "infra/Kustomization", "resources:\n- node.yaml\n")
    write(root, ".gpudrv-check.yaml", "exclude: [infra/Kustomization]\n")
    write(root, "infra/node.yaml", FLUX_NODE)
    write(root, "team-a/d.yaml", _deployment("d", "team-a", "nvcr.io/nvidia/cuda:12.8.0-base"))
    write(root, "team-c/job.yaml", JOB)
    _same_after(root, tmp_path / "cache", lambda r: (edit(r), _edit_other_namespace(r)))
    assert clean_partitions[-1] == set()  # planned, and found changed: nothing taken
    cached, fresh = _both(root, tmp_path / "cache" / "text")
    assert cached == fresh
    # and while it is unchanged, the namespaces are taken again
    _edit(root / "team-c" / "job.yaml", "busybox:1.36", "busybox:1.37")
    cached, fresh = _both(root, tmp_path / "cache" / "text")
    assert cached == fresh and clean_partitions[-1] == {"team-a"}


def test_cluster_findings_stored_with_a_file_outside_the_key_follow_it(tmp_path: Path, monkeypatch):
    """`ClusterFindings` takes its entry only while every file the storing run read outside
    the key is found as it was, and stores nothing when the run's source does not say."""
    from types import SimpleNamespace

    from gpudrv_check.core import label_reads
    from gpudrv_check.engine.cache.partition import ClusterFindings, Plan

    monkeypatch.setattr(label_reads, "snapshot", lambda: None)  # as the plan: every value
    run = SimpleNamespace(repo=SimpleNamespace(), custom_policies=[])

    class Source:
        def __init__(self, state: str) -> None:
            self.state = state

        def state_of(self, rel: str, read: bool) -> str:
            assert rel == "infra/Kustomization" and read
            return self.state

    plan_ = Plan(Cache(tmp_path / "cache"), "repo", source=Source("sha-1"))
    kept = ClusterFindings(plan_, frozenset({"GPU030"}))
    assert kept.take("GPU030") is None
    kept.evaluated("GPU030", [])
    kept.store(None, run)  # the source recorded nothing: not stored
    assert ClusterFindings(plan_, frozenset({"GPU030"})).take("GPU030") is None
    kept.store({"infra/Kustomization": "sha-1"}, run)
    assert ClusterFindings(plan_, frozenset({"GPU030"})).take("GPU030") == []
    plan_.source = Source("sha-2")  # the file changed since
    assert ClusterFindings(plan_, frozenset({"GPU030"})).take("GPU030") is None
    plan_.source = None  # a source that cannot tell
    assert ClusterFindings(plan_, frozenset({"GPU030"})).take("GPU030") is None


def test_a_file_saved_between_two_readings_leaves_no_stale_result(tmp_path, monkeypatch):
    """A repo of several clusters is read twice (engine/run.py `load`: every file again,
    without the partition plan); the second reading finds none of the bytes check read for the
    key left, so it reads the files again. An editor saving between the two: the run reports
    what it read then, and must not store it under the key of the content before (it compared
    only the files their stamps held; now also those hashed for the key). Undo the save: the
    cached run says what a run without cache says, not the report of the content gone."""
    from gpudrv_check.engine import run as engine_run
    from gpudrv_check.engine.cache import inputs as inputs_mod

    monkeypatch.setattr(inputs_mod, "RACY_NS", -(10**18))  # every file counts as settled
    root, cache = tmp_path / "repo", tmp_path / "cache"
    for name in ("a", "b"):
        write(root, f"clusters/{name}/flux.yaml", FLUX_INFRA.replace("./infra", "./apps"))
    write(root, "apps/node.yaml", FLUX_NODE.replace("${DRIVER}", "550"))
    deployment = root / "apps" / "d.yaml"
    original = _deployment("d", "team-a")
    saved = original.replace("    spec:\n", "    spec:\n      nodeSelector: {pool: nowhere}\n")
    assert saved != original
    deployment.write_text(original)
    args = ("check", str(root), "--matrix", "none", "--fail-on", "never")
    real = engine_run._every_namespace

    def saving(options):
        deployment.write_text(saved)  # the editor saves between the two readings
        monkeypatch.setattr(engine_run, "_every_namespace", real)
        return real(options)

    monkeypatch.setattr(engine_run, "_every_namespace", saving)
    racing = run_main(*args, "--cache-dir", str(cache)).stdout
    assert deployment.read_text() == saved and "GPU010" in racing  # reported as read
    deployment.write_text(original)
    assert run_main(*args, "--cache-dir", str(cache)).stdout == run_main(*args, "--no-cache").stdout


def test_a_simulations_inputs_key_is_digested_once_per_view_base(monkeypatch):
    """`Plan.inputs_key` is asked by the replay and again by the memo a run stores: the same
    records under the same view base are digested once; another base, other tables or other
    records are digested again (a key holds all three)."""
    from gpudrv_check.engine.cache import store as store_mod
    from gpudrv_check.model.occupancy import InputTables

    digested: list[int] = []
    real = store_mod.digest

    def digest(*parts):
        digested.append(1)
        return real(*parts)

    monkeypatch.setattr(store_mod, "digest", digest)
    plan_ = plan(None, "repo", "ctx", [], None)
    tables, records = InputTables(), [("r",)]
    plan_.view_base = "base"
    digested.clear()  # the plan's own keys
    first = plan_.inputs_key(tables, records)
    assert plan_.inputs_key(tables, records) == first and len(digested) == 1
    assert plan_.inputs_key(tables, [("r",)]) == first and len(digested) == 2  # equal, not same
    plan_.view_base = "other"
    other = plan_.inputs_key(tables, records)
    assert other != first and len(digested) == 3
    assert plan_.inputs_key(InputTables(), records) == other and len(digested) == 4
