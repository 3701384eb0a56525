"""Where a real call's freezes come from: delivery or the receiver's playout.

A browser's ``freezeCount`` (getStats) counts gaps between *rendered* frames. The simulator's
receiver renders a frame once it is decodable (every packet in, earlier frames decodable), so
its freezes are gaps in what the network and the encoder delivered. To compare like with like,
this module rebuilds the same "decodable" times from the emulator's packet record of a real call
and applies libwebrtc's freeze rule to them (the rule of the simulator's receiver,
crates/ratelab-core/src/media/receiver.rs). A getStats freeze with no delivered-frame freeze
near it happened in the receiver's playout (jitter buffer, decoder, renderer), which the
simulator does not model (docs/fidelity.md, round 10).

The packet record has no payloads, so three things are approximations, stated in the doc: a
lost media packet is taken as repaired by an FEC packet of its frame that arrived, else by the
first RTX packet sent after it; FEC protecting several frames is credited to its own; and frames
decode in capture order (no key-frame resets).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

#: libwebrtc's freeze rule (`VideoQualityObserver`): intervals in the running average,
#: intervals needed before any can be a freeze, and the least increase over the average.
AVG_WINDOW = 30
MIN_SAMPLES = 5
MIN_INCREASE_MS = 150


def freeze_times(render_s: Sequence[float]) -> list[float]:
    """The times (s) at which a rendered frame ended a freeze, by libwebrtc's rule on whole
    milliseconds: each interval joins the average of the last 30 before it is tested, and it
    is a freeze when at least max(3 × average, average + 150 ms) with 5 or more intervals."""
    ms = np.floor(np.asarray(render_s, dtype=float) * 1000.0 + 1e-6).astype(np.int64)  # whole ms
    window: list[int] = []
    out: list[float] = []
    for prev, cur in zip(ms[:-1], ms[1:]):
        d = int(cur - prev)
        window.append(d)
        if len(window) > AVG_WINDOW:
            window.pop(0)
        if len(window) >= MIN_SAMPLES:
            avg = sum(window) // len(window)
            if d >= max(3 * avg, avg + MIN_INCREASE_MS):
                out.append(cur / 1000.0)
    return out


def classify(ssrc: np.ndarray, marker: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """Per packet (in send order): 0 media, 1 ULPFEC, 2 RTX / other SSRC.

    libwebrtc sends a frame's ULPFEC packets on the media SSRC, inside RED, with the frame's
    RTP timestamp and without the marker bit, after the packet that ends the frame; so a
    media-SSRC packet whose timestamp has already had its marker packet is FEC. The media SSRC
    is the one with the most marker packets; every other SSRC of the flow is RTX."""
    kind = np.full(len(ssrc), 2, dtype=np.int8)
    if not len(ssrc):
        return kind
    ids, counts = np.unique(ssrc[marker], return_counts=True)
    if not len(ids):
        return kind
    media = ids[np.argmax(counts)]
    ended: set[int] = set()
    for i in np.flatnonzero(ssrc == media):
        t = int(ts[i])
        if marker[i]:
            kind[i] = 0
            ended.add(t)
        else:
            kind[i] = 1 if t in ended else 0
    return kind


def decodable_times(packets, flow: int = 0) -> np.ndarray:
    """When each frame of `flow`'s video became decodable, in capture order (s).

    `packets` has the columns of a browser run's packets.parquet (flow, send_s, recv_s, lost,
    ssrc, marker, rtp_ts). Media, ULPFEC and RTX are told apart by [`classify`]; a frame is the
    media packets of one RTP timestamp. A lost media packet is repaired by one of the frame's
    FEC packets that arrived (one each), else by the first RTX packet sent after it; a frame
    decodes when it is complete and every earlier one has decoded. A loss nothing repairs ends
    the sequence (nothing after it decodes)."""
    p = packets[packets["flow"] == flow].sort_values("send_s", kind="stable")
    if p.empty:
        return np.zeros(0)
    kind = classify(p["ssrc"].to_numpy(), p["marker"].to_numpy().astype(bool), p["rtp_ts"].to_numpy())
    arrived = (~p["lost"].astype(bool) & p["recv_s"].notna()).to_numpy()
    send, recv, ts = p["send_s"].to_numpy(), p["recv_s"].to_numpy(), p["rtp_ts"].to_numpy()
    rtx = np.flatnonzero((kind == 2) & arrived)
    fec_in: dict[int, list[float]] = {}
    for i in np.flatnonzero((kind == 1) & arrived):
        fec_in.setdefault(int(ts[i]), []).append(float(recv[i]))
    frames: dict[int, list[int]] = {}
    for i in np.flatnonzero(kind == 0):
        frames.setdefault(int(ts[i]), []).append(int(i))
    next_rtx = 0
    done = []
    for t, idx in frames.items():  # in order of their first packet
        idx = np.asarray(idx)
        got = arrived[idx]
        at = float(recv[idx[got]].max()) if got.any() else -np.inf
        fec = sorted(fec_in.get(t, []))
        for i in idx[~got]:
            if fec:
                at = max(at, fec.pop(0))
                continue
            while next_rtx < len(rtx) and send[rtx[next_rtx]] <= send[i]:
                next_rtx += 1
            if next_rtx >= len(rtx):
                at = np.inf
                break
            at = max(at, float(recv[rtx[next_rtx]]))
            next_rtx += 1
        done.append(at)
    out = np.asarray(done, dtype=float)
    if np.isinf(out).any():
        out = out[:int(np.argmax(np.isinf(out)))]
    return np.maximum.accumulate(out) if len(out) else out


def held_counts(counts) -> np.ndarray:
    """A cumulative counter with each missing sample (NaN) holding the value before it (0 at
    the start): read as 0, the next sample would count every event again."""
    c = np.asarray(counts, dtype=float)
    idx = np.where(np.isnan(c), 0, np.arange(len(c)))
    np.maximum.accumulate(idx, out=idx)
    return np.nan_to_num(c[idx])


def getstats_freeze_times(series, flow: int = 0) -> list[float]:
    """The sample times at which a browser run's cumulative getStats ``freezes`` went up (one
    entry per freeze)."""
    s = series[series["flow"] == flow]
    counts = held_counts(s["freezes"].to_numpy(dtype=float))
    steps = np.diff(np.r_[0.0, counts]).clip(min=0).round().astype(int)
    return [float(t) for t, k in zip(s["t_s"].to_numpy(), steps) for _ in range(k)]


def split(getstats: Sequence[float], delivered: Sequence[float], within_s: float = 1.0) -> tuple[int, int]:
    """(getStats freezes with a delivered-frame freeze at most `within_s` before or after,
    those without)."""
    d = np.asarray(delivered, dtype=float)
    near = sum(1 for t in getstats if d.size and np.min(np.abs(d - t)) <= within_s)
    return near, len(getstats) - near
