"""The rule catalog: every built-in rule's metadata, declared as data in its `rule.yaml`.

Each built-in rule is a folder `gpudrv_check/rules/GPUxxx_<name>/` whose `rule.yaml` is read
here as data (the reader never imports the rules). Findings the reader and the model emit have
folders of their own (`source: load`) and take their id and severity from here too (`builtin`).

Documentation (`gpudrv-check rules`, `explain`, the README table) is generated from here, so
it cannot drift from what the checker does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, Literal

from gpudrv_check.core.finding import Severity, quoted
from gpudrv_check.core.records import record
from gpudrv_check.core.validated import build

if TYPE_CHECKING:
    from importlib.abc import Traversable

    from gpudrv_check.read.config import Config, RuleSettings


@record(frozen=True, kw_only=True)
class Reads:
    """Kinds a rule reads, and the field paths it reads in them (`metadata`, `apiVersion` and
    `kind` are always read). A path is dotted; `*` is any key or item, `{podspec}` the pod spec
    of a workload kind (`spec`, `spec.template.spec`, ...)."""

    kinds: list[str]
    fields: list[str] = field(default_factory=list)
    # `namespace`: what is read is the object's own namespace (and cluster-wide objects);
    # `cluster`: objects of every namespace; None: the rule's scope
    scope: Literal["namespace", "cluster"] | None = None
    # read only under this condition (in words); the rule's `reads_all_namespaces(repo)` says
    # when it holds, and the engine then reads every namespace instead of taking some from the
    # partition cache (so the kinds can stay in the partitions: rules/plan.py)
    when: str | None = None


@record(frozen=True, kw_only=True)
class RulePolicy:
    """A rule's metadata. The built-in rules' `rule.yaml` files ship with the package and are
    validated by pydantic in the tests (tests/test_catalog.py, core/validated.py `validate`):
    a run builds them without it (`build`)."""

    id: str
    name: str
    title: str
    severity: Severity
    category: str
    # "rule": a module in gpudrv_check/rules yields it; "load": the reader or model emits it
    source: str = "rule"
    why: str
    fix: str
    params: dict[str, Any] = field(default_factory=dict)
    # what the rule cannot run without: `nodes` (any node), `gpu-nodes`, `matrix`; a run whose
    # repo lacks one skips the rule and says so (model/coverage.py)
    needs: list[Literal["nodes", "gpu-nodes", "matrix"]] = field(default_factory=list)
    # what the rule's findings depend on: kinds and field paths (rules/plan.py derives the skim
    # plan and the partition kinds from these), and whether that is one namespace or the cluster
    reads: list[Reads] = field(default_factory=list)
    scope: Literal["namespace", "cluster"] = "cluster"
    # the longer user documentation (Markdown), shown on the rule's generated page
    docs: str = ""
    # severities other than `severity` some findings of the rule take, by case (e.g. a
    # duplicate matrix row is a warning where a malformed one is an error)
    severities: dict[str, Severity] = field(default_factory=dict)

    def severity_of(self, case: str | None = None) -> Severity:
        """The severity of the rule's findings, or of its findings of `case`."""
        if case is None:
            return self.severity
        return self.severities[case]


#: how a `rule.yaml` is read: pydantic options of core/validated.py (strict, no unknown key);
#: the enums as their text
RulePolicy.__validation__ = {"extra": "forbid", "strict": False}  # type: ignore[attr-defined]
Reads.__validation__ = {"extra": "forbid", "strict": False}  # type: ignore[attr-defined]


def built_in(cls: Any, data: Any, what: str) -> Any:
    """A built-in declaration (a `rule.yaml`, model/reads.yaml) as `cls`, built without
    pydantic: the tests validate every one of them (tests/test_catalog.py)."""
    try:
        return build(cls, data)
    except (TypeError, ValueError, KeyError) as err:
        raise RuntimeError(f"broken built-in {what}: {err}") from None


#: every `rule.yaml` as data, by folder, in one file a run reads with `json` (gpudrv_check/
#: rules/catalog.json, written from the folders by `write_compiled_catalog`): listing the 30
#: folders and parsing their YAML took 9 ms of every run, a tenth of a small repo's check. A
#: test holds it equal to the folders (tests/test_catalog.py).
COMPILED_CATALOG = "catalog.json"


@lru_cache(maxsize=1)
def catalog() -> dict[str, RulePolicy]:
    rules: dict[str, RulePolicy] = {}
    for name, data in compiled_catalog().items():
        policy = built_in(RulePolicy, data, f"rule {name}/rule.yaml")
        rules[policy.id] = policy
    return dict(sorted(rules.items()))


def compiled_catalog() -> dict[str, Any]:
    """gpudrv_check/rules/catalog.json: each rule folder's `rule.yaml` as data, by name; the
    folders themselves when a copy of the package lacks the file (a build from a checkout
    that does not track it yet)."""
    from gpudrv_check.read.packaged import compiled_rules_json

    data = compiled_rules_json(COMPILED_CATALOG)
    if data is None:
        return source_catalog()
    if not (isinstance(data, dict) and data.get("version") == 1):
        raise RuntimeError(f"broken built-in rules/{COMPILED_CATALOG}")
    rules = data.get("rules")
    if not isinstance(rules, dict):
        raise RuntimeError(f"broken built-in rules/{COMPILED_CATALOG}")
    return rules


