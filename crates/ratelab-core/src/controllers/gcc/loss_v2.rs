//! LossBasedBweV2 (spec 2.9.2, libwebrtc `loss_based_bwe_v2.cc`).
//!
//! Model: a path with inherent loss ℓ and a loss-limited bandwidth B; at send rate x the loss
//! probability is `p(x) = ℓ + (1 − ℓ)·max(0, (x − B)/x)`. Per-packet feedback is grouped into
//! observations spanning ≥ 250 ms of send time; the 15 newest observations, weighted `0.9^age`,
//! define a byte-based log-likelihood plus a bias that favours higher B while the average loss
//! is below 20 %. Each update evaluates a few candidate B values (one Newton step on ℓ each) and
//! keeps the best, then applies the post-rules and the state machine (HOLD, padding) of 2.9.2.
//!
//! Constants follow the spec's 2.9.2 text (15 observations, 100 kbit/s balances, 0.2 loss
//! threshold of the bias), which it read from the 2026 libwebrtc snapshot.

use crate::controller::PacketResult;
use crate::units::{Bitrate, Duration, Time};

/// States of 2.9.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LossV2State {
    #[default]
    DelayBasedEstimate,
    Increasing,
    IncreaseUsingPadding,
    Decreasing,
}

impl LossV2State {
    pub fn as_f64(self) -> f64 {
        match self {
            LossV2State::DelayBasedEstimate => 0.0,
            LossV2State::Increasing => 1.0,
            LossV2State::IncreaseUsingPadding => 2.0,
            LossV2State::Decreasing => -1.0,
        }
    }
}

/// Tunables of 2.9.2 with the spec's defaults.
#[derive(Clone, Debug)]
pub struct LossV2Config {
    pub candidate_factors: [f64; 3],
    pub higher_bandwidth_bias_factor: f64,
    pub higher_log_bandwidth_bias_factor: f64,
    pub loss_threshold_of_high_bandwidth_preference: f64,
    pub bandwidth_preference_smoothing_factor: f64,
    pub inherent_loss_lower_bound: f64,
    pub inherent_loss_upper_bound_bandwidth_balance: Bitrate,
    pub inherent_loss_upper_bound_offset: f64,
    pub initial_inherent_loss_estimate: f64,
    pub newton_iterations: u32,
    pub newton_step_size: f64,
    pub observation_duration_lower_bound: Duration,
    pub observation_window_size: usize,
    pub temporal_weight_factor: f64,
    pub instant_upper_bound_temporal_weight_factor: f64,
    pub instant_upper_bound_bandwidth_balance: Bitrate,
    pub instant_upper_bound_loss_offset: f64,
    pub max_increase_factor: f64,
    pub delayed_increase_window: Duration,
    pub rampup_upper_bound_factor: f64,
    pub rampup_upper_bound_factor_in_hold: f64,
    pub rampup_hold_threshold: f64,
    pub hold_duration_factor: f64,
    pub initial_hold_duration: Duration,
    pub max_hold_duration: Duration,
    pub padding_duration: Duration,
    pub min_num_observations: u32,
    pub median_sending_rate_factor: f64,
    pub lower_bound_by_acked_rate_factor: f64,
    pub not_use_acked_rate_in_alr: bool,
}

impl Default for LossV2Config {
    fn default() -> Self {
        LossV2Config {
            candidate_factors: [1.02, 1.0, 0.95],
            higher_bandwidth_bias_factor: 0.0002,
            higher_log_bandwidth_bias_factor: 0.02,
            loss_threshold_of_high_bandwidth_preference: 0.2,
            bandwidth_preference_smoothing_factor: 0.002,
            inherent_loss_lower_bound: 1e-3,
            inherent_loss_upper_bound_bandwidth_balance: Bitrate::from_kbps(100),
            inherent_loss_upper_bound_offset: 0.05,
            initial_inherent_loss_estimate: 0.01,
            newton_iterations: 1,
            newton_step_size: 0.75,
            observation_duration_lower_bound: Duration::from_ms(250),
            observation_window_size: 15,
            temporal_weight_factor: 0.9,
            instant_upper_bound_temporal_weight_factor: 0.9,
            instant_upper_bound_bandwidth_balance: Bitrate::from_kbps(100),
            instant_upper_bound_loss_offset: 0.05,
            max_increase_factor: 1.3,
            delayed_increase_window: Duration::from_ms(300),
            rampup_upper_bound_factor: 1.5,
            rampup_upper_bound_factor_in_hold: 1.2,
            rampup_hold_threshold: 1.3,
            hold_duration_factor: 2.0,
            initial_hold_duration: Duration::from_ms(300),
            max_hold_duration: Duration::from_secs(60),
            padding_duration: Duration::from_secs(2),
            min_num_observations: 3,
            median_sending_rate_factor: 2.0,
            lower_bound_by_acked_rate_factor: 1.0,
            not_use_acked_rate_in_alr: true,
        }
    }
}

