#!/usr/bin/env python3
"""The fidelity study (docs/fidelity.md, issue #20 items 3 and 5): Chromium, ratelab's live
stack and the simulator on the same cases, the same metrics, side by side.

    PYTHONPATH=python python3 tools/fidelity.py list
    PYTHONPATH=python python3 tools/fidelity.py run --out /work/fidelity-runs --repeats 1 --seeds 3 \\
        --duration-cap 40 --width 640 --height 360 --fps 15
    PYTHONPATH=python python3 tools/fidelity.py report --out /work/fidelity-runs --docs docs/fidelity

``run`` is resumable: every run gets its own folder ``OUT/<case>/<contender>/<r1|s1>/``, written
as ``<name>.part`` and renamed when complete; a rerun skips complete folders (real time is
precious). Real-time runs (Chromium, live) go strictly one at a time (a lock file in OUT keeps
two invocations apart), and each records the 1-min load average and the core count before and
after, and the browser's CPU-limitation flags. A case the browser cannot run yet (several flows
or the reverse direction need the routed emulator) is recorded in ``refused.txt`` and skipped;
a rerun tries it again. ``report`` turns the folders into docs/fidelity/table.md, runs.csv and
one figure per case (metrics: python/ratelab/report/fidelity.py); ``score`` judges a simulator
variant against the real runs recorded in a runs.csv (tools/fidelity_score.py).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import fcntl
import json
import math
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "python" / "ratelab" / "traces"


@dataclass(frozen=True)
class Case:
    """A scenario (built-in name) with overrides; ``split``: the trace's train/test split
    (traces/split.csv), ``-`` for the synthetic cases."""

    name: str
    base: str
    overrides: tuple[str, ...] = ()
    split: str = "-"
    note: str = ""


#: The shipped traces of the study: mean capacity 0.2-1.1 Mbit/s (inside what a 640x360 call
#: can use), 5 from the train split and 5 from the test split.
TRACE_FILES = (
    ("trace-wired-200k", "opennetlab-WIRED_200kbps.csv"),
    ("trace-fcc-8996", "pensieve-trace_8996_http---www.facebook.com.csv"),
    ("trace-tram-2010-12-09", "pensieve-tram.jernbanetorget-ljabru-report.2010-12-09_1222CET.csv"),
    ("trace-wired-900k", "opennetlab-WIRED_900kbs.csv"),
    ("trace-metro-2011-01-31", "pensieve-metro.kalbakken-jernbanetorget-report.2011-01-31_1935CET.csv"),
    ("trace-4g-500k", "opennetlab-4G_500kbps.csv"),
    ("trace-4g-700k", "opennetlab-4G_700kbps.csv"),
    ("trace-fcc-797700", "pensieve-trace_797700_http---www.yahoo.com.csv"),
    ("trace-metro-2010-10-18", "pensieve-metro.kalbakken-jernbanetorget-report.2010-10-18_0951CEST.csv"),
    ("trace-fcc-7190", "pensieve-trace_7190_http---www.yahoo.com.csv"),
)


def _trace_info() -> dict[str, tuple[str, float]]:
    split = {r["file"]: r["split"] for r in csv.DictReader((TRACES / "split.csv").open())}
    return {r["file"]: (split.get(r["file"], "?"), float(r["mean_kbps"])) for r in csv.DictReader((TRACES / "index.csv").open())}


def cases() -> list[Case]:
    out = [
        Case("rmcat-5.1", "rmcat-5.1", note="RFC 8867 5.1 steps 1.0/2.5/0.6/1.0 Mbit/s"),
        Case("rmcat-5.2", "rmcat-5.2", note="RFC 8867 5.2, two calls"),
        Case("rmcat-5.3", "rmcat-5.3", note="RFC 8867 5.3, both directions"),
    ]
    for kbps in (500, 1500, 4000):
        out.append(Case(f"const-{kbps}k", "lcc-loss", (f"link.capacity_kbps={kbps}", "link.queue.ms=300"),
                        note=f"constant {kbps} kbit/s, 50 ms, 300 ms queue"))
    for pct in (1, 5):
        out.append(Case(f"loss-{pct}pct", "lcc-loss", (f"link.loss={pct / 100:g}",),
                        note=f"1 Mbit/s, {pct} % random loss, unlimited queue (LCC Table I)"))
    info = _trace_info()
    for name, f in TRACE_FILES:
        split, mean = info[f]
        out.append(Case(name, "trace-4g-700kbps", (f"link.trace={f}", f"link.queue.rate_kbps={round(mean)}"), split,
                        note=f"{f} (mean {mean:.0f} kbit/s), 300 ms queue at the mean"))
    return out


#: contender -> (kind, controller); real ones run in real time.
CONTENDERS = {
    "chromium": ("browser", "chromium"),
    "live-gcc": ("live", "gcc"),
    "sim-gcc": ("sim", "gcc"),
    "live-ratelab-cc": ("live", "ratelab-cc"),
    "sim-ratelab-cc": ("sim", "ratelab-cc"),
}


class Bad(Exception):
    """Bad input: one line, exit 2."""


def scenario_of(case: Case, cap: float | None):
    from ratelab.scenario import load_scenario

    sc = load_scenario(case.base, list(case.overrides))
    if cap is not None and sc.duration_s > cap:
        sc = sc.with_overrides([f"duration_s={cap:g}"])
    return sc


def ceiling(sc) -> float:
    """The forward flows' summed ``media.max_kbps`` (inf when one has none: the simulator's
    default is far above these links)."""
    from ratelab.browser.run import expand_flows

    caps = [f["media"].get("max_kbps") for f in expand_flows(sc, "x") if f["direction"] == "forward"]
    return float(sum(caps)) if caps and all(c is not None for c in caps) else math.inf


def forward_flows(sc) -> list[int]:
    from ratelab.browser.run import expand_flows

    return [f["id"] for f in expand_flows(sc, "x") if f["direction"] == "forward"]


# ---------------------------------------------------------------------------------------- run

def run_all(a: argparse.Namespace) -> int:
    out = Path(a.out)
    chosen = select(a.cases)
    contenders = a.contenders or list(CONTENDERS)
    for c in contenders:
        if c not in CONTENDERS:
            raise Bad(f"error: --contender: unknown contender '{c}' (known: {', '.join(CONTENDERS)})")
    browser = {"width": a.width, "height": a.height, "fps": a.fps, "complexity": a.complexity}
    browser.update(browser_options(a.browser))  # checked before anything is written
    out.mkdir(parents=True, exist_ok=True)
    with realtime_lock(out, any(CONTENDERS[c][0] != "sim" for c in contenders)):
        for case in chosen:
            sc = scenario_of(case, a.duration_cap)
            for c in contenders:
                kind, ctrl = CONTENDERS[c]
                reps = [f"s{s}" for s in range(1, a.seeds + 1)] if kind == "sim" else [f"r{r}" for r in range(1, a.repeats + 1)]
                for rep in reps:
                    if not one_run(out / case.name / c, rep, case, sc, kind, ctrl, browser, a):
                        break  # refused: the other repeats would be refused too
    return 0


def browser_options(pairs: list[str]) -> dict[str, Any]:
    """``--browser KEY=VALUE`` (a TOML value: ``fec=false``, ``codec="VP9"``) as browser options,
    checked against :class:`BrowserOptions` before any run starts."""
    import tomllib

    from ratelab.browser.run import BrowserOptions
    from ratelab.errors import InputError

    out: dict[str, Any] = {}
    for kv in pairs:
        key, sep, value = kv.partition("=")
        if not sep or not key.strip():
            raise Bad(f"error: --browser: {kv}: expected KEY=VALUE")
        try:
            out[key.strip()] = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            raise Bad(f"error: --browser: {kv}: the value is not a TOML value (strings in quotes)") from None
    try:
        BrowserOptions.from_params(out, "--browser")
    except InputError as exc:
        raise Bad(f"error: --browser: {exc.field.rpartition('.')[2]}: {exc.message}") from None
    return out


def select(pattern: str | None) -> list[Case]:
    allc = cases()
    if not pattern:
        return allc
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise Bad(f"error: --cases: not a regular expression ({exc})") from None
    chosen = [c for c in allc if rx.search(c.name)]
    if not chosen:
        raise Bad(f"error: --cases: '{pattern}' matches no case (see `tools/fidelity.py list`)")
    return chosen


@contextlib.contextmanager
def realtime_lock(out: Path, needed: bool):
    if not needed:
        yield
        return
    with (out / ".realtime.lock").open("w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise Bad(f"error: {out}: another fidelity run holds .realtime.lock (real-time runs go one at a time)") from None
        yield


def one_run(folder: Path, rep: str, case: Case, sc, kind: str, ctrl: str, browser: dict[str, Any], a) -> bool:
    """Run one contender once into ``folder/rep`` unless already complete; False if refused."""
    from ratelab.errors import InputError
    from ratelab.run.results import write_summary

    done, part = folder / rep, folder / f"{rep}.part"
    if (done / "meta.json").is_file():
        return True
    media_fps = None
    if kind != "browser" and a.same_fps:  # the simulated and live sources at the browser's frame rate
        media_fps = browser["fps"]
        sc = sc.with_overrides([f"flows.{i}.media.fps={media_fps:g}" for i in range(len(sc.data.get("flows") or []))])
    if kind != "browser" and a.model:  # a model setting under test, on every flow of ratelab's own stack
        n = len(sc.data.get("flows") or [])
        sc = sc.with_overrides([f"flows.{i}.{kv}" for kv in a.model for i in range(n)])
    shutil.rmtree(part, ignore_errors=True)
    seed = int(rep[1:])
    meta: dict[str, Any] = {"case": case.name, "contender": folder.name, "kind": kind, "controller": ctrl, "rep": rep,
                            "seed": seed, "scenario": case.base, "overrides": list(case.overrides),
                            "duration_s": sc.duration_s, "duration_cap_s": a.duration_cap, "media_fps": media_fps,
                            "model": list(a.model) if kind != "browser" else [], "cpus": os.cpu_count(),
                            "load1_before": os.getloadavg()[0], "started_unix": time.time()}
    label = f"{case.name} · {folder.name} · {rep}"
    print(f"fidelity: {label} ({sc.duration_s:g} s{' real time' if kind != 'sim' else ''}, load {meta['load1_before']:.2f})",
          file=sys.stderr, flush=True)
    try:
        if kind == "sim":
            from ratelab.run.runner import run_scenario
            result = run_scenario(sc, [ctrl], seed=seed, out_dir=part)  # packets: the burst evidence
        elif kind == "live":
            from ratelab.run.live import run_live
            result = run_live(sc, [ctrl], seed=seed, out_dir=part, packets=False)
        else:
            from ratelab.run.runner import run_scenario
            result = run_scenario(sc, ["chromium"], seed=seed, out_dir=part, params={"chromium": browser})
    except InputError as exc:
        shutil.rmtree(part, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
        line = exc.line()
        (folder / "refused.txt").write_text(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {line}\n")
        print(f"fidelity: {label}: refused: {line}", file=sys.stderr, flush=True)
        return False
    except BaseException:
        shutil.rmtree(part, ignore_errors=True)
        raise
    write_summary(result, part / "summary.json")
    meta["load1_after"] = os.getloadavg()[0]
    meta["wall_s"] = time.time() - meta["started_unix"]
    run = result.runs[0]
    meta["run_folder"] = run.dir.name if run.dir else None
    if kind == "browser":
        flows = run.flows or []
        meta["cpu_limited"] = any(bool(f.get("cpu_limited")) for f in flows)
        meta["cpu_limited_fraction"] = max((float(f.get("cpu_limited_fraction") or 0) for f in flows), default=0.0)
        meta["source_fps"] = min((float(f.get("source_fps") or 0) for f in flows), default=0.0)
        meta["browser"] = browser
    (part / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    with contextlib.suppress(FileNotFoundError):
        (folder / "refused.txt").unlink()
    os.replace(part, done)
    return True


# ------------------------------------------------------------------------------------- report

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


def measured_case(out: Path, case: Case) -> Measured | None:
    """The case's runs in ``out`` with their metrics; None when it has none, or no simulator
    run to give the capacity (said on stderr)."""
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
    return Measured(runs, refused, cap, n, flows, min(durs))


def report(a: argparse.Namespace) -> int:
    from ratelab.report import fidelity as F

    out, docs = Path(a.out), Path(a.docs)
    if not out.is_dir():
        raise Bad(f"error: --out: no such folder: {out}")
    docs.mkdir(parents=True, exist_ok=True)
    rows, goals, per_run, gaps = [], [], [], []
    for case in select(a.cases):
        m = measured_case(out, case)
        if m is None:
            continue
        runs, refused, cap, n, flows = m.runs, m.refused, m.capacity, m.n, m.flows
        real_target = {c: _targets(runs.get(c, []), flows, n) for c in ("chromium", "live-gcc", "live-ratelab-cc")}
        for c in CONTENDERS:
            lst = runs.get(c, [])
            if not lst and c not in refused:
                continue
            vs_chrome = [_mare(lo, flows, n, real_target["chromium"]) for lo in lst] if c != "chromium" else []
            own = {"sim-gcc": "live-gcc", "sim-ratelab-cc": "live-ratelab-cc"}.get(c)
            vs_live = [_mare(lo, flows, n, real_target[own]) for lo in lst] if own else []
            row = {"case": case.name, "split": case.split, "contender": c, "n": len(lst), "refused": refused.get(c, "") if not lst else ""}
            for k in ("utilization", "queue_mean_ms", "queue_p95_ms", "freezes", "loss_pct", "t90_up_s", "react_down_s"):
                row[k] = F.spread(lo.metrics[k] for lo in lst)
            row["mare_chromium"], row["mare_live"] = F.spread(vs_chrome), F.spread(vs_live)
            row["load1"] = F.spread(lo.meta.get("load1_before", math.nan) for lo in lst) if not c.startswith("sim") else None
            row["cpu_limited"] = any(lo.meta.get("cpu_limited") for lo in lst)
            row["duration"] = sorted({lo.meta["duration_s"] for lo in lst})
            rows.append(row)
            for lo in lst:
                per_run.append({"case": case.name, "split": case.split, "contender": c, "rep": lo.meta["rep"],
                                "duration_s": lo.meta["duration_s"], "media_fps": lo.meta.get("media_fps") or "", "load1_before": lo.meta.get("load1_before"),
                                "load1_after": lo.meta.get("load1_after"), "cpu_limited": lo.meta.get("cpu_limited", ""),
                                "cpu_limited_fraction": lo.meta.get("cpu_limited_fraction", ""),
                                "source_fps": lo.meta.get("source_fps", ""), **emulator_lateness(lo),
                                **{k: round(v, 3) for k, v in lo.metrics.items()}})
        sim, real = by_metric(runs.get("sim-gcc", [])), by_metric(runs.get("chromium", []))
        met, why = F.goal(sim, real)
        goals.append((case, met, why))
        gaps.append((case, mean_gaps(sim, real)))
        if a.figures:
            figure(case, runs, cap, n, docs / f"{case.name}.png", m.duration)
    (docs / "table.md").write_text(table_md(rows, goals, a) + gaps_md(gaps, goals))
    with (docs / "runs.csv").open("w", newline="") as fh:
        if per_run:
            w = csv.DictWriter(fh, fieldnames=list(per_run[0]))
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
    """The real contender's per-flow target, mean over its repeats, concatenated over flows."""
    import numpy as np
    from ratelab.report import fidelity as F

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
    with_fps = any(lo.fps is not None for lst in runs.values() for lo in lst)
    rows, ratios = (3, [3, 2, 1.4]) if with_fps else (2, [3, 2])
    fig, axes = plt.subplots(rows, 1, figsize=(9, 5.5 + 1.6 * (rows - 2)), sharex=True, gridspec_kw={"height_ratios": ratios})
    ax1, ax2 = axes[0], axes[1]
    ax1.step(t, cap[:n], where="pre", color="black", lw=1.2, label="capacity")
    for c, lst in runs.items():
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


