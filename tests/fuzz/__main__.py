"""Long-running fuzzer: `python -m tests.fuzz --seconds 600 [--target NAME] [--seed N]`.

Mutates the seed corpus (the lab, tests/hostile/corpus, tests/fuzz/regressions, inline seeds)
and feeds every target (tests/fuzz/targets.py) until the time is up. An input that raises,
breaks a property, or runs longer than --hang-seconds is written to tests/fuzz/crashes/ (add it
to tests/fuzz/regressions/ once fixed). Prints how many inputs each target ran.

`--engine atheris` runs one target under atheris (coverage-guided libFuzzer, when installed:
`pip install atheris`) instead, seeded with the same corpus; it stops at the first crash and
writes it to tests/fuzz/crashes/<target>-crash-<sha1>.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import signal
import sys
import time
import traceback
from pathlib import Path

from tests.fuzz.mutate import mutate, seeds
from tests.fuzz.targets import TARGETS

CRASH_DIR = Path(__file__).resolve().parent / "crashes"

# which seeds feed which target
_SUFFIXES = {
    "gitindex": (".index",),
    "manifest": (".yaml", ".yml", ".json"),
    "block": (".yaml", ".yml"),
    "json": (".json", ".yaml"),
    "repo": (".yaml", ".yml", ".json"),
    "lab": (".yaml", ".yml", ".json"),
    "matrix": (".csv",),
    "config": (".yaml",),
    "pyproject": (".toml",),
}


class Hang(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001
    raise Hang()


def _shape(message: str) -> str:
    """A failed assertion's message without the parts that vary between inputs."""
    found = re.search(
        r"'message': '([^':]*)|message='([^':]*)|error: [^:]*:[0-9:]* ([^:]*)", message
    )
    text = next((g for g in found.groups() if g), "") if found else message[:40]
    return re.sub(r"[0-9a-fA-F#x]+", "#", text)[:60]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--target", choices=sorted(TARGETS), action="append")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--hang-seconds", type=int, default=30)
    parser.add_argument("--engine", choices=("mutate", "atheris"), default="mutate")
    args = parser.parse_args(argv)
    if args.engine == "atheris":
        return _atheris(args)

    seed = args.seed if args.seed is not None else random.randrange(2**32)
    rng = random.Random(seed)
    corpus = seeds()
    everything = list(corpus.values())
    targets = args.target or sorted(TARGETS)
    pools = {
        t: [data for name, data in corpus.items() if name.endswith(_SUFFIXES[t])] or everything
        for t in targets
    }
    tried = dict.fromkeys(targets, 0)
    crashes: dict[str, tuple[Path, bytes]] = {}  # signature -> smallest input
    signal.signal(signal.SIGALRM, _alarm)
    deadline = time.monotonic() + args.seconds
    print(f"fuzzing {', '.join(targets)} for {args.seconds:.0f}s, seed {seed}", flush=True)
    while time.monotonic() < deadline:
        target = rng.choice(targets)
        data = mutate(rng.choice(pools[target]), rng, everything)
        tried[target] += 1
        signal.alarm(args.hang_seconds)
        try:
            TARGETS[target](data)
        except Exception as err:  # every exception is a finding of the fuzzer
            signal.alarm(0)
            kind = "hang" if isinstance(err, Hang) else type(err).__name__
            # one input per distinct bug: the exception type and where it was raised
            where = traceback.extract_tb(err.__traceback__)[-1]
            signature = f"{target}:{kind}:{Path(where.filename).name}:{where.lineno}"
            if isinstance(err, AssertionError):  # a broken property: tell them apart by message
                signature += ":" + _shape(str(err))
            known = crashes.get(signature)
            if known is not None and len(known[1]) <= len(data):
                continue
            digest = hashlib.sha256(data).hexdigest()[:12]
            CRASH_DIR.mkdir(exist_ok=True)
            path = CRASH_DIR / f"{target}-{kind}-{digest}{_SUFFIXES[target][0]}"
            if known is not None:
                known[0].unlink(missing_ok=True)
            path.write_bytes(data)
            crashes[signature] = (path, data)
            message = "".join(traceback.format_exception_only(type(err), err)).strip()
            print(f"CRASH {signature} -> {path.name}: {message[:300]}", flush=True)
        finally:
            signal.alarm(0)
    total = sum(tried.values())
    print(
        f"{total} inputs tried ({', '.join(f'{t} {n}' for t, n in sorted(tried.items()))}); "
        f"{len(crashes)} distinct crash signature(s)"
    )
    return 1 if crashes else 0


def _atheris(args: argparse.Namespace) -> int:
    import importlib
    import pkgutil
    import tempfile

    import atheris  # type: ignore[import-not-found]

    with atheris.instrument_imports(include=["gpudrv_check"]):
        import gpudrv_check

        for module in pkgutil.walk_packages(gpudrv_check.__path__, "gpudrv_check."):
            if not module.name.endswith("__main__"):
                importlib.import_module(module.name)
    target_name = (args.target or ["manifest"])[0]
    target = TARGETS[target_name]
    seed_dir = Path(tempfile.mkdtemp(prefix="gpudrv-atheris-"))
    for index, (name, data) in enumerate(sorted(seeds().items())):
        if name.endswith(_SUFFIXES[target_name]):
            (seed_dir / f"seed-{index}").write_bytes(data)

    def one_input(data: bytes) -> None:
        target(data)

    CRASH_DIR.mkdir(exist_ok=True)
    print(f"atheris on {target_name} for {args.seconds:.0f}s, seeds in {seed_dir}", flush=True)
    atheris.Setup(
        [
            sys.argv[0],
            f"-max_total_time={int(args.seconds)}",
            f"-timeout={args.hang_seconds}",
            f"-artifact_prefix={CRASH_DIR}/{target_name}-",
            str(seed_dir),
        ],
        one_input,
    )
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
