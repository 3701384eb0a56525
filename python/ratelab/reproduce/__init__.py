"""``ratelab reproduce PAPER``: the experiments of the reference papers as built-in scenario sets.

One module per paper (:mod:`.lcc`, :mod:`.iris`, :mod:`.dcrc`, :mod:`.cross`) on a shared core (:mod:`.core`:
jobs, process pool, mean ± std over seeds, claims, Markdown report).
"""

from __future__ import annotations

import importlib

from ratelab.reproduce.core import Claim, Job, Outcome, PaperSpec, ReportContext, Results, RunData, Stat, reproduce, run_jobs

#: Paper name → module defining ``SPEC``.
PAPERS = {"lcc": "lcc", "iris": "iris", "dcrc": "dcrc", "cross": "cross"}


def paper(name: str) -> PaperSpec:
    """The :class:`PaperSpec` of ``name`` (one of :data:`PAPERS`)."""
    return importlib.import_module(f"{__name__}.{PAPERS[name]}").SPEC


__all__ = ["PAPERS", "paper", "Claim", "Job", "Outcome", "PaperSpec", "ReportContext", "Results", "RunData", "Stat",
           "reproduce", "run_jobs"]
