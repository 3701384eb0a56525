//! Iris — statistical-learning congestion control (paper 001, Dai, Zhang, Zhang, Guo; spec 4).
//!
//! Per epoch of ε ms the sender knows, for the latest epoch i whose packets are all reported:
//! its sending rate `x_i` (bytes sent / ε), mean RTT `rtt_i`, `Δrtt_i = rtt_i − rtt_{i−1}`
//! (Eq. 1) and the receiving rate `r_i = x_i·ε / (t_i − t_{i−1})` (Eq. 12), `t_i` being the ACK
//! time of the epoch's last packet. Then
//! * queue-load objective `U = x_i·(rtt_i − T) − B` in packets (Eq. 3),
//! * expected RTT change `d = −δ·tanh(U / M)` in ms (Eq. 6),
//! * next rate `x = r_i + d / k` (Eq. 7), where `k` is the slope of the linear model
//!   `Δrtt = k·(x − r) + b` (Eq. 2), fitted by least squares every 5 s (paper V-B).
//!
//! `T` is the minimum RTT of a window (`iris`) or its median (`iris-mid`, paper VI-B4).
//! Cold start (paper V-C): 100 kbit/s doubled every epoch until loss appears, then `k` is fitted
//! on the pairs collected so far. Constants: Table I (ε 50 ms, M 100, B 10, δ 3).
//!
//! Units (spec 4.5): rates in packets/s of `packet_bytes` inside U and the regression, RTTs in
//! ms for Δrtt, d and k (so k is in ms per packet/s), `rtt − T` in seconds inside U.
//!
//! Readings of the ambiguities of spec 4.6 (see `docs/controllers/iris.md`): statistics come
//! from the latest *complete* epoch and a decision is skipped when no epoch completed since the
//! last one; the T window is 10 s; regressions use the last 5 s of pairs and a fit is accepted
//! only with k > 0 and a t-statistic ≥ 2 — until one is, `k` is the queueing prior
//! `k₀ = 1000·ε/r` (an epoch at `x − r` above the drain rate r grows the queue by
//! `(x − r)·ε / r` seconds); cold start also ends when `rtt_i > T + 2δ`; `r_i` counts sent
//! packets; with batched (TWCC) feedback the per-packet ACK time is reconstructed as
//! `t_r + (t_f − report_time)` ([`AckTiming::Reconstructed`]) or taken as the feedback arrival
//! ([`AckTiming::FeedbackArrival`]).

use super::common::{EpochClock, EpochController, WindowedFilter};
use crate::controller::{Constraints, Diagnostics, SentPacket, TransportFeedback, Update};
use crate::error::ConfigError;
use crate::units::{Bitrate, Duration, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Target delay T (paper IV-A2 and VI-B4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetDelay {
    /// Minimum RTT in the window ("Iris-min", the paper's default).
    Min,
    /// Median RTT in the window ("Iris-mid").
    Median,
}

/// How the ACK time of a packet is read off a feedback (spec 4.6 ⚠ ACK granularity).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AckTiming {
    /// `t_r + (t_f − report_time)`: the time a per-packet ACK sent on arrival would have
    /// reached the sender (RFC 8888-style report time). Equals `t_f` with per-packet feedback.
    Reconstructed,
    /// The feedback's arrival time `t_f` for every packet it reports (naive, spec 1.3).
    FeedbackArrival,
}

/// Iris parameters.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IrisConfig {
    /// Epoch ε in ms (Table I: 50).
    pub epoch_ms: f64,
    /// Scaling multiplier M of tanh, packets (Table I: 100).
    pub tanh_scale: f64,
    /// Extra queue-load target B, packets (Table I: 10).
    pub queue_target: f64,
    /// RTT-variation bound δ, ms (Table I: 3).
    pub delta_ms: f64,
    /// `min` (Iris-min) or `median` (Iris-mid).
    pub target_delay: TargetDelay,
    /// Window of the RTT minimum / median, s (spec 4.6 ⚠: 10).
    pub target_window_s: f64,
    /// Period of the k regression, s (paper V-B: 5).
    pub k_refit_s: f64,
    /// Age of the pairs a regression uses, s (spec 4.6 ⚠: 5).
    pub regression_window_s: f64,
    /// A fitted k is accepted only if its t-statistic reaches this (spec 4.6 guard: 2).
    pub min_t_stat: f64,
    /// Cold-start rate, kbit/s (paper V-C: 100; the flow's min rate still applies).
    pub cold_start_kbps: f64,
    /// Cold-start multiplier per epoch (paper V-C: 2).
    pub cold_start_growth: f64,
    /// Cold start also ends when `rtt_i > T + this` (ms; spec 4.6: 2δ = 6; 0 disables).
    pub cold_start_exit_queue_ms: f64,
    /// Packet size that converts bit/s to packets/s for U and the regression (bytes).
    pub packet_bytes: f64,
    /// `reconstructed` (default) or `feedback-arrival`.
    pub ack_timing: AckTiming,
    /// Pacing rate / x (spec 4.7: Iris sends at x, so 1).
    pub pacing_factor: f64,
    /// Per-packet header bytes to remove before the encoder (IP + UDP + RTP + extensions).
    /// x is a wire rate; a sender whose encoder target is a payload rate needs the target
    /// `x · payload/wire` so that the encoder's output on the wire matches x. 0 (default) hands
    /// x over unchanged: the lab's sender already removes the overhead
    /// (`media.overhead_accounting`, on by default); set 40 when that is off.
    pub header_bytes: f64,
}

