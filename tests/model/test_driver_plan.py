"""The driver the operator installs, on small repos, per operator release.

Upstream NVIDIA/gpu-operator functions followed, row by row: controllers/object_controls.go
`resolveDriverTag` (image forms), `getKernelVersionsMap` (GPU003); controllers/state_manager.go
`getGPUNodeOSInfo` (one OS tag), `init` (what stops the whole ClusterPolicy), `step` (no driver
state with useNvidiaDriverCRD), `getWorkloadConfig` and `gpuStateLabels` (sandbox nodes get no
driver), `addGPUStateLabels` (v26.7 empty values); internal/nvidiadriver `AssignOwners`;
internal/state/nodepool.go `getNodePools`; deployments/gpu-operator/templates/nvidiadriver.yaml.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.engine.run import check
from gpudrv_check.model.driver import audit_entries
from gpudrv_check.model.driver_plan import (
    CLUSTERPOLICY,
    DISABLED,
    LABELS,
    NVIDIADRIVER,
    driver_plan,
)
from gpudrv_check.read.config import Config
from tests.conftest import gpu_node as _gpu_node
from tests.conftest import write

RELEASES = ("v25.10.0", "v26.3.0", "v26.7.0")
MATRIX = (
    "driver_branch,kernel,os_tag\n"
    "550,5.15.0-119-generic,ubuntu22.04\n"
    "535,5.15.0-107-generic,ubuntu22.04\n"
)


def gpu_node(name: str, extra: str = "", **kw: str) -> str:
    """A GPU node; `extra` holds label lines indented under `labels:`."""
    return _gpu_node(name, **kw).replace("  labels:\n", "  labels:\n" + extra)


def run(root: Path, release: str | None = None):
    if not (root / "support-matrix.csv").exists():
        write(root, "support-matrix.csv", MATRIX)
    config = Config()
    if release:
        config.operator.version = release
    return check(root, config)


def rules(root: Path, release: str | None = None) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in run(root, release).findings:
        out.setdefault(f.rule, []).append(f)
    return out


def cluster_policy(driver: str, extra: str = "") -> str:
    return (
        "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\n"
        f"spec:\n  driver:\n{driver}{extra}"
    )


PRECOMPILED_550 = (
    "    usePrecompiled: true\n    repository: r.io/nv\n    image: driver\n    version: '550'\n"
)


def lab(root: Path, *, os2: str = "24.04") -> None:
    write(root, "support-matrix.csv", MATRIX + f"550,6.8.0-45-generic,ubuntu{os2}\n")
    write(root, "n0.yaml", gpu_node("n0"))
    write(root, "n1.yaml", gpu_node("n1", branch="535", kernel="5.15.0-107-generic"))
    write(root, "n2.yaml", gpu_node("n2", kernel="6.8.0-45-generic", version=os2))


# --- ClusterPolicy: version from driver.version, one OS tag ------------------------------------


@pytest.mark.parametrize("release", RELEASES)
def test_precompiled_version_comes_from_the_spec_not_the_labels(tmp_path, release) -> None:
    lab(tmp_path, os2="22.04")
    write(tmp_path, "cp.yaml", cluster_policy(PRECOMPILED_550))
    found = rules(tmp_path, release)
    [gpu001] = found["GPU001"]
    assert gpu001.object.name == "n1"
    assert gpu001.message.startswith(
        "node n1 will get driver branch 550 from the ClusterPolicy cluster-policy (it runs 535 "
        "now), so it needs driver image r.io/nv/driver:550-5.15.0-107-generic-ubuntu22.04"
    )
    [gpu016] = found["GPU016"]
    assert (gpu016.location.file, gpu016.location.line) == ("cp.yaml", 9)  # driver.version
    assert "n1 (runs 535)" in gpu016.message
    assert "GPU013" not in found  # one OS release


@pytest.mark.parametrize("release", RELEASES)
def test_precompiled_full_version_pulls_a_tag_that_never_exists(tmp_path, release) -> None:
    write(tmp_path, "n0.yaml", gpu_node("n0"))
    driver = PRECOMPILED_550.replace("'550'", "'550.90.07'")
    write(tmp_path, "cp.yaml", cluster_policy(driver))
    [f] = rules(tmp_path, release)["GPU014"]
    assert (f.location.file, f.location.line, f.location.column) == ("cp.yaml", 9, 5)
    assert "'550.90.07-<kernel>-<os-tag>', which is never built; use '550'" in f.message
    [entry] = audit_entries(run(tmp_path, release).repo)
    assert entry.result.tag == "550.90.07-5.15.0-119-generic-ubuntu22.04"


@pytest.mark.parametrize("release", RELEASES)
def test_mixed_os_tags_cannot_share_one_cluster_policy_driver(tmp_path, release) -> None:
    lab(tmp_path)
    write(tmp_path, "cp.yaml", cluster_policy(PRECOMPILED_550))
    [f] = rules(tmp_path, release)["GPU013"]
    assert (f.location.file, f.location.line) == ("cp.yaml", 5)  # the driver section
    assert "ubuntu22.04 (n0, n1); ubuntu24.04 (n2)" in f.message
    assert "NVIDIADriver" in f.hint and "one OS release" in f.hint
    entries = {e.node.name: e for e in audit_entries(run(tmp_path, release).repo)}
    assert entries["n2"].other_os_tags == ("ubuntu22.04",)


@pytest.mark.parametrize(
    ("release", "mixed"), [("v25.10.0", True), ("v26.3.0", True), ("v26.7.0", False)]
)
def test_rhel_minor_releases_share_a_tag_from_v26_7(tmp_path, release, mixed) -> None:
    write(tmp_path, "a.yaml", gpu_node("a", os_id="rhel", version="9.4"))
    write(tmp_path, "b.yaml", gpu_node("b", os_id="rhel", version="9.6"))
    write(tmp_path, "cp.yaml", cluster_policy("    version: '550.90.07'\n"))
    assert ("GPU013" in rules(tmp_path, release)) is mixed


@pytest.mark.parametrize(
    ("driver", "reference"),
    [
        # resolveDriverTag without precompiled: <repository>/<image>:<version>-<os-tag>
        (
            "    repository: r.io/nv\n    image: driver\n    version: 550.90.07\n",
            "r.io/nv/driver:550.90.07-ubuntu22.04",
        ),
        # a digest is used as is: no OS suffix
        (
            f"    repository: r.io/nv\n    image: driver\n    version: sha256:{'a' * 64}\n",
            f"r.io/nv/driver@sha256:{'a' * 64}",
        ),
        # image only (kbld): the OS suffix, and with precompiled the kernel, are appended
        ("    image: r.io/nv/driver:550.90.07\n", "r.io/nv/driver:550.90.07-ubuntu22.04"),
        (
            "    usePrecompiled: true\n    image: r.io/nv/driver:550\n",
            "r.io/nv/driver:550-5.15.0-119-generic-ubuntu22.04",
        ),
    ],
)
@pytest.mark.parametrize("release", RELEASES)
def test_image_forms(tmp_path, driver, reference, release) -> None:
    write(tmp_path, "n0.yaml", gpu_node("n0"))
    write(tmp_path, "cp.yaml", cluster_policy(driver))
    [entry] = audit_entries(run(tmp_path, release).repo)
    assert entry.reference == reference


@pytest.mark.parametrize(
    ("driver", "mode"),
    [("    enabled: false\n", DISABLED), ("    useNvidiaDriverCRD: true\n", NVIDIADRIVER)],
)
@pytest.mark.parametrize("release", RELEASES)
def test_no_cluster_policy_driver(tmp_path, driver, mode, release) -> None:
    # driver.enabled false: no driver state; useNvidiaDriverCRD: step() skips state-driver.
    # A managed driver would give `new` GPU001 (kernel not in the matrix), `bare` GPU002.
    write(tmp_path, "support-matrix.csv", MATRIX)
    write(tmp_path, "m.yaml", gpu_node("new", kernel="6.8.0-52-generic"))
    write(
        tmp_path,
        "n.yaml",
        gpu_node("bare").replace(
            "    feature.node.kubernetes.io/kernel-version.full: 5.15.0-119-generic\n", ""
        ),
    )
    write(tmp_path, "cp.yaml", cluster_policy(driver))
    result = run(tmp_path, release)
    assert driver_plan(result.repo).mode == mode
    assert not {"GPU001", "GPU002", "GPU003"} & {f.rule for f in result.findings}
    assert audit_entries(result.repo) == []


@pytest.mark.parametrize("release", RELEASES)
def test_sandbox_workload_nodes_get_no_driver_container(tmp_path, release) -> None:
    write(tmp_path, "support-matrix.csv", MATRIX)
    vm = '    nvidia.com/gpu.workload.config: "vm-passthrough"\n'
    write(tmp_path, "vm.yaml", gpu_node("vm", kernel="6.8.0-52-generic", extra=vm))
    write(tmp_path, "c.yaml", gpu_node("c", kernel="6.8.0-52-generic"))
    sandbox = "  sandboxWorkloads: {enabled: true}\n"
    write(tmp_path, "cp.yaml", cluster_policy("    usePrecompiled: true\n", sandbox))
    assert [f.object.name for f in rules(tmp_path, release)["GPU001"]] == ["c"]
    plan = driver_plan(run(tmp_path, release).repo)
    assert "sandbox workload vm-passthrough" in plan.nodes["vm"].reason
    # defaultWorkload applies to nodes without the label
    write(
        tmp_path,
        "cp.yaml",
        cluster_policy(
            "    usePrecompiled: true\n",
            "  sandboxWorkloads: {enabled: true, defaultWorkload: vm-vgpu}\n",
        ),
    )
    assert "GPU001" not in rules(tmp_path, release)


@pytest.mark.parametrize("release", RELEASES)
def test_gpu003_only_with_precompiled_and_it_stops_the_whole_cluster_policy(
    tmp_path, release
) -> None:
    same_kernel = {"kernel": "5.15.0-119-generic"}
    write(tmp_path, "a.yaml", gpu_node("a", **same_kernel))
    host = '    nvidia.com/gpu.deploy.driver: "false"\n'
    # getKernelVersionsMap lists every GPU node, whoever installs its driver
    write(tmp_path, "b.yaml", gpu_node("b", version="24.04", extra=host, **same_kernel))
    write(tmp_path, "cp.yaml", cluster_policy("    version: 550.90.07\n"))
    assert "GPU003" not in rules(tmp_path, release)
    write(tmp_path, "cp.yaml", cluster_policy(PRECOMPILED_550))
    found = rules(tmp_path, release)["GPU003"]
    assert [f.object.name for f in found] == ["a", "b"]
    assert found[0].message.endswith("so the whole ClusterPolicy cluster-policy stops reconciling")


def test_gpu003_without_configuration_keeps_the_labs_model(tmp_path) -> None:
    write(tmp_path, "a.yaml", gpu_node("a"))
    write(tmp_path, "b.yaml", gpu_node("b", version="24.04"))
    assert len(rules(tmp_path)["GPU003"]) == 2


@pytest.mark.parametrize("release", RELEASES)
def test_gpu002_only_for_labels_the_operator_needs(tmp_path, release) -> None:
    no_branch = gpu_node("a").replace('    nvidia.com/cuda.driver-version.major: "550"\n', "")
    write(tmp_path, "a.yaml", no_branch)
    write(tmp_path, "cp.yaml", cluster_policy(PRECOMPILED_550))
    assert "GPU002" not in rules(tmp_path, release)  # driver.version gives the branch
    write(tmp_path, "cp.yaml", cluster_policy("    usePrecompiled: true\n"))
    [f] = rules(tmp_path, release)["GPU002"]
    assert "nvidia.com/cuda.driver-version.major" in f.message
    write(tmp_path, "cp.yaml", cluster_policy("    enabled: false\n"))
    assert "GPU002" not in rules(tmp_path, release)


@pytest.mark.parametrize(
    ("release", "managed"), [("v25.10.0", False), ("v26.3.0", False), ("v26.7.0", True)]
)
def test_empty_deploy_driver_label(tmp_path, release, managed) -> None:
    # addGPUStateLabels: v26.7 treats "" as absent and sets "true"; before, "" stays
    empty = '    nvidia.com/gpu.deploy.driver: ""\n'
    write(tmp_path, "a.yaml", gpu_node("a", extra=empty))
    write(tmp_path, "cp.yaml", cluster_policy(PRECOMPILED_550))
    assert driver_plan(run(tmp_path, release).repo).nodes["a"].managed is managed


# --- gpu.present from NFD PCI labels ----------------------------------------------------------


@pytest.mark.parametrize("release", [None, *RELEASES])
def test_gpu_present_follows_the_pci_labels_when_the_repo_has_them(tmp_path, release) -> None:
    write(tmp_path, "support-matrix.csv", MATRIX)
    pci = '    feature.node.kubernetes.io/pci-0302_10de.present: "true"\n'
    unlabelled = gpu_node("fresh", kernel="6.8.0-52-generic", extra=pci).replace(
        '    nvidia.com/gpu.present: "true"\n', ""
    )
    write(tmp_path, "a.yaml", unlabelled)  # NFD found a GPU, the operator will label it
    write(tmp_path, "b.yaml", gpu_node("stale", kernel="6.8.0-52-generic"))  # no PCI label
    result = run(tmp_path, release)
    assert [n.name for n in result.repo.gpu_nodes] == ["fresh"]
    assert [f.object.name for f in result.findings if f.rule == "GPU001"] == ["fresh"]
    assert "the operator relabels fresh=true, stale=false" in result.repo.extras["gpu_presence"]


def test_gpu_present_as_written_without_any_pci_label(tmp_path) -> None:
    write(tmp_path, "a.yaml", gpu_node("a"))
    result = run(tmp_path)
    assert [n.name for n in result.repo.gpu_nodes] == ["a"]
    assert result.repo.extras["gpu_presence"].endswith("as written (no node has NFD PCI labels)")


# --- NVIDIADriver ------------------------------------------------------------------------------


def nvidiadriver(name: str, version: str, selector: str = "", default: bool = False) -> str:
    text = (
        f"apiVersion: nvidia.com/v1alpha1\nkind: NVIDIADriver\nmetadata: {{name: {name}}}\n"
        f"spec:\n  usePrecompiled: true\n  repository: r.io/nv\n  image: driver\n"
        f"  version: '{version}'\n"
    )
    if default:
        text += "  default: true\n"
    if selector:
        text += f"  nodeSelector:\n    {selector}\n"
    return text


CRD_ON = cluster_policy("    useNvidiaDriverCRD: true\n")


@pytest.mark.parametrize("release", ["v26.7.0"])
def test_owners_and_pools_give_each_node_its_own_image(tmp_path, release) -> None:
    lab(tmp_path)
    write(tmp_path, "cp.yaml", CRD_ON)
    write(tmp_path, "d550.yaml", nvidiadriver("d550", "550", default=True))
    write(tmp_path, "d535.yaml", nvidiadriver("d535", "535", "kubernetes.io/hostname: n1"))
    result = run(tmp_path, release)
    plan = driver_plan(result.repo)
    assert [(pool.driver, pool.name) for _, pool, _ in plan.pools] == [
        ("d535", "ubuntu22.04-5.15.0-107-generic"),
        ("d550", "ubuntu22.04-5.15.0-119-generic"),
        ("d550", "ubuntu24.04-6.8.0-45-generic"),
    ]
    assert {e.node.name: e.reference for e in audit_entries(result.repo)} == {
        "n0": "r.io/nv/driver:550-5.15.0-119-generic-ubuntu22.04",
        "n1": "r.io/nv/driver:535-5.15.0-107-generic-ubuntu22.04",
        "n2": "r.io/nv/driver:550-6.8.0-45-generic-ubuntu24.04",
    }
    drivers = {"GPU001", "GPU002", "GPU003", "GPU013", "GPU014", "GPU015", "GPU016"}
    assert not drivers & {f.rule for f in result.findings}


@pytest.mark.parametrize(
    ("docs", "where"),
    [
        # two CRs match n1
        (
            {
                "a": nvidiadriver("a", "550", "kubernetes.io/hostname: n1"),
                "b": nvidiadriver("b", "535", "kubernetes.io/os: linux"),
            },
            None,
        ),
        (
            {
                "a": nvidiadriver("a", "550", default=True),
                "b": nvidiadriver("b", "535", default=True),
            },
            "default",
        ),
        ({"a": nvidiadriver("a", "550", "pool: x", default=True)}, "nodeSelector"),
        (
            {"a": nvidiadriver("a", "550", "nvidia.com/gpu-operator.driver.owner: a")},
            "nvidia.com/gpu-operator.driver.owner",
        ),
    ],
)
def test_owner_conflicts_are_errors_at_the_cr(tmp_path, docs, where) -> None:
    write(tmp_path, "n1.yaml", gpu_node("n1", extra="    kubernetes.io/os: linux\n"))
    write(tmp_path, "cp.yaml", CRD_ON)
    for name, text in docs.items():
        write(tmp_path, f"{name}.yaml", text)
    found = rules(tmp_path, "v26.7.0")["GPU015"]
    assert found and all("no CR installs a driver on any node" in f.message for f in found)
    f = found[0]
    doc = (tmp_path / f.location.file).read_text().splitlines()
    assert (where or "nodeSelector") in doc[f.location.line - 1]
    assert driver_plan(run(tmp_path, "v26.7.0").repo).nodes["n1"].managed is False


def helmrelease(version: str, values: str) -> str:
    return (
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\n"
        "metadata: {name: gpu-operator, namespace: gpu-operator}\n"
        f"spec:\n  chart:\n    spec: {{chart: gpu-operator, version: {version}}}\n"
        f"  values:\n{values}"
    )


CHART_VALUES = (
    "    driver:\n      usePrecompiled: true\n      repository: r.io/nv\n      version: '550'\n"
    "      nvidiaDriverCRD: {enabled: true}\n"
)
# before v26.7.0 the chart writes driver.version bare into its default CR: a branch ("550")
# becomes a YAML number the API server refuses (test_a_branch_version_breaks_the_charts_...)
CHART_VALUES_UNQUOTED = CHART_VALUES.replace("'550'", "'550.90.07'").replace(
    "usePrecompiled: true", "usePrecompiled: false"
)


@pytest.mark.parametrize(
    ("chart", "conflict"), [("v25.10.0", True), ("v26.3.0", True), ("v26.7.0", False)]
)
def test_the_charts_default_cr_from_helm_values(tmp_path, chart, conflict) -> None:
    # templates/nvidiadriver.yaml: `default: true` only from v26.7; before, the default CR
    # selects every GPU node and overlaps with any other CR
    lab(tmp_path, os2="22.04")
    values = CHART_VALUES if chart == "v26.7.0" else CHART_VALUES_UNQUOTED
    write(tmp_path, "hr.yaml", helmrelease(chart, values))
    write(tmp_path, "d535.yaml", nvidiadriver("d535", "535", "kubernetes.io/hostname: n1"))
    result = run(tmp_path)
    plan = driver_plan(result.repo)
    assert plan.mode == NVIDIADRIVER
    assert ("GPU015" in {f.rule for f in result.findings}) is conflict
    if not conflict:
        assert {name: e.pool.driver for name, e in plan.nodes.items()} == {
            "n0": "default",
            "n1": "d535",
            "n2": "default",
        }
        assert "GPU001" not in {f.rule for f in result.findings}


def test_cluster_policy_mode_without_crd(tmp_path) -> None:
    write(tmp_path, "n0.yaml", gpu_node("n0"))
    write(tmp_path, "cp.yaml", cluster_policy(PRECOMPILED_550))
    assert driver_plan(run(tmp_path).repo).mode == CLUSTERPOLICY


@pytest.mark.parametrize(("release", "found"), [("v26.3.0", False), ("v26.7.0", True)])
def test_per_cr_upgrade_policy_from_v26_7(tmp_path, release, found) -> None:
    # nvidiadriver_types.go DriverUpgradePolicySpec on the CR (v26.7); before, the ClusterPolicy's
    write(tmp_path, "n0.yaml", gpu_node("n0"))
    write(tmp_path, "cp.yaml", CRD_ON)
    policy = "  upgradePolicy:\n    autoUpgrade: true\n    drain: {enable: true}\n"
    write(tmp_path, "d.yaml", nvidiadriver("d", "550", default=True) + policy)
    gpu023 = rules(tmp_path, release).get("GPU023", [])
    assert bool(gpu023) is found
    if found:
        assert (gpu023[0].location.file, gpu023[0].location.line) == ("d.yaml", 12)  # drain.enable
    entry = driver_plan(run(tmp_path, "v26.7.0").repo).nodes["n0"]
    assert entry.upgrade_policy["autoUpgrade"] is True and entry.upgrade_policy["drain"]["enable"]


@pytest.mark.parametrize("release", RELEASES)
def test_kernel_label_matters_only_with_precompiled_or_a_matrix(tmp_path, release) -> None:
    # resolveDriverTag: the kernel is part of the image only in precompiled mode
    no_kernel = gpu_node("a").replace(
        "    feature.node.kubernetes.io/kernel-version.full: 5.15.0-119-generic\n", ""
    )
    write(tmp_path, "a.yaml", no_kernel)
    write(tmp_path, "cp.yaml", cluster_policy("    repository: r.io/nv\n    version: 550.90.07\n"))
    config = Config(matrix=None)
    config.operator.version = release
    assert "GPU002" not in {f.rule for f in check(tmp_path, config).findings}
    write(tmp_path, "cp.yaml", cluster_policy(PRECOMPILED_550))
    [f] = [f for f in check(tmp_path, config).findings if f.rule == "GPU002"]
    assert "kernel-version.full" in f.message


# --- long node lists: the first five named, the rest counted (core/finding.py MAX_MESSAGE) --------


def _same_kernel_pool(root: Path, count: int, version: str = "22.04") -> None:
    """``count`` GPU nodes a0.. on ``version`` and z on 24.04, all on kernel 5.15.0-119."""
    for i in range(count):
        write(root, f"a{i}.yaml", gpu_node(f"a{i}", version=version))
    write(root, "z.yaml", gpu_node("z", version="24.04"))


@pytest.mark.parametrize("mode", ["labels", "clusterpolicy"])
def test_gpu003_names_five_nodes_of_another_release_and_counts_the_rest(tmp_path, mode) -> None:
    """Seven nodes on ubuntu22.04 share z's kernel: z's message names five with their release
    and counts two, and ends as always (GPU003 `check` and driver_plan.py
    `_kernel_os_conflicts`, both through `os_conflict_others`)."""
    _same_kernel_pool(tmp_path, 7)
    end = 'unsupported configuration"'
    if mode == "clusterpolicy":
        write(tmp_path, "cp.yaml", cluster_policy(PRECOMPILED_550))
        end = "so the whole ClusterPolicy cluster-policy stops reconciling"
    found = {f.object.name: f.message for f in rules(tmp_path, "v26.7.0")["GPU003"]}
    assert len(found) == 8
    message = found["z"]
    assert message.count(" (ubuntu22.04)") == 5
    assert "like a0 (ubuntu22.04), a1 (ubuntu22.04), a2 (ubuntu22.04), a3 (ubuntu22.04), " in (
        message
    )
    assert "a4 (ubuntu22.04) and 2 more on another OS release; " in message
    assert message.endswith(end)
    assert "like z (ubuntu24.04) on another OS release; " in found["a0"]  # a short list: whole


def test_gpu013_names_five_nodes_and_five_releases_and_counts_the_rest(tmp_path) -> None:
    """Six nodes on ubuntu22.04 among six OS releases: five releases written out, five nodes
    named in each and the sixth node counted, the last release counted, and the message ends
    with what the other nodes get (driver_plan.py `_os_groups`)."""
    _same_kernel_pool(tmp_path, 6)
    for version in ("18.04", "20.04", "25.04", "26.04"):
        write(tmp_path, f"u{version}.yaml", gpu_node(f"u{version}", version=version))
    write(tmp_path, "cp.yaml", cluster_policy("    version: '550.90.07'\n"))
    [f] = rules(tmp_path, "v26.7.0")["GPU013"]
    assert "the GPU nodes run 6 OS releases: ubuntu18.04 (u18.04); ubuntu20.04 (u20.04); " in (
        f.message
    )
    assert "ubuntu22.04 (a0, a1, a2, a3, a4 and 1 more); ubuntu24.04 (z); " in f.message
    assert "ubuntu25.04 (u25.04); and 1 more release; the nodes of the other" in f.message
    assert "u26.04" not in f.message
    assert f.message.endswith(
        "the nodes of the other releases get a driver image built for the wrong OS"
    )


def test_gpu016_names_five_moving_nodes_and_counts_the_rest(tmp_path) -> None:
    """Seven nodes on branch 535 that driver 550 moves: five named with what they run, two
    counted, and the message still says when they move (driver_plan.py `_upgrade_problem`)."""
    for i in range(7):
        write(tmp_path, f"n{i}.yaml", gpu_node(f"n{i}", branch="535"))
    write(tmp_path, "cp.yaml", cluster_policy("    repository: r.io/nv\n    version: 550.90.07\n"))
    [f] = rules(tmp_path, "v26.7.0")["GPU016"]
    assert f.message.count(" (runs 535)") == 5
    assert "renders it for n0 (runs 535), n1 (runs 535), n2 (runs 535), n3 (runs 535), " in (
        f.message
    )
    assert "n4 (runs 535) and 2 more, which move to branch 550" in f.message
    assert f.message.endswith("when the driver pod is replaced")


@pytest.mark.parametrize(
    ("release", "nodes"),
    [
        # AssignOwners: upstream names n0, the other six are counted and five of them named
        ("v26.7.0", "n0: [a b] (and 6 more, among them n1, n2, n3, n4, n5); "),
        # before v26.7: every node of the set, five named
        ("v26.3.0", "(node(s) n0, n1, n2, n3, n4 and 2 more selected by a, b); "),
    ],
)
def test_gpu015_names_five_shared_nodes_and_counts_the_rest(tmp_path, release, nodes) -> None:
    """Two NVIDIADrivers selecting the same seven nodes: each CR's message names five of them,
    counts the rest and still says what the operator does (nvidia/nvidiadriver.py
    `_same_node_message` and `_conflicting_selectors_message`)."""
    for i in range(7):
        write(tmp_path, f"n{i}.yaml", gpu_node(f"n{i}", extra="    kubernetes.io/os: linux\n"))
    write(tmp_path, "cp.yaml", CRD_ON)
    for name in ("a", "b"):
        write(tmp_path, f"{name}.yaml", nvidiadriver(name, "550", "kubernetes.io/os: linux"))
    found = rules(tmp_path, release)["GPU015"]
    assert [f.message.split(":")[0] for f in found] == ["NVIDIADriver a", "NVIDIADriver b"]
    for f in found:
        assert nodes in f.message
        assert f.message.endswith("no CR installs a driver on any node")


# --- a node the pool of its name leaves out (nodepool.go getNodePools, per release) -----------

ROCKY_NODES = (
    ("r92", "9.2", "5.14.0-284.el9_2.x86_64"),
    ("r94", "9.4", "5.14.0-427.el9_4.x86_64"),
)
CR_550 = (
    "apiVersion: nvidia.com/v1alpha1\nkind: NVIDIADriver\nmetadata: {name: gpu}\n"
    "spec:\n  repository: r.io/nv\n  image: driver\n  version: '550.90.07'\n"
)


def _rocky(root: Path) -> None:
    major = "    feature.node.kubernetes.io/system-os_release.VERSION_ID.major: '9'\n"
    for name, version, kernel in ROCKY_NODES:
        node = gpu_node(name, major, os_id="rocky", version=version, kernel=kernel)
        write(root, f"{name}.yaml", node)
    write(root, "support-matrix.csv", "driver_branch,kernel,os_tag\n")
    write(root, "cp.yaml", CRD_ON)
    write(root, "gpu.yaml", CR_550)


@pytest.mark.parametrize(("release", "left_out"), [("v26.3.0", True), ("v26.7.0", False)])
def test_v26_3_rocky_pool_selects_the_exact_version_id(tmp_path, release, left_out) -> None:
    # v26.3 getNodePools: pool rocky9, selector VERSION_ID of its first node (r92 here)
    _rocky(tmp_path)
    result = run(tmp_path, release)
    found = {}
    for f in result.findings:
        found.setdefault(f.rule, []).append(f)
    entries = {e.node.name: e for e in audit_entries(result.repo)}
    if not left_out:
        assert "GPU002" not in found and "GPU030" not in found
        assert entries["r94"].result.ok
        return
    [gpu002] = found["GPU002"]
    assert gpu002.object.name == "r94"
    # the VERSION_ID label of r94 (line 12: after the VERSION_ID.major line gpu_node inserts)
    assert (gpu002.location.file, gpu002.location.line, gpu002.location.column) == (
        "r94.yaml",
        12,
        5,
    )
    assert "pool rocky9 selects feature.node.kubernetes.io/system-os_release.VERSION_ID='9.2'" in (
        gpu002.message
    )
    assert "no driver DaemonSet selects r94" in gpu002.message
    assert "own NVIDIADriver" in gpu002.hint and "VERSION_ID.major" in gpu002.hint
    assert not entries["r94"].result.ok and entries["r92"].result.ok
    [gpu030] = found["GPU030"]
    assert gpu030.object.name == "r94" and "pool rocky9 selects another" in gpu030.message
    assert "own NVIDIADriver" in gpu030.hint


# --- precompiled chart values without driver.version: values.yaml's full version --------------


@pytest.mark.parametrize(
    ("chart", "default"),
    [
        # deployments/gpu-operator/values.yaml `driver.version` at each tag
        ("v25.10.0", "580.95.05"),
        ("v25.10.1", "580.105.08"),
        ("v26.3.0", "580.126.20"),
        ("v26.3.3", "580.126.20"),
        ("v26.7.0", "595.91.07"),
    ],
)
@pytest.mark.parametrize("crd", [False, True])
def test_precompiled_chart_values_without_version_render_a_full_version(
    tmp_path, chart, default, crd
) -> None:
    # templates/clusterpolicy.yaml and nvidiadriver.yaml render .Values.driver.version, whose
    # values.yaml default is a full version: resolveDriverTag / GetPrecompiledImagePath put it
    # in front of the kernel verbatim, a tag no precompiled image has
    write(tmp_path, "n0.yaml", gpu_node("n0"))
    values = "    driver:\n      usePrecompiled: true\n"
    if crd:
        values += "      nvidiaDriverCRD: {enabled: true}\n"
    write(tmp_path, "hr.yaml", helmrelease(chart, values))
    [f] = rules(tmp_path)["GPU014"]
    # driver.usePrecompiled in the values (line 9, under `driver:`)
    assert (f.location.file, f.location.line, f.location.column) == ("hr.yaml", 9, 7)
    into = "default NVIDIADriver" if crd else "ClusterPolicy"
    assert f.message.startswith(
        "driver.usePrecompiled is true and driver.version is unset, so the chart renders its "
        f"default {default} (values.yaml) into the {into}: precompiled driver images are tagged "
        f"by driver branch, so version '{default}' names '{default}-<kernel>-<os-tag>'"
    )
    assert f.hint.startswith(f'Set driver.version to the driver branch (`"{default[:3]}"`')


VALUES_FROM = "  valuesFrom: [{kind: ConfigMap, name: gpu-operator-values}]\n"
VALUES_CM = (
    "apiVersion: v1\nkind: ConfigMap\n"
    "metadata: {name: gpu-operator-values, namespace: gpu-operator}\n"
    "data:\n  values.yaml: |\n    driver:\n      version: '550'\n"
)


@pytest.mark.parametrize("crd", [False, True])
@pytest.mark.parametrize(("configmap", "reported"), [(False, False), (True, False)])
def test_precompiled_chart_values_with_values_from(tmp_path, crd, configmap, reported) -> None:
    # helm-controller merges valuesFrom before spec.values (model/operator.py): the ConfigMap
    # the repo holds sets the branch; one it does not hold (a configMapGenerator's, as in
    # examples/flux) may set it, so driver.version is unknown there, not the chart's default
    write(tmp_path, "n0.yaml", gpu_node("n0"))
    values = "    driver:\n      usePrecompiled: true\n"
    if crd:
        values += "      nvidiaDriverCRD: {enabled: true}\n"
    release = helmrelease("v26.7.0", values).replace("  values:\n", VALUES_FROM + "  values:\n")
    write(tmp_path, "hr.yaml", release)
    if configmap:
        write(tmp_path, "cm.yaml", VALUES_CM)
    assert ("GPU014" in rules(tmp_path)) is reported


def test_precompiled_chart_values_with_a_branch_are_fine(tmp_path) -> None:
    write(tmp_path, "n0.yaml", gpu_node("n0"))
    values = "    driver:\n      usePrecompiled: true\n      version: '550'\n"
    write(tmp_path, "hr.yaml", helmrelease("v26.3.0", values))
    assert "GPU014" not in rules(tmp_path)


# --- a ClusterPolicy image spec with some of repository, image, version ----------------------


@pytest.mark.parametrize(
    ("driver", "release", "outcome"),
    [
        # v26.7 api/nvidia/v1/clusterpolicy_types.go imagePath: the error, no DaemonSet
        (
            "    repository: r.io/nv\n    version: 550.90.07\n",
            "v26.7.0",
            'fails the driver state with "invalid image specification: repository, image and '
            'version must all be set (repository=r.io/nv, image=, version=550.90.07)"',
        ),
        (
            "    image: driver\n    version: 550.90.07\n",
            "v26.7.0",
            "(repository=, image=driver, version=550.90.07)",
        ),
        # v25.10 / v26.3 imagePath joins them without a check
        (
            "    repository: r.io/nv\n    version: 550.90.07\n",
            "v26.3.0",
            "joins them as they are, into r.io/nv/:550.90.07-<os-tag>, which is no valid image",
        ),
        (
            "    image: driver\n    version: 550.90.07\n",
            "v25.10.0",
            "into /driver:550.90.07-<os-tag>",
        ),
        # v26.7 resolveDriverTag: precompiled never calls imagePath, the parts are joined
        (
            "    usePrecompiled: true\n    repository: r.io/nv\n    version: '550'\n",
            "v26.7.0",
            "into r.io/nv/:550-<kernel>-<os-tag>",
        ),
    ],
)
def test_a_cluster_policy_image_spec_needs_all_three_parts(
    tmp_path, driver, release, outcome
) -> None:
    write(tmp_path, "n0.yaml", gpu_node("n0"))
    write(tmp_path, "cp.yaml", cluster_policy(driver))
    result = run(tmp_path, release)
    [f] = [f for f in result.findings if f.rule == "GPU014"]
    # the `driver:` section: the missing key is not written anywhere
    assert (f.location.file, f.location.line, f.location.column) == ("cp.yaml", 5, 3)
    assert outcome in f.message
    missing = "image" if "repository" in driver else "repository"
    assert f.hint.startswith(f"Set driver.{missing} in the ClusterPolicy cluster-policy")
    [entry] = audit_entries(result.repo)
    assert entry.reference is None  # no pullable image to name


@pytest.mark.parametrize(
    "driver",
    [
        "    repository: r.io/nv\n    image: driver\n    version: 550.90.07\n",
        "    image: r.io/nv/driver:550.90.07\n",  # kbld: image alone is a full path
        "    usePrecompiled: false\n",  # nothing: the operator's DRIVER_IMAGE
    ],
)
def test_complete_or_empty_cluster_policy_image_specs_are_fine(tmp_path, driver) -> None:
    write(tmp_path, "n0.yaml", gpu_node("n0"))
    write(tmp_path, "cp.yaml", cluster_policy(driver))
    assert "GPU014" not in rules(tmp_path, "v26.7.0")


def test_chart_values_supply_repository_and_image(tmp_path) -> None:
    # values.yaml: repository nvcr.io/nvidia, image driver; only version is written
    write(tmp_path, "n0.yaml", gpu_node("n0"))
    write(tmp_path, "hr.yaml", helmrelease("v26.7.0", "    driver:\n      version: 550.90.07\n"))
    assert "GPU014" not in rules(tmp_path)


# --- getKernelVersionsMap reads every GPU node, also those whose driver is pre-installed ------


def _two_nodes(root: Path, b_labels: str, *, kernel: bool = True, os_labels: bool = True) -> None:
    write(root, "a.yaml", gpu_node("a"))
    node = gpu_node("b", b_labels)
    if not kernel:
        node = node.replace(
            "    feature.node.kubernetes.io/kernel-version.full: 5.15.0-119-generic\n", ""
        )
    if not os_labels:
        node = "".join(line for line in node.splitlines(True) if "os_release" not in line)
    write(root, "b.yaml", node)
    write(root, "cp.yaml", cluster_policy(PRECOMPILED_550))


PREINSTALLED = '    nvidia.com/gpu.deploy.driver: "false"\n'
OPERANDS_OFF = '    nvidia.com/gpu.deploy.operands: "false"\n'


@pytest.mark.parametrize("unmanaged", [PREINSTALLED, OPERANDS_OFF])
@pytest.mark.parametrize("release", RELEASES)
def test_a_preinstalled_gpu_node_without_kernel_label_stops_precompiled(
    tmp_path, release, unmanaged
) -> None:
    # getKernelVersionsMap (object_controls.go, the same in v25.10, v26.3, v26.7) lists
    # MatchingLabels{gpu.present: true}: no kernel label is apierrors.NewNotFound, init fails
    _two_nodes(tmp_path, unmanaged, kernel=False)
    found = rules(tmp_path, release)
    [f] = found["GPU002"]
    assert f.object.name == "b" and (f.location.file, f.location.line) == ("b.yaml", 5)
    assert "its driver is not the operator's" in f.message
    assert "so the whole ClusterPolicy cluster-policy stops reconciling" in f.message
    assert f.hint.startswith("Make sure Node Feature Discovery runs on the node")
    assert "GPU016" not in found  # init fails: no driver DaemonSet, no node moves


@pytest.mark.parametrize("b_labels", [PREINSTALLED, ""])
@pytest.mark.parametrize("release", RELEASES)
def test_a_gpu_node_without_os_labels_conflicts_on_its_kernel(tmp_path, release, b_labels) -> None:
    # getKernelVersionsMap joins ID + VERSION_ID as read, "" for missing labels: "" differs
    # from ubuntu22.04 on the same kernel ("different OS versions found ...")
    _two_nodes(tmp_path, b_labels, os_labels=False)
    found = {f.object.name: f for f in rules(tmp_path, release)["GPU003"]}
    assert sorted(found) == ["a", "b"]
    assert "b (no OS release labels)" in found["a"].message
    assert "runs kernel 5.15.0-119-generic without OS release labels, like a" in found["b"].message
    assert found["a"].hint.startswith("Give b the OS release labels")
    assert (found["a"].location.file, found["a"].location.line) == ("a.yaml", 11)


@pytest.mark.parametrize("release", RELEASES)
def test_without_precompiled_the_kernel_map_is_not_read(tmp_path, release) -> None:
    # init calls getKernelVersionsMap only with driver.enabled and usePrecompiled
    _two_nodes(tmp_path, PREINSTALLED, kernel=False, os_labels=False)
    write(tmp_path, "cp.yaml", cluster_policy("    version: 550.90.07\n"))
    found = rules(tmp_path, release)
    assert "GPU002" not in found and "GPU003" not in found


# --- driver.enabled: false does not stop NVIDIADriver CRs ------------------------------------


@pytest.mark.parametrize("release", RELEASES)
def test_nvidiadriver_crs_install_drivers_with_driver_disabled(tmp_path, release) -> None:
    # controllers/nvidiadriver_controller.go Reconcile checks UseNvidiaDriverCRDType only (v26.3,
    # v26.7; v25.10 checks neither): the CR's pools are rendered with driver.enabled false
    write(tmp_path, "n0.yaml", gpu_node("n0"))
    write(tmp_path, "cp.yaml", cluster_policy("    enabled: false\n    useNvidiaDriverCRD: true\n"))
    write(tmp_path, "gpu.yaml", nvidiadriver("gpu", "550"))
    result = run(tmp_path, release)
    plan = driver_plan(result.repo)
    assert plan.mode == NVIDIADRIVER
    assert [(pool.driver, pool.nodes) for _, pool, _ in plan.pools] == [("gpu", ("n0",))]
    [entry] = audit_entries(result.repo)
    assert entry.reference == "r.io/nv/driver:550-5.15.0-119-generic-ubuntu22.04"


@pytest.mark.parametrize(
    ("chart", "mode"),
    [
        # templates/nvidiadriver.yaml: no `if .Values.driver.enabled` guard in v25.10.0
        ("v25.10.0", NVIDIADRIVER),
        ("v25.10.1", DISABLED),
        ("v26.3.0", DISABLED),
        ("v26.7.0", DISABLED),
    ],
)
def test_the_charts_default_cr_with_driver_disabled(tmp_path, chart, mode) -> None:
    write(tmp_path, "n0.yaml", gpu_node("n0"))
    values = "    driver:\n      enabled: false\n      version: '550.90.07'\n"
    values += "      nvidiaDriverCRD: {enabled: true}\n"
    write(tmp_path, "hr.yaml", helmrelease(chart, values))
    plan = driver_plan(run(tmp_path).repo)
    assert plan.mode == mode
    assert plan.nodes["n0"].managed is (mode == NVIDIADRIVER)


@pytest.mark.parametrize(
    ("chart", "version", "rejected"),
    [
        # templates/nvidiadriver.yaml `version: {{ .Values.driver.version }}` before v26.7.0,
        # `| quote` from it (NVIDIA/gpu-operator 9202ddcf); the CRD's spec.version is a string
        ("v25.10.0", "'550'", True),
        ("v26.3.0", "'550'", True),
        ("v26.3.0", "550", True),
        ("v26.3.0", "'550.90'", True),  # a YAML float
        ("v26.3.0", "'550.90.07'", False),  # text in YAML
        ("v26.7.0", "'550'", False),
    ],
)
def test_a_branch_version_breaks_the_charts_default_cr_before_v26_7(
    tmp_path, chart, version, rejected
) -> None:
    write(tmp_path, "n0.yaml", gpu_node("n0"))
    values = f"    driver:\n      version: {version}\n      usePrecompiled: true\n"
    values += "      nvidiaDriverCRD: {enabled: true}\n"
    write(tmp_path, "hr.yaml", helmrelease(chart, values))
    result = run(tmp_path)
    found = [f for f in result.findings if f.rule == "GPU014" and "written bare" in f.message]
    assert bool(found) is rejected
    plan = driver_plan(result.repo)
    assert plan.nodes["n0"].managed is not rejected
    if rejected:
        [f] = found
        assert (f.location.file, f.location.line) == ("hr.yaml", 9)  # driver.version
        assert "spec.version must be a string" in f.message and "v26.7.0" in f.hint


@pytest.mark.parametrize(
    ("release", "conflict"), [("v25.10.0", True), ("v26.3.0", True), ("v26.7.0", False)]
)
def test_selectors_overlapping_on_a_cpu_node_before_v26_7(tmp_path, release, conflict) -> None:
    # v25.10/v26.3 internal/validator/validator.go nodeSelectorValidator.Validate: every node
    write(tmp_path, "g1.yaml", gpu_node("g1", "    example.com/zone: east\n"))
    cpu = "apiVersion: v1\nkind: Node\nmetadata:\n  name: cpu1\n  labels:\n"
    cpu += "    example.com/zone: east\n    example.com/rack: r1\n"
    write(tmp_path, "cpu1.yaml", cpu)
    write(tmp_path, "cp.yaml", CRD_ON)
    write(tmp_path, "east.yaml", nvidiadriver("east", "550", "example.com/zone: east"))
    write(tmp_path, "r1.yaml", nvidiadriver("r1", "550", "example.com/rack: r1"))
    found = rules(tmp_path, release).get("GPU015", [])
    assert sorted(f.object.name for f in found) == (["east", "r1"] if conflict else [])
    if conflict:
        f = found[0]
        # spec.nodeSelector of the CR
        assert (f.location.file, f.location.line, f.location.column) == ("east.yaml", 9, 3)
        assert "node(s) cpu1 selected by east, r1" in f.message
        assert "GPU node or not" in f.hint


def test_gpu014_for_a_cr_without_image_fields_says_what_is_pulled(tmp_path) -> None:
    write(tmp_path, "n0.yaml", gpu_node("n0"))
    write(tmp_path, "cp.yaml", CRD_ON)
    cr = "apiVersion: nvidia.com/v1alpha1\nkind: NVIDIADriver\nmetadata: {name: gpu}\n"
    write(tmp_path, "gpu.yaml", cr + "spec:\n  driverType: gpu\n")
    [f] = rules(tmp_path, "v26.7.0")["GPU014"]
    assert (f.location.file, f.location.line, f.location.column) == ("gpu.yaml", 4, 1)  # spec
    assert "pull nvcr.io/nvidia/driver-ubuntu22.04:latest, which does not exist" in f.message
    assert f.hint.startswith("Set spec.repository, spec.image and spec.version in the NVIDIADriver")


def test_a_vgpu_host_manager_cr_runs_on_vm_vgpu_nodes(tmp_path) -> None:
    # manifests/state-driver/0500_daemonset.yaml: driverType vgpu-host-manager selects
    # nvidia.com/gpu.deploy.vgpu-manager=true, which gpuStateLabels sets on vm-vgpu nodes;
    # internal/state/driver.go getDriverName: nvidia-vgpu-manager-<cr>-<os-tag>
    from gpudrv_check.model.operands import build_operand_placement

    write(tmp_path, "c.yaml", gpu_node("c"))
    write(tmp_path, "v.yaml", gpu_node("v", "    nvidia.com/gpu.workload.config: vm-vgpu\n"))
    sandbox = "  sandboxWorkloads: {enabled: true, defaultWorkload: container}\n"
    write(tmp_path, "cp.yaml", cluster_policy("    useNvidiaDriverCRD: true\n", sandbox))
    cr = (
        "apiVersion: nvidia.com/v1alpha1\nkind: NVIDIADriver\nmetadata: {name: vgpu}\n"
        "spec: {driverType: vgpu-host-manager, repository: r.io/nv, image: vgpu-manager, "
        "version: '570.124.03'}\n"
    )
    write(tmp_path, "vgpu.yaml", cr)
    result = run(tmp_path, "v26.7.0")
    plan = driver_plan(result.repo)
    assert plan.nodes["v"].managed and plan.nodes["v"].pool is not None
    assert not plan.nodes["c"].managed
    assert plan.nodes["c"].reason.startswith(
        "its NVIDIADriver is of driverType vgpu-host-manager, whose DaemonSet selects "
        "nvidia.com/gpu.deploy.vgpu-manager=true"
    )
    placement = build_operand_placement(result.repo)
    [ds] = [d for d in placement.daemonsets if d.operand == "vgpu-manager"]
    assert ds.name == "nvidia-vgpu-manager-vgpu-ubuntu22.04"
    assert ds.desired == ("v",) or list(ds.desired) == ["v"]
    assert placement.cells["v"]["vgpu-manager"].running


@pytest.mark.parametrize(
    ("labels", "version", "expected"),
    [
        # another full version of the running branch: the DaemonSet's image changes, the pod
        # is replaced (upgrade controller) all the same
        (
            '    nvidia.com/cuda.driver-version.full: "550.90.07"\n',
            "550.127.05",
            "n0 (runs 550.90.07), whose driver restarts on it when the driver pod is replaced",
        ),
        # the same full version: nothing changes
        ('    nvidia.com/cuda.driver-version.full: "550.127.05"\n', "550.127.05", None),
        # only the branch known on the node: a change inside it cannot be told
        ("", "550.127.05", None),
    ],
)
def test_gpu016_fires_on_a_version_change_within_the_branch(
    tmp_path, labels, version, expected
) -> None:
    write(tmp_path, "n0.yaml", gpu_node("n0", labels))
    driver = f"    repository: r.io/nv\n    image: driver\n    version: {version}\n"
    write(tmp_path, "cp.yaml", cluster_policy(driver))
    found = rules(tmp_path, "v26.7.0").get("GPU016", [])
    if expected is None:
        assert found == []
        return
    [f] = found
    assert (f.location.file, f.location.line, f.location.column) == ("cp.yaml", 8, 5)
    assert expected in f.message


@pytest.mark.parametrize(("chart", "rendered"), [("v26.3.0", True), ("v26.7.0", False)])
def test_values_that_render_no_cluster_policy(tmp_path, chart, rendered) -> None:
    # v26.7.0 templates/clusterpolicy.yaml: `{{- if .Values.clusterPolicy.deployCR }}` around
    # the whole CR (values.yaml: gpuCluster.deployCR=true with clusterPolicy.deployCR=false
    # selects the GPUCluster (DRA) stack); v26.3.0 renders it whatever the key says
    write(tmp_path, "n0.yaml", gpu_node("n0", kernel="6.8.0-52-generic"))
    values = "    clusterPolicy: {deployCR: false}\n    gpuCluster: {deployCR: true}\n"
    values += "    driver: {version: '550.90.07'}\n"
    write(tmp_path, "hr.yaml", helmrelease(chart, values))
    result = run(tmp_path)
    assert (result.repo.operator is not None) is rendered
    assert driver_plan(result.repo).mode == (CLUSTERPOLICY if rendered else LABELS)


@pytest.mark.parametrize(
    ("how", "conflict"),
    [
        # templates/clusterpolicy.yaml renders usePrecompiled whatever nvidiaDriverCRD.enabled
        # says before v26.7.0, and leaves it out with it from v26.7.0
        ("v26.3.0", True),
        ("v25.10.0", True),
        ("v26.7.0", False),
        ("clusterpolicy", True),  # written by hand: what it says
    ],
)
def test_init_checks_precompiled_nodes_with_nvidiadriver_crs(tmp_path, how, conflict) -> None:
    # state_manager.go init: `Driver.IsEnabled() && Driver.UsePrecompiledDrivers()` (not
    # useNvidiaDriverCRD) runs getKernelVersionsMap over every GPU node, which fails on one
    # kernel with two OS releases: the whole ClusterPolicy stops reconciling (review)
    write(tmp_path, "a.yaml", gpu_node("a"))
    write(tmp_path, "b.yaml", gpu_node("b", version="20.04"))
    write(tmp_path, "d.yaml", nvidiadriver("all", "550"))
    if how == "clusterpolicy":
        write(
            tmp_path,
            "cp.yaml",
            cluster_policy("    useNvidiaDriverCRD: true\n    usePrecompiled: true\n"),
        )
    else:
        values = "    driver:\n      usePrecompiled: true\n      version: '550.90.07'\n"
        values += "      nvidiaDriverCRD: {enabled: true, deployDefaultCR: false}\n"
        write(tmp_path, "hr.yaml", helmrelease(how, values))
    result = run(tmp_path, "v26.7.0" if how == "clusterpolicy" else None)
    found = [f for f in result.findings if f.rule == "GPU003"]
    assert len(found) == (2 if conflict else 0)
    if conflict:
        assert "set driver.usePrecompiled: false in the ClusterPolicy" in found[0].hint
