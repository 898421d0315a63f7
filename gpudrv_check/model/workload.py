"""Workloads: anything that carries a pod template, with where each part of it was written."""

from __future__ import annotations

import json
from dataclasses import field
from fractions import Fraction
from typing import Any

from gpudrv_check.core.finding import Finding, Location, ObjectRef
from gpudrv_check.core.located import Path, scalar_text, type_name
from gpudrv_check.core.manifest import Manifest, value_at
from gpudrv_check.core.memo import TextMemo
from gpudrv_check.core.records import record
from gpudrv_check.k8s.labels import (
    dns1123_label_error,
    label_key_errors,
    label_value_errors,
    labels_valid,
)
from gpudrv_check.k8s.podspec import POD_SPEC_PATHS
from gpudrv_check.k8s.quantity import value
from gpudrv_check.k8s.resources import container_requests, pod_requests
from gpudrv_check.model.pod_resources import (
    field_path_text,
    invalid_field,
    resource_findings,
    selector_findings,
)
from gpudrv_check.model.workload_kinds import (
    DEFAULT_CONTAINERS,
    ContainerSource,
    KindTable,
    PodTemplate,
    kueue_queued,
    templates_of,
)
from gpudrv_check.read.policy import builtin

GPU_RESOURCE = "nvidia.com/gpu"

WORKLOAD_API_VERSIONS = frozenset(
    (
        "v1",
        "apps/v1",
        "apps/v1beta1",
        "apps/v1beta2",
        "extensions/v1beta1",
        "batch/v1",
        "batch/v1beta1",
    )
)
#: kinds whose replica count the disruption controller can read (a scale subresource)
SCALABLE_KINDS = frozenset(("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"))


_UNREAD = object()
#: annotation the kubelet puts on the API mirror of a static pod; a drain and the operator's
#: pod deletion leave those pods alone
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"

#: core kind names a custom kind may share (findings then add its group)
_CORE_NAMES = frozenset((*POD_SPEC_PATHS, "Service"))


def _pod_labels_path(kind: str) -> Path:
    if kind == "Pod":
        return ("metadata", "labels")
    return (*POD_SPEC_PATHS[kind][:-1], "metadata", "labels")


# plain slotted classes, not pydantic models: they are built from documents already read (never
# from user-written input to validate) once per pod template, and a large repo holds tens of
# thousands of them
@record(slots=True, kw_only=True)
class Container:
    name: str | None = None
    image: str | None = None
    init: bool = False
    path: Path  # relative to the manifest
    gpus: int = 0
    resources_key: str = "resources"  # TrainJob's trainer writes them as resourcesPerNode
    resources: Any = None  # the located resources mapping, as written
    restart_policy: Any = None  # an init container with `Always` is a sidecar


