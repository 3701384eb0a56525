"""Controllers for timing the Python controller path (docs/benchmarks.md, "Python controllers"):
``AllEvents`` defines every event but ``on_packet_sent`` (a Python call per feedback, per tick and
per sender-queue report); ``PerPacket`` adds ``on_packet_sent``, one more call per packet."""

import numpy as np
import ratelab


class AllEvents(ratelab.Controller):
    """Defines every event but on_packet_sent: feedback columns reduced with numpy, a tick, the queue."""

    def on_start(self, now_s, c):
        self.rate, self.q = c.start_bps, 0
        return self.rate

    def on_feedback(self, fb):
        got = fb.received
        if got.any():
            delay = np.median(fb.arrival_time_s[got] - fb.send_time_s[got])
            self.rate *= 1.05 if delay < 0.08 else 0.9
        return ratelab.Update(target_bps=self.rate, pacing_bps=1.2 * self.rate)

    def on_tick(self, now_s):
        return None

    def on_sender_queue(self, now_s, queue_bytes):
        self.q = queue_bytes

    def on_remote_estimate(self, now_s, rate_bps):
        return None


class PerPacket(AllEvents):
    """AllEvents plus on_packet_sent (one Python call per packet)."""

    def on_packet_sent(self, packet):
        return None
