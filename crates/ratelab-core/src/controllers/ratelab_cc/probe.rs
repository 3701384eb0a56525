//! Probation of the competitive mode: does the delivery rate follow the send rate?
//!
//! The competitive detector ("draining does not shrink the queue") cannot tell, from passive
//! measurements, a queue held by a loss-based flow from a link this flow saturates alone: in a
//! FIFO each flow's delivery rate is its send rate × capacity / arrival rate, so the queue's rise
//! equals the flow's own send-over-delivery excess in both cases. What differs is how the
//! delivery rate answers a *change* of the send rate: on a shared link of capacity C carrying
//! much more than this flow, raising the send rate by Δ raises the delivery rate by about
//! Δ · C / arrival rate ≈ Δ; on a link the flow saturates alone, the delivery rate is the
//! capacity and stays there. The competitive mode's additive growth is that change, so the
//! first `duration` of the mode is the probe.
//!
//! The probe alone can be passed by chance (a capacity jump after an outage raises the delivery
//! rate while the mode raises the send rate), so the mode is re-verified in rounds of the same
//! length for as long as it lasts ([`Ledger`]): over each round the flow's delivery rate must keep
//! up with its *measured* send rate (not its target, which an encoder at its minimum overshoots).
//! Competing against a loss-based flow, the mode's AIMD holds its share with about the loss rate
//! of that flow (≈ 1 %, the queue neither growing nor shrinking on average), so delivery ≈ send;
//! a flow that overdrives a link it saturates alone delivers far less than it sends (the excess
//! is lost at the full queue or piles up in it).

use crate::controller::TransportFeedback;
use crate::units::{Duration, Time};

/// A probe must raise the send rate at least this fraction above its start to be conclusive
/// (a probe cut short by losses at once proves nothing, and counts as failed).
const MIN_PROBE_RISE: f64 = 0.1;

pub(super) struct Probe {
    start: Time,
    duration: Duration,
    follow: f64,
    x0: f64,
    r0: f64,
    x_peak: f64,
    r_peak: f64,
}

impl Probe {
    /// `x0`, `r0`: send (target) and delivery rate at the start, bit/s.
    pub(super) fn new(start: Time, duration: Duration, follow: f64, x0: f64, r0: f64) -> Self {
        Probe { start, duration, follow, x0, r0, x_peak: x0, r_peak: r0 }
    }

    /// Target rate at the start of the probe, bit/s.
    pub(super) fn start_rate(&self) -> f64 { self.x0 }

    /// Feeds one feedback's rates; `None` while the probe runs, then whether the delivery rate
    /// rose by at least `follow` × the send rate's rise (peaks over the probe).
    pub(super) fn verdict(&mut self, now: Time, x: f64, r: f64) -> Option<bool> {
        self.x_peak = self.x_peak.max(x);
        self.r_peak = self.r_peak.max(r);
        if now - self.start < self.duration { return None; }
        let rise = self.x_peak - self.x0;
        Some(rise >= MIN_PROBE_RISE * self.x0 && self.r_peak - self.r0 >= self.follow * rise)
    }
}

/// What one round of the mode sent and delivered, from the packets its feedbacks report.
#[derive(Default)]
pub(super) struct Ledger {
    sent_bytes: f64,
    recv_bytes: f64,
    /// First and last send time of every reported packet, first and last arrival of the received.
    send_span: Option<(Time, Time)>,
    recv_span: Option<(Time, Time)>,
}

