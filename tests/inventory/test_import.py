"""`inventory import`: a `kubectl get nodes` export → the compact NodeInventory (docs/inventory.md).

The expected bytes in tests/inventory/expected/ were reviewed by hand: sorted nodes and keys,
double-quoted values, only the facts the checker reads.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from gpudrv_check.edit.inventory_import import read_export, render, update
from tests.conftest import EXAMPLES, run_main

EXPECTED = Path(__file__).parent / "expected"
LAB_NODES = EXAMPLES / "lab" / "k8s" / "nodes.yaml"


def _lab_export(heartbeat: str = "2026-12-01T03:17:00Z", version: str = "1") -> dict:
    """The lab's nodes as `kubectl get nodes -o json` prints them, volatile fields included."""
    from ruamel.yaml import YAML

    doc = YAML(typ="safe").load(LAB_NODES.read_text())
    for i, node in enumerate(doc["items"]):
        meta = node["metadata"]
        meta.update(
            uid=f"00000000-0000-0000-0000-00000000000{i}",
            resourceVersion=version,
            creationTimestamp=f"2026-0{i + 1}-01T00:00:00Z",
            managedFields=[{"manager": "kubelet", "time": heartbeat}],
        )
        meta["labels"]["feature.node.kubernetes.io/cpu-cpuid.AVX512F"] = "true"  # dropped
        status = node["status"]
        status["conditions"][0]["lastHeartbeatTime"] = heartbeat
        status["images"] = [{"names": [f"nvcr.io/nvidia/cuda:{i}"], "sizeBytes": 123}]
        status["nodeInfo"] = {"kernelVersion": "5.15.0", "bootID": heartbeat}
        status["capacity"] = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"}
        status["allocatable"] = {"cpu": "63500m", "memory": "500Gi", "nvidia.com/gpu": "8"}
    doc["kind"] = "List"
    doc["metadata"] = {"resourceVersion": ""}
    return doc


def test_import_of_the_lab_nodes_is_pinned_bytes(tmp_path: Path) -> None:
    result = run_main("inventory", "import", str(LAB_NODES), "--source-name", "lab")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (EXPECTED / "lab-nodes.yaml").read_text()


def test_a_json_export_keeps_only_what_the_checker_reads(tmp_path: Path) -> None:
    export = tmp_path / "nodes.json"
    export.write_text(json.dumps(_lab_export(), indent=2))
    result = run_main("inventory", "import", str(export), "--source-name", "production")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text == (EXPECTED / "lab-export.yaml").read_text()
    body = text[text.index("apiVersion:") :]
    for volatile in ("Heartbeat", "resourceVersion", "uid", "nvcr.io", "bootID", "cpu-cpuid"):
        assert volatile not in body
    # the newest creationTimestamp, not the time of the import, is what the header dates
    assert "created 2026-03-01T00:00:00Z" in text


def test_reimporting_an_unchanged_cluster_gives_the_same_bytes(tmp_path: Path) -> None:
    first = read_export("production", json.dumps(_lab_export()).encode())
    later = _lab_export(heartbeat="2026-12-02T03:17:00Z", version="98765")
    later["items"].reverse()  # the API server's order is not the file's
    second = read_export("production", json.dumps(later).encode())
    assert render(first) == render(second)


def test_the_imported_inventory_gives_the_lab_the_same_verdicts(tmp_path: Path) -> None:
    repo = tmp_path / "lab"
    shutil.copytree(EXAMPLES / "lab", repo)
    before = run_main("check", str(repo), "--format", "json")
    imported = run_main("inventory", "import", str(repo / "k8s" / "nodes.yaml"))
    assert imported.returncode == 0, imported.stderr
    (repo / "k8s" / "nodes.yaml").write_text(imported.stdout)
    after = run_main("check", str(repo), "--format", "json")
    assert (before.returncode, after.returncode) == (1, 1)

    def verdicts(out: str) -> list[tuple]:
        findings = json.loads(out)["findings"]
        return sorted((f["rule"], json.dumps(f.get("object")), f["message"]) for f in findings)

    assert verdicts(before.stdout) == verdicts(after.stdout)
    audit_before = run_main("audit", str(EXAMPLES / "lab")).stdout
    assert run_main("audit", str(repo)).stdout == audit_before


