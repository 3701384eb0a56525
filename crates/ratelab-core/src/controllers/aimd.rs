//! `aimd` — the "CTCP" baseline of paper 003 (IV-A: "emulate the behavior of TCP that adjusts
//! video rate by increased-by-one and decreased-to-half"), rate-based:
//!
//! * a window `cwnd` (bytes) grows by one packet (1200 B) per RTT — per acknowledged byte
//!   `cwnd += MSS·acked/cwnd`, TCP congestion avoidance (RFC 5681 §3.1);
//! * on a loss event `cwnd` halves, at most once per RTT: only a packet sent after the previous
//!   decrease can trigger the next one (as NewReno's recovery point, RFC 6582);
//! * the sender does not clock packets by ACKs but sets `rate = cwnd / SRTT` and paces at it;
//!   SRTT is the RFC 6298 EWMA (gain 1/8) of the exact per-feedback RTT (spec 1.3).
//!
//! Before the first RTT sample the rate is the flow's start rate; the first sample sets
//! `cwnd = start rate · RTT` so the rate is continuous. There is no slow start (the paper's
//! description has none). The window is kept within the rates the flow can use.

use super::common::feedback_rtt;
use crate::controller::{Constraints, Controller, Diagnostics, TransportFeedback, Update};
use crate::units::{Bitrate, Time};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AimdConfig {
    /// Additive increase per RTT in bytes: one packet (paper 003 "+1"; our packets carry up to
    /// 1200 B of payload).
    pub mss_bytes: f64,
    /// Multiplicative decrease factor on a loss event (paper 003 "decreased-to-half": 0.5).
    pub decrease: f64,
    /// SRTT gain (RFC 6298: 1/8).
    pub rtt_gain: f64,
    /// Pacing rate / rate.
    pub pacing_factor: f64,
}

impl Default for AimdConfig {
    fn default() -> Self { AimdConfig { mss_bytes: 1200.0, decrease: 0.5, rtt_gain: 0.125, pacing_factor: 1.0 } }
}

pub struct Aimd {
    cfg: AimdConfig,
    constraints: Constraints,
    cwnd: f64,
    srtt: Option<f64>,
    rate: f64,
    /// Time of the last decrease: losses of packets sent before it belong to that event.
    last_decrease: Option<Time>,
}

impl Aimd {
    pub fn new(cfg: AimdConfig) -> Self {
        Aimd { cfg, constraints: Constraints::default(), cwnd: 0.0, srtt: None, rate: 0.0, last_decrease: None }
    }

    fn mss(&self) -> f64 { if self.cfg.mss_bytes.is_finite() && self.cfg.mss_bytes > 0.0 { self.cfg.mss_bytes } else { 1200.0 } }
    fn lo(&self) -> f64 { self.constraints.min_rate.bps_f64() }
    fn hi(&self) -> f64 { self.constraints.max_rate.bps_f64().max(self.lo()) }

    pub fn cwnd_bytes(&self) -> f64 { self.cwnd }
    pub fn rate(&self) -> Bitrate { Bitrate::from_bps_f64(self.rate) }

    /// Rate from the window and SRTT, window kept within the usable rates.
    fn recompute(&mut self) {
        if let Some(srtt) = self.srtt {
            let (wlo, whi) = (self.lo() * srtt / 8.0, self.hi() * srtt / 8.0);
            self.cwnd = if self.cwnd.is_finite() { self.cwnd.clamp(wlo.max(self.mss()).min(whi), whi) } else { whi };
            self.rate = self.cwnd * 8.0 / srtt;
        }
        self.rate = if self.rate.is_finite() { self.rate.clamp(self.lo(), self.hi()) } else { self.lo() };
    }

    fn output(&self) -> Update {
        let pf = if self.cfg.pacing_factor.is_finite() { self.cfg.pacing_factor.max(1.0) } else { 1.0 };
        Update::rates(Bitrate::from_bps_f64(self.rate), pf)
    }
}

impl Controller for Aimd {
    fn on_start(&mut self, _now: Time, c: Constraints) -> Update {
        self.constraints = c;
        self.rate = c.start_rate.bps_f64();
        self.recompute();
        self.output()
    }

    fn on_feedback(&mut self, fb: &TransportFeedback) -> Update {
        let now = fb.feedback_time;
        if let Some(r) = feedback_rtt(fb) {
            let sample = r.exact.unwrap_or(r.propagation).as_secs_f64().max(1e-4);
            match self.srtt {
                None => { self.srtt = Some(sample); self.cwnd = self.rate * sample / 8.0; }
                Some(s) => { let g = self.cfg.rtt_gain.clamp(0.0, 1.0); self.srtt = Some((1.0 - g) * s + g * sample); }
            }
        }
        if self.srtt.is_none() { return Update::default(); }
        let new_event = fb.lost().any(|p| self.last_decrease.is_none_or(|t| p.sent.send_time > t));
        if new_event {
            let d = if self.cfg.decrease.is_finite() { self.cfg.decrease.clamp(0.0, 1.0) } else { 0.5 };
            self.cwnd *= d;
            self.last_decrease = Some(now);
        } else {
            let acked: f64 = fb.received().map(|p| p.sent.size.as_f64()).sum();
            if self.cwnd > 0.0 { self.cwnd += self.mss() * acked / self.cwnd; }
        }
        self.recompute();
        self.output()
    }