impl Default for IrisConfig {
    fn default() -> Self {
        IrisConfig {
            epoch_ms: 50.0,
            tanh_scale: 100.0,
            queue_target: 10.0,
            delta_ms: 3.0,
            target_delay: TargetDelay::Min,
            target_window_s: 10.0,
            k_refit_s: 5.0,
            regression_window_s: 5.0,
            min_t_stat: 2.0,
            cold_start_kbps: 100.0,
            cold_start_growth: 2.0,
            cold_start_exit_queue_ms: 6.0,
            packet_bytes: 1200.0,
            ack_timing: AckTiming::Reconstructed,
            pacing_factor: 1.0,
            header_bytes: 0.0,
        }
    }
}

impl IrisConfig {
    /// Iris-mid: the same with the median RTT as target delay.
    pub fn mid() -> Self { IrisConfig { target_delay: TargetDelay::Median, ..IrisConfig::default() } }

    pub fn validate(&self) -> Result<(), ConfigError> {
        fn check(ok: bool, field: &str, what: &str) -> Result<(), ConfigError> {
            if ok { Ok(()) } else { Err(ConfigError::new(field, what.to_string())) }
        }
        let pos = |v: f64| v.is_finite() && v > 0.0;
        check(self.epoch_ms.is_finite() && (1.0..=10_000.0).contains(&self.epoch_ms), "epoch_ms", "must be in [1, 10000]")?;
        check(pos(self.tanh_scale), "tanh_scale", "must be > 0")?;
        check(self.queue_target.is_finite() && self.queue_target >= 0.0, "queue_target", "must be ≥ 0")?;
        check(self.delta_ms.is_finite() && self.delta_ms >= 0.0, "delta_ms", "must be ≥ 0")?;
        check(pos(self.target_window_s), "target_window_s", "must be > 0")?;
        check(pos(self.k_refit_s), "k_refit_s", "must be > 0")?;
        check(pos(self.regression_window_s), "regression_window_s", "must be > 0")?;
        check(self.min_t_stat.is_finite() && self.min_t_stat >= 0.0, "min_t_stat", "must be ≥ 0")?;
        check(pos(self.cold_start_kbps), "cold_start_kbps", "must be > 0")?;
        check(self.cold_start_growth.is_finite() && self.cold_start_growth >= 1.0, "cold_start_growth", "must be ≥ 1")?;
        check(self.cold_start_exit_queue_ms.is_finite() && self.cold_start_exit_queue_ms >= 0.0, "cold_start_exit_queue_ms", "must be ≥ 0")?;
        check(self.packet_bytes.is_finite() && self.packet_bytes >= 1.0, "packet_bytes", "must be ≥ 1")?;
        check(self.pacing_factor.is_finite() && self.pacing_factor >= 1.0, "pacing_factor", "must be ≥ 1")?;
        check(self.header_bytes.is_finite() && self.header_bytes >= 0.0, "header_bytes", "must be ≥ 0")?;
        Ok(())
    }
}

/// Expected RTT change of the next epoch, ms (Eqs. 3 and 6): `−δ·tanh((x·(rtt − T) − B)/M)`
/// with `x` in packets/s and `rtt − T` in seconds.
pub fn expected_rtt_change(x_pps: f64, queuing_s: f64, b: f64, m: f64, delta_ms: f64) -> f64 {
    let u = x_pps * queuing_s - b;
    -delta_ms * (u / m).tanh()
}

