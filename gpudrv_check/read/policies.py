"""Custom policy files → CustomPolicy models, or a ConfigError at the offending line.

A custom policy is configuration: a malformed one stops the run (exit 2) with
`file:line:col: message`, rather than becoming a finding, so a broken policy can never pass
silently (with `--fail-on never` a finding would).
"""

from __future__ import annotations

import json
import os
import string
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpudrv_check.core.located import LMap, locate, schema_error_path
from gpudrv_check.read.config_file import ConfigError
from gpudrv_check.read.safe_io import is_dir, is_file, read_inside
from gpudrv_check.read.tree import MANIFEST_SUFFIXES, inside_root

if TYPE_CHECKING:  # (`policy_files` is asked by a run the whole-result cache answers: no pydantic)
    from gpudrv_check.read.config import Config
    from gpudrv_check.read.custom_policy import CustomPolicy

RESERVED_PREFIX = "GPU"
PLACEHOLDERS = frozenset(("kind", "name", "namespace", "path", "error"))


@lru_cache(maxsize=1)
def _file_validator() -> Any:
    from jsonschema import Draft202012Validator

    from gpudrv_check.core.resources import read_resource

    return Draft202012Validator(json.loads(read_resource("schemas", "policy.schema.json")))


def policy_files(root: Path, config: Config, source: Any = None) -> list[str]:
    """The files `policies:` names (folders are walked), as sorted POSIX paths under root.

    `source` (a `gpudrv_check.read.source.Source`) lists them instead of the disk when it is not
    the working tree: a git revision's policies are those committed at that revision."""
    if source is not None and hasattr(source, "files_under"):
        return _source_policy_files(config, source)
    found: set[str] = set()
    for index, entry in enumerate(config.policies):
        if os.path.isabs(entry) or not inside_root(root, entry):
            raise config.error(
                f"policies: {entry!r} leaves the repo root; config paths stay inside the repo",
                "policies",
                index,
            )
        path = root / entry
        if is_file(path):
            found.add(Path(os.path.relpath(path, root)).as_posix())
        elif is_dir(path):
            for dirpath, dirnames, filenames in os.walk(
                path, onerror=_unreadable(root, config, index), followlinks=False
            ):
                dirnames[:] = sorted(d for d in dirnames if not _hidden(d))
                for name in filenames:
                    full = os.path.join(dirpath, name)
                    if _policy_name(name) and not os.path.islink(full):
                        found.add(Path(os.path.relpath(full, root)).as_posix())
        else:
            raise config.error(f"policies: {entry!r} not found", "policies", index)
    return sorted(found)


def _hidden(name: str) -> bool:
    """A dot-name below a `policies:` folder (`.git/`, an editor's `.#p.yaml` or `.p.yaml.swp`)
    is not read, from the disk, the index or a revision alike; the folder or file an entry
    names is read whatever its name (`policies: [.policies/]`)."""
    return name.startswith(".")


def _policy_name(path: str) -> bool:
    return path.endswith(MANIFEST_SUFFIXES) and not _hidden(path.rsplit("/", 1)[-1])


def _unreadable(root: Path, config: Config, index: int):
    """os.walk's error handler for a `policies:` folder: a folder that cannot be listed is a
    usage error that names it, never a silent loss of the policies in it."""

    def fail(err: OSError) -> None:
        where = Path(os.path.relpath(err.filename, root)).as_posix() if err.filename else "?"
        raise config.error(
            f"policies: cannot read folder {where!r}: {err.strerror or type(err).__name__}",
            "policies",
            index,
        )

    return fail


def _source_policy_files(config: Config, source: Any) -> list[str]:
    from gpudrv_check.read.source import clean_rel

    found: set[str] = set()
    for index, entry in enumerate(config.policies):
        rel = clean_rel(entry.rstrip("/")) if entry.rstrip("/") not in ("", ".") else ""
        if rel is None:
            raise config.error(
                f"policies: {entry!r} leaves the repo root; config paths stay inside the repo",
                "policies",
                index,
            )
        if rel and source.exists(rel):
            found.add(rel)
            continue
        skip = len(rel) + 1 if rel else 0  # the entry itself may be a dot-name
        under = [
            f
            for f in source.files_under(rel)
            if _policy_name(f) and not any(_hidden(p) for p in f[skip:].split("/"))
        ]
        if not under:
            raise config.error(f"policies: {entry!r} not found", "policies", index)
        found.update(under)
    return sorted(found)


