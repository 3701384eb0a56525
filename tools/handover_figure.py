#!/usr/bin/env python3
"""Every controller through the built-in ``handover`` scenario (docs/scenarios.md, route changes).

One panel per controller: the link capacity (grey), the controller's target (blue) and the rate
the receiver got (orange, 0.5 s mean), with the route changes marked; the title gives each run's mean
throughput and p95 one-way delay over the whole run. Runs the extension built from this tree:

    PYTHONPATH=python python3 tools/handover_figure.py --out docs/figures/handover.png

(seed 1; ``--seed``, ``--scenario`` and ``-c NAME`` (repeatable) change what is run).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ratelab.native import core, runnable_controller_names  # noqa: E402
from ratelab.scenario import load_scenario  # noqa: E402


def run_one(sc_json: str, controller: str, seed: int) -> tuple[dict, dict]:
    sim = core().Simulation(sc_json, seed=seed, controller=controller)
    sim.run()
    return sim.summary(), sim.take_series()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="handover")
    ap.add_argument("-c", "--controller", action="append", default=None, help="controller (repeatable; default: every runnable one)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("docs/figures/handover.png"))
    a = ap.parse_args()

    sc = load_scenario(a.scenario, ["metrics.packet_log=false"])
    changes = [float(rc["at_s"]) for rc in sc.data.get("route_changes", [])]
    names = a.controller or runnable_controller_names()
    cols = 4
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.6 * rows), sharex=True, squeeze=False)
    for ax, name in zip(axes.flat, names):
        summary, s = run_one(sc.to_json(), name, a.seed)
        t = np.asarray(s["t_s"])
        first = np.asarray(s["flow"]) == 0
        ax.step(t[first], np.asarray(s["capacity_kbps"])[first] / 1000, where="post", color="0.6", lw=1, label="capacity")
        # The received rate per series interval is bursty (frames, feedback batches): 0.5 s mean.
        recv = np.asarray(s["recv_kbps"])[first] / 1000
        k = max(1, int(round(0.5 / np.median(np.diff(t[first]))))) if first.sum() > 1 else 1
        recv = np.convolve(recv, np.ones(k) / k, mode="same")
        ax.plot(t[first], recv, color="tab:orange", lw=0.9, label="received (0.5 s mean)")
        ax.plot(t[first], np.asarray(s["target_kbps"])[first] / 1000, color="tab:blue", lw=0.9, label="target")
        for x in changes:
            ax.axvline(x, color="k", ls=":", lw=0.8)
        f = summary["flows"][0]
        ax.set_title(f"{name}: {f['throughput_kbps'] / 1000:.2f} Mbit/s, p95 OWD {f['owd_ms_p95']:.0f} ms", fontsize=8)
        ax.set_ylim(0, 11)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    axes[0][0].legend(fontsize=6, loc="upper right")
    for ax in axes[-1]:
        ax.set_xlabel("time (s)", fontsize=7)
    for row in axes:
        row[0].set_ylabel("Mbit/s", fontsize=7)
    fig.suptitle(f"{sc.name} (seed {a.seed}): {sc.description}", fontsize=9)
    fig.tight_layout()
    a.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(a.out, dpi=110)
    print(a.out)


if __name__ == "__main__":
    main()
