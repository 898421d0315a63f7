"""Rows where gpudrv-check disagreed with the real Kubernetes v1.35.4 code in a generated-case
comparison (k8s.io/apimachinery, k8s.io/kubernetes, k8s.io/component-helpers v0.35.4), now
fixed. Each expected value is what the real code gave; each table names the upstream function.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from gpudrv_check.k8s.quantity import (
    NUMERIC,
    canonical,
    go_float_text,
    milli_value,
    parse_quantity,
    quantity_value,
    value,
)
from gpudrv_check.k8s.resources import pod_requests, validate_resources
from gpudrv_check.read.yaml_docs import resolve_plain

GPU = "nvidia.com/gpu"
REGEX_NAME = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
    "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("1", "1"),
        ("1000m", "1"),
        ("0.5", "500m"),
        ("1.0", "1"),
        ("2e0", "2e0"),  # canonical as written: kept
        ("12e2", "1200"),
        ("1e3", "1e3"),
        ("1.5Gi", "1536Mi"),
        ("0.5Gi", "512Mi"),
        ("1024Ki", "1Mi"),
        ("2048Ki", "2Mi"),
        ("1.1Ki", "1126400m"),  # binary but not whole: decimal SI
        ("1.5k", "1500"),
        ("0.000001", "1u"),
        ("+1", "+1"),
        ("007", "007"),
        ("5.", "5."),
        ("5.Pi", "5Pi"),
        ("1E", "1E"),
        ("-1.5", "-1500m"),
    ],
)
def test_quantity_string(text: str, shown: str) -> None:
    """apimachinery quantity.go ``ParseQuantity`` + ``Quantity.String`` (``CanonicalizeBytes``)."""
    assert canonical(text) == shown


@pytest.mark.parametrize("text", ["Pi", "Ei", "-Pi", ".Pi", "e-10", "+e-20"])
def test_no_digits_off_the_fast_path(text: str) -> None:
    """quantity.go ``ParseQuantity``: without digits, ``inf.Dec.SetString`` fails (ErrNumeric)
    where the int64 fast path is not taken (``Ti``, ``k`` and ``e-9`` are 0)."""
    assert parse_quantity(text) == (None, NUMERIC) and canonical(text) is None


@pytest.mark.parametrize(("text", "number"), [("Ti", 0), ("k", 0), ("e-9", 0), (".", 0)])
def test_no_digits_on_the_fast_path(text: str, number: int) -> None:
    """quantity.go ``ParseQuantity``: the fast path parses the missing number as 0."""
    assert parse_quantity(text) == (Fraction(number), None)


@pytest.mark.parametrize(
    ("text", "whole", "milli"),
    [("-1.5", -2, -1500), ("-1n", -1, -1), ("1500m", 2, 1500), ("1n", 1, 1)],
)
def test_value_rounds_away_from_zero(text: str, whole: int, milli: int) -> None:
    """quantity.go ``Value`` / ``MilliValue`` (``ScaledValue``: up, away from zero)."""
    amount, _ = parse_quantity(text)
    assert amount is not None and (value(amount), milli_value(amount)) == (whole, milli)


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (0.5, "0.5"),
        (1.0, "1"),
        (1e16, "10000000000000000"),
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (1e21, "1e+21"),
        (1.5e-7, "1.5e-7"),
    ],
)
def test_yaml_float_as_json_writes_it(number: float, text: str) -> None:
    """sigs.k8s.io/yaml ``YAMLToJSON`` → encoding/json ``floatEncoder``; the server parses it."""
    assert go_float_text(number) == text


def test_yaml_float_quantity_keeps_go_text() -> None:
    """A YAML ``1e16`` reaches the server as ``10000000000000000`` (DecimalSI: ``10P``)."""
    assert quantity_value(1e16) == (Fraction(10**16), None)
    assert canonical(go_float_text(1e16)) == "10P"


def test_out_of_range_float_stays_a_string() -> None:
    """go-yaml v2 resolve: ``strconv.ParseFloat("1e400")`` fails, the scalar is a string (and a
    valid quantity)."""
    assert resolve_plain("1e400") == "1e400"
    assert resolve_plain("1e308") == 1e308


def _messages(resources: dict) -> list[tuple[tuple, str]]:
    return sorted((p.path, p.message) for p in validate_resources(resources))


@pytest.mark.parametrize(
    ("resources", "problems"),
    [
        # Quantity.String() of the defaulted (milli-rounded) value, not the text as written
        (
            {"limits": {GPU: "1n"}},
            [(("limits", GPU), 'limits[nvidia.com/gpu]: Invalid value: "1m": must be an integer')],
        ),
        (
            {"limits": {"pods": "1e-9"}},
            [
                (("limits", "pods"), 'limits[pods]: Invalid value: "1e-3": must be an integer'),
                (
                    ("limits", "pods"),
                    'limits[pods]: Invalid value: "pods": must be a standard resource for '
                    "containers",
                ),
            ],
        ),
        (
            {"limits": {GPU: 2.0}, "requests": {GPU: 1}},
            [
                (
                    ("requests", GPU),
                    'requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2',
                )
            ],
        ),
        (
            {"limits": {GPU: 3}, "requests": {GPU: None}},
            [
                (
                    ("requests", GPU),
                    'requests: Invalid value: "0": must be equal to nvidia.com/gpu limit of 3',
                )
            ],
        ),
        # SetDefaults_ResourceList rounds to thousandths first: 1n and 1u are both 1m
        ({"limits": {"cpu": "1u"}, "requests": {"cpu": "1n"}}, []),
        # validateResourceName, then the container's own check
        (
            {"requests": {"foo": 1}},
            [
                (
                    ("requests", "foo"),
                    'requests[foo]: Invalid value: "foo": must be a standard resource for '
                    "containers",
                ),
                (
                    ("requests", "foo"),
                    'requests[foo]: Invalid value: "foo": must be a standard resource type or '
                    "fully qualified",
                ),
            ],
        ),
        (
            {"limits": {"example.com/-bad": 1}, "requests": {"example.com/-bad": 1}},
            [
                (
                    ("limits", "example.com/-bad"),
                    'limits[example.com/-bad]: Invalid value: "example.com/-bad": '
                    "doesn't follow extended resource name standard",
                ),
                (
                    ("limits", "example.com/-bad"),
                    f'limits[example.com/-bad]: Invalid value: "example.com/-bad": {REGEX_NAME}',
                ),
                (
                    ("requests", "example.com/-bad"),
                    'requests[example.com/-bad]: Invalid value: "example.com/-bad": '
                    "doesn't follow extended resource name standard",
                ),
                (
                    ("requests", "example.com/-bad"),
                    f'requests[example.com/-bad]: Invalid value: "example.com/-bad": {REGEX_NAME}',
                ),
            ],
        ),
        # validateResourceQuantityHugePageValue and "HugePages require cpu or memory"
        (
            {"limits": {"hugepages-2Mi": "1Mi", "memory": "1Gi"}},
            [
                (
                    ("limits", "hugepages-2Mi"),
                    'limits[hugepages-2Mi]: Invalid value: "1Mi": 1Mi is not positive integer '
                    "multiple of hugepages-2Mi",
                )
            ],
        ),
        (
            {"limits": {"hugepages-2Mi": "4Mi"}},
            [((), "Forbidden: HugePages require cpu or memory")],
        ),
        ({"limits": {"hugepages-2Mi": "4Mi", "cpu": 1}}, []),
    ],
)
def test_validation_as_the_server_prints_it(resources: dict, problems: list) -> None:
    """core/v1 ``SetDefaults_Pod`` + ``SetDefaults_ResourceList``, then core/validation
    ``validateResourceRequirements`` (``validateContainerResourceName``,
    ``ValidateResourceQuantityValue``, ``validateResourceQuantityHugePageValue``). A request
    defaulted from a limit does not repeat the limit's errors (deliberate; upstream repeats them
    under ``requests[<name>]``)."""
    assert _messages(resources) == sorted(problems)


def _pod(containers: list[dict], pod_level: dict | None = None) -> dict:
    spec: dict = {
        "containers": [{"name": f"c{i}", "resources": r} for i, r in enumerate(containers)]
    }
    if pod_level is not None:
        spec["resources"] = pod_level
    return spec


@pytest.mark.parametrize(
    ("spec", "requests"),
    [
        # each container's 1n is 1m after defaulting: 3m, not 3n (→ 1m)
        (_pod([{"requests": {"cpu": "1n"}}] * 3), {"cpu": Fraction(3, 1000)}),
        # a pod-level limit without a request defaults the request (defaultPodRequests)
        (_pod([{}], {"limits": {"memory": "16Gi"}}), {"memory": Fraction(16 * 2**30)}),
        # ... unless the containers request it: then their sum
        (
            _pod([{"requests": {"cpu": "500m"}}], {"limits": {"cpu": 4}}),
            {"cpu": Fraction(1, 2)},
        ),
        (
            _pod([{"limits": {GPU: 1}}], {"requests": {"cpu": 1}, "limits": {"memory": "1Gi"}}),
            {GPU: Fraction(1), "cpu": Fraction(1), "memory": Fraction(2**30)},
        ),
    ],
)
def test_pod_requests_after_defaulting(spec: dict, requests: dict) -> None:
    """component-helpers ``PodRequests`` over the pod as ``SetDefaults_Pod`` leaves it
    (``defaultPodRequests``, ``SetDefaults_ResourceList``)."""
    assert pod_requests(spec) == requests
