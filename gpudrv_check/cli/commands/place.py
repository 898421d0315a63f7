"""`gpudrv-check place [PATH] [--workload KIND/NAMESPACE/NAME]`: where each workload can land.

For each workload: the nodes its pods can land on (kube-scheduler's filters, the kubelet for a
pod bound with `spec.nodeName`, the DaemonSet controller for a DaemonSet), or what Kubernetes
would report and why no node is left; and how its CUDA images fit those nodes' drivers. With
`--workload`, every node's verdict too. Exit 1 when a workload with pods lands on no node.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from gpudrv_check.cli.commands.common import load_run
from gpudrv_check.cli.options import PlaceOptions
from gpudrv_check.core.finding import printable, quoted, terminal_text
from gpudrv_check.model.cuda import CudaFit, cuda_fits
from gpudrv_check.model.pending import (
    DRA_NOT_EVALUATED,
    Pending,
    amount_text,
    dra_claims,
    explain_pending,
    node_names,
    not_evaluated,
    taint_text,
)
from gpudrv_check.model.repo import Repo
from gpudrv_check.model.workload import Workload
from gpudrv_check.nvidia.device_plugin import PREFIX as NVIDIA_PREFIX
from gpudrv_check.read.config_file import ConfigError
from gpudrv_check.read.policy import builtin
from gpudrv_check.rules.context import Context

NAMES_SHOWN = 10


def _select(repo: Repo, wanted: str | None) -> list[Workload]:
    workloads = sorted(
        repo.workloads,
        key=lambda w: (
            w.manifest.file,
            w.manifest.doc,
            -1 if w.manifest.item is None else w.manifest.item,
        ),
    )
    if wanted is None:
        return workloads
    parts = wanted.split("/")
    if len(parts) != 3 or not all(parts):
        raise ConfigError(
            f"--workload {quoted(wanted)}: expected KIND/NAMESPACE/NAME, e.g. Pod/default/x"
        )
    kind, namespace, name = parts
    chosen = [
        w
        for w in workloads
        if w.kind.lower() == kind.lower() and w.namespace == namespace and w.name == name
    ]
    if not chosen:
        known = ", ".join(sorted(w.key for w in workloads)[:NAMES_SHOWN]) or "none"
        raise ConfigError(f"no workload {wanted} in {repo.root} (workloads: {known})")
    return chosen


def _cuda_json(fit: CudaFit) -> dict[str, Any]:
    return {
        "container": fit.container.name,
        "image": fit.container.image,
        "cuda": fit.need.cuda_version,
        "min_driver": fit.need.min_driver,
        "floor": fit.floor,
        "too_old": {n.name: v for n, v in fit.too_old},
        "minor_version_compatibility": {n.name: v for n, v in fit.limited},
        "ok": {n.name: v for n, v in fit.fine},
        "unknown": sorted(n.name for n in fit.unknown),
    }


def _cuda_line(fit: CudaFit) -> str:
    need = fit.need
    floor = "" if fit.floor == need.min_driver else f", from branch {fit.floor} with limits"
    head = f"CUDA {need.cuda_version} ({fit.container.image}) needs driver {need.min_driver}{floor}"
    parts = []
    if fit.too_old:
        parts.append("too old on " + node_names([n for n, _ in fit.too_old]))
    if fit.limited:
        parts.append("limited on " + node_names([n for n, _ in fit.limited]))
    if fit.fine:
        parts.append("fine on " + node_names([n for n, _ in fit.fine]))
    if fit.unknown:
        parts.append("driver unknown on " + node_names(fit.unknown))
    return head + (": " + "; ".join(parts) if parts else "")


def _without_nvidia(placement: Any, workload: Workload, eligible: list) -> list:
    """The eligible nodes that hold none of the NVIDIA resources the pod asks for: no GPU node
    and no allocatable given (no device plugin runs there); a bound pod's kubelet drops them."""
    if workload.node_name is not None:
        return []
    if not any(r.startswith(NVIDIA_PREFIX) for r in placement.requests(workload)):
        return []
    return [n for n in eligible if placement.allocatable(n) is None and not n.is_gpu]


