"""What the reader may leave out: the skim plan.

The parser builds every document whole except what this plan names. The plan is an input of the
reader, never known by it: it is derived from what the rules declare they read (see rules/), and
the engine passes it to `read_repo`. A field left out here is one no rule reads; a rule that
reads one must declare it, which takes it out of the plan.
"""

from __future__ import annotations

from gpudrv_check.core.records import record


@record(frozen=True, slots=True)
class SkimPlan:
    #: kinds whose content past `metadata` nothing reads: parsed for syntax, nesting, duplicate
    #: keys and tags, but not built
    kinds: frozenset[str] = frozenset()
    #: keys of a Node's `status` nothing reads
    node_status: frozenset[str] = frozenset()
    #: keys of a workload's containers nothing reads
    container: frozenset[str] = frozenset()


#: build everything (custom policies may assert on any field)
NOTHING_SKIPPED = SkimPlan()
