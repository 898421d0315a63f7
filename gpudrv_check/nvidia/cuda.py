"""CUDA compatibility as data: which CUDA an image carries and which driver it needs.

Compatibility runs one way: an old CUDA runtime works on a newer driver, a newer runtime does
not work on an older one. So a workload image pins a *minimum* driver, and a pod that lands on
a node with an older driver fails at run time unless a node-affinity rule on the driver label
keeps it off. Which CUDA an image tag carries is data, not code: it lives in
``policies/cuda.yaml`` (format documented there) and users extend it from their config.

This module never reads files: callers load the YAML and pass the parsed mapping to
``parse_cuda_table``. Unknown images give ``None``; nothing is guessed and nothing raises.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import field
from enum import Enum

from gpudrv_check.core.lazy_re import lazy_compile
from gpudrv_check.core.records import record
from gpudrv_check.k8s.numbers import parse_digits
from gpudrv_check.nvidia.driver_image import parse_image_reference

_VERSION_RE = re.compile(r"^\d+(?:\.\d+){0,3}$")


class DriverVerdict(str, Enum):
    """Outcome of comparing a node's driver with a minimum."""

    OK = "ok"
    TOO_OLD = "too-old"
    AMBIGUOUS = "ambiguous"  # the node is known only by branch, the same branch as the minimum
    UNKNOWN = "unknown"  # a version could not be parsed


@record(frozen=True)
class DriverCheck:
    """A ``DriverVerdict`` with a one-line reason fit for a finding."""

    verdict: DriverVerdict
    reason: str


@record(frozen=True)
class ImageRule:
    """How to tell the CUDA version of images from one repository.

    The repository is matched by ``repository`` (exact, after Docker Hub normalisation) or by
    ``repository_regex`` (full match, for mirrors and for rules on any repository). The CUDA
    version comes from ``tags`` (exact tag -> version), else from ``tag_regex`` (searched in
    the tag): its group ``cuda`` (or the first group) is the version; groups ``major`` and
    ``minor`` make ``major.minor`` (``cu128``: 12.8); a group ``release`` is looked up in the
    ``release_table`` (NGC ``24.07`` -> 12.5.1); ``cuda`` set on the rule is the version of every
    tag the regex matches (a range of releases).
    """

    id: str
    repository: str | None = None
    repository_regex: re.Pattern[str] | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    tag_regex: re.Pattern[str] | None = None
    source: str = ""
    cuda: str | None = None
    release_table: str | None = None

    def matches(self, name: str) -> bool:
        if self.repository is not None and name != self.repository:
            return False
        return self.repository_regex is None or bool(self.repository_regex.fullmatch(name))

    def cuda_for(
        self, name: str, tag: str, releases: Mapping[str, Mapping[str, str]] | None = None
    ) -> str | None:
        """The CUDA version this rule assigns to ``name:tag``, or ``None``."""
        if not self.matches(name):
            return None
        if tag in self.tags:
            return self.tags[tag]
        if self.tag_regex is None:
            return None
        match = self.tag_regex.search(tag)
        if match is None:
            return None
        version = self.cuda or _version_from(match, self.release_table, releases or {})
        return version if isinstance(version, str) and _VERSION_RE.match(version) else None


def _version_from(
    match: re.Match[str], table: str | None, releases: Mapping[str, Mapping[str, str]]
) -> str | None:
    groups = match.groupdict()
    if "release" in groups:
        return releases.get(table or "", {}).get(groups["release"] or "")
    if "major" in groups and "minor" in groups:
        return f"{groups['major']}.{groups['minor']}"
    if "cuda" in groups:
        return groups["cuda"]
    return match.group(1) if match.groups() else None


@record(frozen=True)
class CudaTable:
    """The parsed CUDA table.

    ``min_driver`` maps a CUDA version (``12.4`` for the GA release, ``12.4.1`` for an update)
    to the minimum Linux driver for full compatibility. ``minor_version_compat`` maps a CUDA
    major to the minimum driver branch that runs any of its minor releases with feature limits.
    ``images`` are tried in order; the first rule that matches wins.
    """

    min_driver: Mapping[str, str] = field(default_factory=dict)
    minor_version_compat: Mapping[str, str] = field(default_factory=dict)
    images: tuple[ImageRule, ...] = ()
    #: release tables: name -> release (a tag part such as ``24.07``) -> CUDA version
    releases: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@record(frozen=True)
