"""The git index and loose objects read without git (read/git_index.py), held to git itself:
every entry `git ls-files --stage` lists (mode, object id, stage, path), the intent-to-add
flag `git ls-files --debug` shows, every blob `git cat-file` gives, and `IndexTree` built on
them equal to the one built from git's answers (read/git.py `_ls_index`), over the index
variants gitformat-index(5) describes. Where the reader does not answer (a split or sparse
index, SHA-256, a moved work tree, a damaged file) git is asked, as before, and the result is
the same."""

from __future__ import annotations

import hashlib
import os
import random
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from gpudrv_check.read import git_index
from gpudrv_check.read.config_file import ConfigError
from gpudrv_check.read.git import IndexTree
from gpudrv_check.read.git_index import (
    locate,
    loose_blob,
    loose_header,
    read_index,
    read_index_file,
)
from tests.gitops.conftest import commit, git


def _ls_files(root: Path) -> list[tuple[bytes, int, bytes, int]]:
    """`git ls-files --stage -z`: (path, mode, object id, stage) per entry."""
    out = subprocess.run(
        ["git", "ls-files", "--stage", "-z"], cwd=root, capture_output=True, check=True
    ).stdout
    entries = []
    for line in out.split(b"\0"):
        if line:
            meta, _, path = line.partition(b"\t")
            mode, sha, stage = meta.split()
            entries.append((path, int(mode, 8), bytes.fromhex(sha.decode()), int(stage)))
    return entries


def _read(root: Path) -> list[tuple[bytes, int, bytes, int]] | None:
    entries = read_index_file(root / ".git" / "index")
    return None if entries is None else [(e.path, e.mode, e.sha, e.stage) for e in entries]


def _slow(root: Path, monkeypatch: pytest.MonkeyPatch) -> IndexTree:
    """The IndexTree git's own answers give (the reader of this module turned off)."""
    with monkeypatch.context() as patch:
        patch.setattr(git_index, "locate", lambda start: None)
        return IndexTree(root)


def _same_tree(root: Path, monkeypatch: pytest.MonkeyPatch, fast_expected: bool = True) -> None:
    fast = IndexTree(root)
    assert (fast._paths is not None) is fast_expected
    slow = _slow(root, monkeypatch)
    assert slow._paths is None
    assert fast.entries == slow.entries
    assert fast.unmerged == slow.unmerged
    assert fast._raw == slow._raw
    assert fast.prefix == slow.prefix
    assert fast.list_manifests([]) == slow.list_manifests([])
    for rel, entry in sorted(fast.entries.items()):
        if entry.mode in (0o100644, 0o100755):
            assert fast.read(rel, 1 << 20) == slow.read(rel, 1 << 20), rel


def _blob_id(root: Path, text: bytes) -> str:
    done = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=root, input=text, capture_output=True
    )
    return done.stdout.decode().strip()


def _files(root: Path, names: dict[str, str]) -> None:
    for name, text in names.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


WORKLOAD = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v{n}\n"


@pytest.fixture
def repo(git_repo: Path) -> Path:
    """Manifests under nested folders, names with spaces and non-ASCII letters, an
    executable, a link; committed, then one file edited and staged."""
    _files(
        git_repo,
        {
            f"apps/team-{i}/{name}.yaml": WORKLOAD.format(name=f"cm-{i}-{j}", n=j)
            for i in range(3)
            for j, name in enumerate(("a", "b b", "ünï"))
        },
    )
    (git_repo / "run.sh").write_text("#!/bin/sh\n")
    (git_repo / "run.sh").chmod(0o755)
    (git_repo / "link.yaml").symlink_to("apps/team-0/a.yaml")
    commit(git_repo, "start")
    (git_repo / "apps/team-1/a.yaml").write_text(WORKLOAD.format(name="edited", n=9))
    git(git_repo, "add", "apps/team-1/a.yaml")
    return git_repo


def test_a_plain_index_is_read_as_git_lists_it(repo, monkeypatch):
    # read/git_index.py read_index: version 2, each entry's mode, id, stage and path
    assert _read(repo) == _ls_files(repo)
    _same_tree(repo, monkeypatch)


