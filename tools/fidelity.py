#!/usr/bin/env python3
"""The fidelity study (docs/fidelity.md, issue #20 items 3 and 5): Chromium, ratelab's live
stack and the simulator on the same cases, the same metrics, side by side.

    PYTHONPATH=python python3 tools/fidelity.py list
    PYTHONPATH=python python3 tools/fidelity.py run --out /work/fidelity-runs --repeats 1 --seeds 3 \\
        --duration-cap 40 --width 640 --height 360 --fps 15
    PYTHONPATH=python python3 tools/fidelity.py report --out /work/fidelity-runs --docs docs/fidelity

``run`` is resumable: every run gets its own folder ``OUT/<case>/<contender>/<r1|s1>/``, written
as ``<name>.part`` and renamed when complete; a rerun skips complete folders (real time is
precious). A complete simulated or live run made by another simulator build or with other
``--model`` settings is not mixed into a rerun: one line names it, exit 2. Real-time runs
(Chromium, live) go strictly one at a time (a lock file in OUT keeps
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
import functools
import json
import math
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
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
                reps = [f"s{s}" for s in range(1, a.seeds + 1)] if kind == "sim" else [f"r{r}" for r in range(a.repeat_from, a.repeats + 1)]
                for rep in reps:
                    if not one_run(out / case.name / c, rep, case, sc, kind, ctrl, browser, a):
                        break  # refused: the other repeats would be refused too
    return 0


def browser_options(pairs: list[str]) -> dict[str, Any]:
    """``--browser KEY=VALUE`` (a TOML value, read as ``--set`` reads one: ``fec=false``,
    ``codec="VP9"``) as browser options, checked against :class:`BrowserOptions` before any run
    starts."""
    from ratelab.browser.run import BrowserOptions
    from ratelab.errors import InputError
    from ratelab.scenario import parse_value

    out: dict[str, Any] = {}
    try:
        for kv in pairs:
            key, sep, value = kv.partition("=")
            if not sep or not key.strip():
                raise Bad(f"error: --browser: {kv}: expected KEY=VALUE")
            out[key.strip()] = parse_value(value.strip())
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


@functools.cache
def simulator_build() -> str:
    """Which simulator makes the sim and live runs: ratelab's version and a digest of its
    compiled core (a rebuilt core changes it)."""
    import hashlib

    import ratelab
    from ratelab import _core
    return f"{ratelab.__version__}+{hashlib.sha256(Path(_core.__file__).read_bytes()).hexdigest()[:12]}"


def check_resumable(done: Path, model: list[str]) -> None:
    """A complete sim or live run is kept on a rerun only if the same simulator build made it
    with the same ``--model`` settings (a run recorded before builds were recorded is kept);
    otherwise the folder would mix two variants, so this stops with one line."""
    old = json.loads((done / "meta.json").read_text())
    made_by, old_model = old.get("simulator"), list(old.get("model") or [])
    if old_model != list(model) or (made_by is not None and made_by != simulator_build()):
        raise Bad(f"error: {done}: made by simulator {made_by or 'unrecorded'} with --model {old_model or 'none'}, "
                  f"this run is {simulator_build()} with --model {list(model) or 'none'}: use another --out, "
                  f"or remove that folder to run it again")


def one_run(folder: Path, rep: str, case: Case, sc, kind: str, ctrl: str, browser: dict[str, Any], a) -> bool:
    """Run one contender once into ``folder/rep`` unless already complete; False if refused."""
    from ratelab.errors import InputError
    from ratelab.run.results import write_summary

    done, part = folder / rep, folder / f"{rep}.part"
    if (done / "meta.json").is_file():
        if kind != "browser":
            check_resumable(done, a.model)
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
    if kind != "browser":
        meta["simulator"] = simulator_build()
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

def window(text: str) -> tuple[float, float]:
    """``FROM:TO`` in seconds (either side may be empty: the start, the end) as (from, to)."""
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        lo = float(parts[0]) if parts[0].strip() else 0.0
        hi = float(parts[1]) if parts[1].strip() else math.inf
    except ValueError:
        raise Bad(f"error: --window {text!r}: expected FROM:TO in seconds, e.g. 40:60 or 10:") from None
    if not (math.isfinite(lo) and lo >= 0 and hi > lo):
        raise Bad(f"error: --window {text!r}: FROM must be 0 or more and TO after it")
    return lo, hi


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
    r.add_argument("--repeat-from", type=int, default=1, metavar="N",
                   help="start the real contenders at repeat N (a repeat whose earlier ones live elsewhere)")
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
    e.add_argument("--frame-intervals", action="store_true",
                   help="instead: the histogram of Chromium's and the simulator's frame intervals, in frame periods")
    e.add_argument("--freezes", action="store_true",
                   help="instead: where each Chromium run's freezes come from (delivered frames or playout)")
    e.add_argument("--window", default="10:", metavar="FROM:TO",
                   help="with --frame-intervals: the intervals that end in this span of the call, seconds "
                        "(default 10: from 10 s to the end)")
    q = sub.add_parser("report", help="table, runs.csv and figures from the run folders")
    q.add_argument("--out", required=True)
    q.add_argument("--docs", default=str(ROOT / "docs" / "fidelity"))
    q.add_argument("--cases", help="regular expression on case names")
    q.add_argument("--no-figures", dest="figures", action="store_false", help="the table and runs.csv only")
    q.add_argument("--keep", metavar="RUNS_CSV",
                   help="also the runs of this earlier runs.csv whose folders are not in --out (metrics only: "
                        "no figure line, no target error)")
    g = sub.add_parser("score", help="a simulator variant's goal per case against real runs recorded in a runs.csv")
    g.add_argument("--out", required=True, help="the variant's run folder (tools/fidelity.py run --contender sim-gcc ...)")
    g.add_argument("--real", default=str(ROOT / "docs" / "fidelity" / "aligned" / "runs.csv"),
                   help="a runs.csv written by report (default: the committed Chromium study, links aligned with the media)")
    g.add_argument("--real-contender", default="chromium", help="the real side in --real (default chromium)")
    g.add_argument("--sim", default="sim-gcc", help="the simulated side in --out (default sim-gcc)")
    g.add_argument("--cases", help="regular expression on case names")
    g.add_argument("--md", help="also write the Markdown here")
    g.add_argument("--subsets", type=int, metavar="K",
                   help="also the goal over every choice of K of the variant's seeds (at most 500, drawn with a "
                        "fixed seed): how much the count depends on which seeds ran")
    try:
        a = p.parse_args(argv)
        if a.cmd == "run":
            if a.repeats < 1 or a.seeds < 0:
                raise Bad("error: --repeats must be ≥ 1 and --seeds ≥ 0")
            if not 1 <= a.repeat_from <= a.repeats:
                raise Bad("error: --repeat-from must be between 1 and --repeats")
            if a.duration_cap is not None and not a.duration_cap > 0:
                raise Bad("error: --duration-cap must be > 0 s")
            return run_all(a)
        if a.cmd == "score" and a.subsets is not None and a.subsets < 1:
            raise Bad("error: --subsets must be ≥ 1")
        if a.cmd in ("report", "score"):
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            sys.modules.setdefault("fidelity", sys.modules[__name__])  # run as a script: one module, one Bad
            import fidelity_report
            import fidelity_score
            return fidelity_report.report(a) if a.cmd == "report" else fidelity_score.score(a)
        if a.cmd == "evidence":
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            import fidelity_evidence as E
            cs = select(a.cases)
            if a.freezes:
                return E.freeze_table(Path(a.out), cs)
            if a.frame_intervals:
                after, until = window(a.window)
                return E.frame_interval_table(Path(a.out), cs, after_s=after, until_s=until)
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
