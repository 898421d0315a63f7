"""Reading past documents nothing checks (the engine's skim plan, rules/plan.py
`current_plan`: asked in each test, so collecting this module parses nothing), and the light
parser events.

A skimmed document must report exactly what a fully built one reports (syntax, nesting,
duplicate keys, tags, non-scalar keys), keep its metadata whole, and differ only in the content
it does not keep.
"""

from __future__ import annotations

import pytest

from gpudrv_check.core.located import LMap, LSeq
from gpudrv_check.read import yaml_docs
from gpudrv_check.read.manifests import parse_manifest_bytes
from gpudrv_check.read.yaml_docs import MAX_DEPTH, parse_text
from gpudrv_check.rules.plan import current_plan

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
  annotations:
    gpudrv-check.io/ignore: GPU008  # reason
spec:
  group: example.com
  names: {kind: Thing, plural: things}
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object}
"""


def _problems(parsed):
    return [(p.rule, p.line, p.column, p.message) for p in parsed.problems]


def test_a_skimmed_document_keeps_metadata_and_empties_the_rest():
    full = parse_text(CRD).docs[0].data
    skimmed = parse_text(CRD, current_plan()).docs[0].data
    assert skimmed["metadata"] == full["metadata"]
    assert skimmed["metadata"].kpos == full["metadata"].kpos
    assert skimmed["kind"] == "CustomResourceDefinition"
    assert isinstance(skimmed["spec"], LMap) and skimmed["spec"] == {}
    assert skimmed.kpos == full.kpos  # every top-level key still located
    assert skimmed["spec"].pos == full["spec"].pos
    assert full["spec"]["group"] == "example.com"


def test_kinds_that_are_checked_are_built_whole():
    text = CRD.replace("CustomResourceDefinition", "Deployment")
    assert parse_text(text, current_plan()).docs[0].data == parse_text(text).docs[0].data


def test_a_kind_written_after_the_content_is_built_whole():
    text = "apiVersion: v1\nmetadata: {name: s}\nspec:\n  ports: [80]\nkind: Service\n"
    assert parse_text(text, current_plan()).docs[0].data["spec"] == {"ports": [80]}


def test_a_top_level_list_value_is_skimmed_as_an_empty_list():
    text = "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: s}\nweird:\n- a\n- b\n"
    value = parse_text(text, current_plan()).docs[0].data["weird"]
    assert isinstance(value, LSeq) and value == [] and value.pos == (5, 1)


HOSTILE = {
    "duplicate key": "spec:\n  a: 1\n  b: {c: 1, c: 2}\n  a: 3\n",
    "duplicate in a list item": "spec:\n  items:\n  - x: 1\n    x: 2\n",
    "duplicate null keys": "spec:\n  ~: 1\n  null: 2\n  '': 3\n",
    "merge keys are not duplicates": "spec:\n  <<: {a: 1}\n  <<: {b: 1}\n",
    "unknown tag": "spec:\n  a: !Ref thing\n  b: !!python/object:os.system {}\n  c: !!str ok\n",
    "non-scalar key": "spec:\n  ? [a, b]\n  : 1\n  {x: 1}: 2\n",
    "too deep": "spec:\n" + "  " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n",
    "syntax error inside": "spec:\n  a: [1, 2\n  b: 3\n",
    "anchor and alias": "spec:\n  a: &x {k: v}\n  b: *x\nmetadata:\n  labels: {}\n",
}


@pytest.mark.parametrize("body", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_skimmed_document_reports_what_a_built_one_reports(body):
    text = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n" + body
    full = parse_text(text)
    skimmed = parse_text(text, current_plan())
    assert _problems(skimmed) == _problems(full)
    assert skimmed.failed == full.failed
    assert len(skimmed.docs) == len(full.docs)


def test_the_next_document_is_read_normally_after_a_skimmed_one():
    text = CRD + "---\napiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec: {x: 1}\n"
    docs = parse_text(text, current_plan()).docs
    assert docs[1].data["spec"] == {"x": 1}
    assert docs[1].data.kpos["spec"] == parse_text(text).docs[1].data.kpos["spec"]


def test_manifests_of_skimmed_kinds_are_still_objects_of_the_repo():
    result = parse_manifest_bytes("crd.yaml", CRD.encode(), False, current_plan())
    assert [(m.kind, m.name) for m in result.manifests] == [
        ("CustomResourceDefinition", "things.example.com")
    ]


def test_the_light_events_are_used_when_the_extension_takes_them():
    pytest.importorskip("_ruamel_yaml")
    yaml_docs._event_classes()
    assert yaml_docs._light_ok is True


@pytest.mark.parametrize(
    "text",
    [
        CRD,
        "a: &x [1, {b: 'c'}]\nd: *x\ne: !!str f\n<<: {g: 1}\n",
        "%YAML 1.1\n---\n- 0x10\n- yes\n- ~\n...\n---\n{a: [1, 2.5, '3']}\n",
        "a: [1, 2\n",
        "k: v\nk: w\n",
    ],
)
def test_light_and_stock_events_build_the_same_documents(text, monkeypatch):
    light = parse_text(text)
    monkeypatch.setattr(yaml_docs, "_light_ok", False)
    stock = parse_text(text)
    assert [(d.index, d.data, d.pos) for d in light.docs] == [
        (d.index, d.data, d.pos) for d in stock.docs
    ]
    assert _problems(light) == _problems(stock)


def test_the_stock_event_classes_are_restored_after_a_parse():
    module = pytest.importorskip("_ruamel_yaml")
    import ruamel.yaml.events as stock

    parse_text("a: 1\n")
    assert parse_text("a: [\n").failed
    assert module.ScalarEvent is stock.ScalarEvent
    assert module.MappingStartEvent is stock.MappingStartEvent


NODE_EXPORT = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: gpu-1
    labels: {nvidia.com/gpu.present: "true"}
  spec:
    taints: [{key: nvidia.com/gpu, effect: NoSchedule}]
  status:
    addresses: [{type: InternalIP, address: 10.0.0.1}]
    capacity: {nvidia.com/gpu: "8"}
    allocatable: {nvidia.com/gpu: "8"}
    conditions:
    - {type: Ready, status: "True"}
    images:
    - names: ["nvcr.io/nvidia/driver:550-5.15.0-119-generic-ubuntu22.04"]
      sizeBytes: 1234
    - names: ["registry.k8s.io/pause:3.9"]
      sizeBytes: 1
    nodeInfo: {kernelVersion: 5.15.0-119-generic}
"""


