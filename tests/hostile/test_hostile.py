"""Hostile and broken input: every case yields a located finding, never a crash or a hang, and
hides nothing from the rest of the repo.

Each row of CASES is one file of the corpus (tests/hostile/corpus/, or made at run time by
tests/hostile/corpus.py) with the findings it must produce at their exact line and column.
`exact` rows must produce those findings and no other (files that yield no object, so no rule
added later can legitimately add to them); other rows must contain them. Each case is run
alone in-process under a time limit, and the whole corpus is run next to the lab through the
installed CLI.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fuzz import targets
from tests.hostile import corpus
from tests.hostile.conftest import time_limit

PWNED = Path("/tmp/gpudrv-check-hostile-pwned")


@dataclass(frozen=True)
class Case:
    file: str  # under hostile/
    findings: tuple[tuple[str, int, int, str], ...] = ()  # rule, line, column, message part
    exact: bool = False
    absent: tuple[str, ...] = ()  # rules that must not appear for this file
    xfail: str | None = None
    id: str = field(default="", compare=False)


def case(file: str, *findings: tuple[str, int, int, str], **kw) -> Case:
    return Case(file, tuple(findings), **kw)


CASES = [
    # malformed YAML and JSON: the parser's complaint at its position, nothing else
    case("syntax/tab-indent.yaml", ("GPU000", 4, 1, "YAML syntax error"), exact=True),
    case("syntax/unclosed-quote.yaml", ("GPU000", 5, 9, "starts at line 4, column 9"), exact=True),
    case("syntax/unclosed-bracket.yaml", ("GPU000", 5, 16, "flow sequence"), exact=True),
    case("syntax/mapping-in-scalar.yaml", ("GPU000", 4, 10, "mapping values"), exact=True),
    case("syntax/scalar-document.yaml", ("GPU009", 2, 1, "is a scalar"), exact=True),
    case("syntax/list-document.yaml", ("GPU009", 1, 1, "is a list"), exact=True),
    case(
        "syntax/second-document-broken.yaml",
        ("GPU040", 6, 3, "unschedulable"),  # the document before the break is still checked
        ("GPU000", 13, 27, "YAML syntax error"),
    ),
    case("syntax/broken.json", ("GPU000", 4, 3, "JSON syntax error: expected ','"), exact=True),
    case("syntax/yaml-in-json-broken.json", ("GPU000", 4, 1, "YAML syntax error"), exact=True),
    # valid JSON libyaml refuses: still read, at the right positions
    case("json/tabs.json", ("GPU040", 8, 3, "unschedulable"), absent=("GPU000",)),
    case("json/surrogate-escape.json", ("GPU040", 3, 11, "unschedulable"), absent=("GPU000",)),
    case("json/c1-character.json", ("GPU040", 3, 11, "unschedulable"), absent=("GPU000",)),
    case("json/stream.json", ("GPU040", 3, 11, "unschedulable"), absent=("GPU000",)),
    case("json/long-key.json", absent=("GPU000",)),
    case("json/duplicate-key.json", ("GPU008", 2, 30, "duplicate key 'name'")),
    # a colon inside a flow scalar: read as kubectl reads it (go-yaml scannerc.go), the object
    # still checked at the right position (issue 13)
    case("flow/colon-in-flow-scalar.yaml", ("GPU040", 6, 3, "unschedulable"), absent=("GPU000",)),
    # Flux Kustomizations of every wrong shape, placeholders in keys, names and lists: no
    # crash, no finding (the placeholders are unknown values)
    case("placeholders/odd-flux.yaml", exact=True),
    # JSONC (comments, trailing commas): editor settings are skipped; a manifest so written is
    # still a syntax error, as kubectl says (issue 13)
    case("jsonc/settings.json", exact=True),
    case("jsonc/manifest.json", ("GPU000", 2, 23, "JSON syntax error"), exact=True),
    # bytes that are not text
    case("encoding/invalid-utf8.yaml", ("GPU000", 4, 12, "invalid UTF-8 byte 0xe9"), exact=True),
    case("encoding/nul-byte.yaml", ("GPU000", 3, 21, "NUL"), exact=True),
    case("encoding/binary.json", ("GPU000", 3, 1, "binary"), exact=True),
    case("encoding/utf16-bom.yaml", ("GPU040", 6, 3, "unschedulable")),
    case("encoding/utf16-no-bom.yaml", ("GPU000", 1, 1, "UTF-16"), exact=True),
    case("encoding/crlf.yaml", ("GPU040", 7, 3, "unschedulable")),
    case("encoding/utf8-bom.yaml", ("GPU040", 1, 1, "apiVersion must be a string"), exact=True),
    case("encoding/control-character.yaml", ("GPU000", 4, 13, "U+0007"), exact=True),
    case("encoding/line-separator.yaml", ("GPU040", 7, 3, "unschedulable")),  # lines as editors
    case("encoding/escape-injection.yaml", ("GPU008", 7, 3, "\\x1b[31mred\\n::error::forged")),
    # duplicate and non-scalar keys
    case("keys/duplicate-key.yaml", ("GPU008", 7, 5, "duplicate key 'app'")),
    case("keys/non-scalar-key.yaml", ("GPU000", 5, 5, "not a scalar")),
    # alias and merge-key bombs: reported, never expanded
    case("bombs/billion-laughs.yaml", ("GPU000", 6, 12, "alias bomb"), exact=True),
    case("bombs/merge-keys.yaml", ("GPU000", 21, 23, "alias bomb"), exact=True),
    case("bombs/many-documents.yaml", ("GPU000", 59, 325, "alias bomb")),
    # 1,000 aliases of a 160 kB value: few nodes, many bytes (issue 23: budgeted by bytes too)
    case("bombs/aliased-large-value.yaml", ("GPU000", 87, 10, "alias bomb"), exact=True),
    # numbers past int()'s digit limit: GPU040 at the key, or read as upstream does; no crash
    case(
        "numbers/huge-allocatable.yaml",
        ("GPU040", 8, 3, "unschedulable"),
        ("GPU040", 14, 5, "is larger than the API server accepts"),
    ),
    case("numbers/huge-driver-label.yaml", ("GPU040", 8, 3, "unschedulable")),
    case("numbers/huge-gpu-request.yaml", ("GPU040", 12, 9, "larger than the API server")),
    case("numbers/huge-pdb-percent.yaml", absent=("GPU000",)),
    # an alias to an anchor in a skimmed part of a Node's status reads the value, not null
    case("skim/alias-into-skimmed.yaml", ("GPU040", 12, 3, "unschedulable")),
    # nesting thousands deep: refused without RecursionError
    case("nesting/deep-flow.yaml", ("GPU000", 1, 1, "nesting deeper"), exact=True),
    case("nesting/deep-block-sequence.yaml", ("GPU000", 1, 257, "nesting deeper"), exact=True),
    case("nesting/deep-block-mapping.yaml", ("GPU000", 129, 129, "nesting deeper"), exact=True),
    case("nesting/deep-json.json", ("GPU000", 1, 641, "nesting deeper"), exact=True),
    case("nesting/deep-but-allowed.yaml", ("GPU040", 7, 3, "unschedulable")),
    # over the size limit
    case("size/over-limit.yaml", ("GPU000", 1, 1, "max_file_bytes limit of 200000"), exact=True),
    # wrong types where Kubernetes expects others: GPU040 at that key
    case("types/replicas-string.yaml", ("GPU040", 7, 3, "replicas")),
    case("types/labels-list.yaml", ("GPU040", 10, 7, "labels"), ("GPU040", 18, 3, "labels")),
    case("types/tolerations-mapping.yaml", ("GPU040", 11, 7, "tolerations")),
    case("types/values-scalar.yaml", ("GPU040", 18, 17, "values")),
    case("types/taint-without-effect.yaml", ("GPU040", 7, 5, "taint")),
    case("types/name-boolean.yaml", ("GPU040", 4, 3, "boolean")),
    case("types/kind-number.yaml", ("GPU040", 2, 1, "kind must be a string"), exact=True),
    case("types/huge-integer.yaml", absent=("GPU000",)),
    # pkg/apis/core/validation ValidateResourceQuantityValue: extended resources are integers
    case("types/gpu-count-fraction.yaml", ("GPU040", 12, 9, "must be an integer")),
    # unknown tags: reported, never constructed (PWNED is checked after the runs)
    case(
        "tags/python-object.yaml",
        ("GPU009", 4, 9, "!!python/object/apply:os.system"),
        ("GPU009", 6, 8, "!!python/object/new:subprocess.Popen"),
    ),
    # custom tags in a file that is not a Kubernetes object (CloudFormation, Home Assistant)
    # are that tool's business: not findings (issue 13)
    case("tags/cloudformation.yaml", exact=True),
    case("tags/tag-injection.yaml", ("GPU009", 5, 6, "tag:\\n\\x1b[31m::error::x")),
    # top-level lists with nested command/args/env/ports (Ansible, patches): once an internal
    # error in the container skim; skipped silently unless they hold objects (issue 13)
    case("toplevel/ansible-playbook.yaml", exact=True),
    case("toplevel/ansible-tasks.yml", exact=True),
    case("toplevel/json6902-patch.yaml", exact=True),
    case("toplevel/nested-lists.yaml", exact=True),
    case("toplevel/list-of-deployments.yaml", ("GPU009", 2, 1, "is a list"), exact=True),
    # Helm templates and Kustomize patches: not checkable, once each
    # a chart is one line, at its Chart.yaml, whatever its number of templates (issue 13)
    case("helm/chart/templates/deployment.yaml", exact=True),
    case("helm/chart/templates/plain.yaml", exact=True),
    case(
        "helm/chart/Chart.yaml",
        ("GPU009", 1, 1, "chart hostile/helm/chart: 2 templates not rendered; pipe `helm"),
        exact=True,
    ),
    # a Terraform template: once per file, as info
    case("terraform/nodes.yaml", ("GPU009", 1, 1, "Terraform template"), exact=True),
    case("helm/loose-template.yaml", ("GPU009", 1, 1, "templated file"), exact=True),
    case("helm/template-that-parses.yaml", ("GPU009", 1, 1, "templated file"), exact=True),
    case(
        "kustomize/overlays/prod/replicas-patch.yaml",
        ("GPU009", 1, 1, "kustomization.yaml:6 patchesStrategicMerge"),
        exact=True,
    ),
    case(
        "kustomize/overlays/prod/gpu-patch.yaml",
        ("GPU009", 1, 1, "kustomization.yaml:12 patches"),
        exact=True,
    ),
    case(
        "kustomize/overlays/prod/json-patch.yaml",
        ("GPU009", 1, 1, "kustomization.yaml:20 patchesJson6902"),
        exact=True,
    ),
    case("kustomize/base/deployment.yaml", ("GPU040", 7, 3, "replicas")),  # a real object
    case("kustomize/overlays/prod/kustomization.yaml", exact=True),
    # a malformed inventory: GPU005 at each bad entry
    case(
        "inventory/broken-inventory.yaml",
        ("GPU005", 6, 3, "taints must be a list, not"),
        ("GPU005", 7, 3, "name must be a string, not"),
        ("GPU005", 8, 3, "labels must be a mapping, not"),
        ("GPU005", 9, 3, "'name' is a required property"),
        ("GPU005", 12, 3, "unschedulable must be a boolean, not"),
    ),
    # valid seeds of the newer models (the fuzzer mutates them): Kueue queues and flavors,
    # topology spread, required anti-affinity, PDBs over Job and mirror pods, GPU040's pod-spec
    # fields, Flux post-build substitution
    case("kueue/queues.yaml", ("GPU010", 82, 24, "stopPolicy Hold")),
    case(
        "kueue/never-admits.yaml",
        ("GPU010", 61, 12, "has stopPolicy HoldAndDrain"),
        ("GPU010", 76, 12, "does not select namespace hostile-queues"),
    ),
    case("spread/topology-spread.yaml", ("GPU010", 49, 9, "topology spread")),
    case("spread/anti-affinity.yaml", ("GPU021", 47, 13, "required pod anti-affinity")),
    case(
        "disruption/job-and-mirror-pods.yaml",
        ("GPU024", 26, 16, "covered by 2 PodDisruptionBudgets"),
        ("GPU020", 38, 3, "maxUnavailable 0"),
        ("GPU020", 59, 3, "minAvailable 50%"),
    ),
    case(
        "podfields/pod-spec-fields.yaml",
        ("GPU040", 52, 7, "runtimeClassName"),
        ("GPU040", 61, 37, "hostPort"),
    ),
    case(
        "placeholders/flux/flux-post-build.yaml",
        ("GPU040", 51, 22, "must be a string, not integer"),  # "${DRIVER:0:3}" read again
        absent=("GPU000",),
    ),
    # file names that would forge report lines: escaped, and the file is still checked
    *[
        case("names/" + shown, ("GPU040", *corpus.BAD_NODE_AT, "unschedulable"))
        for shown in corpus.ODD_NAMES.values()
    ],
    # links, a loop, a FIFO: nothing read, nothing reported, no hang
    case("links/file-link.yaml", exact=True),
    case("links/self.yaml", exact=True),
    case("special/fifo.yaml", exact=True),
]


def _param(c: Case):
    marks = [pytest.mark.xfail(reason=c.xfail, strict=False)] if c.xfail else []
    return pytest.param(c, id=c.file.encode("ascii", "backslashreplace").decode(), marks=marks)


def _group(file: str) -> str:
    """What must be copied with a case: its chart or kustomize tree, else the file itself."""
    top = file.split("/")[0]
    if top in ("helm", "kustomize"):
        return top
    return file


def _by_file(findings: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for f in findings:
        out.setdefault(f["location"]["file"], []).append(f)
    return out


def assert_case(c: Case, findings: list[dict]) -> None:
    got = _by_file(findings).get(corpus.PREFIX + c.file, [])
    located = [(f["rule"], f["location"]["line"], f["location"]["column"]) for f in got]
    for rule, line, column, part in c.findings:
        matching = [
            f
            for f in got
            if (f["rule"], f["location"]["line"], f["location"]["column"]) == (rule, line, column)
        ]
        assert matching, f"{c.file}: no {rule} at {line}:{column}; got {located}"
        assert any(part in f["message"] for f in matching), (part, [f["message"] for f in got])
    if c.exact:
        assert sorted(located) == sorted((r, li, co) for r, li, co, _ in c.findings), got
    for rule in c.absent:
        assert rule not in {f["rule"] for f in got}, got


def _build_case(root: Path, outside: Path, c: Case) -> None:
    group = _group(c.file)
    top = c.file.split("/")[0]
    if top in ("links", "special", "names"):
        corpus._links_and_specials(root / corpus.PREFIX, outside, 1)
        return
    generated = corpus.generated()
    if group in generated:
        dest = root / corpus.PREFIX / group
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(generated[group])
        return
    source = corpus.CORPUS / group
    dest = root / corpus.PREFIX / group
    dest.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, dest)
    else:
        shutil.copy(source, dest)


@pytest.mark.slow
@pytest.mark.parametrize("c", [_param(c) for c in CASES])
def test_each_case_alone(c: Case, tmp_path: Path):
    """In-process, exceptions surfacing (debug mode), under a generous time limit."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".gpudrv-check.yaml").write_text(f"max_file_bytes: {corpus.MAX_FILE_BYTES}\n")
    _build_case(root, tmp_path / "outside", c)
    with time_limit(60):
        result, doc = targets.check_json(root, "--matrix", "none")
        text = targets.check_text(root, "--matrix", "none")
    assert result.code in (0, 1) and text.code == result.code
    assert_case(c, doc["findings"])