class DriverRequirement:
    """What an image needs from a node's driver."""

    image: str
    cuda_version: str
    rule_id: str
    min_driver: str | None  # full compatibility; None when the CUDA release is not in the table
    compat_branch: str | None  # minor version compatibility (feature limits)


def _version(value: object) -> tuple[int, ...] | None:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not _VERSION_RE.match(value.strip()):
        return None
    parts = tuple(parse_digits(part) for part in value.strip().split("."))
    return None if None in parts else parts  # type: ignore[return-value]


def _key(value: object) -> str | None:
    """A version key as text; YAML floats are refused because 12.10 would read as 12.1."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and _VERSION_RE.match(value.strip()):
        return value.strip()
    return None


def _compile(
    pattern: object, where: str, problems: list[str], guarded: bool = True
) -> re.Pattern[str] | None:
    if not isinstance(pattern, str):
        problems.append(f"{where}: expected a regular expression string")
        return None
    if not guarded:
        # the package's own table: compiled when a rule is first tried (most images are
        # looked up by an exact repository, whose rule's tag expression is then never used)
        return lazy_compile(pattern)
    from gpudrv_check.core.regex_guard import pattern_problem

    # run against image tags from the repo: refused when it can backtrack without bound
    problem = pattern_problem(pattern)
    if problem is not None:
        problems.append(f"{where}: {problem}")
        return None
    return re.compile(pattern)


def _parse_versions(raw: object, name: str, problems: list[str]) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        problems.append(f"{name}: expected a mapping")
        return {}
    parsed = {}
    for key, value in raw.items():
        k, v = _key(key), _key(value)
        if k is None or v is None:
            problems.append(f"{name}.{key}: expected quoted versions, got {key!r}: {value!r}")
            continue
        parsed[k] = v
    return parsed


def _parse_rule(
    raw: object, index: int, problems: list[str], guarded: bool = True
) -> ImageRule | None:
    where = f"images[{index}]"
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: expected a mapping")
        return None
    raw_id = raw.get("id")
    rule_id = raw_id if isinstance(raw_id, str) else where
    repository = raw.get("repository")
    name = None
    if repository is not None:
        parsed = parse_image_reference(repository)
        if parsed is None or parsed.tag or parsed.digest:
            problems.append(f"{where}: invalid repository {repository!r}")
            return None
        name = parsed.name
    repo_regex = None
    if raw.get("repository_regex") is not None:
        repo_regex = _compile(
            raw.get("repository_regex"), f"{where}.repository_regex", problems, guarded
        )
        if repo_regex is None:
            return None
    if name is None and repo_regex is None:
        problems.append(f"{where}: needs repository or repository_regex")
        return None
    tags: dict[str, str] = {}
    raw_tags = raw.get("tags")
    if raw_tags is not None and not isinstance(raw_tags, Mapping):
        problems.append(f"{where}.tags: expected a mapping")
    elif raw_tags is not None:
        for tag, version in raw_tags.items():
            cuda = _key(version)
            if not isinstance(tag, str) or cuda is None:
                problems.append(f"{where}.tags.{tag}: expected 'tag': 'cuda version'")
                continue
            tags[tag] = cuda
    tag_regex = None
    if raw.get("tag_regex") is not None:
        tag_regex = _compile(raw.get("tag_regex"), f"{where}.tag_regex", problems, guarded)
        if tag_regex is None:
            return None
    if not tags and tag_regex is None:
        problems.append(f"{where}: needs tags or tag_regex")
        return None
    raw_source = raw.get("source")
    source = raw_source if isinstance(raw_source, str) else ""
    cuda = _key(raw.get("cuda")) if raw.get("cuda") is not None else None
    if raw.get("cuda") is not None and cuda is None:
        problems.append(f"{where}.cuda: expected a quoted CUDA version")
        return None
    table = raw.get("release_table")
    if table is not None and not isinstance(table, str):
        problems.append(f"{where}.release_table: expected the name of a `releases:` table")
        return None
    return ImageRule(rule_id, name, repo_regex, tags, tag_regex, source, cuda, table)


def parse_cuda_table(
    data: object, known_releases: Iterable[str] = (), *, guarded: bool = True
) -> tuple[CudaTable, list[str]]:
    """Build a ``CudaTable`` from an already-loaded mapping (the YAML in ``policies/cuda.yaml``).

    Returns the table and a list of problems; malformed entries are skipped, never fatal.
    ``known_releases``: release tables a rule may name besides the data's own (the base table's,
    for a user extension). ``guarded``: each regular expression is checked first for unbounded
    backtracking (core/regex_guard.py) and compiled; the built-in table's are checked and
    compiled by a test instead (half of building it: tests/nvidia/test_cuda.py), and compiled
    when first used.
    """
    problems: list[str] = []
    if not isinstance(data, Mapping):
        return CudaTable(), ["CUDA table: expected a mapping"]
    min_driver = _parse_versions(data.get("min_driver"), "min_driver", problems)
    compat = _parse_versions(data.get("minor_version_compat"), "minor_version_compat", problems)
    releases = _parse_releases(data.get("releases"), problems)
    raw_images = data.get("images")
    rules: list[ImageRule] = []
    if raw_images is not None and not isinstance(raw_images, list):
        problems.append("images: expected a list")
    elif raw_images:
        for index, raw in enumerate(raw_images):
            rule = _parse_rule(raw, index, problems, guarded)
            if rule is not None:
                rules.append(rule)
    for rule in rules:
        names = {*releases, *known_releases}
        if rule.release_table is not None and rule.release_table not in names:
            problems.append(f"{rule.id}: release_table {rule.release_table!r} is not in releases")
    return CudaTable(min_driver, compat, tuple(rules), releases), problems


def _parse_releases(raw: object, problems: list[str]) -> dict[str, dict[str, str]]:
    """``releases: {ngc: {"24.07": "12.5.1"}}``: release names are text, versions quoted."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        problems.append("releases: expected a mapping of release tables")
        return {}
    out: dict[str, dict[str, str]] = {}
    for name, table in raw.items():
        if not isinstance(table, Mapping):
            problems.append(f"releases.{name}: expected a mapping 'release': 'cuda version'")
            continue
        rows = {}
        for release, version in table.items():
            cuda = _key(version)
            if not isinstance(release, str) or cuda is None:
                problems.append(f"releases.{name}.{release}: expected 'release': 'cuda version'")
                continue
            rows[release] = cuda
        out[str(name)] = rows
    return out


