"""`--format html`: a self-contained page with the findings and the fleet picture, loaded in
headless Chromium (Debian's `chromium`; skipped with the reason when it is not installed):
it loads with no console message, and its screenshot and DOM have the expected elements."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from gpudrv_check.core.finding import Finding, Location, Severity
from gpudrv_check.report import Report, Summary
from gpudrv_check.report.html import render
from tests.conftest import EXAMPLES, run_main

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)"
)


def _chromium(page: Path, *args: str) -> subprocess.CompletedProcess:
    assert CHROMIUM is not None
    return subprocess.run(
        [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--enable-logging=stderr", "--v=0", f"--user-data-dir={page.parent / 'profile'}",
            *args, page.as_uri(),
        ],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.fixture
def lab_page(lab_repo: Path, tmp_path: Path) -> Path:
    """The lab with lab-node-3, whose image was never built, as an HTML report."""
    shutil.copy(lab_repo / "steps" / "node3.yaml", lab_repo / "k8s" / "node3.yaml")
    page = tmp_path / "report.html"
    result = run_main("check", str(lab_repo), "--format", "html", "--output", str(page))
    assert result.returncode == 1, result.stderr
    return page


def test_the_page_is_self_contained(lab_page: Path):
    text = lab_page.read_text(encoding="utf-8")
    assert not re.search(r"(?i)<(script|link|img|iframe)\b|url\(|https?://", text)
    assert "default-src 'none'" in text  # and the browser may fetch nothing even so
    assert 'id="findings"' in text and 'id="fleet"' in text and 'id="upgrade-states"' in text
    assert '<td class="missing">MISSING: lab-node-3</td>' in text


def test_repo_text_is_escaped():
    finding = Finding(
        rule="GPU001",
        severity=Severity.ERROR,
        message='<img src=x onerror="alert(1)"> & more',
        location=Location(file="k8s/<b>.yaml"),
    )
    page = render(Report([finding], [], {}, Summary()))
    assert "<img" not in page and "<b>" not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; more" in page


@needs_chromium
def test_console_messages_are_seen(tmp_path: Path):
    """The check below would notice a broken page: a blocked fetch and a script are reported."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'\"></head><body><script>console.error(1)</script></body>"
        "</html>"
    )
    assert _console(_chromium(bad, "--dump-dom").stderr)


@needs_chromium
def test_the_page_loads_in_chromium_without_console_messages(lab_page: Path):
    loaded = _chromium(lab_page, "--dump-dom")
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert _console(loaded.stderr) == []
    dom = loaded.stdout
    assert dom.count('<tr class="finding">') == 6
    assert re.search(r'<td class="missing">MISSING: lab-node-3</td>', dom)
    assert re.search(r'<td class="built">built: lab-node-1</td>', dom)
    assert '<p id="verdict" class="verdict-failed">' in dom


@needs_chromium
def test_a_screenshot_of_the_page(lab_page: Path):
    shot = lab_page.parent / "report.png"
    taken = _chromium(lab_page, f"--screenshot={shot}", "--window-size=1200,1600")
    assert taken.returncode == 0 and shot.is_file(), taken.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    assert (width, height) == (1200, 1600)
    assert len(data) > 50_000  # tables and text, not a blank page


def test_operand_chains_in_the_page(tmp_path: Path):
    page = tmp_path / "operands.html"
    run_main("check", str(EXAMPLES / "operands"), "--format", "html", "--output", str(page))
    text = page.read_text(encoding="utf-8")
    assert 'id="operands"' in text
    assert re.search(r"<tr><td>gpu-node-2</td>.*<td class=\"broken\">broken</td></tr>", text)


def test_the_rehearsal_timeline_when_the_operator_config_sets_a_driver_version(lab_repo: Path):
    """The page's timeline is the `rehearse` command's own (model/fleet_rehearsal.py)."""
    import json

    from tests.conftest import helm_release

    target = "550.127.05"
    (lab_repo / "k8s" / "gpu-operator.yaml").write_text(
        helm_release(
            "v25.3.0",
            f'  values:\n    driver:\n      version: "{target}"\n      upgradePolicy:\n'
            "        autoUpgrade: true\n        maxParallelUpgrades: 1\n",
        )
    )
    page = lab_repo / "r.html"
    run_main("check", str(lab_repo), "--format", "html", "--output", str(page))
    text = page.read_text(encoding="utf-8")
    rehearsed = run_main("rehearse", str(lab_repo), "--format", "json")
    doc = json.loads(rehearsed.stdout)
    assert 'id="rehearsal"' in text
    assert text.count('<tr class="wave">') == len(doc["waves"]) > 0
    verdict = "completes" if rehearsed.returncode == 0 else "stalls"
    assert f'<p id="rehearsal-verdict">Upgrade to {target} {verdict}.</p>' in text
    assert text.count('<p class="stall">') == len(doc["stalls"])


def test_no_timeline_without_a_target(lab_page: Path):
    assert 'id="rehearsal"' not in lab_page.read_text(encoding="utf-8")


HOSTILE = "x\x1b[2J\u202eevil\u2028y\rz"


def test_label_values_in_the_page_are_printable(lab_repo: Path):
    """A kernel and an upgrade-state label with ESC, U+202E, U+2028 and CR: the page shows
    them escaped (`\\x1b`) in every table, as the findings table and the markdown cells do."""
    nodes = lab_repo / "k8s" / "nodes.yaml"
    value = json.dumps(HOSTILE)
    nodes.write_text(
        nodes.read_text().replace(
            "kernel-version.full: 5.15.0-119-generic",
            f"kernel-version.full: {value}\n      nvidia.com/gpu-driver-upgrade-state: {value}",
            1,
        )
    )
    result = run_main("check", str(lab_repo), "--no-cache", "--format", "html")
    page = result.stdout
    assert re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e]", page) is None
    escaped = "x\\x1b[2J\\u202eevil\\u2028y z"
    assert f"<td><code>{escaped}</code></td><td>1</td>" in page  # the upgrade state
