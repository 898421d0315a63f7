"""GPU nodes per driver upgrade state (`nvidia.com/gpu-driver-upgrade-state`), in flow order:
the one line that shows where an upgrade stopped."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpudrv_check.core.finding import QUOTE_LIMIT
from gpudrv_check.nvidia.upgrade import UPGRADE_STATES, state_meaning, upgrade_state

if TYPE_CHECKING:
    from gpudrv_check.report import Report

ORDER = 40
TITLE = "GPU nodes per upgrade state"
_SHOWN_NAMES = 10


def shown_state(state: str) -> str:
    """A state as a table shows it: the label value is repo text of any length, so a long one
    is cut as a message quotes it (`quoted` in core/finding.py), with its length."""
    if len(state) <= QUOTE_LIMIT:
        return state
    return f"{state[:QUOTE_LIMIT]}… ({len(state)} characters)"


def render(report: Report) -> str | None:
    from gpudrv_check.report.markdown import cell, code

    repo = report.repo
    if repo is None or not repo.gpu_nodes:
        return None
    by_state: dict[str, list[str]] = {}
    for node in repo.gpu_nodes:
        by_state.setdefault(upgrade_state(node.labels), []).append(node.name)
    order = {state: i for i, state in enumerate(("", *UPGRADE_STATES))}
    lines = ["| state | nodes | which | meaning |", "|---|---:|---|---|"]
    for state in sorted(by_state, key=lambda s: (order.get(s, len(order)), s)):
        names = sorted(by_state[state])
        shown = ", ".join(names[:_SHOWN_NAMES]) + (" …" if len(names) > _SHOWN_NAMES else "")
        meaning = state_meaning(state) or "not a state the upgrade controller writes"
        label = code(shown_state(state)) if state else "(none)"
        lines.append(f"| {label} | {len(names)} | {cell(shown)} | {cell(meaning)} |")
    return "\n".join(lines)
