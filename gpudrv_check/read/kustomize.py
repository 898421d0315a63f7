"""Kustomize roots rendered as a source (`--kustomize`).

A *root* is a directory with a kustomization file that no other kustomization references as a
resource, base or component. Each root is rendered with `kustomize build` (or `kubectl
kustomize`, whichever is on PATH) and its output is read as one stream named
`<root>/kustomization.yaml (rendered)`; findings are then located in the repo files the objects
came from (`source_location`): kustomize's own origin annotations (`buildMetadata:
[originAnnotations]`, `config.kubernetes.io/origin`: `path` of the file that declared the
object, or `configuredIn` for a generated one) name the file, the key is found in the
object's document there (or its generator entry), or in the last patch or `images:` entry of
the kustomizations that build it that sets it (`source_location`). Files that a rendered root
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
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpudrv_check.core.records import record
from gpudrv_check.read.config_file import DEFAULT_MAX_TOTAL_BYTES, ConfigError
from gpudrv_check.read.exclude import Exclusions
from gpudrv_check.read.kustomization import PATCH_FIELDS, RENDERED_SUFFIX
from gpudrv_check.read.safe_io import DEFAULT_LIMIT, lexists
from gpudrv_check.read.source import Source, clean_rel
from gpudrv_check.read.tree import FileRef, Listing, Skipped

if TYPE_CHECKING:  # imported where a render runs: a check without --kustomize never needs them
    import tempfile

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
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
    import shutil

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
class PatchEntry:
    """One patch a kustomization applies: the patch file (None for an inline patch, read from
    the kustomization at `field`/`index`) and its `target` selector, when it has one."""

    kustomization: str
    field: str
    index: int
    file: str | None
    target: dict | None = None


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
    resources: list[str] = field(default_factory=list)  # resource files (not patches, inputs)
    components: list[str] = field(default_factory=list)  # component directories, in order
    namespace: str | None = None  # its `namespace:`, when set
    entries: list[PatchEntry] = field(default_factory=list)  # its patches, in applied order


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
                if key != "components":
                    k.resources.append(rel)
            elif find_kustomization_file(source, rel) is not None:
                k.dirs.append(rel)
                if key == "components":
                    k.components.append(rel)
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
    namespace = data.get("namespace")
    k.namespace = namespace if isinstance(namespace, str) and namespace else None
    k.entries = _patch_entries(source, file, data)
    return k


def _patch_entries(source: Source, file: str, data: Any) -> list[PatchEntry]:
    """A kustomization's patches in the order kustomize applies them: `patchesStrategicMerge`,
    then `patches`, then `patchesJson6902` (the PatchStrategicMergeTransformer,
    PatchTransformer and PatchJson6902Transformer of kustomize
    api/internal/target/kusttarget_configplugin.go configureBuiltinTransformers, in that
    order), each in the order listed."""
    directory = posixpath.dirname(file)
    out: list[PatchEntry] = []
    for key in ("patchesStrategicMerge", "patches", "patchesJson6902"):
        for i, entry in enumerate(_strings(data.get(key))):
            ref: Any = entry if isinstance(entry, str) else None
            target: dict | None = None
            if isinstance(entry, dict):
                ref = entry.get("path")
                target = entry.get("target") if isinstance(entry.get("target"), dict) else None
                if key == "patchesJson6902" and target is None:
                    # the legacy field names its target beside the path
                    target = {k: entry[k] for k in _TARGET_KEYS if k in entry} or None
                if not isinstance(ref, str):
                    if isinstance(entry.get("patch"), str):
                        out.append(PatchEntry(file, key, i, None, target))
                    continue
            if not isinstance(ref, str):
                continue
            if "\n" in ref or (key == "patchesStrategicMerge" and ref.lstrip().startswith("{")):
                out.append(PatchEntry(file, key, i, None, target))  # an inline patch
                continue
            rel = _join(directory, ref)
            if rel is not None and source.exists(rel) and not _leaves_root(source, rel):
                out.append(PatchEntry(file, key, i, rel, target))
    return out


_TARGET_KEYS = ("group", "version", "kind", "name", "namespace")


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
    return lexists(path) and resolve(rel) is None


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

    def builds(self, root: str, origin: str) -> list[list[str]]:
        """Each way the root's build reaches the object of repo file `origin`, as the
        kustomizations whose transformers act on it, in the order they run: the one that lists
        the file as a resource (or, for a generated object, the one whose generator made it)
        first, out to the root. Patches of another branch of the build never touch the object:
        only the kustomizations on its chain do, and at each of them the components listed
        after the chain's next step (a component's transformers act on what its parent has
        accumulated so far, its own components' first: kusttarget.go AccumulateTarget
        accumulates resources, then components, then runs the kustomization's own
        transformers). At most MAX_PATCH_WALK chains."""
        generated = posixpath.basename(origin) in KUSTOMIZATION_FILES
        out: list[list[str]] = []
        # (directory, path from the root down to it)
        pending: list[tuple[str, tuple[str, ...]]] = [(root, (root,))]
        visits = 0
        while pending and len(out) < MAX_PATCH_WALK and visits < MAX_PATCH_WALK * 4:
            visits += 1
            directory, chain = pending.pop()
            k = self.kustomizations.get(directory)
            if k is None:
                continue
            if (posixpath.dirname(origin) == directory) if generated else origin in k.resources:
                out.append(self._steps(chain, origin))
            for below in reversed(k.dirs):
                if below not in chain:  # a cycle kustomize refuses
                    pending.append((below, (*chain, below)))
        return out

    def _steps(self, chain: tuple[str, ...], origin: str) -> list[str]:
        steps: list[str] = []
        for i in range(len(chain) - 1, -1, -1):
            k = self.kustomizations[chain[i]]
            after = chain[i + 1] if i + 1 < len(chain) else origin
            start = k.dirs.index(after) + 1 if after in k.dirs else 0
            for component in k.dirs[start:]:
                if component in k.components:
                    steps += self._component_steps(component, set(chain))
            steps.append(chain[i])
        return steps

    def _component_steps(self, directory: str, seen: set[str]) -> list[str]:
        """A component and the components it builds on, in the order their transformers run."""
        k = self.kustomizations.get(directory)
        if k is None or directory in seen or len(seen) >= MAX_PATCH_WALK:
            return []
        seen.add(directory)
        out: list[str] = []
        for component in k.components:
            out += self._component_steps(component, seen)
        return [*out, directory]


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
    import subprocess
    import tempfile

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
        self._docs: dict[str, dict[int, Any]] = {}  # rendered file -> its documents
        self._files: dict[str, Any] = {}  # repo file -> parsed, for locating
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
            import tempfile

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
        own origin annotations. That render may list the objects in another order (the root's
        `sortOptions`, e.g. `order: fifo`, is not the wrapper's, which sorts in the legacy
        order), so documents pair up by identity (apiVersion, kind, namespace, name: what
        kustomize's own ResId tells objects apart by, api/resid/resid.go), not by position."""
        if rendered in self._origins:
            return self._origins[rendered]
        result: list[str | None] = []
        root = self.roots.get(rendered)
        if root is not None:
            by_id = self._render_origins(root)
            docs = self._rendered_docs(rendered)
            for index in range(max(docs, default=-1) + 1):
                data = docs.get(index)
                result.append(by_id.get(_identity(data)) if data is not None else None)
        self._origins[rendered] = result
        return result

    def _rendered_docs(self, rendered: str) -> dict[int, Any]:
        """The documents of a rendered stream, by index."""
        if rendered not in self._docs:
            parsed = _parse(self.rendered.get(rendered, b""))
            self._docs[rendered] = {d.index: d.data for d in parsed.docs} if parsed else {}
        return self._docs[rendered]

    def _render_origins(self, root: str) -> dict[tuple, str | None]:
        """The origin of each object of a root's build, by identity (`_identity`)."""
        import tempfile

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
                return {}
            parsed = _parse(out)
            origins: dict[tuple, str | None] = {}
            for doc in parsed.docs if parsed else ():
                key = _identity(doc.data)
                # two objects of one identity kustomize refuses; if it ever allows it, neither
                # is said to come from the other's file
                origins[key] = None if key in origins else self._origin_of(doc.data, wrapper, disk)
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
        thing the build applies to the object that sets the key (a patch, an `images:` entry),
        else the key (or its nearest parent) in the object's own file (or the generator entry
        that made it), else that file's first line; without an origin, the root's
        kustomization file. Never the rendered stream, which is no file of the repo.

        Only the kustomizations on the chain that builds the object are searched (`builds`),
        and of those chains only the ones that give it its rendered namespace: the
        outermost `namespace:` on the chain (a component's for its parent's resources, the
        parent's own over it) wins, as kustomize's NamespaceTransformer runs in each
        kustomization after its patches and an overlay transforms its bases' output."""
        origins = self.origins(rendered)
        origin = origins[doc] if 0 <= doc < len(origins) else None
        root_file = rendered.removesuffix(RENDERED_SUFFIX)
        if origin is None:
            return root_file, 1, 1
        obj = self._rendered_docs(rendered).get(doc)
        root = self.roots.get(rendered)
        builds = (
            self.plan.builds(root, origin) if self.plan is not None and root is not None else []
        )
        generated = posixpath.basename(origin) in KUSTOMIZATION_FILES
        written = None if generated else self._written(origin, kind, obj, builds)
        chosen = [b for b in builds if self._fits(b, obj, written, origin, kind, generated)]
        for steps in chosen or builds[:1]:
            set_by = self._set_by(steps, obj, kind, path, written)
            if set_by is not None:
                return set_by
        steps = (chosen or builds[:1] or [[]])[0]
        names = self._names(steps)
        if generated:
            found = self._generator_entry(origin, kind, name, path, names)
        else:
            found = self._find(origin, kind, name, path, whole=False, names=names, obj=obj)
        if found is None:
            return origin, 1, 1
        return origin, found[0], found[1]

    def _names(self, steps: list[str]) -> tuple[list[str], list[str]]:
        """The namePrefix and nameSuffix values of the kustomizations of one chain."""
        prefixes: list[str] = []
        suffixes: list[str] = []
        for directory in steps:
            k = self.plan.kustomizations.get(directory) if self.plan else None
            if k is not None:
                prefixes += k.prefixes
                suffixes += k.suffixes
        return prefixes, suffixes

    def _written(self, origin: str, kind: str, obj: Any, builds: list[list[str]]) -> Any:
        """The object's document in its own file (the first chain's names decide which)."""
        names = self._names(builds[0]) if builds else ([], [])
        return _pick(self._objects(origin), kind, _name_of(obj), names, whole=False)

    def _fits(
        self, steps: list[str], obj: Any, written: Any, origin: str, kind: str, generated: bool
    ) -> bool:
        """Whether a chain yields this object: its names make the rendered name of the
        written one, and its namespaces the rendered namespace."""
        if not generated:
            names = self._names(steps)
            if _pick(self._objects(origin), kind, _name_of(obj), names, whole=False) is None:
                return False
        rendered_ns = _namespace_of(obj)
        final = _namespace_of(written)
        for directory in steps:
            k = self.plan.kustomizations.get(directory) if self.plan else None
            if k is not None and k.namespace is not None:
                final = k.namespace
        return rendered_ns is None or final is None or final == rendered_ns

    def _set_by(
        self, steps: list[str], obj: Any, kind: str, path: list, written: Any
    ) -> tuple[str, int, int] | None:
        """The last patch or `images:` entry of a chain that sets `path` on the object, as
        (file, line, column). Within one kustomization the patches run before the image
        transformer (kusttarget_configplugin.go configureBuiltinTransformers)."""
        if self.plan is None:
            return None
        found: tuple[str, int, int] | None = None
        namespace = _namespace_of(written)  # as the object stands when each step runs
        names = self._names(steps)
        for directory in steps:
            k = self.plan.kustomizations.get(directory)
            if k is None:
                continue
            for entry in k.entries:
                at = self._patch_sets(entry, obj, kind, path, namespace, names)
                found = at or found
            at = self._image_sets(k.file, obj, path)
            found = at or found
            namespace = k.namespace or namespace
        return found

    def _patch_sets(
        self,
        entry: PatchEntry,
        obj: Any,
        kind: str,
        path: list,
        namespace: str | None,
        names: tuple[list[str], list[str]],
    ) -> tuple[str, int, int] | None:
        """Where one patch sets `path` on the object, if it applies to it and sets it."""
        from gpudrv_check.core.located import LMap, LSeq, locate

        if entry.target is not None and not _selects(entry.target, obj, kind, names):
            return None
        body, where, shift = self._patch_body(entry)
        if body is None:
            return None
        docs = [d.data for d in body.docs]
        if len(docs) == 1 and isinstance(docs[0], LSeq):  # JSON 6902 operations
            if entry.target is None:
                return None
            for op in reversed(docs[0]):
                at = _op_sets(op, path, obj)
                if at is not None:
                    line, column = locate(op, at)
                    return where, *shift(line, column)
            return None
        maps = [d for d in docs if isinstance(d, LMap)]
        if entry.target is not None:
            # a strategic-merge patch with a target applies to every object it selects,
            # whatever its own metadata says (api/filters/patchstrategicmerge)
            candidates = maps if len(maps) == 1 else []
        else:
            candidates = [
                d
                for d in maps
                if d.get("kind") == kind and _made_from(_name_of(d), _name_of(obj), *names)
            ]
            exact = [d for d in candidates if _name_of(d) == _name_of(obj)]
            candidates = exact or candidates
            candidates = [
                d for d in candidates if _namespace_of(d) in (None, namespace, _namespace_of(obj))
            ]
        if len(candidates) != 1:
            return None
        mapped = _translate(obj, path, candidates[0])
        if mapped is None or not _holds(candidates[0], mapped):
            return None
        line, column = locate(candidates[0], mapped)
        return where, *shift(line, column)

    def _patch_body(self, entry: PatchEntry) -> tuple[Any, str, Any]:
        """The parsed patch, the file it is written in, and the map from its (line, column) to
        that file's: the identity for a patch file; for an inline patch, the lines of the
        kustomization's block scalar (`patch: |-`) the text came from."""

        def same(line: int, column: int) -> tuple[int, int]:
            return line, column

        if entry.file is not None:
            return self._parsed(entry.file), entry.file, same
        from gpudrv_check.core.located import LMap, LSeq

        parsed = self._parsed(entry.kustomization)
        data = parsed.docs[0].data if parsed and parsed.docs else None
        items = data.get(entry.field) if isinstance(data, LMap) else None
        item = items[entry.index] if isinstance(items, LSeq) and entry.index < len(items) else None
        if isinstance(item, LMap) and isinstance(item.get("patch"), str):
            text, key_at = item["patch"], item.key_pos("patch")
        elif isinstance(item, str) and isinstance(items, LSeq):
            text, key_at = item, items.item_pos(entry.index)
        else:
            return None, entry.kustomization, same
        lines = self._lines(entry.kustomization)
        first = next((i for i, t in enumerate(text.splitlines()) if t.strip()), None)
        indent = None
        if first is not None and key_at[0] + first + 1 < len(lines):
            written = lines[key_at[0] + first + 1]  # a block scalar starts below its key
            if written.strip() == text.splitlines()[first].strip():
                indent = (
                    len(written)
                    - len(written.lstrip(" "))
                    - (len(text.splitlines()[first]) - len(text.splitlines()[first].lstrip(" ")))
                )

        def inline(line: int, column: int) -> tuple[int, int]:
            if indent is None:  # a quoted or flow scalar: its key is as close as it gets
                return key_at
            return key_at[0] + line, column + indent

        return _parse(text), entry.kustomization, inline

    def _image_sets(self, file: str, obj: Any, path: list) -> tuple[str, int, int] | None:
        """The `images:` entry of a kustomization that set the rendered image at `path` (a
        container's `image`): its name (or newName) is the rendered image's name, and its
        newTag or digest the rendered one (kustomize api/filters/imagetag, image.Split)."""
        from gpudrv_check.core.located import LMap, LSeq

        if len(path) < 3 or path[-1] != "image" or not isinstance(path[-2], int):
            return None
        value = _get(obj, path)
        parsed = self._parsed(file)
        data = parsed.docs[0].data if parsed and parsed.docs else None
        images = data.get("images") if isinstance(data, LMap) else None
        if not isinstance(value, str) or not isinstance(images, LSeq):
            return None
        name, tag, digest = _split_image(value)
        found = None
        for entry in images:
            if not isinstance(entry, LMap):
                continue
            new_name = entry.get("newName") or entry.get("name")
            if new_name != name:
                continue
            for key, wanted in (("digest", digest), ("newTag", tag), ("newName", name)):
                if key in entry and str(entry[key]) == wanted:
                    found = (file, *entry.key_pos(key))
                    break
        return found

    def _generator_entry(
        self, file: str, kind: str, name: str | None, path: list, names: tuple
    ) -> tuple[int, int] | None:
        """Where a generated ConfigMap or Secret is declared: the `configMapGenerator` (or
        `secretGenerator`) entry whose name the rendered one is made from (prefixes,
        suffixes and the content hash kustomize appends unless disableNameSuffixHash:
        api/hasher), at the `literals` or `files` item of the key a finding on `data.KEY`
        is about, else at the entry's `name`."""
        from gpudrv_check.core.located import LMap, LSeq

        field_name = {"ConfigMap": "configMapGenerator", "Secret": "secretGenerator"}.get(kind)
        parsed = self._parsed(file)
        data = parsed.docs[0].data if parsed and parsed.docs else None
        gens = data.get(field_name) if isinstance(data, LMap) and field_name else None
        if not isinstance(gens, LSeq) or not name:
            return None
        unhashed = name[:-11] if len(name) > 11 and name[-11] == "-" else name
        for gen in gens:
            if not isinstance(gen, LMap) or not isinstance(gen.get("name"), str):
                continue
            if not any(_made_from(gen["name"], n, *names) for n in {name, unhashed}):
                continue
            key = path[1] if len(path) >= 2 and path[0] in _DATA_FIELDS else None
            for part in ("literals", "files"):
                items = gen.get(part)
                if not isinstance(items, LSeq) or key is None:
                    continue
                for i, item in enumerate(items):
                    if isinstance(item, str) and _entry_key(item, part) == key:
                        return items.item_pos(i)
            return gen.key_pos("name")
        return None

    def _parsed(self, rel: str) -> Any:
        """A repo file parsed (once; None when unreadable), read within the read limit."""
        if rel not in self._files:
            try:
                self._files[rel] = _parse(self.inner.read(rel))
            except (OSError, ValueError):
                self._files[rel] = None
        return self._files[rel]

    def _lines(self, rel: str) -> list[str]:
        try:
            return ["", *self.inner.read(rel).decode("utf-8", "replace").splitlines()]
        except (OSError, ValueError):
            return []

    def _objects(self, rel: str) -> list[Any]:
        """The object documents of a file, the items of a `kind: List` in their place (as
        read/manifests.py reads them: an item without apiVersion/kind of a typed list is of
        its type)."""
        from gpudrv_check.core.located import LMap, LSeq

        parsed = self._parsed(rel)
        out: list[Any] = []
        for doc in parsed.docs if parsed else ():
            data = doc.data
            if not isinstance(data, LMap):
                continue
            kind, items = data.get("kind"), data.get("items")
            if isinstance(kind, str) and kind.endswith("List") and isinstance(items, LSeq):
                for item in items:
                    if isinstance(item, LMap):
                        if "kind" not in item and kind != "List":
                            item = _typed(item, kind[: -len("List")])
                        out.append(item)
                continue
            out.append(data)
        return out

    def _find(
        self,
        rel: str,
        kind: str,
        name: str | None,
        path: list,
        whole: bool,
        names: tuple[list[str], list[str]] = ([], []),
        obj: Any = None,
    ) -> tuple[int, int] | None:
        """(line, column) of `path` in the document of `rel` that is the object: same kind,
        and a name the rendered one was made from (kustomize adds prefixes and suffixes);
        `whole`: only when the document holds the whole path (a patch that sets it). List
        items with a merge key are matched by it in the rendered object `obj` (`_translate`)."""
        from gpudrv_check.core.located import locate

        data = _pick(self._objects(rel), kind, name, names, whole)
        if data is None:
            return None
        mapped = _translate(obj, path, data) if obj is not None else list(path)
        if mapped is None or (whole and not _holds(data, mapped)):
            return None
        line, column = locate(data, mapped)
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
        if isinstance(node, dict) and isinstance(step, str) and step in node:
            node = node[step]
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            node = node[step]
        else:
            return False
    return True


def _parse(raw: bytes | str) -> Any:
    """Parsed YAML documents of some text, or None when it cannot be read."""
    from gpudrv_check.read.text import decode_text
    from gpudrv_check.read.yaml_docs import parse_text

    if isinstance(raw, bytes):
        text, problem = decode_text(raw)
        if problem is not None or text is None:
            return None
        raw = text
    try:
        return parse_text(raw)
    except (ValueError, RecursionError):
        return None


def _identity(data: Any) -> tuple:
    """(apiVersion, kind, namespace, name) of a document, None for what it lacks."""
    if not isinstance(data, dict):
        return (None, None, None, None)
    api, kind = data.get("apiVersion"), data.get("kind")
    return (
        api if isinstance(api, str) else None,
        kind if isinstance(kind, str) else None,
        _namespace_of(data),
        _name_of(data),
    )


def _namespace_of(data: Any) -> str | None:
    meta = data.get("metadata") if isinstance(data, dict) else None
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    return namespace if isinstance(namespace, str) and namespace else None


def _pick(
    docs: list[Any], kind: str, name: str | None, names: tuple[list[str], list[str]], whole: bool
) -> Any:
    """The document that is the object: same kind and a name the rendered one is made from
    (the exact name first), else the one object of its kind the file declares (not for a
    patch, `whole`)."""
    docs = [d for d in docs if isinstance(d, dict) and d.get("kind") == kind]
    named = [d for d in docs if _made_from(_name_of(d), name, *names)]
    if len(named) != 1:
        exact = [d for d in named if _name_of(d) == name]
        named = exact or (docs if len(docs) == 1 and not whole else [])
    return named[0] if len(named) == 1 else None


def _typed(item: Any, kind: str) -> Any:
    """An item of a typed list (`NodeList`) written without a kind, with the list's kind."""
    from gpudrv_check.core.located import LMap

    copy = LMap(item.pos)
    copy.update(item)
    copy.kpos = dict(item.kpos)
    copy["kind"] = kind
    return copy


#: the merge key of the lists a strategic-merge patch merges item by item, by field name
#: (the `patchMergeKey` of k8s.io/api core/v1 types.go, which kustomize's strategic merge
#: reads from its OpenAPI schema, kyaml/openapi `x-kubernetes-patch-merge-key`); `ports`
#: is keyed by containerPort in a container and by port in a Service
_MERGE_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "ports": ("containerPort", "port"),
    "imagePullSecrets": ("name",),
    "hostAliases": ("ip",),
    "resourceClaims": ("name",),
    "topologySpreadConstraints": ("topologyKey",),
}
_ABSENT = -1  # a list index no document holds: the item is not in it


