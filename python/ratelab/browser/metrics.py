"""A browser call's getStats samples and emulator record turned into the simulator's outputs:
the series columns, the per-flow summary keys and the link summary (``sim/summary.rs``), so that
reports and the Pareto plot treat the browser like any controller.

Where the numbers come from (as live mode: sent by the sender, received by the receiver, loss
and delays at the bottleneck by the emulator):

* bytes and packets sent / received: the selected candidate pair of the sending / receiving PC
  (every datagram of the call's transport: RTP, RTX, RTCP, DTLS), plus 28 bytes of IP/UDP per
  packet, so that they are wire bytes as the simulator's packet sizes and the emulator's counts;
* packets lost, one-way delay and queuing delay: the emulator's counters for the flow's route;
* video (frames, freezes, resolution, quality limitation, NACK/PLI): outbound-rtp / inbound-rtp.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

IP_UDP = 28
#: A run is flagged CPU-limited when qualityLimitationReason was ``cpu`` longer than this
#: fraction of the time the encoder ran.
CPU_LIMITED_FRACTION = 0.05
QUALITY_REASONS = ("none", "cpu", "bandwidth", "other")


def _g(d: dict[str, Any] | None, key: str, default: float = math.nan) -> float:
    v = (d or {}).get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default


def wire_bytes(pair: dict[str, Any] | None, direction: str) -> tuple[float, float]:
    """(bytes on the wire, packets) a candidate pair counted, ``direction`` "Sent"/"Received"."""
    b, p = _g(pair, "bytes" + direction, 0.0), _g(pair, "packets" + direction, 0.0)
    return b + IP_UDP * p, p


def capacity_fn(link: dict[str, Any]) -> Callable[[float], float] | None:
    """Capacity (kbit/s) at time t of a constant or stepped link; None for a trace (the
    emulator knows it)."""
    if link.get("capacity_kbps") is not None:
        c = float(link["capacity_kbps"])
        return lambda t: c
    steps = link.get("steps")
    if steps:
        pts = sorted((float(t), float(k)) for t, k in steps)

        def at(t: float) -> float:
            v = pts[0][1]
            for ts, k in pts:
                if ts <= t:
                    v = k
            return v
        return at
    return None


def mean_capacity(cap: Callable[[float], float] | None, t0: float, t1: float, fallback: float) -> float:
    """Mean of ``cap`` over [t0, t1] (exact for steps: piecewise constant, sampled every ms)."""
    if cap is None or t1 <= t0:
        return fallback
    ts = np.arange(t0, t1, 0.001)
    return float(np.mean([cap(t) for t in ts])) if len(ts) else fallback


def series(samples: list[dict[str, Any]], flow: int, t0_unix: float, start_s: float,
           cap: Callable[[float], float] | None, packets: dict[str, np.ndarray] | None, route: int) -> dict[str, np.ndarray]:
    """One flow's rows: the simulator's series columns, then the browser's own. Rates are over
    the interval since the previous sample (the first from the flow's start, all counters 0)."""
    # Samples before the flow's start (on an aligned run, the handshake before the first media
    # datagram) are left out: the first row's rates count from the start.
    rows = [s for s in samples if s.get("flow") == flow and s["t_ms"] / 1000.0 - t0_unix >= start_s]
    n = len(rows)
    out: dict[str, list] = {k: [] for k in (
        "t_s", "target_kbps", "encoder_kbps", "pacing_kbps", "send_kbps", "recv_kbps", "owd_ms", "capacity_kbps", "queue_ms",
        "cwnd_bytes", "lost_packets", "freezes", "encoder_target_kbps", "rtt_ms", "width", "height", "fps", "recv_fps",
        "frames_encoded", "frames_decoded", "frames_dropped", "key_frames", "freeze_ms", "quality_limitation", "nack", "pli",
        "packets_lost", "retransmit_kbps", "qp", "jitter_buffer_ms")}
    prev_t, prev = start_s, {"sent": 0.0, "recv": 0.0, "enc": 0.0, "rtx": 0.0, "lost": 0.0, "qp": 0.0, "fe": 0.0, "jbd": 0.0, "jbn": 0.0}
    data = None
    if packets is not None and len(packets.get("route", ())):
        m = (packets["route"] == route) & (packets["leg"] == 0)
        data = {k: v[m] for k, v in packets.items()}
    for s in rows:
        t = s["t_ms"] / 1000.0 - t0_unix
        dt = max(t - prev_t, 1e-6)
        o, i, sp, rp = s.get("out") or {}, s.get("in") or {}, s.get("spair"), s.get("rpair")
        cur = {"sent": wire_bytes(sp, "Sent")[0], "recv": wire_bytes(rp, "Received")[0],
               "enc": _g(o, "bytesSent", 0.0) - _g(o, "retransmittedBytesSent", 0.0), "rtx": _g(o, "retransmittedBytesSent", 0.0),
               "lost": _g(i, "packetsLost", 0.0),
               # NaN when absent, so their ratios below are NaN rather than 0.
               "qp": _g(o, "qpSum"), "fe": _g(o, "framesEncoded"), "jbd": _g(i, "jitterBufferDelay"), "jbn": _g(i, "jitterBufferEmittedCount")}
        rate = {k: (cur[k] - prev[k]) * 8 / dt / 1e3 for k in ("sent", "recv", "enc", "rtx")}
        out["t_s"].append(t)
        out["target_kbps"].append(_g(sp, "availableOutgoingBitrate") / 1e3)
        out["encoder_kbps"].append(rate["enc"])
        out["pacing_kbps"].append(math.nan)
        out["send_kbps"].append(rate["sent"])
        out["recv_kbps"].append(rate["recv"])
        owd, q, lost = math.nan, math.nan, cur["lost"] - prev["lost"]
        if data is not None:
            arr, dl = data["arrival_s"], data["delivered_s"]
            win = (dl > prev_t) & (dl <= t)
            if win.any():
                owd = float(np.mean(dl[win] - arr[win]) * 1e3)
            upto = np.flatnonzero((arr <= t) & np.isfinite(data["queue_ms"]))
            if len(upto):
                q = float(data["queue_ms"][upto[-1]])
            if data["dropped"].any() or np.isfinite(dl).any():  # a record with deliveries: its drops are the losses
                lost = float(np.count_nonzero(data["dropped"] & (arr > prev_t) & (arr <= t)))
        out["owd_ms"].append(owd)
        out["capacity_kbps"].append(cap(t) if cap is not None else math.nan)
        out["queue_ms"].append(q)
        out["cwnd_bytes"].append(math.nan)
        out["lost_packets"].append(lost)
        out["freezes"].append(_g(i, "freezeCount", 0.0))
        out["encoder_target_kbps"].append(_g(o, "targetBitrate") / 1e3)
        out["rtt_ms"].append(_g(sp, "currentRoundTripTime") * 1e3)
        out["width"].append(_g(o, "frameWidth"))
        out["height"].append(_g(o, "frameHeight"))
        out["fps"].append(_g(o, "framesPerSecond"))
        out["recv_fps"].append(_g(i, "framesPerSecond"))
        out["frames_encoded"].append(_g(o, "framesEncoded", 0.0))
        out["frames_decoded"].append(_g(i, "framesDecoded", 0.0))
        out["frames_dropped"].append(_g(i, "framesDropped", 0.0))
        out["key_frames"].append(_g(o, "keyFramesEncoded", 0.0))
        out["freeze_ms"].append(_g(i, "totalFreezesDuration", 0.0) * 1e3)
        out["quality_limitation"].append(str(o.get("qualityLimitationReason", "")))
        out["nack"].append(_g(o, "nackCount", 0.0))
        out["pli"].append(_g(o, "pliCount", 0.0))
        out["packets_lost"].append(_g(i, "packetsLost", 0.0))
        out["retransmit_kbps"].append(rate["rtx"])
        # The encoder's QP and the receiver's jitter buffer: what a sender and receiver model must
        # reproduce (NaN in an interval without a frame). Chromium 156 reports neither
        # totalEncodedBytesTarget (0 for VP8) nor fecPacketsReceived, so the FEC share is not
        # separable from getStats.
        d = {k: cur[k] - prev[k] for k in ("qp", "fe", "jbd", "jbn")}
        out["qp"].append(d["qp"] / d["fe"] if d["fe"] > 0 else math.nan)
        out["jitter_buffer_ms"].append(d["jbd"] / d["jbn"] * 1e3 if d["jbn"] > 0 else math.nan)
        prev_t, prev = t, cur
    cols: dict[str, np.ndarray] = {"t_s": np.array(out.pop("t_s"), dtype=np.float64), "flow": np.full(n, flow, dtype=np.uint32)}
    ql = out.pop("quality_limitation")
    for k, v in out.items():
        cols[k] = np.array(v, dtype=np.float64)
    cols["quality_limitation"] = np.array(ql, dtype=object)
    return cols


def cpu_limited_fraction(last: dict[str, Any] | None) -> float:
    """Share of the encoder's time with qualityLimitationReason ``cpu`` (its durations)."""
    d = ((last or {}).get("out") or {}).get("qualityLimitationDurations") or {}
    total = sum(float(v) for v in d.values() if isinstance(v, (int, float)))
    return float(d.get("cpu", 0.0)) / total if total > 0 else 0.0


def _q(stats: dict[str, Any] | None, key: str) -> float | None:
    if not stats or not stats.get("n"):
        return None
    v = stats.get(key)
    return float(v) if v is not None else None


def frame_rate(first: dict[str, Any] | None, last: dict[str, Any] | None, part: str, key: str, active_s: float) -> float:
    """A frame counter (``part``: "source" or "out") per second: between the flow's first and
    last samples when they are over a second apart (the source runs before the media start),
    else the last count over the flow's active time."""
    count = lambda s: _g((s or {}).get(part), key, 0.0)  # noqa: E731
    if first is not None and last is not None and last["t_ms"] - first["t_ms"] > 1000.0:
        return (count(last) - count(first)) / ((last["t_ms"] - first["t_ms"]) / 1e3)
    return count(last) / active_s if active_s > 0 else 0.0


def flow_summary(info: dict[str, Any], last: dict[str, Any] | None, route: dict[str, Any] | None, cap_mean_kbps: float,
                 two_way: bool, first: dict[str, Any] | None = None) -> dict[str, Any]:
    """The simulator's per-flow summary keys from a flow's last getStats sample and its
    emulator route (``data``: sender → receiver, ``feedback``: the return), plus the browser's.
    ``first``: the flow's first sample, from which the frame rates count."""
    o, i = (last or {}).get("out") or {}, (last or {}).get("in") or {}
    bytes_sent, packets_sent = wire_bytes((last or {}).get("spair"), "Sent")
    bytes_recv, packets_recv = wire_bytes((last or {}).get("rpair"), "Received")
    data, fb = (route or {}).get("data") or {}, (route or {}).get("feedback") or {}
    lost = int(sum(int(data.get(k, 0) or 0) for k in ("random_drops", "queue_drops", "overflow_drops")))
    active = max(info["stop_s"] - info["start_s"], 0.0)
    thr = bytes_recv * 8 / active / 1e3 if active > 0 else 0.0
    cpu = cpu_limited_fraction(last)
    psnr_n = _g(o, "psnrMeasurements", 0.0)
    psnr = (o.get("psnrSum") or {}).get("y") if psnr_n > 0 and isinstance(o.get("psnrSum"), dict) else None
    f = {
        **{k: info[k] for k in ("id", "label", "kind", "direction", "controller", "start_s", "stop_s")},
        "throughput_kbps": thr,
        "utilization": thr / cap_mean_kbps if cap_mean_kbps > 0 else 0.0,
        "owd_ms_mean": _q(data.get("delay_ms"), "mean"), "owd_ms_p50": _q(data.get("delay_ms"), "p50"),
        "owd_ms_p95": _q(data.get("delay_ms"), "p95"),
        "queue_delay_ms_mean": _q(data.get("queue_delay_ms"), "mean"), "queue_delay_ms_p95": _q(data.get("queue_delay_ms"), "p95"),
        "loss_rate": lost / (packets_recv + lost) if packets_recv + lost > 0 else 0.0,
        "freeze_count": int(_g(i, "freezeCount", 0.0)),
        "freeze_ratio": _g(i, "totalFreezesDuration", 0.0) / active if active > 0 else 0.0,
        "frame_delay_ms_mean": None,
        "frames_rendered": int(_g(i, "framesDecoded", 0.0)),
        "psnr_db_mean": float(psnr) / psnr_n if psnr is not None else None,
        "packets_sent": int(packets_sent), "packets_received": int(packets_recv), "packets_lost": lost,
        "bytes_sent": int(bytes_sent), "bytes_received": int(bytes_recv),
        "return_packets_sent": None, "return_packets_lost": None, "return_bytes_sent": None, "return_loss_rate": None,
        # The browser's own.
        "cpu_limited_fraction": cpu,
        "cpu_limited": cpu > CPU_LIMITED_FRACTION,
        "quality_limitation_s": {k: float(v) for k, v in (o.get("qualityLimitationDurations") or {}).items()},
        # Frames the source delivered to the encoder per second (media-source stats): below the
        # asked rate when the page itself was starved of CPU, which qualityLimitationReason misses.
        "source_fps": frame_rate(first, last, "source", "frames", active),
        "encoded_fps": frame_rate(first, last, "out", "framesEncoded", active),
        "frames_encoded": int(_g(o, "framesEncoded", 0.0)), "key_frames": int(_g(o, "keyFramesEncoded", 0.0)),
        "frames_decoded": int(_g(i, "framesDecoded", 0.0)), "frames_dropped": int(_g(i, "framesDropped", 0.0)),
        "freeze_ms": _g(i, "totalFreezesDuration", 0.0) * 1e3,
        "nack_count": int(_g(o, "nackCount", 0.0)), "pli_count": int(_g(o, "pliCount", 0.0)),
        "rtp_packets_lost": int(_g(i, "packetsLost", 0.0)),
        "frame_width": _g(o, "frameWidth", 0.0), "frame_height": _g(o, "frameHeight", 0.0),
        "codec": o.get("codec"), "encoder": o.get("encoderImplementation"),
    }
    if two_way:
        rl = int(sum(int(fb.get(k, 0) or 0) for k in ("random_drops", "queue_drops", "overflow_drops")))
        rs = int(fb.get("arrived_packets", 0) or 0)
        f.update(return_packets_sent=rs, return_packets_lost=rl, return_bytes_sent=int(fb.get("arrived_bytes", 0) or 0),
                 return_loss_rate=rl / rs if rs > 0 else 0.0)
    return f


def jain_index(rates: list[float]) -> float:
    s, s2 = sum(rates), sum(r * r for r in rates)
    return s * s / (len(rates) * s2) if s2 > 0 else 1.0


def jain_over_time(per_flow: list[tuple[float, float, np.ndarray, np.ndarray]], duration_s: float) -> float:
    """Mean Jain index over the whole seconds in which ≥ 2 flows were active for the entire
    second; each flow given as (start_s, stop_s, sample times, cumulative bytes received)."""
    acc, n = 0.0, 0
    for s in range(int(duration_s)):
        rates = [float(np.interp(s + 1, t, b) - np.interp(s, t, b)) for (a, z, t, b) in per_flow if a <= s and z >= s + 1 and len(t)]
        if len(rates) >= 2:
            acc += jain_index(rates)
            n += 1
    return acc / n if n else 1.0


def link_summary(stats: dict[str, Any] | None, delivered_bits: float, control_bits: float, cap_mean_kbps: float,
                 duration_s: float, jain: float) -> dict[str, Any]:
    """The simulator's link summary keys, counters from the emulator's link statistics."""
    st = stats or {}
    arrived = int(st.get("arrived_packets", 0) or 0)
    drops = int(st.get("random_drops", 0) or 0) + int(st.get("queue_drops", 0) or 0)
    cap_bits = cap_mean_kbps * 1e3 * duration_s
    return {
        "utilization": delivered_bits / cap_bits if cap_bits > 0 else 0.0,
        "jain_index": jain,
        "loss_rate": drops / arrived if arrived else 0.0,
        "capacity_kbps_mean": cap_mean_kbps,
        "queue_drops": int(st.get("queue_drops", 0) or 0),
        "random_drops": int(st.get("random_drops", 0) or 0),
        "control_kbps_mean": control_bits / duration_s / 1e3 if duration_s > 0 else 0.0,
    }
