"""One `RunInputs` per check (engine/cache/inputs.py): the whole-result key and the partition
context are both derived from it, so they cannot disagree about what an input is."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time

from gpudrv_check.engine.cache import inputs as inputs_mod
from gpudrv_check.engine.cache.files import FileEntry, load_entries
from gpudrv_check.engine.cache.inputs import RunInputs, manifest_inputs
from gpudrv_check.engine.cache.partition import PartitionEntry
from gpudrv_check.read.tree import WorkingTree
from tests.conftest import gpu_node, write


def _inputs(context=("v1", "--format json"), files=(("a.yaml", "d1"),)) -> RunInputs:
    return RunInputs("/repo", "/cwd", context, files)


def test_a_changed_manifest_changes_the_result_key_not_the_context():
    before, after = _inputs(), _inputs(files=(("a.yaml", "d2"),))
    assert before.result_key != after.result_key
    assert before.context_key == after.context_key
    assert before.name == after.name


def test_a_changed_argument_or_config_changes_both():
    before, after = _inputs(), _inputs(context=("v1", "--format sarif"))
    assert before.result_key != after.result_key
    assert before.context_key != after.context_key


def test_the_bytes_read_are_no_part_of_the_identity():
    assert _inputs() == RunInputs(
        "/repo", "/cwd", ("v1", "--format json"), (("a.yaml", "d1"),), {"a.yaml": b"x"}
    )


def test_manifest_inputs_digest_each_file_and_spend_the_budget_as_read_repo(tmp_path):
    write(tmp_path, "a.yaml", gpu_node("a"))
    write(tmp_path, "b.yaml", gpu_node("b"))
    source = WorkingTree(tmp_path)
    listing = source.list_manifests([])
    files, data, _, _ = manifest_inputs(source, listing, 1 << 20, 1 << 20)
    assert [f[0] for f in files] == ["a.yaml", "b.yaml"] and set(data) == {"a.yaml", "b.yaml"}
    size_a = (tmp_path / "a.yaml").stat().st_size
    files, data, _, _ = manifest_inputs(source, listing, 1 << 20, size_a)  # room for one file only
    assert files[1] == ("b.yaml", "over the input budget") and set(data) == {"a.yaml"}


def test_typed_entries_refuse_values_of_another_shape():
    entry = FileEntry("d", False, b"blob", ((("Node", None),), 0))
    assert FileEntry.loaded(entry.stored()) == entry
    assert FileEntry.loaded(("d", "no", b"blob", ((), 0))) is None
    assert load_entries({"a.yaml": entry.stored()}) == {"a.yaml": entry}
    assert load_entries({"a.yaml": entry.stored(), "b.yaml": (1, 2)}) is None
    assert PartitionEntry.loaded(("k", [], [], {}, None)) == PartitionEntry("k", [], [], {})
    assert PartitionEntry.loaded(("k", [], "x", {}, None)) is None
    assert PartitionEntry.loaded(("k", [], [], [], None)) is None  # the outcome: by record key
    assert PartitionEntry.loaded(("k", [], [], {})) is None  # an entry of the earlier shape
    assert PartitionEntry.loaded(("k", [], [])) is None  # an entry without its outcome
    # the texts of its findings: (width, one text each), at the width a run asks for
    held = PartitionEntry.loaded(("k", [("r",)], [], {}, (100, ["text"])))
    assert held is not None and held.texts_for(100) == ["text"] and held.texts_for(80) is None
    for texts in ((100, ["a", 1]), (100, ("a",)), ("100", ["a"]), (100,), [100, ["a"]]):
        entry_ = PartitionEntry.loaded(("k", [("r",)], [], {}, texts))
        assert entry_ is not None and entry_.texts is None  # the findings hold, not the texts
    assert (
        PartitionEntry.loaded(("k", [("r",), ("s",)], [], {}, (100, ["a"]))).texts_for(100) is None
    )


def test_stamps_of_another_shape_are_refused():
    record = bytes(inputs_mod._RECORD)
    good = ("a.yaml\0b.yaml", record * 2)
    assert inputs_mod.valid_stamps(good) and inputs_mod.valid_stamps(("", b""))
    assert list(inputs_mod.Stamps.loaded(good)) == ["a.yaml", "b.yaml"]
    assert len(inputs_mod.Stamps.loaded(("", b""))) == 0
    for bad in (
        {"a.yaml": ((10, 1, 2, 3, 4), "d" * 64)},  # the earlier shape: a dict
        ["a.yaml", record],  # a list
        ("a.yaml", record, b""),  # three values
        ("a.yaml", record[:-1]),  # a record cut short
        ("a.yaml", record * 2),  # fewer paths than records
        ("a.yaml\0b.yaml", record),  # more paths than records
        ("a.yaml", b""),  # a path without its record
        (b"a.yaml", record),  # paths as bytes
        ("a.yaml", bytearray(record)),  # records as a bytearray
        ("a.yaml", "x" * inputs_mod._RECORD),  # records as a string
    ):
        assert not inputs_mod.valid_stamps(bad), bad
        assert inputs_mod.Stamps.loaded(bad) is None


def test_a_stamp_out_of_the_records_range_is_not_kept(tmp_path, monkeypatch):
    """A stamp a record cannot hold (a number past 64 bits, a negative inode): that file is
    hashed every run, as one changed just now."""
    monkeypatch.setattr(inputs_mod, "RACY_NS", -(10**18))
    write(tmp_path, "a.yaml", gpu_node("a"))
    write(tmp_path, "b.yaml", gpu_node("b"))
    source = _Reads(tmp_path)
    listing = source.list_manifests([])
    odd = listing.files[0]
    listing.files[0] = dataclasses.replace(odd, stamp=(*odd.stamp[:3], -1, odd.stamp[4]))
    _, _, stamps, _ = manifest_inputs(source, listing, 1 << 20, 1 << 20)
    assert list(stamps) == ["b.yaml"]
    listing.files[0] = dataclasses.replace(odd, stamp=(odd.stamp[0], 1 << 64, *odd.stamp[2:]))
    _, _, stamps2, _ = manifest_inputs(source, listing, 1 << 20, 1 << 20, stamps)
    assert list(stamps2) == ["b.yaml"] and source.reads[-1:] == ["a.yaml"]


def _settle(path, seconds: float = 10) -> None:
    """Date the file's mtime back (its ctime moves to now: user space cannot date it back)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - int(seconds * 1e9)))


