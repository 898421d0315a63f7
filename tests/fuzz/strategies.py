"""Hypothesis strategies: JSON values, YAML/CSV token soup, and random-but-valid manifests.

"Valid" means syntactically valid YAML with the shape of the objects the checker reads (Nodes,
workloads, PDBs, the operator's configuration, inventories, Lists), where any field may hold a
realistic value or a value of the wrong type: what a contributor's typo produces.
"""

from __future__ import annotations

import io
import json
from typing import Any

from hypothesis import strategies as st

from tests.fuzz.mutate import TOKENS

# ---- plain data ----------------------------------------------------------------------------

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
# a number past int()'s digit limit (issue 23); with "9" * 25 (past int64) and "²" (a digit
# str.isdigit() accepts and int() refuses) where the checker parses numbers
HUGE_DIGITS = "9" * 5001
# text YAML and JSON can both carry (no surrogates; hypothesis excludes them by default), with
# the characters where YAML and JSON disagree drawn often
_TRICKY = "\x85\u2028\u2029\ufeff\x7f\x80\x9f\ufffe\uffff\t\n\r\"\\/ #:{}[],&*!|>'%@`\U0001f600"
TEXT = st.text(
    alphabet=st.one_of(st.characters(exclude_categories=["Cs"]), st.sampled_from(_TRICKY)),
    max_size=12,
)
SCALARS = st.one_of(st.none(), st.booleans(), INT64, FLOATS, TEXT)


def json_values(max_leaves: int = 25) -> st.SearchStrategy[Any]:
    return st.recursive(
        SCALARS,
        lambda children: st.one_of(
            st.lists(children, max_size=4), st.dictionaries(TEXT, children, max_size=4)
        ),
        max_leaves=max_leaves,
    )


# ---- soups ---------------------------------------------------------------------------------

WORDS = (
    b"apiVersion",
    b"kind",
    b"metadata",
    b"name",
    b"labels",
    b"spec",
    b"v1",
    b"Node",
    b"Deployment",
    b"x",
    b"550",
    b"true",
    b"nvidia.com/gpu.present",
    b"key",
    b"effect",
    b"NoSchedule",
    b"Exists",
    b"items",
    b"List",
    b"values",
    b"operator",
    b"In",
    b"Gt",
)
yaml_soup = st.lists(st.sampled_from(TOKENS + WORDS), max_size=40).map(b"".join)

CSV_CELLS = st.one_of(
    st.sampled_from(
        [
            "550",
            "535",
            "5.15.0-119-generic",
            "ubuntu22.04",
            "rhel9.4",
            "",
            " ",
            '"',
            '""',
            "driver_branch",
            "kernel",
            "os_tag",
            "#",
            "x,y",
            "é",
            "\x00",
        ]
    ),
    st.text(max_size=8),
)
CSV_LINE_ENDS = st.sampled_from(["\n", "\r\n", "\r", "\x0b", "\x85", "\u2028"])


@st.composite
def csv_texts(draw: st.DrawFn) -> bytes:
    rows = draw(st.lists(st.lists(CSV_CELLS, max_size=5), max_size=8))
    header = draw(
        st.sampled_from(
            [
                "driver_branch,kernel,os_tag",
                "kernel,os_tag,driver_branch",
                "driver_branch,kernel",
                "",
                "\ufeffdriver_branch,kernel,os_tag",
            ]
        )
    )
    end = draw(CSV_LINE_ENDS)
    text = header + end + end.join(",".join(r) for r in rows)
    return text.encode("utf-8", "surrogatepass")


# ---- manifests -----------------------------------------------------------------------------

LABEL_KEYS = st.sampled_from(
    [
        "nvidia.com/gpu.present",
        "nvidia.com/cuda.driver-version.major",
        "nvidia.com/cuda.driver.major",
        "feature.node.kubernetes.io/kernel-version.full",
        "feature.node.kubernetes.io/system-os_release.ID",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID",
        "kubernetes.io/hostname",
        "nvidia.com/gpu.deploy.driver",
        "nvidia.com/gpu.deploy.operands",
        "nvidia.com/gpu.deploy.device-plugin",
        "nvidia.com/gpu-driver-upgrade-state",
        "app",
        "bad key!",
        "",
    ]
)
LABEL_VALUES = st.one_of(
    st.sampled_from(
        [
            "true",
            "false",
            "550",
            "535",
            "5.15.0-119-generic",
            "6.8.0-52-generic",
            "ubuntu",
            "22.04",
            "rhel",
            "9.4",
            "upgrade-required",
            "trainer",
            "x" * 70,
            HUGE_DIGITS,
            "9" * 25,
            "\u00b2",
            "a\u202eb\u2028c",
        ]
    ),
    SCALARS,
)


