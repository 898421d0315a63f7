"""The rule pages in docs/rules/ are generated from rule.yaml and kept fresh; SARIF links them."""

from __future__ import annotations

import json
from pathlib import Path

from gpudrv_check.read.policy import catalog
from gpudrv_check.rules.docs import help_uri, page, page_path, pages, write_pages
from tests.conftest import ROOT, run_cli


def test_committed_pages_are_what_the_rule_yaml_generates():
    for rel, text in pages().items():
        path = ROOT / rel
        assert path.is_file(), f"{rel} is missing: python -m gpudrv_check.rules.docs"
        assert path.read_text(encoding="utf-8") == text, (
            f"{rel} is stale: python -m gpudrv_check.rules.docs"
        )
    committed = {p.name for p in (ROOT / "docs" / "rules").glob("GPU*.md")}
    assert committed == {f"{rule_id}.md" for rule_id in catalog()}


def test_write_pages_regenerates_and_removes_pages_of_rules_that_are_gone(tmp_path: Path):
    stale = tmp_path / "docs" / "rules" / "GPU999.md"
    stale.parent.mkdir(parents=True)
    stale.write_text("old\n")
    written = write_pages(tmp_path)
    assert written == sorted(pages())
    assert not stale.exists()
    assert (tmp_path / page_path("GPU001")).read_text() == page(catalog()["GPU001"])


def test_a_page_says_what_rule_yaml_says():
    policy = catalog()["GPU006"]
    text = page(policy)
    assert text.startswith("# GPU006 invalid-matrix-row\n")
    for part in (policy.title, policy.why, policy.fix, "warning for duplicate-row"):
        assert part in text
    assert "cases/fail-short-row-and-duplicate.yaml" in text


def test_sarif_rules_link_their_page_and_carry_it(tmp_path: Path):
    out = tmp_path / "out.sarif"
    result = run_cli(
        "check", str(ROOT / "examples" / "lab"), "--format", "sarif", "--output", str(out)
    )
    assert result.returncode == 1, result.stderr
    rules = json.loads(out.read_text())["runs"][0]["tool"]["driver"]["rules"]
    assert rules
    for rule in rules:
        assert rule["help"]["markdown"] == page(catalog()[rule["id"]])
        # without a Documentation URL in [project.urls] the link is the page's path in the
        # repo, and SARIF's helpUri must be an absolute URI (schema: "format": "uri"): none
        assert (ROOT / help_uri(rule["id"])).is_file()
        assert "helpUri" not in rule


def test_sarif_helpuri_is_given_when_absolute(monkeypatch):
    """With a Documentation URL (help_uri gives an absolute URI), the rule links it."""
    from gpudrv_check.report.sarif import _rule
    from gpudrv_check.rules import docs

    policy = catalog()["GPU001"]
    monkeypatch.setattr(docs, "help_uri", lambda rule_id: f"https://docs.example/{rule_id}.md")
    assert _rule(policy)["helpUri"] == "https://docs.example/GPU001.md"
    monkeypatch.setattr(docs, "help_uri", lambda rule_id: f"docs/rules/{rule_id}.md")
    assert "helpUri" not in _rule(policy)
