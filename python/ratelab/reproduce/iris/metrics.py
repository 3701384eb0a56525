"""The paper's metrics, computed from one run's summary and series."""

from __future__ import annotations

import math

import numpy as np

from ratelab.reproduce.core import RunData
from ratelab.reproduce.iris.experiments import CAP


def utilization(run: RunData, t0: float, t1: float, flow_id: int = 0, cap: float = CAP) -> float:
    return run.window_mean(flow_id, "recv_kbps", t0, t1) / cap


def thr_mbps(run: RunData, flow_id: int = 0) -> float:
    return float(run.flow_summary(flow_id)["throughput_kbps"]) / 1000


def queue(run: RunData, flow_id: int = 0) -> float:
    v = run.flow_summary(flow_id).get("queue_delay_ms_mean")
    return float(v) if v is not None else math.nan


def jain(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=float)
    s2 = float((x ** 2).sum())
    return float(x.sum() ** 2 / (len(x) * s2)) if len(x) and s2 > 0 else math.nan


def rates_matrix(run: RunData) -> np.ndarray:
    """Per-second received rate of every flow (rows: flows; NaN before a flow starts)."""
    return np.vstack([run.flows[f]["recv_kbps"] for f in sorted(run.flows)]) if run.flows else np.zeros((0, len(run.t)))


def convergence(run: RunData, gap: float, hold_s: float = 5.0, threshold: float = 0.9) -> list[tuple[float, float]]:
    """Paper VI-B5: for each newly started flow (n = 2, 3, …) the time from its start to the earliest
    second after which Jain's index of the active flows stays ≥ 0.9 for ``hold_s`` seconds
    (NaN: never within its slot, which ends at the next start or at the end of the run), and the mean std of the flows' per-second rates (Mbit/s) from that
    point to the next start ("stability")."""
    R = rates_matrix(run) / 1000
    n = R.shape[0]
    out = []
    dt = float(run.t[1] - run.t[0]) if len(run.t) > 1 else 1.0
    end = float(run.t[-1]) if len(run.t) else 0.0
    for k in range(1, n):
        a, b = k * gap, ((k + 1) * gap if k + 1 < n else end)  # the last newcomer's slot runs to the end
        m = (run.t > a + 1e-9) & (run.t <= b + 1e-9)
        sub = np.nan_to_num(R[: k + 1][:, m])
        j = np.array([jain(sub[:, i]) for i in range(sub.shape[1])])
        need = int(round(hold_s / dt))
        conv = math.nan
        for i in range(0, len(j) - need + 1):
            if np.all(j[i:i + need] >= threshold):
                conv = (i + 1) * dt  # bin i covers (a + i·dt, a + (i+1)·dt]
                break
        if math.isnan(conv):
            stab = math.nan
        else:
            start = int(round(conv / dt)) - 1
            stab = float(np.mean(sub[:, start:].std(axis=1)))
        out.append((conv, stab))
    return out


def fair_metrics(run: RunData, gap: float, end: float, settle: float = 10.0) -> dict[str, float]:
    """From ``settle`` s after the last flow joined to the end: Jain's index of the mean rates, the mean
    std/mean of each flow's per-second rate, and the time after the last join until Jain (per second)
    stays ≥ 0.9 for 5 s."""
    n = len(run.flows)
    a = (n - 1) * gap
    rates = np.array([run.window_mean(f, "recv_kbps", a + settle, end) for f in sorted(run.flows)])
    cvs = []
    for f in sorted(run.flows):
        w = run.window(f, "recv_kbps", a + settle, end)
        cvs.append(float(w.std() / w.mean()) if len(w) and w.mean() > 0 else math.nan)
    conv = convergence(run, gap)[-1][0] if n > 1 else math.nan
    return {"jain": jain(rates), "cv": float(np.nanmean(cvs)), "conv": conv, "util": float(rates.sum()) / CAP,
            "ratio": float(rates.min() / rates.max()) if rates.max() > 0 else math.nan}