/// Receiving rate of Eq. 12: `bytes` sent in the epoch over the time between the ACKs of the
/// last packets of the previous and this epoch; `None` if that time is not positive.
pub fn receive_rate(bytes: i64, prev_ack: Time, ack: Time) -> Option<Bitrate> {
    let dt = ack - prev_ack;
    (dt > Duration::ZERO).then(|| Bitrate::from_bps_f64(bytes as f64 * 8.0 / dt.as_secs_f64()))
}

/// Least-squares line `v = k·u + b` with the t-statistic of k.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LineFit {
    pub k: f64,
    pub b: f64,
    pub t_stat: f64,
    pub n: usize,
}

/// Ordinary least squares (= maximum likelihood with Gaussian b, paper III-C).
pub fn fit_line(points: impl IntoIterator<Item = (f64, f64)>) -> Option<LineFit> {
    let pts: Vec<(f64, f64)> = points.into_iter().filter(|(u, v)| u.is_finite() && v.is_finite()).collect();
    let n = pts.len();
    if n < 3 { return None; }
    let nf = n as f64;
    let mu = pts.iter().map(|p| p.0).sum::<f64>() / nf;
    let mv = pts.iter().map(|p| p.1).sum::<f64>() / nf;
    let suu: f64 = pts.iter().map(|p| (p.0 - mu) * (p.0 - mu)).sum();
    let suv: f64 = pts.iter().map(|p| (p.0 - mu) * (p.1 - mv)).sum();
    if !(suu > 0.0 && suu.is_finite()) { return None; }
    let k = suv / suu;
    let b = mv - k * mu;
    let sse: f64 = pts.iter().map(|p| { let e = p.1 - k * p.0 - b; e * e }).sum();
    let s2 = sse / (nf - 2.0);
    let se = (s2 / suu).sqrt();
    let t_stat = if se > 0.0 { k / se } else if k != 0.0 { f64::INFINITY.copysign(k) } else { 0.0 };
    (k.is_finite() && b.is_finite()).then_some(LineFit { k, b, t_stat, n })
}

/// Median of a slice (mean of the two middle values for even lengths).
pub fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() { return None; }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { 0.5 * (v[n / 2 - 1] + v[n / 2]) })
}

/// Packets of one send epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Epoch {
    bytes: i64,
    packets: u32,
    /// Packets reported so far (received or lost).
    reported: u32,
    lost: u32,
    rtt_sum_ms: f64,
    rtt_n: u32,
    /// ACK time of the epoch's last acknowledged packet.
    last_ack: Option<Time>,
}

/// Statistics of one complete epoch (or of several merged when their ACKs coincided).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EpochStat {
    /// When the statistics became available (feedback time).
    pub at: Time,
    /// Sending rate x_i, bit/s.
    pub x_bps: f64,
    /// Receiving rate r_i (Eq. 12), bit/s.
    pub r_bps: Option<f64>,
    /// Mean RTT of the epoch's packets, ms.
    pub rtt_ms: Option<f64>,
    /// Δrtt_i (Eq. 1), ms.
    pub drtt_ms: Option<f64>,
    /// Fraction of the epoch's packets reported lost.
    pub loss: f64,
}

const MAX_PENDING_EPOCHS: usize = 4096;
const MAX_SAMPLES: usize = 16_384;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode { ColdStart, Steady }

/// Where the k in use came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KSource { Prior, Fitted }

pub struct Iris {
    cfg: IrisConfig,
    constraints: Constraints,
    clock: EpochClock,
    pending: VecDeque<Epoch>,
    first: u64,
    prev_ack: Option<Time>,
    carry_bytes: i64,
    carry_epochs: u32,
    prev_rtt: Option<f64>,
    latest: Option<EpochStat>,
    last_r_bps: Option<f64>,
    new_stat: bool,
    /// Regression pairs `(time, x − r in packets/s, Δrtt ms)`.
    pairs: VecDeque<(Time, f64, f64)>,
    k: Option<f64>,
    last_fit: Option<Time>,
    last_fit_result: Option<LineFit>,
    min_rtt: WindowedFilter<Duration>,
    rtt_history: VecDeque<(Time, f64)>,
    mode: Mode,
    rate: Bitrate,
    last_feedback: Option<Time>,
    last_d_ms: f64,
    last_u: f64,
    /// Payload / wire bytes of the recently sent packets (EWMA by packet).
    payload_fraction: f64,
}

