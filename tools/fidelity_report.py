"""``tools/fidelity.py report`` (and what ``score`` shares with it): the run folders of the
fidelity study loaded, measured with python/ratelab/report/fidelity.py's metrics, and written
as docs/fidelity/<study>/table.md, runs.csv and one figure per case. ``--keep`` carries runs of
an earlier runs.csv whose folders are gone (metrics only)."""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fidelity import CONTENDERS, Bad, Case, ceiling, forward_flows, scenario_of, select

def _column(v):
    from ratelab.report.fidelity import column

    return column(v)


@dataclass
class Loaded:
    meta: dict[str, Any]
    grid: dict[str, Any]
    summary_run: dict[str, Any]
    #: The run's output folder (series, summary, the browser's provenance).
    run_dir: Path
    capacity: Any = None
    #: Frames the encoder produced per second (first forward flow) on the grid; None when the
    #: series has no ``fps`` column (simulator runs before it was recorded).
    fps: Any = None
    metrics: dict[str, float] = field(default_factory=dict)
    #: A run kept from an earlier runs.csv (``report --keep``): its metrics and its row, no
    #: series (no figure, no target error).
    kept_row: dict[str, Any] | None = None
    #: Target error (%) against Chromium's and against the own live contender's mean target.
    mare: tuple[float, float] = (math.nan, math.nan)


def kept_runs(path: Path, option: str = "--keep", need: tuple[str, ...] | None = None) -> dict[tuple[str, str], list[Loaded]]:
    """The runs of an earlier runs.csv per (case, contender), as metric-only runs. ``need``:
    the columns it must have (default: every metric and the duration; a metric outside it may
    be missing, then unknown); ``option`` names the flag in error lines."""
    if not path.is_file():
        raise Bad(f"error: {option}: no such file: {path}")
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    need = ("case", "contender", "rep", *(need if need is not None else ("duration_s", *METRICS)))
    if not rows or any(k not in rows[0] for k in need):
        raise Bad(f"error: {option}: {path} is not a fidelity runs.csv (it needs the columns {', '.join(need)})")
    out: dict[tuple[str, str], list[Loaded]] = {}
    for r in rows:
        num = lambda v: float(v) if v not in ("", None) else math.nan  # noqa: E731
        meta = {"rep": r["rep"], "duration_s": num(r.get("duration_s")), "load1_before": num(r.get("load1_before")),
                "cpu_limited": r.get("cpu_limited") == "True"}
        out.setdefault((r["case"], r["contender"]), []).append(
            Loaded(meta, None, {}, Path(), metrics={k: num(r.get(k)) for k in METRICS}, kept_row=r,
                   mare=tuple(num(r.get(k)) for k in MARE_COLUMNS)))
    return out


def load_case(out: Path, case: Case) -> tuple[dict[str, list[Loaded]], dict[str, str]]:
    """The complete runs of a case per contender, and the refusals."""
    import pyarrow.parquet as pq
    from ratelab.report import fidelity as F

    runs: dict[str, list[Loaded]] = {}
    refused: dict[str, str] = {}
    for c in CONTENDERS:
        d = out / case.name / c
        if (d / "refused.txt").is_file():
            refused[c] = (d / "refused.txt").read_text().strip()
        for m in sorted(d.glob("*/meta.json")) if d.is_dir() else []:
            meta = json.loads(m.read_text())
            rd = m.parent / meta["run_folder"]
            series = pq.read_table(rd / "series.parquet").to_pydict()
            summary = json.loads((m.parent / "summary.json").read_text())["runs"][0]
            sc = scenario_of(case, meta["duration_s"])
            flows = forward_flows(sc)
            g = F.run_grid({k: _column(v) for k, v in series.items() if k in ("t_s", "flow", "recv_kbps", "send_kbps",
                                                                             "target_kbps", "queue_ms", "capacity_kbps")},
                           flows, meta["duration_s"])
            lo = Loaded(meta, g, summary, rd)
            t, fl = _column(series["t_s"]), _column(series["flow"])
            sel = fl == flows[0]
            if c.startswith("sim"):
                lo.capacity = F.grid(t[sel], _column(series["capacity_kbps"])[sel], meta["duration_s"])
            if "fps" in series:
                lo.fps = F.grid(t[sel], _column(series["fps"])[sel], meta["duration_s"])
            runs.setdefault(c, []).append(lo)
    return runs, refused



