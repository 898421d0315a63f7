"""Configuration: the dataclasses of `.gpudrv-check.yaml`, validated by pydantic
(core/validated.py), with errors that point at file:line (where the config comes from:
read/config_file.py)."""

from __future__ import annotations

import re
import sys
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gpudrv_check.core.finding import Severity
from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.core.records import record
from gpudrv_check.core.validated import build, dump, internal, plain_validate, spec, validate
from gpudrv_check.read.config_file import (  # noqa: F401 - their home before; imported from here
    CONFIG_FILE,
    DEFAULT_MATRIX,
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_INVENTORY_BYTES,
    DEFAULT_MAX_TOTAL_BYTES,
    ConfigError,
    FoundConfig,
    find_config,
    inside_root,
    operator_version_error,
    operator_version_problem,
)
from gpudrv_check.read.exclude import DEFAULT_EXCLUDE

if TYPE_CHECKING:
    from pydantic import ValidationError


def _one_or_many(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


def _names_a_release(value: str | None) -> str | None:
    problem = operator_version_problem(value) if value is not None else None
    if problem is not None:
        raise ValueError(problem)
    return value


# Each section is a dataclass that pydantic validates when a person wrote it (core/validated.py):
# strict, so a value of the wrong type is an error, never coerced (`max_file_bytes: true` read
# as 1, `enabled: "off"` as true; YAML and TOML give each value its own type), and closed to
# unknown keys. A config validated by an earlier run is rebuilt without pydantic.


@record(kw_only=True)
class LabelKeys:
    """Node label keys the driver tag is computed from (NFD and GFD defaults)."""

    driver_branch: list[str] = field(
        default_factory=lambda: [
            "nvidia.com/cuda.driver-version.major",
            "nvidia.com/cuda.driver.major",
        ],
        metadata=spec(before=_one_or_many),
    )
    kernel: str = "feature.node.kubernetes.io/kernel-version.full"
    os_id: str = "feature.node.kubernetes.io/system-os_release.ID"
    os_version_id: str = "feature.node.kubernetes.io/system-os_release.VERSION_ID"


@record(kw_only=True)
class OperatorSettings:
    """What the repo cannot tell us about the GPU Operator."""

    # the operator release; selects the OS-tag rule. None: the newest behaviour
    version: str | None = field(default=None, metadata=spec(after=_names_a_release))


@record(kw_only=True)
class ClusterSettings:
    """One cluster of a repo that holds several (docs/clusters.md)."""

    # repo paths (folders or files) whose manifests belong to the cluster
    paths: list[str] = field(metadata=spec(min_length=1))
    # extra node inventory files of this cluster (besides the nodes found in its paths)
    inventory: list[str] = field(default_factory=list)
    # its own support matrix; None: the repo's (`matrix:`)
    matrix: str | None = None
    # its own operator settings; None: the repo's (`operator:`)
    operator: OperatorSettings | None = None


#: admission plugins whose effect on pods the checker reproduces (`cluster.admission`)
ADMISSION_PLUGINS = ("ExtendedResourceToleration",)


@record(kw_only=True)
class ApiServerSettings:
    """What the repo cannot tell us about the cluster's API server."""

    # admission plugins the API server runs beyond the defaults, e.g. ExtendedResourceToleration
    # (on by default on GKE and EKS): it adds a toleration for each extended resource a pod
    # requests (kubernetes plugin/pkg/admission/extendedresourcetoleration)
    admission: list[Literal["ExtendedResourceToleration"]] = field(default_factory=list)


@record(kw_only=True)
class RuleSettings:
    enabled: bool = True
    # an enum: strict would take only a Severity, never the text YAML gives
    severity: Severity | None = field(default=None, metadata=spec(strict=False))
    params: dict[str, Any] = field(default_factory=dict)


@record(kw_only=True)
class Exemption:
    """Findings of `rule` on matching objects are suppressed (for objects you cannot annotate).

    `kind`, `namespace`, `name` and `file` are globs (fnmatch, case-sensitive); an unset one
    matches everything. `rule` is one rule or a list, by id or name; `*` means every rule.
    """

    # an exemption naming no rule would suppress nothing, silently: a usage error
    rule: list[str] = field(metadata=spec(min_length=1, before=_one_or_many))
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    file: str | None = None
    reason: str | None = None


@record(kw_only=True)
class Config:
    """`.gpudrv-check.yaml` (or `[tool.gpudrv-check]` in pyproject.toml)."""

    matrix: str | None = DEFAULT_MATRIX
    # extra node inventory files, always read (also when manifests come from stdin)
    inventory: list[str] = field(default_factory=list)
    # the clusters of a repo that holds several; {}: discovered (Flux, Argo CD) or one
    clusters: dict[str, ClusterSettings] = field(default_factory=dict)
    # gitignore-style patterns (read/exclude.py), after the defaults: `!DIR/` takes one back
    exclude: list[str] = field(default_factory=list)
    # folders left out unless this says otherwise (`[]`: none)
    default_exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    # honour .gitignore files in a working tree
    gitignore: bool = True
    max_file_bytes: int = field(default=DEFAULT_MAX_FILE_BYTES, metadata=spec(gt=0))
    max_total_bytes: int = field(default=DEFAULT_MAX_TOTAL_BYTES, metadata=spec(gt=0))
    # inventory files (`inventory:`, --inventory): a 20,000-node `kubectl get nodes` export is
    # 12 MB, over max_file_bytes, and a fleet must never be read as "no nodes"
    max_inventory_bytes: int = field(default=DEFAULT_MAX_INVENTORY_BYTES, metadata=spec(gt=0))
    fail_on: Literal["error", "warning", "info", "never"] = "error"
    operator: OperatorSettings = field(default_factory=OperatorSettings)
    labels: LabelKeys = field(default_factory=LabelKeys)
    rules: dict[str, RuleSettings] = field(default_factory=dict)
    # extra rows for the CUDA table (policies/cuda.yaml format)
    cuda: dict[str, Any] = field(default_factory=dict)
    # extra workload kinds (policies/workloads.yaml format, schemas/workloads.schema.json)
    workloads: dict[str, Any] = field(default_factory=dict)
    cluster: ApiServerSettings = field(default_factory=ApiServerSettings)
    # custom declarative policies: files or folders inside the repo (schemas/policy.schema.json)
    policies: list[str] = field(default_factory=list)
    exemptions: list[Exemption] = field(default_factory=list)

    # where the config came from, for messages
    source: str | None = field(default=None, compare=False, metadata=internal())
    # the located data it was read from, so later checks can point at a line
    _data: Any = field(default=None, compare=False, repr=False, metadata=internal())
    # the text of a TOML config (tomllib keeps no positions: they are searched for in it)
    _toml: str | None = field(default=None, compare=False, repr=False, metadata=internal())
    # the keys the file wrote (pydantic's `model_fields_set`): a matrix named by the config
    # must exist, the default one may not
    written: frozenset[str] = field(
        default_factory=frozenset, compare=False, repr=False, metadata=internal()
    )

    def position(self, *path: str | int) -> tuple[int, int]:
        """(line, column) of the deepest key along `path` in the config file; (0, 0) if unknown."""
        from gpudrv_check.core.located import locate

        if self._toml is not None:
            return _toml_position(self._toml, path)
        if self._data is None or not hasattr(self._data, "pos"):
            return (0, 0)
        return locate(self._data, path)

    def error(self, message: str, *path: str | int) -> ConfigError:
        """A ConfigError pointing at `path` in the config file."""
        line, column = self.position(*path)
        return ConfigError(message, self.source, line, column)

    def error_at(self, message: str, *path: str | int) -> ConfigError:
        """Same as `error`: a ConfigError at the key `path` (its file only, when unknown)."""
        return self.error(message, *path)

    def with_(self, **update: Any) -> Config:
        """A copy with these fields replaced (the keys it names count as written)."""
        return replace(self, written=self.written | frozenset(update), **update)

    def dump_json(self) -> str:
        """The validated values as JSON (what the whole-result cache key holds of them)."""
        import json

        return json.dumps(dump(self), separators=(",", ":"), default=str)


def _format_loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(top level)"


#: what a value of each type pydantic checks must be, in the words of a YAML reader
_EXPECTED = {
    "int_type": "an integer",
    "bool_type": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "none_required": "null",
}


def _problem(error: Any) -> str:
    """pydantic's complaint in the project's own words: what the key must hold and what it
    holds instead, never a model's class name ("instance of RuleSettings")."""
    from gpudrv_check.core.finding import quoted

    kind, ctx, value = error.get("type", ""), error.get("ctx") or {}, error.get("input")
    if kind in _EXPECTED:
        return f"must be {_EXPECTED[kind]}, not {described(value)}"
    if kind in ("literal_error", "enum"):
        return f"must be {ctx.get('expected')}, not {described(value)}"
    if kind == "too_short":
        return "must not be empty"
    if kind == "greater_than":
        return f"must be greater than {ctx.get('gt')}, not {quoted(value)}"
    if kind == "value_error":  # our own validators' messages
        return str(ctx.get("error") or error.get("msg"))
    return str(error.get("msg"))


def described(value: Any) -> str:
    """A value as a message names it: its type, and a short text quoted."""
    from gpudrv_check.core.finding import quoted

    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        # YAML reads an integer past 64 bits as a float: say it as written, not as 1e+23
        if value.is_integer() and 2**63 <= abs(value) < 1e300:
            return f"the number {int(value)}"
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {quoted(value)}"
    dates = sys.modules.get("datetime")  # TOML dates and times (tomllib imports the module)
    if dates is not None and isinstance(value, (dates.date, dates.time)):
        return f"the {type(value).__name__} {value.isoformat()}"
    if isinstance(value, list):
        return "a list"
    return "a mapping" if isinstance(value, dict) else f"a {type(value).__name__}"


def _error_from_validation(err: ValidationError, data: Any, file: str) -> ConfigError:
    from gpudrv_check.core.located import locate

    first = err.errors()[0]
    loc = tuple(first.get("loc", ()))
    line, col = locate(data, loc) if data is not None else (0, 0)
    if first.get("type") == "extra_forbidden":
        message = f"unknown key {_format_loc(loc)!r}"
    elif first.get("type") == "missing":  # at the mapping that should hold it
        message = f"{_format_loc(loc[:-1])}: key {str(loc[-1])!r} is required"
    else:
        message = f"{_format_loc(loc)}: {_problem(first)}"
    more = len(err.errors()) - 1
    if more:
        message += f" (and {more} more)"
    error = ConfigError(message, file, line, col)
    error.path = loc  # type: ignore[attr-defined]  # for a file read without positions (TOML)
    return error


def parse_config(data: Any, file: str, known: Known | None = None) -> Config:
    """The config of `data` (read from `file`), validated by pydantic, or without it when
    pydantic would take every value as it is (core/validated.py `plain_validate`); or, with
    `known`, the values and written keys an earlier run validated the same bytes to
    (engine/cache/config.py), rebuilt without pydantic. Positions come from `data` either
    way."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError("the config must be a mapping", file, 1, 1)
    rebuilt = _rebuilt(known) if known is not None else None
    plain = plain_validate(Config, data) if rebuilt is None else None
    if rebuilt is not None and known is not None:
        config, written = rebuilt, frozenset(known[1])
    elif plain is not None:
        config, written = plain
    else:
        from pydantic import ValidationError

        try:
            config, written = validate(Config, data)
        except ValidationError as err:
            raise _error_from_validation(err, data, file) from None
    config.source = file
    config._data = data
    config.written = written
    _check_scheduler_version(config)
    return config


#: what an earlier run validated a config to: its values (core/validated.py `dump`) and the
#: keys its file wrote
Known = tuple[dict, list[str]]


def _rebuilt(known: Known) -> Config | None:
    """The config of values validated before, or None when they are not a config's (an entry
    of another layout: the config is validated again)."""
    try:
        return build(Config, known[0])
    except (TypeError, ValueError, KeyError):
        return None


def _check_scheduler_version(config: Config) -> None:
    """GPU010's `scheduler_version` names a kube-scheduler release: one that names none was
    read as the current one, silently. (Its type is checked with the other parameters.)"""
    from gpudrv_check.core.finding import quoted
    from gpudrv_check.k8s.scheduler import scheduler_release
    from gpudrv_check.read.policy import builtin, find_rule

    for key, settings in config.rules.items():
        value = settings.params.get("scheduler_version")
        if not isinstance(value, str) or scheduler_release(value) is not None:
            continue
        rule = find_rule(key)
        if rule is not None and rule.id == builtin("workload-unschedulable").id:
            raise config.error(
                f"rules: {rule.id} parameter 'scheduler_version' {quoted(value)} names no "
                'kube-scheduler release (as "1.35" or "v1.33.2")',
                "rules",
                key,
                "params",
                "scheduler_version",
            )


def load_config(root: Path, explicit: str | None = None, source: Any = None) -> Config:
    """The config for a repo root (read/config_file.py `find_config`), validated."""
    return parse_found(find_config(root, explicit, source))


def parse_found(found: FoundConfig, known: Known | None = None) -> Config:
    """The `Config` of a config file found (its defaults when there is none), or a
    ConfigError at the offending line; `known`: see `parse_config`."""
    if found.kind == "default" or found.raw is None:
        return Config()
    if found.kind not in ("pyproject", "toml"):
        return _parse_yaml_config(found.raw, found.shown or CONFIG_FILE, known)
    shown = found.shown or "pyproject.toml"
    text = _toml_text(found.raw, shown)
    doc = _toml_doc(text, shown)
    tool = doc.get("tool")  # a table by the pyproject spec; anything else holds no section
    section = tool.get("gpudrv-check") if isinstance(tool, dict) else None
    if section is None and found.kind == "toml":
        # named with --config: a file without our table is a mistake, not "the defaults"
        raise ConfigError("no [tool.gpudrv-check] table in this TOML file", shown)
    if section is None:
        return Config()
    if not isinstance(section, dict):
        raise ConfigError("tool.gpudrv-check must be a table", shown, *_toml_position(text, ()))
    try:
        config = parse_config(section, shown, known)
    except ConfigError as err:
        if hasattr(err, "path"):  # a validation error: the TOML data holds no positions
            err.line, err.column = _toml_position(text, err.path)
        raise
    config._toml = text
    return config


def _toml_text(raw: bytes, shown: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"not UTF-8 text (byte {err.start})", shown) from None


def _toml_doc(text: str, shown: str) -> dict[str, Any]:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef, unused-ignore]  # used on 3.11+
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise _toml_error(err, shown) from None
    except RecursionError:
        raise ConfigError(f"{shown} nests too deep to read", shown) from None
    except ValueError as err:  # tomllib's int(): more than 4300 digits
        reason = str(err).split(":")[0]
        raise ConfigError(f"cannot read a value: {reason}", shown) from None


#: a table header of ours, `[tool.gpudrv-check.rules]` or `[[tool.gpudrv-check.exemptions]]`
_TOML_HEADER = lazy_compile(
    r"\s*(\[\[?)\s*tool\s*\.\s*(?:gpudrv-check|\"gpudrv-check\")((?:\s*\.\s*[A-Za-z0-9_-]+)*)"
    r"\s*\]\]?\s*(?:#.*)?$"
)
_TOML_OTHER_HEADER = lazy_compile(r"\s*\[")
_TOML_KEY = lazy_compile(r"(\s*)([A-Za-z0-9_-]+|\"[^\"\\]*\")\s*=")


def _toml_position(text: str, path: tuple) -> tuple[int, int]:
    """Line and column of the key `path` names in our table, found in the text (tomllib keeps
    no positions): the deepest part of the path that one header or `key =` line alone
    defines; (0, 0), no position, when the text does not say for sure (a multi-line string,
    dotted keys, a key defined twice)."""
    if '"""' in text or "'''" in text:
        return (0, 0)
    seen: dict[tuple, list[tuple[int, int]]] = {}
    table: tuple | None = None  # the table the lines are in, relative to ours; None: not ours
    arrays: dict[tuple, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        header = _TOML_HEADER.match(line)
        if header:
            parts = tuple(p.strip() for p in header.group(2).split(".") if p.strip())
            if header.group(1) == "[[":
                arrays[parts] = arrays.get(parts, -1) + 1
                parts = (*parts, arrays[parts])
            table = parts
            seen.setdefault(parts, []).append((number, line.index("[") + 1))
        elif _TOML_OTHER_HEADER.match(line):
            table = None
        elif table is not None:
            key = _TOML_KEY.match(line)
            if key:
                name = key.group(2).strip('"')
                seen.setdefault((*table, name), []).append((number, len(key.group(1)) + 1))
    for depth in range(len(path), 0, -1):
        found = seen.get(tuple(path[:depth]))
        if found is not None:
            return found[0] if len(found) == 1 else (0, 0)
    return (0, 0)


def _toml_error(err: Exception, shown: str = "pyproject.toml") -> ConfigError:
    """A TOML syntax error at its line and column (tomllib puts them in the message)."""
    message = str(err)
    found = re.search(r"\(at line (\d+), column (\d+)\)", message)
    if found is None:
        return ConfigError(f"TOML syntax error: {message}", shown)
    message = message[: found.start()].strip()
    return ConfigError(
        f"TOML syntax error: {message}", shown, int(found.group(1)), int(found.group(2))
    )


def _parse_yaml_config(raw: bytes, shown: str, known: Known | None = None) -> Config:
    from gpudrv_check.read.text import decode_text
    from gpudrv_check.read.yaml_docs import keep_written_floats, parse_text

    text, problem = decode_text(raw)
    if problem is not None:
        raise ConfigError(problem.message, shown, problem.line, problem.column)
    parsed = parse_text(text or "")
    for p in parsed.problems:
        # the loader's wording speaks of Kubernetes objects; keep what concerns a config
        raise ConfigError(p.message.split("; the API server")[0], shown, p.line, p.column)
    if len(parsed.docs) > 1:
        raise ConfigError("the config must be a single YAML document", shown, 1, 1)
    data = parsed.docs[0].data if parsed.docs else None
    keep_written_floats(data)  # the config is the tool's own: `1.0` is no count
    return parse_config(data, shown, known)
