"""What the fuzzer drives: the loader on one file, and the whole CLI on a small repo.

Each target runs in-process with GPUDRV_CHECK_DEBUG set, so a bug surfaces as the exception
itself instead of the CLI's one-line "internal error". Targets assert the properties every
input must keep; a failed assertion or any exception is a finding of the fuzzer.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LAB = Path(__file__).resolve().parent.parent.parent / "examples" / "lab"


@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str


def run_main(*argv: str) -> CliResult:
    """`gpudrv-check ARGV` in-process; exceptions propagate (debug mode)."""
    from gpudrv_check.cli import main

    out, err = io.StringIO(), io.StringIO()
    previous = os.environ.get("GPUDRV_CHECK_DEBUG")
    os.environ["GPUDRV_CHECK_DEBUG"] = "1"
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    finally:
        if previous is None:
            os.environ.pop("GPUDRV_CHECK_DEBUG", None)
        else:
            os.environ["GPUDRV_CHECK_DEBUG"] = previous
    result = CliResult(code, out.getvalue(), err.getvalue())
    # what a real stdout would have to encode: lone surrogates would crash the write there
    result.stdout.encode("utf-8")
    result.stderr.encode("utf-8")
    return result


@contextlib.contextmanager
def repo(files: dict[str, bytes], with_lab: bool = False) -> Iterator[Path]:
    """A throwaway repo holding `files` (and the lab example, when asked)."""
    with tempfile.TemporaryDirectory(prefix="gpudrv-fuzz-") as tmp:
        root = Path(tmp) / "repo"
        if with_lab:
            shutil.copytree(LAB, root)
        else:
            root.mkdir()
        for rel, data in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        yield root


def line_counts(root: Path) -> dict[str, int]:
    counts = {}
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            counts[path.relative_to(root).as_posix()] = data.count(b"\n") + 1
    return counts


def assert_findings_located(root: Path, findings: list[dict]) -> None:
    """Every finding names a file of the repo and a line that exists in it."""
    counts = line_counts(root)
    for f in findings:
        loc = f["location"]
        assert loc["line"] >= 1 and loc["column"] >= 1, f
        if loc["file"] in counts:
            assert loc["line"] <= counts[loc["file"]], f
        assert "\n" not in f["message"], f
        assert "\n" not in (f["hint"] or ""), f


def check_json(root: Path, *extra: str) -> tuple[CliResult, dict]:
    result = run_main("check", str(root), "--format", "json", "--fail-on", "error", *extra)
    assert result.code in (0, 1), (result.code, result.stderr)
    doc = json.loads(result.stdout)
    assert_findings_located(root, doc["findings"])
    return result, doc


def check_text(root: Path, *extra: str) -> CliResult:
    result = run_main("check", str(root), *extra)
    assert result.code in (0, 1), (result.code, result.stderr)
    return result


def finding_keys(doc: dict) -> set[tuple]:
    return {
        (
            f["rule"],
            f["location"]["file"],
            f["location"]["line"],
            f["location"]["column"],
            f["message"],
        )
        for f in doc["findings"]
    }


_LAB_KEYS: set[tuple] | None = None


def lab_keys() -> set[tuple]:
    global _LAB_KEYS
    if _LAB_KEYS is None:
        with repo({}, with_lab=True) as root:
            _LAB_KEYS = finding_keys(check_json(root)[1])
    return _LAB_KEYS


# ---- targets: each takes bytes and raises on a broken property ----------------------------


def target_manifest(data: bytes, name: str = "fuzz.yaml") -> None:
    """One file through the loader: never raises, problems are located inside the file."""
    from gpudrv_check.read.manifests import parse_manifest_bytes

    result = parse_manifest_bytes(name, data)
    lines = data.count(b"\n") + 1
    for problem in result.problems:
        loc = problem.location
        assert 1 <= loc.line <= lines + 1 and loc.column >= 1, (problem, lines)
        assert "\n" not in problem.message


def tree_difference(a: Any, b: Any, path: str = "$") -> str | None:
    """Where two located trees differ (type, value, position, key order, raw text), or None.
    Strict about types (`True` is not `1`) and float spellings (`-0.0` is not `0.0`)."""
    from gpudrv_check.core.located import LMap, LSeq

    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} {a!r} != {type(b).__name__} {b!r}"
    if isinstance(a, LMap):
        if a.pos != b.pos or list(a.kpos.items()) != list(b.kpos.items()):
            return f"{path}: positions {a.pos} {a.kpos} != {b.pos} {b.kpos}"
        if list(a) != list(b) or a.raw != b.raw:
            return f"{path}: keys {list(a)} {a.raw} != {list(b)} {b.raw}"
        pairs: list[tuple[Any, Any, str]] = [(a[k], b[k], f"{path}.{k}") for k in a]
    elif isinstance(a, LSeq):
        if a.pos != b.pos or a.ipos != b.ipos or len(a) != len(b) or a.raw != b.raw:
            return f"{path}: list {a.pos} {a.ipos} {a.raw} != {b.pos} {b.ipos} {b.raw}"
        pairs = [(x, y, f"{path}[{i}]") for i, (x, y) in enumerate(zip(a, b, strict=True))]
    else:
        return None if a == b and repr(a) == repr(b) else f"{path}: {a!r} != {b!r}"
    for x, y, where in pairs:
        found = tree_difference(x, y, where)
        if found is not None:
            return found
    return None


def target_block(data: bytes) -> None:
    """The line reader (read/block_yaml.py) gives exactly what the event builder gives, or
    declines: documents, their positions, every key, item, position and raw text, under the
    skim plan and without it."""
    from gpudrv_check.core.reads import NOTHING_SKIPPED
    from gpudrv_check.read.block_yaml import parse_block
    from gpudrv_check.read.yaml_docs import parse_events
    from gpudrv_check.rules.plan import skim_plan

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    for plan in (skim_plan(), NOTHING_SKIPPED):
        fast = parse_block(text, plan)
        if fast is None:
            continue
        slow = parse_events(text, plan)
        assert not slow.failed and not slow.problems and slow.flow_colon < 0, slow.problems
        assert not fast.failed and not fast.problems
        heads = [(d.index, d.pos) for d in fast.docs]
        assert heads == [(d.index, d.pos) for d in slow.docs], (heads, slow.docs)
        for mine, theirs in zip(fast.docs, slow.docs, strict=True):
            difference = tree_difference(mine.data, theirs.data)
            assert difference is None, difference


def target_repo(data: bytes, name: str = "zz-fuzz/fuzz.yaml", lab: bool = False) -> None:
    """One file in a repo through the CLI (text and JSON): exit 0/1, same bytes twice."""
    with repo({name: data}, with_lab=lab) as root:
        matrix = () if lab else ("--matrix", "none")  # the lab's config names its matrix
        first, doc = check_json(root, *matrix)
        again, _ = check_json(root, *matrix)
        assert first.stdout == again.stdout
        check_text(root, *matrix)
        if lab and doc["summary"]["objects"] == 8:  # the fuzzed file added no object
            missing = lab_keys() - finding_keys(doc)
            assert not missing, missing


def target_matrix(data: bytes) -> None:
    from gpudrv_check.read.matrix import parse_matrix

    matrix = parse_matrix("support-matrix.csv", data)
    lines = data.count(b"\n") + data.count(b"\r") + 1
    for problem in matrix.problems:
        assert 1 <= problem.location.line <= lines, problem
    with repo({"support-matrix.csv": data}) as root:
        result = run_main("audit", str(root))
        assert result.code in (0, 1), result


def _rebuilds(root: Path) -> None:
    """A config that validated is what a later run rebuilds, without pydantic, from the values
    the cache keeps of it (engine/cache/config.py `snapshot`, read/config.py `known`)."""
    import marshal

    from gpudrv_check.core.validated import dump
    from gpudrv_check.read.config import ConfigError, find_config, parse_found

    found = find_config(root)
    try:
        config = parse_found(found)
    except ConfigError:
        return  # an error the run meets later (a rule's parameter): nothing is remembered
    known = (dump(config), sorted(config.written))
    try:
        marshal.dumps(known)
    except ValueError:
        return  # not storable (a TOML date in a parameter): validated again every run
    from gpudrv_check.read import config as config_module

    def refuse(*_args: object) -> None:
        raise AssertionError("validated again: the known values were not used")

    validate, config_module.validate = config_module.validate, refuse  # type: ignore[assignment]
    try:
        rebuilt = parse_found(found, known)
    finally:
        config_module.validate = validate
    assert rebuilt == config and rebuilt.written == config.written
    assert rebuilt.dump_json() == config.dump_json()


def target_config(data: bytes) -> None:
    """A hostile .gpudrv-check.yaml: a clean run or a located usage error (exit 2)."""
    with repo({".gpudrv-check.yaml": data}) as root:
        result = run_main("check", str(root), "--matrix", "none")
        assert result.code in (0, 1, 2), result
        if result.code == 2:
            assert result.stderr.startswith("gpudrv-check: error: "), result.stderr
            assert result.stderr.count("\n") == 1, result.stderr
        else:
            _rebuilds(root)


def target_pyproject(data: bytes) -> None:
    with repo({"pyproject.toml": data}) as root:
        result = run_main("check", str(root), "--matrix", "none")
        assert result.code in (0, 1, 2), result
        if result.code == 2:
            assert result.stderr.startswith("gpudrv-check: error: "), result.stderr
        else:
            _rebuilds(root)


def target_gitindex(data: bytes) -> None:
    """The git index reader (read/git_index.py), on the bytes and on the same bytes with their
    checksum made right (so that it reads past the check): never raises, and what it answers
    is what git could list (a name without NUL, a stage 0-3, a 20-byte object id)."""
    import hashlib

    from gpudrv_check.read.git_index import read_index

    fixed = data[:-20] + hashlib.sha1(data[:-20]).digest() if len(data) >= 20 else data  # noqa: S324
    for candidate in (data, fixed):
        found = read_index(candidate)
        for entry in found or ():
            assert entry.path and b"\0" not in entry.path, entry
            assert 0 <= entry.stage <= 3 and len(entry.sha) == 20, entry


TARGETS = {
    "gitindex": target_gitindex,
    "manifest": target_manifest,
    "block": target_block,
    "json": lambda data: target_manifest(data, "fuzz.json"),
    "repo": target_repo,
    "lab": lambda data: target_repo(data, lab=True),
    "matrix": target_matrix,
    "config": target_config,
    "pyproject": target_pyproject,
}
