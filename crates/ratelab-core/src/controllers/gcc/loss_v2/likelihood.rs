//! The channel model and its fit (libwebrtc `GetCandidates`, `GetObjective`, `GetDerivatives`,
//! `NewtonsMethodUpdate`).
//!
//! A path with inherent loss ℓ and loss-limited bandwidth B loses a packet sent at rate x with
//! probability `p(x) = ℓ + (1 − ℓ)·max(0, (x − B)/x)`. The objective of a candidate (ℓ, B) is
//! the age-weighted log-likelihood of the observed (byte or packet) losses plus a bias towards
//! higher B while the average loss is below `loss_threshold_of_high_bandwidth_preference`.
//! Each candidate B gets `newton_iterations` Newton steps on ℓ; as in libwebrtc the derivatives
//! treat `p` as moving one-for-one with ℓ (no `1 − max(0, (x − B)/x)` chain factor).

use super::{mul, LossBasedBweV2};
use crate::units::{Bitrate, Bytes};

/// A candidate (ℓ, B).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct ChannelParameters {
    pub inherent_loss: f64,
    pub bandwidth: Bitrate,
}

/// `p(x)`, clamped to [1e-6, 1 − 1e-6].
pub(super) fn loss_probability(inherent_loss: f64, bandwidth: Bitrate, sending_rate: Bitrate) -> f64 {
    let l = inherent_loss.clamp(0.0, 1.0);
    let mut p = l;
    if sending_rate.is_finite() && bandwidth.is_finite() && sending_rate > bandwidth {
        p += (1.0 - l) * ((sending_rate - bandwidth) / sending_rate);
    }
    p.clamp(1e-6, 1.0 - 1e-6)
}

fn kilobytes(b: Bytes) -> f64 { b.as_f64() / 1000.0 }

impl LossBasedBweV2 {
    /// Candidate bandwidths: the estimate × each candidate factor, the acked rate (not in ALR
    /// unless padding), the delay-based estimate if higher, the instant upper bound in ALR if
    /// configured; each capped at `max(B, candidate upper bound)`, with ℓ made feasible.
    pub(super) fn candidates(&self, best: ChannelParameters, in_alr: bool) -> Vec<ChannelParameters> {
        let cfg = &self.cfg;
        let mut bandwidths: Vec<Bitrate> = cfg.candidate_factors.iter().map(|&f| mul(best.bandwidth, f)).collect();
        if let (Some(acked), true) = (self.acked_bitrate, cfg.append_acknowledged_rate_candidate) {
            if !(cfg.not_use_acked_rate_in_alr && in_alr) || self.padding_active() {
                bandwidths.push(mul(acked, cfg.bandwidth_backoff_lower_bound_factor));
            }
        }
        if self.delay_based_estimate.is_finite() && cfg.append_delay_based_estimate_candidate && self.delay_based_estimate > best.bandwidth {
            bandwidths.push(self.delay_based_estimate);
        }
        if in_alr && cfg.append_upper_bound_candidate_in_alr && best.bandwidth > self.instant_upper_bound() {
            bandwidths.push(self.instant_upper_bound());
        }
        let cap = best.bandwidth.max(self.candidate_bandwidth_upper_bound());
        bandwidths
            .into_iter()
            .map(|b| {
                let mut c = ChannelParameters { inherent_loss: best.inherent_loss, bandwidth: b.min(cap) };
                c.inherent_loss = self.feasible_inherent_loss(c);
                c
            })
            .collect()
    }

    /// The max bitrate, or the delayed-increase limit while loss-limited, plus the optional
    /// ramp-up acceleration.
    fn candidate_bandwidth_upper_bound(&self) -> Bitrate {
        let mut upper = self.max_bitrate;
        if self.is_in_loss_limited_state() && self.bandwidth_limit_in_current_window.is_finite() {
            upper = self.bandwidth_limit_in_current_window;
        }
        let Some(acked) = self.acked_bitrate else { return upper };
        if self.cfg.rampup_acceleration_max_factor > 0.0 {
            let maxout = self.cfg.rampup_acceleration_maxout_time;
            let since = match (self.last_send_time_most_recent_observation, self.last_time_estimate_reduced) {
                (Some(now), Some(reduced)) => (now - reduced).max(crate::units::Duration::ZERO).min(maxout),
                // Never reduced: libwebrtc's −∞ timestamp gives the full acceleration.
                _ => maxout,
            };
            let acceleration = self.cfg.rampup_acceleration_max_factor * (since / maxout);
            if upper.is_finite() {
                upper += mul(acked, acceleration);
            }
        }
        upper
    }