def test_keys_and_values_yaml_would_misread_round_trip(tmp_path: Path) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "yes",
            "labels": {"123": "on", "pool": 'a "quoted"\\value', "example.com/x": "dropped"},
        },
        "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule", "timeAdded": "x"}]},
    }
    imported = read_export("n.json", json.dumps(node).encode())
    text = render(imported)
    assert '- name: "yes"' in text and '"123": "on"' in text
    assert "example.com/x" not in text and "timeAdded" not in text
    again = read_export("n.yaml", text.encode())
    # quotes and a backslash survive the round trip; such a value is no label value the API
    # server takes (apimachinery IsValidLabelValue), which the reader says at the key
    found = [(f.rule, str(f.location), f.message.split(":")[0]) for f in again.findings]
    assert found == [("GPU005", "n.yaml:11:5", "nodes[0].labels")]
    assert again.nodes[0].labels == {"123": "on", "pool": 'a "quoted"\\value'}
    assert again.nodes[0].taints == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    kept = render(read_export("n.json", json.dumps(node).encode()), ["example.com/"])
    assert '    example.com/x: "dropped"' in kept


def test_write_updates_the_configured_file_keeping_comments(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "inventory").mkdir(parents=True)
    (repo / ".gpudrv-check.yaml").write_text("inventory: [inventory/nodes.yaml]\nmatrix: null\n")
    export = tmp_path / "nodes.json"
    export.write_text(json.dumps(_lab_export()))
    args = ("inventory", "import", str(export), "--write", "--root", str(repo))
    assert run_main(*args, "--source-name", "prod").returncode == 0
    target = repo / "inventory" / "nodes.yaml"
    text = target.read_text()
    text = text.replace("apiVersion:", "# owned by the platform team\napiVersion:", 1)
    text = text.replace("- name: lab-node-1\n", "# the node that lags\n- name: lab-node-1\n")
    text = text.replace(
        '    nvidia.com/cuda.driver.major: "535"\n',
        '    nvidia.com/cuda.driver.major: "535"  # pinned until the 550 image is built\n',
    )
    target.write_text(text)
    before = os.stat(target)
    result = run_main(*args, "--source-name", "prod")
    assert result.returncode == 0 and "up to date" in result.stderr
    after = os.stat(target)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)

    changed = _lab_export()
    changed["items"][1]["metadata"]["labels"]["nvidia.com/cuda.driver.minor"] = "184"
    del changed["items"][2]
    export.write_text(json.dumps(changed))
    assert run_main(*args, "--source-name", "prod").returncode == 0
    updated = target.read_text()
    assert "# owned by the platform team\napiVersion:" in updated
    assert "# the node that lags\n- name: lab-node-1\n" in updated
    assert '"535"  # pinned until the 550 image is built\n' in updated
    assert 'nvidia.com/cuda.driver.minor: "184"' in updated
    assert "lab-node-2" not in updated
    assert updated.startswith("#: NodeInventory of 2 nodes imported from prod")


def test_update_of_a_file_it_did_not_write_keeps_the_top_comments() -> None:
    imported = read_export("n.yaml", LAB_NODES.read_bytes())
    hand = "# hand-written\napiVersion: gpudrv-check.io/v1alpha1\nkind: NodeInventory\nnodes: []\n"
    text = update(hand, imported)
    assert "\n# hand-written\napiVersion:" in text
    assert text.replace("# hand-written\n", "") == render(imported)


def test_bad_input_is_a_usage_error_with_its_reason(tmp_path: Path) -> None:
    not_nodes = tmp_path / "pods.yaml"
    not_nodes.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n")
    result = run_main("inventory", "import", str(not_nodes))
    assert result.returncode == 2 and "no Node object found" in result.stderr
    broken = tmp_path / "broken.json"
    broken.write_text('{"kind": "List", "items": [')
    result = run_main("inventory", "import", str(broken))
    assert result.returncode == 2 and "broken.json:" in result.stderr
    assert "Traceback" not in result.stderr
    result = run_main("inventory", "import", str(LAB_NODES), "--max-bytes", "100")
    assert result.returncode == 2 and "over --max-bytes (100)" in result.stderr
    result = run_main("inventory", "import", "-", "--max-bytes", "10", input="x" * 100)
    assert result.returncode == 2 and "over --max-bytes (10)" in result.stderr


def test_findings_in_the_export_are_printed_and_the_rest_imported(tmp_path: Path) -> None:
    doc = _lab_export()
    doc["items"][0]["spec"]["taints"] = [{"key": "a", "effect": "Sometimes"}]
    export = tmp_path / "nodes.json"
    export.write_text(json.dumps(doc, indent=1))
    result = run_main("inventory", "import", str(export))
    assert result.returncode == 1
    assert "nodes.json:" in result.stderr and "GPU040" in result.stderr
    assert result.stdout.count("- name: lab-node-") == 3
    assert "Sometimes" not in result.stdout


def test_stdin_is_read(tmp_path: Path) -> None:
    result = run_main("inventory", "import", "-", input=json.dumps(_lab_export()))
    assert result.returncode == 0, result.stderr
    assert "imported from standard input" in result.stdout


