"""``report.html``: one self-contained page per ``ratelab run`` or ``ratelab demo``.

A page comparing controllers opens with the Pareto plot (utilization against p95 queuing delay,
one panel per scenario), then a sortable overview table sized for a 1280-pixel window, CDFs over
runs where a controller ran more than one scenario, and per scenario a table per controller, the
time series as small multiples and the full per-flow table folded in ``<details>``. Every run
also gets its own page (``<run folder>/report.html``): rates, delays, loss and freezes over time
and its flow table. Images are inline PNG data URIs; the only script sorts tables.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from ratelab._version import __version__
from ratelab.report.compare import aggregate, run_point
from ratelab.report.figures import plot_small_multiples
from ratelab.report.page import Column, document, esc as _e, fmt, img as _img, sortable_table
from ratelab.report.plots import plot_run
from ratelab.run.results import write_text_atomic
from ratelab.run.runner import RunResult, ScenarioRun

__all__ = ["write_report", "write_run_page", "fmt", "link_utilization"]

#: Per-flow columns of the detail tables: (key in the flow summary, header with unit, format).
FLOW_COLUMNS: list[tuple[str, str, str]] = [
    ("throughput_kbps", "throughput (kbit/s)", "{:.0f}"),
    ("utilization", "util. (%)", "pct0"),
    ("owd_ms_mean", "OWD mean (ms)", "{:.1f}"),
    ("owd_ms_p95", "OWD p95 (ms)", "{:.1f}"),
    ("queue_delay_ms_p95", "queuing p95 (ms)", "{:.1f}"),
    ("loss_rate", "loss (%)", "pct0"),
    ("freeze_count", "freezes", "{:.0f}"),
    ("freeze_ratio", "frozen (%)", "pct0"),
    ("frame_delay_ms_mean", "frame delay (ms)", "{:.1f}"),
    ("psnr_db_mean", "PSNR (dB)", "{:.2f}"),
]


def write_report(results: Sequence[ScenarioRun], path: str | Path, title: str = "ratelab report",
                 plots: bool = True) -> Path:
    """Render the page for one or more scenario runs (plots are made first). One scenario with
    one run gets the run page; anything else the comparison page, plus a page per run."""

    path = Path(path)
    images = {id(res): (plot_all(res) if plots else {}) for res in results}
    for res in results:
        for run in res.runs:
            if run.dir is not None and run.name in images[id(res)] and not (len(results) == 1 and len(res.runs) == 1):
                write_run_page(res, run, run.dir / "report.html", images[id(res)][run.name])
    if len(results) == 1 and len(results[0].runs) == 1:
        res = results[0]
        return write_run_page(res, res.runs[0], path, images[id(res)].get(res.runs[0].name), title=title)
    body = [f"<h1>{_e(title)}</h1>", f'<p class="meta">{_meta_line(results)}</p>']
    names = list(dict.fromkeys(r.name for res in results for r in res.runs))
    if plots:
        body += _comparison_figures(results, path, names)
    body.append(_overview(results, path))
    for res in results:
        body.append(_section(res, images[id(res)], path, single=len(results) == 1))
    write_text_atomic(path, document(title, body))
    return path


def write_run_page(res: ScenarioRun, run: RunResult, path: str | Path, figure: Path | None,
                   title: str | None = None) -> Path:
    """The page of one run: what ran, its figure over time, its flows and links."""
    path = Path(path)
    sc = res.scenario
    body = [f"<h1>{_e(title or f'{res.title or sc.name} · {run.name}')}</h1>",
            f'<p class="meta">{_scenario_meta(res)} · controller <code>{_e(run.name)}</code> · '
            f"link utilization {link_utilization(run)} · Jain {fmt(run.link.get('jain_index'), '{:.3f}')} · "
            f"simulated at {fmt(run.sim_speed, '{:.0f}')}× real time · ratelab {_e(__version__)}</p>"]
    if sc.description:
        body.append(f"<p>{_e(sc.description)}</p>")
    if figure is not None:
        body.append(_img(figure, "Top: each flow's target rate (solid), sending rate (dashed) and receiving rate "
                                 "(dotted), averaged over 1 s, against the bottleneck capacity (grey). Middle: one-way "
                                 "delay per flow over the bottleneck's queuing delay (grey area). Bottom: packets lost "
                                 "per second and a mark at each video freeze.",
                         alt=f"{run.name} over time"))
    body.append("<h2>Flows</h2>")
    body.append(_flow_table(res, [run]))
    write_text_atomic(path, document(title or f"{res.title or sc.name} · {run.name}", body))
    return path


def link_utilization(run: RunResult) -> str:
    """The run's link utilization; ``forward / reverse`` when it has a reverse bottleneck."""
    text = fmt(run.link.get("utilization"), "pct")
    if run.reverse_link is not None:
        text += " / " + fmt(run.reverse_link.get("utilization"), "pct")
    return text


