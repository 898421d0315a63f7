"""Message wording shared by several rules (lists of names, counted nouns). It lives in
core/finding.py, next to MAX_MESSAGE, where the model's problems (model/driver_plan.py,
nvidia/nvidiadriver.py), which cannot import the `rules` package, find it too."""

from __future__ import annotations

from gpudrv_check.core.finding import MAX_NAMES, clauses, names, plural

__all__ = ["MAX_NAMES", "clauses", "names", "plural"]
