"""Metrics of the fidelity study (docs/fidelity.md): one run of a case, by any contender
(Chromium, live, simulated), reduced to the same numbers the same way.

Every contender's ``series.parquet`` is first put on one time grid (bins of ``dt`` seconds, the
mean of the samples whose time falls in a bin), because the stacks sample differently (the
simulator every 25 ms, the browser's getStats every 250 ms); every time metric is then computed
on that grid, so a metric never favours the contender that samples more often. The link's
capacity on the grid comes from the case (the simulator's link model), never from the run.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

#: Grid bin (s): two browser getStats samples per bin.
GRID_S = 0.5
#: "Time to 90 %": the delivered rate reaches this share of the new capacity after a step up.
RECOVER_FRACTION = 0.9
#: The goal of issue #20 item 4 (sim gcc vs Chromium): utilization within 5 points, p95 queuing
#: delay within 25 % or 10 ms (whichever is larger), freezes inside the real runs' range.
GOAL_UTIL_POINTS = 5.0
GOAL_P95_REL = 0.25
GOAL_P95_MS = 10.0


def column(values) -> np.ndarray:
    """A Parquet column (``to_pydict()`` list, None where null) as floats, NaN for null."""
    return np.asarray([math.nan if x is None else x for x in values], dtype=float)


def grid(t: np.ndarray, v: np.ndarray, duration_s: float, dt: float = GRID_S) -> np.ndarray:
    """Mean of ``v`` per bin ``(k*dt, (k+1)*dt]`` over ``[0, duration_s]``; NaN where a bin has
    no finite sample. A sample's value covers the interval before it (rates since the last sample)."""
    n = int(math.ceil(duration_s / dt - 1e-9))
    t, v = np.asarray(t, float), np.asarray(v, float)
    k = np.ceil(t / dt - 1e-9).astype(np.int64) - 1
    ok = (k >= 0) & (k < n) & np.isfinite(v)
    s = np.bincount(k[ok], weights=v[ok], minlength=n)[:n]
    c = np.bincount(k[ok], minlength=n)[:n]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(c > 0, s / np.maximum(c, 1), np.nan)


def grid_times(duration_s: float, dt: float = GRID_S) -> np.ndarray:
    """End time of each grid bin."""
    n = int(math.ceil(duration_s / dt - 1e-9))
    return (np.arange(n) + 1) * dt


def utilization(delivered_kbps: np.ndarray, capacity_kbps: np.ndarray) -> float:
    """Delivered bits / capacity bits over the bins where both are known, in percent."""
    ok = np.isfinite(delivered_kbps) & np.isfinite(capacity_kbps)
    cap = float(np.sum(capacity_kbps[ok]))
    return 100.0 * float(np.sum(delivered_kbps[ok])) / cap if cap > 0 else math.nan


def queue_stats(queue_ms: np.ndarray) -> tuple[float, float]:
    """(mean, p95) of a queuing-delay series over the grid bins (ms); the study's numbers are
    per packet (:func:`packet_queue_stats`), this is for series without a summary."""
    q = np.asarray(queue_ms, float)
    q = q[np.isfinite(q)]
    if not len(q):
        return math.nan, math.nan
    return float(np.mean(q)), float(np.percentile(q, 95))


def packet_queue_stats(flows: Sequence[Mapping[str, Any]]) -> tuple[float, float]:
    """(mean, p95) queuing delay of the flows' packets at the bottleneck (ms), from the
    per-flow ``queue_delay_ms_mean`` / ``_p95`` of ``summary.json``, which every stack takes
    from the same link model (simulator, live emulator, browser emulator) over every delivered
    packet. Several flows: the mean weighted by packets received, the largest p95."""
    pairs = [(f.get("queue_delay_ms_mean"), f.get("queue_delay_ms_p95"), float(f.get("packets_received") or 0)) for f in flows]
    pairs = [(m, p, n) for m, p, n in pairs if m is not None and p is not None and n > 0]
    if not pairs:
        return math.nan, math.nan
    n = sum(x[2] for x in pairs)
    return sum(float(m) * k for m, _, k in pairs) / n, max(float(p) for _, p, _ in pairs)


