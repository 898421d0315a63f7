"""The validated config, remembered by the bytes it was read from: the `config-*` entry.

A `check` that the whole-result cache answers (engine/cache/inputs.py) still needs the config
to name its key: the exclusions that list the files, the matrix, inventories and policies it
digests, the limits, and the validated config itself (`Config.dump_json`). Validating it
means importing pydantic and building the config models, about half of such a run (a warm
check of the 1k benchmark corpus: 0.12 s CPU with it, 0.05 s without; README, Performance).
So the first run that validates a config stores what the key reads of it, under the
digest of everything validation depends on: where the config came from and its bytes
(read/config_file.py `find_config`), the flags that override it (`--operator-version`,
`--fail-on`) and, through the entry's header, the tool version (which fixes the defaults, the
built-in rules `rules:` must name and the models). A later run with the same config bytes takes
that, without pydantic; any other config is validated as before. The entry also holds the
validated values whole (core/validated.py `dump`) and the keys the file wrote: a run the key
does not answer (a file changed) rebuilds its config from them (read/config.py `parse_config`,
`known`), still without pydantic; positions come from the file, read again.

Only a config that validated is stored (an error is raised before), and a path of the key that
fails later (an exclusion the matcher cannot read, a `policies:` entry gone) asks the view for
its error: the view validates the config then, and the error is the one a fresh run gives, at
its line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gpudrv_check.read.config_file import ConfigError, FoundConfig

if TYPE_CHECKING:
    from gpudrv_check.engine.cache.store import Cache
    from gpudrv_check.read.config import Config

KIND = "config"

#: the fields of the config the whole-result key reads, with the types a valid value has
SCALARS: tuple[tuple[str, type | tuple[type, ...]], ...] = (
    ("fail_on", str),
    ("matrix", (str, type(None))),
    ("gitignore", bool),
    ("max_file_bytes", int),
    ("max_total_bytes", int),
    ("max_inventory_bytes", int),
)
LISTS = ("inventory", "exclude", "default_exclude", "policies")
_FAIL_ON = frozenset(("error", "warning", "info", "never"))


class ClusterView:
    """What the key reads of one cluster's settings: its own inventory and matrix."""

    __slots__ = ("inventory", "matrix")

    def __init__(self, inventory: list[str], matrix: str | None) -> None:
        self.inventory = inventory
        self.matrix = matrix


class ConfigView:
    """A validated config as the key reads it (check.py `_result_cache`): the same attributes,
    `dump_json` the text the validated config gave, and `error` a ConfigError at the
    config's key, from the config validated again (positions are not remembered)."""

    def __init__(self, value: tuple, full: Any) -> None:
        dump, scalars, lists, clusters, plain, written = value
        self.dump: str = dump
        # the validated values and the keys the file wrote, to rebuild the config from
        # without pydantic (read/config.py `parse_config`, `known`)
        self.known: tuple[dict, list[str]] = (plain, written)
        for (name, _), item in zip(SCALARS, scalars, strict=True):
            setattr(self, name, item)
        for name, item in zip(LISTS, lists, strict=True):
            setattr(self, name, item)
        self.clusters = {name: ClusterView(inv, matrix) for name, inv, matrix in clusters}
        self._full = full

    def dump_json(self) -> str:
        return self.dump

    def error(self, message: str, *path: str | int) -> ConfigError:
        return self._full().error(message, *path)

    error_at = error


def snapshot(config: Config) -> tuple:
    """What `ConfigView` needs of a validated config, as builtin values (marshal), and the
    config's validated values whole (core/validated.py `dump`)."""
    from gpudrv_check.core.validated import dump

    return (
        config.dump_json(),
        tuple(getattr(config, name) for name, _ in SCALARS),
        tuple(list(getattr(config, name)) for name in LISTS),
        tuple(
            (name, list(settings.inventory), settings.matrix)
            for name, settings in sorted(config.clusters.items())
        ),
        dump(config),
        sorted(config.written),
    )


def _strings(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def valid_snapshot(value: Any) -> bool:
    """The shape `snapshot` gives, with every value of its field's type."""
    if type(value) is not tuple or len(value) != 6:
        return False
    dump, scalars, lists, clusters, plain, written = value
    if type(plain) is not dict or not _strings(written):
        return False
    if type(dump) is not str or type(scalars) is not tuple or len(scalars) != len(SCALARS):
        return False
    for (_, kind), item in zip(SCALARS, scalars, strict=True):
        if not isinstance(item, kind):
            return False
        if kind is int and (type(item) is bool or not isinstance(item, int) or item <= 0):
            return False
    if scalars[0] not in _FAIL_ON:
        return False
    if type(lists) is not tuple or len(lists) != len(LISTS) or not all(map(_strings, lists)):
        return False
    if type(clusters) is not tuple:
        return False
    return all(
        type(entry) is tuple
        and len(entry) == 3
        and type(entry[0]) is str
        and _strings(entry[1])
        and (entry[2] is None or type(entry[2]) is str)
        for entry in clusters
    )


def snapshot_key(found: FoundConfig, overrides: tuple[str | None, ...]) -> str:
    """The digest of what validating this config depends on, besides the tool version:
    `overrides` are the flags that change it (`--operator-version`, `--fail-on`)."""
    from gpudrv_check.engine.cache.store import digest

    return digest(found.kind, found.shown, found.raw, *overrides)


def keyed_config(
    found: FoundConfig,
    overrides: tuple[str | None, ...],
    cache: Cache,
    name: str,
    validate: Callable[[], Config],
) -> tuple[Any, Callable[[], None]]:
    """The config found, validated with the flags' `overrides` (cli/commands/common.py
    `repo_config`, which `validate` calls): a `ConfigView` when the same config was validated
    before under entry `name` (by a run of this tool version, with the same bytes and flags),
    else the `Config` that `validate` gives now; and what remembers the latter, to be called
    once nothing the key reads of it failed (a run that stops with a usage error writes no
    cache, and says nothing of one it could not use)."""
    key = snapshot_key(found, overrides)
    known = cache.load(KIND, name, key, valid=valid_snapshot, quiet=True)
    if known is not None:
        return ConfigView(known, validate), _nothing
    config = validate()
    return config, lambda: cache.store(KIND, name, key, snapshot(config))


def _nothing() -> None:
    return None
