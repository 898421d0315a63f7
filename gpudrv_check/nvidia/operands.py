"""The GPU Operator's operands: which DaemonSets exist, where they run, what they wait for.

The operator reads one ``ClusterPolicy`` (often rendered from the gpu-operator Helm chart's
values) and creates one DaemonSet per operand. Each DaemonSet selects nodes carrying its label
``nvidia.com/gpu.deploy.<operand>: "true"``; any other value, or no label, keeps it off the node.
The operator writes those labels itself on nodes with ``nvidia.com/gpu.present=true``, by
workload type (``nvidia.com/gpu.workload.config``), honouring values an admin already set, and
removes them all when the node has ``nvidia.com/gpu.deploy.operands=false``.

Operands wait for each other through init containers: the toolkit waits for a working driver,
the device plugin, GFD, DCGM, DCGM Exporter and the MIG manager wait for ``toolkit-ready``, a
file only the validator's toolkit validation writes (so they need the toolkit *and* the
validator), and the validator checks driver, toolkit, CUDA and device plugin. A device plugin
without a toolkit advertises GPUs that workloads then cannot use.

Sources: gpu-operator ``controllers/state_manager.go`` (labels, ``isStateEnabled``),
``api/nvidia/v1/clusterpolicy_types.go`` (``IsEnabled`` defaults), ``controllers/
object_controls.go`` (``applyCommonDaemonsetConfig``), ``assets/*/..._daemonset.yaml`` (init
containers, tolerations) and the chart's ``values.yaml`` / ``templates/clusterpolicy.yaml``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudrv_check.core.records import record
from gpudrv_check.nvidia.upgrade import effective_upgrade_policy

DEPLOY_LABEL_PREFIX = "nvidia.com/gpu.deploy."
DEPLOY_OPERANDS_LABEL = "nvidia.com/gpu.deploy.operands"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
WORKLOAD_CONFIG_LABEL = "nvidia.com/gpu.workload.config"
MIG_CAPABLE_LABEL = "nvidia.com/mig.capable"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
VGPU_HOST_DRIVER_LABEL = "nvidia.com/vgpu.host-driver-version"
MPS_CAPABLE_LABEL = "nvidia.com/mps.capable"
KUBEVIRT = "kubevirt"
KATA = "kata"
#: v26.3 added sandboxWorkloads.mode: kubevirt (the CRD default) or kata
SANDBOX_MODE_SINCE: tuple[int, int] = (26, 3)
#: operands that exist only in one sandbox mode (isStateEnabled, v26.3 on)
_MODE_ONLY: Mapping[str, str] = {
    "sandbox-device-plugin": KUBEVIRT,
    "kata-sandbox-device-plugin": KATA,
    "cc-manager": KATA,
}

WORKLOAD_CONTAINER = "container"
WORKLOAD_VM_PASSTHROUGH = "vm-passthrough"
WORKLOAD_VM_VGPU = "vm-vgpu"
WORKLOAD_CONFIGS: tuple[str, ...] = (WORKLOAD_CONTAINER, WORKLOAD_VM_PASSTHROUGH, WORKLOAD_VM_VGPU)

CLUSTERPOLICY = "clusterpolicy"
HELM = "helm"

_ALL = WORKLOAD_CONFIGS
#: What the toolkit-validation init containers wait for: /run/nvidia/validations/toolkit-ready,
#: which only the operator-validator's toolkit validation writes (cmd/nvidia-validator/main.go
#: toolkitStatusFile; assets/state-device-plugin, gpu-feature-discovery, state-dcgm,
#: state-dcgm-exporter, state-mig-manager, state-mps-control-daemon). Without the validator on
#: the node these operands wait forever, even with the toolkit running.
TOOLKIT_READY: tuple[str, ...] = ("container-toolkit", "operator-validator")
_VM = (WORKLOAD_VM_PASSTHROUGH, WORKLOAD_VM_VGPU)


@record(frozen=True)
class Operand:
    """One operand DaemonSet the operator manages.

    ``spec_key`` is both the ClusterPolicy ``spec`` key and the Helm values key (``None`` when
    the operand has no switch of its own). ``default_enabled`` is what an unset ``enabled``
    means in a ClusterPolicy (the Go ``IsEnabled`` default; ``None`` = no switch, always on);
    ``chart_default_enabled`` is the gpu-operator chart's ``values.yaml`` default. ``workloads``
    lists the node workload types that get the deploy label; ``sandbox`` operands also need
    ``sandboxWorkloads.enabled``. ``needs`` are operands its init containers wait for.
    """

    name: str
    spec_key: str | None
    daemonset: str
    default_enabled: bool | None
    chart_default_enabled: bool | None
    workloads: tuple[str, ...]
    sandbox: bool = False
    needs: tuple[str, ...] = ()
    needs_by_workload: tuple[tuple[str, tuple[str, ...]], ...] = ()
    mig_capable_only: bool = False
    note: str = ""
    # an operand selected by another operand's deploy label plus more (the MPS control daemon)
    label_of: str | None = None
    extra_selector: tuple[tuple[str, str], ...] = ()
    # operator releases (year, month) that have it; None: every release
    since: tuple[int, int] | None = None
    until: tuple[int, int] | None = None  # first release without it
    # the first release whose chart values.yaml has chart_default_enabled (before it, the
    # opposite), and the node selector its asset added before a release
    chart_default_since: tuple[int, int] | None = None
    old_selector: tuple[tuple[str, str], ...] = ()
    old_selector_until: tuple[int, int] | None = None
    # the first release whose asset DaemonSet tolerates nvidia.com/gpu:NoSchedule (before it,
    # an empty `daemonsets.tolerations` leaves it none); None: every release's does
    asset_toleration_since: tuple[int, int] | None = None

    def selector_in(self, release: tuple[int, int] | None) -> tuple[tuple[str, str], ...]:
        """What its DaemonSet selects besides its deploy label in `release` (None: newest)."""
        old = self.old_selector_until
        if old is not None and release is not None and release < old:
            return (*self.extra_selector, *self.old_selector)
        return self.extra_selector

    @property
    def deploy_label(self) -> str:
        return f"{DEPLOY_LABEL_PREFIX}{self.label_of or self.name}"

    def in_release(self, release: tuple[int, int] | None) -> bool:
        """Whether the release deploys it at all (``None``: the newest release)."""
        if release is None:
            return self.until is None
        if self.since is not None and release < self.since:
            return False
        return self.until is None or release < self.until


_CATALOG: tuple[Operand, ...] = (
    Operand(
        "driver",
        "driver",
        "nvidia-driver-daemonset",
        True,
        True,
        (WORKLOAD_CONTAINER,),
        note="loads the kernel module and creates /dev/nvidia*; one DaemonSet per kernel "
        "in precompiled mode",
    ),
    Operand(
        "container-toolkit",
        "toolkit",
        "nvidia-container-toolkit-daemonset",
        True,
        True,
        (WORKLOAD_CONTAINER,),
        needs=("driver",),
        note="registers the NVIDIA runtime; waits for the driver (containerised or host)",
    ),
    Operand(
        "device-plugin",
        "devicePlugin",
        "nvidia-device-plugin-daemonset",
        True,
        True,
        (WORKLOAD_CONTAINER,),
        needs=TOOLKIT_READY,
        note="advertises nvidia.com/gpu to the kubelet",
    ),
    Operand(
        "gpu-feature-discovery",
        "gfd",
        "gpu-feature-discovery",
        True,
        True,
        (WORKLOAD_CONTAINER,),
        needs=TOOLKIT_READY,
        note="writes nvidia.com/gpu.* and nvidia.com/cuda.* labels",
    ),
    Operand(
        "dcgm-exporter",
        "dcgmExporter",
        "nvidia-dcgm-exporter",
        True,
        True,
        (WORKLOAD_CONTAINER,),
        needs=TOOLKIT_READY,
        note="GPU metrics",
    ),
    Operand(
        "dcgm",
        "dcgm",
        "nvidia-dcgm",
        True,
        False,
        (WORKLOAD_CONTAINER,),
        needs=TOOLKIT_READY,
        note="standalone DCGM host engine; off in the chart, on when a CR leaves it unset",
    ),
    Operand(
        "mps-control-daemon",
        "devicePlugin",
        "nvidia-device-plugin-mps-control-daemon",
        True,
        True,
        (WORKLOAD_CONTAINER,),
        needs=TOOLKIT_READY,
        label_of="device-plugin",
        extra_selector=((MPS_CAPABLE_LABEL, "true"),),
        note="the device plugin's MPS control daemon: on device-plugin nodes GFD labels "
        "nvidia.com/mps.capable=true (state-mps-control-daemon, switched by devicePlugin.enabled)",
    ),
    Operand(
        "operator-validator",
        "validator",
        "nvidia-operator-validator",
        None,
        None,
        (WORKLOAD_CONTAINER,),
        needs=("driver", "container-toolkit", "device-plugin"),
        note="always deployed; validates driver, toolkit, CUDA and device plugin",
    ),
    Operand(
        "node-status-exporter",
        "nodeStatusExporter",
        "nvidia-node-status-exporter",
        False,
        False,
        (WORKLOAD_CONTAINER,),
        note="node status metrics",
    ),
    Operand(
        "mig-manager",
        "migManager",
        "nvidia-mig-manager",
        True,
        True,
        (WORKLOAD_CONTAINER,),
        needs=TOOLKIT_READY,
        mig_capable_only=True,
        note="labelled only on MIG-capable nodes (mig.capable=true, or an A100/A30/H100 "
        "product name) that are not vGPU guests",
    ),
    Operand(
        "sandbox-device-plugin",
        "sandboxDevicePlugin",
        "nvidia-sandbox-device-plugin-daemonset",
        False,
        True,
        _VM,
        sandbox=True,
        needs_by_workload=(
            (WORKLOAD_VM_PASSTHROUGH, ("vfio-manager",)),
            (WORKLOAD_VM_VGPU, ("vgpu-device-manager",)),
        ),
        note="KubeVirt device plugin for GPUs handed to VMs",
    ),
    Operand(
        "kata-sandbox-device-plugin",
        "kataSandboxDevicePlugin",
        "nvidia-kata-sandbox-device-plugin-daemonset",
        False,
        True,
        (WORKLOAD_VM_PASSTHROUGH,),
        sandbox=True,
        needs_by_workload=((WORKLOAD_VM_PASSTHROUGH, ("vfio-manager",)),),
        since=(26, 3),
        note="Kata device plugin for GPUs handed to Kata VMs (sandboxWorkloads.mode: kata)",
    ),
    Operand(
        "sandbox-validator",
        None,
        "nvidia-sandbox-validator",
        None,
        None,
        _VM,
        sandbox=True,
        needs_by_workload=(
            (WORKLOAD_VM_PASSTHROUGH, ("vfio-manager",)),
            (WORKLOAD_VM_VGPU, ("vgpu-manager", "vgpu-device-manager")),
        ),
        note="deployed whenever sandbox workloads are enabled",
    ),
    Operand(
        "vfio-manager",
        "vfioManager",
        "nvidia-vfio-manager",
        False,
        True,
        (WORKLOAD_VM_PASSTHROUGH,),
        sandbox=True,
        note="binds GPUs to vfio-pci",
    ),
    Operand(
        "vgpu-manager",
        "vgpuManager",
        "nvidia-vgpu-manager-daemonset",
        False,
        False,
        (WORKLOAD_VM_VGPU,),
        sandbox=True,
        note="vGPU host driver",
    ),
    Operand(
        "vgpu-device-manager",
        "vgpuDeviceManager",
        "nvidia-vgpu-device-manager",
        False,
        True,
        (WORKLOAD_VM_VGPU,),
        sandbox=True,
        needs=("vgpu-manager",),
        note="creates vGPU devices",
        # assets/state-vgpu-device-manager/0600_daemonset.yaml: no tolerations in v25.10 and
        # v26.3, nvidia.com/gpu:NoSchedule from v26.7
        asset_toleration_since=(26, 7),
    ),
    Operand(
        "kata-manager",
        "kataManager",
        "nvidia-kata-manager",
        False,
        False,
        (WORKLOAD_VM_PASSTHROUGH,),
        sandbox=True,
        until=(26, 7),  # isStateEnabled: always false from v26.7 (deprecated)
        note="Kata runtime classes",
    ),
    Operand(
        "cc-manager",
        "ccManager",
        "nvidia-cc-manager",
        False,
        True,
        _VM,
        sandbox=True,
        # v25.10 values.yaml ccManager.enabled: false (true from v26.3), and its
        # assets/state-cc-manager/0500_daemonset.yaml selected nvidia.com/cc.capable too
        chart_default_since=(26, 3),
        old_selector=(("nvidia.com/cc.capable", "true"),),
        old_selector_until=(26, 3),
        note="confidential computing mode",
    ),
)

#: Operand name -> catalog entry, in deployment order.
OPERANDS: Mapping[str, Operand] = {operand.name: operand for operand in _CATALOG}
OPERAND_NAMES: tuple[str, ...] = tuple(OPERANDS)

#: The toleration every operand DaemonSet asset carries (and the chart's daemonsets.tolerations).
DEFAULT_OPERAND_TOLERATION: Mapping[str, str] = {
    "key": "nvidia.com/gpu",
    "operator": "Exists",
    "effect": "NoSchedule",
}

# Nodes with these product names count as MIG-capable when GFD has not said (state_manager.go).
_MIG_PRODUCT_HINTS = ("h100", "a100", "a30")


@record(frozen=True)
class DriverSettings:
    """The ``driver`` section of a ClusterPolicy (or chart values) with defaults applied.

    ``repository``/``image``/``version`` are ``None`` when unset: a ClusterPolicy then falls back
    to the operator's ``DRIVER_IMAGE`` environment, and the chart's default version depends on
    the chart release.
    """

    enabled: bool
    use_precompiled: bool
    use_nvidia_driver_crd: bool
    repository: str | None
    image: str | None
    version: str | None
    upgrade_policy: dict[str, Any]


def operand(name: object) -> Operand | None:
    """The catalog entry for an operand name, or ``None``."""
    return OPERANDS.get(name) if isinstance(name, str) else None


def deploy_label(name: object) -> str | None:
    """``nvidia.com/gpu.deploy.<operand>`` for a known operand, else ``None``."""
    entry = operand(name)
    return entry.deploy_label if entry else None


def operand_for_deploy_label(key: object) -> str | None:
    """The operand a ``nvidia.com/gpu.deploy.*`` label key switches, or ``None``.

    ``nvidia.com/gpu.deploy.operands`` is the node-wide switch, not an operand: ``None``.
    """
    if not isinstance(key, str) or not key.startswith(DEPLOY_LABEL_PREFIX):
        return None
    name = key[len(DEPLOY_LABEL_PREFIX) :]
    return name if name in OPERANDS else None


def dependencies(name: object, workload: object = None) -> tuple[str, ...]:
    """Operands whose readiness ``name``'s init containers wait for.

    Sandbox operands depend on the node's workload type; pass ``workload`` (``vm-passthrough``
    or ``vm-vgpu``) to include those. Unknown operands have none.
    """
    entry = operand(name)
    if entry is None:
        return ()
    extra: tuple[str, ...] = ()
    for config, needs in entry.needs_by_workload:
        if config == workload:
            extra = needs
    return entry.needs + tuple(need for need in extra if need not in entry.needs)


def default_operand_toleration() -> dict[str, str]:
    """``{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}`` (a fresh copy)."""
    return dict(DEFAULT_OPERAND_TOLERATION)


def _spec(values: object) -> Mapping[str, Any]:
    """The mapping that holds the operand sections: chart values, a spec, or a whole CR."""
    if not isinstance(values, Mapping):
        return {}
    spec = values.get("spec")
    if values.get("kind") == "ClusterPolicy" and isinstance(spec, Mapping):
        return spec
    return values


def _section(values: object, key: str | None) -> Mapping[str, Any]:
    if key is None:
        return {}
    section = _spec(values).get(key)
    return section if isinstance(section, Mapping) else {}


def _as_bool(value: object, source: str) -> bool | None:
    if isinstance(value, bool):
        return value
    if source == HELM and isinstance(value, str) and value in ("true", "false"):
        return value == "true"  # the chart renders the value unquoted, so YAML reads a bool
    return None


def sandbox_workloads_enabled(values: object, source: str = CLUSTERPOLICY) -> bool:
    """``sandboxWorkloads.enabled``, false when unset (CRD and chart agree)."""
    return _as_bool(_section(values, "sandboxWorkloads").get("enabled"), source) is True


def default_workload(values: object) -> str:
    """``sandboxWorkloads.defaultWorkload`` when valid, else ``container``."""
    value = _section(values, "sandboxWorkloads").get("defaultWorkload")
    return value if value in WORKLOAD_CONFIGS else WORKLOAD_CONTAINER


def sandbox_mode(values: object, operator_version: object = None) -> str | None:
    """``sandboxWorkloads.mode`` (``kubevirt`` when unset, the CRD default); ``None`` before
    v26.3, which has no modes."""
    from gpudrv_check.nvidia.driver_image import operator_release

    release = operator_release(operator_version)
    if release is not None and release < SANDBOX_MODE_SINCE:
        return None
    value = _section(values, "sandboxWorkloads").get("mode")
    return KATA if value == KATA else KUBEVIRT


def operands_from_operator_config(
    values: object, source: str = CLUSTERPOLICY, operator_version: object = None
) -> dict[str, bool]:
    """Which operands the operator deploys cluster-wide, per operand name.

    ``values`` is a ClusterPolicy (whole object or its ``spec``) for ``source="clusterpolicy"``,
    or the gpu-operator chart values (a HelmRelease ``spec.values``) for ``source="helm"``.
    An unset or invalid ``enabled`` means the operand's verified default for that source: for
    example ``dcgm`` is on when a ClusterPolicy leaves it unset but off in the chart, and
    ``nodeStatusExporter`` is off in both. Sandbox operands also need
    ``sandboxWorkloads.enabled``; ``operator-validator`` has no switch and is always on.
    With ``driver.useNvidiaDriverCRD`` the driver comes from NVIDIADriver objects instead, but
    it is still reported as deployed here.

    Per release (``isStateEnabled``): from v26.3 ``sandboxWorkloads.mode`` picks the KubeVirt
    (``sandbox-device-plugin``) or the Kata (``kata-sandbox-device-plugin``, ``cc-manager``)
    operands; v26.7 never deploys the deprecated ``kata-manager``. The MPS control daemon
    follows ``devicePlugin.enabled``.
    """
    from gpudrv_check.nvidia.driver_image import operator_release

    source = HELM if source == HELM else CLUSTERPOLICY
    sandbox = sandbox_workloads_enabled(values, source)
    release = operator_release(operator_version)
    mode = sandbox_mode(values, operator_version)
    enabled: dict[str, bool] = {}
    for entry in _CATALOG:
        if not entry.in_release(release) or (mode and _MODE_ONLY.get(entry.name, mode) != mode):
            enabled[entry.name] = False
            continue
        default = entry.chart_default_enabled if source == HELM else entry.default_enabled
        since = entry.chart_default_since
        if source == HELM and default is not None and since and release and release < since:
            default = not default
        if entry.spec_key is None or default is None:
            switch = True
        else:
            section = _section(values, entry.spec_key)
            value = _as_bool(section.get("enabled"), source)
            if source == HELM and value is None and "enabled" in section:
                # a null in chart values: Helm drops the key, the ClusterPolicy the template
                # renders has no value there, and the operator's own default decides
                default = entry.default_enabled if entry.default_enabled is not None else True
            switch = default if value is None else value
        enabled[entry.name] = switch and (sandbox or not entry.sandbox)
    return enabled


def operator_config_problems(values: object, source: str = CLUSTERPOLICY) -> list[str]:
    """``<key>.enabled`` values that are not booleans (and so fall back to the default)."""
    source = HELM if source == HELM else CLUSTERPOLICY
    problems = []
    for entry in _CATALOG:
        if entry.spec_key is None:
            continue
        raw = _section(values, entry.spec_key).get("enabled")
        if raw is not None and _as_bool(raw, source) is None:
            problems.append(f"{entry.spec_key}.enabled: expected true or false, got {raw!r}")
    return problems


def operator_tolerations(values: object, asset_tolerates: bool = True) -> list[dict[str, Any]]:
    """The tolerations every operand DaemonSet gets.

    A non-empty ``daemonsets.tolerations`` list *replaces* the assets' default
    ``nvidia.com/gpu:NoSchedule`` (Exists) toleration rather than adding to it
    (applyCommonDaemonsetConfig); an empty or missing list leaves the asset's own, which is that
    toleration, or none where the asset has none (`asset_tolerates` false). Same path in a
    ClusterPolicy spec and in chart values (the chart fills the list when the values omit it).
    Entries that are not mappings are dropped.
    """
    raw = _section(values, "daemonsets").get("tolerations")
    if isinstance(raw, list) and raw:
        return [dict(item) for item in raw if isinstance(item, Mapping)]
    return [default_operand_toleration()] if asset_tolerates else []


def driver_settings(values: object, source: str = CLUSTERPOLICY) -> DriverSettings:
    """The ``driver`` section with defaults, the same shape in a ClusterPolicy and chart values.

    Defaults: ``enabled`` true, ``usePrecompiled`` false. For ``source="helm"`` the chart's
    ``repository: nvcr.io/nvidia`` and ``image: driver`` apply when unset, and
    ``driver.nvidiaDriverCRD.enabled`` is read as ``useNvidiaDriverCRD``.
    """
    source = HELM if source == HELM else CLUSTERPOLICY
    section = _section(values, "driver")

    def text(key: str) -> str | None:
        value = section.get(key)
        if isinstance(value, bool):
            return None
        if isinstance(value, (int, float)):
            return str(value)  # an unquoted version such as 550 in hand-written YAML
        return value if isinstance(value, str) and value else None

    crd = section.get("useNvidiaDriverCRD")
    if source == HELM:
        nested = section.get("nvidiaDriverCRD")
        crd = nested.get("enabled") if isinstance(nested, Mapping) else None
    enabled = _as_bool(section.get("enabled"), source)
    precompiled = _as_bool(section.get("usePrecompiled"), source)
    repository, image = text("repository"), text("image")
    if source == HELM:
        repository = repository or "nvcr.io/nvidia"
        image = image or "driver"
    return DriverSettings(
        enabled=True if enabled is None else enabled,
        use_precompiled=precompiled is True,
        use_nvidia_driver_crd=_as_bool(crd, source) is True,
        repository=repository,
        image=image,
        version=text("version"),
        # a null upgradePolicy in chart values renders none: the CRD's defaults (autoUpgrade off)
        upgrade_policy=effective_upgrade_policy(
            section.get("upgradePolicy"),
            CLUSTERPOLICY
            if "upgradePolicy" in section and section["upgradePolicy"] is None
            else source,
        ),
    )


def has_mig_capable_gpu(labels: object) -> bool:
    """Whether the operator treats the node as MIG-capable (``hasMIGCapableGPU``).

    vGPU guests never are; otherwise GFD's ``nvidia.com/mig.capable`` decides, and without it an
    A100/A30/H100 product name does.
    """
    if not isinstance(labels, Mapping):
        return False
    if labels.get(VGPU_HOST_DRIVER_LABEL):
        return False
    if MIG_CAPABLE_LABEL in labels:
        return labels.get(MIG_CAPABLE_LABEL) == "true"
    product = labels.get(GPU_PRODUCT_LABEL)
    return isinstance(product, str) and any(h in product.lower() for h in _MIG_PRODUCT_HINTS)


def workload_config(
    labels: object, sandbox_enabled: bool = False, default: str = WORKLOAD_CONTAINER
) -> str:
    """The node's GPU workload type: always ``container`` unless sandbox workloads are enabled,
    then its ``nvidia.com/gpu.workload.config`` label when valid, else ``default``."""
    if not sandbox_enabled:
        return WORKLOAD_CONTAINER
    value = labels.get(WORKLOAD_CONFIG_LABEL) if isinstance(labels, Mapping) else None
    if value in WORKLOAD_CONFIGS:
        return value
    return default if default in WORKLOAD_CONFIGS else WORKLOAD_CONTAINER


def expected_deploy_labels(
    labels: object,
    sandbox_enabled: bool = False,
    default: str = WORKLOAD_CONTAINER,
    operator_version: object = None,
    sandbox_mode_value: object = None,
    gpu_present: bool | None = None,
) -> dict[str, str]:
    """The ``nvidia.com/gpu.deploy.*`` labels a node ends up with after the operator
    relabels it (``updateGPUStateLabels``).

    ``gpu_present`` is ``nvidia.com/gpu.present`` after ``reconcileCommonGPULabel`` (from NFD's
    PCI labels; ``None``: the label as written). A node that is not a GPU node loses every
    deploy label when it had ``gpu.present=true`` written (the operator resets it to
    ``false``: ``labelGPUNodes`` v25.10/v26.3, ``reconcileCommonGPULabel`` +
    ``updateGPUStateLabels`` v26.7), and from v26.7 in any case (``updateGPUStateLabels``
    strips them from every node without the common GPU label); before v26.7 the labels of a
    node never marked present stay as written.

    ``nvidia.com/gpu.deploy.operands=false`` removes them all. Otherwise labels of the node's
    workload type are added with ``"true"`` unless already present (an admin's ``false`` stays),
    labels of other workload types are removed, and ``mig-manager`` is added for MIG-capable
    container nodes.

    An empty value (``nvidia.com/gpu.deploy.driver: ""``, which k8s-driver-manager leaves when
    it pauses an operand that never ran) is kept before v26.7, so the operand stays off; v26.7
    treats it as absent and sets ``"true"`` (``addGPUStateLabels``). ``operator_version=None``
    means the newest behaviour.
    """
    from gpudrv_check.nvidia.driver_image import operator_release

    release = operator_release(operator_version)
    v26_7 = release is None or release >= (26, 7)
    empty_is_absent = v26_7
    if not isinstance(labels, Mapping):
        return {}
    # by key: what is read of a node's labels is recorded by key (core/label_reads.py)
    current = {
        key: labels[key]
        for key in labels
        if isinstance(key, str) and operand_for_deploy_label(key) is not None
    }
    written = labels.get(GPU_PRESENT_LABEL) == "true"
    present = written if gpu_present is None else gpu_present
    if not present:
        return {} if written or v26_7 else current
    if labels.get(DEPLOY_OPERANDS_LABEL) == "false":
        return {}
    config = workload_config(labels, sandbox_enabled, default)
    mode = sandbox_mode({"sandboxWorkloads": {"mode": sandbox_mode_value}}, operator_version)
    wanted = [
        entry.deploy_label
        for entry in _CATALOG
        if config in entry.workloads
        and not entry.mig_capable_only
        and entry.label_of is None
        and entry.since is None
    ]
    if config == WORKLOAD_VM_PASSTHROUGH and mode == KATA:
        # getEffectiveStateLabels: the Kata device plugin's label replaces the KubeVirt one
        wanted = [
            OPERANDS["kata-sandbox-device-plugin"].deploy_label
            if key == OPERANDS["sandbox-device-plugin"].deploy_label
            else key
            for key in wanted
        ]
    mig_label = OPERANDS["mig-manager"].deploy_label
    result = {
        key: value
        for key, value in current.items()
        if key in wanted or (key == mig_label and config == WORKLOAD_CONTAINER)
    }
    for key in wanted:
        if empty_is_absent and result.get(key) == "":
            result[key] = "true"
        result.setdefault(key, "true")
    if config == WORKLOAD_CONTAINER and has_mig_capable_gpu(labels):
        result.setdefault(mig_label, "true")
    return result


def operands_on_node(labels: object, enabled: Mapping[str, bool] | None = None) -> tuple[str, ...]:
    """Operands whose DaemonSet selects this node: deploy label exactly ``"true"`` and the
    operand enabled cluster-wide (``enabled`` from ``operands_from_operator_config``; ``None``
    means all enabled). Taints are not considered here."""
    if not isinstance(labels, Mapping):
        return ()
    return tuple(
        entry.name
        for entry in _CATALOG
        if labels.get(entry.deploy_label) == "true"
        and all(labels.get(k) == v for k, v in entry.extra_selector)
        and (enabled is None or enabled.get(entry.name, False))
    )
