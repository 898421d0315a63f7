"""Each GPU node's driver image: the tag it needs and whether the matrix has it."""

from __future__ import annotations

from dataclasses import dataclass

from gpudrv_check.config import Config
from gpudrv_check.model.node import Node
from gpudrv_check.model.repo import Repo
from gpudrv_check.nvidia.driver_image import (
    DEPLOY_DRIVER_LABEL,
    DEPLOY_OPERANDS_LABEL,
    TagResult,
    driver_image_tag,
)


def label_keys(config: Config) -> dict[str, object]:
    """The config's label keys in the names `nvidia.driver_image` reads."""
    keys = config.labels
    return {
        "driver_major": tuple(keys.driver_branch),
        "kernel": keys.kernel,
        "os_id": keys.os_id,
        "os_version_id": keys.os_version_id,
    }


def operator_version(repo: Repo) -> str | None:
    return repo.config.operator.version


def node_tag(node: Node, repo: Repo) -> TagResult:
    return driver_image_tag(node.labels, operator_version(repo), label_keys(repo.config))


def driver_managed(node: Node) -> bool:
    """Whether the operator installs this node's driver (not pre-installed on the host)."""
    labels = node.labels
    return (
        labels.get(DEPLOY_DRIVER_LABEL) != "false" and labels.get(DEPLOY_OPERANDS_LABEL) != "false"
    )


@dataclass(frozen=True)
class AuditEntry:
    node: Node
    result: TagResult
    in_matrix: bool

    @property
    def missing(self) -> bool:
        return self.result.ok and not self.in_matrix


def audit_entries(repo: Repo) -> list[AuditEntry]:
    """Every GPU node with an operator-managed driver, by name, looked up in the matrix."""
    entries = []
    for node in sorted(repo.gpu_nodes, key=lambda n: n.name):
        if not driver_managed(node):
            continue
        result = node_tag(node, repo)
        found = False
        if result.ok and repo.matrix is not None:
            branch, kernel, ostag = _split(result, node, repo)
            found = repo.matrix.has(branch, kernel, ostag)
        entries.append(AuditEntry(node, result, found))
    return entries


def _split(result: TagResult, node: Node, repo: Repo) -> tuple[str, str, str]:
    """The (branch, kernel, os_tag) triple behind a tag, for the matrix lookup."""
    from gpudrv_check.nvidia.driver_image import driver_facts, os_tag

    facts, _ = driver_facts(node.labels, label_keys(repo.config))
    ostag = os_tag(facts.os_id, facts.os_version_id, operator_version(repo)) or ""
    return facts.driver_major or "", facts.kernel or "", ostag