@record(slots=True, kw_only=True)
class Workload:
    """A pod template and what the rules need to know about it."""

    manifest: Manifest
    spec_path: Path
    pod_spec: Any = None  # the located pod spec mapping (LMap), or None
    pod_labels: dict[str, str] = field(default_factory=dict)
    labels_path: Path | None = None  # where the template's labels are written
    replicas: int | None = None  # pods it asks for; None when the count is not a fixed number
    replicas_path: Path | None = None  # the key that count comes from, when one is written
    containers: list[Container] = field(default_factory=list)
    gpus: int = 0  # nvidia.com/gpu per pod (the scheduler's effective request)
    # every resource one pod requests (k8s/resources.py pod_requests; no RuntimeClass overhead)
    requests: dict[str, Fraction] = field(default_factory=dict)
    # the API server would refuse the object (a GPU040 error that is not scheduler-only):
    # it never gets pods, so the placement rules leave it to GPU040
    api_rejects: bool = False
    # a template of a custom resource (policies/workloads.yaml): what findings call it, ...
    role: str | None = None
    # ... whether the object makes no pods itself (a runtime or workflow template others use),
    template_only: bool = False
    # ... whether its pods finish by themselves (None: the core kind decides),
    completes: bool | None = None
    # ... and the pods' owner as the disruption controller resolves it, with its scale
    owner_kind: str | None = None
    owner_name: str | None = None
    owner_replicas: int | None = None
    owner_scalable: bool = False
    # tolerations and node selectors added at admission, by whom (model/admission.py)
    admitted: list[str] = field(default_factory=list)
    admitted_at: Path | None = None  # the key that made them (the queue-name label, …)
    # the pod priority the Priority admission plugin gives it (model/admission.py
    # `pod_priority`); None when it is not known (a class neither in the repo nor built in)
    priority: int | None = 0
    # the pod spec as written (pod_spec may be admission's copy), found on first use
    _written: Any = field(default=_UNREAD, init=False, repr=False, compare=False)
    # whether it is a static pod's mirror, found on first use (read once per PDB and per
    # upgrade step that looks at its pods)
    _mirror: bool | None = field(default=None, init=False, repr=False, compare=False)
    # short_title, made on first use (findings about budgets name a workload once per budget)
    _short_title: str | None = field(default=None, init=False, repr=False, compare=False)
    # node_name and preemption_policy, read from the written spec on first use
    _node_name: Any = field(default=_UNREAD, init=False, repr=False, compare=False)
    _preemption: Any = field(default=_UNREAD, init=False, repr=False, compare=False)
    _gpu_path: Any = field(default=_UNREAD, init=False, repr=False, compare=False)
    # (the fields of the written spec its placement reads, their repr), made when it was
    # validated (`placement_fields`): placement keys its verdicts by the same text
    _placement_read: Any = field(default=None, init=False, repr=False, compare=False)

    @property
    def mirror_pod(self) -> bool:
        """A static pod's API mirror (MIRROR_POD_ANNOTATION), which nothing evicts."""
        if self._mirror is None:
            self._mirror = MIRROR_POD_ANNOTATION in self.manifest.annotations
        return self._mirror

    @property
    def kind(self) -> str:
        return self.manifest.kind

    @property
    def name(self) -> str | None:
        return self.manifest.name

    @property
    def namespace(self) -> str:
        return self.manifest.namespace or "default"

    @property
    def ref(self) -> ObjectRef:
        return self.manifest.ref

    @property
    def scalable(self) -> bool:
        return self.owner_scalable if self.owner_kind else self.kind in SCALABLE_KINDS

    @property
    def kind_text(self) -> str:
        """The kind as findings say it; a custom kind named like a core one (Knative's Service,
        Volcano's Job) with its API group: ``Job (batch.volcano.sh)``."""
        if self.owner_kind and self.kind in _CORE_NAMES:
            return f"{self.kind} ({self.manifest.api_version.rpartition('/')[0]})"
        return self.kind

    @property
    def title(self) -> str:
        """How findings name it: ``Deployment ml/trainer``, ``RayCluster ml/llm worker group
        gpu-workers``."""
        who = f"{self.kind_text} {self.namespace}/{self.name}"
        return f"{who} {self.role}" if self.role else who

    def admitted_by(self, source: str) -> bool:
        """Whether an admission source (model/admission.py) changed its pod spec."""
        return any(note.startswith(source) for note in self.admitted)

    @property
    def short_title(self) -> str:
        """``Deployment trainer``, ``RayCluster llm worker group gpu-workers``."""
        if self._short_title is None:
            who = f"{self.kind_text} {self.name or '?'}"
            self._short_title = f"{who} {self.role}" if self.role else who
        return self._short_title

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    def location(self, path: Path) -> Location:
        return self.manifest.location(path)

    def placement_text(self, fields: tuple[Any, bool, Any, Any]) -> str:
        """The repr of `fields` (`placement_fields` of its pod spec): the one made when the
        spec was validated when these are the very objects it read then (the pod spec is
        never changed in place: admission replaces it, and the values it changes, with
        copies)."""
        read = self._placement_read
        if read is not None and all(a is b for a, b in zip(read[0], fields, strict=True)):
            return read[1]
        return repr(fields)

    def spec_get(self, *path: str | int) -> Any:
        """``manifest.get(*spec_path, *path)``: the pod spec as written, not as admitted."""
        spec = self._written
        if spec is _UNREAD:
            spec = self._written = self.manifest.get(*self.spec_path)
        return value_at(spec, path)

    @property
    def node_name(self) -> str | None:
        found = self._node_name
        if found is _UNREAD:  # read once: placement and capacity ask for every workload
            value = self.spec_get("nodeName")
            found = self._node_name = value if isinstance(value, str) and value else None
        return found

    @property
    def host_network(self) -> bool:
        return self.spec_get("hostNetwork") is True

    @property
    def tolerations(self) -> list:
        value = self.spec_get("tolerations")
        return value if isinstance(value, list) else []

    @property
    def placeable(self) -> bool:
        """Whether its pods are placed: the API server accepts it and it is not scaled to 0
        (a template other objects make pods from is placed too)."""
        return not self.api_rejects and self.replicas != 0

    @property
    def has_pods(self) -> bool:
        """Whether pods of it can exist: placeable, and not a template only."""
        return self.placeable and not self.template_only

    @property
    def preemption_policy(self) -> str | None:
        found = self._preemption
        if found is _UNREAD:  # read once (the capacity simulation asks per workload)
            value = self.spec_get("preemptionPolicy")
            found = self._preemption = value if isinstance(value, str) else None
        return found

    def admitted_preemption(self, policy: str) -> None:
        """The preemption policy admission gives the pod (its PriorityClass's,
        model/admission.py): it replaces what the spec says, as the plugin does."""
        self._preemption = policy

    def gpu_request_path(self) -> Path | None:
        """Where the largest ``nvidia.com/gpu`` amount is written (limits before requests);
        found once (the pending messages of its replicas and several rules ask)."""
        found = self._gpu_path
        if found is not _UNREAD:
            return found
        best: tuple[int, Path] | None = None
        for c in self.containers:
            for section in ("limits", "requests"):
                path = (*c.path, c.resources_key, section, GPU_RESOURCE)
                if self.manifest.get(*path) is not None and (best is None or c.gpus > best[0]):
                    best = (c.gpus, path)
        found = self._gpu_path = best[1] if best else None
        return found


