"""The fleet's driver upgrade rehearsal as the repo states it: the upgrade flow, the target,
each managed GPU node's facts, then model/rehearsal.py `rehearse`. The `rehearse` command and
the HTML report's timeline both take it from here."""

from __future__ import annotations

from gpudrv_check.core.finding import Location
from gpudrv_check.model.driver import driver_managed, label_keys
from gpudrv_check.model.rehearsal import Rehearsal, node_runs, rehearse
from gpudrv_check.model.repo import Repo
from gpudrv_check.model.upgrade_flow import (
    CONTROLLER,
    POLICY_PATH,
    UpgradeFlow,
    policy_source,
    upgrade_flow,
)
from gpudrv_check.model.upgrade_plan import DriverVersion
from gpudrv_check.nvidia.driver_image import driver_facts, os_tag, precompiled_tag
from gpudrv_check.nvidia.upgrade import effective_upgrade_policy


def configured_target(repo: Repo) -> str | None:
    """The operator configuration's `driver.version`, the target when none is given."""
    if repo.operator is None:
        return None
    configured = repo.operator.get("driver", "version")
    return configured if isinstance(configured, str) else None


def _flow(repo: Repo, notes: list[str]) -> UpgradeFlow:
    flow = upgrade_flow(repo)
    if flow.kind == CONTROLLER:
        return flow
    if flow.config is None:
        notes.append(
            "no operator config in the repo: rehearsing the gpu-operator chart's defaults "
            "(autoUpgrade on, maxParallelUpgrades 1, maxUnavailable 25%)"
        )
        return UpgradeFlow(CONTROLLER, None, effective_upgrade_policy(None, "helm"))
    notes.append(
        f"{flow.config.describe()} does not turn the upgrade controller on (autoUpgrade off or "
        "sandboxWorkloads on): rehearsing what autoUpgrade: true would do"
    )
    return UpgradeFlow(CONTROLLER, flow.config, {**flow.policy, "autoUpgrade": True})


def _node_facts(repo: Repo, version: DriverVersion | None) -> tuple[list, dict, dict, dict]:
    matrix = repo.matrix
    assert matrix is not None
    keys = label_keys(repo.config)
    # the controller walks nodes in the API's order; by name is the stable stand-in
    nodes = sorted((n for n in repo.gpu_nodes if driver_managed(n)), key=lambda n: n.name)
    needs: dict[str, bool] = {}
    image: dict[str, bool] = {}
    tags: dict[str, str | None] = {}
    branches: dict[tuple[str, str], list[int]] = {}
    for row in matrix.rows:
        if row.driver_branch.isdigit():
            branches.setdefault((row.kernel, row.os_tag), []).append(int(row.driver_branch))
    for node in nodes:
        facts, _ = driver_facts(node.labels, keys)
        ostag = os_tag(facts.os_id, facts.os_version_id, repo.config.operator.version) or ""
        kernel = facts.kernel or ""
        current = facts.driver_version
        if version is None:
            best = max(branches.get((kernel, ostag), [0]))
            major = facts.driver_major or ""
            needs[node.name] = bool(best) and (not major.isdigit() or int(major) < best)
            image[node.name] = bool(best)
            continue
        needs[node.name] = current != version.text
        tag = precompiled_tag(version.major, kernel, ostag) if kernel and ostag else None
        tags[node.name] = tag
        image[node.name] = tag is not None and matrix.has(version.major, kernel, ostag)
    return nodes, needs, image, tags


def _no_pod_deletion(flow: UpgradeFlow) -> bool:
    config = flow.config
    if config is None or policy_source(config) != "clusterpolicy":
        return False
    raw = config.get(*POLICY_PATH)
    return not isinstance(raw, dict) or raw.get("podDeletion") is None


def fleet_rehearsal(repo: Repo, version: DriverVersion | None) -> Rehearsal:
    """The rehearsal to `version` (None: each node to the newest branch the matrix has for
    it); the repo has a support matrix."""
    assert repo.matrix is not None
    notes: list[str] = []
    flow = _flow(repo, notes)
    nodes, needs, image, tags = _node_facts(repo, version)
    matrix = repo.matrix
    matrix_at = Location(file=matrix.file, line=matrix.end_line + 1)
    result = rehearse(
        repo, flow, node_runs(repo, nodes, needs, image, tags), matrix_at, _no_pod_deletion(flow)
    )
    missing = [n.name for n in nodes if needs[n.name] and not image[n.name]]
    if missing:
        shown = ", ".join(missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        notes.append(
            f"{len(missing)} node(s) need a driver image the support matrix lacks ({shown}): "
            "build and record them before the upgrade starts; the controller admits such a "
            "node anyway, evicts its GPU pods, and leaves it in pod-restart-required"
        )
    result.notes = notes
    return result
