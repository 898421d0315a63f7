"""Config discovery and validation: unknown keys and bad values point at file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.engine.run import check
from gpudrv_check.read.config import ConfigError, load_config
from tests.conftest import run_main, write


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


@pytest.mark.parametrize("key", ["source", "_data", "_toml", "written"])
def test_what_the_config_keeps_of_its_file_is_no_key_of_it(tmp_path: Path, key: str):
    """Where the config came from, its located data and the keys it wrote are kept beside its
    values (read/config.py, core/validated.py `internal`): no key of the file sets them. A
    `source:` was once taken as a key and silently overwritten by the file's name."""
    write(tmp_path, ".gpudrv-check.yaml", f"fail_on: never\n{key}: x\n")
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert (err.value.line, err.value.column) == (2, 1)
    assert f"unknown key '{key}'" in str(err.value)


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


def test_pyproject_a_date_is_said_as_a_date(tmp_path: Path):
    """TOML has dates: a date where a string belongs was called "a mapping" (review)."""
    write(tmp_path, "pyproject.toml", "[tool.gpudrv-check]\nmatrix = 1979-05-27\n")
    with pytest.raises(ConfigError, match="matrix: must be a string, not the date 1979-05-27"):
        load_config(tmp_path)


def test_pyproject_unknown_key(tmp_path: Path):
    write(tmp_path, "pyproject.toml", '[tool.gpudrv-check]\nmatrixx = "a.csv"\n')
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert err.value.file == "pyproject.toml" and "matrixx" in str(err.value)


WRONG_TYPES = [
    ("max_file_bytes: true\n", (1, 1), "max_file_bytes: must be an integer, not a boolean"),
    ('max_file_bytes: "100"\n', (1, 1), "max_file_bytes: must be an integer, not the string '100'"),
    ("max_total_bytes: 1.5\n", (1, 1), "max_total_bytes: must be an integer, not the number 1.5"),
    # the config is the tool's own: an integral float stays one (yaml_docs keep_written_floats),
    # where a manifest's reaches the API server as an int (docs/kubernetes.md §10)
    (
        "max_total_bytes: 1e6\n",
        (1, 1),
        "max_total_bytes: must be an integer, not the number 1000000.0",
    ),
    ("max_file_bytes: 2.0\n", (1, 1), "max_file_bytes: must be an integer, not the number 2.0"),
    (  # past 64 bits YAML reads a float: said as written (review: "the number 1e+23")
        "max_file_bytes: 99999999999999999999999\n",
        (1, 1),
        "max_file_bytes: must be an integer, not the number 99999999999999991611392",
    ),
    ('gitignore: "yes"\n', (1, 1), "gitignore: must be true or false, not the string 'yes'"),
    (
        'rules:\n  GPU011: {enabled: "off"}\n',
        (2, 12),
        "rules.GPU011.enabled: must be true or false, not the string 'off'",
    ),
    ("rules:\n  GPU011: 5\n", (2, 3), "rules.GPU011: must be a mapping, not an integer"),
    ("labels: {kernel: 5}\n", (1, 10), "labels.kernel: must be a string, not an integer"),
    ("exclude: charts/\n", (1, 1), "exclude: must be a list, not the string 'charts/'"),
    ("fail_on: warnings\n", (1, 1), "fail_on: must be 'error', 'warning', 'info' or 'never'"),
    ("exemptions: [{kind: Pod}]\n", (1, 14), "exemptions.0: key 'rule' is required"),
]


@pytest.mark.parametrize(("text", "where", "message"), WRONG_TYPES)
def test_a_value_of_the_wrong_type_is_never_coerced(tmp_path: Path, text, where, message):
    """Review c_bool2, c_strbool, c_strint: `max_file_bytes: true` was read as 1, `enabled:
    "off"` as true, "100" as 100. The models are strict; the message says what the key must
    hold, in our words (no pydantic wording, no model class names)."""
    write(tmp_path, ".gpudrv-check.yaml", text)
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert (err.value.line, err.value.column) == where, str(err.value)
    assert message in str(err.value)
    assert "Input should" not in str(err.value) and "instance of" not in str(err.value)


