"""A self-contained ``report.html``: tables and inline PNG plots, no scripts, no external links.

The file can be mailed or archived on its own: images are embedded as base64 data URIs and the
style sheet is inline.
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import Any, Sequence

from . import __version__
from .plots import plot_all
from .results import write_text_atomic
from .runner import RunResult, ScenarioRun

#: (key in the flow summary, column title, formatter)
FLOW_COLUMNS: list[tuple[str, str, str]] = [
    ("throughput_kbps", "throughput (kbit/s)", "{:.0f}"),
    ("utilization", "utilization", "pct"),
    ("owd_ms_mean", "OWD mean (ms)", "{:.1f}"),
    ("owd_ms_p95", "OWD p95 (ms)", "{:.1f}"),
    ("queue_delay_ms_p95", "queuing p95 (ms)", "{:.1f}"),
    ("loss_rate", "loss", "pct"),
    ("freeze_ratio", "freeze ratio", "pct"),
    ("frame_delay_ms_mean", "frame delay (ms)", "{:.1f}"),
    ("psnr_db_mean", "PSNR (dB)", "{:.2f}"),
]

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
.meta { color: #666; } table { border-collapse: collapse; margin: 0.8em 0; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; } th { background: #f3f3f3; }
td.l, th.l { text-align: left; } tr.run td { border-top: 2px solid #999; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; } figure { margin: 0; }
figcaption { color: #666; font-size: 12px; } code { background: #f3f3f3; padding: 0 3px; }
"""


def fmt(v: Any, how: str) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    if how == "pct":
        return f"{100 * float(v) + 0.0:.1f} %"  # + 0.0: no "-0.0 %" (the core's empty f64 sum is -0.0)
    return how.format(v)


def write_report(results: Sequence[ScenarioRun], path: str | Path, title: str = "ratelab report",
                 plots: bool = True) -> Path:
    """Render the report for one or more scenario runs (plots are made first if missing)."""
    path = Path(path)
    body: list[str] = [f"<h1>{_e(title)}</h1>", f'<p class="meta">ratelab {_e(__version__)}</p>']
    if len(results) > 1:
        body.append(_overview(results))
    for res in results:
        images = plot_all(res) if plots else {}
        body.append(_section(res, images))
    doc = (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{_e(title)}</title><style>{CSS}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )
    write_text_atomic(path, doc)
    return path


def _overview(results: Sequence[ScenarioRun]) -> str:
    """Scenario × controller matrix of link utilization and p95 one-way delay."""
    controllers = list(dict.fromkeys(r.name for res in results for r in res.runs))
    rows = []
    for res in results:
        cells = []
        by_name = {r.name: r for r in res.runs}
        for c in controllers:
            r = by_name.get(c)
            if r is None:
                cells.append("<td>–</td>")
                continue
            media = [f for f in r.flows if f.get("kind") == "media"]
            owd = max((f.get("owd_ms_p95") or 0.0 for f in media), default=None)
            cells.append(f"<td>{link_utilization(r)}<br><small>OWD p95 {fmt(owd, '{:.0f}')} ms</small></td>")
        rows.append(f'<tr><td class="l"><a href="#{_anchor(res)}">{_e(res.title or res.scenario.name)}</a></td>{"".join(cells)}</tr>')
    head = "".join(f"<th>{_e(c)}</th>" for c in controllers)
    return (
        "<h2>Overview</h2><p>Link utilization (forward / reverse where a scenario has a reverse bottleneck) "
        "and the worst media flow's 95th-percentile one-way delay.</p>"
        f'<table><tr><th class="l">scenario</th>{head}</tr>{"".join(rows)}</table>'
    )


