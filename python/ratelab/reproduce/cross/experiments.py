"""The paper's experiments: constants, scenario documents and the job set."""

from __future__ import annotations

from typing import Any, Sequence

from ratelab.reproduce.core import Job
from ratelab.scenario import load_scenario


NAME = "cross"
TITLE = "Reproduction: Cross — delay-based congestion control for RTP (paper 002)"
#: The seven controllers of VI-A/VI-B (paper order), and WebRTC-BBR beside them in VI-A.
SEVEN = ["gcc", "rbbr", "nada", "nadar", "copa", "vivace", "cross"]
VIA = [*SEVEN, "bbr-webrtc"]
LABEL = {"gcc": "GCC (M84)", "rbbr": "RBBR", "nada": "NADA", "nadar": "NADAR", "copa": "Copa", "vivace": "Vivace",
         "cross": "Cross", "bbr-webrtc": "WebRTC-BBR"}
COLOR = {"gcc": "C3", "rbbr": "C2", "nada": "C1", "nadar": "C9", "copa": "C4", "vivace": "C5", "cross": "C0",
         "bbr-webrtc": "C7"}
#: Controller parameters that are not the registry's defaults: GCC as the harness's libwebrtc M84; Copa's
#: segment size = the harness's 1500-byte packet (the registry default is the lab's usual 1240 B).
PARAMS: dict[str, dict[str, Any]] = {"gcc": {"profile": "m84"}, "copa": {"mss_bytes": 1500.0}}
CASES = {1: (3, 30, 90), 2: (3, 50, 200), 3: (6, 30, 90), 4: (6, 50, 200), 5: (12, 30, 90), 6: (12, 50, 200),
         7: (15, 30, 90), 8: (15, 50, 200)}
#: Paper VI-B (Fig. 14), Case 6: the numbers quoted in the text (utilization at loss rate).
VIB_PAPER = {("cross", 0.10): 0.8678, ("copa", 0.10): 0.8660, ("rbbr", 0.10): 0.8323, ("gcc", 0.08): 0.7950,
             ("gcc", 0.10): 0.4113, ("nada", 0.02): 0.4290, ("nadar", 0.02): 0.4552}
LOSSES = [0.0, 0.02, 0.04, 0.06, 0.08, 0.10]
#: VI-B sensitivity row: RBBR without the pacing discount in the probe-up phase (docs/controllers/bbr.md).
RBBR_NP = "rbbr, probe-up undiscounted"
LABEL[RBBR_NP] = "RBBR (probe-up undiscounted)"
COLOR[RBBR_NP] = "C8"
#: Tables I–II links: (Mbit/s, one-way ms, queue ms at the link rate) and the paper's loss rates (%).
TABLE1 = {"A": (6, 100, 300), "B": (12, 50, 150), "C": (15, 30, 100)}
TABLE2_PAPER = {"bbr-webrtc": (3.49, 5.90, 3.89), "rbbr": (0.62, 1.99, 0.25), "quic-bbr": (2.06, 1.21, 0.47),
                "ncwnd": (8.34, 7.87, 8.83)}
#: VI-A sensitivity: Cross deciding on the median of a cycle's OWDs (Eq. 5 with a/b = 1/2: the paper's word
#: "median") instead of the 25th percentile (a/b = 1/4: the paper's numbers; spec 5.2 ⚠).
CROSS_MEDIAN = "cross, median"
LABEL[CROSS_MEDIAN] = "Cross, Eq. 5 median (a/b = 1/2)"
COLOR[CROSS_MEDIAN] = "C0"
#: VI-A sensitivity: Cross without rate acceleration (its growth law is ✗ and its gate form ⚙, spec 5.5).
CROSS_NOACCEL = "cross, no acceleration"
LABEL[CROSS_NOACCEL] = "Cross, acceleration off"
COLOR[CROSS_NOACCEL] = "C0"
#: VI-B sensitivity: loss at the entrance of the bottleneck (the lab's default) instead of at its exit
#: (the harness), at 10 % only, for the controllers that ignore loss.
ENTRANCE = {"cross, loss at entrance": "cross", "copa, loss at entrance": "copa"}
LABEL.update({"cross, loss at entrance": "Cross, loss at the queue's entrance",
              "copa, loss at entrance": "Copa, loss at the queue's entrance"})
COLOR.update({"cross, loss at entrance": "C0", "copa, loss at entrance": "C4"})
NCWND = "bbr-webrtc, no cwnd"
LABEL[NCWND] = "WebRTC-BBR without cwnd (≈ QUIC-BBR-NCWND)"
#: VI-C variants: (label, Cross parameters). Fig. 15: subroutine and acceleration on; Fig. 16: both off.
VIC = {"with fast adaptation": {"fast_adapt": True, "accel": True},
       "without (acceleration off, Fig. 16)": {"fast_adapt": False, "accel": False},
       "without (acceleration on)": {"fast_adapt": False, "accel": True}}
VID = ["rbbr", "nadar", "cross"]
#: Tolerance for the paper's quoted numbers (utilization, percentage points).
TOL_PTS = 5.0
#: Spike threshold above the base one-way delay (docs/controllers/cross.md's definition).
SPIKE_MS = 100.0