# --- comparison page --------------------------------------------------------------------------

def _comparison_figures(results: Sequence[ScenarioRun], path: Path, names: list[str]) -> list[str]:
    from ratelab.report.figures import plot_cdfs, plot_pareto

    assets = path.parent / (path.stem + "-figures")
    groups = []
    per_run: dict[str, list[tuple[float, float]]] = {}
    for res in results:
        samples = []
        for run in res.runs:
            u, d = run_point(run.flows)
            samples.append((run.name, res.seed, u, d))
            per_run.setdefault(run.name, []).append((u, d))
        groups.append((res.title or res.scenario.name, aggregate(samples)))
    out = ["<h2>Throughput against delay</h2>",
           _img(plot_pareto(groups, assets / "pareto.png", names),
                "Each controller's media utilization against its 95th-percentile queuing delay (worst media flow), one "
                "panel per scenario; up and right is better. Ringed and joined: the Pareto front (no other controller "
                "has both a higher utilization and a lower delay). Black star: the oracle, which is told the capacity. "
                "One seed per scenario on this page, so points carry no spread.",
                alt="Pareto plot: utilization against p95 queuing delay")]
    if max((len(v) for v in per_run.values()), default=0) > 1:
        cdf = plot_cdfs(per_run, assets / "cdf.png", names, what="scenarios")
        if cdf:
            out.append(_img(cdf, "Distribution over the scenarios of this page: each controller's p95 queuing delay "
                                 "(left) and media utilization (right), one step per scenario. Left and right curves "
                                 "further left / further right are better.", alt="CDFs of delay and utilization"))
    return out


def _overview(results: Sequence[ScenarioRun], path: Path) -> str:
    """Single scenario: nothing here (its section has the table). Several: controller × scenario
    matrix of utilization and p95 queuing delay."""
    if len(results) == 1:
        return ""
    names = list(dict.fromkeys(r.name for res in results for r in res.runs))
    points = {(id(res), r.name): run_point(r.flows) for res in results for r in res.runs}
    cols = [Column("controller", lambda n: n, left=True)]
    group = ['<tr><th class="l"></th>']
    for i, res in enumerate(results):
        key = id(res)
        cols += [Column("util. (%)", lambda n, k=key: _pt(points, k, n, 0), "pct0", best="max"),
                 Column("queuing p95 (ms)", lambda n, k=key: _pt(points, k, n, 1), "ms", best="min")]
        group.append(f'<th colspan="2"><a href="#{_anchor(res)}">{_e(res.title or res.scenario.name)}</a></th>')
    group.append("</tr>")
    return ("<h2>Overview</h2><p class=\"note\">Per scenario, each controller's media utilization and the worst media "
            "flow's 95th-percentile queuing delay (green: best of the column; the oracle knows the capacity). Click a "
            "header to sort.</p>"
            + sortable_table(cols, names, id="overview", cls="overview", group_head="".join(group),
                             row_class=lambda n: "oracle" if n == "oracle" else ""))


def _pt(points: dict, key: int, name: str, i: int) -> float | None:
    p = points.get((key, name))
    return None if p is None else p[i]


def _section(res: ScenarioRun, images: dict[str, Path], page: Path, single: bool) -> str:
    sc = res.scenario
    parts = [f'<h2 id="{_anchor(res)}">{_e(res.title or sc.name)}</h2>']
    if sc.description:
        parts.append(f"<p>{_e(sc.description)}</p>")
    parts.append(f'<p class="meta">{_scenario_meta(res)}</p>')
    parts.append(_controller_table(res, page, overview=single))
    if "comparison" in images:
        parts.append(_img(images["comparison"], "One panel per controller, same axes: the media flows' target rate "
                                                "against the capacity (grey), and the bottleneck's queuing delay below.",
                          alt=f"{res.title or sc.name}: time series per controller"))
    elif len(res.runs) == 1 and res.runs[0].name in images:
        parts.append(_img(images[res.runs[0].name], f"{res.runs[0].name}: rates against the capacity, delays, loss "
                                                     "and freezes over time.", alt=f"{res.runs[0].name} over time"))
    parts.append(f"<details><summary>Every flow of every run ({sum(len(r.flows) for r in res.runs)} rows)</summary>"
                 + _flow_table(res, res.runs, page) + "</details>")
    return "\n".join(parts)


