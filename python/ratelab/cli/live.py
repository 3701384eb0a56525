"""The real-time commands: ``ratelab live run|send|recv`` and ``ratelab emulate`` (their
drivers are in :mod:`ratelab.run.live`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ratelab.cli.app import cli, controller_params, finish_runs, param_option, scenario_run_options, seed_option
from ratelab.cli.options import TIMEOUT_S, Number
from ratelab.errors import InputError
from ratelab.run.live import (FEEDBACK_FORMATS, emulate, flow_document, link_document, recv, run_live, send)
from ratelab.run.results import strict_json
from ratelab.run.runner import check_controllers
from ratelab.scenario import load_scenario


def _print_json(obj: dict[str, Any], out: Path | None, name: str) -> None:
    text = json.dumps(strict_json(obj), indent=2) + "\n"
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text, encoding="utf-8")
    print(text, end="")


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
def live_run(scenario: str, controllers: tuple[str, ...], params: tuple[str, ...], seed: int, out: Path | None,
             overrides: tuple[str, ...], quiet: bool, feedback: str, no_packets: bool, capture: Path | None) -> None:
    """Run SCENARIO's media flows live on loopback (emulator, a receiver and a sender per flow) and write the same
    outputs as `ratelab run`."""
    sc = load_scenario(scenario, overrides)
    out = out or Path("results") / f"{sc.name}-live"
    by_controller = controller_params(params, controllers, sc)
    finish_runs(out, lambda: run_live(sc, controllers or None, seed=seed, out_dir=out, packets=not no_packets,
                                      feedback=feedback, progress=not quiet, capture=capture, params=by_controller))

@live.command("send")
@click.option("--to", "to", required=True, metavar="HOST:PORT", help="Where the receiver (or the emulator) listens.")
@click.option("-c", "--controller", default="gcc", show_default=True, metavar="NAME", help="Congestion controller.")
@param_option
@click.option("--duration", type=Number("duration_s"), default=60.0, show_default=True, help="Seconds to send.")
@click.option("--start-kbps", type=Number("flows[*].media.start_kbps"), default=300.0, show_default=True)
@click.option("--min-kbps", type=Number("flows[*].media.min_kbps"), default=150.0, show_default=True)
@click.option("--max-kbps", type=Number("flows[*].media.max_kbps"), default=5000.0, show_default=True)
@click.option("--bind", default="0.0.0.0:0", show_default=True, metavar="ADDR", help="Local address to send from.")
@click.option("--timeout", type=Number(TIMEOUT_S), default=10.0, show_default=True, help="Give up after this many seconds without feedback.")
@seed_option
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, help="Also write sender.json here.")
def live_send(to: str, controller: str, params: tuple[str, ...], duration: float, start_kbps: float, min_kbps: float,
              max_kbps: float, bind: str, timeout: float, seed: int, out: Path | None) -> None:
    """Send one synthetic video flow over RTP to HOST:PORT, adapting to its feedback."""
    if max_kbps < min_kbps:  # as a scenario's media.max_kbps must be ≥ min_kbps
        raise InputError("--max-kbps", "", f"{max_kbps:g} must be ≥ --min-kbps {min_kbps:g}")
    check_controllers([controller])
    p = controller_params(params, [controller]).get(controller, {})
    flow = flow_document(controller, p, {"start_kbps": start_kbps, "min_kbps": min_kbps, "max_kbps": max_kbps})
    stats = send(to, flow, {"duration_s": duration, "silence_timeout_s": timeout, "seed": seed, "packet_log": False}, bind)
    _print_json(stats, out, "sender.json")
    if stats.get("end_reason") == "silent-peer":
        raise InputError("live send", "", stats.get("message") or "the peer fell silent")

@live.command("recv")
@click.option("--listen", required=True, metavar="ADDR", help="Address to receive on, e.g. 0.0.0.0:5004.")
@click.option("--peer", default=None, metavar="HOST:PORT", help="Accept packets only from this address (default: the first sender).")
@fb_option
@click.option("--interval-ms", type=Number("flows[*].feedback.interval_ms"), default=50.0, show_default=True, help="Feedback interval.")
@click.option("-c", "--controller", default="gcc", show_default=True, metavar="NAME",
              help="The sender's controller (its receiver-side estimator, if any, runs here and reports by REMB).")
@click.option("--timeout", type=Number(TIMEOUT_S), default=30.0, show_default=True, help="Give up when nothing arrives for this many seconds at the start.")
@click.option("--duration", "--max-duration", "max_duration", type=Number("duration_s", zero="at the sender's BYE"), default=0.0,
              help="Stop after this many seconds (default: at the sender's BYE).")
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
@click.option("--capacity-kbps", type=Number("link.capacity_kbps"), default=None, help="Constant capacity instead of a trace.")
@click.option("--delay-ms", type=Number("flows[*].one_way_delay_ms"), default=0.0, show_default=True, help="One-way propagation delay (forward).")
@click.option("--reverse-delay-ms", type=Number("flows[*].return_delay_ms"), default=None, help="Delay of the reverse direction [default: --delay-ms].")
@click.option("--queue-ms", type=Number("link.queue.ms"), default=None, help="Drop-tail queue in ms at the initial capacity.")
@click.option("--queue-packets", type=Number("link.queue.packets", integer=True), default=None, help="Drop-tail queue in packets.")
@click.option("--loss", type=Number("link.loss"), default=0.0, show_default=True, help="Random loss probability (forward).")
@click.option("--duration", type=Number("duration_s", zero="until Ctrl-C"), default=0.0, help="Stop after this many seconds (default: Ctrl-C).")
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
