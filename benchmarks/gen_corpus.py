"""Generate a GitOps repo the size of a large GPU fleet, for the benchmark.

    python benchmarks/gen_corpus.py OUT --nodes 2000 --workloads 10000 [--seed 1] [--bulk 1.0]

What it writes (deterministic for a seed): GPU nodes with mixed driver branches, kernels, OS
releases and taints (one Node per file, as `kubectl get node -o yaml` exports them); workloads of
every kind (Deployment, StatefulSet, Job, CronJob, Pod, ReplicaSet, DaemonSet) with node affinity,
tolerations and GPU requests; PodDisruptionBudgets; operand DaemonSets; and the bulk a real repo
holds that the checker must read past: large CRDs, ConfigMaps, Services, Helm values files and
kustomizations. A support matrix covers most, not all, node combinations.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

BRANCHES = ["535", "550", "570"]
KERNELS = {
    ("ubuntu", "22.04"): ["5.15.0-107-generic", "5.15.0-119-generic", "5.15.0-125-generic"],
    ("ubuntu", "24.04"): ["6.8.0-45-generic", "6.8.0-52-generic", "6.8.0-60-generic"],
    ("rhel", "9.4"): ["5.14.0-427.13.1.el9_4.x86_64", "5.14.0-427.42.1.el9_4.x86_64"],
}
OPERANDS = [
    "driver",
    "container-toolkit",
    "device-plugin",
    "gpu-feature-discovery",
    "dcgm-exporter",
    "operator-validator",
]
IMAGES = [
    "nvcr.io/nvidia/pytorch:24.07-py3",
    "nvcr.io/nvidia/pytorch:25.03-py3",
    "nvcr.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04",
    "registry.example/team/app:1.2.3",
]


def node_yaml(name: str, rng: random.Random) -> str:
    os_id, version = rng.choice(list(KERNELS))
    kernel = rng.choice(KERNELS[(os_id, version)])
    branch = rng.choice(BRANCHES)
    taints = ""
    if rng.random() < 0.5:
        taints = "  taints:\n  - key: nvidia.com/gpu\n    value: present\n    effect: NoSchedule\n"
    if rng.random() < 0.05:
        taints += "  unschedulable: true\n"
    zone = f"zone-{rng.randint(1, 4)}"
    return f"""apiVersion: v1
kind: Node
metadata:
  name: {name}
  annotations:
    node.alpha.kubernetes.io/ttl: "0"
    volumes.kubernetes.io/controller-managed-attach-detach: "true"
  labels:
    kubernetes.io/hostname: {name}
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    topology.kubernetes.io/zone: {zone}
    node.kubernetes.io/instance-type: gpu-8x
    nvidia.com/gpu.present: "true"
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
    nvidia.com/gpu.count: "8"
    nvidia.com/cuda.driver-version.major: "{branch}"
    nvidia.com/cuda.driver-version.minor: "90"
    nvidia.com/cuda.driver-version.revision: "07"
    feature.node.kubernetes.io/kernel-version.full: {kernel}
    feature.node.kubernetes.io/system-os_release.ID: {os_id}
    feature.node.kubernetes.io/system-os_release.VERSION_ID: "{version}"
    nvidia.com/gpu.deploy.driver: "true"
    nvidia.com/gpu.deploy.container-toolkit: "true"
    nvidia.com/gpu.deploy.device-plugin: "true"
    nvidia.com/gpu.deploy.gpu-feature-discovery: "true"
    nvidia.com/gpu.deploy.dcgm-exporter: "true"
    nvidia.com/gpu.deploy.operator-validator: "true"
spec:
  podCIDR: 10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.0/24
{taints}status:
  capacity:
    cpu: "96"
    memory: 1056290436Ki
    nvidia.com/gpu: "8"
  allocatable:
    cpu: "95"
    memory: 1046290436Ki
    nvidia.com/gpu: "8"
  conditions:
  - type: Ready
    status: "True"
    reason: KubeletReady
"""


def workload_yaml(i: int, rng: random.Random) -> str:
    kind = rng.choice(
        ["Deployment", "Deployment", "StatefulSet", "Job", "CronJob", "Pod", "ReplicaSet"]
    )
    ns = f"team-{i % 50}"
    name = f"wl-{i}"
    app = f"app-{i % 400}"
    branch_req = rng.choice(["Gt 530", "Gt 545", "In 550", "In 570", "Gt 560"])
    op, value = branch_req.split()
    gpus = rng.choice([0, 1, 1, 2, 8])
    tol = (
        (
            "      tolerations:\n      - key: nvidia.com/gpu\n        operator: Exists\n"
            "        effect: NoSchedule\n"
        )
        if rng.random() < 0.7
        else ""
    )
    resources = (
        f"        resources:\n          limits:\n            nvidia.com/gpu: {gpus}\n"
        if gpus
        else ""
    )
    spec = f"""      containers:
      - name: main
        image: {rng.choice(IMAGES)}
        args: ["--epochs", "10", "--data", "/data/{name}"]
        env:
        - name: NCCL_DEBUG
          value: INFO
{resources}      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - key: nvidia.com/cuda.driver-version.major
                operator: {op}
                values: ["{value}"]
{tol}"""
    if kind == "Pod":
        body = "\n".join(line[4:] for line in spec.splitlines()) + "\n"
        return (
            f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\n"
            f"  labels:\n    app: {app}\nspec:\n{body}"
        )
    template = f"  template:\n    metadata:\n      labels:\n        app: {app}\n    spec:\n{spec}"
    if kind == "Job":
        return (
            f"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: {ns}\n"
            f"spec:\n{template}"
        )
    if kind == "CronJob":
        inner = "\n".join("    " + line for line in template.splitlines())
        return (
            f"apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: {name}\n"
            f"  namespace: {ns}\nspec:\n  schedule: '0 * * * *'\n  jobTemplate:\n"
            f"    spec:\n{inner}\n"
        )
    replicas = rng.choice([1, 2, 3, 4, 8])
    return (
        f"apiVersion: apps/v1\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: {ns}\n"
        f"spec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      app: {app}\n"
        f"{template}"
    )


def pdb_yaml(i: int, rng: random.Random) -> str:
    budget = rng.choice(["minAvailable: 1", "minAvailable: 50%", "maxUnavailable: 1"])
    return (
        f"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: pdb-{i}\n"
        f"  namespace: team-{i % 50}\nspec:\n  {budget}\n  selector:\n    matchLabels:\n"
        f"      app: app-{i % 400}\n"
    )


def operand_yaml(operand: str) -> str:
    return f"""apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: nvidia-{operand}-daemonset
  namespace: gpu-operator
