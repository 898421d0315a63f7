"""The terminal format's word wrap (report/text.py `_wrap`): its fast path for printable
text gives exactly the lines of textwrap.wrap (CPython Lib/textwrap.py
`TextWrapper._wrap_chunks`, break_long_words=False, break_on_hyphens=False), which the other
texts still take."""

from __future__ import annotations

import random

import pytest

from gpudrv_check.report.text import _wrap, _wrap_spaces
from gpudrv_check.report.text import wrap_by_textwrap as _textwrap


def _random_text(rng: random.Random) -> str:
    words = []
    for _ in range(rng.randint(0, 30)):
        length = rng.choice((1, 2, 3, 5, 8, 13, 30, 60, 120))
        words.append("".join(rng.choice("abcXYZ019-_/:.,`'…→≥é日") for _ in range(length)))
        words.append(" " * rng.choice((1, 1, 1, 2, 3, 45)))
    if rng.random() < 0.3:
        words.insert(0, " " * rng.randint(1, 50))
    return "".join(words)


@pytest.mark.parametrize("seed", range(20))
def test_fast_path_gives_the_lines_of_textwrap(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(200):
        text = _random_text(rng)
        width = rng.choice((9, 10, 20, 40, 41, 80, 100, 137))
        first = " " * rng.choice((0, 2, 6))
        rest = " " * rng.choice((0, 6, 8))
        fast = _wrap_spaces(text, width, first, rest) or [first.rstrip()]
        assert fast == _textwrap(text, width, first, rest), (text, width, first, rest)


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "   ",
        "a",
        "  12:5 error GPU001 node lab-node-3 needs driver image 550-6.8.0-52-generic-ubuntu24.04",
        "x" * 300 + " y",
        "y " + "x" * 300,
        "word" + " " * 200 + "word",
        "tab\tand\nnewline and\xa0nbsp",  # not the fast path: textwrap itself
        "ünïcode — printable … → ≥ 550",
    ],
)
def test_edge_cases(text: str) -> None:
    for width in (10, 40, 100):
        assert _wrap(text, width, "", "      ") == _textwrap(text, width, "", "      ")
        assert _wrap(text, width, "      ", "        ") == _textwrap(
            text, width, "      ", "        "
        )
