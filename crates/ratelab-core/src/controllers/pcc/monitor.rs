//! The monitor interval (MI) shared by the PCC family (`pcc-allegro` and `vivace`): a period of
//! send time at one rate whose packets' fates, taken from transport feedback, are summarised
//! into the statistics a utility function reads (loss rate, delay gradient, mean RTT).
//!
//! An MI covers send times in `(start, start + duration]`. Feedback is offered to it packet by
//! packet (sorted by sequence, i.e. send order); it is complete at the first reported packet sent
//! after its end — from then on every packet of it that will ever be reported has been (libwebrtc
//! `PccMonitorInterval`, modong/pcc's "a later monitor's packet was acknowledged").

use crate::controller::{PacketResult, SentPacket, TransportFeedback};
use crate::controllers::common::{max_recv_time, packet_rtt};
use crate::units::{Duration, Time};

#[derive(Clone, Debug)]
pub struct MonitorInterval {
    pub rate_bps: f64,
    pub start: Time,
    pub duration: Duration,
    /// (send time, one-way delay in µs) of received packets.
    received: Vec<(Time, f64)>,
    received_bytes: f64,
    pub(crate) lost_bytes: f64,
    /// Bytes the sender put into the interval (known only to callers of [`Self::on_sent`]).
    sent_bytes: f64,
    /// Sum and count of the RTTs of received packets (only from [`Self::on_feedback`]).
    rtt_sum_s: f64,
    rtt_count: u32,
    done: bool,
}

impl MonitorInterval {
    pub fn new(rate_bps: f64, start: Time, duration: Duration) -> Self {
        MonitorInterval {
            rate_bps, start, duration, received: Vec::new(), received_bytes: 0.0, lost_bytes: 0.0, sent_bytes: 0.0,
            rtt_sum_s: 0.0, rtt_count: 0, done: false,
        }
    }
    pub fn end(&self) -> Time { self.start + self.duration }
    pub fn is_done(&self) -> bool { self.done }
    /// Whether a packet sent at `t` belongs to this interval.
    pub fn contains(&self, t: Time) -> bool { t > self.start && t <= self.end() }

    /// Count a packet the sender put on the wire (for [`Self::close_unreported_as_lost`]).
    pub fn on_sent(&mut self, p: &SentPacket) {
        if self.contains(p.send_time) { self.sent_bytes += p.size.as_f64(); }
    }

    /// Take the results of the packets sent inside the interval; a packet sent after the end
    /// completes it (the rest of the feedback is then not looked at).
    pub fn on_packets(&mut self, packets: &[PacketResult]) { self.take(packets, |_| None); }

    /// As [`Self::on_packets`], also collecting each received packet's RTT (spec 1.3,
    /// [`packet_rtt`]: exact with a report time, hold time removed otherwise).
    pub fn on_feedback(&mut self, fb: &TransportFeedback) {
        let max_recv = max_recv_time(fb).unwrap_or(fb.feedback_time);
        self.take(&fb.packets, |p| packet_rtt(fb, p, max_recv));
    }

    fn take(&mut self, packets: &[PacketResult], rtt: impl Fn(&PacketResult) -> Option<Duration>) {
        for p in packets {
            let t = p.sent.send_time;
            if t <= self.start { continue; }
            if t > self.end() { self.done = true; return; }
            match p.recv_time {
                Some(r) => {
                    self.received.push((t, (r - t).as_us() as f64));
                    self.received_bytes += p.sent.size.as_f64();
                    if let Some(d) = rtt(p) {
                        self.rtt_sum_s += d.as_secs_f64();
                        self.rtt_count += 1;
                    }
                }
                None => self.lost_bytes += p.sent.size.as_f64(),
            }
        }
    }

    /// Give up waiting (feedback timed out): every byte sent in the interval and not reported
    /// received counts as lost, and the interval is complete.
    pub fn close_unreported_as_lost(&mut self) {
        self.lost_bytes = self.lost_bytes.max(self.sent_bytes - self.received_bytes).max(0.0);
        self.done = true;
    }

