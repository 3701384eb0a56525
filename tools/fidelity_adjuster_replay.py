"""Does libwebrtc's encoder bitrate adjuster account for Chromium's encoder target? (docs/fidelity.md,
round 7)

For each getStats sample of a Chromium run (``targetBitrate`` T, ``availableOutgoingBitrate`` E)
this compares T with two predictions:

* R, libwebrtc's rate chain before the encoder: (E − expected overhead) × (1 − protection share),
  the share being (FEC + RTX) / (media + FEC + RTX) on the wire over the last second, capped at
  ``--cap`` (0.5; ``RtpVideoSender::OnBitrateUpdated``, ``FecControllerDefault::UpdateFecRates``);
* R / f, where f is ``EncoderBitrateAdjuster``'s factor replayed on the call's own frames: a leaky
  bucket draining at T with ideal frames of T / fps, each frame charged its excess over one ideal
  frame (at most the bucket's level), the mean over 3 s, clamped to [1, 2], and 1.2 for the first
  30 frames after each resolution change (media/encoder/adjuster.rs has the same rules).

Frames come from the emulator's packet record (media packets grouped by RTP timestamp, ULPFEC and
RTX left out; fidelity_fec_share.py), each packet's payload taken as its size less
``--header`` bytes. Printed per estimate bin: the median of (R − T) / T and of (R/f − T) / T.

    python3 tools/fidelity_adjuster_replay.py RUN_DIR [RUN_DIR ...] [--fps 15] [--header 40] [--cap 0.5]
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fidelity_fec_share as fec_share  # noqa: E402

WINDOW_S = 3.0
MIN_FRAMES = 30
DEFAULT_FACTOR = 1.2
EXPECTED_OVERHEAD_BYTES = 90
PACKET_BYTES = 1200 + 40
BINS = ((0.0, 200e3), (200e3, 400e3), (400e3, math.inf))


def replay_factor(frame_t: np.ndarray, frame_bits: np.ndarray, rate_at, widths_at, fps: float, at: np.ndarray) -> np.ndarray:
    """The adjuster's factor at each time of ``at``, from frames (time, bits) and the rate the
    bucket drains at (``rate_at(t)``); a change of ``widths_at(t)`` starts it over."""
    out = np.full(len(at), np.nan)
    level, last, factors, n, width = 0.0, None, [], 0, None
    fi = 0
    for i, t in enumerate(at):
        while fi < len(frame_t) and frame_t[fi] <= t:
            ft, bits = frame_t[fi], frame_bits[fi]
            fi += 1
            w = widths_at(ft)
            if width is not None and abs(w - width) > 1:
                level, last, factors, n = 0.0, None, [], 0
            width = w
            rate = rate_at(ft)
            if last is not None:
                level = max(0.0, level - rate * (ft - last))
            last = ft
            ideal = rate / fps
            if ideal <= 0:
                continue
            total = bits + level
            over = min(level, total - ideal) if total > ideal else 0.0
            factors.append((ft, 1.0 + over / ideal if factors else max(1.0, bits / ideal)))
            level += bits - over
            n += 1
        while factors and t - factors[0][0] > WINDOW_S:
            factors.pop(0)
        f = DEFAULT_FACTOR if n < MIN_FRAMES or not factors else float(np.mean([x for _, x in factors]))
        out[i] = min(max(f, 1.0), 2.0)
    return out


def analyse(run: Path, fps: float, header: int, cap: float = 0.5) -> np.ndarray:
    """Rows (E, T, R, R/f) per getStats sample after 5 s."""
    send, size, kind, ts, s = fec_share.load(run)
    width = s["width"].astype(float)
    ok = np.isfinite(s["target_kbps"]) & np.isfinite(s["encoder_target_kbps"]) & np.isfinite(width)
    t, E, T, width = s["t_s"][ok], s["target_kbps"][ok] * 1e3, s["encoder_target_kbps"][ok] * 1e3, width[ok]
    frames: dict[int, list[float]] = {}
    for stamp, b, x, k in zip(ts, size, send, kind):
        if k == 0:
            e = frames.setdefault(int(stamp), [x, 0.0])
            e[1] += max(0, int(b) - header) * 8.0
    fr = sorted(frames.values())
    ft = np.array([a for a, _ in fr])
    fb = np.array([b for _, b in fr])
    f = replay_factor(ft, fb, lambda x: float(np.interp(x, t, T)), lambda x: float(np.interp(x, t, width)), fps, t)
    rows = []
    for ti, e, target, fac in zip(t, E, T, f):
        if ti < 5 or target <= 0:
            continue
        w = (send >= ti - 1) & (send < ti)
        m, fe, rtx = (size[w & (kind == k)].sum() * 8.0 for k in (0, 1, 2))
        share = (fe + rtx) / (m + fe + rtx) if m + fe + rtx > 0 else 0.0
        packets = math.ceil(e / (PACKET_BYTES * 8))
        r = (e - packets * EXPECTED_OVERHEAD_BYTES * 8) * (1.0 - min(share, cap))
        rows.append((e, target, r, r / fac))
    return np.array(rows).reshape(-1, 4)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="Chromium run folders (packets.parquet with RTP columns, series.parquet)")
    ap.add_argument("--fps", type=float, default=15.0, help="the source's frame rate (the adjuster's ideal frame)")
    ap.add_argument("--header", type=int, default=40, help="bytes of each datagram that are not frame payload")
    ap.add_argument("--cap", type=float, default=0.5, help="the protection cap the call ran with (WebRTC-ProtectionOverheadRateThreshold)")
    a = ap.parse_args(argv)
    print("| run | estimate kbit/s | samples | (R − T) / T | (R/f − T) / T |\n|---|---|---|---|---|")
    for run in a.runs:
        d = Path(run)
        if not (d / "packets.parquet").is_file() or not (d / "series.parquet").is_file():
            print(f"error: {run}: no packets.parquet / series.parquet there", file=sys.stderr)
            return 2
        rows = analyse(d, a.fps, a.header, a.cap)
        name = "/".join(d.parts[-5:-2]) if len(d.parts) >= 5 else str(d)
        for lo, hi in BINS:
            k = (rows[:, 0] >= lo) & (rows[:, 0] < hi)
            if k.sum() >= 20:
                gr = np.median((rows[k, 2] - rows[k, 1]) / rows[k, 1])
                ga = np.median((rows[k, 3] - rows[k, 1]) / rows[k, 1])
                top = "" if math.isinf(hi) else f"{hi / 1e3:.0f}"
                print(f"| {name} | {lo / 1e3:.0f}-{top} | {k.sum()} | {gr:+.3f} | {ga:+.3f} |")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:
        sys.exit(0)
