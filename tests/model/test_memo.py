"""Validation remembered by the text of what it reads (core/memo.py): the same findings as
validating each copy, each at its own copy's key; values equal but of other types are never
taken for one another."""

from __future__ import annotations

from gpudrv_check.core import memo as memo_mod
from gpudrv_check.core.memo import TextMemo
from gpudrv_check.model import pod_resources
from gpudrv_check.model import workload as workload_mod
from tests.model.conftest import read


def test_a_memo_computes_once_per_text_and_tells_types_apart():
    calls: list[object] = []
    memo: TextMemo[tuple] = TextMemo()

    def compute(value: object) -> tuple:
        calls.append(value)
        return (value,)

    for value in ({"a": [1]}, {"a": [1]}, {"a": [True]}, {"a": [1.0]}, {"a": ["1"]}, {"a": [1]}):
        assert memo.get(value, compute, value) == (value,)
    assert calls == [{"a": [1]}, {"a": [True]}, {"a": [1.0]}, {"a": ["1"]}]


def test_a_long_input_is_not_remembered_and_a_full_table_starts_again(monkeypatch):
    memo: TextMemo[tuple] = TextMemo()
    long = "x" * (memo_mod.LONGEST + 1)
    assert memo.get(long, tuple, [1]) == (1,)
    assert memo.table == {}
    monkeypatch.setattr(memo_mod, "LIMIT", 2)
    for value in ("a", "b", "c"):
        memo.get(value, tuple, [2])
    assert list(memo.table) == ["'c'"]


_TWO_COPIES = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: first, namespace: a}
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec:
      tolerations:
      - {key: nvidia.com/gpu, operator: Exists, value: "yes"}
      nodeSelector: {gpu: %s}
      containers:
      - name: c
        resources: {limits: {nvidia.com/gpu: %s}, requests: {nvidia.com/gpu: 2}}
"""


def _findings(text: str) -> list[tuple[str, int, int, str]]:
    _, _, findings = read(text)
    return sorted(
        (f.location.file, f.location.line, f.location.column, f.message) for f in findings
    )


def _without_memo(monkeypatch, text: str) -> list[tuple[str, int, int, str]]:
    class Off(TextMemo):
        def get(self, value, compute, *args):
            return compute(*args)

    with monkeypatch.context() as m:
        m.setattr(workload_mod, "_PLACEMENT_PROBLEMS", Off())
        m.setattr(pod_resources, "_RESOURCE_PROBLEMS", Off())
        return _findings(text)


def test_each_copy_of_a_remembered_problem_is_found_at_its_own_key(monkeypatch):
    # two objects writing the same invalid toleration and resources, in one file: a finding
    # each, each at its own line, as validating each copy gives
    text = _TWO_COPIES % ('"on"', 1) + "---" + _TWO_COPIES % ('"on"', 1)
    found = _findings(text)
    assert found == _without_memo(monkeypatch, text)
    lines = {line for _, line, _, message in found if "tolerations" in message}
    assert len(lines) == 2


def test_equal_values_of_other_types_are_validated_each(monkeypatch):
    # nodeSelector {gpu: 1} (an int: refused) and {gpu: "1"} (a string: valid); limits of 1
    # and 1.5 GPUs: the second copy takes nothing from the first
    text = _TWO_COPIES % ("1", 2) + "---" + _TWO_COPIES % ('"1"', 1.5)
    found = _findings(text)
    assert found == _without_memo(monkeypatch, text)
    assert any("nodeSelector" in message for *_, message in found)
    assert sum("nodeSelector" in message for *_, message in found) == 1


def test_container_requests_are_a_new_dict_each_time():
    # k8s/resources.py container_requests remembers the parsed amounts; each caller gets its
    # own dict (pod_requests adds into what it gets)
    from fractions import Fraction

    from gpudrv_check.k8s.resources import container_requests, pod_requests

    container = {"resources": {"limits": {"nvidia.com/gpu": 2}, "requests": {"cpu": "500m"}}}
    first = container_requests(container)
    first["nvidia.com/gpu"] = Fraction(99)
    assert container_requests(container) == {"nvidia.com/gpu": 2, "cpu": Fraction(1, 2)}
    spec = {"containers": [container, container]}
    assert pod_requests(spec) == {"nvidia.com/gpu": 4, "cpu": 1}
    assert container_requests(container) == {"nvidia.com/gpu": 2, "cpu": Fraction(1, 2)}


def test_placement_keys_a_workload_by_the_text_its_validation_made_while_the_fields_are_its():
    from gpudrv_check.model.workload import placement_fields

    _, (workload,), _ = read(_TWO_COPIES % ('"on"', 1))
    fields = placement_fields(workload.pod_spec)
    made = workload.placement_text(fields)
    assert made == repr(fields) and made is workload._placement_read[1]  # reused
    # a spec admission replaced (a copy with other tolerations) is keyed by its own values
    spec = dict(workload.pod_spec, tolerations=[{"operator": "Exists"}])
    assert workload.placement_text(placement_fields(spec)) == repr(placement_fields(spec))
    assert workload.placement_text(placement_fields(spec)) != made


_AFFINITY = """
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: a}
spec:
  affinity: %s
  containers: [{name: c, image: busybox}]
"""


def test_an_affinity_that_is_no_mapping_is_not_taken_for_a_node_affinity(monkeypatch):
    # `affinity: x` and `affinity: {nodeAffinity: x}` read the same value at different keys:
    # each is found at its own (the first review of the memo found them sharing one entry)
    for first, second in (
        ("x", "{nodeAffinity: x}"),
        ("{nodeAffinity: x}", "x"),
        ("[]", "{nodeAffinity: []}"),
    ):
        text = _AFFINITY % ("a", first) + "---" + _AFFINITY % ("b", second)
        found = _findings(text)
        assert found == _without_memo(monkeypatch, text)
        messages = sorted(message.split(":")[0] for *_, message in found if "affinity" in message)
        assert messages == ["spec.affinity", "spec.affinity.nodeAffinity"]


def test_a_piece_written_alike_is_validated_once(monkeypatch):
    # the memo at work: two objects writing the same tolerations, node selector and resources
    # are validated once for each (with a fresh table, as in a run's first reading)
    calls: list[str] = []
    real_placement, real_resources = workload_mod._placement_validation, pod_resources._problems

    def placement(spec):
        calls.append("placement")
        return real_placement(spec)

    def resources(value):
        calls.append("resources")
        return real_resources(value)

    monkeypatch.setattr(workload_mod, "_PLACEMENT_PROBLEMS", TextMemo())
    monkeypatch.setattr(pod_resources, "_RESOURCE_PROBLEMS", TextMemo())
    monkeypatch.setattr(workload_mod, "_placement_validation", placement)
    monkeypatch.setattr(pod_resources, "_problems", resources)
    _, workloads, _ = read(_TWO_COPIES % ('"on"', 1) + "---" + _TWO_COPIES % ('"on"', 1))
    assert len(workloads) == 2
    assert sorted(calls) == ["placement", "resources"]