def _translate(obj: Any, path: list, doc: Any) -> list | None:
    """`path`, a key path into the rendered object `obj`, as a path into `doc` (a patch or
    the object's own file): an item of a list with a merge key (a container, an env var) is
    the item of `doc` with the same key value, wherever it stands, never the item at the same
    index (a patch that names container `b` first does not set container 0 of a base that
    lists `a` first). An item `doc` does not hold ends the path at `_ABSENT`: `_holds` is
    false for it, and `locate` stops at the list."""
    out: list = []
    rendered, mine = obj, doc
    for i, step in enumerate(path):
        parent = path[i - 1] if i else None
        keys = (
            _MERGE_KEYS.get(parent) if isinstance(parent, str) and isinstance(step, int) else None
        )
        if keys and isinstance(rendered, list) and 0 <= step < len(rendered):
            item = rendered[step]
            key = next((k for k in keys if isinstance(item, dict) and k in item), None)
            if key is not None:
                matches = [
                    j
                    for j, x in enumerate(mine if isinstance(mine, list) else ())
                    if isinstance(x, dict) and x.get(key) == item[key]
                ]
                if len(matches) != 1:
                    return [*out, _ABSENT]
                step_in_doc = matches[0]
                out.append(step_in_doc)
                rendered, mine = item, mine[step_in_doc]
                continue
        out.append(step)
        rendered = _step(rendered, step)
        mine = _step(mine, step)
    return out


