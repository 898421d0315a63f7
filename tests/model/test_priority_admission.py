"""The Priority admission plugin gives a pod its PriorityClass's preemptionPolicy
(plugin/pkg/admission/priority/admission.go admitPod: the named class, else the
globalDefault one; a class without the field has PreemptLowerPriority), and the scheduler's
preemption message reads it (preemption.go: "not eligible due to preemptionPolicy=Never.")."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.engine.run import check
from gpudrv_check.read.config import Config
from tests.conftest import write

NODE = """apiVersion: v1
kind: Node
metadata: {name: n0, labels: {nvidia.com/gpu.present: "true"}}
status: {allocatable: {nvidia.com/gpu: "1"}}
"""


def _class(name: str, policy: str | None, default: bool = False) -> str:
    fields = f"preemptionPolicy: {policy}\n" if policy else ""
    fields += "globalDefault: true\n" if default else ""
    head = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
    return f"{head}metadata: {{name: {name}}}\nvalue: 1000\n{fields}"


def _pod(class_name: str | None) -> str:
    named = f"  priorityClassName: {class_name}\n" if class_name else ""
    return (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\nspec:\n"
        + named
        + "  containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 2}}}]\n"
    )


NEVER = "preemption: not eligible due to preemptionPolicy=Never."


@pytest.mark.parametrize(
    ("classes", "named", "never"),
    [
        ([("batch-never", "Never", False)], "batch-never", True),  # the named class
        ([("batch", None, False)], "batch", False),  # PreemptLowerPriority by default
        ([("quiet", "Never", True)], None, True),  # the globalDefault class, named by none
        ([("quiet", "Never", True), ("loud", None, False)], "loud", False),
        ([], "missing", False),  # a class the repo does not hold: nothing assumed
    ],
)
def test_a_pod_takes_its_classs_preemption_policy(tmp_path: Path, classes, named, never):
    write(tmp_path, "nodes.yaml", NODE)
    for name, policy, default in classes:
        write(tmp_path, f"classes/{name}.yaml", _class(name, policy, default))
    write(tmp_path, "pod.yaml", _pod(named))
    [f] = [f for f in check(tmp_path, Config(), "none").findings if f.rule == "GPU010"]
    assert (NEVER in f.message) is never, f.message