def _error(rel: str, data: Any, path: tuple, message: str) -> ConfigError:
    line, col = locate(data, path)
    return ConfigError(message, rel, line, col)


def _check_message(rel: str, data: LMap) -> None:
    try:
        fields = [
            (f, spec, conv)
            for _, f, spec, conv in string.Formatter().parse(data["message"])
            if f is not None
        ]
    except ValueError as err:
        raise _error(rel, data, ("message",), f"message: {err}") from None
    allowed = ", ".join("{" + p + "}" for p in sorted(PLACEHOLDERS))
    for name, spec, conv in fields:
        if name not in PLACEHOLDERS:
            raise _error(
                rel, data, ("message",), f"message: unknown placeholder {{{name}}} ({allowed})"
            )
        # a format spec or conversion is applied to text from the repo: `{name:d}` fails on
        # it, `{name:>100000000}` pads a message to 100 MB; placeholders are plain
        if spec or conv:
            extra = f"!{conv}" if conv else ""
            extra += f":{spec}" if spec else ""
            raise _error(
                rel,
                data,
                ("message",),
                f"message: {{{name}{extra}}} has a conversion or format spec; write {{{name}}} "
                f"(placeholders are {allowed}, inserted as they are)",
            )


def _remote_refs(node: Any, path: tuple = ()) -> Iterator[tuple]:
    """Paths of `$ref`s that leave the schema: resolving them would need the network."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                if not value.startswith("#"):
                    yield (*path, key)
            else:
                yield from _remote_refs(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _remote_refs(value, (*path, index))


def _check_assert(rel: str, data: LMap) -> None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    schema = data["assert"]
    for path in _remote_refs(schema):
        raise _error(
            rel,
            data,
            ("assert", *path),
            "assert: only local references (#/...) are allowed; the checker never goes to the "
            "network",
        )
    cls = validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as err:
        path = ("assert", *err.absolute_path)
        raise _error(rel, data, path, f"assert is not a valid JSON Schema: {err.message}") from None
    except RecursionError:
        raise _error(rel, data, ("assert",), "assert nests too deep to check") from None
    _check_local_refs(rel, data)
    _check_patterns(rel, data)


def _check_patterns(rel: str, data: LMap) -> None:
    """Every regular expression of the schema, refused when it can backtrack without bound
    (core/regex_guard.py): the checker runs it against strings from the repo."""
    from gpudrv_check.core.regex_guard import pattern_problem, schema_patterns

    for path, pattern in schema_patterns(data["assert"]):
        problem = pattern_problem(pattern)
        if problem is not None:
            raise _error(rel, data, ("assert", *path), f"assert: {problem}")


def _local_refs(node: Any, path: tuple = ()) -> Iterator[tuple[tuple, str]]:
    """(key path, target) of every `$ref`/`$dynamicRef`: the path of the schema holding it
    and the keyword itself."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                yield (*path, key), value
            else:
                yield from _local_refs(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _local_refs(value, (*path, index))


def _pointer(schema: Any, ref: str) -> tuple | None:
    """The key path a local reference (`#`, `#/a/b`, RFC 6901 escapes) names, or None."""
    from urllib.parse import unquote

    if ref == "#":
        return ()
    if not ref.startswith("#/"):
        return None
    node, path = schema, []
    for raw in ref[2:].split("/"):
        token = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            key: Any = token
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            key = int(token)
        else:
            return None
        node = node[key]
        path.append(key)
    return tuple(path)


def _check_local_refs(rel: str, data: LMap) -> None:
    """Every reference resolves inside the schema, and none leads back to itself (a cycle
    the validator would follow forever)."""
    schema = data["assert"]
    refs = list(_local_refs(schema))
    targets: list[tuple] = []
    for where, ref in refs:
        target = _pointer(schema, ref)
        if target is None:
            raise _error(
                rel,
                data,
                ("assert", *where),
                f"assert: reference {ref!r} does not resolve inside the schema (use #/path/to/it)",
            )
        targets.append(target)
    # a reference leads to every reference inside the schema it names (inner[:-1]: the
    # schema holding that reference)
    edges = {
        i: [j for j, (inner, _) in enumerate(refs) if inner[:-1][: len(targets[i])] == targets[i]]
        for i in range(len(refs))
    }
    for start in range(len(refs)):
        if _reaches(edges, start):
            where, ref = refs[start]
            raise _error(
                rel,
                data,
                ("assert", *where),
                f"assert: reference {ref!r} leads back to itself (a schema cannot include "
                "itself; write the nesting out to the depth you need)",
            )


def _reaches(edges: dict[int, list[int]], start: int) -> bool:
    seen: set[int] = set()
    stack = list(edges[start])
    while stack:
        node = stack.pop()
        if node == start:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(edges[node])
    return False


def parse_policy(rel: str, data: Any, doc_pos: tuple[int, int]) -> CustomPolicy:
    """One policy document; raises ConfigError at its first problem."""
    from gpudrv_check.k8s.labelselector import validate_label_selector

    if not isinstance(data, LMap):
        raise ConfigError(
            "a policy must be a mapping (see schemas/policy.schema.json)", rel, *doc_pos
        )
    errors = sorted(
        _file_validator().iter_errors(data),
        key=lambda e: (locate(data, schema_error_path(e)), e.message),
    )
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.absolute_path)
        message = first.message
        if first.validator == "additionalProperties":
            extra = schema_error_path(first)[-1]
            message = f"unknown key {extra!r}"
        elif where:
            message = f"{where}: {message}"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise _error(rel, data, schema_error_path(first), f"policy: {message}{more}")
    if data["id"].startswith(RESERVED_PREFIX):
        raise _error(
            rel, data, ("id",), f"id {data['id']!r}: the GPU prefix is reserved for built-in rules"
        )
    _check_message(rel, data)
    match = data.get("match") or {}
    selector = match.get("labelSelector")
    if selector is not None:
        problems = validate_label_selector(selector)
        if problems:
            first_problem = problems[0]
            raise _error(
                rel,
                data,
                ("match", "labelSelector", *first_problem.path),
                f"match.labelSelector: {first_problem.message}",
            )
    _check_assert(rel, data)
    line, _ = data.pos
    from gpudrv_check.read.custom_policy import CustomPolicy

    return CustomPolicy.model_validate({**data, "file": rel, "line": line})


