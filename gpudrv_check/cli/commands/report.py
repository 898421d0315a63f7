"""`gpudrv-check report`: the cluster's driver facts as `KEY=value` lines (lab step 8).

Lines, in this order:

- `NODES=` GPU nodes (`nvidia.com/gpu.present=true`);
- `SKEW=` the audit's failing lines (`gpudrv-check audit | grep -c MISSING`: nodes whose driver
  image is not in the matrix, and nodes whose tag cannot be computed);
- `MATRIX_ROWS=` lines of the support matrix after the header (blank and `#` lines excluded);
- `UPGRADE_STATE_<STATE>=` how many GPU nodes carry each upgrade state present, `<STATE>` the
  label value upper-cased with `-` as `_` (`UPGRADE_STATE_UPGRADE_DONE=1`), in the
  controller's order;
- with `--node NAME`: `NODE=`, its `TAG=` (empty when it cannot be computed) and its
  `UPGRADE_STATE=` (empty when unlabelled).

Node-scoped keys are fixed (`TAG`, not `LAB_NODE_1_TAG`) so a script can read them without
knowing the node's name; `NODE=` says which node they are about. Without a matrix
(`--matrix none`) SKEW and MATRIX_ROWS are left out. `--format json` gives the same facts.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from gpudrv_check.cli.commands.common import load_run
from gpudrv_check.cli.options import FormatOptions
from gpudrv_check.core.finding import printable, terminal_text
from gpudrv_check.model.driver import audit_entries, node_tag
from gpudrv_check.model.repo import Repo
from gpudrv_check.nvidia.upgrade import UPGRADE_STATES, upgrade_state
from gpudrv_check.read.config_file import ConfigError


def state_key(state: str) -> str:
    """`upgrade-done` -> `UPGRADE_STATE_UPGRADE_DONE`."""
    return "UPGRADE_STATE_" + re.sub(r"[^A-Za-z0-9]", "_", state).upper()


def state_counts(repo: Repo) -> dict[str, int]:
    """Upgrade state -> GPU nodes in it, known states in flow order, then unknown ones."""
    counts: dict[str, int] = {}
    for node in repo.gpu_nodes:
        state = upgrade_state(node.labels)
        if state:
            counts[state] = counts.get(state, 0) + 1
    order = {state: i for i, state in enumerate(UPGRADE_STATES)}
    return dict(sorted(counts.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


def report_facts(repo: Repo, node_name: str | None) -> dict[str, Any]:
    facts: dict[str, Any] = {"nodes": len(repo.gpu_nodes)}
    if repo.matrix is not None:
        entries = audit_entries(repo)
        facts["skew"] = sum(1 for e in entries if e.unbuilt or not e.result.ok)
        facts["matrix_rows"] = repo.matrix.data_lines
    facts["upgrade_states"] = state_counts(repo)
    if node_name is not None:
        node = repo.node_by_name.get(node_name)
        if node is None:
            known = ", ".join(sorted(repo.node_by_name)) or "none"
            raise ConfigError(f"no node {node_name!r} in {repo.root} (nodes: {known})")
        facts["node"] = {
            "name": node.name,
            "tag": node_tag(node, repo).tag,
            "upgrade_state": upgrade_state(node.labels),
        }
    return facts


def render_text(facts: dict[str, Any]) -> str:
    lines = [f"NODES={facts['nodes']}"]
    if "skew" in facts:
        lines.append(f"SKEW={facts['skew']}")
        lines.append(f"MATRIX_ROWS={facts['matrix_rows']}")
    # one line per key: states a key cannot tell apart (`upgrade-done`, `Upgrade_Done`: only
    # the first is a state the controller writes) are counted together, as a script reads them;
    # the JSON keeps each state as written
    keyed: dict[str, int] = {}
    for state, n in facts["upgrade_states"].items():
        keyed[state_key(state)] = keyed.get(state_key(state), 0) + n
    lines += [f"{key}={n}" for key, n in keyed.items()]
    node = facts.get("node")
    if node is not None:
        lines.append(f"NODE={node['name']}")
        lines.append(f"TAG={node['tag'] or ''}")
        lines.append(f"UPGRADE_STATE={node['upgrade_state']}")
    # one KEY=value per line: a line break in a value from the repo (a label, a node name) is
    # escaped, never a forged line
    return "\n".join(printable(line) for line in lines) + "\n"


def run(options: FormatOptions) -> int:
    check_run = load_run(options)
    facts = report_facts(check_run.repo, options.node)
    if options.format == "json":
        sys.stdout.write(json.dumps(facts, indent=2) + "\n")
    else:
        sys.stdout.write(terminal_text(render_text(facts)))
    return 0
