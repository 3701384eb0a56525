"""PNG plots from the time-series Parquet files: rate vs capacity and one-way delay.

Uses matplotlib's object API with the Agg canvas (no pyplot state, no display needed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .runner import RunResult, ScenarioRun

CAPACITY_STYLE = dict(color="0.55", lw=2.5, alpha=0.6, label="capacity")


#: Most series rows a plot reads whole (at 25 ms: 100 s × 50 flows, or 5,000 s of one flow; every
#: built-in scenario). A longer run is plotted from every k-th sample of each flow, read in batches,
#: about :data:`DECIMATED_ROWS` in all (far more points than a 900-pixel-wide figure shows), so that
#: plotting a simulated day takes as little memory as plotting a minute.
MAX_PLOT_ROWS = 200_000
DECIMATED_ROWS = 50_000
#: The series columns plots may use (those a file lacks are skipped); the others are not read.
PLOT_COLUMNS = ["t_s", "flow", "target_kbps", "send_kbps", "recv_kbps", "owd_ms", "capacity_kbps", "queue_ms",
                "freezes", "lost_packets"]


def read_series(path: str | Path, columns: list[str] | None = None, max_rows: int | None = None) -> dict[str, np.ndarray]:
    """The series columns (all by default) as arrays; with ``max_rows``, a file with more rows
    is decimated per flow (every k-th row of each flow) while it is read."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    n = pf.metadata.num_rows
    if columns is not None:
        columns = [c for c in columns if c in pf.schema_arrow.names]
    if max_rows is None or n <= max_rows:
        table = pf.read(columns)
        return {name: table.column(name).to_numpy(zero_copy_only=False) for name in table.column_names}
    stride = -(-n // min(max_rows, DECIMATED_ROWS))
    seen: dict[int, int] = {}  # rows of each flow read so far
    parts: list[dict[str, np.ndarray]] = []
    for batch in pf.iter_batches(batch_size=1 << 16, columns=columns):
        cols = {name: batch.column(name).to_numpy(zero_copy_only=False) for name in batch.schema.names}
        flow = cols["flow"]
        keep = np.zeros(len(flow), dtype=bool)
        for f in np.unique(flow):
            rows = np.flatnonzero(flow == f)
            k = seen.get(int(f), 0)
            keep[rows[(k + np.arange(len(rows))) % stride == 0]] = True
            seen[int(f)] = k + len(rows)
        parts.append({name: v[keep] for name, v in cols.items()})
    return {name: np.concatenate([p[name] for p in parts]) for name in (parts[0] if parts else {})}


def plot_run(run: RunResult, png_path: str | Path, title: str = "") -> Path | None:
    """One figure for one run: each flow's rate against the capacity (top) and OWD (bottom)."""
    if run.series_path is None:
        return None
    s = read_series(run.series_path, PLOT_COLUMNS, MAX_PLOT_ROWS)
    fig, (ax_rate, ax_owd) = _figure()
    reverse_ids = [f["id"] for f in run.flows if f.get("direction") == "reverse"]
    if reverse_ids and run.reverse_link is not None:
        # Two bottlenecks (RFC 8867 5.3): each flow's rows carry the capacity of its own link.
        rev = np.isin(s["flow"], reverse_ids)
        _capacity(ax_rate, s, ~rev, label="forward capacity")
        _capacity(ax_rate, s, rev, label="reverse capacity", ls="--")
    else:
        _capacity(ax_rate, s)
    for f in run.flows:
        m = s["flow"] == f["id"]
        if not m.any():
            continue
        t = s["t_s"][m]
        label = f.get("label") or f"flow {f['id']}"
        if f.get("direction") == "reverse":
            label += " (rev)"
        if f.get("kind") == "tcp":
            line = ax_rate.plot(t, _smooth(t, s["recv_kbps"][m]) / 1000, lw=1, label=f"{label} received" if "tcp" in label.lower() else f"{label} (TCP) received")
        else:
            line = ax_rate.plot(t, s["target_kbps"][m] / 1000, lw=1.2, label=f"{label} target")
        ax_owd.plot(t, s["owd_ms"][m], lw=0.8, color=line[0].get_color(), label=label)
    return _finish(fig, ax_rate, ax_owd, title or f"{run.controller}", png_path)


def plot_comparison(result: ScenarioRun, png_path: str | Path, title: str = "") -> Path | None:
    """One figure comparing the runs of a scenario on its first media flow."""
    fig, (ax_rate, ax_owd) = _figure()
    drawn = False
    flow_label = ""
    for i, run in enumerate(result.runs):
        if run.series_path is None:
            continue
        s = read_series(run.series_path, PLOT_COLUMNS, MAX_PLOT_ROWS)
        media = [f for f in run.flows if f.get("kind") == "media"] or run.flows
        if not media:
            continue
        f = media[0]
        if i == 0 or not drawn:
            # The capacity of the link this flow crosses (a scenario may have a reverse one).
            same_dir = np.isin(s["flow"], [g["id"] for g in run.flows if g.get("direction") == f.get("direction")])
            _capacity(ax_rate, s, same_dir if same_dir.any() else None)
        flow_label = f.get("label") or f"flow {f['id']}"
        m = s["flow"] == f["id"]
        t = s["t_s"][m]
        rate = s["target_kbps"][m] if f.get("kind") == "media" else _smooth(t, s["recv_kbps"][m])
        line = ax_rate.plot(t, rate / 1000, lw=1.2, label=run.name)
        ax_owd.plot(t, s["owd_ms"][m], lw=0.8, color=line[0].get_color(), label=run.name)
        drawn = True
    if not drawn:
        return None
    title = title or result.title or result.scenario.name
    multi = sum(1 for f in result.runs[0].flows if f.get("kind") == "media") > 1
    return _finish(fig, ax_rate, ax_owd, f"{title}: {flow_label}" if multi else title, png_path)


def plot_all(result: ScenarioRun) -> dict[str, Path]:
    """Write every plot of a scenario run next to its data; returns {name: path}."""
    out: dict[str, Path] = {}
    if result.out_dir is None:
        return out
    if len(result.runs) > 1:
        p = plot_comparison(result, result.out_dir / "comparison.png")
        if p:
            out["comparison"] = p
    for run in result.runs:
        if run.dir is None:
            continue
        p = plot_run(run, run.dir / "plot.png", f"{result.title or result.scenario.name} · {run.name}")
        if p:
            out[run.name] = p
    return out


def _figure() -> tuple[Any, tuple[Any, Any]]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 5.6), layout="constrained")
    ax_rate, ax_owd = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    return fig, (ax_rate, ax_owd)


