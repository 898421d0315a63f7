"""GPU033 gpu-sharing-config: the device plugin's time-slicing/MPS configuration breaks a node,
or does not do what a workload expects of it.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding, Severity
from gpudrv_check.model.pending import node_names, resource_request_path
from gpudrv_check.model.sharing import Sharing, build_sharing
from gpudrv_check.model.workload import Workload
from gpudrv_check.nvidia.device_plugin import (
    CONFIG_LABEL,
    PRODUCT_LABEL,
    TOO_LARGE,
    UNUSED_SECTION,
    shared_product,
)
from gpudrv_check.rules.context import Context
from gpudrv_check.rules.wording import names

ID = "GPU033"


def _config_findings(ctx: Context, sharing: Sharing) -> Iterator[Finding]:
    if sharing.missing:
        yield ctx.config_finding(
            ID,
            sharing.operator,
            ("devicePlugin", "config", "name"),
            f"devicePlugin.config.name is {sharing.name}, but no ConfigMap of that name is in "
            f'the repo: the device plugin and GFD pods cannot mount it (configmap "{sharing.name}" '
            "not found) and stay ContainerCreating on every GPU node",
            hint=f"Add the ConfigMap {sharing.name} with one key per config (e.g. `any: |` with "
            "a `version: v1` config), or set devicePlugin.config.create with data.",
            severity=Severity.WARNING,
        )
        return
    users = _users(sharing)
    for key, entry in sharing.entries.items():
        if entry.error is None:
            continue
        nodes = users.get(key, [])
        who = f" ({len(nodes)} node(s) select it: {node_names(nodes)})" if nodes else ""
        message = (
            f"device-plugin config {key} of ConfigMap {sharing.name} is refused: {entry.error}; "
            f"the device plugin exits on the nodes that select it{who}"
        )
        hint = _config_hint(entry.error)
        if sharing.manifest is not None:
            yield ctx.finding(ID, sharing.manifest, entry.path, message, hint)
        else:
            yield ctx.config_finding(ID, sharing.operator, entry.path, message, hint)


#: the fix of a refused config, by the start of what the plugin says (nvidia/device_plugin.py
#: `parse_sharing_config`), a sharing section's `sharing.<section>: ` taken off first
_CONFIG_HINTS = (
    ("unknown version", "Set `version: v1`, the only version the device plugin reads."),
    (
        "the config is not a YAML mapping",
        "Write the config as a YAML mapping: `version: v1` and, to share GPUs, a `sharing:` "
        "section.",
    ),
    ("the config must be a YAML string", "Write the config as a string (`key: |` and its YAML)."),
    ("the config is not one YAML document", "Keep one YAML document per key (no `---`)."),
    (
        "sharing must be a mapping",
        "Write `sharing:` as a mapping: `timeSlicing:` or `mps:` with its `resources:`.",
    ),
    (
        "devices set as",
        "Remove `devices:` or write `devices: all`: the device plugin shares every device (a "
        "count or a list of devices is read, then ignored).",
    ),
    ("unsupported type for device", "List devices by index (`0`, `0:1`) or by GPU or MIG UUID."),
    ("unrecognized type for devices", "Remove `devices:` or write `devices: all`."),
    (
        "fully-qualified resource name",
        "Name the resource to share as the plugin advertises it, e.g. `nvidia.com/gpu`.",
    ),
    (
        "incorrect format for resource name",
        "Name the resource to share as the plugin advertises it, e.g. `nvidia.com/gpu`.",
    ),
)
_SHARING_HINT = "A sharing config needs `resources: [{name: nvidia.com/gpu, replicas: N}]`, N >= 2."


def _config_hint(error: str) -> str:
    section, _, rest = error.partition(": ")
    cause = rest if section.startswith("sharing.") else error
    hint = next((h for start, h in _CONFIG_HINTS if cause.startswith(start)), _SHARING_HINT)
    if error.endswith(UNUSED_SECTION):
        return f"Remove the timeSlicing section (mps is the one that applies), or: {hint}"
    return hint


def _users(sharing: Sharing) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for state in sharing.nodes.values():
        if state.key is not None:
            out.setdefault(state.key, []).append(state.node.name)
    return out


def _node_findings(ctx: Context, sharing: Sharing) -> Iterator[Finding]:
    if sharing.missing:
        return
    # the first few keys by name, then a count: a ConfigMap of a hundred keys made the message
    # and the hint longer than a finding holds, cut before they said what fails (MAX_MESSAGE)
    keys = names(sorted(sharing.entries)) or "none"
    # a ConfigMap without keys: no key to choose, one to add
    add = f"add a config key to ConfigMap {sharing.name} (e.g. `any: |` with `version: v1`)"
    defaults_missing: list[str] = []
    default_error = ""
    unset: list[str] = []  # no label, no default: the empty ConfigMap alone fails them
    for state in sharing.nodes.values():
        if state.config is not None or state.error is None:
            continue
        if state.key is None:
            unset.append(state.node.name)
            continue
        if state.key not in sharing.entries and not state.from_label:
            defaults_missing.append(state.node.name)
            default_error = default_error or state.error
            continue
        if state.key in sharing.entries:
            continue  # a refused config: reported at its key
        node = state.node
        yield ctx.finding(
            ID,
            node,
            node.label_path(CONFIG_LABEL),
            f"node {node.name} selects device-plugin config {state.key} ({CONFIG_LABEL}), which "
            f"ConfigMap {sharing.name} does not have (keys: {keys}): the config manager fails "
            f'("{state.error}") and takes the device plugin and GFD down on this node, so its '
            "GPUs are not advertised",
            hint=f"Set {CONFIG_LABEL} to one of {keys}, or add the key to the ConfigMap."
            if sharing.entries
            else f"The ConfigMap has no key: {add}, or remove {CONFIG_LABEL} from the node.",
        )
    if defaults_missing:
        yield ctx.config_finding(
            ID,
            sharing.operator,
            ("devicePlugin", "config", "default"),
            f"devicePlugin.config.default is {sharing.default}, which ConfigMap {sharing.name} "
            f"does not have (keys: {keys}): on the nodes without {CONFIG_LABEL} "
            f'({node_names(defaults_missing)}) the config manager fails ("{default_error}") and '
            "takes the device plugin and GFD down",
            hint=f"Set devicePlugin.config.default to one of {keys}."
            if sharing.entries
            else f"The ConfigMap has no key: {add}.",
        )
    if unset:
        yield _no_keys_finding(ctx, sharing, unset, add)


def _no_keys_finding(ctx: Context, sharing: Sharing, nodes: list[str], add: str) -> Finding:
    """A ConfigMap without keys, on nodes that ask for no config (cmd/config-manager
    updateConfigName: "no configuration files available" comes before the fallbacks)."""
    message = (
        f"ConfigMap {sharing.name} (devicePlugin.config.name) has no config key: even on the "
        f"nodes that name no config ({node_names(nodes)}: no {CONFIG_LABEL}, no "
        'devicePlugin.config.default) the config manager fails ("no configuration files '
        'available") and takes the device plugin and GFD down, so their GPUs are not advertised'
    )
    hint = f"{add[0].upper()}{add[1:]}, or unset devicePlugin.config.name to share no GPU."
    if sharing.manifest is not None:
        manifest = sharing.manifest
        path = ("data",) if manifest.get("data") is not None else ("metadata",)
        return ctx.finding(ID, manifest, path, message, hint)
    where = ("devicePlugin", "config", "data")
    return ctx.config_finding(ID, sharing.operator, where, message, hint)


def _request_finding(ctx: Context, sharing: Sharing, workload: Workload) -> Finding | None:
    """A pod asking for more than one replica of a shared resource, under the name the plugin
    advertises it (``<name>.shared`` with renameByDefault: internal/rm/rm.go ``ValidateRequest``
    runs in the plugin serving that name)."""
    if not workload.has_pods:
        return None
    shared: dict[str, list[str]] = {}  # advertised name -> the nodes sharing it
    failing: set[str] = set()
    for node in ctx.repo.placement.eligible(workload):
        state = sharing.of(node)
        config = state.config if state is not None else None
        for replicated in config.resources if config is not None else ():
            name = replicated.advertised_name
            if workload.requests.get(name, 0) > 1:
                shared.setdefault(name, []).append(node.name)
                if config is not None and config.fail_requests_greater_than_one:
                    failing.add(name)
    if not shared:
        return None
    resource = min(failing) if failing else min(shared)
    amount = workload.requests[resource]
    count = str(amount.numerator) if amount.denominator == 1 else str(float(amount))
    who, nodes = workload.title, node_names(shared[resource])
    if resource in failing:
        message = (
            f"{who} requests {count} {resource} per pod on shared GPUs ({nodes}): the device "
            f'plugin refuses the allocation ("{TOO_LARGE.format(n=count)}") and the pod fails '
            "to start"
        )
        severity = Severity.ERROR
    else:
        message = (
            f"{who} requests {count} {resource} per pod on time-sliced GPUs ({nodes}): replicas "
            "of one GPU give it no more compute or memory, only more claims on the same devices"
        )
        severity = Severity.WARNING
    path = resource_request_path(workload, resource) or workload.spec_path
    hint = "Request 1 shared GPU per pod, or run the workload on nodes without sharing."
    return ctx.finding(ID, workload.manifest, path, message, hint, severity=severity)


def _product_finding(ctx: Context, sharing: Sharing, workload: Workload) -> Finding | None:
    selector = workload.spec_get("nodeSelector")
    wanted = selector.get(PRODUCT_LABEL) if isinstance(selector, dict) else None
    if not isinstance(wanted, str) or not workload.has_pods:
        return None
    renamed = []
    for state in sharing.nodes.values():
        config = state.config
        product = state.node.labels.get(PRODUCT_LABEL)
        if config is None or product != wanted:
            continue
        if shared_product(config, product) != product:
            renamed.append(state.node.name)
    if not renamed:
        return None
    who = workload.title
    return ctx.finding(
        ID,
        workload.manifest,
        (*workload.spec_path, "nodeSelector", PRODUCT_LABEL),
        f"{who} selects {PRODUCT_LABEL}={wanted}, but GPU sharing makes GFD label "
        f"{node_names(renamed)} {wanted}-SHARED: once the config applies, the selector matches "
        "none of them",
        hint=f"Select {wanted}-SHARED as well (a node affinity `In` with both values), or set "
        "renameByDefault so the product label keeps its name.",
        severity=Severity.WARNING,
    )


def check(ctx: Context) -> Iterator[Finding]:
    sharing = build_sharing(ctx.repo)
    if sharing is None:
        return
    yield from _config_findings(ctx, sharing)
    yield from _node_findings(ctx, sharing)
    for workload in ctx.repo.workloads:
        for finding in (
            _request_finding(ctx, sharing, workload),
            _product_finding(ctx, sharing, workload),
        ):
            if finding is not None:
                yield finding
