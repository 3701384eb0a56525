//! R3Net's receiver-side state (spec 10.1, 10.2): four features over each 50 ms window, their
//! fixed scaling, and the per-step reward. Shared by the `r3net` controller and the RL
//! environment (`sim::env`), so that training and deployment see exactly the same numbers.

use crate::controller::ReceivedPacket;
use crate::units::{Bytes, Duration, Time};

/// Step / window length (spec 10.1: the model is invoked every 50 ms).
pub const STEP: Duration = Duration::from_ms(50);

/// One window's features, unscaled (spec 10.1 units).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Observation {
    /// Receive rate: bytes (headers included) of the packets that arrived in the window × 8 / window, kbit/s.
    pub recv_kbps: f64,
    /// Mean gap between consecutive arrivals inside the window, ms; the window length with fewer than two arrivals.
    pub interval_ms: f64,
    /// Sequence-gap losses / expected packets in the window, in %.
    pub loss_pct: f64,
    /// Mean of the RTT values the receiver learnt in the window, ms; the last known value if none.
    pub rtt_ms: f64,
}

impl Observation {
    /// Fixed scaling of spec 10.2 (⚙ RECONSTRUCTED): `[kbps/1000, ms/10, %/100, ms/100]`.
    pub fn scaled(&self) -> [f32; 4] {
        [(self.recv_kbps / 1000.0) as f32, (self.interval_ms / 10.0) as f32, (self.loss_pct / 100.0) as f32, (self.rtt_ms / 100.0) as f32]
    }

    /// Reward of spec 10.1/10.2: `0.6·ln(4R + 1) − D − 10·L` with R the receive rate in Mbit/s,
    /// D the mean RTT in seconds and L the loss rate as a fraction (⚠ spec 10.2: fraction, not %).
    pub fn reward(&self) -> f64 {
        let r = (self.recv_kbps / 1000.0).max(0.0);
        0.6 * (4.0 * r + 1.0).ln() - self.rtt_ms / 1000.0 - 10.0 * (self.loss_pct / 100.0)
    }
}

/// Accumulates arriving packets and RTT values of the current window.
#[derive(Clone, Debug, Default)]
pub struct WindowFeatures {
    window_start: Time,
    bytes: Bytes,
    packets: u64,
    last_arrival: Option<Time>,
    gap_sum: Duration,
    gaps: u64,
    /// Highest sequence number seen before this window / in this window.
    prev_max_seq: Option<u64>,
    max_seq: Option<u64>,
    min_seq: Option<u64>,
    rtt_sum: Duration,
    rtts: u64,
    last_rtt: Option<Duration>,
}

impl WindowFeatures {
    pub fn new(start: Time) -> Self { WindowFeatures { window_start: start, ..Default::default() } }

    pub fn on_packet(&mut self, p: &ReceivedPacket) {
        self.bytes += p.size;
        self.packets += 1;
        if let Some(prev) = self.last_arrival { self.gap_sum += (p.recv_time - prev).max(Duration::ZERO); self.gaps += 1; }
        self.last_arrival = Some(p.recv_time);
        self.max_seq = Some(self.max_seq.map_or(p.seq, |m| m.max(p.seq)));
        self.min_seq = Some(self.min_seq.map_or(p.seq, |m| m.min(p.seq)));
    }

    pub fn on_rtt(&mut self, rtt: Duration) {
        if rtt < Duration::ZERO || !rtt.is_finite() { return; }
        self.rtt_sum += rtt;
        self.rtts += 1;
    }

