"""Inputs the fuzzer found breaking a property, kept so the bug stays fixed.

A file's name starts with the target it broke (tests/fuzz/targets.py) and says what was wrong:
- `*-int-over-4300-digits`: an integer too long for int() raised ValueError, an internal error
  (in YAML, and in pyproject.toml through tomllib);
- `*-error-at-end-of-stream`: a syntax error located on a line past the end of the file;
- `*-control-character`: a character YAML forbids, located at 1:1 in a two-line message;
- `*-nel-line-break`, `*-line-separator-in-string`: libyaml counts NEL, LS, PS and a lone CR as
  line breaks, so every position after one was off by a line;
- `matrix-nel-shifts-line-numbers`: the matrix split lines at NEL, VT and FF too;
- `repo-tag-percent-escapes`: a `%0a%1b` tag put a newline and an escape into the report;
- `*-kind-not-a-string`: a `kind:` holding a list or a mapping, before a value the skim plan
  looks at, raised TypeError (unhashable) in the reader: an internal error;
- `repo-flux-path-too-long`: a Flux Kustomization's `spec.path` with a part past NAME_MAX
  (or the whole past PATH_MAX) raised OSError ENAMETOOLONG looking for its kustomization file
  (model/placeholders.py), when the repo holds a `${...}` placeholder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.targets import TARGETS

REGRESSIONS = Path(__file__).resolve().parent / "regressions"
CASES = sorted(p for p in REGRESSIONS.iterdir() if p.name != ".gitattributes")


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_regression_input_keeps_every_property(path: Path):
    target = path.name.split("-", 1)[0]
    TARGETS[target](path.read_bytes())