def packets_queue(mbps: float, buffer_ms: float, device: int = 5) -> int:
    """The harness's drop-tail limit in 1500-byte packets: queue-disc ``max(1500, bps·ms/8000)/1500``
    (integer division, as the C++ code) plus the point-to-point device's own queue (spec 5.9)."""
    return int(max(1500.0, mbps * 1e6 * buffer_ms / 8000.0) // 1500) + device


def with_controller(doc: dict[str, Any], controller: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every media flow of ``doc`` runs ``controller`` with ``params`` (else :data:`PARAMS`' entry)."""
    params = params if params is not None else PARAMS.get(controller)
    for f in doc["flows"]:
        f["controller"] = controller
        if params:
            f["params"] = dict(params)
        else:
            f.pop("params", None)
    return doc


def scaled(doc: dict[str, Any], s: float) -> dict[str, Any]:
    """Shrink every time of the schedule by ``s`` (quick mode)."""
    if s != 1.0:
        doc["duration_s"] = doc["duration_s"] * s
        for f in doc["flows"]:
            for k in ("start_s", "stop_s"):
                if k in f:
                    f[k] = f[k] * s
        link = doc["link"]
        if "loss_start_s" in link:
            link["loss_start_s"] = link["loss_start_s"] * s
        if "steps" in link:
            link["steps"] = [[t * s, c] for t, c in link["steps"]]
    return doc


def case_doc(case: int, controller: str, params: dict[str, Any] | None = None, loss: float = 0.0,
             scale: float = 1.0) -> dict[str, Any]:
    doc = load_scenario(f"cross-case{case}", [f"link.loss={loss}"] if loss else []).data
    return scaled(with_controller(doc, controller, params), scale)


def table1_doc(case: str, controller: str, params: dict[str, Any] | None, scale: float) -> dict[str, Any]:
    """Table I link with the VI-A flow schedule and harness settings (template: ``cross-case1``)."""
    mbps, owd, q = TABLE1[case]
    doc = load_scenario("cross-case1").data
    doc["name"] = f"cross-table1-{case}"
    doc["description"] = f"Cross paper Table I case {case}: {mbps} Mbit/s, {owd} ms, queue {mbps} Mbit/s × {q} ms"
    doc["link"]["capacity_kbps"] = mbps * 1000.0
    doc["link"]["queue"] = {"packets": packets_queue(mbps, q)}
    for f in doc["flows"]:
        f["one_way_delay_ms"] = float(owd)
        f["media"]["max_kbps"] = mbps * 1000.0
    return scaled(with_controller(doc, controller, params), scale)


def plan(quick: bool) -> dict[str, Any]:
    """What runs (quick: a smoke test with shortened schedules)."""
    if quick:
        return {"cases": [1, 4], "scale": 0.2, "losses": [0.0, 0.10], "vib_scale": 0.2, "vic_scale": 1.0,
                "vid_scale": 0.4, "table1": ["B"], "t1_scale": 0.2}
    return {"cases": list(CASES), "scale": 1.0, "losses": LOSSES, "vib_scale": 1.0, "vic_scale": 1.0,
            "vid_scale": 1.0, "table1": list(TABLE1), "t1_scale": 1.0}


def jobs(seeds: Sequence[int], quick: bool) -> list[Job]:
    pl = plan(quick)
    out: list[Job] = []
    for seed in seeds:
        for n in pl["cases"]:
            for c in VIA:
                out.append(Job("VI-A", f"case {n}", c, seed, case_doc(n, c, scale=pl["scale"]), bin_s=0.25))
            doc = case_doc(n, "cross", {"quantile_num": 1, "quantile_den": 2}, scale=pl["scale"])
            out.append(Job("VI-A", f"case {n}", CROSS_MEDIAN, seed, doc, bin_s=0.25))
            doc = case_doc(n, "cross", {"accel": False}, scale=pl["scale"])
            out.append(Job("VI-A", f"case {n}", CROSS_NOACCEL, seed, doc, bin_s=0.25))
        for loss in pl["losses"]:
            for c in [*SEVEN, RBBR_NP]:
                name, params = ("rbbr", {"pacing_discount_in_probe_up": False}) if c == RBBR_NP else (c, None)
                out.append(Job("VI-B", percent_text(loss), c, seed, case_doc(6, name, params, loss, pl["vib_scale"])))
            if loss == max(pl["losses"]):
                for v, c in ENTRANCE.items():
                    doc = case_doc(6, c, None, loss, pl["vib_scale"])
                    doc["link"]["loss_after_queue"] = False
                    out.append(Job("VI-B", percent_text(loss), v, seed, doc))
        for v, params in VIC.items():
            doc = scaled(with_controller(load_scenario("cross-fast-adapt").data, "cross", params), pl["vic_scale"])
            out.append(Job("VI-C", "10→4→10 Mbit/s", v, seed, doc, bin_s=0.025))
        for c in VID:
            doc = scaled(with_controller(load_scenario("cross-rtt-fairness").data, c), pl["vid_scale"])
            out.append(Job("VI-D", "40/80 ms", c, seed, doc))
        for case in pl["table1"]:
            for c in ("bbr-webrtc", "rbbr", NCWND):
                name, params = ("bbr-webrtc", {"use_cwnd": False}) if c == NCWND else (c, None)
                out.append(Job("Table II", case, c, seed, table1_doc(case, name, params, pl["t1_scale"])))
    return out


def percent_text(x: float) -> str:
    return f"{100 * x:g} %"
