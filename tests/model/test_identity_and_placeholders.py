"""One object per identity, `${VAR}` placeholders, and what a run skipped (issue 13)."""

from __future__ import annotations

import pytest

from gpudrv_check.model.coverage import id_ranges, requests_gpus
from gpudrv_check.model.identity import one_per_identity
from gpudrv_check.model.placeholders import substitute
from gpudrv_check.read.manifests import parse_manifest_bytes

DEPLOY = """apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: ml}}
spec:
  replicas: {replicas}
"""


def _objects(files: dict[str, str]):
    out = []
    for rel, text in files.items():
        out.extend(parse_manifest_bytes(rel, text.encode()).manifests)
    return out


def test_identical_copies_are_one_object():
    kept, copies = one_per_identity(
        _objects({"a/web.yaml": DEPLOY.format(replicas=2), "b/web.yaml": DEPLOY.format(replicas=2)})
    )
    assert [m.file for m in kept] == ["a/web.yaml"]
    assert len(copies) == 1 and not copies[0].differ


def test_of_differing_copies_the_deepest_wins_and_is_said():
    kept, [copies] = one_per_identity(
        _objects(
            {
                "base/web.yaml": DEPLOY.format(replicas=2),
                "overlays/prod/web.yaml": DEPLOY.format(replicas=4),
            }
        )
    )
    assert [m.file for m in kept] == ["overlays/prod/web.yaml"]
    assert copies.differ
    assert copies.describe().startswith(
        "Deployment ml/web is in 2 files that differ: overlays/prod/web.yaml is used"
    )


def test_other_groups_kinds_and_generate_name_are_not_copies():
    job = "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: run-, namespace: ml}\n"
    other_group = DEPLOY.format(replicas=1).replace("apps/v1", "example.com/v1")
    objects = _objects(
        {"a.yaml": job, "b.yaml": job, "c.yaml": DEPLOY.format(replicas=1), "d.yaml": other_group}
    )
    kept, copies = one_per_identity(objects)
    assert len(kept) == 4 and copies == []
    assert [m.name for m in kept[:2]] == ["run-*", "run-*"]


def test_copies_in_one_file_are_left_to_the_rules():
    text = DEPLOY.format(replicas=1) + "---\n" + DEPLOY.format(replicas=2)
    kept, copies = one_per_identity(_objects({"a.yaml": text}))
    assert len(kept) == 2 and copies == []


FLUX = """apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  path: ./apps
  postBuild:
    substitute: {REPLICAS: "3", EMPTY: ""}
"""


@pytest.mark.parametrize(
    ("value", "covered", "expected", "unknown"),
    [
        ("${REPLICAS}", True, 3, set()),  # textual substitution: a number once decoded
        ("x-${REPLICAS}", True, "x-3", set()),
        ("${MISSING:=7}", True, 7, set()),  # envsubst default when the variable is not given
        ("${EMPTY:=7}", True, 7, set()),  # `:=` also when it is empty
        # was {"MISSING"}: contradicted Flux. In strict mode (kustomize-controller's default)
        # an unset variable fails the whole build (oracle: `${MISSING}` -> variable not set
        # (strict mode): "MISSING"): the object is unknown as a failed build, not by a name
        ("${MISSING}", True, "${MISSING}", set()),
        ("${REPLICAS}", False, "${REPLICAS}", {"REPLICAS"}),  # no Kustomization: unknown
        ("${REPLICAS:=2}", False, "${REPLICAS:=2}", {"REPLICAS"}),
    ],
)
def test_placeholders(value: str, covered: bool, expected, unknown: set[str]):
    rel = "apps/web.yaml" if covered else "other/web.yaml"
    objects = _objects({"clusters/apps.yaml": FLUX, rel: DEPLOY.format(replicas=value)})
    found = substitute(objects, {rel})
    [web] = [m for m in objects if m.kind == "Deployment"]
    assert web.get("spec", "replicas") == expected
    assert found.names == sorted(unknown)
    # an object left as written is unknown (a name, or the failed build of `${MISSING}`)
    assert bool(found.by_object) == (expected == value)


