"""Shared capacity counts what each pod holds as the scheduler's NodeInfo does: whole units per
pod (pkg/scheduler/framework types.go ``Resource.Add``: ``MilliValue()`` of cpu, ``Value()`` of
memory and every other resource), not the exact sum of the requests."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from gpudrv_check.k8s.scheduler import counted
from tests.conftest import write
from tests.rules.test_placement_rules import found


@pytest.mark.parametrize(
    ("resource", "amount", "held"),
    [
        ("memory", Fraction(1, 2), Fraction(1)),  # 500m bytes: Value() rounds up to 1
        ("memory", Fraction(3), Fraction(3)),
        ("cpu", Fraction(1, 2000), Fraction(1, 1000)),  # 500u: MilliValue() 1
        ("cpu", Fraction(1, 4), Fraction(1, 4)),
        ("nvidia.com/gpu", Fraction(1), Fraction(1)),
    ],
)
def test_what_one_pod_holds(resource: str, amount: Fraction, held: Fraction):
    assert counted(resource, amount) == held


def test_two_pods_of_half_a_byte_fill_a_two_byte_node(tmp_path: Path):
    # NodeInfo holds 1 byte per pod: the third replica finds no memory (the exact sum, 1.5
    # bytes, would have let it run)
    write(
        tmp_path,
        "all.yaml",
        """\
apiVersion: v1
kind: Node
metadata: {name: n, labels: {nvidia.com/gpu.present: "true"}}
status: {allocatable: {memory: "2", cpu: "8", pods: "110"}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ml}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: c, image: busybox, resources: {requests: {memory: 500m}}}
""",
    )
    [f] = found(tmp_path, "GPU010")
    assert "1 of 3 pods stay Pending (Deployment/ml/web#2)" in f.message
    assert "1 Insufficient memory" in f.message