    /// Close the window at `now`: return its features and start the next window.
    pub fn take(&mut self, now: Time) -> Observation {
        let len = now - self.window_start;
        let recv_kbps = if len > Duration::ZERO { (self.bytes / len).kbps_f64() } else { 0.0 };
        let interval_ms = if self.gaps > 0 { self.gap_sum.as_ms_f64() / self.gaps as f64 } else { len.max(Duration::ZERO).as_ms_f64() };
        let loss_pct = match self.max_seq {
            Some(max) => {
                // Expected = sequence numbers up to the highest one seen, since the previous
                // window's highest (or since this window's lowest for the first packets).
                let base = self.prev_max_seq.map_or(self.min_seq.unwrap_or(max), |p| p + 1);
                let expected = (max + 1).saturating_sub(base);
                let lost = expected.saturating_sub(self.packets);
                if expected > 0 { 100.0 * lost as f64 / expected as f64 } else { 0.0 }
            }
            None => 0.0,
        };
        if self.rtts > 0 { self.last_rtt = Some(self.rtt_sum / self.rtts as i64); }
        let rtt_ms = self.last_rtt.map_or(0.0, |d| d.as_ms_f64());
        if let Some(m) = self.max_seq { self.prev_max_seq = Some(self.prev_max_seq.map_or(m, |p| p.max(m))); }
        // Gaps are measured inside a window only: forget the last arrival.
        *self = WindowFeatures { window_start: now, prev_max_seq: self.prev_max_seq, last_rtt: self.last_rtt, ..Default::default() };
        Observation { recv_kbps, interval_ms, loss_pct, rtt_ms }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Bytes;

    fn pkt(seq: u64, ms: i64) -> ReceivedPacket {
        ReceivedPacket { seq, size: Bytes::new(1250), send_time: Time::from_ms(ms - 30), recv_time: Time::from_ms(ms), kind: Default::default() }
    }

    #[test]
    fn hand_worked_window() {
        let mut w = WindowFeatures::new(Time::ZERO);
        // 4 packets of 1250 B at 10, 20, 30, 45 ms; seq 0, 1, 3, 4 (seq 2 lost); RTTs 80 and 100 ms.
        for (s, t) in [(0, 10), (1, 20), (3, 30), (4, 45)] { w.on_packet(&pkt(s, t)); }
        w.on_rtt(Duration::from_ms(80));
        w.on_rtt(Duration::from_ms(100));
        let o = w.take(Time::from_ms(50));
        // 5000 B × 8 / 50 ms = 800 kbit/s; gaps 10, 10, 15 → 11.667 ms; 1 of 5 lost = 20 %; RTT 90 ms.
        assert!((o.recv_kbps - 800.0).abs() < 1e-9, "{o:?}");
        assert!((o.interval_ms - 35.0 / 3.0).abs() < 1e-9, "{o:?}");
        assert!((o.loss_pct - 20.0).abs() < 1e-9, "{o:?}");
        assert!((o.rtt_ms - 90.0).abs() < 1e-9, "{o:?}");
        assert_eq!(o.scaled(), [0.8, (35.0f64 / 30.0) as f32, 0.2, 0.9]);
        // reward = 0.6 ln(4·0.8 + 1) − 0.09 − 10·0.2
        assert!((o.reward() - (0.6 * 4.2f64.ln() - 0.09 - 2.0)).abs() < 1e-12);

        // Next window: seq 7 arrives alone → 5, 6 lost of 5..=7; no RTT → last RTT; interval = window.
        w.on_packet(&pkt(7, 70));
        let o = w.take(Time::from_ms(100));
        assert!((o.loss_pct - 100.0 * 2.0 / 3.0).abs() < 1e-9, "{o:?}");
        assert_eq!(o.interval_ms, 50.0);
        assert_eq!(o.rtt_ms, 90.0);
        assert!((o.recv_kbps - 200.0).abs() < 1e-9);

        // Empty window: rate 0, interval 50 ms, loss 0, RTT last value.
        let o = w.take(Time::from_ms(150));
        assert_eq!(o, Observation { recv_kbps: 0.0, interval_ms: 50.0, loss_pct: 0.0, rtt_ms: 90.0 });
    }

    #[test]
    fn start_up_is_all_zero_but_interval() {
        let mut w = WindowFeatures::new(Time::ZERO);
        let o = w.take(Time::from_ms(50));
        assert_eq!(o.recv_kbps, 0.0);
        assert_eq!(o.loss_pct, 0.0);
        assert_eq!(o.rtt_ms, 0.0);
        assert_eq!(o.reward(), 0.0);
    }
}
