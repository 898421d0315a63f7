"""`inventory import --write/--output`: what it refuses to write, and what it keeps."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_main

EXPORT = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "node-a", "labels": {"nvidia.com/gpu.present": "true", "pool": "a"}},
    "status": {"capacity": {"nvidia.com/gpu": "8"}},
}


def _repo(tmp_path: Path, inventory: str = "inventory/nodes.yaml") -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    (repo / "inventory").mkdir(parents=True)
    (repo / ".gpudrv-check.yaml").write_text(f"inventory: [{inventory}]\nmatrix: null\n")
    export = tmp_path / "export.json"
    export.write_text(json.dumps(EXPORT))
    return repo, export


def _write(repo: Path, export: Path):  # noqa: ANN202
    return run_main("inventory", "import", str(export), "--write", "--root", str(repo))


def test_an_inventory_path_outside_the_root_is_refused(tmp_path: Path) -> None:
    repo, export = _repo(tmp_path, "../outside.yaml")
    outside = tmp_path / "outside.yaml"
    outside.write_text("# not the checker's\n")
    result = _write(repo, export)
    assert result.returncode == 2, result.stderr
    assert "'../outside.yaml' leaves the repo root" in result.stderr
    assert outside.read_text() == "# not the checker's\n"
    # a link inside the root that points out of it is refused the same way
    repo2 = tmp_path / "two"
    repo2.mkdir()
    (repo2 / ".gpudrv-check.yaml").write_text("inventory: [nodes.yaml]\nmatrix: null\n")
    (repo2 / "nodes.yaml").symlink_to(outside)
    result = _write(repo2, export)
    assert result.returncode == 2 and "leaves the repo root" in result.stderr
    assert outside.read_text() == "# not the checker's\n"
    assert sorted(os.listdir(tmp_path)) == ["export.json", "outside.yaml", "repo", "two"]


def test_a_write_that_fails_is_a_usage_error_naming_the_file(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    repo, export = _repo(tmp_path)
    missing = tmp_path / "nonexistent" / "x.yaml"
    result = run_main("inventory", "import", str(export), "--output", str(missing))
    assert result.returncode == 2, result.stderr
    assert f"cannot write {missing}: No such file or directory" in result.stderr
    assert "internal error" not in result.stderr and not missing.parent.exists()
    result = run_main("inventory", "import", str(export), "--output", str(tmp_path))
    assert result.returncode == 2 and f"cannot write {tmp_path}: is a directory" in result.stderr
    assert sorted(os.listdir(tmp_path)) == ["export.json", "repo"]

    def read_only(*_args: object, **_kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", "x")

    monkeypatch.setattr("gpudrv_check.cli.commands.inventory.write_atomic", read_only)
    result = _write(repo, export)
    assert result.returncode == 2, result.stderr
    target = repo / "inventory" / "nodes.yaml"
    assert f"cannot write {target}: Permission denied; nothing written" in result.stderr
    assert not target.exists() and "internal error" not in result.stderr


HEADER_AND_NODE = """\
apiVersion: gpudrv-check.io/v1alpha1
kind: NodeInventory
nodes:
- name: node-a
  labels:
    nvidia.com/gpu.present: "true"