    /// Lost bytes / (lost + received bytes); 0 when nothing was reported.
    pub fn loss_rate(&self) -> f64 {
        let total = self.lost_bytes + self.received_bytes;
        if total <= 0.0 { 0.0 } else { self.lost_bytes / total }
    }

    /// Mean RTT of the received packets, seconds (`None` without any RTT sample).
    pub fn mean_rtt_s(&self) -> Option<f64> { (self.rtt_count > 0).then(|| self.rtt_sum_s / self.rtt_count as f64) }

    /// Least-squares slope of one-way delay over send time (µs/µs); 0 below `threshold` in
    /// magnitude or with fewer than two distinct send times.
    pub fn delay_gradient(&self, threshold: f64) -> f64 {
        let n = self.received.len();
        if n < 2 || self.received[0].0 == self.received[n - 1].0 { return 0.0; }
        let t0 = self.received[0].0;
        let (mut st, mut sd, mut stt, mut std_) = (0.0, 0.0, 0.0, 0.0);
        for &(t, d) in &self.received {
            let x = (t - t0).as_us() as f64;
            st += x;
            sd += d;
            stt += x * x;
            std_ += x * d;
        }
        let nf = n as f64;
        let den = nf * stt - st * st;
        if den == 0.0 { return 0.0; }
        let g = (nf * std_ - sd * st) / den;
        if g.abs() < threshold { 0.0 } else { g }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Bytes;

    fn sp(seq: u64, t_ms: f64) -> SentPacket {
        SentPacket { seq, size: Bytes::new(1000), send_time: Time::from_secs_f64(t_ms / 1e3), probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO }
    }

    #[test]
    fn rtt_loss_and_timeout_accounting_hand_computed() {
        // MI over (100, 200] ms: packets at 110, 120, 130 (130 lost), 190; one at 100 (not ours)
        let mut mi = MonitorInterval::new(1e6, Time::from_ms(100), Duration::from_ms(100));
        for (i, t) in [100.0, 110.0, 120.0, 130.0, 190.0].iter().enumerate() { mi.on_sent(&sp(i as u64, *t)); }
        let got = |seq, t: f64, owd: f64| PacketResult { sent: sp(seq, t), recv_time: Some(Time::from_secs_f64((t + owd) / 1e3)) };
        // feedback at 200 ms reported at 195 ms (report time known): RTT = (200 − t_s) − (195 − t_r)
        let fb = TransportFeedback {
            feedback_time: Time::from_ms(200), report_time: Some(Time::from_ms(195)),
            packets: vec![got(0, 100.0, 30.0), got(1, 110.0, 30.0), got(2, 120.0, 40.0),
                          PacketResult { sent: sp(3, 130.0), recv_time: None }],
            ..Default::default()
        };
        mi.on_feedback(&fb);
        assert!(!mi.is_done());
        // RTTs: 110 → (90) − (195 − 140) = 35 ms; 120 → 80 − (195 − 160) = 45 ms; mean 40 ms
        assert!((mi.mean_rtt_s().unwrap() - 0.040).abs() < 1e-9, "{:?}", mi.mean_rtt_s());
        assert!((mi.loss_rate() - 1.0 / 3.0).abs() < 1e-12);
        // the 190 ms packet is never reported: a timeout counts it as lost (2 of 4 sent)
        let mut t = mi.clone();
        t.close_unreported_as_lost();
        assert!(t.is_done() && (t.loss_rate() - 0.5).abs() < 1e-12, "{}", t.loss_rate());
        // a report of a packet sent after the end completes it
        mi.on_packets(&[got(4, 190.0, 30.0), got(5, 201.0, 30.0)]);
        assert!(mi.is_done() && (mi.loss_rate() - 0.25).abs() < 1e-12);
        // on_packets carries no RTT: the mean is unchanged
        assert!((mi.mean_rtt_s().unwrap() - 0.040).abs() < 1e-9);
    }
}