fn widen(span: &mut Option<(Time, Time)>, t: Time) {
    *span = Some(span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
}

/// A span's length in seconds; `None` without one or when it is a single instant.
fn seconds(span: Option<(Time, Time)>) -> Option<f64> {
    span.map(|(a, b)| (b - a).as_secs_f64()).filter(|d| *d > 0.0)
}

impl Ledger {
    pub(super) fn add(&mut self, fb: &TransportFeedback) {
        for p in &fb.packets {
            self.sent_bytes += p.sent.size.as_f64();
            widen(&mut self.send_span, p.sent.send_time);
            if let Some(recv) = p.recv_time {
                self.recv_bytes += p.sent.size.as_f64();
                widen(&mut self.recv_span, recv);
            }
        }
    }

    /// Measured send rate, bit/s: bytes sent over the span of their send times.
    pub(super) fn send_rate(&self) -> Option<f64> {
        seconds(self.send_span).map(|d| self.sent_bytes * 8.0 / d)
    }

    /// Fraction of the round's sent bytes reported lost (0 without packets).
    pub(super) fn loss(&self) -> f64 {
        if self.sent_bytes > 0.0 { 1.0 - self.recv_bytes / self.sent_bytes } else { 0.0 }
    }
    /// Delivery rate over send rate of the round (bytes over the span of their own timestamps);
    /// `None` without at least two sent and two received packets at distinct times.
    pub(super) fn delivered_over_sent(&self) -> Option<f64> {
        let (ts, tr) = (seconds(self.send_span)?, seconds(self.recv_span)?);
        (self.sent_bytes > 0.0).then(|| (self.recv_bytes / tr) / (self.sent_bytes / ts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: f64) -> Time { Time::ZERO + Duration::from_secs_f64(s) }

    #[test]
    fn shared_link_follows_saturated_link_does_not() {
        // Shared: send 150 → 300 kbit/s, delivery 140 → 270: rise 130 ≥ 0.5 · 150.
        let mut p = Probe::new(at(0.0), Duration::from_secs(3), 0.5, 150e3, 140e3);
        assert_eq!(p.verdict(at(1.0), 200e3, 180e3), None);
        assert_eq!(p.verdict(at(2.9), 300e3, 270e3), None);
        assert_eq!(p.verdict(at(3.0), 290e3, 260e3), Some(true));
        // Saturated alone at ~170 kbit/s: send 150 → 250, delivery 165 → 180: 15 < 0.5 · 100.
        let mut p = Probe::new(at(0.0), Duration::from_secs(3), 0.5, 150e3, 165e3);
        assert_eq!(p.verdict(at(1.5), 250e3, 180e3), None);
        assert_eq!(p.verdict(at(3.0), 240e3, 170e3), Some(false));
        // A probe that never raised the rate (cut by losses at once) is not conclusive: failed.
        let mut p = Probe::new(at(0.0), Duration::from_secs(3), 0.5, 150e3, 140e3);
        assert_eq!(p.verdict(at(3.0), 155e3, 150e3), Some(false));
    }

    fn pkt(seq: u64, sent_s: f64, recv_s: Option<f64>) -> crate::controller::PacketResult {
        crate::controller::PacketResult {
            sent: crate::controller::SentPacket { seq, size: crate::units::Bytes::new(1000), send_time: at(sent_s),
                probe_cluster: None, is_padding: false, data_in_flight: crate::units::Bytes::ZERO },
            recv_time: recv_s.map(at),
        }
    }

    #[test]
    fn ledger_hand_computed() {
        let mut l = Ledger::default();
        assert_eq!(l.delivered_over_sent(), None);
        assert_eq!(l.loss(), 0.0);
        // 11 packets of 1000 B sent every 100 ms (0.0 .. 1.0 s); one lost; the queue grows by
        // 100 ms over the round: the 10 received arrive over 0.05 .. 1.15 s.
        let mut fb = TransportFeedback::default();
        for i in 0..11u64 {
            let recv = (i != 5).then(|| 0.05 + i as f64 * 0.11);
            fb.packets.push(pkt(i, i as f64 * 0.1, recv));
        }
        l.add(&fb);
        // Send rate 11 000 B / 1.0 s = 88 kbit/s; delivery 10 000 B / 1.1 s.
        assert!((l.send_rate().unwrap() - 88_000.0).abs() < 1e-6);
        let ratio = (10_000.0 / 1.1) / 11_000.0;
        assert!((l.delivered_over_sent().unwrap() - ratio).abs() < 1e-9, "{:?}", l.delivered_over_sent());
        assert!((l.loss() - 1.0 / 11.0).abs() < 1e-12);
    }
}
