"""NVIDIADriver semantics per operator release (gpudrv_check/nvidia/nvidiadriver.py).

Rows follow upstream NVIDIA/gpu-operator: internal/nvidiadriver/nvidiadriver.go `AssignOwners`,
`classifyDrivers`, `desiredOwnerForNode` (v26.7); api/nvidia/v1alpha1/nvidiadriver_types.go
`ValidateNodeSelector`, `GetNodeSelector`, `GetImagePath`, `GetPrecompiledImagePath`,
`GetUpgradePolicyWithDefaults`; internal/validator/validator.go `nodeSelectorValidator.Validate`
(v25.10, v26.3); internal/state/nodepool.go `getNodePools`, `getOSTag`;
manifests/state-driver/0500_daemonset.yaml (tolerations).
"""

from __future__ import annotations

import pytest

from gpudrv_check.nvidia.nvidiadriver import (
    DEFAULT_WITH_SELECTOR,
    MULTIPLE_DEFAULTS,
    OS_VERSION_ID_MAJOR_LABEL,
    OVERLAP,
    OWNER_LABEL,
    POOL_EXCLUDED,
    RESERVED_LABEL,
    DriverCR,
    assign_owners,
    cr_upgrade_policy,
    driver_tolerations,
    node_pools,
    parse_driver_cr,
    pool_image,
)

RELEASES = ("v25.10.0", "v26.3.0", "v26.7.0")
KERNEL = "feature.node.kubernetes.io/kernel-version.full"
OS_ID = "feature.node.kubernetes.io/system-os_release.ID"
OS_VERSION = "feature.node.kubernetes.io/system-os_release.VERSION_ID"


def labels(host: str, os_id: str = "ubuntu", version: str = "22.04", **extra: str) -> dict:
    return {
        "kubernetes.io/hostname": host,
        "nvidia.com/gpu.present": "true",
        KERNEL: "5.15.0-119-generic",
        OS_ID: os_id,
        OS_VERSION: version,
        **extra,
    }


LAB = {name: labels(name) for name in ("lab-node-0", "lab-node-1", "lab-node-2")}
DEFAULT_550 = DriverCR("default", default=True, version="550")
PINNED_535 = DriverCR("branch-535", node_selector={"kubernetes.io/hostname": "lab-node-1"})


# --- AssignOwners (v26.7) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("drivers", "owners", "problems"),
    [
        # desiredOwnerForNode: the unique matching non-default CR, else the default CR
        (
            (DEFAULT_550, PINNED_535),
            {"lab-node-0": "default", "lab-node-1": "branch-535", "lab-node-2": "default"},
            [],
        ),
        # no default: unmatched nodes have no owner
        ((PINNED_535,), {"lab-node-0": None, "lab-node-1": "branch-535", "lab-node-2": None}, []),
        # a non-default CR without nodeSelector selects every GPU node (GetNodeSelector)
        ((DEFAULT_550, DriverCR("all")), dict.fromkeys(LAB, "all"), []),
        # two matching non-default CRs: an error naming the node, no owner anywhere
        (
            (PINNED_535, DriverCR("all")),
            dict.fromkeys(LAB),
            [("branch-535", OVERLAP), ("all", OVERLAP)],
        ),
        # classifyDrivers: more than one default
        (
            (DEFAULT_550, DriverCR("other", default=True)),
            dict.fromkeys(LAB),
            [("default", MULTIPLE_DEFAULTS), ("other", MULTIPLE_DEFAULTS)],
        ),
        # ValidateNodeSelector: a default with a nodeSelector, the reserved owner label
        (
            (DriverCR("default", default=True, node_selector={"pool": "a"}),),
            dict.fromkeys(LAB),
            [("default", DEFAULT_WITH_SELECTOR)],
        ),
        (
            (DEFAULT_550, DriverCR("x", node_selector={OWNER_LABEL: "x"})),
            dict.fromkeys(LAB),
            [("x", RESERVED_LABEL)],
        ),
        # an empty nodeSelector on the default is allowed (CEL: size == 0)
        ((DriverCR("default", default=True, node_selector={}),), dict.fromkeys(LAB, "default"), []),
    ],
)
def test_assign_owners_v26_7(drivers, owners, problems) -> None:
    result = assign_owners(drivers, LAB, "v26.7.0")
    assert result.owner == owners
    assert [(p.driver, p.kind) for p in result.problems] == problems


