"""Helpers for the upgrade-safety tests: findings with their locations, small repos."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import MATRIX, gpu_node, run_main, write


def where(root: Path, rel: str, needle: str, nth: int = 1) -> tuple[int, int]:
    """1-based (line, column) of the nth occurrence of ``needle`` in the file."""
    count = 0
    for number, line in enumerate((root / rel).read_text().splitlines(), start=1):
        column = line.find(needle)
        if column >= 0:
            count += 1
            if count == nth:
                return number, column + 1
    raise AssertionError(f"{needle!r} not in {rel}")


def findings(root: Path, *args: str) -> list[dict]:
    result = run_main("check", str(root), "--format", "json", "--fail-on", "never", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["findings"]


def located(root: Path, rule: str) -> list[tuple[str, int, int, str]]:
    """(file, line, column, severity) of every finding of ``rule``."""
    return [
        (f["location"]["file"], f["location"]["line"], f["location"]["column"], f["severity"])
        for f in findings(root)
        if f["rule"] == rule
    ]


def messages(root: Path, rule: str) -> list[str]:
    return [f["message"] for f in findings(root) if f["rule"] == rule]


def gpu_cluster(root: Path, count: int, extra_labels: dict[str, dict[str, str]] | None = None):
    """``count`` GPU nodes gpu-0.. in nodes.yaml (one document each) and the matrix."""
    docs = []
    for i in range(count):
        name = f"gpu-{i}"
        extra = ""
        for key, value in (extra_labels or {}).get(name, {}).items():
            extra += f'    {key}: "{value}"\n'
        text = gpu_node(name)
        if extra:
            text = text.replace("  labels:\n", "  labels:\n" + extra, 1)
        docs.append(text)
    write(root, "nodes.yaml", "---\n".join(docs))
    write(root, "support-matrix.csv", MATRIX)


def deployment(
    name: str,
    replicas: int,
    namespace: str = "ml",
    labels: str = "app: {name}",
    extra_spec: str = "",
) -> str:
    """A Deployment whose pod template carries ``labels`` and ``extra_spec`` (pod spec keys)."""
    pod_labels = labels.format(name=name)
    return (
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n"
        f"  namespace: {namespace}\nspec:\n  replicas: {replicas}\n  selector:\n"
        f"    matchLabels:\n      {pod_labels}\n  template:\n    metadata:\n      labels:\n"
        f"        {pod_labels}\n    spec:\n      containers:\n      - name: main\n"
        f"        image: nvcr.io/nvidia/pytorch:24.07-py3\n" + extra_spec
    )


def anti_affinity(key: str = "kubernetes.io/hostname", app: str = "trainer") -> str:
    return (
        "      affinity:\n        podAntiAffinity:\n"
        "          requiredDuringSchedulingIgnoredDuringExecution:\n"
        f"          - labelSelector:\n              matchLabels:\n                app: {app}\n"
        f"            topologyKey: {key}\n"
    )


def pdb(name: str, body: str, namespace: str = "ml", api: str = "policy/v1") -> str:
    return (
        f"apiVersion: {api}\nkind: PodDisruptionBudget\nmetadata:\n  name: {name}\n"
        f"  namespace: {namespace}\nspec:\n" + body
    )


def gpu_node_with(name: str, labels: str, **kwargs: str) -> str:
    """`gpu_node` with extra label lines (indented four spaces) first in its labels."""
    return gpu_node(name, **kwargs).replace("  labels:\n", "  labels:\n" + labels, 1)
