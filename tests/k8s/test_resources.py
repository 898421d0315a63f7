"""Quantities, container resources and pod requests, row by row against upstream.

- k8s.io/apimachinery/pkg/api/resource/quantity.go ``ParseQuantity`` (rows from
  quantity_test.go ``TestQuantityParse`` / ``TestQuantityParseZero`` / the error cases);
- pkg/apis/core/validation/validation.go ``validateResourceRequirements``,
  ``ValidateResourceQuantityValue``, ``validateContainerResourceName``;
- k8s.io/component-helpers/resource/helpers.go ``PodRequests`` (rows after helpers_test.go
  ``TestPodRequestsAndLimits`` and the sidecar cases of KEP-753);
- pkg/scheduler/framework/plugins/noderesources/fit.go ``fitsRequest``.
"""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from gpudrv_check.k8s.quantity import FORMAT_WRONG, SUFFIX, parse_quantity, quantity_value
from gpudrv_check.k8s.resources import (
    is_extended,
    overcommit_allowed,
    pod_requests,
    validate_resources,
)
from gpudrv_check.k8s.scheduler import fits_request

GPU = "nvidia.com/gpu"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", F(0)),
        ("1", F(1)),
        ("1000m", F(1)),  # decimal SI
        ("1k", F(1000)),
        ("1Ki", F(1024)),  # binary SI
        ("1Mi", F(2**20)),
        ("2e0", F(2)),  # decimal exponent
        ("12E3", F(12000)),
        ("1e-3", F(1, 1000)),
        ("1E", F(10**18)),  # E alone is exa, not an exponent
        ("1.0", F(1)),
        (".5", F(1, 2)),
        ("1.", F(1)),  # "we currently allow 1.G"
        (".", F(0)),
        ("0.5", F(1, 2)),
        ("500m", F(1, 2)),
        ("-1", F(-1)),
        ("+1", F(1)),
        ("0000012", F(12)),  # leading zeros stripped
        ("0.0000000001", F(1, 10**9)),  # non-zero rounds up to 1n
        ("1e100", F(2**63 - 1)),  # capped at maxAllowed
    ],
)
def test_parse_quantity(text: str, expected: F) -> None:
    """quantity.go ParseQuantity."""
    assert parse_quantity(text) == (expected, None)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", FORMAT_WRONG),
        ("abc", FORMAT_WRONG),
        ("1.5.5", FORMAT_WRONG),
        ("1x", FORMAT_WRONG),
        ("1e", SUFFIX),  # "e" alone is no suffix
        ("1Kb", FORMAT_WRONG),  # b ends the suffix: not a quantity at all
        ("1Ki5", SUFFIX),
        ("1K", SUFFIX),  # only Ki is binary; k is kilo
    ],
)
def test_parse_quantity_errors(text: str, error: str) -> None:
    """quantity.go ErrFormatWrong / ErrSuffix."""
    assert parse_quantity(text) == (None, error)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, F(1)),
        (1.0, F(1)),  # YAML 1.0 reaches the API server as the JSON number 1
        (2e0, F(2)),
        (0.5, F(1, 2)),
        (" 2 ", F(2)),  # UnmarshalJSON trims the text
        (None, F(0)),  # JSON null: the zero quantity
    ],
)
def test_quantity_as_written(value: object, expected: F) -> None:
    """quantity.go Quantity.UnmarshalJSON."""
    assert quantity_value(value) == (expected, None)


def test_booleans_are_not_quantities() -> None:
    assert quantity_value(True) == (None, FORMAT_WRONG)


def test_resource_name_classes() -> None:
    """pkg/apis/core/helper IsExtendedResourceName / IsOvercommitAllowed."""
    assert is_extended(GPU) and is_extended("amd.com/gpu") and is_extended("nvidia.com/mig-1g.5gb")
    assert not is_extended("cpu") and not is_extended("kubernetes.io/x")
    assert overcommit_allowed("cpu") and overcommit_allowed("memory")
    assert not overcommit_allowed(GPU) and not overcommit_allowed("hugepages-2Mi")


@pytest.mark.parametrize(
    ("resources", "problems"),
    [
        ({"limits": {GPU: 1}}, []),  # requests default to limits
        ({"limits": {GPU: "1"}, "requests": {GPU: "1000m"}}, []),  # equal quantities
        ({"limits": {GPU: 1.0}}, []),
        ({"limits": {GPU: "1k"}}, []),
        (
            {"requests": {GPU: 1}},
            [
                (
                    ("requests", GPU),
                    "limits: Required value: Limit must be set for non overcommitable resources",
                )
            ],
        ),
        (
            {"limits": {GPU: 2}, "requests": {GPU: 1}},
            [
                (
                    ("requests", GPU),
                    'requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2',
                )
            ],
        ),
        (
            {"limits": {GPU: "0.5"}},
            [(("limits", GPU), 'limits[nvidia.com/gpu]: Invalid value: "0.5": must be an integer')],
        ),
        (
            {"limits": {GPU: "500m"}},
            [
                (
                    ("limits", GPU),
                    'limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer',
                )
            ],
        ),
        (
            {"limits": {"cpu": "-1"}},
            [
                (
                    ("limits", "cpu"),
                    'limits[cpu]: Invalid value: "-1": must be greater than or equal to 0',
                )
            ],
        ),
        (
            {"limits": {"cpu": 1}, "requests": {"cpu": 2}},
            [
                (
                    ("requests", "cpu"),
                    'requests: Invalid value: "2": must be less than or equal to cpu limit of 1',
                )
            ],
        ),
        ({"limits": {"cpu": 2}, "requests": {"cpu": "500m"}}, []),  # cpu may be overcommitted
        ({"requests": {"cpu": 1, "memory": "1Gi"}}, []),
        (
            {"limits": {"gpu": 1}},
            [
                (
                    ("limits", "gpu"),
                    'limits[gpu]: Invalid value: "gpu": must be a standard resource for containers',
                )
            ],
        ),
        (
            {"limits": {"memory": "lots"}},
            [(("limits", "memory"), f'limits[memory]: Invalid value: "lots": {FORMAT_WRONG}')],
        ),
    ],
)
def test_validate_resources(resources: dict, problems: list) -> None:
    """validation.go validateResourceRequirements."""
    assert [(p.path, p.message) for p in validate_resources(resources)] == problems