def test_versions_3_and_4_and_the_extended_flags(repo, monkeypatch):
    # gitformat-index(5): the extended flags (skip-worktree, intent-to-add) make version 3;
    # `--index-version 4` compresses each path against the previous one
    (repo / "apps/new.yaml").write_text(WORKLOAD.format(name="new", n=1))
    git(repo, "add", "-N", "apps/new.yaml")
    git(repo, "update-index", "--skip-worktree", "apps/team-2/a.yaml")
    assert (repo / ".git/index").read_bytes()[4:8] == (3).to_bytes(4, "big")
    assert _read(repo) == _ls_files(repo)
    entries = read_index_file(repo / ".git/index")
    intent = {e.path for e in entries if e.intent_to_add}
    assert intent == {b"apps/new.yaml"}  # `git ls-files --debug` flags: CE_INTENT_TO_ADD
    _same_tree(repo, monkeypatch)
    assert "apps/new.yaml" not in IndexTree(repo).entries  # not in the next commit
    git(repo, "update-index", "--index-version", "4")
    assert (repo / ".git/index").read_bytes()[4:8] == (4).to_bytes(4, "big")
    assert _read(repo) == _ls_files(repo)
    _same_tree(repo, monkeypatch)


def test_conflict_stages_long_names_links_and_submodules(repo, monkeypatch):
    # an unfinished merge: stages 1-3 of a file; a name longer than the 12-bit length field
    # (0xFFF: NUL-terminated); a link (120000) and a gitlink (160000) as the index holds them
    git(repo, "commit", "-q", "--no-verify", "-m", "edit")
    git(repo, "checkout", "-q", "-b", "other", "HEAD~1")
    (repo / "apps/team-1/a.yaml").write_text(WORKLOAD.format(name="other", n=7))
    commit(repo, "other")
    git(repo, "checkout", "-q", "main")
    with pytest.raises(subprocess.CalledProcessError):
        git(repo, "merge", "-q", "other")
    blob = _blob_id(repo, WORKLOAD.format(name="long", n=1).encode())
    long_name = "/".join(["d" * 200] * 22) + "/x.yaml"
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{long_name}")
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},vendor/sub")
    listed = _ls_files(repo)
    assert {stage for *_, stage in listed} == {0, 1, 2, 3}
    assert any(len(path) > 0xFFF for path, *_ in listed)
    assert _read(repo) == listed
    for version in ("2", "3", "4"):
        git(repo, "update-index", "--index-version", version)
        assert _read(repo) == listed, version
        _same_tree(repo, monkeypatch)
    assert IndexTree(repo).unmerged == ["apps/team-1/a.yaml"]


def test_optional_extensions_are_skipped_and_required_ones_left_to_git(repo, monkeypatch):
    # an untracked cache (UNTR) and the tree cache (TREE) are optional: read past; a split
    # index (`link`) and a sparse one (`sdir`) are required extensions: git is asked
    git(repo, "update-index", "--untracked-cache")
    git(repo, "status", "--porcelain")
    assert b"UNTR" in (repo / ".git/index").read_bytes()
    assert _read(repo) == _ls_files(repo)
    _same_tree(repo, monkeypatch)
    git(repo, "update-index", "--no-untracked-cache", "--split-index")
    assert b"link" in (repo / ".git/index").read_bytes()
    assert _read(repo) is None
    _same_tree(repo, monkeypatch, fast_expected=False)


def test_a_sparse_index_is_left_to_git(repo, monkeypatch):
    git(repo, "commit", "-q", "--no-verify", "-m", "edit")
    try:
        git(repo, "sparse-checkout", "set", "--cone", "--sparse-index", "apps/team-0")
    except subprocess.CalledProcessError:
        pytest.skip("this git has no sparse index")
    index = (repo / ".git/index").read_bytes()
    if b"sdir" not in index:
        pytest.skip("this git wrote no sparse index")
    assert read_index(index) is None  # the `sdir` extension
    # (`sparse-checkout` also writes `extensions.worktreeConfig`, so `locate` already
    # declines the repository: the line above is what tests the index itself)
    _same_tree(repo, monkeypatch, fast_expected=False)


