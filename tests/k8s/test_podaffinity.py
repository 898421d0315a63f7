"""Required pod anti-affinity terms, self-selection and topology domains (k8s/podaffinity.py)."""

from __future__ import annotations

import pytest

from gpudrv_check.k8s.podaffinity import (
    AntiAffinityTerm,
    required_anti_affinity_terms,
    term_selects_own_pods,
    topology_domains,
)

SELF = {"matchLabels": {"app": "trainer"}}
LABELS = {"app": "trainer", "tier": "gpu"}


def spec(*terms: object) -> dict:
    return {
        "affinity": {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}
        }
    }


def test_terms_keep_their_index_and_skip_malformed() -> None:
    terms = required_anti_affinity_terms(
        spec(
            {"labelSelector": SELF},  # no topologyKey: the API server rejects it
            "not a mapping",
            {"labelSelector": SELF, "topologyKey": "kubernetes.io/hostname"},
            {"labelSelector": SELF, "topologyKey": ""},
        )
    )
    assert [(t.index, t.topology_key) for t in terms] == [(2, "kubernetes.io/hostname")]


@pytest.mark.parametrize(
    "pod_spec",
    [None, [], {}, {"affinity": None}, {"affinity": {"podAntiAffinity": {}}}, spec()],
)
def test_no_terms(pod_spec) -> None:
    assert required_anti_affinity_terms(pod_spec) == []


def term(**fields: object) -> AntiAffinityTerm:
    fields.setdefault("label_selector", SELF)
    return AntiAffinityTerm(index=0, topology_key="kubernetes.io/hostname", **fields)


# (id, term, namespace labels, selects own pods)
SELF_ROWS = [
    ("matchLabels of its own pods", term(), None, True),
    ("empty selector selects every pod", term(label_selector={}), None, True),
    ("null selector selects nothing", term(label_selector=None), None, False),
    ("selector for other pods", term(label_selector={"matchLabels": {"app": "db"}}), None, False),
    (
        "matchExpressions In",
        term(
            label_selector={
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["gpu"]}]
            }
        ),
        None,
        True,
    ),
    ("own namespace listed", term(namespaces=("ml", "other")), None, True),
    ("only other namespaces listed", term(namespaces=("other",)), None, False),
    ("namespaceSelector {} is every namespace", term(namespace_selector={}), None, True),
    (
        "namespaceSelector on the automatic name label",
        term(namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": "ml"}}),
        None,
        True,
    ),
    (
        "namespaceSelector on a Namespace label",
        term(namespace_selector={"matchLabels": {"team": "ml"}}),
        {"team": "ml"},
        True,
    ),
    (
        "namespaceSelector not matching",
        term(namespace_selector={"matchLabels": {"team": "web"}}),
        {"team": "ml"},
        False,
    ),
    ("matchLabelKeys keeps siblings selected", term(match_label_keys=("tier",)), None, True),
    ("mismatchLabelKeys on a key the pod has", term(mismatch_label_keys=("tier",)), None, False),
    ("mismatchLabelKeys on a key the pod lacks", term(mismatch_label_keys=("zone",)), None, True),
]


@pytest.mark.parametrize(
    ("anti", "ns_labels", "expected"),
    [row[1:] for row in SELF_ROWS],
    ids=[row[0] for row in SELF_ROWS],
)
def test_term_selects_own_pods(anti, ns_labels, expected) -> None:
    assert term_selects_own_pods(anti, "ml", LABELS, ns_labels) is expected


def test_topology_domains() -> None:
    nodes = [
        ("a", {"zone": "z1"}),
        ("b", {"zone": "z1"}),
        ("c", {"zone": "z2"}),
        ("d", {}),
    ]
    domains = topology_domains("zone", nodes)
    assert domains.by_value == {"z1": ("a", "b"), "z2": ("c",)}
    assert domains.unconstrained == ("d",)
    assert domains.count == 2
    assert domains.domain_of("c") == "z2" and domains.domain_of("d") is None
