"""Throughput–delay trade-off of a trace campaign (issue 15's evaluation, the built-in plan `real`).

Per controller, over the media flow of every run:

* **utilization** = throughput / mean over the run of min(capacity, the flow's media maximum):
  the share of what the flow could have carried (a 20 Mbit/s encoder cannot fill a 35 Mbit/s
  link, and the Gbit/s artefacts of three OpenNetLab traces must not count as capacity). The
  capacity is the simulator's own (``series.capacity_kbps``, every ``metrics.series_interval_ms``).
* **p95 queuing delay** = the flow's 95th-percentile bottleneck queuing delay (``queue_delay_ms_p95``).

Both are averaged over the traces of a split for each seed; the table gives the mean over seeds
and the spread (max − min over seeds) / 2. ``p95 / oracle`` divides by the oracle's mean p95 on
the same runs (the oracle sends at the true capacity: the delay any controller that uses the
link pays).

The fixed train/test split of the traces (``traces/split.csv``): within each family (OpenNetLab,
Norway 3G/HSDPA, FCC broadband, mahimahi), the files sorted by the SHA-256 of their name; every
third one, from the first, is held out for testing (:func:`split_of`).
"""

from __future__ import annotations

import csv
import hashlib
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Sequence

from ratelab.errors import InputError
from ratelab.scenario import TRACE_DIR

SPLIT_FILE = TRACE_DIR / "split.csv"
SPLITS = ("all", "train", "test")
#: Every `TEST_EVERY`-th trace of a family (in hash order) is held out.
TEST_EVERY = 3


def _stem(name: str) -> str:
    """A trace's file name without folder and trace suffix (names hold dots: ``bus.ljansbakken-…``)."""
    base = Path(name).name
    for suffix in (".csv", ".json", ".log", ".txt"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def trace_family(name: str) -> str:
    """The measurement family of a trace file (or scenario) name."""
    stem = _stem(name)
    if stem.startswith("pensieve-trace_"):
        return "fcc"
    if stem.startswith("pensieve-"):
        return "norway"
    if stem.startswith("opennetlab-"):
        return "opennetlab"
    if stem.startswith("mahimahi-"):
        return "mahimahi"
    return "other"


def _hash(stem: str) -> str:
    return hashlib.sha256(stem.encode("utf-8")).hexdigest()


def split_of(names: Iterable[str]) -> dict[str, str]:
    """``{stem: "train" | "test"}``: stratified by family, every third file in SHA-256 order of the
    stem is a test trace. Depends only on the names given (the shipped split is
    ``traces/split.csv``, computed over the 49 traces of the developer set)."""
    by_family: dict[str, list[str]] = defaultdict(list)
    for n in names:
        stem = _stem(n)
        by_family[trace_family(stem)].append(stem)
    out: dict[str, str] = {}
    for stems in by_family.values():
        for i, stem in enumerate(sorted(set(stems), key=_hash)):
            out[stem] = "test" if i % TEST_EVERY == 0 else "train"
    return out


def shipped_split() -> dict[str, str]:
    """The fixed split written in ``traces/split.csv`` (``{stem: split}``)."""
    if not SPLIT_FILE.is_file():
        return {}
    with SPLIT_FILE.open(newline="", encoding="utf-8") as fh:
        return {_stem(r["file"]): r["split"] for r in csv.DictReader(fh)}


def run_rows(root: Path) -> list[dict[str, Any]]:
    """One row per finished run's media flow: controller, scenario, seed, throughput, capped capacity,
    utilization (of min(capacity, media max)), p95 queuing delay."""
    from ratelab.campaign.store import connect, read_plan

    specs = read_plan(root)
    if not specs:
        raise InputError(str(root), "", "not a campaign folder (no plan.json)")
    media_max: dict[tuple[str, str], float] = {}
    for s in specs:
        flows = s.scenario_doc.get("flows", [])
        mx = next((f.get("media", {}).get("max_kbps") for f in flows if f.get("kind", "media") == "media"), None)
        media_max[(s.controller, s.scenario)] = float(mx) if mx is not None else math.inf
    con = connect(root)
    try:
        have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        if "flows" not in have or "series" not in have:
            raise InputError(str(root), "", "the campaign has no finished runs")
        flows = con.execute("""
            SELECT controller, scenario, seed, id, throughput_kbps, queue_delay_ms_p95
            FROM flows WHERE kind = 'media' ORDER BY controller, scenario, seed, id""").fetchall()
        con.execute("CREATE TABLE media_max (controller VARCHAR, scenario VARCHAR, max_kbps DOUBLE)")
        con.executemany("INSERT INTO media_max VALUES (?, ?, ?)",
                        [(c, s, mx if math.isfinite(mx) else None) for (c, s), mx in media_max.items()])
        # capacity is a link property: every flow's series rows carry it; take the lowest flow id's.
        caps = con.execute("""
            SELECT s.controller, s.scenario, s.seed,
                   avg(CASE WHEN m.max_kbps IS NULL THEN s.capacity_kbps ELSE least(s.capacity_kbps, m.max_kbps) END)
            FROM series s JOIN media_max m ON s.controller = m.controller AND s.scenario = m.scenario
            WHERE s.flow = (SELECT min(flow) FROM series) GROUP BY s.controller, s.scenario, s.seed""").fetchall()
    finally:
        con.close()
    cap_of = {(c, s, int(seed)): cap for c, s, seed, cap in caps}
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str, int]] = set()
    for c, s, seed, _fid, thr, p95 in flows:
        key = (c, s, int(seed))
        if key in seen:  # the first media flow of each run
            continue
        seen.add(key)
        capped = cap_of.get(key)
        capped = math.nan if capped is None else float(capped)
        rows.append({"controller": c, "scenario": s, "seed": int(seed), "throughput_kbps": thr,
                     "capped_capacity_kbps": capped,
                     "utilization": thr / capped if capped and capped > 0 else math.nan,
                     "queue_delay_ms_p95": p95 if p95 is not None else math.nan})
    return rows


