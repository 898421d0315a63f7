"""Kustomize patch files: reported once as not checkable, never read as objects."""

from __future__ import annotations

import pytest

from gpudrv_check.read.kustomization import patch_refs, resolve
from gpudrv_check.read.yaml_docs import parse_text
from tests.conftest import run_cli, write


@pytest.mark.parametrize(
    ("kustomization", "path", "expected"),
    [
        ("overlays/prod/kustomization.yaml", "patch.yaml", "overlays/prod/patch.yaml"),
        ("overlays/prod/kustomization.yaml", "../common/p.yaml", "overlays/common/p.yaml"),
        ("overlays/prod/kustomization.yaml", "./a/./b.yaml", "overlays/prod/a/b.yaml"),
        ("kustomization.yaml", "../outside.yaml", None),  # leaves the root
        ("a/kustomization.yaml", "../../outside.yaml", None),
        ("a/kustomization.yaml", "/etc/passwd", None),
        ("a/kustomization.yaml", "https://example.com/p.yaml", None),
        ("a/kustomization.yaml", "apiVersion: v1\nkind: Deployment", None),  # inline patch
        ("a/kustomization.yaml", "kind: Deployment", None),
        ("a/kustomization.yaml", "", None),
    ],
)
def test_patch_paths_resolve_inside_the_root(kustomization, path, expected):
    assert resolve(kustomization, path) == expected


def test_patch_refs_of_every_patch_field():
    data = (
        parse_text(
            "patchesStrategicMerge:\n- smp.yaml\n- |-\n  kind: Deployment\n"
            "patches:\n- path: p.yaml\n  target: {kind: Deployment}\n- patch: '[]'\n"
            "patchesJson6902:\n- target: {kind: Deployment}\n  path: j.yaml\n"
            "resources: [deploy.yaml]\n"
        )
        .docs[0]
        .data
    )
    refs = patch_refs("o/kustomization.yaml", data)
    assert {rel: (r.field, r.line, r.column) for rel, r in refs.items()} == {
        "o/smp.yaml": ("patchesStrategicMerge", 2, 3),
        "o/p.yaml": ("patches", 6, 3),
        "o/j.yaml": ("patchesJson6902", 11, 3),
    }


@pytest.mark.parametrize(
    "text", ["", "text", "[1]", "patches: p.yaml", "patches: [1, null]", "patches: [{path: 3}]"]
)
def test_odd_kustomizations_name_no_patches(text):
    docs = parse_text(text).docs
    assert patch_refs("kustomization.yaml", docs[0].data if docs else None) == {}


def test_patch_files_are_not_checked_as_objects(tmp_path):
    write(tmp_path, "base/kustomization.yaml", "resources: [deploy.yaml]\n")
    write(
        tmp_path,
        "base/deploy.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: x\n",
    )
    write(
        tmp_path,
        "prod/kustomization.yaml",
        "resources: [../base]\npatchesStrategicMerge: [replicas.yaml]\n",
    )
    write(tmp_path, "staging/kustomization.yaml", "patches:\n- path: ../prod/replicas.yaml\n")
    write(
        tmp_path,
        "prod/replicas.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: x\n",
    )
    result = run_cli("check", str(tmp_path), "--matrix", "none", "--format", "concise")
    # the notes of what a repo without nodes does not check (issue 13) left out
    lines = [line for line in result.stdout.splitlines() if not line.startswith("note: ")]
    assert lines == [
        "base/deploy.yaml:5:3: error GPU040 spec.replicas must be a non-negative integer, not 'x'",
        "prod/replicas.yaml:1:1: warning GPU009 Kustomize patch (listed in "
        "prod/kustomization.yaml:2 patchesStrategicMerge): a partial object, not checkable "
        "on its own",
        "5 files, 1 object read; 1 error, 1 warning",
    ]
