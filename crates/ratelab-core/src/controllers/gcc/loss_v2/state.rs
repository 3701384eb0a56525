//! From the best candidate to the result (the second half of libwebrtc's
//! `UpdateBandwidthEstimate`): the increase limits while loss-limited, the bounds (instant upper
//! bound from the average loss, acked-rate lower bound, delay-based estimate), HOLD after a
//! decrease, and the state machine
//!
//! - `IncreaseUsingPadding` (`Increasing` if `padding_duration` is 0): loss-limited and rising,
//!   or holding the same rate for up to `padding_duration` after the last rise;
//! - `Decreasing`: loss-limited otherwise; entering it starts a HOLD (the result may not exceed
//!   the rate at entry for `duration`, which grows × `hold_duration_factor` per entry);
//! - `DelayBasedEstimate`: the bounded estimate reached the delay-based estimate or the max.

use super::likelihood::ChannelParameters;
use super::{mul, LossBasedBweV2, LossV2State, MIN_BITRATE};
use crate::units::{Bitrate, Duration, Time};

/// First HOLD duration (libwebrtc `kInitHoldDuration`).
pub(super) const INIT_HOLD_DURATION: Duration = Duration::from_ms(300);
/// Longest HOLD (libwebrtc `kMaxHoldDuration`).
const MAX_HOLD_DURATION: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug)]
pub(super) struct HoldInfo {
    /// The HOLD lasts while the newest observation's send time is before this.
    pub until: Option<Time>,
    pub duration: Duration,
    pub rate: Bitrate,
}

impl HoldInfo {
    pub fn reset() -> Self { HoldInfo { until: None, duration: INIT_HOLD_DURATION, rate: Bitrate::INFINITY } }
}

/// The padding period started by the last rise while loss-limited.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PaddingInfo {
    /// `None` = −∞ (no padding period).
    pub rate: Option<Bitrate>,
    pub since: Option<Time>,
}

impl LossBasedBweV2 {
    pub(super) fn is_in_loss_limited_state(&self) -> bool { self.result.state != LossV2State::DelayBasedEstimate }

    /// Within `padding_duration` of the start of the padding period.
    pub(super) fn padding_active(&self) -> bool {
        match (self.padding.since, self.last_send_time_most_recent_observation) {
            (Some(since), Some(now)) => self.cfg.padding_duration > Duration::ZERO && since + self.cfg.padding_duration >= now,
            _ => false,
        }
    }

    fn increasing_when_loss_limited(&self, old: Bitrate, new: Bitrate) -> bool {
        let rising = matches!(self.result.state, LossV2State::Increasing | LossV2State::IncreaseUsingPadding);
        (old < new || (old == new && rising)) && self.is_in_loss_limited_state()
    }

    /// The padding state lasts `padding_duration` unless the estimate rises again.
    fn can_keep_increasing_state(&self, estimate: Bitrate) -> bool {
        if self.cfg.padding_duration == Duration::ZERO || self.result.state != LossV2State::IncreaseUsingPadding {
            return true;
        }
        self.padding_active() || self.padding.rate.is_none_or(|r| r < estimate)
    }