/// Floor of any congestion-controller rate (libwebrtc `kCongestionControllerMinBitrate`).
const MIN_BITRATE: Bitrate = Bitrate::from_kbps(5);
/// Largest observation window we allow (keeps the median on the stack).
const MAX_WINDOW: usize = 64;
/// Lost packets tracked individually per partial observation (for "lost, then received").
const MAX_TRACKED_LOST: usize = 4096;

#[derive(Clone, Copy, Debug, Default)]
struct Observation {
    /// Sequence number of the observation; `None` = slot unused.
    id: Option<u64>,
    size_bytes: f64,
    lost_bytes: f64,
    /// bit/s
    sending_rate: f64,
}

#[derive(Clone, Copy, Debug)]
struct ChannelParameters {
    inherent_loss: f64,
    /// bit/s; `f64::INFINITY` when unknown.
    bandwidth: f64,
}

#[derive(Clone, Copy, Debug)]
struct HoldInfo {
    until: Option<Time>,
    duration: Duration,
    /// bit/s
    rate: f64,
}

#[derive(Clone, Copy, Debug, Default)]
struct PaddingInfo {
    rate: f64,
    since: Option<Time>,
}

#[derive(Clone, Debug)]
pub struct LossBasedBweV2 {
    cfg: LossV2Config,
    min_bitrate: f64,
    max_bitrate: f64,
    acked_bitrate: Option<f64>,
    delay_based_estimate: f64,
    current_best: ChannelParameters,
    result_bandwidth: f64,
    state: LossV2State,
    observations: Vec<Observation>,
    num_observations: u64,
    temporal_weights: Vec<f64>,
    instant_ub_weights: Vec<f64>,
    // Partial observation.
    partial_packets: u64,
    partial_size: f64,
    /// (seq, size) of packets reported lost in the partial observation; removed when a later
    /// feedback reports them received (spec 1.1).
    partial_lost: Vec<(u64, f64)>,
    partial_lost_overflow: f64,
    last_send_time_most_recent_observation: Option<Time>,
    cached_instant_upper_bound: f64,
    cached_instant_lower_bound: f64,
    last_time_estimate_reduced: Option<Time>,
    recovering_after_loss: Option<Time>,
    bandwidth_limit_in_current_window: f64,
    hold: HoldInfo,
    padding: PaddingInfo,
}

fn valid(r: f64) -> bool { r.is_finite() }

impl LossBasedBweV2 {
    pub fn new(cfg: LossV2Config) -> Self {
        let window = cfg.observation_window_size.clamp(1, MAX_WINDOW);
        let temporal_weights = (0..window).map(|i| cfg.temporal_weight_factor.powi(i as i32)).collect();
        let instant_ub_weights = (0..window).map(|i| cfg.instant_upper_bound_temporal_weight_factor.powi(i as i32)).collect();
        let hold = HoldInfo { until: None, duration: cfg.initial_hold_duration, rate: f64::INFINITY };
        LossBasedBweV2 {
            current_best: ChannelParameters { inherent_loss: cfg.initial_inherent_loss_estimate, bandwidth: f64::INFINITY },
            cfg,
            min_bitrate: MIN_BITRATE.bps_f64(),
            max_bitrate: f64::INFINITY,
            acked_bitrate: None,
            delay_based_estimate: f64::INFINITY,
            result_bandwidth: f64::INFINITY,
            state: LossV2State::DelayBasedEstimate,
            observations: vec![Observation::default(); window],
            num_observations: 0,
            temporal_weights,
            instant_ub_weights,
            partial_packets: 0,
            partial_size: 0.0,
            partial_lost: Vec::with_capacity(64),
            partial_lost_overflow: 0.0,
            last_send_time_most_recent_observation: None,
            cached_instant_upper_bound: f64::INFINITY,
            cached_instant_lower_bound: 0.0,
            last_time_estimate_reduced: None,
            recovering_after_loss: None,
            bandwidth_limit_in_current_window: f64::INFINITY,
            hold,
            padding: PaddingInfo::default(),
        }
    }

    pub fn set_min_max_bitrate(&mut self, min: Bitrate, max: Bitrate) {
        self.min_bitrate = min.bps_f64().max(MIN_BITRATE.bps_f64());
        self.max_bitrate = if max.is_finite() { max.bps_f64().max(self.min_bitrate) } else { f64::INFINITY };
        self.calculate_instant_lower_bound();
    }

    pub fn set_acknowledged_bitrate(&mut self, r: Bitrate) {
        self.acked_bitrate = Some(r.bps_f64());
        self.calculate_instant_lower_bound();
    }

