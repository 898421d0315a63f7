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


# --- the built-in declarations, validated here (a run builds them without pydantic) -------


def _declarations():
    from gpudrv_check.read.policy import rule_folders
    from gpudrv_check.read.yaml_docs import parse_text

    for folder in rule_folders():
        parsed = parse_text(folder.joinpath("rule.yaml").read_text(encoding="utf-8"))
        assert not parsed.problems and len(parsed.docs) == 1, folder.name
        yield folder.name, parsed.docs[0].data


def test_every_rule_yaml_is_what_pydantic_validates_it_to():
    """read/policy.py `catalog` builds each rule.yaml without pydantic (core/validated.py
    `build`): here pydantic validates each one (unknown keys, types, the literals of `needs`
    and `scope`, severities) and the run's catalog must hold exactly what it gives."""
    from gpudrv_check.core.validated import validate
    from gpudrv_check.read.policy import RulePolicy

    built = {policy.id: policy for policy in catalog().values()}
    seen = set()
    for name, data in _declarations():
        policy, _ = validate(RulePolicy, data)
        assert built[policy.id] == policy, name
        seen.add(policy.id)
    assert seen == set(built)


def test_the_compiled_catalog_is_the_rule_folders():
    """A run reads gpudrv_check/rules/catalog.json (issue 22: listing the folders and parsing
    their YAML took 9 ms of every run); it must be every folder's rule.yaml exactly, written
    as `compiled_catalog_text` writes it, and give the catalog the folders give."""
    from gpudrv_check.read.policy import (
        COMPILED_CATALOG,
        RulePolicy,
        built_in,
        compiled_catalog_text,
        source_catalog,
    )

    source = source_catalog()
    assert len(source) == len(list(_declarations())) >= 30
    shipped = (PACKAGE / "rules" / COMPILED_CATALOG).read_text(encoding="utf-8")
    assert shipped == compiled_catalog_text(source), (
        "gpudrv_check/rules/catalog.json is stale: run "
        '`python -c "from gpudrv_check.read.policy import write_compiled_catalog as w; w()"`, '
        "then write rules/plan.json (test_the_compiled_plan_is_what_the_declarations_give)"
    )
    from_folders = {
        policy.id: policy
        for policy in (built_in(RulePolicy, data, name) for name, data in source.items())
    }
    assert catalog() == dict(sorted(from_folders.items()))


def test_the_compiled_plan_is_what_the_declarations_give():
    """A run reads gpudrv_check/rules/plan.json (issue 22: working the skim plan and the
    partition kinds out of the declarations took about 5 ms of every run); it must be what
    the declarations give, written as `compiled_plan_text` writes it."""
    from gpudrv_check.rules import plan

    shipped = (PACKAGE / "rules" / plan.COMPILED_PLAN).read_text(encoding="utf-8")
    assert shipped == plan.compiled_plan_text(), (
        "gpudrv_check/rules/plan.json is stale: run "
        '`python -c "from gpudrv_check.rules.plan import write_compiled_plan as w; w()"` '
        "(after rules/catalog.json, if a rule.yaml changed)"
    )
    assert plan.skim_plan() == plan.derived_skim_plan()
    assert plan.partition_kinds() == plan.derived_partition_kinds()
    assert plan.cacheable_cluster_rules() == plan.derived_cacheable_cluster_rules()
    assert plan.conditional_rules() == plan.derived_conditional_rules() == {"GPU025"}
    # sets that matter, not empty ones written by a broken derivation
    assert {"CustomResourceDefinition", "Role"} <= plan.skim_plan().kinds
    assert "images" in plan.skim_plan().node_status and "Pod" in plan.partition_kinds()


def test_a_package_without_the_compiled_plan_works_it_out(monkeypatch):
    from gpudrv_check.rules import plan

    cached = (plan.compiled_plan, plan.skim_plan, plan.partition_kinds)
    cached += (plan.cacheable_cluster_rules, plan.conditional_rules)
    for function in cached:
        function.cache_clear()
    monkeypatch.setattr(plan, "COMPILED_PLAN", "absent.json")
    try:
        assert plan.compiled_plan() is None
        assert plan.skim_plan() == plan.derived_skim_plan()
        assert plan.partition_kinds() == plan.derived_partition_kinds()
        assert plan.cacheable_cluster_rules() == plan.derived_cacheable_cluster_rules()
        assert plan.conditional_rules() == plan.derived_conditional_rules()
    finally:
        for function in cached:
            function.cache_clear()


def test_a_broken_compiled_plan_is_a_packaging_error(monkeypatch, tmp_path):
    import json

    import pytest

    from gpudrv_check.rules import plan

    good = plan.derived_plan()
    broken: list[object] = [
        "{not json",
        [],
        {**good, "version": 2},
        {**good, "skim": []},
        {**good, "skim": {**good["skim"], "kinds": "Role"}},
        {**good, "partition_kinds": [1]},
        {key: value for key, value in good.items() if key != "cacheable_cluster_rules"},
        {key: value for key, value in good.items() if key != "conditional_rules"},
        {**good, "conditional_rules": "GPU025"},
    ]
    (tmp_path / "rules").mkdir()
    monkeypatch.setattr("gpudrv_check.core.resources.package_dir", lambda: tmp_path)
    try:
        for data in broken:
            plan.compiled_plan.cache_clear()
            text = data if isinstance(data, str) else json.dumps(data)
            (tmp_path / "rules" / plan.COMPILED_PLAN).write_text(text)
            with pytest.raises(RuntimeError, match="broken built-in rules/plan.json"):
                plan.compiled_plan()
        plan.compiled_plan.cache_clear()
        (tmp_path / "rules" / plan.COMPILED_PLAN).write_text(json.dumps(good))
        assert plan.compiled_plan() == good
    finally:
        plan.compiled_plan.cache_clear()


def test_the_model_reads_are_what_pydantic_validates_them_to():
    from gpudrv_check.core.validated import validate
    from gpudrv_check.read.policy import Reads
    from gpudrv_check.read.yaml_docs import parse_text
    from gpudrv_check.rules.plan import model_reads

    parsed = parse_text((PACKAGE / "model" / "reads.yaml").read_text(encoding="utf-8"))
    validated = tuple(validate(Reads, r)[0] for r in parsed.docs[0].data["reads"])
    assert validated == model_reads()


def test_a_broken_rule_yaml_is_refused_by_pydantic_and_by_the_build():
    """What the tests would catch in a rule.yaml, and what a run would say of one."""
    import pytest
    from pydantic import ValidationError

    from gpudrv_check.core.validated import validate
    from gpudrv_check.read.policy import RulePolicy, built_in

    good = dict(next(iter(_declarations()))[1])
    for bad in ({**good, "sevrity": "error"}, {**good, "needs": ["gpus"]}, {**good, "scope": 1}):
        with pytest.raises(ValidationError):
            validate(RulePolicy, bad)
    with pytest.raises(RuntimeError, match="broken built-in rule x"):
        built_in(RulePolicy, {**good, "sevrity": "error"}, "rule x")
    with pytest.raises(RuntimeError, match="broken built-in rule x"):
        built_in(RulePolicy, {**good, "severity": "fatal"}, "rule x")


def test_a_package_without_the_compiled_catalog_reads_the_folders(monkeypatch):
    # a build from a checkout that does not track rules/catalog.json yet (the pre-commit
    # hook installs the repo's tracked files): the folders, not an internal error
    from gpudrv_check.read import policy

    monkeypatch.setattr(policy, "COMPILED_CATALOG", "absent.json")
    assert policy.compiled_catalog() == policy.source_catalog()