class _Reads(WorkingTree):
    """A working tree that counts the files read."""

    def __init__(self, root) -> None:
        super().__init__(root)
        self.reads: list[str] = []

    def read(self, rel, limit=1 << 20, follow_inside=False):
        self.reads.append(rel)
        return super().read(rel, limit, follow_inside)


def test_a_file_whose_stamp_is_held_is_not_read_again(tmp_path, monkeypatch):
    write(tmp_path, "a.yaml", gpu_node("a"))
    write(tmp_path, "b.yaml", gpu_node("b"))
    # every change counts as settled: ctime cannot be dated back from a test
    monkeypatch.setattr(inputs_mod, "RACY_NS", -(10**18))
    source = _Reads(tmp_path)
    files, data, stamps, held = manifest_inputs(source, source.list_manifests([]), 1 << 20, 1 << 20)
    assert set(stamps) == {"a.yaml", "b.yaml"} and source.reads == ["a.yaml", "b.yaml"]
    assert held == {}
    # what is stored is what is loaded, read as a mapping of path to (stamp, digest)
    stamps = inputs_mod.Stamps.loaded(stamps.stored())
    for rel in ("a.yaml", "b.yaml"):
        st = (tmp_path / rel).stat()
        stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
        assert stamps[rel] == (stamp, hashlib.sha256((tmp_path / rel).read_bytes()).hexdigest())
    again = _Reads(tmp_path)
    listing = again.list_manifests([])
    files2, data2, stamps2, held2 = manifest_inputs(again, listing, 1 << 20, 1 << 20, stamps)
    assert (files2, stamps2, again.reads, data2) == (files, stamps, [], {})
    assert held2 == {rel: digest for rel, digest in files}


