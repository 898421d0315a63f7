"""One object per identity: the same object written in several files is one object.

A repo often holds the same object more than once: a base and an overlay that copies it whole,
the same manifest under two cluster folders, an example kept next to the real one. The API
server holds one object per identity (API group, kind, namespace, name), so the rules see one:
identical copies are one object, and of copies that differ one is used, chosen the same way on
every run, and the choice is said at each copy not used (`Copies.findings`, an info).

Which copy: the one deepest in the tree (an overlay or a cluster folder sits below the base it
specialises), then the first in path order. Objects named by `generateName` are never copies:
each apply creates a new one. Nor are the objects of two rendered Kustomize roots
(`--kustomize`): each root is a deployment of its own (an overlay per environment), so a base
two overlays build is checked once per overlay, as read/kustomize.py promises.
"""

from __future__ import annotations

from dataclasses import field

from gpudrv_check.core.finding import Finding
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.core.records import record
from gpudrv_check.read.kustomization import RENDERED_SUFFIX
from gpudrv_check.read.policy import builtin

WHY = "deepest path first, as an overlay sits below its base; then path order"


@record
class Copies:
    """An identity written more than once: the copy used, and the others."""

    used: Manifest
    others: list[Manifest] = field(default_factory=list)
    differ: bool = False

    def describe(self) -> str:
        ns = f"{self.used.namespace}/" if self.used.namespace else ""
        others = ", ".join(_where(m) for m in self.others)
        what = f"{self.used.kind} {ns}{self.used.name}"
        if not self.differ:
            return f"{what} is written identically in {_where(self.used)} and {others}: one object"
        return (
            f"{what} is in {len(self.others) + 1} files that differ: {_where(self.used)} is used "
            f"({WHY}); {others} not"
        )

    def findings(self) -> list[Finding]:
        """One info per copy not used when the copies differ: which file is checked and why
        (at the copy, so it travels with that file's other findings)."""
        if not self.differ:
            return []
        ns = f"{self.used.namespace}/" if self.used.namespace else ""
        what = f"{self.used.kind} {ns}{self.used.name}"
        return [
            Finding(
                rule=builtin("not-checkable").id,
                severity=builtin("not-checkable").severity_of("duplicate-differs"),
                message=f"{what} is also in {_where(self.used)}, which differs and is the copy "
                f"checked ({WHY}); this copy is not checked",
                hint="Keep one copy of the object, or render the overlay (`kustomize build`) "
                "and check the output.",
                location=other.location(NAME_PATH),
                object=other.ref,
                path=list(NAME_PATH),
            )
            for other in self.others
        ]


NAME_PATH = ("metadata", "name")


def _where(m: Manifest) -> str:
    return m.file if m.item is None else f"{m.file} (items[{m.item}])"


def identity(m: Manifest) -> tuple[str, str, str, str] | None:
    """(API group, kind, namespace, name); None for an object without a fixed name."""
    if m.name is None or m.name.endswith("*"):
        return None
    group = m.api_version.rpartition("/")[0]
    return (group, m.kind, m.namespace or "", m.name)


def _copy_key(m: Manifest) -> tuple | None:
    """The identity, and the rendered root an object comes from (None for a repo file)."""
    key = identity(m)
    if key is None:
        return None
    return (*key, m.file if m.file.endswith(RENDERED_SUFFIX) else None)


def _rank(m: Manifest) -> tuple[int, str, int, int]:
    return (-m.file.count("/"), m.file, m.doc, m.item if m.item is not None else -1)


def one_per_identity(manifests: list[Manifest]) -> tuple[list[Manifest], list[Copies]]:
    """The manifests with each identity once (in their order), and the identities written
    more than once. Copies in one file are left alone (the rules on that file say why)."""
    by_id: dict[tuple, list[Manifest]] = {}
    for m in manifests:
        key = _copy_key(m)
        if key is not None:
            by_id.setdefault(key, []).append(m)
    dropped: set[int] = set()
    copies: list[Copies] = []
    for group in by_id.values():
        if len({m.file for m in group}) < 2:
            continue
        ordered = sorted(group, key=_rank)
        used, others = ordered[0], ordered[1:]
        differ = any(m.data != used.data for m in others)
        copies.append(Copies(used, others, differ))
        dropped.update(id(m) for m in others)
    if not dropped:
        return manifests, []
    copies.sort(key=lambda c: _rank(c.used)[1:])
    return [m for m in manifests if id(m) not in dropped], copies
