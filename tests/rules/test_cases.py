"""Every case of every built-in rule: its repo, checked, gives exactly the findings it expects.

The cases are the rules' own examples, kept next to them (`rules/GPUxxx_<name>/cases/`, format
in tests/rules/cases.py): a new rule is a folder with its cases, and this one harness runs them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.read.policy import catalog
from tests.rules.cases import RULES, case_files, findings_of, read_case, write_repo

CASES = case_files()


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.parent.name[:6]}/{p.stem}")
def test_case(path: Path, tmp_path: Path):
    case = read_case(path)
    write_repo(case, tmp_path)
    assert findings_of(tmp_path, case.rule) == case.expect


def test_case_names_say_pass_or_fail_and_agree_with_the_expectations():
    for path in CASES:
        case = read_case(path)
        assert path.name.startswith(("pass-", "fail-")), case.name
        if path.name.startswith("pass-"):
            assert case.expect == [], f"{case.name}: a pass case expects no finding"
        else:
            assert case.expect, f"{case.name}: a fail case expects at least one finding"


def test_every_rule_has_a_passing_and_a_failing_case():
    for policy in catalog().values():
        [folder] = RULES.glob(f"{policy.id}_*")
        names = [p.name for p in (folder / "cases").glob("*.yaml")]
        assert any(n.startswith("fail-") for n in names), f"{folder.name} has no fail-*.yaml"
        assert any(n.startswith("pass-") for n in names), f"{folder.name} has no pass-*.yaml"