def _step(node: Any, step: Any) -> Any:
    if isinstance(node, dict) and isinstance(step, str):
        return node.get(step)
    if isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
        return node[step]
    return None


def _get(node: Any, path: list) -> Any:
    for step in path:
        node = _step(node, step)
    return node


def _op_sets(op: Any, path: list, obj: Any = None) -> list | None:
    """Where in a JSON 6902 operation the key at `path` is set, when the operation adds,
    replaces, copies or moves that key or a parent of it (RFC 6901 pointers, `~1` for `/` and
    `~0` for `~`, `-` for the end of a list): the key's place in its `value`, else `value`,
    else `path` (kustomize applies them with evanphx/json-patch: api/filters/patchjson6902).
    Where the list ended then is not known here, so an item appended with `-` is the
    rendered item at `path` only when every scalar its `value` sets is the rendered one."""
    from gpudrv_check.core.located import LMap

    if not isinstance(op, LMap) or op.get("op") not in ("add", "replace", "copy", "move"):
        return None
    pointer = op.get("path")
    if not isinstance(pointer, str) or not pointer.startswith("/"):
        return None
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]
    if len(tokens) > len(path):
        return None
    for i, (token, step) in enumerate(zip(tokens, path[: len(tokens)], strict=True)):
        if isinstance(step, int) and token == "-":
            if i != len(tokens) - 1 or not _agrees(op.get("value"), _get(obj, path[: i + 1])):
                return None
            continue
        if isinstance(step, int) and token != str(step):
            return None
        if isinstance(step, str) and token != step:
            return None
    rest = list(path[len(tokens) :])
    if "value" not in op:
        return ["path"] if op.get("op") in ("copy", "move") else None
    if not rest:
        return ["value"]
    return ["value", *rest] if _holds(op["value"], rest) else None


