"""The validated config remembered by its bytes (engine/cache/config.py): a run that takes it
reports exactly what a run without the cache reports, and every error a config gives is the
same, at the same line, whichever run validated it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.core.validated import build
from gpudrv_check.engine.cache.config import (
    KIND,
    ConfigView,
    snapshot,
    snapshot_key,
    valid_snapshot,
)
from gpudrv_check.engine.cache.store import Cache
from gpudrv_check.read.config import Config, parse_config
from gpudrv_check.read.config_file import FoundConfig
from tests.conftest import MATRIX, gpu_node, run_cli, write
from tests.policies.test_custom_policies import ZONE_POLICY

# a node whose driver image the matrix lacks (an error) next to one it has
NODES = gpu_node("built") + "---\n" + gpu_node("unbuilt", kernel="6.8.0-1-generic")


def _repo(root: Path) -> Path:
    write(root, "nodes/a.yaml", NODES)
    write(root, "support-matrix.csv", MATRIX)
    return root


def _outcome(proc) -> tuple[int, str, str]:
    return proc.returncode, proc.stdout, proc.stderr


def _both(root: Path, cache: Path, *extra: str) -> tuple[tuple, tuple]:
    """(cached run, run without the cache) of the same arguments."""
    cached = run_cli("check", str(root), "--cache-dir", str(cache), *extra)
    fresh = run_cli("check", str(root), "--no-cache", *extra)
    return _outcome(cached), _outcome(fresh)


CONFIGS = [
    pytest.param(None, id="no config file"),
    pytest.param((".gpudrv-check.yaml", "fail_on: warning\nexclude: [old/]\n"), id="yaml"),
    pytest.param(("pyproject.toml", '[tool.gpudrv-check]\nfail_on = "never"\n'), id="pyproject"),
    pytest.param(("pyproject.toml", '[project]\nname = "x"\n'), id="pyproject, no section"),
]


@pytest.mark.parametrize("config_file", CONFIGS)
def test_a_remembered_config_reports_what_a_run_without_the_cache_reports(
    tmp_path: Path, config_file
):
    root = _repo(tmp_path / "repo")
    if config_file is not None:
        write(root, *config_file)
    cache = tmp_path / "cache"
    first, fresh = _both(root, cache)
    assert first == fresh
    assert fresh[0] in (0, 1) and "unbuilt" in fresh[1]
    assert list(cache.glob(f"{KIND}-*.bin"))  # the first run remembered its config
    for extra in ((), ("--format", "json"), ("--fail-on", "never"), ("--fail-on", "error")):
        for _ in range(2):  # the second run replays the first's result
            cached, fresh = _both(root, cache, *extra)
            assert cached == fresh, extra


def test_an_edited_config_is_validated_again(tmp_path: Path):
    root = _repo(tmp_path / "repo")
    cache = tmp_path / "cache"
    codes = []
    for text in ("fail_on: never\n", "fail_on: error\n", "fail_on: never\n", "fail_on: nope\n"):
        write(root, ".gpudrv-check.yaml", text)
        for _ in range(2):
            cached, fresh = _both(root, cache)
            assert cached == fresh, text
        codes.append(fresh[0])
    assert codes == [0, 1, 0, 2]
    assert ".gpudrv-check.yaml:1:1: fail_on: must be" in fresh[2]


def test_the_flags_that_override_the_config_take_their_own_snapshot(tmp_path: Path):
    root = _repo(tmp_path / "repo")
    write(root, ".gpudrv-check.yaml", "fail_on: never\n")
    cache = tmp_path / "cache"
    # each twice: the second run replays the first's result, with the exit code its config
    # gives (a snapshot taken under other flags would give another)
    for extra in [("--fail-on", "error"), (), ("--operator-version", "v24.9.0"), ()] * 2:
        for _ in range(2):
            cached, fresh = _both(root, cache, *extra, "--format", "json")
            assert cached == fresh, extra
            assert cached[0] == (1 if extra == ("--fail-on", "error") else 0)


@pytest.mark.parametrize(
    ("config", "error"),
    [
        ("policies:\n  - gone/\n", ".gpudrv-check.yaml:2:5: policies: 'gone/' not found"),
        ("exclude:\n  - ok/\n  - '!'\n", ".gpudrv-check.yaml:3:5: exclude[1]: '!' is not a"),
        ("policies: [../out/]\n", ".gpudrv-check.yaml:1:12: policies: '../out/' leaves the"),
        # two errors: the run without the cache says the one the key meets first (the
        # exclusions before everything load validates: engine/run.py `load`)
        (
            "exclude: ['!']\nexemptions:\n  - rule: GPU999\n",
            ".gpudrv-check.yaml:1:11: exclude[0]: '!' is not a gitignore pattern",
        ),
        (
            "exclude: ['!']\npolicies: [gone/]\nmatrix: nope.csv\n",
            ".gpudrv-check.yaml:1:11: exclude[0]: '!' is not a gitignore pattern",
        ),
    ],
)
def test_an_error_the_key_meets_is_the_one_a_run_without_the_cache_gives(
    tmp_path: Path, config: str, error: str
):
    """An error met while the key is made is said as a run without the cache says it, and
    the config is not remembered (a run that stops with a usage error stores nothing)."""
    root = _repo(tmp_path / "repo")
    write(root, ".gpudrv-check.yaml", config)
    cache = tmp_path / "cache"
    for _ in range(3):
        cached, fresh = _both(root, cache)
        assert cached == fresh
        assert cached[0] == 2 and error in cached[2], cached[2]
    assert not list(cache.glob(f"{KIND}-*.bin"))


@pytest.mark.parametrize("staged", [False, True])
def test_an_error_met_through_a_remembered_config_is_made_at_its_line(tmp_path: Path, staged: bool):
    """The view keeps no positions: once the policies folder a remembered config names is
    gone (the config's bytes unchanged), the view validates the config again for the error,
    which is the one a run without the cache gives, at the same line and column."""
    root = _repo(tmp_path / "repo")
    write(root, ".gpudrv-check.yaml", "fail_on: never\npolicies:\n  - custom/\n")
    write(root, "custom/zone.yaml", ZONE_POLICY)
    flags: tuple[str, ...] = ()
    if staged:
        from tests.gitops.conftest import git

        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        flags = ("--staged",)
    cache = tmp_path / "cache"
    for _ in range(2):
        cached, fresh = _both(root, cache, *flags)
        assert cached == fresh and cached[0] == 0
    assert list(cache.glob(f"{KIND}-*.bin"))
    (root / "custom" / "zone.yaml").unlink()
    (root / "custom").rmdir()
    if staged:
        git(root, "add", "-A")
    for _ in range(2):
        cached, fresh = _both(root, cache, *flags)
        assert cached == fresh
        assert cached[0] == 2
        assert ".gpudrv-check.yaml:3:5: policies: 'custom/' not found" in cached[2], cached[2]


def test_a_config_that_does_not_validate_is_never_remembered(tmp_path: Path):
    root = _repo(tmp_path / "repo")
    write(root, ".gpudrv-check.yaml", "rules:\n  GPU999: {enabled: false}\n")
    cache = tmp_path / "cache"
    for _ in range(2):
        cached, fresh = _both(root, cache)
        assert cached == fresh and cached[0] == 2
        assert "1:1" not in cached[2] and "GPU999" in cached[2]
    assert not list(cache.glob(f"{KIND}-*.bin"))


def test_a_stored_value_of_another_shape_is_a_miss(tmp_path: Path):
    """An entry under the right key whose value is not a snapshot (a damaged or older entry:
    the MAC vouches for who wrote it, not for its shape) is validated again."""
    root = _repo(tmp_path / "repo")
    write(root, ".gpudrv-check.yaml", "fail_on: never\n")
    cache = tmp_path / "cache"
    run_cli("check", str(root), "--cache-dir", str(cache))
    assert len(list(cache.glob(f"{KIND}-*.bin"))) == 1
    store = Cache(cache)
    found = FoundConfig("yaml", ".gpudrv-check.yaml", b"fail_on: never\n")
    key = snapshot_key(found, (None, None))  # no --operator-version, no --fail-on
    name = str(root.resolve())
    assert store.load(KIND, name, key, valid=valid_snapshot) is not None  # the key is right
    store.store(KIND, name, key, ("not", "a", "snapshot"))
    assert store.load(KIND, name, key, valid=valid_snapshot) is None
    cached, fresh = _both(root, cache)
    assert cached == fresh and cached[0] == 0  # fail_on: never, as the file says


def test_snapshot_shapes():
    value = snapshot(Config())
    assert valid_snapshot(value)
    view = ConfigView(value, None)
    assert view.dump_json() == Config().dump_json()
    assert view.exclude == [] and view.default_exclude == list(Config().default_exclude)
    assert (view.fail_on, view.matrix, view.gitignore) == ("error", "support-matrix.csv", True)
    clustered = parse_config(
        {"clusters": {"b": {"paths": ["b/"]}, "a": {"paths": ["a/"], "inventory": ["i.yaml"]}}},
        "c.yaml",
    )
    view = ConfigView(snapshot(clustered), None)
    assert view.clusters["a"].inventory == ["i.yaml"] and view.clusters["b"].matrix is None
    dump, scalars, lists, clusters, plain, written = value
    assert build(Config, plain) == Config() and written == []
    rest = (plain, written)
    for bad in (
        None,
        (dump, scalars, lists, clusters),
        (dump, (True, *scalars[1:]), lists, clusters, *rest),  # fail_on a bool
        (dump, (*scalars[:3], True, *scalars[4:]), lists, clusters, *rest),  # a limit a bool
        (dump, (*scalars[:3], 0, *scalars[4:]), lists, clusters, *rest),  # a limit not positive
        (dump, ("sometimes", *scalars[1:]), lists, clusters, *rest),
        (dump, scalars, (*lists[:-1], [1]), clusters, *rest),
        (dump, scalars, lists, (("a", ["x"]),), *rest),
        (dump, scalars, lists, (("a", "x", None),), *rest),
        (b"dump", scalars, lists, clusters, *rest),
        (dump, scalars, lists, clusters, [plain], written),  # the values not a mapping
        (dump, scalars, lists, clusters, plain, [1]),  # a written key not a string
    ):
        assert not valid_snapshot(bad), bad


def test_a_run_that_stops_with_a_usage_error_writes_no_cache_and_says_nothing_of_it(
    tmp_path: Path,
):
    """The config is looked up before the key is known to be computable: that look says
    nothing of a cache it could not use, and a run that then stops with a usage error (an
    exclusion the matcher cannot read) stores nothing (no cache directory is even made)."""
    root = _repo(tmp_path / "repo")
    write(root, ".gpudrv-check.yaml", "exclude: ['!']\n")
    fresh = tmp_path / "fresh-cache"
    cached = run_cli("check", str(root), "--cache-dir", str(fresh))
    assert cached.returncode == 2 and not fresh.exists()
    open_cache = tmp_path / "open-cache"
    open_cache.mkdir()
    open_cache.chmod(0o777)  # a cache others could write: never used, said once when it is
    for _ in range(2):
        proc = run_cli("check", str(root), "--cache-dir", str(open_cache))
        assert proc.returncode == 2
        assert proc.stderr == run_cli("check", str(root), "--no-cache").stderr
        assert "warning: cache" not in proc.stderr
    write(root, ".gpudrv-check.yaml", "fail_on: never\n")
    proc = run_cli("check", str(root), "--cache-dir", str(open_cache))
    assert proc.returncode == 0
    assert proc.stderr.count("warning: cache") == 1 and "lets group or others in" in proc.stderr
    assert not list(open_cache.iterdir())


def test_a_pyproject_whose_tool_is_no_table_has_no_config(tmp_path: Path):
    """`tool` is a table by the pyproject spec; a file where it is not holds no section for
    the checker: its defaults, never a crash (read/config.py `parse_found`)."""
    root = _repo(tmp_path / "repo")
    write(root, "pyproject.toml", "tool = 1\n")
    cached, fresh = _both(root, tmp_path / "cache")
    assert cached == fresh
    assert fresh[0] == 1 and "internal error" not in fresh[2]
    plain = _repo(tmp_path / "plain")
    assert _outcome(run_cli("check", str(plain), "--no-cache"))[::2] == (1, "")
    write(root, "pyproject.toml", "[tool]\ngpudrv-check = 1\n")
    proc = run_cli("check", str(root), "--no-cache")
    # the key is on line 2, under [tool]: no position rather than a wrong one
    assert (
        proc.returncode == 2 and "pyproject.toml: tool.gpudrv-check must be a table" in proc.stderr
    )


def test_a_check_validates_its_config_once_at_most(tmp_path: Path, monkeypatch):
    """The result cache validates the config to name the key; a miss runs the check on that
    config, and once the config was remembered, a miss (a file edited) rebuilds it from what
    the same bytes were validated to, without pydantic; a hit validates none."""
    from gpudrv_check.read import config as config_module
    from tests.conftest import run_main

    validated: list[str] = []
    validate, plain_validate = config_module.validate, config_module.plain_validate

    def counting(cls, data):
        validated.append(cls.__name__)
        return validate(cls, data)

    def counting_plain(cls, data):  # a config taken without pydantic counts as validated
        taken = plain_validate(cls, data)
        validated.extend([cls.__name__] if taken is not None else [])
        return taken

    monkeypatch.setattr(config_module, "validate", counting)
    monkeypatch.setattr(config_module, "plain_validate", counting_plain)
    root = _repo(tmp_path / "repo")
    write(root, ".gpudrv-check.yaml", "fail_on: never\nexclude: [skipped/]\n")
    args = ("check", str(root), "--cache-dir", str(tmp_path / "cache"), "--format", "json")
    for step, expected in (("cold", ["Config"]), ("warm", []), ("edited", [])):
        if step == "edited":
            write(root, "nodes/b.yaml", gpu_node("b"))
        validated.clear()
        proc = run_main(*args)
        assert proc.returncode == 0
        assert validated == expected, step
        fresh = run_main("check", str(root), "--no-cache", "--format", "json")
        assert proc.stdout == fresh.stdout, step  # the rebuilt config checks alike
