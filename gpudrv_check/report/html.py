"""HTML: one self-contained page (no script, no font, no image, nothing fetched) for a CI
artifact or a browser: the verdict, the findings, and the fleet picture the model holds -
GPU nodes by driver branch × kernel × OS tag with the images the matrix lacks marked MISSING
(model/driver.py `fleet`, the audit's own entries), nodes per upgrade state, and the operand
chain per node (`repo.operand_placement`, as `operands` and GPU030 see it), and, when the
operator configuration sets `driver.version`, the rehearsal of that upgrade reconcile by
reconcile (model/fleet_rehearsal.py, what `gpudrv-check rehearse` prints).

Every repo text is made printable (control, line-separator and bidirectional characters
written `\\x1b`, as in every other format) and escaped (`html.escape`); the
Content-Security-Policy meta forbids any request the page could make, so a hostile name cannot
load anything even if it slipped by.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from gpudrv_check.core.finding import printable
from gpudrv_check.model.driver import fleet
from gpudrv_check.model.operands import MODE_NONE
from gpudrv_check.nvidia.upgrade import UPGRADE_STATES, upgrade_state

if TYPE_CHECKING:
    from gpudrv_check.model.repo import Repo
    from gpudrv_check.report import Report

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1b1f24;max-width:80rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #d0d7de}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #d0d7de;padding:.25rem .5rem;
text-align:left;vertical-align:top}th{background:#f6f8fa}
.error{color:#a40e26;font-weight:600}.warning{color:#7d4e00;font-weight:600}.info{color:#0550ae}
td.missing{background:#ffebe9;font-weight:600}td.built{background:#dafbe1}
td.broken{background:#ffebe9;font-weight:600}code{font-size:.9em}.fix{color:#57606a}
.verdict-failed{color:#a40e26}.verdict-passed{color:#116329}
"""
_CSP = "default-src 'none'; style-src 'unsafe-inline'"


def _e(text: object) -> str:
    """Repo text for the page. `printable` first: escaping alone leaves a label value's ESC
    or U+202E in the page, which reorders what a reader sees (a line break is white space in
    HTML, so it reads as a space)."""
    return escape(printable(str(text), " "), quote=True)


def _section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}">\n<h2>{_e(title)}</h2>\n{body}\n</section>'


def _findings(report: Report) -> str:
    if not report.findings:
        return "<p>No findings.</p>"
    rows = []
    for f in report.findings:
        loc = f.location
        where = f"{report.uri(loc.file)}:{loc.line}:{loc.column}"
        fix = f'<div class="fix">fix: {_e(f.hint)}</div>' if f.hint else ""
        rows.append(
            f'<tr class="finding"><td class="{f.severity.value}">{f.severity.value}</td>'
            f"<td>{_e(f.rule)}</td><td><code>{_e(where)}</code></td>"
            f"<td>{_e(f.object or '')}</td><td>{_e(f.message)}{fix}</td></tr>"
        )
    head = "<tr><th>severity</th><th>rule</th><th>where</th><th>object</th><th>message</th></tr>"
    return f"<table>\n{head}\n" + "\n".join(rows) + "\n</table>"


def _fleet(repo: Repo) -> str | None:
    cells, unknown = fleet(repo)
    if not cells and not unknown:
        return None
    branches = sorted({c.branch for c in cells}, key=lambda b: (len(b), b))
    rows = sorted({(c.kernel, c.os_tag) for c in cells})
    by = {(c.branch, c.kernel, c.os_tag): c for c in cells}
    lines = [
        "<table>",
        "<tr><th>kernel</th><th>OS</th>" + "".join(f"<th>{_e(b)}</th>" for b in branches) + "</tr>",
    ]
    for kernel, os_tag in rows:
        tds = []
        for branch in branches:
            cell = by.get((branch, kernel, os_tag))
            if cell is None:
                tds.append("<td></td>")
                continue
            kind, mark = ("missing", "MISSING") if cell.missing else ("built", "built")
            names = ", ".join(cell.nodes)
            tds.append(f'<td class="{kind}">{mark}: {_e(names)}</td>')
        lines.append(f"<tr><td>{_e(kernel)}</td><td>{_e(os_tag)}</td>{''.join(tds)}</tr>")
    lines.append("</table>")
    lines.append("<p>Columns: driver branch. MISSING: the image is not in the support matrix.</p>")
    if unknown:
        lines.append(f"<p>No image tag (a label is missing): {_e(', '.join(unknown))}</p>")
    return "\n".join(lines)


