"""Driver image tags, OS tags per operator release, and driver image references."""

from __future__ import annotations

import pytest

from gpudrv_check.nvidia.driver_image import (
    DEPRECATED_DRIVER_MAJOR_LABEL,
    DRIVER_VERSION_FULL_LABEL,
    DRIVER_VERSION_MAJOR_LABEL,
    KERNEL_VERSION_LABEL,
    MISSING_KERNEL_LABEL_ERROR,
    OS_RELEASE_ID_LABEL,
    OS_VERSION_ID_LABEL,
    PRECOMPILED_DIGEST_ERROR,
    PRECOMPILED_PATH_ERROR,
    driver_branch,
    driver_facts,
    driver_image_reference,
    driver_image_tag,
    operator_release,
    os_tag,
    parse_image_reference,
    precompiled_os_conflicts,
    precompiled_tag,
    sanitized_kernel_version,
)

DIGEST = "sha256:" + "ab" * 32


def lab_node(major: str, minor: str, rev: str, kernel: str, version_id: str) -> dict[str, str]:
    """Labels as the lab sets them: deprecated GFD keys, NFD kernel and OS keys."""
    return {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/cuda.driver.major": major,
        "nvidia.com/cuda.driver.minor": minor,
        "nvidia.com/cuda.driver.rev": rev,
        KERNEL_VERSION_LABEL: kernel,
        OS_RELEASE_ID_LABEL: "ubuntu",
        OS_VERSION_ID_LABEL: version_id,
    }


LAB_NODES = {
    "lab-node-0": lab_node("550", "90", "07", "5.15.0-119-generic", "22.04"),
    "lab-node-1": lab_node("535", "183", "06", "5.15.0-107-generic", "22.04"),
    "lab-node-2": lab_node("550", "90", "07", "6.8.0-45-generic", "24.04"),
    "lab-node-3": lab_node("550", "90", "07", "6.8.0-52-generic", "24.04"),
}


@pytest.mark.parametrize(
    ("node", "tag"),
    [
        ("lab-node-0", "550-5.15.0-119-generic-ubuntu22.04"),
        ("lab-node-1", "535-5.15.0-107-generic-ubuntu22.04"),
        ("lab-node-2", "550-6.8.0-45-generic-ubuntu24.04"),
        ("lab-node-3", "550-6.8.0-52-generic-ubuntu24.04"),
    ],
)
def test_lab_tags(node: str, tag: str) -> None:
    assert driver_image_tag(LAB_NODES[node]).tag == tag


def test_lab_node_1_after_upgrade() -> None:
    labels = dict(LAB_NODES["lab-node-1"])
    labels.update({"nvidia.com/cuda.driver.major": "550", "nvidia.com/cuda.driver.minor": "90"})
    assert driver_image_tag(labels).tag == "550-5.15.0-107-generic-ubuntu22.04"


