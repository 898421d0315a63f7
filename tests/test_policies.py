"""Every rule module has a policy entry, and every policy names a real emitter."""

from __future__ import annotations

import re

from gpudrv_check.read.policy import catalog
from gpudrv_check.rules import RULE_MODULES
from tests.conftest import ROOT


def test_each_rule_module_has_a_matching_policy():
    policies = catalog()
    for module in RULE_MODULES:
        assert module.ID in policies, f"{module.__name__} has no rule.yaml next to it"
        assert policies[module.ID].source == "rule"
        assert module.__doc__ and module.__doc__.startswith(
            f"{module.ID} {policies[module.ID].name}"
        )


def test_each_rule_policy_has_a_module():
    # load rules are emitted by the reader and the model: tests/test_catalog.py
    ids = {m.ID for m in RULE_MODULES}
    for policy in catalog().values():
        if policy.source == "rule":
            assert policy.id in ids, f"{policy.id} is declared as a rule but no module yields it"


def test_rule_folders_are_named_by_id_and_name_and_names_are_unique():
    names = [p.name for p in catalog().values()]
    assert len(names) == len(set(names))
    folders = sorted(p.parent for p in (ROOT / "gpudrv_check" / "rules").glob("*/rule.yaml"))
    assert len(folders) == len(catalog())
    for folder in folders:
        assert re.fullmatch(r"GPU\d{3}_[a-z0-9_]+", folder.name)
        policy = catalog()[folder.name[:6]]
        assert folder.name == f"{policy.id}_{policy.name.replace('-', '_')}"
        # a rule's check sits in its folder exactly when it is a rule (not a load finding)
        assert (folder / "rule.py").is_file() == (policy.source == "rule"), folder.name


def test_each_rule_module_lives_in_its_own_folder():
    for module in RULE_MODULES:
        folder = module.__name__.split(".")[-2]
        assert folder.startswith(f"{module.ID}_"), module.__name__


def test_readme_rule_table_is_generated_from_the_policies():
    from gpudrv_check.cli.commands.rules import rules_table_markdown

    readme = (ROOT / "README.md").read_text()
    start, end = "<!-- rules:start -->\n", "<!-- rules:end -->"
    table = readme[readme.index(start) + len(start) : readme.index(end)]
    assert table == rules_table_markdown(), "regenerate: gpudrv-check rules --format markdown"
