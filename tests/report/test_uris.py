"""URIs in SARIF (`artifactLocation.uri`) and markdown links: a file name's own octets,
percent-encoded (RFC 3986 section 2.1), not the escaped display text the other formats show.
SARIF 2.1.0 section 3.10.2 (errata01): `uri` is a URI reference; for a name with the bytes
FF FE that is `%FF%FE`."""

from __future__ import annotations

import json

from gpudrv_check.core.finding import Finding, Location, Severity
from gpudrv_check.report import Report, Summary, render

SHOWN = "k8s/bad\\xff\\xfename.yaml"  # read/tree.py display_name of the bytes below
DISK = b"k8s/bad\xff\xfename.yaml".decode("utf-8", "surrogateescape")


def _report(disk_paths: dict[str, str]) -> Report:
    finding = Finding(
        rule="GPU000",
        severity=Severity.ERROR,
        message="m",
        location=Location(file=SHOWN, line=3),
    )
    return Report([finding], [], {}, Summary(), path_prefix="deploy/", disk_paths=disk_paths)


def test_a_name_that_is_not_utf8_links_to_its_bytes():
    report = _report({SHOWN: DISK})
    assert report.link(SHOWN) == "deploy/k8s/bad%FF%FEname.yaml"
    sarif = json.loads(render("sarif", report))
    [result] = sarif["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location["uri"] == "deploy/k8s/bad%FF%FEname.yaml"
    assert "(deploy/k8s/bad%FF%FEname.yaml#L3)" in render("markdown", report)
    # the formats that show the name keep the escaped text
    assert f"file=deploy/{SHOWN},line=3" in render("github", report)
    assert render("text", report) == render("text", _report({}))


def test_without_the_disk_name_the_display_text_is_encoded_as_before():
    report = _report({})
    assert report.link(SHOWN) == "deploy/k8s/bad%5Cxff%5Cxfename.yaml"
    assert report.link("k8s/odd, name%.yaml") == "deploy/k8s/odd%2C%20name%25.yaml"


def test_a_check_links_a_file_named_with_other_bytes_to_the_file_itself(tmp_path):
    """End to end: the walk escapes the name for display, and the check hands the report the
    name the file system has (read/tree.py WorkingTree.disk_names, RepoContent.disk_names),
    with the cache and without it."""
    import os
    import shutil

    from tests.conftest import EXAMPLES, run_main

    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "lab", root)
    os.rename(root / "k8s" / "trainer.yaml", os.fsencode(root) + b"/k8s/bad\xff\xfename.yaml")
    outputs = []
    for cache in ("--no-cache", "--cache-dir", "--cache-dir"):
        args = [cache, str(tmp_path / "cache")] if cache == "--cache-dir" else [cache]
        result = run_main("check", str(root), "--format", "sarif", *args)
        outputs.append(result.stdout)
        uris = {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in json.loads(result.stdout)["runs"][0]["results"]
        }
        assert any(u.endswith("k8s/bad%FF%FEname.yaml") for u in uris), uris
        assert not any("%5Cx" in u for u in uris)
    assert outputs[0] == outputs[1] == outputs[2]
