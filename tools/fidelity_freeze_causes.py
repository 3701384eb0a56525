"""What each freeze of a fidelity study coincided with (docs/fidelity.md, round 6), for the
Chromium runs or the simulated gcc runs: every rise of a forward flow's ``freezes`` counter in
its ``series.parquet``, classified by what the run's own records show around it.

* ``encoder``: the sender's encoder made fewer than 10 frames/s over the 2 s before (frame-rate
  collapse: the encoder dropped frames or stepped down);
* ``network gap``: otherwise, a gap of 150 ms or more between the flow's delivered packets in
  the 1.75 s before (a link stall or a queue that grew);
* ``loss``: otherwise, a packet of the flow lost at the bottleneck in the 2.5 s before;
* ``none``: none of these (the stream arrived steadily: a receiver-side stall the records do
  not explain, e.g. the jitter buffer or decode scheduling).

    python3 tools/fidelity_freeze_causes.py OUT [--contender chromium|sim-gcc]
"""
from __future__ import annotations

import argparse
import glob
import sys
from collections import Counter

import numpy as np
import pyarrow.parquet as pq

from ratelab.report.freezes import held_counts

KINDS = ("encoder", "network gap", "loss", "none")


def classify_run(series: str, packets: str) -> Counter:
    s = pq.read_table(series)
    col = lambda t, k: t.column(k).to_numpy()  # noqa: E731
    p = pq.read_table(packets)
    out: Counter = Counter()
    for fid in np.unique(col(s, "flow")):
        m = col(s, "flow") == fid
        ts, fr, fps = col(s, "t_s")[m], held_counts(col(s, "freezes")[m]), col(s, "fps")[m]
        pm = col(p, "flow") == fid
        lost = col(p, "lost")[pm]
        recv = np.sort(col(p, "recv_s")[pm][~lost])
        lost_at = col(p, "send_s")[pm][lost]
        for i in np.flatnonzero(np.diff(fr) > 0) + 1:
            x, n = ts[i], int(fr[i] - fr[i - 1])
            before = (ts > x - 2.0) & (ts <= x)
            if np.nanmean(fps[before]) < 10:
                out["encoder"] += n
                continue
            r = recv[(recv > x - 1.75) & (recv <= x)]
            gap = np.diff(r).max() if len(r) > 1 else np.inf
            if gap >= 0.15:
                out["network gap"] += n
            elif ((lost_at > x - 2.5) & (lost_at <= x)).any():
                out["loss"] += n
            else:
                out["none"] += n
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--contender", default="chromium", choices=("chromium", "sim-gcc"))
    a = ap.parse_args(argv)
    inner = "chromium" if a.contender == "chromium" else "gcc"
    runs = sorted(glob.glob(f"{a.out}/*/{a.contender}/*/{inner}/series.parquet"))
    if not runs:
        print(f"error: no {a.contender} runs under {a.out}", file=sys.stderr)
        return 2
    per_case: dict[str, Counter] = {}
    n_runs: Counter = Counter()
    for sp in runs:
        case = sp.split("/")[-5]
        per_case.setdefault(case, Counter()).update(classify_run(sp, sp.replace("series.parquet", "packets.parquet")))
        n_runs[case] += 1
    print(f"| case | runs | {' | '.join(KINDS)} |\n|---|---|{'---|' * len(KINDS)}")
    total: Counter = Counter()
    for case, c in per_case.items():
        total.update(c)
        print(f"| {case} | {n_runs[case]} | " + " | ".join(str(c[k]) for k in KINDS) + " |")
    print(f"| all | {sum(n_runs.values())} | " + " | ".join(str(total[k]) for k in KINDS) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