@pytest.mark.parametrize(
    ("os_id", "version_id", "operator_version", "expected"),
    [
        # up to v25.10: always ID + VERSION_ID
        ("ubuntu", "22.04", "v25.10.0", "ubuntu22.04"),
        ("rhel", "9.4", "v25.10.0", "rhel9.4"),
        ("rhel", "9.4", "25.10.0", "rhel9.4"),
        ("rhel", "10.1", "v25.10.1", "rhel10.1"),
        ("rocky", "9.4", "v25.10.0", "rocky9.4"),
        ("ol", "9.5", "v25.10.0", "ol9.5"),
        ("rocky", "9.4", "v24.9.2", "rocky9.4"),
        ("rhel", "8.6", "v1.11.1", "rhel8.6"),
        # v26.3: rocky always, rhel from major 10
        ("rocky", "9.4", "v26.3.0", "rocky9"),
        ("rhel", "9.4", "v26.3.1", "rhel9.4"),
        ("rhel", "10.1", "v26.3.1", "rhel10"),
        ("rhel", "10", "26.3.0", "rhel10"),
        ("ol", "9.5", "v26.3.1", "ol9.5"),
        ("rhel", "A.10", "v26.3.0", None),
        ("rocky", "\u00b2.1", "v26.3.0", None),  # str.isdigit() but not strconv.Atoi
        ("ubuntu", "24.04", "v26.3.3", "ubuntu24.04"),
        # v26.7 and later (and None = newest): rhel, rocky, ol keep the major only
        ("rhel", "9.4", "v26.7.0", "rhel9"),
        ("rhel", "8.10", None, "rhel8"),
        ("rhel", "10.2", None, "rhel10"),
        ("rocky", "9.5", None, "rocky9"),
        ("ol", "9.5", "v26.7.0", "ol9"),
        ("ol", "10.0", None, "ol10"),
        ("rhel", "A.10", None, "rhelA"),
        # never truncated
        ("ubuntu", "22.04", None, "ubuntu22.04"),
        ("ubuntu", "24.04", "v26.7.0", "ubuntu24.04"),
        ("rhcos", "4.14", None, "rhcos4.14"),
        ("rhcos", "4.14", "v26.3.1", "rhcos4.14"),
        ("sles", "15-SP6", None, "sles15-SP6"),
        ("talos", "v1.12.6", None, "talosv1.12.6"),
        ("archlinux", "rolling", None, "archlinuxrolling"),
        # an unparseable operator version means the newest behaviour
        ("rhel", "9.4", "main", "rhel9"),
        # missing parts
        ("", "22.04", None, None),
        ("ubuntu", None, None, None),
        (None, None, None, None),
        ("ubuntu", 22.04, None, None),
    ],
)
def test_os_tag(os_id, version_id, operator_version, expected) -> None:
    assert os_tag(os_id, version_id, operator_version) == expected


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("v25.10.0", (25, 10)),
        ("25.10.0", (25, 10)),
        ("v26.3.1", (26, 3)),
        ("v26.3", (26, 3)),
        ("v24.9.2-rc.1", (24, 9)),
        ("v1.11.1", (1, 11)),
        ("main", None),
        ("", None),
        (None, None),
        (26.3, None),
    ],
)
def test_operator_release(version, expected) -> None:
    assert operator_release(version) == expected


@pytest.mark.parametrize(
    ("operator_version", "os_id", "version_id", "tag"),
    [
        ("v25.10.0", "rhel", "9.4", "550-5.14.0-427.13.1.el9_4.x86_64-rhel9.4"),
        ("v26.3.1", "rhel", "9.4", "550-5.14.0-427.13.1.el9_4.x86_64-rhel9.4"),
        ("v26.7.0", "rhel", "9.4", "550-5.14.0-427.13.1.el9_4.x86_64-rhel9"),
        ("v26.3.1", "rocky", "9.4", "550-5.14.0-427.13.1.el9_4.x86_64-rocky9"),
    ],
)
def test_driver_image_tag_follows_operator_version(operator_version, os_id, version_id, tag):
    labels = {
        DRIVER_VERSION_MAJOR_LABEL: "550",
        KERNEL_VERSION_LABEL: "5.14.0-427.13.1.el9_4.x86_64",
        OS_RELEASE_ID_LABEL: os_id,
        OS_VERSION_ID_LABEL: version_id,
    }
    assert driver_image_tag(labels, operator_version).tag == tag


def test_driver_image_tag_reports_missing_labels() -> None:
    result = driver_image_tag({KERNEL_VERSION_LABEL: "5.15.0-69-generic"})
    assert not result.ok
    assert result.missing == (DRIVER_VERSION_MAJOR_LABEL, OS_RELEASE_ID_LABEL, OS_VERSION_ID_LABEL)


@pytest.mark.parametrize(
    ("labels", "operator_version", "error_part"),
    [
        ("not a mapping", None, "not a mapping"),
        (
            {
                DRIVER_VERSION_MAJOR_LABEL: "550",
                KERNEL_VERSION_LABEL: "5.14.0",
                OS_RELEASE_ID_LABEL: "rhel",
                OS_VERSION_ID_LABEL: "A.10",
            },
            "v26.3.0",
            "cannot form an OS tag",
        ),
        (
            {
                DRIVER_VERSION_MAJOR_LABEL: "550",
                KERNEL_VERSION_LABEL: "5.15.0 generic",
                OS_RELEASE_ID_LABEL: "ubuntu",
                OS_VERSION_ID_LABEL: "22.04",
            },
            None,
            "not a valid image tag",
        ),
    ],
)
def test_driver_image_tag_errors(labels, operator_version, error_part) -> None:
    result = driver_image_tag(labels, operator_version)
    assert result.tag is None
    assert error_part in (result.error or "")