impl Iris {
    pub fn new(cfg: IrisConfig) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let epoch = Duration::from_ms_f64(cfg.epoch_ms);
        let win = Duration::from_secs_f64(cfg.target_window_s);
        Ok(Iris {
            cfg, constraints: Constraints::default(), clock: EpochClock::new(epoch),
            pending: VecDeque::new(), first: 0, prev_ack: None, carry_bytes: 0, carry_epochs: 0, prev_rtt: None,
            latest: None, last_r_bps: None, new_stat: false, pairs: VecDeque::new(), k: None, last_fit: None,
            last_fit_result: None, min_rtt: WindowedFilter::min(win), rtt_history: VecDeque::new(), mode: Mode::ColdStart,
            rate: Bitrate::from_kbps(100), last_feedback: None, last_d_ms: 0.0, last_u: 0.0, payload_fraction: 1.0,
        })
    }

    fn pps(&self, bps: f64) -> f64 { bps / (8.0 * self.cfg.packet_bytes) }
    fn bps(&self, pps: f64) -> f64 { pps * 8.0 * self.cfg.packet_bytes }

    fn index(&self, t: Time) -> u64 { ((t - self.clock.t0).as_us().max(0) / self.clock.epoch.as_us()) as u64 }

    fn clamp(&self, bps: f64) -> Bitrate {
        let bps = if bps.is_finite() { bps } else { self.rate.bps_f64() };
        Bitrate::from_bps_f64(bps).max(self.constraints.min_rate).min(self.constraints.max_rate)
    }

    /// The sending rate x in force (bit/s, wire).
    pub fn rate(&self) -> Bitrate { self.rate }

    pub fn k(&self) -> Option<f64> { self.k }
    pub fn k_source(&self) -> KSource { if self.k.is_some() { KSource::Fitted } else { KSource::Prior } }
    pub fn in_cold_start(&self) -> bool { self.mode == Mode::ColdStart }
    pub fn latest(&self) -> Option<EpochStat> { self.latest }
    pub fn last_fit(&self) -> Option<LineFit> { self.last_fit_result }

    /// Target delay T in ms.
    pub fn target_delay_ms(&mut self, now: Time) -> Option<f64> {
        match self.cfg.target_delay {
            TargetDelay::Min => { self.min_rtt.expire(now); self.min_rtt.get().map(|d| d.as_ms_f64()) }
            TargetDelay::Median => {
                let win = Duration::from_secs_f64(self.cfg.target_window_s);
                while self.rtt_history.len() > 1 && self.rtt_history.front().is_some_and(|(t, _)| now - *t > win) { self.rtt_history.pop_front(); }
                let mut v: Vec<f64> = self.rtt_history.iter().map(|p| p.1).collect();
                median(&mut v)
            }
        }
    }

    fn ack_time(&self, fb: &TransportFeedback, recv: Time) -> Time {
        match (self.cfg.ack_timing, fb.report_time) {
            (AckTiming::Reconstructed, Some(rt)) => recv + (fb.feedback_time - rt).max(Duration::ZERO),
            _ => fb.feedback_time,
        }
    }

    fn slot(&mut self, idx: u64, now: Time) -> Option<&mut Epoch> {
        if idx < self.first { return None; }
        if idx - self.first >= MAX_PENDING_EPOCHS as u64 {
            while !self.pending.is_empty() { self.close_oldest(now); }
            self.first = idx;
        }
        while self.pending.len() as u64 <= idx - self.first {
            if self.pending.len() >= MAX_PENDING_EPOCHS { self.close_oldest(now); }
            self.pending.push_back(Epoch::default());
        }
        self.pending.get_mut((idx - self.first) as usize)
    }

    /// Close the oldest pending epoch: Eqs. 1 and 12, and a regression pair.
    fn close_oldest(&mut self, now: Time) {
        let Some(e) = self.pending.pop_front() else { return };
        self.first += 1;
        if e.packets == 0 && self.carry_epochs == 0 { return; }
        self.carry_bytes += e.bytes;
        self.carry_epochs += 1;
        let Some(ack) = e.last_ack else { return };
        let Some(prev) = self.prev_ack else {
            // the first acknowledged epoch only sets t_{i−1}
            self.prev_ack = Some(ack);
            self.carry_bytes = 0;
            self.carry_epochs = 0;
            if e.rtt_n > 0 { self.prev_rtt = Some(e.rtt_sum_ms / e.rtt_n as f64); }
            return;
        };
        if ack <= prev { return; } // same ACK time as the previous epoch: merge into the next
        let r = receive_rate(self.carry_bytes, prev, ack).map(|r| r.bps_f64());
        let x = self.carry_bytes as f64 * 8.0 / (self.clock.epoch.as_secs_f64() * self.carry_epochs as f64);
        self.prev_ack = Some(ack);
        self.carry_bytes = 0;
        self.carry_epochs = 0;
        let rtt = (e.rtt_n > 0).then(|| e.rtt_sum_ms / e.rtt_n as f64);
        let drtt = match (rtt, self.prev_rtt) { (Some(a), Some(b)) => Some(a - b), _ => None };
        if rtt.is_some() { self.prev_rtt = rtt; }
        let loss = if e.packets > 0 { e.lost as f64 / e.packets as f64 } else { 0.0 };
        let stat = EpochStat { at: now, x_bps: x, r_bps: r, rtt_ms: rtt, drtt_ms: drtt, loss };
        if let (Some(r), Some(dr)) = (r, drtt) {
            self.pairs.push_back((now, self.pps(x) - self.pps(r), dr));
            while self.pairs.len() > MAX_SAMPLES { self.pairs.pop_front(); }
        }
        if let Some(r) = r { self.last_r_bps = Some(r); }
        if let Some(rtt) = rtt {
            self.rtt_history.push_back((now, rtt));
            while self.rtt_history.len() > MAX_SAMPLES { self.rtt_history.pop_front(); }
        }
        self.latest = Some(stat);
        self.new_stat = true;
    }

    /// Close the leading epochs that have ended by `now` and whose packets are all reported.
    fn close_complete(&mut self, now: Time) {
        while let Some(e) = self.pending.front() {
            let end = self.clock.t0 + Duration::from_us((self.first as i64 + 1) * self.clock.epoch.as_us());
            if end > now || e.reported < e.packets { break; }
            self.close_oldest(now);
        }
    }

    /// Fit k on the pairs newer than `since` (all if `None`); accept only k > 0 with a
    /// t-statistic ≥ `min_t_stat`.
    fn refit(&mut self, now: Time, since: Option<Time>) {
        self.last_fit = Some(now);
        let fit = fit_line(self.pairs.iter().filter(|p| since.is_none_or(|s| p.0 >= s)).map(|p| (p.1, p.2)));
        self.last_fit_result = fit;
        if let Some(f) = fit {
            if f.k > 0.0 && f.t_stat >= self.cfg.min_t_stat { self.k = Some(f.k); }
        }
        // drop pairs no regression can use any more
        let keep = Duration::from_secs_f64(self.cfg.regression_window_s.max(self.cfg.k_refit_s));
        while self.pairs.front().is_some_and(|p| now - p.0 > keep) { self.pairs.pop_front(); }
    }

    /// The queueing prior for k, ms per packet/s: an epoch sent `x − r` above the drain rate `r`
    /// grows the queue by `(x − r)·ε / r` seconds.
    pub fn prior_k(&self, r_bps: f64) -> f64 {
        let r_pps = self.pps(r_bps).max(1.0);
        1000.0 * self.clock.epoch.as_secs_f64() / r_pps
    }

    fn decide(&mut self, now: Time) {
        let fresh = match self.last_feedback { Some(t) => now - t <= Duration::from_secs(1), None => now - self.clock.t0 <= Duration::from_secs(1) };
        let t_ms = self.target_delay_ms(now);
        if self.mode == Mode::ColdStart {
            let exit = self.new_stat && self.latest.is_some_and(|s| {
                s.loss > 0.0 || (self.cfg.cold_start_exit_queue_ms > 0.0 && matches!((s.rtt_ms, t_ms), (Some(r), Some(t)) if r > t + self.cfg.cold_start_exit_queue_ms))
            });
            if !exit {
                if fresh { self.rate = self.clamp(self.rate.bps_f64() * self.cfg.cold_start_growth); }
                self.new_stat = false;
                return;
            }
            self.mode = Mode::Steady;
            self.refit(now, None);
        }
        if !self.new_stat { return; } // spec 4.6: keep the rate until an epoch completes
        self.new_stat = false;
        if self.last_fit.is_none_or(|t| now - t >= Duration::from_secs_f64(self.cfg.k_refit_s)) {
            self.refit(now, Some(now - Duration::from_secs_f64(self.cfg.regression_window_s)));
        }
        let (Some(st), Some(t_ms), Some(r)) = (self.latest, t_ms, self.last_r_bps) else { return };
        let Some(rtt) = st.rtt_ms else { return };
        let x_pps = self.pps(st.x_bps);
        let q_s = (rtt - t_ms) / 1000.0;
        self.last_u = x_pps * q_s - self.cfg.queue_target;
        let d = expected_rtt_change(x_pps, q_s, self.cfg.queue_target, self.cfg.tanh_scale, self.cfg.delta_ms);
        self.last_d_ms = d;
        let k = self.k.unwrap_or_else(|| self.prior_k(r));
        let next = self.pps(r) + d / k;
        self.rate = self.clamp(self.bps(next));
    }
}