def test_write_with_cluster_updates_that_clusters_inventory(tmp_path: Path) -> None:
    repo = tmp_path / "multi"
    shutil.copytree(EXAMPLES / "multi-cluster", repo)
    staging = repo / "clusters" / "staging" / "nodes.yaml"
    production = (repo / "clusters" / "production" / "nodes.yaml").read_bytes()
    args = ("inventory", "import", str(LAB_NODES), "--write", "--root", str(repo))
    result = run_main(*args, "--cluster", "staging")
    assert result.returncode == 0, result.stderr
    text = staging.read_text()
    assert text.count("- name: lab-node-") == 3
    # a file import did not write keeps the comments above apiVersion, after the header
    assert "\n# The staging cluster's GPU nodes" in text
    assert (repo / "clusters" / "production" / "nodes.yaml").read_bytes() == production
    result = run_main(*args)  # the repo's config names no inventory file
    assert result.returncode == 2 and "found none" in result.stderr
    result = run_main(*args, "--cluster", "qa")
    assert result.returncode == 2 and "no cluster named 'qa'" in result.stderr


def test_write_keeps_the_label_keys_the_config_reads_the_driver_tag_from(tmp_path: Path) -> None:
    """`labels.kernel: example.com/kernel-version` names where the kernel is (read/config.py
    LabelKeys): an import for that repo keeps the key, or audit finds the label missing."""
    repo = tmp_path / "repo"
    (repo / "inventory").mkdir(parents=True)
    (repo / ".gpudrv-check.yaml").write_text(
        "inventory: [inventory/nodes.yaml]\nmatrix: null\n"
        "labels:\n  kernel: example.com/kernel-version\n  driver_branch: [example.com/branch]\n"
    )
    labels = {
        "example.com/kernel-version": "5.15.0-119-generic",
        "example.com/branch": "550",
        "example.com/other": "dropped",
        "nvidia.com/gpu.present": "true",
        "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
    }
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1", "labels": labels}}
    export = tmp_path / "nodes.json"
    export.write_text(json.dumps(node))
    args = ("inventory", "import", str(export), "--write", "--root", str(repo))
    assert run_main(*args).returncode == 0
    text = (repo / "inventory" / "nodes.yaml").read_text()
    body = text[text.index("nodes:") :]
    assert body == (
        "nodes:\n"
        "- name: gpu-1\n"
        "  labels:\n"
        '    example.com/branch: "550"\n'
        '    example.com/kernel-version: "5.15.0-119-generic"\n'
        '    feature.node.kubernetes.io/system-os_release.ID: "ubuntu"\n'
        '    feature.node.kubernetes.io/system-os_release.VERSION_ID: "22.04"\n'
        '    nvidia.com/gpu.present: "true"\n'
    )
    write_matrix = repo / "support-matrix.csv"
    write_matrix.write_text("driver_branch,kernel,os_tag\n550,5.15.0-119-generic,ubuntu22.04\n")
    audit = run_main("audit", str(repo), "--matrix", str(write_matrix))
    assert (audit.returncode, audit.stdout) == (0, "OK\n"), audit.stderr
    # the default keys are in the kept families: the header names nothing more
    (repo / ".gpudrv-check.yaml").write_text("inventory: [inventory/nodes.yaml]\nmatrix: null\n")
    assert run_main(*args).returncode == 0
    assert "Kept: the label families of docs/inventory.md, nvidia.com/" in " ".join(
        line.removeprefix("#: ")
        for line in (repo / "inventory" / "nodes.yaml").read_text().splitlines()
    )


def test_a_json_number_label_value_is_imported_as_its_text_with_a_json_warning(
    tmp_path: Path,
) -> None:
    """The API server decodes labels into map[string]string: a JSON number there is refused
    (encoding/json "cannot unmarshal number"). The import keeps the text meant, quoted, warns in
    the file's own syntax (GPU007), and exits 0 as for any warning (docs/inventory.md)."""
    export = tmp_path / "nodes.json"
    export.write_text(
        '{"apiVersion": "v1", "kind": "Node",\n'
        ' "metadata": {"name": "gpu-1", "labels": {"pool": 1, "ready": true}}}\n'
    )
    result = run_main("inventory", "import", str(export))
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "nodes.json:2:43: warning GPU007 label 'pool' is written as a JSON number (1); "
        "the API server rejects non-string label values",
        "nodes.json:2:54: warning GPU007 label 'ready' is written as a JSON boolean (true); "
        "the API server rejects non-string label values",
    ]
    assert '    pool: "1"\n    ready: "true"\n' in result.stdout
    fixes = [f.hint for f in read_export("nodes.json", export.read_bytes()).findings]
    assert fixes == ['Quote it: `"pool": "1"`.', 'Quote it: `"ready": "true"`.']
    yaml_fixes = [f.hint for f in read_export("nodes.yaml", export.read_bytes()).findings]
    assert yaml_fixes == ['Quote it: `pool: "1"`.', 'Quote it: `ready: "true"`.']
