"""Trace checks: the constraint language of GRADING.md § Trace Checks, evaluated over a timeline.

The evaluator loads on first use (PEP 562): reading a grading config (``rules``) or an
evaluated result (``results``) does not import it, so a retrace of trials without a
trace_checks block never pays for it (start-up, benchmarks/startup.py).
"""

from __future__ import annotations

import importlib
from typing import Any

# Recorded on grade.replayed beside the scores, so a replay says which evaluator produced them.
TRACE_CHECKS_VERSION = "trace_checks/1"

# public name -> the submodule that defines it
_LAZY = {"evaluate_constraint": "evaluate", "evaluate_trace_checks": "evaluate",
         "TraceChecksResult": "results"}  # fmt: skip

__all__ = ["TRACE_CHECKS_VERSION", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