def _entry(
    repo: Repo, workload: Workload, minor_compat: bool, verbose: bool
) -> tuple[dict[str, Any], list[CudaFit]]:
    placement = repo.placement
    location = workload.location(("metadata", "name"))
    entry: dict[str, Any] = {
        "workload": workload.key,
        "kind": workload.kind,
        "namespace": workload.namespace,
        "name": workload.name,
        "location": {"file": location.file, "line": location.line, "column": location.column},
        "replicas": workload.replicas,
        "gpus": workload.gpus,
    }
    if workload.role:  # a template of a custom resource (policies/workloads.yaml)
        entry["role"] = workload.role
    if workload.api_rejects:
        entry.update(status="rejected", nodes=[])
        return entry, []
    eligible = placement.eligible(workload)
    entry["nodes"] = [n.name for n in eligible]
    gpuless = _without_nvidia(placement, workload, eligible)
    if gpuless:
        # NVIDIA's resources on a node the inventory gives no allocatable and no GPU for: none
        # (the capacity simulation keeps the pods off it, model/occupancy.py); listed apart
        entry["no_nvidia"] = [n.name for n in gpuless]
        if len(gpuless) < len(eligible):
            entry["nodes"] = [n.name for n in eligible if n not in gpuless]
    pending: Pending | None = explain_pending(workload, placement)
    entry["status"] = "placed" if eligible else "pending"
    entry["message"] = pending.message if pending else None
    entry["why"] = list(pending.details) if pending else []
    if pending is not None:
        where = workload.location(pending.path)
        entry["constraint"] = {"file": where.file, "line": where.line, "column": where.column}
    fits = cuda_fits(
        workload,
        eligible,
        repo.cuda_table,
        minor_compat,
        placement.memo,
        placement.constraint_key(workload),
    )
    entry["cuda"] = [_cuda_json(f) for f in fits]
    if dra_claims(workload.pod_spec):
        entry["dra"] = DRA_NOT_EVALUATED
    unread = not_evaluated(workload.pod_spec, repo.placement.release.minor)
    if unread:
        entry["not_evaluated"] = unread
    replicas = repo.occupancy.replicas(workload)
    if replicas is not None and replicas.pending:
        entry["pending_pods"] = {
            "pods": [replicas.pod_name(i) for i in replicas.pending],
            "message": replicas.message or None,
        }
    if verbose:
        entry["requests"] = _amounts(placement.requests(workload))
        verdicts = placement.verdicts(workload)
        entry["verdicts"] = [
            {
                "node": n.name,
                "fits": verdicts[n.name].ok,
                "reason": verdicts[n.name].wording or None,
                "taint": taint_text(taint) if (taint := verdicts[n.name].taint) else None,
                "offers": _amounts(placement.allocatable(n)),
                "holds": repo.occupancy.holders.get(n.name, []),
            }
            for n in placement.nodes
        ]
    return entry, fits


def _amounts(amounts: Mapping[str, Fraction] | None) -> dict[str, str] | None:
    """Resource amounts as quantities read (``8``, ``500m``); None when the node says nothing."""
    if amounts is None:
        return None
    return {k: amount_text(k, v) for k, v in sorted(amounts.items())}


def _amounts_text(amounts: Mapping[str, str] | None) -> str:
    if amounts is None:
        return "no allocatable or capacity given"
    return ", ".join(f"{k} {v}" for k, v in amounts.items()) or "nothing"