def _section(res: ScenarioRun, images: dict[str, Path]) -> str:
    sc = res.scenario
    parts = [f'<h2 id="{_anchor(res)}">{_e(res.title or sc.name)}</h2>']
    if sc.description:
        parts.append(f"<p>{_e(sc.description)}</p>")
    meta = f"scenario <code>{_e(sc.name)}</code>, seed {res.seed}, {sc.duration_s:g} s simulated"
    if sc.overrides:
        meta += ", with " + ", ".join(f"<code>{_e(o)}</code>" for o in sc.overrides)
    if res.interrupted:
        meta += " — <b>interrupted</b>: only finished runs are shown"
    parts.append(f'<p class="meta">{meta}</p>')
    parts.append(_table(res))
    if "comparison" in images:
        parts.append(_img(images["comparison"], "All runs: first media flow's target rate against capacity, and its one-way delay."))
    for run in res.runs:
        if run.name in images:
            parts.append(_img(images[run.name], f"{run.name}: every flow's rate against capacity, and one-way delay."))
    return "\n".join(parts)


def link_utilization(run: RunResult) -> str:
    """The run's link utilization; ``forward / reverse`` when it has a reverse bottleneck."""
    text = fmt(run.link.get("utilization"), "pct")
    if run.reverse_link is not None:
        text += " / " + fmt(run.reverse_link.get("utilization"), "pct")
    return text


def _table(res: ScenarioRun) -> str:
    two_way = any(run.reverse_link is not None for run in res.runs)
    extra = [("return_loss_rate", "feedback loss", "pct")] if two_way else []
    head = (
        '<tr><th class="l">run</th>'
        + ("<th>link util.<br>fwd / rev</th>" if two_way else "<th>link util.</th>")
        + '<th>Jain</th><th>sim speed</th><th class="l">flow</th><th class="l">kind</th>'
        + ('<th class="l">direction</th>' if two_way else "")
        + "".join(f"<th>{_e(t)}</th>" for _, t, _ in FLOW_COLUMNS + extra)
        + "</tr>"
    )
    rows = []
    for run in res.runs:
        n = max(1, len(run.flows))
        lead = (
            f'<td class="l" rowspan="{n}">{_e(run.name)}</td>'
            f'<td rowspan="{n}">{link_utilization(run)}</td>'
            f'<td rowspan="{n}">{fmt(run.link.get("jain_index"), "{:.3f}")}</td>'
            f'<td rowspan="{n}">{fmt(run.sim_speed, "{:.0f}")}×</td>'
        )
        for i, f in enumerate(run.flows or [{}]):
            cells = "".join(f"<td>{fmt(f.get(k), how)}</td>" for k, _, how in FLOW_COLUMNS + extra)
            kind = f.get("kind", "")
            if kind == "media" and f.get("controller"):
                kind = f"media ({f['controller']})"
            direction = f'<td class="l">{_e(f.get("direction") or "forward")}</td>' if two_way else ""
            rows.append(
                f'<tr{" class=run" if i == 0 else ""}>{lead if i == 0 else ""}'
                f'<td class="l">{_e(f.get("label", ""))}</td><td class="l">{_e(kind)}</td>{direction}{cells}</tr>'
            )
    table = f"<table>{head}{''.join(rows)}</table>"
    return table + _links_table(res) if two_way else table


def _links_table(res: ScenarioRun) -> str:
    """Both bottlenecks of each run (RFC 8867 5.3): what crossed them and the control traffic."""
    head = ('<tr><th class="l">run</th><th class="l">link</th><th>mean capacity (kbit/s)</th><th>utilization</th>'
            "<th>loss</th><th>queue drops</th><th>random drops</th><th>control (feedback) kbit/s</th></tr>")
    rows = []
    for run in res.runs:
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


def _img(path: Path, caption: str) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f'<figure><img alt="{_e(caption)}" src="data:image/png;base64,{data}"><figcaption>{_e(caption)}</figcaption></figure>'


def _anchor(res: ScenarioRun) -> str:
    base = res.title or res.scenario.name
    return "s-" + "".join(c if c.isalnum() else "-" for c in base)


def _e(s: Any) -> str:
    return html.escape(str(s))

