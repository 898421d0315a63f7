"""`gpudrv-check rules` and `gpudrv-check explain RULE`: documentation from policies/."""

from __future__ import annotations

import sys

from gpudrv_check.cli.options import RulesOptions
from gpudrv_check.core.finding import quoted
from gpudrv_check.read.policy import RulePolicy, by_id_or_name, catalog, find_rule


def rules_table_markdown() -> str:
    lines = ["| id | name | severity | what it finds |", "|---|---|---|---|"]
    for policy in catalog().values():
        lines.append(
            f"| {policy.id} | `{policy.name}` | {policy.severity.value} | {policy.title} |"
        )
    return "\n".join(lines) + "\n"


def explain_text(policy: RulePolicy) -> str:
    params = ""
    if policy.params:
        params = "\nParameters:\n" + "".join(f"  {k}: {v}\n" for k, v in policy.params.items())
    return (
        f"{policy.id} {policy.name} ({policy.severity.value}, {policy.category})\n"
        f"{policy.title}\n\nWhy it matters:\n  {policy.why}\n\nHow to fix:\n  {policy.fix}\n"
        f"{params}"
    )


def repo_rules() -> dict[str, RulePolicy]:
    """The built-in rules and the custom policies of the repo in the working directory (its
    config's `policies:`), as `check .` reads them: a config or policy that does not load is
    the usage error `check` gives, at its line."""
    from pathlib import Path

    from gpudrv_check.engine.run import all_rules
    from gpudrv_check.read.config import load_config
    from gpudrv_check.read.policies import load_custom_policies, policy_files

    root = Path(".")
    config = load_config(root)
    if not config.policies:
        return dict(catalog())
    return all_rules(load_custom_policies(root, config, policy_files(root, config)))


def run(options: RulesOptions) -> int:
    if options.command == "explain":
        # a built-in rule is explained without reading the repo; any other may be its policy
        policy = by_id_or_name(options.rule or "") or find_rule(options.rule or "", repo_rules())
        if policy is None:
            sys.stderr.write(f"gpudrv-check: error: unknown rule {quoted(options.rule)}\n")
            return 2
        sys.stdout.write(explain_text(policy))
        return 0
    if options.format == "markdown":
        sys.stdout.write(rules_table_markdown())
        return 0
    for policy in repo_rules().values():
        sys.stdout.write(
            f"{policy.id}  {policy.severity.value:<7}  {policy.name:<28} {policy.title}\n"
        )
    return 0
