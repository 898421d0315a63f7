"""Exclusions: default folders, .gitignore and `exclude:` with gitignore semantics (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.read.config import Config
from gpudrv_check.read.exclude import BY_CONFIG, BY_DEFAULT, Exclusions, from_config
from gpudrv_check.read.tree import WorkingTree

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"


def _repo(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _listed(root: Path, config: Config | None = None) -> tuple[list[str], dict[str, str]]:
    listing = WorkingTree(root).list_manifests(from_config(config or Config()))
    return [f.rel for f in listing.files], {s.rel: s.reason for s in listing.skipped}


# gitignore semantics (git's dir.c and wildmatch.c: read/gitignore.py)
@pytest.mark.parametrize(
    ("pattern", "path", "excluded"),
    [
        ("vendor/*.yaml", "vendor/a.yaml", True),
        ("vendor/*.yaml", "vendor/a/b.yaml", False),  # `*` does not cross a folder
        ("vendor/**/*.yaml", "vendor/a/b.yaml", True),
        ("*.json", "deep/down/x.json", True),  # no slash: any depth
        ("/top.yaml", "sub/top.yaml", False),  # a leading slash anchors at the root
        ("./top.yaml", "top.yaml", True),  # the old `./` spelling anchors too
        ("./top.yaml", "sub/top.yaml", False),
        ("charts/", "charts", False),  # a trailing slash: folders only, not a file
    ],
)
def test_exclude_has_gitignore_semantics(pattern: str, path: str, excluded: bool):
    got = Exclusions([pattern], []).reason(path)
    assert (got == BY_CONFIG) is excluded, got


def test_a_file_under_folder_only_patterns_is_not_matched_against_them(monkeypatch):
    """`vendor/` names folders only: a walk asks about every file, and with such patterns alone
    (the defaults) no file can match one, so none is matched; a .gitignore taken in, or a
    pattern that may name a file, is asked as before, with the same answers."""
    from gpudrv_check.read.gitignore import PatternList

    asked: list[bytes] = []
    real = PatternList.decide

    def decide(self, path, is_dir):
        asked.append(path)
        return real(self, path, is_dir)

    monkeypatch.setattr(PatternList, "decide", decide)
    folders = Exclusions(["charts/"], gitignore=True)
    assert folders.reason("charts") is None and folders.reason("a/vendor") is None
    assert asked == []
    assert folders.reason("vendor", is_dir=True) == BY_DEFAULT and asked == [b"vendor"]
    folders.add_gitignore("", b"*.tmp\n")
    assert folders.reason("x.tmp") is not None and folders.reason("x.yaml") is None
    files = Exclusions(["*.json"], [])
    assert files.reason("deep/x.json") == BY_CONFIG and files.reason("x.yaml") is None


def test_default_folders_are_left_out_and_said_so(tmp_path: Path):
    root = _repo(
        tmp_path,
        {
            "apps/node.yaml": NODE,
            "vendor/x/node.yaml": NODE,
            "src/node_modules/p/package.json": "{}",
            ".github/workflows/ci.yaml": "on: push\n",
            "pkg/testdata/bad.yaml": ":",
            ".vscode/settings.json": "{// jsonc\n}",
        },
    )
    files, skipped = _listed(root)
    assert files == ["apps/node.yaml"]
    assert skipped[".github/"] == BY_DEFAULT
    assert skipped["src/node_modules/"] == BY_DEFAULT
    assert skipped["pkg/testdata/"] == BY_DEFAULT
    assert set(skipped) == {".github/", "src/node_modules/", "pkg/testdata/", "vendor/", ".vscode/"}


def test_defaults_can_be_dropped_or_taken_back(tmp_path: Path):
    root = _repo(tmp_path, {"vendor/node.yaml": NODE, "testdata/node.yaml": NODE})
    assert _listed(root, Config(default_exclude=[]))[0] == [
        "testdata/node.yaml",
        "vendor/node.yaml",
    ]
    assert _listed(root, Config(exclude=["!testdata/"]))[0] == ["testdata/node.yaml"]


def test_gitignore_is_honoured_per_folder(tmp_path: Path):
    root = _repo(
        tmp_path,
        {
            ".gitignore": "rendered/\n*.generated.yaml\n# a comment\n",
            "rendered/all.yaml": NODE,
            "apps/a.generated.yaml": NODE,
            "apps/a.yaml": NODE,
            "apps/.gitignore": "local.yaml\n!keep.generated.yaml\n",
            "apps/local.yaml": NODE,
            "apps/keep.generated.yaml": NODE,
            "other/local.yaml": NODE,
        },
    )
    files, skipped = _listed(root)
    assert files == ["apps/a.yaml", "apps/keep.generated.yaml", "other/local.yaml"]
    assert skipped["rendered/"] == "ignored by .gitignore"
    assert skipped["apps/a.generated.yaml"] == "ignored by .gitignore"
    assert skipped["apps/local.yaml"] == "ignored by apps/.gitignore"
    # the config decides first: a negation takes back what .gitignore ignores
    assert "rendered/all.yaml" in _listed(root, Config(exclude=["!rendered/"]))[0]
    assert "rendered/all.yaml" in _listed(root, Config(gitignore=False))[0]


def test_a_gitignore_link_is_not_followed(tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "ignore").write_text("*\n")
    root = _repo(tmp_path / "repo", {"a.yaml": NODE})
    (root / ".gitignore").symlink_to(outside / "ignore")
    assert _listed(root)[0] == ["a.yaml"]


def test_a_pattern_git_cannot_read_is_a_usage_error_in_the_config(tmp_path: Path):
    from tests.conftest import run_cli

    root = _repo(tmp_path, {"a.yaml": NODE, ".gpudrv-check.yaml": 'exclude:\n  - ok/\n  - "!"\n'})
    result = run_cli("check", str(root), "--matrix", "none")
    assert result.returncode == 2
    assert ".gpudrv-check.yaml:3:5: exclude[1]: '!' is not a gitignore pattern" in result.stderr


def test_lines_git_cannot_read_in_a_gitignore_match_nothing(tmp_path: Path):
    root = _repo(tmp_path, {".gitignore": "!\n\\\nx/\n", "a.yaml": NODE, "x/b.yaml": NODE})
    files, skipped = _listed(root)
    assert files == ["a.yaml"] and skipped == {"x/": "ignored by .gitignore"}
