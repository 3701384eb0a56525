//! Send-side bandwidth estimation (libwebrtc `send_side_bandwidth_estimation.cc`): the classic
//! loss-based controller of spec 2.9.1, the RTT backoff of spec 2.10, the start phase, and the
//! hook into LossBasedBweV2 (2.9.2) when that is enabled.
//!
//! Its output `A_loss` is always bounded by the delay-based estimate (and REMB, and max): the
//! target of 2.10 is this estimator's `target()`.

use super::loss_v2::{LossBasedBweV2, LossV2State};
use crate::controller::PacketResult;
use crate::units::{Bitrate, Duration, Time};
use std::collections::VecDeque;

/// Spec 2.9.1 / 2.15.
const LIMIT_NUM_PACKETS: i64 = 20;
const LOW_LOSS_THRESHOLD: f64 = 0.02;
const HIGH_LOSS_THRESHOLD: f64 = 0.10;
const INCREASE_INTERVAL: Duration = Duration::from_secs(1);
const DECREASE_INTERVAL: Duration = Duration::from_ms(300);
const MAX_RTCP_FEEDBACK_INTERVAL: Duration = Duration::from_secs(5);
const START_PHASE: Duration = Duration::from_secs(2);
const MAX_HISTORY: usize = 1024;
/// Spec 2.10 RTT backoff.
const RTT_LIMIT: Duration = Duration::from_secs(3);
const RTT_DROP_FRACTION: f64 = 0.8;
const RTT_DROP_INTERVAL: Duration = Duration::from_secs(1);
const RTT_BANDWIDTH_FLOOR: Bitrate = Bitrate::from_kbps(5);
/// libwebrtc `kCongestionControllerMinBitrate`.
pub const MIN_BITRATE_FLOOR: Bitrate = Bitrate::from_kbps(5);

/// RTT backoff (2.10): the propagation RTT, corrected by how long we have been sending
/// without any feedback.
#[derive(Clone, Debug, Default)]
struct RttBackoff {
    last_propagation_rtt_update: Option<Time>,
    last_propagation_rtt: Duration,
    last_packet_sent: Option<Time>,
}

impl RttBackoff {
    fn corrected_rtt(&self) -> Duration {
        let correction = match (self.last_packet_sent, self.last_propagation_rtt_update) {
            (Some(s), Some(u)) => (s - u).max(Duration::ZERO),
            _ => Duration::ZERO,
        };
        correction + self.last_propagation_rtt
    }
}

#[derive(Clone, Debug)]
pub struct SendSideBwe {
    min_bitrate: Bitrate,
    max_bitrate: Bitrate,
    current_target: Bitrate,
    delay_based_limit: Bitrate,
    receiver_limit: Bitrate,
    min_bitrate_history: VecDeque<(Time, Bitrate)>,
    // Classic loss accounting.
    lost_since_last_update: i64,
    expected_since_last_update: i64,
    last_fraction_loss: u8,
    has_decreased_since_last_fraction_loss: bool,
    last_loss_packet_report: Option<Time>,
    first_report_time: Option<Time>,
    time_last_decrease: Option<Time>,
    last_round_trip_time: Duration,
    rtt_backoff: RttBackoff,
    rtt_backoff_enabled: bool,
    acked_rate: Option<Bitrate>,
    v2: Option<LossBasedBweV2>,
    loss_state: LossV2State,
}

impl SendSideBwe {
    pub fn new(v2: Option<LossBasedBweV2>, rtt_backoff_enabled: bool) -> Self {
        SendSideBwe {
            min_bitrate: MIN_BITRATE_FLOOR,
            max_bitrate: Bitrate::from_kbps(1_000_000),
            current_target: Bitrate::ZERO,
            delay_based_limit: Bitrate::INFINITY,
            receiver_limit: Bitrate::INFINITY,
            min_bitrate_history: VecDeque::with_capacity(64),
            lost_since_last_update: 0,
            expected_since_last_update: 0,
            last_fraction_loss: 0,
            has_decreased_since_last_fraction_loss: false,
            last_loss_packet_report: None,
            first_report_time: None,
            time_last_decrease: None,
            last_round_trip_time: Duration::ZERO,
            rtt_backoff: RttBackoff::default(),
            rtt_backoff_enabled,
            acked_rate: None,
            v2,
            loss_state: LossV2State::DelayBasedEstimate,
        }
    }