def _c(limits: dict | None = None, requests: dict | None = None, **extra: object) -> dict:
    resources = {}
    if limits is not None:
        resources["limits"] = limits
    if requests is not None:
        resources["requests"] = requests
    return {"name": "c", "resources": resources, **extra}


SIDECAR = {"restartPolicy": "Always"}


@pytest.mark.parametrize(
    ("spec", "overhead", "expected"),
    [
        ({"containers": [_c({GPU: 1}), _c({GPU: 2})]}, None, {GPU: F(3)}),  # containers add up
        # an ordinary init container is a peak of its own: max(sum, init)
        ({"initContainers": [_c({GPU: 4})], "containers": [_c({GPU: 1})]}, None, {GPU: F(4)}),
        ({"initContainers": [_c({GPU: 1})], "containers": [_c({GPU: 2})]}, None, {GPU: F(2)}),
        # a sidecar (restartPolicy: Always) adds to the containers
        (
            {"initContainers": [_c({GPU: 1}, **SIDECAR)], "containers": [_c({GPU: 1})]},
            None,
            {GPU: F(2)},
        ),
        # an init container after a sidecar runs next to it: 1 + 3 = 4 > 1 + 1
        (
            {
                "initContainers": [_c({"cpu": 1}, **SIDECAR), _c({"cpu": 3})],
                "containers": [_c({"cpu": 1})],
            },
            None,
            {"cpu": F(4)},
        ),
        # requests win over limits where both are written
        ({"containers": [_c({"cpu": 2}, {"cpu": "500m"})]}, None, {"cpu": F(1, 2)}),
        # RuntimeClass overhead is added
        ({"containers": [_c({"cpu": 1})]}, {"cpu": F(1, 4)}, {"cpu": F(5, 4)}),
        # pod-level requests override cpu and memory, not extended resources
        (
            {"resources": {"requests": {"cpu": 2}}, "containers": [_c({"cpu": 1, GPU: 1})]},
            None,
            {"cpu": F(2), GPU: F(1)},
        ),
    ],
)
def test_pod_requests(spec: dict, overhead: dict | None, expected: dict) -> None:
    """component-helpers resource.PodRequests / AggregateContainerRequests."""
    assert pod_requests(spec, overhead) == expected


@pytest.mark.parametrize(
    ("requests", "allocatable", "used", "pods", "expected"),
    [
        ({GPU: F(1)}, {GPU: F(1)}, {}, 0, []),
        ({GPU: F(2)}, {GPU: F(1)}, {}, 0, [("Insufficient nvidia.com/gpu", True)]),
        # the node's room taken by other pods: resolvable (preemption may help)
        ({GPU: F(1)}, {GPU: F(1)}, {GPU: F(1)}, 1, [("Insufficient nvidia.com/gpu", False)]),
        # an extended resource the node does not list is 0
        ({"amd.com/gpu": F(1)}, {GPU: F(8)}, {}, 0, [("Insufficient amd.com/gpu", True)]),
        # cpu in millicores
        ({"cpu": F(1, 2)}, {"cpu": F(1, 4)}, {}, 0, [("Insufficient cpu", True)]),
        ({"cpu": F(1, 2)}, {"cpu": F(1)}, {"cpu": F(1, 2)}, 0, []),
        # a standard resource the inventory leaves out is not checked
        ({"memory": F(2**40)}, {GPU: F(8)}, {}, 0, []),
        # Too many pods comes first, whatever the pod requests
        ({}, {"pods": F(1)}, {}, 1, [("Too many pods", False)]),
        (
            {"cpu": F(4), GPU: F(1)},
            {"cpu": F(2), GPU: F(0), "pods": F(110)},
            {},
            0,
            [("Insufficient cpu", True), ("Insufficient nvidia.com/gpu", True)],
        ),
    ],
)
def test_fits_request(requests: dict, allocatable: dict, used: dict, pods: int, expected) -> None:
    """fit.go fitsRequest: every reason, and Unresolvable when the request exceeds allocatable."""
    got = fits_request(requests, allocatable, used, pods)
    assert [(s.reason, s.unresolvable) for s in got] == expected
