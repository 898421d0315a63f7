"""Seeds and byte-level mutations shared by the hypothesis tests and the long-running fuzzer."""

from __future__ import annotations

import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# tokens that make YAML, JSON and CSV parsers take their rarer paths
TOKENS: tuple[bytes, ...] = (
    b": ",
    b"- ",
    b"? ",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b"&a ",
    b"*a",
    b"&b ",
    b"*b",
    b"<<: ",
    b"<<: *a",
    b"!!python/object/apply:os.system ",
    b"!Ref ",
    b"!!str ",
    b"!!int ",
    b"!!binary ",
    b"!!map ",
    b"!<tag:yaml.org,2002:str> ",
    b"%YAML 1.1\n",
    b"%TAG ! tag:x,2000:\n",
    b"\t",
    b'"',
    b"'",
    b'"\\u00e9\\ud83d"',
    b'"\\e\\x1b\\n"',
    b"---\n",
    b"...\n",
    b"|\n",
    b">-\n",
    b"# c\n",
    b"\r\n",
    b"\r",
    b"\n",
    b"\x00",
    b"\xff",
    b"\xef\xbb\xbf",
    b"\xff\xfe",
    b"\xc3",
    b"{{ .Values.x }}",
    b"1" * 5000,
    b'"' + b"9" * 5001 + b'"',  # a quoted number past int()'s digit limit
    b'"' + b"9" * 5001 + b'%"',
    b"v26." + b"9" * 5001 + b".0",
    b"&big " + b"x" * 4096 + b"\n",  # a large anchored value, for the byte budget of aliases
    b"*big",
    b"\xe2\x80\xae",  # U+202E
    b"\xe2\x80\xa8",  # U+2028
    b"0x" + b"f" * 40,
    b"0o17",
    b"0b101",
    b"1_000",
    b".inf",
    b"-.nan",
    b"~",
    b"null",
    b"true",
    b"yes",
    b"n",
    b"Off",
    b"1e400",
    b"-0",
    b"2024-01-01T00:00:00Z",
    b"\xe2\x80\xa8",
    b"\xc2\x85",
    b"\xe2\x80\xae",
    b"\x1b[31m",
    b"  ",
    b"    ",
    b"apiVersion: v1\n",
    b"kind: Node\n",
    b"kind: List\nitems:\n",
    b"metadata:\n  name: ",
    b"labels: ",
    b"taints: ",
    b"tolerations: ",
    b"replicas: ",
    b"nodeSelector: ",
    b"values: ",
    b"effect: ",
    b"operator: Gt",
    b"nvidia.com/gpu.present: ",
    b"nvidia.com/gpu: ",
    b"spec:\n  ",
    b'"a": ',
    b'"\\/"',
    b"driver_branch,kernel,os_tag\n",
    b'"a,b"',
    b'"unclosed',
    b",,,",
    b'"""',
)


def _index_seed(version: int) -> bytes:
    """A small git index of `version` (gitformat-index(5)): three entries, one with extended
    flags from version 3 (intent-to-add), paths prefix-compressed in version 4, an optional
    extension, the SHA-1 trailer."""
    import hashlib

    names = [b"apps/a.yaml", b"apps/b b.yaml", b"apps/sub/c.yaml"]
    body = b"DIRC" + version.to_bytes(4, "big") + len(names).to_bytes(4, "big")
    previous = b""
    for number, name in enumerate(names):
        extended = version >= 3 and number == 1
        flags = len(name) | (0x4000 if extended else 0) | ((number == 2) << 12)
        head = bytes(24) + (0o100644).to_bytes(4, "big") + bytes(12) + bytes([number + 1]) * 20
        head += flags.to_bytes(2, "big") + ((0x2000).to_bytes(2, "big") if extended else b"")
        if version == 4:
            common = 0
            while common < min(len(name), len(previous)) and name[common] == previous[common]:
                common += 1
            body += head + bytes([len(previous) - common]) + name[common:] + b"\0"
        else:
            entry = head + name
            body += entry + bytes(((len(entry) + 8) & ~7) - len(entry))
        previous = name
    body += b"TREE" + (6).to_bytes(4, "big") + b"\x001 0\n\n"
    return body + hashlib.sha1(body).digest()  # noqa: S324 - git's checksum


