"""A null in chart values (review, issue 22 round): Helm deletes a key the user sets to null
from the merged values ("Deleting a default key"; its coalesce `delete`s it), so the chart's
template sees no key and the ClusterPolicy it renders has none: the field takes the
ClusterPolicy's (the operator's) default, not the chart's values.yaml default."""

from __future__ import annotations

from pathlib import Path

from gpudrv_check.model.mig import build_mig
from gpudrv_check.model.upgrade_flow import MANUAL, upgrade_flow
from tests.conftest import gpu_node, run_main, write
from tests.model.test_driver_plan import helmrelease, run


def _repo(tmp_path: Path, values: str) -> Path:
    write(tmp_path, "n0.yaml", gpu_node("n0"))
    write(tmp_path, "hr.yaml", helmrelease("v26.7.0", values))
    return tmp_path


def test_a_null_upgrade_policy_renders_none(tmp_path: Path) -> None:
    # templates/clusterpolicy.yaml `{{- if .Values.driver.upgradePolicy }}`; with no policy
    # upgrade_controller.go leaves the upgrade off (`UpgradePolicy == nil`)
    root = _repo(tmp_path, "    driver:\n      version: '550.90.07'\n      upgradePolicy: null\n")
    assert upgrade_flow(run(root).repo).kind == MANUAL
    root = _repo(tmp_path, "    driver:\n      version: '550.90.07'\n")
    assert upgrade_flow(run(root).repo).kind != MANUAL  # the chart's default: autoUpgrade on


def test_a_null_switch_takes_the_operators_default(tmp_path: Path) -> None:
    # `enabled: {{ .Values.dcgm.enabled }}` renders null: DCGMSpec.IsEnabled, nil is enabled
    root = _repo(tmp_path, "    driver: {version: '550.90.07'}\n    dcgm: {enabled: null}\n")
    on = run_main("operands", str(root), "--matrix", "none")
    assert "nvidia-dcgm " in on.stdout or "nvidia-dcgm\n" in on.stdout
    root = _repo(tmp_path, "    driver: {version: '550.90.07'}\n")
    off = run_main("operands", str(root), "--matrix", "none")
    assert "nvidia-dcgm " not in off.stdout and "nvidia-dcgm\n" not in off.stdout


def test_a_null_driver_version_renders_none(tmp_path: Path) -> None:
    # `{{- if .Values.driver.version }}`: repository and image stay, no version (v26.7
    # imagePath: "repository, image and version must all be set")
    root = _repo(tmp_path, "    driver: {version: null}\n")
    assert any(
        f.rule == "GPU014" and "must all be set" in f.message for f in run(root, "v26.7.0").findings
    )


def test_a_null_mig_strategy_renders_none(tmp_path: Path) -> None:
    # `{{- if .Values.mig.strategy }}`: no MIG_STRATEGY, the device plugin's own `none`
    root = _repo(tmp_path, "    mig: {strategy: null}\n")
    node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: m0\n  labels:\n"
    node += '    nvidia.com/gpu.present: "true"\n    nvidia.com/mig.config: all-enabled\n'
    write(root, "m0.yaml", node)
    state = build_mig(run(root).repo)
    assert state is not None and state.strategy is None and state.chart is False