def case_capacity(runs: dict[str, list[Loaded]]):
    """The capacity on the grid: the simulator's link model (its series), same for all."""
    for c in ("sim-gcc", "sim-ratelab-cc"):
        for lo in runs.get(c, []):
            if lo.capacity is not None:
                return lo.capacity
    return None


@dataclass
class Measured:
    """A case's complete runs with their metrics, and what the report needs beside them."""

    runs: dict[str, list[Loaded]]
    refused: dict[str, str]
    capacity: Any
    #: Grid bins every run has.
    n: int
    flows: list[int]
    duration: float


def measured_case(out: Path, case: Case, kept: dict[tuple[str, str], list[Loaded]] | None = None) -> Measured | None:
    """The case's runs in ``out`` with their metrics, and the ``kept`` runs whose folders are
    not there; None when it has none, or no simulator run to give the capacity (said on stderr)."""
    from ratelab.report import fidelity as F

    runs, refused = load_case(out, case)
    if not runs and not refused:
        return None
    cap = case_capacity(runs)
    if cap is None:
        print(f"fidelity: {case.name}: no simulator run, no capacity reference: skipped", file=sys.stderr)
        return None
    durs = {lo.meta["duration_s"] for v in runs.values() for lo in v}
    n = min(len(lo.grid["delivered"]) for v in runs.values() for lo in v)
    sc = scenario_of(case, min(durs))
    flows = forward_flows(sc)
    steps = F.steps_of(sc.data.get("link") or {}, min(durs))
    for lst in runs.values():
        for lo in lst:
            lo.metrics = F.run_metrics(lo.grid, cap[:len(lo.grid["delivered"])], lo.summary_run, flows, steps,
                                       ceiling_kbps=ceiling(sc))
    for c in CONTENDERS:
        here = {lo.meta["rep"] for lo in runs.get(c, [])}
        extra = [lo for lo in (kept or {}).get((case.name, c), []) if lo.meta["rep"] not in here]
        if extra:
            runs.setdefault(c, []).extend(extra)
            runs[c].sort(key=lambda lo: lo.meta["rep"])
    return Measured(runs, refused, cap, n, flows, min(durs))


