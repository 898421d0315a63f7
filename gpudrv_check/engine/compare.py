"""Pull-request mode: which findings a change introduces, which it fixes, which it leaves.

Findings of the base and of the head are matched by `Finding.fingerprint()` (rule, object,
key path: not the line, not the file), so an edit above an old finding, or moving its file,
does not make it new. Fingerprints are counted, not just collected: when the head has one more
finding with a fingerprint than the base, exactly one of them is new (the last in report order).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import field

from gpudrv_check.core.finding import Finding
from gpudrv_check.core.records import record


@record
class Comparison:
    base: str = ""  # the base revision, as given
    new: list[Finding] = field(default_factory=list)
    fixed: list[Finding] = field(default_factory=list)
    unchanged: list[Finding] = field(default_factory=list)

    def summary(self) -> str:
        return f"{len(self.new)} new, {len(self.fixed)} fixed, {len(self.unchanged)} unchanged"


def _split(findings: list[Finding], budget: Counter) -> tuple[list[Finding], list[Finding]]:
    """(matched, unmatched): each finding uses up one count of its fingerprint in `budget`."""
    left = Counter(budget)
    matched, unmatched = [], []
    for f in findings:
        key = f.fingerprint()
        if left[key] > 0:
            left[key] -= 1
            matched.append(f)
        else:
            unmatched.append(f)
    return matched, unmatched


def compare(
    base: list[Finding],
    head: list[Finding],
    revision: str = "",
    accepted: Sequence[Finding] = (),
) -> Comparison:
    """Head findings split into new and unchanged; base findings no longer present are fixed.
    `accepted`: head findings a baseline accepts (reported neither way): still present, so
    the base's findings they match are not fixed."""
    base_counts = Counter(f.fingerprint() for f in base)
    head_counts = Counter(f.fingerprint() for f in (*head, *accepted))
    unchanged, new = _split(head, base_counts)
    _, fixed = _split(base, head_counts)
    return Comparison(base=revision, new=new, fixed=fixed, unchanged=unchanged)
