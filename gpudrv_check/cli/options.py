"""Typed options: what the command line asked for, built once from the parsed arguments.

Commands take these objects, never an argparse namespace: every option is a declared field
with its type and default, so a command cannot read an option its parser does not define,
and code that runs a command without a command line (tests, embedding) builds one directly:
`dispatch(CheckOptions(command="check", path="deploy"))`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from gpudrv_check.core.records import record

if TYPE_CHECKING:
    import argparse


_Repo = TypeVar("_Repo", bound="RepoOptions")
FailOn = Literal["error", "warning", "info", "never"]


@record(frozen=True)
class Options:
    """What every command has: its name."""

    command: str


@record(frozen=True)
class RepoOptions(Options):
    """Where the repo comes from and how it is read: every command that reads one."""

    path: str = "."
    config: str | None = None
    matrix: str | None = None
    operator_version: str | None = None
    jobs: int | None = None
    rev: str | None = None
    staged: bool = False
    kustomize: bool = False
    stdin_name: str | None = None
    inventory: tuple[str, ...] = ()
    verbose: bool = False
    cluster: str | None = None  # in a repo of several clusters, the one to check

    def without_matrix(self: _Repo) -> _Repo:
        """These options with `--matrix none` unless one was named: for the commands that
        need no matrix (a repo without one is no error for them)."""
        return self if self.matrix is not None else dataclasses.replace(self, matrix="none")


@record(frozen=True)
class CheckOptions(RepoOptions):
    """`check`: which rules, which reports, what gates the exit code, the cache."""

    # --format and --output in command-line order: (("format", "sarif"), ("output", "x"))
    report_args: tuple[tuple[str, str], ...] = ()
    baseline: str | None = None
    write_baseline: str | None = None
    fail_on: FailOn | None = None
    base: str | None = None
    cache_dir: str | None = None
    no_cache: bool = False
    quiet: bool = False
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    color: str = "auto"  # auto | always | never


@record(frozen=True)
class NodeOptions(RepoOptions):
    """`tag NODE`."""

    node: str = ""


@record(frozen=True)
class FormatOptions(RepoOptions):
    """`operands` and `report`: a repo and an output format (`report --node` too)."""

    format: str = "text"
    node: str | None = None


@record(frozen=True)
class PlaceOptions(RepoOptions):
    """`place`."""

    workload: str | None = None
    format: str = "text"


@record(frozen=True)
class PlanOptions(RepoOptions):
    """`plan NODE --driver VERSION`."""

    node: str = ""
    driver: str = ""
    write: bool = False
    timeout: str = "300s"
    format: str = "text"


@record(frozen=True)
class RehearseOptions(RepoOptions):
    """`rehearse`."""

    driver: str | None = None
    to_matrix: bool = False
    format: str = "text"


@record(frozen=True)
class RulesOptions(Options):
    """`rules` and `explain RULE`."""

    format: str = "text"
    rule: str | None = None


@record(frozen=True)
class InventoryOptions(Options):
    """`inventory import FILE`."""

    action: str = "import"
    file: str = "-"
    labels_prefix: tuple[str, ...] = ()
    source_name: str | None = None
    output: str | None = None
    write: bool = False
    root: str | None = None
    config: str | None = None
    cluster: str | None = None
    max_bytes: int | None = None


@record(frozen=True)
class CompletionOptions(Options):
    """`completion SHELL`."""

    shell: str = "bash"


OPTION_TYPES: dict[str, type[Options]] = {
    "check": CheckOptions,
    "audit": RepoOptions,
    "tag": NodeOptions,
    "operands": FormatOptions,
    "report": FormatOptions,
    "place": PlaceOptions,
    "plan": PlanOptions,
    "rehearse": RehearseOptions,
    "rules": RulesOptions,
    "explain": RulesOptions,
    "completion": CompletionOptions,
    "inventory": InventoryOptions,
}


def from_namespace(args: argparse.Namespace) -> Options:
    """The typed options of a parsed command line; an option left unset keeps its default."""
    kind = OPTION_TYPES[args.command]
    given = vars(args)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(kind):
        value = given.get(f.name)
        if f.name not in given or (value is None and f.default is not None):
            continue
        values[f.name] = _frozen(value)
    return kind(**values)


def _frozen(value: Any) -> Any:
    """Lists (repeatable options) as tuples, so options stay immutable and hashable."""
    return tuple(_frozen(v) for v in value) if isinstance(value, (list, tuple)) else value


def cache_key(options: Options) -> list[tuple[str, str]]:
    """The options that can change a result, as text (the whole-result cache keys on them)."""
    skip = {"jobs", "cache_dir", "no_cache"}
    return sorted(
        (f.name, repr(getattr(options, f.name)))
        for f in dataclasses.fields(options)
        if f.name not in skip
    )
