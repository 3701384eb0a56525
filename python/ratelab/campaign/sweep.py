"""Run a campaign plan: expand it, skip finished runs, execute the rest, rebuild the summary."""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ratelab.campaign.plan import Plan, RunSpec, expand_plan
from ratelab.campaign.remote import RemoteRoot, sync, upload_file, upload_run
from ratelab.campaign.summary import FreshFlows
from ratelab.campaign.store import campaign_lock, git_commit, rebuild_summary, run_state, status, write_plan

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


def campaign_root(plan: Plan, out: str | Path | None) -> "Path | RemoteRoot":
    """``<out>/<plan name>``; ``out`` defaults to the plan's ``out`` key, else ``results``. A
    ``scheme://`` URI (``s3://bucket/prefix``, ``gs://…``, ``file:///…``) gives a
    :class:`ratelab.campaign.remote.RemoteRoot` (files written through ``pyarrow.fs``)."""
    from ratelab.campaign.remote import is_uri, remote_root

    base = out if out is not None else str(plan.data.get("out", "results"))
    if is_uri(base):
        return remote_root(str(base), plan.name)
    return (Path(base) / plan.name).resolve()


def plan_specs(plan: Plan) -> list[RunSpec]:
    return expand_plan(plan, git_commit=git_commit())


def run_sweep(plan: Plan, root: "Path | RemoteRoot", *, engine: str = "local", workers: int | None = None,
              address: str | None = None, ray_files: str = "object-store", on_run: ReportFn | None = None,
              specs: list[RunSpec] | None = None) -> SweepResult:
    """Execute every run of ``plan`` that has not finished yet (failed runs are retried)."""
    from ratelab.campaign.engines import run_local, run_ray
    from ratelab.campaign.store import execute_run
    from ratelab.run.runner import REAL_TIME_STACKS

    specs = plan_specs(plan) if specs is None else specs
    res = SweepResult(root, len(specs))
    remote = root if isinstance(root, RemoteRoot) else None
    if remote is not None:
        root = remote.cache  # runs are simulated into the local mirror, then uploaded one by one
    with campaign_lock(root):
        write_plan(root, plan.source, specs)
        if remote is not None:
            states = sync(remote)
            upload_file(remote, root / "plan.json", "plan.json")
            todo = [s for s in specs if states.get(s.run_id) != "done"]
        else:
            todo = [s for s in specs if run_state(root, s.run_id) != "done"]
        res.skipped = len(specs) - len(todo)
        fresh = FreshFlows()
        t0 = time.perf_counter()
        try:
            if todo:
                # Real-time stacks (-c chromium) run here, one at a time, after the simulations:
                # in parallel with each other or with simulations they would measure the CPU.
                real = [s for s in todo if s.controller_name in REAL_TIME_STACKS]
                simulated = [s for s in todo if s.controller_name not in REAL_TIME_STACKS]
                it = (run_ray(simulated, root, address, workers, ray_files) if engine == "ray"
                      else run_local(simulated, root, workers)) if simulated else iter(())
                it = itertools.chain(it, (execute_run(s, str(root), os.getcwd()) for s in real))
                for summary in it:
                    st = summary.get("status")
                    flows_ipc = summary.pop("flows_ipc", None)
                    if remote is not None and st in ("done", "failed"):
                        upload_run(remote, summary["run_id"])
                    if st == "done":
                        res.done += 1
                        fresh.add(summary["run_id"], flows_ipc)
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
            summary_path = rebuild_summary(root, fresh=fresh)
            if remote is not None and summary_path is not None:
                upload_file(remote, summary_path, "summary.parquet")
    return res


def campaign_status(root: "Path | RemoteRoot", specs: list[RunSpec]) -> dict[str, list[str]]:
    """done / failed / pending run ids; for a store behind a URI, from one listing of it (the
    local mirror is brought up to date on the way, for ``failures`` and queries)."""
    if isinstance(root, RemoteRoot):
        states = sync(root)
        out: dict[str, list[str]] = {"done": [], "failed": [], "pending": []}
        for s in specs:
            out[states.get(s.run_id, "pending")].append(s.run_id)
        return out
    return status(root, specs)


def local_root(root: "Path | RemoteRoot") -> Path:
    """The folder holding the campaign's files on this machine (a URI campaign's mirror)."""
    return root.cache if isinstance(root, RemoteRoot) else root
