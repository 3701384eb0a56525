"""Paper 002, Cross (Zhang, Yang): delay-based MIMD rate control for RTP, with RBBR.

The simulated experiments of paper VI-A … VI-D and Tables I–II (spec ``algorithms.md`` 5.9–5.10),
all on the built-in scenarios ``cross-case1`` … ``cross-case8`` (Table III links, three flows
0–300 / 35–200 / 80–300 s), ``cross-fast-adapt`` (VI-C) and ``cross-rtt-fairness`` (VI-D). They
carry the ns-3 harness's settings (spec 5.9): 1500-byte packets, a drop-tail queue counted in
packets (queue-disc ``max(1500, C·buffer/8)/1500`` plus the device's 5), per-flow limits min 300 /
start 500 kbit/s / max = link rate, WebRTC's fake encoder (no lag, constant frame sizes) and GCC as
in M84 (``profile = "m84"``). The online evaluation (VI-E: a cloud-rendering service over Linux tc)
has no counterpart in the simulator and is left out.

Metrics as the paper defines them: channel utilization (Eq. 6) = bits received by all flows /
(capacity × simulated time), the summary's ``link.utilization``; mean one-way delay = the mean OWD
of every received packet of every flow (packet-weighted over the flows); loss = packets lost /
packets sent, over all flows.
"""

from __future__ import annotations

from ratelab.reproduce.core import PaperSpec
from ratelab.reproduce.cross.experiments import CASES, COLOR, CROSS_MEDIAN, CROSS_NOACCEL, ENTRANCE, LABEL, LOSSES, NAME, NCWND, PARAMS, RBBR_NP, SEVEN, SPIKE_MS, TABLE1, TABLE2_PAPER, TITLE, TOL_PTS, VIA, VIB_PAPER, VIC, VID, case_doc, jobs, packets_queue, plan, scaled, table1_doc, with_controller  # noqa: F401
from ratelab.reproduce.cross.metrics import base_owd, flow_rates, fluctuation, jain, latecomer_ratio, loss_rate, mean_owd, recovery, spike, time_to_gain, utilization  # noqa: F401
from ratelab.reproduce.cross.report import report  # noqa: F401

SPEC = PaperSpec(NAME, TITLE, 10, jobs, report)
