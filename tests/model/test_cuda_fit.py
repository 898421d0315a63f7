"""CUDA fit: a node's driver from its labels, the table with the config's extension, and how an
image fares on the nodes a workload can land on."""

from __future__ import annotations

import pytest

from gpudrv_check.model.cuda import (
    builtin_cuda_table,
    cuda_fits,
    cuda_table,
    excluding_expression,
    expression_text,
    node_driver,
)
from gpudrv_check.nvidia.cuda import cuda_version_for_image, min_driver_for_cuda
from gpudrv_check.read.config import Config, ConfigError
from tests.model.conftest import make_node, make_workload


def deprecated(major: str, minor: str = "", rev: str = "") -> dict[str, str]:
    labels = {"nvidia.com/cuda.driver.major": major}
    if minor:
        labels["nvidia.com/cuda.driver.minor"] = minor
    if rev:
        labels["nvidia.com/cuda.driver.rev"] = rev
    return labels


@pytest.mark.parametrize(
    ("labels", "version", "key"),
    [
        (
            {
                "nvidia.com/cuda.driver-version.full": "550.90.07",
                "nvidia.com/cuda.driver-version.major": "550",
            },
            "550.90.07",
            "nvidia.com/cuda.driver-version.major",
        ),
        (
            {
                "nvidia.com/cuda.driver-version.major": "575",
                "nvidia.com/cuda.driver-version.minor": "57",
                "nvidia.com/cuda.driver-version.revision": "08",
            },
            "575.57.08",
            "nvidia.com/cuda.driver-version.major",
        ),
        (deprecated("550", "90", "07"), "550.90.07", "nvidia.com/cuda.driver.major"),
        (deprecated("550", "120"), "550.120", "nvidia.com/cuda.driver.major"),  # empty rev
        (deprecated("550"), "550", "nvidia.com/cuda.driver.major"),  # branch only
        # the full version alone: no label an integer Gt can read (a suggested expression on
        # the major label would remove the node: kube-scheduler nodeaffinity, Gt on a missing
        # label matches nothing)
        ({"nvidia.com/cuda.driver-version.full": "535.183.01"}, "535.183.01", ""),
        ({"nvidia.com/cuda.driver.major": "abc"}, None, None),
        ({}, None, None),
    ],
)
def test_node_driver_from_gfd_labels(labels: dict, version: str | None, key: str | None) -> None:
    driver = node_driver(make_node("n", labels))
    assert (driver.version, driver.major_label) == (version, key) if driver else version is None


def test_config_extends_the_builtin_table() -> None:
    config = Config(
        cuda={
            "min_driver": {"12.10": "580.1"},
            "images": [
                {
                    "id": "mine",
                    "repository": "registry.local/ml/train",
                    "tag_regex": r"-cu(\d+\.\d+)",
                },
                {
                    "id": "remap",
                    "repository": "nvcr.io/nvidia/pytorch",
                    "tags": {"24.07-py3": "12.4"},
                },
            ],
        }
    )
    table = cuda_table(config)
    assert cuda_version_for_image(table, "registry.local/ml/train:v3-cu12.10")[0] == "12.10"
    assert min_driver_for_cuda(table, "12.10") == "580.1"
    # user rules are tried first: they can re-map a known image
    assert cuda_version_for_image(table, "nvcr.io/nvidia/pytorch:24.07-py3")[0] == "12.4"
    # the rest of the built-in table is still there
    assert cuda_version_for_image(table, "nvcr.io/nvidia/pytorch:25.03-py3")[0] == "12.8.1"
    assert cuda_table(Config()) is builtin_cuda_table()


