"""PNG plots of one run from its time-series Parquet file: rates against the capacity, delays,
loss and freezes (comparison figures are in :mod:`ratelab.report.figures`).

Uses matplotlib's object API with the Agg canvas (no pyplot state, no display needed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ratelab.run.runner import RunResult

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
    lost_so_far: dict[int, float] = {}  # each flow's lost packets up to the last row read
    parts: list[dict[str, np.ndarray]] = []
    # One row group at a time (ratelab writes them of FLUSH_ROWS rows): iter_batches read ahead
    # and kept ~15 bytes per row of the file allocated, so the peak grew with the duration
    # (+81 MB for a 60,000 s run's 2.4 M rows, +19 MB this way).
    for group in range(pf.num_row_groups):
        batch = pf.read_row_group(group, columns=columns)
        cols = {name: batch.column(name).to_numpy() for name in batch.column_names}
        flow = cols["flow"]
        keep = np.zeros(len(flow), dtype=bool)
        lost = cols.get("lost_packets")
        lost_total = None if lost is None else np.full(len(flow), np.nan)
        for f in np.unique(flow):
            rows = np.flatnonzero(flow == f)
            k = seen.get(int(f), 0)
            keep[rows[(k + np.arange(len(rows))) % stride == 0]] = True
            seen[int(f)] = k + len(rows)
            if lost is not None:  # running total, so that the kept rows can carry the skipped rows' losses
                lost_total[rows] = lost_so_far.get(int(f), 0.0) + np.cumsum(np.nan_to_num(lost[rows]))
                lost_so_far[int(f)] = float(lost_total[rows[-1]])
        if lost is not None:
            cols["lost_packets"] = lost_total
        parts.append({name: v[keep] for name, v in cols.items()})
    out = {name: np.concatenate([p[name] for p in parts]) for name in (parts[0] if parts else {})}
    if "lost_packets" in out:  # back from running totals to packets lost since the previous kept row
        total = out["lost_packets"]
        for f in np.unique(out["flow"]):
            rows = np.flatnonzero(out["flow"] == f)
            total[rows] = np.diff(total[rows], prepend=0.0)
    return out


def plot_run(run: RunResult, png_path: str | Path, title: str = "") -> Path | None:
    """One run over time, three panels on one time axis: every flow's target, send and receive
    rate against the capacity; one-way delay per flow over the bottleneck's queuing delay;
    lost packets per second and freezes (one mark per freeze)."""
    if run.series_path is None:
        return None
    from matplotlib.figure import Figure

    s = read_series(run.series_path, PLOT_COLUMNS, MAX_PLOT_ROWS)
    fig = Figure(figsize=(11.4, 7.4), layout="constrained")
    ax_rate, ax_owd, ax_loss = fig.subplots(3, 1, sharex=True, height_ratios=[3, 2, 1.3])
    reverse_ids = [f["id"] for f in run.flows if f.get("direction") == "reverse"]
    two_way = bool(reverse_ids) and run.reverse_link is not None
    for rows, label, ls in _link_rows(s, reverse_ids if two_way else None):
        # Two bottlenecks (RFC 8867 5.3): each flow's rows carry the capacity of its own link.
        _capacity(ax_rate, s, rows, label=label, ls=ls)
        t, idx = np.unique(s["t_s"][rows], return_index=True)
        q = s["queue_ms"][rows][idx]
        ax_owd.fill_between(t, 0, np.nan_to_num(q), step="post", color="0.6" if ls == "-" else "0.8", alpha=0.5, lw=0,
                            label=f"{label.replace('capacity', '').strip() or 'bottleneck'} queuing delay")
    # Live runs (and series files older than these columns) have no per-interval loss or freezes.
    has_loss = "lost_packets" in s and bool(np.isfinite(s["lost_packets"]).any())
    freezes_drawn = False
    for j, f in enumerate(run.flows):
        m = s["flow"] == f["id"]
        if not m.any():
            continue
        t = s["t_s"][m]
        color = f"C{j % 10}"
        label = f.get("label") or f"flow {f['id']}"
        if f.get("direction") == "reverse":
            label += " (rev)"
        if f.get("kind") == "tcp":
            name = label if "tcp" in label.lower() else f"{label} (TCP)"
            ax_rate.plot(t, smooth(t, s["recv_kbps"][m]) / 1000, lw=1, color=color, label=f"{name} received")
        else:
            ax_rate.plot(t, s["target_kbps"][m] / 1000, lw=1.4, color=color, label=f"{label} target")
            ax_rate.plot(t, smooth(t, s["send_kbps"][m]) / 1000, lw=0.8, ls="--", color=color, alpha=0.8, label=f"{label} sent")
            ax_rate.plot(t, smooth(t, s["recv_kbps"][m]) / 1000, lw=0.8, ls=":", color=color, label=f"{label} received")
        ax_owd.plot(t, s["owd_ms"][m], lw=0.9, color=color, label=f"{label} one-way delay")
        if has_loss:
            sec, lost = _per_second(t, s["lost_packets"][m])
            if np.nansum(lost) > 0:
                ax_loss.step(sec, lost, where="post", lw=1, color=color, label=f"{label} lost")
        if has_loss and "freezes" in s:
            fz = s["freezes"][m]
            ok = np.isfinite(fz)
            at = t[ok][1:][np.diff(fz[ok]) > 0] if ok.sum() > 1 else np.array([])
            if len(at):
                ax_loss.plot(at, np.zeros(len(at)), "v", color=color, ms=7, clip_on=False,
                             label=f"{label} freeze" if not freezes_drawn or len(run.flows) > 1 else None)
                freezes_drawn = True
    ax_rate.set_title(title or run.controller, fontsize=11)
    ax_rate.set_ylabel("rate (Mbit/s)")
    ax_rate.set_ylim(0, robust_top(ax_rate))
    ax_rate.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax_owd.set_ylabel("delay (ms)")
    ax_owd.set_ylim(bottom=0)
    ax_owd.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    t_all = s["t_s"]
    if len(t_all):
        ax_loss.set_xlim(0, max(float(np.nanmax(t_all)), run.duration_s or 0.0))
    ax_loss.set_ylabel("lost packets/s")
    ax_loss.set_xlabel("time (s)")
    ax_loss.set_ylim(bottom=0)
    if ax_loss.get_legend_handles_labels()[0]:
        ax_loss.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    else:
        ax_loss.text(0.5, 0.5, "no loss, no freezes" if has_loss else "no per-interval loss or freezes in this series file",
                     transform=ax_loss.transAxes, ha="center", va="center", color="0.4", fontsize=9)
        ax_loss.set_ylim(0, 1)
    for ax in (ax_rate, ax_owd, ax_loss):
        ax.grid(True, alpha=0.3)
    return save_png(fig, png_path)


def _link_rows(s: dict[str, np.ndarray], reverse_ids: list[int] | None) -> list[tuple[np.ndarray | None, str, str]]:
    """The series rows of each bottleneck: all rows when there is one, else forward and reverse."""
    if not reverse_ids:
        return [(np.ones(len(s["t_s"]), dtype=bool), "capacity", "-")]
    rev = np.isin(s["flow"], reverse_ids)
    return [(~rev, "forward capacity", "-"), (rev, "reverse capacity", "--")]


#: At most this many loss bins in a run's figure: a simulated day is plotted as ~86 s bins instead
#: of 86,400 one-second steps (a 900-pixel-wide axis shows no more, and the figure's memory stays flat).
MAX_LOSS_BINS = 2_000


def _per_second(t: np.ndarray, v: np.ndarray, max_bins: int = MAX_LOSS_BINS) -> tuple[np.ndarray, np.ndarray]:
    """Sum ``v`` (counts per series interval) into bins of whole seconds of ``t`` and return (bin
    start in s, count per second): one-second bins, or for a run longer than ``max_bins`` seconds
    bins of ``ceil(span / max_bins)`` seconds whose count is divided by their width (a rate)."""
    ok = np.isfinite(v)
    if not ok.any():
        return np.array([]), np.array([])
    sec = np.floor(t[ok] + 1e-9).astype(np.int64)
    lo = sec.min()
    width = max(1, -(-(int(sec.max()) - int(lo) + 1) // max_bins))
    counts = np.bincount((sec - lo) // width, weights=v[ok])
    starts = lo + width * np.arange(len(counts))
    widths = np.minimum(width, sec.max() + 1 - starts)  # the last bin may be shorter
    return starts.astype(float), counts / widths


def _capacity(ax: Any, s: dict[str, np.ndarray], rows: np.ndarray | None = None, **style: Any) -> None:
    """The capacity over time, from the series rows selected by ``rows`` (default: all; every
    row of one time holds the same capacity when there is one bottleneck)."""
    t_s, cap_kbps = (s["t_s"], s["capacity_kbps"]) if rows is None else (s["t_s"][rows], s["capacity_kbps"][rows])
    t, idx = np.unique(t_s, return_index=True)
    cap = cap_kbps[idx]
    if np.isfinite(cap).any():
        ax.step(t, cap / 1000, where="post", **{**CAPACITY_STYLE, **style})


def save_png(fig: Any, png_path: str | Path, dpi: int = 100, palette: bool = False) -> Path:
    """Render ``fig`` on an Agg canvas and write it as a PNG (100 dpi) under a temporary name,
    then rename it into place (readers never see half a file). ``palette``: store it with 256
    colours (a plot has few; the file shrinks about threefold, which matters for pages that
    inline dozens of figures)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    png_path = Path(png_path)
    png_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = png_path.with_name(png_path.name + ".part")
    FigureCanvasAgg(fig)
    if palette:
        import io

        from PIL import Image  # matplotlib's own dependency

        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi)
        buf.seek(0)
        img = Image.open(buf).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        img.save(tmp, format="png", optimize=True)
    else:
        fig.savefig(tmp, format="png", dpi=dpi)
    tmp.replace(png_path)
    return png_path


def robust_top(ax: Any) -> float:
    """Upper y-limit that ignores rare spikes (some real traces hold single absurd samples)."""
    tops = [np.nanpercentile(y, 99) for y in (np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines())
            if np.isfinite(y).any()]
    top = max(tops, default=1.0)
    return 1.15 * top if top > 0 else 1.0


def smooth(t: np.ndarray, v: np.ndarray, window_s: float = 1.0) -> np.ndarray:
    """Moving average over about ``window_s`` (TCP rates are very bursty at 25 ms)."""
    if len(t) < 3:
        return v
    dt = float(np.median(np.diff(t))) or 1.0
    # No wider than the series: np.convolve(mode="same") returns the longer of its two inputs.
    n = min(len(v), max(1, int(round(window_s / dt))))
    if n == 1:
        return v
    valid = np.isfinite(v)
    kernel = np.ones(n)
    total = np.convolve(np.where(valid, v, 0.0), kernel, mode="same")
    count = np.convolve(valid.astype(float), kernel, mode="same")
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan)