def test_a_damaged_index_is_left_to_git(repo, monkeypatch):
    index = repo / ".git/index"
    good = index.read_bytes()
    assert read_index(good) is not None
    # a checksum that does not match: git reads such a file (only `git fsck` checks it,
    # read-cache.c `verify_index_checksum`), this reader does not: git's listing, as before
    data = bytearray(good)
    data[30] ^= 0xFF  # a byte of the first entry's stat data
    index.write_bytes(bytes(data))
    assert read_index(bytes(data)) is None
    _same_tree(repo, monkeypatch, fast_expected=False)
    # a skipped checksum (index.skipHash: all zeros) is not trusted either
    assert read_index(good[:-20] + bytes(20)) is None
    # cut short: this reader refuses it; git lists what it makes of it, as before
    index.write_bytes(good[: len(good) // 2])
    assert read_index(index.read_bytes()) is None
    assert IndexTree(repo)._paths is None
    # not an index at all: git refuses it, and says so as before
    index.write_bytes(b"not an index")
    with pytest.raises(ConfigError, match="cannot read the git index"):
        IndexTree(repo)


def test_mutated_indexes_never_raise():
    # every mutation, with its checksum made right again so the parser reads past it: an
    # index that is not one is None, never an exception
    entries = b"".join(
        _entry(f"apps/{i}/" + "x" * (i * 7 % 40) + ".yaml", version=3, extended=i % 3 == 0)
        for i in range(12)
    )
    base = b"DIRC" + (3).to_bytes(4, "big") + (12).to_bytes(4, "big") + entries
    assert read_index(base + hashlib.sha1(base).digest()) is not None  # noqa: S324
    rng = random.Random(7)
    for _ in range(3000):
        body = bytearray(base)
        for _ in range(rng.randint(1, 6)):
            at = rng.randrange(len(body))
            body[at] = rng.randrange(256)
        if rng.random() < 0.3:
            body = body[: rng.randrange(len(body))]
        data = bytes(body)
        found = read_index(data + hashlib.sha1(data).digest())  # noqa: S324
        assert found is None or isinstance(found, list)


def _entry(name: str, version: int, extended: bool) -> bytes:
    """One index entry of version 2 or 3 as git writes it (gitformat-index(5))."""
    path = name.encode()
    flags = min(len(path), 0xFFF) | (0x4000 if extended else 0)
    fixed = bytes(24) + (0o100644).to_bytes(4, "big") + bytes(12) + bytes(20)
    fixed += flags.to_bytes(2, "big") + ((0x2000).to_bytes(2, "big") if extended else b"")
    size = (len(fixed) + len(path) + 8) & ~7
    return fixed + path + bytes(size - len(fixed) - len(path))


def test_loose_objects_are_read_as_git_gives_them(repo):
    paths = locate(repo)
    assert paths is not None
    for _path, mode, sha, _stage in _ls_files(repo):
        if mode != 0o100644:
            continue
        text = subprocess.run(
            ["git", "cat-file", "blob", sha.hex()], cwd=repo, capture_output=True, check=True
        ).stdout
        assert loose_header(paths.common_dir, sha) == len(text)
        assert loose_blob(paths.common_dir, sha, len(text)) == text
        assert loose_blob(paths.common_dir, sha, len(text) - 1) is None  # over the limit
    # an object whose content is not what its name says is not taken (git is asked)
    sha = bytes.fromhex(_blob_id(repo, b"one\n"))
    other = zlib.compress(b"blob 4\0two\n")
    target = repo / ".git/objects" / sha.hex()[:2] / sha.hex()[2:]
    target.chmod(0o644)
    target.write_bytes(other)
    assert loose_header(paths.common_dir, sha) == 4
    assert loose_blob(paths.common_dir, sha, 100) is None
    # packed objects are git's to read: none of them is loose any more
    git(repo, "gc", "-q")
    for _path, _mode, sha, _stage in _ls_files(repo):
        assert loose_header(paths.common_dir, sha) is None


def test_a_packed_repository_asks_git_for_sizes_and_blobs(repo, monkeypatch):
    commit(repo, "all")
    git(repo, "gc", "-q")
    (repo / "apps/team-2/b b.yaml").write_text(WORKLOAD.format(name="loose", n=3))
    git(repo, "add", "-A")
    tree = IndexTree(repo)
    assert tree._paths is not None and tree.sizes_learned
    _same_tree(repo, monkeypatch)
    # sizes kept from that run: the next one measures nothing
    again = IndexTree(repo, tree.blob_sizes())
    assert not again.sizes_learned
    assert again.entries == tree.entries


def test_where_the_repository_is(repo, monkeypatch, tmp_path):
    # a subdirectory (PATH below the top), a linked worktree, GIT_DIR/GIT_WORK_TREE/
    # GIT_INDEX_FILE when set, and what is left to git: core.worktree, a bare
    # repository, GIT_OBJECT_DIRECTORY, another object format
    _same_tree(repo / "apps", monkeypatch)
    assert IndexTree(repo / "apps").prefix == "apps"
    git(repo, "commit", "-q", "--no-verify", "-m", "edit")
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(worktree))
    (worktree / "apps/team-0/a.yaml").write_text(WORKLOAD.format(name="in-wt", n=5))
    git(worktree, "add", "-A")
    assert locate(worktree).common_dir == (repo / ".git").resolve()
    _same_tree(worktree, monkeypatch)
    # GIT_DIR set (relative to the current directory), and GIT_INDEX_FILE
    monkeypatch.chdir(repo)
    monkeypatch.setenv("GIT_DIR", ".git")
    monkeypatch.setenv("GIT_INDEX_FILE", ".git/index")
    _same_tree(repo, monkeypatch)
    monkeypatch.delenv("GIT_INDEX_FILE")
    monkeypatch.delenv("GIT_DIR")
    # another index file: the one `git commit -a` prepares
    other = repo / ".git/other-index"
    other.write_bytes((repo / ".git/index").read_bytes())
    git(repo, "rm", "-q", "--cached", "apps/team-0/a.yaml")
    assert "apps/team-0/a.yaml" not in IndexTree(repo).entries
    monkeypatch.setenv("GIT_INDEX_FILE", str(other))
    assert "apps/team-0/a.yaml" in IndexTree(repo).entries  # the other file's entries
    _same_tree(repo, monkeypatch)
    monkeypatch.delenv("GIT_INDEX_FILE")
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(repo / ".git/objects"))
    assert locate(repo) is None
    monkeypatch.delenv("GIT_OBJECT_DIRECTORY")
    git(repo, "config", "core.worktree", str(repo))
    assert locate(repo) is None
    _same_tree(repo, monkeypatch, fast_expected=False)
    git(repo, "config", "--unset", "core.worktree")
    assert locate(repo) is not None
    bare = tmp_path / "bare.git"
    git(repo, "clone", "-q", "--bare", str(repo), str(bare))
    assert locate(bare) is None


