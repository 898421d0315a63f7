"""Baselines: adopt the checker on a repo with known findings, and fail only on new ones.

`--write-baseline FILE` records every reported finding by its fingerprint (rule, object
identity, key path: not the line, so edits elsewhere keep it); `--baseline FILE` suppresses
findings whose fingerprint is recorded, one per recorded occurrence, and reports the rest.
The file is JSON, sorted, one entry per finding, readable in a diff.
"""

from __future__ import annotations

import json
import os
from collections import Counter

from gpudrv_check.core.finding import Finding
from gpudrv_check.engine.exemptions import BY_BASELINE
from gpudrv_check.read.config import ConfigError
from gpudrv_check.read.config_file import MAX_BASELINE_BYTES

BASELINE_VERSION = 2
#: the versions read: a version 1 baseline recorded the namespace as written and messages
#: whole (core/finding.py `Finding.fingerprint`); its entries match by those fingerprints
READ_VERSIONS = (1, 2)


def render_baseline(findings: list[Finding]) -> str:
    entries = sorted(
        (
            {
                "fingerprint": f.fingerprint(),
                "rule": f.rule,
                "object": str(f.object) if f.object else None,
                "file": f.location.file,
                "message": f.message,
            }
            for f in findings
        ),
        key=lambda e: (e["rule"], e["object"] or "", e["file"], e["fingerprint"], e["message"]),
    )
    doc = {"tool": "gpudrv-check", "version": BASELINE_VERSION, "findings": entries}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def read_baseline(path: str, root: str | os.PathLike[str] = "") -> Accepted:
    """What the baseline accepts: fingerprint → how many findings with it, and the version
    that fingerprinted them. Inside the checked `root` a link may not lead out of it; a FIFO,
    a device or a file over 64 MiB is refused."""
    from gpudrv_check.read.safe_io import read_named

    try:
        text = read_named(path, MAX_BASELINE_BYTES, root).decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"baseline not found: {path}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read baseline {path}: {err}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"baseline is not JSON: {err.msg}", path, err.lineno, err.colno) from None
    except RecursionError:
        line, col = _too_deep(text)
        raise ConfigError(
            "not a gpudrv-check baseline: it nests too deep to read; write one with "
            "--write-baseline",
            path,
            line,
            col,
        ) from None
    return _fingerprints(doc, path)


class Accepted(Counter):
    """Fingerprint → count, with the baseline version whose fingerprints they are."""

    version: int = BASELINE_VERSION


def _fingerprints(doc: object, path: str) -> Accepted:
    entries = doc.get("findings") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or not isinstance(entries, list):
        raise ConfigError(
            f"not a gpudrv-check baseline (version {BASELINE_VERSION}); write one with "
            "--write-baseline",
            path,
        )
    version = doc.get("version")
    # `true` and `1.0` equal 1 in Python, but no writer of ours puts them there
    if type(version) is not int or version not in READ_VERSIONS:
        raise ConfigError(
            f"unsupported baseline version {_shown(version)} (this gpudrv-check reads "
            f"versions 1 and {BASELINE_VERSION}); write it again with --write-baseline",
            path,
        )
    counts = Accepted()
    counts.version = version
    for index, entry in enumerate(entries):
        fingerprint = entry.get("fingerprint") if isinstance(entry, dict) else None
        if not isinstance(fingerprint, str):
            raise ConfigError(
                f"baseline entry findings[{index}] has no fingerprint (a string); write the "
                "baseline again with --write-baseline",
                path,
            )
        counts[fingerprint] += 1
    return counts


def _shown(value: object) -> str:
    if isinstance(value, (dict, list)):
        return "an object" if isinstance(value, dict) else "a list"
    return json.dumps(value)[:40]


def _too_deep(text: str, limit: int = 128) -> tuple[int, int]:
    """Line and column of the bracket that opens the level past `limit`, so the message
    points at where the nesting gets out of hand (json.loads says only RecursionError)."""
    depth, in_string, escaped, line, col = 0, False, False, 1, 0
    for char in text:
        col += 1
        if char == "\n":
            line, col = line + 1, 0
        elif escaped:
            escaped = False
        elif in_string:
            escaped = char == "\\"
            in_string = char != '"'
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return line, col
        elif char in "]}":
            depth -= 1
    return 1, 1


def apply_baseline(
    findings: list[Finding], accepted: Counter[str], shown: str
) -> tuple[list[Finding], list[Finding]]:
    """(new findings, findings the baseline accepts), in the input order; each finding is
    fingerprinted as the baseline's version fingerprinted it."""
    version = getattr(accepted, "version", BASELINE_VERSION)
    left = Counter(accepted)
    new: list[Finding] = []
    known: list[Finding] = []
    for finding in findings:
        fingerprint = finding.fingerprint(version)
        if left[fingerprint] > 0:
            left[fingerprint] -= 1
            known.append(finding.copy_with(suppressed_by=f"{BY_BASELINE} {shown}"))
        else:
            new.append(finding)
    return new, known