    /// `ℓ` clamped to `[inherent_loss_lower_bound, min(1, offset + balance / B)]`.
    pub(super) fn feasible_inherent_loss(&self, c: ChannelParameters) -> f64 {
        let upper = if c.bandwidth.is_zero() {
            1.0
        } else {
            (self.cfg.inherent_loss_upper_bound_offset + self.cfg.inherent_loss_upper_bound_bandwidth_balance / c.bandwidth).min(1.0)
        };
        c.inherent_loss.max(self.cfg.inherent_loss_lower_bound).min(upper)
    }

    fn adjust_bias_factor(&self, loss: f64, factor: f64) -> f64 {
        let d = self.cfg.loss_threshold_of_high_bandwidth_preference - loss;
        factor * d / (self.cfg.bandwidth_preference_smoothing_factor + d.abs())
    }

    /// Bias per kB (or packet) towards higher bandwidth; B in whole kbit/s as libwebrtc's
    /// `DataRate::kbps()`.
    pub(super) fn high_bandwidth_bias(&self, bandwidth: Bitrate) -> f64 {
        if !bandwidth.is_finite() {
            return 0.0;
        }
        let kbps = ((bandwidth.bps() + 500) / 1000) as f64;
        let l = self.average_reported_loss_ratio;
        self.adjust_bias_factor(l, self.cfg.higher_bandwidth_bias_factor) * kbps
            + self.adjust_bias_factor(l, self.cfg.higher_log_bandwidth_bias_factor) * (1.0 + kbps).ln()
    }

    /// (lost, received, total) amounts of an observation in the likelihood's unit.
    fn amounts(&self, o: &super::observations::Observation) -> (f64, f64, f64) {
        if self.cfg.use_byte_loss_rate {
            (kilobytes(o.lost_size), kilobytes(o.size - o.lost_size), kilobytes(o.size))
        } else {
            (o.num_lost_packets as f64, o.num_received_packets() as f64, o.num_packets as f64)
        }
    }

    pub(super) fn objective(&self, c: ChannelParameters) -> f64 {
        let bias = self.high_bandwidth_bias(c.bandwidth);
        let mut objective = 0.0;
        // Every observation sent below B has p = ℓ exactly: reuse the two logarithms while p
        // repeats (the same values, so the same sum; a NaN never repeats).
        let (mut last_p, mut ln_p, mut ln_q) = (f64::NAN, 0.0, 0.0);
        for (age, o) in self.initialized_observations() {
            let p = loss_probability(c.inherent_loss, c.bandwidth, o.sending_rate);
            if p != last_p {
                (last_p, ln_p, ln_q) = (p, p.ln(), (1.0 - p).ln());
            }
            let w = self.temporal_weights[age];
            let (lost, received, total) = self.amounts(o);
            objective += w * (lost * ln_p + received * ln_q);
            objective += w * bias * total;
        }
        objective
    }

    /// First and second derivative of the log-likelihood with respect to ℓ.
    fn derivatives(&self, c: ChannelParameters) -> (f64, f64) {
        let (mut first, mut second) = (0.0, 0.0);
        for (age, o) in self.initialized_observations() {
            let p = loss_probability(c.inherent_loss, c.bandwidth, o.sending_rate);
            let w = self.temporal_weights[age];
            let (lost, received, _) = self.amounts(o);
            first += w * (lost / p - received / (1.0 - p));
            second -= w * (lost / (p * p) + received / ((1.0 - p) * (1.0 - p)));
        }
        // Mathematically negative; guard against an empty window.
        if second >= 0.0 {
            second = -1.0e-6;
        }
        (first, second)
    }

    pub(super) fn newtons_method_update(&self, c: &mut ChannelParameters) {
        if self.num_observations == 0 {
            return;
        }
        for _ in 0..self.cfg.newton_iterations {
            let (first, second) = self.derivatives(*c);
            c.inherent_loss -= self.cfg.newton_step_size * first / second;
            c.inherent_loss = self.feasible_inherent_loss(*c);
        }
    }
}
