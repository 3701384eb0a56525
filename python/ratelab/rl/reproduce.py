"""``ratelab reproduce r3net``: paper 004 Table 1 metrics over the held-out test traces.

Every media controller ratelab has (``gcc``, ``r3net`` with the shipped model, the ``fixed``
1 Mbit/s reference and the ``oracle`` upper bound) runs the same full simulations: each of the 10
test traces (``ratelab.rl.traces.TEST_TRACES``) × three path delays (one-way 25 / 50 / 100 ms,
symmetric), a drop-tail queue of 300 ms at the trace's starting (or mean) capacity, one media
flow, ``duration`` seconds from the start of the trace (looped when shorter). Only the Rust core
runs — r3net's ONNX model included — so this needs no torch.

Metrics (pooled over all runs of a controller, as one set of calls):

* bandwidth utilisation — received bytes / capacity bytes of each run, averaged over runs;
* RTT mean / p50 / p95 — per received packet, one-way delay + return delay;
* loss rate — lost / sent packets;
* reward — paper 004's ``0.6·ln(4R+1) − D − 10·L`` per 50-ms window of arrival time (R Mbit/s
  received, D mean RTT in s of the window's packets — the last value when none arrived —, L the
  window's loss fraction, a lost packet counted in the window where it would have arrived),
  averaged over all windows.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ratelab.rl import traces as rl_traces

PAPER = {  # paper 004 Table 1 (simulation, 1150 test traces; UKF = Microsoft's production estimator)
    "UKF (paper)": dict(utilization=73.5, rtt_mean=128, rtt_p50=102, rtt_p95=288, loss=0.38, reward=0.56),
    "R3Net (paper)": dict(utilization=77.8, rtt_mean=122, rtt_p50=102, rtt_p95=268, loss=0.19, reward=0.60),
}
DELAYS_MS = (25.0, 50.0, 100.0)
WINDOW = 0.05


def scenario(trace: Path, owd_ms: float, controller: str, duration: float, params: dict | None = None) -> dict:
    return {
        "name": f"r3net-repro-{trace.stem}-{owd_ms:g}ms", "duration_s": duration,
        "link": {"trace": str(trace), "queue": {"ms": 300}},
        "flows": [{"kind": "media", "controller": controller, "params": params or {}, "one_way_delay_ms": owd_ms,
                   "media": {"min_kbps": 50, "max_kbps": 8000, "start_kbps": 300}}],
    }


@dataclass
class Run:
    utilization: float
    rtt_ms: np.ndarray
    sent: int
    lost: int
    rewards: np.ndarray


def window_rewards(p: dict, owd_s: float, ret_s: float, duration: float) -> np.ndarray:
    n = int(math.floor(duration / WINDOW))
    recv = ~p["lost"] & np.isfinite(p["recv_s"])
    rw = np.floor(p["recv_s"][recv] / WINDOW).astype(int)
    lw = np.floor((p["send_s"][~recv] + owd_s) / WINDOW).astype(int)
    ok_r, ok_l = (rw >= 0) & (rw < n), (lw >= 0) & (lw < n)
    rw, lw = rw[ok_r], lw[ok_l]
    size = p["size"][recv][ok_r].astype(float)
    rtt = (p["recv_s"][recv] - p["send_s"][recv])[ok_r] + ret_s
    nrecv = np.bincount(rw, minlength=n)
    bytes_ = np.bincount(rw, weights=size, minlength=n)
    rtt_sum = np.bincount(rw, weights=rtt, minlength=n)
    nlost = np.bincount(lw, minlength=n)
    R = bytes_ * 8 / WINDOW / 1e6
    D = np.zeros(n)
    last = 0.0
    for i in range(n):
        if nrecv[i]:
            last = rtt_sum[i] / nrecv[i]
        D[i] = last
    tot = nrecv + nlost
    L = np.divide(nlost, tot, out=np.zeros(n), where=tot > 0)
    return 0.6 * np.log(4 * R + 1) - D - 10 * L


def run_one(core, trace: Path, owd_ms: float, controller: str, duration: float, seed: int, params=None) -> Run:
    sim = core.Simulation(json.dumps(scenario(trace, owd_ms, controller, duration, params)), seed)
    sim.run()
    p = sim.take_packets()
    f = sim.summary()["flows"][0]
    recv = ~p["lost"] & np.isfinite(p["recv_s"])
    rtt = (p["recv_s"][recv] - p["send_s"][recv]) * 1000 + owd_ms
    return Run(utilization=float(f["utilization"]), rtt_ms=rtt, sent=int(f["packets_sent"]), lost=int(f["packets_lost"]),
               rewards=window_rewards(p, owd_ms / 1000, owd_ms / 1000, duration))


def reproduce(duration: float = 120.0, seed: int = 1, controllers: list[str] | None = None,
              model: str | None = None, progress=print) -> dict[str, dict[str, float]]:
    from ratelab import _core as core

    from ratelab.native import runnable_controller_names

    names = controllers or runnable_controller_names()
    test = [rl_traces.TRACE_DIR / n for n in rl_traces.split("test")]
    out: dict[str, dict[str, float]] = {}
    for c in names:
        t0 = time.perf_counter()
        params = {"model": str(Path(model).resolve())} if (model and c == "r3net") else None
        runs = [run_one(core, tr, d, c, duration, seed, params) for tr in test for d in DELAYS_MS]
        rtt = np.concatenate([r.rtt_ms for r in runs])
        out[c] = dict(
            utilization=100 * float(np.mean([r.utilization for r in runs])),
            rtt_mean=float(rtt.mean()), rtt_p50=float(np.percentile(rtt, 50)), rtt_p95=float(np.percentile(rtt, 95)),
            loss=100 * sum(r.lost for r in runs) / max(1, sum(r.sent for r in runs)),
            reward=float(np.mean(np.concatenate([r.rewards for r in runs]))),
            runs=len(runs),
        )
        progress(f"{c}: {len(runs)} runs in {time.perf_counter() - t0:.1f} s")
    return out


def per_trace(controllers: list[str], duration: float = 120.0, seed: int = 1,
              params: dict[str, dict] | None = None) -> dict[str, dict[str, float]]:
    """Mean reward per test trace (over the three delays) for each controller. A controller may be
    given as ``"label=name"`` with ``params[label]`` its parameters (e.g. another r3net model)."""
    from ratelab import _core as core

    res: dict[str, dict[str, float]] = {}
    for n in rl_traces.split("test"):
        tr = rl_traces.TRACE_DIR / n
        res[n] = {}
        for c in controllers:
            label, _, name = c.partition("=")
            name = name or label
            p = (params or {}).get(label)
            res[n][label] = float(np.mean(np.concatenate([run_one(core, tr, d, name, duration, seed, p).rewards for d in DELAYS_MS])))
    return res


def markdown(res: dict[str, dict[str, float]], duration: float, wall_s: float) -> str:
    rows = ["| controller | utilization | RTT mean (ms) | RTT p50 | RTT p95 | loss | reward |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name, m in [*res.items(), *PAPER.items()]:
        rows.append(f"| {name} | {m['utilization']:.1f} % | {m['rtt_mean']:.0f} | {m['rtt_p50']:.0f} | {m['rtt_p95']:.0f} | "
                    f"{m['loss']:.2f} % | {m['reward']:.2f} |")
    return "\n".join(rows) + f"\n\n({len(rl_traces.split('test'))} test traces × {len(DELAYS_MS)} delays, {duration:g} s each; " \
        f"computed in {wall_s:.0f} s.)\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="ratelab reproduce r3net", description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=120.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--model", default=None, help="ONNX model for r3net (default: shipped)")
    p.add_argument("-c", "--controller", action="append", default=None)
    p.add_argument("--out", default=None, help="write the Markdown table to this file")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    res = reproduce(a.duration, a.seed, a.controller, a.model)
    md = markdown(res, a.duration, time.perf_counter() - t0)
    print(md)
    if a.out:
        Path(a.out).write_text(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
