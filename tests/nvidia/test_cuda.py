"""The CUDA table in policies/cuda.yaml and the lookups over it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gpudrv_check.nvidia.cuda import (
    CudaTable,
    DriverVerdict,
    ImageRule,
    compat_branch_for_cuda,
    cuda_version_for_image,
    driver_check,
    driver_requirement,
    driver_satisfies,
    merge_tables,
    min_driver_for_cuda,
    parse_cuda_table,
)

POLICY = Path(__file__).resolve().parents[2] / "policies" / "cuda.yaml"
DIGEST = "sha256:" + "0f" * 32


def _load_yaml(text: str) -> Any:
    try:
        from ruamel.yaml import YAML
    except ImportError:
        yaml = pytest.importorskip("yaml")
        return yaml.safe_load(text)
    return YAML(typ="safe").load(text)


@pytest.fixture(scope="module")
def table() -> CudaTable:
    parsed, problems = parse_cuda_table(_load_yaml(POLICY.read_text(encoding="utf-8")))
    assert problems == []
    return parsed


# docs/operator.md "CUDA table" (CUDA release notes, table 3)
@pytest.mark.parametrize(
    ("cuda", "driver"),
    [
        ("12.0", "525.60.13"),
        ("12.1", "530.30.02"),
        ("12.2", "535.54.03"),
        ("12.3", "545.23.06"),
        ("12.4", "550.54.14"),
        ("12.5", "555.42.02"),
        ("12.6", "560.28.03"),
        ("12.8", "570.26"),
        ("12.9", "575.51.03"),
        ("13.0", "580.65.06"),
        ("13.1", "590.44.01"),
        ("11.8", "520.61.05"),
        ("11.0", "450.51.05"),
    ],
)
def test_min_driver_rows(table, cuda, driver) -> None:
    assert min_driver_for_cuda(table, cuda) == driver


@pytest.mark.parametrize(
    ("cuda", "driver"),
    [
        ("12.4.1", "550.54.15"),  # exact update row
        ("12.4.0", "550.54.14"),  # no update row below: the GA row
        ("12.6.4", "560.35.05"),  # nearest lower update row (a lower bound)
        ("12.8.2", "570.124.06"),
        ("12.8.1.012", "570.124.06"),  # NGC notation
        ("11.4.4", "470.82.01"),
        ("12.7", None),  # no such release
        ("14.0", None),
        ("12", None),
        ("latest", None),
        (12.4, None),  # floats are refused
        (None, None),
    ],
)
def test_min_driver_lookup(table, cuda, driver) -> None:
    assert min_driver_for_cuda(table, cuda) == driver


# CUDA Toolkit release notes, table "CUDA Toolkit and Corresponding Driver Versions": the update
# rows; an image's exact CUDA version selects its exact row, not the GA row below it
@pytest.mark.parametrize(
    ("cuda", "driver"),
    [
        ("12.0.1", "525.85.12"),
        ("12.2.1", "535.86.09"),
        ("12.2.2", "535.104.05"),
        ("12.6.3", "560.35.05"),
        ("12.8.1", "570.124.06"),
        ("12.9.1", "575.57.08"),
        ("13.0.1", "580.82.07"),
        ("13.0.2", "580.95.05"),
        ("13.1.1", "590.48.01"),
        ("13.2", "595.45.04"),
        ("13.2.0", "595.45.04"),
        ("13.2.1", "595.58.03"),
    ],
)
def test_min_driver_update_rows(table, cuda, driver) -> None:
    assert min_driver_for_cuda(table, cuda) == driver


def test_image_cuda_selects_its_exact_row(table) -> None:
    # nvcr.io/nvidia/pytorch:25.03-py3 carries CUDA 12.8.1: 570.124.06, not the 12.8 GA 570.26
    requirement = driver_requirement(table, "nvcr.io/nvidia/pytorch:25.03-py3")
    assert requirement is not None
    assert (requirement.cuda_version, requirement.min_driver) == ("12.8.1", "570.124.06")


@pytest.mark.parametrize(
    ("cuda", "branch"),
    # docs.nvidia.com/deploy/cuda-compatibility, minor version compatibility, Table 1: 13.x
    # >= 580, 12.x >= 525, 11.x >= 450 with its footnote: 11.0 shipped with an older 450
    # driver, minor version compatibility across 11.x needs 450.80.02
    [("11.8", "450.80.02"), ("12.9.1", "525"), ("13.0.2", "580"), ("10.2", None), ("x", None)],
)
def test_minor_version_compat(table, cuda, branch) -> None:
    assert compat_branch_for_cuda(table, cuda) == branch


@pytest.mark.parametrize(
    ("image", "cuda", "rule"),
    [
        # the lab's images (steps 5 and 6)
        ("nvcr.io/nvidia/pytorch:24.07-py3", "12.5.1", "ngc-pytorch"),
        ("nvcr.io/nvidia/pytorch:25.03-py3", "12.8.1", "ngc-pytorch"),
        ("nvcr.io/nvidia/pytorch:23.10-py3", "12.2.2", "ngc-pytorch"),
        ("nvcr.io/nvidia/pytorch:25.12-py3", "13.1.0", "ngc-pytorch"),
        (f"nvcr.io/nvidia/pytorch:24.07-py3@{DIGEST}", "12.5.1", "ngc-pytorch"),
        ("nvcr.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04", "12.4.1", "ngc-cuda"),
        ("nvcr.io/nvidia/cuda:13.0.0-devel-ubuntu24.04", "13.0.0", "ngc-cuda"),
        ("nvidia/cuda:12.4.1-base-ubuntu22.04", "12.4.1", "dockerhub-cuda"),
        ("docker.io/nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04", "11.8.0", "dockerhub-cuda"),
        ("index.docker.io/nvidia/cuda:12.2.0-base-ubi9", "12.2.0", "dockerhub-cuda"),
        ("pytorch/pytorch:2.7.0-cuda12.8-cudnn9-devel", "12.8", "dockerhub-pytorch"),
        ("docker.io/pytorch/pytorch:2.2.0-cuda12.1-cudnn8-runtime", "12.1", "dockerhub-pytorch"),
    ],
)
def test_cuda_version_for_image(table, image, cuda, rule) -> None:
    found = cuda_version_for_image(table, image)
    assert found is not None
    assert (found[0], found[1].id) == (cuda, rule)


@pytest.mark.parametrize(
    "image",
    [
        f"nvcr.io/nvidia/pytorch@{DIGEST}",  # digest only: the tag is unknown
        "nvcr.io/nvidia/pytorch",  # no tag
        "nvcr.io/nvidia/pytorch:latest",
        "nvcr.io/nvidia/pytorch:24.07-py3-igpu",
        "nvcr.io/nvidia/pytorch:22.12-py3",  # not in the table: never guessed
        "nvidia/cuda:latest",
        "pytorch/pytorch:latest",
        "registry.corp/mirror/nvidia/pytorch:24.07-py3",
        "ubuntu:22.04",
        "NOT A REFERENCE",
        None,
    ],
)
def test_unknown_images(table, image) -> None:
    assert cuda_version_for_image(table, image) is None
    assert driver_requirement(table, image) is None


def test_lab_step_5(table) -> None:
    """pytorch 24.07 and 25.03 against the lab's 550 and 535 nodes."""
    req_2407 = driver_requirement(table, "nvcr.io/nvidia/pytorch:24.07-py3")
    assert req_2407 is not None
    assert (req_2407.min_driver, req_2407.compat_branch) == ("555.42.06", "525")
    assert driver_satisfies("550.90.07", req_2407.min_driver) is False
    assert driver_satisfies("550", req_2407.compat_branch) is True
    req_2503 = driver_requirement(table, "nvcr.io/nvidia/pytorch:25.03-py3")
    assert req_2503 is not None and req_2503.min_driver == "570.124.06"
    for node in ("550.90.07", "535.183.06", "550"):
        assert driver_satisfies(node, req_2503.min_driver) is False


