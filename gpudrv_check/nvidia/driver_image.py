"""Which driver image the GPU Operator pulls for a node, computed from the node's labels.

A containerised driver loads a kernel module into the host kernel, so the image has to match
the node exactly. The precompiled image tag spells that contract out::

    <driver-branch>-<kernel-version.full>-<os-tag>      e.g. 525-5.15.0-69-generic-ubuntu22.04

The parts come from labels: the driver branch from GPU Feature Discovery
(``nvidia.com/cuda.driver-version.major``, or the deprecated ``nvidia.com/cuda.driver.major``),
the kernel and OS from Node Feature Discovery. A node whose combination was never built and
pushed gets a driver pod that cannot pull its image, and its GPUs silently disappear.

The functions reproduce the GPU Operator's own logic (``controllers/object_controls.go``
``resolveDriverTag``, ``controllers/state_manager.go`` ``getGPUNodeOSInfo``,
``internal/state/nodepool.go`` ``getOSTag``). Everything is pure: labels in, strings or result
objects out. Nothing raises on bad input; results carry ``None`` and a reason instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from gpudrv_check.core.finding import quoted
from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.core.records import record
from gpudrv_check.k8s.numbers import parse_digits

# --- label keys ------------------------------------------------------------------------------
# GFD writes both the current and the deprecated keys (k8s-device-plugin internal/lm/nvml.go).
DRIVER_VERSION_MAJOR_LABEL = "nvidia.com/cuda.driver-version.major"
DRIVER_VERSION_MINOR_LABEL = "nvidia.com/cuda.driver-version.minor"
DRIVER_VERSION_REVISION_LABEL = "nvidia.com/cuda.driver-version.revision"
DRIVER_VERSION_FULL_LABEL = "nvidia.com/cuda.driver-version.full"
DEPRECATED_DRIVER_MAJOR_LABEL = "nvidia.com/cuda.driver.major"
DEPRECATED_DRIVER_MINOR_LABEL = "nvidia.com/cuda.driver.minor"
DEPRECATED_DRIVER_REV_LABEL = "nvidia.com/cuda.driver.rev"

KERNEL_VERSION_LABEL = "feature.node.kubernetes.io/kernel-version.full"
OS_RELEASE_ID_LABEL = "feature.node.kubernetes.io/system-os_release.ID"
OS_VERSION_ID_LABEL = "feature.node.kubernetes.io/system-os_release.VERSION_ID"

GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
DEPLOY_DRIVER_LABEL = "nvidia.com/gpu.deploy.driver"
DEPLOY_OPERANDS_LABEL = "nvidia.com/gpu.deploy.operands"

#: Logical fact name -> label keys tried in order. ``driver_facts`` accepts overrides per name.
DEFAULT_LABEL_KEYS: Mapping[str, tuple[str, ...]] = {
    "driver_major": (DRIVER_VERSION_MAJOR_LABEL, DEPRECATED_DRIVER_MAJOR_LABEL),
    "driver_minor": (DRIVER_VERSION_MINOR_LABEL, DEPRECATED_DRIVER_MINOR_LABEL),
    "driver_revision": (DRIVER_VERSION_REVISION_LABEL, DEPRECATED_DRIVER_REV_LABEL),
    "driver_full": (DRIVER_VERSION_FULL_LABEL,),
    "kernel": (KERNEL_VERSION_LABEL,),
    "os_id": (OS_RELEASE_ID_LABEL,),
    "os_version_id": (OS_VERSION_ID_LABEL,),
}

#: Facts without which no precompiled tag can be formed.
TAG_FACTS: tuple[str, ...] = ("driver_major", "kernel", "os_id", "os_version_id")

# --- operator error texts (kept verbatim so findings can quote the operator) ------------------
PRECOMPILED_OS_CONFLICT_ERROR = (
    "different OS versions found for the same kernel version {kernel}, unsupported configuration"
)
MISSING_KERNEL_LABEL_ERROR = (
    "Failed to get kernel version of GPU node using Node Feature Discovery (NFD) labels. "
    "Is NFD installed in the cluster?"
)
PRECOMPILED_DIGEST_ERROR = (
    "specifying image tag / digest is not supported when precompiled is enabled"
)
PRECOMPILED_PATH_ERROR = (
    "unable to resolve driver image path for pre-compiled drivers, driver.repository, "
    "driver.image and driver.version have to be specified in the ClusterPolicy"
)

# --- OS tag rule per operator release ------------------------------------------------------
#: v26.3 started dropping the minor version for rocky, and for rhel from major 10.
OS_TAG_PARTIAL_TRUNCATION_SINCE: tuple[int, int] = (26, 3)
#: v26.7 drops it for every rhel, rocky and ol release.
OS_TAG_RHEL_FAMILY_TRUNCATION_SINCE: tuple[int, int] = (26, 7)
#: OS IDs whose tag carries only the major version from v26.7 on.
RHEL_FAMILY_OS_IDS: frozenset[str] = frozenset({"rhel", "rocky", "ol"})

# Docker reference grammar (distribution/reference), enough to validate and split references.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REFERENCE_RE = re.compile(
    rf"^(?:(?P<domain>{_DOMAIN})/)?(?P<path>{_COMPONENT}(?:/{_COMPONENT})*)"
    rf"(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?$"
)
_TAG_RE = lazy_compile(rf"^{_TAG}$")
_OPERATOR_VERSION_RE = lazy_compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+][0-9A-Za-z.-]+)?$")
_DRIVER_VERSION_RE = lazy_compile(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?$")
_KERNEL_ARCH_RE = lazy_compile(r"x86_64(?:_64k)?|aarch64(?:_64k)?")

DOCKER_HUB_DOMAIN = "docker.io"
# Docker treats these hostnames as Docker Hub when normalising names.
_DOCKER_HUB_ALIASES = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})


def _text(value: object) -> str | None:
    """A label-like value as text; ints are accepted because hand-written YAML drops quotes."""
    if isinstance(value, str):
        return value if value != "" else None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


@record(frozen=True)
class NodeDriverFacts:
    """What a node's labels say about its driver, kernel and OS.

    Every field is ``None`` when the label is absent, empty or not text. ``driver_major`` falls
    back from the current GFD key to the deprecated one and then to ``driver-version.full``.
    """

    driver_major: str | None = None
    driver_minor: str | None = None
    driver_revision: str | None = None
    driver_full: str | None = None
    kernel: str | None = None
    os_id: str | None = None
    os_version_id: str | None = None
    gpu_present: bool = False
    deploy_driver: str | None = None
    deploy_operands: str | None = None

    @property
    def os_release(self) -> str | None:
        """``ID`` + ``VERSION_ID`` untruncated (``rhel9.4``), as the operator compares them."""
        if self.os_id is None or self.os_version_id is None:
            return None
        return f"{self.os_id}{self.os_version_id}"

    @property
    def driver_version(self) -> str | None:
        """The full driver version (``550.90.07``) when the labels give one, else ``None``."""
        if self.driver_full is not None:
            return self.driver_full
        if self.driver_major is None or self.driver_minor is None:
            return None
        parts = [self.driver_major, self.driver_minor]
        if self.driver_revision is not None:
            parts.append(self.driver_revision)
        return ".".join(parts)


@record(frozen=True)
class TagResult:
    """A computed image tag, or why none could be computed.

    ``missing`` lists the primary label key of each fact that was absent; ``error`` explains any
    other failure. ``tag`` is set only when both are empty.
    """

    tag: str | None
    missing: tuple[str, ...] = ()
    error: str | None = None
    # the OS labels are there, and the operator forms no OS tag from them (`os_tag` is None)
    no_os_tag: bool = False
    # the node is in no NVIDIADriver pool: the pool of its name selects another value of this
    # label (nvidiadriver.py `node_pools`)
    excluded_by: str | None = None

    @property
    def ok(self) -> bool:
        return self.tag is not None


@record(frozen=True)
class ImageRefResult:
    """A full driver image reference, or the error the operator would hit building it.

    ``note`` carries advice that does not stop the reference from being built.
    """

    reference: str | None
    error: str | None = None
    note: str | None = None

    @property
    def ok(self) -> bool:
        return self.reference is not None


@record(frozen=True)
class ImageReference:
    """A parsed container image reference, normalised the way Docker names images."""

    domain: str
    path: str
    tag: str | None
    digest: str | None

    @property
    def name(self) -> str:
        """``domain/path`` with Docker Hub defaults applied (``docker.io/library/ubuntu``)."""
        return f"{self.domain}/{self.path}"


@record(frozen=True)
class OsConflict:
    """GPU nodes that share a kernel but run different OS releases (precompiled mode refuses)."""

    kernel: str
    os_releases: tuple[str, ...]
    nodes: tuple[str, ...]

    @property
    def message(self) -> str:
        return PRECOMPILED_OS_CONFLICT_ERROR.format(kernel=self.kernel)


def parse_image_reference(reference: object) -> ImageReference | None:
    """Parse ``[domain/]path[:tag][@digest]`` and apply Docker Hub defaults.

    A first component with a dot, a colon or equal to ``localhost`` is a registry; otherwise the
    image lives on ``docker.io`` and a single-component path gains ``library/``. Returns ``None``
    for anything that is not a valid reference.
    """
    if not isinstance(reference, str):
        return None
    match = _REFERENCE_RE.match(reference.strip())
    if match is None:
        return None
    domain, path = match.group("domain"), match.group("path")
    if domain is not None and "." not in domain and ":" not in domain and domain != "localhost":
        # "nvidia/cuda" parses as domain "nvidia": it is a Docker Hub namespace, not a registry.
        if not re.fullmatch(_COMPONENT, domain):
            return None
        path = f"{domain}/{path}"
        domain = None
    if domain is None or domain.lower() in _DOCKER_HUB_ALIASES:
        domain = DOCKER_HUB_DOMAIN
        if "/" not in path:
            path = f"library/{path}"
    return ImageReference(domain.lower(), path, match.group("tag"), match.group("digest"))


def operator_release(version: object) -> tuple[int, int] | None:
    """``(year, month)`` of a GPU Operator version such as ``v25.10.0``, ``25.10.0`` or ``v26.3``.

    Returns ``None`` for anything else (``main``, ``latest``, a commit id).
    """
    text = _text(version)
    if text is None:
        return None
    match = _OPERATOR_VERSION_RE.match(text.strip())
    if match is None:
        return None
    year, month = parse_digits(match.group(1)), parse_digits(match.group(2))
    return None if year is None or month is None else (year, month)


def os_tag(os_id: object, version_id: object, operator_version: object = None) -> str | None:
    """The OS part of a driver image tag, as the given operator release builds it.

    - up to v25.10: always ``ID`` + ``VERSION_ID`` (``ubuntu22.04``, ``rhel9.4``, ``rocky9.4``);
    - v26.3: ``rocky`` keeps only the major version (``rocky9``); ``rhel`` too from major 10
      (``rhel10``, but ``rhel9.4``); a VERSION_ID whose major is not a number is an operator
      error for every OS (``getGPUNodeOSTag``), reported here as ``None``;
    - v26.7 and later: ``rhel``, ``rocky`` and ``ol`` keep only the major version (``rhel9``).

    ``ubuntu``, ``rhcos``, ``sles`` and every other ID keep the full VERSION_ID in all releases.
    ``operator_version=None`` or an unparseable version means the newest behaviour. Returns
    ``None`` when ID or VERSION_ID is missing.
    """
    os_name, version = _text(os_id), _text(version_id)
    if os_name is None or version is None:
        return None
    release = operator_release(operator_version)
    major = version.split(".")[0]
    if release is not None and release < OS_TAG_PARTIAL_TRUNCATION_SINCE:
        return f"{os_name}{version}"
    if release is not None and release < OS_TAG_RHEL_FAMILY_TRUNCATION_SINCE:
        number = parse_digits(major)  # getGPUNodeOSTag: strconv.Atoi of every OS's major
        if number is None:
            return None  # v26.3 fails with "error processing OS major version"
        if os_name == "rocky":
            return f"{os_name}{major}"
        if os_name == "rhel":
            return f"{os_name}{major}" if number >= 10 else f"{os_name}{version}"
        return f"{os_name}{version}"
    if os_name in RHEL_FAMILY_OS_IDS:
        return f"{os_name}{major}"
    return f"{os_name}{version}"


def _label_candidates(name: str, label_keys: Mapping[str, object] | None) -> tuple[str, ...]:
    override = label_keys.get(name) if isinstance(label_keys, Mapping) else None
    if isinstance(override, str) and override:
        return (override,)
    if isinstance(override, Sequence) and not isinstance(override, str):
        keys = tuple(key for key in override if isinstance(key, str) and key)
        if keys:
            return keys
    return DEFAULT_LABEL_KEYS[name]


def _first_value(labels: Mapping[object, object], keys: Sequence[str]) -> str | None:
    for key in keys:
        value = _text(labels.get(key))
        if value is not None:
            return value
    return None


def driver_facts(
    labels: object, label_keys: Mapping[str, object] | None = None
) -> tuple[NodeDriverFacts, tuple[str, ...]]:
    """Read a node's driver, kernel and OS facts from its labels.

    ``label_keys`` overrides where a fact is read from: a mapping from a name in
    ``DEFAULT_LABEL_KEYS`` (``driver_major``, ``kernel``, ``os_id`` ...) to a label key or a list
    of keys tried in order. Returns the facts and the primary label key of every fact needed for
    a precompiled tag (``TAG_FACTS``) that is missing. Labels that are not a mapping give empty
    facts with every tag fact missing.
    """
    if not isinstance(labels, Mapping):
        labels = {}
    values = {
        name: _first_value(labels, _label_candidates(name, label_keys))
        for name in DEFAULT_LABEL_KEYS
    }
    full = values["driver_full"]
    full_match = _DRIVER_VERSION_RE.match(full) if full is not None else None
    if full_match is not None:
        # the full version label alone is enough to know the branch
        values["driver_major"] = values["driver_major"] or full_match.group(1)
        values["driver_minor"] = values["driver_minor"] or full_match.group(2)
        values["driver_revision"] = values["driver_revision"] or full_match.group(3)
    facts = NodeDriverFacts(
        driver_major=values["driver_major"],
        driver_minor=values["driver_minor"],
        driver_revision=values["driver_revision"],
        driver_full=full,
        kernel=values["kernel"],
        os_id=values["os_id"],
        os_version_id=values["os_version_id"],
        gpu_present=_text(labels.get(GPU_PRESENT_LABEL)) == "true",
        deploy_driver=_text(labels.get(DEPLOY_DRIVER_LABEL)),
        deploy_operands=_text(labels.get(DEPLOY_OPERANDS_LABEL)),
    )
    missing = tuple(
        _label_candidates(name, label_keys)[0] for name in TAG_FACTS if getattr(facts, name) is None
    )
    return facts, missing


def precompiled_tag(branch: object, kernel: object, ostag: object) -> str | None:
    """``<branch>-<kernel>-<ostag>``, e.g. ``525-5.15.0-69-generic-ubuntu22.04``.

    Returns ``None`` when a part is missing or the result is not a valid image tag.
    """
    parts = (_text(branch), _text(kernel), _text(ostag))
    if any(part is None for part in parts):
        return None
    tag = "-".join(part for part in parts if part is not None)
    return tag if _TAG_RE.match(tag) else None


def driver_image_tag(
    labels: object,
    operator_version: object = None,
    label_keys: Mapping[str, object] | None = None,
) -> TagResult:
    """The precompiled driver image tag a node needs, from its labels.

    The OS part follows ``os_tag`` for ``operator_version`` (``None`` = newest behaviour).
    Missing labels are listed in the result rather than guessed.
    """
    if not isinstance(labels, Mapping):
        return TagResult(None, error="node labels are not a mapping")
    facts, missing = driver_facts(labels, label_keys)
    return tag_from_facts(facts, missing, operator_version)


def tag_from_facts(
    facts: NodeDriverFacts, missing: tuple[str, ...], operator_version: object = None
) -> TagResult:
    """``driver_image_tag`` from what ``driver_facts`` read of the labels (a mapping)."""
    if missing:
        return TagResult(None, missing=missing)
    ostag = os_tag(facts.os_id, facts.os_version_id, operator_version)
    if ostag is None:
        return TagResult(
            None,
            error=f"operator {operator_version} cannot form an OS tag from "
            f"ID={quoted(facts.os_id)} VERSION_ID={quoted(facts.os_version_id)}",
            no_os_tag=True,
        )
    tag = precompiled_tag(facts.driver_major, facts.kernel, ostag)
    if tag is None:
        written = f"{facts.driver_major}-{facts.kernel}-{ostag}"
        return TagResult(None, error=f"{quoted(written)} is not a valid image tag")
    return TagResult(tag)


def driver_branch(version: object) -> str | None:
    """The driver branch of a version: ``550.90.07`` -> ``550``; ``550`` -> ``550``.

    Returns ``None`` for digests and anything that is not a dotted driver version.
    """
    text = _text(version)
    if text is None:
        return None
    match = _DRIVER_VERSION_RE.match(text.strip())
    return match.group(1) if match else None


def driver_image_reference(
    repository: object,
    image: object,
    version: object,
    kernel: object,
    ostag: object,
    precompiled: bool,
) -> ImageRefResult:
    """The driver image reference a ClusterPolicy's ``driver`` settings resolve to on a node.

    Mirrors ``resolveDriverTag``:

    - precompiled: ``<repository>/<image>:<version>-<kernel>-<ostag>``, where ``version`` is the
      driver *branch* (``550``), because precompiled images are tagged per branch and kernel;
    - otherwise: ``<repository>/<image>:<version>-<ostag>`` (``driver:550.90.07-ubuntu22.04``);
    - a ``version`` of the form ``sha256:...`` pins a digest: ``<repository>/<image>@sha256:...``
      with no OS suffix;
    - with ``repository`` and ``version`` both empty, ``image`` is taken as a full path that
      already carries its tag or digest (the kbld/carvel style); the OS suffix (and in precompiled
      mode the kernel) is still appended to a tag, never to a digest.

    A digest in precompiled mode is an error (the NVIDIADriver API rejects it; the ClusterPolicy
    path would build an invalid reference). Any result that is not a valid image reference is
    returned as an error instead.
    """
    repo = _text(repository) or ""
    name = _text(image) or ""
    ver = _text(version) or ""
    kernel_text, ostag_text = _text(kernel), _text(ostag)
    note = None
    if precompiled:
        if ver.startswith("sha256:") or "@" in name:
            return ImageRefResult(None, error=PRECOMPILED_DIGEST_ERROR)
        if kernel_text is None:
            return ImageRefResult(None, error=MISSING_KERNEL_LABEL_ERROR)
        if repo == "" and ver == "":
            if name == "":
                return ImageRefResult(None, error=PRECOMPILED_PATH_ERROR)
            base = f"{name}-{kernel_text}"
        else:
            base = f"{repo}/{name}:{ver}-{kernel_text}"
            if "." in ver:
                note = (
                    f"precompiled images are tagged by driver branch (e.g. "
                    f"'{driver_branch(ver) or ver}'), not by full version '{ver}'"
                )
    elif repo == "" and ver == "":
        if name == "":
            return ImageRefResult(None, error="empty driver image path")
        base = name
    elif ver.startswith("sha256:"):
        base = f"{repo}/{name}@{ver}"
    else:
        base = f"{repo}/{name}:{ver}"
    if "sha256:" in base:
        reference = base  # a digest pins the image: no OS suffix
    elif ostag_text is None:
        return ImageRefResult(None, error="the node's OS tag is unknown (NFD OS labels missing)")
    else:
        reference = f"{base}-{ostag_text}"
    parsed = parse_image_reference(reference)
    if parsed is None:
        return ImageRefResult(None, error=f"'{reference}' is not a valid image reference")
    if parsed.tag is None and parsed.digest is None:
        return ImageRefResult(None, error=f"'{reference}' has neither a tag nor a digest")
    return ImageRefResult(reference, note=note)


def precompiled_os_conflicts(nodes: Iterable[object]) -> list[OsConflict]:
    """Kernels shared by GPU nodes that report different OS releases.

    ``nodes`` yields ``(node_name, kernel, os_release)`` triples; pass the untruncated
    ``ID``+``VERSION_ID`` (``NodeDriverFacts.os_release``) because that is what the operator
    compares, in every release. The operator refuses precompiled mode with
    ``PRECOMPILED_OS_CONFLICT_ERROR`` when this list is not empty. Malformed entries and nodes
    without a kernel are skipped (``driver_facts`` reports those), and so are nodes whose
    release is ``None``; pass ``""`` for a node without OS labels to compare it as the operator
    does (``getKernelVersionsMap`` joins the missing labels' empty values). Sorted by kernel.
    """
    seen: dict[str, dict[str, set[str]]] = {}
    if not isinstance(nodes, Iterable):
        return []
    for entry in nodes:
        if not isinstance(entry, Sequence) or isinstance(entry, str) or len(entry) != 3:
            continue
        node, kernel = _text(entry[0]), _text(entry[1])
        release = "" if entry[2] == "" else _text(entry[2])
        if node is None or kernel is None or release is None:
            continue
        seen.setdefault(kernel, {}).setdefault(release, set()).add(node)
    conflicts = []
    for kernel in sorted(seen):
        by_release = seen[kernel]
        if len(by_release) > 1:
            names = sorted(set().union(*by_release.values()))
            conflicts.append(OsConflict(kernel, tuple(sorted(by_release)), tuple(names)))
    return conflicts


def sanitized_kernel_version(kernel: object) -> str | None:
    """The kernel as it appears in a precompiled DaemonSet name (``getSanitizedKernelVersion``).

    Drops the architecture (images are multi-arch), turns ``_`` into ``.``, trims trailing dots
    and lowercases: ``5.14.0-427.13.1.el9_4.x86_64`` -> ``5.14.0-427.13.1.el9.4``.
    """
    text = _text(kernel)
    if text is None:
        return None
    return _KERNEL_ARCH_RE.sub("", text).replace("_", ".").rstrip(".").lower()


# --- which nodes are GPU nodes: nvidia.com/gpu.present as the operator writes it ---------------
#: NFD's PCI labels for NVIDIA (vendor 10de) devices: any, any 3D controller, any VGA controller
#: (controllers/state_manager.go ``gpuNodeLabels``; the value must be exactly "true")
GPU_PCI_LABELS: tuple[str, ...] = (
    "feature.node.kubernetes.io/pci-10de.present",
    "feature.node.kubernetes.io/pci-0302_10de.present",
    "feature.node.kubernetes.io/pci-0300_10de.present",
)
PCI_LABEL_PREFIX = "feature.node.kubernetes.io/pci-"


def has_gpu_pci_labels(labels: object) -> bool:
    """``hasGPULabels``: one of ``GPU_PCI_LABELS`` with the value ``"true"``."""
    if not isinstance(labels, Mapping):
        return False
    return any(labels.get(key) == "true" for key in GPU_PCI_LABELS)


def has_pci_labels(labels: object) -> bool:
    """Whether NFD's PCI feature labels are on the node at all (any ``pci-*`` key)."""
    if not isinstance(labels, Mapping):
        return False
    return any(isinstance(key, str) and key.startswith(PCI_LABEL_PREFIX) for key in labels)


def derived_gpu_present(labels: object) -> str | None:
    """``nvidia.com/gpu.present`` after the operator's relabelling, in every release.

    ``reconcileCommonGPULabel`` (v26.7, ``labelGPUNodes`` before): a node with a GPU PCI label
    and no ``gpu.present=true`` gets ``true``; a node with ``gpu.present=true`` and no such label
    gets ``false``; any other value (absent, ``false``, empty) is left as written. Returns the
    value the label ends up with (``None``: absent).
    """
    if not isinstance(labels, Mapping):
        return None
    written = labels.get(GPU_PRESENT_LABEL)
    present = written == "true"
    if has_gpu_pci_labels(labels):
        return "true"
    if present:
        return "false"
    return written if isinstance(written, str) else None


# --- the ClusterPolicy's one OS tag ------------------------------------------------------------
@record(frozen=True)
class ClusterOsTag:
    """The OS tag(s) a ClusterPolicy may take from its GPU nodes.

    ``getGPUNodeOSInfo`` (v26.7; ``getGPUNodeOSTag`` v26.3, ``kernelFullVersion`` v25.10) lists
    GPU nodes with ``Limit(1)`` through the controller-runtime cache, whose order is the
    informer store's (a Go map: no order at all), and builds every image from that one node.
    So with one tag every node agrees; with several, each reconcile may pick any of them.
    """

    by_tag: Mapping[str, tuple[str, ...]]  # OS tag -> GPU nodes with it
    unlabelled: tuple[str, ...] = ()  # GPU nodes without the OS labels

    @property
    def tag(self) -> str | None:
        """The tag when every labelled GPU node agrees, else ``None``."""
        return next(iter(self.by_tag)) if len(self.by_tag) == 1 else None

    @property
    def mixed(self) -> bool:
        return len(self.by_tag) > 1


def cluster_os_tag(
    nodes: Iterable[tuple[str, Mapping[str, object]]], operator_version: object = None
) -> ClusterOsTag:
    """The OS tags of ``(name, labels)`` GPU nodes, as the release builds them (sorted)."""
    by_tag: dict[str, list[str]] = {}
    unlabelled: list[str] = []
    for name, labels in nodes:
        tag = os_tag(
            labels.get(OS_RELEASE_ID_LABEL), labels.get(OS_VERSION_ID_LABEL), operator_version
        )
        if tag is None:
            unlabelled.append(name)
        else:
            by_tag.setdefault(tag, []).append(name)
    return ClusterOsTag(
        {tag: tuple(sorted(by_tag[tag])) for tag in sorted(by_tag)}, tuple(sorted(unlabelled))
    )


#: `driver.version` of the gpu-operator chart's values.yaml per release (deployments/gpu-operator/
#: values.yaml at each tag): every one a full version, which no precompiled image is tagged with
CHART_DRIVER_VERSIONS: dict[tuple[int, int], str] = {
    (25, 10): "580.95.05",  # v25.10.1: 580.105.08 (CHART_DRIVER_VERSION_PATCHES)
    (26, 3): "580.126.20",  # v26.3.0 to v26.3.3
    (26, 7): "595.91.07",
}
CHART_DRIVER_VERSION_PATCHES: dict[tuple[int, int, int], str] = {(25, 10, 1): "580.105.08"}


def chart_driver_version(operator_version: object) -> str | None:
    """The chart's default ``driver.version`` for an operator (chart) release, when known."""
    release = operator_release(operator_version)
    if release is None:
        return None
    match = _OPERATOR_VERSION_RE.match(str(operator_version).strip())
    patch = parse_digits(match.group(3)) if match and match.group(3) else 0
    found = CHART_DRIVER_VERSION_PATCHES.get((*release, patch or 0))
    return found or CHART_DRIVER_VERSIONS.get(release)


def precompiled_version_problem(version: object) -> str | None:
    """Why a precompiled ``driver.version`` pulls a tag that is never built, or ``None``.

    Precompiled images are tagged by branch (``550-5.15.0-119-generic-ubuntu22.04``); the
    operator puts ``driver.version`` there verbatim (``resolveDriverTag``), so a full version
    (``550.90.07``) or a digest names an image that does not exist.
    """
    text = _text(version)
    if text is None:
        return None
    if text.startswith("sha256:"):
        return PRECOMPILED_DIGEST_ERROR
    if not text.isdigit():
        branch = driver_branch(text)
        hint = f"'{branch}'" if branch else "a driver branch such as '550'"
        return (
            f"precompiled driver images are tagged by driver branch, so version '{text}' names "
            f"'{text}-<kernel>-<os-tag>', which is never built; use {hint}"
        )
    return None