    /// Seed B (used by the start phase, 2.9.1).
    pub fn set_bandwidth_estimate(&mut self, r: Bitrate) {
        if r.is_finite() && !r.is_zero() {
            self.current_best.bandwidth = r.bps_f64();
        }
    }

    /// Enough observations to be used (2.9.2: ≥ 3).
    pub fn is_ready(&self) -> bool {
        valid(self.current_best.bandwidth) && self.num_observations >= u64::from(self.cfg.min_num_observations)
    }

    /// Current result: (rate, state). Before ready, the delay-based estimate.
    pub fn result(&self) -> (Bitrate, LossV2State) {
        if !self.is_ready() || !valid(self.result_bandwidth) {
            let r = if valid(self.delay_based_estimate) { Bitrate::from_bps_f64(self.delay_based_estimate) } else { Bitrate::INFINITY };
            return (r, LossV2State::DelayBasedEstimate);
        }
        (Bitrate::from_bps_f64(self.result_bandwidth), self.state)
    }

    pub fn state(&self) -> LossV2State { self.state }
    pub fn inherent_loss(&self) -> f64 { self.current_best.inherent_loss }
    pub fn average_loss(&self) -> f64 { self.average_reported_loss_ratio() }

    /// One transport feedback (2.9.2). `delay_based` is `A_delay` (`Bitrate::INFINITY` if none).
    pub fn update(&mut self, packets: &[PacketResult], delay_based: Bitrate, in_alr: bool) {
        self.delay_based_estimate = if delay_based.is_finite() && !delay_based.is_zero() { delay_based.bps_f64() } else { f64::INFINITY };
        if packets.is_empty() || !self.push_back_observation(packets) {
            return;
        }
        if !valid(self.current_best.bandwidth) {
            if !valid(self.delay_based_estimate) {
                return;
            }
            self.current_best.bandwidth = self.delay_based_estimate;
            self.result_bandwidth = self.delay_based_estimate;
            self.state = LossV2State::DelayBasedEstimate;
        }

        let mut best = self.current_best;
        let mut objective_max = f64::NEG_INFINITY;
        let mut bandwidths = [0.0f64; 6];
        let n = self.candidate_bandwidths(in_alr, &mut bandwidths);
        let upper = self.candidate_bandwidth_upper_bound();
        for &b in &bandwidths[..n] {
            let mut cand = self.current_best;
            cand.bandwidth = b.min(self.current_best.bandwidth.max(upper));
            cand.inherent_loss = self.feasible_inherent_loss(cand);
            self.newton_update(&mut cand);
            let obj = self.objective(cand);
            // Ties go to the larger bandwidth (2.9.2).
            if obj > objective_max || (obj == objective_max && cand.bandwidth > best.bandwidth) {
                objective_max = obj;
                best = cand;
            }
        }
        if best.bandwidth < self.current_best.bandwidth {
            self.last_time_estimate_reduced = self.last_send_time_most_recent_observation;
        }
        // Do not increase while the average loss exceeds the inherent loss.
        if self.average_reported_loss_ratio() > best.inherent_loss && self.current_best.bandwidth < best.bandwidth {
            best.bandwidth = self.current_best.bandwidth;
        }
        if self.in_loss_limited_state() {
            let now = self.last_send_time_most_recent_observation;
            // Increases within 300 ms of the last recovery are capped by the window limit.
            if let (Some(rec), Some(now)) = (self.recovering_after_loss, now) {
                if rec + self.cfg.delayed_increase_window > now && best.bandwidth > self.bandwidth_limit_in_current_window {
                    best.bandwidth = self.bandwidth_limit_in_current_window;
                }
            }
            let increasing = self.increasing_when_loss_limited(self.current_best.bandwidth, best.bandwidth);
            if let (true, Some(acked)) = (increasing, self.acked_bitrate) {
                let mut factor = self.cfg.rampup_upper_bound_factor;
                if valid(self.hold.rate) && acked < self.cfg.rampup_hold_threshold * self.hold.rate {
                    factor = self.cfg.rampup_upper_bound_factor_in_hold;
                }
                best.bandwidth = self.current_best.bandwidth.max(best.bandwidth.min(factor * acked));
                // Make sure the state can switch to Increasing.
                if self.state == LossV2State::Decreasing && best.bandwidth == self.current_best.bandwidth {
                    best.bandwidth = self.current_best.bandwidth + 1000.0;
                }
            }
        }
        self.current_best = best;
        self.update_result();
    }

    fn in_loss_limited_state(&self) -> bool { self.state != LossV2State::DelayBasedEstimate }

    fn increasing_when_loss_limited(&self, old: f64, new: f64) -> bool {
        (old < new || (old == new && self.state == LossV2State::Increasing)) && self.in_loss_limited_state()
    }

