"""Which files of the repo belong to which cluster (docs/clusters.md).

A GitOps repo often holds several clusters; each is checked against its own nodes, operator
configuration and (optionally) matrix, and one cluster's objects never meet another's. A
cluster is a set of repo files, found in this order:

1. declared in the config: `clusters: {NAME: {paths: [...], inventory: [...], matrix: ...,
   operator: {...}}}`: every file below each path (when present, nothing is discovered);
2. Flux: each folder `clusters/<name>/` that holds a Flux `Kustomization`
   (kustomize.toolkit.fluxcd.io): the folder, and what its Kustomizations' `spec.path` apply;
3. Argo CD: the `Application`s of the repo, grouped by destination (`spec.destination.name`,
   else `server`): what their `spec.source.path` / `spec.sources[].path` apply; an
   `ApplicationSet` with a `list` generator is expanded;
4. under `--kustomize`, the rendered overlay roots `.../overlays/<name>/` (the Kustomize
   convention for one overlay per environment), one cluster each, named `<name>`.

What a path applies follows the tool that applies it: a folder with a `kustomization.yaml`
is its `resources`/`bases`/`components` (followed recursively, as `kustomize build` does); a
folder without one is every manifest below it (Flux generates a kustomization of all of them;
Argo CD reads a plain directory, below it only with `directory.recurse`). Files shared by two
clusters (a common base) belong to both. With fewer than two clusters, nothing changes: the
repo is one cluster.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import field
from typing import Any

from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.core.located import LMap, LSeq
from gpudrv_check.core.manifest import Manifest
from gpudrv_check.core.records import record
from gpudrv_check.read.kustomization import RENDERED_SUFFIX

FLUX_GROUP = "kustomize.toolkit.fluxcd.io/"
ARGO_GROUP = "argoproj.io/"
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
KUSTOMIZE_LISTS = ("resources", "bases", "components")
CLUSTERS_DIR = "clusters"


@record
class Cluster:
    name: str
    files: set[str] = field(default_factory=set)  # repo-relative paths of its manifests
    how: str = ""  # how it was found, for -v and JSON
    inventory: list[str] = field(default_factory=list)  # config: extra inventory files
    matrix: str | None = None  # config: its own support matrix
    operator: dict[str, Any] | None = None  # config: its own operator settings


class _Repo:
    """The repo's files and the parsed documents the discovery reads."""

    def __init__(
        self,
        files: Iterable[str],
        manifests: list[Manifest],
        kustomizations: dict[str, list[Any]] | None = None,
    ) -> None:
        self.files = sorted(set(files))
        self.by_file: dict[str, list[Manifest]] = {}
        for m in manifests:
            self.by_file.setdefault(m.file, []).append(m)
        # the documents of each kustomization file, by path
        self.kustomizations = kustomizations or {}

    def below(self, folder: str, recurse: bool = True) -> set[str]:
        prefix = folder.rstrip("/") + "/" if folder not in ("", ".") else ""
        out = set()
        for rel in self.files:
            if rel.startswith(prefix) and (recurse or "/" not in rel[len(prefix) :]):
                out.add(rel)
        return out

    def kustomization(self, folder: str) -> str | None:
        for name in KUSTOMIZATION_FILES:
            # under --kustomize a root is its rendered stream (read/kustomize.py)
            rel = posixpath.join(folder, name) if folder not in ("", ".") else name
            if rel + RENDERED_SUFFIX in self.files:
                return rel + RENDERED_SUFFIX
        for name in KUSTOMIZATION_FILES:
            rel = posixpath.join(folder, name) if folder not in ("", ".") else name
            if rel in self.kustomizations or rel in self.files:
                return rel
        return None

    def is_dir(self, folder: str) -> bool:
        if folder in ("", "."):  # the repo root (Argo CD `path: .`), a folder of every file
            return bool(self.files)
        prefix = folder.rstrip("/") + "/"
        return any(rel.startswith(prefix) for rel in self.files)


