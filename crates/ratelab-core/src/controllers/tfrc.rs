//! TFRC — TCP-friendly rate control, RFC 5348 (the DCRC paper's equation-based baseline,
//! paper 003 IV-A; docs/controllers/tfrc.md).
//!
//! Sender-side implementation over the lab's transport feedback (the receiver's job of RFC
//! 5348 §6 — loss events, loss intervals, receive rate — is done from the per-packet reports):
//!
//! * throughput equation (§3.1) `X = s / (R·√(2bp/3) + t_RTO·3·√(3bp/8)·p·(1 + 32p²))`,
//!   `b = 1`, `t_RTO = 4R` (§4.3);
//! * loss event rate by the weighted average loss interval method (§5.4: 8 intervals, weights
//!   1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2); a lost packet starts a new loss event if it was sent more
//!   than one RTT after the first lost packet of the current event (§5.2, with send times in
//!   place of the receiver's interpolated arrival times); the first interval is synthesized from
//!   the receive rate by inverting the equation (§6.3.1);
//! * RTT EWMA `R = q·R + (1 − q)·R_sample`, `q = 0.9` (§4.3); `R_sample` is the exact RTT of
//!   the newest packet when the report time is known (§4.3's `t_now − t_recvdata − t_delay`),
//!   else the propagation RTT of spec 1.3;
//! * rate (§4.3 step 4): with `p > 0`, `X = max(min(X_eq, 2·X_recv), s/t_mbi)`; before the
//!   first loss, slow start doubles once per RTT, `X = max(min(2X, 2·X_recv), W_init/R)`;
//! * no-feedback timer (§4.4): after `max(4R, 2s/X)` without feedback, `X` and `X_recv` halve.

use super::common::{feedback_rtt, RateMeter};
use crate::controller::{Constraints, Controller, Diagnostics, SentPacket, TransportFeedback, Update};
use crate::units::{Bitrate, Duration, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Loss interval weights (RFC 5348 §5.4, n = 8).
pub const WEIGHTS: [f64; 8] = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TfrcConfig {
    /// Packets acknowledged by one TCP ACK in the equation (RFC 5348 §3.1: 1).
    pub b: f64,
    /// RTT filter weight q in R = q·R + (1 − q)·R_sample (RFC 5348 §4.3: 0.9).
    pub rtt_filter: f64,
    /// t_RTO = rto_factor · R (RFC 5348 §4.3: 4).
    pub rto_factor: f64,
    /// Maximum back-off interval t_mbi in seconds: the rate never drops below s/t_mbi
    /// (RFC 5348 §4.3: 64).
    pub t_mbi_s: f64,
    /// Segment size s in bytes for the equation. Unset: running mean of the sent media packets'
    /// sizes (RFC 5348 §4.1: s is the mean packet size).
    pub segment_bytes: Option<f64>,
    /// Pacing rate / target rate (TFRC sends at X).
    pub pacing_factor: f64,
}

impl Default for TfrcConfig {
    fn default() -> Self { TfrcConfig { b: 1.0, rtt_filter: 0.9, rto_factor: 4.0, t_mbi_s: 64.0, segment_bytes: None, pacing_factor: 1.0 } }
}

/// TCP throughput equation (RFC 5348 §3.1) in bytes/s; `s` bytes, `r` and `t_rto` seconds.
/// Infinite for `p = 0`.
pub fn tcp_throughput(s: f64, r: f64, p: f64, b: f64, t_rto: f64) -> f64 {
    if p <= 0.0 { return f64::INFINITY; }
    let den = r * (2.0 * b * p / 3.0).sqrt() + t_rto * (3.0 * (3.0 * b * p / 8.0).sqrt()) * p * (1.0 + 32.0 * p * p);
    if den > 0.0 { s / den } else { f64::INFINITY }
}

/// The loss event rate `p` for which [`tcp_throughput`] equals `x` (bytes/s), by bisection on
/// `log p` in [1e-10, 1] (the equation falls monotonically in `p`). RFC 5348 §6.3.1.
pub fn invert_throughput(x: f64, s: f64, r: f64, b: f64, t_rto: f64) -> f64 {
    let (mut lo, mut hi) = (1e-10f64.ln(), 0.0f64);
    if !(x.is_finite() && x > 0.0) { return 1.0; }
    if tcp_throughput(s, r, lo.exp(), b, t_rto) <= x { return lo.exp(); }
    if tcp_throughput(s, r, 1.0, b, t_rto) >= x { return 1.0; }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if tcp_throughput(s, r, mid.exp(), b, t_rto) > x { lo = mid; } else { hi = mid; }
    }
    (0.5 * (lo + hi)).exp()
}

