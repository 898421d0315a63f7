"""--jobs, the content-hash cache and the progress line: correctness only (never timing)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudrv_check.cli.commands.common import Progress
from gpudrv_check.engine.cache.store import MAGIC, PRUNED, SECRET, Cache
from gpudrv_check.read import codec
from gpudrv_check.read.manifests import PARALLEL_MIN_FILES, SAMPLE_FILES, parse_manifest_bytes
from tests.conftest import BUILDER_DOC, gpu_node, run_cli, write


def _many(root: Path, count: int) -> Path:
    """A repo with enough files for worker processes, some broken."""
    for i in range(count):
        write(root, f"nodes/n{i:04d}.yaml", gpu_node(f"node-{i}") + BUILDER_DOC)
    write(root, "apps/bad.yaml", "kind: [unclosed\n")
    write(root, "apps/dup.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\n")
    write(root, "support-matrix.csv", "driver_branch,kernel,os_tag\n")
    return root


def _check(root: Path, *extra: str, cache: Path | None = None) -> tuple[int, str]:
    flags = ["--cache-dir", str(cache)] if cache else ["--no-cache"]
    proc = run_cli("check", str(root), "--format", "json", "--fail-on", "never", *flags, *extra)
    assert proc.returncode == 0, proc.stderr
    return proc.returncode, proc.stdout


@pytest.mark.slow
def test_same_bytes_for_any_jobs(tmp_path: Path):
    root = _many(tmp_path / "repo", SAMPLE_FILES + PARALLEL_MIN_FILES + 20)
    one = _check(root, "--jobs", "1")
    assert _check(root, "--jobs", "2") == one
    assert _check(root, "--jobs", "3") == one
    assert '"GPU000"' in one[1] and '"GPU008"' in one[1]  # problems survive the workers


def test_jobs_must_be_positive(tmp_path: Path):
    proc = run_cli("check", str(tmp_path), "--jobs", "0")
    assert proc.returncode == 2
    assert "--jobs" in proc.stderr


@pytest.mark.slow
def test_cache_miss_hit_and_change(tmp_path: Path):
    root = _many(tmp_path / "repo", 5)
    cache = tmp_path / "cache"
    cold = _check(root, cache=cache)
    assert cold == _check(root)  # the same as without a cache
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    kinds = sorted(
        {p.name.split("-")[0] for p in cache.iterdir() if p.name not in (SECRET, PRUNED)}
    )
    assert kinds == ["config", "files", "occupancy", "partitions", "result", "stamps"]
    assert _check(root, cache=cache) == cold  # warm: the stored result
    write(root, "nodes/n0000.yaml", gpu_node("node-renamed"))
    changed = _check(root, cache=cache)
    assert changed == _check(root)
    assert "node-renamed" in changed[1]
    # other flags, other result: the key holds the arguments
    text = run_cli("check", str(root), "--fail-on", "never", "--cache-dir", str(cache))
    assert text.stdout == run_cli("check", str(root), "--fail-on", "never", "--no-cache").stdout


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncate", "flip", "foreign", "empty"])
def test_corrupt_cache_entries_are_ignored_and_rebuilt(tmp_path: Path, damage: str):
    root = _many(tmp_path / "repo", 5)
    cache = tmp_path / "cache"
    cold = _check(root, cache=cache)
    for entry in (p for p in cache.iterdir() if p.name not in (SECRET, PRUNED)):
        blob = entry.read_bytes()
        if damage == "truncate":
            blob = blob[: len(blob) // 2]
        elif damage == "flip":
            blob = blob[:-10] + bytes([blob[-10] ^ 0xFF]) + blob[-9:]
        elif damage == "foreign":
            blob = b"\x80\x04\x95 not ours" + blob
        else:
            blob = b""
        entry.write_bytes(blob)
    assert _check(root, cache=cache) == cold
    # rebuilt: each entry is whole again
    for entry in (p for p in cache.iterdir() if p.name not in (SECRET, PRUNED)):
        assert entry.read_bytes().startswith(MAGIC)
        assert Cache(cache).load(entry.name.split("-")[0], "x", "y") is None  # other names miss
    assert _check(root, cache=cache) == cold


def test_a_checksum_valid_entry_of_the_wrong_shape_is_a_miss(tmp_path: Path):
    cache = Cache(tmp_path)
    cache.store("files", "repo", "key", {"nodes/a.yaml": ("digest", False, b"junk")})
    assert cache.load("files", "repo", "other key") is None
    assert cache.load("files", "repo", "key") == {"nodes/a.yaml": ("digest", False, b"junk")}
    with pytest.raises(codec.CodecError):
        codec.decode(b"junk")


def test_codec_round_trip_keeps_positions_and_problems():
    data = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {a: '1', b: 2}\n"
    data += b"spec:\n  containers:\n  - name: c\n    image: x\n  x: 1\n  x: 2\n"
    result = parse_manifest_bytes("a.yaml", data)
    again = codec.decode(codec.encode(result))
    assert again.problems == result.problems and again.problems  # the duplicate key
    (m,) = again.manifests
    assert m.data == result.manifests[0].data
    assert m.data["metadata"]["labels"].key_pos("b") == (5, 20)
    assert m.data["metadata"]["labels"].raw_text("b") == "2"
    assert m.data["spec"]["containers"].item_pos(0) == (8, 5)


def test_progress_line_only_on_a_terminal_after_a_second():
    assert Progress.on_terminal(io.StringIO()) is None  # not a TTY: nothing, ever

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    progress = Progress.on_terminal(stream)
    assert progress is not None
    progress.update(1, 10)
    assert stream.getvalue() == ""  # under a second
    progress.start -= 5
    progress.update(5, 10)
    progress.done()
    assert stream.getvalue() == "\rgpudrv-check: read 5 of 10 files\r\x1b[K"


def test_no_progress_line_when_stderr_is_not_a_tty(tmp_path: Path):
    root = _many(tmp_path / "repo", 5)
    proc = run_cli("check", str(root), "--fail-on", "never", "--no-cache")
    assert "files\r" not in proc.stderr and "read " not in proc.stderr


def test_version_imports_no_heavy_dependency():
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gpudrv_check", "--version"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    modules = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()}
    imported = {name.split(".")[0] for name in modules}
    # argparse too: cli/__init__.py answers `--version` before building a parser
    for heavy in ("pydantic", "ruamel", "jsonschema", "git", "argparse"):
        assert heavy not in imported, heavy
    ours = {name for name in modules if name.split(".")[0] == "gpudrv_check"}
    assert ours == {"gpudrv_check", "gpudrv_check.cli"}, ours  # __main__ runs, via runpy


def test_a_run_is_made_without_the_cyclic_collector_which_comes_back_after(monkeypatch):
    import gc

    from gpudrv_check.cli import commands
    from gpudrv_check.cli.commands import rules as rules_command
    from gpudrv_check.cli.options import RulesOptions

    seen = []
    monkeypatch.setattr(rules_command, "run", lambda args: seen.append(gc.isenabled()) or 0)
    assert gc.isenabled()
    assert commands.dispatch(RulesOptions(command="rules")) == 0
    assert seen == [False]
    assert gc.isenabled()


def test_the_console_script_never_turns_the_collector_back_on():
    """Issue 22: dispatch re-enabled the collector for the console script too, and the first
    allocations after it scanned the whole model once just before os._exit."""
    code = (
        "import gc, sys\n"
        "from gpudrv_check import cli\n"
        "sys.argv = ['gpudrv-check', 'rules']\n"
        "real_exit = cli.exit_now\n"
        "def exit_now(code):\n"
        "    sys.stderr.write(f'enabled={gc.isenabled()}')\n"
        "    real_exit(code)\n"
        "cli.exit_now = exit_now\n"
        "cli.run()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "enabled=False"


def test_the_console_script_exits_with_its_code_and_complete_output(tmp_path: Path):
    # the script ends with os._exit: whatever it printed must be flushed first
    root = _many(tmp_path / "repo", 3)
    proc = run_cli("check", str(root), "--format", "json", "--no-cache")
    assert proc.returncode == 1
    assert proc.stdout.rstrip().endswith("}")
    assert '"GPU000"' in proc.stdout


@pytest.mark.parametrize(("extra", "workers"), [("", False), (BUILDER_DOC, True)])
def test_workers_read_only_what_the_line_reader_leaves_to_the_builder(monkeypatch, extra, workers):
    """--jobs 2: a sample of the files is parsed first; worker processes take the rest only
    when the event builder read a good share of it (read/manifests.py SAMPLE_FILES,
    BUILT_SHARE). Either way the results are those of one process."""
    from gpudrv_check.read import manifests

    todo = [
        (i, f"nodes/n{i:04d}.yaml", (gpu_node(f"node-{i}") + extra).encode(), False)
        for i in range(SAMPLE_FILES + PARALLEL_MIN_FILES + 10)
    ]
    shared = []
    real = manifests._share_out

    def spy(*args, **kwargs):
        shared.append(len(args[1]))  # the chunks handed to the workers
        return real(*args, **kwargs)

    monkeypatch.setattr(manifests, "_share_out", spy)
    alone = manifests._parse_all(todo, 1, lambda: None)
    assert not shared
    both = manifests._parse_all(todo, 2, lambda: None)
    assert bool(shared) is workers and (not workers or shared[0] > 0)
    assert [codec.encode(both[i]) for i in sorted(both)] == [
        codec.encode(alone[i]) for i in sorted(alone)
    ]