def test_another_object_format_is_left_to_git(tmp_path, monkeypatch):
    root = tmp_path / "sha256"
    root.mkdir()
    try:
        git(root, "init", "-q", "--object-format=sha256")
    except subprocess.CalledProcessError:
        pytest.skip("this git has no SHA-256 repositories")
    _files(root, {"a.yaml": WORKLOAD.format(name="a", n=1)})
    git(root, "add", "-A")
    assert locate(root) is None
    assert read_index_file(root / ".git/index") is None  # a SHA-256 trailer


def test_warm_hook_runs_import_no_gitpython(repo, tmp_path):
    # the pre-commit hook on a repository whose history git has packed: the first run asks
    # git for the sizes and blobs; then, with nothing new staged (the sizes kept in the
    # cache, the result cache's answer) and after a staged edit (a loose object, the other
    # files' results from the per-file cache), gitpython is not imported; each run says what
    # a run without any cache says
    commit(repo, "all")
    git(repo, "gc", "-q")
    cache = tmp_path / "cache"

    def hook(*extra: str) -> tuple[str, str]:
        code = (
            "import sys\n"
            "from gpudrv_check.cli import main\n"
            f"sys.argv = ['gpudrv-check', 'check', {str(repo)!r}, '--staged', '--fail-on',"
            f" 'never', *{list(extra)!r}]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('GITPYTHON' if 'git' in sys.modules else 'NONE', file=sys.stderr)\n"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
        )
        return done.stdout, done.stderr.strip().splitlines()[-1]

    cached = ("--cache-dir", str(cache))
    fresh, _ = hook("--no-cache")
    assert hook(*cached) == (fresh, "GITPYTHON")  # packed: git measures and reads
    assert hook(*cached) == (fresh, "NONE")
    # the first edit after a cold run reads the files whose results that run did not keep
    # (engine/cache/files.py: a result is stored once a run has needed it), from the packs
    for n in (4, 5):
        (repo / "apps/team-2/a.yaml").write_text(WORKLOAD.format(name="staged", n=n))
        git(repo, "add", "apps/team-2/a.yaml")
        fresh, _ = hook("--no-cache")
        assert hook(*cached) == (fresh, "GITPYTHON" if n == 4 else "NONE")


