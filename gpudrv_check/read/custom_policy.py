"""A custom declarative policy: which objects it matches and the JSON Schema they must satisfy.

Written by users in YAML (format: schemas/policy.schema.json), no code. See
`read/policies.py` for reading and validating the files and `rules/declarative.py` for
applying them.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from gpudrv_check.core.finding import Severity
from gpudrv_check.read.policy import RulePolicy

#: `target: podSpec` validates the pod spec of objects that carry a pod template
TARGET_OBJECT: Final = "object"
TARGET_POD_SPEC: Final = "podSpec"


class PolicyMatch(BaseModel):
    """Which objects a policy applies to. Every field given must hold (AND); unset = any.

    `kinds` are exact kind names (`Node` also covers NodeInventory entries); `namespaces` are
    globs on the namespace the object is applied to (`default` when it names none; never
    matches cluster-scoped objects); `labelSelector` is a metav1.LabelSelector on the object's
    labels; `requests` are globs on resource names a container of a pod template requests or
    limits with a non-zero quantity (`nvidia.com/gpu`): only objects with a pod template match.
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    kinds: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    label_selector: Any = Field(default=None, alias="labelSelector")
    requests: tuple[str, ...] = ()


class CustomPolicy(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, arbitrary_types_allowed=True)

    id: str
    name: str
    severity: Severity
    message: str
    title: str | None = None
    why: str | None = None
    fix: str | None = None
    target: Literal["object", "podSpec"] = TARGET_OBJECT
    match: PolicyMatch = Field(default_factory=PolicyMatch)
    schema_: Any = Field(alias="assert")
    # where it was declared
    file: str = ""
    line: int = 1

    def rule_policy(self) -> RulePolicy:
        """The policy as a rule of the catalog (for reports, config overrides, SARIF help)."""
        return RulePolicy(
            id=self.id,
            name=self.name,
            title=self.title or self.message.split("{", 1)[0].strip(" :") or self.name,
            severity=self.severity,
            category="custom",
            source="custom",
            why=self.why or f"Custom policy declared in {self.file}.",
            fix=self.fix or f"Make the object satisfy the policy in {self.file}.",
        )
