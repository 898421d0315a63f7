"""The import-layers contract (issue 15): data flows one way, read → model → rules → engine →
report → cli, and CI holds the package to it.

Every `import` in gpudrv_check, at module level or inside a function, is checked, so a deferred
import cannot hide a back edge. A layer may import the layers below it, never one above:

    core ← read ← model ← rules ← engine ← report ← cli

- `k8s/` and `nvidia/` are pure semantics: they import only `core/` and each other; any layer
  above `core/` may use them.
- `edit/` (the in-place writers of `--write`) sits beside rules/engine/report, between `model/`
  and `cli/`: it may import core, read and model (and the pure packages), and only `cli/`
  imports it.
- `gpudrv_check/__init__.py` (the version) may be imported from anywhere.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import gpudrv_check

PACKAGE = Path(gpudrv_check.__file__).parent
LAYERS = ("core", "read", "model", "rules", "engine", "report", "cli")
PURE = frozenset(("k8s", "nvidia"))
EDIT = "edit"


def allowed(importer: str) -> frozenset[str]:
    """The top-level units `importer` may import (besides itself)."""
    if importer in PURE:
        return frozenset(("core", *PURE))
    if importer == EDIT:
        return frozenset(("core", "read", "model", *PURE))
    if importer == "__main__":
        return frozenset(("cli",))
    if importer == "__init__":
        return frozenset()
    below = LAYERS[: LAYERS.index(importer)]
    extra = {EDIT} if importer == "cli" else set()
    return frozenset((*below, *(PURE if below else ()), *extra))


def _unit(module: str) -> str:
    """The top-level unit of a dotted module name under gpudrv_check."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path: Path) -> tuple[str, list[str]]:
    """The dotted name of a source file, and the package its relative imports start from."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
        return ".".join(parts), parts
    return ".".join(parts), parts[:-1]


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) of every project import in one file."""
    name, package = _module_name(path)
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module == "gpudrv_check":  # `from gpudrv_check import x`: x may be a package
                out.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
            else:
                out.append((node.lineno, module))
    return [(line, m) for line, m in out if m == "gpudrv_check" or m.startswith("gpudrv_check.")]


def violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name, _ = _module_name(path)
        importer = _unit(name)
        ok = allowed(importer)
        for line, module in imports_of(path):
            target = _unit(module)
            if target in (importer, "__init__", "__version__") or target in ok:
                continue
            rel = path.relative_to(PACKAGE.parent)
            found.append(f"{rel}:{line}: {importer} imports {module}")
    return found


def test_every_unit_has_a_place_in_the_contract():
    units = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    units |= {p.stem for p in PACKAGE.glob("*.py")}
    assert units <= {*LAYERS, *PURE, EDIT, "__init__", "__main__"}, units


def test_imports_follow_the_layers():
    assert violations() == []


@pytest.mark.parametrize(
    ("importer", "target", "ok"),
    [
        ("read", "core", True),
        ("read", "k8s", True),
        ("read", "engine", False),
        ("read", "model", False),
        ("model", "read", True),
        ("model", "rules", False),
        ("k8s", "core", True),
        ("k8s", "read", False),
        ("nvidia", "k8s", True),
        ("nvidia", "model", False),
        ("core", "k8s", False),
        ("edit", "model", True),
        ("edit", "rules", False),
        ("rules", "edit", False),
        ("cli", "edit", True),
        ("report", "engine", True),
        ("engine", "report", False),
    ],
)
def test_the_contract_itself(importer, target, ok):
    assert (target in allowed(importer)) is ok


def test_the_walk_sees_deferred_and_relative_imports(tmp_path, monkeypatch):
    """A function-level import is an edge too (the walk is not fooled by deferring it)."""
    pkg = tmp_path / "gpudrv_check" / "read"
    pkg.mkdir(parents=True)
    (tmp_path / "gpudrv_check" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "x.py").write_text(
        "def f():\n    from gpudrv_check.engine import run\n    from ..model import repo\n"
    )
    monkeypatch.setattr(
        __import__(__name__, fromlist=["PACKAGE"]), "PACKAGE", tmp_path / "gpudrv_check"
    )
    assert imports_of(pkg / "x.py") == [(2, "gpudrv_check.engine"), (3, "gpudrv_check.model")]


#: what turns text into documents: only read/ calls these (model/ is built from documents)
PARSERS = frozenset(
    (
        "gpudrv_check.read.yaml_docs.parse_text",
        "gpudrv_check.read.json_docs.parse_json",
        "gpudrv_check.read.manifests.parse_manifest_bytes",
        "gpudrv_check.read.manifests.parse_document_text",
        "json.loads",
        "json.load",
        "ruamel",
    )
)


def _parser_imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if f"{node.value.id}.{node.attr}" in PARSERS:
                out.append(f"{node.value.id}.{node.attr}")
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        out.extend(n for n in names if n in PARSERS or n.split(".")[0] in PARSERS)
    return out


def test_the_model_never_parses_text():
    """model/ is built from read documents (issue 15): the YAML embedded in strings is read by
    read/embedded.py, shipped tables by read/packaged.py."""
    found = {
        str(path.relative_to(PACKAGE.parent)): names
        for path in sorted((PACKAGE / "model").rglob("*.py"))
        if (names := _parser_imports(path))
    }
    assert found == {}
