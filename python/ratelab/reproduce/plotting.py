"""Small matplotlib helpers shared by the paper modules (object API, Agg canvas, no pyplot)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ratelab.reproduce.core import RunData, Stat

#: One colour per controller name, stable across figures of a paper.
COLORS = {
    "lcc": "C0", "gcc": "C3", "iris": "C0", "iris-mid": "C9", "iris (twcc)": "C4", "bbr": "C2", "cubic": "C3",
    "vegas": "C1", "pcc": "C5", "pcc-loss": "C8", "vivace": "C6", "dcrc": "C1", "dcrc-pi": "C0", "tfrc": "C3", "aimd": "C2",
    "dcrc-pi ω=c/2": "C4",
}


def figure(rows: int = 1, cols: int = 1, size: tuple[float, float] = (8.0, 4.0), **kw: Any) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, **kw)
    return fig, axes


def color(name: str, i: int = 0) -> str:
    return COLORS.get(name.lower(), f"C{i % 10}")


def sweep(ax: Any, xs: Sequence[float], stats: Mapping[str, Sequence[Stat]], *, scale: float = 1.0,
          xlabel: str = "", ylabel: str = "", labels: Mapping[str, str] | None = None) -> None:
    """Mean ± std against a swept parameter, one line per variant."""
    for i, (name, st) in enumerate(stats.items()):
        m = np.array([s.mean for s in st]) * scale
        e = np.array([s.std for s in st]) * scale
        ax.errorbar(xs, m, yerr=e, marker="o", ms=4, capsize=3, lw=1.3, color=color(name, i),
                    label=(labels or {}).get(name, name))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def rates(ax: Any, run: RunData, labels: Mapping[int, str] | None = None, column: str = "recv_kbps",
          capacity: bool = True, scale: float = 1e-3) -> None:
    """Per-flow rate (default: received) over time, with the capacity as a grey step."""
    if capacity and np.isfinite(run.capacity_kbps).any():
        ax.step(run.t, run.capacity_kbps * scale, where="pre", color="0.55", lw=2.2, alpha=0.6, label="capacity")
    for i, fid in enumerate(sorted(run.flows)):
        s = run.flows[fid]
        label = (labels or {}).get(fid) or run.summary["flows"][fid].get("label", f"flow {fid}")
        ax.plot(run.t, s[column] * scale, lw=1.1, label=label, color=f"C{i % 10}")
    ax.grid(True, alpha=0.3)
    ax.set_ylim(bottom=0)
