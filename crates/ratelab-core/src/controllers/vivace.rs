//! `vivace` — PCC Vivace as in libwebrtc's `modules/congestion_controller/pcc` (spec 12), the
//! variant the Cross paper evaluated.
//!
//! Monitor intervals (MIs) are periods of send time at a fixed rate; an MI collects the
//! transport-feedback results of the packets sent inside it (strictly after its start, up to its
//! end) and is complete when a packet sent after its end is reported. Utility (spec 12.1, WebRTC's
//! "modified Vivace"): `u = a·x^t·x − b·x²·g − c·x²·L` with x the MI's rate in bit/s, g the
//! least-squares slope of one-way delay over send time (0 when `|g| < 0.01`, at least −0.1) and L
//! the lost share of the MI's bytes.
//!
//! State machine (spec 12.2): Startup (one 500 ms MI at the start rate, then the estimate is the
//! receive rate of the last 20 reported packets) → SlowStart (one MI at 1.5 × the estimate; the
//! estimate takes the MI's rate while utility improves, else → OnlineLearning) → OnlineLearning:
//! pairs of MIs at `r(1 ± ε)` with a random sign (±4 kbit/s below 80 kbit/s); gradient
//! `(u1 − u2)/(r1 − r2)`, step `amplifier × 5 × gradient` bounded by the dynamic boundary
//! `r·(0.1 + 0.1·k)`. DoubleCheck: when the pair's loss rates are ordered against their rates the
//! pair is repeated before deciding. Timeout: an MI whose feedback is not complete 2 × RTT after
//! its end halves the estimate (at most to the receive rate of the last 20 packets).
//!
//! Output: target, pacing and padding rate = the current MI's rate (the estimate between MI
//! sets), as libwebrtc's pacer config with equal data and padding windows. The estimate is kept
//! within the flow's rate constraints (libwebrtc leaves that to the application).

