"""Repo text in every output, neutralised for its medium: a terminal gets no raw control
character (OSC 52 clipboard writes, clear screen, carriage return) from any command, and the
markdown report no live link, image, @mention, autolink, emphasis or HTML."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, run_main

# OSC 52 (set the clipboard), clear screen, a carriage return that rewrites the line, then
# markdown that would render live
EVIL = (
    "evil\x1b]52;c;aGVsbG8=\x07\x1b[2J\rX [click](https://evil.example) "
    "![img](https://evil.example/i.png) @octo-org/team **bold** _em_ <b>h</b> `code` "
    "www.evil.example ~~gone~~ # heading"
)
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(scope="module")
def evil_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lab with lab-node-3 joined under a hostile name that also labels it."""
    root = tmp_path_factory.mktemp("evil") / "repo"
    shutil.copytree(EXAMPLES / "lab", root)
    node = (root / "steps" / "node3.yaml").read_text()
    node = node.replace("name: lab-node-3", "name: " + json.dumps(EVIL), 1)
    node = node.replace("labels:\n", "labels:\n    evil.example/x: " + json.dumps(EVIL) + "\n", 1)
    (root / "k8s" / "node3.yaml").write_text(node)
    return root


@pytest.fixture(scope="module")
def evil_operands(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The operands example with gpu-node-0 renamed to the hostile name."""
    root = tmp_path_factory.mktemp("evil-operands") / "repo"
    shutil.copytree(EXAMPLES / "operands", root)
    nodes = root / "k8s" / "nodes.yaml"
    nodes.write_text(nodes.read_text().replace("gpu-node-0", json.dumps(EVIL)))
    return root


COMMANDS = [
    ("check", "{root}"),
    ("check", "{root}", "--format", "markdown"),
    ("check", "{root}", "--format", "github"),
    ("check", "{root}", "--verbose"),
    ("place", "{root}"),
    ("operands", "{operands}"),
    ("audit", "{root}"),
    ("report", "{root}"),
    ("report", "{root}", "--node", EVIL),
    ("tag", EVIL, "{root}"),
    ("plan", EVIL, "--driver", "570.86.15", "{root}"),
    ("rehearse", "{root}", "--driver", "550.127.05"),
    ("rehearse", "{root}", "--driver", "550.127.05", "--format", "markdown"),
]


@pytest.mark.slow
@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: "-".join(x for x in a if x[:1] != "{"))
def test_no_command_prints_a_raw_control_character(evil_repo: Path, evil_operands: Path, argv):
    args = [
        a.replace("{root}", str(evil_repo)).replace("{operands}", str(evil_operands)) for a in argv
    ]
    result = run_main(*args, "--no-cache" if args[0] == "check" else "--jobs=1")
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr
    if args[0] not in ("tag", "report") or "--node" in args:
        assert "evil" in result.stdout  # the hostile text is shown, escaped
    assert RAW_CONTROL.search(result.stdout) is None, repr(result.stdout[:2000])
    assert RAW_CONTROL.search(result.stderr) is None, repr(result.stderr[:2000])


def test_markdown_carries_no_live_syntax_from_the_repo(evil_repo: Path):
    result = run_main("check", str(evil_repo), "--no-cache", "--format", "markdown")
    assert result.returncode == 1, result.stderr
    md = result.stdout
    rows = [line for line in md.splitlines() if "evil" in line]
    assert rows
    for row in rows:
        # our own link to the file is the only link on the row
        ours = re.sub(r"^\| \w+ \| \w+ \| \[[^\]]+\]\([^)]+\) \|", "|", row)
        assert re.search(r"(?<!\\)\[[^\]]*(?<!\\)\]\(", ours) is None, row  # link or image
        assert "\\[click\\]" in ours and "\\!\\[img\\]" in ours
        assert "@&#8203;octo-org" in ours and "@octo" not in ours  # no notification
        assert "https:&#8203;//" in ours and "https://" not in ours  # no autolink
        assert "www&#8203;.evil" in ours
        assert "\\*\\*bold\\*\\*" in ours and "\\_em\\_" in ours and "\\~\\~gone" in ours
        assert "<b>" not in ours and "&lt;b&gt;" in ours
        assert "\\`code\\`" in ours and "\\# heading" in ours


def test_a_code_span_holds_any_backticks():
    from gpudrv_check.report.markdown import code

    assert code("a`b") == "``a`b``"
    assert code("`x") == "`` `x ``"
    assert code("p|q") == "`p\\|q`"


@pytest.fixture(scope="module")
def exempt_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lab with its trainer's findings suppressed by an annotation whose reason is
    hostile: a clear screen, a right-to-left override, a line separator, a CR and a command."""
    root = tmp_path_factory.mktemp("exempt") / "repo"
    shutil.copytree(EXAMPLES / "lab", root)
    trainer = root / "k8s" / "trainer.yaml"
    reason = "why \x1b[2J \u202e \u2028 \r::error::x ##[error]y"
    ignore = json.dumps(f"GPU021 cuda-driver-too-old # {reason}")
    trainer.write_text(
        trainer.read_text().replace(
            "  namespace: gpu-drv\n",
            f"  namespace: gpu-drv\n  annotations:\n    gpudrv-check.io/ignore: {ignore}\n",
            1,
        )
    )
    return root


RAW_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@pytest.mark.parametrize(
    "fmt", ["text", "concise", "json", "sarif", "junit", "github", "gitlab", "markdown", "html"]
)
def test_an_exemption_reason_is_neutral_in_every_format(exempt_repo: Path, fmt: str):
    """`suppressed_by` is repo text (report/__init__.py `suppression_text`): escaped as a
    message is, in the `-v` listing and in every format that shows it."""
    result = run_main("check", str(exempt_repo), "--no-cache", "-v", "--format", fmt)
    assert result.returncode in (0, 1), result.stderr
    listed = [line for line in result.stderr.splitlines() if line.startswith("suppressed ")]
    # a line break reads as a space, as in a message; a `#[` is escaped in every terminal
    # line, so no CI log reads it as a legacy workflow command (`no_runner_commands`)
    assert listed and all(line.endswith(" ::error::x ##\\x5berror]y)") for line in listed)
    assert "why \\x1b[2J \\u202e \\u2028  ::error" in listed[0]
    assert RAW_UNSAFE.search(result.stderr) is None, repr(result.stderr[-2000:])
    assert RAW_UNSAFE.search(result.stdout) is None
    if fmt == "json":
        values = [f["suppressed_by"] for f in json.loads(result.stdout)["suppressed"]]
        assert values and all(RAW_UNSAFE.search(v) is None and "\\x1b[2J" in v for v in values)
    if fmt == "junit":
        assert 'message="annotation gpudrv-check.io/ignore: why \\x1b[2J \\u202e' in result.stdout
