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
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from .errors import InputError, from_core
from .native import core, core_errors
from .runner import Interrupted, ParquetSink, RunResult, ScenarioRun, check_controllers, folder_name, prepare_runs, unique_name
from .scenario import Scenario, load_scenario, resolve_trace

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
) -> ScenarioRun:
    """Run ``scenario`` live once per controller (real time: each run takes ``duration_s``).

    Every media flow runs (``count`` expanded, both directions); a controller given replaces the
    controller of every media flow, as in :func:`ratelab.runner.run_scenario`. Same results layout as :func:`ratelab.runner.run_scenario`, plus ``live.json`` per run.
    ``capture``: a pcap file of all RTP/RTCP the emulator received (one controller only).
    """
    if feedback not in FEEDBACK_FORMATS:
        raise InputError("--feedback", feedback, f"unknown feedback format (known: {', '.join(FEEDBACK_FORMATS)})")
    sc, choices = prepare_runs(scenario, controllers, overrides, packets)
    _check_live(sc)
    if capture is not None and len(choices) > 1:
        raise InputError("--capture", "", "capture one run at a time (give one -c)")
    out = Path(out_dir) if out_dir is not None else None
    result = ScenarioRun(sc, seed, out_dir=out, title=f"{sc.name} (live)")
    doc = sc.to_json()
    names: list[str] = []
    try:
        for choice in choices:
            label = choice or "+".join(sc.media_controllers()) or "scenario"
            name = unique_name(label, names)
            names.append(name)
            if progress:
                import sys

                print(f"live: {sc.name} · {label}: {sc.duration_s:g} s in real time ...", file=sys.stderr, flush=True)
            result.runs.append(_run_one(sc, doc, choice, label, name, seed, out / folder_name(name) if out else None, feedback,
                                       str(capture) if capture is not None else None))
    except KeyboardInterrupt:
        result.interrupted = True
        raise Interrupted(result) from None
    return result


def _check_live(sc: Scenario) -> None:
    """Live mode runs the media flows (TCP stays in the simulator); say so before anything starts."""
    flows = [f for f in sc.data.get("flows", []) if isinstance(f, dict)]
    for i, f in enumerate(flows):
        if f.get("kind") == "tcp":
            raise InputError(sc.source, f"flows[{i}].kind",
                             "TCP flows run in the simulator only (`ratelab run`); live mode runs media flows")


def _run_one(sc: Scenario, doc: str, controller: str | None, label: str, name: str, seed: int,
             run_dir: Path | None, feedback: str, capture: str | None) -> RunResult:
    t0 = time.perf_counter()
    try:
        res = core().live_run(doc, seed=seed, controller=controller, feedback=feedback, capture=capture)
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
        (run_dir / "live.json").write_text(json.dumps(_strict(details), indent=2) + "\n", encoding="utf-8")
    warning = res["details"].get("warning")
    if warning:
        import sys

        print(f"warning: {name}: {warning}", file=sys.stderr)
    duration = float(summary.get("duration_s", sc.duration_s))
    return RunResult.from_summary(summary, name=name, controller=controller or label, wall=wall, duration=duration,
                                  dir=run_dir)


def _strict(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _strict(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_strict(x) for x in v]
    if isinstance(v, float) and v != v:
        return None
    return v


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


def _print_json(obj: dict[str, Any], out: Path | None, name: str) -> None:
    text = json.dumps(_strict(obj), indent=2) + "\n"
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text, encoding="utf-8")
    print(text, end="")