    /// The loss-based target, never below the configured minimum (libwebrtc `target_rate()`):
    /// after a route change without a start rate the estimate is 0 and the target the minimum,
    /// which is also what the pacing rate is computed from.
    pub fn target(&self) -> Bitrate { self.current_target.max(self.min_bitrate) }
    pub fn min_bitrate(&self) -> Bitrate { self.min_bitrate }
    pub fn fraction_loss(&self) -> u8 { self.last_fraction_loss }
    pub fn round_trip_time(&self) -> Duration { self.last_round_trip_time }
    pub fn delay_based_limit(&self) -> Bitrate { self.delay_based_limit }
    pub fn loss_state(&self) -> LossV2State { self.loss_state }
    pub fn v2(&self) -> Option<&LossBasedBweV2> { self.v2.as_ref() }

    /// `RTT_prop` corrected for missing feedback exceeds 3 s (2.10).
    pub fn is_rtt_above_limit(&self) -> bool { self.rtt_backoff_enabled && self.rtt_backoff.corrected_rtt() > RTT_LIMIT }

    /// Constraints (2.11): a start rate (if given) sets the target directly.
    pub fn set_bitrates(&mut self, start: Option<Bitrate>, min: Bitrate, max: Bitrate, now: Time) {
        self.set_min_max(min, max);
        if let Some(s) = start {
            self.set_send_bitrate(s, now);
        }
    }

    pub fn set_min_max(&mut self, min: Bitrate, max: Bitrate) {
        self.min_bitrate = min.max(MIN_BITRATE_FLOOR);
        self.max_bitrate = if max.is_zero() { Bitrate::INFINITY } else { max.max(self.min_bitrate) };
        if let Some(v2) = self.v2.as_mut() {
            v2.set_min_max_bitrate(self.min_bitrate, self.max_bitrate);
        }
    }

    /// `OnRouteChange`: forget the estimates and loss history; LossBasedBweV2 (libwebrtc
    /// recreates it only when it is used in the start phase, off by default) and the RTT
    /// backoff state survive.
    pub fn on_route_change(&mut self) {
        let (v2, rtt_backoff, enabled) = (self.v2.take(), std::mem::take(&mut self.rtt_backoff), self.rtt_backoff_enabled);
        *self = SendSideBwe::new(v2, enabled);
        self.rtt_backoff = rtt_backoff;
    }

    /// Set the target directly (start rate, probe result), ignoring the delay-based cap once.
    pub fn set_send_bitrate(&mut self, rate: Bitrate, now: Time) {
        self.delay_based_limit = Bitrate::INFINITY;
        self.update_target(rate, now);
        self.min_bitrate_history.clear();
    }

    pub fn update_delay_based_estimate(&mut self, now: Time, rate: Bitrate) {
        self.delay_based_limit = if rate.is_zero() { Bitrate::INFINITY } else { rate };
        self.apply_target_limits(now);
    }

    pub fn update_receiver_estimate(&mut self, now: Time, rate: Bitrate) {
        self.receiver_limit = if rate.is_zero() { Bitrate::INFINITY } else { rate };
        self.apply_target_limits(now);
    }

    pub fn set_acknowledged_rate(&mut self, rate: Option<Bitrate>) {
        self.acked_rate = rate;
        if let (Some(r), Some(v2)) = (rate, self.v2.as_mut()) {
            v2.set_acknowledged_bitrate(r);
        }
    }

    pub fn update_rtt(&mut self, rtt: Duration) {
        if rtt > Duration::ZERO && rtt.is_finite() {
            self.last_round_trip_time = rtt;
        }
    }

    pub fn update_propagation_rtt(&mut self, now: Time, rtt: Duration) {
        self.rtt_backoff.last_propagation_rtt_update = Some(now);
        self.rtt_backoff.last_propagation_rtt = rtt.max(Duration::ZERO);
    }

    pub fn on_sent_packet(&mut self, send_time: Time) {
        self.rtt_backoff.last_packet_sent = Some(self.rtt_backoff.last_packet_sent.map_or(send_time, |t| t.max(send_time)));
    }

    /// A loss report: `lost` of `expected` packets (2.9.1). Accumulates until ≥ 20 expected.
    pub fn update_packets_lost(&mut self, lost: i64, expected: i64, now: Time) {
        if self.first_report_time.is_none() {
            self.first_report_time = Some(now);
        }
        if expected <= 0 {
            return;
        }
        let expected_total = self.expected_since_last_update + expected;
        if expected_total < LIMIT_NUM_PACKETS {
            self.expected_since_last_update = expected_total;
            self.lost_since_last_update += lost;
            return;
        }
        self.has_decreased_since_last_fraction_loss = false;
        let lost_q8 = (self.lost_since_last_update + lost).max(0) << 8;
        self.last_fraction_loss = (lost_q8 / expected_total).min(255) as u8;
        self.lost_since_last_update = 0;
        self.expected_since_last_update = 0;
        self.last_loss_packet_report = Some(now);
        self.update_estimate(now);
    }

