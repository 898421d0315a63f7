"""Files shipped with the tool (`schemas/`, `policies/`), installed or run from a checkout."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # importlib.abc.Traversable is deprecated from 3.12 on
    from importlib.abc import Traversable


@cache
def package_dir() -> Traversable:
    """The gpudrv_check package's folder: on disk, what `importlib.resources.files` gives
    for it, found without importing that (zipfile and more: a tenth of a small repo's
    imports); a package in an archive is asked through it."""
    here = Path(__file__).resolve().parents[1]
    if here.is_dir():
        return here
    from importlib import resources

    return resources.files("gpudrv_check")


@cache
def resource_dir(name: str) -> Traversable:
    """`schemas` or `policies`: in the package when installed, at the top of a checkout."""
    packaged = package_dir().joinpath(name)
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / name


def read_resource(name: str, *parts: str) -> bytes:
    node = resource_dir(name)
    for part in parts:
        node = node.joinpath(part)
    return node.read_bytes()
