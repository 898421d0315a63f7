"""Flux post-build substitution as kustomize-controller does it (a review's defects 1-13).

Every expected value here was checked with a differential oracle built on fluxcd/pkg envsubst
and kustomize/kustomize_varsub.go `varSubstitution` (envsubst.Eval, then yaml.YAMLToJSON),
strict mode on as kustomize-controller's StrictPostBuildSubstitutions gate sets it by default:
`oracle -vars '{"TEAM":"a"}' -f text.yaml` prints the substituted text and its JSON, or the
error Flux reports. The facts are quoted next to each case as `oracle: ... -> ...`.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gpudrv_check.model import envsubst
from gpudrv_check.model.placeholders import substitute
from gpudrv_check.read.manifests import parse_manifest_bytes
from tests.conftest import run_main, write

POD = """apiVersion: v1
kind: Pod
metadata: {{name: p, namespace: ml}}
spec:
  nodeSelector:
    team: {value}
"""

OTHER = """apiVersion: v1
kind: ConfigMap
metadata: {name: plain, namespace: ml}
data: {a: b}
"""


def _ks(post: str, path: str = "./apps") -> str:
    return (
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
        "metadata: {name: apps, namespace: flux-system}\n"
        f"spec:\n  path: {path}\n  postBuild:\n" + post
    )


def _run(post: str, value: str, sources: str = "", extra: bool = False, raw: str | None = None):
    """The Pod's `team` as substituted (`raw`: set as it is, not read from YAML), and what is
    unknown."""
    files = {"flux/ks.yaml": _ks(post), "apps/pod.yaml": POD.format(value=value)}
    if sources:
        files["flux/sources.yaml"] = sources
    if extra:
        files["apps/plain.yaml"] = OTHER
    objects = [
        m for rel, text in files.items() for m in parse_manifest_bytes(rel, text.encode()).manifests
    ]
    [pod] = [m for m in objects if m.kind == "Pod"]
    if raw is not None:
        pod.data["spec"]["nodeSelector"]["team"] = raw
    found = substitute(objects, {"apps/pod.yaml"})
    return pod.get("spec", "nodeSelector", "team"), found


VARS = "    substitute: {TEAM: a, AB: ab, P: a/b/c.txt, V: '', U: héllo}\n"


# -- 13, 5, 3-4: the envsubst language (fluxcd/pkg envsubst parse/ and funcs.go) -------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # 13. parse/scan.go scanEscaped: `$$` is `$`.
        # oracle: `v: $$${TEAM}` TEAM=a -> "$a"; `v: $${TEAM}` -> "${TEAM}"
        ("$$${TEAM}", "$a"),
        ("$${TEAM}", "${TEAM}"),
        # 5. funcs.go toDefault: the default when the value is empty, `=` as `:=`.
        # oracle: `v: ${V=x}` V="" -> "x"
        ("${V=x}", "x"),
        # 3. parseDefaultFunc: a default may be a placeholder.
        # oracle: `v: ${UNSET:=${TEAM}}` TEAM=a -> "a"
        ("${UNSET:=${TEAM}}", "a"),
        # 4. case, substring, replace, length; acceptIdent names may start with a digit.
        # oracle: `v: ${TEAM^^}-${TEAM:1}-${TEAM/b/c}-${#TEAM}-${1X:=d}` TEAM=ab
        #   -> "AB-b-ac-2-d"
        ("${AB^^}-${AB:1}-${AB/b/c}-${#AB}-${1X:=d}", "AB-b-ac-2-d"),
        # funcs.go trims with path.Match globs.
        # oracle: `v: ${P##*/}-${P%.*}-${P#*/}-${P%%/*}` P=a/b/c.txt
        #   -> "c.txt-a/b/c-b/c.txt-a"
        ("${P##*/}-${P%.*}-${P#*/}-${P%%/*}", "c.txt-a/b/c-b/c.txt-a"),
        # template.go lookupFunc: `:+` is toDefault, not bash's alternate value.
        # oracle: `v: ${TEAM:+yes}-${UNSET:+no}` TEAM=a -> "a-no"
        ("${TEAM:+yes}-${UNSET:+no}", "a-no"),
    ],
)
def test_the_envsubst_language(value: str, expected: str):
    got, found = _run(VARS, value)
    assert got == expected and found.by_object == {}


def test_what_is_not_modelled_is_unknown_never_a_literal():
    """Go's unicode case mapping is not Python's: non-ASCII case changes are not evaluated
    (model/envsubst.py `_case`). oracle: `${U^^}` U=héllo -> "HÉLLO"; here unknown."""
    got, found = _run(VARS, "${U^^}")
    assert got == "${U^^}" and found.names == ["U"]


# -- 6: syntax Flux refuses fails the whole build --------------------------------------------


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        # oracle: `v: ${X-a}` -> ERROR: variable substitution failed: missing closing brace
        ("${X-a}", "missing closing brace"),
        # oracle: `v: ${X` -> ERROR: variable substitution failed: missing closing brace
        ("${X", "missing closing brace"),
        # oracle: `v: ${}` -> ERROR: variable substitution failed: unable to parse variable name
        ("${}", "unable to parse variable name"),
    ],
)
def test_syntax_flux_refuses_fails_the_build_and_every_object_of_it_is_unknown(value, reason):
    got, found = _run(VARS, value, extra=True)
    assert found.failures == [
        f"Kustomization flux-system/apps: envsubst error: variable substitution failed: {reason}"
    ]
    # the object without placeholders is not applied either
    assert {key[:2] for key in found.by_object} == {
        ("apps/pod.yaml", "Pod"),
        ("apps/plain.yaml", "ConfigMap"),
    }
    assert "the Flux build fails, so Flux applies none of its objects" in found.note()


@pytest.mark.parametrize(
    "post",
    [
        # kustomize.toolkit.fluxcd.io/v1 PostBuild: substitute is map[string]string
        "    substitute: {TEAM: a, N: 3}\n",
        "    substitute: {TEAM: {b: c}}\n",
        "    substitute: [TEAM]\n",
        # SubstituteReference: kind enum ConfigMap;Secret, name a required string
        "    substitute: {TEAM: a}\n    substituteFrom: [{kind: Pod, name: x}]\n",
        "    substitute: {TEAM: a}\n    substituteFrom: {kind: ConfigMap, name: x}\n",
        "    substitute: {TEAM: a}\n    substituteFrom: [{kind: ConfigMap, name: [x]}]\n",
    ],
)
def test_a_kustomization_the_api_server_refuses_substitutes_nothing_and_fails_nothing(post):
    """The CRD's schema refuses the Kustomization: it never exists, so it neither fills
    `${TEAM}` nor fails a build; the placeholder stays unknown and the other object of its
    path is checked."""
    got, found = _run(post, "${TEAM}", extra=True)
    assert got == "${TEAM}" and found.failures == []
    assert {key[:2] for key in found.by_object} == {("apps/pod.yaml", "Pod")}


def test_a_null_substitute_value_is_pruned_not_refused():
    # structural schemas drop a null of a field that is not nullable; TEAM is still set
    got, found = _run("    substitute: {TEAM: a, OTHER: null}\n", "${TEAM}")
    assert got == "a" and found.by_object == {}


# -- 2: the substituted text is read as YAML again -------------------------------------------


@pytest.mark.parametrize(
    ("variables", "value", "expected"),
    [
        # oracle: `v: ${A}` A="a" (quoted) -> json "a"
        ('{A: "\\"a\\""}', "${A}", "a"),
        # oracle: `v: ${A}` A='b''c' -> json "b'c"
        ("{A: \"'b''c'\"}", "${A}", "b'c"),
        # oracle: `v: ${A}${B}` A=5 B=50 -> json 550
        ('{A: "5", B: "50"}', "${A}${B}", 550),
        # oracle: `v: ${A}` A="a #x" -> json "a"
        ('{A: "a #x"}', "${A}", "a"),
        # oracle: `v: ${A}` A=yes -> json true; A=0x10 -> 16; A="" -> null
        ("{A: 'yes'}", "${A}", True),
        ("{A: '0x10'}", "${A}", 16),
        ("{A: ''}", "${A}", None),
        # oracle: `v: x-${A}` A=1 -> json "x-1"
        ("{A: '1'}", "x-${A}", "x-1"),
        # oracle: `v: ${UNSET:=1}${UNSET2:-2}` -> json 12
        ("{A: '1'}", "${UNSET:=1}${UNSET2:-2}", 12),
    ],
)
def test_the_filled_text_is_read_as_yaml_again(variables: str, value: str, expected):
    got, found = _run(f"    substitute: {variables}\n", value)
    assert got == expected and type(got) is type(expected) and found.by_object == {}


def test_a_filled_text_that_would_change_the_structure_is_unknown():
    """`v: ${A}` with A="k: v" is a mapping once read again: not modelled, unknown."""
    got, found = _run("    substitute: {A: 'k: v'}\n", "${A}")
    assert got == "${A}" and found.names == ["A"]


# -- 1: Secrets in substituteFrom (kustomize_varsub.go LoadVariables) ------------------------

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vars, namespace: flux-system}\n"
SECRET = "apiVersion: v1\nkind: Secret\nmetadata: {name: sec, namespace: flux-system}\n"
FROM = "    substituteFrom:\n    - {kind: ConfigMap, name: vars}\n    - {kind: Secret, name: sec}\n"


@pytest.mark.parametrize(
    ("secret", "post", "expected", "names"),
    [
        # a later source over an earlier one; base64 data (YQ== is "a")
        ("data: {TEAM: YQ==}\n", FROM, "a", []),
        # stringData, as the API server stores it
        ("stringData: {TEAM: a}\n", FROM, "a", []),
        # newlines removed (YQpi is "a\nb")
        ("data: {TEAM: YQpi}\n", FROM, "ab", []),
        # inline substitute on top of every source
        ("data: {TEAM: YQ==}\n", FROM + "    substitute: {TEAM: c}\n", "c", []),
        # a Secret that cannot be read: its variables (all but those set later) are unknown
        ("data: {TEAM: '%%%'}\n", FROM, "${TEAM}", ["TEAM"]),
        ("data: {TEAM: YQ==}\nsops: {mac: x}\n", FROM, "${TEAM}", ["TEAM"]),
        ("data: {TEAM: '%%%'}\n", FROM + "    substitute: {TEAM: c}\n", "c", []),
    ],
)
def test_secrets_are_sources_too(secret: str, post: str, expected, names: list[str]):
    sources = CM + "data: {TEAM: b}\n---\n" + SECRET + secret
    got, found = _run(post, "${TEAM}", sources)
    assert got == expected and found.names == names and found.failures == []


# -- 7: a source absent from the repo --------------------------------------------------------


def test_an_absent_source_makes_every_placeholder_of_the_scope_unknown_defaults_included():
    post = "    substitute: {OTHER: x}\n    substituteFrom:\n    - {kind: ConfigMap, name: gone}\n"
    got, found = _run(post, "${TEAM:=b}")
    assert got == "${TEAM:=b}" and found.names == ["TEAM"] and found.failures == []
    # an optional one Flux skips when it does not exist
    # oracle: `v: ${TEAM:=b}` vars {OTHER: x} -> "b"
    got, found = _run(post.replace("name: gone}", "name: gone, optional: true}"), "${TEAM:=b}")
    assert got == "b" and found.by_object == {}


# -- 8, 9, 12: other build failures ----------------------------------------------------------


def test_an_invalid_variable_name_fails_the_build():
    # oracle: vars {"gpu.team": "a"} -> ERROR: 'gpu.team' var name is invalid, must match
    #   '^[_[:alpha:]][_[:alpha:][:digit:]]*$'
    got, found = _run(
        "    substituteFrom:\n    - {kind: ConfigMap, name: vars}\n",
        "x",
        CM + "data: {gpu.team: a}\n",
    )
    assert found.failures == [
        "Kustomization flux-system/apps: envsubst error: 'gpu.team' var name is invalid, "
        "must match '^[_[:alpha:]][_[:alpha:][:digit:]]*$'"
    ]
    assert ("apps/pod.yaml", "Pod", "p") in found.by_object


def test_strict_mode_fails_on_an_unset_variable_when_every_source_is_known():
    # oracle (strict): `v: ${UNSET}` TEAM=a -> ERROR: variable substitution failed: variable
    #   not set (strict mode): "UNSET"
    got, found = _run("    substitute: {TEAM: a}\n", "${UNSET}")
    assert found.failures == [
        "Kustomization flux-system/apps: envsubst error: variable substitution failed: "
        'variable not set (strict mode): "UNSET"'
    ]
    # with a source not known here, UNSET may be set there: unknown, not a failure
    post = "    substitute: {TEAM: a}\n    substituteFrom:\n    - {kind: Secret, name: gone}\n"
    got, found = _run(post, "${UNSET}")
    assert found.failures == [] and found.names == ["UNSET"]


# -- 11: substituteStrategy ------------------------------------------------------------------


def test_without_variables_only_always_substitutes():
    # oracle: `v: ${TEAM:=a}` vars {} -> "a" (substitution runs under Always)
    got, found = _run("    substituteStrategy: Always\n", "${TEAM:=a}")
    assert got == "a" and found.by_object == {}
    # SubstituteVariables: no variables, default strategy: the text as written
    got, found = _run("    substituteFrom: []\n", "${TEAM:=a}")
    assert got == "${TEAM:=a}" and found.by_object == {}


# -- 10: substitution disabled by the path's kustomization -----------------------------------

NODES = """apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {kubernetes.io/hostname: n1, nvidia.com/gpu.present: "true", team: a}
status:
  allocatable: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "1", pods: "110"}
