"""Wrong types in every field of the newer models' objects: no traceback, no internal error, and
the rest of the repo still checked.

Each seed of tests/hostile/corpus (Kueue queues and flavors, topology spread, required
anti-affinity, PDBs over Job and mirror pods, GPU040's pod-spec fields, Flux post-build
substitution) is valid. For each field of the objects those models read, every value of
WRONG takes its place in turn, and the repo (the seed so changed, next to a Node GPU040 must
report) goes through the whole CLI in-process, exceptions surfacing (tests/fuzz/targets.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.fuzz import targets
from tests.hostile import corpus

# numbers JSON cannot spell, put in the text in place of these strings: past int()'s digit
# limit, infinite, not a number, negative
RAW = {"@huge@": "9" * 5001, "@inf@": ".inf", "@nan@": "-.nan", "@negative@": "-3"}

DELETE = "@delete@"  # the field taken out (a list item: the list without it)

# the field absent, a value of each JSON type, the shapes a field of another type is most
# often given, numbers and quantities out of range, percentages out of range
WRONG: tuple[Any, ...] = (
    DELETE,
    *RAW,
    "150%",
    "1e400",
    "10Ei",
    "-1.5",
    "9" * 5001 + "%",
    None,
    True,
    7,
    2.5,
    "x",
    "",
    "${UNSET}",
    [],
    ["x"],
    {},
    {"x": "y"},
)

# seed (under tests/hostile/corpus) -> (kind, name) of the objects whose fields are replaced,
# each with the subtrees of it to walk ("" is the whole object)
SEEDS: dict[str, dict[tuple[str, str], tuple[str, ...]]] = {
    "kueue/queues.yaml": {
        ("ResourceFlavor", "hostile-h100"): ("",),
        ("ClusterQueue", "hostile-gpus"): ("",),
        ("LocalQueue", "team"): ("",),
        ("LocalQueue", "default"): ("",),
        ("Job", "train"): ("metadata", "spec.parallelism", "spec.suspend"),
        ("Namespace", "hostile-kueue"): ("metadata",),
    },
    "kueue/never-admits.yaml": {
        ("ClusterQueue", "hostile-stopped"): ("",),
        ("ClusterQueue", "hostile-elsewhere"): ("spec",),
        ("Deployment", "serve"): ("metadata.labels",),
        ("Pod", "lone"): ("metadata.labels",),
    },
    "spread/topology-spread.yaml": {
        ("Deployment", "spread"): (
            "spec.replicas",
            "spec.template.metadata",
            "spec.template.spec.topologySpreadConstraints",
        ),
    },
    "spread/anti-affinity.yaml": {
        ("StatefulSet", "anti"): ("spec.template.metadata", "spec.template.spec.affinity"),
    },
    "disruption/job-and-mirror-pods.yaml": {
        ("PodDisruptionBudget", "etl"): ("spec",),
        ("PodDisruptionBudget", "static"): ("spec",),
        ("PodDisruptionBudget", "nightly"): ("spec",),
        ("Job", "etl"): ("spec.parallelism", "spec.completions", "spec.template.metadata"),
        ("Pod", "static-hostile-node"): ("metadata", "spec.nodeName"),
        ("CronJob", "nightly"): ("spec.suspend", "spec.jobTemplate.spec.parallelism"),
    },
    "podfields/pod-spec-fields.yaml": {
        ("Pod", "fields"): ("spec",),
        ("Deployment", "fields"): ("spec.template.spec",),
        ("PriorityClass", "gpu-high"): ("",),
        ("RuntimeClass", "nvidia"): ("",),
    },
    "placeholders/flux/flux-post-build.yaml": {
        ("Kustomization", "apps"): ("spec",),
        ("ConfigMap", "cluster-vars"): ("data",),
        ("Secret", "cluster-secrets"): ("data", "stringData"),
        ("Deployment", "${TEAM,,}-trainer"): ("metadata", "spec.replicas", "spec.template"),
    },
}

SENTINEL = "zz-sentinel/node.yaml"  # GPU040 at corpus.BAD_NODE_AT, whatever the seed holds

FieldPath = tuple[str | int, ...]


def _paths(value: Any, at: FieldPath = ()) -> Iterator[FieldPath]:
    """Every path into `value`, itself first."""
    yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*at, index))


def _get(value: Any, path: FieldPath) -> Any:
    for step in path:
        value = value[step]
    return value


def _find(docs: list[Any], kind: str, name: str) -> int:
    return next(
        i
        for i, doc in enumerate(docs)
        if isinstance(doc, dict) and doc.get("kind") == kind and doc["metadata"]["name"] == name
    )


def _documents(seed: str) -> list[Any]:
    """The seed's objects, a `List`'s items each its own document."""
    docs: list[Any] = []
    for doc in yaml.safe_load_all((corpus.CORPUS / seed).read_text(encoding="utf-8")):
        docs.extend(doc["items"] if doc.get("kind") == "List" else [doc])
    return docs


def _cases() -> Iterator[Any]:
    for seed, objects in SEEDS.items():
        docs = _documents(seed)
        for (kind, name), subtrees in objects.items():
            index = _find(docs, kind, name)
            seen: set[FieldPath] = set()
            for subtree in subtrees:
                start: FieldPath = tuple(subtree.split(".")) if subtree else ()
                for path in _paths(_get(docs[index], start), start):
                    if path in seen or path in (("apiVersion",), ("kind",)):
                        continue
                    seen.add(path)
                    shown = ".".join(str(step) for step in path) or "(object)"
                    yield pytest.param(seed, index, path, id=f"{seed}:{kind}/{name}:{shown}")


CASES = list(_cases())


def _replaced(docs: list[Any], index: int, path: FieldPath, value: Any) -> list[Any]:
    docs = json.loads(json.dumps(docs))
    if not path:
        docs[index] = None if value == DELETE else value
        return docs
    parent = _get(docs[index], path[:-1])
    if value == DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return docs


def _sentinel_found(doc: dict) -> bool:
    line, column = corpus.BAD_NODE_AT
    return any(
        (f["rule"], f["location"]["file"], f["location"]["line"], f["location"]["column"])
        == ("GPU040", SENTINEL, line, column)
        for f in doc["findings"]
    )


def test_every_seed_names_objects_it_holds():
    """The table above is not stale: each seed is read, each object found, each case built."""
    assert len(CASES) > 300
    for seed in SEEDS:
        assert (corpus.CORPUS / seed).is_file(), seed


@pytest.mark.slow  # 349 cases of a whole check each: minutes on one core (CI runs it)
@pytest.mark.parametrize(("seed", "index", "path"), CASES)
def test_wrong_type_in_a_field_is_a_finding_never_a_crash(seed: str, index: int, path: FieldPath):
    docs = _documents(seed)
    for value in WRONG:
        text = "---\n".join(json.dumps(doc) + "\n" for doc in _replaced(docs, index, path, value))
        for name, raw in RAW.items():
            text = text.replace(json.dumps(name), raw)
        files = {
            "hostile/" + seed: text.encode("utf-8"),
            SENTINEL: corpus.BAD_NODE.format(name="zz-sentinel").encode("utf-8"),
        }
        with targets.repo(files) as root:
            result, doc = targets.check_json(root, "--matrix", "none")
        assert "internal error" not in result.stderr, (value, result.stderr)
        assert result.code == 1, (value, result.code)
        assert _sentinel_found(doc), (value, "the rest of the repo was not checked")
        assert doc["summary"]["objects"] >= 2, (value, doc["summary"])