@pytest.mark.parametrize(
    ("node", "minimum", "verdict"),
    [
        ("550.90.07", "550.54.14", DriverVerdict.OK),
        ("550.54.14", "550.54.14", DriverVerdict.OK),
        ("550.54.13", "550.54.14", DriverVerdict.TOO_OLD),
        ("550.120", "550.54.14", DriverVerdict.OK),
        ("570.26", "570.26.0", DriverVerdict.OK),
        ("570.86.10", "570.26", DriverVerdict.OK),
        ("535.183.06", "550.54.14", DriverVerdict.TOO_OLD),
        ("535.183.06", "525", DriverVerdict.OK),
        ("520.61.05", "525", DriverVerdict.TOO_OLD),
        # a node known only by branch
        ("560", "550.54.14", DriverVerdict.OK),
        ("535", "550.54.14", DriverVerdict.TOO_OLD),
        ("550", "550.54.14", DriverVerdict.AMBIGUOUS),
        ("550", "550", DriverVerdict.OK),
        (550, "525", DriverVerdict.OK),
        # unparseable input
        ("", "550.54.14", DriverVerdict.UNKNOWN),
        ("550.x", "550.54.14", DriverVerdict.UNKNOWN),
        ("550.90.07", None, DriverVerdict.UNKNOWN),
        (550.9, "550", DriverVerdict.UNKNOWN),
    ],
)
def test_driver_check(node, minimum, verdict) -> None:
    check = driver_check(node, minimum)
    assert check.verdict is verdict
    assert check.reason
    expected = {DriverVerdict.OK: True, DriverVerdict.TOO_OLD: False}.get(verdict)
    assert driver_satisfies(node, minimum) is expected


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ("not a mapping", "CUDA table: expected a mapping"),
        ({"min_driver": []}, "min_driver: expected a mapping"),
        ({"min_driver": {12.4: "550.54.14"}}, "min_driver.12.4: expected quoted versions"),
        ({"min_driver": {"12.4": 550.54}}, "min_driver.12.4: expected quoted versions"),
        ({"images": {"id": "x"}}, "images: expected a list"),
        ({"images": ["x"]}, "images[0]: expected a mapping"),
        ({"images": [{"tags": {"a": "12.4"}}]}, "images[0]: needs repository or"),
        ({"images": [{"repository": "nvidia/cuda"}]}, "images[0]: needs tags or tag_regex"),
        ({"images": [{"repository": "nvidia/cuda:12"}]}, "images[0]: invalid repository"),
        (
            {"images": [{"repository": "x/y", "tag_regex": "("}]},
            "images[0].tag_regex: invalid regular expression",
        ),
        (
            {"images": [{"repository_regex": 5, "tags": {"a": "1.0"}}]},
            "images[0].repository_regex: expected a regular expression string",
        ),
        (
            {"images": [{"repository": "x/y", "tags": {"a": 12.4}}]},
            "images[0].tags.a: expected 'tag': 'cuda version'",
        ),
        ({"images": [{"repository": "x/y", "tags": ["a"]}]}, "images[0].tags: expected a mapping"),
    ],
)
def test_parse_problems(data, problem) -> None:
    table, problems = parse_cuda_table(data)
    assert isinstance(table, CudaTable)
    assert any(p.startswith(problem) for p in problems), problems


