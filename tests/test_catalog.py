"""One catalog: findings emitted outside `rules/` take their id and severity from rule.yaml.

The reader, the model, the engine and the commands name a built-in rule by its name through
`read/policy.py` `builtin(name)`; its id, its severity and the severities of its special cases
(`severities:` in rule.yaml) come from there. No id or severity is written as a literal.
"""

from __future__ import annotations

import ast
import re

from gpudrv_check.read.policy import builtin, catalog
from tests.conftest import ROOT

PACKAGE = ROOT / "gpudrv_check"
#: where findings are emitted outside the rules (report/ maps severities to formats: allowed)
OUTSIDE_RULES = ("read", "model", "engine", "cli")
RULE_ID = re.compile(r"GPU\d{3}")
USE = re.compile(r'builtin\("([^"]+)"\)(?:\.severity_of\("([^"]+)"\))?')


def _sources():
    for layer in OUTSIDE_RULES:
        yield from sorted((PACKAGE / layer).rglob("*.py"))


def test_no_rule_id_literal_outside_rules():
    found = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if RULE_ID.fullmatch(node.value):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert found == [], "name the rule through read.policy.builtin(name).id"


def test_no_severity_literal_outside_rules():
    found = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "Severity"
                and node.attr in ("ERROR", "WARNING", "INFO")
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: Severity.{node.attr}")
    assert found == [], "take the severity from the catalog: builtin(name).severity(_of)"


def test_every_name_and_case_used_is_in_the_catalog():
    uses = [m for path in PACKAGE.rglob("*.py") for m in USE.finditer(path.read_text())]
    assert uses
    for match in uses:
        policy = builtin(match[1])  # KeyError for a name the catalog lacks
        if match[2] is not None:
            assert match[2] in policy.severities, f"{policy.id} has no case {match[2]!r}"


def test_every_declared_case_and_load_rule_is_emitted_somewhere():
    source = "\n".join(path.read_text() for path in PACKAGE.rglob("*.py"))
    names = {m[1] for m in USE.finditer(source)}
    for policy in catalog().values():
        if policy.source == "load":
            assert policy.name in names, f"{policy.id} is emitted nowhere"
        for case in policy.severities:
            # `severity_of("case")`, or the case handed to the function that asks for it
            assert f'"{case}"' in source, f"{policy.id} case {case!r} is used nowhere"


def test_a_case_severity_differs_from_the_rules_own():
    for policy in catalog().values():
        for case, severity in policy.severities.items():
            assert severity != policy.severity, f"{policy.id} {case}: same as `severity:`"
