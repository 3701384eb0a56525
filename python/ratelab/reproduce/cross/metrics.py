"""The paper's metrics, computed from one run's summary and series."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ratelab.reproduce.core import RunData
from ratelab.reproduce.cross.experiments import SPIKE_MS


def utilization(run: RunData) -> float:
    """Paper Eq. 6: Σ bits received / (C · T)."""
    return float(run.summary["link"]["utilization"])


def mean_owd(run: RunData) -> float:
    """Mean one-way delay of every received packet (ms)."""
    fl = [f for f in run.summary["flows"] if f.get("owd_ms_mean") is not None and f["packets_received"] > 0]
    n = sum(f["packets_received"] for f in fl)
    return sum(f["owd_ms_mean"] * f["packets_received"] for f in fl) / n if n else math.nan


def loss_rate(run: RunData) -> float:
    fl = run.summary["flows"]
    sent = sum(f["packets_sent"] for f in fl)
    return sum(f["packets_lost"] for f in fl) / sent if sent else math.nan


def flow_rates(run: RunData, t0: float, t1: float, column: str = "recv_kbps") -> list[float]:
    """Mean rate of every flow active over all of (t0, t1] (kbit/s), in flow order."""
    out = []
    for f in run.summary["flows"]:
        if f["start_s"] <= t0 + 1e-9 and f["stop_s"] >= t1 - 1e-9:
            out.append(run.window_mean(int(f["id"]), column, t0, t1))
    return out


def jain(x: Sequence[float]) -> float:
    v = np.asarray(x, dtype=float)
    return float(v.sum() ** 2 / (len(v) * (v ** 2).sum())) if len(v) and (v ** 2).sum() > 0 else math.nan


def latecomer_ratio(run: RunData, t0: float, t1: float) -> float:
    """Mean rate of the late comers (flows 2 and 3) over that of flow 1 in (t0, t1]."""
    r = flow_rates(run, t0, t1)
    return float(np.mean(r[1:]) / r[0]) if len(r) == 3 and r[0] > 0 else math.nan


def fluctuation(run: RunData, windows: Sequence[tuple[float, float]]) -> float:
    """Rate fluctuation: std/mean of a flow's target rate (0.25 s means) within a window, averaged
    over the flows active throughout each window and over the windows."""
    cvs = []
    for t0, t1 in windows:
        for f in run.summary["flows"]:
            if f["start_s"] <= t0 + 1e-9 and f["stop_s"] >= t1 - 1e-9:
                v = run.window(int(f["id"]), "target_kbps", t0, t1)
                if len(v) > 1 and v.mean() > 0:
                    cvs.append(float(v.std() / v.mean()))
    return float(np.mean(cvs)) if cvs else math.nan


def time_to_gain(run: RunData, flow: int, t_from: float, gain_kbps: float, horizon: float) -> float:
    """Seconds after ``t_from`` until ``flow``'s 1 s mean target rate exceeds its 1 s mean just
    before ``t_from`` by ``gain_kbps``; inf if not within ``horizon``."""
    base = run.window_mean(flow, "target_kbps", t_from - 1.0, t_from)
    if not math.isfinite(base):
        return math.nan
    dt = float(run.t[1] - run.t[0]) if len(run.t) > 1 else 1.0
    t = t_from
    while t + 1.0 <= t_from + horizon + 1e-9:
        if run.window_mean(flow, "target_kbps", t, t + 1.0) >= base + gain_kbps:
            return t + 1.0 - t_from
        t += dt
    return math.inf


def base_owd(doc_flows: Sequence[dict[str, Any]]) -> float:
    return float(doc_flows[0]["one_way_delay_ms"])


def spike(run: RunData, t0: float, t1: float, base_ms: float) -> dict[str, float]:
    """VI-C delay spike in [t0, t1): seconds with the 25 ms-mean OWD above base + 100 ms, the time
    from t0 to the last such bin (settling), and the peak OWD."""
    s = run.flows[0]
    m = (run.t > t0 + 1e-9) & (run.t <= t1 + 1e-9)
    owd = s["owd_ms"][m]
    t = run.t[m]
    above = np.isfinite(owd) & (owd > base_ms + SPIKE_MS)
    dt = float(run.t[1] - run.t[0]) if len(run.t) > 1 else 0.025
    settle = float(t[above].max() - t0) if above.any() else 0.0
    return {"above": float(above.sum() * dt), "settle": settle,
            "peak": float(np.nanmax(owd)) if np.isfinite(owd).any() else math.nan}


def recovery(run: RunData, t_up: float, ref: tuple[float, float], frac: float = 0.9) -> float:
    """Seconds after ``t_up`` until the 1 s mean target rate is back at ``frac`` of its mean over
    ``ref`` (the level before the drop); inf if never."""
    s = run.flows[0]["target_kbps"]
    level = run.window_mean(0, "target_kbps", *ref)
    dt = float(run.t[1] - run.t[0]) if len(run.t) > 1 else 0.025
    w = max(1, int(round(1.0 / dt)))
    x = np.where(np.isfinite(s), s, 0.0)
    roll = np.convolve(x, np.ones(w) / w, mode="full")[: len(x)]
    for i in range(len(x)):
        if run.t[i] > t_up + 1.0 - 1e-9 and roll[i] >= frac * level:
            return float(run.t[i] - t_up)
    return math.inf