def test_merge_tables(table) -> None:
    user = {
        "min_driver": {"12.8": "570.86.10", "14.0": "600.10.01"},
        "images": [
            {
                "id": "mirror",
                "repository_regex": r"registry\.corp/mirror/nvidia/pytorch",
                "tags": {"24.07-py3": "12.5.1"},
            },
            {
                "id": "override",
                "repository": "nvcr.io/nvidia/pytorch",
                "tags": {"24.07-py3": "12.5.0"},
            },
        ],
    }
    merged = merge_tables(table, user)
    assert min_driver_for_cuda(merged, "12.8") == "570.86.10"
    assert min_driver_for_cuda(merged, "14.0.1") == "600.10.01"  # a user row, GA fallback
    assert min_driver_for_cuda(merged, "12.4") == "550.54.14"
    found = cuda_version_for_image(merged, "registry.corp/mirror/nvidia/pytorch:24.07-py3")
    assert found is not None and found[1].id == "mirror"
    found = cuda_version_for_image(merged, "nvcr.io/nvidia/pytorch:24.07-py3")
    assert found is not None and (found[0], found[1].id) == ("12.5.0", "override")
    # the base table is not modified
    assert cuda_version_for_image(table, "nvcr.io/nvidia/pytorch:24.07-py3")[0] == "12.5.1"


