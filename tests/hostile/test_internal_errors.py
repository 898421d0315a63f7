"""Internal errors that are the environment's, not bugs (issue 23): running out of memory is
reported as such (exit 2, what to do), with one process or with workers, never as a CodecError
or "internal error". (A damaged git object: tests/gitops/test_git_rev.py; an unreadable matrix:
tests/load/test_matrix.py; an unreadable policies folder: tests/policies; a cache entry of the
wrong type: tests/hostile/test_cache.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

# imported before any test patches the parser: it binds `parse_manifest_bytes` when first
# imported, and a run inside a patched test would otherwise bind the patch for good
import gpudrv_check.engine.run  # noqa: F401
from gpudrv_check.cli import main
from gpudrv_check.read import codec
from gpudrv_check.read import manifests as manifests_mod
from gpudrv_check.read.manifests import PARALLEL_MIN_FILES, SAMPLE_FILES, parse_manifest_bytes
from tests.conftest import BUILDER_DOC, MATRIX, gpu_node, write


def _repo(root: Path, count: int) -> Path:
    for i in range(count):
        write(root, f"nodes/n{i:04d}.yaml", gpu_node(f"n{i}") + BUILDER_DOC)
    write(root, "support-matrix.csv", MATRIX)
    return root


def test_decode_lets_memory_error_through(monkeypatch):
    """A MemoryError while decoding a worker's result is not "not an encoded file result"."""
    blob = codec.encode(parse_manifest_bytes("a.yaml", b"kind: Pod\n"))

    class Exhausted:
        @staticmethod
        def loads(data):
            raise MemoryError

    monkeypatch.setattr(codec, "marshal", Exhausted)
    with pytest.raises(MemoryError):
        codec.decode(blob)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_out_of_memory_is_reported_not_a_bug(tmp_path: Path, monkeypatch, capsys, jobs: str):
    root = _repo(tmp_path / "repo", SAMPLE_FILES + PARALLEL_MIN_FILES + 10)

    def exhausted(*args, **kwargs):
        raise MemoryError

    # in this process and in forked workers alike (they inherit the patch)
    monkeypatch.setattr(manifests_mod, "parse_manifest_bytes", exhausted)
    code = main(["check", str(root), "--no-cache", "--jobs", jobs])
    err = capsys.readouterr().err
    assert code == 2
    assert "out of memory" in err and "max_total_bytes" in err
    assert "internal error" not in err and "CodecError" not in err


def test_out_of_memory_decoding_worker_results(tmp_path: Path, monkeypatch, capsys):
    """--jobs 2: the parent runs out of memory decoding what the workers sent back."""
    root = _repo(tmp_path / "repo", SAMPLE_FILES + PARALLEL_MIN_FILES + 10)
    real = codec.decode

    def decode(data):
        raise MemoryError

    monkeypatch.setattr(codec, "decode", decode)
    code = main(["check", str(root), "--no-cache", "--jobs", "2"])
    err = capsys.readouterr().err
    monkeypatch.setattr(codec, "decode", real)
    assert code == 2 and "out of memory" in err and "CodecError" not in err