impl EpochController for Iris {
    fn clock(&self) -> &EpochClock { &self.clock }
    fn clock_mut(&mut self) -> &mut EpochClock { &mut self.clock }
    fn rate_and_constraints(&mut self) -> (&mut Bitrate, &mut Constraints) { (&mut self.rate, &mut self.constraints) }

    fn start(&mut self, _now: Time, c: Constraints) {
        self.constraints = c;
        self.rate = self.clamp(self.cfg.cold_start_kbps * 1e3);
    }

    fn packet_sent(&mut self, p: &SentPacket) {
        let wire = p.size.get() as f64;
        if wire > 0.0 {
            let f = ((wire - self.cfg.header_bytes) / wire).clamp(0.05, 1.0);
            self.payload_fraction += 0.02 * (f - self.payload_fraction);
        }
        let idx = self.index(p.send_time);
        if let Some(e) = self.slot(idx, p.send_time) {
            e.bytes += p.size.get();
            e.packets += 1;
        }
    }

    fn feedback(&mut self, fb: &TransportFeedback) {
        self.last_feedback = Some(fb.feedback_time);
        let mut newest_send: Option<Time> = None;
        for p in &fb.packets {
            newest_send = Some(newest_send.map_or(p.sent.send_time, |t| t.max(p.sent.send_time)));
            let idx = self.index(p.sent.send_time);
            let ack = p.recv_time.map(|r| self.ack_time(fb, r));
            if let Some(a) = ack {
                let rtt = a - p.sent.send_time;
                if rtt >= Duration::ZERO { self.min_rtt.update(fb.feedback_time, rtt); }
            }
            if idx < self.first { continue; }
            let Some(e) = self.pending.get_mut((idx - self.first) as usize) else { continue };
            e.reported += 1;
            match ack {
                Some(a) => {
                    let rtt = (a - p.sent.send_time).as_ms_f64();
                    if rtt.is_finite() { e.rtt_sum_ms += rtt; e.rtt_n += 1; }
                    e.last_ack = Some(e.last_ack.map_or(a, |t| t.max(a)));
                }
                None => e.lost += 1,
            }
        }
        if let Some(t) = newest_send {
            let upto = self.index(t);
            while self.first < upto && !self.pending.is_empty() { self.close_oldest(fb.feedback_time); }
            if self.pending.is_empty() && self.first < upto { self.first = upto; }
        }
        self.close_complete(fb.feedback_time);
    }

    fn end_epoch(&mut self, now: Time) {
        self.close_complete(now);
        self.decide(now);
    }

    fn output(&self) -> Update {
        let target = self.rate.scale(self.payload_fraction).max(self.constraints.min_rate).min(self.constraints.max_rate);
        Update { target_rate: Some(target), pacing_rate: Some(self.rate.scale(self.cfg.pacing_factor)), ..Update::default() }
    }

    fn epoch_diagnostics(&self, out: &mut Diagnostics) {
        if let Some(k) = self.k { out.push(("iris_k", k)); }
        out.push(("iris_u_pkts", self.last_u));
        out.push(("iris_d_ms", self.last_d_ms));
        if let Some(r) = self.last_r_bps { out.push(("iris_r_kbps", r / 1e3)); }
    }
}

#[cfg(test)]
mod tests;
