"""Comparison figures: the Pareto plot (utilization against p95 queuing delay), CDFs over runs,
and time series as small multiples (one panel per controller, shared axes).

Every controller keeps one colour and marker across the figures of a page (:func:`styles`); the
oracle, which knows the capacity, is a black star: the reference, not a competitor.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ratelab.report.compare import ORACLE, Point, competitors_front, ecdf, front_path
from ratelab.report.plots import CAPACITY_STYLE, MAX_PLOT_ROWS, PLOT_COLUMNS, robust_top, save_png, smooth, read_series

MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h"]
#: Line styles of the CDFs: the 11th to 20th controller repeat the colours dash-dotted.
LINESTYLES = ["-", "-.", ":"]
#: Delays below this are drawn at it on log axes (a queue that never builds measures ~0.001 ms).
DELAY_FLOOR_MS = 1.0
#: Figure width in inches at 100 dpi: the page's content width (1180 px less padding).
WIDTH_IN = 11.4


def styles(names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """A colour (tab10) and a marker per controller, in page order; the oracle a black star."""
    out, i = {}, 0
    for n in dict.fromkeys(names):
        if n == ORACLE:
            out[n] = {"color": "black", "marker": "*", "ls": "--"}
            continue
        out[n] = {"color": f"C{i % 10}", "marker": MARKERS[(i // 10) % len(MARKERS)], "ls": LINESTYLES[(i // 10) % 3]}
        i += 1
    return out


def plot_pareto(groups: Sequence[tuple[str, Mapping[str, Point]]], png_path: str | Path, names: Sequence[str]) -> Path:
    """One panel per scenario group: each controller's mean utilization (x) against its mean p95
    queuing delay (y, log, inverted: better is up and right), bars spanning the per-seed means
    when there are several seeds; the Pareto front ringed and joined by a dashed line."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    st = styles(names)
    n = max(1, len(groups))
    ncols = 1 if n == 1 else 2
    nrows = math.ceil(n / ncols)
    fig = Figure(figsize=(WIDTH_IN, 4.6 if n == 1 else 3.6 * nrows + 0.4), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    shown: set[str] = set()
    for ax, (title, points) in zip(axes, groups):
        points = {k: _floored(p) for k, p in points.items()}
        xy = {k: (p.utilization, p.delay_ms) for k, p in points.items()}
        front = competitors_front(xy)
        for name, p in points.items():
            if not (math.isfinite(p.utilization) and math.isfinite(p.delay_ms)):
                continue
            s = st.get(name, {"color": "0.5", "marker": "o"})
            ms = 13 if name == ORACLE else 7
            if p.has_spread:
                ax.errorbar(100 * p.utilization, p.delay_ms,
                            xerr=[[100 * (p.utilization - p.util_lo)], [100 * (p.util_hi - p.utilization)]],
                            yerr=[[p.delay_ms - p.delay_lo], [p.delay_hi - p.delay_ms]],
                            fmt=s["marker"], color=s["color"], ms=ms, elinewidth=1, capsize=2, alpha=0.9, zorder=3)
            else:
                ax.plot(100 * p.utilization, p.delay_ms, s["marker"], color=s["color"], ms=ms, zorder=3)
            shown.add(name)
        path = front_path(xy, front)
        if path:
            ax.plot([100 * u for u, _ in path], [d for _, d in path], ls="--", color="0.25", lw=1, zorder=2)
            ax.plot([100 * u for u, _ in path], [d for _, d in path], "o", ms=15, mfc="none", mec="0.15", mew=1.2, zorder=4)
        for name in sorted(front, key=lambda k: xy[k][0]) + ([ORACLE] if ORACLE in xy else []):
            u, d = xy[name]
            if math.isfinite(u) and math.isfinite(d):
                ax.annotate(name, (100 * u, d), xytext=(6, 6), textcoords="offset points", fontsize=8, zorder=5)
        _log_inverted_delay_axis(ax, [p.delay_ms for p in points.values()] + [p.delay_lo for p in points.values()]
                                 + [p.delay_hi for p in points.values()])
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("media utilization (%) → better")
        ax.set_ylabel("p95 queuing delay (ms, log) ↑ better")
        if any(p.delay_lo <= DELAY_FLOOR_MS for p in points.values()):
            ax.text(0.99, 0.01, f"delays under {DELAY_FLOOR_MS:g} ms drawn at {DELAY_FLOOR_MS:g} ms", transform=ax.transAxes,
                    ha="right", va="bottom", fontsize=7, color="0.35")
        ax.grid(True, which="both", alpha=0.25)
    for ax in axes[len(groups):]:
        ax.set_visible(False)
    order = [k for k in dict.fromkeys(names) if k in shown]
    handles = [Line2D([], [], ls="", marker=st[k]["marker"], color=st[k]["color"], ms=9 if k == ORACLE else 6, label=k)
               for k in order]
    handles.append(Line2D([], [], ls="--", color="0.25", marker="o", mfc="none", mec="0.15", ms=9, label="Pareto front"))
    fig.legend(handles=handles, loc="outside right upper", fontsize=8, frameon=False,
               ncols=1 if len(handles) <= 24 else 2)
    return save_png(fig, png_path)


def plot_cdfs(runs: Mapping[str, Sequence[tuple[float, float]]], png_path: str | Path, names: Sequence[str],
              what: str = "runs") -> Path | None:
    """CDFs over runs of each controller's p95 queuing delay (left, log x) and utilization
    (right); ``runs`` maps a controller to its ``(utilization, delay_ms)`` run points."""
    from matplotlib.figure import Figure

    st = styles(names)
    fig = Figure(figsize=(WIDTH_IN, 3.9), layout="constrained")
    ax_d, ax_u = fig.subplots(1, 2)
    drawn, all_d = False, []
    for name in dict.fromkeys(names):
        pts = runs.get(name) or []
        d, yd = ecdf(max(p[1], DELAY_FLOOR_MS) for p in pts if math.isfinite(p[1]))
        u, yu = ecdf(100 * p[0] for p in pts)
        if len(d) == 0 and len(u) == 0:
            continue
        s = st[name]
        kw = dict(color=s["color"], lw=1.8 if name == ORACLE else 1.2, ls=s["ls"])
        if len(d):
            ax_d.step(np.r_[d[0], d], np.r_[0, yd], where="post", label=name, **kw)
            all_d += list(d)
        if len(u):
            ax_u.step(np.r_[u[0], u], np.r_[0, yu], where="post", **kw)
        drawn = True
    if not drawn:
        return None
    if all_d:
        ax_d.set_xscale("log")
        _plain_log_ticks(ax_d.xaxis, min(all_d), max(all_d))
    ax_d.set_xlabel(f"p95 queuing delay of a run (ms, log; under {DELAY_FLOOR_MS:g} ms at {DELAY_FLOOR_MS:g}) ← better")
    ax_u.set_xlabel("media utilization of a run (%) → better")
    for ax in (ax_d, ax_u):
        ax.set_ylabel(f"share of {what}")
        ax.set_ylim(0, 1.02)
        ax.grid(True, which="both", alpha=0.25)
    fig.legend(loc="outside right upper", fontsize=8, frameon=False, ncols=1 if len(runs) <= 24 else 2)
    return save_png(fig, png_path)


def plot_small_multiples(runs: Sequence[Any], png_path: str | Path, title: str = "", names: Sequence[str] | None = None,
                         dpi: int = 100) -> Path | None:
    """One panel per run (a :class:`~ratelab.run.runner.RunResult` with a series file): the media
    flows' target rates against the capacity (top) and the bottleneck's queuing delay (bottom),
    every panel on the same axes."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    data = [(r, read_series(r.series_path, PLOT_COLUMNS, MAX_PLOT_ROWS)) for r in runs if r.series_path is not None]
    if not data:
        return None
    st = styles(names or [r.name for r, _ in data])
    n = len(data)
    ncols = 1 if n == 1 else 2 if n <= 4 else 3 if n <= 9 else 4
    nrows = math.ceil(n / ncols)
    height = 2.35 * nrows + 0.9 + (0.3 if title else 0.0)
    fig = Figure(figsize=(WIDTH_IN, height))
    # Fixed margins instead of constrained layout: the grid is regular, and the layout engine
    # would measure every one of the 2 × n axes (seconds per figure on the leaderboard).
    outer = fig.add_gridspec(nrows, ncols, left=0.6 / WIDTH_IN, right=0.995, bottom=0.5 / height,
                             top=1 - (0.45 + (0.3 if title else 0.0)) / height, wspace=0.06, hspace=0.22)
    rate_axes, delay_axes = [], []
    caps: list[float] = []  # each panel's 99th-percentile capacity (kbit/s)
    multi = False
    for i, (run, s) in enumerate(data):
        sub = outer[i // ncols, i % ncols].subgridspec(2, 1, height_ratios=[2, 1], hspace=0.05)
        ax_r = fig.add_subplot(sub[0], sharex=rate_axes[0] if rate_axes else None, sharey=rate_axes[0] if rate_axes else None)
        ax_d = fig.add_subplot(sub[1], sharex=ax_r, sharey=delay_axes[0] if delay_axes else None)
        rate_axes.append(ax_r)
        delay_axes.append(ax_d)
        media = [f for f in run.flows if f.get("kind") == "media"]
        shown = media or run.flows
        multi = multi or len(shown) > 1
        first = shown[0] if shown else None
        rows = np.isin(s["flow"], [f["id"] for f in run.flows
                                   if first is None or f.get("direction") == first.get("direction")])
        t, idx = np.unique(s["t_s"][rows], return_index=True)
        cap = s["capacity_kbps"][rows][idx]
        caps.append(float(np.percentile(cap[np.isfinite(cap)], 99)) if np.isfinite(cap).any() else math.nan)
        if np.isfinite(cap).any():
            ax_r.step(t, cap / 1000, where="post", **{**CAPACITY_STYLE, "lw": 2})
        for j, f in enumerate(shown):
            m = s["flow"] == f["id"]
            color = st[run.name]["color"] if j == 0 else f"C{(j + 3) % 10}"
            y = s["target_kbps"][m] if f.get("kind") == "media" else smooth(s["t_s"][m], s["recv_kbps"][m])
            ax_r.plot(s["t_s"][m], y / 1000, lw=1.1, color=color)
        q = s["queue_ms"][rows][idx] if "queue_ms" in s else np.full(len(t), np.nan)
        ax_d.fill_between(t, 0, np.nan_to_num(q), step="post", color="C3", alpha=0.45, lw=0)
        ax_r.set_title(run.name, fontsize=9, loc="left", pad=2, fontweight="bold")
        bottom = i + ncols >= n
        left = i % ncols == 0
        ax_r.tick_params(labelbottom=False, labelsize=7.5)
        ax_d.tick_params(labelbottom=bottom, labelleft=left, labelsize=7.5)
        ax_r.tick_params(labelleft=left)
        if left:
            ax_r.set_ylabel("Mbit/s", fontsize=8)
            ax_d.set_ylabel("queue ms", fontsize=8)
        if bottom:
            ax_d.set_xlabel("time (s)", fontsize=8)
        for ax in (ax_r, ax_d):
            ax.grid(True, alpha=0.25)
    # Shared rate axis: up to the highest line, but at most 2.5 × the capacity, so that one
    # controller's spikes do not flatten every other panel (lines above are cut at the top).
    top = max(robust_top(ax) for ax in rate_axes)
    cap_top = max((c for c in caps if math.isfinite(c)), default=0.0) / 1000
    rate_axes[0].set_ylim(0, min(top, 2.5 * cap_top) if cap_top > 0 else top)
    delay_axes[0].set_ylim(0, max(_delay_top(ax) for ax in delay_axes))
    handles = [Line2D([], [], **{**CAPACITY_STYLE, "lw": 2}),
               Line2D([], [], color="0.2", lw=1.1, label="target rate" + (" (first media flow in the controller's colour)" if multi else "")),
               Line2D([], [], color="C3", lw=6, alpha=0.45, label="bottleneck queuing delay")]
    top = 1 - (0.3 / height if title else 0.0)
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, top), ncols=3, fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10, y=1 - 0.05 / height, va="top")
    return save_png(fig, png_path, dpi=dpi, palette=True)


def _floored(p: Point) -> Point:
    """``p`` with its delays raised to :data:`DELAY_FLOOR_MS` (for a log axis)."""
    f = DELAY_FLOOR_MS
    return dataclasses.replace(p, delay_ms=max(p.delay_ms, f), delay_lo=max(p.delay_lo, f), delay_hi=max(p.delay_hi, f))


def _delay_top(ax: Any) -> float:
    tops = [np.nanpercentile(np.asarray(c.get_paths()[0].vertices[:, 1]), 99.5) for c in ax.collections if c.get_paths()]
    top = max((v for v in tops if np.isfinite(v)), default=1.0)
    return 1.1 * top if top > 0 else 1.0


def _log_inverted_delay_axis(ax: Any, delays: Sequence[float]) -> None:
    """Log scale (delays span decades across controllers), small delays on top."""
    finite = [d for d in delays if math.isfinite(d) and d > 0]
    if finite:
        lo, hi = min(finite), max(finite)
        ax.set_yscale("log")
        ax.set_ylim(hi * 1.6, lo / 1.6)
        _plain_log_ticks(ax.yaxis, lo, hi)
    else:
        ax.invert_yaxis()


def _plain_log_ticks(axis: Any, lo: float, hi: float) -> None:
    """Ticks labelled 1, 2, 5, 10, ... (plain numbers) over up to two decades, decades beyond."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    decades = math.log10(hi / lo) if lo > 0 and hi > 0 else 0.0
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades <= 2.3 else (1.0,)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())
