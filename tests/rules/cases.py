"""The case files of the built-in rules (`gpudrv_check/rules/GPUxxx_<name>/cases/`).

A case is one YAML file, a whole small repo and what the rule says about it:

    # why the case exists, in a comment
    files:                          # the repo, path -> text (a config, a matrix, manifests)
      support-matrix.csv: |
        driver_branch,kernel,os_tag
      nodes/new.yaml: |
        apiVersion: v1
        ...
    expect:                         # the rule's findings, as the text report prints them
    - "nodes/new.yaml:9:5: error the message ..."

`pass-*.yaml` expects no finding of the rule (`expect` empty or left out); `fail-*.yaml` at
least one. Only the folder's rule is compared: a case about GPU001 may make GPU002 speak too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT

RULES = ROOT / "gpudrv_check" / "rules"


@dataclass(frozen=True)
class Case:
    path: Path
    rule: str
    files: dict[str, str]
    expect: list[str]

    @property
    def name(self) -> str:
        return f"{self.path.parent.parent.name}/{self.path.name}"


def case_files() -> list[Path]:
    return sorted(RULES.glob("GPU*/cases/*.yaml"))


def read_case(path: Path) -> Case:
    from ruamel.yaml import YAML

    data = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or set(data) - {"files", "expect"}:
        raise ValueError(f"{path}: a case has `files:` and `expect:` only")
    files = data.get("files") or {}
    expect = data.get("expect") or []
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise ValueError(f"{path}: `files:` maps paths to text")
    if not all(isinstance(e, str) for e in expect):
        raise ValueError(f"{path}: `expect:` lists findings as text lines")
    return Case(path, path.parent.parent.name[:6], dict(files), list(expect))


def write_repo(case: Case, root: Path) -> None:
    for rel, text in case.files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def findings_of(root: Path, rule: str) -> list[str]:
    """The rule's findings on the repo at `root`, as `check` prints them (without the fix)."""
    from gpudrv_check.engine.run import evaluate, load
    from gpudrv_check.read.config import load_config

    run = load(root, load_config(root), matrix_optional=True)
    evaluate(run)
    return [
        f"{f.location.file}:{f.location.line}:{f.location.column}: {f.severity.value} {f.message}"
        for f in run.findings
        if f.rule == rule
    ]
