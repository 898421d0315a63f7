"""`gpudrv-check tag NODE`: the node's precompiled driver image tag, one line (drv-tag.sh).

With an operator configuration the tag is the one the operator installs there
(`model/driver_plan.py`: the configured version, the pool's OS tag); a ClusterPolicy over GPU
nodes of several OS releases may build it with another node's OS tag, which a note on stderr
says (stdout keeps the one line).
"""

from __future__ import annotations

import sys

from gpudrv_check.cli.commands.common import load_run
from gpudrv_check.cli.options import NodeOptions
from gpudrv_check.core.finding import printable
from gpudrv_check.model.driver import node_tag, planned_driver


def run(options: NodeOptions) -> int:
    check_run = load_run(options.without_matrix())  # the tag needs no matrix
    repo = check_run.repo
    node = repo.node_by_name.get(options.node)
    if node is None:
        known = printable(", ".join(sorted(repo.node_by_name)) or "none")
        sys.stderr.write(
            f"gpudrv-check: error: no node {options.node!r} in {options.path} (nodes: {known})\n"
        )
        return 2
    result = node_tag(node, repo)
    if not result.ok:
        reason = f"missing label(s) {', '.join(result.missing)}" if result.missing else result.error
        sys.stderr.write(printable(f"gpudrv-check: error: node {node.name}: {reason}") + "\n")
        return 1
    sys.stdout.write(f"{printable(result.tag or '')}\n")
    planned = planned_driver(node, repo)
    if planned is not None and planned.other_os_tags:
        sys.stderr.write(
            printable(
                f"gpudrv-check: note: node {node.name}: the ClusterPolicy builds every image "
                f"with one GPU node's OS tag, which may be {', '.join(planned.other_os_tags)} "
                "(GPU013)"
            )
            + "\n"
        )
    return 0