def test_the_unread_parts_of_a_node_status_are_skimmed():
    full = parse_text(NODE_EXPORT).docs[0].data["items"][0]
    skimmed = parse_text(NODE_EXPORT, current_plan()).docs[0].data["items"][0]
    status, full_status = skimmed["status"], full["status"]
    assert status["capacity"] == full_status["capacity"] == {"nvidia.com/gpu": "8"}
    assert status["allocatable"] == full_status["allocatable"]
    assert status["images"] == [] and full_status["images"]
    assert status["nodeInfo"] == {}
    # kept: rehearse reads the Ready condition (k8s-operator-libs GetCurrentUnavailableNodes)
    assert status["conditions"] == full_status["conditions"]
    assert status.kpos == full_status.kpos
    assert status["images"].pos == full_status["images"].pos
    for key in ("metadata", "spec"):
        assert skimmed[key] == full[key]


@pytest.mark.parametrize(
    "inside",
    [
        "    - names: [a]\n      names: [b]\n",  # duplicate key
        "    - !Custom {names: [a]}\n",  # unknown tag
        "    - names: [a\n",  # syntax error
    ],
    ids=["duplicate key", "unknown tag", "syntax error"],
)
def test_a_skimmed_node_status_reports_what_a_built_one_reports(inside):
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus:\n  images:\n" + inside
    assert _problems(parse_text(text, current_plan())) == _problems(parse_text(text))


def test_a_node_status_elsewhere_is_not_skimmed():
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: n}\ndata:\n  status:\n    images: [a]\n"
    )
    assert parse_text(text, current_plan()).docs[0].data == parse_text(text).docs[0].data


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  template:
    spec:
      containers:
      - name: main
        image: nvcr.io/nvidia/pytorch:25.03-py3
        args: ["--epochs", "10"]
        env:
        - {name: A, value: "1"}
        resources: {limits: {nvidia.com/gpu: 1}}
        ports: [{containerPort: 80}]
      initContainers:
      - name: init
        image: busybox
        command: [sh, -c, "true"]
      volumes: [{name: v, emptyDir: {}}]
"""


def test_container_fields_nothing_reads_are_skimmed():
    full = parse_text(DEPLOYMENT).docs[0].data
    skimmed = parse_text(DEPLOYMENT, current_plan()).docs[0].data
    pod, full_pod = skimmed["spec"]["template"]["spec"], full["spec"]["template"]["spec"]
    main, full_main = pod["containers"][0], full_pod["containers"][0]
    assert (main["args"], main["env"]) == ([], [])
    assert main["ports"] == full_main["ports"]  # read: GPU010 says host ports are unevaluated
    assert full_main["args"] == ["--epochs", "10"]
    for key in ("name", "image", "resources"):
        assert main[key] == full_main[key]
    assert main.kpos == full_main.kpos
    assert pod["initContainers"][0]["command"] == []
    assert pod["volumes"] == full_pod["volumes"]  # a pod-level field: kept


@pytest.mark.parametrize(
    "text",
    [
        # the same shape where no pod template is: kept
        DEPLOYMENT.replace("kind: Deployment", "kind: Widget"),
        DEPLOYMENT.replace("  template:\n    spec:\n", "  other:\n    spec:\n"),
    ],
    ids=["not a workload", "not the pod template"],
)
def test_container_like_fields_elsewhere_are_kept(text):
    assert parse_text(text, current_plan()).docs[0].data == parse_text(text).docs[0].data


def test_a_skimmed_container_field_reports_what_a_built_one_reports():
    text = DEPLOYMENT.replace('- {name: A, value: "1"}', "- {name: A, name: B, x: !Odd 1}")
    assert _problems(parse_text(text, current_plan())) == _problems(parse_text(text))
    assert [p.rule for p in parse_text(text).problems] == ["GPU008", "GPU009"]


NODE_ALIAS_INTO_SKIMMED = """\
apiVersion: v1
kind: Node
status:
  conditions:
  - type: Ready
  nodeInfo:
    kernelVersion: &kernel 5.15.0-119-generic
    osImage: Ubuntu 22.04