/// Weighted average loss interval (RFC 5348 §5.4): `open` is I_0 (packets since the start of
/// the newest loss event), `closed` = I_1, I_2, … newest first (at most 8 are used).
pub fn mean_loss_interval(open: f64, closed: &[f64]) -> Option<f64> {
    let k = closed.len().min(WEIGHTS.len());
    if k == 0 { return None; }
    let at = |i: usize| if i == 0 { open } else { closed[i - 1] };
    let (mut tot0, mut tot1, mut wtot) = (0.0, 0.0, 0.0);
    for (i, w) in WEIGHTS.iter().enumerate().take(k) {
        tot0 += at(i) * w;
        wtot += w;
    }
    for i in 1..=k { tot1 += at(i) * WEIGHTS[i - 1]; }
    Some(tot0.max(tot1) / wtot)
}

/// Loss events and intervals from the sender's view of the reports.
#[derive(Clone, Debug, Default)]
pub struct LossHistory {
    /// Closed intervals I_1, I_2, … (newest first).
    closed: VecDeque<f64>,
    /// First packet of the newest loss event: (sequence number, send time).
    event_start: Option<(u64, Time)>,
    highest_seq: Option<u64>,
}

impl LossHistory {
    /// A packet was reported (lost or received). `first_interval` gives the synthetic first
    /// interval when this is the first loss event. Returns true if a new loss event started.
    pub fn on_packet(&mut self, seq: u64, send: Time, lost: bool, rtt: Duration, first_interval: impl FnOnce() -> f64) -> bool {
        self.highest_seq = Some(self.highest_seq.map_or(seq, |h| h.max(seq)));
        if !lost { return false; }
        match self.event_start {
            Some((_, t0)) if send <= t0 + rtt => false,
            Some((s0, _)) => {
                self.closed.push_front(seq.saturating_sub(s0) as f64);
                self.closed.truncate(WEIGHTS.len());
                self.event_start = Some((seq, send));
                true
            }
            None => {
                self.closed.push_front(first_interval().max(1.0));
                self.event_start = Some((seq, send));
                true
            }
        }
    }

    /// Loss event rate p (0 before the first loss event).
    pub fn loss_event_rate(&self) -> f64 {
        let (Some((s0, _)), Some(h)) = (self.event_start, self.highest_seq) else { return 0.0 };
        let open = (h.saturating_sub(s0) + 1) as f64;
        let closed: Vec<f64> = self.closed.iter().copied().collect();
        mean_loss_interval(open, &closed).map_or(0.0, |m| if m > 0.0 { (1.0 / m).min(1.0) } else { 1.0 })
    }

    pub fn intervals(&self) -> impl Iterator<Item = &f64> { self.closed.iter() }
}

pub struct Tfrc {
    cfg: TfrcConfig,
    constraints: Constraints,
    /// Allowed sending rate X in bytes/s.
    x: f64,
    s: Option<f64>,
    r: Option<f64>,
    tld: Time,
    recv: RateMeter,
    x_recv: Option<f64>,
    loss: LossHistory,
    p: f64,
    /// Slow start has begun (the first feedback set the initial rate).
    started: bool,
    nofeedback_at: Time,
}

impl Tfrc {
    pub fn new(cfg: TfrcConfig) -> Self {
        Tfrc {
            cfg, constraints: Constraints::default(), x: 0.0, s: None, r: None, tld: Time::ZERO,
            recv: RateMeter::new(Duration::from_ms(100)), x_recv: None, loss: LossHistory::default(), p: 0.0, started: false, nofeedback_at: Time::MAX,
        }
    }

    fn seg(&self) -> f64 {
        match self.cfg.segment_bytes { Some(s) if s.is_finite() && s > 0.0 => s, _ => self.s.unwrap_or(1200.0) }
    }
    fn b(&self) -> f64 { if self.cfg.b.is_finite() && self.cfg.b > 0.0 { self.cfg.b } else { 1.0 } }
    fn rto_factor(&self) -> f64 { if self.cfg.rto_factor.is_finite() && self.cfg.rto_factor > 0.0 { self.cfg.rto_factor } else { 4.0 } }
    fn t_mbi(&self) -> f64 { if self.cfg.t_mbi_s.is_finite() && self.cfg.t_mbi_s > 0.0 { self.cfg.t_mbi_s } else { 64.0 } }
    /// W_init / R (RFC 5348 §4.2): W_init = min(4s, max(2s, 4380)).
    fn initial_rate(&self, r: f64) -> f64 { let s = self.seg(); (4.0 * s).min((2.0 * s).max(4380.0)) / r }