    fn on_constraints(&mut self, _now: Time, c: Constraints) -> Update {
        self.constraints = c;
        self.recompute();
        self.output()
    }

    fn diagnostics(&self, out: &mut Diagnostics) {
        out.push(("cwnd_bytes", self.cwnd));
        out.push(("srtt_ms", self.srtt.unwrap_or(f64::NAN) * 1e3));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{PacketResult, SentPacket};
    use crate::units::{Bytes, Duration};

    /// `n` packets of 1200 B sent at `send_ms`, arriving 50 ms later, reported at `now_ms`
    /// (exact RTT `now_ms − send_ms`).
    fn fb(now_ms: i64, send_ms: i64, seq0: u64, n: u64, lost: &[u64]) -> TransportFeedback {
        let packets = (seq0..seq0 + n).map(|seq| {
            let send = Time::from_ms(send_ms);
            let sent = SentPacket { seq, size: Bytes::new(1200), send_time: send, probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO };
            PacketResult { sent, recv_time: (!lost.contains(&seq)).then(|| send + Duration::from_ms(50)) }
        }).collect();
        // report time = arrival time: exact RTT = now − send
        let report = Time::from_ms(send_ms + 50);
        TransportFeedback { feedback_time: Time::from_ms(now_ms), report_time: Some(report), packets, ..Default::default() }
    }

    fn cons() -> Constraints { Constraints { min_rate: Bitrate::from_kbps(30), max_rate: Bitrate::from_kbps(10_000), start_rate: Bitrate::from_kbps(960) } }

    #[test]
    fn additive_increase_one_packet_per_rtt() {
        let mut c = Aimd::new(AimdConfig::default());
        assert_eq!(c.on_start(Time::ZERO, cons()).target_rate, Some(Bitrate::from_kbps(960)));
        // first RTT sample 100 ms: cwnd = 960 kbit/s · 0.1 s = 12 000 B, plus the one
        // acknowledged packet: + 1200·1200/12 000 = 120 → 12 120 B
        c.on_feedback(&fb(100, 0, 0, 1, &[]));
        let w0 = 12_120.0;
        assert!((c.cwnd_bytes() - w0).abs() < 1e-9, "{}", c.cwnd_bytes());
        // a window's worth (10 packets = 12 000 B) acknowledged: + 1200·12 000/w0 ≈ one packet
        let u = c.on_feedback(&fb(200, 100, 1, 10, &[]));
        let w1 = w0 + 1200.0 * 12_000.0 / w0;
        assert!((c.cwnd_bytes() - w1).abs() < 1e-9, "{}", c.cwnd_bytes());
        assert!((w1 - w0 - 1188.1).abs() < 0.1);
        // rate = cwnd / SRTT = w1 · 8 / 0.1 s
        assert_eq!(u.target_rate, Some(Bitrate::from_bps_f64(w1 * 80.0)));
        assert_eq!(u.pacing_rate, u.target_rate);
    }

    #[test]
    fn halves_once_per_loss_event() {
        let mut c = Aimd::new(AimdConfig::default());
        c.on_start(Time::ZERO, cons());
        c.on_feedback(&fb(100, 0, 0, 1, &[]));
        let w0 = c.cwnd_bytes();
        // loss of a packet sent at 100 ms: window halves, no increase in that feedback
        let u = c.on_feedback(&fb(200, 100, 1, 10, &[3]));
        assert!((c.cwnd_bytes() - w0 / 2.0).abs() < 1e-9);
        assert_eq!(u.target_rate, Some(Bitrate::from_bps_f64(w0 / 2.0 * 80.0)));
        // another loss of a packet sent before that decrease (t = 150 < 200): same event, no
        // second halving; the 4 acknowledged packets grow the window instead
        c.on_feedback(&fb(250, 150, 11, 5, &[12]));
        let w = w0 / 2.0 + 1200.0 * 4800.0 / (w0 / 2.0);
        assert!((c.cwnd_bytes() - w).abs() < 1e-9, "{}", c.cwnd_bytes());
        // a loss of a packet sent after the decrease: halves again
        c.on_feedback(&fb(400, 300, 16, 5, &[17]));
        assert!((c.cwnd_bytes() - w / 2.0).abs() < 1e-9);
    }

    #[test]
    fn window_stays_within_usable_rates() {
        let mut c = Aimd::new(AimdConfig::default());
        c.on_start(Time::ZERO, cons());
        c.on_feedback(&fb(100, 0, 0, 1, &[]));
        for k in 0..40 { c.on_feedback(&fb(200 + k * 100, 100 + k * 100, k as u64 * 10, 10, &[k as u64 * 10])); }
        assert!(c.rate().bps() >= 30_000);
        // 10 Mbit/s · 0.1 s = 125 000 B at most, however many ACKs
        for k in 0..2000 { c.on_feedback(&fb(5000 + k * 100, 4900 + k * 100, 1000 + k as u64 * 100, 100, &[])); }
        assert!(c.cwnd_bytes() <= 125_000.0 + 1e-6);
        assert_eq!(c.rate(), Bitrate::from_kbps(10_000));
    }
}