def test_kept_sizes_round_trip():
    # engine/cache/inputs.py: the `blobsizes` entry, 20-byte object ids and 8-byte sizes
    from gpudrv_check.engine.cache.inputs import pack_sizes, unpack_sizes, valid_sizes

    sizes = {bytes([i]) * 20: i * 1000 for i in range(5)}
    packed = pack_sizes({**sizes, b"x" * 32: 5})  # another id length is left out
    assert valid_sizes(packed) and unpack_sizes(packed) == sizes
    assert not valid_sizes(packed[:-1]) and not valid_sizes([packed])
    assert unpack_sizes(None) is None


PROBE = """
import os, subprocess, sys
from gpudrv_check.cli import main
out, cache = sys.argv[1], sys.argv[2]
args = ["gpudrv-check", "check", ".", "--staged", "--fail-on", "never"]
fresh = subprocess.run(
    [sys.executable, "-m", "gpudrv_check", *args[1:], "--no-cache"],
    capture_output=True, text=True,
).stdout
with open(out, "a") as report:
    report.write(f"==== {os.environ.get('GIT_INDEX_FILE')}\\n")
    for _ in range(2):
        import contextlib, io
        buffer = io.StringIO()
        sys.argv = [*args, "--cache-dir", cache]
        with contextlib.redirect_stdout(buffer):
            try:
                main()
            except SystemExit:
                pass
        report.write(f"same={buffer.getvalue() == fresh} fast={FAST}\\n")
"""


def test_a_real_commit_hook_reads_the_index_git_prepared(repo, tmp_path):
    # git runs a pre-commit hook at the top of the work tree with GIT_INDEX_FILE naming the
    # index the commit records: `.git/index` for a plain commit, `.git/index.lock` for
    # `commit -a`, `.git/next-index-*.lock` for `commit <path>`; the reader takes each and
    # says what a run without cache says (tests/gitops/test_precommit.py runs the hook of
    # .pre-commit-hooks.yaml through the pre-commit framework itself)
    git(repo, "commit", "-q", "--no-verify", "-m", "edit")
    probe = tmp_path / "probe.py"
    probe.write_text(
        PROBE.replace(
            "{FAST}",
            "{__import__('gpudrv_check.read.git', fromlist=['x']).IndexTree('.')._paths"
            " is not None}",
        )
    )
    out = tmp_path / "report.txt"
    hook = repo / ".git/hooks/pre-commit"
    hook.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{probe}" "{out}" "{tmp_path / "c"}"\n')
    hook.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid"})
    env.update({"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"})

    def commit_with(*args: str) -> None:
        subprocess.run(["git", "commit", "-q", *args], cwd=repo, env=env, check=True)

    (repo / "apps/team-0/a.yaml").write_text(WORKLOAD.format(name="one", n=1))
    git(repo, "add", "-A")
    commit_with("-m", "plain")
    (repo / "apps/team-0/a.yaml").write_text(WORKLOAD.format(name="two", n=2))
    commit_with("-a", "-m", "all")
    (repo / "apps/team-1/a.yaml").write_text(WORKLOAD.format(name="three", n=3))
    commit_with("-m", "path", "apps/team-1/a.yaml")
    report = out.read_text().split("==== ")[1:]
    assert [block.splitlines()[0] for block in report] == [
        ".git/index",
        str(repo / ".git/index.lock"),
        report[2].splitlines()[0],
    ]
    assert re.fullmatch(r".*/\.git/next-index-\d+\.lock", report[2].splitlines()[0])
    for block in report:
        assert block.splitlines()[1:] == ["same=True fast=True"] * 2, block