def test_values_as_yaml_and_toml_type_them_validate(tmp_path: Path):
    """Strict models take what YAML and TOML give: ints, booleans, strings, a severity."""
    config = (
        "max_file_bytes: 1024\ngitignore: false\nfail_on: never\nmatrix: null\n"
        "rules: {GPU011: {enabled: false, severity: info, params: {a: 1}}}\n"
        "exemptions: [{rule: GPU021, kind: Deployment}]\n"
    )
    write(tmp_path, ".gpudrv-check.yaml", config)
    loaded = load_config(tmp_path)
    assert (loaded.max_file_bytes, loaded.gitignore, loaded.fail_on) == (1024, False, "never")
    assert loaded.rules["GPU011"].severity == "info" and loaded.exemptions[0].rule == ["GPU021"]
    write(tmp_path / "t", "pyproject.toml", "[tool.gpudrv-check]\nmax_file_bytes = 2048\n")
    assert load_config(tmp_path / "t").max_file_bytes == 2048


PYPROJECT_ERRORS = [
    ('matrix = "m.csv"\nmax_file_bytes = true\n', "pyproject.toml:3:1: max_file_bytes: must be"),
    ('[tool.gpudrv-check.rules.GPU011]\nenabled = "off"\n', "pyproject.toml:3:1: rules.GPU011"),
    ('[tool.gpudrv-check.rules]\nGPU011 = {enabled = "off"}\n', "pyproject.toml:3:1: rules.GPU0"),
    ("  foo = 1\n", "pyproject.toml:2:3: unknown key 'foo'"),
    (
        '[[tool.gpudrv-check.exemptions]]\nrule = "GPU021"\n[[tool.gpudrv-check.exemptions]]\n'
        'rule = "NOPE"\n',
        "pyproject.toml:5:1: exemptions: unknown rule 'NOPE'",
    ),
    # the text does not say for sure (a multi-line string could hold `key =`): no position
    ('x = """\nmax_file_bytes = 1\n"""\nmax_file_bytes = true\n', "pyproject.toml: max_file_bytes"),
]


@pytest.mark.parametrize(("table", "expected"), PYPROJECT_ERRORS)
def test_a_pyproject_error_is_at_its_key_line(tmp_path: Path, table, expected):
    """Review c_pyp: every pyproject.toml error was at 1:1 (tomllib keeps no positions); the
    key's line is found in the text of our table, or no line is given."""
    write(tmp_path, "pyproject.toml", "[tool.gpudrv-check]\n" + table + "[other]\nfoo = 1\n")
    with pytest.raises(ConfigError) as err:
        check(tmp_path, load_config(tmp_path))
    assert str(err.value).startswith(expected), str(err.value)