def _capacity(ax: Any, s: dict[str, np.ndarray], rows: np.ndarray | None = None, **style: Any) -> None:
    """The capacity over time, from the series rows selected by ``rows`` (default: all; every
    row of one time holds the same capacity when there is one bottleneck)."""
    t_s, cap_kbps = (s["t_s"], s["capacity_kbps"]) if rows is None else (s["t_s"][rows], s["capacity_kbps"][rows])
    t, idx = np.unique(t_s, return_index=True)
    cap = cap_kbps[idx]
    if np.isfinite(cap).any():
        ax.step(t, cap / 1000, where="post", **{**CAPACITY_STYLE, **style})


def _finish(fig: Any, ax_rate: Any, ax_owd: Any, title: str, png_path: str | Path) -> Path:
    ax_rate.set_title(title, fontsize=11)
    ax_rate.set_ylabel("rate (Mbit/s)")
    ax_rate.set_ylim(0, _robust_top(ax_rate))
    ax_rate.legend(fontsize=8, loc="best", ncols=2)
    ax_owd.set_ylabel("one-way delay (ms)")
    ax_owd.set_xlabel("time (s)")
    ax_owd.set_ylim(bottom=0)
    for ax in (ax_rate, ax_owd):
        ax.grid(True, alpha=0.3)
    return _save_png(fig, png_path)


def _save_png(fig: Any, png_path: str | Path) -> Path:
    """Render ``fig`` on an Agg canvas and write it as a 100-dpi PNG under a temporary name,
    then rename it into place (readers never see half a file)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    png_path = Path(png_path)
    png_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = png_path.with_name(png_path.name + ".part")
    FigureCanvasAgg(fig)
    fig.savefig(tmp, format="png", dpi=100)
    tmp.replace(png_path)
    return png_path


def _robust_top(ax: Any) -> float:
    """Upper y-limit that ignores rare spikes (some real traces hold single absurd samples)."""
    tops = [np.nanpercentile(y, 99) for y in (np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines())
            if np.isfinite(y).any()]
    top = max(tops, default=1.0)
    return 1.15 * top if top > 0 else 1.0


def _smooth(t: np.ndarray, v: np.ndarray, window_s: float = 1.0) -> np.ndarray:
    """Moving average over about ``window_s`` (TCP rates are very bursty at 25 ms)."""
    if len(t) < 3:
        return v
    dt = float(np.median(np.diff(t))) or 1.0
    n = max(1, int(round(window_s / dt)))
    if n == 1:
        return v
    valid = np.isfinite(v)
    kernel = np.ones(n)
    total = np.convolve(np.where(valid, v, 0.0), kernel, mode="same")
    count = np.convolve(valid.astype(float), kernel, mode="same")
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan)


def plot_pareto(points: dict[str, tuple[float, float]], per_trace: list[tuple[float, float, str]], front: set[str],
                png_path: str | Path) -> Path:
    """Utilization against p95 one-way delay: one large marker per controller (ringed when
    Pareto-optimal), small markers for every (controller, trace)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 5.2), layout="constrained")
    ax = fig.subplots()
    colors = {}
    for i, name in enumerate(points):
        colors[name] = f"C{i % 10}"
    for d, u, name in per_trace:
        if d is not None and u is not None and np.isfinite(d) and np.isfinite(u):
            ax.scatter(d, 100 * u, s=10, alpha=0.35, color=colors.get(name, "0.5"), linewidths=0)
    for name, (d, u) in points.items():
        if not (np.isfinite(d) and np.isfinite(u)):
            continue
        ax.scatter(d, 100 * u, s=90, color=colors[name], label=name + (" (Pareto)" if name in front else ""),
                   edgecolors="black" if name in front else "none", linewidths=1.5, zorder=3)
    if all(np.isfinite(d) and d > 0 for d, _ in points.values()):
        ax.set_xscale("log")
    ax.set_xlabel("95th-percentile one-way delay (ms, log scale), lower is better")
    ax.set_ylabel("media utilization (%), higher is better")
    ax.set_title("Throughput against delay", fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return _save_png(fig, png_path)