def test_sizes_are_kept_only_as_git_gave_them(repo, monkeypatch):
    # a staged entry whose object is missing (git lists no size: 0, as before) and a loose
    # object whose header lies about its content: neither size outlives the run
    ghost = "1234567890abcdef1234567890abcdef12345678"
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{ghost},apps/ghost.yaml")
    sha = bytes.fromhex(_blob_id(repo, b"one\n"))
    target = repo / ".git/objects" / sha.hex()[:2] / sha.hex()[2:]
    target.chmod(0o644)
    target.write_bytes(zlib.compress(b"blob 9\0nine byte"))
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{sha.hex()},apps/liar.yaml")
    tree = IndexTree(repo)
    assert tree._paths is not None
    assert (
        tree.entries["apps/ghost.yaml"].size
        == _slow(repo, monkeypatch).entries["apps/ghost.yaml"].size
        == 0
    )
    assert tree.entries["apps/liar.yaml"].size == 9  # the header, as `git cat-file -s` says
    kept = tree.blob_sizes()
    assert bytes.fromhex(ghost) not in kept and sha not in kept
    assert kept == {}  # every other object is loose: read again next run, never kept
    # the loose reader refuses the liar; git is asked (and reads what is there)
    assert loose_blob(locate(repo).common_dir, sha, 100) is None


def test_loose_objects_are_bounded(repo, tmp_path, monkeypatch):
    paths = locate(repo)
    # a header that says 5 bytes over 10 MB of content: refused without inflating it all
    sha = bytes(range(20))
    target = paths.common_dir / "objects" / sha.hex()[:2] / sha.hex()[2:]
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(zlib.compress(b"blob 5\0" + bytes(10 << 20)))
    assert loose_header(paths.common_dir, sha) == 5
    assert loose_blob(paths.common_dir, sha, 1 << 30) is None
    # a FIFO where an object should be: not waited on
    fifo_sha = bytes(range(1, 21))
    fifo = paths.common_dir / "objects" / fifo_sha.hex()[:2] / fifo_sha.hex()[2:]
    fifo.parent.mkdir(exist_ok=True)
    os.mkfifo(fifo)
    assert loose_header(paths.common_dir, fifo_sha) is None
    assert loose_blob(paths.common_dir, fifo_sha, 100) is None
    # the reads ahead keep the batch's bounds: over them, each file is read when asked
    import gpudrv_check.read.git as git_source

    monkeypatch.setattr(git_source, "_PREFETCH_TOTAL_BYTES", 10)
    tree = IndexTree(repo)
    listing = tree.list_manifests([])
    tree.expect([f.rel for f in listing.files])
    first = listing.files[0].rel
    assert tree.read(first) == (repo / first).read_bytes()
    assert tree._cache == {}


def test_what_git_would_refuse_or_read_its_own_way_is_left_to_it(repo, monkeypatch, tmp_path):
    # a config git's parser reads otherwise than line by line, a gitfile with trailing
    # spaces (git strips line ends only), a relative GIT_INDEX_FILE away from the top
    from gpudrv_check.read.git_index import _plain_config

    assert _plain_config(b"[core]\n\trepositoryformatversion = 0\n\tbare = false\n")
    for text in (
        b"[core]\n\tbare\n",  # a key alone is true
        b"[core]\n\tbare = yes\n",
        b"[core]\n\trepositoryformatversion = 2\n",  # git: "Expected git repo version <= 1"
        b"[core]\n\twork\\\n\ttree = /x\n",  # a continued line
        b"[core] worktree = /x\n",  # a key on the header's line
        b"[core]\n\tworktree = /x\n",
        b"[extensions]\n\tobjectformat = sha256\n",
        b"[include]\n\tpath = other\n",
        b"[core\n",
    ):
        assert not _plain_config(text), text
    config = repo / ".git/config"
    config.write_bytes(config.read_bytes().replace(b"\n", b"\r\n") + b"[core]\r\n\tbare\r\n")
    assert locate(repo) is None
    git_dir = tmp_path / "store.git"
    (repo / ".git").rename(git_dir)
    (git_dir / "config").write_bytes(b"[core]\n\trepositoryformatversion = 0\n\tbare = false\n")
    (repo / ".git").write_text(f"gitdir: {git_dir}\r\n")
    assert locate(repo) is not None  # line ends stripped, as git strips them
    (repo / ".git").write_text(f"gitdir: {git_dir}   \n")
    assert locate(repo) is None  # git: "not a git repository: .../store.git   "
    (repo / ".git").write_text(f"gitdir: {git_dir}\n")
    monkeypatch.setenv("GIT_INDEX_FILE", ".git/index")
    monkeypatch.chdir(repo / "apps")
    assert locate(repo) is None  # git, run at the top by gitpython, reads it from there
    monkeypatch.chdir(repo)
    assert locate(repo) is not None


