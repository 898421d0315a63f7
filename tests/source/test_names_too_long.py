"""Names the system refuses to look up (a component over NAME_MAX, 255 bytes on Linux: stat
fails with ENAMETOOLONG, which pathlib's is_file/exists do not swallow) never end a run in an
internal error, wherever the repo or the command line names them (read/safe_io.py `is_file`,
`is_dir`, `lexists`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import run_main, write

LONG = "a" * 256
CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: '${A}'}\n"


def _no_internal_error(result) -> None:
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr


def test_a_kustomization_resource_too_long_under_a_flux_path(tmp_path: Path):
    # the Flux scope reads the kustomization (model/placeholders.py), which asks whether each
    # resource is a link leaving the root (read/kustomize.py `_leaves_root`)
    write(
        tmp_path,
        "flux.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: "
        "Kustomization\nmetadata: {name: apps}\nspec:\n  path: ./apps\n"
        "  postBuild: {substitute: {A: b}}\n",
    )
    write(tmp_path, "apps/kustomization.yaml", f"resources: [{LONG}, cm.yaml]\n")
    write(tmp_path, "apps/cm.yaml", CONFIG_MAP)
    result = run_main("check", str(tmp_path), "--matrix", "none")
    _no_internal_error(result)
    assert result.returncode in (0, 1)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (kustomize) is not on PATH")
def test_a_kustomization_resource_too_long_with_kustomize(tmp_path: Path):
    write(tmp_path, "kustomization.yaml", f"resources: [{LONG}]\n")
    write(tmp_path, "cm.yaml", CONFIG_MAP)
    result = run_main("check", str(tmp_path), "--kustomize", "--matrix", "none")
    _no_internal_error(result)
    # the build fails in kustomize itself: said at the kustomization, the run goes on
    assert "GPU009" in result.stdout and result.returncode in (0, 1)


@pytest.mark.parametrize("option", ["--matrix", "--inventory", "--config"])
def test_a_file_named_on_the_command_line_too_long_is_a_usage_error(tmp_path: Path, option):
    write(tmp_path, "cm.yaml", CONFIG_MAP)
    result = run_main("check", str(tmp_path), option, str(tmp_path / LONG))
    _no_internal_error(result)
    assert result.returncode == 2 and "not found" in result.stderr


def test_a_policies_entry_too_long_is_no_internal_error(tmp_path: Path):
    write(tmp_path, ".gpudrv-check.yaml", f"matrix: null\npolicies: [{LONG}]\n")
    write(tmp_path, "cm.yaml", CONFIG_MAP)
    result = run_main("check", str(tmp_path))
    _no_internal_error(result)
