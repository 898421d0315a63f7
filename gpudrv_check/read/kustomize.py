"""Kustomize roots rendered as a source (`--kustomize`).

A *root* is a directory with a kustomization file that no other kustomization references as a
resource, base or component. Each root is rendered with `kustomize build` (or `kubectl
kustomize`, whichever is on PATH) and its output is read as one stream named
`<root>/kustomization.yaml (rendered)`; findings are then located in the repo files the objects
came from (`source_location`): kustomize's own origin annotations (`buildMetadata:
[originAnnotations]`, `config.kubernetes.io/origin`: `path` of the file that declared the
object, or `configuredIn` for a generated one) name the file, the key is found in the
object's document there, or in the patch of the root that sets it. Files that a rendered root
consumes (resources, patches, generator inputs) are read only through the rendering, so a base
shared by two overlays is checked once per overlay, as deployed.

Rendering is offline and executes nothing from the repo: no exec or alpha plugins, no Helm
chart inflation, and no network (remote bases are reported, not fetched;
proxies point nowhere and git may use only local transports, in case one slips by). A base,
resource or file that leaves the checked root (`../` past it, or a link) is refused with a
finding. Within the root a kustomization may read files outside its own directory, as Flux's
kustomize-controller builds it (`LoadRestrictionsNone` over a file system confined to the
source: fluxcd/pkg kustomize `SecureBuild`); this check's own refusal above is the
confinement. The tool runs in a clean environment: no variable of the caller's is passed but
PATH, HOME is an empty temporary directory, and KUBECONFIG names a config whose server is a
`file://` URL, so the `kubectl` that asks the API server for `/version` before it renders
(the version dispatcher of common images) makes no connection and sends no credential.
"""

from __future__ import annotations

import json
import os
import posixpath
import shutil
import subprocess
import tempfile
from dataclasses import field
from pathlib import Path
from typing import Any

from gpudrv_check.core.records import record
from gpudrv_check.read.config_file import DEFAULT_MAX_TOTAL_BYTES, ConfigError
from gpudrv_check.read.exclude import Exclusions
from gpudrv_check.read.kustomization import PATCH_FIELDS
from gpudrv_check.read.safe_io import DEFAULT_LIMIT
from gpudrv_check.read.source import Source, clean_rel
from gpudrv_check.read.tree import FileRef, Listing, Skipped

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
RENDERED_SUFFIX = " (rendered)"
ORIGIN_ANNOTATION = "config.kubernetes.io/origin"
RENDER_TIMEOUT_SECONDS = 120
#: kustomizations one root's patch order visits at most (a cycle kustomize refuses, or a
#: hostile repo)
MAX_PATCH_WALK = 2000
_SAFE_FLAGS = (
    "--enable-helm=false",
    "--enable-alpha-plugins=false",
    "--load-restrictor=LoadRestrictionsNone",
)
_REMOTE_PREFIXES = ("git@", "git::", "github.com/", "gitlab.com/", "bitbucket.org/", "ssh:")


def kustomize_command() -> list[str] | None:
    """`kustomize build` when kustomize is on PATH, else `kubectl kustomize`, else None."""
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    return None


def rendered_name(kustomization_file: str) -> str:
    return kustomization_file + RENDERED_SUFFIX


def is_remote(ref: str) -> bool:
    return "://" in ref or ref.startswith(_REMOTE_PREFIXES) or "?ref=" in ref


@record
class RenderProblem:
    """A root that could not be rendered, at the key of its kustomization that says why."""

    file: str
    line: int
    column: int
    message: str


@record
class Kustomization:
    directory: str  # "" for the checked root itself
    file: str
    dirs: list[str] = field(default_factory=list)  # kustomizations it builds on, in order
    files: list[str] = field(default_factory=list)  # files it reads
    blockers: list[RenderProblem] = field(default_factory=list)  # why it cannot render offline
    patches: list[str] = field(default_factory=list)  # its patch files, in listed order
    prefixes: list[str] = field(default_factory=list)  # namePrefix, when set
    suffixes: list[str] = field(default_factory=list)  # nameSuffix, when set


