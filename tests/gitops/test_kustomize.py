"""`--kustomize`: roots found, rendered offline by the real binary, findings at rendered lines."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gpudrv_check.read.kustomize import kustomize_command, plan
from gpudrv_check.read.tree import WorkingTree
from tests.conftest import MATRIX, gpu_node, run_main, write
from tests.gitops.conftest import commit

NEW_KERNEL = "6.8.0-52-generic"
KERNEL_KEY = "feature.node.kubernetes.io/kernel-version.full"

needs_kustomize = pytest.mark.skipif(
    kustomize_command() is None, reason="neither kustomize nor kubectl is on PATH"
)


def build_repo(root: Path) -> None:
    write(root, "support-matrix.csv", MATRIX)
    write(root, "base/kustomization.yaml", "resources: [nodes.yaml]\n")
    write(root, "base/nodes.yaml", gpu_node("a") + "---\n" + gpu_node("b", kernel=NEW_KERNEL))
    write(
        root,
        "overlays/prod/kustomization.yaml",
        """
        apiVersion: kustomize.config.k8s.io/v1beta1
        kind: Kustomization
        namePrefix: prod-
        resources:
        - ../../base
        patches:
        - path: kernel.yaml
        """,
    )
    # a partial Node: read on its own it would be a node without a driver branch label
    write(
        root,
        "overlays/prod/kernel.yaml",
        f"""
        apiVersion: v1
        kind: Node
        metadata:
          name: a
          labels:
            {KERNEL_KEY}: {NEW_KERNEL}
        """,
    )
    write(root, "overlays/dev/kustomization.yaml", "resources: [../../base]\nnameSuffix: -dev\n")
    write(
        root,
        "remote/kustomization.yaml",
        "resources:\n- ./local.yaml\n- https://github.com/example/gpu//base?ref=v1\n",
    )
    write(root, "remote/local.yaml", gpu_node("remote-local"))
    write(
        root,
        "helm/kustomization.yaml",
        "helmCharts:\n- name: gpu-operator\n  repo: https://helm.ngc.nvidia.com/nvidia\n",
    )
    write(root, "plain/n.yaml", gpu_node("plain", kernel=NEW_KERNEL))


def test_roots_are_kustomizations_nobody_references(tmp_path: Path):
    build_repo(tmp_path)
    tree = WorkingTree(tmp_path)
    the_plan = plan(tree, tree.list_manifests([]))
    assert the_plan.roots == ["helm", "overlays/dev", "overlays/prod", "remote"]
    assert the_plan.closure("overlays/prod") == {"overlays/prod", "base"}
    prod = the_plan.kustomizations["overlays/prod"]
    assert prod.dirs == ["base"] and prod.files == ["overlays/prod/kernel.yaml"]
    assert [(b.file, b.line, b.column) for b in the_plan.kustomizations["remote"].blockers] == [
        ("remote/kustomization.yaml", 3, 3)
    ]
    assert the_plan.kustomizations["helm"].blockers[0].line == 1


def _line_of(rendered: str, node: str, key: str) -> int:
    """The line of `key` inside the document of `node` in a rendered stream (1-based)."""
    docs_start = 1
    for chunk in rendered.split("\n---\n"):
        if f"name: {node}\n" in chunk + "\n":
            for i, line in enumerate(chunk.splitlines()):
                if line.strip().startswith(key + ":"):
                    return docs_start + i
        docs_start += chunk.count("\n") + 2
    raise AssertionError(f"{node} {key} not in rendered output")


def _render(root: Path, directory: str) -> str:
    command = kustomize_command()
    assert command is not None
    return subprocess.run(
        [*command, str(root / directory)], capture_output=True, text=True, check=True
    ).stdout


def _line_in(root: Path, rel: str, node: str, key: str) -> int:
    """The line of `key` in the document of Node `node` in a repo file (1-based)."""
    line = 1
    for chunk in (root / rel).read_text().split("---\n"):
        if f"  name: {node}\n" in chunk:
            for i, text in enumerate(chunk.splitlines()):
                if text.strip().startswith(key + ":"):
                    return line + i
        line += chunk.count("\n") + 1
    raise AssertionError(f"{node} {key} not in {rel}")


@pytest.mark.slow
@needs_kustomize
def test_rendered_objects_are_located_in_the_repo_files_they_come_from(tmp_path: Path):
    """kustomize's origin annotations (`config.kubernetes.io/origin`) name the file; the key
    is the one of the object's own document, or of the root's patch that sets it."""
    build_repo(tmp_path)
    result = run_main("check", str(tmp_path), "--kustomize", "--format", "json")
    assert result.returncode == 1, result.stderr
    doc = json.loads(result.stdout)
    got = sorted(
        (f["rule"], f["location"]["file"], f["location"]["line"], (f["object"] or {}).get("name"))
        for f in doc["findings"]
    )
    base_b = _line_in(tmp_path, "base/nodes.yaml", "b", KERNEL_KEY)
    patch_a = _line_in(tmp_path, "overlays/prod/kernel.yaml", "a", KERNEL_KEY)
    assert got == [
        ("GPU001", "base/nodes.yaml", base_b, "b-dev"),
        ("GPU001", "base/nodes.yaml", base_b, "prod-b"),
        # prod-a has the new kernel from the overlay's patch: that is the line to change
        ("GPU001", "overlays/prod/kernel.yaml", patch_a, "prod-a"),
        ("GPU001", "plain/n.yaml", 9, "plain"),
        ("GPU009", "helm/kustomization.yaml", 1, None),
        ("GPU009", "remote/kustomization.yaml", 3, None),
    ]
    messages = {f["object"]["name"]: f["message"] for f in doc["findings"] if f["object"]}
    assert messages["prod-a"].endswith("(as rendered by kustomize build overlays/prod)")
    assert messages["b-dev"].endswith("(as rendered by kustomize build overlays/dev)")
    assert messages["plain"].endswith("its GPUs vanish")
    remote = next(f for f in doc["findings"] if f["location"]["file"].startswith("remote/"))
    assert "not fetched (no network)" in remote["message"]
    # the partial patch file is not read as a Node of its own (it would be Node `a`)
    assert not any((f["object"] or {}).get("name") == "a" for f in doc["findings"])


@needs_kustomize
def test_ci_formats_name_repo_files_only(tmp_path: Path):
    build_repo(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    args = ["check", str(tmp_path), "--kustomize", "--fail-on", "never"]
    for fmt in ("sarif", "gitlab", "github"):
        args += ["--format", fmt, "--output", str(out / fmt)]
    assert run_main(*args).returncode == 0
    sarif = json.loads((out / "sarif").read_text())
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in sarif["runs"][0]["results"]
    }
    gitlab = {issue["location"]["path"] for issue in json.loads((out / "gitlab").read_text())}
    for path in uris | gitlab:  # each a file of the repo (run from outside it: root-relative)
        assert "(rendered)" not in path and "%28rendered%29" not in path
        assert (tmp_path / path).is_file(), path
    assert "(rendered)" not in (out / "github").read_text()


@needs_kustomize
def test_a_kustomization_may_read_files_of_the_root_outside_its_folder_as_flux_does(
    tmp_path: Path,
):
    """kustomize-controller builds with LoadRestrictionsNone (fluxcd/pkg kustomize
    SecureBuild) inside the source; a patch next door renders, one outside the root does not."""
    write(tmp_path, "support-matrix.csv", MATRIX)
    write(tmp_path, "base/kustomization.yaml", "resources: [nodes.yaml]\n")
    write(tmp_path, "base/nodes.yaml", gpu_node("a"))
    write(
        tmp_path,
        "clusters/prod/kustomization.yaml",
        "resources: [../../base]\npatches:\n- path: ../../patches/kernel.yaml\n",
    )
    write(
        tmp_path,
        "patches/kernel.yaml",
        f"apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n  labels:\n"
        f"    {KERNEL_KEY}: {NEW_KERNEL}\n",
    )
    result = run_main("check", str(tmp_path), "--kustomize", "--format", "json")
    findings = json.loads(result.stdout)["findings"]
    assert [(f["rule"], f["location"]["file"], f["location"]["line"]) for f in findings] == [
        ("GPU001", "patches/kernel.yaml", 6)
    ]


@pytest.mark.slow
@needs_kustomize
def test_kustomize_at_a_git_revision(git_repo: Path):
    build_repo(git_repo)
    commit(git_repo, "repo")
    # the working tree loses the overlay; the revision still has it
    (git_repo / "overlays" / "prod" / "kernel.yaml").unlink()
    result = run_main("check", str(git_repo), "--kustomize", "--rev", "HEAD", "--format", "json")
    names = sorted(
        f["object"]["name"] for f in json.loads(result.stdout)["findings"] if f["object"]
    )
    assert names == ["b-dev", "plain", "prod-a", "prod-b"]


@pytest.mark.slow
@needs_kustomize
def test_a_broken_kustomization_is_reported_and_its_files_still_read(git_repo: Path):
    write(git_repo, "support-matrix.csv", MATRIX)
    write(git_repo, "app/kustomization.yaml", "resources: [missing.yaml, n.yaml]\n")
    write(git_repo, "app/n.yaml", gpu_node("n", kernel=NEW_KERNEL))
    commit(git_repo, "broken")
    result = run_main("check", str(git_repo), "--kustomize", "--format", "concise")
    assert result.returncode == 1
    assert "app/kustomization.yaml:1:1: warning GPU009 kustomize build app failed:" in result.stdout
    assert "app/n.yaml:9:5: error GPU001 node n" in result.stdout
    assert str(git_repo) not in result.stdout  # kustomize's paths are shown relative
    # the same bytes from a revision (rendered from a temporary copy), run after run
    for _ in range(2):
        at_head = run_main(
            "check", str(git_repo), "--kustomize", "--rev", "HEAD", "--format", "concise"
        )
        assert (at_head.returncode, at_head.stdout) == (1, result.stdout)


def test_kustomize_without_a_binary_is_a_usage_error(tmp_path: Path):
    import os

    write(tmp_path, "support-matrix.csv", MATRIX)
    result = run_main("check", str(tmp_path), "--kustomize", env={**os.environ, "PATH": ""})
    assert result.returncode == 2
    assert "--kustomize needs `kustomize` or `kubectl` on PATH" in result.stderr


@needs_kustomize
def test_a_revision_is_written_out_for_kustomize_up_to_the_configured_limits(git_repo: Path):
    """`--rev --kustomize` writes the revision out for kustomize within max_file_bytes (as
    raised by the config, not the default) and max_total_bytes; a build that fails for a file
    left out names it."""
    big = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: a}\n"
    big += 'data:\n  x: "' + "a" * 3000 + '"\n'
    write(git_repo, ".gpudrv-check.yaml", "max_file_bytes: 5000\n")
    write(git_repo, "app/kustomization.yaml", "resources:\n- big.yaml\n")
    write(git_repo, "app/big.yaml", big)
    commit(git_repo, "a file under the configured limits")
    args = ("check", str(git_repo), "--kustomize", "--matrix", "none", "--format", "json")
    at_rev = json.loads(run_main(*args, "--rev", "HEAD").stdout)
    on_disk = json.loads(run_main(*args).stdout)
    assert at_rev["findings"] == on_disk["findings"] == []
    assert at_rev["summary"]["objects"] == on_disk["summary"]["objects"] == 1
    for config in ("max_file_bytes: 1000\n", "max_file_bytes: 5000\nmax_total_bytes: 1000\n"):
        write(git_repo, ".gpudrv-check.yaml", config)
        commit(git_repo, "a limit the file is over")
        result = json.loads(run_main(*args, "--rev", "HEAD").stdout)
        failed = [f for f in result["findings"] if "kustomize build app failed" in f["message"]]
        assert failed and "not written out for it" in failed[0]["message"], config
        assert "app/big.yaml" in failed[0]["message"]