def test_current_gfd_key_wins_over_deprecated() -> None:
    facts, missing = driver_facts(
        {DRIVER_VERSION_MAJOR_LABEL: "570", DEPRECATED_DRIVER_MAJOR_LABEL: "550"}
    )
    assert facts.driver_major == "570"
    assert KERNEL_VERSION_LABEL in missing


@pytest.mark.parametrize(
    ("labels", "major", "version"),
    [
        ({DEPRECATED_DRIVER_MAJOR_LABEL: "550"}, "550", None),
        ({DRIVER_VERSION_FULL_LABEL: "550.90.07"}, "550", "550.90.07"),
        ({DRIVER_VERSION_FULL_LABEL: "550.120"}, "550", "550.120"),
        (LAB_NODES["lab-node-1"], "535", "535.183.06"),
        ({DEPRECATED_DRIVER_MAJOR_LABEL: 550}, "550", None),  # unquoted YAML int
        ({DEPRECATED_DRIVER_MAJOR_LABEL: 550.0}, None, None),  # floats are refused
        ({DEPRECATED_DRIVER_MAJOR_LABEL: True}, None, None),
        ({DEPRECATED_DRIVER_MAJOR_LABEL: ""}, None, None),
        ({}, None, None),
    ],
)
def test_driver_facts_driver_version(labels, major, version) -> None:
    facts, _ = driver_facts(labels)
    assert facts.driver_major == major
    assert facts.driver_version == version


def test_driver_facts_label_key_overrides() -> None:
    labels = {
        "example.com/branch": "535",
        "example.com/kernel": "5.15.0-1-aws",
        OS_RELEASE_ID_LABEL: "ubuntu",
        OS_VERSION_ID_LABEL: "22.04",
    }
    facts, missing = driver_facts(
        labels,
        {
            "driver_major": ["example.com/missing", "example.com/branch"],
            "kernel": "example.com/kernel",
        },
    )
    assert (facts.driver_major, facts.kernel, missing) == ("535", "5.15.0-1-aws", ())
    assert driver_image_tag(
        labels, label_keys={"driver_major": "example.com/branch", "kernel": "example.com/kernel"}
    ).tag == ("535-5.15.0-1-aws-ubuntu22.04")
    _, missing = driver_facts({}, {"kernel": "example.com/kernel"})
    assert "example.com/kernel" in missing


def test_driver_facts_node_flags_and_non_mapping() -> None:
    facts, _ = driver_facts(
        {
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.deploy.driver": "false",
            "nvidia.com/gpu.deploy.operands": "false",
        }
    )
    assert (facts.gpu_present, facts.deploy_driver, facts.deploy_operands) == (
        True,
        "false",
        "false",
    )
    facts, missing = driver_facts(["not", "a", "mapping"])
    assert not facts.gpu_present and len(missing) == 4


def test_os_release_is_untruncated() -> None:
    facts, _ = driver_facts({OS_RELEASE_ID_LABEL: "rhel", OS_VERSION_ID_LABEL: "9.4"})
    assert facts.os_release == "rhel9.4"


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (("525", "5.15.0-69-generic", "ubuntu22.04"), "525-5.15.0-69-generic-ubuntu22.04"),
        ((550, "6.8.0-45-generic", "ubuntu24.04"), "550-6.8.0-45-generic-ubuntu24.04"),
        (("550", None, "ubuntu22.04"), None),
        (("550", "5.15.0", ""), None),
        (("550", "bad kernel", "ubuntu22.04"), None),
    ],
)
def test_precompiled_tag(parts, expected) -> None:
    assert precompiled_tag(*parts) == expected