def report(a: argparse.Namespace) -> int:
    from ratelab.report import fidelity as F

    out, docs = Path(a.out), Path(a.docs)
    if not out.is_dir():
        raise Bad(f"error: --out: no such folder: {out}")
    kept = kept_runs(Path(a.keep)) if a.keep else None
    docs.mkdir(parents=True, exist_ok=True)
    rows, goals, per_run, gaps = [], [], [], []
    for case in select(a.cases):
        m = measured_case(out, case, kept)
        if m is None:
            continue
        runs, refused, cap, n, flows = m.runs, m.refused, m.capacity, m.n, m.flows
        real_target = {c: _targets(runs.get(c, []), flows, n) for c in ("chromium", "live-gcc", "live-ratelab-cc")}
        for c in CONTENDERS:
            lst = runs.get(c, [])
            if not lst and c not in refused:
                continue
            # each run's target error against the real contenders' mean target: computed from
            # the series where the run has them, else the value its kept row recorded
            own = {"sim-gcc": "live-gcc", "sim-ratelab-cc": "live-ratelab-cc"}.get(c)
            for lo in lst:
                if lo.grid is not None:
                    lo.mare = (_mare(lo, flows, n, real_target["chromium"]) if c != "chromium" else math.nan,
                               _mare(lo, flows, n, real_target[own]) if own else math.nan)
            vs_chrome = [lo.mare[0] for lo in lst]
            vs_live = [lo.mare[1] for lo in lst]
            row = {"case": case.name, "split": case.split, "contender": c, "n": len(lst), "refused": refused.get(c, "") if not lst else ""}
            for k in METRICS:
                row[k] = F.spread(lo.metrics[k] for lo in lst)
            row["mare_chromium"], row["mare_live"] = F.spread(vs_chrome), F.spread(vs_live)
            row["load1"] = F.spread(lo.meta.get("load1_before", math.nan) for lo in lst) if not c.startswith("sim") else None
            row["cpu_limited"] = any(lo.meta.get("cpu_limited") for lo in lst)
            row["duration"] = sorted({lo.meta["duration_s"] for lo in lst})
            rows.append(row)
            for lo in lst:
                if lo.kept_row is not None:
                    per_run.append(lo.kept_row)
                    continue
                per_run.append({"case": case.name, "split": case.split, "contender": c, "rep": lo.meta["rep"],
                                "duration_s": lo.meta["duration_s"], "media_fps": lo.meta.get("media_fps") or "", "load1_before": lo.meta.get("load1_before"),
                                "load1_after": lo.meta.get("load1_after"), "cpu_limited": lo.meta.get("cpu_limited", ""),
                                "cpu_limited_fraction": lo.meta.get("cpu_limited_fraction", ""),
                                "source_fps": lo.meta.get("source_fps", ""), **emulator_lateness(lo),
                                **{k: round(v, 3) for k, v in lo.metrics.items()},
                                **{k: round(v, 2) if math.isfinite(v) else "" for k, v in zip(MARE_COLUMNS, lo.mare)}})
        sim, real = by_metric(runs.get("sim-gcc", [])), by_metric(runs.get("chromium", []))
        met, why = F.goal(sim, real)
        goals.append((case, met, why))
        gaps.append((case, mean_gaps(sim, real)))
        if a.figures:
            figure(case, runs, cap, n, docs / f"{case.name}.png", m.duration)
    (docs / "table.md").write_text(table_md(rows, goals, a) + gaps_md(gaps, goals))
    with (docs / "runs.csv").open("w", newline="") as fh:
        if per_run:
            # the union of the columns (rows kept from an older runs.csv may lack newer ones)
            w = csv.DictWriter(fh, fieldnames=list(dict.fromkeys(k for r in per_run for k in r)), restval="")
            w.writeheader()
            w.writerows(per_run)
    print(f"fidelity: wrote {docs / 'table.md'}, {docs / 'runs.csv'} and {len(goals) if a.figures else 0} figures", file=sys.stderr)
    return 0


def emulator_lateness(lo: Loaded) -> dict[str, Any]:
    """How late the browser call's emulator wrote the data legs' datagrams (``send_late_us``:
    the largest p99 and max over the routes; empty for other contenders)."""
    b = lo.run_dir / "browser.json"
    if not b.is_file():
        return {"emu_late_p99_us": "", "emu_late_max_us": "", "emu_realtime": ""}
    st = json.loads(b.read_text()).get("emulator", {}).get("stats", {})
    late = [r["data"]["send_late_us"] for r in st.get("routes", []) if r.get("data", {}).get("send_late_us", {}).get("n")]
    if not late:
        return {"emu_late_p99_us": "", "emu_late_max_us": "", "emu_realtime": st.get("realtime", "")}
    return {"emu_late_p99_us": max(x["p99"] for x in late), "emu_late_max_us": max(x["max"] for x in late),
            "emu_realtime": st.get("realtime", "")}


def _targets(lst: list[Loaded], flows: list[int], n: int):
    """The real contender's per-flow target, mean over its repeats (those with series),
    concatenated over flows."""
    import numpy as np
    from ratelab.report import fidelity as F

    lst = [lo for lo in lst if lo.grid is not None]
    if not lst:
        return None
    return np.concatenate([F.nanmean_rows([lo.grid[f"target{f}"][:n] for lo in lst]) for f in flows])


def _mare(lo: Loaded, flows: list[int], n: int, real) -> float:
    import numpy as np
    from ratelab.report import fidelity as F

    if real is None:
        return math.nan
    return F.median_abs_rel_error(np.concatenate([lo.grid[f"target{f}"][:n] for f in flows]), real)


