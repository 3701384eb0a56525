"""Chromium's encoder target as a share of its estimate, by the frame rate its encoder achieves
(docs/fidelity.md, round 5): every Chromium run under OUT (``OUT/<case>/chromium/r*/chromium/
series.parquet``), samples after 8 s with an estimate below 400 kbit/s, the frame rate over the
last four getStats samples (1 s).

    python3 tools/fidelity_target_share.py /work/fidelity-runs/full
"""
import collections
import glob
import math
import sys

import duckdb

BINS = [(0, 3, "< 3"), (3, 6, "3-6"), (6, 10, "6-10"), (10, 14, "10-14"), (14, math.inf, ">= 14")]


def main(out: str) -> int:
    con = duckdb.connect()
    by = collections.defaultdict(list)
    files = glob.glob(f"{out}/*/chromium/*/chromium/series.parquet")
    if not files:
        print(f"fidelity_target_share: no Chromium series under {out}", file=sys.stderr)
        return 2
    for f in files:
        rows = con.execute("select t_s, target_kbps, encoder_target_kbps, frames_encoded from read_parquet(?) "
                           "where flow = 0 order by t_s", [f]).fetchall()
        for k in range(4, len(rows)):
            t, aob, etgt, fe = rows[k]
            t0, _, _, fe0 = rows[k - 4]
            if t < 8 or not aob or math.isnan(aob) or not etgt or math.isnan(etgt) or aob >= 400:
                continue
            fps = (fe - fe0) / (t - t0)
            label = next(name for lo, hi, name in BINS if lo <= fps < hi)
            by[label].append(etgt / aob)
    print("| frames/s (last second) | samples | target / estimate: median | p10 | p90 |\n|---|---|---|---|---|")
    for _, _, name in BINS:
        v = sorted(by[name])
        n = len(v)
        if n:
            print(f"| {name} | {n} | {v[n // 2]:.2f} | {v[n // 10]:.2f} | {v[9 * n // 10]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/work/fidelity-runs/full"))
