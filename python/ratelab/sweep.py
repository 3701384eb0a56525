"""Run a campaign plan: expand it, skip finished runs, execute the rest, rebuild the summary."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .campaign import Plan, RunSpec, expand_plan
from .store import campaign_lock, git_commit, rebuild_summary, run_state, status, write_plan

#: Called with each finished run's summary dict and the counts so far.
ReportFn = Callable[[dict[str, Any], "SweepResult"], None]


@dataclass
class SweepResult:
    root: Path
    total: int
    skipped: int = 0
    done: int = 0
    failed: int = 0
    lost: int = 0
    wall_s: float = 0.0
    #: (run_id, error) of failed runs (error.json written; retried by the next sweep).
    errors: list[tuple[str, str]] = field(default_factory=list)
    #: (run_id, why) of lost runs (a dead worker or node: nothing written; run by the next sweep).
    lost_runs: list[tuple[str, str]] = field(default_factory=list)

    @property
    def executed(self) -> int:
        return self.done + self.failed

    @property
    def runs_per_s(self) -> float:
        return self.executed / self.wall_s if self.wall_s > 0 else float("nan")


def campaign_root(plan: Plan, out: str | Path | None) -> Path:
    """``<out>/<plan name>``; ``out`` defaults to the plan's ``out`` key, else ``results``."""
    base = Path(out) if out is not None else Path(str(plan.data.get("out", "results")))
    return (base / plan.name).resolve()


def plan_specs(plan: Plan) -> list[RunSpec]:
    return expand_plan(plan, git_commit=git_commit())


def run_sweep(plan: Plan, root: Path, *, engine: str = "local", workers: int | None = None,
              address: str | None = None, ray_files: str = "object-store", on_run: ReportFn | None = None,
              specs: list[RunSpec] | None = None) -> SweepResult:
    """Execute every run of ``plan`` that has not finished yet (failed runs are retried)."""
    from .engines import run_local, run_ray

    specs = plan_specs(plan) if specs is None else specs
    res = SweepResult(root, len(specs))
    with campaign_lock(root):
        write_plan(root, plan.source, specs)
        todo = [s for s in specs if run_state(root, s.run_id) != "done"]
        res.skipped = len(specs) - len(todo)
        t0 = time.perf_counter()
        try:
            if todo:
                it = run_ray(todo, root, address, workers, ray_files) if engine == "ray" else run_local(todo, root, workers)
                for summary in it:
                    st = summary.get("status")
                    if st == "done":
                        res.done += 1
                    elif st == "failed":
                        res.failed += 1
                        res.errors.append((summary["run_id"], str(summary.get("error", ""))))
                    elif st == "skipped":
                        res.skipped += 1
                    else:
                        res.lost += 1
                        res.lost_runs.append((summary["run_id"], str(summary.get("error", ""))))
                    if on_run is not None:
                        on_run(summary, res)
        finally:
            res.wall_s = time.perf_counter() - t0
            rebuild_summary(root)
    return res


def campaign_status(root: Path, specs: list[RunSpec]) -> dict[str, list[str]]:
    return status(root, specs)