@pytest.mark.parametrize(
    ("version", "branch"),
    [
        ("550.90.07", "550"),
        ("550.120", "550"),
        ("550", "550"),
        (" 535.183.06 ", "535"),
        (570, "570"),
        (DIGEST, None),
        ("latest", None),
        ("550.90.07.1", None),
        (None, None),
    ],
)
def test_driver_branch(version, branch) -> None:
    assert driver_branch(version) == branch


K = "5.15.0-119-generic"


@pytest.mark.parametrize(
    ("args", "reference", "error"),
    [
        # precompiled: <repo>/<image>:<branch>-<kernel>-<ostag>
        (
            ("nvcr.io/nvidia", "driver", "550", K, "ubuntu22.04", True),
            f"nvcr.io/nvidia/driver:550-{K}-ubuntu22.04",
            None,
        ),
        # non-precompiled: <repo>/<image>:<version>-<ostag>
        (
            ("nvcr.io/nvidia", "driver", "550.90.07", K, "ubuntu22.04", False),
            "nvcr.io/nvidia/driver:550.90.07-ubuntu22.04",
            None,
        ),
        (
            ("registry.local:5000/nv", "driver", "550.90.07", None, "rhel9", False),
            "registry.local:5000/nv/driver:550.90.07-rhel9",
            None,
        ),
        # a sha256 version is a digest: no OS suffix
        (
            ("nvcr.io/nvidia", "driver", DIGEST, K, "ubuntu22.04", False),
            f"nvcr.io/nvidia/driver@{DIGEST}",
            None,
        ),
        (
            ("nvcr.io/nvidia", "driver", DIGEST, K, None, False),
            f"nvcr.io/nvidia/driver@{DIGEST}",
            None,
        ),
        # repository and version empty: image is the full path
        (
            ("", "nvcr.io/nvidia/driver:550.90.07", "", K, "ubuntu22.04", False),
            "nvcr.io/nvidia/driver:550.90.07-ubuntu22.04",
            None,
        ),
        (
            (None, f"nvcr.io/nvidia/driver@{DIGEST}", None, K, "ubuntu22.04", False),
            f"nvcr.io/nvidia/driver@{DIGEST}",
            None,
        ),
        (
            ("", "nvcr.io/nvidia/driver:550", "", K, "ubuntu22.04", True),
            f"nvcr.io/nvidia/driver:550-{K}-ubuntu22.04",
            None,
        ),
        # precompiled with a digest is an error
        (
            ("nvcr.io/nvidia", "driver", DIGEST, K, "ubuntu22.04", True),
            None,
            PRECOMPILED_DIGEST_ERROR,
        ),
        (
            ("", f"nvcr.io/nvidia/driver@{DIGEST}", "", K, "ubuntu22.04", True),
            None,
            PRECOMPILED_DIGEST_ERROR,
        ),
        # missing facts
        (
            ("nvcr.io/nvidia", "driver", "550", None, "ubuntu22.04", True),
            None,
            MISSING_KERNEL_LABEL_ERROR,
        ),
        (("", "", "", K, "ubuntu22.04", True), None, PRECOMPILED_PATH_ERROR),
        (("nvcr.io/nvidia", "driver", "550.90.07", K, None, False), None, "OS tag is unknown"),
        (("", "", "", K, "ubuntu22.04", False), None, "empty driver image path"),
        # a tagged image next to a repository builds an invalid reference
        (
            ("nvcr.io/nvidia", "driver:550", "550.90.07", K, "ubuntu22.04", False),
            None,
            "not a valid image reference",
        ),
        (
            ("nvcr.io/nvidia", "driver", "", K, "ubuntu22.04", True),
            None,
            "not a valid image reference",
        ),
        (
            ("", "nvcr.io/nvidia/driver", "", K, "ubuntu22.04", True),
            None,
            "neither a tag nor a digest",
        ),
    ],
)
def test_driver_image_reference(args, reference, error) -> None:
    result = driver_image_reference(*args)
    assert result.reference == reference
    if error is None:
        assert result.error is None
    else:
        assert error in (result.error or "")


