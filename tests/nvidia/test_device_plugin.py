"""The device plugin's sharing config, row by row against NVIDIA/k8s-device-plugin:
api/config/v1/replicas.go (``ReplicatedResources.UnmarshalJSON``,
``ReplicatedResource.UnmarshalJSON``), config.go (``parseConfigFrom``, ``NewConfig``,
``DisableResourceNamingInConfig``), resources.go ``NewResourceName``, sharing.go
``SharingStrategy``, internal/lm/resource.go
``getProductName`` and cmd/config-manager ``updateConfigName``."""

from __future__ import annotations

import pytest

from gpudrv_check.nvidia.device_plugin import (
    advertised,
    config_name_for_node,
    parse_sharing_config,
    shared_product,
)

GPU = "nvidia.com/gpu"


def ts(*resources: dict, **options: object) -> dict:
    return {"version": "v1", "sharing": {"timeSlicing": {"resources": list(resources), **options}}}


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (ts({"name": GPU, "replicas": 1}), "sharing.timeSlicing: number of replicas must be >= 2"),
        (ts({"name": GPU}), "sharing.timeSlicing: no replicas specified"),
        (ts({"replicas": 4}), "sharing.timeSlicing: no resource name specified"),
        (ts(), "sharing.timeSlicing: no resources specified"),
        (
            {"version": "v1", "sharing": {"timeSlicing": {}}},
            "sharing.timeSlicing: no resources specified",
        ),
        ({"version": "v2"}, "unknown version: v2"),
        # replicas.go ReplicatedDevices.UnmarshalJSON
        (
            ts({"name": GPU, "replicas": 4, "devices": "some"}),
            "sharing.timeSlicing: devices set as 'some' but the only valid string input is 'all'",
        ),
        (
            ts({"name": GPU, "replicas": 4, "devices": 0}),
            "sharing.timeSlicing: devices set as '0' but a count of devices must be > 0",
        ),
        (
            ts({"name": GPU, "replicas": 4, "devices": ["gpu0"]}),
            "sharing.timeSlicing: unsupported type for device in devices list: gpu0",
        ),
        (
            ts({"name": GPU, "replicas": 4, "devices": True}),
            "sharing.timeSlicing: unrecognized type for devices spec: True",
        ),
        # ... decoded before the replicas (ReplicatedResource.UnmarshalJSON's order)
        (
            ts({"name": GPU, "replicas": 1, "devices": "some"}),
            "sharing.timeSlicing: devices set as 'some' but the only valid string input is 'all'",
        ),
        # resources.go NewResourceName
        (
            ts({"name": "my/gpu", "replicas": 2}),
            "sharing.timeSlicing: incorrect format for resource name 'nvidia.com/my/gpu': a "
            "lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character (e.g. "
            "'example.com')",
        ),
        (
            ts({"name": "g" * 53, "replicas": 2}),
            "sharing.timeSlicing: fully-qualified resource name must be 63 characters or less: "
            f"nvidia.com/{'g' * 53}",
        ),
        # config.go parseConfigFrom decodes both sections: a bad timeSlicing refuses the config
        # although mps is the one that applies (sharing.go ReplicatedResources)
        (
            {
                "version": "v1",
                "sharing": {
                    "mps": {"resources": [{"name": GPU, "replicas": 4}]},
                    "timeSlicing": {"resources": [{"name": GPU, "replicas": 1}]},
                },
            },
            "sharing.timeSlicing: number of replicas must be >= 2 (the plugin reads this section "
            "too, although mps applies)",
        ),
    ],
)
def test_configs_the_plugin_refuses(data: dict, error: str) -> None:
    assert parse_sharing_config(data) == (None, error)


def test_time_slicing_multiplies_the_gpus() -> None:
    config, error = parse_sharing_config(ts({"name": GPU, "replicas": 4}))
    assert error is None and config is not None
    assert config.strategy == "time-slicing" and not config.fail_requests_greater_than_one
    assert advertised(config, GPU, 8) == {GPU: 32}
    assert shared_product(config, "Tesla-T4") == "Tesla-T4-SHARED"


def test_rename_by_default_advertises_gpu_shared_and_keeps_the_product() -> None:
    config, _ = parse_sharing_config(ts({"name": GPU, "replicas": 2}, renameByDefault=True))
    assert config is not None
    assert advertised(config, GPU, 2) == {"nvidia.com/gpu.shared": 4}
    assert shared_product(config, "Tesla-T4") == "Tesla-T4"