def _agrees(value: Any, rendered: Any) -> bool:
    """Whether an appended `value` can be the rendered item: its scalars are the rendered
    ones (a mapping's scalar fields, or the scalar itself)."""
    if isinstance(value, dict):
        return isinstance(rendered, dict) and all(
            rendered.get(k) == v for k, v in value.items() if not isinstance(v, (dict, list))
        )
    return value == rendered if not isinstance(value, list) else isinstance(rendered, list)


def _selects(target: dict, obj: Any, kind: str, names: tuple[list[str], list[str]]) -> bool:
    """Whether a patch's `target` selects the rendered object: kind, group and version as
    written, name and namespace as anchored regular expressions (`^(?:…)$`), labels and
    annotations by a Kubernetes label selector (kustomize api/resource/resource.go
    OrgIdMatches / CurIdMatches via api/types/selector.go SelectorRegex); the name is
    matched as it stood before the build's namePrefix/nameSuffix values were added."""
    api = obj.get("apiVersion") if isinstance(obj, dict) else None
    group, _, version = api.rpartition("/") if isinstance(api, str) else ("", "", "")
    checks = (("kind", kind), ("group", group), ("version", version))
    for key, value in checks:
        wanted = target.get(key)
        if isinstance(wanted, str) and wanted and wanted != value:
            return False
    name = _name_of(obj)
    wanted = target.get("name")
    if isinstance(wanted, str) and wanted:
        if not name or not any(_regex_match(wanted, n) for n in _unmade(name, *names)):
            return False
    wanted = target.get("namespace")
    if isinstance(wanted, str) and wanted:
        if not _regex_match(wanted, _namespace_of(obj) or ""):
            return False
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    for key, field_name in (("labelSelector", "labels"), ("annotationSelector", "annotations")):
        wanted = target.get(key)
        if isinstance(wanted, str) and wanted.strip():
            values = meta.get(field_name) if isinstance(meta, dict) else None
            if not _label_selects(wanted, values if isinstance(values, dict) else {}):
                return False
    return True


