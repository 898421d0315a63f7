"""Config `rules:` by id (any case) or name: enable, severity, params; mistakes at file:line."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gpudrv_check.read.config import ConfigError, load_config
from gpudrv_check.read.policy import catalog, rule_params, rule_settings, validate_rule_settings
from tests.conftest import run_cli, write


def _rules_with_params() -> dict:
    rules = dict(catalog())
    rules["GPU001"] = replace(
        rules["GPU001"], params={"max_nodes": 10, "ratio": 0.5, "names": ["a"], "strict": False}
    )
    return rules


def _config(tmp_path: Path, text: str):
    write(tmp_path, ".gpudrv-check.yaml", text)
    return load_config(tmp_path)


@pytest.mark.parametrize("key", ["GPU001", "gpu001", "driver-image-missing"])
def test_params_by_id_or_name(tmp_path, key):
    config = _config(tmp_path, f"rules:\n  {key}:\n    params: {{max_nodes: 3}}\n")
    rules = _rules_with_params()
    validate_rule_settings(config, rules)
    assert rule_params(config, "GPU001", rules) == {
        "max_nodes": 3,
        "ratio": 0.5,
        "names": ["a"],
        "strict": False,
    }
    assert rule_settings(config, "GPU001", rules) is not None
    assert rule_params(config, "GPU002", rules) == {}


def test_context_params_use_the_run_rules(tmp_path):
    from gpudrv_check.model.repo import Repo
    from gpudrv_check.rules.context import Context

    config = _config(tmp_path, "rules: {driver-image-missing: {params: {ratio: 1}}}\n")
    ctx = Context(
        Repo(root=str(tmp_path), config=config, manifests=[], nodes=[], matrix=None),
        _rules_with_params(),
    )
    assert ctx.params("GPU001")["ratio"] == 1


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("rules:\n  GPU999: {enabled: false}\n", (2, 3), "unknown rule 'GPU999'"),
        (
            "rules:\n  GPU001: {enabled: false}\n  driver-image-missing: {severity: info}\n",
            (3, 3),
            "GPU001 is configured twice",
        ),
        ("rules:\n  GPU001:\n    params: {max_node: 3}\n", (3, 14), "no parameter 'max_node'"),
        ("rules:\n  GPU001:\n    params:\n      max_nodes: '3'\n", (4, 7), "must be a number"),
        ("rules:\n  GPU001:\n    params:\n      strict: 1\n", (4, 7), "must be a boolean"),
        ("rules:\n  GPU001:\n    params:\n      names: a\n", (4, 7), "must be a list"),
    ],
)
def test_mistakes_point_at_their_line(tmp_path, text, where, message):
    config = _config(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        validate_rule_settings(config, _rules_with_params())
    assert (err.value.file, err.value.line, err.value.column) == (".gpudrv-check.yaml", *where)
    assert message in str(err.value)


def test_unknown_rule_through_the_cli(tmp_path):
    write(tmp_path, ".gpudrv-check.yaml", "matrix: null\nrules:\n  nope: {enabled: false}\n")
    result = run_cli("check", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr == (
        "gpudrv-check: error: .gpudrv-check.yaml:3:3: rules: unknown rule 'nope' "
        "(see `gpudrv-check rules`)\n"
    )
