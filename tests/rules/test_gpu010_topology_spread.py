"""GPU010 for replicas Pending because topology spread that must hold keeps them out of the
domains with room (rules/GPU010 `_skew_finding`), after kube-scheduler's PodTopologySpread
filter (pkg/scheduler/framework/plugins/podtopologyspread filtering.go `Filter`: a node fails
when its domain's matching pods plus one, less the fewest in any domain, exceed maxSkew; and
common.go `matchNodeInclusionPolicies`: nodeTaintsPolicy nil is Ignore, so a tainted node's
domain still counts). Expected values are ours, worked out from those functions."""

from __future__ import annotations

from pathlib import Path

from gpudrv_check.engine.run import check
from gpudrv_check.read.config import Config
from tests.model.test_topology_spread import TAINTED, deployment, node, zone_spread

A1, B1 = node("a1", "a", 4), node("b1", "b", 4)
C1_TAINTED = node("c1", "c", 4, TAINTED)


def _gpu010(tmp_path: Path, nodes: list[str], text: str) -> list:
    (tmp_path / "nodes.yaml").write_text("apiVersion: v1\nkind: List\nitems:\n" + "".join(nodes))
    (tmp_path / "w.yaml").write_text(text)
    return [f for f in check(tmp_path, Config(matrix=None)).findings if f.rule == "GPU010"]


def test_a_tainted_zone_counts_and_holds_the_others_to_max_skew(tmp_path: Path):
    # zones a, b, c; c's only node is tainted but counts (Ignore) with 0 pods: a and b take one
    # pod each (0 + 1 + 1 - 0 > 1 for a second), two of four stay Pending though a1 and b1 have
    # room for three more each
    [f] = _gpu010(tmp_path, [A1, B1, C1_TAINTED], deployment(4, zone_spread()))
    # at the constraint's maxSkew: `topologySpreadConstraints: [{maxSkew: 1, ...` on line 10
    assert (f.location.file, f.location.line, f.location.column) == ("w.yaml", 10, 36)
    assert f.severity.value == "error"
    assert f.message.startswith(
        "Deployment ml/w: 2 of 4 pods stay Pending (Deployment/ml/w#2, Deployment/ml/w#3): "
        "its topology spread over zone (maxSkew 1) lets a domain hold at most the fewest pods "
        "of any domain plus 1, and the domains with room are at that limit: 0/3 nodes are "
        "available: 1 node(s) had untolerated taint(s), 2 node(s) didn't match pod topology "
        "spread constraints."
    )
    assert "set `nodeTaintsPolicy: Honor`" in (f.hint or "")


def test_honoured_taints_leave_the_zone_out_and_nothing_is_pending(tmp_path: Path):
    # nodeTaintsPolicy: Honor (matchNodeInclusionPolicies): c is no domain, a and b split 2/2
    spread = zone_spread(nodeTaintsPolicy="Honor")
    assert _gpu010(tmp_path, [A1, B1, C1_TAINTED], deployment(4, spread)) == []


def test_without_a_tainted_domain_the_fix_says_nothing_of_taints(tmp_path: Path):
    # a holds 4 GPUs, b 1: b fills at one pod, a then takes two (1 + 1 = 2 <= 1 + 1) and no
    # more: 3 of 5 run; b1 reads Insufficient, a1 the skew reason
    [f] = _gpu010(tmp_path, [A1, node("b1", "b", 1)], deployment(5, zone_spread()))
    assert f.message.startswith("Deployment ml/w: 2 of 5 pods stay Pending")
    assert "1 Insufficient nvidia.com/gpu, 1 node(s) didn't match pod topology spread" in (
        f.message
    )
    assert "nodeTaintsPolicy" not in (f.hint or "")


def test_room_for_every_replica_is_no_finding(tmp_path: Path):
    assert _gpu010(tmp_path, [A1, B1], deployment(4, zone_spread())) == []