def test_config_option_reads_a_toml_file_as_pyproject(tmp_path: Path):
    """Review c_pyp: `--config pyproject.toml` (any .toml) was read as YAML (a YAML syntax
    error); a TOML file named so without our table is an error, not the defaults."""
    write(tmp_path, "cfg/other.toml", '[tool.gpudrv-check]\nmatrix = "drivers.csv"\n')
    write(tmp_path, "cfg/bad.toml", "[tool.gpudrv-check]\nmax_file_bytes = true\n")
    write(tmp_path, "cfg/none.toml", "[tool.black]\n")
    assert load_config(tmp_path, str(tmp_path / "cfg/other.toml")).matrix == "drivers.csv"
    bad = run_main("check", str(tmp_path), "--no-cache", "--config", "cfg/bad.toml", cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr == (
        "gpudrv-check: error: cfg/bad.toml:2:1: max_file_bytes: must be an integer, not a boolean\n"
    )
    none = run_main("check", str(tmp_path), "--config", "cfg/none.toml", cwd=tmp_path)
    assert none.returncode == 2 and "no [tool.gpudrv-check] table" in none.stderr


KEYED_ERRORS = [
    ("cuda:\n  imgs: []\n", "2:3: cuda: unknown key 'imgs' (expected images, min_driver,"),
    ("cuda:\n  images: {}\n", "2:3: cuda: images: expected a list"),
    ('cuda:\n  min_driver: {"twelve": "580.1"}\n', "2:16: cuda: min_driver.twelve: expected"),
    ("workloads:\n  kindz: []\n", "2:3: workloads: unknown key 'kindz'"),
    (
        "workloads:\n  kinds:\n  - kind: Notebook\n    group: g\n    versions: [v1]\n"
        "    templates: [{role: null, template: [spec], replicas: one}]\n",
        "6:48: workloads.kinds[0].templates[0].replicas: must be null, an integer or a mapping, "
        "not the string 'one'",
    ),
    (
        "workloads:\n  kinds:\n  - kind: Notebook\n    group: g\n    versions: [v1]\n"
        "    templates: [{role: null, template: [spec], replicas: 1}]\n    extra: 1\n",
        "7:5: workloads.kinds[0]: unknown key 'extra'",
    ),
    ("matrix: nope.csv\n", "1:1: support matrix not found: "),
    ("inventory: [nodes.yaml, missing.yaml]\n", "1:25: inventory.1: file 'missing.yaml' not found"),
]


@pytest.mark.parametrize(("text", "expected"), KEYED_ERRORS)
def test_config_table_errors_are_at_their_key_in_our_words(tmp_path: Path, text, expected):
    """Review cu4, cu6, cu8, w1, w2, w3, m1, cl7: errors without a line, at the `cuda:` key
    rather than the one at fault, or in jsonschema's words ("'one' is not of type 'null'")."""
    write(tmp_path, ".gpudrv-check.yaml", text)
    write(tmp_path, "nodes.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n")
    result = run_main("check", str(tmp_path), "--no-cache")
    assert result.returncode == 2
    assert result.stderr.startswith(f"gpudrv-check: error: .gpudrv-check.yaml:{expected}")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "operator:\n  version: banana\n",
            "2:3: operator.version: operator version 'banana' names no GPU Operator release",
        ),
        (
            "clusters:\n  a:\n    paths: [k8s]\n    operator: {version: latest}\n",
            "4:16: clusters.a.operator.version: operator version 'latest' names no GPU Operator",
        ),
        (
            "rules:\n  GPU010: {params: {scheduler_version: banana}}\n",
            "2:21: rules: GPU010 parameter 'scheduler_version' 'banana' names no kube-scheduler",
        ),
    ],
    ids=["operator", "cluster-operator", "scheduler"],
)
def test_a_version_that_names_no_release_exits_2_at_its_key(tmp_path: Path, text, expected):
    """Review: `operator.version: banana` and `scheduler_version: banana` were read as the
    newest release, silently."""
    write(tmp_path, ".gpudrv-check.yaml", text)
    write(tmp_path, "k8s/n.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n")
    result = run_main("check", str(tmp_path), "--no-cache", "--matrix", "none")
    assert result.returncode == 2
    assert result.stderr.startswith(f"gpudrv-check: error: .gpudrv-check.yaml:{expected}")


def test_an_operator_version_option_that_names_no_release_is_a_usage_error(tmp_path: Path):
    result = run_main("check", str(tmp_path), "--operator-version", "banana")
    assert result.returncode == 2
    assert (
        "argument --operator-version: operator version 'banana' names no GPU Operator release"
        in result.stderr
    )
    fine = run_main("check", str(tmp_path), "--matrix", "none", "--operator-version", "v25.10.0")
    assert fine.returncode == 0, fine.stderr
