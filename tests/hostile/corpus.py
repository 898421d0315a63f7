"""The hostile-input corpus: static files in corpus/, plus the cases that must be made at run
time (too big or too deep to commit, symbolic links, a FIFO, file names git cannot hold).

`build(root, outside)` lays the whole corpus out under `root/hostile/`; `outside` is a sibling
directory that links point into and that nothing may ever read.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from gpudrv_check.read.yaml_docs import MAX_DEPTH

CORPUS = Path(__file__).resolve().parent / "corpus"
PREFIX = "hostile/"
# the corpus runs with this limit (the lab's own files are far smaller)
MAX_FILE_BYTES = 200_000

# every Node of the corpus carries this taint: no lab pod tolerates it, so no node of the corpus
# can change where the lab's pods land (and so which findings the lab has)
QUARANTINE = "  taints:\n  - key: hostile.example/quarantine\n    effect: NoExecute\n"
BAD_NODE = (
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\nspec:\n  unschedulable: maybe\n"
    + QUARANTINE
)
# where BAD_NODE's GPU040 is: the `unschedulable` key
BAD_NODE_AT = (6, 3)

# byte file names (not representable in git): name -> what the report must call it
ODD_NAMES: dict[bytes, str] = {
    b"new\nline.yaml": "new\\x0aline.yaml",
    b"\x1b[31mred.yaml": "\\x1b[31mred.yaml",
    b"latin1-\xe9.yaml": "latin1-\\xe9.yaml",
    b"rlo-\xe2\x80\xaelmy.yaml": "rlo-\\u202elmy.yaml",
}


def generated() -> dict[str, bytes]:
    """Files too large or too deep to keep in git, by path under hostile/."""
    block_mapping = "".join(" " * i + "k:\n" for i in range(600))
    allowed = MAX_DEPTH - 10
    return {
        "nesting/deep-flow.yaml": b"[" * 100_000,
        "nesting/deep-block-sequence.yaml": b"- " * 5_000 + b"x\n",
        "nesting/deep-block-mapping.yaml": block_mapping.encode(),
        "nesting/deep-json.json": b'{"a":' * 20_000 + b"1" + b"}" * 20_000,
        "nesting/deep-but-allowed.yaml": (
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: hostile-deep\n"
            "  annotations: {deep: " + "[" * allowed + "]" * allowed + "}\n"
            "spec:\n  unschedulable: maybe\n" + QUARANTINE
        ).encode(),
        "size/over-limit.yaml": b"# padding\n" * (MAX_FILE_BYTES // 10 + 1),
        **numbers(),
    }


HUGE = "9" * 5001  # past Python's int() digit limit


def numbers() -> dict[str, bytes]:
    """Numbers past the int() digit limit at the keys that read numbers; and aliases of a large
    value, which the alias budget counts by bytes (issue 23)."""
    node = (
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: hostile-{name}\n  labels:\n"
        '    nvidia.com/cuda.driver-version.major: "{major}"\n'
        "spec:\n  unschedulable: maybe\n" + QUARANTINE + "status:\n  allocatable:\n"
        '    nvidia.com/gpu: "{gpus}"\n'
    )
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: huge\n  namespace: hostile-numbers\n"
        "spec:\n  containers:\n  - name: c\n    image: x\n    resources:\n      limits:\n"
        f'        nvidia.com/gpu: "{HUGE}"\n'
    )
    pdb = (
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: huge\n"
        f'  namespace: hostile-numbers\nspec:\n  minAvailable: "{HUGE}%"\n  selector: {{}}\n'
    )
    big = "x" * 160_000
    aliases = "".join(f"    k{i}: *big\n" for i in range(1000))
    bomb = (
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: hostile-aliased\n  annotations:\n"
        f"    a: &big {big}\n  labels:\n{aliases}"
    )
    return {
        "numbers/huge-allocatable.yaml": node.format(name="gpus", major="550", gpus=HUGE).encode(),
        "numbers/huge-driver-label.yaml": node.format(name="drv", major=HUGE, gpus="1").encode(),
        "numbers/huge-gpu-request.yaml": pod.encode(),
        "numbers/huge-pdb-percent.yaml": pdb.encode(),
        "bombs/aliased-large-value.yaml": bomb.encode(),
    }


def build(root: Path, outside: Path, order: int = 1) -> None:
    """The corpus under `root/hostile/`. `order` -1 creates every file in reverse order."""
    files: list[tuple[str, bytes]] = [
        (p.relative_to(CORPUS).as_posix(), p.read_bytes())
        for p in sorted(CORPUS.rglob("*"))
        if p.is_file() and p.name != ".gitattributes"
    ]
    files += sorted(generated().items())
    for rel, data in files[::order]:
        path = root / PREFIX / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    _links_and_specials(root / PREFIX, outside, order)


def _links_and_specials(base: Path, outside: Path, order: int) -> None:
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "evil.yaml").write_text(BAD_NODE.format(name="hostile-outside"))
    (outside / "secret.csv").write_text("driver_branch,kernel,os_tag\nTOP-SECRET,x,y\n")
    links = base / "links"
    links.mkdir(parents=True, exist_ok=True)
    steps = [
        lambda: (links / "file-link.yaml").symlink_to(outside / "evil.yaml"),
        lambda: (links / "dir-link").symlink_to(outside, target_is_directory=True),
        lambda: (links / "loop").symlink_to("..", target_is_directory=True),
        lambda: (links / "self.yaml").symlink_to("self.yaml"),
        lambda: (links / "dangling.yaml").symlink_to("nowhere.yaml"),
        lambda: os.mkfifo(base / "special" / "fifo.yaml"),
    ]
    (base / "special").mkdir(exist_ok=True)
    names = base / "names"
    names.mkdir(exist_ok=True)
    for index, raw in enumerate(ODD_NAMES):
        steps.append(
            lambda raw=raw, index=index: Path(
                os.fsdecode(os.path.join(os.fsencode(names), raw))
            ).write_text(BAD_NODE.format(name=f"hostile-name-{index}"))
        )
    for step in steps[::order]:
        step()


def copy_lab(lab: Path, dest: Path, max_file_bytes: int = MAX_FILE_BYTES) -> None:
    """The lab example with lab-node-3 joined (so it has a GPU001), and the corpus's limit."""
    shutil.copytree(lab, dest)
    shutil.copy(dest / "steps" / "node3.yaml", dest / "k8s" / "node3.yaml")
    with open(dest / ".gpudrv-check.yaml", "a", encoding="utf-8") as config:
        config.write(f"max_file_bytes: {max_file_bytes}\n")
