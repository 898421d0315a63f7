"""`gpudrv-check operands`: which operand runs on which node, why not, and the DaemonSet counts.

A table of nodes × operands (`yes`, `pre-installed`, or `no (<reason>)`, with a chain column),
the reasons with file and line, the broken chains, then per operand DaemonSet the
`desiredNumberScheduled` the DaemonSet controller would compute and the nodes a taint keeps out
of that count. Exit 1 when a node has a broken chain (GPU030), else 0.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from gpudrv_check.cli.commands.common import load_run
from gpudrv_check.cli.options import FormatOptions
from gpudrv_check.core.finding import terminal_text
from gpudrv_check.model.operands import (
    MODE_BOTH,
    MODE_DAEMONSETS,
    MODE_NONE,
    REPO,
    Cause,
    OperandPlacement,
    config_name,
    taint_text,
)


def _source_line(placement: OperandPlacement) -> str:
    in_repo = sum(1 for ds in placement.daemonsets if ds.source == REPO)
    config = placement.config
    if placement.mode == MODE_DAEMONSETS:
        return (
            f"operands from {in_repo} DaemonSet(s) in the repo; node labels as written "
            "(no GPU Operator configuration in the repo)"
        )
    assert config is not None
    where = f"{config_name(config)} ({config.manifest.file}:{config.manifest.location().line})"
    text = f"operands from the {where}"
    if placement.mode == MODE_BOTH:
        text += f" and {in_repo} DaemonSet(s) in the repo"
    return text + "; node labels as the operator rewrites them on GPU nodes"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def render_text(placement: OperandPlacement) -> str:
    if placement.mode == MODE_NONE:
        return "no operand DaemonSets and no GPU Operator configuration in the repo\n"
    out = [_source_line(placement), ""]
    columns = list(placement.operands)
    rows = [["NODE", *columns, "CHAIN"]]
    for node in placement.rows:
        cells = placement.cells[node.name]
        rows.append([node.name, *(cells[op].text for op in columns), placement.chain(node.name)])
    out.extend(_table(rows))
    if placement.hidden_nodes:
        out.append(
            f"({placement.hidden_nodes} other node(s) without nvidia.com/gpu.present=true, "
            "deploy labels or operands not shown)"
        )
    why = [
        [node.name, op, cause.detail, f"{cause.location.file}:{cause.location.line}"]
        for node in placement.rows
        for op, cell in placement.cells[node.name].items()
        if not cell.running
        for cause in cell.causes
    ]
    if why:
        out += ["", "why not:"]
        out.extend("  " + line for line in _table(why))
    breaks = [b for node in placement.rows for b in placement.breaks.get(node.name, [])]
    if breaks:
        out += ["", "broken chains (GPU030):"]
        for b in breaks:
            verb = "runs" if len(b.running) == 1 else "run"
            out.append(f"  {b.node.name}: {', '.join(b.running)} {verb} without {b.missing}")
    out += ["", "DaemonSets (desiredNumberScheduled as the DaemonSet controller computes it):"]
    listing = []
    for ds in placement.daemonsets:
        at = ds.declared_at
        listing.append(
            [
                ds.key,
                ds.operand,
                str(ds.desired_number_scheduled),
                f"{at.file}:{at.line}",
                ", ".join(ds.desired) or "-",
            ]
        )
    out.extend("  " + line for line in _table(listing))
    for ds in placement.daemonsets:
        if ds.tainted_out:
            shown = ", ".join(f"{n} ({taint_text(t)})" for n, t in ds.tainted_out)
            out.append(f"  {ds.key}: not counted, taint not tolerated: {shown}")
    if placement.notes:
        out.append("")
        out.extend(f"note: {note}" for note in placement.notes)
    return "\n".join(out) + "\n"


def _cause(cause: Cause) -> dict[str, Any]:
    loc = cause.location
    return {
        "kind": cause.kind,
        "detail": cause.detail,
        "file": loc.file,
        "line": loc.line,
        "column": loc.column,
    }


def render_json(placement: OperandPlacement) -> str:
    config = placement.config
    data: dict[str, Any] = {
        "mode": placement.mode,
        "config": None
        if config is None
        else {
            "source": config.source,
            "name": config.manifest.name,
            "file": config.manifest.file,
            "line": config.manifest.location().line,
        },
        "operands": list(placement.operands),
        "nodes": [],
        "daemonsets": [],
        "notes": list(placement.notes),
        "hidden_nodes": placement.hidden_nodes,
    }
    for node in placement.rows:
        cells = placement.cells[node.name]
        data["nodes"].append(
            {
                "name": node.name,
                "gpu": node.is_gpu,
                "chain": placement.chain(node.name),
                "operands": {
                    op: {
                        "state": "yes"
                        if cell.running
                        else ("pre-installed" if cell.preinstalled else "no"),
                        "daemonsets": list(cell.daemonsets),
                        "reasons": [_cause(c) for c in cell.causes],
                    }
                    for op, cell in cells.items()
                },
                "broken": [
                    {
                        "missing": b.missing,
                        "running": list(b.running),
                        "reasons": [_cause(c) for c in b.causes],
                    }
                    for b in placement.breaks.get(node.name, [])
                ],
            }
        )
    for ds in placement.daemonsets:
        at = ds.declared_at
        data["daemonsets"].append(
            {
                "name": ds.name,
                "namespace": ds.namespace,
                "operand": ds.operand,
                "source": ds.source,
                "file": at.file,
                "line": at.line,
                "desiredNumberScheduled": ds.desired_number_scheduled,
                "nodes": list(ds.desired),
                "not_counted_by_taint": [
                    {"node": n, "taint": taint_text(t)} for n, t in ds.tainted_out
                ],
            }
        )
    return json.dumps(data, indent=2) + "\n"


def run(options: FormatOptions) -> int:
    placement = load_run(options.without_matrix()).repo.operand_placement  # needs no matrix
    if options.format == "json":
        sys.stdout.write(render_json(placement))
    else:
        sys.stdout.write(terminal_text(render_text(placement)))
    return 1 if placement.breaks else 0