# ---- the whole corpus next to the lab, through the installed CLI --------------------------


def _run(*args: str, env: dict | None = None):
    result = run_cli(*args, env=env, timeout=300)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    return result


def test_whole_corpus_next_to_the_lab_hides_nothing(hostile_repo: Path, lab_only: Path):
    PWNED.unlink(missing_ok=True)
    lab = _run("check", str(lab_only), "--format", "json")
    both = _run("check", str(hostile_repo), "--format", "json")
    assert (lab.returncode, both.returncode) == (1, 1)
    lab_doc, doc = json.loads(lab.stdout), json.loads(both.stdout)

    def keys(d):
        # identity, not wording: messages that count nodes ("0/4 nodes are available") rightly
        # change when the hostile files add nodes of their own
        return {
            (f["rule"], f["location"]["file"], f["location"]["line"], f["location"]["column"])
            for f in d["findings"]
        }

    assert lab_doc["findings"], "the lab alone must report something for this test to bite"
    assert keys(lab_doc) <= keys(doc)
    assert doc["summary"]["objects"] > lab_doc["summary"]["objects"]
    for c in CASES:
        if c.xfail is None:
            assert_case(c, doc["findings"])
    # nothing outside the root was read; nothing from the repo was executed
    assert "hostile-outside" not in both.stdout and "TOP-SECRET" not in both.stdout
    assert not any("links/" in f["location"]["file"] for f in doc["findings"])
    assert not PWNED.exists()