def register(cli) -> None:
    """Add ``live run|send|recv`` and ``emulate`` to the click group ``cli``."""
    import click

    from .cli import finish_runs, scenario_run_options, seed_option

    fb_option = click.option("--feedback", type=click.Choice(FEEDBACK_FORMATS), default="twcc", show_default=True,
                             help="Feedback wire format: TWCC (draft-holmer-01) or RFC 8888.")

    @cli.group()
    def live() -> None:
        """The controllers over real UDP (RTP/RTCP), in real time."""

    @live.command("run")
    @scenario_run_options("results/<scenario>-live")
    @fb_option
    @click.option("--no-packets", is_flag=True, help="Do not keep the per-packet log.")
    @click.option("--capture", type=click.Path(dir_okay=False, path_type=Path), default=None,
                  help="Write the run's RTP/RTCP to this pcap file (for tshark/Wireshark).")
    def live_run(scenario: str, controllers: tuple[str, ...], seed: int, out: Path | None, overrides: tuple[str, ...],
                 feedback: str, no_packets: bool, capture: Path | None) -> None:
        """Run SCENARIO's media flows live on loopback (emulator, a receiver and a sender per flow) and write the same
        outputs as `ratelab run`."""
        sc = load_scenario(scenario, overrides)
        out = out or Path("results") / f"{sc.name}-live"
        finish_runs(out, lambda: run_live(sc, controllers or None, seed=seed, out_dir=out, packets=not no_packets,
                                          feedback=feedback, progress=True, capture=capture))

    @live.command("send")
    @click.option("--to", "to", required=True, metavar="HOST:PORT", help="Where the receiver (or the emulator) listens.")
    @click.option("-c", "--controller", default="gcc", show_default=True, metavar="NAME", help="Congestion controller.")
    @click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="Controller parameter (TOML literal). Repeatable.")
    @click.option("--duration", type=float, default=60.0, show_default=True, help="Seconds to send.")
    @click.option("--start-kbps", type=float, default=300.0, show_default=True)
    @click.option("--min-kbps", type=float, default=150.0, show_default=True)
    @click.option("--max-kbps", type=float, default=5000.0, show_default=True)
    @click.option("--bind", default="0.0.0.0:0", show_default=True, metavar="ADDR", help="Local address to send from.")
    @click.option("--timeout", type=float, default=10.0, show_default=True, help="Give up after this many seconds without feedback.")
    @seed_option
    @click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, help="Also write sender.json here.")
    def live_send(to: str, controller: str, params: tuple[str, ...], duration: float, start_kbps: float, min_kbps: float,
                  max_kbps: float, bind: str, timeout: float, seed: int, out: Path | None) -> None:
        """Send one synthetic video flow over RTP to HOST:PORT, adapting to its feedback."""
        from .scenario import parse_override

        check_controllers([controller])
        p: dict[str, Any] = {}
        for item in params:
            keys, value = parse_override(item)
            p[".".join(keys)] = value
        flow = flow_document(controller, p, {"start_kbps": start_kbps, "min_kbps": min_kbps, "max_kbps": max_kbps})
        stats = send(to, flow, {"duration_s": duration, "silence_timeout_s": timeout, "seed": seed, "packet_log": False}, bind)
        _print_json(stats, out, "sender.json")
        if stats.get("end_reason") == "silent-peer":
            raise InputError("live send", "", stats.get("message") or "the peer fell silent")

    @live.command("recv")
    @click.option("--listen", required=True, metavar="ADDR", help="Address to receive on, e.g. 0.0.0.0:5004.")
    @click.option("--peer", default=None, metavar="HOST:PORT", help="Accept packets only from this address (default: the first sender).")
    @fb_option
    @click.option("--interval-ms", type=float, default=50.0, show_default=True, help="Feedback interval.")
    @click.option("-c", "--controller", default="gcc", show_default=True, metavar="NAME",
                  help="The sender's controller (its receiver-side estimator, if any, runs here and reports by REMB).")
    @click.option("--timeout", type=float, default=30.0, show_default=True, help="Give up when nothing arrives for this many seconds at the start.")
    @click.option("--max-duration", type=float, default=0.0, help="Stop after this many seconds (default: at the sender's BYE).")
    @click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, help="Also write receiver.json here.")
    def live_recv(listen: str, peer: str | None, feedback: str, interval_ms: float, controller: str, timeout: float,
                  max_duration: float, out: Path | None) -> None:
        """Receive a live flow, send TWCC or RFC 8888 feedback, and report what arrived."""
        flow = flow_document(controller, feedback={"interval_ms": interval_ms})
        stats = recv(listen, flow, {"format": feedback, "first_packet_timeout_s": timeout, "max_duration_s": max_duration, "packet_log": False}, peer)
        _print_json(stats, out, "receiver.json")
        if stats.get("end_reason") in ("no-peer", "silent-peer") and not stats.get("packets_received"):
            raise InputError("live recv", "", stats.get("message") or "nothing arrived")

    @cli.command("emulate")
    @click.option("--listen", required=True, metavar="ADDR", help="Address the sender sends to.")
    @click.option("--forward", required=True, metavar="HOST:PORT", help="Where packets are relayed to (the receiver).")
    @click.option("--trace", default=None, help="Capacity trace (CSV, mahimahi or OpenNetLab JSON; shipped names work).")
    @click.option("--capacity-kbps", type=float, default=None, help="Constant capacity instead of a trace.")
    @click.option("--delay-ms", type=float, default=0.0, show_default=True, help="One-way propagation delay (forward).")
    @click.option("--reverse-delay-ms", type=float, default=None, help="Delay of the reverse direction [default: --delay-ms].")
    @click.option("--queue-ms", type=float, default=None, help="Drop-tail queue in ms at the initial capacity.")
    @click.option("--queue-packets", type=int, default=None, help="Drop-tail queue in packets.")
    @click.option("--loss", type=float, default=0.0, show_default=True, help="Random loss probability (forward).")
    @click.option("--duration", type=float, default=0.0, help="Stop after this many seconds (default: Ctrl-C).")
    @seed_option
    @click.option("--capture", type=click.Path(dir_okay=False, path_type=Path), default=None,
                  help="Write every datagram received (both directions) to this pcap file.")
    @click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, help="Also write emulator.json here.")
    def emulate_cmd(listen: str, forward: str, trace: str | None, capacity_kbps: float | None, delay_ms: float,
                    reverse_delay_ms: float | None, queue_ms: float | None, queue_packets: int | None, loss: float,
                    duration: float, seed: int, capture: Path | None, out: Path | None) -> None:
        """Relay UDP between a client and FORWARD through the simulator's link model, in real time."""
        link = link_document(trace, capacity_kbps, 0.0, queue_ms, queue_packets, loss)
        opts = {"link": link, "forward_delay_ms": delay_ms, "reverse_delay_ms": delay_ms if reverse_delay_ms is None else reverse_delay_ms,
                "duration_s": duration, "seed": seed}
        if capture is not None:
            opts["capture"] = str(capture)
        stats = emulate(listen, forward, opts)  # Ctrl-C stops it and still returns the statistics
        _print_json(stats, out, "emulator.json")

