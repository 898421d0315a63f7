"""The terminal formats (issue 21): text grouped by file and wrapped to the width, concise one
line per finding, --quiet, --select/--ignore, and colour by --color, NO_COLOR, FORCE_COLOR."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from gpudrv_check.report.text import terminal_width, use_colour
from tests.conftest import run_main

ANSI = re.compile("\x1b\\[[0-9;]*m")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "NO_COLOR")}
    env.pop("FORCE_COLOR", None)
    return {**env, **extra}


def _findings(lab: Path, *args: str) -> list[dict]:
    result = run_main("check", str(lab), "--format", "json", "--no-cache", *args, env=_env())
    return json.loads(result.stdout)["findings"]


def test_text_groups_by_file_and_wraps_message_and_fix_under_the_location(lab_repo: Path):
    findings = _findings(lab_repo)
    result = run_main("check", str(lab_repo), "--no-cache", env=_env(COLUMNS="72"))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    headings = [line for line in lines if line and not line.startswith(" ")][:-1]  # summary
    files = list(dict.fromkeys(f["location"]["file"] for f in findings))
    assert headings == files  # each file once, in report order
    for line in lines:
        words = line.split()
        # at most the width, unless a single word (an image tag, a path) is longer by itself
        assert len(line) <= 72 or len(words) == 1 or max(len(w) for w in words) > 72 - 8, line
    at = [line.strip() for line in lines if re.match(r"  \d+:\d+ ", line)]
    assert at[0].startswith(
        "{line}:{column} {severity} {rule} ".format(**findings[0]["location"], **findings[0])
    )
    assert len(at) == len(findings)
    text = " ".join(result.stdout.split())  # unwrapped, every message and fix is there
    for f in findings:
        assert " ".join(f["message"].split()) in text
        assert "fix: " + " ".join(f["hint"].split()) in text
    assert lines[-1].endswith("3 errors, 0 warnings, 2 info")
    assert lines[-2] == ""


def test_concise_is_one_line_per_finding(lab_repo: Path):
    findings = _findings(lab_repo)
    result = run_main("check", str(lab_repo), "--format", "concise", "--no-cache", env=_env())
    expected = [
        "{file}:{line}:{column}: ".format(**f["location"])
        + f"{f['severity']} {f['rule']} {f['message']}"
        for f in findings
    ]
    assert result.stdout.splitlines() == [
        *expected,
        "6 files, 8 objects read; 3 errors, 0 warnings, 2 info",
    ]


def test_quiet_shows_errors_only_and_no_summary(lab_repo: Path):
    for fmt in ("text", "concise"):
        result = run_main("check", str(lab_repo), "-q", "--format", fmt, "--no-cache", env=_env())
        assert result.returncode == 1  # the exit code still counts every finding
        assert " info " not in result.stdout and "GPU011" not in result.stdout
        assert "GPU010" in result.stdout and "objects read" not in result.stdout
    only_files = run_main(
        "check", str(lab_repo), "-q", "--format", "json", "--output", str(lab_repo / "r.json"),
        env=_env(),
    )  # fmt: skip
    assert only_files.stdout == ""  # no summary line either


def test_select_and_ignore_rules_by_id_or_name(lab_repo: Path):
    rules = lambda *a: sorted({f["rule"] for f in _findings(lab_repo, *a)})  # noqa: E731
    assert rules() == ["GPU010", "GPU011", "GPU020", "GPU021"]
    assert rules("--select", "GPU010,GPU020") == ["GPU010", "GPU020"]
    assert rules("--select", "GPU010", "--select", "GPU011") == ["GPU010", "GPU011"]
    assert rules("--ignore", "GPU011") == ["GPU010", "GPU020", "GPU021"]
    assert rules("--select", "GPU010,GPU011", "--ignore", "GPU011") == ["GPU010"]
    quiet = run_main("check", str(lab_repo), "--select", "GPU011", "--no-cache", env=_env())
    assert quiet.returncode == 0  # only infos left: nothing at or above --fail-on error
    wrong = run_main("check", str(lab_repo), "--ignore", "GPU999", env=_env())
    assert wrong.returncode == 2
    assert "--ignore GPU999: unknown rule" in wrong.stderr and "Traceback" not in wrong.stderr


@pytest.mark.parametrize(
    ("choice", "environ", "tty", "expected"),
    [
        ("auto", {}, False, False),
        ("auto", {}, True, True),
        ("auto", {"NO_COLOR": "1"}, True, False),
        ("auto", {"FORCE_COLOR": "1"}, False, True),
        ("auto", {"FORCE_COLOR": "0"}, True, True),  # 0 does not force; the terminal decides
        ("auto", {"FORCE_COLOR": "0"}, False, False),
        ("auto", {"NO_COLOR": "1", "FORCE_COLOR": "1"}, False, False),
        ("always", {"NO_COLOR": "1"}, False, True),
        ("never", {"FORCE_COLOR": "1"}, True, False),
    ],
)
def test_colour_choice(choice: str, environ: dict, tty: bool, expected: bool):
    class Stream:
        def isatty(self) -> bool:
            return tty

    assert use_colour(Stream(), choice, environ) is expected


def test_colour_on_the_command_line_and_from_the_environment(lab_repo: Path):
    forced = run_main("check", str(lab_repo), "--no-cache", env=_env(FORCE_COLOR="1"))
    assert "\x1b[31merror\x1b[0m" in forced.stdout
    assert not ANSI.search(ANSI.sub("", forced.stdout))  # only the severities are coloured
    never = run_main("check", str(lab_repo), "--color", "never", env=_env(FORCE_COLOR="1"))
    assert "\x1b" not in never.stdout
    always = run_main(
        "check", str(lab_repo), "--format", "concise", "--color", "always", env=_env()
    )
    assert "\x1b[36minfo\x1b[0m" in always.stdout
    piped = run_main("check", str(lab_repo), env=_env())
    assert "\x1b" not in piped.stdout


def test_width_from_columns_else_a_default(monkeypatch):
    monkeypatch.setenv("COLUMNS", "55")
    assert terminal_width(None) == 55
    monkeypatch.setenv("COLUMNS", "5")
    assert terminal_width(None) == 40  # never narrower than a location and a few words
    monkeypatch.delenv("COLUMNS")
    assert terminal_width(None) == 100


def test_terminal_safe_agrees_with_the_regular_expression_on_every_character():
    # the ASCII path deletes the safe bytes (core/finding.py terminal_safe); every other text
    # is scanned by _TERMINAL_UNSAFE: both must say the same of every character and mix
    from gpudrv_check.core.finding import _TERMINAL_UNSAFE, terminal_safe, terminal_text

    for code in [*range(0x3000), *range(0xD7F0, 0xE010), 0xFEFF, 0x10FFFF]:
        char = chr(code)
        for text in (char, f"ok\n\t{char}x", f"{char}" * 3 + "é"):
            assert terminal_safe(text) is (_TERMINAL_UNSAFE.search(text) is None), repr(text)
    many = "…→" * 5000  # past the leads looked at one by one (… is E2 80): the expression
    arrows = "→✓" * 5000  # leads that need no look (E2 86, E2 9C)
    for text in (
        many,
        many + "\u2028",
        many + "\x85",
        arrows,
        arrows + "\u2029",
        arrows + "\u2066",
        "→" + "\x1b",
        "é\u202e",
        "é\ud800",
    ):
        assert terminal_safe(text) is (_TERMINAL_UNSAFE.search(text) is None), repr(text[-3:])
    report = "file.yaml\n  1:2 error GPU001 message\n\tfix: x\n" * 1000
    assert terminal_safe(report) and terminal_text(report) is report
    assert terminal_text(report + "\x1b[2J") == report + "\\x1b[2J"
    assert terminal_text("\x7f\r") == "\\x7f\\x0d"


def test_terminal_bytes_is_the_utf8_of_terminal_text():
    """core/finding.py `terminal_bytes` (what `check` writes and caches of a report) checks the
    bytes it encoded once: on every character below U+3000, around the surrogates, with
    colour codes and the runner's command markers, amid text and alone, in each mode, it
    gives exactly what terminal_text gives, encoded."""
    from gpudrv_check.core.finding import terminal_bytes, terminal_text

    chars = [chr(code) for code in [*range(0x3000), *range(0xD7F0, 0xE010), 0xFEFF, 0x10FFFF]]
    texts = [
        *chars,
        *(f"ok\n\t{char}x →" for char in chars[::7]),
        "a\n::warning::x\n",
        "  ::error::x",
        "\u3000::x",  # a blank .NET trims that UTF-8 bytes do not show as one
        "##[group]x",
        "#\u00ad#[x",
        "\x1b[31mred\x1b[0m \x1b[2J",
        "\x1b[0m\x1b]52;c;x\x07",
        "é\ud800→",
        "…→" * 5000,
        "…→" * 5000 + "\u2028",
        "file.yaml\n  1:2 error GPU001 message\n\tfix: x\n" * 100,
    ]
    for text in texts:
        for colour in (False, True):
            for commands in (False, True):
                want = terminal_text(text, colour=colour, commands=commands).encode("utf-8")
                got = terminal_bytes(text, colour=colour, commands=commands)
                assert got == want, (repr(text[:20]), colour, commands)
