"""The built-in ``aimd`` controller (crates/ratelab-core/src/controllers/aimd.rs) ported to the
Python controller API: ``ratelab run rmcat-5.1 -c ratelab.examples.aimd:Aimd`` gives the same
target rates as ``-c aimd``, bit for bit (tests/python/test_byo.py).

Bit-identical because every floating-point operation is the Rust one, in the same order: the
simulator's times are integer microseconds, so RTT samples are computed on microseconds recovered
from the feedback's float seconds (exact: ``round(t·1e6)`` undoes ``µs / 1e6`` for any run
length) and divided by 1e6 as Rust's ``as_secs_f64`` does.
"""

from __future__ import annotations

import math

import numpy as np

from ratelab import Controller, Update


def _us(seconds):
    """Microseconds (int64) from the float seconds the API hands over."""
    return np.rint(np.asarray(seconds) * 1e6).astype(np.int64)


class Aimd(Controller):
    """TCP-like rate control: +1 packet per RTT, halve on a loss event (Python port of `aimd`)."""

    def __init__(self, mss_bytes: float = 1200.0, decrease: float = 0.5, rtt_gain: float = 0.125, pacing_factor: float = 1.0):
        self.mss = mss_bytes if math.isfinite(mss_bytes) and mss_bytes > 0 else 1200.0
        self.decrease = min(max(decrease, 0.0), 1.0) if math.isfinite(decrease) else 0.5
        self.gain = min(max(rtt_gain, 0.0), 1.0)
        self.pf = max(pacing_factor, 1.0) if math.isfinite(pacing_factor) else 1.0
        self.cwnd, self.srtt, self.rate, self.last_decrease = 0.0, None, 0.0, None

    def _recompute(self) -> None:
        if self.srtt is not None:
            wlo, whi = self.lo * self.srtt / 8.0, self.hi * self.srtt / 8.0
            self.cwnd = min(max(self.cwnd, min(max(wlo, self.mss), whi)), whi) if math.isfinite(self.cwnd) else whi
            self.rate = self.cwnd * 8.0 / self.srtt
        self.rate = min(max(self.rate, self.lo), self.hi) if math.isfinite(self.rate) else self.lo

    def _output(self) -> Update:
        target = math.floor(self.rate + 0.5)  # Rust's Bitrate::from_bps_f64 (round half up, rate > 0)
        return Update(target_bps=target, pacing_bps=target * self.pf)

    def on_start(self, now_s, c):
        self.lo = c.min_bps
        self.hi = max(c.max_bps, self.lo)
        self.rate = c.start_bps
        self._recompute()
        return self._output()

    def on_feedback(self, fb):
        rx = fb.received
        if rx.any():
            now, send, arr = _us(fb.time_s), _us(fb.send_time_s[rx]), _us(fb.arrival_time_s[rx])
            if fb.report_time_s is not None:  # exact RTT of the newest arrival (RFC 8888 report time)
                k = len(arr) - 1 - int(np.argmax(arr[::-1]))
                sample_us = (now - send[k]) - (_us(fb.report_time_s) - arr[k])
            else:  # propagation RTT: each packet's naive RTT less the time it waited at the receiver
                sample_us = max(int(np.min((now - send) - (arr.max() - arr))), 0)
            sample = max(int(sample_us) / 1e6, 1e-4)
            if self.srtt is None:
                self.srtt = sample
                self.cwnd = self.rate * sample / 8.0
            else:
                self.srtt = (1.0 - self.gain) * self.srtt + self.gain * sample
        if self.srtt is None:
            return None
        lost = ~rx
        if lost.any() and (self.last_decrease is None or (fb.send_time_s[lost] > self.last_decrease).any()):
            self.cwnd *= self.decrease
            self.last_decrease = fb.time_s
        else:
            acked = float(fb.size[rx].sum())
            if self.cwnd > 0.0:
                self.cwnd += self.mss * acked / self.cwnd
        self._recompute()
        return self._output()