_INLINE_SEEDS: dict[str, bytes] = {
    "v2.index": _index_seed(2),
    "v3.index": _index_seed(3),
    "v4.index": _index_seed(4),
    "json-node.json": (
        b'{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "j1", "labels": '
        b'{"nvidia.com/gpu.present": "true", "a": "\\ud83d\\ude00"}}, "spec": {"taints": '
        b'[{"key": "k", "effect": "NoSchedule"}]}}\n'
    ),
    "json-stream.json": b'{"apiVersion": "v1", "kind": "Pod"}\n{"apiVersion": "v1"}\n[1, 2]\n',
    "matrix.csv": (
        b"driver_branch,kernel,os_tag\n550,5.15.0-119-generic,ubuntu22.04\n"
        b'"535","5.15.0-107-generic",ubuntu22.04\n# comment\n\n'
    ),
    "config.yaml": (
        b"matrix: support-matrix.csv\nexclude: [charts/]\nmax_file_bytes: 1000\n"
        b"operator: {version: v25.10.0}\nrules: {GPU007: {severity: error}}\n"
    ),
    "pyproject.toml": b'[tool.gpudrv-check]\nmatrix = "m.csv"\nexclude = ["a/"]\n',
    "inventory.yaml": (
        b"apiVersion: gpudrv-check.io/v1alpha1\nkind: NodeInventory\nnodes:\n- name: n1\n"
        b"  labels: {nvidia.com/gpu.present: 'true'}\n  taints: [{key: a, effect: NoSchedule}]\n"
    ),
    "deployment.yaml": (
        b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: x}\nspec:\n"
        b"  replicas: 2\n  template:\n    metadata: {labels: {app: d}}\n    spec:\n"
        b"      nodeSelector: {nvidia.com/gpu.present: 'true'}\n      tolerations:\n"
        b"      - {key: nvidia.com/gpu, operator: Exists}\n      affinity:\n        nodeAffinity:\n"
        b"          requiredDuringSchedulingIgnoredDuringExecution:\n"
        b"            nodeSelectorTerms:\n"
        b"            - matchExpressions:\n              - {key: nvidia.com/cuda.driver.major, "
        b"operator: Gt, values: ['560']}\n      containers:\n      - name: c\n        image: i\n"
        b"        resources: {limits: {nvidia.com/gpu: 1}}\n"
    ),
    "anchors.yaml": b"a: &a {x: 1}\nb:\n  <<: *a\n  y: [*a, *a]\n",
    # an anchor in a skimmed part of a Node's status, aliased by a field a rule reads
    "skim-alias.yaml": (
        b"apiVersion: v1\nkind: Node\nstatus:\n  nodeInfo:\n"
        b"    kernelVersion: &k 5.15.0-1-generic\n"
        b"metadata:\n  name: s\n  labels:\n    feature.node.kubernetes.io/kernel-version.full: *k\n"
    ),
    "huge-numbers.yaml": (
        b"apiVersion: v1\nkind: Node\nmetadata:\n  name: h\n  labels:\n"
        b'    nvidia.com/cuda.driver-version.major: "' + b"9" * 5001 + b'"\n'
        b'status:\n  allocatable:\n    nvidia.com/gpu: "' + b"9" * 5001 + b'"\n'
    ),
}


def seeds() -> dict[str, bytes]:
    """Every seed, by a name whose suffix says what it is."""
    out = dict(_INLINE_SEEDS)
    for folder in (
        ROOT / "examples" / "lab",
        HERE.parent / "hostile" / "corpus",
        HERE / "regressions",
    ):
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if path.name == ".gitattributes" or path.is_symlink() or not path.is_file():
                continue
            if path.stat().st_size < 64_000:
                out[f"{folder.name}/{path.relative_to(folder).as_posix()}"] = path.read_bytes()
    return out


def mutate(data: bytes, rng: random.Random, others: list[bytes] | None = None) -> bytes:
    """A few random edits: bit flips, token inserts, deletions, duplications, splices."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(7)
        pos = rng.randint(0, len(buf))
        if op == 0 and buf:
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            buf[pos:pos] = rng.choice(TOKENS)
        elif op == 2 and buf:
            end = min(len(buf), pos + rng.randint(1, 32))
            del buf[pos:end]
        elif op == 3 and buf:
            start = rng.randrange(len(buf))
            chunk = buf[start : start + rng.randint(1, 64)]
            buf[pos:pos] = chunk * rng.randint(1, 8)
        elif op == 4 and others:
            other = rng.choice(others)
            if other:
                start = rng.randrange(len(other))
                buf[pos:pos] = other[start : start + rng.randint(1, 256)]
        elif op == 5:
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 6 and buf:
            # swap an indentation level: the commonest real-world breakage
            line_start = buf.rfind(b"\n", 0, pos) + 1
            buf[line_start:line_start] = b"  " if rng.random() < 0.5 else b"\t"
    return bytes(buf)
