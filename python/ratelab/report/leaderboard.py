"""The leaderboard: every controller over every real trace in a folder, a few seeds, one HTML page.

The runs are an ordinary campaign (``results/leaderboard/``, resumable, queryable with
``ratelab query leaderboard ...``); the page is built from the same DuckDB tables.

Ranking: on each trace, controllers are ranked by media utilization (higher is better), by the
95th-percentile one-way delay (lower is better) and by freeze ratio (lower is better), each
averaged over seeds; a controller's score on the trace is the mean of its three ranks and its
overall score the mean over traces (lower is better, 1 is best everywhere).

The page (docs/reports.md): a Pareto plot per group of traces (all, then per network from
``traces/index.csv``) with the spread over seeds, the sortable ranking, CDFs over runs, and per
trace a fold-out with its table and the time series as small multiples.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

from ratelab._version import __version__
from ratelab.campaign.plan import Plan, load_plan
from ratelab.report.page import Column, document, esc as _e, fmt, img, sortable_table
from ratelab.run.results import write_text_atomic


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
            "queue_delay_ms_p95": _median([m.get("queue_delay_ms_p95") for m in mine]),
            "freeze_ratio": _mean([m["freeze_ratio"] for m in mine]),
            "loss_rate": _mean([m["loss_rate"] for m in mine]),
        })
    out.sort(key=lambda r: (r["score"], r["controller"]))
    return out


def trace_group(trace: str, index: dict[str, dict[str, str]]) -> str:
    """The network a trace was recorded on, from ``traces/index.csv`` (``3G HSDPA``, ``4G``,
    ``fixed broadband``, ...); ``other traces`` for a trace the index does not list."""
    for name in (trace, trace + ".csv"):
        row = index.get(name)
        if row and row.get("network"):
            return row["network"].split(" (")[0]
    return "other traces"


def _run_points(con) -> list[tuple[str, str, int, float, float]]:
    """(controller, trace, seed, media utilization, p95 queuing delay) of every finished run."""
    from ratelab.report.compare import run_point

    rows = con.execute("""
        SELECT controller, scenario, seed, kind, direction, utilization, queue_delay_ms_p95
        FROM flows ORDER BY controller, scenario, seed""").fetchall()
    runs: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for c, sc, seed, kind, direction, u, d in rows:
        runs.setdefault((c, sc, int(seed)), []).append(
            {"kind": kind, "direction": direction, "utilization": u, "queue_delay_ms_p95": d})
    return [(c, sc, seed, *run_point(flows)) for (c, sc, seed), flows in runs.items()]


def write_leaderboard(root: Path, path: Path, title: str = "ratelab leaderboard",
                      tradeoff_rows: list[dict[str, Any]] | None = None) -> Path:
    """Build the self-contained HTML page from the campaign in ``root``; ``tradeoff_rows``: the
    campaign's :func:`ratelab.report.tradeoff.run_rows` when the caller already read them."""
    from ratelab.campaign.plan import trace_index
    from ratelab.report.compare import aggregate, competitors_front
    from ratelab.report.figures import plot_cdfs, plot_pareto
    from ratelab.campaign.store import connect

    con = connect(root)
    try:
        metrics = _metrics(con)
        points = _run_points(con)
        runs = con.execute("SELECT count(*), count(DISTINCT scenario), count(DISTINCT seed), sum(wall_seconds) FROM runs").fetchone()
        series_dirs = con.execute("SELECT controller, scenario, min(seed) FROM runs GROUP BY controller, scenario").fetchall()
    finally:
        con.close()
    if not metrics:
        raise ValueError(f"no finished media runs in {root}")
    rank = ranking(metrics)
    names = [r["controller"] for r in rank]
    assets = root / "report"
    assets.mkdir(parents=True, exist_ok=True)

    index = trace_index()
    families: dict[str, list[tuple[str, int, float, float]]] = {}
    for c, trace, seed, u, d in points:
        families.setdefault(trace_group(trace, index), []).append((c, seed, u, d))
    n_traces = len({p[1] for p in points})
    groups = [(f"all {n_traces} traces", aggregate((c, seed, u, d) for c, _, seed, u, d in points))]
    if len(families) > 1:
        for fam in sorted(families):
            n = len({p[1] for p in points if trace_group(p[1], index) == fam})
            groups.append((f"{fam} ({n} trace{'s' if n != 1 else ''})", aggregate(families[fam])))
    front = competitors_front({k: (p.utilization, p.delay_ms) for k, p in groups[0][1].items()})
    pareto_png = plot_pareto(groups, assets / "pareto.png", names)
    per_run: dict[str, list[tuple[float, float]]] = {}
    for c, _, _, u, d in points:
        per_run.setdefault(c, []).append((u, d))
    cdf_png = plot_cdfs(per_run, assets / "cdf.png", names, what="runs (trace × seed)")
    seeds = runs[2]

    body = [f"<h1>{_e(title)}</h1>",
            f'<p class="meta">ratelab {_e(__version__)} · {runs[0]} runs: {len(rank)} controllers × '
            f"{runs[1]} traces × {seeds} seeds · {runs[3] or 0:.0f} s of simulation wall time · "
            f"campaign folder <code>{_e(root)}</code></p>",
            "<h2>Throughput against delay</h2>",
            img(pareto_png, "Each controller's media utilization against its p95 queuing delay, averaged over the runs "
                "(trace × seed) of a group of traces; up and right is better. "
                + ("Bars span the lowest to the highest per-seed mean (each seed averaged over the group's traces). "
                   if seeds > 1 else "One seed: points without spread. ")
                + "Ringed and joined: the Pareto front. Black star: the oracle, which is told the capacity.",
                alt="Pareto plot: utilization against p95 queuing delay"),
            "<h2>Ranking</h2>",
            "<p class=\"note\">On every trace each controller is ranked by media utilization (higher is better), by its "
            "95th-percentile one-way delay and by its freeze ratio (lower is better), averaged over seeds; "
            "the score is the mean of the three ranks, averaged over traces (1 = best everywhere). Utilization, "
            "frozen time and loss are means over traces; delays are medians over traces. Click a header to sort.</p>",
            _ranking_table(rank, front)]
    if cdf_png:
        body.append(img(cdf_png, "Distribution over every run (trace × seed) of each controller's p95 queuing delay "
                                 "(left) and media utilization (right): a curve further left (delay) or further right "
                                 "(utilization) is better; the spread of a curve is how much a controller depends on "
                                 "the trace.", alt="CDFs of delay and utilization over runs"))
    body.append(_oracle_section(root, assets, tradeoff_rows))
    body.append("<h2>Per trace</h2>")
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for m in metrics:
        by_trace.setdefault(m["scenario"], []).append(m)
    seeds_of = {(c, s): seed for c, s, seed in series_dirs}
    for trace, rows in sorted(by_trace.items()):
        body.append(_trace_section(root, assets, trace, rows, seeds_of, names))
    write_text_atomic(path, document(title, body))
    return path


