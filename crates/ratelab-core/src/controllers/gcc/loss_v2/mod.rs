//! LossBasedBweV2 (spec 2.9.2), as libwebrtc's `loss_based_bwe_v2.cc` at branch-heads/7871
//! (commit 1f975dfd761af6e5d76d28333191973b258d82a8) and proven with its
//! `loss_based_bwe_v2_test.cc`, ported in [`libwebrtc_tests`].
//!
//! Per feedback: close an observation once enough send time passed ([`observations`]), fit the
//! channel model to the window and pick the best candidate bandwidth ([`likelihood`]), then
//! bound it and run the state machine ([`state`]). Knobs and their defaults: [`config`].
//!
//! Rates are whole bit/s and sizes whole bytes, rounded where libwebrtc's `DataRate` and
//! `DataSize` round, so that the exact expectations of libwebrtc's tests hold.

mod config;
mod likelihood;
mod observations;
mod state;

#[cfg(test)]
mod libwebrtc_tests;
#[cfg(test)]
mod tests;

pub use config::LossV2Config;

use crate::controller::PacketResult;
use crate::units::{Bitrate, Time};
use likelihood::ChannelParameters;
use observations::{Observation, PartialObservation};
use state::{HoldInfo, PaddingInfo};

/// Floor of any congestion-controller rate (libwebrtc `kCongestionControllerMinBitrate`).
const MIN_BITRATE: Bitrate = Bitrate::from_kbps(5);

/// `rate × f` rounded to whole bit/s (libwebrtc `DataRate * double`); ∞ stays ∞.
fn mul(rate: Bitrate, f: f64) -> Bitrate { if rate.is_finite() { rate * f } else { rate } }

/// States of 2.9.2 (libwebrtc `LossBasedState`).
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

#[derive(Clone, Copy, Debug)]
struct LossBasedResult {
    bandwidth: Bitrate,
    state: LossV2State,
}

#[derive(Clone, Debug)]
pub struct LossBasedBweV2 {
    cfg: LossV2Config,
    /// False if the configuration is disabled or invalid: the result is then the delay-based
    /// estimate.
    enabled: bool,
    acked_bitrate: Option<Bitrate>,
    /// The current best estimate (ℓ, B); B is `None` until set or initialized.
    best_inherent_loss: f64,
    best_bandwidth: Option<Bitrate>,
    num_observations: u64,
    observations: Vec<Observation>,
    partial: PartialObservation,
    /// Send time closing the newest observation (`None` before the first feedback).
    last_send_time_most_recent_observation: Option<Time>,
    last_time_estimate_reduced: Option<Time>,
    cached_instant_upper_bound: Option<Bitrate>,
    cached_instant_lower_bound: Option<Bitrate>,
    instant_upper_bound_temporal_weights: Vec<f64>,
    temporal_weights: Vec<f64>,
    recovering_after_loss: Option<Time>,
    bandwidth_limit_in_current_window: Bitrate,
    min_bitrate: Bitrate,
    max_bitrate: Bitrate,
    delay_based_estimate: Bitrate,
    result: LossBasedResult,
    hold: HoldInfo,
    padding: PaddingInfo,
    average_reported_loss_ratio: f64,
}

impl LossBasedBweV2 {
    pub fn new(cfg: LossV2Config) -> Self {
        let enabled = cfg.enabled && cfg.validate().is_ok();
        let window = if enabled { cfg.observation_window_size } else { 0 };
        let weights = |f: f64| (0..window).map(|i| f.powi(i as i32)).collect();
        LossBasedBweV2 {
            enabled,
            acked_bitrate: None,
            best_inherent_loss: cfg.initial_inherent_loss_estimate,
            best_bandwidth: None,
            num_observations: 0,
            observations: vec![Observation::default(); window],
            partial: PartialObservation::default(),
            last_send_time_most_recent_observation: None,
            last_time_estimate_reduced: None,
            cached_instant_upper_bound: None,
            cached_instant_lower_bound: None,
            instant_upper_bound_temporal_weights: weights(cfg.instant_upper_bound_temporal_weight_factor),
            temporal_weights: weights(cfg.temporal_weight_factor),
            recovering_after_loss: None,
            bandwidth_limit_in_current_window: Bitrate::INFINITY,
            min_bitrate: Bitrate::from_kbps(1),
            max_bitrate: Bitrate::INFINITY,
            delay_based_estimate: Bitrate::INFINITY,
            result: LossBasedResult { bandwidth: Bitrate::ZERO, state: LossV2State::DelayBasedEstimate },
            hold: HoldInfo::reset(),
            padding: PaddingInfo::default(),
            average_reported_loss_ratio: 0.0,
            cfg,
        }
    }

