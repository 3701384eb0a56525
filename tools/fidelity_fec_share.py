"""What a Chromium call sent, split into media, ULPFEC and RTX from the emulator's packet record
(docs/fidelity.md, round 6), beside the encoder target and the estimate from getStats.

libwebrtc sends a frame's ULPFEC packets on the media SSRC, inside RED, with the frame's RTP
timestamp and without the marker bit, after the packet that ends the frame
(``UlpfecGenerator::GetFecPackets`` copies the last media packet's header). So a media-SSRC
packet whose timestamp has already had its marker packet is FEC. The media SSRC is the one with
the most marker packets; RTX (retransmissions and padding) is every other SSRC of the flow.

    python3 tools/fidelity_fec_share.py RUN_DIR [--bin 2] [--from 0 --to 120]
    python3 tools/fidelity_fec_share.py --summary OUT      # every Chromium run under a study

RUN_DIR holds a run's ``packets.parquet`` and ``series.parquet`` (``OUT/<case>/chromium/r1/
chromium``). Runs recorded before the packet record kept the marker and timestamp (before
round 6) cannot be split: one line says so, exit 2.
"""
from __future__ import annotations

import argparse
import glob
import math
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from ratelab.report.freezes import classify  # noqa: F401 - the tests and the study import it from here too


def load(run: Path, flow: int = 0):
    """One flow of a run, in send order: send times, sizes, kinds (``classify``), RTP timestamps,
    and its getStats series columns."""
    p = pq.read_table(run / "packets.parquet")
    if "marker" not in p.column_names:
        raise SystemExit(f"error: {run}/packets.parquet: no RTP marker/timestamp columns (recorded before round 6)")
    c = {k: p.column(k).to_numpy() for k in ("flow", "send_s", "size", "ssrc", "marker", "rtp_ts")}
    m = c["flow"] == flow
    order = np.argsort(c["send_s"][m], kind="stable")
    send, size = c["send_s"][m][order], c["size"][m][order]
    kind = classify(c["ssrc"][m][order], c["marker"][m][order], c["rtp_ts"][m][order])
    s = pq.read_table(run / "series.parquet")
    sc = {k: s.column(k).to_numpy() for k in ("flow", "t_s", "target_kbps", "encoder_target_kbps", "fps", "width")}
    sm = sc["flow"] == flow
    return send, size, kind, c["rtp_ts"][m][order], {k: v[sm] for k, v in sc.items()}


def table(run: Path, width: float, t0: float, t1: float) -> None:
    send, size, kind, _, s = load(run)
    print("| t s | estimate kbit/s | encoder target | media | ULPFEC | RTX | FEC / (media+FEC) | frames/s |")
    print("|---|---|---|---|---|---|---|---|")
    for a in np.arange(t0, t1, width):
        w = (send >= a) & (send < a + width)
        if not w.any():
            continue
        kb = [size[w & (kind == k)].sum() * 8 / width / 1e3 for k in (0, 1, 2)]
        sw = (s["t_s"] >= a) & (s["t_s"] < a + width)
        est, etgt, fps = (float(np.nanmean(s[k][sw])) if sw.any() else math.nan
                          for k in ("target_kbps", "encoder_target_kbps", "fps"))
        share = kb[1] / (kb[0] + kb[1]) if kb[0] + kb[1] > 0 else math.nan
        print(f"| {a:g} | {est:.0f} | {etgt:.0f} | {kb[0]:.0f} | {kb[1]:.0f} | {kb[2]:.0f} | {share:.2f} | {fps:.1f} |")


def summary(out: str) -> int:
    runs = sorted(glob.glob(f"{out}/*/chromium/r*/chromium/packets.parquet"))
    if not runs:
        print(f"error: no Chromium runs under {out}", file=sys.stderr)
        return 2
    print("| run | media kB | ULPFEC kB | RTX kB | FEC / (media+FEC) |\n|---|---|---|---|---|")
    for r in runs:
        send, size, kind, _, _ = load(Path(r).parent)
        kb = [size[kind == k].sum() / 1e3 for k in (0, 1, 2)]
        name = "/".join(Path(r).parts[-5:-1])
        print(f"| {name} | {kb[0]:.0f} | {kb[1]:.0f} | {kb[2]:.0f} | {kb[1] / max(kb[0] + kb[1], 1e-9):.3f} |")
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", nargs="?", help="a Chromium run's folder (packets.parquet, series.parquet)")
    ap.add_argument("--summary", metavar="OUT", help="totals for every Chromium run under a study folder")
    ap.add_argument("--bin", type=float, default=2.0)
    ap.add_argument("--from", dest="t0", type=float, default=0.0)
    ap.add_argument("--to", dest="t1", type=float, default=math.inf)
    a = ap.parse_args(argv)
    if a.summary:
        return summary(a.summary)
    if not a.run or not (Path(a.run) / "packets.parquet").is_file():
        print(f"error: {a.run}: no packets.parquet there", file=sys.stderr)
        return 2
    t1 = a.t1 if math.isfinite(a.t1) else float(pq.read_table(Path(a.run) / "series.parquet").column("t_s").to_numpy().max())
    table(Path(a.run), a.bin, a.t0, t1)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:  # piped into head
        sys.exit(0)
