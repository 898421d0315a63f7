"""model/occupancy.py keeps what nodes lack up to date instead of asking every node again for
each Pending replica (issue 22: 89 s of a 10k-workload run). Pinned against the plain loop it
replaces, evaluated at the same moment: every message and `short` of random small repos."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from gpudrv_check.engine.run import load
from gpudrv_check.k8s.scheduler import fit_error_message, fits_request
from gpudrv_check.model.occupancy import REASON_ANTI_AFFINITY, Occupancy
from gpudrv_check.read.config import Config

NODE = """apiVersion: v1
kind: Node
metadata:
  name: n{i:02d}
  labels: {{zone: z{zone}}}
status:
  allocatable: {{cpu: "{cpu}", pods: "{pods}", nvidia.com/gpu: "{gpus}"}}
"""
DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {{name: w{i:03d}, namespace: ml}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: w{i:03d}}}}}
  template:
    metadata: {{labels: {{app: w{i:03d}}}}}
    spec:
      {selector}containers:
      - name: main
        image: busybox
        resources: {{limits: {{nvidia.com/gpu: {gpus}, cpu: "{cpu}"}}}}
"""


def _plain(occ: Occupancy, demand, record) -> tuple[str, tuple]:
    """The loop over every node that _pending_message replaced (as issue 17 wrote it)."""
    workload, requests, domain_of = demand.workload, demand.requests, demand.domains
    placement = occ.placement
    verdicts = placement.verdicts(workload)
    held = {domain_of[n] for n in record.nodes if n is not None} if domain_of else set()
    reasons, short, no_victims = [], {}, 0
    for node in placement.nodes:
        verdict = verdicts[node.name]
        if not verdict.ok:
            reasons.extend(placement.node_reasons(verdict))
            continue
        alloc = occ._alloc[node.name]
        taken = (
            []
            if alloc is None
            else fits_request(requests, alloc, occ.used[node.name], occ.pods[node.name])
        )
        if taken:
            reasons.extend(s.reason for s in taken)
            short.update((s.resource, None) for s in taken)
        elif domain_of is not None and domain_of.get(node.name) in held:
            reasons.append(REASON_ANTI_AFFINITY)
        else:
            continue
        no_victims += 1
    total = len(placement.nodes)
    post = placement.release.postfilter(total, workload.preemption_policy, no_victims)
    return fit_error_message(total, reasons, postfilter_message=post), tuple(short)


class _Checked(Occupancy):
    compared = 0

    def _pending_message(self, demand, record, rid):
        got = super()._pending_message(demand, record, rid)
        assert got == _plain(self, demand, record), demand.key
        _Checked.compared += 1
        return got


def _repo(tmp_path: Path, seed: int):
    rng = random.Random(seed)
    for i in range(rng.randint(3, 9)):
        values = dict(
            i=i,
            zone=i % 3,
            cpu=rng.choice((4, 8, 16)),
            pods=rng.choice((3, 5, 110)),
            gpus=rng.choice((0, 2, 8)),
        )
        (tmp_path / f"node{i}.yaml").write_text(NODE.format(**values))
    for i in range(rng.randint(5, 30)):
        selector = rng.choice(("", "", "nodeSelector: {zone: z1}\n      "))
        values = dict(
            i=i,
            replicas=rng.randint(1, 6),
            gpus=rng.choice((0, 1, 2, 8)),
            cpu=rng.choice((1, 2, 6)),
            selector=selector,
        )
        (tmp_path / f"w{i:03d}.yaml").write_text(DEPLOYMENT.format(**values))
    return load(tmp_path, Config(), matrix_override="none").repo


@pytest.mark.parametrize("seed", range(12))
def test_pending_messages_are_those_of_the_loop_over_every_node(tmp_path: Path, seed: int):
    before = _Checked.compared
    _Checked(_repo(tmp_path, seed))
    assert _Checked.compared > before  # each repo has Pending replicas to compare


class _Forgetful(set):
    def add(self, key) -> None:  # never remembers a hopeless request
        pass


@pytest.mark.parametrize("seed", range(12))
def test_replicas_land_where_they_do_without_the_hopeless_memo(tmp_path: Path, seed: int):
    repo = _repo(tmp_path, seed)
    remembered, forgetful = Occupancy(repo), _ForgetfulOccupancy(repo)
    assert remembered.records() == forgetful.records()
    assert _nodes(remembered) == _nodes(forgetful)
    assert any(pending for _, pending, _, _ in remembered.records().values())  # some Pending


def _nodes(occ: Occupancy) -> dict[str, list]:
    return {key: r.nodes for key, r in occ.outcomes.items()}


class _ForgetfulOccupancy(Occupancy):
    def _next(self, demand, cursor, held, rid):
        self._hopeless = _Forgetful()
        return super()._next(demand, cursor, held, rid)
