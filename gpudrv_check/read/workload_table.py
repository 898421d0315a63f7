"""The workload-kinds table as data: ``policies/workloads.yaml`` and the config's ``workloads:``,
both checked against ``schemas/workloads.schema.json`` (model/workload_kinds.py reads them)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from gpudrv_check.read.config import Config


@lru_cache(maxsize=1)
def _validator() -> Any:
    """The table's schema, with `integer` meaning an int: JSON Schema counts any integral
    number as one, but a count read from a template is a number of pods, and the config keeps
    a float written as one (`1.0`, read/yaml_docs.py `keep_written_floats`), which it refuses
    everywhere else."""
    from jsonschema import Draft202012Validator
    from jsonschema.validators import extend

    from gpudrv_check.core.resources import read_resource

    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
    )
    strict = extend(Draft202012Validator, type_checker=checker)
    return strict(json.loads(read_resource("schemas", "workloads.schema.json")))


def _first_error(data: Any) -> Any:
    """The first error in document order, the most precise one when a choice failed."""
    from jsonschema.exceptions import best_match

    errors = sorted(_validator().iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return None
    first = errors[0]
    if first.context and not _types_only(first):
        return best_match(first.context)
    return first


def _types_only(error: Any) -> bool:
    """A choice (`oneOf`) that failed on the value's type alone in every branch: said as one
    list of the types it may have, rather than the one branch best_match picks ('one' is
    not of type 'null')."""
    return all(c.validator == "type" and not c.relative_path for c in error.context)


#: JSON Schema types, as a person reading YAML names them
_TYPE_WORDS = {
    "null": "null",
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "array": "a list",
    "object": "a mapping",
}


def _in_words(error: Any) -> tuple[tuple, str]:
    """(key path, message) of a schema error, in the words of the config's other errors."""
    from gpudrv_check.core.located import schema_error_path
    from gpudrv_check.read.config import described

    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties":
        extra = schema_error_path(error)
        if len(extra) > len(path):
            return extra, f"unknown key {str(extra[-1])!r}"
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [k for k in error.validator_value if k not in error.instance]
        if missing:
            return path, f"key {missing[0]!r} is required"
    types = [c.validator_value for c in error.context] if error.context else [error.validator_value]
    if error.validator == "type" or (error.context and _types_only(error)):
        words = [_TYPE_WORDS.get(t, str(t)) for t in types if isinstance(t, str)]
        either = " or ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)
        return path, f"must be {either}, not {described(error.instance)}"
    return path, error.message


#: the shipped table as a run reads it: policies/workloads.yaml (the file people read and edit)
#: written out as JSON by `compiled_table_text`. The YAML's nested flow collections and anchors
#: are outside the line reader's subset (read/block_yaml.py), so reading it took the event
#: builder, and the import of libyaml's binding for it: 28 ms of every run that plans, a tenth
#: of a one-file edit of a small repo, where the JSON takes well under one. A test holds the two
#: equal (tests/model/test_workload_kinds.py).
COMPILED_TABLE = "workloads.json"


@lru_cache(maxsize=1)
def builtin_workload_table() -> Any:
    """The shipped table; a broken one is a bug of this tool, not of the checked repo. Its
    schema check is a test (tests/model/test_workload_kinds.py), not a cost of every start-up:
    importing jsonschema and validating took a third of a small run."""
    from gpudrv_check.core.resources import read_resource

    data = json.loads(read_resource("policies", COMPILED_TABLE))
    if not isinstance(data, dict):
        raise RuntimeError(f"broken built-in policies/{COMPILED_TABLE}")
    return data


def source_workload_table() -> Any:
    """policies/workloads.yaml as data: what `builtin_workload_table` must equal."""
    from gpudrv_check.read.packaged import packaged_yaml

    data = packaged_yaml("policies", "workloads.yaml")
    if not isinstance(data, dict):
        raise RuntimeError("broken built-in policies/workloads.yaml: not a mapping")
    return data


def compiled_table_text(data: Any) -> str:
    """The text of policies/workloads.json for the table `data`: one key per line, in the
    YAML's order. Written by
    `python -c "from gpudrv_check.read.workload_table import write_compiled_table as w; w()"`
    after an edit of the YAML (in a checkout)."""
    from gpudrv_check.read.packaged import compiled_text

    return compiled_text(data)


def write_compiled_table() -> None:
    """Write policies/workloads.json from policies/workloads.yaml (a developer's command)."""
    from gpudrv_check.core.resources import resource_dir
    from gpudrv_check.read.packaged import write_compiled

    write_compiled(resource_dir("policies").joinpath(COMPILED_TABLE), source_workload_table())


def builtin_table_error() -> Any:
    """The shipped table's first schema error (None when it conforms): for the tests."""
    return _first_error(builtin_workload_table())


def user_workload_table(config: Config) -> Any | None:
    """The config's ``workloads:`` after the schema check; a bad entry is a usage error (exit 2)
    at its line."""
    data = config.workloads
    if not data:
        return None
    error = _first_error(data)
    if error is not None:
        path, message = _in_words(error)
        if message.startswith("unknown key"):
            path_of = path[:-1]  # the key is named in the message, at its own line
        else:
            path_of = path
        where = "workloads" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path_of)
        raise config.error(f"{where}: {message}", "workloads", *path)
    return data