    fn can_keep_increasing_state(&self, estimate: f64) -> bool {
        if self.cfg.padding_duration <= Duration::ZERO || self.state != LossV2State::IncreaseUsingPadding {
            return true;
        }
        let within = match (self.padding.since, self.last_send_time_most_recent_observation) {
            (Some(s), Some(now)) => s + self.cfg.padding_duration >= now,
            _ => false,
        };
        within || self.padding.rate < estimate
    }

    fn update_result(&mut self) {
        if !self.is_ready() {
            return;
        }
        if !valid(self.result_bandwidth) {
            self.result_bandwidth = self.delay_based_estimate;
        }
        let now = self.last_send_time_most_recent_observation;
        let bounded = self
            .cached_instant_lower_bound
            .max(self.current_best.bandwidth.min(self.cached_instant_upper_bound).min(self.delay_based_estimate));
        if bounded < self.current_best.bandwidth {
            self.current_best.bandwidth = bounded;
            self.current_best.inherent_loss = 0.0;
        }
        // HOLD: while the hold lasts, the result may not exceed the hold rate.
        if self.state == LossV2State::Decreasing
            && matches!((self.hold.until, now), (Some(u), Some(n)) if u > n)
            && bounded < self.delay_based_estimate
        {
            if self.cfg.lower_bound_by_acked_rate_factor > 0.0 {
                self.hold.rate = self.hold.rate.max(self.cached_instant_lower_bound);
            }
            self.result_bandwidth = self.hold.rate.min(bounded);
            return;
        }
        if self.increasing_when_loss_limited(self.result_bandwidth, bounded)
            && self.can_keep_increasing_state(bounded)
            && bounded < self.delay_based_estimate
            && bounded < self.max_bitrate
        {
            if self.cfg.padding_duration > Duration::ZERO && bounded > self.padding.rate {
                self.padding = PaddingInfo { rate: bounded, since: now };
            }
            self.state = if self.cfg.padding_duration > Duration::ZERO { LossV2State::IncreaseUsingPadding } else { LossV2State::Increasing };
        } else if bounded < self.delay_based_estimate && bounded < self.max_bitrate {
            if self.state != LossV2State::Decreasing && self.cfg.hold_duration_factor > 0.0 {
                let d = self.hold.duration;
                let next = Duration::from_secs_f64((d.as_secs_f64() * self.cfg.hold_duration_factor).min(self.cfg.max_hold_duration.as_secs_f64()));
                self.hold = HoldInfo { until: now.map(|n| n + d), duration: next, rate: bounded };
            }
            self.padding = PaddingInfo::default();
            self.state = LossV2State::Decreasing;
        } else {
            // Delay-based estimate works: reset HOLD so we do not get stuck low.
            self.hold = HoldInfo { until: None, duration: self.cfg.initial_hold_duration, rate: f64::INFINITY };
            self.padding = PaddingInfo::default();
            self.state = LossV2State::DelayBasedEstimate;
        }
        self.result_bandwidth = bounded;
        if self.in_loss_limited_state() {
            let expired = match (self.recovering_after_loss, now) {
                (None, _) => true,
                (Some(r), Some(n)) => r + self.cfg.delayed_increase_window < n,
                (Some(_), None) => false,
            };
            if expired {
                self.bandwidth_limit_in_current_window = (bounded * self.cfg.max_increase_factor).max(MIN_BITRATE.bps_f64());
                self.recovering_after_loss = now;
            }
        }
    }

    /// Candidate B values (2.9.2); returns how many were written.
    fn candidate_bandwidths(&self, in_alr: bool, out: &mut [f64; 6]) -> usize {
        let mut n = 0;
        let b = self.current_best.bandwidth;
        for f in self.cfg.candidate_factors {
            out[n] = f * b;
            n += 1;
        }
        if let Some(acked) = self.acked_bitrate {
            let padding_active = match (self.padding.since, self.last_send_time_most_recent_observation) {
                (Some(s), Some(now)) => self.cfg.padding_duration > Duration::ZERO && s + self.cfg.padding_duration >= now,
                _ => false,
            };
            if !(self.cfg.not_use_acked_rate_in_alr && in_alr) || padding_active {
                out[n] = acked;
                n += 1;
            }
        }
        if valid(self.delay_based_estimate) && self.delay_based_estimate > b {
            out[n] = self.delay_based_estimate;
            n += 1;
        }
        n
    }

    fn candidate_bandwidth_upper_bound(&self) -> f64 {
        if self.in_loss_limited_state() && valid(self.bandwidth_limit_in_current_window) {
            self.bandwidth_limit_in_current_window
        } else {
            self.max_bitrate
        }
    }