def test_overlap_message_is_the_operators() -> None:
    result = assign_owners((PINNED_535, DriverCR("all")), LAB, "v26.7.0")
    assert result.problems[0].message == (
        "multiple NVIDIADrivers match the same node lab-node-1: [branch-535 all]"
    )
    assert result.problems[0].nodes == ("lab-node-1",)


@pytest.mark.parametrize("release", ["v25.10.0", "v26.3.0"])
def test_before_v26_7_there_is_no_default_and_overlaps_fail_every_cr(release: str) -> None:
    # nodeSelectorValidator.Validate: `default` does not exist, so the "default" CR (nodeSelector
    # unset = gpu.present=true) selects lab-node-1 too and overlaps with the pinned CR
    result = assign_owners((DEFAULT_550, PINNED_535), LAB, release)
    assert result.owner == dict.fromkeys(LAB)
    assert {p.driver for p in result.problems} == {"default", "branch-535"}
    assert all(p.kind == OVERLAP for p in result.problems)
    # disjoint selectors work
    disjoint = DriverCR("rest", node_selector={"pool": "rest"})
    nodes = {**LAB, "lab-node-0": labels("lab-node-0", pool="rest")}
    result = assign_owners((disjoint, PINNED_535), nodes, release)
    assert result.owner == {"lab-node-0": "rest", "lab-node-1": "branch-535", "lab-node-2": None}
    assert result.problems == []


# --- getNodePools ------------------------------------------------------------------------------


@pytest.mark.parametrize("release", RELEASES)
def test_pools_per_os_tag_and_per_kernel_when_precompiled(release: str) -> None:
    owned = {
        "a": labels("a"),
        "b": {**labels("b"), KERNEL: "5.15.0-107-generic"},
        "c": labels("c", version="24.04"),
    }
    pools, skipped = node_pools(DriverCR("d"), owned, release)
    assert [(p.name, p.nodes) for p in pools] == [
        ("ubuntu22.04", ("a", "b")),
        ("ubuntu24.04", ("c",)),
    ]
    assert skipped == []
    pools, _ = node_pools(DriverCR("d", use_precompiled=True), owned, release)
    assert [(p.name, p.kernel) for p in pools] == [
        ("ubuntu22.04-5.15.0-107-generic", "5.15.0-107-generic"),
        ("ubuntu22.04-5.15.0-119-generic", "5.15.0-119-generic"),
        ("ubuntu24.04-5.15.0-119-generic", "5.15.0-119-generic"),
    ]
    assert pools[0].node_selector[KERNEL] == "5.15.0-107-generic"
    assert (OWNER_LABEL in pools[0].node_selector) is (release == "v26.7.0")


@pytest.mark.parametrize(
    ("release", "tag", "needs_major"),
    [
        ("v25.10.0", "rhel9.4", False),  # ID + VERSION_ID
        ("v26.3.0", "rhel9.4", False),  # rhel truncated only from 10
        ("v26.7.0", "rhel9", True),  # truncated: selects on VERSION_ID.major
    ],
)
def test_truncated_os_tags_need_the_version_major_label(release, tag, needs_major) -> None:
    owned = {"r": labels("r", os_id="rhel", version="9.4")}
    pools, skipped = node_pools(DriverCR("d"), owned, release)
    if needs_major:
        assert pools == []
        assert [(s.node, s.missing_label) for s in skipped] == [("r", OS_VERSION_ID_MAJOR_LABEL)]
        owned["r"][OS_VERSION_ID_MAJOR_LABEL] = "9"
        pools, skipped = node_pools(DriverCR("d"), owned, release)
        assert pools[0].node_selector[OS_VERSION_ID_MAJOR_LABEL] == "9"
        assert OS_VERSION not in pools[0].node_selector
    assert [p.os_tag for p in pools] == [tag]