    /// Apply the post-rules to the best candidate and update the result and state.
    pub(super) fn apply_best_candidate(&mut self, current: ChannelParameters, mut best: ChannelParameters) {
        let now = self.last_send_time_most_recent_observation;
        if best.bandwidth < current.bandwidth {
            self.last_time_estimate_reduced = now;
        }
        // No increase while the average loss exceeds the inherent loss.
        if self.average_reported_loss_ratio > best.inherent_loss
            && self.cfg.not_increase_if_inherent_loss_less_than_average_loss
            && current.bandwidth < best.bandwidth
        {
            best.bandwidth = current.bandwidth;
        }
        if self.is_in_loss_limited_state() {
            // Shortly after a loss-limited update, increases stop at the window's limit.
            if let (Some(rec), Some(now)) = (self.recovering_after_loss, now) {
                if rec + self.cfg.delayed_increase_window > now && best.bandwidth > self.bandwidth_limit_in_current_window {
                    best.bandwidth = self.bandwidth_limit_in_current_window;
                }
            }
            if let (true, Some(acked)) = (self.increasing_when_loss_limited(current.bandwidth, best.bandwidth), self.acked_bitrate) {
                let mut factor = self.cfg.bw_rampup_upper_bound_factor;
                if self.hold.rate.is_finite() && acked < mul(self.hold.rate, self.cfg.bw_rampup_upper_bound_hold_threshold) {
                    factor = self.cfg.bw_rampup_upper_bound_in_hold_factor;
                }
                best.bandwidth = current.bandwidth.max(best.bandwidth.min(mul(acked, factor)));
                // Rise by at least 1 bit/s so that the state can switch to increasing (padding).
                if self.result.state == LossV2State::Decreasing && best.bandwidth == current.bandwidth {
                    best.bandwidth = current.bandwidth + Bitrate::from_bps(1);
                }
            }
        }

        let mut upper = best.bandwidth.min(self.instant_upper_bound());
        if self.delay_based_estimate.is_finite() {
            upper = upper.min(self.delay_based_estimate);
        }
        let bounded = self.instant_lower_bound().max(upper);
        if self.cfg.bound_best_candidate && bounded < best.bandwidth {
            // Lossy path: the estimate itself drops to the bound.
            self.best_bandwidth = Some(bounded);
            self.best_inherent_loss = 0.0;
        } else {
            let mut b = best.bandwidth;
            if self.cfg.lower_bound_by_acked_rate_factor > 0.0 {
                b = b.max(self.instant_lower_bound());
            }
            self.best_bandwidth = Some(b);
            self.best_inherent_loss = best.inherent_loss;
        }

        let below_delay_based = bounded < self.delay_based_estimate;
        let holding = matches!((self.hold.until, now), (Some(u), Some(n)) if u > n);
        if self.result.state == LossV2State::Decreasing && holding && below_delay_based {
            if self.cfg.lower_bound_by_acked_rate_factor > 0.0 {
                self.hold.rate = self.hold.rate.max(self.instant_lower_bound());
            }
            self.result.bandwidth = self.hold.rate.min(bounded);
            return;
        }

        let below_limits = below_delay_based && bounded < self.max_bitrate;
        if self.increasing_when_loss_limited(self.result.bandwidth, bounded) && self.can_keep_increasing_state(bounded) && below_limits {
            let padding = self.cfg.padding_duration > Duration::ZERO;
            if padding && self.padding.rate.is_none_or(|r| bounded > r) {
                self.padding = PaddingInfo { rate: Some(bounded), since: now };
            }
            self.result.state = if padding { LossV2State::IncreaseUsingPadding } else { LossV2State::Increasing };
        } else if below_limits {
            if self.result.state != LossV2State::Decreasing && self.cfg.hold_duration_factor > 0.0 {
                let d = self.hold.duration;
                self.hold = HoldInfo {
                    until: now.map(|n| n + d),
                    duration: (d * self.cfg.hold_duration_factor).min(MAX_HOLD_DURATION),
                    rate: bounded,
                };
            }
            self.padding = PaddingInfo::default();
            self.result.state = LossV2State::Decreasing;
        } else {
            // The delay-based estimate works again: forget HOLD so as not to stay low.
            self.hold = HoldInfo::reset();
            self.padding = PaddingInfo::default();
            self.result.state = LossV2State::DelayBasedEstimate;
        }
        self.result.bandwidth = bounded;

        if self.is_in_loss_limited_state() {
            let expired = match (self.recovering_after_loss, now) {
                (None, _) => true,
                (Some(rec), Some(n)) => rec + self.cfg.delayed_increase_window < n,
                (Some(_), None) => false,
            };
            if expired {
                let best_now = self.best_bandwidth.unwrap_or(bounded);
                self.bandwidth_limit_in_current_window = MIN_BITRATE.max(mul(best_now, self.cfg.max_increase_factor));
                self.recovering_after_loss = now;
            }
        }
    }
}
