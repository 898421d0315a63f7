"""GPU021 (anti-affinity leaves no spare domain), GPU022 (upgrade states), GPU023 (drain)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import MATRIX, cluster_policy, gpu_node, helm_release, write
from tests.upgrade.conftest import (
    anti_affinity,
    deployment,
    gpu_cluster,
    located,
    messages,
    where,
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("replicas", "nodes", "severity", "text"),
    [
        (4, 3, "error", "1 replica stays Pending already"),
        (5, 3, "error", "2 replicas stay Pending already"),
        (4, 4, "warning", "draining any one of gpu-0, gpu-1, gpu-2, gpu-3"),
        (3, 4, None, None),  # a spare node
        (1, 1, None, None),  # one replica: no sibling to keep apart
    ],
)
def test_gpu021_per_node(tmp_path: Path, replicas: int, nodes: int, severity, text):
    gpu_cluster(tmp_path, nodes)
    write(tmp_path, "trainer.yaml", deployment("trainer", replicas, extra_spec=anti_affinity()))
    got = located(tmp_path, "GPU021")
    if severity is None:
        assert got == []
        return
    line, column = where(tmp_path, "trainer.yaml", "topologyKey")
    assert got == [("trainer.yaml", line, column, severity)]
    assert text in messages(tmp_path, "GPU021")[0]


ZONES = {"gpu-0": {"zone": "a"}, "gpu-1": {"zone": "a"}, "gpu-2": {"zone": "b"}}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("replicas", "zones", "severity"),
    [
        (3, ZONES, "error"),  # 3 replicas, 2 zones
        (2, ZONES, "warning"),  # zone b is a single node: draining it strands one
        (2, {**ZONES, "gpu-3": {"zone": "b"}}, None),  # every zone has two nodes
        (2, {"gpu-0": {"zone": "a"}, "gpu-1": {"zone": "b"}}, None),  # gpu-2 lacks the key
    ],
)
def test_gpu021_any_topology_key(tmp_path: Path, replicas: int, zones: dict, severity):
    gpu_cluster(tmp_path, len(zones) if "gpu-3" in zones else 3, zones)
    write(
        tmp_path, "trainer.yaml", deployment("trainer", replicas, extra_spec=anti_affinity("zone"))
    )
    got = located(tmp_path, "GPU021")
    assert [g[3] for g in got] == ([severity] if severity else [])


def test_gpu021_ignores_anti_affinity_to_other_pods(tmp_path: Path):
    gpu_cluster(tmp_path, 2)
    spec = anti_affinity(app="database")
    write(tmp_path, "trainer.yaml", deployment("trainer", 4, extra_spec=spec))
    assert located(tmp_path, "GPU021") == []


def test_gpu021_counts_only_eligible_nodes(tmp_path: Path):
    gpu_cluster(tmp_path, 4, {"gpu-3": {"pool": "reserved"}})
    spec = anti_affinity() + (
        "        nodeAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n"
        "            nodeSelectorTerms:\n            - matchExpressions:\n"
        "              - key: pool\n                operator: DoesNotExist\n"
    )
    write(tmp_path, "trainer.yaml", deployment("trainer", 4, extra_spec=spec))
    assert [g[3] for g in located(tmp_path, "GPU021")] == ["error"]
    assert "only 3 eligible nodes (gpu-0, gpu-1, gpu-2)" in messages(tmp_path, "GPU021")[0]


@pytest.mark.parametrize(
    ("zone_of", "nodes", "replicas", "said", "drained"),
    [
        # zone a of seven nodes and zone b of one, three replicas: zone a's first five nodes
        # named, two counted
        (
            lambda i: "a" if i < 7 else "b",
            8,
            3,
            "only 2 eligible zone domains (a: gpu-0, gpu-1, gpu-2, gpu-3, gpu-4 and 2 more; "
            "b: gpu-7): 1 replica stays Pending already",
            # only gpu-7 is alone in its domain: draining a node of zone a moves its replica
            "and draining GPU node gpu-7 for a driver upgrade strands one more",
        ),
        # seven zones of one node, eight replicas: four domains named, apart by semicolons,
        # and three counted
        (
            lambda i: f"z{i}",
            7,
            8,
            "only 7 eligible zone domains (z0: gpu-0; z1: gpu-1; z2: gpu-2; z3: gpu-3; and 3 more "
            "domains): 1 replica stays Pending already",
            "and draining any one of gpu-0, gpu-1, gpu-2, gpu-3, gpu-4 and 2 more for a driver "
            "upgrade strands one more",
        ),
    ],
    ids=["nodes of a domain", "domains"],
)
def test_gpu021_names_a_few_domains_and_nodes_and_counts_the_rest(
    tmp_path: Path, zone_of, nodes: int, replicas: int, said: str, drained: str
):
    """GPU021 `_domains_text`: four domains and five nodes of each named, the rest counted, and
    the message still says what a drain does."""
    gpu_cluster(tmp_path, nodes, {f"gpu-{i}": {"zone": zone_of(i)} for i in range(nodes)})
    spec = anti_affinity("zone")
    write(tmp_path, "trainer.yaml", deployment("trainer", replicas, extra_spec=spec))
    [message] = messages(tmp_path, "GPU021")
    assert said in message
    assert message.endswith(drained)


def node_with(tmp_path: Path, labels: str) -> Path:
    write(tmp_path, "support-matrix.csv", MATRIX)
    write(tmp_path, "node.yaml", gpu_node("gpu-0").replace("  labels:\n", "  labels:\n" + labels))
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize(
    ("labels", "needle", "severity", "text"),
    [
        (
            "    nvidia.com/gpu-driver-upgrade-state: upgrade-dne\n",
            "nvidia.com/gpu-driver-upgrade-state",
            "error",
            "not a state the GPU Operator's upgrade controller writes",
        ),
        (
            "    nvidia.com/gpu-driver-upgrade-state: upgrade-failed\n",
            "nvidia.com/gpu-driver-upgrade-state",
            "error",
            "the driver upgrade failed on node gpu-0",
        ),
        (
            '    nvidia.com/gpu-driver-upgrade.skip: "true"\n',
            "nvidia.com/gpu-driver-upgrade.skip",
            "info",
            "excluded from automatic driver upgrades",
        ),
        (
            '    nvidia.com/gpu-driver-upgrade.skip: "yes"\n',
            "nvidia.com/gpu-driver-upgrade.skip",
            "warning",
            "skips a node only for the exact value true",
        ),
    ],
)
def test_gpu022(tmp_path: Path, labels: str, needle: str, severity: str, text: str):
    root = node_with(tmp_path, labels)
    line, column = where(root, "node.yaml", needle)
    assert located(root, "GPU022") == [("node.yaml", line, column, severity)]
    assert text in messages(root, "GPU022")[0]


@pytest.mark.slow
@pytest.mark.parametrize("state", ["upgrade-done", "drain-required", "validation-required"])
def test_gpu022_known_states_are_quiet(tmp_path: Path, state: str):
    root = node_with(tmp_path, f"    nvidia.com/gpu-driver-upgrade-state: {state}\n")
    assert located(root, "GPU022") == []


def test_gpu022_in_a_node_inventory(tmp_path: Path):
    write(tmp_path, "support-matrix.csv", MATRIX)
    write(
        tmp_path,
        "inventory.yaml",
        """
        apiVersion: gpudrv-check.io/v1alpha1
        kind: NodeInventory
        nodes:
        - name: gpu-0
          labels:
            nvidia.com/gpu.present: "true"
            nvidia.com/gpu-driver-upgrade-state: upgrade-failed
        """,
    )
    line, column = where(tmp_path, "inventory.yaml", "nvidia.com/gpu-driver-upgrade-state")
    assert located(tmp_path, "GPU022") == [("inventory.yaml", line, column, "error")]


CLUSTER_POLICY = cluster_policy(
    "  driver:\n    upgradePolicy:\n      autoUpgrade: true\n      drain:\n        enable: true\n"
    "{extra}"
)

HELM_RELEASE = helm_release(
    "v25.10.0",
    "  values:\n    driver:\n      upgradePolicy:\n        drain:\n          enable: true\n",
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "expected"),
    [("", True), ('        podSelector: "app=trainer"\n', False)],
)
def test_gpu023_cluster_policy(tmp_path: Path, extra: str, expected: bool):
    gpu_cluster(tmp_path, 1)
    write(tmp_path, "cp.yaml", CLUSTER_POLICY.format(extra=extra))
    got = located(tmp_path, "GPU023")
    if not expected:
        assert got == []
        return
    line, column = where(tmp_path, "cp.yaml", "enable")
    assert got == [("cp.yaml", line, column, "warning")]
    message = messages(tmp_path, "GPU023")[0]
    assert message.startswith("spec.driver.upgradePolicy.drain.enable is true without")
    assert "autoUpgrade is false" not in message


def test_gpu023_helm_values_and_defaults(tmp_path: Path):
    gpu_cluster(tmp_path, 1)
    write(tmp_path, "hr.yaml", HELM_RELEASE)
    line, column = where(tmp_path, "hr.yaml", "enable")
    assert located(tmp_path, "GPU023") == [("hr.yaml", line, column, "warning")]
    # the chart turns autoUpgrade on, so the drain is live
    assert "autoUpgrade is false" not in messages(tmp_path, "GPU023")[0]
    write(tmp_path, "hr.yaml", HELM_RELEASE.replace("enable: true", "enable: false"))
    assert located(tmp_path, "GPU023") == []


def test_gpu023_notes_an_inactive_policy(tmp_path: Path):
    gpu_cluster(tmp_path, 1)
    write(
        tmp_path,
        "cp.yaml",
        CLUSTER_POLICY.format(extra="").replace("autoUpgrade: true", "autoUpgrade: false"),
    )
    assert "not acted on while autoUpgrade is false" in messages(tmp_path, "GPU023")[0]


@pytest.mark.parametrize(("replicas", "fewer"), [(2, "run 1 replica;"), (3, "run 2 replicas;")])
def test_gpu021_the_fix_counts_in_the_singular_and_plural(tmp_path: Path, replicas, fewer):
    from gpudrv_check.engine.run import check
    from gpudrv_check.read.config import Config

    gpu_cluster(tmp_path, replicas)
    write(tmp_path, "trainer.yaml", deployment("trainer", replicas, extra_spec=anti_affinity()))
    [f] = [f for f in check(tmp_path, Config(matrix=None)).findings if f.rule == "GPU021"]
    assert f.hint is not None and f"make one more node eligible, or {fewer}" in f.hint
