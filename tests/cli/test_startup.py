"""Start-up and exit of the console script (issue 22): what a run imports and collects, shown
by behaviour (the modules loaded, the collections the interpreter reports), never by time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpudrv_check.read.manifests import PARALLEL_MIN_FILES, SAMPLE_FILES
from tests.conftest import BUILDER_DOC, EXAMPLES, MATRIX, gpu_deployment, gpu_node, run_cli, write

# runs the console script's own entry point (`cli.run`) with a gc callback that records every
# collection the interpreter starts from then on, printed from a hook on `os._exit` (which the
# forked worker processes end with too)
_PROBE = r"""
import gc, json, os, sys
collections = []
gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info["generation"]))
real_exit = os._exit
def exit_(code):
    loader = sys.modules.get("pydantic.plugin._loader")
    sys.__stderr__.write("\nPROBE " + json.dumps({"collections": collections,
        "modules": sorted(m for m in sys.modules if m.startswith("gpudrv_check")),
        "metadata": "importlib.metadata" in sys.modules,
        "standard": sorted(m for m in ("shutil", "tempfile", "random") if m in sys.modules),
        "models": "pydantic.main" in sys.modules,
        "plugin_loader": getattr(loader, "__file__", None) if loader else "absent",
        "kept": [type(v).__name__ for v in getattr(sys.modules.get("gpudrv_check.cli"),
                                                   "_KEPT", None) or []]}) + "\n")
    sys.__stderr__.flush()
    real_exit(code)
os._exit = exit_
sys.argv = ["gpudrv-check", *sys.argv[1:]]
from gpudrv_check import cli
collections.clear()  # from the entry point on: imports before it are not the run's
cli.run()
"""


def probe(*args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, check=False
    )
    assert proc.returncode in (0, 1), proc.stderr
    # one line per process that ends with os._exit: the run's, after its workers' (if any)
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("PROBE ")]
    found = [json.loads(line.removeprefix("PROBE ")) for line in lines]
    assert found, proc.stderr
    return {
        "collections": [g for one in found for g in one["collections"]],
        "modules": found[-1]["modules"],
        "metadata": found[-1]["metadata"],
        "models": found[-1]["models"],
        "plugin_loader": found[-1]["plugin_loader"],
        "kept": found[-1]["kept"],
        "standard": found[-1]["standard"],
        "processes": len(found),
    }


def test_a_check_run_and_its_exit_start_no_collection():
    """`dispatch` once re-enabled the collector, and the first allocation before `os._exit`
    then collected the youngest generation, which after a run without collections holds every
    object the run made (4-5 % of every run): no collection of any generation runs from the
    entry point to the exit."""
    seen = probe("check", str(EXAMPLES / "lab"), "--no-cache", "--fail-on", "never")
    assert seen["collections"] == []
    assert "gpudrv_check.engine.run" in seen["modules"]  # the probe saw a whole run


def test_the_console_script_keeps_what_a_check_holds_at_its_end_for_the_exit():
    """cli `keep_until_exit`: the findings, the rendered reports and the report a check
    holds when it returns are kept for `os._exit` to end (freed one by one as the frames
    returned, they cost a large run its last tens of milliseconds); a caller that stays alive
    keeps nothing."""
    from gpudrv_check import cli

    seen = probe("check", str(EXAMPLES / "lab"), "--no-cache", "--fail-on", "never")
    assert {"list", "Report"} <= set(seen["kept"])
    assert cli.main(["check", str(EXAMPLES / "lab"), "--no-cache", "--quiet"]) in (0, 1)
    assert cli._KEPT is None


def test_a_large_repo_run_with_workers_starts_no_collection(tmp_path: Path):
    # files the line reader leaves to the event builder, enough of them for worker processes
    # (read/manifests.py): their results arrive in bulk
    repo = tmp_path / "repo"
    write(repo, "support-matrix.csv", MATRIX)
    for i in range(SAMPLE_FILES + PARALLEL_MIN_FILES + 10):
        write(repo, f"nodes/n{i}.yaml", gpu_node(f"n{i}") + BUILDER_DOC)
    seen = probe("check", str(repo), "--no-cache", "--jobs", "2", "--fail-on", "never")
    assert seen["processes"] >= 2  # the run and its workers, each probed to its exit
    assert seen["collections"] == []


def test_version_and_parsing_import_no_command():
    seen = probe("--version")
    assert seen["modules"] == ["gpudrv_check", "gpudrv_check.cli"]
    # building the parser for `rules` imports that command only, not `inventory` (whose module
    # pulled in the export reader and jsonschema just for its --max-bytes default)
    seen = probe("rules")
    assert "gpudrv_check.cli.commands.inventory" not in seen["modules"]
    assert "gpudrv_check.edit.inventory_import" not in seen["modules"]


LAUNCHER = Path(__file__).resolve().parents[2] / "gpudrv_check" / "cli" / "launcher.py"


def _imported(stderr: str) -> set[str]:
    """The modules `python -X importtime` says it imported."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    } - {"package"}