# getNodePools: the pool of a name is the first node's (nodepool.go, every release); the node
# cache has no order, the first by name stands for it. The pool selects VERSION_ID.major only
# from v26.7 (v26.3 names rocky pools by major version but selects the exact VERSION_ID).
ROCKY = {
    "r92": labels("r92", os_id="rocky", version="9.2", **{OS_VERSION_ID_MAJOR_LABEL: "9"}),
    "r94": labels("r94", os_id="rocky", version="9.4", **{OS_VERSION_ID_MAJOR_LABEL: "9"}),
}


@pytest.mark.parametrize(
    ("release", "pools", "left_out"),
    [
        # v25.10 getOS: ID + VERSION_ID, one pool per release
        ("v25.10.0", [("rocky9.2", ("r92",)), ("rocky9.4", ("r94",))], []),
        # v26.3 getOSTag: rocky9 for both, selector VERSION_ID=9.2 from r92: r94 is left out
        ("v26.3.0", [("rocky9", ("r92",))], [("r94", OS_VERSION)]),
        # v26.7: rocky9 selects VERSION_ID.major=9, both in
        ("v26.7.0", [("rocky9", ("r92", "r94"))], []),
    ],
)
def test_a_pool_takes_the_selector_of_its_first_node(release, pools, left_out) -> None:
    found, skipped = node_pools(DriverCR("d"), ROCKY, release)
    assert [(p.name, p.nodes) for p in found] == pools
    assert [(s.node, s.missing_label, s.label) for s in skipped] == [
        (node, POOL_EXCLUDED, label) for node, label in left_out
    ]
    if release == "v26.3.0":
        assert found[0].node_selector[OS_VERSION] == "9.2"
        assert OS_VERSION_ID_MAJOR_LABEL not in found[0].node_selector
        assert skipped[0].pool == found[0]


@pytest.mark.parametrize("release", RELEASES)
def test_precompiled_kernels_of_two_architectures_share_a_pool_name(release: str) -> None:
    # getSanitizedKernelVersion drops x86_64/aarch64: one pool name, the first node's kernel
    owned = {
        "arm": {**labels("arm"), KERNEL: "5.15.0-119-generic.aarch64"},
        "x86": {**labels("x86"), KERNEL: "5.15.0-119-generic.x86_64"},
    }
    pools, skipped = node_pools(DriverCR("d", use_precompiled=True), owned, release)
    assert [(p.name, p.nodes) for p in pools] == [("ubuntu22.04-5.15.0-119-generic", ("arm",))]
    assert pools[0].node_selector[KERNEL] == "5.15.0-119-generic.aarch64"
    assert [(s.node, s.missing_label, s.label) for s in skipped] == [("x86", POOL_EXCLUDED, KERNEL)]


@pytest.mark.parametrize("release", RELEASES)
def test_nodes_without_nfd_labels_join_no_pool(release: str) -> None:
    no_os = {k: v for k, v in labels("x").items() if k != OS_ID}
    no_kernel = {k: v for k, v in labels("y").items() if k != KERNEL}
    cr = DriverCR("d", use_precompiled=True)
    pools, skipped = node_pools(cr, {"x": no_os, "y": no_kernel}, release)
    assert pools == []
    assert [(s.node, s.missing_label) for s in skipped] == [("x", OS_ID), ("y", KERNEL)]
    # without precompiled the kernel is not needed
    pools, _ = node_pools(DriverCR("d"), {"y": no_kernel}, release)
    assert [p.nodes for p in pools] == [("y",)]


# --- images: GetImagePath / GetPrecompiledImagePath --------------------------------------------