def test_precompiled_full_version_gets_a_note() -> None:
    result = driver_image_reference("nvcr.io/nvidia", "driver", "550.90.07", K, "ubuntu22.04", True)
    assert result.reference == f"nvcr.io/nvidia/driver:550.90.07-{K}-ubuntu22.04"
    assert result.note is not None and "'550'" in result.note


def test_precompiled_os_conflicts() -> None:
    nodes = [
        ("a", "5.15.0-119-generic", "ubuntu22.04"),
        ("b", "5.15.0-119-generic", "ubuntu22.04"),
        ("c", "5.15.0-119-generic", "ubuntu20.04"),
        ("d", "6.8.0-45-generic", "ubuntu24.04"),
        ("e", None, "ubuntu24.04"),
        "malformed",
        ("too", "short"),
    ]
    (conflict,) = precompiled_os_conflicts(nodes)
    assert conflict.kernel == "5.15.0-119-generic"
    assert conflict.os_releases == ("ubuntu20.04", "ubuntu22.04")
    assert conflict.nodes == ("a", "b", "c")
    assert conflict.message == (
        "different OS versions found for the same kernel version 5.15.0-119-generic, "
        "unsupported configuration"
    )


def test_lab_has_no_os_conflict() -> None:
    triples = []
    for name, labels in LAB_NODES.items():
        facts, _ = driver_facts(labels)
        triples.append((name, facts.kernel, facts.os_release))
    assert precompiled_os_conflicts(triples) == []
    assert precompiled_os_conflicts(None) == []


@pytest.mark.parametrize(
    ("reference", "name", "tag", "digest"),
    [
        ("nvcr.io/nvidia/pytorch:24.07-py3", "nvcr.io/nvidia/pytorch", "24.07-py3", None),
        (
            "nvidia/cuda:12.4.1-runtime-ubuntu22.04",
            "docker.io/nvidia/cuda",
            "12.4.1-runtime-ubuntu22.04",
            None,
        ),
        ("ubuntu", "docker.io/library/ubuntu", None, None),
        ("ubuntu:22.04", "docker.io/library/ubuntu", "22.04", None),
        ("index.docker.io/nvidia/cuda:12.4.1-base", "docker.io/nvidia/cuda", "12.4.1-base", None),
        ("Docker.IO/nvidia/cuda:12.4.1-base", "docker.io/nvidia/cuda", "12.4.1-base", None),
        ("localhost:5000/team/img:v1", "localhost:5000/team/img", "v1", None),
        ("localhost/img", "localhost/img", None, None),
        (
            f"nvcr.io/nvidia/pytorch:24.07-py3@{DIGEST}",
            "nvcr.io/nvidia/pytorch",
            "24.07-py3",
            DIGEST,
        ),
        (f"nvcr.io/nvidia/pytorch@{DIGEST}", "nvcr.io/nvidia/pytorch", None, DIGEST),
    ],
)
def test_parse_image_reference(reference, name, tag, digest) -> None:
    parsed = parse_image_reference(reference)
    assert parsed is not None
    assert (parsed.name, parsed.tag, parsed.digest) == (name, tag, digest)


@pytest.mark.parametrize(
    "reference", ["NVIDIA/cuda:12.4", "nvcr.io/nvidia/pytorch:", "a b", "", None, 5, ":tag"]
)
def test_parse_image_reference_rejects(reference) -> None:
    assert parse_image_reference(reference) is None


@pytest.mark.parametrize(
    ("kernel", "expected"),
    [
        ("5.14.0-427.13.1.el9_4.x86_64", "5.14.0-427.13.1.el9.4"),
        ("5.15.0-119-generic", "5.15.0-119-generic"),
        ("6.1.0-aarch64_64k", "6.1.0-"),
        (None, None),
    ],
)
def test_sanitized_kernel_version(kernel, expected) -> None:
    assert sanitized_kernel_version(kernel) == expected


