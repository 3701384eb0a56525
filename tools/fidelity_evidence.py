"""The fidelity study's evidence tables (``tools/fidelity.py evidence``): what Chromium's getStats
and the emulator's packet record say per case beside sim gcc, and Chromium's frame rate against
its encoder target (docs/fidelity.md, "First diagnosis" and "the encoder at low rates")."""

from __future__ import annotations

import math
from pathlib import Path

from ratelab.report.fidelity import column as _column



def evidence(out: Path, cases) -> int:
    """What the browser's getStats and the emulator's packet record say per case (first
    Chromium run, after the first 5 s), beside sim gcc's first seed: the numbers of the pilot's
    diagnosis in docs/fidelity.md."""
    import numpy as np
    import pyarrow.parquet as pq

    print("| case | C aob kbps | C enc target | C encoded | C sent | sim target | sim sent | C key frames | C widths "
          "| C bw-limited % | C fps | C bursts/s | C burst kB p50 | sim bursts/s | sim burst kB p50 |")
    print("|" + "---|" * 15)
    for case in cases:
        cdirs = sorted((out / case.name / "chromium").glob("r*/chromium"))
        sdirs = sorted((out / case.name / "sim-gcc").glob("s*/*/series.parquet"))
        if not cdirs or not sdirs:
            continue
        c = pq.read_table(cdirs[0] / "series.parquet").to_pydict()
        s = pq.read_table(sdirs[0]).to_pydict()
        cm, sm = _column(c["t_s"]) > 5, _column(s["t_s"]) > 5
        mean = lambda d, m, k: float(np.nanmean(_column(d[k])[m]))  # noqa: E731
        widths = sorted({int(w) for w in _column(c["width"]) if math.isfinite(w)})
        ql = [q for q, keep in zip(c["quality_limitation"], cm) if keep]
        bursts = [_bursts(d / "packets.parquet") for d in (cdirs[0], sdirs[0].parent)]
        print(f"| {case.name} | {mean(c, cm, 'target_kbps'):.0f} | {mean(c, cm, 'encoder_target_kbps'):.0f} | "
              f"{mean(c, cm, 'encoder_kbps'):.0f} | {mean(c, cm, 'send_kbps'):.0f} | {mean(s, sm, 'target_kbps'):.0f} | "
              f"{mean(s, sm, 'send_kbps'):.0f} | {int(_column(c['key_frames'])[-1])} | {'/'.join(map(str, widths))} | "
              f"{100 * sum(q == 'bandwidth' for q in ql) / max(len(ql), 1):.0f} | {mean(c, cm, 'fps'):.1f} | "
              + " | ".join(f"{b[0]:.0f} | {b[1]:.1f}" if b else "— | —" for b in bursts) + " |")
    return 0


def frame_rate_table(out: Path, cases) -> int:
    """Chromium's encoded frame rate against its encoder target, per encoded width, over every
    getStats sample after 2 s of the selected cases' Chromium runs (Markdown): where the real
    encoder stops keeping the frame rate, and what a frame then costs."""
    import numpy as np
    import pyarrow.parquet as pq

    rows: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for case in cases:
        for d in sorted((out / case.name / "chromium").glob("r*/chromium/series.parquet")):
            c = pq.read_table(d, columns=["t_s", "width", "fps", "encoder_target_kbps", "encoder_kbps"]).to_pydict()
            t, w, fps, et, enc = (_column(c[k]) for k in ("t_s", "width", "fps", "encoder_target_kbps", "encoder_kbps"))
            ok = (t > 2) & np.isfinite(w) & np.isfinite(fps) & np.isfinite(et) & np.isfinite(enc)
            for wi, fi, ei, xi in zip(w[ok], fps[ok], et[ok], enc[ok]):
                rows.setdefault((int(wi), int(round(ei / 50) * 50)), []).append((fi, xi))
    print("| width | encoder target kbit/s (±25) | samples | frames/s | encoded kbit/s | kbit per frame |")
    print("|---|---|---|---|---|---|")
    for (w, et), v in sorted(rows.items()):
        if len(v) < 8:
            continue
        f, x = float(np.mean([r[0] for r in v])), float(np.mean([r[1] for r in v]))
        print(f"| {w} | {et} | {len(v)} | {f:.1f} | {x:.0f} | {x / f if f > 0 else math.nan:.1f} |")
    return 0


