"""Label key and value syntax (docs/kubernetes.md §7; upstream content/kube_test.go)."""

import pytest

from gpudrv_check.k8s.labels import (
    dns1123_subdomain_errors,
    is_valid_label_key,
    is_valid_label_value,
    json_type_name,
    label_key_errors,
    label_value_errors,
)

VALID_KEYS = [
    # upstream success cases, rewritten
    "simple",
    "now-with-dashes",
    "1-starts-with-num",
    "1234",
    "simple/simple",
    "now-with-dashes/simple",
    "now-with-dashes/now-with-dashes",
    "now.with.dots/simple",
    "now-with.dashes-and.dots/simple",
    "1-num.2-num/3-num",
    "1234/5678",
    "1.2.3.4/5678",
    "Uppercase_Is_OK_123",
    "example.com/Uppercase_Is_OK_123",
    "requests.storage-foo",
    "a" * 63,
    "a" * 253 + "/" + "b" * 63,
    # the keys this project reads
    "nvidia.com/gpu.present",
    "nvidia.com/cuda.driver.major",
    "feature.node.kubernetes.io/kernel-version.full",
    "feature.node.kubernetes.io/system-os_release.VERSION_ID",
    "kubernetes.io/hostname",
]

INVALID_KEYS = [
    "nospecialchars%^=@",
    "cantendwithadash-",
    "-cantstartwithadash-",
    "only/one/slash",
    "Example.com/abc",  # prefix must be lowercase
    "example_com/abc",  # no underscore in the prefix
    "example.com/",
    "/simple",
    "a" * 64,
    "a" * 254 + "/abc",
    "",
    "invalid key",
    "nvidia.com/gpu present",
    "ключ",  # non-ASCII letters are not alphanumeric here
]


@pytest.mark.parametrize("key", VALID_KEYS)
def test_valid_label_keys(key: str) -> None:
    assert label_key_errors(key) == []
    assert is_valid_label_key(key)


@pytest.mark.parametrize("key", INVALID_KEYS)
def test_invalid_label_keys(key: str) -> None:
    assert label_key_errors(key)
    assert not is_valid_label_key(key)


VALID_VALUES = [
    "simple",
    "now-with-dashes",
    "1-starts-with-num",
    "end-with-num-1",
    "1234",
    "a" * 63,
    "",  # the empty value is valid
    "true",
    "5.15.0-119-generic",
    "0206",
    "Under_score.dot-dash",
]

INVALID_VALUES = [
    "nospecialchars%^=@",
    "Tama-nui-te-rā.is.Māori.sun",
    "\\backslashes\\are\\bad",
    "-starts-with-dash",
    "ends-with-dash-",
    ".starts.with.dot",
    "ends.with.dot.",
    "a" * 64,
    "has space",
    "line\n",  # a trailing newline must not sneak past an end anchor
    "invalid value: ___@#$%^",
]


@pytest.mark.parametrize("value", VALID_VALUES)
def test_valid_label_values(value: str) -> None:
    assert label_value_errors(value) == []
    assert is_valid_label_value(value)


@pytest.mark.parametrize("value", INVALID_VALUES)
def test_invalid_label_values(value: str) -> None:
    assert label_value_errors(value)
    assert not is_valid_label_value(value)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("", ["name part must be non-empty", "name part must consist of"]),
        ("a" * 64, ["name part must be no more than 63 characters"]),
        ("-" * 64, ["name part must be no more than 63 characters", "name part must consist"]),
        ("example.com/", ["name part must be non-empty", "name part must consist"]),
        ("/simple", ["prefix part must be non-empty"]),
        ("Example.com/abc", ["prefix part a lowercase RFC 1123 subdomain"]),
        ("a/b/c", ["a valid label key is a name that"]),
        ("invalid key", ["name part must consist of alphanumeric characters"]),
    ],
)
def test_label_key_messages_follow_upstream_order(key: str, expected: list[str]) -> None:
    errors = label_key_errors(key)
    assert len(errors) == len(expected)
    for error, start in zip(errors, expected, strict=True):
        assert error.startswith(start), error


def test_label_value_messages() -> None:
    assert label_value_errors("a" * 64) == ["must be no more than 63 characters"]
    (message,) = label_value_errors("-x")
    assert message.startswith("a valid label value must be an empty string or consist of")


def test_length_counts_utf8_bytes_like_go() -> None:
    # 32 two-byte characters: Go's len() is 64, so the length error fires as well.
    errors = label_value_errors("ā" * 32)
    assert "must be no more than 63 characters" in errors


@pytest.mark.parametrize("wrong", [None, 550, 5.5, True, [], {}, ("a",)])
def test_wrong_types_are_reported_not_raised(wrong: object) -> None:
    assert label_key_errors(wrong) == [f"must be a string, not {json_type_name(wrong)}"]
    assert label_value_errors(wrong) == [f"must be a string, not {json_type_name(wrong)}"]
    assert dns1123_subdomain_errors(wrong)
    assert not is_valid_label_key(wrong)
    assert not is_valid_label_value(wrong)


def test_lone_surrogates_do_not_raise() -> None:
    assert label_value_errors("\ud800")
    assert label_key_errors("a/\ud800")


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("node-1", True),
        ("gpu-node-01.example.com", True),
        ("node_1", False),
        ("Node1", False),
        ("a" * 254, False),
        ("", False),
    ],
)
def test_dns1123_subdomain(value: str, valid: bool) -> None:
    assert (dns1123_subdomain_errors(value) == []) is valid


@pytest.mark.parametrize(
    ("value", "name"),
    [(None, "null"), (True, "boolean"), (1, "integer"), (1.5, "number"), ("x", "string")]
    + [({}, "object"), ([], "list")],
)
def test_json_type_name(value: object, name: str) -> None:
    assert json_type_name(value) == name
