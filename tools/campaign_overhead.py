"""Per-run overhead of a campaign sweep (issue 16 §2): the sweep's wall time against the sum of
its runs' pure simulation times on the same workers.

    python tools/campaign_overhead.py rmcat -j 2 --out /tmp/overhead

Runs the plan from scratch (the campaign folder is removed first) through the same code as
`ratelab sweep` and prints: the sweep's wall time (plan expansion, pool start, every run, the
summary rebuild), the sum over runs of the simulation's own wall and CPU time (the
``Simulation.run`` calls, as recorded in flows.parquet ``wall_seconds``), of each run's whole
worker time (scenario build, simulation, Parquet writing, commit) and the ratios. With W workers
the ideal wall time is sum(sim wall) / W; on a shared host compare the CPU columns too and read
the load average printed with them.

    python tools/campaign_overhead.py rmcat --serial-every 10

runs every 10th run of the plan one after the other in this process instead and prints their
total CPU time and their simulations' CPU time (a per-run overhead figure that does not depend on
the load; works on older versions too, which report no simulation CPU: then compare totals).
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("plan")
    ap.add_argument("-j", "--workers", type=int, default=2)
    ap.add_argument("--out", default="/tmp/ratelab-overhead")
    ap.add_argument("--serial-every", type=int, default=0, metavar="K")
    a = ap.parse_args()
    if a.serial_every:
        return serial(a.plan, a.serial_every, Path(a.out))

    from ratelab.campaign.plan import load_plan
    from ratelab.campaign.sweep import campaign_root, plan_specs, run_sweep

    # A previous measurement's folder is removed before the clock starts: deleting 840 run
    # folders took ~0.35 s, which is not part of a sweep. ratelab's imports (~0.06 s) are outside
    # the timing too; reading and expanding the plan are inside.
    shutil.rmtree(campaign_root(load_plan(a.plan), a.out), ignore_errors=True)
    load0 = open("/proc/loadavg").read().split()[:3]
    t_start = time.perf_counter()
    c_start = time.process_time()
    plan = load_plan(a.plan)
    root = campaign_root(plan, a.out)
    specs = plan_specs(plan)
    runs: list[dict] = []
    res = run_sweep(plan, Path(root), workers=a.workers, specs=specs, on_run=lambda s, _r: runs.append(s))
    wall = time.perf_counter() - t_start
    driver_cpu = time.process_time() - c_start
    load1 = open("/proc/loadavg").read().split()[:3]
    done = [r for r in runs if r.get("status") == "done"]
    sim_wall = sum(r["sim_wall_s"] for r in done)
    sim_cpu = sum(r.get("sim_cpu_s", 0.0) for r in done)
    run_wall = sum(r["wall_s"] for r in done)
    run_cpu = sum(r.get("cpu_s", 0.0) for r in done)
    # Each worker's CPU time since it started (imports, unpickling, every run): its last report.
    workers_cpu: dict[int, float] = {}
    for r in done:
        if "pid" in r:
            workers_cpu[r["pid"]] = max(workers_cpu.get(r["pid"], 0.0), r["proc_cpu_s"])
    total_cpu = driver_cpu + sum(workers_cpu.values())
    w = a.workers
    print(f"plan {plan.name}: {len(specs)} runs ({res.done} done, {res.failed} failed), {w} workers, "
          f"load {' '.join(load0)} -> {' '.join(load1)}")
    print(f"sweep wall (whole command, in-process)   {wall:8.1f} s   driver CPU {driver_cpu:.1f} s")
    print(f"sum of sim wall  {sim_wall:8.1f} s   / {w} = {sim_wall / w:7.1f} s   wall ratio {wall / (sim_wall / w):.2f}")
    print(f"sum of sim CPU   {sim_cpu:8.1f} s")
    print(f"sum of run wall  {run_wall:8.1f} s   (per run {1000 * (run_wall - sim_wall) / max(len(done), 1):.1f} ms beyond the sim)")
    print(f"sum of run CPU   {run_cpu:8.1f} s   (per run {1000 * (run_cpu - sim_cpu) / max(len(done), 1):.1f} ms beyond the sim);"
          f" CPU ratio (run CPU + driver CPU) / sim CPU = {(run_cpu + driver_cpu) / sim_cpu:.2f}")
    print(f"whole sweep CPU  {total_cpu:8.1f} s   (driver + {len(workers_cpu)} worker processes from their start)"
          f"   CPU ratio {total_cpu / sim_cpu:.2f}")


def serial(plan_name: str, every: int, out: Path) -> None:
    from ratelab.campaign.plan import load_plan
    from ratelab.campaign.store import execute_run
    from ratelab.campaign.sweep import plan_specs

    specs = plan_specs(load_plan(plan_name))[::every]
    root = out / "serial"
    shutil.rmtree(root, ignore_errors=True)
    (root / ".tmp").mkdir(parents=True)
    execute_run(specs[0], root)  # imports and first-use costs out of the figure
    c0 = time.process_time()
    sim = 0.0
    for s in specs[1:]:
        sim += execute_run(s, root).get("sim_cpu_s", 0.0)
    total = time.process_time() - c0
    n = len(specs) - 1
    print(f"{n} runs in one process: CPU {total:.2f} s, simulation CPU {sim:.2f} s, "
          f"beyond the simulation {1000 * (total - sim) / n:.1f} ms per run; load {open('/proc/loadavg').read().split()[0]}")


if __name__ == "__main__":
    main()
