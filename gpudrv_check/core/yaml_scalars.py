"""Plain YAML scalars typed as Kubernetes' YAML decoder types them (sigs.k8s.io/yaml over
go-yaml v2: YAML 1.1 words for null and booleans, integers in Go's bases, floats, an integral
float as the JSON integer it becomes: `json_number`), for every
reader of the repo (read/yaml_docs.py, read/block_yaml.py) and for the text a Helm template
prints unquoted into a manifest (nvidia/upgrade.py): one resolver, so the two never differ.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

# the int range Kubernetes' YAML decoder (yaml.v2 ParseInt/ParseUint) keeps as an integer
INT_MIN, INT_MAX = -(2**63), 2**64 - 1

NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_TRUE = frozenset(("true", "True", "TRUE", "y", "Y", "yes", "Yes", "YES", "on", "On", "ON"))
_FALSE = frozenset(("false", "False", "FALSE", "n", "N", "no", "No", "NO", "off", "Off", "OFF"))
# the plain scalars that are not strings, and the first characters a number can have
_PLAIN = object()
_SPECIAL: dict[str, bool | None] = {
    **dict.fromkeys(NULLS),
    **dict.fromkeys(_TRUE, True),
    **dict.fromkeys(_FALSE, False),
}
_NUMBER_START = frozenset("0123456789-+.")
_INT_DEC = re.compile(r"[-+]?(?:0|[1-9][0-9_]*)\Z")
# go-yaml v2 strips "_" and calls strconv.ParseInt(text, 0, 64): Go's base prefixes 0b, 0o and
# 0x (either case, so plain `0o17` is the number 15) and a leading 0 for octal
_INT_OTHER = re.compile(r"[-+]?(?:0[bB][01_]+|0[oO][0-7_]+|0[xX][0-9a-fA-F_]+|0[0-7_]+)\Z")
_FLOAT = re.compile(
    r"[-+]?(?:\.[0-9]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?\Z"
    r"|[-+]?\.(?:inf|Inf|INF)\Z|\.(?:nan|NaN|NAN)\Z"
)


def json_number(number: float) -> int | float:
    """A float that go-yaml read as the API server reads it. sigs.k8s.io/yaml (`YAMLToJSON`,
    what kubectl, Flux, Argo CD and Helm read YAML with) hands go-yaml's float64 to
    encoding/json, which writes it in `'f'` notation from 1e-6 to 1e21: an integral float below
    1e21 arrives as an integer literal (`2.0`, `1e3`, `-0.0`: 2, 1000, 0), which an integer
    field takes (`replicas: 2.0` is two replicas). Others stay floats (`2.5`, `1e21`). An
    integer literal past 64 bits, which go-yaml also reads as a float, is not one of these: it
    stays the float (no field of the API takes it either way)."""
    if not (number.is_integer() and abs(number) < 1e21):
        return number
    # the digits encoding/json writes (the shortest that read back as the float, as `repr`
    # gives them), not the float's exact binary value: 1.152921504606847e18 is sent as
    # 1152921504606847000, not 1152921504606846976
    return int(Decimal(repr(number)))


def written_float(text: str) -> float | None:
    """The float a plain scalar's text spells when it spells one that `json_number` made an
    int (`2.0`, `1e3`), else None: what the tool's own files keep (`keep_written_floats`)."""
    if _INT_DEC.match(text) or _INT_OTHER.match(text) or not _FLOAT.match(text):
        return None
    try:
        number = float(text.replace("_", ""))
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def resolve_plain(text: str) -> Any:
    """Type of an unquoted scalar under YAML 1.1 as the Kubernetes decoder applies it."""
    special = _SPECIAL.get(text, _PLAIN)
    if special is not _PLAIN:
        return special
    if text[0] not in _NUMBER_START:
        return text
    if _INT_DEC.match(text):
        digits = text.replace("_", "")
        # beyond 64 bits yaml.v2 reads a float; int() would also refuse > 4300 digits
        if len(digits) <= 21:
            value = int(digits)
            if INT_MIN <= value <= INT_MAX:
                return value
        return float(digits)
    if _INT_OTHER.match(text):
        sign = -1 if text[0] == "-" else 1
        body = text.lstrip("+-").replace("_", "").lower()
        if body in ("0b", "0o", "0x"):
            return text  # a prefix without digits: ParseInt fails, go-yaml keeps the string
        if body.startswith("0b"):
            value = sign * int(body[2:], 2)
        elif body.startswith("0x"):
            value = sign * int(body[2:], 16)
        elif body.startswith("0o"):
            value = sign * int(body[2:], 8)
        else:
            value = sign * int(body, 8)
        return value if INT_MIN <= value <= INT_MAX else text
    if _FLOAT.match(text):
        try:
            number = float(text.replace("_", ""))
        except ValueError:
            return text
        # strconv.ParseFloat refuses `1e400` (out of range): go-yaml keeps the string
        return json_number(number) if math.isfinite(number) else text
    return text
