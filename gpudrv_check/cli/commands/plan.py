"""`gpudrv-check plan NODE --driver VERSION [--write]`: one node's driver upgrade, step by step.

Prints the five steps (model/upgrade_plan.py), each `ready` or `blocked` with the reason and
the file:line to change; exit 0 when every step is ready, 1 when one is blocked.

`--write` records the repo side of steps 1 and 4 - it appends the matrix row (you built and
pushed the image) and rewrites the node's driver labels in the inventory - and only when
every other blocker is one of those: it refuses (exit 1, nothing written) while a budget, an
unmanaged pod or a missing label still blocks the upgrade. Files are checked against the bytes
read, resolved inside the repo root, and replaced atomically (edit/); a refused or failed
write leaves every file as it was (exit 2).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from gpudrv_check.cli.commands.common import load_run
from gpudrv_check.cli.options import PlanOptions
from gpudrv_check.core.finding import printable, terminal_text
from gpudrv_check.edit.safe_write import EditError, FileEdit, apply_edits, read_unchanged
from gpudrv_check.engine.run import Run
from gpudrv_check.model.upgrade_plan import DriverVersion, Item, Plan, plan_upgrade
from gpudrv_check.read.config_file import ConfigError

_DURATION_RE = re.compile(r"(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+\Z")


def _item_dict(item: Item) -> dict[str, Any]:
    return {
        "message": item.message,
        "location": str(item.location) if item.location else None,
        "change": item.change,
    }


def plan_dict(plan: Plan, written: list[str]) -> dict[str, Any]:
    return {
        "node": plan.node.name,
        "driver": plan.target.text,
        "current_driver": plan.current,
        "tag": plan.tag,
        "status": "ready" if plan.ready else "blocked",
        "steps": [
            {
                "number": step.number,
                "name": step.name,
                "status": step.status,
                "summary": step.summary,
                "blockers": [_item_dict(i) for i in step.blockers],
                "notes": [_item_dict(i) for i in step.notes],
            }
            for step in plan.steps
        ],
        "written": written,
    }


def _item_lines(prefix: str, item: Item) -> list[str]:
    lines = [f"   {prefix}{item.message}"]
    if item.location is not None or item.change:
        where = str(item.location) if item.location is not None else ""
        sep = ": " if where and item.change else ""
        lines.append(f"      at {where}{sep}{item.change or ''}".rstrip())
    return lines


def render_text(plan: Plan, written: list[str]) -> str:
    current = plan.current or "unknown"
    lines = [f"plan {plan.node.name}: driver {current} → {plan.target.text}"]
    for step in plan.steps:
        lines.append(f"{step.number}. {step.name}: {step.status} - {step.summary}")
        for item in step.blockers:
            lines += _item_lines("blocked: ", item)
        for item in step.notes:
            lines += _item_lines("note: ", item)
    lines += [f"wrote {line}" for line in written]
    if plan.ready:
        lines.append("ready: every step can go ahead")
    else:
        steps = ", ".join(str(n) for n in plan.blocked_steps)
        lines.append(f"blocked: step{'s' if len(plan.blocked_steps) > 1 else ''} {steps}")
    # each line one line: a line break in repo text (a node name, a label) is escaped
    return "\n".join(printable(line) for line in lines) + "\n"


def _file_digest(run: Run, rel: str) -> str:
    for result in run.content.files:
        if result.rel == rel:
            return result.digest
    return ""


def prepare_edits(run: Run, plan: Plan) -> list[FileEdit]:
    """The file edits of steps 1 and 4, computed in memory; raises EditError."""
    from gpudrv_check.edit.matrix_row import append_row
    from gpudrv_check.edit.node_labels import rewrite_labels

    repo = run.repo
    root = Path(repo.root)
    edits: list[FileEdit] = []
    if plan.matrix_row is not None:
        matrix = repo.matrix
        assert matrix is not None
        path, original = read_unchanged(root, matrix.file, matrix.digest)
        updated = append_row(original, matrix.header, *plan.matrix_row)
        row = ",".join(plan.matrix_row)
        edits.append(
            FileEdit(
                matrix.file,
                path,
                original,
                updated,
                f"{matrix.file}: appended `{row}` (line {matrix.end_line + 1})",
            )
        )
    if plan.label_changes:
        node = plan.node
        manifest = node.manifest
        rel = manifest.file
        path, original = read_unchanged(root, rel, _file_digest(run, rel))
        prefix: tuple = ("items", manifest.item) if manifest.item is not None else ()
        updated = rewrite_labels(
            original,
            rel,
            manifest.doc,
            (*prefix, *node.labels_path),
            (*prefix, *node.name_path),
            node.name,
            {c.key: c.new for c in plan.label_changes},
        )
        changed = ", ".join(f"{c.key}={c.new}" for c in plan.label_changes)
        edits.append(FileEdit(rel, path, original, updated, f"{rel}: {node.name} {changed}"))
    return edits


def run(options: PlanOptions) -> int:
    version = DriverVersion.parse(options.driver)
    if version is None:
        raise ConfigError(
            f"--driver {options.driver!r}: give the full driver version, e.g. 550.90.07"
        )
    if not _DURATION_RE.match(options.timeout):
        raise ConfigError(f"--timeout {options.timeout!r}: give a duration like 300s or 5m")
    check_run = load_run(options)
    repo = check_run.repo
    if repo.matrix is None:
        raise ConfigError("plan needs a support matrix (--matrix FILE or `matrix:` in config)")
    node = repo.node_by_name.get(options.node)
    if node is None:
        known = ", ".join(sorted(repo.node_by_name)) or "none"
        raise ConfigError(f"no node {options.node!r} in {options.path} (nodes: {known})")
    plan = plan_upgrade(repo, node, version, options.timeout)
    written: list[str] = []
    if options.write:
        remaining = plan.blockers_write_cannot_fix()
        if remaining:
            steps = sorted({step.number for step, _ in remaining})
            _emit(plan, [], options.format)
            sys.stderr.write(
                f"gpudrv-check: --write refused: step{'s' if len(steps) > 1 else ''} "
                f"{', '.join(map(str, steps))} {'are' if len(steps) > 1 else 'is'} blocked by "
                "something --write does not change; nothing written\n"
            )
            return 1
        try:
            edits = prepare_edits(check_run, plan)
            apply_edits(edits)
        except EditError as err:
            _emit(plan, [], options.format)
            sys.stderr.write(
                f"gpudrv-check: error: --write: {err}\n"
                "Nothing was written; make the changes of steps 1 and 4 above by hand.\n"
            )
            return 2
        written = [edit.summary for edit in edits]
        plan = plan.with_fixes_written()
    _emit(plan, written, options.format)
    return 0 if plan.ready else 1


def _emit(plan: Plan, written: list[str], fmt: str) -> None:
    if fmt == "json":
        sys.stdout.write(json.dumps(plan_dict(plan, written), indent=2) + "\n")
    else:
        sys.stdout.write(terminal_text(render_text(plan, written)))