def _controller_table(res: ScenarioRun, page: Path, overview: bool) -> str:
    """One row per run: media aggregates (sum of throughput and utilization, worst delays,
    mean loss and freezes) and the link."""
    def media(run: RunResult) -> list[dict[str, Any]]:
        return [f for f in run.flows if f.get("kind") == "media"]

    def agg(run: RunResult, key: str, how: str) -> float | None:
        vals = [float(f[key]) for f in media(run) if isinstance(f.get(key), (int, float))]
        if not vals:
            return None
        return sum(vals) if how == "sum" else max(vals) if how == "max" else sum(vals) / len(vals)

    two_way = any(run.reverse_link is not None for run in res.runs)
    cols = [
        Column("controller", lambda r: r.name, left=True, cell=lambda r: _run_link(r, page)),
        Column("media util. (%)", lambda r: run_point(r.flows)[0], "pct0", best="max"),
        Column("throughput (kbit/s)", lambda r: agg(r, "throughput_kbps", "sum"), "{:.0f}"),
        Column("queuing p95 (ms)", lambda r: run_point(r.flows)[1], "ms", best="min"),
        Column("OWD p95 (ms)", lambda r: agg(r, "owd_ms_p95", "max"), "{:.0f}", best="min"),
        Column("loss (%)", lambda r: agg(r, "loss_rate", "mean"), "pct0"),
        Column("frozen (%)", lambda r: agg(r, "freeze_ratio", "mean"), "pct0", best="min"),
        Column("PSNR (dB)", lambda r: agg(r, "psnr_db_mean", "mean"), "{:.1f}", best="max"),
        Column("link util. (%)" + (" fwd / rev" if two_way else ""), lambda r: r.link.get("utilization"), "pct0",
               cell=lambda r: fmt(r.link.get("utilization"), "pct0") + (
                   " / " + fmt(r.reverse_link.get("utilization"), "pct0") if r.reverse_link is not None else "")),
        Column("Jain", lambda r: r.link.get("jain_index"), "{:.3f}"),
        Column("sim speed (×)", lambda r: r.sim_speed, "{:.0f}"),
    ]
    note = ("<p class=\"note\">Media flows of each run: utilization and throughput summed, delays of the worst flow, "
            "loss and frozen time averaged; green marks the best of a column. Click a header to sort.</p>")
    return note + sortable_table(cols, res.runs, id="overview" if overview else "", cls="overview" if overview else "",
                                 row_class=lambda r: "oracle" if r.name == "oracle" else "")


def _run_link(run: RunResult, page: Path) -> str:
    """The run's name, linking to its own page when there is one next to its data."""
    if run.dir is None or not (run.dir / "report.html").is_file():
        return _e(run.name)
    try:
        rel = os.path.relpath(run.dir / "report.html", page.parent)
    except ValueError:
        return _e(run.name)
    return f'<a href="{_e(Path(rel).as_posix())}">{_e(run.name)}</a>'


def _flow_table(res: ScenarioRun, runs: Sequence[RunResult], page: Path | None = None) -> str:
    two_way = any(run.reverse_link is not None for run in runs)
    extra = [("return_loss_rate", "feedback loss (%)", "pct0")] if two_way else []
    several = len(runs) > 1
    head = (
        "<tr>" + ('<th class="l">run</th>' if several else "")
        + '<th class="l">flow</th><th class="l">kind</th>'
        + ('<th class="l">direction</th>' if two_way else "")
        + "".join(f"<th>{_e(t)}</th>" for _, t, _ in FLOW_COLUMNS + extra)
        + "</tr>"
    )
    rows = []
    for run in runs:
        n = max(1, len(run.flows))
        lead = f'<td class="l" rowspan="{n}">{_run_link(run, page) if page else _e(run.name)}</td>' if several else ""
        for i, f in enumerate(run.flows or [{}]):
            cells = "".join(f"<td>{fmt(f.get(k), how)}</td>" for k, _, how in FLOW_COLUMNS + extra)
            kind = f.get("kind", "")
            if kind == "media" and f.get("controller"):
                kind = f"media ({f['controller']})"
            direction = f'<td class="l">{_e(f.get("direction") or "forward")}</td>' if two_way else ""
            rows.append(
                f'<tr{" class=run" if i == 0 and several else ""}>{lead if i == 0 else ""}'
                f'<td class="l">{_e(f.get("label", ""))}</td><td class="l">{_e(kind)}</td>{direction}{cells}</tr>'
            )
    table = f'<div class="wide"><table class="flows">{head}{"".join(rows)}</table></div>' + _cpu_limited_note(runs)
    return table + _links_table(runs) if two_way else table