def _text(entry: dict[str, Any], total: int, fits: list[CudaFit]) -> list[str]:
    loc = entry["location"]
    who = f"{entry['workload']} {entry['role']}" if entry.get("role") else entry["workload"]
    lines = [f"{who}  {loc['file']}:{loc['line']}:{loc['column']}"]
    status = entry["status"]
    if status == "rejected":
        lines.append("  not placed: the API server rejects this object (see GPU040 in `check`)")
        return lines
    nodes = entry["nodes"]
    scaled = " (replicas: 0)" if entry["replicas"] == 0 else ""
    if nodes:
        lines.append(
            f"  lands on {len(nodes)} of {total} nodes{scaled}: {node_names(nodes, NAMES_SHOWN)}"
        )
        # what no verdict read (with no node, the reasons above say it)
        lines.extend(f"  {clause}" for clause in entry.get("not_evaluated", ()))
    else:
        lines.append(f"  lands on no node{scaled}: {entry['message']}")
        lines.extend(f"  - {why}" for why in entry["why"])
    if entry.get("no_nvidia"):
        lines.append(
            f"  no NVIDIA resources on {node_names(entry['no_nvidia'], NAMES_SHOWN)}: no GPU "
            "node and no allocatable given, so its GPU pods never run there"
        )
    pending = entry.get("pending_pods")
    if pending:
        names = node_names(pending["pods"], NAMES_SHOWN)
        why = f": {pending['message']}" if pending["message"] else ""
        # the scheduler's message says why: room taken, a skew or anti-affinity refusal
        lines.append(f"  {len(pending['pods'])} pod(s) Pending ({names}){why}")
    lines.extend(f"  {_cuda_line(fit)}" for fit in fits)
    if entry.get("requests"):
        lines.append(f"  asks per pod: {_amounts_text(entry['requests'])}")
    for verdict in entry.get("verdicts", []):
        reason = "fits" if verdict["fits"] else verdict["reason"]
        if verdict["taint"]:
            reason += f" ({verdict['taint']})"
        offers = f"; offers {_amounts_text(verdict['offers'])}" if verdict["offers"] else ""
        holds = verdict["holds"]
        held = f"; holds {node_names(holds, 3)}" if holds else ""
        lines.append(f"    {verdict['node']}: {reason}{offers}{held}")
    return lines


def run(options: PlaceOptions) -> int:
    check_run = load_run(options.without_matrix())  # placement needs no matrix
    repo = check_run.repo
    if not repo.nodes:
        raise ConfigError(
            f"no nodes in {options.path}: placement needs `kind: Node` objects or a NodeInventory"
        )
    workloads = _select(repo, options.workload)
    minor_compat = (
        Context(repo)
        .params(builtin("cuda-driver-too-old").id)
        .get("minor_version_compatibility", True)
    )
    minor_compat = minor_compat is not False
    verbose = options.workload is not None
    results = [_entry(repo, w, minor_compat, verbose) for w in workloads]
    entries = [entry for entry, _ in results]
    pending = [e for e in entries if e["status"] == "pending" and e["replicas"] != 0]
    code = 1 if pending else 0
    if options.format == "json":
        doc = {
            "nodes": len(repo.nodes),
            "workloads": entries,
            "summary": {
                "workloads": len(entries),
                "placed": sum(e["status"] == "placed" for e in entries),
                "pending": sum(e["status"] == "pending" for e in entries),
                "rejected": sum(e["status"] == "rejected" for e in entries),
                "exit_code": code,
            },
        }
        from gpudrv_check.report import json_safe

        # no raw bidi or line-separator character in the bytes (report/__init__.py json_safe)
        sys.stdout.write(json_safe(json.dumps(doc, indent=2, ensure_ascii=False)) + "\n")
        return code
    lines: list[str] = []
    total = len(repo.nodes)
    for entry, fits in results:
        lines.extend(_text(entry, total, fits))
    lines.append(
        f"{len(entries)} workload(s) on {total} node(s): "
        f"{sum(e['status'] == 'placed' for e in entries)} placed, {len(pending)} with no node"
    )
    # each line one line: a line break in repo text (a node name, a label) is escaped
    sys.stdout.write(terminal_text("\n".join(printable(line) for line in lines) + "\n"))
    return code