    /// `ℓ ∈ [0.001, min(1, 0.05 + 100 kbit/s / B)]`.
    fn feasible_inherent_loss(&self, c: ChannelParameters) -> f64 {
        let ub = if c.bandwidth <= 0.0 {
            1.0
        } else {
            (self.cfg.inherent_loss_upper_bound_offset + self.cfg.inherent_loss_upper_bound_bandwidth_balance.bps_f64() / c.bandwidth).min(1.0)
        };
        let lo = self.cfg.inherent_loss_lower_bound;
        let l = if c.inherent_loss.is_finite() { c.inherent_loss } else { lo };
        l.max(lo).min(ub.max(lo))
    }

    fn initialized_observations(&self) -> impl Iterator<Item = (usize, &Observation)> {
        let n = self.num_observations;
        self.observations.iter().filter_map(move |o| o.id.map(|id| ((n - 1 - id) as usize, o)))
    }

    /// Log-likelihood plus high-bandwidth bias (2.9.2).
    fn objective(&self, c: ChannelParameters) -> f64 {
        let bias = self.high_bandwidth_bias(c.bandwidth);
        let mut obj = 0.0;
        for (age, o) in self.initialized_observations() {
            let p = loss_probability(c.inherent_loss, c.bandwidth, o.sending_rate);
            let w = self.temporal_weights.get(age).copied().unwrap_or(0.0);
            let lost_kb = o.lost_bytes / 1000.0;
            let recv_kb = (o.size_bytes - o.lost_bytes) / 1000.0;
            obj += w * (lost_kb * p.ln() + recv_kb * (1.0 - p).ln());
            obj += w * bias * o.size_bytes / 1000.0;
        }
        obj
    }

    fn high_bandwidth_bias(&self, b: f64) -> f64 {
        if !valid(b) {
            return 0.0;
        }
        let l = self.average_reported_loss_ratio();
        let adjust = |f: f64| {
            let d = self.cfg.loss_threshold_of_high_bandwidth_preference - l;
            f * d / (self.cfg.bandwidth_preference_smoothing_factor + d.abs())
        };
        let kbps = (b / 1000.0).max(0.0);
        adjust(self.cfg.higher_bandwidth_bias_factor) * kbps + adjust(self.cfg.higher_log_bandwidth_bias_factor) * (1.0 + kbps).ln()
    }

    /// Newton step(s) on ℓ for the log-likelihood (2.9.2). Reading: we use the exact derivative
    /// of `p` with respect to ℓ, `dp/dℓ = 1 − max(0, (x − B)/x)`.
    fn newton_update(&self, c: &mut ChannelParameters) {
        if self.num_observations == 0 {
            return;
        }
        for _ in 0..self.cfg.newton_iterations {
            let (mut d1, mut d2) = (0.0, 0.0);
            for (age, o) in self.initialized_observations() {
                let w = self.temporal_weights.get(age).copied().unwrap_or(0.0);
                let p = loss_probability(c.inherent_loss, c.bandwidth, o.sending_rate);
                let g = 1.0 - overshoot_fraction(c.bandwidth, o.sending_rate);
                let lost_kb = o.lost_bytes / 1000.0;
                let recv_kb = (o.size_bytes - o.lost_bytes) / 1000.0;
                d1 += w * g * (lost_kb / p - recv_kb / (1.0 - p));
                d2 -= w * g * g * (lost_kb / (p * p) + recv_kb / ((1.0 - p) * (1.0 - p)));
            }
            if d2 >= 0.0 || !d2.is_finite() {
                d2 = -1e-6;
            }
            let step = self.cfg.newton_step_size * d1 / d2;
            if step.is_finite() {
                c.inherent_loss -= step;
            }
            c.inherent_loss = self.feasible_inherent_loss(*c);
        }
    }

    /// Accumulate feedback; close an observation once ≥ 250 ms of send time passed (2.9.2).
    fn push_back_observation(&mut self, packets: &[PacketResult]) -> bool {
        let mut last_send: Option<Time> = None;
        for p in packets {
            self.partial_packets += 1;
            let size = p.sent.size.get().max(0) as f64;
            if p.received() {
                if let Some(i) = self.partial_lost.iter().position(|&(s, _)| s == p.sent.seq) {
                    self.partial_lost.swap_remove(i);
                }
            } else if !self.partial_lost.iter().any(|&(s, _)| s == p.sent.seq) {
                if self.partial_lost.len() < MAX_TRACKED_LOST {
                    self.partial_lost.push((p.sent.seq, size));
                } else {
                    // Pathological input (send time not advancing): stop de-duplicating.
                    self.partial_lost_overflow += size;
                }
            }
            self.partial_size += size;
            last_send = Some(last_send.map_or(p.sent.send_time, |t| t.max(p.sent.send_time)));
        }
        let Some(last_send) = last_send else { return false };
        let prev = *self.last_send_time_most_recent_observation.get_or_insert(last_send);
        let duration = last_send - prev;
        if duration <= Duration::ZERO || duration < self.cfg.observation_duration_lower_bound {
            return false;
        }
        self.last_send_time_most_recent_observation = Some(last_send);
        let lost_bytes: f64 = self.partial_lost.iter().map(|&(_, s)| s).sum::<f64>() + self.partial_lost_overflow;
        let size = self.partial_size;
        let id = self.num_observations;
        self.num_observations += 1;
        let window = self.observations.len();
        self.observations[(id % window as u64) as usize] = Observation {
            id: Some(id),
            size_bytes: size,
            lost_bytes: lost_bytes.min(size),
            sending_rate: 8.0 * size / duration.as_secs_f64(),
        };
        self.partial_packets = 0;
        self.partial_size = 0.0;
        self.partial_lost.clear();
        self.partial_lost_overflow = 0.0;
        self.calculate_instant_upper_bound();
        true
    }