def _check_unique(
    rel: str, data: LMap, policy: CustomPolicy, seen_ids: dict[str, str], taken: dict[str, str]
) -> None:
    """The policy's id and name name no other rule, in any case."""
    ident, name = policy.id.lower(), policy.name.lower()
    if ident in seen_ids:
        raise _error(rel, data, ("id",), f"id {policy.id} is already used at {seen_ids[ident]}")
    if ident in taken:
        raise _error(rel, data, ("id",), f"id {policy.id} is taken by {taken[ident]}")
    if name in taken and name != ident:  # its own id as its name names it alone
        raise _error(
            rel,
            data,
            ("name",),
            f"name {policy.name!r} is taken by {taken[name]}; `rules:` and exemptions take an "
            "id or a name in any case, so each must name one rule",
        )


def load_custom_policies(
    root: Path, config: Config, files: list[str], source: Any = None
) -> list[CustomPolicy]:
    """Every policy of `files`; ids and names must be unique, also against the built-in rules."""
    from gpudrv_check.read.policy import catalog
    from gpudrv_check.read.text import decode_text
    from gpudrv_check.read.yaml_docs import keep_written_floats, parse_text

    # `rules:`, exemptions and annotations take an id or a name in any case: each one, lower-
    # cased, may name one rule only (a policy named `org001` next to ORG001 would be either)
    taken: dict[str, str] = {}
    for rule in catalog().values():
        taken[rule.id.lower()] = taken[rule.name.lower()] = rule.id
    seen_ids: dict[str, str] = {}
    policies: list[CustomPolicy] = []
    for rel in files:
        try:
            if source is not None:
                raw = source.read(rel, config.max_file_bytes, follow_inside=True)
            else:
                raw = read_inside(root, rel, config.max_file_bytes)
        except OSError as err:
            raise ConfigError(f"cannot read policy: {err.strerror}", rel) from None
        text, problem = decode_text(raw)
        if problem is not None:
            raise ConfigError(problem.message, rel, problem.line, problem.column)
        parsed = parse_text(text or "")
        for p in parsed.problems:
            raise ConfigError(p.message, rel, p.line, p.column)
        for doc in parsed.docs:
            if doc.data is None:
                continue
            keep_written_floats(doc.data)  # the tool's own format, as the config
            policy = parse_policy(rel, doc.data, doc.pos)
            where = f"{policy.file}:{policy.line}"
            _check_unique(rel, doc.data, policy, seen_ids, taken)
            seen_ids[policy.id.lower()] = where
            taken[policy.id.lower()] = taken[policy.name.lower()] = f"{policy.id} ({where})"
            policies.append(policy)
    return policies