def steps_of(link: Mapping[str, Any], duration_s: float) -> list[tuple[float, float, float, float]]:
    """The capacity changes of a stepped link inside the run: (time, old kbps, new kbps, next
    change or end)."""
    pts = sorted((float(t), float(k)) for t, k in (link.get("steps") or []))
    out = []
    for i in range(1, len(pts)):
        t, new = pts[i]
        if t >= duration_s or new == pts[i - 1][1]:
            continue
        until = pts[i + 1][0] if i + 1 < len(pts) else duration_s
        out.append((t, pts[i - 1][1], new, min(until, duration_s)))
    return out


def time_to_fraction(t_end: np.ndarray, rate: np.ndarray, t_step: float, new_kbps: float, until: float,
                     fraction: float = RECOVER_FRACTION) -> float:
    """Seconds from a step up at ``t_step`` until the first bin (ending after the step, before
    ``until``) whose rate is at least ``fraction`` of ``new_kbps``; NaN if it never is."""
    m = (t_end > t_step) & (t_end <= until) & (np.asarray(rate) >= fraction * new_kbps)
    idx = np.flatnonzero(m)
    return float(t_end[idx[0]] - t_step) if len(idx) else math.nan


def reaction_time(t_end: np.ndarray, send_kbps: np.ndarray, t_step: float, new_kbps: float, until: float) -> float:
    """Seconds from a step down at ``t_step`` until the first bin whose sending rate is at or
    under the new capacity (the delivered rate never exceeds the capacity, so it cannot tell
    a reaction); NaN if it never is before ``until``."""
    m = (t_end > t_step) & (t_end <= until) & (np.asarray(send_kbps) <= new_kbps)
    idx = np.flatnonzero(m)
    return float(t_end[idx[0]] - t_step) if len(idx) else math.nan


def median_abs_rel_error(sim: np.ndarray, real: np.ndarray) -> float:
    """Median over the bins where both are known and ``real`` > 0 of |sim - real| / real (%)."""
    sim, real = np.asarray(sim, float), np.asarray(real, float)
    ok = np.isfinite(sim) & np.isfinite(real) & (real > 0)
    if not ok.any():
        return math.nan
    return 100.0 * float(np.median(np.abs(sim[ok] - real[ok]) / real[ok]))


def nanmean_rows(rows: Sequence[np.ndarray]) -> np.ndarray:
    """Bin-wise mean over repeats (NaN where no repeat has a value)."""
    if not rows:
        return np.array([])
    a = np.vstack(rows)
    with np.errstate(invalid="ignore"):
        cnt = np.sum(np.isfinite(a), axis=0)
        return np.where(cnt > 0, np.nansum(a, axis=0) / np.maximum(cnt, 1), np.nan)


def spread(values: Iterable[float]) -> tuple[float, float, int]:
    """(mean, half-range, n) of the finite values; (NaN, NaN, 0) if none."""
    v = [float(x) for x in values if x is not None and math.isfinite(float(x))]
    if not v:
        return math.nan, math.nan, 0
    return float(np.mean(v)), (max(v) - min(v)) / 2.0, len(v)