metadata:
  name: n1
  labels:
    nvidia.com/gpu.present: "true"
    feature.node.kubernetes.io/kernel-version.full: *kernel
"""


def test_an_alias_to_an_anchor_inside_a_skimmed_section_reads_its_value():
    """Issue 23: the skim drained `status.conditions` and the alias to its anchor read null,
    (here `status.nodeInfo`; `conditions` are read since `rehearse` needs Ready),
    so the same Node had a kernel without custom policies and none with one (or the other way
    round). Now the file is built whole when an alias names skimmed data."""
    key = "feature.node.kubernetes.io/kernel-version.full"
    whole = parse_text(NODE_ALIAS_INTO_SKIMMED)
    skimmed = parse_text(NODE_ALIAS_INTO_SKIMMED, current_plan())
    assert whole.docs[0].data["metadata"]["labels"][key] == "5.15.0-119-generic"
    assert skimmed.docs[0].data["metadata"]["labels"][key] == "5.15.0-119-generic"
    assert skimmed.docs[0].data == whole.docs[0].data and not skimmed.problems


def test_an_alias_into_a_skimmed_container_field_reads_its_value():
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  template:\n"
        "    spec:\n      containers:\n      - name: c\n        env:\n        - name: X\n"
        "          value: &img nvcr.io/x:1\n        image: *img\n"
    )
    skimmed = parse_text(text, current_plan())
    container = skimmed.docs[0].data["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "nvcr.io/x:1"


def test_the_parser_skims_what_the_plan_names_and_nothing_else():
    """The plan is an input (core/reads.py): the parser knows no kind or field by name."""
    from gpudrv_check.core.reads import NOTHING_SKIPPED, SkimPlan

    only_images = SkimPlan(node_status=frozenset(("images",)))
    status = parse_text(NODE_EXPORT, only_images).docs[0].data["items"][0]["status"]
    assert status["images"] == [] and status["nodeInfo"] == {"kernelVersion": "5.15.0-119-generic"}
    # the CRD kind is not in this plan: built whole
    assert parse_text(CRD, only_images).docs[0].data == parse_text(CRD).docs[0].data
    thing = CRD.replace("kind: CustomResourceDefinition", "kind: Thing")
    assert parse_text(thing, SkimPlan(kinds=frozenset(("Thing",)))).docs[0].data["spec"] == {}
    assert (
        parse_text(NODE_EXPORT, NOTHING_SKIPPED).docs[0].data
        == parse_text(NODE_EXPORT).docs[0].data
    )
    env = parse_text(DEPLOYMENT, SkimPlan(container=frozenset(("env",)))).docs[0].data
    [container] = env["spec"]["template"]["spec"]["containers"]
    assert container["env"] == [] and container["args"]


def test_no_kind_or_field_list_is_left_in_the_reader():
    from gpudrv_check.read import manifests

    for name in ("SKIM_KINDS", "NODE_STATUS_SKIPPED", "CONTAINER_SKIPPED"):
        assert not hasattr(yaml_docs, name) and not hasattr(manifests, name)


def test_two_threads_parsing_at_once_both_finish_with_the_same_documents():
    """The light classes are swapped into the C module process-wide: without the lock a second
    thread restored the stock classes under the first, whose loop then never saw the end of
    its stream and spun forever (issue 15)."""
    import threading

    pytest.importorskip("_ruamel_yaml")
    texts = [CRD, DEPLOYMENT, NODE_EXPORT] * 30
    expected = [parse_text(t, current_plan()).docs[0].data for t in texts]
    results: dict[int, list] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def work(n: int) -> None:
        try:
            start.wait()
            results[n] = [parse_text(t, current_plan()).docs[0].data for t in texts]
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=work, args=(n,), daemon=True) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)  # a guard against the old endless loop, not a timing assertion
    assert not any(thread.is_alive() for thread in threads), "a parse never finished"
    assert errors == []
    assert results == {0: expected, 1: expected}


def test_an_event_class_the_builder_does_not_know_is_an_error_not_a_loop():
    """What the race did: the C module makes stock events while the builder expects light
    ones. The builder raises at the first unknown event (and drains none forever)."""
    module = pytest.importorskip("_ruamel_yaml")
    import ruamel.yaml.events as stock

    if yaml_docs._event_classes().names["ScalarEvent"] is stock.ScalarEvent:
        pytest.skip("this build of the extension does not take the light events")
    assert module.ScalarEvent is stock.ScalarEvent  # not swapped outside a parse
    builder = yaml_docs._Builder("a: 1\n", yaml_docs._LIGHT, current_plan())
    with pytest.raises(yaml_docs.UnknownEvent):
        builder.build()