def test_merge_with_a_table_and_with_junk(table) -> None:
    extra = CudaTable(
        images=(ImageRule("tf", "nvcr.io/nvidia/tensorflow", tags={"24.07-tf2-py3": "12.5.1"}),)
    )
    merged = merge_tables(table, extra)
    assert cuda_version_for_image(merged, "nvcr.io/nvidia/tensorflow:24.07-tf2-py3")[0] == (
        "12.5.1"
    )
    assert merge_tables(table, "junk") == table
    assert merge_tables("junk", table) == table


def test_tag_regex_first_group_and_invalid_capture() -> None:
    rules = [
        ImageRule("first-group", "docker.io/acme/app", tag_regex=re.compile(r"cu(\d+\.\d+)")),
        ImageRule("bad-capture", "docker.io/acme/other", tag_regex=re.compile(r"(?P<cuda>v\w+)")),
    ]
    table = CudaTable(images=tuple(rules))
    assert cuda_version_for_image(table, "acme/app:1.0-cu12.4")[0] == "12.4"
    assert cuda_version_for_image(table, "acme/other:vX") is None
    assert cuda_version_for_image("not a table", "acme/app:1.0-cu12.4") is None


def test_the_built_in_table_is_made_unguarded_and_each_expression_passes_the_guard() -> None:
    """model/cuda.py builds policies/cuda.yaml without checking its expressions for unbounded
    backtracking (core/regex_guard.py: half of building the table, every run that asks for
    it): the package's own expressions, which pass the check, here. A user's `cuda:`
    extension is checked (tests/model/test_cuda_fit.py)."""
    from gpudrv_check.model.cuda import builtin_cuda_table
    from gpudrv_check.read.packaged import packaged_yaml

    guarded, problems = parse_cuda_table(packaged_yaml("policies", "cuda.yaml"))
    assert problems == []  # every expression passed the guard (and compiled)
    assert builtin_cuda_table() == guarded
    assert any(rule.tag_regex is not None for rule in guarded.images)


def test_the_built_in_table_compiles_an_expression_when_a_lookup_first_tries_it(monkeypatch):
    """Most images are looked up by an exact repository: the other rules' expressions are
    never compiled (17 compilations, a millisecond of every run that looks an image up)."""
    import gpudrv_check.core.lazy_re as lazy_re
    from gpudrv_check.read.packaged import packaged_yaml

    data = packaged_yaml("policies", "cuda.yaml")  # read first: its reader compiles its own
    sources = {
        raw[key]
        for raw in data["images"]
        for key in ("tag_regex", "repository_regex")
        if key in raw
    }
    compiled: list[str] = []
    real = re.compile
    monkeypatch.setattr(lazy_re.re, "compile", lambda p, f=0: compiled.append(p) or real(p, f))
    table, problems = parse_cuda_table(data, guarded=False)
    assert problems == [] and [p for p in compiled if p in sources] == []
    assert cuda_version_for_image(table, "nvcr.io/nvidia/pytorch:24.07-py3")[0] == "12.5.1"
    tried = [p for p in compiled if p in sources]
    assert 0 < len(tried) < len(sources)  # the rules tried up to the match, no other


def test_an_expression_a_guarded_table_refuses_is_taken_unguarded() -> None:
    """What `guarded=False` leaves out, and nothing else (the same table otherwise)."""
    data = {"images": [{"repository_regex": "(a+)+$", "tags": {"1": "12.4"}}]}
    assert parse_cuda_table(data)[1] != []  # refused: it can backtrack without bound
    table, problems = parse_cuda_table(data, guarded=False)
    assert problems == [] and table.images[0].repository_regex.pattern == "(a+)+$"