def test_the_launcher_answers_version_without_importing_re():
    # pip's launcher for a [project.scripts] entry imports `re` (4-5 ms) before our entry
    # point; the wheel installs ours instead (pyproject.toml shared-scripts)
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", str(LAUNCHER), "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("gpudrv-check ")
    imported = _imported(proc.stderr)
    assert "gpudrv_check.cli" in imported
    assert "re" not in imported and "argparse" not in imported
    # the launcher as a module (imported, not run) does nothing
    imported_only = [sys.executable, "-c", "import gpudrv_check.cli.launcher"]
    assert subprocess.run(imported_only, capture_output=True, check=False).stdout == b""


def test_the_wheel_installs_the_launcher_as_the_command():
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef, unused-ignore]
    project = tomllib.loads((LAUNCHER.parents[2] / "pyproject.toml").read_text())
    wheel = project["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["shared-scripts"] == {"gpudrv_check/cli/launcher.py": "gpudrv-check"}
    # no entry point too: the installer would write its own launcher under the same name
    assert "scripts" not in project["project"]
    # the installer rewrites a `#!python` first line; hatchling keeps the file's mode
    assert LAUNCHER.read_text().startswith("#!python\n")
    assert LAUNCHER.stat().st_mode & 0o111


def test_the_installed_command_is_the_launcher():
    installed = Path(sys.executable).parent / "gpudrv-check"
    if not installed.exists():
        pytest.skip("no gpudrv-check installed beside this interpreter")
    # the first line is this environment's interpreter, the rest the launcher as written
    body = installed.read_text().split("\n", 1)[1]
    assert body == LAUNCHER.read_text().split("\n", 1)[1]


def test_a_check_run_imports_neither_jsonschema_nor_libyaml_nor_pydantic():
    """The shipped workload table is validated by a test (tests/model/test_workload_kinds.py),
    not at every start-up; a repo without custom policies or inventories needs no schema. And
    the shipped tables are read without libyaml's binding (policies/workloads.json; the other
    two by the line reader): a repo whose files are all in the line reader's subset, as the
    lab's are, never imports it. Nor pydantic: the lab's config (`matrix:`, `exclude:`) holds
    values pydantic takes as they are (core/validated.py `plain_validate`)."""
    code = (
        "import sys\n"
        "from gpudrv_check.cli import main\n"
        f"main(['check', {str(EXAMPLES / 'lab')!r}, '--no-cache', '--fail-on', 'never'])\n"
        "print('jsonschema' in sys.modules, '_ruamel_yaml' in sys.modules,"
        " 'pydantic' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip().splitlines()[-1] == "False False False", proc.stderr
    assert (EXAMPLES / "lab" / ".gpudrv-check.yaml").is_file()  # a config was read


def test_a_check_run_imports_no_module_only_a_rare_input_needs():
    """`difflib` (GPU034's "did you mean" for a misnamed MIG config), `base64` (a Secret's
    data: the operator's or a Flux substitution's), `textwrap` (a report line that is not
    printable text) are imported where they are used, and the line reader's lock is
    `_thread`'s, not `threading`'s: none of the four is on the start-up path of a run that
    needs none (about 2.5 ms of `python -X importtime` together)."""
    rare = ("difflib", "base64", "threading", "textwrap")
    code = (
        "import sys\n"
        "from gpudrv_check.cli import main\n"
        f"main(['check', {str(EXAMPLES / 'lab')!r}, '--no-cache', '--fail-on', 'never'])\n"
        f"print(sorted(m for m in {rare!r} if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stderr


def test_a_check_run_imports_none_of_our_modules_only_a_rare_input_needs():
    """The Kustomize renderer (`--kustomize`), the envsubst reader (a Flux substitution), the
    JSON reader (a `.json` file) and the baseline module (`--baseline`) are imported where
    they are used: a check of the lab, which needs none of them, imports none (each was
    imported by every run: about 2 % of the instructions of a 1k unread-label node edit,
    with the patterns below compiled when first used)."""
    ours = (
        "gpudrv_check.read.kustomize",
        "gpudrv_check.model.envsubst",
        "gpudrv_check.read.json_docs",
        "gpudrv_check.engine.baseline",
    )
    code = (
        "import sys\n"
        "from gpudrv_check.cli import main\n"
        "try:\n"
        f"    main(['check', {str(EXAMPLES / 'lab')!r}, '--no-cache', '--fail-on', 'never'])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in {ours!r} if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stderr


def test_the_console_script_loads_inspect_only_when_something_uses_it():
    """`dataclasses` imports `inspect` (with `ast`, `dis`, `tokenize`) for what records do
    themselves, `urllib.parse` `ipaddress` for a bracketed host: the console script puts
    stand-ins in their place (cli/__init__.py `lazy_modules`), which a check of the lab never
    asks anything, and which load the real module for the first use, behind an `import` or a
    `from ... import` alike."""
    code = (
        "import sys\n"
        "from gpudrv_check.cli import lazy_modules, main\n"
        "lazy_modules()\n"
        f"main(['check', {str(EXAMPLES / 'lab')!r}, '--no-cache', '--fail-on', 'never'])\n"
        "print(sorted(m for m in ('ast', 'dis', 'tokenize') if m in sys.modules))\n"
        "print(type(sys.modules['ipaddress']).__name__)\n"
        "from urllib.parse import urlsplit\n"
        "print(urlsplit('http://[::1]:80/').hostname, type(sys.modules['ipaddress']).__name__)\n"
        "import dataclasses, inspect\n"
        "stand_in = inspect\n"
        "@dataclasses.dataclass\n"
        "class Point:\n"
        "    x: int\n"
        "print(Point.__doc__, inspect.signature(Point))\n"
        "from inspect import getdoc\n"
        "print(sys.modules['inspect'] is not stand_in, getdoc(Point), 'ast' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    lines = proc.stdout.strip().splitlines()
    assert lines[-5:] == [
        "[]",
        "_StandIn",
        "::1 module",
        "Point(x: int) (x: int) -> None",
        "True Point(x: int) True",
    ], proc.stderr


def test_the_stand_in_for_inspect_is_not_put_over_the_module_itself():
    code = (
        "import sys, inspect\n"
        "from gpudrv_check.cli import lazy_modules\n"
        "lazy_modules()\n"
        "print(sys.modules['inspect'] is inspect)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "True", proc.stderr


def _oversized_node_export(repo: Path, limit: int) -> None:
    write(repo, "support-matrix.csv", MATRIX)
    write(repo, ".gpudrv-check.yaml", f"max_file_bytes: {limit}\n")
    nodes = "---\n".join(gpu_node(f"n{i}") for i in range(20))
    write(repo, "nodes.yaml", nodes)


def test_a_file_over_max_file_bytes_is_named_by_every_repo_command(tmp_path: Path):
    """`check` reports such a file as GPU000; the other commands printed results as if it did
    not exist (`audit`: OK, `report`: NODES=0). They now say so once, on stderr."""
    repo = tmp_path / "repo"
    _oversized_node_export(repo, 2000)
    for args in (("audit",), ("report",), ("operands",), ("place",)):
        proc = run_cli(*args, str(repo))
        notes = [ln for ln in proc.stderr.splitlines() if "max_file_bytes" in ln]
        assert len(notes) == 1, (args, proc.stderr)
        assert "nodes.yaml" in notes[0] and "not read" in notes[0]
        assert "inventory:" in notes[0]  # the way to read a large node export
    check = run_cli("check", str(repo), "--no-cache", "--format", "concise")
    assert "GPU000" in check.stdout and "max_file_bytes" not in check.stderr


def test_no_note_when_every_file_is_read(tmp_path: Path):
    repo = tmp_path / "repo"
    _oversized_node_export(repo, 1_000_000)
    proc = run_cli("audit", str(repo))
    assert "max_file_bytes" not in proc.stderr


def test_a_run_the_whole_result_cache_answers_imports_no_reader_model_or_rule(tmp_path: Path):
    """A warm run (nothing changed since the last) replays the cached result: it imports
    neither the engine, the model nor the rules, and in a repo without a config file not the
    manifest readers either (read/prefetched.py holds what the key's reading hands over)."""
    write(tmp_path / "repo", "nodes/a.yaml", gpu_node("a"))
    write(tmp_path / "repo", "support-matrix.csv", MATRIX)
    args = ("check", str(tmp_path / "repo"), "--cache-dir", str(tmp_path / "cache"))
    cold = probe(*args)
    assert "gpudrv_check.read.block_yaml" in cold["modules"]
    warm = probe(*args)["modules"]
    for module in ("engine.run", "model.workload", "rules.context", "read.manifests"):
        assert f"gpudrv_check.{module}" not in warm, module
    assert "gpudrv_check.read.block_yaml" not in warm


@pytest.mark.parametrize(
    ("config_file", "validated"),
    [
        (None, False),
        # values pydantic takes as they are: validated without it (core/validated.py
        # `plain_validate`)
        ((".gpudrv-check.yaml", "exclude: [old/]\nfail_on: warning\n"), False),
        (("pyproject.toml", '[tool.gpudrv-check]\nexclude = ["old/"]\n'), False),
        # a rule's severity is an enum pydantic makes of the text: validated by pydantic
        ((".gpudrv-check.yaml", "exclude: [old/]\nrules: {GPU010: {severity: info}}\n"), True),
        (("pyproject.toml", '[tool.gpudrv-check.rules.GPU010]\nseverity = "info"\n'), True),
        (("pyproject.toml", '[project]\nname = "x"\n'), False),
    ],
)
def test_a_run_the_whole_result_cache_answers_validates_no_config(
    tmp_path: Path, config_file, validated
):
    """The config validated by the first run is remembered by its bytes (engine/cache/config.py):
    a warm run imports neither pydantic's models nor the config module, whatever file the
    config came from; the first run did when there was a config to validate (the defaults
    are built without pydantic: core/validated.py)."""
    write(tmp_path / "repo", "nodes/a.yaml", gpu_node("a"))
    write(tmp_path / "repo", "support-matrix.csv", MATRIX)
    if config_file is not None:
        write(tmp_path / "repo", *config_file)
    args = ("check", str(tmp_path / "repo"), "--cache-dir", str(tmp_path / "cache"))
    cold = probe(*args)
    assert cold["models"] is validated and "gpudrv_check.read.config" in cold["modules"]
    warm = probe(*args)
    assert not warm["models"]
    assert "gpudrv_check.read.config" not in warm["modules"]
    assert "gpudrv_check.engine.cache.config" in warm["modules"]  # the view was taken
    # nor is the config parsed: no manifest reader either, whatever the config file
    assert "gpudrv_check.read.yaml_docs" not in warm["modules"]
    assert "gpudrv_check.read.block_yaml" not in warm["modules"]
    # a file edited: the check runs again, on the config rebuilt from what the first run
    # validated, still without pydantic (nor do the built-in rules or the matrix need it)
    write(tmp_path / "repo", "nodes/b.yaml", gpu_node("b"))
    edited = probe(*args)
    assert "gpudrv_check.engine.run" in edited["modules"]  # a whole check ran
    assert not edited["models"]


def test_the_console_script_runs_no_pydantic_plugin(tmp_path: Path):
    """cli.run gives pydantic a plugin loader that finds none before any model is built
    (cli/__init__.py `no_pydantic_plugins`): the real loader, which imports importlib.metadata
    and reads every installed package's entry points, is never imported, and validation runs
    no plugin code (pydantic/plugin/_loader.py `get_plugins`, PYDANTIC_DISABLE_PLUGINS)."""
    write(tmp_path, "nodes/a.yaml", gpu_node("a"))
    write(tmp_path, ".gpudrv-check.yaml", "rules: {GPU010: {severity: info}}\n")
    seen = probe("check", str(tmp_path), "--no-cache", "--fail-on", "never")
    assert seen["models"]  # the config was validated by pydantic
    assert seen["plugin_loader"] is None  # in sys.modules, with no file: ours
    assert seen["metadata"] is False


def test_no_pydantic_plugins_leaves_a_loader_already_imported_alone():
    import types

    from gpudrv_check.cli import _PLUGIN_LOADER, no_pydantic_plugins

    before = sys.modules.get(_PLUGIN_LOADER)
    marker = types.ModuleType(_PLUGIN_LOADER)
    sys.modules[_PLUGIN_LOADER] = marker
    try:
        no_pydantic_plugins()
        assert sys.modules[_PLUGIN_LOADER] is marker
    finally:
        if before is None:
            del sys.modules[_PLUGIN_LOADER]
        else:
            sys.modules[_PLUGIN_LOADER] = before


def test_the_hook_with_nothing_new_staged_validates_no_config(tmp_path: Path):
    """`check --staged` (the pre-commit hook) reads the config from the index: the second run,
    with the same index, takes the config remembered by its bytes and imports no pydantic
    model (read/git.py imports the config's errors from read/config_file.py)."""
    import shutil

    from tests.gitops.conftest import git

    if shutil.which("git") is None:
        pytest.skip("git is not on PATH")
    repo = tmp_path / "repo"
    write(repo, "nodes/a.yaml", gpu_node("a"))
    write(repo, "support-matrix.csv", MATRIX)
    # (a severity: validated by pydantic, not taken as it is)
    write(repo, ".gpudrv-check.yaml", "rules: {GPU010: {severity: info}}\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    args = ("check", str(repo), "--staged", "--cache-dir", str(tmp_path / "cache"))
    assert probe(*args)["models"]
    warm = probe(*args)
    assert not warm["models"]
    assert "gpudrv_check.read.git" in warm["modules"]  # the index was read
    write(repo, ".gpudrv-check.yaml", "rules: {GPU010: {severity: warning}}\n")  # not staged
    assert not probe(*args)["models"]
    git(repo, "add", "-A")
    assert probe(*args)["models"]  # another config in the index: validated


def test_an_edit_run_imports_only_the_rules_it_evaluates(tmp_path: Path):
    """A run that takes the cluster-wide rules' findings from the cache (a workload edit: the
    nodes did not change) imports neither those rules' modules nor what only they use
    (rules/__init__.py `registered`: each check imports its module when first called); the
    cold run imports every rule. Nor does parsing the arguments import `shutil`, nor storing
    the entries `tempfile` (cli/__init__.py `terminal_columns`, engine/cache/store.py
    `_mkstemp`)."""
    from gpudrv_check.rules import FOLDERS
    from gpudrv_check.rules.plan import cacheable_cluster_rules

    repo = tmp_path / "repo"
    write(repo, "nodes/a.yaml", gpu_node("a"))
    write(repo, "support-matrix.csv", MATRIX)
    app = write(repo, "apps/train.yaml", gpu_deployment("train", 1))
    args = ("check", str(repo), "--cache-dir", str(tmp_path / "cache"), "--fail-on", "never")
    modules = {f"gpudrv_check.rules.{folder}.rule": folder[:6] for folder in FOLDERS}
    cold = probe(*args)
    assert set(modules) <= set(cold["modules"])
    assert cold["standard"] == []
    app.write_text(gpu_deployment("train", 2))
    edit = probe(*args)
    cached = {rule for name, rule in modules.items() if name not in edit["modules"]}
    assert cached == cacheable_cluster_rules() & set(modules.values())
    assert "GPU001" in cached and "GPU010" not in cached
    only_cached = "gpudrv_check.model.driver_plan"  # GPU013-016's
    assert only_cached in cold["modules"] and only_cached not in edit["modules"]
    assert edit["standard"] == []


def test_a_closed_stdout_or_stderr_drops_what_is_written_to_it(tmp_path: Path):
    """`>&-`: Python starts with sys.stdout (or stderr) None; writing to it was an internal
    error, and the exit's flush of it a traceback. What goes there is dropped, as with
    `>/dev/null`: reports written to files are still written, the exit code is the run's."""
    code = "from gpudrv_check.cli import run; run()"
    report = tmp_path / "report.json"
    lab = ["check", str(EXAMPLES / "lab"), "--no-cache", "--format", "json", "--output"]

    def closed(fd: int, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", code, *args],
            capture_output=True,
            text=True,
            check=False,
            preexec_fn=lambda: __import__("os").close(fd),
        )

    version = closed(1, "--version")
    assert (version.returncode, version.stderr) == (0, "")
    run = closed(1, *lab, str(report))
    assert (run.returncode, run.stderr) == (1, "") and json.loads(report.read_text())
    report.unlink()
    run = closed(2, *lab, str(report))
    assert run.returncode == 1 and run.stdout.startswith("6 files, 8 objects read; 3 errors")
    assert json.loads(report.read_text())
    text = closed(2, "check", str(EXAMPLES / "lab"), "--no-cache")
    assert text.returncode == 1 and "GPU0" in text.stdout