    /// Feed a transport feedback to LossBasedBweV2 (2.9.2) and re-evaluate.
    pub fn update_loss_based_estimator(&mut self, packets: &[PacketResult], in_alr: bool, now: Time) {
        let limit = self.delay_based_limit;
        if let Some(v2) = self.v2.as_mut() {
            v2.update(packets, limit, in_alr);
            self.update_estimate(now);
        }
    }

    fn in_start_phase(&self, now: Time) -> bool { self.first_report_time.is_none_or(|t| now - t < START_PHASE) }

    fn v2_ready(&self) -> bool { self.v2.as_ref().is_some_and(|v| v.is_ready()) }

    fn v2_ready_in_start_phase(&self) -> bool { self.v2.as_ref().is_some_and(|v| v.ready_to_use_in_start_phase()) }

    /// The periodic update (every 25 ms tick, every loss report, 2.9.1 / 2.10).
    pub fn update_estimate(&mut self, now: Time) {
        if self.is_rtt_above_limit() {
            let since = self.time_last_decrease.map_or(Duration::MAX, |t| now - t);
            if since >= RTT_DROP_INTERVAL && self.current_target > RTT_BANDWIDTH_FLOOR {
                self.time_last_decrease = Some(now);
                let r = self.current_target.scale(RTT_DROP_FRACTION).max(RTT_BANDWIDTH_FLOOR);
                self.update_target(r, now);
                return;
            }
            self.apply_target_limits(now);
            return;
        }
        // Start phase: trust the delay-based estimate (and REMB) while no loss was seen, so that
        // the initial probes can ramp the target up (2.9.1).
        if self.last_fraction_loss == 0 && self.in_start_phase(now) && !self.v2_ready_in_start_phase() {
            let mut r = self.current_target;
            if self.receiver_limit.is_finite() {
                r = r.max(self.receiver_limit);
            }
            if self.delay_based_limit.is_finite() {
                r = r.max(self.delay_based_limit);
            }
            if r != self.current_target {
                self.min_bitrate_history.clear();
                // The history keeps the rate *before* the jump (libwebrtc, with or without v2).
                self.min_bitrate_history.push_back((now, self.current_target));
                self.update_target(r, now);
                return;
            }
        }
        self.update_min_history(now);
        let Some(last_report) = self.last_loss_packet_report else {
            self.apply_target_limits(now);
            return;
        };
        if self.v2_ready() {
            if let Some(v2) = self.v2.as_ref() {
                let (r, state) = v2.result();
                self.loss_state = state;
                self.update_target(r, now);
                return;
            }
        }
        if now - last_report < MAX_RTCP_FEEDBACK_INTERVAL * 6 / 5 {
            let loss = f64::from(self.last_fraction_loss) / 256.0;
            if loss <= LOW_LOSS_THRESHOLD {
                // +8 % of the minimum over the last second, +1 kbit/s so we never get stuck.
                let base = self.min_bitrate_history.front().map_or(self.current_target, |h| h.1);
                let r = base.scale(1.08) + Bitrate::from_kbps(1);
                self.update_target(r, now);
                return;
            } else if loss > HIGH_LOSS_THRESHOLD {
                let since = self.time_last_decrease.map_or(Duration::MAX, |t| now - t);
                if !self.has_decreased_since_last_fraction_loss && since >= DECREASE_INTERVAL + self.last_round_trip_time {
                    self.time_last_decrease = Some(now);
                    // × (1 − p/2) with p in Q8: (512 − p)/512.
                    let r = self.current_target.scale(f64::from(512 - i32::from(self.last_fraction_loss)) / 512.0);
                    self.has_decreased_since_last_fraction_loss = true;
                    self.update_target(r, now);
                    return;
                }
            }
            // 2 % < p ≤ 10 %: hold.
        }
        self.apply_target_limits(now);
    }

    fn update_min_history(&mut self, now: Time) {
        // Drop entries older than the 1 s increase interval (+1 ms as libwebrtc's ms rounding).
        while let Some(&(t, _)) = self.min_bitrate_history.front() {
            if now - t + Duration::from_ms(1) > INCREASE_INTERVAL {
                self.min_bitrate_history.pop_front();
            } else {
                break;
            }
        }
        // Sliding-window minimum: drop entries not smaller than the current target.
        while let Some(&(_, r)) = self.min_bitrate_history.back() {
            if self.current_target <= r {
                self.min_bitrate_history.pop_back();
            } else {
                break;
            }
        }
        self.min_bitrate_history.push_back((now, self.current_target));
        // Bound the history even if time runs backwards.
        if self.min_bitrate_history.len() > MAX_HISTORY {
            self.min_bitrate_history.pop_front();
        }
    }

