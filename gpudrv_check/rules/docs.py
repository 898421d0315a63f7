"""The page of each built-in rule, generated from its rule.yaml: `docs/rules/<ID>.md`.

    python -m gpudrv_check.rules.docs [DIR]     # rewrite the pages (default: docs/rules)

tests/rules/test_docs.py regenerates them and fails when a committed page differs. The SARIF
report links each rule to its page (`helpUri`) and carries the same text (`help.markdown`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from gpudrv_check.read.policy import RulePolicy, catalog, rule_folders

DOCS_DIR = "docs/rules"


def page_path(rule_id: str) -> str:
    """Where a rule's page sits, relative to the repo root."""
    return f"{DOCS_DIR}/{rule_id}.md"


def help_uri(rule_id: str) -> str:
    """The link to a rule's page: under the `Documentation` URL of [project.urls] when the
    installed package declares one (an absolute URI, as SARIF wants), else the page's path in
    the repo, relative to its root."""
    from importlib import metadata

    try:
        urls = metadata.metadata("gpudrv-check").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        urls = []
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() == "documentation" and url.strip():
            return f"{url.strip().rstrip('/')}/rules/{rule_id}.md"
    return page_path(rule_id)


def _folder(policy: RulePolicy) -> str:
    return f"gpudrv_check/rules/{policy.id}_{policy.name.replace('-', '_')}"


def _facts(policy: RulePolicy) -> list[str]:
    severity = policy.severity.value
    if policy.severities:
        cases = ", ".join(f"{s.value} for {case}" for case, s in policy.severities.items())
        severity = f"{severity} ({cases})"
    emitter = "its check, `rule.py`" if policy.source == "rule" else "the reader or the model"
    rows = [
        ("severity", severity),
        ("category", policy.category),
        ("scope", policy.scope),
        ("needs", ", ".join(policy.needs) or "nothing"),
        ("emitted by", emitter),
        ("defined in", f"[`{_folder(policy)}/`](../../{_folder(policy)})"),
    ]
    return ["| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)]


def _reads(policy: RulePolicy) -> list[str]:
    if not policy.reads:
        return [
            "No field of any object: it checks the files as the reader reads them (YAML, "
            "JSON, the support matrix)."
        ]
    lines = []
    for entry in policy.reads:
        fields = ", ".join(f"`{f}`" for f in entry.fields) or "`metadata` only"
        scope = f" (scope: {entry.scope})" if entry.scope else ""
        if entry.when:
            scope = f"{scope} only when {entry.when}"
        lines.append(f"- {', '.join(f'`{k}`' for k in entry.kinds)}{scope}: {fields}")
    return lines


def _cases(policy: RulePolicy) -> list[str]:
    [folder] = [f for f in rule_folders() if f.name == _folder(policy).rsplit("/", 1)[1]]
    cases = folder.joinpath("cases")
    if not cases.is_dir():
        return []
    lines = []
    for entry in sorted(cases.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yaml"):
            continue
        first = entry.read_text(encoding="utf-8").splitlines()[:1]
        what = first[0].lstrip("# ").strip() if first and first[0].startswith("#") else ""
        link = f"../../{_folder(policy)}/cases/{entry.name}"
        lines.append(f"- [`{entry.name}`]({link}){': ' + what if what else ''}")
    return lines


def page(policy: RulePolicy) -> str:
    """A rule's page, in Markdown."""
    out = [f"# {policy.id} {policy.name}", "", policy.title, "", *_facts(policy), ""]
    out += ["## Why it matters", "", policy.why, "", "## How to fix", "", policy.fix, ""]
    if policy.docs:
        out += ["## Details", "", policy.docs.strip(), ""]
    if policy.params:
        out += ["## Parameters", ""]
        out += [f"- `{k}` (default `{v}`)" for k, v in policy.params.items()]
        out += [""]
    out += ["## What it reads", "", *_reads(policy), ""]
    examples = _cases(policy)
    if examples:
        out += ["## Examples", "", *examples, ""]
    out += [
        "---",
        f"Generated from `{_folder(policy)}/rule.yaml` by `python -m gpudrv_check.rules.docs`.",
    ]
    return "\n".join(out) + "\n"


def pages() -> dict[str, str]:
    """Every page, by path relative to the repo root."""
    return {page_path(p.id): page(p) for p in catalog().values()}


def write_pages(root: Path) -> list[str]:
    """Write every page under `root` (stale pages of rules that are gone are removed)."""
    folder = root / DOCS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    wanted = pages()
    for old in folder.glob("GPU*.md"):
        if f"{DOCS_DIR}/{old.name}" not in wanted:
            old.unlink()
    for rel, text in wanted.items():
        target = root / rel
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            tmp = target.with_suffix(".md.tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(target)
    return sorted(wanted)


if __name__ == "__main__":
    written = write_pages(Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd())
    sys.stdout.write(f"{len(written)} pages in {DOCS_DIR}/\n")