def _regex_match(pattern: str, value: str) -> bool:
    """An anchored match; a pattern that could backtrack for ever, or does not compile, is
    compared as text (core/regex_guard.py)."""
    import re

    from gpudrv_check.core.regex_guard import pattern_problem

    if pattern == value:
        return True
    if len(pattern) > 1000 or pattern_problem(pattern) is not None:
        return False
    try:
        return re.fullmatch(f"(?:{pattern})", value) is not None
    except (re.error, RecursionError, OverflowError):
        return False


def _label_selects(selector: str, labels: dict) -> bool:
    """A Kubernetes label selector (`a=b,c!=d,e in (f,g),!h,i`) against labels; one it
    cannot read selects nothing (k8s.io/apimachinery/pkg/labels Parse refuses it)."""
    import re

    terms: list[str] = []
    depth, current = 0, ""
    for char in selector[:4000]:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    for term in (t.strip() for t in terms):
        got = labels.get(term.lstrip("!").strip())
        match = re.fullmatch(r"([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)", term)
        if match:
            options = {v.strip() for v in match.group(3).split(",")}
            value = labels.get(match.group(1))
            inside = isinstance(value, str) and value in options
            if inside != (match.group(2) == "in"):
                return False
            continue
        match = re.fullmatch(r"([^\s!=]+)\s*(==|=|!=)\s*([^\s,]*)", term)
        if match:
            value = labels.get(match.group(1))
            equal = value is not None and str(value) == match.group(3)
            if equal != (match.group(2) != "!="):
                return False
            continue
        if re.fullmatch(r"![^\s!=(),]+", term):
            if got is not None:
                return False
            continue
        if re.fullmatch(r"[^\s!=(),]+", term):
            if got is None:
                return False
            continue
        return False
    return True


