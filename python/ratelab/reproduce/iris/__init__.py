"""Paper 001, Iris (Dai, Zhang, Zhang, Guo): statistical-learning congestion control.

The emulated experiments of paper VI-B (spec 4.8): robustness to random loss (Fig. 6), the
long-RTT satellite link (Table II), responsiveness to capacity changes (Fig. 7), intra-protocol
fairness (Fig. 8), RTT fairness (Fig. 9), TCP friendliness against Cubic (Fig. 10) and
convergence with 1…15 flows (Fig. 12). The real-network experiments (Table III, LTE Figs. 11/13)
and the QUIC/DASH one (Table IV: a DASH player and ABR logic the lab does not have) are left out.

Iris runs as a media flow with per-packet acknowledgements (the paper's UDT transport) and the
defaults of docs/controllers/iris.md; the baselines are the lab's bulk TCP senders (CUBIC, Vegas,
BBRv1; docs/controllers/tcp.md). The paper's PCC ("with latency utility function by default",
modong/pcc) is the lab's `pcc-allegro` with `utility = "latency"` and modong/pcc's 2 Mbit/s first
rate, acknowledged per packet like Iris (UDT); the lab's PCC-Vivace (`vivace`, libwebrtc's
utility) is shown beside it for reference only.
"""

from __future__ import annotations

from ratelab.reproduce.core import PaperSpec
from ratelab.reproduce.iris.experiments import CAP, LABEL, LOSSES, NAME, PCC_PARAMS, RTT, STEPS7, TABLE2_IRIS, TABLE2_RATIOS, TCP, TITLE, bdp_ms, flow, jobs, link, plan  # noqa: F401
from ratelab.reproduce.iris.metrics import convergence, fair_metrics, jain, queue, rates_matrix, thr_mbps, utilization  # noqa: F401
from ratelab.reproduce.iris.report import report, step_reaction  # noqa: F401

SPEC = PaperSpec(NAME, TITLE, 5, jobs, report)
