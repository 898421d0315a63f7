"""One `RunInputs` per check (engine/cache/inputs.py): the whole-result key and the partition
context are both derived from it, so they cannot disagree about what an input is."""

from __future__ import annotations

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
    files, data = manifest_inputs(source, listing, 1 << 20, 1 << 20)
    assert [f[0] for f in files] == ["a.yaml", "b.yaml"] and set(data) == {"a.yaml", "b.yaml"}
    size_a = (tmp_path / "a.yaml").stat().st_size
    files, data = manifest_inputs(source, listing, 1 << 20, size_a)  # room for one file only
    assert files[1] == ("b.yaml", "over the input budget") and set(data) == {"a.yaml"}


def test_typed_entries_refuse_values_of_another_shape():
    entry = FileEntry("d", False, b"blob", ((("Node", None),), 0))
    assert FileEntry.loaded(entry.stored()) == entry
    assert FileEntry.loaded(("d", "no", b"blob", ((), 0))) is None
    assert load_entries({"a.yaml": entry.stored()}) == {"a.yaml": entry}
    assert load_entries({"a.yaml": entry.stored(), "b.yaml": (1, 2)}) is None
    assert PartitionEntry.loaded(("k", [], [], {})) == PartitionEntry("k", [], [], {})
    assert PartitionEntry.loaded(("k", [], "x", {})) is None
    assert PartitionEntry.loaded(("k", [], [], [])) is None  # the outcome: by record key
    assert PartitionEntry.loaded(("k", [], [])) is None  # an entry without its outcome