def list_cases(_a) -> int:
    for c in cases():
        print(f"{c.name:44s} {c.split:5s} {c.base:18s} {' '.join(c.overrides)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tools/fidelity.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the cases")
    r = sub.add_parser("run", help="run the missing runs")
    r.add_argument("--out", required=True)
    r.add_argument("--cases", help="regular expression on case names")
    r.add_argument("--contender", dest="contenders", action="append", help=f"repeatable; default all ({', '.join(CONTENDERS)})")
    r.add_argument("--repeats", type=int, default=3, help="runs of each real contender (default 3)")
    r.add_argument("--seeds", type=int, default=3, help="simulator seeds (default 3)")
    r.add_argument("--duration-cap", type=float, default=None, help="cap every case's duration (s)")
    r.add_argument("--width", type=int, default=640)
    r.add_argument("--height", type=int, default=360)
    r.add_argument("--fps", type=float, default=15.0)
    r.add_argument("--complexity", type=float, default=0.5)
    r.add_argument("--browser", action="append", default=[], metavar="KEY=VALUE",
                   help="a browser option for the Chromium runs (TOML value, e.g. fec=false); see docs/browser.md")
    r.add_argument("--model", action="append", default=[], metavar="KEY=VALUE",
                   help="a media-model setting for every flow of the simulated and live contenders, e.g. "
                        "media.pacer_burst_ms=0 (repeatable; recorded in meta.json)")
    r.add_argument("--scenario-fps", dest="same_fps", action="store_false",
                   help="simulated and live sources keep the scenario's media.fps (default: the browser's --fps)")
    e = sub.add_parser("evidence", help="getStats and packet-burst numbers per case (Markdown)")
    e.add_argument("--out", required=True)
    e.add_argument("--cases", help="regular expression on case names")
    e.add_argument("--frame-rate", action="store_true", help="instead: Chromium's frame rate against its encoder target, per width")
    q = sub.add_parser("report", help="table, runs.csv and figures from the run folders")
    q.add_argument("--out", required=True)
    q.add_argument("--docs", default=str(ROOT / "docs" / "fidelity"))
    q.add_argument("--cases", help="regular expression on case names")
    q.add_argument("--no-figures", dest="figures", action="store_false", help="the table and runs.csv only")
    g = sub.add_parser("score", help="a simulator variant's goal per case against real runs recorded in a runs.csv")
    g.add_argument("--out", required=True, help="the variant's run folder (tools/fidelity.py run --contender sim-gcc ...)")
    g.add_argument("--real", default=str(ROOT / "docs" / "fidelity" / "full" / "runs.csv"),
                   help="a runs.csv written by report (default: the committed Chromium study)")
    g.add_argument("--real-contender", default="chromium", help="the real side in --real (default chromium)")
    g.add_argument("--sim", default="sim-gcc", help="the simulated side in --out (default sim-gcc)")
    g.add_argument("--cases", help="regular expression on case names")
    g.add_argument("--md", help="also write the Markdown here")
    try:
        a = p.parse_args(argv)
        if a.cmd == "run":
            if a.repeats < 1 or a.seeds < 0:
                raise Bad("error: --repeats must be ≥ 1 and --seeds ≥ 0")
            if a.duration_cap is not None and not a.duration_cap > 0:
                raise Bad("error: --duration-cap must be > 0 s")
            return run_all(a)
        if a.cmd == "report":
            return report(a)
        if a.cmd == "score":
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            sys.modules["fidelity"] = sys.modules[__name__]  # one module, one Bad, when run as a script
            import fidelity_score
            return fidelity_score.score(a)
        if a.cmd == "evidence":
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            import fidelity_evidence as E
            cs = select(a.cases)
            return E.frame_rate_table(Path(a.out), cs) if a.frame_rate else E.evidence(Path(a.out), cs)
        return list_cases(a)
    except Bad as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the project's input errors: one line
        from ratelab.errors import InputError
        from ratelab.run.result import Interrupted
        if isinstance(exc, Interrupted):
            print("interrupted", file=sys.stderr)
            return 130
        if isinstance(exc, InputError):
            print(exc.line(), file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
