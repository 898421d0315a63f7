"""Property-based fuzzing: random and mutated YAML/JSON/CSV, and random-but-valid manifests.

Each input must keep the properties of tests/fuzz/targets.py: nothing raises, exit codes stay
0/1/2, findings are located inside their file on one line, output is the same twice, and a
broken file next to the lab hides none of the lab's findings.

The example counts are bounded for CI (profile "ci", derandomized: the same examples every
run). `GPUDRV_FUZZ=dev` draws fresh random examples, `GPUDRV_FUZZ_SCALE=10` runs ten times as
many; `python -m tests.fuzz --seconds 600` is the long-running mutational fuzzer.
"""

from __future__ import annotations

import json
import math
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudrv_check.read.manifests import parse_document_text, parse_manifest_bytes
from tests.fuzz import strategies as fs
from tests.fuzz import targets
from tests.fuzz.mutate import mutate, seeds

_SCALE = float(os.environ.get("GPUDRV_FUZZ_SCALE", "1"))
settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_PROFILE = settings.get_profile(os.environ.get("GPUDRV_FUZZ", "ci"))


def fuzz(examples: int) -> settings:
    return settings(_PROFILE, max_examples=max(1, int(examples * _SCALE)))


SEEDS = seeds()
SEED_NAMES = sorted(SEEDS)
ALL_SEEDS = [SEEDS[n] for n in SEED_NAMES]
MANIFEST_SEEDS = [n for n in SEED_NAMES if n.endswith((".yaml", ".yml", ".json"))]


@st.composite
def mutated(draw: st.DrawFn, names: list[str]) -> bytes:
    data = SEEDS[draw(st.sampled_from(names))]
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    return mutate(data, rng, ALL_SEEDS)


# ---- the loader, in-process (cheap: many examples) ----------------------------------------


@fuzz(300)
@given(st.binary(max_size=512))
def test_random_bytes_never_break_the_loader(data):
    targets.target_manifest(data)
    targets.target_manifest(data, "random.json")


@fuzz(400)
@given(mutated(MANIFEST_SEEDS))
def test_mutated_manifests_never_break_the_loader(data):
    targets.target_manifest(data)
    targets.target_manifest(data, "mutated.json")


@fuzz(300)
@given(fs.yaml_soup)
def test_token_soup_never_breaks_the_loader(data):
    targets.target_manifest(data)


@fuzz(600)
@given(st.one_of(fs.block_texts(), mutated(MANIFEST_SEEDS), fs.yaml_soup))
def test_the_line_reader_reads_as_the_builder_or_declines(data):
    targets.target_block(data)


@fuzz(150)
@given(fs.manifest_docs)
def test_the_line_reader_on_dumped_manifests(docs):
    targets.target_block(fs.dump_yaml(docs))


def _as_the_api_reads(value):
    from gpudrv_check.core.yaml_scalars import json_number

    if isinstance(value, float):
        return json_number(value) if math.isfinite(value) else value
    if isinstance(value, list):
        return [_as_the_api_reads(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_the_api_reads(v) for k, v in value.items()}
    return value


@pytest.mark.slow
@fuzz(200)
@given(fs.json_values(40), st.booleans(), st.sampled_from([None, 1, "\t"]))
def test_every_json_value_loads_as_itself(value, ascii_only, indent):
    """Valid JSON reads back equal whatever libyaml thinks of it (tabs, \\u escapes, C1), an
    integral float as the integer the API server reads (docs/kubernetes.md §10)."""
    text = json.dumps({"v": value}, ensure_ascii=ascii_only, indent=indent)
    parsed = parse_document_text("value.json", text)
    assert not parsed.problems
    [doc] = parsed.docs
    assert doc.data == {"v": _as_the_api_reads(value)}
    result = parse_manifest_bytes("value.json", text.encode("utf-8"))
    assert not result.problems


@fuzz(200)
@given(fs.csv_texts())
def test_matrix_csv_never_breaks(data):
    from gpudrv_check.read.matrix import parse_matrix

    matrix = parse_matrix("support-matrix.csv", data)
    lines = data.count(b"\n") + data.count(b"\r") + 1
    for problem in matrix.problems:
        assert 1 <= problem.location.line <= lines, problem


# ---- the whole CLI, in-process (dearer: fewer examples) -----------------------------------


@pytest.mark.slow
@fuzz(40)
@given(fs.manifest_files())
def test_random_valid_manifests_through_the_cli(files):
    with targets.repo(files) as root:
        first, _ = targets.check_json(root, "--matrix", "none")
        again, _ = targets.check_json(root, "--matrix", "none")
        assert first.stdout == again.stdout
        targets.check_text(root, "--matrix", "none")


@pytest.mark.slow
@fuzz(25)
@given(fs.manifest_files())
def test_random_valid_manifests_next_to_the_lab(files):
    with targets.repo({f"zz/{k}": v for k, v in files.items()}, with_lab=True) as root:
        targets.check_json(root)
        for command in ("audit", "tag"):
            args = [command, "lab-node-0", str(root)] if command == "tag" else [command, str(root)]
            assert targets.run_main(*args).code in (0, 1)


@pytest.mark.slow
@fuzz(30)
@given(mutated(MANIFEST_SEEDS))
def test_a_broken_file_next_to_the_lab_hides_nothing(data):
    targets.target_repo(data, lab=True)


@fuzz(40)
@given(mutated([n for n in SEED_NAMES if n.endswith("config.yaml")]))
def test_mutated_config_is_a_run_or_a_located_error(data):
    targets.target_config(data)


@fuzz(20)
@given(mutated([n for n in SEED_NAMES if n.endswith(".toml")]))
def test_mutated_pyproject_is_a_run_or_a_located_error(data):
    targets.target_pyproject(data)


@fuzz(20)
@given(fs.csv_texts())
def test_matrix_csv_through_audit(data):
    targets.target_matrix(data)
