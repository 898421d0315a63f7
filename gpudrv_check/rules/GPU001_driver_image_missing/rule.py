"""GPU001 driver-image-missing: a GPU node needs a driver image the support matrix lacks.

Its user documentation is `docs:` in rule.yaml, next to this file.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpudrv_check.core.finding import Finding
from gpudrv_check.model.driver import audit_entries, label_keys
from gpudrv_check.model.driver_plan import DriverSource
from gpudrv_check.read.matrix import Matrix
from gpudrv_check.read.policy import builtin
from gpudrv_check.rules.context import Context

ID = "GPU001"


def check(ctx: Context) -> Iterator[Finding]:
    repo = ctx.repo
    if repo.matrix is None:
        return
    kernel_key = label_keys(ctx.config)["kernel"]
    for entry in audit_entries(repo):
        if not entry.missing:
            continue
        tag = entry.result.tag
        branch, rest = tag.split("-", 1)  # type: ignore[union-attr]
        node = entry.node
        kernel = node.labels.get(str(kernel_key), "")
        os_tag = rest[len(kernel) + 1 :] if rest.startswith(kernel + "-") else rest
        key: tuple[str, str, str] = (branch, kernel, os_tag)
        planned = entry.planned
        if planned is not None and planned.matrix_key is not None:
            key = planned.matrix_key
        row = ",".join(key)
        if not entry.precompiled:
            # `<version>-<os-tag>`: the image builds its module on the node; nothing is pulled
            # per kernel, the matrix row says the kernel was validated (resolveDriverTag)
            yield ctx.finding(
                ID,
                node,
                node.label_path(str(kernel_key)),
                f"node {node.name} runs kernel {kernel}, for which the support matrix "
                f"({repo.matrix.file}) has no row with branch {branch} and {os_tag}: the driver "
                f"image {entry.image} builds its kernel module on the node when it starts, for a "
                "kernel this repo has not validated",
                hint=f"Add the row `{row}` to {repo.matrix.file} once the driver is validated on "
                "this kernel, or keep the node on a kernel the matrix has.",
                severity=builtin("driver-image-missing").severity_of("kernel-not-validated"),
                location=node.label_location(str(kernel_key)),
            )
            continue
        needs = f"needs driver image {entry.image}"
        others = _other_branches(repo.matrix, key)
        keep = (
            f"or run a driver branch the matrix has for this kernel ({', '.join(others)})"
            if others
            else "or keep the node on a kernel the matrix has"
        )
        if planned is not None and planned.upgrades and planned.source is not None:
            needs = (
                f"will get driver branch {planned.next_branch} from the {_named(planned.source)} "
                f"(it runs {planned.current} now), so it needs driver image {entry.image}"
            )
            keep = f"or keep the version at branch {planned.current_branch} the node runs"
        yield ctx.finding(
            ID,
            node,
            node.label_path(str(kernel_key)),
            f"node {node.name} {needs}, which is not in the support matrix "
            f"({repo.matrix.file}); its driver pod would fail to pull and its GPUs vanish",
            hint=f"Build and push the driver image {entry.image}, then add the row `{row}` to "
            f"{repo.matrix.file}; {keep}.",
            location=node.label_location(str(kernel_key)),
        )


def _other_branches(matrix: Matrix, key: tuple[str, str, str]) -> list[str]:
    """The branches the matrix has for the key's kernel and OS tag (another than the key's)."""
    return sorted({r.key[0] for r in matrix.rows if r.key[1:] == key[1:] and r.key[0] != key[0]})


def _named(source: DriverSource) -> str:
    return f"NVIDIADriver {source.name}" if source.kind == "nvidiadriver" else source.name
