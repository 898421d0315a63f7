"""No finding of a generated fleet is cut at MAX_MESSAGE (core/finding.py): a message names a
few nodes, budgets, keys or causes and counts the rest (`names`, `clauses`), so it always
reaches what it says happens and what to change."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudrv_check.core.finding import MAX_MESSAGE
from gpudrv_check.engine.run import check
from gpudrv_check.read.config import Config
from tests.conftest import generated_corpus


@pytest.mark.slow
def test_no_message_or_hint_of_a_generated_fleet_is_cut(tmp_path: Path):
    """benchmarks/gen_corpus.py with 2,400 workloads: six workloads per app label, so each of
    them is covered by six budgets (GPU024) and every budget covers six workloads (GPU020),
    past the five a message names. Before the cap, a 40k corpus had every GPU024 message and
    3,681 GPU020 messages cut before they said what the eviction API does."""
    out = generated_corpus(tmp_path / "repo", 480, 2400)
    findings = check(out, Config()).findings
    rules = {f.rule for f in findings}
    assert {"GPU010", "GPU011", "GPU020", "GPU024"} <= rules
    for f in findings:
        for text in (f.message, f.hint or ""):
            assert len(text) < MAX_MESSAGE and not text.endswith("…"), (f.rule, text[-200:])
    gpu024 = [f.message for f in findings if f.rule == "GPU024"]
    assert all("covered by 6 PodDisruptionBudgets" in m and " and 1 more): " in m for m in gpu024)