_PLACEMENT_HINT = (
    "Fix the field at this line: the API server rejects the whole object, so none of its pods "
    "is ever created."
)
_SCHEDULER_ONLY_HINT = (
    "The API server accepts this, but the scheduler treats the term as matching no node; fix "
    "or remove it."
)


def _placement_findings(
    manifest: Manifest, spec_path: Path, workload: Workload
) -> tuple[list[Finding], bool]:
    """GPU040 for nodeSelector, node affinity and tolerations the API server (or the scheduler)
    cannot use, each at its offending key; and whether the API server would refuse the object."""
    problems = _placement_problems(workload.pod_spec, workload)
    findings = []
    for problem in problems:
        path = (*spec_path, *problem.path)
        finding = invalid_field(
            manifest,
            path,
            f"{field_path_text(path)}: {problem.message}",
            _SCHEDULER_ONLY_HINT if problem.scheduler_only else _PLACEMENT_HINT,
        )
        if problem.scheduler_only:
            # the object is valid; only this term is dead (GPU010 says so when nothing is left)
            finding = finding.copy_with(
                severity=builtin("invalid-field").severity_of("scheduler-only")
            )
        findings.append(finding)
    return findings, any(not p.scheduler_only for p in problems)


#: the placement problems of the pod specs read so far, by what they read (core/memo.py)
_PLACEMENT_PROBLEMS: TextMemo[tuple[Any, ...]] = TextMemo()


def placement_fields(spec: dict) -> tuple[Any, bool, Any, Any]:
    """What node placement reads of a pod spec: its nodeSelector; whether its `affinity` is
    a mapping, and then its node affinity, else the `affinity` itself (`affinity: x` and
    `affinity: {nodeAffinity: x}` are not the same spec); its tolerations."""
    affinity = spec.get("affinity")
    if isinstance(affinity, dict):
        return (
            spec.get("nodeSelector"),
            True,
            affinity.get("nodeAffinity"),
            spec.get("tolerations"),
        )
    return (spec.get("nodeSelector"), False, affinity, spec.get("tolerations"))


