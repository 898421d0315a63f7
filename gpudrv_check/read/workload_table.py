"""The workload-kinds table as data: ``policies/workloads.yaml`` and the config's ``workloads:``,
both checked against ``schemas/workloads.schema.json`` (model/workload_kinds.py reads them)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from gpudrv_check.read.config import Config


@lru_cache(maxsize=1)
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    from gpudrv_check.core.resources import read_resource

    return Draft202012Validator(json.loads(read_resource("schemas", "workloads.schema.json")))


def _first_error(data: Any) -> Any:
    """The first error in document order, the most precise one when a choice failed."""
    from jsonschema.exceptions import best_match

    errors = sorted(_validator().iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return None
    first = errors[0]
    return best_match(first.context) if first.context else first


@lru_cache(maxsize=1)
def builtin_workload_table() -> Any:
    """The shipped table; a broken one is a bug of this tool, not of the checked repo. Its
    schema check is a test (tests/model/test_workload_kinds.py), not a cost of every start-up:
    importing jsonschema and validating took a third of a small run."""
    from gpudrv_check.core.resources import read_resource
    from gpudrv_check.read.yaml_docs import parse_text

    parsed = parse_text(read_resource("policies", "workloads.yaml"))
    data = parsed.docs[0].data if parsed.docs else None
    if parsed.problems or not isinstance(data, dict):
        raise RuntimeError(f"broken built-in policies/workloads.yaml: {parsed.problems}")
    return data


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
        path = list(error.absolute_path)
        where = "workloads" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
        raise config.error(f"{where}: {error.message}", "workloads", *path)
    return data