def _clean(path: str, base: str = "") -> str | None:
    """`path` (relative to `base`) as a repo path; None when remote or leaving the repo."""
    path = path.strip()
    if not path or "://" in path or path.startswith(("git@", "github.com/")):
        return None
    joined = posixpath.normpath(posixpath.join(base, path.lstrip("/")))
    if joined == ".." or joined.startswith("../"):
        return None
    return "" if joined == "." else joined


def clean_path(path: str) -> str | None:
    """A `clusters.NAME.paths` entry as the discovery reads it ("" for the root), or None
    when it leaves the repo or is remote (the config is validated with it)."""
    return _clean(path)


def applied(
    repo: _Repo, start: str, recurse: bool = True, seen: set[str] | None = None
) -> set[str]:
    """The files a folder (or file) applies, as kustomize / Flux / Argo CD read it."""
    seen = set() if seen is None else seen
    if start in seen:
        return set()
    seen.add(start)
    if start in repo.files and not repo.is_dir(start):
        return {start}
    kustomization = repo.kustomization(start)
    if kustomization is None:
        return repo.below(start, recurse)
    out = {kustomization}
    if kustomization.endswith(RENDERED_SUFFIX):
        return out  # rendered: what it consumed is in the stream
    for doc in repo.kustomizations.get(kustomization, []):
        for key in KUSTOMIZE_LISTS:
            entries = doc.get(key) if isinstance(doc, LMap) else None
            for entry in entries if isinstance(entries, LSeq) else ():
                if isinstance(entry, str) and (target := _clean(entry, start)) is not None:
                    out |= applied(repo, target, True, seen)
    return out


def _flux_clusters(repo: _Repo) -> list[Cluster]:
    names = sorted(
        {
            rel.split("/")[1]
            for rel in repo.files
            if rel.startswith(CLUSTERS_DIR + "/") and rel.count("/") >= 2
        }
    )
    clusters = []
    for name in names:
        root = f"{CLUSTERS_DIR}/{name}"
        files = repo.below(root)
        todo = sorted(files)
        done: set[str] = set()
        found_flux = False
        while todo:
            rel = todo.pop()
            if rel in done:
                continue
            done.add(rel)
            for m in repo.by_file.get(rel, []):
                if m.kind != "Kustomization" or not m.api_version.startswith(FLUX_GROUP):
                    continue
                found_flux = True
                path = m.get("spec", "path")
                target = _clean(path) if isinstance(path, str) else None
                if target is None:
                    continue
                more = applied(repo, target)
                todo.extend(sorted(more - files))
                files |= more
        if found_flux:
            how = f"Flux: {root}/ and the paths its Kustomizations apply"
            clusters.append(Cluster(name, files, how))
    return clusters


_TEMPLATE = lazy_compile(r"\{\{\s*\.?([A-Za-z0-9_.-]+)\s*\}\}")


def _expand(value: Any, element: dict[str, str]) -> Any:
    """An ApplicationSet template value with `{{key}}` / `{{.key}}` filled in from `element`."""
    if isinstance(value, str):
        return _TEMPLATE.sub(lambda m: element.get(m.group(1), m.group(0)), value)
    if isinstance(value, dict):
        return {k: _expand(v, element) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, element) for v in value]
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _applications(repo: _Repo) -> list[tuple[str, dict[str, Any]]]:
    """(file, Application spec) for each Application and each expanded ApplicationSet entry."""
    out: list[tuple[str, dict[str, Any]]] = []
    for rel in repo.files:
        for m in repo.by_file.get(rel, []):
            if not m.api_version.startswith(ARGO_GROUP):
                continue
            spec = _plain(m.get("spec"))
            if not isinstance(spec, dict):
                continue
            if m.kind == "Application":
                out.append((rel, spec))
            elif m.kind == "ApplicationSet":
                template = spec.get("template")
                # any shape may be written: what is not a list generator's elements is not read
                for generator in _list(spec.get("generators")):
                    elements = _list(_dict(_dict(generator).get("list")).get("elements"))
                    for element in elements:
                        if isinstance(element, dict) and isinstance(template, dict):
                            values = {str(k): str(v) for k, v in element.items()}
                            expanded = _expand(template.get("spec"), values)
                            if isinstance(expanded, dict):
                                out.append((rel, expanded))
    return out