def _placement_problems(pod_spec: Any, workload: Workload | None = None) -> tuple[Any, ...]:
    """The API server's problems with a pod spec's nodeSelector, node affinity and
    tolerations (k8s/nodeaffinity.py, k8s/taints.py), paths relative to the spec. They read
    `placement_fields` alone: a spec that writes them as one read before has the same
    problems. Their text is kept on `workload`, for its placement."""
    if not isinstance(pod_spec, dict):
        return _placement_validation(pod_spec)
    read = placement_fields(pod_spec)
    text = repr(read)
    if workload is not None:
        workload._placement_read = (read, text)
    return _PLACEMENT_PROBLEMS.by_text(text, _placement_validation, pod_spec)


def _placement_validation(pod_spec: Any) -> tuple[Any, ...]:
    from gpudrv_check.k8s.nodeaffinity import validate_pod_node_placement
    from gpudrv_check.k8s.taints import validate_tolerations

    problems = validate_pod_node_placement(pod_spec)
    if isinstance(pod_spec, dict):
        problems += [
            p._replace(path=("tolerations", *p.path))
            for p in validate_tolerations(pod_spec.get("tolerations"))
        ]
    return tuple(problems)


def pod_requests_of(containers: list[Container], pod_spec: Any) -> dict[str, Fraction]:
    """What one pod requests, from its containers as found (core paths or a kind's own) and the
    pod-level resources: k8s/resources.py ``pod_requests`` over the same shape."""
    view: dict[str, Any] = {
        "initContainers": [
            {"resources": c.resources, "restartPolicy": c.restart_policy}
            for c in containers
            if c.init
        ],
        "containers": [{"resources": c.resources} for c in containers if not c.init],
    }
    if isinstance(pod_spec, dict) and "resources" in pod_spec:
        view["resources"] = pod_spec["resources"]
    return pod_requests(view)


def _container(cpath: Path, item: dict, source: ContainerSource) -> Container:
    image = item.get("image")
    if source.image_repository is not None:
        image = _split_image(item, source)
    name = item.get("name") if isinstance(item.get("name"), str) else source.name
    return Container(
        name=name,
        image=image if isinstance(image, str) else None,
        init=source.init,
        path=cpath,
        gpus=value(container_requests(item).get(GPU_RESOURCE, Fraction(0))),
        resources=item.get("resources"),
        restart_policy=item.get("restartPolicy"),
    )


def _split_image(item: dict, source: ContainerSource) -> str | None:
    """An image written as `{repository, tag}` fields (NIMService), as one reference."""
    repository = _at(item, source.image_repository or ())
    tag = _at(item, source.image_tag) if source.image_tag is not None else None
    if not isinstance(repository, str) or not repository:
        return None
    if isinstance(tag, (str, int)) and not isinstance(tag, bool) and str(tag):
        return f"{repository}:{tag}"
    return repository


def _at(node: Any, path: Path) -> Any:
    for step in path:
        node = node.get(step) if isinstance(node, dict) else None
    return node


def _containers(
    manifest: Manifest,
    spec_path: Path,
    findings: list[Finding],
    sources: tuple[ContainerSource, ...] = DEFAULT_CONTAINERS,
) -> list[Container]:
    out: list[Container] = []
    for source in sources:
        path = (*spec_path, *source.path)
        items = manifest.get(*path)
        if items is None or (not source.path and not isinstance(items, dict)):
            continue  # the pod spec itself (NIMService): its own GPU040 says it is no mapping
        field = str(source.path[-1]) if source.path else "container"
        if source.single:
            if isinstance(items, dict):
                out.append(_container(path, items, source))
            else:
                hint = "Write the container as a mapping."
                findings.append(invalid_field(manifest, path, f"{field} must be a mapping", hint))
            continue
        if not isinstance(items, list):
            findings.append(
                invalid_field(
                    manifest,
                    path,
                    f"{field} must be a list, not a {type_name(items)}",
                    f"Write {field} as a list of containers (`- name: …`).",
                )
            )
            continue
        for index, item in enumerate(items):
            cpath = (*path, index)
            if not isinstance(item, dict):
                findings.append(
                    invalid_field(
                        manifest,
                        cpath,
                        f"{field}[{index}] must be a mapping",
                        "Each container is a mapping with name and image.",
                    )
                )
                continue
            out.append(_container(cpath, item, source))
    group = manifest.api_version.rpartition("/")[0] if manifest.api_version else ""
    if (group, manifest.kind) in _VALIDATED_KINDS and sources == DEFAULT_CONTAINERS:
        findings.extend(_name_problems(manifest, out))
    return out