def merge_tables(base: CudaTable, user_extension: object) -> CudaTable:
    """``base`` extended by a user table (a ``CudaTable`` or a raw mapping in the same format).

    User ``min_driver`` and ``minor_version_compat`` rows override base rows; user image rules
    are tried before the base rules, so a user can re-map an image. Malformed user entries are
    skipped (parse them with ``parse_cuda_table`` first to report them).
    """
    if not isinstance(base, CudaTable):
        base = CudaTable()
    if isinstance(user_extension, CudaTable):
        extra = user_extension
    else:
        extra, _ = parse_cuda_table(user_extension)
    releases = {name: dict(rows) for name, rows in base.releases.items()}
    for name, rows in extra.releases.items():
        releases[name] = {**releases.get(name, {}), **rows}
    return CudaTable(
        {**base.min_driver, **extra.min_driver},
        {**base.minor_version_compat, **extra.minor_version_compat},
        extra.images + base.images,
        releases,
    )


def cuda_version_for_image(table: CudaTable, image_ref: object) -> tuple[str, ImageRule] | None:
    """The CUDA version an image carries and the rule that says so, or ``None``.

    The reference is normalised first (``nvidia/cuda`` is ``docker.io/nvidia/cuda``,
    ``ubuntu`` is ``docker.io/library/ubuntu``). A digest next to a tag is ignored; a reference
    with only a digest, or no tag at all, cannot be looked up and gives ``None``.
    """
    if not isinstance(table, CudaTable):
        return None
    parsed = parse_image_reference(image_ref)
    if parsed is None or parsed.tag is None:
        return None
    for rule in table.images:
        version = rule.cuda_for(parsed.name, parsed.tag, table.releases)
        if version is not None:
            return version, rule
    return None


