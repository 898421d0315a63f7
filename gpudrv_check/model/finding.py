"""Findings: what a rule found, where, and what to do about it."""

from __future__ import annotations

import hashlib
from enum import Enum

from pydantic import BaseModel, ConfigDict, Field


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.ERROR: 3, Severity.WARNING: 2, Severity.INFO: 1}


class Location(BaseModel):
    """File (relative to the checked root, POSIX separators), 1-based line and column."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int = 1
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class ObjectRef(BaseModel):
    """The Kubernetes object a finding is about."""

    model_config = ConfigDict(frozen=True)

    kind: str
    name: str | None = None
    namespace: str | None = None

    def __str__(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{ns}{self.name or '?'}"


class Finding(BaseModel):
    """One problem: a stable rule id, a severity, a message a person can act on, and a fix hint."""

    rule: str
    severity: Severity
    message: str
    hint: str | None = None
    location: Location
    object: ObjectRef | None = None
    # key path inside the object (e.g. ["metadata", "labels", "x"]): identity that survives
    # line shifts, used by baselines and pull-request mode
    path: list[str | int] = Field(default_factory=list)
    suppressed_by: str | None = None

    def sort_key(self) -> tuple:
        loc = self.location
        return (loc.file, loc.line, loc.column, self.rule, self.message)

    def fingerprint(self) -> str:
        """Stable identity: rule, object and key path; not the line, so edits above keep it.

        An object's findings do not depend on its file either (moving it keeps them). Findings
        about a file rather than an object (syntax errors) are identified by file and message;
        repeats of the same one are told apart by counting (see compare.py), not by line.
        """
        obj = str(self.object) if self.object else self.location.file
        path = "/".join(str(p) for p in self.path)
        raw = "\x1f".join((self.rule, obj, path, self.message if not self.path else ""))
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]