    pub fn loss_event_rate(&self) -> f64 { self.p }
    pub fn rtt(&self) -> Option<f64> { self.r }

    fn output(&self) -> Update {
        let lo = self.constraints.min_rate.bps_f64();
        let hi = self.constraints.max_rate.bps_f64().max(lo);
        let bps = if self.x.is_finite() { (self.x * 8.0).clamp(lo, hi) } else { hi };
        let pf = if self.cfg.pacing_factor.is_finite() { self.cfg.pacing_factor.max(1.0) } else { 1.0 };
        Update::rates(Bitrate::from_bps_f64(bps), pf)
    }

    /// Keep X within what the sender can use (the constraints), so that doubling starts from
    /// the rate actually sent.
    fn bound_x(&mut self) {
        let hi = self.constraints.max_rate.bps_f64().max(self.constraints.min_rate.bps_f64()) / 8.0;
        if !self.x.is_finite() || self.x > hi { self.x = hi; }
        if self.x < 0.0 { self.x = 0.0; }
    }

    fn arm_nofeedback(&mut self, now: Time) {
        let x = self.x.max(1.0);
        let t = match self.r { Some(r) => (self.rto_factor() * r).max(2.0 * self.seg() / x), None => 2.0 };
        self.nofeedback_at = now + Duration::from_secs_f64(t.min(3600.0));
    }
}

impl Controller for Tfrc {
    fn on_start(&mut self, now: Time, c: Constraints) -> Update {
        self.constraints = c;
        // RFC 5348 §4.2: one packet per second until the first feedback; the video sender
        // cannot go below its minimum rate, which the output clamp applies.
        self.x = self.seg();
        self.arm_nofeedback(now);
        self.output()
    }

    fn on_packet_sent(&mut self, p: &SentPacket) -> Update {
        if !p.is_padding {
            let sz = p.size.as_f64();
            self.s = Some(self.s.map_or(sz, |s| 0.9 * s + 0.1 * sz));
        }
        Update::default()
    }

    fn on_feedback(&mut self, fb: &TransportFeedback) -> Update {
        let now = fb.feedback_time;
        if let Some(rtt) = feedback_rtt(fb) {
            let sample = rtt.exact.unwrap_or(rtt.propagation).as_secs_f64().max(1e-4);
            let q = self.cfg.rtt_filter.clamp(0.0, 1.0);
            self.r = Some(self.r.map_or(sample, |r| q * r + (1.0 - q) * sample));
        }
        let Some(r) = self.r else { return Update::default() };
        // receive rate over the last RTT (RFC 5348 §6.2), from arrival times
        self.recv.set_window(Duration::from_secs_f64(r.max(0.05)));
        let arrivals = fb.received_by_arrival();
        for p in &arrivals { if let Some(t) = p.recv_time { self.recv.add(t, p.sent.size); } }
        if let Some(last) = arrivals.last().and_then(|p| p.recv_time) {
            self.x_recv = Some(self.recv.rate(last).bps_f64() / 8.0);
        }
        // loss events
        let rtt = Duration::from_secs_f64(r);
        let (s, b, rto) = (self.seg(), self.b(), self.rto_factor() * r);
        let x_first = self.x_recv.unwrap_or(self.x).max(s / self.t_mbi());
        for p in &fb.packets {
            self.loss.on_packet(p.sent.seq, p.sent.send_time, !p.received(), rtt, || 1.0 / invert_throughput(x_first, s, r, b, rto));
        }
        let first_feedback = !self.started;
        self.started = true;
        self.p = self.loss.loss_event_rate();
        let recv_limit = self.x_recv.map_or(f64::INFINITY, |x| 2.0 * x);
        if self.p > 0.0 {
            let x_eq = tcp_throughput(s, r, self.p, b, rto);
            self.x = x_eq.min(recv_limit).max(s / self.t_mbi());
        } else if first_feedback {
            self.x = self.initial_rate(r);
            self.tld = now;
        } else if now - self.tld >= rtt {
            self.x = (2.0 * self.x).min(recv_limit).max(self.initial_rate(r));
            self.tld = now;
        }
        self.bound_x();
        self.arm_nofeedback(now);
        self.output()
    }

