"""GPU032 operand-taint-not-tolerated: an operand DaemonSet does not tolerate a taint that GPU
nodes carry.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gpudrv_check.core.finding import Finding
from gpudrv_check.model.operands import (
    OPERATOR,
    OperandDaemonSet,
    config_name,
    default_toleration_replaced,
    taint_text,
)
from gpudrv_check.rules.context import Context
from gpudrv_check.rules.wording import names

ID = "GPU032"


GPU_KEY = "nvidia.com/gpu"


def _tolerates_gpu(ds: OperandDaemonSet) -> bool:
    """Whether its pods carry a toleration of the nvidia.com/gpu key (or of every key)."""
    return any(
        isinstance(t, Mapping)
        and (t.get("key") == GPU_KEY or (not t.get("key") and t.get("operator") == "Exists"))
        for t in ds.tolerations
    )


def _toleration(taint: Mapping[str, Any]) -> str:
    parts = [f"key: {taint.get('key')}", "operator: Exists"]
    if taint.get("effect"):
        parts.append(f"effect: {taint.get('effect')}")
    return "{" + ", ".join(parts) + "}"


def _nvidiadriver_text(
    dss: list[OperandDaemonSet], shown: str, nodes_text: str, taint: Mapping[str, Any]
) -> tuple[str, str]:
    """Driver DaemonSets an NVIDIADriver renders: their pods carry nvidia.com/gpu plus the CR's
    spec.tolerations (state-driver 0500_daemonset.yaml), never daemonsets.tolerations."""
    ds = dss[0]
    # the chart's default CR is the one whose list is daemonsets.tolerations itself
    own = "" if str(ds.tolerate_in).startswith("daemonsets.") else ", not daemonsets.tolerations"
    message = (
        f"the {ds.operand} DaemonSet(s) {names([d.name for d in dss])} do not tolerate taint "
        f"{shown} on GPU node(s) {nodes_text}: their pods carry nvidia.com/gpu:NoSchedule plus "
        f"{ds.tolerate_in}{own}; the DaemonSet controller does not count those nodes and no "
        f"{ds.operand} runs there"
    )
    hint = f"Add {_toleration(taint)} to {ds.tolerate_in}, or remove the taint from the node(s)."
    return message, hint


def check(ctx: Context) -> Iterator[Finding]:
    repo = ctx.repo
    placement = repo.operand_placement
    nodes = repo.node_by_name
    groups: dict[tuple, tuple[list[OperandDaemonSet], list[str], Mapping[str, Any]]] = {}
    for ds in placement.daemonsets:
        for node_name, taint in ds.tainted_out:
            node = nodes.get(node_name)
            if node is None or not node.is_gpu:
                continue
            # the configuration's operands share daemonsets.tolerations; each NVIDIADriver's
            # pools share that CR's spec.tolerations instead
            if ds.source != OPERATOR:
                where: tuple = (ds.key, ds.operand)
            else:
                where = (OPERATOR, ds.tolerate_in)
            key = (*where, taint_text(taint))
            dss, tainted, _ = groups.setdefault(key, ([], [], taint))
            if not any(d is ds for d in dss):
                dss.append(ds)
            if node_name not in tainted:
                tainted.append(node_name)
    for dss, tainted, taint in groups.values():
        ds = dss[0]
        shown = taint_text(taint)
        # the first few nodes, then a count: a taint on a whole pool made a message longer than
        # a finding holds, cut before it said what the controller does (MAX_MESSAGE)
        nodes_text = names(tainted)
        if ds.source == OPERATOR and ds.tolerate_in is not None:
            message, hint = _nvidiadriver_text(dss, shown, nodes_text, taint)
        elif ds.source == OPERATOR and placement.config is not None:
            config = placement.config
            operands = ", ".join(d.operand for d in dss)
            replaced = default_toleration_replaced(config)
            # an operand whose asset tolerates nothing in this release (vgpu-device-manager
            # before v26.7) while daemonsets.tolerations is empty
            bare = [d.operand for d in dss if not _tolerates_gpu(d)]
            if replaced:
                why = (
                    "daemonsets.tolerations replaces the default nvidia.com/gpu:NoSchedule "
                    "toleration instead of adding to it"
                )
            elif bare:
                why = (
                    f"{', '.join(bare)} {'carries' if len(bare) == 1 else 'carry'} no "
                    "toleration in this operator release (its asset DaemonSet has none, and "
                    "daemonsets.tolerations is empty)"
                )
            else:
                why = "the operands carry only the default nvidia.com/gpu:NoSchedule toleration"
            message = (
                f"the operand DaemonSets of the {config_name(config)} ({operands}) do not "
                f"tolerate taint {shown} on GPU node(s) {nodes_text}: {why}; the DaemonSet "
                "controller does not count those nodes and no operand runs there"
            )
            own = taint.get("key") == GPU_KEY
            hint = f"Add {_toleration(taint)} to daemonsets.tolerations" + (
                "."
                if replaced or own
                else ", together with {key: nvidia.com/gpu, operator: Exists, effect: "
                "NoSchedule}, since the list replaces the default."
            )
            if bare and own and not replaced:
                hint = hint[:-1] + " (the list is given to every operand DaemonSet)."
        else:
            message = (
                f"DaemonSet {ds.key} ({ds.operand}) does not tolerate taint {shown} on GPU "
                f"node(s) {nodes_text}: the DaemonSet controller does not count them in "
                f"desiredNumberScheduled, so {ds.operand} never runs there"
            )
            hint = (
                f"Add {_toleration(taint)} to the DaemonSet's pod tolerations, or remove the "
                "taint from the node(s)."
            )
        yield ctx.finding(
            ID,
            ds.about,
            ds.tolerations_path,
            message,
            hint=hint,
            location=ds.tolerations_location,
            obj=ds.about.ref if ds.source == OPERATOR else ds.workload.ref,
        )