    /// Byte-weighted average loss over the window, dropping the best and worst observation when
    /// there are more than 3 (unless the worst one was sent at ≥ 2× the median rate) (2.9.2).
    fn average_reported_loss_ratio(&self) -> f64 {
        if self.num_observations == 0 {
            return 0.0;
        }
        let (mut total, mut lost) = (0.0, 0.0);
        let (mut min_ratio, mut max_ratio) = (1.0, 0.0);
        let (mut lost_min, mut lost_max, mut bytes_min, mut bytes_max) = (0.0, 0.0, 0.0, 0.0);
        let mut send_rate_of_max = 0.0;
        let drop_extremes = self.num_observations > 3;
        for (age, o) in self.initialized_observations() {
            let w = self.instant_ub_weights.get(age).copied().unwrap_or(0.0);
            total += w * o.size_bytes;
            lost += w * o.lost_bytes;
            let ratio = if o.size_bytes > 0.0 { o.lost_bytes / o.size_bytes } else { 0.0 };
            if drop_extremes {
                if ratio > max_ratio {
                    max_ratio = ratio;
                    lost_max = w * o.lost_bytes;
                    bytes_max = w * o.size_bytes;
                    send_rate_of_max = o.sending_rate;
                }
                if ratio < min_ratio {
                    min_ratio = ratio;
                    lost_min = w * o.lost_bytes;
                    bytes_min = w * o.size_bytes;
                }
            }
        }
        if total <= 0.0 {
            return 0.0;
        }
        let all = (lost / total).clamp(0.0, 1.0);
        if !drop_extremes || self.median_sending_rate() * self.cfg.median_sending_rate_factor <= send_rate_of_max {
            return all;
        }
        let rest = total - bytes_max - bytes_min;
        if rest <= 0.0 {
            return all;
        }
        ((lost - lost_min - lost_max) / rest).clamp(0.0, 1.0)
    }

    fn median_sending_rate(&self) -> f64 {
        let mut buf = [0.0f64; MAX_WINDOW];
        let mut n = 0;
        for (_, o) in self.initialized_observations() {
            buf[n] = o.sending_rate;
            n += 1;
        }
        if n == 0 {
            return 0.0;
        }
        let v = &mut buf[..n];
        v.sort_by(|a, b| a.total_cmp(b));
        if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
    }

    /// `100 kbit/s / (avg_loss − 0.05)` above 5 % loss, else the max bitrate (2.9.2).
    fn calculate_instant_upper_bound(&mut self) {
        let l = self.average_reported_loss_ratio();
        let mut limit = self.max_bitrate;
        if l > self.cfg.instant_upper_bound_loss_offset {
            limit = self.cfg.instant_upper_bound_bandwidth_balance.bps_f64() / (l - self.cfg.instant_upper_bound_loss_offset);
        }
        self.cached_instant_upper_bound = limit;
    }

    /// `max(acked × 1.0, min_bitrate)` (2.9.2).
    fn calculate_instant_lower_bound(&mut self) {
        let mut lb: f64 = 0.0;
        if let Some(a) = self.acked_bitrate {
            if self.cfg.lower_bound_by_acked_rate_factor > 0.0 {
                lb = self.cfg.lower_bound_by_acked_rate_factor * a;
            }
        }
        self.cached_instant_lower_bound = lb.max(self.min_bitrate);
    }
}

/// `max(0, (x − B)/x)`.
fn overshoot_fraction(bandwidth: f64, sending_rate: f64) -> f64 {
    if valid(sending_rate) && valid(bandwidth) && sending_rate > bandwidth && sending_rate > 0.0 {
        (sending_rate - bandwidth) / sending_rate
    } else {
        0.0
    }
}