    pub fn is_enabled(&self) -> bool { self.enabled }

    /// Initialized with a bandwidth and at least `min_num_observations` observations.
    pub fn is_ready(&self) -> bool {
        self.enabled && self.best_bandwidth.is_some() && self.num_observations >= u64::from(self.cfg.min_num_observations)
    }

    /// The send-side estimator may leave its start phase for this estimator's result.
    pub fn ready_to_use_in_start_phase(&self) -> bool { self.is_ready() && self.cfg.use_in_start_phase }

    pub fn use_in_start_phase(&self) -> bool { self.cfg.use_in_start_phase }

    /// (rate, state); before ready, the delay-based estimate (∞ if none).
    pub fn result(&self) -> (Bitrate, LossV2State) {
        if !self.is_ready() {
            return (self.delay_based_estimate, LossV2State::DelayBasedEstimate);
        }
        (self.result.bandwidth, self.result.state)
    }

    pub fn state(&self) -> LossV2State { self.result.state }
    pub fn inherent_loss(&self) -> f64 { self.best_inherent_loss }
    pub fn average_loss(&self) -> f64 { self.average_reported_loss_ratio }

    pub fn set_acknowledged_bitrate(&mut self, rate: Bitrate) {
        if rate.is_finite() {
            self.acked_bitrate = Some(rate);
            self.calculate_instant_lower_bound();
        }
    }

    /// Bounds as given; the send-side estimator already applied its own floor.
    pub fn set_min_max_bitrate(&mut self, min: Bitrate, max: Bitrate) {
        if min.is_finite() {
            self.min_bitrate = min;
            self.calculate_instant_lower_bound();
        }
        if max.is_finite() {
            self.max_bitrate = max;
        }
    }

    /// Set the estimate and the result (libwebrtc: for unit tests only; the send-side
    /// estimator does not call it, the first observation takes the delay-based estimate).
    pub fn set_bandwidth_estimate(&mut self, rate: Bitrate) {
        if rate.is_finite() {
            self.best_bandwidth = Some(rate);
            self.result = LossBasedResult { bandwidth: rate, state: LossV2State::DelayBasedEstimate };
        }
    }

    /// One transport feedback (all its packets, lost ones included). `delay_based` is the
    /// delay-based estimate, `Bitrate::INFINITY` if none.
    pub fn update(&mut self, packets: &[PacketResult], delay_based: Bitrate, in_alr: bool) {
        self.delay_based_estimate = delay_based;
        if !self.enabled || packets.is_empty() || !self.push_back_observation(packets) {
            return;
        }
        if self.best_bandwidth.is_none() {
            if !delay_based.is_finite() {
                return;
            }
            self.best_bandwidth = Some(delay_based);
            self.result = LossBasedResult { bandwidth: delay_based, state: LossV2State::DelayBasedEstimate };
        }
        let current = ChannelParameters { inherent_loss: self.best_inherent_loss, bandwidth: self.best_bandwidth.unwrap_or(delay_based) };
        let mut best = current;
        let mut objective_max = f64::MIN;
        for mut candidate in self.candidates(current, in_alr) {
            self.newtons_method_update(&mut candidate);
            let objective = self.objective(candidate);
            // Ties go to the higher bandwidth.
            if objective > objective_max || (objective == objective_max && candidate.bandwidth > best.bandwidth) {
                objective_max = objective;
                best = candidate;
            }
        }
        self.apply_best_candidate(current, best);
    }
}