@pytest.mark.parametrize(
    ("spec", "precompiled", "reference", "error"),
    [
        (
            {"repository": "r.io/nv", "image": "driver", "version": "550"},
            True,
            "r.io/nv/driver:550-5.15.0-119-generic-ubuntu22.04",
            None,
        ),
        (
            {"repository": "r.io/nv", "image": "driver", "version": "550.90.07"},
            False,
            "r.io/nv/driver:550.90.07-ubuntu22.04",
            None,
        ),
        (
            {"repository": "r.io/nv", "image": "driver", "version": "sha256:" + "a" * 64},
            False,
            "r.io/nv/driver@sha256:" + "a" * 64,
            None,
        ),  # a digest gets no OS suffix
        (
            {"repository": "r.io/nv", "image": "driver", "version": "sha256:" + "a" * 64},
            True,
            None,
            "specifying image tag / digest is not supported when precompiled is enabled",
        ),
        (
            {"image": "r.io/nv/driver:550.90.07"},
            False,
            "r.io/nv/driver:550.90.07-ubuntu22.04",
            None,
        ),  # image only (kbld): the OS suffix is still appended
        (
            {"repository": "r.io/nv", "image": "driver"},
            False,
            None,
            "invalid image specification: repository, image and version must all be set "
            "(repository=r.io/nv, image=driver, version=)",
        ),  # no DRIVER_IMAGE fallback for a CR
    ],
)
@pytest.mark.parametrize("release", RELEASES)
def test_pool_image(spec, precompiled, reference, error, release) -> None:
    cr = parse_driver_cr("d", {**spec, "usePrecompiled": precompiled})
    [pool], _ = node_pools(cr, {"a": labels("a")}, release)
    result = pool_image(cr, pool)
    assert (result.reference, result.error) == (reference, error)


def test_cr_tolerations_are_added_to_the_default_one() -> None:
    cr = parse_driver_cr("d", {"tolerations": [{"key": "dedicated", "operator": "Exists"}]})
    assert driver_tolerations(cr) == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists"},
    ]


@pytest.mark.parametrize(
    ("release", "spec_policy", "auto"),
    [
        ("v26.7.0", None, True),  # GetUpgradePolicyWithDefaults: autoUpgrade true when unset
        ("v26.7.0", {"autoUpgrade": False}, False),
        ("v26.3.0", {"autoUpgrade": True}, "fallback"),  # no per-CR policy before v26.7
        ("v25.10.0", None, "fallback"),
    ],
)
def test_upgrade_policy_per_cr_from_v26_7(release, spec_policy, auto) -> None:
    cr = parse_driver_cr("d", {"upgradePolicy": spec_policy} if spec_policy else {})
    fallback = {"autoUpgrade": "fallback", "drain": {"enable": False}}
    policy = cr_upgrade_policy(cr, fallback, release)
    assert policy["autoUpgrade"] == auto


@pytest.mark.parametrize(
    ("release", "conflict"), [*((r, True) for r in RELEASES[:2]), (RELEASES[2], False)]
)
def test_overlaps_on_nodes_without_gpus(release: str, conflict: bool) -> None:
    # v25.10/v26.3 validator.go getNVIDIADriverSelectedNodes lists by the CR's selector alone,
    # GPU nodes or not; v26.7 AssignOwners looks at gpu.present nodes only
    gpu = {"g1": labels("g1", **{"example.com/zone": "east"})}
    cpu = {"cpu1": {"example.com/zone": "east", "example.com/rack": "r1"}}
    east = DriverCR("east", node_selector={"example.com/zone": "east"})
    rack = DriverCR("r1", node_selector={"example.com/rack": "r1"})
    result = assign_owners((east, rack), gpu, release, {**gpu, **cpu})
    assert [(p.driver, p.kind, p.nodes) for p in result.problems] == (
        [("east", OVERLAP, ("cpu1",)), ("r1", OVERLAP, ("cpu1",))] if conflict else []
    )
    assert result.owner == {"g1": None if conflict else "east"}


@pytest.mark.parametrize(
    ("precompiled", "pulled"),
    [
        (False, "nvcr.io/nvidia/driver-ubuntu22.04:latest"),
        (True, "nvcr.io/nvidia/driver-5.15.0-119-generic-ubuntu22.04:latest"),
    ],
)
def test_a_cr_without_image_fields_pulls_the_crd_default_as_latest(precompiled, pulled) -> None:
    # nvidiadriver_types.go: `+kubebuilder:default=nvcr.io/nvidia/driver` on spec.image;
    # internal/image ImagePath returns image alone when repository and version are empty, and
    # GetImagePath / GetPrecompiledImagePath append -<os-tag> (-<kernel>-<os-tag>) to it
    cr = parse_driver_cr("gpu", {"usePrecompiled": precompiled})
    [pool], _ = node_pools(cr, {"a": labels("a")}, "v26.7.0")
    result = pool_image(cr, pool)
    assert result.reference is None
    assert result.error.startswith("repository, image and version are all unset")
    assert f"the driver pods pull {pulled}, which does not exist" in result.error
