"""`gpudrv-check rehearse [PATH] [--driver VERSION | --to-matrix] [--format text|json|markdown]`.

Rehearses the GPU Operator's driver upgrade over every managed GPU node (model/rehearsal.py),
reconcile by reconcile, from the repo's state; exit 0 when every node ends upgrade-done, 1 when
the rehearsal stalls, 2 on a usage error. The target driver is `--driver`, else the operator
config's `driver.version`; `--to-matrix` takes for each node the newest driver branch the
support matrix has for its kernel and OS.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from gpudrv_check.cli.commands.common import load_run
from gpudrv_check.cli.options import RehearseOptions
from gpudrv_check.core.finding import printable, terminal_text
from gpudrv_check.model.fleet_rehearsal import configured_target, fleet_rehearsal
from gpudrv_check.model.rehearsal import Rehearsal, Stall
from gpudrv_check.model.repo import Repo
from gpudrv_check.model.upgrade_plan import DriverVersion
from gpudrv_check.read.config_file import ConfigError

TEXT_WAVES = 40


def _targets(repo: Repo, options: RehearseOptions) -> tuple[DriverVersion | None, str]:
    if options.to_matrix:
        return None, "the newest branch in the support matrix per node"
    text = options.driver or configured_target(repo)
    if text is None:
        raise ConfigError(
            "rehearse needs a target: --driver VERSION, --to-matrix, or driver.version in the "
            "operator config"
        )
    version = DriverVersion.parse(text)
    if version is None:
        raise ConfigError(f"driver {text!r}: give the full driver version, e.g. 550.90.07")
    return version, version.text


def run(options: RehearseOptions) -> int:
    if options.driver is not None and DriverVersion.parse(options.driver) is None:
        raise ConfigError(
            f"--driver {options.driver!r}: give the full driver version, e.g. 550.90.07"
        )
    repo = load_run(options).repo
    if repo.matrix is None:
        raise ConfigError("rehearse needs a support matrix (--matrix FILE or `matrix:` in config)")
    version, target = _targets(repo, options)
    result = fleet_rehearsal(repo, version)
    out = {"json": render_json, "markdown": render_markdown}.get(options.format, render_text)
    text = out(result, target)
    # JSON escapes control characters itself; text and markdown reach a terminal raw
    sys.stdout.write(text if options.format == "json" else terminal_text(text))
    return 0 if result.complete else 1


def rehearsal_dict(reh: Rehearsal, target: str) -> dict[str, Any]:
    return {
        "driver": target,
        "flow": reh.flow.describe(),
        "nodes": reh.nodes,
        "status": "complete" if reh.complete else "stalled",
        "admitted": reh.admitted,
        "upgradesAvailable": reh.upgrades_available,
        "maxUnavailable": reh.max_unavailable,
        "reconciles": reh.waves[-1].reconcile if reh.waves else 0,
        "waves": [
            {
                "reconcile": w.reconcile,
                "seconds": w.seconds,
                "nodes": w.nodes,
                "evictions": w.evictions,
                "blocks": w.blocks,
            }
            for w in reh.waves
        ],
        "stalls": [
            {
                "node": s.node,
                "state": s.state or "unknown",
                "reason": s.reason,
                "location": str(s.location) if s.location is not None else None,
            }
            for s in reh.stalls
        ],
        "notes": reh.notes,
    }


def render_json(reh: Rehearsal, target: str) -> str:
    return json.dumps(rehearsal_dict(reh, target), indent=2) + "\n"


def _moves(wave_nodes: list[dict[str, str]]) -> str:
    by_to: dict[str, list[str]] = {}
    for move in wave_nodes:
        by_to.setdefault(move["to"], []).append(move["node"])
    parts = []
    for state, names in by_to.items():
        shown = ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else "")
        parts.append(f"{shown} → {state}")
    return "; ".join(parts) or "-"


def _summary(reh: Rehearsal, target: str) -> list[str]:
    lines = [f"rehearse: {reh.nodes} managed GPU node(s), driver → {target}"]
    lines.append(f"flow: {reh.flow.describe()}")
    lines += [f"note: {note}" for note in reh.notes]
    if reh.admitted:
        lines.append(
            f"first admission: {', '.join(reh.admitted[:5])}"
            f"{' …' if len(reh.admitted) > 5 else ''} (upgradesAvailable "
            f"{reh.upgrades_available}, maxUnavailable {reh.max_unavailable})"
        )
    return lines


def _stall_lines(reh: Rehearsal) -> list[str]:
    if reh.complete:
        count = reh.waves[-1].reconcile if reh.waves else 0
        return [f"complete: every node upgrade-done after {count} reconcile(s)"]
    lines = [f"stalled: {len(reh.stalls)} node(s) do not reach upgrade-done"]
    # one line per cause: nodes waiting in the same state for the same reason are counted
    groups: dict[tuple[str, str, str], list[Stall]] = {}
    for stall in reh.stalls:
        reason = stall.reason if stall.state != "upgrade-required" else "queued"
        groups.setdefault((stall.state, reason, str(stall.location)), []).append(stall)
    for (state, _, _), stalls in sorted(
        groups.items(), key=lambda kv: kv[0][0] == "upgrade-required"
    ):
        stall = stalls[0]
        lines.append(f"  {stall.node}  {state or 'unknown'}  {printable(stall.reason, ' ')}")
        if stall.location is not None:
            lines.append(f"      at {stall.location}")
        if len(stalls) > 1:
            lines.append(f"  … and {len(stalls) - 1} more node(s) in {state or 'unknown'} alike")
    return lines


def render_text(reh: Rehearsal, target: str) -> str:
    lines = _summary(reh, target)
    lines.append(f"{'reconcile':>9}  {'t(s)':>6}  {'evict':>5}  {'block':>5}  nodes")
    for wave in reh.waves[:TEXT_WAVES]:
        lines.append(
            f"{wave.reconcile:>9}  {wave.seconds:>6}  {len(wave.evictions):>5}  "
            f"{len(wave.blocks):>5}  {_moves(wave.nodes)}"
        )
    if len(reh.waves) > TEXT_WAVES:
        lines.append(f"… {len(reh.waves) - TEXT_WAVES} more reconcile(s) (--format json)")
    lines += _stall_lines(reh)
    return "\n".join(lines) + "\n"


def render_markdown(reh: Rehearsal, target: str) -> str:
    from gpudrv_check.report.markdown import cell  # repo text: no HTML, pipes or line breaks

    lines = [f"## Driver upgrade rehearsal: {cell(target)}", ""]
    lines += [f"- {cell(line)}" for line in _summary(reh, target)]
    lines.append("")
    for wave in reh.waves:
        moves = cell(_moves(wave.nodes))
        lines.append(f"1. **reconcile {wave.reconcile}** (t = {wave.seconds} s): {moves}")
        for ev in wave.evictions:
            lines.append(
                f"   - evicted {cell(ev['pod'])} from {cell(ev['node'])} → "
                f"{cell(ev['to'] or 'Pending')}"
            )
        for block in wave.blocks:
            where = f" ({cell(block['location'])})" if block["location"] else ""
            lines.append(f"   - blocked {cell(block['node'])}: {cell(block['message'])}{where}")
    lines.append("")
    lines += [cell(line) if line.strip() else line for line in _stall_lines(reh)]
    return "\n".join(lines) + "\n"
