"""The rule catalog: every built-in rule's metadata, declared as data in `policies/rules/`.

Documentation (`gpudrv-check rules`, `explain`, the README table) is generated from here, so
it cannot drift from what the checker does.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gpudrv_check.model.finding import Severity


class RulePolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    name: str
    title: str
    severity: Severity
    category: str
    # "rule": a module in gpudrv_check/rules yields it; "load": the reader or model emits it
    source: str = "rule"
    why: str
    fix: str
    params: dict[str, Any] = Field(default_factory=dict)


@lru_cache(maxsize=1)
def catalog() -> dict[str, RulePolicy]:
    from gpudrv_check.load.yaml_docs import parse_text
    from gpudrv_check.resources import resource_dir

    rules: dict[str, RulePolicy] = {}
    folder = resource_dir("policies").joinpath("rules")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yaml"):
            continue
        parsed = parse_text(entry.read_text(encoding="utf-8"))
        if parsed.problems or not parsed.docs:
            raise RuntimeError(f"broken built-in policy {entry.name}: {parsed.problems}")
        policy = RulePolicy.model_validate(parsed.docs[0].data)
        rules[policy.id] = policy
    return dict(sorted(rules.items()))


def by_id_or_name(key: str) -> RulePolicy | None:
    rules = catalog()
    if key.upper() in rules:
        return rules[key.upper()]
    for policy in rules.values():
        if policy.name == key:
            return policy
    return None


def default_severity(rule_id: str) -> Severity:
    policy = catalog().get(rule_id)
    return policy.severity if policy else Severity.ERROR
