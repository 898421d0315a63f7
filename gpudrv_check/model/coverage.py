"""What a run could not check, and why: said in the summary, JSON and SARIF, never silent.

A rule declares what it cannot run without (`needs:` in its `rules/<ID>_<name>/rule.yaml`): any
node, a GPU node, the support matrix. A repo without them still gets every other rule; the
ones that need them are skipped, and the report says which, why, and what file to add. GPU
workloads of kinds the checker does not model (neither a core kind nor in the workload table,
policies/workloads.yaml) are counted so their absence from the findings is not taken for a
pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from gpudrv_check.core.finding import printable
from gpudrv_check.core.located import LMap, containers
from gpudrv_check.core.records import record
from gpudrv_check.k8s.numbers import parse_digits

if TYPE_CHECKING:
    from gpudrv_check.core.manifest import Manifest
    from gpudrv_check.model.repo import Repo
    from gpudrv_check.model.workload_kinds import KindTable
    from gpudrv_check.read.policy import RulePolicy

NODES_SECTION = 'README "Where the nodes come from"'
MATRIX_SECTION = 'README "Where the facts come from"'
NODES_FILE = (
    "nodes.yaml (a NodeInventory, or the output of `kubectl get nodes -o yaml`; see "
    + NODES_SECTION
    + ")"
)
MATRIX_HEADER = "driver_branch,kernel,os_tag"
GPU_RESOURCE = "nvidia.com/gpu"
#: nodes a search for GPU requests visits in one object at most (bounded on hostile input)
MAX_VISITED = 20_000


@record(frozen=True)
class SkippedRules:
    """Rules a run did not evaluate, the reason, and where to read how to give them input."""

    rules: tuple[str, ...]
    reason: str
    see: str

    def text(self) -> str:
        return f"{self.reason}: {id_ranges(self.rules)} skipped; see {self.see}"

    def as_dict(self) -> dict[str, Any]:
        return {"rules": list(self.rules), "reason": self.reason, "see": self.see}


def id_ranges(ids: Iterable[str]) -> str:
    """`GPU001, GPU002, GPU003, GPU010` as `GPU001-003, GPU010` (other ids as written)."""
    out: list[str] = []
    run: list[tuple[str, int]] = []

    def flush() -> None:
        if not run:
            return
        first, last = run[0], run[-1]
        out.append(first[0] if len(run) == 1 else f"{first[0]}-{last[0][-3:]}")
        run.clear()

    for rule_id in sorted(ids):
        number = parse_digits(rule_id[3:]) if rule_id[:3] == "GPU" else None
        if number is None:
            flush()
            out.append(rule_id)
            continue
        if run and number != run[-1][1] + 1:
            flush()
        run.append((rule_id, number))
    flush()
    return ", ".join(out)


def missing_inputs(repo: Repo, matrix_missing: bool) -> dict[str, tuple[str, str]]:
    """need -> (reason, README section) for each input this repo lacks."""
    out: dict[str, tuple[str, str]] = {}
    if not repo.nodes:
        out["nodes"] = out["gpu-nodes"] = ("no node inventory", NODES_SECTION)
    elif not repo.gpu_nodes:
        out["gpu-nodes"] = (
            "no GPU node (nvidia.com/gpu.present=true) in the inventory",
            NODES_SECTION,
        )
    if matrix_missing:
        out["matrix"] = ("no support matrix", MATRIX_SECTION)
    return out


def skipped_rules(
    rules: Mapping[str, RulePolicy], enabled: Iterable[str], missing: dict[str, tuple[str, str]]
) -> list[SkippedRules]:
    """The enabled rules whose needs are missing, grouped by the first missing need."""
    groups: dict[tuple[str, str], list[str]] = {}
    for rule_id in enabled:
        policy = rules.get(rule_id)
        for need in policy.needs if policy is not None else ():
            if need in missing:
                groups.setdefault(missing[need], []).append(rule_id)
                break
    return [SkippedRules(tuple(sorted(ids)), why, see) for (why, see), ids in groups.items()]


def to_add(missing: dict[str, tuple[str, str]], matrix_file: str) -> str | None:
    """The files that would let the skipped rules run, as one sentence; None when none."""
    files = []
    if "nodes" in missing:
        files.append(NODES_FILE)
    if "matrix" in missing:
        files.append(f"{matrix_file} (header `{MATRIX_HEADER}`, one row per driver image built)")
    return "to check them, add " + " and ".join(files) if files else None


def requests_gpus(data: Any) -> bool:
    """Whether an object asks for nvidia.com/gpu anywhere (`limits:`/`requests:` maps)."""
    for node in containers(data, MAX_VISITED):
        if isinstance(node, LMap):
            for key, value in node.items():
                if key in ("limits", "requests") and isinstance(value, LMap):
                    if GPU_RESOURCE in value:
                        return True
    return False


def unmodelled_gpu_workloads(
    manifests: Iterable[Manifest],
    kinds: KindTable | None = None,
    modelled: set[int] | None = None,
) -> list[Manifest]:
    """Objects of kinds without a modelled pod template (core kinds and the workload table)
    that still request GPUs; with ``modelled`` (ids of the manifests that gave workloads), also
    the objects that run another's templates when that one is not in the repo (a TrainJob
    whose runtime the operator installs)."""
    from gpudrv_check.k8s.podspec import POD_SPEC_PATHS
    from gpudrv_check.model.workload import WORKLOAD_API_VERSIONS
    from gpudrv_check.model.workload_kinds import builtin_kind_table

    table = kinds if kinds is not None else builtin_kind_table()

    def core(m: Manifest) -> bool:
        # by kind and API version: a Volcano Job of a version the table does not read is not
        # a batch/v1 Job, and must not pass for one
        return m.kind in POD_SPEC_PATHS and m.api_version in WORKLOAD_API_VERSIONS

    def unread(m: Manifest) -> bool:
        entry = table.lookup(m.api_version, m.kind)
        if entry is None:
            return True
        return entry.uses is not None and modelled is not None and id(m) not in modelled

    return [
        m
        for m in manifests
        if not core(m) and m.kind != "Node" and unread(m) and requests_gpus(m.data)
    ]


def notes(
    enabled: Iterable[str],
    skipped: list[SkippedRules],
    missing: dict[str, tuple[str, str]],
    matrix_file: str,
    unknowns: Any = None,
) -> list[str]:
    """What the report says besides its findings: what was checked when something was not,
    what was skipped and why, the files to add; the placeholders whose values are unknown.
    Each is the same whichever files the partition cache answered for (nodes, the matrix and
    files with placeholders are read on every run)."""
    out: list[str] = []
    if skipped:
        not_run = {r for group in skipped for r in group.rules}
        out.append("checked " + id_ranges(r for r in enabled if r not in not_run))
        out.extend(group.text() for group in skipped)
        add = to_add(missing, matrix_file)
        if add:
            out.append(add)
    placeholders = unknowns.note() if unknowns is not None else None
    if placeholders:
        out.append(placeholders)
    # names from the repo: no line break or escape sequence reaches a report line
    return [printable(note) for note in out]