def source_catalog() -> dict[str, Any]:
    """Each rule folder's `rule.yaml` as data, by folder name: what `compiled_catalog` must
    equal."""
    from gpudrv_check.read.yaml_docs import parse_text

    out: dict[str, Any] = {}
    for folder in rule_folders():
        parsed = parse_text(folder.joinpath("rule.yaml").read_text(encoding="utf-8"))
        if parsed.problems or len(parsed.docs) != 1:
            raise RuntimeError(f"broken built-in rule {folder.name}/rule.yaml: {parsed.problems}")
        out[folder.name] = parsed.docs[0].data
    return out


def compiled_catalog_text(rules: Mapping[str, Any]) -> str:
    """The text of gpudrv_check/rules/catalog.json for `rules` (`source_catalog`). Written by
    `python -c "from gpudrv_check.read.policy import write_compiled_catalog as w; w()"` after
    an edit of a `rule.yaml` (in a checkout)."""
    from gpudrv_check.read.packaged import compiled_text

    return compiled_text(_catalog_file(rules))


def _catalog_file(rules: Mapping[str, Any]) -> dict[str, Any]:
    return {"version": 1, "rules": dict(rules)}


def write_compiled_catalog() -> None:
    """Write gpudrv_check/rules/catalog.json from the rule folders (a developer's command)."""
    from gpudrv_check.read.packaged import rules_file, write_compiled

    write_compiled(rules_file(COMPILED_CATALOG), _catalog_file(source_catalog()))


def rule_folders() -> list[Traversable]:
    """The folders of the built-in rules (`GPUxxx_<name>/` holding a `rule.yaml`), by name."""
    from gpudrv_check.core.resources import package_dir

    folder = package_dir().joinpath("rules")
    found = [e for e in folder.iterdir() if e.is_dir() and e.joinpath("rule.yaml").is_file()]
    return sorted(found, key=lambda e: e.name)


@cache
def builtin(name: str) -> RulePolicy:
    """A built-in rule by name, for the code that emits its findings outside `rules/` (the
    reader, the model, the engine): its id and severity come from here, never from literals.
    An unknown name is a programming error (tests/test_catalog.py runs every emitter)."""
    for policy in catalog().values():
        if policy.name == name:
            return policy
    raise KeyError(f"no built-in rule named {name!r}")


def by_id_or_name(key: str) -> RulePolicy | None:
    """A built-in rule by id (any case) or name."""
    return find_rule(key, catalog())


def default_severity(rule_id: str) -> Severity:
    """The severity of a built-in rule by id (an unknown id is a programming error)."""
    return catalog()[rule_id].severity


def find_rule(key: str, rules: Mapping[str, RulePolicy] | None = None) -> RulePolicy | None:
    """A rule by id (any case) or name, among `rules` (default: the built-in catalog)."""
    if rules is None:
        rules = catalog()
    if key.upper() in rules:
        return rules[key.upper()]
    for policy in rules.values():
        if policy.name == key:
            return policy
    return None


def rule_settings(
    config: Config, rule_id: str, rules: Mapping[str, RulePolicy] | None = None
) -> RuleSettings | None:
    """The config's `rules:` entry for a rule, written under its id (any case) or its name."""
    for key, settings in config.rules.items():
        policy = find_rule(key, rules)
        if policy is not None and policy.id == rule_id:
            return settings
        if policy is None and key.upper() == rule_id:
            return settings
    return None


def rule_params(
    config: Config, rule_id: str, rules: Mapping[str, RulePolicy] | None = None
) -> dict[str, Any]:
    """A rule's parameters: the policy's defaults overlaid with the config's."""
    policy = (rules if rules is not None else catalog()).get(rule_id)
    merged = dict(policy.params) if policy else {}
    settings = rule_settings(config, rule_id, rules)
    if settings is not None:
        merged.update(settings.params)
    return merged


def _same_type(default: Any, value: Any) -> bool:
    if default is None:
        return True
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, str):
        return isinstance(value, str)
    if isinstance(default, list):
        return isinstance(value, list)
    if isinstance(default, dict):
        return isinstance(value, dict)
    return True


def validate_rule_keys(config: Config) -> None:
    """Config `rules:` keys name a built-in rule (custom policies are checked once loaded)."""
    if not config.policies:
        validate_rule_settings(config)


def validate_rule_settings(config: Config, rules: Mapping[str, RulePolicy] | None = None) -> None:
    """Config `rules:` keys name a rule (by id or name) once; params exist and have their type.

    Raises ConfigError at the offending key of the config file.
    """
    from gpudrv_check.core.located import type_name

    seen: dict[str, str] = {}
    for key, settings in config.rules.items():
        policy = find_rule(key, rules)
        if policy is None:
            raise config.error(
                f"rules: unknown rule {quoted(key)} (see `gpudrv-check rules`)", "rules", key
            )
        if policy.id in seen:
            raise config.error(
                f"rules: {policy.id} is configured twice "
                f"({quoted(seen[policy.id])} and {quoted(key)})",
                "rules",
                key,
            )
        seen[policy.id] = key
        for name, value in settings.params.items():
            if name not in policy.params:
                known = ", ".join(sorted(policy.params)) or "none"
                raise config.error(
                    f"rules: {policy.id} has no parameter {quoted(name)} (parameters: {known})",
                    "rules",
                    key,
                    "params",
                    name,
                )
            default = policy.params[name]
            if not _same_type(default, value):
                raise config.error(
                    f"rules: {policy.id} parameter {quoted(name)} must be a {type_name(default)}, "
                    f"not a {type_name(value)}",
                    "rules",
                    key,
                    "params",
                    name,
                )
