"""The paper's experiments: constants, scenario documents and the job set."""

from __future__ import annotations

from typing import Any, Sequence

from ratelab.reproduce.core import Job, scenario


NAME = "iris"
TITLE = "Reproduction: Iris — statistical-learning congestion control for real-time video (paper 001)"
TCP = {"cubic", "vegas", "bbr"}
LABEL = {"iris": "Iris", "iris-mid": "Iris-mid", "iris (twcc)": "Iris, TWCC feedback", "cubic": "Cubic", "vegas": "Vegas",
         "bbr": "BBR", "pcc": "PCC", "pcc-loss": "PCC, loss utility (ref.)", "vivace": "PCC-Vivace (ref.)"}
#: The paper's PCC: modong/pcc with its latency utility (paper VI-A) and the code's first rate of 2 Mbit/s.
PCC_PARAMS = {"utility": "latency", "start_kbps": 2000}
CAP = 20000.0
RTT = 50.0
# Table II (paper VI-B2): RTprop → Iris (rate Mbit/s, delay ms); others as (rate×, delay×) of Iris
TABLE2_IRIS = {600: (16.7, 16.0), 800: (15.6, 19.0), 1000: (13.9, 21.0)}
TABLE2_RATIOS = {
    "vegas": {600: (0.03, 0.06), 800: (0.02, 0.05), 1000: (0.03, 0.09)},
    "cubic": {600: (0.06, 0.12), 800: (0.03, 0.15), 1000: (0.03, 0.19)},
    "bbr": {600: (0.71, 1.02), 800: (0.65, 0.88), 1000: (0.51, 0.93)},
    "pcc": {600: (1.12, 31.3), 800: (1.24, 38.6), 1000: (1.34, 42.3)},
}
LOSSES = [0.0, 0.005, 0.01, 0.02, 0.03, 0.05]
#: Fig. 7: the paper changes the capacity every 40 s but gives the values only in the figure.
STEPS7 = [(0.0, 20000.0), (40.0, 10000.0), (80.0, 30000.0), (120.0, 20000.0)]


def flow(p: str, *, owd: float = RTT / 2, start: float = 0.0, cap: float = CAP, label: str | None = None) -> dict[str, Any]:
    """One flow of protocol ``p``: a bulk TCP sender, or a media flow (Iris: per-packet ACKs)."""
    if p in TCP:
        f: dict[str, Any] = {"kind": "tcp", "tcp": {"cc": p}, "one_way_delay_ms": owd, "start_s": start}
    else:
        controller, mode = {"iris (twcc)": ("iris", "twcc"), "vivace": ("vivace", "twcc"),
                            "pcc": ("pcc-allegro", "per-packet"), "pcc-loss": ("pcc-allegro", "per-packet")}.get(p, (p, "per-packet"))
        f = {"kind": "media", "controller": controller, "one_way_delay_ms": owd, "start_s": start,
             "feedback": {"mode": mode}, "media": {"min_kbps": 100, "max_kbps": 2 * cap, "start_kbps": 300}}
        if p == "pcc":
            f["params"] = dict(PCC_PARAMS)
        elif p == "pcc-loss":  # reference: the PCC paper's default utility
            f["params"] = {**PCC_PARAMS, "utility": "loss"}
    if label:
        f["label"] = label
    return f


def link(cap: float, queue: dict[str, float], loss: float = 0.0, steps: list | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"queue": queue, "loss": loss}
    if steps:
        out["steps"] = [[t, c] for t, c in steps]
    else:
        out["capacity_kbps"] = cap
    return out


def bdp_ms(rtt_ms: float, factor: float) -> dict[str, float]:
    """A drop-tail queue of ``factor`` × BDP, expressed as time at the link rate."""
    return {"ms": factor * rtt_ms}