def min_driver_for_cuda(table: CudaTable, cuda_version: object) -> str | None:
    """The minimum Linux driver for full compatibility with a CUDA version, or ``None``.

    An exact row (``12.4.1``) wins; otherwise the nearest lower update row of the same minor
    release, then the GA row (``12.4``). Without an exact row the answer is a lower bound.
    Versions such as ``12.8.1.012`` (NGC notation) are cut to three parts.
    """
    if not isinstance(table, CudaTable):
        return None
    version = _version(cuda_version)
    if version is None or len(version) < 2:
        return None
    version = version[:3]
    exact = ".".join(map(str, version))
    if exact in table.min_driver:
        return table.min_driver[exact]
    if len(version) == 3:
        # the nearest update row below, e.g. 12.6.3 -> the 12.6.2 row
        lower = [
            (parsed, driver)
            for key, driver in table.min_driver.items()
            if (parsed := _version(key)) is not None
            and len(parsed) == 3
            and parsed[:2] == version[:2]
            and parsed < version
        ]
        if lower:
            return max(lower)[1]
    return table.min_driver.get(f"{version[0]}.{version[1]}")


def compat_branch_for_cuda(table: CudaTable, cuda_version: object) -> str | None:
    """The minimum driver branch under minor version compatibility (``12.x`` -> ``525``)."""
    if not isinstance(table, CudaTable):
        return None
    version = _version(cuda_version)
    if version is None:
        return None
    return table.minor_version_compat.get(str(version[0]))


def driver_requirement(table: CudaTable, image_ref: object) -> DriverRequirement | None:
    """What ``image_ref`` needs from the node driver, or ``None`` for an unknown image."""
    found = cuda_version_for_image(table, image_ref)
    if found is None:
        return None
    version, rule = found
    return DriverRequirement(
        image=str(image_ref),
        cuda_version=version,
        rule_id=rule.id,
        min_driver=min_driver_for_cuda(table, version),
        compat_branch=compat_branch_for_cuda(table, version),
    )


def driver_check(node_driver: object, min_driver: object) -> DriverCheck:
    """Compare a node's driver (full version or branch only) with a minimum, numerically.

    - both full versions: component by component (``550.90.07`` >= ``550.54.14``);
    - a branch-only minimum (``525``) compares branches;
    - a node known only by branch (``550``, e.g. from the ``driver.major`` label alone): a newer
      branch than the minimum's is ``OK``, an older one ``TOO_OLD``, the *same* branch is
      ``AMBIGUOUS`` because ``550.40`` would not satisfy ``550.54.14`` - callers decide, and
      should say so rather than pass silently.
    """
    node, minimum = _version(node_driver), _version(min_driver)
    if node is None or minimum is None:
        return DriverCheck(
            DriverVerdict.UNKNOWN, f"cannot compare driver {node_driver!r} with {min_driver!r}"
        )
    if len(minimum) == 1 or len(node) == 1:
        if node[0] != minimum[0] or len(minimum) == 1:
            ok = node[0] >= minimum[0]
            verdict = DriverVerdict.OK if ok else DriverVerdict.TOO_OLD
            return DriverCheck(
                verdict,
                f"driver branch {node[0]} "
                f"{'>=' if ok else '<'} required {'.'.join(map(str, minimum))}",
            )
        return DriverCheck(
            DriverVerdict.AMBIGUOUS,
            f"node driver known only as branch {node[0]}; "
            f"{'.'.join(map(str, minimum))} needs the full version to decide",
        )
    width = max(len(node), len(minimum))
    padded_node = node + (0,) * (width - len(node))
    padded_min = minimum + (0,) * (width - len(minimum))
    ok = padded_node >= padded_min
    return DriverCheck(
        DriverVerdict.OK if ok else DriverVerdict.TOO_OLD,
        f"driver {'.'.join(map(str, node))} {'>=' if ok else '<'} "
        f"required {'.'.join(map(str, minimum))}",
    )


def driver_satisfies(node_driver: object, min_driver: object) -> bool | None:
    """``True``/``False`` when the node's driver does/does not meet ``min_driver``; ``None``
    when it cannot be decided (same branch known only by branch, or unparseable input).
    See ``driver_check`` for the rules and a reason text."""
    verdict = driver_check(node_driver, min_driver).verdict
    if verdict is DriverVerdict.OK:
        return True
    if verdict is DriverVerdict.TOO_OLD:
        return False
    return None