@pytest.mark.parametrize(
    ("cuda", "message"),
    [
        ({"imgs": []}, "cuda: unknown key 'imgs'"),
        ({"images": [{"id": "x", "repository": "a/b"}]}, "needs tags or tag_regex"),
        ({"images": [{"repository": "a/b", "tag_regex": "("}]}, "invalid regular expression"),
        ({"min_driver": {"12.4": 550.54}}, "expected quoted versions"),
    ],
)
def test_a_malformed_extension_is_a_config_error(cuda: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        cuda_table(Config(cuda=cuda))


def test_a_run_builds_the_table_when_a_rule_asks_or_its_config_extends_it(
    tmp_path, monkeypatch
) -> None:
    """Without a `cuda:` extension the table is the built-in one, which cannot be malformed:
    a run makes it when a rule first asks (GPU011, which asks only of a repo with nodes).
    With one, the run makes it before anything else, so that a malformed one is a usage error
    before any output (the test above, and tests/test_config.py)."""
    import gpudrv_check.model.cuda as cuda_module
    from tests.conftest import run_main, write

    made: list[object] = []
    real = cuda_module.cuda_table
    monkeypatch.setattr(
        cuda_module, "cuda_table", lambda config: made.append(config) or real(config)
    )
    write(tmp_path, "apps/job.yaml", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n")
    assert run_main("check", str(tmp_path), "--no-cache", "--fail-on", "never").returncode == 0
    assert made == []  # no nodes: GPU011 asks nothing
    write(tmp_path, ".gpudrv-check.yaml", "cuda:\n  min_driver: {'12.99': '999.1'}\n")
    assert run_main("check", str(tmp_path), "--no-cache", "--fail-on", "never").returncode == 0
    assert len(made) == 1


def _pod(*images: str):
    containers = [{"name": f"c{i}", "image": image} for i, image in enumerate(images)]
    return make_workload({"containers": containers})


LAB = [
    make_node("lab-node-0", deprecated("550", "90", "07")),
    make_node("lab-node-1", deprecated("535", "183", "06")),
    make_node("old", deprecated("515", "65", "01")),
    make_node("cpu"),  # no GPU: no driver, nothing for CUDA to need
    make_node("unlabelled", {"nvidia.com/gpu.present": "true"}),  # a GPU, its driver unknown
]


@pytest.mark.parametrize(
    ("image", "minor_compat", "too_old", "limited", "fine"),
    [
        # 24.07 carries CUDA 12.5.1 (needs 555.42.06; 12.x starts from branch 525)
        ("nvcr.io/nvidia/pytorch:24.07-py3", True, ["old"], ["lab-node-0", "lab-node-1"], []),
        ("nvcr.io/nvidia/pytorch:24.07-py3", False, ["lab-node-0", "lab-node-1", "old"], [], []),
        # 23.08 carries 12.2.1 (535.54.03): fine on both lab drivers
        ("nvcr.io/nvidia/pytorch:23.08-py3", True, ["old"], [], ["lab-node-0", "lab-node-1"]),
        # CUDA 13.0 needs branch 580 even with minor version compatibility
        (
            "nvcr.io/nvidia/cuda:13.0.0-runtime-ubuntu24.04",
            True,
            ["lab-node-0", "lab-node-1", "old"],
            [],
            [],
        ),
        # CUDA 11.8 needs 520.61.05; 515 runs it with minor version compatibility (11.x from
        # 450.80.02: docs.nvidia.com/deploy/cuda-compatibility minor-version-compatibility)
        ("nvidia/cuda:11.8.0-base-ubuntu22.04", True, [], ["old"], ["lab-node-0", "lab-node-1"]),
    ],
)
def test_cuda_fits(
    image: str, minor_compat: bool, too_old: list, limited: list, fine: list
) -> None:
    [fit] = cuda_fits(_pod(image), LAB, builtin_cuda_table(), minor_compat)
    assert sorted(n.name for n, _ in fit.too_old) == too_old
    assert sorted(n.name for n, _ in fit.limited) == limited
    assert sorted(n.name for n, _ in fit.fine) == fine
    assert [n.name for n in fit.unknown] == ["unlabelled"]


def test_unknown_images_are_not_guessed_and_the_worst_image_comes_first() -> None:
    table = builtin_cuda_table()
    assert cuda_fits(_pod("registry.local/app:1.0", "busybox"), LAB, table) == []
    fits = cuda_fits(
        _pod("nvidia/cuda:11.8.0-base-ubuntu22.04", "nvcr.io/nvidia/pytorch:24.07-py3"), LAB, table
    )
    assert [f.container.name for f in fits] == ["c1", "c0"]


def test_same_branch_known_only_by_branch_is_not_judged() -> None:
    nodes = [make_node("n", deprecated("555"))]
    [fit] = cuda_fits(_pod("nvcr.io/nvidia/pytorch:24.07-py3"), nodes, builtin_cuda_table(), False)
    assert [n.name for n in fit.unknown] == ["n"]  # 555 vs 555.42.06: cannot tell


def test_excluding_expression() -> None:
    table = builtin_cuda_table()
    [fit] = cuda_fits(_pod("nvcr.io/nvidia/pytorch:24.07-py3"), LAB, table, True)
    expression = excluding_expression(fit.floor, [n for n, _ in fit.too_old], LAB)
    assert expression == {
        "key": "nvidia.com/cuda.driver.major",
        "operator": "Gt",
        "values": ["524"],
    }
    assert (
        expression_text(expression)
        == '{key: nvidia.com/cuda.driver.major, operator: Gt, values: ["524"]}'
    )
    # within one branch no Gt on the major separates them: name the hosts
    nodes = [
        make_node("a", deprecated("555", "40", "01")),
        make_node("b", deprecated("555", "42", "06")),
    ]
    [fit] = cuda_fits(_pod("nvcr.io/nvidia/pytorch:24.07-py3"), nodes, table, False)
    assert excluding_expression(fit.floor, [n for n, _ in fit.too_old], nodes) == {
        "key": "kubernetes.io/hostname",
        "operator": "NotIn",
        "values": ["a"],
    }


def test_excluding_expression_parts_by_branch_only_when_every_older_node_is_excluded() -> None:
    """model/cuda.py `excluding_expression`: `Gt <floor branch - 1>` exactly when every
    excluded node is below the floor's branch and every other node with a driver is not;
    checked against that definition over random fleets, with and without the per-run memo
    (which keeps each node list's drivers ranked by branch)."""
    import random

    from gpudrv_check.model.cuda import node_driver

    rng = random.Random(11)
    for _ in range(200):
        nodes = []
        for i in range(rng.randint(1, 8)):
            branch = rng.choice(["515", "535", "550", "570", "x"])
            nodes.append(make_node(f"n{i}", deprecated(branch, "10", "01") if i % 5 else {}))
        excluded = rng.sample(nodes, rng.randint(1, len(nodes)))
        floor = rng.choice(["535.0", "550.0", "570.0"])
        memo: dict = {}
        got = excluding_expression(floor, excluded, nodes, memo)
        assert excluding_expression(floor, excluded, nodes, memo) == got  # from the memo
        assert excluding_expression(floor, excluded, nodes) == got

        def branch(node) -> int:
            driver = node_driver(node)
            major = driver.version.split(".")[0] if driver is not None else ""
            return int(major) if major.isdigit() else -1

        names = {n.name for n in excluded}
        floor_branch = int(floor.split(".")[0])
        separable = all(branch(n) < floor_branch for n in excluded) and all(
            branch(n) >= floor_branch
            for n in nodes
            if n.name not in names and node_driver(n) is not None
        )
        by_branch = separable and all(node_driver(n) is not None for n in excluded)
        if by_branch:
            assert got == {
                "key": "nvidia.com/cuda.driver.major",
                "operator": "Gt",
                "values": [str(floor_branch - 1)],
            }
        else:
            assert got is None or got["operator"] == "NotIn"


def _fit_by_definition(image: str, nodes: list, table, minor_compat: bool) -> tuple:
    """What a fit is, node by node in the list's order (model/cuda.py `_fit` without its
    per-list column): a node's driver as the first node of its name has it; no driver and a
    GPU: unknown; a version the floor cannot be compared with: unknown; below the floor: too
    old; below the image's own minimum: limited; else fine."""
    from gpudrv_check.model.cuda import _at_least, driver_requirement

    need = driver_requirement(table, image)
    floor = need.compat_branch if minor_compat and need.compat_branch else need.min_driver
    by_name: dict = {}
    too_old, limited, fine, unknown = [], [], [], []
    for node in nodes:
        if node.name not in by_name:
            driver = node_driver(node)
            by_name[node.name] = driver.version if driver is not None else None
        version = by_name[node.name]
        if version is None:
            if node.is_gpu:
                unknown.append(node.name)
            continue
        starts = _at_least(version, floor)
        if starts is None:
            unknown.append(node.name)
        elif not starts:
            too_old.append((node.name, version))
        elif need.min_driver and _at_least(version, need.min_driver) is False:
            limited.append((node.name, version))
        else:
            fine.append((node.name, version))
    return too_old, limited, fine, unknown


def test_fits_over_shared_node_lists_are_the_fits_node_by_node() -> None:
    """Fits of several images over the same node lists (one column per list, shared through
    the memo, as GPU011 and `place` share placement's) list every node where the definition
    does, in the list's order: lists whose versions all land alike, mixed ones, undecidable
    versions (a branch alone against a full floor), GPU nodes without a driver, two nodes of
    one name (the driver of the first, as by name)."""
    import random

    rng = random.Random(22)
    table = builtin_cuda_table()
    images = [
        "nvcr.io/nvidia/pytorch:24.07-py3",
        "nvidia/cuda:11.8.0-base-ubuntu22.04",
        "nvidia/cuda:12.4.1-runtime-ubuntu22.04",
        "nvidia/cuda:12.8.0-base-ubuntu24.04",
    ]
    drivers = [
        deprecated("550", "90", "07"),
        deprecated("535", "183", "06"),
        deprecated("515", "65", "01"),
        deprecated("470", "256", "02"),
        deprecated("555"),  # a branch alone: undecidable against 555.42.06
        deprecated("570", "86", "15"),
        {"nvidia.com/gpu.present": "true"},  # a GPU, its driver unknown
        {},  # no GPU
    ]
    checked = 0
    for _ in range(60):
        count = rng.randint(1, 12)
        nodes = [
            make_node(f"n{rng.randint(0, count)}", dict(rng.choice(drivers))) for _ in range(count)
        ]
        memo: dict = {}
        for minor_compat in (True, False):
            for image in rng.sample(images, 3):
                fits = cuda_fits(_pod(image), nodes, table, minor_compat, memo, "key")
                if not fits:
                    continue
                [fit] = fits
                got = (
                    [(n.name, v) for n, v in fit.too_old],
                    [(n.name, v) for n, v in fit.limited],
                    [(n.name, v) for n, v in fit.fine],
                    [n.name for n in fit.unknown],
                )
                assert got == _fit_by_definition(image, nodes, table, minor_compat)
                for listed in (fit.too_old, fit.limited, fit.fine):
                    assert all(pair[0] in nodes for pair in listed)  # the list's own nodes
                checked += 1
    assert checked > 200


def test_each_node_s_driver_is_read_once_for_the_columns_and_the_rankings(monkeypatch) -> None:
    """model/cuda.py `_driver_of`: the columns of the fits (`_column`) and the rankings of the
    suggested expressions (`_drivers_of`) read each node object's driver once through one memo,
    and say what each reads alone: by name the first node of a name for a column, each node
    for a ranking."""
    from gpudrv_check.model import cuda

    nodes = [make_node("a", deprecated("550", "90", "07")), make_node("b", deprecated("515"))]
    nodes.append(make_node("a", deprecated("470", "256", "02")))  # a second node named a
    reads: list[str] = []
    real = cuda.node_driver
    monkeypatch.setattr(cuda, "node_driver", lambda n: reads.append(n.name) or real(n))
    memo: dict = {}
    table = builtin_cuda_table()
    [fit] = cuda_fits(_pod("nvidia/cuda:12.4.1-runtime-ubuntu22.04"), nodes, table, True, memo, "k")
    expression = excluding_expression("525", [nodes[1]], nodes, memo)
    assert sorted(reads) == ["a", "a", "b"]  # once per node object, not once per use
    assert [(n.name, v) for n, v in fit.too_old] == [("b", "515")]
    assert [(n.name, v) for n, v in fit.fine] == [("a", "550.90.07"), ("a", "550.90.07")]
    # the ranking reads each node's own driver, the last of a name: the second `a` (470) is
    # below 525 and not excluded, so no branch parts the excluded node from the others, and
    # the suggestion names the host (the first `a`, 550, would have given `Gt 524`)
    hosts = {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["b"]}
    assert expression == hosts
    assert excluding_expression("525", [nodes[1]], nodes) == hosts  # without the memo alike


def test_gpu011_words_one_verdict_per_image_and_node_set(tmp_path, monkeypatch) -> None:
    """GPU011 keys its fits and verdicts by the node list itself (placement.py `eligible`
    shares one list among constraint sets that keep the same nodes): two workloads whose
    affinities are written differently but keep the same nodes get one verdict, each said at
    its own workload; a third, on other nodes, its own."""
    from gpudrv_check.rules import rule_module
    from tests.conftest import MATRIX, gpu_node, run_main, write

    rule = rule_module("GPU011_cuda_driver_too_old")
    made: list[int] = []
    real = rule._verdict
    monkeypatch.setattr(rule, "_verdict", lambda *a: made.append(len(a[1])) or real(*a))
    write(
        tmp_path,
        "nodes.yaml",
        "---\n".join(
            gpu_node(name, branch)
            for name, branch in (("new", "570"), ("old", "535"), ("o2", "535"))
        ),
    )
    write(tmp_path, "support-matrix.csv", MATRIX)
    major = "nvidia.com/cuda.driver-version.major"
    affinities = {
        "gt": f"{{key: {major}, operator: Gt, values: ['500']}}",
        "in": f"{{key: {major}, operator: In, values: ['570', '535']}}",
        "old": f"{{key: {major}, operator: In, values: ['535']}}",
    }
    for name, expression in affinities.items():
        write(
            tmp_path,
            f"apps/{name}.yaml",
            f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: ml}}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{expression}]
  containers:
  - {{name: c, image: 'nvidia/cuda:12.8.0-base-ubuntu24.04'}}
""",
        )
    out = run_main("check", str(tmp_path), "--no-cache", "--format", "json", "--fail-on", "never")
    import json

    found = [f for f in json.loads(out.stdout)["findings"] if f["rule"] == "GPU011"]
    assert sorted(f["object"]["name"] for f in found) == ["gt", "in", "old"]
    assert sorted(made) == [2, 3]  # the two lists: all three nodes, the two old ones