def run_grid(series: Mapping[str, np.ndarray], flows: Sequence[int], duration_s: float, dt: float = GRID_S) -> dict[str, np.ndarray]:
    """A run's series on the grid: ``delivered``/``send`` summed over ``flows`` (the forward
    media flows), ``target`` per flow (``target<id>``) and their sum, ``queue`` (the
    bottleneck's, the mean of the flows' samples in each bin)."""
    t, fl = np.asarray(series["t_s"], float), np.asarray(series["flow"])
    out: dict[str, np.ndarray] = {}
    sums = {"delivered": "recv_kbps", "send": "send_kbps", "target": "target_kbps"}
    for key in sums:
        out[key] = np.zeros(int(math.ceil(duration_s / dt - 1e-9)))
    qs = []
    for f in flows:
        m = fl == f
        for key, col in sums.items():
            g = grid(t[m], np.asarray(series[col], float)[m], duration_s, dt)
            if key == "target":
                out[f"target{f}"] = g
            out[key] = out[key] + g  # NaN where a flow has no sample: the sum is unknown there
        qs.append(grid(t[m], np.asarray(series["queue_ms"], float)[m], duration_s, dt))
    out["queue"] = nanmean_rows(qs)
    return out


def run_metrics(g: Mapping[str, np.ndarray], capacity: np.ndarray, summary_run: Mapping[str, Any], flows: Sequence[int],
                steps: Sequence[tuple[float, float, float, float]], dt: float = GRID_S,
                ceiling_kbps: float = math.inf) -> dict[str, float]:
    """The per-run numbers of the study from a run's grid (:func:`run_grid`: utilization, step
    responses), the case's capacity on the grid and the run's entry in ``summary.json``
    (queuing delay per packet, freezes, loss). ``ceiling_kbps``: the most the flows may send
    (their ``max_kbps`` summed); a step up is reached at 90 % of the new capacity or of this
    ceiling, whichever is lower (RMCAT 5.1 steps to 2.5 Mbit/s with a 1.5 Mbit/s flow)."""
    t_end = (np.arange(len(capacity)) + 1) * dt
    fl = [f for f in summary_run.get("flows", []) if f.get("id") in flows]
    qm, q95 = packet_queue_stats(fl)
    ups = [time_to_fraction(t_end, g["delivered"], t, min(new, ceiling_kbps), until) for t, old, new, until in steps if new > old]
    downs = [reaction_time(t_end, g["send"], t, new, until) for t, old, new, until in steps if new < old]
    return {
        "utilization": utilization(g["delivered"], capacity),
        "queue_mean_ms": qm, "queue_p95_ms": q95,
        "freezes": float(sum(int(f.get("freeze_count") or 0) for f in fl)),
        "loss_pct": 100.0 * float((summary_run.get("link") or {}).get("loss_rate") or 0.0),
        "t90_up_s": _mean_or_nan(ups), "react_down_s": _mean_or_nan(downs),
    }


def _mean_or_nan(v: list[float]) -> float:
    """Mean of the steps' times; NaN if there are none or one never happened (a miss is not
    averaged away)."""
    return float(np.mean(v)) if v and all(math.isfinite(x) for x in v) else math.nan


def goal(sim: Mapping[str, Sequence[float]], real: Mapping[str, Sequence[float]]) -> tuple[bool | None, str]:
    """Item 4's goal for one case: (met, why not); None when a side has no runs. ``sim`` and
    ``real`` map utilization / queue_p95_ms / freezes to the values of their runs."""
    su, ru = spread(sim.get("utilization", []))[0], spread(real.get("utilization", []))[0]
    sq, rq = spread(sim.get("queue_p95_ms", []))[0], spread(real.get("queue_p95_ms", []))[0]
    sf = spread(sim.get("freezes", []))[0]
    rf = [x for x in real.get("freezes", []) if math.isfinite(x)]
    if not all(math.isfinite(x) for x in (su, ru, sq, rq, sf)) or not rf:
        return None, "no runs"
    why = []
    if abs(su - ru) > GOAL_UTIL_POINTS:
        why.append(f"util {su - ru:+.1f} pt")
    if abs(sq - rq) > max(GOAL_P95_REL * rq, GOAL_P95_MS):
        why.append(f"p95 {sq - rq:+.0f} ms")
    if not (min(rf) <= sf <= max(rf)):
        why.append(f"freezes {sf:.3g} vs {min(rf):g}..{max(rf):g}")
    return not why, ", ".join(why)
