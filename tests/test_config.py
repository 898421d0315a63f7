"""Config discovery and validation: unknown keys and bad values point at file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.read.config import ConfigError, load_config
from tests.conftest import write


def test_defaults_when_there_is_no_config(tmp_path: Path):
    config = load_config(tmp_path)
    assert config.matrix == "support-matrix.csv"
    assert config.labels.driver_branch[0] == "nvidia.com/cuda.driver-version.major"


def test_yaml_config_is_read(tmp_path: Path):
    write(
        tmp_path,
        ".gpudrv-check.yaml",
        """
        matrix: ledger/matrix.csv
        operator: {version: v25.10.0}
        labels: {driver_branch: example.com/driver}
        rules: {GPU021: {enabled: false}}
        """,
    )
    config = load_config(tmp_path)
    assert config.matrix == "ledger/matrix.csv"
    assert config.operator.version == "v25.10.0"
    assert config.labels.driver_branch == ["example.com/driver"]
    assert config.rules["GPU021"].enabled is False


def test_unknown_key_is_an_error_at_its_line(tmp_path: Path):
    write(
        tmp_path,
        ".gpudrv-check.yaml",
        """
        matrix: m.csv
        operator:
          verison: v25.10.0
        """,
    )
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert (err.value.file, err.value.line, err.value.column) == (".gpudrv-check.yaml", 3, 3)
    assert "unknown key 'operator.verison'" in str(err.value)


def test_wrong_type_is_an_error_at_its_line(tmp_path: Path):
    write(tmp_path, ".gpudrv-check.yaml", "max_file_bytes: lots\n")
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert err.value.line == 1 and "max_file_bytes" in str(err.value)


def test_broken_yaml_config_is_a_config_error(tmp_path: Path):
    write(tmp_path, ".gpudrv-check.yaml", "matrix: [\n")
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert err.value.line >= 1 and "syntax" in str(err.value)


def test_pyproject_section(tmp_path: Path):
    write(
        tmp_path,
        "pyproject.toml",
        """
        [tool.gpudrv-check]
        matrix = "drivers.csv"
        exclude = ["charts/"]
        """,
    )
    config = load_config(tmp_path)
    assert config.matrix == "drivers.csv" and config.exclude == ["charts/"]


def test_pyproject_unknown_key(tmp_path: Path):
    write(tmp_path, "pyproject.toml", '[tool.gpudrv-check]\nmatrixx = "a.csv"\n')
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert err.value.file == "pyproject.toml" and "matrixx" in str(err.value)
