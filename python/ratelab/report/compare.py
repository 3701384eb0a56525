"""Numbers behind the comparison figures: one point per run, per-controller points with their
spread over seeds, the Pareto front, empirical CDFs.

A run's point is (media utilization, p95 queuing delay): the share of the bottleneck its media
flows carried and the worst media flow's 95th-percentile queuing delay (the time its packets
waited in the bottleneck queue, so scenarios with different propagation delays stay comparable). Higher
utilization and lower delay are better; the Pareto front holds the controllers no other
controller beats on both (the oracle, which is told the capacity, is the reference, not a
competitor: it is left out of the front).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

#: The controller told the true capacity: drawn as the reference, never part of a Pareto front.
ORACLE = "oracle"


@dataclass(frozen=True)
class Point:
    """A controller in one scenario group: the mean over its runs, and the spread over seeds
    (lowest and highest per-seed mean; equal to the mean when there is one seed)."""

    utilization: float
    delay_ms: float
    util_lo: float
    util_hi: float
    delay_lo: float
    delay_hi: float
    runs: int
    seeds: int

    @property
    def has_spread(self) -> bool:
        return self.seeds > 1 and (self.util_hi > self.util_lo or self.delay_hi > self.delay_lo)


def run_point(flows: Sequence[Mapping[str, Any]]) -> tuple[float, float]:
    """(utilization, p95 queuing delay in ms) of one run from its flow summaries: the media
    flows' utilization summed (those of the forward link when a scenario has both directions)
    and the largest of their p95 queuing delays; NaN where there is no media flow."""
    media = [f for f in flows if f.get("kind") == "media"]
    forward = [f for f in media if (f.get("direction") or "forward") == "forward"]
    media = forward or media
    utils = [_num(f.get("utilization")) for f in media]
    delays = [_num(f.get("queue_delay_ms_p95")) for f in media]
    util = math.fsum(u for u in utils if math.isfinite(u)) if any(math.isfinite(u) for u in utils) else math.nan
    delay = max((d for d in delays if math.isfinite(d)), default=math.nan)
    return util, delay


def aggregate(samples: Iterable[tuple[str, int, float, float]]) -> dict[str, Point]:
    """Per controller, from ``(controller, seed, utilization, delay_ms)`` run samples (several
    runs of a seed, e.g. one per trace, are first averaged into that seed's value)."""
    by: dict[str, dict[int, list[tuple[float, float]]]] = {}
    for name, seed, u, d in samples:
        if math.isfinite(u) and math.isfinite(d):
            by.setdefault(name, {}).setdefault(seed, []).append((u, d))
    out: dict[str, Point] = {}
    for name, seeds in by.items():
        all_runs = [x for runs in seeds.values() for x in runs]
        per_seed = [(_mean([u for u, _ in runs]), _mean([d for _, d in runs])) for runs in seeds.values()]
        us, ds = [u for u, _ in per_seed], [d for _, d in per_seed]
        out[name] = Point(utilization=_mean([u for u, _ in all_runs]), delay_ms=_mean([d for _, d in all_runs]),
                          util_lo=min(us), util_hi=max(us), delay_lo=min(ds), delay_hi=max(ds),
                          runs=len(all_runs), seeds=len(seeds))
    return out


def pareto_front(points: Mapping[str, tuple[float, float]]) -> set[str]:
    """Names of the points ``(utilization, delay)`` that no other point dominates (at least as
    high a utilization and at least as low a delay, better in one). Non-finite points are never
    on the front; equal points are both on it."""
    ok = {k: (u, d) for k, (u, d) in points.items() if math.isfinite(u) and math.isfinite(d)}
    front = set()
    for a, (ua, da) in ok.items():
        if not any(ub >= ua and db <= da and (ub > ua or db < da) for b, (ub, db) in ok.items() if b != a):
            front.add(a)
    return front


def competitors_front(points: Mapping[str, tuple[float, float]]) -> set[str]:
    """:func:`pareto_front` of every point but the oracle's."""
    return pareto_front({k: v for k, v in points.items() if k != ORACLE})


def front_path(points: Mapping[str, tuple[float, float]], front: set[str]) -> list[tuple[float, float]]:
    """The front's points in order of increasing utilization (and so of increasing delay): the
    staircase a plot draws through them."""
    return sorted((points[k] for k in front), key=lambda p: (p[0], p[1]))


def ecdf(values: Iterable[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Empirical CDF of the finite values: sorted ``x`` and ``y[i] = (i + 1) / n``, the share of
    values ≤ ``x[i]``."""
    x = np.sort(np.array([v for v in (_num(a) for a in values) if math.isfinite(v)], dtype=float))
    return x, np.arange(1, len(x) + 1, dtype=float) / max(1, len(x))


def _num(v: Any) -> float:
    try:
        return float(v) if v is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def _mean(v: Sequence[float]) -> float:
    return math.fsum(v) / len(v) if v else math.nan