GAP_METRICS = ("utilization", "queue_mean_ms", "queue_p95_ms", "freezes")
#: runs.csv's columns for a run's target error (%) against Chromium and against its own live
#: contender (so that ``--keep`` can carry them).
MARE_COLUMNS = ("mare_vs_chromium_pct", "mare_vs_live_pct")
#: Every metric of a run, as the table and runs.csv show them.
METRICS = ("utilization", "queue_mean_ms", "queue_p95_ms", "freezes", "loss_pct", "t90_up_s", "react_down_s")


def by_metric(lst: list[Loaded]) -> dict[str, list[float]]:
    """The goal's and the gaps' metrics of a contender's runs, one value per run."""
    return {k: [lo.metrics[k] for lo in lst] for k in GAP_METRICS}


def _fmt(s, digits: int = 0) -> str:
    if s is None:
        return ""
    mean, half, n = s
    if n == 0 or not math.isfinite(mean):
        return "—"
    return f"{mean:.{digits}f}" if n == 1 else f"{mean:.{digits}f} ± {half:.{digits}f}"


def table_md(rows: list[dict[str, Any]], goals, a) -> str:
    lines = ["<!-- written by tools/fidelity.py report; do not edit -->", "",
             "Mean ± half-range over the runs (real: repeats, simulated: seeds); one value: one run. "
             "— : not measurable (no step in the case, never reached, or no run).", "",
             "| case | split | contender | runs | util % | queue mean ms | queue p95 ms | freezes | loss % | t90 up s | "
             "react down s | target MARE % vs Chromium | vs own live | load1 | s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["refused"]:
            lines.append(f"| {r['case']} | {r['split']} | {r['contender']} | 0 | refused: {r['refused'].split(' ', 1)[-1]} "
                         "| | | | | | | | | | |")
            continue
        cpu = " (CPU-limited)" if r["cpu_limited"] else ""
        lines.append(f"| {r['case']} | {r['split']} | {r['contender']}{cpu} | {r['n']} | {_fmt(r['utilization'])} | "
                     f"{_fmt(r['queue_mean_ms'])} | {_fmt(r['queue_p95_ms'])} | {_fmt(r['freezes'], 1)} | {_fmt(r['loss_pct'], 2)} | "
                     f"{_fmt(r['t90_up_s'], 1)} | {_fmt(r['react_down_s'], 1)} | {_fmt(r['mare_chromium'])} | {_fmt(r['mare_live'])} | "
                     f"{_fmt(r['load1'], 1)} | {'/'.join(f'{d:g}' for d in r['duration'])} |")
    met = [g for g in goals if g[1] is not None]
    ok = [g for g in met if g[1]]
    lines += ["", f"Goal (sim gcc vs Chromium: util ±{5} pt, p95 queue ±25 % or 10 ms, freezes inside the real range): "
              f"met on {len(ok)} of {len(met)} cases with both sides"
              + (f" ({100 * len(ok) / len(met):.0f} %)" if met else "") + ".", "",
              "| case | split | goal | why not |", "|---|---|---|---|"]
    for case, m, why in goals:
        lines.append(f"| {case.name} | {case.split} | {'—' if m is None else ('pass' if m else 'fail')} | {why if m is not True else ''} |")
    return "\n".join(lines) + "\n"


def mean_gaps(sim: dict[str, list[float]], real: dict[str, list[float]]) -> dict[str, float]:
    """|mean over sim seeds − mean over real repeats| per metric (NaN without both sides)."""
    out = {}
    for k in GAP_METRICS:
        sv = [x for x in sim.get(k, []) if math.isfinite(x)]
        rv = [x for x in real.get(k, []) if math.isfinite(x)]
        out[k] = abs(sum(sv) / len(sv) - sum(rv) / len(rv)) if sv and rv else math.nan
    return out


def gaps_md(gaps: list[tuple[Case, dict[str, float]]], goals) -> str:
    """The calibration log's summary line: per split (synthetic, train, test), the median over
    the cases of |sim gcc − Chromium| and the goal count."""
    import numpy as np

    splits = (("synthetic", "-"), ("train", "train"), ("test", "test"))
    lines = ["", "Median over the cases of |sim gcc − Chromium| (means over seeds and repeats), per split:", "",
             "| split | cases | utilization pt | queue mean ms | queue p95 ms | freezes | goal met |", "|---|---|---|---|---|---|---|"]
    for label, key in splits:
        sel = [g for c, g in gaps if c.split == key]
        met = [m for c, m, _ in goals if c.split == key and m is not None]
        med = [np.nanmedian([g[k] for g in sel]) if sel and any(math.isfinite(g[k]) for g in sel) else math.nan for k in GAP_METRICS]
        lines.append(f"| {label} | {len(sel)} | {med[0]:.1f} | {med[1]:.1f} | {med[2]:.1f} | {med[3]:.1f} | "
                     f"{sum(met)} of {len(met)} |")
    return "\n".join(lines) + "\n"


COLORS = {"chromium": "tab:red", "live-gcc": "tab:orange", "sim-gcc": "tab:blue", "live-ratelab-cc": "tab:purple",
          "sim-ratelab-cc": "tab:green"}


def figure(case: Case, runs: dict[str, list[Loaded]], cap, n: int, path: Path, duration: float) -> None:
    """Delivered (solid) and target (dashed) rate, queuing delay and (where a series has it)
    the encoder's frame rate over time, first run of each contender (with a queuing-delay series
    where one has it), with the capacity."""
    import matplotlib
    import numpy as np
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from ratelab.report import fidelity as F

    t = F.grid_times(duration)[:n]
    with_fps = any(lo.fps is not None for lst in runs.values() for lo in lst if lo.grid is not None)
    rows, ratios = (3, [3, 2, 1.4]) if with_fps else (2, [3, 2])
    fig, axes = plt.subplots(rows, 1, figsize=(9, 5.5 + 1.6 * (rows - 2)), sharex=True, gridspec_kw={"height_ratios": ratios})
    ax1, ax2 = axes[0], axes[1]
    ax1.step(t, cap[:n], where="pre", color="black", lw=1.2, label="capacity")
    for c, lst in runs.items():
        lst = [lo for lo in lst if lo.grid is not None]  # kept runs have no series
        if not lst:
            continue
        # the first run with a queuing-delay series (the pilot's first browser runs had none)
        g = next((lo.grid for lo in lst if np.isfinite(lo.grid["queue"]).any()), lst[0].grid)
        ax1.plot(t, g["delivered"][:n], color=COLORS[c], lw=1.1, label=f"{c} delivered")
        ax1.plot(t, g["target"][:n], color=COLORS[c], lw=0.9, ls="--", label=f"{c} target")
        ax2.plot(t, g["queue"][:n], color=COLORS[c], lw=1.0, label=c)
        fps = next((lo.fps for lo in lst if lo.fps is not None), None)
        if with_fps and fps is not None:
            # over 1 s (two bins): at 15 frames/s a 0.5 s bin holds 7 or 8 frames
            smooth = np.convolve(np.nan_to_num(fps[:n], nan=0.0), [0.5, 0.5], mode="same")
            axes[2].plot(t, np.where(np.isfinite(fps[:n]), smooth, np.nan), color=COLORS[c], lw=1.0, label=c)
    ax1.set_ylabel("kbit/s")
    ax1.set_title(f"{case.name} ({case.split}): {case.note}", fontsize=9)
    ax1.legend(fontsize=6, ncol=3, loc="upper right")
    ax2.set_ylabel("queuing delay (ms)")
    ax2.legend(fontsize=6, ncol=5, loc="upper right")
    if with_fps:
        axes[2].set_ylabel("encoded frames/s (1 s)")
        axes[2].set_ylim(bottom=0)
        axes[2].legend(fontsize=6, ncol=5, loc="lower right")
    axes[-1].set_xlabel("time (s)")
    fig.tight_layout()
    tmp = path.with_suffix(".png.part")
    fig.savefig(tmp, dpi=90, format="png")
    plt.close(fig)
    os.replace(tmp, path)