def freeze_table(out: Path, cases, within_s: float = 1.0) -> int:
    """Where each Chromium run's freezes come from (python/ratelab/report/freezes.py): its
    getStats freezes, the freezes in its delivered frames (the simulator's definition, rebuilt
    from the emulator's packet record) and how many getStats freezes have a delivered-frame
    freeze within `within_s`; beside the simulator's mean over the sim-gcc seeds in `out`. Flow 0
    on both sides (the first call of a case with several)."""
    import json

    import numpy as np
    import pyarrow.parquet as pq

    from ratelab.report import freezes as F

    print("| case | run | getStats freezes | delivered-frame freezes | getStats near a delivered one | "
          "getStats with none near (playout) | sim gcc freezes (seeds) |")
    print("|---|---|---|---|---|---|---|")
    for case in cases:
        sims = []
        for f in sorted((out / case.name / "sim-gcc").glob("s*/summary.json")):
            flows = json.loads(f.read_text())["runs"][0]["flows"]
            sims.extend(float(fl["freeze_count"]) for fl in flows if fl.get("id") == 0)
        sim = f"{np.mean(sims):.1f} ({len(sims)})" if sims else "—"
        for d in sorted((out / case.name / "chromium").glob("r*/chromium")):
            if not (d / "packets.parquet").is_file():
                continue
            packets = pq.read_table(d / "packets.parquet").to_pandas()
            if not {"ssrc", "marker", "rtp_ts"} <= set(packets.columns):
                print(f"| {case.name} | {d.parent.name} | — | — (its packet record predates the RTP columns) | — | — | {sim} |")
                continue
            series = pq.read_table(d / "series.parquet").to_pandas()
            got = F.getstats_freeze_times(series)
            delivered = F.freeze_times(F.decodable_times(packets))
            near, none = F.split(got, delivered, within_s)
            print(f"| {case.name} | {d.parent.name} | {len(got)} | {len(delivered)} | {near} | {none} | {sim} |")
    return 0


def frame_interval_table(out: Path, cases, fps: float = 15.0, after_s: float = 10.0, until_s: float = math.inf) -> int:
    """The histogram of the intervals between encoded frames, in frame periods (1, 2, ... 9 and
    more; those ending after `after_s` and before `until_s`): Chromium's from its packet record (media packets grouped by RTP
    timestamp, capture times from the timestamps), the simulator's from its series (frames
    counted per series sample). libvpx's decimation leaves 2-4 periods and its buffer-underrun
    drops 6-8; docs/fidelity.md, rounds 10 and 11."""
    import numpy as np
    import pyarrow.parquet as pq

    from fidelity_fec_share import load

    period = 1.0 / fps
    cols = [str(k) for k in range(1, 9)] + ["9+"]
    print(f"| case | run | {' | '.join(cols)} |")
    print("|---|---|" + "---|" * len(cols))

    def row(case: str, run: str, t: np.ndarray, gaps: np.ndarray) -> None:
        n = np.bincount(np.clip(gaps[(t > after_s) & (t < until_s)], 1, 9), minlength=10)[1:]
        print(f"| {case} | {run} | " + " | ".join(str(int(v)) for v in n) + " |")

    for case in cases:
        for d in sorted((out / case.name / "chromium").glob("r*/chromium")):
            if not (d / "packets.parquet").is_file():
                continue
            send, _, kind, ts, _ = load(d)
            media = kind == 0
            stamps, first = np.unique(ts[media], return_index=True)
            order = np.argsort(send[media][first])
            sent, stamps = send[media][first][order], stamps[order].astype(np.int64)
            capture = np.unwrap(stamps.astype(float), period=2.0 ** 32) / 90_000.0
            row(case.name, d.parent.name, sent[1:], np.round(np.diff(capture) / period).astype(int))
        seeds = sorted((out / case.name / "sim-gcc").glob("s*/*/series.parquet"),
                       key=lambda f: int(f.parent.parent.name[1:]) if f.parent.parent.name[1:].isdigit() else 0)
        for f in seeds[:3]:
            s = pq.read_table(f, columns=["t_s", "flow", "fps"]).to_pydict()
            t, flow, rate = (np.asarray(s[k], dtype=float) for k in ("t_s", "flow", "fps"))
            m = flow == 0
            step = float(np.median(np.diff(t[m]))) if m.sum() > 1 else 0.0
            frames = np.repeat(t[m], np.round(np.nan_to_num(rate[m]) * step).astype(int))
            row(case.name, "sim " + f.parent.parent.name, frames[1:], np.maximum(1, np.round(np.diff(frames) / period).astype(int)))
    return 0


def _bursts(path: Path) -> tuple[float, float] | None:
    """(bursts per second, median burst kB) of the packets reaching the bottleneck after 5 s: a
    burst is a run of packets less than 0.5 ms apart (a paced stream at the highest pacing rates
    of these cases, 2.5 x 4 Mbit/s, leaves about 1 ms between 1200-byte packets)."""
    import numpy as np
    import pyarrow.parquet as pq

    if not path.is_file():
        return None
    p = pq.read_table(path, columns=["send_s", "size"]).to_pydict()
    t, size = _column(p["send_s"]), _column(p["size"])
    m = t > 5
    t, size = t[m], size[m]
    if len(t) < 2:
        return None
    groups = np.split(size, np.flatnonzero(np.diff(t) > 0.0005) + 1)
    return len(groups) / (t[-1] - t[0]), float(np.median([g.sum() for g in groups])) / 1e3
