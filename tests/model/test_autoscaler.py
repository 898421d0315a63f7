"""A HorizontalPodAutoscaler of the repo keeps its target's replicas within its bounds before
any metric moves them (kubernetes pkg/controller/podautoscaler/horizontal.go
reconcileAutoscaler: the current count raised to minReplicas, default 1, and cut to
maxReplicas; a target scaled to 0 is not autoscaled; two HPAs on one target: the controller
scales neither, AmbiguousSelector). The capacity simulation and the budgets count those pods."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.engine.run import load
from gpudrv_check.read.config import Config
from tests.conftest import write


def _deployment(replicas: str) -> str:
    count = f"  replicas: {replicas}\n" if replicas else ""
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: infer, namespace: ml}\n"
        f"spec:\n{count}  selector: {{matchLabels: {{app: infer}}}}\n  template:\n"
        "    metadata: {labels: {app: infer}}\n"
        "    spec: {containers: [{name: c, image: x}]}\n"
    )


def _hpa(name: str, bounds: str, kind: str = "Deployment", target: str = "infer") -> str:
    return (
        f"apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\n"
        f"metadata: {{name: {name}, namespace: ml}}\nspec:\n"
        f"  scaleTargetRef: {{apiVersion: apps/v1, kind: {kind}, name: {target}}}\n{bounds}"
    )


@pytest.mark.parametrize(
    ("replicas", "hpas", "pods"),
    [
        ("", [_hpa("h", "  minReplicas: 3\n  maxReplicas: 5\n")], 3),  # 1 raised to 3
        ("7", [_hpa("h", "  minReplicas: 3\n  maxReplicas: 5\n")], 5),  # cut to 5
        ("4", [_hpa("h", "  maxReplicas: 5\n")], 4),  # minReplicas 1: within bounds
        ("0", [_hpa("h", "  minReplicas: 3\n  maxReplicas: 5\n")], 0),  # scaled to 0: not scaled
        (
            "",
            [
                _hpa("a", "  minReplicas: 3\n  maxReplicas: 5\n"),
                _hpa("b", "  minReplicas: 2\n  maxReplicas: 2\n"),
            ],
            1,
        ),  # ambiguous: neither
        ("", [_hpa("h", "  minReplicas: 3\n  maxReplicas: 5\n", target="other")], 1),
        ("", [_hpa("h", "  minReplicas: 3\n  maxReplicas: 5\n", kind="StatefulSet")], 1),
        ("", [_hpa("h", "  minReplicas: 3\n")], 1),  # no maxReplicas: not a valid HPA
    ],
)
def test_an_hpa_sets_its_targets_replicas(tmp_path: Path, replicas: str, hpas: list, pods: int):
    write(tmp_path, "d.yaml", _deployment(replicas))
    write(tmp_path, "h.yaml", "---\n".join(hpas))
    [workload] = load(tmp_path, Config(matrix=None)).repo.workloads
    assert workload.replicas == pods