def _join(directory: str, ref: str) -> str | None:
    return clean_rel(posixpath.join(directory, ref) if directory else ref)


def find_kustomization_file(source: Source, directory: str) -> str | None:
    for name in KUSTOMIZATION_FILES:
        rel = f"{directory}/{name}" if directory else name
        if source.exists(rel):
            return rel
    return None


def _strings(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def parse_kustomization(source: Source, file: str) -> Kustomization:
    """What one kustomization builds on and reads, as far as it can be known offline."""
    from gpudrv_check.core.located import LMap, locate
    from gpudrv_check.read.text import decode_text
    from gpudrv_check.read.yaml_docs import parse_text

    directory = posixpath.dirname(file)
    k = Kustomization(directory, file)
    try:
        raw = source.read(file)
    except OSError:
        return k  # kustomize reports it when it renders
    text, problem = decode_text(raw)
    parsed = parse_text(text or "") if problem is None else None
    data = parsed.docs[0].data if parsed and parsed.docs else None
    if not isinstance(data, LMap):
        return k  # kustomize reports the syntax error when it renders

    def block(path: tuple, message: str) -> None:
        line, column = locate(data, path)
        k.blockers.append(RenderProblem(file, line, column, message))

    for key in ("resources", "bases", "components"):
        for i, ref in enumerate(_strings(data.get(key))):
            if not isinstance(ref, str):
                continue
            if is_remote(ref):
                block(
                    (key, i),
                    f"remote {key[:-1]} {ref!r}: not fetched (no network), so this "
                    "kustomization is not rendered",
                )
                continue
            rel = _join(directory, ref)
            if rel is None or _leaves_root(source, rel):
                block((key, i), _outside_message(key[:-1], ref))
                continue
            if source.exists(rel):
                k.files.append(rel)
            elif find_kustomization_file(source, rel) is not None:
                k.dirs.append(rel)
    if data.get("helmCharts") or data.get("helmChartInflationGenerator"):
        key = "helmCharts" if "helmCharts" in data else "helmChartInflationGenerator"
        block(
            (key,),
            "Helm chart inflation is off (it would download charts and run helm): "
            "this kustomization is not rendered; render it yourself and pipe it to "
            "`gpudrv-check check -`",
        )
    for path, ref in _file_refs(data):
        if isinstance(ref, str) and "\n" not in ref:  # not an inline patch
            rel = _join(directory, ref)
            if rel is not None and _leaves_root(source, rel):
                block(path, _outside_message("file", ref))
            elif rel is not None and source.exists(rel):
                k.files.append(rel)
                if path[0] in PATCH_FIELDS and rel not in k.patches:
                    k.patches.append(rel)
    for key, names in (("namePrefix", k.prefixes), ("nameSuffix", k.suffixes)):
        value = data.get(key)
        if isinstance(value, str) and value:
            names.append(value)
    return k


def _file_refs(data: Any) -> list[tuple[tuple, Any]]:
    """(key path, value) of every file a kustomization reads (patches, generators, ...)."""
    refs: list[tuple[tuple, Any]] = []
    for key in ("patchesStrategicMerge", "crds", "generators", "transformers", "validators"):
        refs += [((key, i), ref) for i, ref in enumerate(_strings(data.get(key)))]
    refs += [(("configurations", i), r) for i, r in enumerate(_strings(data.get("configurations")))]
    for key in ("patches", "patchesJson6902", "replacements"):
        for i, patch in enumerate(_strings(data.get(key))):
            if isinstance(patch, dict):
                refs.append(((key, i, "path"), patch.get("path")))
    for key in ("configMapGenerator", "secretGenerator"):
        for i, gen in enumerate(_strings(data.get(key))):
            if not isinstance(gen, dict):
                continue
            for j, entry in enumerate(_strings(gen.get("files"))):
                if isinstance(entry, str):
                    refs.append(((key, i, "files", j), entry.split("=", 1)[-1]))
            refs += [((key, i, "envs", j), e) for j, e in enumerate(_strings(gen.get("envs")))]
            refs.append(((key, i, "env"), gen.get("env")))
    openapi = data.get("openapi")
    if isinstance(openapi, dict):
        refs.append((("openapi", "path"), openapi.get("path")))
    return refs


def _leaves_root(source: Source, rel: str) -> bool:
    """Whether `rel` (inside the root as written) is a link, or under one, that leads out."""
    resolve = getattr(source, "resolve_inside", None)
    if resolve is None:  # a git revision: links are never written out for kustomize
        return False
    path = Path(source.disk_root) / rel
    return (path.exists() or path.is_symlink()) and resolve(rel) is None


def _outside_message(what: str, ref: str) -> str:
    return (
        f"{what} {ref!r} leaves the checked root (through `..` or a symbolic link): not read, "
        "so this kustomization is not rendered"
    )


@record
class Plan:
    kustomizations: dict[str, Kustomization]  # by directory
    roots: list[str]

    def closure(self, root: str) -> set[str]:
        """Directories of every kustomization a root builds on, itself included."""
        seen: set[str] = set()
        stack = [root]
        while stack:
            directory = stack.pop()
            if directory in seen or directory not in self.kustomizations:
                continue
            seen.add(directory)
            stack.extend(self.kustomizations[directory].dirs)
        return seen

    def patches_applied(self, root: str) -> list[str]:
        """The patch files a root's build applies, in the order kustomize applies them: a
        kustomization builds its resources, bases and components first, in that order (each
        with its own patches), then applies its own patches in the order listed (kustomize
        api/internal/target/kusttarget.go AccumulateTarget: accumulateResources, then
        accumulateComponents, then runTransformers). A kustomization met twice is said once."""
        out: list[str] = []
        seen: set[str] = set()

        def visit(directory: str) -> None:
            k = self.kustomizations.get(directory)
            if k is None or directory in seen or len(seen) >= MAX_PATCH_WALK:
                return
            seen.add(directory)
            for below in k.dirs:
                visit(below)
            out.extend(p for p in k.patches if p not in out)

        visit(root)
        return out

    def name_changes(self, root: str) -> tuple[list[str], list[str]]:
        """The namePrefix and nameSuffix values of the kustomizations a root builds on."""
        prefixes: list[str] = []
        suffixes: list[str] = []
        for directory in sorted(self.closure(root)):
            prefixes += self.kustomizations[directory].prefixes
            suffixes += self.kustomizations[directory].suffixes
        return prefixes, suffixes


def plan(source: Source, listing: Listing) -> Plan:
    found: dict[str, Kustomization] = {}
    for ref in listing.files:
        if posixpath.basename(ref.rel) in KUSTOMIZATION_FILES:
            directory = posixpath.dirname(ref.rel)
            if directory not in found:
                found[directory] = parse_kustomization(source, ref.rel)
    # bases outside the listing (excluded, or named `Kustomization`) are still read by kustomize
    pending = [d for k in found.values() for d in k.dirs]
    while pending:
        directory = pending.pop()
        if directory in found:
            continue
        file = find_kustomization_file(source, directory)
        if file is not None:
            found[directory] = parse_kustomization(source, file)
            pending.extend(found[directory].dirs)
    referenced = {d for k in found.values() for d in k.dirs}
    listed = {posixpath.dirname(f.rel) for f in listing.files}
    roots = sorted(d for d in found if d not in referenced and d in listed)
    return Plan(found, roots)


#: a kubeconfig whose server cannot be reached without a connection ever being made: the
#: kubectl version dispatcher asks it for /version, gets "unsupported protocol scheme", and
#: renders with its own version
_NOWHERE_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: offline
  cluster: {server: "file:///nonexistent"}
contexts:
- name: offline
  context: {cluster: offline, user: offline}
current-context: offline
users:
- name: offline
  user: {}
"""


def _offline_env(home: Path) -> dict[str, str]:
    """A clean environment: only PATH from the caller; HOME, config and caches in `home`."""
    nowhere = "http://127.0.0.1:9"  # the discard port: any HTTP fetch fails at once
    kubeconfig = home / "kubeconfig"
    if not kubeconfig.exists():
        kubeconfig.write_text(_NOWHERE_KUBECONFIG, encoding="utf-8")
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "KUBECONFIG": str(kubeconfig),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "KUSTOMIZE_PLUGIN_HOME": str(home / "plugins"),
        "LANG": "C",
        "LC_ALL": "C",
        "GIT_ALLOW_PROTOCOL": "file",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        env[key] = nowhere
    return env


def run_kustomize(
    command: list[str], directory: Path, root: Path | None = None
) -> tuple[bytes | None, str]:
    """The rendered stream of one directory, or None and the tool's reason (with paths shown
    relative to `root`: a revision's temporary copy must not make the output differ per run)."""
    try:
        with tempfile.TemporaryDirectory(prefix="gpudrv-check-home-") as home:
            done = subprocess.run(
                [*command, *_SAFE_FLAGS, str(directory)],
                capture_output=True,
                timeout=RENDER_TIMEOUT_SECONDS,
                env=_offline_env(Path(home)),
                stdin=subprocess.DEVNULL,
            )
    except subprocess.TimeoutExpired:
        return None, f"timed out after {RENDER_TIMEOUT_SECONDS} s"
    except OSError as err:
        return None, err.strerror or str(err)
    if done.returncode != 0:
        stderr = done.stderr.decode("utf-8", "replace")
        for prefix in sorted({str(root.resolve()), str(root)} if root else (), key=len)[::-1]:
            stderr = stderr.replace(prefix + "/", "").replace(prefix, ".")
        return None, _tool_error(stderr)
    return done.stdout, ""


def _tool_error(stderr: str) -> str:
    """The useful part of kustomize's error text (kubectl wraps it in a log line)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    lines = [line for line in lines if line not in (">", "`")]
    text = " ".join(lines)
    for marker in ('err="', "err=<", "Error: ", "error: "):
        if marker in text:
            text = text.split(marker, 1)[1]
    return text.strip().rstrip('"').strip()[:400] or "kustomize failed"


class KustomizeSource:
    """Another source with its Kustomize roots replaced by their rendered output."""

    def __init__(self, inner: Source, command: list[str] | None = None) -> None:
        found = command or kustomize_command()
        if found is None:
            raise ConfigError(
                "--kustomize needs `kustomize` or `kubectl` on PATH; install one, or render "
                "yourself and pipe the output: `kustomize build DIR | gpudrv-check check -`"
            )
        self.command = found
        self.inner = inner
        self.config_source = getattr(inner, "config_source", inner)
        self.label = inner.label
        self.disk_root = inner.disk_root
        self.rendered: dict[str, bytes] = {}
        self.roots: dict[str, str] = {}  # rendered file -> root directory
        self.consumed: dict[str, str] = {}  # file -> rendered file that reads it
        self.problems: list[RenderProblem] = []
        self.plan: Plan | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._origins: dict[str, list[str | None]] = {}
        # a revision is written out for kustomize up to these (the config's limits: `bound`);
        # what is left out is named if a build fails
        self.limit, self.total = DEFAULT_LIMIT, DEFAULT_MAX_TOTAL_BYTES
        self.left_out: list[str] = []

    def bound(self, max_file_bytes: int, max_total_bytes: int) -> None:
        """The config's limits, before a revision is written out for kustomize."""
        self.limit, self.total = max_file_bytes, max_total_bytes

    def _render_root(self) -> Path:
        """A directory on disk holding the files: the tree itself, or a revision written out."""
        materialize = getattr(self.inner, "materialize", None)
        if materialize is None:
            return Path(self.disk_root)
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="gpudrv-check-kustomize-")
            self.left_out = materialize(Path(self._tmp.name), self.limit, self.total)
        return Path(self._tmp.name)

    def list_manifests(self, exclude: Exclusions | list[str]) -> Listing:
        listing = self.inner.list_manifests(exclude)
        the_plan = self.plan = plan(self.inner, listing)
        if not the_plan.roots:
            return listing
        disk = self._render_root()
        for root in the_plan.roots:
            k = the_plan.kustomizations[root]
            closure = the_plan.closure(root)
            blockers = [b for d in sorted(closure) for b in the_plan.kustomizations[d].blockers]
            if blockers:
                self.problems.extend(blockers)
                continue
            out, error = run_kustomize(self.command, disk / root if root else disk, disk)
            if out is None:
                message = f"kustomize build {root or '.'} failed: {error}"
                if self.left_out:
                    shown = ", ".join(self.left_out[:3]) + ("…" if len(self.left_out) > 3 else "")
                    message += (
                        f" (not written out for it, over max_file_bytes or max_total_bytes: "
                        f"{shown})"
                    )
                self.problems.append(RenderProblem(k.file, 1, 1, message))
                continue
            name = rendered_name(k.file)
            self.rendered[name] = out
            self.roots[name] = root
            for directory in closure:
                kz = the_plan.kustomizations[directory]
                for rel in (kz.file, *kz.files):
                    self.consumed.setdefault(rel, name)
        files = [f for f in listing.files if f.rel not in self.consumed]
        files += [FileRef(name, len(data)) for name, data in self.rendered.items()]
        files.sort(key=lambda f: f.rel)
        listed = {f.rel for f in listing.files}
        skipped = listing.skipped + [
            Skipped(rel, f"read through {name}")
            for rel, name in self.consumed.items()
            if rel in listed
        ]
        skipped.sort(key=lambda s: s.rel)
        return Listing(files=files, skipped=skipped)

    def read(self, rel: str, limit: int = DEFAULT_LIMIT, follow_inside: bool = False) -> bytes:
        if rel in self.rendered:
            return self.rendered[rel]
        return self.inner.read(rel, limit, follow_inside)

    def exists(self, rel: str) -> bool:
        return rel in self.rendered or self.inner.exists(rel)

    def origins(self, rendered: str) -> list[str | None]:
        """Per document of a rendered file, the repo file the object came from (when known):
        the file that declared it, or the kustomization whose generator made it.

        Renders the root once more through a throw-away kustomization that turns on kustomize's
        own origin annotations; documents come out in the same order, so they pair up by index.
        """
        if rendered in self._origins:
            return self._origins[rendered]
        result: list[str | None] = []
        root = self.roots.get(rendered)
        if root is not None:
            result = self._render_origins(root)
        self._origins[rendered] = result
        return result

    def _render_origins(self, root: str) -> list[str | None]:
        from gpudrv_check.read.yaml_docs import parse_text

        disk = self._render_root().resolve()
        target = disk / root if root else disk
        with tempfile.TemporaryDirectory(prefix="gpudrv-check-origin-") as tmp:
            wrapper = Path(tmp)
            rel_target = os.path.relpath(target, wrapper).replace(os.sep, "/")
            (wrapper / "kustomization.yaml").write_text(
                f"resources:\n- {json.dumps(rel_target)}\nbuildMetadata: [originAnnotations]\n",
                encoding="utf-8",
            )
            out, _ = run_kustomize(self.command, wrapper)
            if out is None:
                return []
            parsed = parse_text(out.decode("utf-8", "replace"))
            origins: list[str | None] = []
            for doc in parsed.docs:
                while len(origins) < doc.index:
                    origins.append(None)
                origins.append(self._origin_of(doc.data, wrapper, disk))
            return origins

    @staticmethod
    def _origin_of(data: Any, wrapper: Path, disk: Path) -> str | None:
        """The repo file of kustomize's origin annotation: `path` (the file that declared the
        object), else `configuredIn` (the kustomization of the generator that made it); a
        `repo` (a remote base) is no file of this repo (kustomize api/resource/origin.go)."""
        meta = data.get("metadata") if isinstance(data, dict) else None
        notes = meta.get("annotations") if isinstance(meta, dict) else None
        origin = notes.get(ORIGIN_ANNOTATION) if isinstance(notes, dict) else None
        if not isinstance(origin, str):
            return None
        fields: dict[str, str] = {}
        for line in origin.splitlines():
            key, sep, value = line.partition(":")
            if sep and not line.startswith(" "):
                fields[key.strip()] = value.strip().strip("'\"")
        path = fields.get("path") or fields.get("configuredIn")
        if not path or fields.get("repo"):
            return None
        full = os.path.normpath(os.path.join(wrapper, path))
        rel = os.path.relpath(full, disk).replace(os.sep, "/")
        return None if rel.startswith("..") else rel

    def source_location(
        self, rendered: str, doc: int, kind: str, name: str | None, path: list
    ) -> tuple[str, int, int]:
        """Where in the repo a finding on document `doc` of a rendered root belongs: the last
        patch of the root that sets the key, else the key (or its nearest parent) in the
        object's own file, else that file's first line; without an origin, the root's
        kustomization file. Never the rendered stream, which is no file of the repo."""
        origins = self.origins(rendered)
        origin = origins[doc] if doc < len(origins) else None
        root_file = rendered.removesuffix(RENDERED_SUFFIX)
        if origin is None:
            return root_file, 1, 1
        root = self.roots.get(rendered)
        patches: list[str] = []
        names: tuple[list[str], list[str]] = ([], [])
        if self.plan is not None and root is not None:
            patches = [p for p in self.plan.patches_applied(root) if p != origin]
            names = self.plan.name_changes(root)
        for rel in reversed(patches):  # the last one applied that sets the key wins
            found = self._find(rel, kind, name, path, whole=True, names=names)
            if found is not None:
                return rel, found[0], found[1]
        found = self._find(origin, kind, name, path, whole=False, names=names)
        if found is None:
            return origin, 1, 1
        return origin, found[0], found[1]

    def _find(
        self,
        rel: str,
        kind: str,
        name: str | None,
        path: list,
        whole: bool,
        names: tuple[list[str], list[str]] = ([], []),
    ) -> tuple[int, int] | None:
        """(line, column) of `path` in the document of `rel` that is the object: same kind,
        and a name the rendered one was made from (kustomize adds prefixes and suffixes);
        `whole`: only when the document holds the whole path (a patch that sets it)."""
        from gpudrv_check.core.located import LMap, locate
        from gpudrv_check.read.yaml_docs import parse_text

        try:
            parsed = parse_text(self.inner.read(rel))
        except (OSError, ValueError):
            return None
        docs = [
            d.data for d in parsed.docs if isinstance(d.data, LMap) and d.data.get("kind") == kind
        ]
        named = [d for d in docs if _made_from(_name_of(d), name, *names)]
        if len(named) != 1:  # the exact name, else the one object of its kind the file declares
            exact = [d for d in named if _name_of(d) == name]
            named = exact or (docs if len(docs) == 1 and not whole else [])
        if len(named) != 1:
            return None
        data = named[0]
        if whole and not _holds(data, path):
            return None
        line, column = locate(data, path)
        return line, column

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        closer = getattr(self.inner, "close", None)
        if closer is not None:
            closer()


def _name_of(data: Any) -> str | None:
    meta = data.get("metadata") if isinstance(data, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else None


def _made_from(
    source: str | None, rendered: str | None, prefixes: list[str], suffixes: list[str]
) -> bool:
    """Whether `rendered` is `source` with some of the build's namePrefix values before it and
    nameSuffix values after it (kustomize prefixes and suffixes each layer's names in turn):
    `trainer-large` is not made from `trainer` unless a suffix `-large` is set."""
    if not source or not rendered:
        return False
    pending, seen = [rendered], set()
    while pending:
        current = pending.pop()
        if current == source:
            return True
        if current in seen or len(current) <= len(source):
            continue
        seen.add(current)
        pending += [current[len(p) :] for p in prefixes if current.startswith(p)]
        pending += [current[: -len(x)] for x in suffixes if current.endswith(x)]
    return False


def _holds(data: Any, path: list) -> bool:
    node = data
    for step in path:
        if isinstance(node, dict) and step in node:
            node = node[step]
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            node = node[step]
        else:
            return False
    return True
