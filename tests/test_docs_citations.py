"""Domain facts are cited from the project's own docs (which cite upstream), never from a file
outside the repo; every `docs/<file>.md §N` a test cites names a section that exists."""

from __future__ import annotations

import re

from tests.conftest import ROOT

CITE = re.compile(r"docs/([a-z-]+\.md) §(\d+)(?:-(\d+))?")


def _texts():
    for path in sorted((ROOT / "tests").rglob("*.py")):
        yield path, path.read_text(encoding="utf-8")


#: the domain brief the project started from lives outside the repo; tests cite docs/ instead
OUTSIDE = re.compile("DOMAIN" + r"(\.md| §)")


def test_no_citation_of_a_file_outside_the_repo():
    for path, text in _texts():
        assert not OUTSIDE.search(text), path


def test_every_cited_section_exists():
    cited = 0
    for path, text in _texts():
        for match in CITE.finditer(text):
            doc = (ROOT / "docs" / match[1]).read_text(encoding="utf-8")
            for number in range(int(match[2]), int(match[3] or match[2]) + 1):
                assert re.search(rf"^## {number}\. ", doc, re.M), f"{path}: {match[0]}"
            cited += 1
    assert cited >= 6