def _split_image(image: str) -> tuple[str, str, str]:
    """(name, tag, digest) of an image reference, as kustomize splits it (api/image
    image.go Split: the digest after `@`, the tag after the last `:` past the last `/`)."""
    name, _, digest = image.partition("@")
    tag = ""
    colon = name.rfind(":")
    if colon > name.rfind("/"):
        name, tag = name[:colon], name[colon + 1 :]
    return name, tag, digest


_DATA_FIELDS = ("data", "binaryData", "stringData")


def _entry_key(item: str, part: str) -> str:
    """The data key of a generator's `literals` (`KEY=VALUE`) or `files` (`KEY=path`, else
    the file's base name) item (kustomize api/kv/kv.go)."""
    key, sep, rest = item.partition("=")
    if part == "literals" or sep:
        return key.strip()
    return posixpath.basename(item.strip())


def _unmade(rendered: str, prefixes: list[str], suffixes: list[str]) -> list[str]:
    """Every name `rendered` may have had before some of the build's namePrefix and
    nameSuffix values were added, itself included."""
    out: list[str] = []
    pending = [rendered]
    while pending and len(out) < MAX_PATCH_WALK:
        current = pending.pop()
        if current in out:
            continue
        out.append(current)
        pending += [current[len(p) :] for p in prefixes if current.startswith(p) and current != p]
        pending += [current[: -len(x)] for x in suffixes if current.endswith(x) and current != x]
    return out


def adds_metadata(source: Any, file: str, key: str, value: str) -> bool:
    """Whether the kustomization `file` adds the label or annotation `key: value` to what it
    builds (`commonLabels`, `commonAnnotations`, a `labels` entry's `pairs`); False when it
    cannot be read or says nothing of it."""
    from gpudrv_check.core.located import LMap, LSeq
    from gpudrv_check.read.text import decode_text
    from gpudrv_check.read.yaml_docs import parse_text

    try:
        raw = source.read(file)
    except (OSError, AttributeError):
        return False
    text, problem = decode_text(raw)
    if problem is not None or not text or key not in text:
        return False
    parsed = parse_text(text)
    data = parsed.docs[0].data if parsed.docs else None
    if not isinstance(data, LMap):
        return False
    maps = [data.get("commonLabels"), data.get("commonAnnotations")]
    labels = data.get("labels")
    if isinstance(labels, LSeq):
        maps.extend(entry.get("pairs") for entry in labels if isinstance(entry, LMap))
    return any(isinstance(m, LMap) and m.get(key) == value for m in maps)
