"""The markdown report's operand table reads the model's operand placement, the facts the
`operands` command and GPU030 use (issue 15): on examples/operands it agrees with both (it
used to recompute placement from labels alone and mark gpu-node-2's toolkit as running)."""

from __future__ import annotations

import ast
import json

from tests.conftest import EXAMPLES, ROOT, run_main

SECTION = ROOT / "gpudrv_check" / "report" / "sections" / "operands.py"
MARKS = {"yes": "✓", "pre-installed": "host", "no": "·"}


def _table(markdown: str) -> dict[str, dict[str, str]]:
    lines = markdown.split("### Operands per GPU node", 1)[1].strip().splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(header[1:], cells[1:], strict=True))
    return rows


def test_operand_table_agrees_with_the_operands_command_and_gpu030():
    example = str(EXAMPLES / "operands")
    markdown = run_main("check", example, "--format", "markdown", "--no-cache").stdout
    facts = json.loads(run_main("operands", example, "--format", "json").stdout)
    findings = json.loads(run_main("check", example, "--format", "json", "--no-cache").stdout)
    table = _table(markdown)
    gpu_nodes = [n for n in facts["nodes"] if n["gpu"]]
    assert sorted(table) == sorted(n["name"] for n in gpu_nodes)
    for node in gpu_nodes:
        row = table[node["name"]]
        assert row.pop("chain") == node["chain"]
        expected = {op: MARKS[cell["state"]] for op, cell in node["operands"].items()}
        assert row == {op: expected[op] for op in row}
        hidden = set(expected) - set(row)  # shown only when it runs on some GPU node
        assert all(n["operands"][op]["state"] != "yes" for op in hidden for n in gpu_nodes)
    broken = {f["object"]["name"] for f in findings["findings"] if f["rule"] == "GPU030"}
    assert broken == {
        name for name, row in table.items() if _table(markdown)[name]["chain"] == "broken"
    }
    assert table["gpu-node-2"]["container-toolkit"] == "·"  # its deploy label is missing


def test_the_section_computes_no_placement_of_its_own():
    tree = ast.parse(SECTION.read_text(encoding="utf-8"))
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    }
    assert not {m for m in imported if m.startswith(("gpudrv_check.nvidia", "gpudrv_check.k8s"))}
