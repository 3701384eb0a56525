"""Environment speed: steps per wall second of the R3Net environment (issue 5 target: ≥ 50,000
steps/s batched on the 2-core development machine).

``python -m ratelab.rl.bench [--seconds S] [--envs 1 64] [--threads 1 2]`` steps each
configuration for S seconds with actions drawn uniformly from [0, 0.25] (0–2 Mbit/s, the range a
trained policy uses most) on the default episode distribution with the training traces, and
prints a Markdown table. Autoreset is included (episodes of 30 s = 600 steps).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from ratelab.rl.env import BandwidthEstimationVectorEnv


def measure(num_envs: int, threads: int, seconds: float, seed: int = 0) -> tuple[float, int]:
    env = BandwidthEstimationVectorEnv(num_envs, threads=threads)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    acts = [rng.uniform(0.0, 0.25, size=(num_envs, 1)).astype(np.float32) for _ in range(64)]
    steps, k = 0, 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        env.step(acts[k % 64])
        k += 1
        steps += num_envs
    return steps / (time.perf_counter() - t0), steps


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--envs", type=int, nargs="+", default=[1, 64])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    a = p.parse_args(argv)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average before: {load:.1f} on {os.cpu_count()} cores\n")
    print("| envs | threads | steps / wall s | steps measured |")
    print("|---:|---:|---:|---:|")
    for n in a.envs:
        for t in a.threads:
            if t > n:
                continue
            rate, steps = measure(n, t, a.seconds)
            print(f"| {n} | {t} | {rate:,.0f} | {steps:,} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