def test_substitution_can_be_disabled_per_object():
    text = DEPLOY.format(replicas="${REPLICAS}").replace(
        "namespace: ml}",
        "namespace: ml, labels: {kustomize.toolkit.fluxcd.io/substitute: disabled}}",
    )
    objects = _objects({"clusters/apps.yaml": FLUX, "apps/web.yaml": text})
    found = substitute(objects, {"apps/web.yaml"})
    assert found.names == [] and objects[1].get("spec", "replicas") == "${REPLICAS}"


DISABLED = "labels: {kustomize.toolkit.fluxcd.io/substitute: disabled}"


def _aliased_list(anchored: str, aliased: str) -> str:
    """A `kind: List` of two Deployments of namespace ml: `anchored` ("on" or "off", whether
    substitution is enabled) writes the spec and its anchor, `aliased` refers to it."""

    def meta(name: str) -> str:
        return f"{{name: {name}, namespace: ml{', ' + DISABLED if name == 'off' else ''}}}"

    return f"""apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {meta(anchored)}
  spec: &s
    replicas: ${{REPLICAS}}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {meta(aliased)}
  spec: *s
"""


@pytest.mark.parametrize(("anchored", "aliased"), [("off", "on"), ("on", "off")])
def test_an_alias_shared_by_a_disabled_object_is_not_filled_through_it(anchored, aliased):
    """A YAML alias is the anchored node itself: filling the enabled item's `${REPLICAS}` in
    place filled the disabled item's too (placeholders.py `_unshare`). Flux fills each object's
    own text, aliases expanded; a file decoded from the cache (read/codec.py, a copy per
    reference) said so already, so a cached run and a fresh one differed."""
    files = {"clusters/apps.yaml": FLUX, "apps/list.yaml": _aliased_list(anchored, aliased)}
    objects = _objects(files)
    found = substitute(objects, {"apps/list.yaml"})
    replicas = {m.name: m.get("spec", "replicas") for m in objects if m.kind == "Deployment"}
    assert replicas == {"off": "${REPLICAS}", "on": 3} and found.names == []
    # each keeps the positions of the text it was read from (the anchor's)
    on, off = sorted((m for m in objects if m.kind == "Deployment"), key=lambda m: m.name)
    assert on.location(("spec", "replicas")) == off.location(("spec", "replicas"))


@pytest.mark.parametrize(
    ("ids", "text"),
    [
        (["GPU001", "GPU002", "GPU003", "GPU010"], "GPU001-003, GPU010"),
        (["GPU024", "GPU023"], "GPU023-024"),
        (["GPU040"], "GPU040"),
        (["GPU001", "my-policy", "GPU002"], "GPU001-002, my-policy"),
        # digits str.isdigit() accepts and int() refuses are an id as written, not a crash
        (["GPU001", "GPU\u00b2"], "GPU001, GPU\u00b2"),
    ],
)
def test_id_ranges(ids: list[str], text: str):
    assert id_ranges(ids) == text


def test_gpu_requests_are_found_in_any_kind():
    [ray] = _objects(
        {
            "ray.yaml": "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: r}\n"
            "spec: {w: [{template: {spec: {containers: [{resources: {limits: "
            "{nvidia.com/gpu: 1}}}]}}}]}\n"
        }
    )
    assert requests_gpus(ray.data)
    [node] = _objects(
        {
            "n.yaml": "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
            "status: {capacity: {nvidia.com/gpu: 8}}\n"
        }
    )
    assert not requests_gpus(node.data)


def test_the_objects_of_two_rendered_roots_are_not_copies():
    """--kustomize: each rendered root is a deployment of its own (model/identity.py)."""
    dev, prod = "a/kustomization.yaml (rendered)", "b/kustomization.yaml (rendered)"
    objects = _objects({dev: DEPLOY.format(replicas=1), prod: DEPLOY.format(replicas=4)})
    kept, copies = one_per_identity(objects)
    assert [m.file for m in kept] == [dev, prod] and copies == []
    # two repo files are still one object
    kept, [group] = one_per_identity(
        _objects({"x/web.yaml": DEPLOY.format(replicas=1), "y/web.yaml": DEPLOY.format(replicas=4)})
    )
    assert [m.file for m in kept] == ["x/web.yaml"] and group.differ
