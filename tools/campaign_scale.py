"""Campaign scale measurement (issue 16 §2): sweep a plan of N short runs and time what grows
with the campaign: the sweep (driver peak RSS), ``--status``, ``ratelab query`` and the summary
rebuild.

    python tools/campaign_scale.py 1000 5000 20000 --out /tmp/scale -j 2

Each N gets its own campaign ``scale-N``: ``rmcat-5.1`` shortened to 2 s, controllers gcc and
oracle, N/2 seeds (the reproducible plan is printed). Prints one table row per N.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

PLAN = """name = "scale-{n}"
description = "issue 16 campaign-scale measurement: {n} runs of 2 s"
controllers = ["gcc", "oracle"]
scenarios = ["rmcat-5.1"]
set = ["duration_s=2"]
seeds = {seeds}
"""


def timed(cmd: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr}")
    return time.perf_counter() - t0, r.stdout


#: Runs the CLI in this interpreter and prints the process's own peak RSS (kB) at exit.
_DRIVER = ("import atexit, resource, sys; atexit.register(lambda: print('peak-rss-kb', "
           "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)); "
           "from ratelab.cli import main; sys.argv = ['ratelab', *sys.argv[1:]]; main()")


def peak_rss_mb(args: list[str]) -> tuple[float, float, float]:
    """Wall time, the driver's own peak RSS (MB) and the largest peak RSS of the whole process
    tree (GNU time's %M: the driver and, through the forkserver, its workers)."""
    t0 = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "tree-peak-kb %M", sys.executable, "-c", _DRIVER, *args],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(args)}\n{r.stderr[-2000:]}")
    vals = dict(line.split() for line in r.stderr.splitlines() if line.startswith(("peak-rss-kb", "tree-peak-kb")))
    return wall, int(vals["peak-rss-kb"]) / 1024, int(vals["tree-peak-kb"]) / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sizes", nargs="+", type=int)
    ap.add_argument("--out", default="/tmp/ratelab-scale")
    ap.add_argument("-j", "--workers", type=int, default=2)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    py = [sys.executable, "-m", "ratelab"]
    print("| runs | sweep wall (s) | driver peak RSS (MB) | tree peak RSS (MB) | sum of sim wall (s) | --status (s) "
          "| query (s) | summary rebuild, full (s) | load |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for n in a.sizes:
        plan = out / f"scale-{n}.toml"
        plan.write_text(PLAN.format(n=n, seeds=n // 2))
        wall, rss, tree = peak_rss_mb(["sweep", str(plan), "--out", str(out), "-j", str(a.workers), "-q"])
        t_status, st = timed([*py, "sweep", str(plan), "--out", str(out), "--status"])
        assert f"done {n}  failed 0  pending 0" in st, st
        t_query, q = timed([*py, "query", f"scale-{n}", "--out", str(out), "--format", "csv",
                            "SELECT count(*), sum(wall_seconds) FROM runs"])
        count, sim_sum = q.splitlines()[1].split(",")
        assert int(count) == n, q
        t_rebuild, _ = timed([sys.executable, "-c", "import sys; from ratelab.campaign.store import rebuild_summary; "
                              "rebuild_summary(sys.argv[1], full=True)", str(out / f"scale-{n}")])
        load = open("/proc/loadavg").read().split()[0]
        print(f"| {n:,} | {wall:.1f} | {rss:.0f} | {tree:.0f} | {float(sim_sum):.1f} | {t_status:.2f} | {t_query:.2f} | {t_rebuild:.2f} | {load} |",
              flush=True)


if __name__ == "__main__":
    main()
