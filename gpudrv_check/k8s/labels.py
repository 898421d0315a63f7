"""Label key and value syntax, exactly as Kubernetes apimachinery validates it.

Upstream: ``k8s.io/apimachinery/pkg/api/validate/content/kube.go`` (``IsLabelKey``, alias
``IsQualifiedName``; ``IsLabelValue``) and ``content/dns.go`` (``IsDNS1123Subdomain``).

Every function here accepts any JSON-like value and never raises: a value of the wrong type
gets an error message instead of a ``TypeError``. This module also defines :class:`Problem`,
the finding shape shared by the other ``gpudrv_check.k8s`` validators.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import NamedTuple

#: ``isinstance(x, MAPPINGS)`` is ``isinstance(x, Mapping)`` with a plain type check first for
#: dicts (every mapping read from YAML or JSON), which skips the ABC's much slower one
MAPPINGS = (dict, Mapping)

__all__ = [
    "LABEL_NAME_MAX_LENGTH",
    "LABEL_VALUE_MAX_LENGTH",
    "DNS1123_SUBDOMAIN_MAX_LENGTH",
    "Path",
    "Problem",
    "json_type_name",
    "label_key_errors",
    "label_value_errors",
    "is_valid_label_key",
    "is_valid_label_value",
    "dns1123_subdomain_errors",
]

Path = tuple[str | int, ...]


class Problem(NamedTuple):
    """One validation finding.

    ``path`` is relative to the object handed to the validator and points at the most specific
    offending key, e.g. ``("nodeSelectorTerms", 0, "matchExpressions", 1, "values")``; an empty
    path means the object itself is wrong.
    """

    path: Path
    message: str
    # True when the API server accepts the object and only the scheduler refuses this piece
    # (e.g. a non-integer ``Gt`` value or an empty node selector term: it matches no node)
    scheduler_only: bool = False


LABEL_NAME_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253

# Explicit ASCII classes: Python's \w and \d would accept non-ASCII letters and digits.
_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_RE = re.compile(_NAME_FMT)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_LABEL_FMT + r"(\." + _DNS1123_LABEL_FMT + ")*")

_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName', 'my.name' or '123-abc')"
)
_VALUE_MSG = (
    "a valid label value must be an empty string or consist of alphanumeric characters, '-', "
    "'_' or '.', and must start and end with an alphanumeric character "
    "(e.g. 'MyValue', 'my_value' or '12345')"
)
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT)
DNS1123_LABEL_MAX_LENGTH = 63
# apimachinery's words for an invalid label, regex and all (container names quote it)
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    f"used for validation is '{_DNS1123_LABEL_FMT}')"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com')"
)


def json_type_name(value: object) -> str:
    """Name a parsed-YAML/JSON value's type the way a manifest author thinks of it."""
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: bool is a subclass of int
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple):
        return "list"
    return type(value).__name__


def _byte_length(text: str) -> int:
    # Go's len() counts UTF-8 bytes; surrogatepass keeps lone surrogates from raising.
    return len(text.encode("utf-8", "surrogatepass"))


def _max_len_error(limit: int) -> str:
    return f"must be no more than {limit} characters"


def _not_a_string(value: object) -> list[str]:
    return [f"must be a string, not {json_type_name(value)}"]


@lru_cache(maxsize=4096)  # a repo names its containers alike thousands of times
def dns1123_label_error(value: str) -> str | None:
    """``IsDNS1123Label``'s first error for a name (a container's), or None when it is one."""
    if _byte_length(value) > DNS1123_LABEL_MAX_LENGTH:
        return _max_len_error(DNS1123_LABEL_MAX_LENGTH)
    return None if _DNS1123_LABEL_RE.fullmatch(value) else _DNS1123_LABEL_MSG


def dns1123_subdomain_errors(value: object) -> list[str]:
    """Errors for a lowercase RFC 1123 subdomain (label-key prefixes, node names); [] if valid."""
    if not isinstance(value, str):
        return _not_a_string(value)
    errors = []
    if _byte_length(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errors.append(_max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errors.append(_SUBDOMAIN_MSG)
    return errors


def label_key_errors(key: object) -> list[str]:
    """Errors for a label key (``IsQualifiedName``); an empty list when the key is valid.

    A key is an optional DNS-1123 subdomain prefix of at most 253 characters and a ``/``,
    then a name of at most 63 characters matching ``[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?``.
    """
    if not isinstance(key, str):
        return _not_a_string(key)
    return list(_key_errors(str(key)))


@lru_cache(maxsize=4096)  # a repo writes the same few keys thousands of times
def _key_errors(key: str) -> tuple[str, ...]:
    return tuple(_qualified_name_errors(key))


def _qualified_name_errors(key: str) -> list[str]:
    errors: list[str] = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + msg for msg in dns1123_subdomain_errors(prefix))
    else:
        return [
            "a valid label key is a name that "
            + _NAME_MSG
            + ", with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif _byte_length(name) > LABEL_NAME_MAX_LENGTH:
        errors.append("name part " + _max_len_error(LABEL_NAME_MAX_LENGTH))
    if not _NAME_RE.fullmatch(name):
        errors.append("name part " + _NAME_MSG)
    return errors


def labels_valid(labels: Mapping[str, str]) -> bool:
    """Whether every key and value of a mapping of strings is a valid label (the usual case,
    answered from the per-text caches without building error lists)."""
    for key, value in labels.items():
        if _key_errors(key) or _value_errors(value):
            return False
    return True


def label_value_errors(value: object) -> list[str]:
    """Errors for a label value (``IsLabelValue``); an empty list when the value is valid.

    A value is empty, or at most 63 characters of the same form as a key's name part.
    """
    if not isinstance(value, str):
        return _not_a_string(value)
    return list(_value_errors(str(value)))


@lru_cache(maxsize=4096)
def _value_errors(value: str) -> tuple[str, ...]:
    errors = []
    if _byte_length(value) > LABEL_VALUE_MAX_LENGTH:
        errors.append(_max_len_error(LABEL_VALUE_MAX_LENGTH))
    if value and not _NAME_RE.fullmatch(value):
        errors.append(_VALUE_MSG)
    return tuple(errors)


def is_valid_label_key(key: object) -> bool:
    """True when ``key`` is a syntactically valid label key."""
    return not label_key_errors(key)


def is_valid_label_value(value: object) -> bool:
    """True when ``value`` is a syntactically valid label value (the empty string is valid)."""
    return not label_value_errors(value)