def test_rename_is_ignored() -> None:
    """DisableResourceNamingInConfig: a custom rename is reset (the issue expects it honoured)."""
    config, _ = parse_sharing_config(ts({"name": GPU, "replicas": 2, "rename": "my-gpu"}))
    assert config is not None
    assert advertised(config, GPU, 1) == {GPU: 2}
    assert config.notes == ("the 'rename' field is not yet supported and is ignored",)


@pytest.mark.parametrize(
    ("devices", "notes"),
    [
        # replicas.go ReplicatedDevices: valid, then reset to all by disableResoureRenaming
        ("all", ()),
        (2, ("the 'devices' field is not yet supported and is ignored",)),
        (
            [0, "1", "0:1", "GPU-8f3c4e2a-1b2c-4d5e-8f90-123456789abc"],
            ("the 'devices' field is not yet supported and is ignored",),
        ),
        (
            ["MIG-GPU-8f3c4e2a-1b2c-4d5e-8f90-123456789abc/1/0"],
            ("the 'devices' field is not yet supported and is ignored",),
        ),
    ],
)
def test_devices_the_plugin_reads_then_ignores(devices: object, notes: tuple) -> None:
    config, error = parse_sharing_config(ts({"name": GPU, "replicas": 2, "devices": devices}))
    assert error is None and config is not None
    assert config.notes == notes and advertised(config, GPU, 2) == {GPU: 4}


@pytest.mark.parametrize(
    ("name", "advertised_as"),
    [
        # resources.go NewResourceName: the prefix is added when missing
        ("gpu", {GPU: 8}),
        ("nvidia.com/gpu", {GPU: 8}),
        ("mig-1g.5gb", {"nvidia.com/mig-1g.5gb": 8}),
    ],
)
def test_short_resource_names(name: str, advertised_as: dict) -> None:
    config, error = parse_sharing_config(ts({"name": name, "replicas": 2}))
    assert error is None and config is not None
    resource = next(iter(advertised_as)).removesuffix(".shared")
    assert advertised(config, resource, 4) == advertised_as


def test_mps_null_is_no_mps() -> None:
    """`mps: null` leaves the *ReplicatedResources nil: time-slicing applies."""
    data = ts({"name": GPU, "replicas": 2})
    data["sharing"]["mps"] = None
    config, error = parse_sharing_config(data)
    assert error is None and config is not None and config.strategy == "time-slicing"


def test_both_sections_valid_mps_applies() -> None:
    data = ts({"name": GPU, "replicas": 2})
    data["sharing"]["mps"] = {"resources": [{"name": GPU, "replicas": 3}]}
    config, _ = parse_sharing_config(data)
    assert config is not None and config.strategy == "mps"
    assert advertised(config, GPU, 1) == {GPU: 3}


def test_mps_fails_requests_greater_than_one_unless_relaxed() -> None:
    mps = {"version": "v1", "sharing": {"mps": {"resources": [{"name": GPU, "replicas": 2}]}}}
    config, _ = parse_sharing_config(mps)
    assert config is not None and config.strategy == "mps" and config.fail_requests_greater_than_one
    mps["sharing"]["mps"]["failRequestsGreaterThanOne"] = False
    relaxed, _ = parse_sharing_config(mps)
    assert relaxed is not None and not relaxed.fail_requests_greater_than_one


def test_no_sharing() -> None:
    config, _ = parse_sharing_config({"version": "v1", "flags": {"migStrategy": "mixed"}})
    assert config is not None and config.strategy == "none" and config.mig_strategy == "mixed"
    assert advertised(config, GPU, 4) == {GPU: 4}


@pytest.mark.parametrize(
    ("labels", "default", "key"),
    [
        ({"nvidia.com/device-plugin.config": "a100"}, "any", "a100"),
        ({}, "any", "any"),
        ({}, None, None),  # FALLBACK_STRATEGIES=empty: the empty config
        ({"nvidia.com/device-plugin.config": ""}, "any", "any"),
    ],
)
def test_config_name_for_node(labels: dict, default: str | None, key: str | None) -> None:
    assert config_name_for_node(labels, default) == key