#: the cluster Argo CD runs in: its address (argo-cd common/common.go
#: KubernetesInternalAPIServerAddr) and the name Argo CD gives it (util/db/cluster.go, the
#: local cluster "in-cluster"); a destination by either is the same cluster
IN_CLUSTER_SERVER = "https://kubernetes.default.svc"
IN_CLUSTER_NAME = "in-cluster"


def _destination(destination: Any) -> str | None:
    """The cluster an Application deploys to: `destination.name`, else `server`."""
    if not isinstance(destination, dict):
        return None
    name = destination.get("name") or destination.get("server")
    if not isinstance(name, str) or not name:
        return None
    return IN_CLUSTER_NAME if name.rstrip("/") == IN_CLUSTER_SERVER else name


def _argo_clusters(repo: _Repo) -> list[Cluster]:
    by_name: dict[str, Cluster] = {}
    for rel, spec in _applications(repo):
        name = _destination(spec.get("destination"))
        if name is None:
            continue
        sources = [spec["source"]] if isinstance(spec.get("source"), dict) else []
        sources += [s for s in _list(spec.get("sources")) if isinstance(s, dict)]
        cluster = by_name.setdefault(
            name, Cluster(name, set(), "Argo CD: the paths of the Applications deployed to it")
        )
        cluster.files.add(rel)
        for source in sources:
            path = source.get("path")
            target = _clean(path) if isinstance(path, str) else None
            if target is None or not (repo.is_dir(target) or target in repo.files):
                continue
            recurse = _dict(source.get("directory")).get("recurse") is True
            cluster.files |= applied(repo, target, recurse)
    return [by_name[n] for n in sorted(by_name)]


def _overlay_clusters(repo: _Repo) -> list[Cluster]:
    """Under --kustomize, the rendered roots `.../overlays/<name>/`: one cluster each, when
    they are all the repo applies (a root or a manifest elsewhere: the overlays are not the
    clusters of the repo, only environments of one of its apps)."""
    clusters = []
    for rel in repo.files:
        in_overlay = posixpath.basename(posixpath.dirname(posixpath.dirname(rel))) == "overlays"
        if repo.by_file.get(rel) and not (rel.endswith(RENDERED_SUFFIX) and in_overlay):
            return []
    for rel in repo.files:
        if not rel.endswith(RENDERED_SUFFIX):
            continue
        folder = posixpath.dirname(rel)
        parent, name = posixpath.split(folder)
        if posixpath.basename(parent) == "overlays" and name:
            how = f"Kustomize overlay root {folder}/ (rendered)"
            clusters.append(Cluster(name, {rel}, how))
    names = [c.name for c in clusters]
    return [] if len(set(names)) != len(names) else sorted(clusters, key=lambda c: c.name)


def discover(
    declared: dict[str, Any] | None,
    files: Iterable[str],
    manifests: list[Manifest],
    kustomizations: dict[str, list[Any]] | None = None,
) -> list[Cluster]:
    """The clusters of the repo, sorted by name; [] when the repo is one cluster.

    `kustomizations`: the parsed documents of the repo's kustomization files, by path.
    """
    repo = _Repo(files, manifests, kustomizations)
    if declared:
        clusters = []
        for name in sorted(declared):
            settings = declared[name]
            found: set[str] = set()
            for path in settings.paths:
                target = _clean(path)
                if target is not None:
                    found |= {target} & set(repo.files) | repo.below(target)
            clusters.append(
                Cluster(
                    name,
                    found,
                    "config `clusters:`",
                    list(settings.inventory),
                    settings.matrix,
                    settings.operator,
                )
            )
        return clusters
    for finder in (_flux_clusters, _argo_clusters, _overlay_clusters):
        clusters = finder(repo)
        if len(clusters) > 1:
            return clusters
    return []