    fn on_tick(&mut self, now: Time) -> Update {
        if now < self.nofeedback_at { return Update::default(); }
        // RFC 5348 §4.4 (simplified): halve the allowed rate and the receive-rate limit.
        self.x = (self.x / 2.0).max(self.seg() / self.t_mbi());
        if let Some(xr) = self.x_recv.as_mut() { *xr /= 2.0; }
        self.arm_nofeedback(now);
        self.output()
    }

    fn on_constraints(&mut self, _now: Time, c: Constraints) -> Update {
        self.constraints = c;
        self.bound_x();
        self.output()
    }

    fn diagnostics(&self, out: &mut Diagnostics) {
        out.push(("loss_event_rate", self.p));
        out.push(("rtt_ms", self.r.unwrap_or(f64::NAN) * 1e3));
        out.push(("x_recv_kbps", self.x_recv.unwrap_or(f64::NAN) * 8e-3));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::PacketResult;
    use crate::units::Bytes;

    #[test]
    fn equation_by_hand() {
        // s = 1460 B, R = 0.1 s, p = 0.01, b = 1, t_RTO = 0.4 s:
        // R·√(2p/3) = 0.1·0.0816497 = 0.00816497
        // t_RTO·3·√(3p/8)·p·(1 + 32p²) = 0.4·3·0.0612372·0.01·1.0032 = 0.00073720
        // X = 1460 / 0.00890217 = 164 005 B/s (1.312 Mbit/s)
        let x = tcp_throughput(1460.0, 0.1, 0.01, 1.0, 0.4);
        assert!((x - 164_005.0).abs() < 1.0, "{x}");
        // p = 0.1: 0.1·0.258199 + 0.4·3·0.193649·0.1·1.32 = 0.0258199 + 0.0306740 = 0.0564939 → 25 843 B/s
        let x = tcp_throughput(1460.0, 0.1, 0.1, 1.0, 0.4);
        assert!((x - 25_843.5).abs() < 1.0, "{x}");
        assert!(tcp_throughput(1460.0, 0.1, 0.0, 1.0, 0.4).is_infinite());
        // doubling R (and t_RTO = 4R) halves X
        assert!((tcp_throughput(1460.0, 0.2, 0.01, 1.0, 0.8) * 2.0 - 164_005.0).abs() < 2.0);
    }

    #[test]
    fn inversion_round_trips() {
        for p in [1e-5, 1e-3, 0.01, 0.2] {
            let x = tcp_throughput(1200.0, 0.08, p, 1.0, 0.32);
            let q = invert_throughput(x, 1200.0, 0.08, 1.0, 0.32);
            assert!((q / p - 1.0).abs() < 1e-9, "{p} {q}");
        }
    }

    #[test]
    fn weighted_average_loss_interval_by_hand() {
        // I_0 = 10 (open), I_1..I_8 = 100, 100, 100, 100, 50, 50, 50, 50
        // I_tot0 = 10 + 100 + 100 + 100 + 0.8·100 + 0.6·50 + 0.4·50 + 0.2·50 = 450
        // I_tot1 = 100·4 + 0.8·50 + 0.6·50 + 0.4·50 + 0.2·50 = 500;  W_tot = 6
        let closed = [100.0, 100.0, 100.0, 100.0, 50.0, 50.0, 50.0, 50.0];
        let m = mean_loss_interval(10.0, &closed).unwrap();
        assert!((m - 500.0 / 6.0).abs() < 1e-12, "{m}");
        // a long open interval counts: I_0 = 1000 → I_tot0 = 1440, mean = 240
        assert!((mean_loss_interval(1000.0, &closed).unwrap() - 240.0).abs() < 1e-12);
        // fewer than 8 intervals: k = 2, weights 1, 1
        assert!((mean_loss_interval(10.0, &[40.0, 20.0]).unwrap() - 30.0).abs() < 1e-12);
        assert_eq!(mean_loss_interval(10.0, &[]), None);
        // a ninth interval is ignored
        let mut nine = closed.to_vec();
        nine.push(1.0);
        assert_eq!(mean_loss_interval(10.0, &nine), mean_loss_interval(10.0, &closed));
    }

    #[test]
    fn loss_events_merge_within_one_rtt() {
        let mut h = LossHistory::default();
        let rtt = Duration::from_ms(100);
        let t = Time::from_ms;
        for seq in 0..10 { assert!(!h.on_packet(seq, t(seq as i64 * 10), false, rtt, || 50.0)); }
        assert_eq!(h.loss_event_rate(), 0.0);
        // first loss at seq 10: synthetic I_1 = 50; seq 12 (20 ms later) is the same event
        assert!(h.on_packet(10, t(100), true, rtt, || 50.0));
        assert!(!h.on_packet(12, t(120), true, rtt, || 50.0));
        for seq in 13..30 { h.on_packet(seq, t(seq as i64 * 10), false, rtt, || 0.0); }
        // I_0 = 29 − 10 + 1 = 20, I_1 = 50 → mean = max(20, 50) = 50 → p = 0.02
        assert!((h.loss_event_rate() - 0.02).abs() < 1e-12);
        // seq 30 sent 200 ms after the event start: new event, closed interval 30 − 10 = 20
        assert!(h.on_packet(30, t(300), true, rtt, || 0.0));
        assert_eq!(h.intervals().copied().collect::<Vec<_>>(), vec![20.0, 50.0]);
    }

    fn fb(now_ms: i64, seqs: std::ops::Range<u64>, lost: &[u64], rtt_ms: i64) -> TransportFeedback {
        let packets = seqs.map(|seq| {
            let send = Time::from_ms(now_ms - rtt_ms);
            let sent = SentPacket { seq, size: Bytes::new(1200), send_time: send, probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO };
            PacketResult { sent, recv_time: (!lost.contains(&seq)).then(|| send + Duration::from_ms(rtt_ms / 2)) }
        }).collect();
        TransportFeedback { feedback_time: Time::from_ms(now_ms), report_time: Some(Time::from_ms(now_ms - rtt_ms / 2)), packets, ..Default::default() }
    }

    #[test]
    fn slow_start_doubles_per_rtt_until_loss_then_follows_equation() {
        let mut c = Tfrc::new(TfrcConfig { segment_bytes: Some(1200.0), ..TfrcConfig::default() });
        let cons = Constraints { min_rate: Bitrate::from_kbps(10), max_rate: Bitrate::from_kbps(100_000), start_rate: Bitrate::from_kbps(300) };
        c.on_start(Time::ZERO, cons);
        // first feedback, R = 100 ms: X = W_init/R = min(4800, max(2400, 4380))/0.1 = 43 800 B/s
        let u = c.on_feedback(&fb(100, 0..5, &[], 100));
        assert_eq!(u.target_rate, Some(Bitrate::from_bps(350_400)));
        // 50 ms later: less than one RTT since tld, no doubling (X_recv is high enough)
        let mut seq = 5;
        let mut t = 150;
        let u = c.on_feedback(&fb(t, seq..seq + 40, &[], 100));
        assert_eq!(u.target_rate, Some(Bitrate::from_bps(350_400)));
        seq += 40;
        t += 50;
        let u = c.on_feedback(&fb(t, seq..seq + 40, &[], 100));
        assert_eq!(u.target_rate, Some(Bitrate::from_bps(700_800)));
        // a loss: synthetic first interval from X_recv, then X from the equation
        seq += 40;
        t += 50;
        c.on_feedback(&fb(t, seq..seq + 40, &[seq + 20], 100));
        let p = c.loss_event_rate();
        assert!(p > 0.0 && p < 0.05, "{p}");
        let x = tcp_throughput(1200.0, c.rtt().unwrap(), p, 1.0, 4.0 * c.rtt().unwrap());
        let expect = x.min(2.0 * c.x_recv.unwrap()) * 8.0;
        assert!((c.output().target_rate.unwrap().bps_f64() - expect).abs() <= 1.0);
    }

    #[test]
    fn nofeedback_timer_halves() {
        let mut c = Tfrc::new(TfrcConfig { segment_bytes: Some(1200.0), ..TfrcConfig::default() });
        let cons = Constraints { min_rate: Bitrate::from_kbps(10), max_rate: Bitrate::from_kbps(100_000), start_rate: Bitrate::from_kbps(300) };
        c.on_start(Time::ZERO, cons);
        c.on_feedback(&fb(100, 0..5, &[], 100));
        // timer = max(4R, 2s/X) = max(0.4, 2400/43800 = 0.055) = 400 ms
        assert!(c.on_tick(Time::from_ms(499)).is_empty());
        let u = c.on_tick(Time::from_ms(500));
        assert_eq!(u.target_rate, Some(Bitrate::from_bps(175_200)));
        assert!(c.on_tick(Time::from_ms(600)).is_empty());
        let u = c.on_tick(Time::from_ms(900));
        assert_eq!(u.target_rate, Some(Bitrate::from_bps(87_600)));
    }
}