def test_mutated_real_indexes_are_read_as_git_lists_them(repo):
    # indexes git wrote (versions 2, 3 and 4, with intent-to-add and skip-worktree entries),
    # mutated, their checksum made right: where this reader answers, `git ls-files --stage`
    # on the same bytes lists the same entries
    (repo / "apps/new.yaml").write_text("n")
    git(repo, "add", "-N", "apps/new.yaml")
    git(repo, "update-index", "--skip-worktree", "apps/team-0/a.yaml")
    seeds = []
    for version in ("2", "3", "4"):
        git(repo, "update-index", "--index-version", version)
        seeds.append((repo / ".git/index").read_bytes())
    rng = random.Random(23)
    answered = 0
    for _ in range(240):
        body = bytearray(rng.choice(seeds)[:-20])
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(12, len(body))
            body[at] = (
                rng.randrange(256) if rng.random() < 0.5 else body[at] ^ 1 << rng.randrange(8)
            )
        data = bytes(body) + hashlib.sha1(bytes(body)).digest()  # noqa: S324
        found = read_index(data)
        if found is None:
            continue
        answered += 1
        (repo / ".git/index").write_bytes(data)
        assert [(e.path, e.mode, e.sha, e.stage) for e in found] == _ls_files(repo)
    assert answered > 150


def test_special_files_in_the_git_directory_are_refused_not_waited_on(repo, tmp_path):
    # git waits for ever on a FIFO index or a FIFO object (`git ls-files`, `git cat-file`);
    # --staged refuses them: a usage error for the index, a finding at the file for an
    # object, and never a wait (each run in a child with a timeout)
    def check() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "gpudrv_check", "check", str(repo), "--staged"]
            + ["--no-cache", "--fail-on", "never"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env={k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        )

    sha = bytes.fromhex(_blob_id(repo, WORKLOAD.format(name="fifo", n=1).encode()))
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{sha.hex()},apps/fifo.yaml")
    target = repo / ".git/objects" / sha.hex()[:2] / sha.hex()[2:]
    target.unlink()
    os.mkfifo(target)
    done = check()
    assert done.returncode == 0, done.stderr
    assert "apps/fifo.yaml" in done.stdout and "not a regular file" in done.stdout
    index = repo / ".git/index"
    index.unlink()
    os.mkfifo(index)
    done = check()
    assert done.returncode == 2
    assert "cannot read the git index" in done.stderr and "not a regular file" in done.stderr
    assert "Traceback" not in done.stderr


def test_only_loose_objects_are_opened(repo, monkeypatch):
    # the loose objects are listed once (read/git_index.py `loose_names`): a packed object's
    # size is asked of git without trying to open it as a loose one; a listing that fails
    # leaves every object tried, with the same entries
    from gpudrv_check.read.git_index import loose_names

    paths = locate(repo)
    listed = loose_names(paths.common_dir)
    staged = {sha.hex() for _, mode, sha, _ in _ls_files(repo) if mode == 0o100644}
    assert staged <= listed  # every blob `git add` wrote, and the commits' trees and commits
    commit(repo, "all")
    git(repo, "gc", "-q")
    assert loose_names(paths.common_dir) == set()
    opened: list[bytes] = []
    real = git_index.loose_header

    def header(common, sha):
        opened.append(sha)
        return real(common, sha)

    monkeypatch.setattr(git_index, "loose_header", header)
    (repo / "apps/team-0/new.yaml").write_text(WORKLOAD.format(name="new", n=1))
    git(repo, "add", "apps/team-0/new.yaml")
    new = bytes.fromhex(git(repo, "rev-parse", ":apps/team-0/new.yaml"))
    tree = IndexTree(repo)
    assert opened == [new]  # the packed ones went to git unopened
    monkeypatch.setattr(git_index, "loose_names", lambda common: None)
    again = IndexTree(repo)
    assert again.entries == tree.entries
    assert len(opened) > 2