"""


def test_an_inventory_file_of_several_documents_is_refused(tmp_path: Path) -> None:
    repo, export = _repo(tmp_path)
    target = repo / "inventory" / "nodes.yaml"
    multi = (
        f"{HEADER_AND_NODE}---\n# hand-kept\napiVersion: v1\nkind: Node\nmetadata:\n  name: cpu\n"
    )
    target.write_text(multi)
    result = _write(repo, export)
    assert result.returncode == 2, result.stderr
    assert f"{target}:7: holds more than one YAML document" in result.stderr
    assert "nothing written" in result.stderr
    assert target.read_text() == multi
    assert os.listdir(target.parent) == ["nodes.yaml"]
    # a start marker before the one document, or an end marker after it, is one document
    target.write_text(f"---\n{HEADER_AND_NODE}...\n")
    assert _write(repo, export).returncode == 0
    assert "kind: NodeInventory" in target.read_text()


def test_only_comments_and_blank_lines_above_apiversion_are_kept(tmp_path: Path) -> None:
    repo, export = _repo(tmp_path)
    target = repo / "inventory" / "nodes.yaml"
    target.write_text(
        "# GPU nodes of prod\n\nkind: NodeInventory\napiVersion: gpudrv-check.io/v1alpha1\n"
        'nodes:\n- name: node-a\n  labels:\n    nvidia.com/gpu.present: "true"\n'
    )
    result = _write(repo, export)
    assert result.returncode == 0, result.stderr
    text = target.read_text()
    assert text.count("kind: NodeInventory") == 1
    assert "# GPU nodes of prod\n\napiVersion:" in text
    result = run_main("check", str(repo), "--format", "json")
    assert "Traceback" not in result.stderr and "duplicate" not in result.stdout.lower()


def test_a_json_inventory_file_is_refused(tmp_path: Path) -> None:
    repo, export = _repo(tmp_path)
    target = repo / "inventory" / "nodes.yaml"
    doc = '{"apiVersion": "gpudrv-check.io/v1alpha1", "kind": "NodeInventory", "nodes": []}\n'
    target.write_text(doc)
    result = _write(repo, export)
    assert result.returncode == 2, result.stderr
    assert f"{target} is JSON" in result.stderr and "nothing written" in result.stderr
    assert target.read_text() == doc


TWO_NODES = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {**EXPORT, "metadata": {"name": name, "labels": {"pool": name}}}
        for name in ("node-a", "node-b")
    ],
}


def test_a_section_comment_and_its_blank_lines_stay_with_the_next_node(tmp_path: Path) -> None:
    repo, export = _repo(tmp_path)
    export.write_text(json.dumps(TWO_NODES))
    assert _write(repo, export).returncode == 0
    target = repo / "inventory" / "nodes.yaml"
    section = "\n# ---- rack 2: owned by team-b ----\n\n- name: node-b\n"
    text = target.read_text().replace("- name: node-b\n", section)
    target.write_text(text)
    result = _write(repo, export)
    assert result.returncode == 0 and "up to date" in result.stderr, result.stderr
    assert target.read_text() == text
    changed = json.loads(json.dumps(TWO_NODES))
    changed["items"][0]["metadata"]["labels"]["pool"] = "changed"
    export.write_text(json.dumps(changed))
    result = _write(repo, export)
    assert result.returncode == 0 and "wrote" in result.stderr, result.stderr
    assert target.read_text() == text.replace('pool: "node-a"', 'pool: "changed"')


@pytest.mark.parametrize(("bom", "crlf"), [(True, False), (False, True), (True, True)])
def test_a_bom_and_crlf_line_ends_are_kept(tmp_path: Path, bom: bool, crlf: bool) -> None:
    repo, export = _repo(tmp_path)
    assert _write(repo, export).returncode == 0
    target = repo / "inventory" / "nodes.yaml"
    plain = target.read_bytes()
    styled = (b"\xef\xbb\xbf" if bom else b"") + (plain.replace(b"\n", b"\r\n") if crlf else plain)
    target.write_bytes(styled)
    result = _write(repo, export)
    assert result.returncode == 0 and "up to date" in result.stderr, result.stderr
    assert target.read_bytes() == styled
    changed = json.loads(json.dumps(EXPORT))
    changed["metadata"]["labels"]["pool"] = "b"
    export.write_text(json.dumps(changed))
    result = _write(repo, export)
    assert result.returncode == 0 and "wrote" in result.stderr, result.stderr
    data = target.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") == bom
    assert data.count(b"\r\n") == (data.count(b"\n") if crlf else 0)
    assert b'pool: "b"' in data and data.count(b"#: NodeInventory") == 1


def test_characters_beyond_the_bmp_round_trip(tmp_path: Path) -> None:
    from gpudrv_check.edit.inventory_import import read_export

    repo, export = _repo(tmp_path)
    doc = json.loads(json.dumps(EXPORT))
    doc["metadata"]["annotations"] = {"nvidia.com/owner": "team \U0001f680 gpu \\ud83d \u00e9"}
    export.write_text(json.dumps(doc))
    result = _write(repo, export)
    assert result.returncode == 0, result.stderr
    data = (repo / "inventory" / "nodes.yaml").read_bytes()
    assert b'"team \\U0001F680 gpu \\\\ud83d \\u00e9"' in data
    again = read_export("nodes.yaml", data)
    assert not [f for f in again.findings if f.severity.value == "error"]
    assert again.nodes[0].annotations["nvidia.com/owner"] == "team \U0001f680 gpu \\ud83d \u00e9"
    assert _write(repo, export).returncode == 0  # and it is up to date


def test_an_edit_made_while_the_import_runs_is_never_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer (an editor, a checkout) changes the inventory after the import read it:
    the import abandons its write (write_atomic's before_rename), as `plan --write` does."""
    import gpudrv_check.cli.commands.inventory as inventory

    repo, export = _repo(tmp_path)
    assert _write(repo, export).returncode == 0
    nodes = repo / "inventory" / "nodes.yaml"
    EXPORT["metadata"]["labels"]["pool"] = "b"  # an export that changes the file
    try:
        export.write_text(json.dumps(EXPORT))
    finally:
        EXPORT["metadata"]["labels"]["pool"] = "a"
    real = inventory.update

    def racing(old, *args, **kwargs):  # noqa: ANN001, ANN202
        with open(nodes, "a") as handle:
            handle.write("# someone else's edit, meanwhile\n")
        return real(old, *args, **kwargs)

    monkeypatch.setattr(inventory, "update", racing)
    result = _write(repo, export)
    assert result.returncode == 2, result.stderr
    assert "changed while it was being rewritten; nothing written" in result.stderr
    assert nodes.read_text().endswith("# someone else's edit, meanwhile\n")
    assert 'pool: "a"' in nodes.read_text()  # the export's pool b was not written