#: The media metrics of a controller (over traces, or on one trace): columns of both tables.
METRIC_COLUMNS = [
    Column("util. (%)", lambda r: r["utilization"], "pct0", best="max"),
    Column("throughput (kbit/s)", lambda r: r["throughput_kbps"], "{:.0f}"),
    Column("OWD p95 (ms)", lambda r: r["owd_ms_p95"], "{:.0f}", best="min"),
    Column("queuing p95 (ms)", lambda r: r["queue_delay_ms_p95"], "ms", best="min"),
    Column("frozen (%)", lambda r: r["freeze_ratio"], "pct0", best="min"),
    Column("loss (%)", lambda r: r["loss_rate"], "pct0"),
]


def _ranking_table(rank: list[dict[str, Any]], front: set[str]) -> str:
    cols = [
        Column("#", lambda r: r["place"], "{:.0f}"),
        Column("controller", lambda r: r["controller"], left=True),
        Column("score", lambda r: r["score"], "{:.2f}", best="min"),
        *METRIC_COLUMNS,
        Column("traces", lambda r: r["traces"], "{:.0f}"),
        Column("Pareto", lambda r: "yes" if r["controller"] in front else "", left=True),
    ]
    rows = [{**r, "place": i} for i, r in enumerate(rank, 1)]
    return sortable_table(cols, rows, id="ranking", cls="overview",
                          row_class=lambda r: "oracle" if r["controller"] == "oracle" else "")


