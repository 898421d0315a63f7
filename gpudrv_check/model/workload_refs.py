"""Objects that run another object's pod templates: a Kubeflow TrainJob and its runtime.

A TrainJob names a ClusterTrainingRuntime (the default kind) or a TrainingRuntime of its own
namespace in ``spec.runtimeRef`` (kubeflow/trainer pkg/apis/trainer/v1alpha1/trainjob_types.go
RuntimeRef); the controller builds a JobSet from the runtime's template and sets, on the
replicated job ``node`` and its container ``node``, the TrainJob's ``spec.trainer.image``,
``resourcesPerNode`` and ``numNodes`` (pkg/runtime/framework/plugins/jobset builder Trainer).
The table entry (``uses:``, ``overrides:``) says so; here each template of the runtime becomes
a workload of the TrainJob: placed with the runtime's pod spec, counted and CUDA-checked with
the TrainJob's values, located in the TrainJob (the runtime's own problems are the runtime's
findings). A runtime not in the repo gives nothing to check (``-v`` lists such objects).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from gpudrv_check.core.manifest import Manifest
from gpudrv_check.k8s.quantity import value
from gpudrv_check.k8s.resources import container_requests
from gpudrv_check.model.workload import GPU_RESOURCE, Container, Workload, pod_requests_of
from gpudrv_check.model.workload_kinds import KindTable, TrainerOverride, Uses, WorkloadKind


def _runtime(user: Manifest, uses: Uses, manifests: list[Manifest]) -> Manifest | None:
    name = user.get(*uses.name)
    kind = user.get(*uses.kind) if uses.kind is not None else None
    kind = kind if isinstance(kind, str) and kind else uses.default_kind
    if not isinstance(name, str) or kind not in uses.kinds:
        return None
    group = user.api_version.rpartition("/")[0]
    for m in manifests:
        if m.kind != kind or m.name != name or m.api_version.rpartition("/")[0] != group:
            continue
        if kind in uses.namespaced and (m.namespace or "default") != user.namespace:
            continue
        return m
    return None


def _count(user: Manifest, runtime: Manifest, override: TrainerOverride | None) -> int | None:
    """The trainer job's pods: the TrainJob's numNodes (torch.go, plainml.go set the trainer
    PodSet's count to it), else the runtime's mlPolicy.numNodes, else 1 (core/trainingruntime.go
    ``ptr.Deref(mlPolicy.NumNodes, 1)``); another template of the runtime runs one pod. A value
    written but not a count makes the count unknown."""
    if override is None:
        return 1
    for manifest, path in ((user, override.count), (runtime, override.fallback_count)):
        value = manifest.get(*path) if path else None
        if value is None:
            continue
        whole = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        return value if whole else None
    return 1


def _count_key(user: Manifest, override: TrainerOverride | None) -> tuple | None:
    """The TrainJob's numNodes when written: the key a fix names (the runtime's is shared by
    every TrainJob that uses it)."""
    path = override.count if override is not None else None
    return path if path is not None and user.get(*path) is not None else None


def _containers(
    user: Manifest, runtime: Workload, override: TrainerOverride | None
) -> list[Container]:
    out = []
    for c in runtime.containers:
        if override is None or c.name != override.container or c.init:
            out.append(replace(c, path=("spec", "runtimeRef")))
            continue
        image = user.get(*override.image) if override.image else None
        resources = user.get(*override.resources) if override.resources else None
        # the controller sets the container's resources to resourcesPerNode when it is given
        resources = resources if isinstance(resources, dict) else c.resources
        gpus = value(container_requests({"resources": resources}).get(GPU_RESOURCE, Fraction(0)))
        trainer = override.image[:-1] if override.image else ("spec",)
        out.append(
            Container(
                name=c.name,
                image=image if isinstance(image, str) else c.image,
                init=False,
                path=tuple(override.resources[:-1]) if override.resources else trainer,
                gpus=gpus,
                resources_key=str(override.resources[-1]) if override.resources else "resources",
                resources=resources,
                restart_policy=c.restart_policy,
            )
        )
    return out


def _workload(
    user: Manifest, entry: WorkloadKind, runtime_manifest: Manifest, runtime: Workload
) -> Workload:
    override = next((o for o in entry.overrides if o.template == runtime.role), None)
    containers = _containers(user, runtime, override)
    requests = pod_requests_of(containers, runtime.pod_spec)
    count = _count(user, runtime_manifest, override)
    of = f"{runtime_manifest.kind} {runtime_manifest.name}"
    return Workload(
        manifest=user,
        spec_path=("spec", "runtimeRef"),
        pod_spec=runtime.pod_spec,
        pod_labels=dict(runtime.pod_labels),
        labels_path=None,
        replicas=count,
        replicas_path=_count_key(user, override),
        containers=containers,
        gpus=value(requests.get(GPU_RESOURCE, Fraction(0))),
        requests=requests,
        api_rejects=runtime.api_rejects,
        role=f"{runtime.role} (from {of})" if runtime.role else f"(from {of})",
        completes=entry.completes,
        owner_kind=runtime.owner_kind,
        owner_name=f"{user.name}-{runtime.role}",
        owner_replicas=None,
        owner_scalable=False,
    )


def referring_workloads(
    users: list[Manifest], table: KindTable, manifests: list[Manifest], built: list[Workload]
) -> list[Workload]:
    """The workloads of each object that runs another object's templates, in object order."""
    by_manifest: dict[int, list[Workload]] = {}
    for w in built:
        by_manifest.setdefault(id(w.manifest), []).append(w)
    out = []
    for user in users:
        entry = table.lookup(user.api_version, user.kind)
        if entry is None or entry.uses is None:
            continue
        runtime = _runtime(user, entry.uses, manifests)
        if runtime is None:
            continue
        for template in by_manifest.get(id(runtime), []):
            out.append(_workload(user, entry, runtime, template))
    return out
