"""``run_browser``: one contender run of a scenario by a real Chromium call, in real time.

Every media flow of the scenario (``count`` expanded) becomes a sending and a receiving peer
connection in one headless page; the emulator relays each flow's route over the scenario's links
(capacity or trace, queue, loss, delays, reverse link), so the flows share the bottleneck as in
the simulator. The run folder gets the simulator's ``series.parquet`` columns (plus the
browser's), ``packets.parquet`` from the emulator's record and ``browser.json`` (provenance:
version, flags, field trials, page options, selected candidate pairs, emulator statistics).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ratelab.errors import InputError, one_line
from ratelab.run.result import Interrupted, RunResult, ScenarioRun
from ratelab.run.sinks import ParquetSink
from ratelab.scenario import Scenario, load_scenario
from ratelab.browser import chromium, emulator, metrics
from ratelab.browser.call import Call, check_through, host_candidate

CODECS = ("VP8", "VP9", "AV1", "H264")
#: Below this share of the asked frame rate from the source, the run warns that the host was too busy.
STARVED = 0.8


@dataclass
class BrowserOptions:
    """The call's source and codec (the same for every flow; each flow's content seed differs)."""

    width: int = 640
    height: int = 360
    fps: float = 30.0
    #: 0: talking head (static background) … 1: high motion (see call.js for the definition).
    complexity: float = 0.5
    #: A y4m file as the camera instead of the synthetic canvas (its own resolution and rate).
    y4m: str | None = None
    codec: str = "VP8"
    #: Offer RED/ULPFEC (and FlexFEC) and RTX beside the codec: Chromium's defaults. Off: its FEC
    #: controller has nothing to protect with; NACKed packets are resent on the media SSRC.
    fec: bool = True
    rtx: bool = True
    #: ``maxBitrate`` and the x-google start/min bitrates; None: the flow's media.max/start/min_kbps.
    max_kbps: float | None = None
    start_kbps: float | None = None
    min_kbps: float | None = None
    #: ``--force-fieldtrials``: {"WebRTC-Name": "Group"} or the flag's string.
    field_trials: dict[str, str] | str | None = None
    stats_interval_ms: float = 250.0
    connect_timeout_s: float = 10.0
    #: Start the links' schedules (trace, capacity steps, loss start) with the media: the first
    #: RTP packet meets the link at the first flow's ``start_s``, as a simulated flow does, and
    #: the run's clock counts from there. Off: they start with the emulator, before ICE and
    #: DTLS (which take 0.4-0.6 s through an emulated link).
    align_media: bool = True
    #: Test hooks: give the sender the receiver's real candidate (the bypass check must fire);
    #: crash the browser this many seconds into the call.
    test_bypass: bool = False
    test_crash_after_s: float | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, Any], name: str = "chromium") -> "BrowserOptions":
        """The options ``-p chromium.KEY=VALUE`` (or a plan's ``[params.chromium]``) gave; an
        unknown key is an error naming the ones there are, as for a controller."""
        known = [f.name for f in dataclasses.fields(cls) if not f.name.startswith("test_")]
        for key in params:
            if key not in known and not key.startswith("test_"):
                raise InputError("-p", f"{name}.{key}", f"unknown parameter of {name} (known: {', '.join(known)})")
        try:
            o = cls(**dict(params))
            o.check()
        except TypeError:  # e.g. width = "wide": a value of the wrong kind
            kinds = ", ".join(f"{k}={type(v).__name__}" for k, v in params.items())
            raise InputError("-p", name, f"a parameter has the wrong type ({kinds})") from None
        return o

    def check(self) -> None:
        def bad(key: str, why: str) -> InputError:
            return InputError("browser", key, why)
        if self.codec.upper() not in CODECS:
            raise bad("codec", f"unknown codec '{self.codec}' (known: {', '.join(CODECS)})")
        if not (16 <= self.width <= 3840 and 16 <= self.height <= 2160):
            raise bad("width", f"{self.width}x{self.height} is outside 16x16 .. 3840x2160")
        for key in ("fec", "rtx", "align_media"):
            if not isinstance(getattr(self, key), bool):
                raise bad(key, f"{getattr(self, key)!r} is not true or false")
        if not (1 <= self.fps <= 60):
            raise bad("fps", f"{self.fps} is outside 1 .. 60")
        if not (0.0 <= self.complexity <= 1.0):
            raise bad("complexity", f"{self.complexity} is outside 0 .. 1")
        if not (10 <= self.stats_interval_ms <= 250):
            raise bad("stats_interval_ms", f"{self.stats_interval_ms} is outside 10 .. 250")
        if self.y4m is not None and not Path(self.y4m).is_file():
            raise bad("y4m", f"no such file: {self.y4m}")


def expand_flows(sc: Scenario, controller: str) -> list[dict[str, Any]]:
    """The media flows as the simulator expands them (sim/build.rs ``expand_flows``): ``count``,
    labels, activity windows, data and return delays (link delay + the flow's)."""
    data = sc.data
    if data.get("route_changes"):
        # The emulator could switch the link, but Chromium would not be told of a new route (that
        # takes an ICE restart), so the call would not be the scenario's handover: refuse it.
        raise InputError(sc.source, "route_changes", "a browser call does not apply route changes yet; "
                         "run this scenario with simulated or live controllers")
    links = [data.get("link") or {}] + ([data["reverse_link"]] if data.get("reverse_link") else [])
    delays = [float(l.get("delay_ms", 0.0) or 0.0) for l in links]
    two_way, end, out = len(links) == 2, sc.duration_s, []
    for i, f in enumerate(data.get("flows") or []):
        if f.get("kind", "media") != "media":
            raise InputError(sc.source, f"flows[{i}].kind", "TCP flows run in the simulator only; a browser call runs media flows")
        count, label = int(f.get("count", 1)), f.get("label")
        d = 0 if f.get("direction", "forward") == "forward" else 1
        owd = float(f.get("one_way_delay_ms", 50.0))
        ret = float(f["return_delay_ms"]) if f.get("return_delay_ms") is not None else owd
        for k in range(count):
            fid = len(out)
            out.append({
                "id": fid, "index": i, "kind": "media", "controller": controller,
                "label": (label if count == 1 else f"{label}{k}") if label else f"media{fid}",
                "direction": "forward" if d == 0 else "reverse",
                "start_s": float(f.get("start_s", 0.0)), "stop_s": min(float(f.get("stop_s") or end), end),
                "data_delay_ms": (delays[d] if d < len(delays) else 0.0) + owd,
                "return_delay_ms": (delays[1 - d] if two_way else 0.0) + ret,
                "media": dict(f.get("media") or {}),
            })
    if not out:
        raise InputError(sc.source, "flows", "a browser call needs at least one media flow")
    return out


def run_browser(scenario: Scenario | str | Path, *, seed: int = 1, out_dir: str | Path | None = None,
                options: BrowserOptions | None = None, progress: bool = False, name: str = "chromium",
                metadata: dict[str, str] | None = None) -> RunResult:
    """Run ``scenario`` once as a Chromium call (``duration_s`` of real time); ``out_dir`` is this
    run's folder. Raises :class:`InputError` for bad input, a missing browser, a crash or media
    that bypassed the emulator, and :class:`ratelab.run.runner.Interrupted` on Ctrl-C; a run that did
    not finish leaves no files behind. ``metadata``: key/value pairs for the Parquet files (a
    campaign's provenance); ``ratelab.browser`` (version, flags, options) is added."""
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    o = options or BrowserOptions()
    o.check()
    flows = expand_flows(sc, name)
    run_dir = Path(out_dir) if out_dir is not None else None
    flags = chromium.field_trials_flag(o.field_trials)
    if o.y4m:
        flags.append(f"--use-file-for-fake-video-capture={Path(o.y4m).resolve()}")
    if progress:
        print(f"browser: {sc.name} · {name}: {sc.duration_s:g} s in real time ...", file=sys.stderr, flush=True)
    browser, emu, sinks, t_wall = None, None, {}, time.perf_counter()
    try:
        browser = chromium.launch(flags)
        emu, record = _call(sc, flows, o, seed, browser)
        stats, samples, packets, selected = record
        browser.close()
        result = _results(sc, flows, o, browser, emu, stats, samples, packets, selected, run_dir, sinks, name,
                          time.perf_counter() - t_wall, metadata)
        return result
    except KeyboardInterrupt:
        _cleanup(browser, emu, sinks, run_dir)
        raise Interrupted(ScenarioRun(sc, seed, out_dir=run_dir.parent if run_dir else None, interrupted=True)) from None
    except BaseException as exc:
        _cleanup(browser, emu, sinks, run_dir)
        if _is_playwright_error(exc):
            msg = one_line(str(exc), 200)
            if "closed" in msg or "crash" in msg.lower():
                raise InputError("chromium", "", f"the browser crashed or closed mid-run ({msg})") from None
            raise InputError("browser", "", f"the call page failed: {msg}") from None
        raise


def _is_playwright_error(exc: BaseException) -> bool:
    return type(exc).__module__.startswith("playwright")


def _cleanup(browser, emu, sinks: dict[str, ParquetSink], run_dir: Path | None) -> None:
    if browser is not None:
        browser.close()
    if emu is not None:
        with contextlib.suppress(Exception):
            emu.stop()
    for s in sinks.values():
        s.abort()
    if run_dir is not None:
        for n in ("browser.json.part",):
            with contextlib.suppress(OSError):
                (run_dir / n).unlink()
        with contextlib.suppress(OSError):
            run_dir.rmdir()  # only if empty


def _call(sc: Scenario, flows: list[dict[str, Any]], o: BrowserOptions, seed: int, browser):
    """Set up the page and the emulator, run the call for ``duration_s``; returns the emulator
    handle and (its statistics, getStats samples, packet record, selected pairs)."""
    call = Call(browser)
    hosts = []
    for f in flows:
        media = f["media"]
        cfg = {"id": f["id"], "width": o.width, "height": o.height, "fps": o.fps, "complexity": o.complexity,
               "seed": (seed * 1_000_003 + f["id"]) & 0xFFFFFFFF, "source": "camera" if o.y4m else "canvas", "codec": o.codec,
               "fec": o.fec, "rtx": o.rtx,
               "max_kbps": o.max_kbps or media.get("max_kbps", 5000.0), "start_kbps": o.start_kbps or media.get("start_kbps", 300.0),
               "min_kbps": o.min_kbps or media.get("min_kbps", 150.0)}
        f["page"] = cfg
        f["candidates"] = cands = call.setup(cfg)
        hosts.append((host_candidate(cands["sender"], "sender"), host_candidate(cands["receiver"], "receiver")))
    routes = [{"sender": f"{s['ip']}:{s['port']}", "receiver": f"{r['ip']}:{r['port']}", "direction": f["direction"],
               "data_delay_ms": f["data_delay_ms"], "return_delay_ms": f["return_delay_ms"]} for f, (s, r) in zip(flows, hosts)]
    opts: dict[str, Any] = {"link": dict(sc.data.get("link") or {}), "duration_s": sc.duration_s + o.connect_timeout_s + 5.0,
                            "seed": seed}
    first_start = min(f["start_s"] for f in flows)
    if o.align_media:
        opts["align_media_s"] = first_start
    if sc.data.get("reverse_link"):
        opts["reverse_link"] = dict(sc.data["reverse_link"])
    emu = emulator.start(hosts[0][0]["ip"], routes, opts, sc.source)
    try:
        host, port = emulator.split_address(emu.local_addr())
        t0 = emu.t0_unix
        # The run's clock: the emulator's, moved once the links align with the media (align_media)
        # so that the first media datagram is at the first flow's start_s.
        origin = 0.0
        now = lambda: time.time() - t0 - origin  # noqa: E731
        waiting = o.align_media  # for the first media datagram: later flows and the end wait too
        call.start_sampling(o.stats_interval_ms)
        pending = sorted(flows, key=lambda f: f["start_s"])
        active: list[dict[str, Any]] = []
        samples: list[dict[str, Any]] = []
        selected: dict[int, Any] = {}
        chunks: list[dict[str, np.ndarray]] = []
        crashed = False
        while now() < sc.duration_s:
            if waiting and emu.media_start_s is not None:
                waiting, origin = False, emu.media_start_s - first_start
            while pending and pending[0]["start_s"] <= now() and not (waiting and pending[0]["start_s"] > first_start):
                f = pending.pop(0)
                ip, p = (hosts[f["id"]][1]["ip"], hosts[f["id"]][1]["port"]) if o.test_bypass else (host, port)
                call.connect(f["id"], ip, p)
                call.wait_connected(f["id"], o.connect_timeout_s)
                selected[f["id"]] = sel = call.selected(f["id"])
                check_through(sel, (host, port))
                active.append(f)
            for f in [f for f in active if f["stop_s"] <= now()]:
                _finish(call, f, samples)
                active.remove(f)
            if o.test_crash_after_s is not None and not crashed and now() >= o.test_crash_after_s:
                crashed = True
                with contextlib.suppress(Exception):
                    browser.browser.new_browser_cdp_session().send("Browser.crash")
            samples.extend(s for s in call.drain() if "error" not in s)
            chunks.append(emu.drain_packets())
            time.sleep(min(0.2, max(0.0, sc.duration_s - now())))
        for f in active:
            _finish(call, f, samples)
        samples.extend(s for s in call.drain() if "error" not in s)
        call.close()
        time.sleep(0.2)  # packets in flight reach the emulator's record
        chunks.append(emu.drain_packets())
        stats = emu.stop()
        chunks.append(emu.drain_packets())
        packets = {k: np.concatenate([c[k] for c in chunks]) for k in chunks[-1]}
        emu.origin_s = origin
        packets["arrival_s"] = packets["arrival_s"] - origin
        packets["delivered_s"] = packets["delivered_s"] - origin
        return emu, (stats, samples, packets, selected)
    except BaseException:
        with contextlib.suppress(Exception):
            emu.stop()
        raise


def _finish(call: Call, f: dict[str, Any], samples: list[dict[str, Any]]) -> None:
    samples.extend(s for s in call.drain() if "error" not in s)
    last = call.finish(f["id"])
    if last:
        samples.append(last)


def _results(sc, flows, o, browser, emu, stats, samples, packets, selected, run_dir, sinks, name, wall, metadata) -> RunResult:
    dur = sc.duration_s
    t0 = emu.t0_unix + emu.origin_s
    link, rev = sc.data.get("link") or {}, sc.data.get("reverse_link")
    caps = [metrics.capacity_fn(link)] + ([metrics.capacity_fn(rev)] if rev else [])
    cap_means = [metrics.mean_capacity(caps[0], 0.0, dur, float(stats.get("capacity_kbps_mean") or math.nan))]
    if rev:
        cap_means.append(metrics.mean_capacity(caps[1], 0.0, dur, math.nan))
    routes = stats.get("routes") or []
    per_flow, series_parts, last_of, first_of = [], [], {}, {}
    for s in samples:
        last_of[s["flow"]] = s
        if s["t_ms"] / 1e3 - t0 >= flows[s["flow"]]["start_s"]:
            first_of.setdefault(s["flow"], s)
    jain_in: list[list] = [[], []]
    for f in flows:
        d = 0 if f["direction"] == "forward" else 1
        cap = caps[d] if d < len(caps) else None
        fcap = metrics.mean_capacity(cap, f["start_s"], f["stop_s"], cap_means[d] if d < len(cap_means) else math.nan)
        per_flow.append(metrics.flow_summary(f, last_of.get(f["id"]), routes[f["id"]] if f["id"] < len(routes) else None,
                                             fcap, bool(rev), first_of.get(f["id"])))
        cols = metrics.series(samples, f["id"], t0, f["start_s"], cap, packets, f["id"])
        series_parts.append(cols)
        rows = [s for s in samples if s["flow"] == f["id"]]
        jain_in[d].append((f["start_s"], f["stop_s"], np.array([s["t_ms"] / 1e3 - t0 for s in rows]),
                           np.array([metrics.wire_bytes(s.get("rpair"), "Received")[0] for s in rows])))
    summary: dict[str, Any] = {"duration_s": dur, "flows": per_flow}
    for d, key, st in ((0, "link", stats.get("forward")), (1, "reverse_link", stats.get("reverse"))):
        if d == 1 and not rev:
            continue
        delivered = sum(f["bytes_received"] * 8 for f in per_flow if (f["direction"] == "forward") == (d == 0))
        control = sum(float((r.get("feedback") or {}).get("delivered_bytes", 0) or 0) * 8 for f, r in zip(flows, routes)
                      if (f["direction"] == "forward") != (d == 0)) if rev else 0.0
        summary[key] = metrics.link_summary(st, delivered, control, cap_means[d], dur, metrics.jain_over_time(jain_in[d], dur))
    if run_dir is not None:
        _write(run_dir, sinks, series_parts, packets, flows, sc, o, browser, stats, selected, emu, per_flow, metadata)
    res = RunResult.from_summary(summary, name=name, controller=name, wall=wall, duration=dur, dir=run_dir)
    if any(f["cpu_limited"] for f in per_flow):
        worst = max(f["cpu_limited_fraction"] for f in per_flow)
        print(f"warning: {name}: the browser was CPU-limited {worst:.0%} of the time (qualityLimitationReason cpu); "
              "its rates reflect this host, not the network", file=sys.stderr)
    if not o.y4m and any(f["source_fps"] < STARVED * o.fps for f in per_flow):
        slow = min(f["source_fps"] for f in per_flow)
        print(f"warning: {name}: the page delivered {slow:.1f} frames/s of the {o.fps:g} asked: the host was too busy for this "
              "call (qualityLimitationReason does not see a starved source)", file=sys.stderr)
    return res


def _packet_columns(packets: dict[str, np.ndarray], flows: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """The emulator's RTP datagrams sender → receiver in the simulator's packet-log columns
    (``seq``: the RTP sequence number extended over wrap-arounds, per SSRC) plus its own."""
    m = (packets["leg"] == 0) & (packets["rtp_ssrc"] >= 0)
    p = {k: v[m] for k, v in packets.items()}
    seq = p["rtp_seq"].astype(np.int64)
    ext = np.zeros(len(seq), dtype=np.uint64)
    last: dict[tuple[int, int], int] = {}
    for j in range(len(seq)):
        key = (int(p["route"][j]), int(p["rtp_ssrc"][j]))
        prev = last.get(key)
        s = int(seq[j]) if prev is None else prev + ((int(seq[j]) - prev + 32768) % 65536 - 32768)
        last[key] = s
        ext[j] = max(s, 0)
    return {"flow": p["route"].astype(np.uint32), "seq": ext, "size": p["size"].astype(np.uint32),
            "send_s": p["arrival_s"], "recv_s": p["delivered_s"], "lost": p["dropped"].astype(bool),
            "ssrc": p["rtp_ssrc"].astype(np.uint32), "payload_type": p["rtp_pt"].astype(np.uint8),
            "marker": p["rtp_marker"] > 0, "rtp_ts": p["rtp_ts"].astype(np.uint32), "queue_ms": p["queue_ms"]}


def _write(run_dir, sinks, series_parts, packets, flows, sc, o, browser, stats, selected, emu, per_flow, metadata) -> None:
    from ratelab.run.results import write_text_atomic

    run_dir.mkdir(parents=True, exist_ok=True)
    meta = {**(metadata or {}), "ratelab.browser": json.dumps({"version": browser.version, "flags": browser.flags,
                                                               "options": asdict(o)}, default=str)}
    sinks["series"] = ParquetSink(run_dir / "series.parquet", meta)
    if sc.data.get("metrics", {}).get("packet_log", True):
        sinks["packets"] = ParquetSink(run_dir / "packets.parquet", meta)
    joined = {k: np.concatenate([c[k] for c in series_parts]) for k in series_parts[0]}
    order = np.lexsort((joined["flow"], joined["t_s"]))
    sinks["series"].write({k: v[order] for k, v in joined.items()})
    if "packets" in sinks:
        sinks["packets"].write(_packet_columns(packets, flows))
    for s in sinks.values():
        s.commit()
    prov = {
        "browser": {"path": str(browser.path), "version": browser.version, "flags": browser.flags},
        "field_trials": o.field_trials, "options": asdict(o),
        "flows": [{"id": f["id"], "label": f["label"], "page": f.get("page"), "candidates": f.get("candidates"),
                   "selected_pair": selected.get(f["id"]),
                   "cpu_limited_fraction": pf["cpu_limited_fraction"]} for f, pf in zip(flows, per_flow)],
        "emulator": {"listen": emu.local_addr(), "stats": stats, "time_origin_s": emu.origin_s},
        "host": {"cpus": os.cpu_count(), "loadavg": list(os.getloadavg())},
    }
    write_text_atomic(run_dir / "browser.json", json.dumps(_strict(prov), indent=2) + "\n")


def _strict(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _strict(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_strict(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v