def trace_splits(rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Trace (scenario) name → "train" / "test": traces/split.csv for shipped traces, the same
    hash rule for others."""
    known = shipped_split()
    names = sorted({r["scenario"] for r in rows})
    computed = split_of(names)
    return {n: known.get(n, computed[n]) for n in names}


def summarize(rows: Sequence[dict[str, Any]], split: str = "all", splits: dict[str, str] | None = None,
              reference: str = "oracle") -> list[dict[str, Any]]:
    """Per controller: mean over seeds of (mean over the split's traces) of utilization and p95
    queuing delay, their spread over seeds, and the p95 relative to ``reference`` on the same runs.
    Only traces on which every controller finished every seed count (the same runs for all)."""
    if split not in SPLITS:
        raise InputError("--split", "", f"unknown split '{split}' (known: {', '.join(SPLITS)})")
    if splits is None:
        splits = trace_splits(rows)
    rows = [r for r in rows if split == "all" or splits.get(r["scenario"]) == split]
    controllers = sorted({r["controller"] for r in rows}, key=lambda c: (c != reference, c))
    seeds = sorted({r["seed"] for r in rows})
    have = {(r["controller"], r["scenario"], r["seed"]) for r in rows}
    complete = {s for s in {r["scenario"] for r in rows}
                if all((c, s, sd) in have for c in controllers for sd in seeds)}
    per: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["scenario"] in complete:
            per[(r["controller"], r["seed"])].append(r)
    out: list[dict[str, Any]] = []
    for c in controllers:
        util = [_mean(x["utilization"] for x in per[(c, sd)]) for sd in seeds]
        p95 = [_mean(x["queue_delay_ms_p95"] for x in per[(c, sd)]) for sd in seeds]
        out.append({"controller": c, "traces": len(complete), "seeds": len(seeds),
                    "utilization": _mean(util), "utilization_spread": _spread(util),
                    "utilization_min": _min(util), "utilization_max": _max(util),
                    "queue_delay_ms_p95": _mean(p95), "queue_delay_ms_p95_spread": _spread(p95),
                    "queue_delay_ms_p95_min": _min(p95), "queue_delay_ms_p95_max": _max(p95)})
    ref = next((o for o in out if o["controller"] == reference), None)
    for o in out:
        o["p95_vs_" + reference] = (o["queue_delay_ms_p95"] / ref["queue_delay_ms_p95"]
                                    if ref and ref["queue_delay_ms_p95"] > 0 else math.nan)
    return out


def _mean(xs: Iterable[float]) -> float:
    v = [x for x in xs if x is not None and math.isfinite(x)]
    return sum(v) / len(v) if v else math.nan


def _spread(xs: Sequence[float]) -> float:
    return (_max(xs) - _min(xs)) / 2


def _min(xs: Sequence[float]) -> float:
    return min((x for x in xs if math.isfinite(x)), default=math.nan)


def _max(xs: Sequence[float]) -> float:
    return max((x for x in xs if math.isfinite(x)), default=math.nan)


def points(table: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The summary's rows as :class:`ratelab.report.compare.Point` (mean over seeds, per-seed range): the
    same numbers the table prints, in the form the report's Pareto plot draws."""
    from ratelab.report.compare import Point

    return {o["controller"]: Point(utilization=o["utilization"], delay_ms=o["queue_delay_ms_p95"],
                                   util_lo=o["utilization_min"], util_hi=o["utilization_max"],
                                   delay_lo=o["queue_delay_ms_p95_min"], delay_hi=o["queue_delay_ms_p95_max"],
                                   runs=o["traces"] * o["seeds"], seeds=o["seeds"])
            for o in table}


def plot(tables: dict[str, Sequence[dict[str, Any]]], png_path: str | Path) -> Path:
    """The Pareto plot of the report pages (:func:`ratelab.report.figures.plot_pareto`), one panel per
    split: each controller at its mean utilization and mean p95 queuing delay, bars over seeds,
    the oracle as the reference star."""
    from ratelab.report.figures import plot_pareto

    groups = [(f"{split}: {t[0]['traces'] if t else 0} traces × {t[0]['seeds'] if t else 0} seeds", points(t))
              for split, t in tables.items()]
    names = [o["controller"] for t in tables.values() for o in t]
    return plot_pareto(groups, png_path, names)


def markdown(table: Sequence[dict[str, Any]], reference: str = "oracle") -> str:
    """The summary as a Markdown table (utilization in %, delays in ms)."""
    lines = [f"| controller | utilization | p95 queuing delay | p95 / {reference} | traces × seeds |",
             "|---|---:|---:|---:|---:|"]
    for o in table:
        lines.append(f"| {o['controller']} | {100 * o['utilization']:.1f} % ± {100 * o['utilization_spread']:.1f} "
                     f"| {o['queue_delay_ms_p95']:.0f} ms ± {o['queue_delay_ms_p95_spread']:.0f} "
                     f"| {o['p95_vs_' + reference]:.2f} | {o['traces']} × {o['seeds']} |")
    return "\n".join(lines)


def write_split_file(names: Iterable[str], path: Path = SPLIT_FILE) -> Path:
    """Write ``split.csv`` (file, family, split) for ``names``."""
    sp = split_of(names)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["file", "family", "split"])
        for stem in sorted(sp):
            w.writerow([stem + ".csv", trace_family(stem), sp[stem]])
    return path