def _upgrade_states(repo: Repo) -> str | None:
    from gpudrv_check.report.sections.upgrade_states import shown_state

    if not repo.gpu_nodes:
        return None
    by_state: dict[str, list[str]] = {}
    for node in repo.gpu_nodes:
        by_state.setdefault(upgrade_state(node.labels), []).append(node.name)
    order = {state: i for i, state in enumerate(("", *UPGRADE_STATES))}
    rows = [
        f"<tr><td><code>{_e(shown_state(state) or '(none)')}</code></td><td>{len(names)}</td>"
        f"<td>{_e(', '.join(sorted(names)))}</td></tr>"
        for state, names in sorted(by_state.items(), key=lambda i: (order.get(i[0], 99), i[0]))
    ]
    head = "<tr><th>state</th><th>nodes</th><th>which</th></tr>"
    return f"<table>\n{head}\n" + "\n".join(rows) + "\n</table>"


def _operands(repo: Repo) -> str | None:
    placement = repo.operand_placement
    if placement.mode == MODE_NONE or not placement.gpu_rows:
        return None
    columns = list(placement.operands)
    head = "<tr><th>node</th>" + "".join(f"<th>{_e(c)}</th>" for c in columns)
    lines = ["<table>", head + "<th>chain</th></tr>"]
    for node in placement.gpu_rows:
        cells = placement.cells.get(node.name, {})
        tds = "".join(f"<td>{_e(cells[c].text) if c in cells else ''}</td>" for c in columns)
        chain = placement.chain(node.name)
        css = ' class="broken"' if chain == "broken" else ""
        lines.append(f"<tr><td>{_e(node.name)}</td>{tds}<td{css}>{chain}</td></tr>")
    lines.append("</table>")
    return "\n".join(lines)


def _rehearsal(repo: Repo) -> str | None:
    from gpudrv_check.model.fleet_rehearsal import configured_target, fleet_rehearsal
    from gpudrv_check.model.upgrade_plan import DriverVersion

    text = configured_target(repo)
    version = DriverVersion.parse(text) if text else None
    if version is None or repo.matrix is None or not repo.gpu_nodes:
        return None
    reh = fleet_rehearsal(repo, version)
    rows = []
    for wave in reh.waves:
        moves = "; ".join(f"{m['node']}: {m['from'] or '(none)'} → {m['to']}" for m in wave.nodes)
        events = [
            f"evicted {e['pod']} from {e['node']} → {e['to'] or 'Pending'}" for e in wave.evictions
        ]
        events += [f"blocked {b['node']}: {b['message']}" for b in wave.blocks]
        rows.append(
            f'<tr class="wave"><td>{wave.reconcile}</td><td>{wave.seconds} s</td>'
            f"<td>{_e(moves)}</td><td>{'<br>'.join(_e(e) for e in events)}</td></tr>"
        )
    verdict = "completes" if reh.complete else "stalls"
    lines = [f'<p id="rehearsal-verdict">Upgrade to {_e(version.text)} {verdict}.</p>']
    head = "<tr><th>reconcile</th><th>time</th><th>nodes</th><th>evictions and blocks</th></tr>"
    lines += ["<table>", head, *rows, "</table>"]
    lines += [
        f'<p class="stall">stalled: {_e(st.node)} in {_e(st.state)}: {_e(st.reason)}</p>'
        for st in reh.stalls
    ]
    lines += [f'<p class="note">note: {_e(n)}</p>' for n in reh.notes]
    return "\n".join(lines)


def render(report: Report, *, colour: bool = False) -> str:
    s = report.summary
    verdict = "failed" if s.exit_code else "passed"
    counts = s.counts
    summary = (
        f'<p id="verdict" class="verdict-{verdict}"><strong>{verdict}</strong> (fail on '
        f"{_e(s.fail_on)}): {counts.get('error', 0)} error(s), {counts.get('warning', 0)} "
        f"warning(s), {counts.get('info', 0)} info; {s.suppressed} suppressed; {s.files} "
        f"file(s), {s.objects} object(s) read.</p>"
    )
    notes = "".join(f'<p class="note">note: {_e(n)}</p>' for n in s.notes)
    parts = [summary + notes, _section("findings", "Findings", _findings(report))]
    repo = report.repo
    if repo is not None:
        for anchor, title, body in (
            ("fleet", "GPU nodes by driver image", _fleet(repo)),
            ("upgrade-states", "GPU nodes per upgrade state", _upgrade_states(repo)),
            ("operands", "Operands per GPU node", _operands(repo)),
            ("rehearsal", "Driver upgrade rehearsal", _rehearsal(repo)),
        ):
            if body:
                parts.append(_section(anchor, title, body))
    version = f" {_e(report.tool_version)}" if report.tool_version else ""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        f"<title>gpudrv-check report</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f"<h1>gpudrv-check{version}</h1>\n" + "\n".join(parts) + "\n</body>\n</html>\n"
    )