def _oracle_section(root: Path, assets: Path, rows: list[dict[str, Any]] | None = None,
                    reference: str = "oracle") -> str:
    """Issue 15's summary: per controller, utilization of min(capacity, media max) and mean p95
    queuing delay against the oracle on the same runs, for all traces and the train / test split
    of traces/split.csv: the numbers of `ratelab tradeoff` (one computation: ratelab.report.tradeoff)."""
    from ratelab.report import tradeoff

    if rows is None:
        rows = tradeoff.run_rows(root)
    if not any(r["controller"] == reference for r in rows):
        return (f'<h2>Against the {reference}</h2><p class="note">Not shown: the campaign has no {reference} runs '
                f"(add <code>{reference}</code> to its controllers to compare every controller with the capacity it "
                "could have used).</p>")
    of = tradeoff.trace_splits(rows)
    tables = {sp: tradeoff.summarize(rows, sp, of, reference=reference) for sp in tradeoff.SPLITS}
    tables = {sp: t for sp, t in tables.items() if t and t[0]["traces"] > 0}
    png = tradeoff.plot(tables, assets / "tradeoff.png")
    ratio = "p95_vs_" + reference
    cols = [
        Column("controller", lambda r: r["controller"], left=True),
        Column("util. (%)", lambda r: r["utilization"], "pct0", best="max"),
        Column("± (points)", lambda r: 100 * r["utilization_spread"], "{:.1f}"),
        Column("queuing p95 (ms)", lambda r: r["queue_delay_ms_p95"], "ms", best="min"),
        Column("± (ms)", lambda r: r["queue_delay_ms_p95_spread"], "{:.0f}"),
        Column(f"p95 / {reference}", lambda r: r[ratio], "{:.2f}"),
        Column("traces × seeds", lambda r: r["traces"] * r["seeds"], "{:.0f}",
               cell=lambda r: f"{r['traces']} × {r['seeds']}"),
    ]
    parts = [f"<h2>Against the {reference}</h2>",
             img(png, "Each controller's utilization of min(capacity, media maximum) against its mean p95 queuing delay, "
                      "one panel per group of traces (all, and the train / test split of traces/split.csv); bars span "
                      f"the per-seed means, the star is the {reference}. `ratelab tradeoff` prints the same numbers.",
                 alt=f"Pareto plot against the {reference} per trace split"),
             f'<p class="note">Means over seeds of the mean over the group\'s traces; ± is half the range over seeds; '
             f"p95 / {reference} divides by the {reference}'s mean p95 on the same runs. Only traces on which every "
             "controller finished every seed count.</p>"]
    for sp, table in tables.items():
        parts.append(f"<h3>{_e(sp)} traces</h3>")
        parts.append(sortable_table(cols, table, id=f"tradeoff-{sp}", cls="tradeoff",
                                    row_class=lambda r: "oracle" if r["controller"] == reference else ""))
    return "\n".join(parts)


def _trace_section(root: Path, assets: Path, trace: str, rows: list[dict[str, Any]], seeds_of: dict,
                   names: list[str]) -> str:
    from ratelab.report.figures import plot_small_multiples
    from ratelab.run.runner import RunResult

    cols = [
        Column("controller", lambda r: r["controller"], left=True),
        *METRIC_COLUMNS,
        Column("seeds", lambda r: r["seeds"], "{:.0f}"),
    ]
    order = {n: i for i, n in enumerate(names)}
    rows = sorted(rows, key=lambda r: order.get(r["controller"], len(order)))
    runs = []
    for r in rows:
        seed = seeds_of.get((r["controller"], trace))
        d = root / f"controller={r['controller']}" / f"scenario={trace}" / f"seed={seed}"
        if (d / "series.parquet").is_file():
            runs.append(RunResult(name=r["controller"], controller=r["controller"], wall_seconds=0.0, sim_speed=0.0,
                                  link={}, flows=_flows(d), duration_s=0.0, dir=d))
    cap = rows[0].get("capacity_kbps")
    parts = [f'<details><summary>{_e(trace)} <small>(mean capacity {fmt(cap, "{:.0f}")} kbit/s)</small></summary>',
             sortable_table(cols, rows)]
    if runs:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in trace)
        seed = min(seeds_of.values())
        png = plot_small_multiples(runs, assets / f"trace-{safe}.png", names=names, dpi=72)
        if png:
            parts.append(img(png, f"{trace}, seed {seed}: one panel per controller, same axes: the target rate against "
                                  "the trace's capacity (grey), and the bottleneck's queuing delay below."))
    parts.append("</details>")
    return "\n".join(parts)


def _flows(run_dir: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    rows = pq.read_table(run_dir / "flows.parquet").to_pylist()
    return [{**r, "controller": r.get("flow_controller")} for r in rows]


def _mean(v: list[Any]) -> float:
    x = [float(a) for a in v if a is not None and math.isfinite(float(a))]
    return sum(x) / len(x) if x else float("nan")


def _median(v: list[Any]) -> float:
    x = sorted(float(a) for a in v if a is not None and math.isfinite(float(a)))
    if not x:
        return float("nan")
    n = len(x)
    return x[n // 2] if n % 2 else 0.5 * (x[n // 2 - 1] + x[n // 2])