#: (API group, kind) of the objects whose pod template the API server validates when the
#: object is created (a custom resource's template, a Volcano Job's say, is validated only in
#: the pods made from it)
_VALIDATED_KINDS = frozenset(
    (
        ("", "Pod"),
        ("", "ReplicationController"),
        ("apps", "Deployment"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("apps", "ReplicaSet"),
        ("batch", "Job"),
        ("batch", "CronJob"),
    )
)


def _name_problems(manifest: Manifest, containers: list[Container]) -> list[Finding]:
    """core/validation validateContainerCommon: each container's name required and a DNS-1123
    label; validateContainers then validateInitContainers: unique, a collision said at the later
    app container, or at the init container (whose names are checked against the app ones)."""
    out: list[Finding] = []
    seen: set[str] = set()
    for c in sorted(containers, key=lambda c: c.init):  # app containers first, in order
        text = c.name
        if text and text not in seen and dns1123_label_error(text) is None:
            seen.add(text)  # the usual case
            continue
        written = manifest.get(*c.path, "name")
        if written is not None and not isinstance(written, str):
            continue  # the type check of the container says so
        text = written or ""
        where = field_path_text(c.path)
        path = (*c.path, "name")
        if not text:
            at = path if written is not None else c.path  # no name key: the container
            out.append(invalid_field(manifest, at, f"{where}.name: Required value", _NAME_FIX))
        else:
            why = dns1123_label_error(text)
            if why is not None:
                message = f"{where}.name: Invalid value: {json.dumps(text)}: {why}"
                out.append(invalid_field(manifest, path, message, _NAME_FIX))
        if text in seen:
            message = f"{where}.name: Duplicate value: {json.dumps(text)}"
            at = path if written is not None else c.path
            out.append(invalid_field(manifest, at, message, _UNIQUE_FIX))
        seen.add(text)
    return out


def _pod_field_findings(manifest: Manifest, spec_path: Path, pod_spec: Any) -> list[Finding]:
    """GPU040 for the pod-spec fields of k8s/podfields.py (nodeName, priorityClassName,
    runtimeClassName, preemptionPolicy, host-network ports, overhead, init containers' image and
    containers' restartPolicy), each at its key; only for the core kinds whose template the API
    server validates (a custom resource's template is validated in its pods only)."""
    group = manifest.api_version.rpartition("/")[0] if manifest.api_version else ""
    if (group, manifest.kind) not in _VALIDATED_KINDS:
        return []
    from gpudrv_check.k8s.podfields import pod_field_problems

    problems = pod_field_problems(pod_spec)
    if not problems:
        return []
    where = field_path_text(spec_path)
    out = []
    for problem in problems:
        if not problem.pods_only:
            said = f"the API server rejects the {manifest.kind}"
        elif manifest.kind == "Pod":
            said = "the RuntimeClass admission plugin rejects the Pod"
        else:
            said = f"the RuntimeClass admission plugin rejects every pod of the {manifest.kind}"
        message = f"{where}.{problem.message} ({said})"
        out.append(invalid_field(manifest, (*spec_path, *problem.path), message, problem.fix))
    return out


_NAME_FIX = "Name the container with lower-case letters, digits and '-'."
_UNIQUE_FIX = "Give each container of the pod a name of its own."


def _replicas(manifest: Manifest, findings: list[Finding]) -> int | None:
    kind = manifest.kind
    if kind == "Pod":
        return 1
    if kind in SCALABLE_KINDS:
        value = manifest.get("spec", "replicas")
        if value is None:
            return 1  # the API default
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            findings.append(
                invalid_field(
                    manifest,
                    ("spec", "replicas"),
                    f"spec.replicas must be a non-negative integer, not "
                    f"{scalar_text(manifest.get('spec') or {}, 'replicas') or type_name(value)!r}",
                    "Write `replicas: 3`.",
                )
            )
            return None
        if value > INT32_MAX:
            findings.append(_past_int32(manifest, ("spec", "replicas"), value))
            return None
        return value
    if kind == "Job":
        _job_count_problems(manifest, findings)
        return _job_pods(manifest, ("spec",))
    if kind == "CronJob" and manifest.get("spec", "suspend") is True:
        return 0  # cronjob_controllerv2 syncCronJob: a suspended CronJob starts no Job
    return None  # DaemonSet: one per eligible node; CronJob: per schedule


def _job_count_problems(manifest: Manifest, findings: list[Finding]) -> None:
    """batch/validation ValidateJobSpec: parallelism and completions non-negative; and int32,
    past which the API server cannot decode them (`_past_int32`)."""
    for key in ("parallelism", "completions"):
        number = manifest.get("spec", key)
        if not isinstance(number, int) or isinstance(number, bool):
            continue
        if number > INT32_MAX:
            findings.append(_past_int32(manifest, ("spec", key), number))
        elif number < 0:
            findings.append(
                invalid_field(
                    manifest,
                    ("spec", key),
                    f"spec.{key}: Invalid value: {number}: must be greater than or equal to 0",
                    f"Write `{key}:` as 0 or more.",
                )
            )


#: the API's pod counts are int32: a larger number does not decode (encoding/json: "cannot
#: unmarshal number ... of type int32"), so the API server refuses the object
INT32_MAX = 2**31 - 1


def _past_int32(manifest: Manifest, path: tuple[str, ...], value: int) -> Finding:
    text = scalar_text(manifest.get(*path[:-1]) or {}, path[-1]) or str(value)
    return invalid_field(
        manifest,
        path,
        f"{'.'.join(path)}: {text} is past the largest int32 ({INT32_MAX}): the API server cannot "
        f"decode the {manifest.kind}",
        f"Write `{path[-1]}:` as a number of pods up to {INT32_MAX}.",
    )


def whole_count(value: Any) -> int | None:
    """A pod count as the API takes it: a whole int32 (0 to 2^31-1), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT32_MAX:
        return value
    return None


def _job_pods(manifest: Manifest, spec: Path, job: Path = ()) -> int | None:
    """The pods a Job runs at once (job_controller.go manageJob): none while suspended, unless
    Kueue admits it (its `batch/job` integration lifts `suspend`; the queue label is the Job's
    own, at `job`); else `parallelism` (default 1), never more than `completions` when that is
    set (NonIndexed and Indexed alike, before any pod succeeds)."""
    queued = kueue_queued(manifest.get(*job) if job else manifest.data)
    if manifest.get(*spec, "suspend") is True and not queued:
        return 0
    return job_parallel_pods(manifest, spec)


def job_parallel_pods(manifest: Manifest, spec: Path = ("spec",)) -> int | None:
    """`parallelism` (default 1) of the Job spec at `spec`, never more than `completions` when
    that is set, whether suspended or not (what Kueue's `podsCount` also reads); None when a
    count is no whole int32."""
    written = manifest.get(*spec, "parallelism")
    parallelism = 1 if written is None else whole_count(written)
    completions = manifest.get(*spec, "completions")
    if parallelism is None or completions is None:
        return parallelism
    cap = whole_count(completions)
    return None if cap is None else min(parallelism, cap)


def cron_job_pods(manifest: Manifest) -> int | None:
    """The pods each Job of a CronJob runs: none while the CronJob is suspended
    (cronjob_controllerv2 syncCronJob), else its job template's, as a Job's
    (getJobFromTemplate2 copies the template's spec and labels into the Job); None when the
    template's counts are not whole numbers."""
    if manifest.get("spec", "suspend") is True:
        return 0
    return _job_pods(manifest, ("spec", "jobTemplate", "spec"), ("spec", "jobTemplate"))


def _replicas_path(manifest: Manifest, replicas: int | None) -> Path | None:
    """The key a core kind's pod count comes from, when written (a fix names it)."""
    if manifest.kind in SCALABLE_KINDS:
        candidates: tuple[Path, ...] = (("spec", "replicas"),)
    elif manifest.kind == "Job":
        parallelism, completions = ("spec", "parallelism"), ("spec", "completions")
        capped = manifest.get(*completions) == replicas and replicas != manifest.get(*parallelism)
        candidates = (completions, parallelism) if capped else (parallelism,)
    else:
        return None
    return next((p for p in candidates if manifest.get(*p) is not None), None)


def _pod_spec(manifest: Manifest, spec_path: Path, findings: list[Finding]) -> Any:
    pod_spec = manifest.get(*spec_path)
    if pod_spec is not None and not isinstance(pod_spec, dict):
        findings.append(
            invalid_field(
                manifest,
                spec_path,
                f"pod spec must be a mapping, not a {type_name(pod_spec)}",
                "Fix the indentation of the pod template.",
            )
        )
        return None
    return pod_spec


def _label_problems(manifest: Manifest, labels_path: Path, labels: dict[str, str]) -> list[Finding]:
    """apimachinery ValidateLabels (ValidateObjectMeta of the pod template or the Pod): each key a
    qualified name, each value a label value, or the API server rejects the object."""
    if labels_valid(labels):
        return []
    where = field_path_text(labels_path)
    out = []
    for key, text in labels.items():
        for errors, shown in ((label_key_errors(key), key), (label_value_errors(text), text)):
            if errors:
                out.append(
                    invalid_field(
                        manifest,
                        (*labels_path, key),
                        f"{where}: Invalid value: {json.dumps(shown)}: {'; '.join(errors)}",
                        "Write label keys as [prefix/]name and values of at most 63 characters: "
                        "alphanumerics, '-', '_' and '.', starting and ending alphanumeric.",
                    )
                )
    return out


def _labels(
    manifest: Manifest, labels_path: Path | None, findings: list[Finding]
) -> dict[str, str]:
    labels_value = manifest.get(*labels_path) if labels_path is not None else None
    labels: dict[str, str] = {}
    if isinstance(labels_value, dict):
        for key in labels_value:
            text = scalar_text(labels_value, key)
            if text is not None:
                labels[key] = text
        if labels_path is not None:
            findings.extend(_label_problems(manifest, labels_path, labels))
    elif labels_value is not None and labels_path is not None:
        findings.append(
            invalid_field(
                manifest,
                labels_path,
                f"labels must be a mapping of strings, not a {type_name(labels_value)}",
                "Write labels as `key: value` lines.",
            )
        )
    return labels


def _build(
    manifest: Manifest,
    spec_path: Path,
    labels_path: Path | None,
    sources: tuple[ContainerSource, ...],
    findings: list[Finding],
) -> tuple[Workload, list[Finding]]:
    """The workload of one pod template, with its GPU040 findings (replicas filled in later)."""
    pod_spec = _pod_spec(manifest, spec_path, findings)
    labels = _labels(manifest, labels_path, findings)
    containers = _containers(manifest, spec_path, findings, sources)
    findings += resource_findings(manifest, [(c.path, c.resources) for c in containers])
    requests = pod_requests_of(containers, pod_spec)
    workload = Workload(
        manifest=manifest,
        spec_path=spec_path,
        pod_spec=pod_spec,
        pod_labels=labels,
        labels_path=labels_path,
        containers=containers,
        gpus=value(requests.get(GPU_RESOURCE, Fraction(0))),
        requests=requests,
    )
    return workload, findings


def workload_from_manifest(manifest: Manifest) -> tuple[Workload | None, list[Finding]]:
    findings: list[Finding] = []
    spec_path = POD_SPEC_PATHS.get(manifest.kind)
    if spec_path is None or "/" in manifest.kind:
        return None, findings
    if manifest.api_version not in WORKLOAD_API_VERSIONS:
        return None, findings  # a custom resource that happens to share a kind name
    workload, findings = _build(
        manifest, spec_path, _pod_labels_path(manifest.kind), DEFAULT_CONTAINERS, findings
    )
    findings += selector_findings(manifest)
    findings += _pod_field_findings(manifest, spec_path, workload.pod_spec)
    workload.replicas = _replicas(manifest, findings)
    workload.replicas_path = _replicas_path(manifest, workload.replicas)
    placement_findings, placement_rejected = _placement_findings(manifest, spec_path, workload)
    workload.api_rejects = bool(findings) or placement_rejected
    return workload, findings + placement_findings


def workload_from_template(
    manifest: Manifest, template: PodTemplate, template_only: bool, completes: bool | None
) -> tuple[Workload | None, list[Finding]]:
    """The workload of one pod template of a custom resource (policies/workloads.yaml)."""
    if template.unknown:
        return None, []  # a patch the operator applies later decides the pod spec
    workload, findings = _build(
        manifest, template.spec_path, template.labels_path, template.containers, []
    )
    placement_findings, placement_rejected = _placement_findings(
        manifest, template.spec_path, workload
    )
    # the operator's labels win over the template's (e.g. KubeRay labelPod)
    workload.pod_labels = {**workload.pod_labels, **template.labels}
    _take_defaults(workload, template)
    workload.replicas = template.replicas
    workload.replicas_path = template.replicas_path
    workload.role = template.role
    workload.template_only = template_only
    workload.completes = completes
    workload.owner_kind = template.owner_kind
    workload.owner_name = template.owner_name
    workload.owner_replicas = template.owner_replicas
    workload.owner_scalable = template.owner_scalable
    workload.api_rejects = bool(findings) or placement_rejected
    return workload, findings + placement_findings


def _take_defaults(workload: Workload, template: PodTemplate) -> None:
    """Fields the controller takes from the object when the template leaves them empty (Argo:
    the workflow's nodeSelector, affinity, tolerations)."""
    spec = workload.pod_spec
    if not isinstance(spec, dict) or not template.defaults:
        return
    taken = {}
    for name, path in template.defaults.items():
        value = workload.manifest.get(*path)
        # only a value of the field's type: a wrong one is the API server's to refuse
        wanted = list if name == "tolerations" else dict
        if not spec.get(name) and value and isinstance(value, wanted):
            taken[name] = (value, path)
    if not taken:
        return
    from gpudrv_check.model.admission import copy_pod_spec

    spec = copy_pod_spec(spec)
    for name, (value, _) in taken.items():
        spec[name] = value
    workload.pod_spec = spec
    paths = ", ".join(".".join(map(str, p)) for _, p in taken.values())
    workload.admitted.append(f"the {workload.kind}'s {paths}")
    workload.admitted_at = next(iter(taken.values()))[1]


def _custom_workloads(manifest: Manifest, kinds: KindTable) -> tuple[list[Workload], list[Finding]]:
    entry = kinds.lookup(manifest.api_version, manifest.kind)
    if entry is None:
        return [], []
    workloads, findings = [], []
    name, namespace = manifest.name or "", manifest.namespace or "default"
    for template in templates_of(entry, manifest.data, name, namespace):
        workload, problems = workload_from_template(
            manifest, template, entry.template_only, entry.completes
        )
        findings.extend(problems)
        if workload is not None:
            workloads.append(workload)
    return workloads, findings


def build_workloads(
    manifests: list[Manifest], kinds: KindTable | None = None
) -> tuple[list[Workload], list[Finding]]:
    """Every pod template of the repo: the core kinds, then those of ``kinds`` (the workload
    table; the built-in one when None)."""
    from gpudrv_check.model.workload_kinds import builtin_kind_table

    table = kinds if kinds is not None else builtin_kind_table()
    workloads: list[Workload] = []
    findings: list[Finding] = []
    users: list[Manifest] = []
    for manifest in manifests:
        entry = table.lookup(manifest.api_version, manifest.kind)
        if entry is not None and entry.uses is not None:
            users.append(manifest)  # its templates are another object's: after this pass
            continue
        if manifest.kind in POD_SPEC_PATHS and manifest.api_version in WORKLOAD_API_VERSIONS:
            workload, problems = workload_from_manifest(manifest)
            found = [workload] if workload is not None else []
        elif "/" in manifest.api_version:
            found, problems = _custom_workloads(manifest, table)
        else:
            continue
        findings.extend(problems)
        workloads.extend(found)
    if users:
        from gpudrv_check.model.workload_refs import referring_workloads

        workloads.extend(referring_workloads(users, table, manifests, workloads))
    return workloads, findings