def test_text_report_lines_cannot_be_forged(hostile_repo: Path):
    result = _run("check", str(hostile_repo))
    assert result.returncode == 1
    assert "\x1b" not in result.stdout and "\u202e" not in result.stdout
    for line in result.stdout.splitlines()[:-1]:
        # a file heading is a repo path, a finding starts `  LINE:COL severity RULE `, its
        # message and fix go on six spaces in, a note of what was not checked says `note: `
        if not line or line.startswith(("note: ", " " * 6)):
            continue
        if line.startswith("  "):
            assert re.match(r"  \d+:\d+ (error|warning|info) [A-Z]+\d+( |$)", line), line
        else:
            assert line.startswith(("hostile/", "k8s/")), line
    concise = _run("check", str(hostile_repo), "--format", "concise")
    for line in concise.stdout.splitlines()[:-1]:
        assert line.startswith(("hostile/", "k8s/", "note: ")), line
    assert "::error::" not in "".join(
        line for line in result.stdout.splitlines() if line.startswith("::")
    )


def test_verbose_listing_says_what_was_skipped(hostile_repo: Path):
    result = _run("check", str(hostile_repo), "--verbose")
    err = result.stderr
    assert "skipped hostile/links/file-link.yaml: symbolic link, not followed" in err
    assert "skipped hostile/links/dir-link/: symbolic link to a directory, not followed" in err
    assert "skipped hostile/special/fifo.yaml: not a regular file" in err
    assert "hostile-outside" not in err


def test_audit_and_tag_survive_the_corpus(hostile_repo: Path):
    audit = _run("audit", str(hostile_repo))
    assert (audit.returncode, audit.stdout) == (
        1,
        "lab-node-3 MISSING 550-6.8.0-52-generic-ubuntu24.04\n",
    )
    tag = _run("tag", "lab-node-0", str(hostile_repo))
    assert (tag.returncode, tag.stdout) == (0, "550-5.15.0-119-generic-ubuntu22.04\n")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads directories whatever their mode")
def test_unreadable_directory_is_a_finding_not_a_silent_skip(tmp_path: Path):
    root = tmp_path / "repo"
    locked = root / "locked"
    locked.mkdir(parents=True)
    (locked / "node.yaml").write_text(corpus.BAD_NODE.format(name="locked"))
    locked.chmod(0)
    try:
        result, doc = targets.check_json(root, "--matrix", "none")
    finally:
        locked.chmod(0o755)
    [f] = doc["findings"]
    assert (f["rule"], f["location"]["file"]) == ("GPU000", "locked/")
    assert "cannot list directory" in f["message"]
