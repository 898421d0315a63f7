"""What a rule gets: the repo model and a way to make well-formed findings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gpudrv_check.core.finding import Finding, Location, ObjectRef, Severity
from gpudrv_check.core.located import Path
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.model.node import Node
from gpudrv_check.model.repo import Repo
from gpudrv_check.read.policy import RulePolicy, catalog, rule_params

if TYPE_CHECKING:
    from gpudrv_check.model.operator import OperatorConfig


class Context:
    def __init__(self, repo: Repo, rules: Mapping[str, RulePolicy] | None = None) -> None:
        self.repo = repo
        self.config = repo.config
        # every rule of this run: the built-in catalog and the custom policies
        self.rules = rules if rules is not None else catalog()

    def params(self, rule: str) -> dict[str, Any]:
        """The rule's parameters: policy defaults overlaid with the config's `rules:` entry,
        written under the rule's id (any case) or its name."""
        return rule_params(self.config, rule, self.rules)

    def finding(
        self,
        rule: str,
        about: Manifest | Node,
        path: Path,
        message: str,
        hint: str | None = None,
        severity: Severity | None = None,
        location: Location | None = None,
        obj: ObjectRef | None = None,
    ) -> Finding:
        policy = catalog().get(rule)
        return Finding(
            rule=rule,
            severity=severity or (policy.severity if policy else Severity.ERROR),
            message=message,
            hint=hint if hint is not None else (policy.fix if policy else None),
            location=location or about.location(path),
            object=obj or about.ref,
            # inside the object: for an inventory node, the Node-shaped path, not its list index
            path=list(about.object_path(path) if isinstance(about, Node) else path),
        )

    def config_finding(
        self,
        rule: str,
        config: OperatorConfig,
        path: Path,
        message: str,
        hint: str | None = None,
        severity: Severity | None = None,
    ) -> Finding:
        """A finding at `path` inside an operator configuration's values: the key path in its
        manifest, the location where the value is written (its layer, or the embedded block)."""
        return self.finding(
            rule,
            config.manifest,
            (*config.values_path, *path),
            message,
            hint=hint,
            severity=severity,
            location=config.location(path),
        )
