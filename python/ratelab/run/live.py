"""Live mode: the same controllers over real UDP, with RTP/RTCP on the wire.

* ``ratelab live run SCENARIO`` starts the link emulator, and a receiver and a sender per media flow, on loopback
  (all in ``ratelab._core``, real time) and writes the same ``summary.json``, Parquet files and
  report as ``ratelab run``; each run folder also gets ``live.json`` with what every component
  measured (pacer timing error, emulator drops and delays, feedback counts, CPU).
* ``ratelab live send --to HOST:PORT -c NAME`` / ``ratelab live recv --listen ADDR`` run the two
  ends separately (two hosts, or two terminals).
* ``ratelab emulate --listen A --forward B --trace T`` relays UDP through the simulator's link
  model (capacity trace, drop-tail queue, loss, delay), both directions.

The command group is added to the CLI with :func:`register`.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ratelab.errors import InputError, from_core
from ratelab.native import core, core_errors
from ratelab.run.results import strict_json
from ratelab.run.runner import (REAL_TIME_STACKS, Contender, ParquetSink, RunResult, ScenarioRun, no_progress, prepare_runs,
                                run_each, run_real_time)
from ratelab.scenario import Scenario, load_scenario, resolve_trace

FEEDBACK_FORMATS = ("twcc", "rfc8888")


def run_live(
    scenario: Scenario | str | Path,
    controllers: Sequence[str] | None = None,
    *,
    seed: int = 1,
    out_dir: str | Path | None = None,
    packets: bool = True,
    overrides: Iterable[str] = (),
    feedback: str = "twcc",
    progress: bool = False,
    capture: str | Path | None = None,
    params: Mapping[str, Mapping[str, Any]] | None = None,
) -> ScenarioRun:
    """Run ``scenario`` live once per controller (real time: each run takes ``duration_s``).

    Every media flow runs (``count`` expanded, both directions); a controller given replaces the
    controller of every media flow, as in :func:`ratelab.run.runner.run_scenario`. Same results layout as :func:`ratelab.run.runner.run_scenario`, plus ``live.json`` per run.
    ``capture``: a pcap file of all RTP/RTCP the emulator received (one controller only).
    """
    if feedback not in FEEDBACK_FORMATS:
        raise InputError("--feedback", feedback, f"unknown feedback format (known: {', '.join(FEEDBACK_FORMATS)})")
    sc, contenders = prepare_runs(scenario, controllers, overrides, packets, params)
    _check_live(sc)
    if capture is not None and len(contenders) > 1:
        raise InputError("--capture", "", "capture one run at a time (give one -c)")

    def live(c: Contender, run_dir: Path | None) -> RunResult:
        if c.controller in REAL_TIME_STACKS:  # -c chromium: a real browser through the emulator
            return run_real_time(c, seed, run_dir, no_progress)
        if progress:
            print(f"live: {sc.name} · {c.label}: {sc.duration_s:g} s in real time ...", file=sys.stderr, flush=True)
        return _run_one(c, seed, run_dir, feedback, str(capture) if capture is not None else None)

    return run_each(sc, contenders, seed=seed, out=Path(out_dir) if out_dir is not None else None,
                    title=f"{sc.name} (live)", run=live)


def _check_live(sc: Scenario) -> None:
    """Live mode runs the media flows (TCP stays in the simulator); say so before anything starts."""
    flows = [f for f in sc.data.get("flows", []) if isinstance(f, dict)]
    for i, f in enumerate(flows):
        if f.get("kind") == "tcp":
            raise InputError(sc.source, f"flows[{i}].kind",
                             "TCP flows run in the simulator only (`ratelab run`); live mode runs media flows")
        if isinstance(f.get("media"), dict) and f["media"].get("fec") is True:
            # The wire format has no FEC packets yet (the Rust side refuses it too).
            raise InputError(sc.source, f"flows[{i}].media.fec",
                             "live mode does not carry FEC packets yet; run media.fec = true in the simulator (`ratelab run`)")


def _run_one(c: Contender, seed: int, run_dir: Path | None, feedback: str, capture: str | None) -> RunResult:
    sc, name = c.scenario, c.name
    t0 = time.perf_counter()
    try:
        res = core().live_run(sc.to_json(), seed=seed, controller=None, feedback=feedback, capture=capture)
    except core_errors() as exc:
        raise from_core(exc, sc.source) from None
    wall = time.perf_counter() - t0
    summary = res["summary"]
    if run_dir is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
        sinks = {"series": ParquetSink(run_dir / "series.parquet")}
        if sc.data.get("metrics", {}).get("packet_log", True):
            sinks["packets"] = ParquetSink(run_dir / "packets.parquet")
        try:
            for key, sink in sinks.items():
                sink.write(res[key])
                sink.commit()
        except BaseException:
            for s in sinks.values():
                s.abort()
            raise
        details = dict(res["details"])
        (run_dir / "live.json").write_text(json.dumps(strict_json(details), indent=2) + "\n", encoding="utf-8")
    warning = res["details"].get("warning")
    if warning:
        print(f"warning: {name}: {warning}", file=sys.stderr)
    duration = float(summary.get("duration_s", sc.duration_s))
    return RunResult.from_summary(summary, name=name, controller=c.label, wall=wall, duration=duration,
                                  dir=run_dir)


def flow_document(controller: str, params: dict[str, Any] | None = None, media: dict[str, Any] | None = None,
                  feedback: dict[str, Any] | None = None) -> dict[str, Any]:
    """One media flow in the scenario schema (what the sender and receiver are built from)."""
    doc: dict[str, Any] = {"kind": "media", "controller": controller}
    if params:
        doc["params"] = params
    if media:
        doc["media"] = media
    if feedback:
        doc["feedback"] = feedback
    return doc


def _call(fn, *args, source: str) -> dict[str, Any]:
    try:
        return fn(*args)
    except core_errors() as exc:
        raise from_core(exc, source) from None
    except ValueError as exc:
        raise InputError(source, "", str(exc)) from None
    except OSError as exc:  # an address that cannot be bound or reached (`--listen 8.8.8.8:5000`)
        raise InputError(source, "", str(exc)) from None


def send(to: str, flow: dict[str, Any], options: dict[str, Any], bind: str = "0.0.0.0:0") -> dict[str, Any]:
    """Run a live sender (blocks for ``options['duration_s']``); returns its statistics."""
    return _call(core().live_send, to, json.dumps(flow), json.dumps(options), bind, source="live send")


def recv(listen: str, flow: dict[str, Any], options: dict[str, Any], peer: str | None = None) -> dict[str, Any]:
    """Run a live receiver until the sender's BYE (or silence); returns its statistics."""
    return _call(core().live_recv, listen, json.dumps(flow), json.dumps(options), peer, source="live recv")


def emulate(listen: str, forward: str, options: dict[str, Any]) -> dict[str, Any]:
    """Run the link emulator (until ``options['duration_s']`` or Ctrl-C); returns its statistics."""
    return _call(core().emulate, listen, forward, json.dumps(options), source="emulate")


def link_document(trace: str | None, capacity_kbps: float | None, delay_ms: float, queue_ms: float | None,
                  queue_packets: int | None, loss: float) -> dict[str, Any]:
    """The emulated link in the scenario's ``link`` schema."""
    if (trace is None) == (capacity_kbps is None):
        raise InputError("emulate", "", "give exactly one of --trace and --capacity-kbps")
    link: dict[str, Any] = {"delay_ms": delay_ms, "loss": loss}
    if trace is not None:
        link["trace"] = str(resolve_trace(trace, Path.cwd(), "--trace"))
    else:
        link["capacity_kbps"] = capacity_kbps
    if queue_ms is not None and queue_packets is not None:
        raise InputError("emulate", "", "give at most one of --queue-ms and --queue-packets")
    if queue_packets is not None:
        link["queue"] = {"packets": queue_packets}
    elif queue_ms is not None:
        link["queue"] = {"ms": queue_ms}
    return link
