"""Files shipped with the tool (`schemas/`, `policies/`), installed or run from a checkout."""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # importlib.abc.Traversable is deprecated from 3.12 on
    from importlib.abc import Traversable


@cache
def resource_dir(name: str) -> Traversable:
    """`schemas` or `policies`: in the package when installed, at the top of a checkout."""
    packaged = resources.files("gpudrv_check").joinpath(name)
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / name


def read_resource(name: str, *parts: str) -> bytes:
    node = resource_dir(name)
    for part in parts:
        node = node.joinpath(part)
    return node.read_bytes()