"""
GPU_POD = """apiVersion: v1
kind: Pod
metadata: {name: p1, namespace: default}
spec:
  nodeSelector: {team: "${TEAM:=a}"}
  containers:
  - {name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}
"""


@pytest.mark.parametrize(
    "adds",
    [
        "commonAnnotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}\n",
        "commonLabels: {kustomize.toolkit.fluxcd.io/substitute: disabled}\n",
        "labels:\n- pairs: {kustomize.toolkit.fluxcd.io/substitute: disabled}\n",
    ],
)
def test_a_kustomization_can_disable_substitution_for_what_it_builds(tmp_path: Path, adds):
    """SubstituteVariables checks the built object's labels and annotations: what the path's
    kustomization adds counts. TEAM=b would select no node (GPU010); disabled, Flux leaves
    `${TEAM:=a}`, which the API server refuses as a label value (GPU040)."""
    write(tmp_path, "nodes.yaml", NODES)
    write(tmp_path, "flux/ks.yaml", _ks("    substitute: {TEAM: b}\n"))
    write(tmp_path, "apps/pod.yaml", GPU_POD)
    write(tmp_path, "apps/kustomization.yaml", "resources: [pod.yaml]\n")
    done = run_main("check", str(tmp_path), "--matrix", "none", "--no-cache", "--format", "concise")
    assert "GPU010" in done.stdout and "GPU040" not in done.stdout
    write(tmp_path, "apps/kustomization.yaml", "resources: [pod.yaml]\n" + adds)
    done = run_main("check", str(tmp_path), "--matrix", "none", "--no-cache", "--format", "concise")
    assert "GPU040" in done.stdout and "GPU010" not in done.stdout


# -- robustness ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "${A:=" * 20_000 + "x" + "}" * 20_000,
        "$" * 200_000,
        "${A#" + "*a" * 200 + "}",
        "${A//" + "/x}" * 5_000,
        "${A///" * 10_000,
    ],
)
def test_hostile_texts_neither_raise_nor_take_long(text: str):
    start = time.perf_counter()
    got, found = _run("    substitute: {A: " + "a" * 3000 + "}\n", "${A}", raw=text)
    assert time.perf_counter() - start < 5
    assert all(isinstance(n, str) for n in found.by_object.get(("apps/pod.yaml", "Pod", "p"), ()))


def test_the_parser_agrees_with_flux_on_errors_and_values():
    """model/envsubst.py alone, strict. oracle facts: `${A:1:2}` A=Hello -> "el";
    `${A/%o/}` -> "Hello" (replaceSuffix needs two arguments); `${A,^}` -> "Hello"
    (lookupFunc: toDefault); `${Z:==x}` -> "=x"; `${A?x}` -> missing closing brace;
    `${A#}` -> unable to parse substitution within function."""

    def ev(text: str) -> str:
        return envsubst.evaluate(
            envsubst.parse(text), lambda n: ({"A": "Hello"}.get(n, ""), n == "A"), True, set()
        )

    assert [ev(t) for t in ("${A:1:2}", "${A/%o/}", "${A,^}", "${Z:==x}")] == [
        "el",
        "Hello",
        "Hello",
        "=x",
    ]
    for text, reason in (
        ("${A?x}", "missing closing brace"),
        ("${A#}x", "unable to parse substitution within function"),
    ):
        with pytest.raises(envsubst.BuildError, match=reason):
            ev(text)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # quoted in the file (a ` #` or `: ` cannot be in a plain scalar): Flux substitutes
        # inside the quotes, nothing is read again. oracle: `v: "a #${A}"` A=5 -> "a #5";
        # `v: "k: ${A}"` -> "k: 5"
        ('"a #${A}"', "a #5"),
        ('"k: ${A}"', "k: 5"),
        # a block scalar keeps what it holds. oracle: `v: |\n  echo "${A}"\n` -> "echo \"5\"\n"
        ('|\n      echo "${A}"', 'echo "5"\n'),
    ],
)
def test_a_quoted_or_block_value_stays_a_string(value: str, expected: str):
    got, found = _run("    substitute: {A: '5'}\n", value)
    assert got == expected and found.by_object == {}
