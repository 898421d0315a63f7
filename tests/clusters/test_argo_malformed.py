"""Argo CD objects written in any shape: the cluster discovery (model/clusters.py) reads what
has the shape Argo CD reads (argo-cd pkg/apis/application/v1alpha1 types: `generators` a
list, a list generator's `elements` a list, `source.directory.recurse` a boolean, `sources` a
list) and passes over the rest, never an internal error; the rest of the repo is still
checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_main, write

APP = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {{name: a, namespace: argocd}}
spec: {spec}
"""
APPSET = """\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {{name: s, namespace: argocd}}
spec:
  generators: {generators}
  template:
    metadata: {{name: "{{{{cluster}}}}-gpu"}}
    spec:
      source: {{repoURL: "https://example.com/r.git", path: apps}}
      destination: {{name: "{{{{cluster}}}}"}}
"""
POD = """\
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ml}
spec:
  containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]
"""

APP_SPECS = [
    "[]",
    "prod",
    "{destination: prod, source: {path: apps}}",
    "{destination: null, source: {path: apps}}",
    "{destination: {name: 5}, source: {path: apps}}",
    "{destination: {name: prod}, source: {path: apps, directory: recurse}}",
    "{destination: {name: prod}, source: {path: apps, directory: {recurse: 'yes'}}}",
    "{destination: {name: prod}, sources: 5}",
    "{destination: {name: prod}, sources: [apps, null, {path: 7}]}",
]
GENERATORS = [
    "null",
    "prod",
    "[null]",
    "[{list: null}]",
    "[{list: x}]",
    "[{list: {elements: x}}]",
    "[{list: {elements: [1, null, {cluster: 2}]}}]",
    "[{clusters: {}}, {matrix: {generators: [{list: {elements: [{cluster: a}]}}]}}]",
]


@pytest.mark.parametrize(
    "text",
    [APP.format(spec=s) for s in APP_SPECS] + [APPSET.format(generators=g) for g in GENERATORS],
)
def test_a_malformed_argo_object_is_no_internal_error(tmp_path: Path, text: str):
    write(tmp_path, "argo.yaml", text)
    write(tmp_path, "apps/pod.yaml", POD)
    result = run_main("check", str(tmp_path), "--no-cache", "--matrix", "none")
    assert result.returncode in (0, 1), result.stderr
    assert "internal error" not in result.stderr
    assert "objects read" in result.stderr + result.stdout


def test_a_directory_recurse_is_a_boolean(tmp_path: Path):
    """`directory.recurse: "yes"` is no boolean (the CRD refuses it): the Application applies
    its path's own files, not those below it (a second Application makes the repo two
    clusters, which `-v` lists with their files)."""
    write(tmp_path, "apps/nested/pod.yaml", POD)
    other = APP.format(spec="{destination: {name: stg}, source: {path: apps}}")
    for recurse, files in (("'yes'", 1), ("true", 2)):
        source = "{path: apps, directory: {recurse: " + recurse + "}}"
        spec = "{destination: {name: prod}, source: " + source + "}"
        write(tmp_path, "argo.yaml", APP.format(spec=spec) + "---\n" + other.replace("a,", "b,"))
        listed = run_main("check", str(tmp_path), "--no-cache", "--matrix", "none", "-v")
        assert f"cluster prod: {files} file(s)" in listed.stderr, listed.stderr