# --- nvidia.com/gpu.present from NFD PCI labels ------------------------------------------------
# controllers/state_manager.go `hasGPULabels`/`gpuNodeLabels`; nodelabeling_controller.go
# `reconcileCommonGPULabel` (v26.7), `labelGPUNodes` (v25.10, v26.3): the same rule in each.
PCI = "feature.node.kubernetes.io/pci-10de.present"
OS_ID = "feature.node.kubernetes.io/system-os_release.ID"
OS_VERSION = "feature.node.kubernetes.io/system-os_release.VERSION_ID"
PCI_3D = "feature.node.kubernetes.io/pci-0302_10de.present"
PCI_VGA = "feature.node.kubernetes.io/pci-0300_10de.present"


@pytest.mark.parametrize(
    ("labels", "present"),
    [
        ({PCI: "true"}, "true"),
        ({PCI_3D: "true"}, "true"),
        ({PCI_VGA: "true"}, "true"),
        ({PCI_3D: "true", "nvidia.com/gpu.present": "false"}, "true"),  # relabelled true
        ({"nvidia.com/gpu.present": "true"}, "false"),  # no PCI label: reset to false
        ({"nvidia.com/gpu.present": "true", PCI: "false"}, "false"),  # value must be "true"
        ({"feature.node.kubernetes.io/pci-1234.present": "true"}, None),  # another vendor
        ({"nvidia.com/gpu.present": ""}, ""),  # neither: left as written
        ({}, None),
        (None, None),
    ],
)
def test_derived_gpu_present(labels, present) -> None:
    from gpudrv_check.nvidia.driver_image import derived_gpu_present

    assert derived_gpu_present(labels) == present


# --- the ClusterPolicy's one OS tag (getGPUNodeOSInfo / getGPUNodeOSTag / kernelFullVersion) ---


@pytest.mark.parametrize(
    ("release", "tags"),
    [
        ("v25.10.0", ("rhel9.4", "rhel9.6", "ubuntu22.04")),
        ("v26.3.0", ("rhel9.4", "rhel9.6", "ubuntu22.04")),
        ("v26.7.0", ("rhel9", "ubuntu22.04")),  # rhel9.4 and rhel9.6 now share one tag
    ],
)
def test_cluster_os_tag_per_release(release, tags) -> None:
    from gpudrv_check.nvidia.driver_image import cluster_os_tag

    def node(name, os_id, version):
        return name, {OS_ID: os_id, OS_VERSION: version}

    nodes = [node("a", "rhel", "9.4"), node("b", "rhel", "9.6"), node("c", "ubuntu", "22.04")]
    result = cluster_os_tag(nodes, release)
    assert tuple(result.by_tag) == tags and result.mixed and result.tag is None
    single = cluster_os_tag([node("a", "rhel", "9.4"), node("b", "rhel", "9.6")], release)
    assert single.mixed is (release != "v26.7.0")
    assert cluster_os_tag([("x", {})], release).unlabelled == ("x",)


@pytest.mark.parametrize(
    ("version", "problem"),
    [
        ("550", None),
        ("550.90.07", "names '550.90.07-<kernel>-<os-tag>', which is never built; use '550'"),
        ("sha256:" + "a" * 64, "not supported when precompiled is enabled"),
        (None, None),
    ],
)
def test_precompiled_version_problem(version, problem) -> None:
    # resolveDriverTag puts driver.version verbatim into <version>-<kernel>-<os-tag>
    from gpudrv_check.nvidia.driver_image import precompiled_version_problem

    found = precompiled_version_problem(version)
    assert (found is None) if problem is None else (problem in found)


@pytest.mark.parametrize(
    ("os_id", "version", "release", "tag"),
    [
        # getGPUNodeOSTag (v26.3): strconv.Atoi of the major version fails for every OS
        ("debian", "sid", "v26.3.0", None),
        ("debian", "sid", "v25.10.0", "debiansid"),  # v25.10: ID + VERSION_ID, no parsing
        ("debian", "sid", "v26.7.0", "debiansid"),  # v26.7: only ol/rocky/rhel are split
    ],
)
def test_non_numeric_major_per_release(os_id, version, release, tag) -> None:
    from gpudrv_check.nvidia.driver_image import os_tag

    assert os_tag(os_id, version, release) == tag
