"""CPU time of the simulator (`time.process_time()` around `Simulation.run()`, best of N), for
comparisons on a loaded host where `ratelab bench`'s wall clock mostly measures the wait for a
core (docs/benchmarks.md). Controller construction and Parquet writing are outside the timing.

    python tools/cpu_bench.py                                   # the `ratelab bench` scenarios
    python tools/cpu_bench.py -s rmcat-5.1 -c aimd -c ratelab.examples.aimd:Aimd
"""

from __future__ import annotations

import argparse
import time

from ratelab.native import core
from ratelab.run.runner import check_controllers
from ratelab.scenario import load_scenario


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-s", "--scenario", action="append", help="scenario (repeatable; default: the ratelab bench set)")
    ap.add_argument("-c", "--controller", action="append", help="controller for every media flow (repeatable)")
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    controllers = a.controller or [None]
    check_controllers(c for c in controllers if c)
    print("| scenario | controller | CPU (ms) | sim speed (CPU) |\n|---|---|---:|---:|")
    for name in a.scenario or ["bench-single", "bench-three", "bench-tcp", "bench-two-way"]:
        sc = load_scenario(name, ["metrics.packet_log=false"])
        doc = sc.to_json()
        for c in controllers:
            best = float("inf")
            for _ in range(a.repeat):
                sim = core().Simulation(doc, seed=1, controller=c)
                t0 = time.process_time()
                sim.run()
                best = min(best, time.process_time() - t0)
            label = c or "+".join(sc.media_controllers())
            print(f"| {name} | {label} | {best * 1e3:.1f} | {sc.duration_s / best:,.0f}× |")


if __name__ == "__main__":
    main()
