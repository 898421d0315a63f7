"""Documents shipped with the tool (`policies/`, `schemas/`): read here, handed to the model
as data (the model never parses text)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.abc import Traversable


def packaged_yaml(directory: str, name: str) -> Any:
    """The first document of a shipped YAML file; a broken one is a packaging bug (raises).
    Read as text (UTF-8): text in the plain block subset takes the line reader, bytes always
    the event builder (read/yaml_docs.py `parse_text`), and libyaml's binding with it."""
    from gpudrv_check.core.resources import read_resource
    from gpudrv_check.read.yaml_docs import parse_text

    parsed = parse_text(read_resource(directory, name).decode("utf-8"))
    if parsed.problems:
        raise RuntimeError(f"broken built-in {directory}/{name}: {parsed.problems}")
    return parsed.docs[0].data if parsed.docs else None


def packaged_json(directory: str, name: str) -> Any:
    """A shipped JSON file (a schema), as plain data."""
    from gpudrv_check.core.resources import read_resource

    return json.loads(read_resource(directory, name))


def compiled_text(data: Any) -> str:
    """A shipped YAML file's data as the JSON file a run reads instead (policies/workloads.json,
    rules/catalog.json): one key per line, in the YAML's order; a test holds each equal to its
    source."""
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def rules_file(name: str) -> Traversable:
    """gpudrv_check/rules/NAME: a file compiled from the rule folders and declarations
    (catalog.json, plan.json)."""
    from gpudrv_check.core.resources import package_dir

    return package_dir().joinpath("rules").joinpath(name)


def compiled_rules_json(name: str) -> Any:
    """The data of `rules_file(name)`, or None when this copy of the package lacks it (a build
    from a checkout that does not track it yet); a file that is no JSON is a packaging error."""
    try:
        raw = rules_file(name).read_bytes()
    except FileNotFoundError:
        return None
    try:
        return json.loads(raw)
    except ValueError:  # not JSON (or not UTF-8)
        raise RuntimeError(f"broken built-in rules/{name}") from None


def write_compiled(target: Traversable, data: Any) -> None:
    """Write `compiled_text(data)` to `target` (a developer's command, in a checkout)."""
    with open(str(target), "w", encoding="utf-8") as out:
        out.write(compiled_text(data))
