"""Where a repo's config comes from, and its errors: no pydantic here.

`find_config` finds the config file a run uses and reads its bytes (read/config.py validates
them into the `Config` model). A run the whole-result cache answers reads the config this far
only: the validated config is remembered by these bytes (engine/cache/config.py), so pydantic
and the config models, a third of such a run, are not even imported.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gpudrv_check.core.records import record

CONFIG_FILE = ".gpudrv-check.yaml"
DEFAULT_MATRIX = "support-matrix.csv"
DEFAULT_MAX_FILE_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_INVENTORY_BYTES = 256 * 1024 * 1024
# manifest bytes one run reads in all (a parsed document costs tens of times its size)
DEFAULT_MAX_TOTAL_BYTES = 512 * 1024 * 1024
#: a baseline of a large repo holds tens of thousands of findings (~300 bytes each): the
#: limit `--baseline` is read with (engine/baseline.py), here with the other limits so the
#: whole-result key reads it with the same one and imports no pydantic
MAX_BASELINE_BYTES = 64 * 1024 * 1024


class ConfigError(Exception):
    """A usage or configuration error: the run cannot start (exit 2)."""

    def __init__(self, message: str, file: str | None = None, line: int = 0, column: int = 0):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.column = column

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}:{self.column}: " if self.line else f"{self.file}: "
        return f"{where}{self.message}"


@record(frozen=True)
class FoundConfig:
    """The config a run uses: `kind` is "explicit" (`--config FILE`, YAML), "toml" (`--config
    FILE.toml`: its [tool.gpudrv-check] table), "yaml" (.gpudrv-check.yaml), "pyproject"
    (pyproject.toml, which may have no section for us) or "default" (no file: the defaults);
    `shown` names it in messages; `raw` its bytes."""

    kind: str
    shown: str | None = None
    raw: bytes | None = None


def inside_root(root: Path, rel: str) -> Path | None:
    """`root/rel` with links resolved, when it stays inside the root; else None.

    Every path the repo itself names (its config file, `matrix:`, …) goes through this, so a
    link or `../` in a pull request cannot make the checker read, and echo into its report,
    a file outside the repo.
    """
    if not rel or os.path.isabs(rel) or "\x00" in rel:
        return None
    try:
        real = (root / rel).resolve()
        real.relative_to(root.resolve())
    except (OSError, ValueError, RuntimeError):  # RuntimeError: a link loop on Python 3.10
        return None
    return real


def find_config(root: Path, explicit: str | None = None, source: Any = None) -> FoundConfig:
    """The config for a repo root: `--config FILE`, else `.gpudrv-check.yaml`, else pyproject.

    `source` (a `gpudrv_check.read.source.Source`) reads the repo's own config files, so a run over
    a git revision uses the config of that revision; `--config FILE` is always read from disk.
    """
    if explicit is not None:
        from gpudrv_check.read.safe_io import is_file

        path = Path(explicit)
        if not is_file(path):
            raise ConfigError(f"config file not found: {explicit}")
        raw = _read_file(path, explicit, root)
        # a TOML file is read as pyproject.toml is: its [tool.gpudrv-check] table
        return FoundConfig("toml" if path.suffix == ".toml" else "explicit", explicit, raw)
    if source is None:
        from gpudrv_check.read.tree import WorkingTree

        source = WorkingTree(root)
    if _repo_config_exists(root, source, CONFIG_FILE):
        return FoundConfig("yaml", CONFIG_FILE, _read(source, CONFIG_FILE))
    if _repo_config_exists(root, source, "pyproject.toml"):
        return FoundConfig("pyproject", "pyproject.toml", _read(source, "pyproject.toml"))
    return FoundConfig("default")


def _repo_config_exists(root: Path, source: Any, name: str) -> bool:
    """Whether the repo has this config file; a link leaving the root is refused, not read."""
    from gpudrv_check.read.safe_io import is_file, lexists
    from gpudrv_check.read.tree import WorkingTree

    if isinstance(source, WorkingTree):
        path = root / name
        if not lexists(path):
            return False
        if inside_root(root, name) is None:
            raise ConfigError(f"{name} is a link that leaves the repo root; not read", name)
        return is_file(path)
    return source.exists(name)


def _read_file(path: Path, shown: str, root: Path) -> bytes:
    from gpudrv_check.read.safe_io import TooLarge, read_named

    try:
        return read_named(path, DEFAULT_MAX_FILE_BYTES, root)
    except TooLarge:
        raise ConfigError(
            f"config is over {DEFAULT_MAX_FILE_BYTES} bytes; not read", shown
        ) from None
    except OSError as err:
        raise ConfigError(f"cannot read config: {err.strerror}", shown) from None


def _read(source: Any, rel: str) -> bytes:
    from gpudrv_check.read.safe_io import TooLarge

    try:
        return source.read(rel, DEFAULT_MAX_FILE_BYTES, follow_inside=True)
    except TooLarge:
        raise ConfigError(f"config is over {DEFAULT_MAX_FILE_BYTES} bytes; not read", rel) from None
    except OSError as err:
        raise ConfigError(f"cannot read config: {err.strerror}", rel) from None


def operator_version_error(value: str) -> str:
    """Why an operator version with a number past int64 names no release."""
    from gpudrv_check.core.finding import quoted

    return (
        f"operator version {quoted(value)} has a number larger than any release (at most 19 digits)"
    )


def operator_version_problem(value: str) -> str | None:
    """Why an operator version (`operator.version`, --operator-version) names no release, or
    None: one that names none was read as the newest release, silently ("banana")."""
    from gpudrv_check.core.finding import quoted
    from gpudrv_check.k8s.numbers import oversized_number
    from gpudrv_check.nvidia.driver_image import operator_release

    if oversized_number(value) is not None:
        return operator_version_error(value)
    if operator_release(value) is None:
        return (
            f"operator version {quoted(value)} names no GPU Operator release (as v25.10.0 or "
            "25.3.1); leave it unset for the newest"
        )
    return None
