"""`gpudrv-check audit`: the lab's drv-audit.sh, byte for byte.

Prints `<node> MISSING <tag>` per GPU node whose driver image is not in the matrix, sorted by
node, and exits 1; or prints `OK` and exits 0. A node whose tag cannot be computed is printed as
`<node> MISSING-LABEL <label>` (and fails the audit): it cannot be proven to have an image.
When the operator configuration names the driver registry (`driver.repository`), the full image
reference follows as a fourth field: `<node> MISSING <tag> <repository>/<image>:<tag>`; without
one the output is the lab script's, byte for byte.

With an operator configuration the audit follows what the operator installs
(`model/driver_plan.py`): the configured version, only the nodes whose driver it installs, and
for a ClusterPolicy over GPU nodes of several OS releases one more line per node,
`<node> OS-CONFLICT <tag>,<tag>`: the one OS tag of the ClusterPolicy may be any of them.
"""

from __future__ import annotations

import sys

from gpudrv_check.cli.commands.common import load_run
from gpudrv_check.cli.options import RepoOptions
from gpudrv_check.core.finding import printable
from gpudrv_check.model.driver import audit_entries
from gpudrv_check.model.repo import Repo
from gpudrv_check.read.config_file import ConfigError


def run(options: RepoOptions) -> int:
    check_run = load_run(options)
    runs = check_run.clusters or [check_run]
    lines = []
    matrices: set[str] = set()
    for one in runs:
        # in a repo of several clusters each line names its cluster: `<cluster>/<node> ...`
        prefix = f"{one.cluster.name}/" if len(runs) > 1 and one.cluster is not None else ""
        lines += _lines(one.repo, prefix)
        assert one.repo.matrix is not None
        if one.repo.matrix.file not in matrices:  # a shared matrix says its problems once
            matrices.add(one.repo.matrix.file)
            for problem in one.repo.matrix.problems:
                sys.stderr.write(
                    f"{problem.location}: {problem.severity.value} {problem.message}\n"
                )
    if lines:
        # node names and tags come from the repo: no control characters reach the terminal
        sys.stdout.write("\n".join(printable(line) for line in lines) + "\n")
        return 1
    sys.stdout.write("OK\n")
    return 0


def _lines(repo: Repo, prefix: str) -> list[str]:
    if repo.matrix is None:
        raise ConfigError("audit needs a support matrix (--matrix FILE or `matrix:` in config)")
    lines = []
    for entry in audit_entries(repo):
        name = prefix + entry.node.name
        if entry.unbuilt:
            line = f"{name} MISSING {entry.result.tag}"
            lines.append(f"{line} {entry.reference}" if entry.reference else line)
        elif entry.missing:
            # not precompiled: the operator builds the module on the node; the matrix only
            # says the kernel was not validated (GPU001's warning), no image is missing
            sys.stderr.write(
                printable(
                    f"gpudrv-check: note: {name}: kernel and OS {entry.result.tag} are not in "
                    "the support matrix; the operator builds the driver module on the node "
                    "(usePrecompiled off): not validated, no image missing"
                )
                + "\n"
            )
        elif not entry.result.ok:
            what = ",".join(entry.result.missing) or "tag"
            lines.append(f"{name} MISSING-LABEL {what}")
        if entry.other_os_tags:
            # the node's own OS tag: the matrix row's, since an OS tag may hold "-" (sles15-SP6)
            key = entry.planned.matrix_key if entry.planned is not None else None
            tags = sorted({*entry.other_os_tags, *([key[2]] if key else [])})
            lines.append(f"{name} OS-CONFLICT {','.join(tags)}")
    return lines