def test_a_write_that_keeps_size_and_mtime_is_still_seen(tmp_path, monkeypatch):
    """The same size, the mtime put back (`touch -r`): the ctime moved, so the stamp did."""
    monkeypatch.setattr(inputs_mod, "RACY_NS", -(10**18))
    path = tmp_path / "a.yaml"
    write(tmp_path, "a.yaml", gpu_node("a"))
    source = _Reads(tmp_path)
    _, _, stamps, _ = manifest_inputs(source, source.list_manifests([]), 1 << 20, 1 << 20)
    before = path.stat()
    time.sleep(0.01)
    path.write_text(path.read_text().replace("name: a", "name: z"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    again = _Reads(tmp_path)
    files, _, _, _ = manifest_inputs(again, again.list_manifests([]), 1 << 20, 1 << 20, stamps)
    assert again.reads == ["a.yaml"]
    assert files[0][1] == hashlib.sha256(path.read_bytes()).hexdigest() != stamps["a.yaml"][1]


def test_a_file_changed_just_now_gets_no_stamp(tmp_path):
    """Racily clean (git's term): a write in the same timestamp tick after the read would
    leave the stamp as it is, so a file changed within RACY_NS is hashed again next time."""
    write(tmp_path, "a.yaml", gpu_node("a"))
    write(tmp_path, "old.yaml", gpu_node("old"))
    _settle(tmp_path / "old.yaml")
    source = WorkingTree(tmp_path)
    _, _, stamps, _ = manifest_inputs(source, source.list_manifests([]), 1 << 20, 1 << 20)
    assert "a.yaml" not in stamps  # changed just now (mtime and ctime)
    assert "old.yaml" not in stamps  # its ctime is now too: utime itself is a change


def test_a_warm_check_after_a_same_size_edit_with_the_mtime_put_back(tmp_path, monkeypatch):
    """End to end: stamps held for every file, one edited without changing its size or mtime:
    the next check reports the edit (the result cache misses), as a check without cache does."""
    from tests.conftest import MATRIX, run_main

    monkeypatch.setattr(inputs_mod, "RACY_NS", -(10**18))
    root, cache = tmp_path / "repo", tmp_path / "cache"
    write(root, "support-matrix.csv", MATRIX)
    write(root, "nodes/a.yaml", gpu_node("a", kernel="6.8.0-52-generic"))  # no image built
    args = ("check", str(root), "--cache-dir", str(cache), "--format", "json")
    first = run_main(*args)
    path = root / "nodes" / "a.yaml"
    before = path.stat()
    time.sleep(0.01)
    path.write_text(path.read_text().replace("name: a", "name: z"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    cached = run_main(*args)
    fresh = run_main(*args[:2], "--no-cache", "--format", "json")
    assert '"a"' in first.stdout or "node a" in first.stdout or " a " in first.stdout
    assert cached.stdout == fresh.stdout != first.stdout
    assert any(cache.glob("stamps-*.bin"))


CUDA_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: team-a}
spec:
  replicas: 1
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec:
      containers:
      - name: c
        image: nvcr.io/nvidia/cuda:12.8.0-base-ubuntu22.04
        resources: {limits: {nvidia.com/gpu: 1}}
"""


def _cached_and_fresh(*args: str, cache, env=None) -> tuple:
    from tests.conftest import run_main

    cached = run_main(*args, "--cache-dir", str(cache), env=env)
    fresh = run_main(*args, "--no-cache", env=env)
    assert cached.returncode == fresh.returncode, (cached.stderr, fresh.stderr)
    return cached.stdout, fresh.stdout


def test_the_markdown_links_follow_the_commit_checked(tmp_path):
    """The markdown report links each finding to GITHUB_SERVER_URL/GITHUB_REPOSITORY/blob/
    GITHUB_SHA (report/sections/findings.py `link_base`): in the whole-result key, or the run
    at the next commit replays links to the last one."""
    from tests.conftest import cli_env

    root = tmp_path / "repo"
    write(root, "nodes.yaml", gpu_node("gpu-0", branch="535"))
    write(root, "team-a/d.yaml", CUDA_DEPLOYMENT)
    args = ("check", str(root), "--matrix", "none", "--fail-on", "never", "--format", "markdown")
    github = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r"}
    for sha in ("aaa111", "bbb222"):
        cached, fresh = _cached_and_fresh(
            *args, cache=tmp_path / "cache", env=cli_env(**github, GITHUB_SHA=sha)
        )
        assert cached == fresh and f"https://github.com/o/r/blob/{sha}/team-a/d.yaml#L" in cached


def _reported(json_report: str) -> set[str]:
    """The rules of the findings a JSON report reports (not those a baseline suppressed)."""
    import json

    return {f["rule"] for f in json.loads(json_report)["findings"]}


def test_a_named_file_is_keyed_with_the_limit_the_run_reads_it_with(tmp_path):
    """`--inventory` is read with max_inventory_bytes and `--baseline` with 64 MiB: keyed with
    max_file_bytes, a larger one was keyed as unreadable and its edits never seen (a 9 MB
    `kubectl get nodes` export under the default 8 MiB). max_file_bytes is lowered here."""
    import json

    root = tmp_path / "repo"
    write(root, ".gpudrv-check.yaml", "max_file_bytes: 1500\n")
    write(root, "team-a/d.yaml", CUDA_DEPLOYMENT)
    nodes, baseline = tmp_path / "nodes.yaml", tmp_path / "baseline.json"
    padding = "# " + "x" * 2000 + "\n"  # over max_file_bytes, as read for the key
    args = ("check", str(root), "--matrix", "none", "--fail-on", "never", "--format", "json")
    inventory = ("--inventory", str(nodes))
    for branch in ("535", "570"):  # the node's driver moves on: GPU011 goes
        nodes.write_text(gpu_node("gpu-0", branch=branch) + padding)
        cached, fresh = _cached_and_fresh(*args, *inventory, cache=tmp_path / "cache")
        assert cached == fresh and ("GPU011" in _reported(cached)) == (branch == "535")

    nodes.write_text(gpu_node("gpu-0", branch="535") + padding)
    from tests.conftest import run_main

    written = run_main(*args, *inventory, "--no-cache", "--write-baseline", str(baseline))
    assert written.returncode == 0, written.stderr
    doc = json.loads(baseline.read_text())
    accepted = list(doc["findings"])
    assert any(f["rule"] == "GPU011" for f in accepted)
    for findings in (accepted, [f for f in accepted if f["rule"] != "GPU011"]):
        pad = {"rule": "GPU000", "object": "x", "file": "x", "fingerprint": "0" * 64}
        doc["findings"] = [*findings, {**pad, "message": "pad " * 500}]
        baseline.write_text(json.dumps(doc, indent=2))
        with_baseline = (*args, *inventory, "--baseline", str(baseline))
        cached, fresh = _cached_and_fresh(*with_baseline, cache=tmp_path / "cache-b")
        assert cached == fresh and ("GPU011" in _reported(cached)) == (findings is not accepted)
