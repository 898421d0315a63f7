"""Findings the driver plan (model/driver_plan.py) makes, as a rule yields them."""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding
from gpudrv_check.model.driver_plan import driver_plan
from gpudrv_check.rules.context import Context


def plan_findings(ctx: Context, rule: str) -> Iterator[Finding]:
    for problem in driver_plan(ctx.repo).of_rule(rule):
        yield ctx.finding(
            rule,
            problem.about,
            problem.path,
            problem.message,
            hint=problem.hint,
            location=problem.location,
        )