/// `p(x) = ℓ + (1 − ℓ)·max(0, (x − B)/x)`, clamped to [1e-6, 1 − 1e-6].
fn loss_probability(inherent_loss: f64, bandwidth: f64, sending_rate: f64) -> f64 {
    let l = if inherent_loss.is_finite() { inherent_loss.clamp(0.0, 1.0) } else { 0.0 };
    let p = l + (1.0 - l) * overshoot_fraction(bandwidth, sending_rate);
    p.clamp(1e-6, 1.0 - 1e-6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::SentPacket;
    use crate::units::Bytes;

    fn kbps(v: i64) -> Bitrate { Bitrate::from_kbps(v) }

    #[test]
    fn loss_model_by_hand() {
        // ℓ = 0.1, B = 1 Mbit/s, x = 2 Mbit/s: 0.1 + 0.9·0.5 = 0.55.
        assert!((loss_probability(0.1, 1e6, 2e6) - 0.55).abs() < 1e-12);
        assert!((loss_probability(0.1, 1e6, 0.5e6) - 0.1).abs() < 1e-12);
        assert_eq!(loss_probability(0.0, 1e6, 0.5e6), 1e-6);
        assert_eq!(loss_probability(1.0, 1e6, 0.5e6), 1.0 - 1e-6);
    }

    #[test]
    fn inherent_loss_bounds_by_hand() {
        let v2 = LossBasedBweV2::new(LossV2Config::default());
        // B = 1 Mbit/s: upper = 0.05 + 100k/1M = 0.15.
        let c = |l, b| ChannelParameters { inherent_loss: l, bandwidth: b };
        assert!((v2.feasible_inherent_loss(c(0.5, 1e6)) - 0.15).abs() < 1e-12);
        assert_eq!(v2.feasible_inherent_loss(c(0.0, 1e6)), 0.001);
        // B = 50 kbit/s: 0.05 + 2 > 1 -> upper bound 1.
        assert_eq!(v2.feasible_inherent_loss(c(2.0, 50e3)), 1.0);
        assert_eq!(v2.feasible_inherent_loss(c(0.5, 50e3)), 0.5);
    }

    #[test]
    fn bias_sign_follows_loss_threshold() {
        let v2 = LossBasedBweV2::new(LossV2Config::default());
        // No observations: L = 0. a1 = 0.0002·0.2/0.202, a2 = 0.02·0.2/0.202.
        let b = v2.high_bandwidth_bias(1e6);
        let want = 0.0002 * 0.2 / 0.202 * 1000.0 + 0.02 * 0.2 / 0.202 * (1001.0f64).ln();
        assert!((b - want).abs() < 1e-12, "{b} vs {want}");
    }

    /// Feed `secs` of feedback at `rate` (1000 B packets, 50 ms feedback) with loss fraction `loss`.
    fn drive(v2: &mut LossBasedBweV2, seq: &mut u64, t0_ms: i64, secs: i64, rate_kbps: i64, loss: f64, delay_based: Bitrate) {
        let pkts_per_fb = (rate_kbps * 1000 / 8 / 1000 / 20).max(1);
        let mut buf = Vec::new();
        let mut lost_acc = 0.0;
        for f in 0..secs * 20 {
            buf.clear();
            for k in 0..pkts_per_fb {
                let send = Time::from_us((t0_ms + 50 * f) * 1000 + k * 50_000 / pkts_per_fb);
                lost_acc += loss;
                let lost = lost_acc >= 1.0;
                if lost {
                    lost_acc -= 1.0;
                }
                *seq += 1;
                buf.push(PacketResult {
                    sent: SentPacket { seq: *seq, size: Bytes::new(1000), send_time: send, probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO },
                    recv_time: if lost { None } else { Some(send + Duration::from_ms(30)) },
                });
            }
            v2.set_acknowledged_bitrate(Bitrate::from_kbps_f64(rate_kbps as f64 * (1.0 - loss)));
            v2.update(&buf, delay_based, false);
        }
    }

    #[test]
    fn no_loss_follows_delay_based_estimate() {
        let mut v2 = LossBasedBweV2::new(LossV2Config::default());
        v2.set_min_max_bitrate(kbps(30), kbps(10_000));
        let mut seq = 0;
        drive(&mut v2, &mut seq, 0, 3, 1000, 0.0, kbps(1200));
        assert!(v2.is_ready());
        let (r, s) = v2.result();
        assert_eq!(s, LossV2State::DelayBasedEstimate);
        assert_eq!(r, kbps(1200));
        assert!(v2.average_loss() == 0.0);
        // ℓ stays at its lower bound (or 0 right after the estimate was bounded).
        assert!(v2.inherent_loss() <= 0.001 + 1e-12, "{}", v2.inherent_loss());
    }

    #[test]
    fn heavy_loss_caps_estimate_with_instant_upper_bound() {
        let mut v2 = LossBasedBweV2::new(LossV2Config::default());
        v2.set_min_max_bitrate(kbps(30), kbps(10_000));
        let mut seq = 0;
        // 25 % loss at 2 Mbit/s: avg loss 0.25 -> upper bound 100k/0.2 = 500 kbit/s,
        // but the acked rate (1.5 Mbit/s) is the lower bound.
        drive(&mut v2, &mut seq, 0, 5, 2000, 0.25, kbps(3000));
        let (r, s) = v2.result();
        assert!((v2.average_loss() - 0.25).abs() < 0.02, "avg {}", v2.average_loss());
        assert_eq!(s, LossV2State::Decreasing);
        assert_eq!(r, kbps(1500), "lower bound = acked rate");
        // 10 % loss with the acked bound lower than the upper bound: 100k/0.05 = 2 Mbit/s.
        let mut v2 = LossBasedBweV2::new(LossV2Config::default());
        v2.set_min_max_bitrate(kbps(30), kbps(10_000));
        drive(&mut v2, &mut seq, 0, 5, 1000, 0.10, kbps(5000));
        let (r, _) = v2.result();
        assert!(r <= kbps(2000) + kbps(1) && r >= kbps(900), "{r}");
    }

    #[test]
    fn lost_then_received_is_not_counted_as_lost() {
        let mut v2 = LossBasedBweV2::new(LossV2Config::default());
        let mk = |seq: u64, t: i64, recv: bool| PacketResult {
            sent: SentPacket { seq, size: Bytes::new(1000), send_time: Time::from_ms(t), probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO },
            recv_time: recv.then(|| Time::from_ms(t + 20)),
        };
        v2.update(&[mk(1, 0, true)], kbps(1000), false);
        v2.update(&[mk(2, 100, false)], kbps(1000), false);
        v2.update(&[mk(2, 100, true), mk(3, 300, true)], kbps(1000), false);
        assert_eq!(v2.num_observations, 1);
        let o = v2.observations[0];
        assert_eq!(o.lost_bytes, 0.0);
        // The partial observation holds packet 1 (first feedback only anchors the time), packet 2
        // twice (reported lost, then received) and packet 3: 4000 B over 300 ms of send time.
        assert_eq!(o.size_bytes, 4000.0);
        assert!((o.sending_rate - 8.0 * 4000.0 / 0.3).abs() < 1e-6);
    }

    #[test]
    fn average_loss_drops_extremes_by_hand() {
        let mut v2 = LossBasedBweV2::new(LossV2Config::default());
        // Four observations (newest last) with equal sizes and rates, losses 0, 10, 20, 50 %.
        for (i, loss) in [0.0, 0.1, 0.2, 0.5].iter().enumerate() {
            v2.observations[i] = Observation { id: Some(i as u64), size_bytes: 1000.0, lost_bytes: 1000.0 * loss, sending_rate: 1e6 };
        }
        v2.num_observations = 4;
        // Weights (age 3..0): 0.729, 0.81, 0.9, 1. Drop 0 % (w .729) and 50 % (w 1):
        // (0.81·100 + 0.9·200)/(0.81·1000 + 0.9·1000) = 261/1710.
        assert!((v2.average_reported_loss_ratio() - 261.0 / 1710.0).abs() < 1e-12);
        // If the max-loss observation was sent at ≥ 2× the median rate, keep everything.
        v2.observations[3].sending_rate = 3e6;
        let all = (0.81 * 100.0 + 0.9 * 200.0 + 500.0) / (0.729 * 1000.0 + 0.81 * 1000.0 + 0.9 * 1000.0 + 1000.0);
        assert!((v2.average_reported_loss_ratio() - all).abs() < 1e-12);
    }

    #[test]
    fn hold_doubles_on_each_decrease_entry() {
        let mut v2 = LossBasedBweV2::new(LossV2Config::default());
        v2.set_min_max_bitrate(kbps(30), kbps(10_000));
        let mut seq = 0;
        drive(&mut v2, &mut seq, 0, 3, 1000, 0.0, kbps(1000));
        assert_eq!(v2.state(), LossV2State::DelayBasedEstimate);
        drive(&mut v2, &mut seq, 3000, 3, 1000, 0.3, kbps(1000));
        assert_eq!(v2.state(), LossV2State::Decreasing);
        // Each entry into Decreasing uses the current hold and doubles the next one.
        let d = v2.hold.duration.as_us() / 300_000;
        assert!(d >= 2 && (d as u64).is_power_of_two(), "hold {:?}", v2.hold.duration);
        // Loss disappears: back to the delay-based estimate eventually, hold reset.
        drive(&mut v2, &mut seq, 6000, 10, 1000, 0.0, kbps(1000));
        assert_eq!(v2.state(), LossV2State::DelayBasedEstimate);
        assert_eq!(v2.hold.duration, Duration::from_ms(300));
    }
}