def plan(quick: bool) -> dict[str, Any]:
    """Durations and sweeps (quick: a smoke test)."""
    if quick:
        return {"loss_dur": 20.0, "losses": [0.0, 0.02], "sat_dur": 40.0, "rtprops": [600], "f7_scale": 0.25,
                "fair_dur": 30.0, "fair_gap": 5.0, "f10_dur": 20.0, "conv_n": 4, "conv_gap": 20.0, "conv_cap": 20000.0}
    return {"loss_dur": 60.0, "losses": LOSSES, "sat_dur": 120.0, "rtprops": [600, 800, 1000], "f7_scale": 1.0,
            "fair_dur": 90.0, "fair_gap": 10.0, "f10_dur": 20.0, "conv_n": 15, "conv_gap": 50.0, "conv_cap": 50000.0}


def jobs(seeds: Sequence[int], quick: bool) -> list[Job]:
    pl = plan(quick)
    out: list[Job] = []
    for seed in seeds:
        for p in ("iris", "bbr", "cubic", "vegas", "pcc", "pcc-loss", "vivace"):
            for loss in pl["losses"]:
                doc = scenario("iris-loss", pl["loss_dur"], link(CAP, bdp_ms(RTT, 1.0), loss), [flow(p)])
                out.append(Job("fig6", f"{100 * loss:g} %", p, seed, doc))
        for p in ("iris", "iris (twcc)", "bbr", "cubic", "vegas", "pcc", "pcc-loss", "vivace"):
            for rt in pl["rtprops"]:
                doc = scenario("iris-satellite", pl["sat_dur"], link(CAP, bdp_ms(rt, 1.0), 0.0074), [flow(p, owd=rt / 2)])
                out.append(Job("table2", f"{rt} ms", p, seed, doc))
        s = pl["f7_scale"]
        for p in ("iris", "pcc", "vivace", "cubic", "bbr"):
            doc = scenario("iris-steps", 160.0 * s, link(0, {"bytes": 10000}, steps=[(t * s, c) for t, c in STEPS7]),
                           [flow(p, cap=30000.0)])
            j = Job("fig7", "steps", p, seed, doc)
            j.bin_s = 0.25
            out.append(j)
        for p in ("iris", "cubic", "bbr", "pcc", "vivace"):
            flows = [flow(p, start=i * pl["fair_gap"], label=f"{LABEL[p].split(' ')[0]} {i + 1}") for i in range(3)]
            out.append(Job("fig8", "3 flows", p, seed, scenario("iris-fair", pl["fair_dur"], link(CAP, bdp_ms(RTT, 0.5)), flows)))
        for p in ("iris", "cubic"):
            flows = [flow(p, owd=r / 2, start=i * pl["fair_gap"], label=f"RTT {r:g} ms") for i, r in enumerate((50.0, 100.0, 150.0))]
            out.append(Job("fig9", "50/100/150 ms", p, seed, scenario("iris-rtt-fair", pl["fair_dur"], link(CAP, bdp_ms(RTT, 0.5)), flows)))
        for p in ("iris", "iris-mid", "cubic", "vegas", "bbr", "pcc", "pcc-loss", "vivace"):
            flows = [flow("cubic", label="Cubic (background)"), flow(p, label=LABEL[p])]
            out.append(Job("fig10", "vs Cubic", p, seed, scenario("iris-vs-cubic", pl["f10_dur"], link(CAP, bdp_ms(RTT, 0.5)), flows)))
            if p in ("iris", "iris-mid", "cubic"):  # the same, three times longer (no claim: how far Iris gets)
                out.append(Job("fig10", "vs Cubic, long", p, seed,
                               scenario("iris-vs-cubic", 3 * pl["f10_dur"], link(CAP, bdp_ms(RTT, 0.5)), flows)))
        for p in ("iris", "vegas", "cubic", "bbr", "pcc"):
            cap = pl["conv_cap"]
            flows = [flow(p, start=i * pl["conv_gap"], cap=cap) for i in range(pl["conv_n"])]
            doc = scenario("iris-convergence", pl["conv_n"] * pl["conv_gap"], link(cap, bdp_ms(RTT, 1.0)), flows)
            out.append(Job("fig12", f"{pl['conv_n']} flows", p, seed, doc))
    return out
