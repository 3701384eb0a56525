"""The leaderboard: every controller over every real trace in a folder, a few seeds, one HTML page.

The runs are an ordinary campaign (``results/leaderboard/``, resumable, queryable with
``ratelab query leaderboard ...``); the page is built from the same DuckDB tables.

Ranking: on each trace, controllers are ranked by media utilization (higher is better), by the
95th-percentile one-way delay (lower is better) and by freeze ratio (lower is better), each
averaged over seeds; a controller's score on the trace is the mean of its three ranks and its
overall score the mean over traces (lower is better, 1 is best everywhere).
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import Any, Sequence

from . import __version__
from .campaign import Plan, load_plan
from .report import CSS, fmt
from .results import write_text_atomic

LEADERBOARD_CSS = CSS + """
details { margin: 0.4em 0; border: 1px solid #ddd; border-radius: 4px; padding: 0.2em 0.8em; }
summary { cursor: pointer; font-weight: 600; } td.best { background: #e8f5e9; }
"""


def leaderboard_plan(traces: str | Path, controllers: Sequence[str] | None, seeds: int, duration_s: float,
                     name: str = "leaderboard") -> Plan:
    data: dict[str, Any] = {
        "name": name,
        "description": f"every controller over every trace in {traces}, {seeds} seeds, {duration_s:g} s",
        "controllers": list(controllers) if controllers else "all",
        "traces": [str(traces)],
        "trace_duration_s": duration_s,
        "seeds": seeds,
    }
    return load_plan(name, data=data)


def _metrics(con) -> list[dict[str, Any]]:
    """Per (controller, trace): media metrics averaged over seeds."""
    rows = con.execute("""
        SELECT controller, scenario,
               avg(utilization) AS utilization, avg(throughput_kbps) AS throughput_kbps,
               avg(owd_ms_p95) AS owd_ms_p95, avg(queue_delay_ms_p95) AS queue_delay_ms_p95,
               avg(coalesce(freeze_ratio, 0)) AS freeze_ratio, avg(loss_rate) AS loss_rate,
               avg(link_capacity_kbps_mean) AS capacity_kbps, count(DISTINCT seed) AS seeds
        FROM flows WHERE kind = 'media'
        GROUP BY controller, scenario ORDER BY scenario, controller""").fetchall()
    cols = ["controller", "scenario", "utilization", "throughput_kbps", "owd_ms_p95", "queue_delay_ms_p95",
            "freeze_ratio", "loss_rate", "capacity_kbps", "seeds"]
    return [dict(zip(cols, r)) for r in rows]


def _ranks(values: list[float], higher_better: bool) -> list[float]:
    """Average ranks (1 = best); NaN/None rank last."""
    key = [(-v if higher_better else v) if v is not None and math.isfinite(v) else math.inf for v in values]
    order = sorted(range(len(key)), key=lambda i: key[i])
    ranks = [0.0] * len(key)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and key[order[j + 1]] == key[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def ranking(metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per controller, best first (see the module doc for the score)."""
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for m in metrics:
        by_trace.setdefault(m["scenario"], []).append(m)
    scores: dict[str, list[float]] = {}
    for rows in by_trace.values():
        r_u = _ranks([r["utilization"] for r in rows], True)
        r_d = _ranks([r["owd_ms_p95"] for r in rows], False)
        r_f = _ranks([r["freeze_ratio"] for r in rows], False)
        for i, r in enumerate(rows):
            scores.setdefault(r["controller"], []).append((r_u[i] + r_d[i] + r_f[i]) / 3)
    out = []
    for c, s in scores.items():
        mine = [m for m in metrics if m["controller"] == c]
        out.append({
            "controller": c, "score": sum(s) / len(s), "traces": len(s),
            "utilization": _mean([m["utilization"] for m in mine]),
            "throughput_kbps": _mean([m["throughput_kbps"] for m in mine]),
            "owd_ms_p95": _median([m["owd_ms_p95"] for m in mine]),
            "freeze_ratio": _mean([m["freeze_ratio"] for m in mine]),
            "loss_rate": _mean([m["loss_rate"] for m in mine]),
        })
    out.sort(key=lambda r: (r["score"], r["controller"]))
    return out


def pareto_front(points: dict[str, tuple[float, float]]) -> set[str]:
    """Names whose (delay, utilization) no other point beats in both (lower delay, higher util)."""
    front = set()
    for a, (da, ua) in points.items():
        if not (math.isfinite(da) and math.isfinite(ua)):
            continue
        dominated = any(
            (db <= da and ub >= ua) and (db < da or ub > ua)
            for b, (db, ub) in points.items() if b != a and math.isfinite(db) and math.isfinite(ub))
        if not dominated:
            front.add(a)
    return front


def write_leaderboard(root: Path, path: Path, title: str = "ratelab leaderboard") -> Path:
    """Build the self-contained HTML page from the campaign in ``root``."""
    from .plots import plot_pareto
    from .store import connect

    con = connect(root)
    try:
        metrics = _metrics(con)
        runs = con.execute("SELECT count(*), count(DISTINCT scenario), count(DISTINCT seed), sum(wall_seconds) FROM runs").fetchone()
        series_dirs = con.execute("SELECT controller, scenario, min(seed) FROM runs GROUP BY controller, scenario").fetchall()
    finally:
        con.close()
    if not metrics:
        raise ValueError(f"no finished media runs in {root}")
    rank = ranking(metrics)
    assets = root / "report"
    assets.mkdir(parents=True, exist_ok=True)
    points = {r["controller"]: (r["owd_ms_p95"], r["utilization"]) for r in rank}
    front = pareto_front(points)
    per_trace = [(m["owd_ms_p95"], m["utilization"], m["controller"]) for m in metrics]
    pareto_png = plot_pareto(points, per_trace, front, assets / "pareto.png")

    body = [f"<h1>{_e(title)}</h1>",
            f'<p class="meta">ratelab {_e(__version__)} · {runs[0]} runs: {len(rank)} controllers × '
            f"{runs[1]} traces × {runs[2]} seeds · {runs[3] or 0:.0f} s of simulation wall time · "
            f"campaign folder <code>{_e(root)}</code></p>",
            "<h2>Ranking</h2>",
            "<p>On every trace each controller is ranked by media utilization (higher is better), by its "
            "95th-percentile one-way delay and by its freeze ratio (lower is better), averaged over seeds; "
            "the score is the mean of the three ranks, averaged over traces (1 = best everywhere). Utilization "
            "and freeze ratio are means over traces; delay is the median over traces.</p>",
            _ranking_table(rank, front),
            "<h2>Throughput against delay</h2>",
            _img(pareto_png, "Each controller's mean utilization against its median p95 one-way delay (large markers; "
                 "ringed: Pareto-optimal) and every trace (small markers)."),
            "<h2>Per trace</h2>"]
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for m in metrics:
        by_trace.setdefault(m["scenario"], []).append(m)
    seeds_of = {(c, s): seed for c, s, seed in series_dirs}
    for trace, rows in sorted(by_trace.items()):
        body.append(_trace_section(root, assets, trace, rows, seeds_of))
    doc = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           f"<title>{_e(title)}</title><style>{LEADERBOARD_CSS}</style></head>\n<body>\n"
           + "\n".join(body) + "\n</body></html>\n")
    write_text_atomic(path, doc)
    return path


def _ranking_table(rank: list[dict[str, Any]], front: set[str]) -> str:
    head = ('<tr><th>#</th><th class="l">controller</th><th>score</th><th>utilization</th><th>throughput (kbit/s)</th>'
            "<th>OWD p95 (ms)</th><th>freeze ratio</th><th>loss</th><th>traces</th><th class=\"l\">Pareto</th></tr>")
    rows = []
    for i, r in enumerate(rank, 1):
        rows.append(
            f'<tr><td>{i}</td><td class="l">{_e(r["controller"])}</td><td>{fmt(r["score"], "{:.2f}")}</td>'
            f'<td>{fmt(r["utilization"], "pct")}</td><td>{fmt(r["throughput_kbps"], "{:.0f}")}</td>'
            f'<td>{fmt(r["owd_ms_p95"], "{:.0f}")}</td><td>{fmt(r["freeze_ratio"], "pct")}</td>'
            f'<td>{fmt(r["loss_rate"], "pct")}</td><td>{r["traces"]}</td>'
            f'<td class="l">{"yes" if r["controller"] in front else ""}</td></tr>')
    return f'<table id="ranking">{head}{"".join(rows)}</table>'


def _trace_section(root: Path, assets: Path, trace: str, rows: list[dict[str, Any]], seeds_of: dict) -> str:
    from .plots import plot_comparison
    from .runner import RunResult, ScenarioRun
    from .scenario import Scenario

    best_u = max((r["utilization"] or 0) for r in rows)
    best_d = min((r["owd_ms_p95"] if r["owd_ms_p95"] is not None else math.inf) for r in rows)
    table = ['<table><tr><th class="l">controller</th><th>utilization</th><th>throughput (kbit/s)</th>'
             "<th>OWD p95 (ms)</th><th>queuing p95 (ms)</th><th>freeze ratio</th><th>loss</th><th>seeds</th></tr>"]
    runs = []
    for r in rows:
        table.append(
            f'<tr><td class="l">{_e(r["controller"])}</td>'
            f'<td{" class=best" if r["utilization"] == best_u else ""}>{fmt(r["utilization"], "pct")}</td>'
            f'<td>{fmt(r["throughput_kbps"], "{:.0f}")}</td>'
            f'<td{" class=best" if r["owd_ms_p95"] == best_d else ""}>{fmt(r["owd_ms_p95"], "{:.0f}")}</td>'
            f'<td>{fmt(r["queue_delay_ms_p95"], "{:.0f}")}</td><td>{fmt(r["freeze_ratio"], "pct")}</td>'
            f'<td>{fmt(r["loss_rate"], "pct")}</td><td>{r["seeds"]}</td></tr>')
        seed = seeds_of.get((r["controller"], trace))
        d = root / f"controller={r['controller']}" / f"scenario={trace}" / f"seed={seed}"
        if (d / "series.parquet").is_file():
            runs.append(RunResult(name=r["controller"], controller=r["controller"], wall_seconds=0.0, sim_speed=0.0,
                                  link={}, flows=_flows(d), duration_s=0.0, dir=d))
    table.append("</table>")
    cap = rows[0].get("capacity_kbps")
    parts = [f'<details><summary>{_e(trace)} <small>(mean capacity {fmt(cap, "{:.0f}")} kbit/s)</small></summary>',
             "".join(table)]
    if runs:
        res = ScenarioRun(Scenario({"name": trace}, trace), seed=1, runs=runs, out_dir=assets, title=trace)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in trace)
        png = plot_comparison(res, assets / f"trace-{safe}.png", title=f"{trace} (seed {min(seeds_of.values())})")
        if png:
            parts.append(_img(png, f"{trace}: every controller's target rate against the trace capacity, and one-way delay."))
    parts.append("</details>")
    return "\n".join(parts)


def _flows(run_dir: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    rows = pq.read_table(run_dir / "flows.parquet").to_pylist()
    return [{**r, "controller": r.get("flow_controller")} for r in rows]


def _img(path: Path, caption: str) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return (f'<figure><img class="plot" alt="{_e(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_e(caption)}</figcaption></figure>")


def _mean(v: list[Any]) -> float:
    x = [float(a) for a in v if a is not None and math.isfinite(float(a))]
    return sum(x) / len(x) if x else float("nan")


def _median(v: list[Any]) -> float:
    x = sorted(float(a) for a in v if a is not None and math.isfinite(float(a)))
    if not x:
        return float("nan")
    n = len(x)
    return x[n // 2] if n % 2 else 0.5 * (x[n // 2 - 1] + x[n // 2])


def _e(s: Any) -> str:
    return html.escape(str(s))