use super::pcc::monitor::MonitorInterval;
use crate::controller::BuildContext;
use crate::controller::{Constraints, Controller, Diagnostics, PacketResult, SentPacket, TransportFeedback, Update};
use crate::units::{Bitrate, Duration, Time};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum UtilityKind {
    /// WebRTC's `ModifiedVivaceUtilityFunction` (spec 12.1): every term multiplied by x.
    #[default]
    Modified,
    /// WebRTC's `VivaceUtilityFunction`: `a·x^t − b·x·g − c·x·L`.
    Vivace,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VivaceConfig {
    /// Sampling step ε of the MI pair (spec 12.2: 0.05).
    pub sampling_step: f64,
    /// Additive sampling step below the multiplicative threshold, kbit/s (spec 12.2: 4; the
    /// threshold is this / ε = 80 kbit/s).
    pub min_rate_change_kbps: f64,
    /// Startup MI length, ms (spec 12.2: 500).
    pub startup_ms: f64,
    /// Slow-start rate factor (spec 12.2: 1.5).
    pub slow_start_factor: f64,
    /// Minimum MI duration, ms (spec 12.2: 50).
    pub mi_min_ms: f64,
    /// MI duration ≥ this many smoothed packet intervals (spec 12.2: 20).
    pub mi_min_packets: f64,
    /// "Adaptive" MI length: also ≥ this × RTT. Unset: libwebrtc's default "fixed" strategy.
    pub mi_rtt_ratio: Option<f64>,
    /// MI feedback timeout in RTTs (spec 12.2: 2).
    pub timeout_rtts: f64,
    /// Conversion factor from utility gradient to rate step (spec 12.2: 5).
    pub conversion_factor: f64,
    /// Initial dynamic change boundary, fraction of the rate (spec 12.2: 0.1).
    pub initial_boundary: f64,
    /// Boundary increment per consecutive boundary hit (spec 12.2: 0.1).
    pub boundary_increment: f64,
    /// Throughput coefficient (spec 12.2: 0.001).
    pub throughput_coefficient: f64,
    /// Throughput exponent (spec 12.2: 0.9).
    pub throughput_power: f64,
    /// Delay-gradient coefficient (spec 12.2: 0.005).
    pub delay_gradient_coefficient: f64,
    /// Loss coefficient (spec 12.2: 10).
    pub loss_coefficient: f64,
    /// Delay gradients smaller than this in magnitude count as 0 (spec 12.2: 0.01).
    pub delay_gradient_threshold: f64,
    /// Delay gradient lower bound magnitude (spec 12.2: 0.1).
    pub delay_gradient_negative_bound: f64,
    /// Utility function: `modified` (WebRTC default) or `vivace`.
    pub utility: UtilityKind,
    /// Weight of a new RTT sample (spec 12.2: 0.9).
    pub rtt_alpha: f64,
    /// Initial RTT, ms (spec 12.2: 200).
    pub initial_rtt_ms: f64,
    /// Reported packets kept for the receive rate (spec 12.2: 20).
    pub packets_for_rate: usize,
    /// Send padding up to the MI rate (libwebrtc: padding window = data window).
    pub padding: bool,
}

impl Default for VivaceConfig {
    fn default() -> Self {
        VivaceConfig {
            sampling_step: 0.05, min_rate_change_kbps: 4.0, startup_ms: 500.0, slow_start_factor: 1.5,
            mi_min_ms: 50.0, mi_min_packets: 20.0, mi_rtt_ratio: None, timeout_rtts: 2.0,
            conversion_factor: 5.0, initial_boundary: 0.1, boundary_increment: 0.1,
            throughput_coefficient: 0.001, throughput_power: 0.9, delay_gradient_coefficient: 0.005,
            loss_coefficient: 10.0, delay_gradient_threshold: 0.01, delay_gradient_negative_bound: 0.1,
            utility: UtilityKind::Modified, rtt_alpha: 0.9, initial_rtt_ms: 200.0, packets_for_rate: 20, padding: true,
        }
    }
}

/// Utility of a completed MI (spec 12.1).
pub fn utility(mi: &MonitorInterval, cfg: &VivaceConfig) -> f64 {
    let x = mi.rate_bps;
    let l = mi.loss_rate();
    let g = mi.delay_gradient(cfg.delay_gradient_threshold).max(-cfg.delay_gradient_negative_bound.abs());
    let tp = cfg.throughput_coefficient * x.max(0.0).powf(cfg.throughput_power);
    match cfg.utility {
        UtilityKind::Modified => tp * x - cfg.delay_gradient_coefficient * x * x * g - cfg.loss_coefficient * x * x * l,
        UtilityKind::Vivace => tp - cfg.delay_gradient_coefficient * x * g - cfg.loss_coefficient * x * l,
    }
}

/// The online-learning rate controller (libwebrtc's `PccBitrateController`, spec 12.2).
#[derive(Clone, Debug, Default)]
pub struct RateLearner {
    /// Consecutive gradients of the same sign (signed count).
    pub step_adjustments: i64,
    /// Consecutive boundary hits in the same direction (signed count).
    pub boundary_adjustments: i64,
    pub previous_utility: Option<f64>,
}

impl RateLearner {
    /// Step size for a gradient: amplifier × conversion factor, amplifier `max(|n|, 1)` for
    /// `|n| ≤ 3`, else `2|n| − 3`.
    pub fn step_size(&mut self, gradient: f64, cfg: &VivaceConfig) -> f64 {
        self.step_adjustments = if gradient > 0.0 { (self.step_adjustments + 1).max(1) } else if gradient < 0.0 { (self.step_adjustments - 1).min(-1) } else { 0 };
        let n = self.step_adjustments.abs();
        let amplifier = if n <= 3 { n.max(1) } else { 2 * n - 3 };
        amplifier as f64 * cfg.conversion_factor
    }

    /// Limit a rate change to `rate·(boundary + k·increment)`, k the consecutive hits.
    pub fn dynamic_boundary(&mut self, change: f64, rate: f64, cfg: &VivaceConfig) -> f64 {
        let sign: i64 = if change > 0.0 { 1 } else { -1 };
        if self.boundary_adjustments * sign < 0 { self.boundary_adjustments = 0; }
        let bound = |k: i64| rate * (cfg.initial_boundary + k.abs() as f64 * cfg.boundary_increment);
        let mut b = bound(self.boundary_adjustments);
        if change.abs() > b {
            self.boundary_adjustments += sign;
            return b * sign as f64;
        }
        // a smaller boundary suffices: shrink it back
        while change.abs() <= b && self.boundary_adjustments * sign > 0 {
            self.boundary_adjustments -= sign;
            b = bound(self.boundary_adjustments);
        }
        self.boundary_adjustments += sign;
        change
    }

    /// New estimate from a completed MI pair.
    pub fn online_update(&mut self, a: &MonitorInterval, b: &MonitorInterval, estimate: f64, cfg: &VivaceConfig) -> f64 {
        let (ua, ub) = (utility(a, cfg), utility(b, cfg));
        let dr = a.rate_bps - b.rate_bps;
        let gradient = if dr != 0.0 { (ua - ub) / dr } else { 0.0 };
        let step = self.step_size(gradient, cfg);
        let change = self.dynamic_boundary(gradient * step, estimate, cfg);
        (estimate + change).max(0.0)
    }

    /// Slow start: the MI's rate if its utility beats the previous one, else `None`.
    pub fn slow_start_update(&mut self, mi: &MonitorInterval, cfg: &VivaceConfig) -> Option<f64> {
        let u = utility(mi, cfg);
        if self.previous_utility.is_some_and(|p| u <= p) { return None; }
        self.previous_utility = Some(u);
        Some(mi.rate_bps)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode { Startup, SlowStart, OnlineLearning, DoubleCheck }

pub struct Vivace {
    cfg: VivaceConfig,
    lo: f64,
    hi: f64,
    mode: Mode,
    estimate: f64,
    start_time: Option<Time>,
    last_sent: Option<Time>,
    /// Smoothed inter-packet send interval, seconds.
    send_interval: f64,
    rtt: f64,
    mi_timeout: Duration,
    mi_duration: Duration,
    mis: Vec<MonitorInterval>,
    rates: Vec<f64>,
    complete: usize,
    last_received: VecDeque<PacketResult>,
    learner: RateLearner,
    rng: ChaCha8Rng,
    last_output: Option<Bitrate>,
    updates: u64,
    timeouts: u64,
}

impl Vivace {
    pub fn new(cfg: VivaceConfig, cx: &BuildContext) -> Self {
        let rtt = cfg.initial_rtt_ms.max(1.0) / 1e3;
        Vivace {
            lo: 0.0, hi: f64::INFINITY, mode: Mode::Startup, estimate: 300e3, start_time: None, last_sent: None,
            send_interval: 0.0, rtt, mi_timeout: Duration::from_secs_f64(rtt * cfg.timeout_rtts.max(0.1)),
            mi_duration: Duration::ZERO, mis: Vec::new(), rates: Vec::new(), complete: 0, last_received: VecDeque::new(),
            learner: RateLearner::default(), rng: ChaCha8Rng::seed_from_u64(cx.seed ^ 0x5643_4956_4143_4500),
            last_output: None, updates: 0, timeouts: 0, cfg,
        }
    }

    pub fn mode(&self) -> Mode { self.mode }
    pub fn estimate(&self) -> Bitrate { Bitrate::from_bps_f64(self.estimate) }
    pub fn rtt(&self) -> Duration { Duration::from_secs_f64(self.rtt) }
    /// Completed rate decisions (slow start and online learning) and MI timeouts.
    pub fn counters(&self) -> (u64, u64) { (self.updates, self.timeouts) }
    /// Rates of the current MI set.
    pub fn mi_rates(&self) -> &[f64] { &self.rates }

    fn clamp(&self, r: f64) -> f64 { if r.is_finite() { r.clamp(self.lo, self.hi.max(self.lo)) } else { self.lo } }

    /// Receive rate over the last reported packets: bytes after the first / receive-time span.
    fn receive_rate(&self) -> Option<f64> {
        let first = self.last_received.front()?.recv_time?;
        let last = self.last_received.back()?.recv_time?;
        let span = (last - first).as_secs_f64();
        if span <= 0.0 { return None; }
        let bytes: f64 = self.last_received.iter().skip(1).map(|p| p.sent.size.as_f64()).sum();
        Some(bytes * 8.0 / span)
    }

    fn compute_mi_duration(&self) -> Duration {
        let mut d = self.send_interval * self.cfg.mi_min_packets.max(0.0);
        if let Some(k) = self.cfg.mi_rtt_ratio { d = d.max(self.rtt * k); }
        Duration::from_secs_f64(d).max(Duration::from_ms_f64(self.cfg.mi_min_ms.max(1.0)))
    }

    fn feedback_done(&self) -> bool { self.complete >= self.rates.len() }

    fn timeout_expired(&self, now: Time) -> bool {
        match self.mis.get(self.complete) {
            Some(mi) => now - mi.end() >= self.mi_timeout,
            None => false,
        }
    }

    fn need_double_check(&self) -> bool {
        if self.mode == Mode::SlowStart || self.mis.len() < 2 { return false; }
        let (a, b) = (&self.mis[0], &self.mis[1]);
        (a.rate_bps - b.rate_bps) * (a.loss_rate() - b.loss_rate()) < 0.0
    }

    fn update_rate_and_mode(&mut self) {
        if self.mis.is_empty() || !self.feedback_done() { return; }
        match self.mode {
            Mode::SlowStart => {
                let old = self.estimate;
                self.estimate = self.learner.slow_start_update(&self.mis[0], &self.cfg).unwrap_or(self.estimate);
                if self.estimate <= old { self.mode = Mode::OnlineLearning; }
                self.updates += 1;
            }
            Mode::OnlineLearning if self.mis.len() >= 2 => {
                self.estimate = self.learner.online_update(&self.mis[0], &self.mis[1], self.estimate, &self.cfg);
                self.updates += 1;
            }
            _ => {}
        }
        self.estimate = self.clamp(self.estimate);
    }

    fn new_mi_set(&mut self, now: Time) {
        self.mis.clear();
        self.mi_timeout = Duration::from_secs_f64(self.rtt * self.cfg.timeout_rtts.max(0.1));
        self.mi_duration = self.compute_mi_duration();
        self.complete = 0;
        if self.mode == Mode::SlowStart {
            let r = self.cfg.slow_start_factor * self.estimate;
            self.rates = vec![r];
            self.mis.push(MonitorInterval::new(r, now, self.mi_duration));
        } else {
            let sign = if self.rng.gen::<bool>() { 1.0 } else { -1.0 };
            let eps = self.cfg.sampling_step;
            let min_change = self.cfg.min_rate_change_kbps * 1e3;
            let threshold = if eps > 0.0 { min_change / eps } else { 0.0 };
            self.rates = if self.estimate >= threshold {
                vec![self.estimate * (1.0 + sign * eps), self.estimate * (1.0 - sign * eps)]
            } else {
                vec![(self.estimate + sign * min_change).max(0.0), (self.estimate - sign * min_change).max(0.0)]
            };
            self.mis.push(MonitorInterval::new(self.rates[0], now, self.mi_duration));
        }
    }

    /// The rate to send at now: the running MI's, or the estimate between MI sets.
    fn sending_rate(&self, now: Time) -> f64 {
        match self.mis.last() {
            Some(mi) if !(self.mis.len() >= self.rates.len() && now >= mi.end()) => mi.rate_bps,
            _ => self.estimate,
        }
    }

    fn output(&mut self, now: Time) -> Update {
        let r = Bitrate::from_bps_f64(self.clamp(self.sending_rate(now))).max(Bitrate::from_kbps(1));
        if self.last_output == Some(r) { return Update::default(); }
        self.last_output = Some(r);
        Update { target_rate: Some(r), pacing_rate: Some(r), padding_rate: Some(if self.cfg.padding { r } else { Bitrate::ZERO }), ..Update::default() }
    }
}

impl Controller for Vivace {
    fn on_start(&mut self, now: Time, c: Constraints) -> Update {
        self.lo = c.min_rate.bps_f64();
        self.hi = c.max_rate.bps_f64().max(self.lo);
        self.estimate = self.clamp(c.start_rate.bps_f64());
        self.last_output = None;
        self.output(now)
    }

    fn on_constraints(&mut self, now: Time, c: Constraints) -> Update {
        self.lo = c.min_rate.bps_f64();
        self.hi = c.max_rate.bps_f64().max(self.lo);
        self.estimate = self.clamp(self.estimate);
        self.last_output = None;
        self.output(now)
    }

    fn on_packet_sent(&mut self, sp: &SentPacket) -> Update {
        let t = sp.send_time;
        if self.start_time.is_none() {
            self.start_time = Some(t);
            self.mi_duration = Duration::from_ms_f64(self.cfg.startup_ms.max(1.0));
            self.rates = vec![self.estimate];
            self.mis = vec![MonitorInterval::new(self.estimate, t, self.mi_duration)];
            self.complete = 0;
        }
        if let Some(last) = self.last_sent {
            let a = self.cfg.rtt_alpha.clamp(0.0, 1.0);
            self.send_interval = a * (t - last).as_secs_f64().max(0.0) + (1.0 - a) * self.send_interval;
        }
        self.last_sent = Some(t);
        if let Some(last) = self.mis.last() {
            if t >= last.end() && self.rates.len() > self.mis.len() {
                let r = self.rates[self.mis.len()];
                self.mis.push(MonitorInterval::new(r, t, self.mi_duration));
            }
        }
        let timeout = self.timeout_expired(t);
        if timeout {
            self.timeouts += 1;
            let rr = self.receive_rate().unwrap_or(self.estimate);
            self.estimate = self.clamp((self.estimate * 0.5).min(rr));
            if self.mode == Mode::SlowStart { self.mode = Mode::OnlineLearning; }
        }
        let start = self.start_time.unwrap_or(t);
        if self.mode == Mode::Startup && t - start >= Duration::from_ms_f64(self.cfg.startup_ms.max(1.0)) {
            self.estimate = self.clamp(self.receive_rate().unwrap_or(self.estimate));
            self.mode = Mode::SlowStart;
            self.mi_duration = self.compute_mi_duration();
            self.rates = vec![self.estimate];
            self.mis = vec![MonitorInterval::new(self.estimate, t, self.mi_duration)];
            self.estimate /= self.cfg.slow_start_factor.max(1.0);
            self.complete = 0;
            return self.output(t);
        }
        if self.mode != Mode::Startup && (self.feedback_done() || timeout) { self.new_mi_set(t); }
        self.output(t)
    }

    fn on_feedback(&mut self, fb: &TransportFeedback) -> Update {
        if fb.packets.is_empty() { return Update::default(); }
        let mut sample: Option<f64> = None;
        for p in fb.received() {
            self.last_received.push_back(*p);
            let s = (fb.feedback_time - p.sent.send_time).as_secs_f64();
            sample = Some(sample.map_or(s, |m: f64| m.max(s)));
        }
        while self.last_received.len() > self.cfg.packets_for_rate.max(2) { self.last_received.pop_front(); }
        if let Some(s) = sample {
            let a = self.cfg.rtt_alpha.clamp(0.0, 1.0);
            self.rtt = ((1.0 - a) * self.rtt + a * s).max(1e-4);
        }
        if self.mode == Mode::OnlineLearning && self.rates.len() < 2 { return Update::default(); }
        if !self.feedback_done() && !self.mis.is_empty() {
            while self.complete < self.mis.len() {
                self.mis[self.complete].on_packets(&fb.packets);
                if !self.mis[self.complete].is_done() { break; }
                self.complete += 1;
            }
        }
        if self.feedback_done() && self.mode != Mode::Startup {
            if self.mode == Mode::DoubleCheck { self.mode = Mode::OnlineLearning; } else if self.need_double_check() { self.mode = Mode::DoubleCheck; }
            if self.mode != Mode::DoubleCheck { self.update_rate_and_mode(); }
        }
        Update::default()
    }

    fn on_tick(&mut self, now: Time) -> Update { self.output(now) }

    fn diagnostics(&self, out: &mut Diagnostics) {
        out.push(("vivace_estimate_kbps", self.estimate / 1e3));
        out.push(("vivace_mode", match self.mode { Mode::Startup => 0.0, Mode::SlowStart => 1.0, Mode::OnlineLearning => 2.0, Mode::DoubleCheck => 3.0 }));
        out.push(("vivace_rtt_ms", self.rtt * 1e3));
        out.push(("vivace_mi_ms", self.mi_duration.as_ms_f64()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Bytes;

    fn sp(seq: u64, t_ms: f64) -> SentPacket {
        SentPacket { seq, size: Bytes::new(1000), send_time: Time::from_secs_f64(t_ms / 1e3), probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO }
    }
    fn got(seq: u64, t_ms: f64, owd_ms: f64) -> PacketResult { PacketResult { sent: sp(seq, t_ms), recv_time: Some(Time::from_secs_f64((t_ms + owd_ms) / 1e3)) } }
    fn lost(seq: u64, t_ms: f64) -> PacketResult { PacketResult { sent: sp(seq, t_ms), recv_time: None } }

    /// MI 1: 1.05 Mbit/s over [1000, 1100] ms, OWD growing 0.02 ms per ms (gradient 0.02), no loss.
    /// MI 2: 0.95 Mbit/s over [1100, 1200] ms, flat OWD, one of ten packets lost (L = 0.1).
    fn hand_mis() -> (MonitorInterval, MonitorInterval) {
        let mut a = MonitorInterval::new(1.05e6, Time::from_ms(1000), Duration::from_ms(100));
        let mut b = MonitorInterval::new(0.95e6, Time::from_ms(1100), Duration::from_ms(100));
        let mut pk: Vec<_> = (1..=9).map(|i| got(i, 1000.0 + 10.0 * i as f64, 50.0 + 0.02 * 10.0 * i as f64)).collect();
        pk.push(got(10, 1101.0, 50.0));
        a.on_packets(&pk);
        let mut pk: Vec<_> = (1..=9).map(|i| got(10 + i, 1100.0 + 10.0 * i as f64, 50.0)).collect();
        pk.push(lost(20, 1195.0));
        pk.push(got(21, 1201.0, 50.0));
        b.on_packets(&pk);
        (a, b)
    }

    #[test]
    fn monitor_interval_statistics_hand_computed() {
        let (a, b) = hand_mis();
        assert!(a.is_done() && b.is_done());
        assert!((a.delay_gradient(0.01) - 0.02).abs() < 1e-12);
        assert_eq!(a.loss_rate(), 0.0);
        assert_eq!(b.delay_gradient(0.01), 0.0);
        assert!((b.loss_rate() - 0.1).abs() < 1e-12);
        // below the 0.01 threshold a gradient counts as 0
        let mut c = MonitorInterval::new(1e6, Time::from_ms(0), Duration::from_ms(100));
        c.on_packets(&(1..=5).map(|i| got(i, 10.0 * i as f64, 50.0 + 0.005 * 10.0 * i as f64)).collect::<Vec<_>>());
        assert_eq!(c.delay_gradient(0.01), 0.0);
        assert!((c.delay_gradient(0.001) - 0.005).abs() < 1e-12);
        assert!(!c.is_done());
    }

    #[test]
    fn utility_and_gradient_hand_computed() {
        let cfg = VivaceConfig::default();
        let (a, b) = hand_mis();
        // u1 = 0.001·(1.05e6)^0.9·1.05e6 − 0.005·(1.05e6)²·0.02 = 275 587 597.17 − 110 250 000
        let u1 = utility(&a, &cfg);
        assert!((u1 - 165_337_597.17).abs() < 0.1, "{u1}");
        // u2 = 0.001·(0.95e6)^0.9·0.95e6 − 10·(0.95e6)²·0.1 = 227 863 545.21 − 9.025e11
        let u2 = utility(&b, &cfg);
        assert!((u2 - (-902_272_136_454.79)).abs() < 0.1, "{u2}");
        // gradient = (u1 − u2)/(1.05e6 − 0.95e6) = 9 024 374.74; first positive gradient: step 5
        // → Δr = 45.1 Mbit/s, bounded at 10 % of the 1 Mbit/s estimate: 1.1 Mbit/s
        let mut l = RateLearner::default();
        let r = l.online_update(&a, &b, 1e6, &cfg);
        assert!((r - 1.1e6).abs() < 1e-6, "{r}");
        assert_eq!((l.step_adjustments, l.boundary_adjustments), (1, 1));
        // without the loss the latency penalty dominates: (u1 − 227 863 545.21)/1e5 = −625.26;
        // Δr = −3 126.3 bit/s (inside the boundary)
        let mut b2 = b.clone();
        b2.lost_bytes = 0.0;
        let g = (utility(&a, &cfg) - utility(&b2, &cfg)) / 1e5;
        assert!((g - (-625.259_48)).abs() < 1e-4, "{g}");
        let r = RateLearner::default().online_update(&a, &b2, 1e6, &cfg);
        assert!((r - (1e6 - 3_126.297_4)).abs() < 1e-3, "{r}");
        // the original Vivace form: 0.001·x^0.9 − 0.005·x·g − 10·x·L = 262.464 − 105
        let v = VivaceConfig { utility: UtilityKind::Vivace, ..cfg };
        assert!((utility(&a, &v) - 157.464_378).abs() < 1e-5, "{}", utility(&a, &v));
    }

    #[test]
    fn step_amplifier_and_dynamic_boundary() {
        let cfg = VivaceConfig::default();
        let mut l = RateLearner::default();
        let steps: Vec<f64> = [1.0, 1.0, 1.0, 1.0, 1.0, -1.0, 0.0].iter().map(|&g| l.step_size(g, &cfg)).collect();
        // amplifiers 1, 2, 3, 5, 7 (2n − 3), then reset by the sign change, then 0 → 1
        assert_eq!(steps, vec![5.0, 10.0, 15.0, 25.0, 35.0, 5.0, 5.0]);
        let mut l = RateLearner::default();
        // three large increases: bounded at 10 %, 20 %, 30 % of 1 Mbit/s
        assert_eq!(l.dynamic_boundary(1e6, 1e6, &cfg), 1e5);
        assert_eq!(l.dynamic_boundary(1e6, 1e6, &cfg), 2e5);
        assert!((l.dynamic_boundary(1e6, 1e6, &cfg) - 3e5).abs() < 1e-6);
        assert_eq!(l.boundary_adjustments, 3);
        // a small change passes and shrinks the boundary back to the smallest that allows it
        assert_eq!(l.dynamic_boundary(5e4, 1e6, &cfg), 5e4);
        assert_eq!(l.boundary_adjustments, 1);
        // a change of direction resets the count
        assert_eq!(l.dynamic_boundary(-1e6, 1e6, &cfg), -1e5);
        assert_eq!(l.boundary_adjustments, -1);
    }

    /// A fluid bottleneck of `cap` bit/s with 40 ms base delay driven by the controller's rate;
    /// feedback every 50 ms (20 ms return delay).
    fn run_fluid(v: &mut Vivace, cap: f64, secs: f64) -> Vec<(f64, Mode, f64)> {
        let mut now = Time::from_ms(1000);
        let mut rate = v.on_start(now, Constraints { min_rate: Bitrate::from_kbps(50), max_rate: Bitrate::from_kbps(10_000), start_rate: Bitrate::from_kbps(300) }).pacing_rate.unwrap().bps_f64();
        let (mut seq, mut link_free) = (0u64, now);
        let mut pending: Vec<PacketResult> = Vec::new();
        let mut next_fb = now + Duration::from_ms(50);
        let mut trace = Vec::new();
        let end = now + Duration::from_secs_f64(secs);
        while now < end {
            let s = SentPacket { seq, size: Bytes::new(1000), send_time: now, probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO };
            seq += 1;
            if let Some(r) = v.on_packet_sent(&s).pacing_rate { rate = r.bps_f64(); }
            let start = link_free.max(now);
            link_free = start + Duration::from_secs_f64(8000.0 / cap);
            pending.push(PacketResult { sent: s, recv_time: Some(link_free + Duration::from_ms(40)) });
            now += Duration::from_secs_f64(8000.0 / rate.max(1e4));
            while next_fb <= now {
                let report = next_fb;
                let (ready, rest): (Vec<_>, Vec<_>) = pending.iter().partition(|p| p.recv_time.unwrap() <= report);
                pending = rest;
                if !ready.is_empty() {
                    let fb = TransportFeedback { feedback_time: report + Duration::from_ms(20), report_time: Some(report), packets: ready, ..Default::default() };
                    v.on_feedback(&fb);
                }
                if let Some(r) = v.on_tick(report).pacing_rate { rate = r.bps_f64(); }
                next_fb += Duration::from_ms(50);
                trace.push(((report - Time::from_ms(1000)).as_secs_f64(), v.mode(), v.estimate().bps_f64()));
            }
        }
        trace
    }

    #[test]
    fn state_machine_runs_startup_slow_start_then_learns_near_capacity() {
        let mut v = Vivace::new(VivaceConfig::default(), &BuildContext::new(7));
        let tr = run_fluid(&mut v, 2e6, 40.0);
        let first = |m: Mode| tr.iter().find(|x| x.1 == m).map(|x| x.0);
        assert_eq!(tr[0].1, Mode::Startup);
        let ss = first(Mode::SlowStart).expect("slow start");
        assert!((0.45..0.7).contains(&ss), "startup lasts 500 ms: {ss}");
        let ol = first(Mode::OnlineLearning).expect("online learning");
        assert!(ol > ss);
        // slow start grows by 1.5× per MI: at online-learning entry the estimate is above 1 Mbit/s
        let at_ol = tr.iter().find(|x| x.1 == Mode::OnlineLearning).unwrap().2;
        assert!(at_ol > 1e6, "{at_ol}");
        // online learning keeps the mean estimate of the last 20 s near the 2 Mbit/s capacity
        let late: Vec<f64> = tr.iter().filter(|x| x.0 > 20.0).map(|x| x.2).collect();
        let mean = late.iter().sum::<f64>() / late.len() as f64;
        assert!(mean > 1.5e6 && mean < 2.4e6, "mean estimate {mean}");
        let (updates, _) = v.counters();
        assert!(updates > 20, "{updates}");
    }

    #[test]
    fn mi_feedback_timeout_halves_the_estimate() {
        let mut v = Vivace::new(VivaceConfig::default(), &BuildContext::new(1));
        v.on_start(Time::from_ms(0), Constraints { min_rate: Bitrate::from_kbps(50), max_rate: Bitrate::from_kbps(10_000), start_rate: Bitrate::from_kbps(1000) });
        // send for 3 s with no feedback at all: the startup MI times out (2 × 200 ms after its end)
        let mut t = 0.0;
        let mut seq = 0;
        while t < 3000.0 {
            v.on_packet_sent(&sp(seq, t));
            seq += 1;
            t += 8.0;
        }
        assert!(v.counters().1 >= 1);
        assert!(v.estimate().bps_f64() < 1e6 * 0.5 + 1.0, "{:?}", v.estimate());
    }

    #[test]
    fn mi_pairs_are_symmetric_around_the_estimate() {
        let mut v = Vivace::new(VivaceConfig::default(), &BuildContext::new(3));
        v.on_start(Time::from_ms(0), Constraints { min_rate: Bitrate::from_kbps(10), max_rate: Bitrate::from_kbps(10_000), start_rate: Bitrate::from_kbps(1000) });
        v.mode = Mode::OnlineLearning;
        v.estimate = 1e6;
        v.new_mi_set(Time::from_ms(0));
        let r = v.mi_rates().to_vec();
        assert_eq!(r.len(), 2);
        assert!((r[0] + r[1] - 2e6).abs() < 1e-6 && (r[0] - r[1]).abs() - 1e5 < 1e-6);
        // below 80 kbit/s: ±4 kbit/s
        v.estimate = 60e3;
        v.new_mi_set(Time::from_ms(0));
        let r = v.mi_rates().to_vec();
        assert!((r[0] - r[1]).abs() - 8e3 < 1e-6 && (r[0] + r[1] - 120e3).abs() < 1e-6);
    }
}