def _cpu_limited_note(runs: Sequence[RunResult]) -> str:
    """A real browser run whose encoder was held back by the CPU measured the machine, not the
    network: said in red under the table (summary key ``cpu_limited``, docs/browser.md)."""
    notes = [f"{_e(run.name)} / {_e(str(f.get('label', '')))}: {fmt(f.get('cpu_limited_fraction'), 'pct')} of the call"
             for run in runs for f in run.flows if f.get("cpu_limited")]
    if not notes:
        return ""
    return ('<p class="warn" style="color:#b00020"><b>CPU-limited:</b> the browser reported '
            "qualityLimitationReason = cpu for " + "; ".join(notes) + ". Its rates and delays are not the network's: "
            "give the call more cores or a smaller resolution (docs/browser.md).</p>")


def _links_table(runs: Sequence[RunResult]) -> str:
    """Both bottlenecks of each run (RFC 8867 5.3): what crossed them and the control traffic."""
    head = ('<tr><th class="l">run</th><th class="l">link</th><th>mean capacity (kbit/s)</th><th>utilization</th>'
            "<th>loss</th><th>queue drops</th><th>random drops</th><th>control (feedback) kbit/s</th></tr>")
    rows = []
    for run in runs:
        links = [("forward", run.link)] + ([("reverse", run.reverse_link)] if run.reverse_link is not None else [])
        for i, (name, link) in enumerate(links):
            rows.append(
                f'<tr{" class=run" if i == 0 else ""}>'
                + (f'<td class="l" rowspan="{len(links)}">{_e(run.name)}</td>' if i == 0 else "")
                + f'<td class="l">{name}</td><td>{fmt(link.get("capacity_kbps_mean"), "{:.0f}")}</td>'
                f'<td>{fmt(link.get("utilization"), "pct")}</td><td>{fmt(link.get("loss_rate"), "pct")}</td>'
                f'<td>{fmt(link.get("queue_drops"), "{:.0f}")}</td><td>{fmt(link.get("random_drops"), "{:.0f}")}</td>'
                f'<td>{fmt(link.get("control_kbps_mean"), "{:.1f}")}</td></tr>')
    return (
        "<p>Reverse bottleneck (RFC 8867 5.3): the reverse link carries the data of the reverse flows and the "
        "feedback (TWCC reports, REMB, TCP ACKs) of the forward flows, as packets of their wire size that queue and "
        "can be dropped; the forward link likewise carries the reverse flows' feedback. Utilization counts data "
        "only; the control column is the feedback rate that crossed each link, and a flow's feedback loss is the "
        "share of its feedback packets dropped on the way back.</p>"
        f"<table>{head}{''.join(rows)}</table>"
    )


def _meta_line(results: Sequence[ScenarioRun]) -> str:
    runs = sum(len(r.runs) for r in results)
    names = len({r.name for res in results for r in res.runs})
    return (f"ratelab {_e(__version__)} · {len(results)} scenario{'s' if len(results) != 1 else ''} × "
            f"{names} controller{'s' if names != 1 else ''} · {runs} runs")


def _scenario_meta(res: ScenarioRun) -> str:
    sc = res.scenario
    meta = f"scenario <code>{_e(sc.name)}</code>, seed {res.seed}, {sc.duration_s:g} s simulated"
    if sc.overrides:
        meta += ", with " + ", ".join(f"<code>{_e(o)}</code>" for o in sc.overrides)
    if res.interrupted:
        meta += " — <b>interrupted</b>: only finished runs are shown"
    return meta


def _anchor(res: ScenarioRun) -> str:
    base = res.title or res.scenario.name
    return "s-" + "".join(c if c.isalnum() else "-" for c in base)


def plot_all(result: ScenarioRun) -> dict[str, Path]:
    """Write every plot of a scenario run next to its data; returns {name: path}: each run's
    figure under its name, and with several runs the small multiples under ``comparison``."""
    out: dict[str, Path] = {}
    if result.out_dir is None:
        return out
    if len(result.runs) > 1:
        p = plot_small_multiples(result.runs, result.out_dir / "comparison.png")
        if p:
            out["comparison"] = p
    for run in result.runs:
        if run.dir is None:
            continue
        p = plot_run(run, run.dir / "plot.png", f"{result.title or result.scenario.name} · {run.name}")
        if p:
            out[run.name] = p
    return out