    fn upper_limit(&self) -> Bitrate { self.delay_based_limit.min(self.receiver_limit).min(self.max_bitrate) }

    fn update_target(&mut self, rate: Bitrate, _now: Time) {
        self.current_target = rate.min(self.upper_limit()).max(self.min_bitrate);
    }

    fn apply_target_limits(&mut self, now: Time) { self.update_target(self.current_target, now); }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kbps(v: i64) -> Bitrate { Bitrate::from_kbps(v) }
    fn ms(v: i64) -> Time { Time::from_ms(v) }

    fn bwe() -> SendSideBwe {
        let mut b = SendSideBwe::new(None, true);
        b.set_bitrates(Some(kbps(1000)), kbps(30), kbps(10_000), ms(0));
        b
    }

    /// Target 1000 kbit/s, first loss report at 0 (starting the 2 s start phase), and the
    /// delay-based limit lifted at 3 s.
    fn after_start_phase() -> SendSideBwe {
        let mut b = bwe();
        b.update_delay_based_estimate(ms(0), kbps(1000));
        b.update_packets_lost(0, 100, ms(0));
        assert_eq!(b.target(), kbps(1000));
        b.update_delay_based_estimate(ms(3000), kbps(100_000));
        b
    }

    #[test]
    fn start_phase_follows_delay_based_estimate() {
        let mut b = bwe();
        b.update_delay_based_estimate(ms(100), kbps(2500));
        b.update_estimate(ms(125));
        assert_eq!(b.target(), kbps(2500));
        // Capped by the delay-based estimate when it falls.
        b.update_delay_based_estimate(ms(200), kbps(800));
        assert_eq!(b.target(), kbps(800));
    }

    #[test]
    fn low_loss_increases_eight_percent_of_one_second_minimum() {
        let mut b = after_start_phase();
        // After the start phase: each update = min over the last second · 1.08 + 1 kbit/s.
        b.update_packets_lost(1, 100, ms(3000)); // 1 % loss (Q8 = 2)
        assert_eq!(b.fraction_loss(), 2);
        // History was [(3000, 1000)]: 1000·1.08 + 1 = 1081.
        assert_eq!(b.target(), kbps(1081));
        // Within the same second the minimum stays 1000 -> same value.
        b.update_estimate(ms(3500));
        assert_eq!(b.target(), kbps(1081));
        // A second later the 1000 entry has aged out: 1081·1.08 + 1 = 1168.48.
        b.update_estimate(ms(4100));
        assert_eq!(b.target(), Bitrate::from_bps(1_168_480));
    }

    #[test]
    fn high_loss_decreases_by_half_the_loss_once_per_report() {
        let mut b = after_start_phase();
        // 20 % loss: Q8 = 51, factor (512 − 51)/512.
        b.update_packets_lost(20, 100, ms(3000));
        assert_eq!(b.fraction_loss(), 51);
        assert_eq!(b.target(), kbps(1000).scale(461.0 / 512.0));
        let after = b.target();
        // Only once per report.
        b.update_estimate(ms(4000));
        assert_eq!(b.target(), after);
        // 5 % loss: hold.
        b.update_packets_lost(5, 100, ms(5000));
        assert_eq!(b.target(), after);
    }

    #[test]
    fn fewer_than_twenty_packets_accumulate() {
        let mut b = bwe();
        b.update_packets_lost(5, 10, ms(0));
        assert_eq!(b.fraction_loss(), 0);
        assert!(b.last_loss_packet_report.is_none());
        b.update_packets_lost(0, 10, ms(50));
        // 5 of 20 = 25 % -> Q8 64.
        assert_eq!(b.fraction_loss(), 64);
    }

    #[test]
    fn rtt_backoff_after_three_seconds_without_feedback() {
        let mut b = bwe();
        b.update_propagation_rtt(ms(0), Duration::from_ms(100));
        b.on_sent_packet(ms(2000));
        b.update_estimate(ms(2000));
        assert_eq!(b.target(), kbps(1000));
        b.on_sent_packet(ms(3000)); // corrected RTT 3.1 s > 3 s
        assert!(b.is_rtt_above_limit());
        b.update_estimate(ms(3000));
        assert_eq!(b.target(), kbps(800));
        b.update_estimate(ms(3500));
        assert_eq!(b.target(), kbps(800), "at most once per second");
        b.update_estimate(ms(4000));
        assert_eq!(b.target(), kbps(640));
    }
}