def maybe_wrong(realistic: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the realistic value; sometimes any JSON value (a type error)."""
    return st.one_of(realistic, realistic, realistic, json_values(6))


def opt_dict(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict]:
    """A mapping with any subset of the fields."""
    return st.fixed_dictionaries({}, optional={k: maybe_wrong(v) for k, v in fields.items()})


labels = st.dictionaries(LABEL_KEYS, LABEL_VALUES, max_size=6)
effects = st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute", "", "Bogus"])
taint = opt_dict({"key": LABEL_KEYS, "value": LABEL_VALUES, "effect": effects})
toleration = opt_dict(
    {
        "key": LABEL_KEYS,
        "operator": st.sampled_from(["Exists", "Equal", "", "Gt"]),
        "value": LABEL_VALUES,
        "effect": effects,
        "tolerationSeconds": INT64,
    }
)
operators = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"])
requirement = opt_dict(
    {
        "key": LABEL_KEYS,
        "operator": operators,
        "values": st.lists(LABEL_VALUES, max_size=3),
    }
)
term = opt_dict(
    {
        "matchExpressions": st.lists(requirement, max_size=3),
        "matchFields": st.lists(
            opt_dict(
                {
                    "key": st.just("metadata.name"),
                    "operator": operators,
                    "values": st.lists(TEXT, max_size=2),
                }
            ),
            max_size=2,
        ),
    }
)
selector = opt_dict({"matchLabels": labels, "matchExpressions": st.lists(requirement, max_size=2)})
affinity = opt_dict(
    {
        "nodeAffinity": opt_dict(
            {
                "requiredDuringSchedulingIgnoredDuringExecution": opt_dict(
                    {"nodeSelectorTerms": st.lists(term, max_size=3)}
                )
            }
        ),
        "podAntiAffinity": opt_dict(
            {
                "requiredDuringSchedulingIgnoredDuringExecution": st.lists(
                    opt_dict(
                        {
                            "labelSelector": selector,
                            "topologyKey": st.sampled_from(["kubernetes.io/hostname", "zone"]),
                        }
                    ),
                    max_size=2,
                )
            }
        ),
    }
)
quantity = st.one_of(
    st.integers(-2, 16),
    st.sampled_from(["1", "2", "0.5", "100m", "x", HUGE_DIGITS, "9" * 25, "\u00b2"]),
)
container = opt_dict(
    {
        "name": TEXT,
        "image": st.sampled_from(
            [
                "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                "nvcr.io/nvidia/pytorch:24.07-py3",
                "busybox",
                "",
            ]
        ),
        "resources": opt_dict(
            {
                "limits": st.dictionaries(st.just("nvidia.com/gpu"), quantity),
                "requests": st.dictionaries(st.just("nvidia.com/gpu"), quantity),
            }
        ),
    }
)
pod_spec = opt_dict(
    {
        "nodeSelector": labels,
        "tolerations": st.lists(toleration, max_size=3),
        "affinity": affinity,
        "containers": st.lists(container, min_size=1, max_size=2),
        "initContainers": st.lists(container, max_size=1),
        "nodeName": TEXT,
        "hostNetwork": st.booleans(),
    }
)
template = opt_dict({"metadata": opt_dict({"labels": labels}), "spec": pod_spec})
NAMES = st.sampled_from(["a", "b", "gpu-1", "gpu-2", "trainer", "n", "yes", "1"])
metadata = opt_dict(
    {
        "name": NAMES,
        "namespace": st.sampled_from(["default", "gpu", "x"]),
        "labels": labels,
        "annotations": labels,
    }
)
upgrade_policy = opt_dict(
    {
        "autoUpgrade": st.booleans(),
        "maxParallelUpgrades": st.integers(-1, 5),
        "maxUnavailable": st.sampled_from([0, 1, "25%", "150%", "x"]),
        "drain": opt_dict({"enable": st.booleans(), "podSelector": TEXT, "timeoutSeconds": INT64}),
    }
)
operator_values = opt_dict(
    {
        "driver": opt_dict(
            {
                "enabled": st.booleans(),
                "usePrecompiled": st.booleans(),
                "version": st.sampled_from(["550.90.07", "550", "sha256:abc", ""]),
                "repository": TEXT,
                "image": TEXT,
                "upgradePolicy": upgrade_policy,
            }
        ),
        "toolkit": opt_dict({"enabled": st.booleans()}),
        "devicePlugin": opt_dict({"enabled": st.booleans()}),
        "migManager": opt_dict({"enabled": st.booleans()}),
        "daemonsets": opt_dict({"tolerations": st.lists(toleration, max_size=2)}),
    }
)


def _obj(api: str, kind: str, spec: st.SearchStrategy[Any], **extra: Any) -> st.SearchStrategy:
    return st.fixed_dictionaries(
        {"apiVersion": st.just(api), "kind": st.just(kind), "metadata": metadata},
        optional={"spec": spec, **extra},
    )


def _workload(kind: str, api: str) -> st.SearchStrategy:
    inner = (
        template
        if kind != "CronJob"
        else opt_dict({"jobTemplate": opt_dict({"spec": opt_dict({"template": template})})})
    )
    if kind == "CronJob":
        return _obj(api, kind, inner)
    return _obj(
        api,
        kind,
        st.one_of(
            opt_dict(
                {
                    "replicas": st.integers(-1, 6),
                    "parallelism": st.integers(0, 4),
                    "selector": selector,
                    "template": template,
                }
            ),
            json_values(4),
        ),
    )


node = _obj(
    "v1",
    "Node",
    opt_dict({"taints": st.lists(taint, max_size=3), "unschedulable": st.booleans()}),
    status=opt_dict(
        {
            "capacity": st.dictionaries(st.just("nvidia.com/gpu"), quantity),
            "allocatable": st.dictionaries(st.just("nvidia.com/gpu"), quantity),
        }
    ),
)
objects = st.one_of(
    node,
    _obj("v1", "Pod", pod_spec),
    *[
        _workload(k, a)
        for k, a in (
            ("Deployment", "apps/v1"),
            ("StatefulSet", "apps/v1"),
            ("DaemonSet", "apps/v1"),
            ("ReplicaSet", "apps/v1"),
            ("Job", "batch/v1"),
            ("CronJob", "batch/v1"),
        )
    ],
    _obj(
        "policy/v1",
        "PodDisruptionBudget",
        opt_dict(
            {
                "minAvailable": st.sampled_from(
                    [0, 1, 4, "50%", "100%", "x", HUGE_DIGITS + "%", "9" * 25 + "%"]
                ),
                "maxUnavailable": st.sampled_from([0, 1, "25%"]),
                "selector": selector,
            }
        ),
    ),
    _obj("nvidia.com/v1", "ClusterPolicy", operator_values),
    _obj(
        "helm.toolkit.fluxcd.io/v2",
        "HelmRelease",
        opt_dict(
            {
                "chart": opt_dict(
                    {
                        "spec": opt_dict(
                            {"chart": st.just("gpu-operator"), "version": st.just("v25.10.0")}
                        )
                    }
                ),
                "values": operator_values,
            }
        ),
    ),
    _obj(
        "gpudrv-check.io/v1alpha1",
        "NodeInventory",
        st.none(),
        nodes=st.lists(
            opt_dict(
                {
                    "name": NAMES,
                    "labels": labels,
                    "taints": st.lists(taint, max_size=2),
                    "unschedulable": st.booleans(),
                    "capacity": st.dictionaries(st.just("nvidia.com/gpu"), quantity),
                }
            ),
            max_size=3,
        ),
    ),
)


def list_of(items: st.SearchStrategy) -> st.SearchStrategy:
    return st.fixed_dictionaries(
        {"apiVersion": st.just("v1"), "kind": st.just("List"), "items": st.lists(items, max_size=3)}
    )


manifest_docs = st.lists(st.one_of(objects, list_of(objects)), min_size=1, max_size=3)


def dump_yaml(docs: list[Any]) -> bytes:
    """Block-style YAML, one document per object (ruamel's safe dumper: no tags, no objects)."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    out = io.StringIO()
    yaml.dump_all(docs, out)
    return out.getvalue().encode("utf-8")


@st.composite
def manifest_files(draw: st.DrawFn) -> dict[str, bytes]:
    """1-4 files of random-but-valid manifests, as YAML or JSON."""
    files = {}
    for i in range(draw(st.integers(1, 4))):
        docs = draw(manifest_docs)
        if draw(st.booleans()):
            files[f"m{i}.yaml"] = dump_yaml(docs)
        else:
            files[f"m{i}.json"] = json.dumps(docs[0], ensure_ascii=draw(st.booleans())).encode()
    return files


# ---- block YAML as people write it, for the line reader (read/block_yaml.py) ---------------

_BLOCK_KEYS = (
    "a", "b", "name", "kind", "spec", "status", "metadata", "containers", "env", "args",
    "image", "images", "nodeInfo", "template", "labels", "nvidia.com/gpu", "x.y/z-w", "q'",
    'k"', "a[0]", "a,b", "é", "k\xa0",
)  # fmt: skip
# keys the line reader leaves to the builder, or that libyaml reads in its own way
_ODD_KEYS = (
    "a b", "a:b", '"q r"', "'q: r'", "'it''s'", '"a\\"b"', "-k", "?k", "<<", "~", "null",
    "Null", "1", "0x1F", "true", "yes", "k#x", "&a", "*a", "!a", '""', "''", "x" * 1030,
)  # fmt: skip
_BLOCK_VALUES = (
    "v", "x y", "1", "-1", "+1", "0x1F", "0o17", "017", "08", "1_000", "1e3", ".5", "1.",
    "-.inf", ".NaN", "0b101", "0b", "1e400", "9" * 25, "-0", "+", "yes", "No", "~", "null",
    "True", "off", "y", '""', "''", "'a''b'", "'#x'", '"a b"', '"é"', "a #c", "a#c", "a:b",
    "a ", "a  # c", "-a", "a,b", "a]", "a}", "a - b", "' a '", "a'", "[a, b]", "[]", "[ ]",
    "{}", "{ }", "{a: b}", "{a: 1, b: '}'}", '["a]", \'b\', 3]', "é\u00a0", "\u3000x",
    "nvcr.io/nvidia/cuda:12.4.1-base", "NoSchedule", '"550"', "'true'",
)  # fmt: skip
# values the line reader leaves to the builder, or that libyaml refuses
_ODD_VALUES = (
    '"a\\"b"', "a: b", "a:", ":a", "?a", "- a", "'", '"', "-", "[a,]", "[a:b]", "[a?b]",
    "[[a]]", "{a}", "{a: }", "{a: b, a: c}", "{1: a}", "[a] x", "&x v", "*x", "!tag v",
    "!!str 5", "|", ">-", "%x", "@x", "`x", "---", "...", "# c", "{image: a/b:1.0}",
)  # fmt: skip
_ODD_LINES = (
    "---", "--- # c", "---x", "--- a", "...", "%YAML 1.1", "", "# c", "  # c", "   ", "-",
    "- ", "- - a", "-  a", "\t- a", "a:\tb", "a: b\r", "\ufeffa: b", "- # c", "? a", ": a",
)  # fmt: skip
_SKIM_SKELETONS = (
    ("kind: Node", "status:", "  images:", "  - names: [a, b]", "    sizeBytes: 1",
     "  nodeInfo:", "    kernelVersion: 5.15", "  capacity:", "    cpu: 2"),
    ("kind: Pod", "spec:", "  containers:", "  - name: c", "    env:", "    - name: A",
     "      value: b", "    args: [x, y]", "    ports: []", "    image: i"),
    ("kind: CustomResourceDefinition", "spec:", "  names: {kind: W, plural: ws}",
     "  versions:", "  - name: v1", "    schema:", "      type: object"),
    ("kind: Deployment", "spec:", "  template:", "    spec:", "      containers:",
     "      - name: c", "        env: []", "        resources:", "          limits:",
     "            nvidia.com/gpu: 1"),
)  # fmt: skip


def _block_value(rng: Any) -> str:
    return rng.choice(_ODD_VALUES if rng.random() < 0.08 else _BLOCK_VALUES)


_SCALAR_HEADERS = ("|", "|-", "|+", ">", ">-", ">+", "|  # c", "|2", ">1-", "| x", "|#c")


def _block_scalar(rng: Any, indent: int) -> list[str]:
    """The text lines of a block scalar whose key or dash is at `indent`: mostly at one
    deeper indentation, now and then more indented, empty, blank (fewer or more spaces than
    the text), comment-like, or less indented (which ends it)."""
    deeper = indent + rng.choice((1, 2, 2, 4))
    lines = []
    for _ in range(rng.randint(0, 5)):
        shape = rng.random()
        if shape < 0.55:
            lines.append(" " * deeper + rng.choice(("text", "a b", "# not a comment", "x: y")))
        elif shape < 0.7:
            lines.append(" " * (deeper + rng.randint(1, 3)) + "more")
        elif shape < 0.85:
            lines.append(" " * rng.choice((0, 1, deeper, deeper + 1, deeper + 3)))
        else:
            lines.append(" " * rng.randint(0, deeper) + rng.choice(("less", "# c")))
    return lines


def _block_node(
    rng: Any, depth: int, indent: int, out: list[str], lead: str, mapping: bool
) -> None:
    """A random block mapping or sequence at `indent`; `lead` is written before its first line
    (a sequence dash for a compact mapping, or the indentation)."""
    pad = " " * indent
    if mapping:
        keys = rng.sample(_BLOCK_KEYS, rng.randint(1, 4))
        for i, key in enumerate(keys):
            head = lead if i == 0 else pad
            if rng.random() < 0.04:
                key = rng.choice(_ODD_KEYS)
            shape = rng.random()
            if depth < 5 and shape < 0.3:
                out.append(f"{head}{key}:" + rng.choice(("", "", " # c", "  ")))
                if rng.random() < 0.2:
                    out.append(" " * rng.randint(0, indent + 4) + "# between")
                child = rng.random() < 0.6
                # a list may sit at its key's indentation; a mapping may not
                step = rng.choice((1, 2, 2, 4)) if child or rng.random() < 0.6 else 0
                _block_node(rng, depth + 1, indent + step, out, " " * (indent + step), child)
            elif shape < 0.36:
                out.append(f"{head}{key}: {rng.choice(_SCALAR_HEADERS)}")
                out += _block_scalar(rng, len(head) if i == 0 else indent)
            else:
                out.append(f"{head}{key}: {_block_value(rng)}")
        return
    for i in range(rng.randint(1, 3)):
        dash = rng.choice(("- ", "- ", "-  ", "-   "))
        head = lead if i == 0 else pad
        if depth < 5 and rng.random() < 0.4:
            child = rng.random() < 0.85
            _block_node(rng, depth + 1, indent + len(dash), out, head + dash, child)
        elif rng.random() < 0.1:
            out.append(f"{head}{dash}{rng.choice(_SCALAR_HEADERS)}")
            out += _block_scalar(rng, len(head))
        else:
            out.append(f"{head}{dash}{_block_value(rng)}")


def _block_mutation(rng: Any, lines: list[str]) -> None:
    """One line moved, dropped, doubled, re-indented, or an odd line put in."""
    if not lines:
        return
    i = rng.randrange(len(lines))
    op = rng.random()
    if op < 0.3:
        shift = rng.choice((-2, -1, 1, 2))
        body = lines[i].lstrip(" ")
        lines[i] = " " * max(0, len(lines[i]) - len(body) + shift) + body
    elif op < 0.45:
        del lines[i]
    elif op < 0.6:
        lines.insert(i, lines[i])
    elif op < 0.8:
        lines.insert(i, rng.choice(_ODD_LINES))
    else:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]


@st.composite
def block_texts(draw: st.DrawFn) -> bytes:
    """Block-style YAML as people write it (indentation widths, indentless and compact lists,
    comments between lines, flow lists, quoted keys, several documents), now and then with a
    line moved, dropped or re-indented, or one of the constructs the line reader declines."""
    import random

    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    docs = []
    for _ in range(rng.randint(1, 3)):
        lines: list[str] = []
        if rng.random() < 0.4:
            lines += ["apiVersion: v1", *rng.choice(_SKIM_SKELETONS)]
        if lines:  # under a key of its own: the skeleton's keys stay unique
            lines.append("extra:")
            _block_node(rng, 1, 2, lines, "  ", rng.random() < 0.7)
        elif rng.random() < 0.9:
            indent = rng.choice((0, 0, 0, 2))
            _block_node(rng, 0, indent, lines, " " * indent, rng.random() < 0.8)
        for _ in range(rng.choice((0, 0, 0, 0, 1, 2))):
            _block_mutation(rng, lines)
        docs.append("\n".join(lines))
    head = rng.choice(("", "", "---\n", "# c\n", "--- # c\n", "\n"))
    tail = rng.choice(("", "\n", "\n\n", "\n---\n", "\n---"))
    return (head + rng.choice(("\n---\n", "\n--- # d\n")).join(docs) + tail).encode("utf-8")