spec:
  selector:
    matchLabels:
      app: nvidia-{operand}
  template:
    metadata:
      labels:
        app: nvidia-{operand}
    spec:
      nodeSelector:
        nvidia.com/gpu.deploy.{operand}: "true"
      tolerations:
      - key: nvidia.com/gpu
        operator: Exists
        effect: NoSchedule
      containers:
      - name: {operand}
        image: nvcr.io/nvidia/{operand}:v1
"""


def crd_yaml(i: int, rng: random.Random, props: int) -> str:
    lines = [
        "apiVersion: apiextensions.k8s.io/v1",
        "kind: CustomResourceDefinition",
        "metadata:",
        f"  name: widgets{i}.example.com",
        "spec:",
        "  group: example.com",
        "  names:",
        f"    kind: Widget{i}",
        f"    plural: widgets{i}",
        "  scope: Namespaced",
        "  versions:",
        "  - name: v1",
        "    served: true",
        "    storage: true",
        "    schema:",
        "      openAPIV3Schema:",
        "        type: object",
        "        properties:",
    ]
    for p in range(props):
        lines += [
            f"          field{p}:",
            "            type: object",
            f"            description: Field number {p} of widget {i}, documented at length "
            "so the file is as large as generated CRDs are.",
            "            properties:",
            "              enabled: {type: boolean}",
            "              count: {type: integer, minimum: 0}",
            "              name: {type: string, pattern: '^[a-z0-9-]+$'}",
        ]
    return "\n".join(lines) + "\n"


def bulk_yaml(i: int, rng: random.Random) -> str:
    kind = rng.choice(["ConfigMap", "Service", "values", "kustomization"])
    if kind == "ConfigMap":
        data = "\n".join(f"    key{k}: value-{rng.randint(0, 10**6)}" for k in range(20))
        return (
            f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n"
            f"  namespace: team-{i % 50}\ndata:\n{data}\n"
        )
    if kind == "Service":
        return (
            f"apiVersion: v1\nkind: Service\nmetadata:\n  name: svc-{i}\n"
            f"  namespace: team-{i % 50}\nspec:\n  selector:\n    app: app-{i % 400}\n"
            "  ports:\n  - port: 80\n    targetPort: 8080\n"
        )
    if kind == "values":
        return "".join(f"setting{k}:\n  enabled: true\n  replicas: {k}\n" for k in range(15))
    return (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources:\n- deployment.yaml\n- service.yaml\n"
    )


def generate(out: Path, nodes: int, workloads: int, seed: int, bulk: float) -> dict[str, int]:
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    counts = {"files": 0}

    def put(rel: str, text: str) -> None:
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        counts["files"] += 1

    combos = set()
    for n in range(nodes):
        text = node_yaml(f"gpu-{n:05d}", rng)
        put(f"inventory/nodes/gpu-{n:05d}.yaml", text)
        labels = dict(
            line.strip().split(": ", 1)
            for line in text.splitlines()
            if line.startswith("    ") and ": " in line and not line.startswith("     ")
        )
        combos.add(
            (
                labels["nvidia.com/cuda.driver-version.major"].strip('"'),
                labels["feature.node.kubernetes.io/kernel-version.full"],
                labels["feature.node.kubernetes.io/system-os_release.ID"]
                + labels["feature.node.kubernetes.io/system-os_release.VERSION_ID"].strip('"'),
            )
        )
    rows = sorted(combos)
    kept = [r for i, r in enumerate(rows) if i % 7 != 3]  # a few combinations were never built
    put(
        "support-matrix.csv",
        "driver_branch,kernel,os_tag\n"
        + "".join(f"{b},{k},{o.replace('rhel9.4', 'rhel9')}\n" for b, k, o in kept),
    )
    counts["files"] -= 1  # the matrix is not a manifest
    for i in range(workloads):
        text = workload_yaml(i, rng)
        if i % 5 == 0:  # a budget next to some workloads, as a second document
            text += "---\n" + pdb_yaml(i, rng)
        put(f"apps/team-{i % 50}/wl-{i}.yaml", text)
    for operand in OPERANDS:
        put(f"gpu-operator/{operand}.yaml", operand_yaml(operand))
    for i in range(max(1, int(20 * bulk))):
        put(f"crds/widget-{i}.yaml", crd_yaml(i, rng, 300))
    for i in range(int(workloads * 0.05 * bulk)):
        text = "---\n".join(bulk_yaml(i * 3 + k, rng) for k in range(3))
        put(f"platform/bulk-{i % 40}/obj-{i}.yaml", text)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--workloads", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bulk", type=float, default=1.0)
    args = parser.parse_args()
    counts = generate(args.out, args.nodes, args.workloads, args.seed, args.bulk)
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"{args.out}: {counts['files']} manifest files, {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
