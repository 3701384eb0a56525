//! libwebrtc's `loss_based_bwe_v2_test.cc` (branch-heads/7871, commit
//! 1f975dfd761af6e5d76d28333191973b258d82a8), every case with the same inputs and
//! expectations. Each case configures the estimator with the same `WebRTC-Bwe-LossBasedBweV2`
//! field-trial string as libwebrtc's, parsed by [`trial`] into [`LossV2Config`]. libwebrtc's
//! `while (state != X)` loops are bounded here (a hang would be a failure).

use super::*;
use crate::controller::SentPacket;
use crate::units::{Bytes, Duration};

const OBSERVATION_DURATION_LOWER_BOUND: Duration = Duration::from_ms(250);
const DELAYED_INCREASE_WINDOW: Duration = Duration::from_ms(300);
const PACKET_SIZE: i64 = 15_000;
const MAX_LOOPS: usize = 1000;

fn kbps(v: i64) -> Bitrate { Bitrate::from_kbps(v) }
fn ms(v: i64) -> Duration { Duration::from_ms(v) }
fn at(d: Duration) -> Time { Time::ZERO + d }
/// `k × kObservationDurationLowerBound` after zero.
fn obs(k: i64) -> Time { at(OBSERVATION_DURATION_LOWER_BOUND * k) }
const INF: Bitrate = Bitrate::INFINITY;

/// The parameters of a `WebRTC-Bwe-LossBasedBweV2/…/` field trial (the part between the
/// slashes) applied to libwebrtc's defaults. Unknown keys fail the test.
fn trial(s: &str) -> LossV2Config {
    let mut c = LossV2Config::default();
    for item in s.split(',').filter(|i| !i.is_empty()) {
        let (k, v) = item.split_once(':').unwrap_or_else(|| panic!("no value in {item:?}"));
        let f = || v.parse::<f64>().unwrap_or_else(|_| panic!("{k}: not a number: {v}"));
        let b = || v.parse::<bool>().unwrap_or_else(|_| panic!("{k}: not a bool: {v}"));
        let rate = || Bitrate::from_bps_f64(v.strip_suffix("kbps").map(|x| x.parse::<f64>().unwrap() * 1000.0).unwrap_or_else(|| v.strip_suffix("bps").unwrap().parse().unwrap()));
        let dur = || Duration::from_ms_f64(v.strip_suffix("ms").map(|x| x.parse::<f64>().unwrap()).unwrap_or_else(|| v.strip_suffix('s').unwrap().parse::<f64>().unwrap() * 1000.0));
        match k {
            "Enabled" => c.enabled = b(),
            "BwRampupUpperBoundFactor" => c.bw_rampup_upper_bound_factor = f(),
            "BwRampupUpperBoundInHoldFactor" => c.bw_rampup_upper_bound_in_hold_factor = f(),
            "BwRampupUpperBoundHoldThreshold" => c.bw_rampup_upper_bound_hold_threshold = f(),
            "BwRampupAccelMaxFactor" => c.rampup_acceleration_max_factor = f(),
            "BwRampupAccelMaxoutTime" => c.rampup_acceleration_maxout_time = dur(),
            "CandidateFactors" => c.candidate_factors = v.split('|').map(|x| x.parse().unwrap()).collect(),
            "HigherBwBiasFactor" => c.higher_bandwidth_bias_factor = f(),
            "HigherLogBwBiasFactor" => c.higher_log_bandwidth_bias_factor = f(),
            "InherentLossLowerBound" => c.inherent_loss_lower_bound = f(),
            "LossThresholdOfHighBandwidthPreference" => c.loss_threshold_of_high_bandwidth_preference = f(),
            "BandwidthPreferenceSmoothingFactor" => c.bandwidth_preference_smoothing_factor = f(),
            "InherentLossUpperBoundBwBalance" => c.inherent_loss_upper_bound_bandwidth_balance = rate(),
            "InherentLossUpperBoundOffset" => c.inherent_loss_upper_bound_offset = f(),
            "InitialInherentLossEstimate" => c.initial_inherent_loss_estimate = f(),
            "NewtonIterations" => c.newton_iterations = v.parse().unwrap(),
            "NewtonStepSize" => c.newton_step_size = f(),
            "AckedRateCandidate" => c.append_acknowledged_rate_candidate = b(),
            "DelayBasedCandidate" => c.append_delay_based_estimate_candidate = b(),
            "UpperBoundCandidateInAlr" => c.append_upper_bound_candidate_in_alr = b(),
            "ObservationDurationLowerBound" => c.observation_duration_lower_bound = dur(),
            "ObservationWindowSize" => c.observation_window_size = v.parse().unwrap(),
            "SendingRateSmoothingFactor" => c.sending_rate_smoothing_factor = f(),
            "InstantUpperBoundTemporalWeightFactor" => c.instant_upper_bound_temporal_weight_factor = f(),
            "InstantUpperBoundBwBalance" => c.instant_upper_bound_bandwidth_balance = rate(),
            "InstantUpperBoundLossOffset" => c.instant_upper_bound_loss_offset = f(),
            "TemporalWeightFactor" => c.temporal_weight_factor = f(),
            "BwBackoffLowerBoundFactor" => c.bandwidth_backoff_lower_bound_factor = f(),
            "MaxIncreaseFactor" => c.max_increase_factor = f(),
            "DelayedIncreaseWindow" => c.delayed_increase_window = dur(),
            "NotIncreaseIfInherentLossLessThanAverageLoss" => c.not_increase_if_inherent_loss_less_than_average_loss = b(),
            "NotUseAckedRateInAlr" => c.not_use_acked_rate_in_alr = b(),
            "UseInStartPhase" => c.use_in_start_phase = b(),
            "MinNumObservations" => c.min_num_observations = v.parse().unwrap(),
            "LowerBoundByAckedRateFactor" => c.lower_bound_by_acked_rate_factor = f(),
            "HoldDurationFactor" => c.hold_duration_factor = f(),
            "UseByteLossRate" => c.use_byte_loss_rate = b(),
            "PaddingDuration" => c.padding_duration = dur(),
            "BoundBestCandidate" => c.bound_best_candidate = b(),
            "MedianSendingRateFactor" => c.median_sending_rate_factor = f(),
            _ => panic!("unknown LossBasedBweV2 key {k}"),
        }
    }
    c
}

/// The fixture's `Config(enabled, valid)`.
fn config(enabled: bool, valid: bool) -> LossV2Config {
    trial(&format!(
        "Enabled:{enabled},BwRampupUpperBoundFactor:{},CandidateFactors:1.1|1.0|0.95,HigherBwBiasFactor:0.01,\
         InherentLossLowerBound:0.001,InherentLossUpperBoundBwBalance:14kbps,InherentLossUpperBoundOffset:0.9,\
         InitialInherentLossEstimate:0.01,NewtonIterations:2,NewtonStepSize:0.4,ObservationWindowSize:15,\
         SendingRateSmoothingFactor:0.01,InstantUpperBoundTemporalWeightFactor:0.97,InstantUpperBoundBwBalance:90kbps,\
         InstantUpperBoundLossOffset:0.1,TemporalWeightFactor:0.98,MinNumObservations:1,\
         ObservationDurationLowerBound:250ms,MaxIncreaseFactor:1.500000,DelayedIncreaseWindow:300ms",
        if valid { "1.2" } else { "0.0" }
    ))
}

/// The fixture's `ShortObservationConfig(custom)`.
fn short(custom: &str) -> LossV2Config { trial(&format!("MinNumObservations:1,ObservationWindowSize:2,{custom}")) }

fn bwe(cfg: LossV2Config) -> LossBasedBweV2 { LossBasedBweV2::new(cfg) }

fn estimate(e: &LossBasedBweV2) -> Bitrate { e.result().0 }
fn state(e: &LossBasedBweV2) -> LossV2State { e.result().1 }

/// The fixture's packet-result factories; sequence numbers continue across calls.
#[derive(Default)]
struct Packets {
    seq: u64,
}

impl Packets {
    fn packet(&mut self, send: Time, recv: Option<Time>, size: i64) -> PacketResult {
        let seq = self.seq;
        self.seq += 1;
        packet(seq, send, recv, size)
    }

    /// Two received packets sent 250 ms apart.
    fn received(&mut self, t0: Time) -> Vec<PacketResult> {
        let d = OBSERVATION_DURATION_LOWER_BOUND;
        vec![self.packet(t0, Some(t0 + d), PACKET_SIZE), self.packet(t0 + d, Some(t0 + d * 2), PACKET_SIZE)]
    }

    /// Ten packets 250 ms apart, the last one (of `lost_size` bytes) lost.
    fn loss_10p(&mut self, t0: Time, lost_size: i64) -> Vec<PacketResult> {
        let d = OBSERVATION_DURATION_LOWER_BOUND;
        (0..10).map(|i| if i < 9 { self.packet(t0 + d * i, Some(t0 + d * (i + 1)), PACKET_SIZE) } else { self.packet(t0 + d * i, None, lost_size) }).collect()
    }

    /// Two packets 250 ms apart, the second lost.
    fn loss_50p(&mut self, t0: Time) -> Vec<PacketResult> {
        let d = OBSERVATION_DURATION_LOWER_BOUND;
        vec![self.packet(t0, Some(t0 + d), PACKET_SIZE), self.packet(t0 + d, None, PACKET_SIZE)]
    }

    /// `n` lost packets: n − 1 sent 10 ms apart from `t0`, the last at `t0 + 250 ms`.
    fn loss_100p(&mut self, t0: Time, n: i64) -> Vec<PacketResult> {
        let mut v: Vec<_> = (0..n - 1).map(|i| self.packet(t0 + ms(i * 10), None, PACKET_SIZE)).collect();
        v.push(self.packet(t0 + OBSERVATION_DURATION_LOWER_BOUND, None, PACKET_SIZE));
        v
    }
}

fn packet(seq: u64, send: Time, recv: Option<Time>, size: i64) -> PacketResult {
    PacketResult {
        sent: SentPacket { seq, size: Bytes::new(size), send_time: send, probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO },
        recv_time: recv,
    }
}

/// Feed `received(obs(k))` for k = first, first + 1, … until `until` holds; returns the next k.
fn feed_received_until(e: &mut LossBasedBweV2, p: &mut Packets, first: i64, delay_based: Bitrate, in_alr: bool, until: impl Fn(&LossBasedBweV2) -> bool) -> i64 {
    let mut k = first;
    for _ in 0..MAX_LOOPS {
        if until(e) {
            return k;
        }
        e.update(&p.received(obs(k)), delay_based, in_alr);
        k += 1;
    }
    panic!("condition not reached after {MAX_LOOPS} feedbacks");
}

#[test]
fn enabled_when_given_valid_configuration_values() {
    assert!(bwe(config(true, true)).is_enabled());
}

#[test]
fn disabled_when_given_disabled_configuration() {
    assert!(!bwe(config(false, true)).is_enabled());
}

#[test]
fn disabled_when_given_non_valid_configuration_values() {
    assert!(!bwe(config(true, false)).is_enabled());
}

#[test]
fn disabled_when_given_non_positive_candidate_factor() {
    assert!(!bwe(trial("CandidateFactors:-1.3|1.1")).is_enabled());
    assert!(!bwe(trial("CandidateFactors:0.0|1.1")).is_enabled());
}

#[test]
fn disabled_when_given_configuration_that_does_not_allow_generating_candidates() {
    assert!(!bwe(trial("CandidateFactors:1.0,AckedRateCandidate:false,DelayBasedCandidate:false")).is_enabled());
}

#[test]
fn returns_delay_based_estimate_when_disabled() {
    let mut e = bwe(config(false, true));
    e.update(&[], kbps(100), false);
    assert_eq!(estimate(&e), kbps(100));
}

#[test]
fn returns_delay_based_estimate_when_when_given_non_valid_configuration_values() {
    let mut e = bwe(config(true, false));
    e.update(&[], kbps(100), false);
    assert_eq!(estimate(&e), kbps(100));
}

#[test]
fn bandwidth_estimate_given_initialization_and_then_feedback() {
    let mut p = Packets::default();
    let fb = p.received(Time::ZERO);
    let mut e = bwe(config(true, true));
    e.set_bandwidth_estimate(kbps(600));
    e.update(&fb, INF, false);
    assert!(e.is_ready());
    assert!(estimate(&e).is_finite());
}

#[test]
fn no_bandwidth_estimate_given_no_initialization() {
    let mut p = Packets::default();
    let fb = p.received(Time::ZERO);
    let mut e = bwe(config(true, true));
    e.update(&fb, INF, false);
    assert!(!e.is_ready());
    assert_eq!(estimate(&e), INF);
}

#[test]
fn no_bandwidth_estimate_given_not_enough_feedback() {
    let half = OBSERVATION_DURATION_LOWER_BOUND / 2;
    // Sequence numbers left at 0 as in libwebrtc.
    let fb = [packet(0, Time::ZERO, Some(at(half)), 15_000), packet(0, at(half), Some(obs(1)), 15_000)];
    let mut e = bwe(config(true, true));
    e.set_bandwidth_estimate(kbps(600));
    assert!(!e.is_ready());
    assert_eq!(estimate(&e), INF);
    e.update(&fb, INF, false);
    assert!(!e.is_ready());
    assert_eq!(estimate(&e), INF);
}

#[test]
fn set_value_is_the_estimate_until_additional_feedback_has_been_received() {
    let mut p = Packets::default();
    let (fb1, fb2) = (p.received(Time::ZERO), p.received(obs(2)));
    let mut e = bwe(config(true, true));
    e.set_bandwidth_estimate(kbps(600));
    e.update(&fb1, INF, false);
    assert_ne!(estimate(&e), kbps(600));
    e.set_bandwidth_estimate(kbps(600));
    assert_eq!(estimate(&e), kbps(600));
    e.update(&fb2, INF, false);
    assert_ne!(estimate(&e), kbps(600));
}

#[test]
fn set_acknowledged_bitrate_only_affects_the_bwe_when_additional_feedback_is_given() {
    let mut p = Packets::default();
    let (fb1, fb2) = (p.received(Time::ZERO), p.received(obs(2)));
    let (mut e1, mut e2) = (bwe(config(true, true)), bwe(config(true, true)));
    e1.set_bandwidth_estimate(kbps(600));
    e2.set_bandwidth_estimate(kbps(600));
    e1.update(&fb1, INF, false);
    e2.update(&fb1, INF, false);
    assert_eq!(estimate(&e1), kbps(660));
    e1.set_acknowledged_bitrate(kbps(900));
    assert_eq!(estimate(&e1), kbps(660));
    e1.update(&fb2, INF, false);
    e2.update(&fb2, INF, false);
    assert_ne!(estimate(&e1), estimate(&e2));
}

#[test]
fn bandwidth_estimate_is_capped_to_be_tcp_fair_given_too_high_loss_rate() {
    let mut p = Packets::default();
    let fb = p.loss_100p(Time::ZERO, 2);
    let mut e = bwe(config(true, true));
    e.set_bandwidth_estimate(kbps(600));
    e.update(&fb, INF, false);
    assert_eq!(estimate(&e), kbps(100));
}

#[test]
fn bandwidth_estimate_capped_by_delay_based_estimate_when_network_normal() {
    let mut p = Packets::default();
    let (fb1, fb2) = (p.received(Time::ZERO), p.received(obs(2)));
    let mut e = bwe(config(true, true));
    e.set_bandwidth_estimate(kbps(600));
    e.update(&fb1, INF, false);
    // An infinite delay-based estimate does not bound the increase …
    assert!(estimate(&e) > kbps(600));
    e.update(&fb2, kbps(500), false);
    // … a finite one does.
    assert_eq!(estimate(&e), kbps(500));
}

#[test]
fn use_acked_bitrate_for_emegency_back_off() {
    let mut p = Packets::default();
    let (fb1, fb2) = (p.loss_50p(Time::ZERO), p.loss_100p(obs(2), 2));
    let mut e = bwe(config(true, true));
    e.set_bandwidth_estimate(kbps(600));
    let acked = kbps(300);
    e.set_acknowledged_bitrate(acked);
    e.update(&fb1, INF, false);
    e.update(&fb2, INF, false);
    assert!(estimate(&e) <= acked);
}

#[test]
fn no_bwe_change_if_observation_duration_unchanged() {
    let mut p = Packets::default();
    let fb1 = p.received(Time::ZERO);
    let mut e = bwe(config(true, true));
    e.set_bandwidth_estimate(kbps(600));
    e.set_acknowledged_bitrate(kbps(300));
    e.update(&fb1, INF, false);
    let first = estimate(&e);
    // The same feedback again.
    e.update(&fb1, INF, false);
    assert_eq!(estimate(&e), first);
}

#[test]
fn no_bwe_change_if_observation_duration_is_small_and_network_normal() {
    let mut p = Packets::default();
    let (fb1, fb2) = (p.received(Time::ZERO), p.received(at(OBSERVATION_DURATION_LOWER_BOUND - ms(1))));
    let mut e = bwe(config(true, true));
    e.set_bandwidth_estimate(kbps(600));
    e.update(&fb1, INF, false);
    let first = estimate(&e);
    e.update(&fb2, INF, false);
    assert_eq!(estimate(&e), first);
}

#[test]
fn no_bwe_increase_if_observation_duration_is_small_and_network_underusing() {
    let mut p = Packets::default();
    let (fb1, fb2) = (p.received(Time::ZERO), p.received(at(OBSERVATION_DURATION_LOWER_BOUND - ms(1))));
    let mut e = bwe(config(true, true));
    e.set_bandwidth_estimate(kbps(600));
    e.update(&fb1, INF, false);
    let first = estimate(&e);
    e.update(&fb2, INF, false);
    assert!(estimate(&e) <= first);
}

#[test]
fn increase_to_delay_based_estimate_if_no_loss_or_delay_increase() {
    let mut p = Packets::default();
    let (fb1, fb2) = (p.received(Time::ZERO), p.received(obs(2)));
    let mut e = bwe(config(true, true));
    let delay_based = kbps(5000);
    e.set_bandwidth_estimate(kbps(600));
    e.update(&fb1, delay_based, false);
    assert_eq!(estimate(&e), delay_based);
    e.update(&fb2, delay_based, false);
    assert_eq!(estimate(&e), delay_based);
}

#[test]
fn increase_by_hold_factor_after_loss_based_bwe_backs_off() {
    let mut p = Packets::default();
    let mut e = bwe(short(""));
    let delay_based = kbps(5000);
    e.set_bandwidth_estimate(kbps(600));
    e.set_acknowledged_bitrate(kbps(100));
    e.update(&p.loss_100p(Time::ZERO, 2), delay_based, false);
    let at_loss = estimate(&e);
    feed_received_until(&mut e, &mut p, 2, delay_based, false, |e| state(e) == LossV2State::IncreaseUsingPadding);
    // BwRampupUpperBoundInHoldFactor is 1.2.
    assert_eq!(estimate(&e), mul(at_loss, 1.2));
}

#[test]
fn loss_based_state_is_delay_based_estimate_after_network_recovering() {
    let mut p = Packets::default();
    let mut e = bwe(short("CandidateFactors:100|1|0.5,InstantUpperBoundBwBalance:10000kbps,MaxIncreaseFactor:100,NotIncreaseIfInherentLossLessThanAverageLoss:false"));
    let delay_based = kbps(600);
    e.set_bandwidth_estimate(kbps(600));
    e.set_acknowledged_bitrate(kbps(300));
    e.update(&p.loss_100p(Time::ZERO, 2), delay_based, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    e.set_acknowledged_bitrate(kbps(600));
    e.update(&p.received(obs(1)), delay_based, false);
    assert_eq!(state(&e), LossV2State::DelayBasedEstimate);
    e.set_acknowledged_bitrate(kbps(600));
    e.update(&p.received(obs(2)), delay_based, false);
    assert_eq!(state(&e), LossV2State::DelayBasedEstimate);
}

#[test]
fn loss_based_state_is_not_delay_based_estimate_if_delay_based_estimate_infinite() {
    let mut p = Packets::default();
    let mut e = bwe(short("CandidateFactors:100|1|0.5,InstantUpperBoundBwBalance:10000kbps,MaxIncreaseFactor:100"));
    e.set_bandwidth_estimate(kbps(600));
    e.update(&p.loss_100p(Time::ZERO, 2), INF, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    e.set_acknowledged_bitrate(kbps(600));
    e.update(&p.received(obs(1)), INF, false);
    assert_ne!(state(&e), LossV2State::DelayBasedEstimate);
}

#[test]
fn increase_by_factor_of_acked_bitrate_after_loss_based_bwe_backs_off() {
    let mut p = Packets::default();
    let mut e = bwe(short("LossThresholdOfHighBandwidthPreference:0.99,BwRampupUpperBoundFactor:1.2,InstantUpperBoundBwBalance:10000kbps,"));
    let delay_based = kbps(5000);
    e.set_bandwidth_estimate(kbps(600));
    e.set_acknowledged_bitrate(kbps(300));
    e.update(&p.loss_100p(Time::ZERO, 2), delay_based, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    let estimate_1 = estimate(&e);
    assert!(estimate_1 < kbps(600));
    e.set_acknowledged_bitrate(mul(estimate_1, 0.9));
    let k = feed_received_until(&mut e, &mut p, 1, delay_based, false, |e| state(e) == LossV2State::IncreaseUsingPadding);
    // Capped by acked rate × BwRampupUpperBoundFactor.
    let result = estimate(&e);
    assert_eq!(result, mul(mul(estimate_1, 0.9), 1.2));
    // No decrease without loss when the acked rate drops.
    e.set_acknowledged_bitrate(mul(estimate_1, 0.9));
    e.update(&p.received(obs(k)), delay_based, false);
    assert_eq!(estimate(&e), result);
}

#[test]
fn ensure_increase_even_if_acked_bitrate_bound() {
    let mut p = Packets::default();
    let mut e = bwe(short("LossThresholdOfHighBandwidthPreference:0.99,BwRampupUpperBoundFactor:1.2,InstantUpperBoundBwBalance:10000kbps,"));
    let delay_based = kbps(5000);
    e.set_bandwidth_estimate(kbps(600));
    e.set_acknowledged_bitrate(kbps(300));
    e.update(&p.loss_100p(Time::ZERO, 2), delay_based, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    let estimate_1 = estimate(&e);
    assert!(estimate_1 < kbps(600));
    e.set_acknowledged_bitrate(estimate_1 / 2);
    feed_received_until(&mut e, &mut p, 1, delay_based, false, |e| state(e) == LossV2State::IncreaseUsingPadding);
    // The estimate rises by 1 bit/s.
    assert_eq!(estimate(&e), estimate_1 + Bitrate::from_bps(1));
}

#[test]
fn estimate_bitrate_is_bounded_during_delayed_window_after_loss_based_bwe_backs_off() {
    let mut p = Packets::default();
    let fb1 = p.received(Time::ZERO);
    let fb2 = p.loss_50p(at(DELAYED_INCREASE_WINDOW - ms(2)));
    let fb3 = p.received(at(DELAYED_INCREASE_WINDOW - ms(1)));
    let mut e = bwe(config(true, true));
    let delay_based = kbps(5000);
    e.set_bandwidth_estimate(kbps(600));
    e.set_acknowledged_bitrate(kbps(300));
    e.update(&fb1, delay_based, false);
    e.set_acknowledged_bitrate(kbps(5000));
    e.update(&fb2, delay_based, false);
    let estimate_2 = estimate(&e);
    e.update(&fb3, delay_based, false);
    // Sent within the delayed increase window: no change.
    assert_eq!(estimate(&e), estimate_2);
}

#[test]
fn keep_increasing_estimate_after_delayed_increase_window() {
    let mut p = Packets::default();
    let fb1 = p.received(Time::ZERO);
    let fb2 = p.received(at(DELAYED_INCREASE_WINDOW - ms(1)));
    let fb3 = p.received(at(DELAYED_INCREASE_WINDOW + ms(1)));
    let mut e = bwe(config(true, true));
    let delay_based = kbps(5000);
    e.set_bandwidth_estimate(kbps(600));
    e.set_acknowledged_bitrate(kbps(300));
    e.update(&fb1, delay_based, false);
    e.set_acknowledged_bitrate(kbps(5000));
    e.update(&fb2, delay_based, false);
    let estimate_2 = estimate(&e);
    e.update(&fb3, delay_based, false);
    assert!(estimate(&e) >= estimate_2);
}

#[test]
fn not_increase_if_inherent_loss_less_than_average_loss() {
    let mut p = Packets::default();
    let mut e = bwe(short("CandidateFactors:1.2,NotIncreaseIfInherentLossLessThanAverageLoss:true"));
    e.set_bandwidth_estimate(kbps(600));
    e.update(&p.loss_10p(Time::ZERO, PACKET_SIZE), INF, false);
    e.update(&p.loss_10p(obs(1), PACKET_SIZE), INF, false);
    assert_eq!(estimate(&e), kbps(600));
}

#[test]
fn select_high_bandwidth_candidate_if_loss_rate_is_less_than_threshold() {
    let mut p = Packets::default();
    let mut e = bwe(short("LossThresholdOfHighBandwidthPreference:0.20,NotIncreaseIfInherentLossLessThanAverageLoss:false"));
    let delay_based = kbps(5000);
    e.set_bandwidth_estimate(kbps(600));
    e.update(&p.loss_10p(Time::ZERO, PACKET_SIZE), delay_based, false);
    e.update(&p.loss_10p(obs(1), PACKET_SIZE), delay_based, false);
    // 10 % average loss < 20 % threshold: increase.
    assert!(estimate(&e) > kbps(600));
}

#[test]
fn select_low_bandwidth_candidate_if_loss_rate_is_is_higher_than_threshold() {
    let mut p = Packets::default();
    let mut e = bwe(short("LossThresholdOfHighBandwidthPreference:0.05"));
    let delay_based = kbps(5000);
    e.set_bandwidth_estimate(kbps(600));
    e.update(&p.loss_10p(Time::ZERO, PACKET_SIZE), delay_based, false);
    e.update(&p.loss_10p(obs(1), PACKET_SIZE), delay_based, false);
    // 10 % average loss > 5 % threshold: decrease.
    assert!(estimate(&e) < kbps(600));
}

#[test]
fn estimate_is_not_higher_than_max_bitrate() {
    let mut p = Packets::default();
    let mut e = bwe(config(true, true));
    e.set_min_max_bitrate(kbps(10), kbps(1000));
    e.set_bandwidth_estimate(kbps(1000));
    e.update(&p.received(Time::ZERO), INF, false);
    assert!(estimate(&e) <= kbps(1000));
}

#[test]
fn not_back_off_to_acked_rate_in_alr() {
    let mut p = Packets::default();
    let mut e = bwe(short("InstantUpperBoundBwBalance:100kbps"));
    e.set_min_max_bitrate(kbps(10), kbps(1_000_000));
    e.set_bandwidth_estimate(kbps(600));
    let acked = kbps(100);
    e.set_acknowledged_bitrate(acked);
    e.update(&p.loss_100p(Time::ZERO, 2), kbps(5000), true);
    assert!(estimate(&e) > acked);
    assert!(estimate(&e) < kbps(600));
}

#[test]
fn back_off_to_acked_rate_if_not_in_alr() {
    let mut p = Packets::default();
    let mut e = bwe(short("InstantUpperBoundBwBalance:100kbps"));
    e.set_min_max_bitrate(kbps(10), kbps(1_000_000));
    e.set_bandwidth_estimate(kbps(600));
    let acked = kbps(100);
    e.set_acknowledged_bitrate(acked);
    e.update(&p.loss_100p(Time::ZERO, 2), kbps(5000), false);
    assert_eq!(estimate(&e), acked);
}

#[test]
fn not_ready_to_use_in_start_phase() {
    // No feedback yet.
    assert!(!bwe(short("UseInStartPhase:true")).ready_to_use_in_start_phase());
}

#[test]
fn ready_to_use_in_start_phase() {
    let mut p = Packets::default();
    let mut e = bwe(short("UseInStartPhase:true"));
    e.update(&p.received(Time::ZERO), kbps(600), false);
    assert!(e.ready_to_use_in_start_phase());
}

#[test]
fn bound_estimate_by_acked_rate() {
    let mut p = Packets::default();
    let mut e = bwe(short("LowerBoundByAckedRateFactor:1.0"));
    e.set_min_max_bitrate(kbps(10), kbps(1_000_000));
    e.set_bandwidth_estimate(kbps(600));
    e.set_acknowledged_bitrate(kbps(500));
    e.update(&p.loss_100p(Time::ZERO, 2), INF, false);
    assert_eq!(estimate(&e), kbps(500));
}

#[test]
fn not_bound_estimate_by_acked_rate() {
    let mut p = Packets::default();
    let mut e = bwe(short("LowerBoundByAckedRateFactor:0.0"));
    e.set_min_max_bitrate(kbps(10), kbps(1_000_000));
    e.set_bandwidth_estimate(kbps(600));
    e.set_acknowledged_bitrate(kbps(500));
    e.update(&p.loss_100p(Time::ZERO, 2), INF, false);
    assert!(estimate(&e) < kbps(500));
}

#[test]
fn has_decrease_state_because_of_upper_bound() {
    let mut p = Packets::default();
    let mut e = bwe(short("CandidateFactors:1.0,InstantUpperBoundBwBalance:10kbps"));
    e.set_min_max_bitrate(kbps(10), kbps(1_000_000));
    e.set_bandwidth_estimate(kbps(500));
    e.set_acknowledged_bitrate(kbps(100));
    e.update(&p.loss_10p(Time::ZERO, PACKET_SIZE), INF, false);
    // 10 kbit/s / (10 % − 5 %) = 200 kbit/s.
    assert_eq!(e.result(), (kbps(200), LossV2State::Decreasing));
}

#[test]
fn has_increase_state_because_of_lower_bound() {
    let mut p = Packets::default();
    let mut e = bwe(short("CandidateFactors:1.0,LowerBoundByAckedRateFactor:10.0"));
    e.set_min_max_bitrate(kbps(10), kbps(1_000_000));
    e.set_bandwidth_estimate(kbps(500));
    e.set_acknowledged_bitrate(kbps(1));
    e.update(&p.loss_50p(Time::ZERO), INF, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    e.set_acknowledged_bitrate(kbps(200));
    e.update(&p.loss_50p(obs(2)), INF, false);
    // The lower bound (10 × acked) raises the estimate: increasing with padding.
    assert_eq!(e.result(), (kbps(200) * 10, LossV2State::IncreaseUsingPadding));
}

#[test]
fn estimate_increase_slowly_from_instant_upper_bound_in_alr_if_field_trial() {
    let mut p = Packets::default();
    let mut e = bwe(short("UpperBoundCandidateInAlr:true"));
    e.set_bandwidth_estimate(kbps(1000));
    e.set_acknowledged_bitrate(kbps(150));
    e.update(&p.loss_50p(Time::ZERO), INF, true);
    let after_loss = e.result();
    assert_eq!(after_loss.1, LossV2State::Decreasing);
    for k in 1..=3 {
        e.update(&p.received(obs(k)), INF, true);
    }
    // Less than 100 % increase.
    assert!(estimate(&e) < after_loss.0 * 2);
}

#[test]
fn has_delay_based_state_if_loss_based_bwe_is_max() {
    let mut p = Packets::default();
    let mut e = bwe(short(""));
    e.set_min_max_bitrate(kbps(10), kbps(1000));
    e.update(&p.received(Time::ZERO), kbps(2000), false);
    assert_eq!(e.result(), (kbps(1000), LossV2State::DelayBasedEstimate));
    e.update(&p.loss_50p(obs(1)), kbps(2000), false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    assert!(estimate(&e) < kbps(1000));
    // Eventually back to the delay-based state.
    feed_received_until(&mut e, &mut p, 2, kbps(2000), false, |e| state(e) == LossV2State::DelayBasedEstimate);
    assert_eq!(e.result(), (kbps(1000), LossV2State::DelayBasedEstimate));
}

#[test]
fn increase_using_padding_state_if_field_trial() {
    let mut p = Packets::default();
    let mut e = bwe(short("PaddingDuration:1000ms"));
    e.set_bandwidth_estimate(kbps(2500));
    e.update(&p.loss_50p(Time::ZERO), INF, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    feed_received_until(&mut e, &mut p, 1, INF, false, |e| state(e) == LossV2State::IncreaseUsingPadding);
    assert_eq!(state(&e), LossV2State::IncreaseUsingPadding);
}

#[test]
fn best_candidate_resets_to_upper_bound_in_field_trial() {
    let mut p = Packets::default();
    let mut e = bwe(short("PaddingDuration:1000ms,BoundBestCandidate:true"));
    e.set_bandwidth_estimate(kbps(2500));
    e.update(&p.loss_50p(Time::ZERO), INF, true);
    let after_loss = e.result();
    assert_eq!(after_loss.1, LossV2State::Decreasing);
    e.update(&p.received(obs(1)), INF, true);
    e.update(&p.received(obs(2)), INF, true);
    // After a large loss the estimate ramps up slowly from the bound.
    assert_eq!(state(&e), LossV2State::IncreaseUsingPadding);
    assert!((estimate(&e).kbps_f64().round() - after_loss.0.kbps_f64().round()).abs() <= 100.0);
}

#[test]
fn decrease_to_acked_candidate_if_padding_in_alr() {
    let mut p = Packets::default();
    let mut e = bwe(short("PaddingDuration:1000ms,InstantUpperBoundBwBalance:10000kbps"));
    e.set_bandwidth_estimate(kbps(1000));
    let mut k = 0;
    while state(&e) != LossV2State::Decreasing {
        assert!(k < MAX_LOOPS as i64);
        e.update(&p.loss_100p(obs(k), 2), INF, true);
        k += 1;
    }
    k = feed_received_until(&mut e, &mut p, k, INF, true, |e| state(e) == LossV2State::IncreaseUsingPadding);
    assert!(estimate(&e) > kbps(900));
    e.set_acknowledged_bitrate(kbps(100));
    // Padding is being sent: losses now back off to the acked rate even in ALR.
    e.update(&p.loss_100p(obs(k), 2), INF, true);
    assert_eq!(e.result(), (kbps(100), LossV2State::Decreasing));
}

#[test]
fn decrease_after_padding() {
    let mut p = Packets::default();
    let mut e = bwe(short("PaddingDuration:1000ms,BwRampupUpperBoundFactor:2.0"));
    e.set_bandwidth_estimate(kbps(2500));
    e.set_acknowledged_bitrate(kbps(51));
    e.update(&p.loss_50p(Time::ZERO), INF, false);
    assert_eq!(e.result(), (kbps(51), LossV2State::Decreasing));
    e.set_acknowledged_bitrate(kbps(26));
    let k = feed_received_until(&mut e, &mut p, 1, INF, false, |e| state(e) == LossV2State::IncreaseUsingPadding);
    let estimate_increased = obs(k);
    // Padding without a further increase (capped at 2 × acked) lasts the padding duration.
    let k = feed_received_until(&mut e, &mut p, k, INF, false, |e| state(e) != LossV2State::IncreaseUsingPadding);
    assert_eq!(state(&e), LossV2State::Decreasing);
    let start_decreasing = obs(k - 1);
    assert_eq!(start_decreasing - estimate_increased, Duration::from_secs(1));
}

#[test]
fn hold_rate_not_lower_than_acked_rate() {
    let mut p = Packets::default();
    let mut e = bwe(short("HoldDurationFactor:10,LowerBoundByAckedRateFactor:1.0"));
    e.set_bandwidth_estimate(kbps(2500));
    e.update(&p.loss_50p(Time::ZERO), INF, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    e.set_acknowledged_bitrate(kbps(1000));
    e.update(&p.loss_50p(obs(1)), INF, false);
    assert_eq!(e.result(), (kbps(1000), LossV2State::Decreasing));
}

#[test]
fn estimate_not_lower_than_acked_rate() {
    let mut p = Packets::default();
    let mut e = bwe(short("LowerBoundByAckedRateFactor:1.0"));
    e.set_bandwidth_estimate(kbps(2500));
    e.update(&p.loss_100p(Time::ZERO, 2), INF, false);
    assert!(estimate(&e) < kbps(1000));
    e.set_acknowledged_bitrate(kbps(1000));
    e.update(&p.loss_100p(obs(1), 2), INF, false);
    assert_eq!(estimate(&e), kbps(1000));
    e.update(&p.received(obs(2)), INF, false);
    e.update(&p.received(obs(3)), INF, false);
    // Recovers from the acked rate.
    assert!(estimate(&e) > kbps(1000));
}

#[test]
fn end_hold_duration_if_delay_based_estimate_works() {
    let mut p = Packets::default();
    let mut e = bwe(short(""));
    e.set_bandwidth_estimate(kbps(2500));
    e.update(&p.loss_50p(Time::ZERO), INF, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    let est = estimate(&e);
    e.update(&p.received(obs(1)), est + kbps(10), false);
    e.update(&p.received(obs(2)), est + kbps(10), false);
    assert_eq!(e.result(), (est + kbps(10), LossV2State::DelayBasedEstimate));
}

#[test]
fn use_byte_loss_rate() {
    let mut p = Packets::default();
    let mut e = bwe(short("UseByteLossRate:true"));
    e.set_bandwidth_estimate(kbps(500));
    // 10 % packet loss but more than 50 % byte loss.
    e.update(&p.loss_10p(Time::ZERO, PACKET_SIZE * 20), INF, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    // Bounded by the instant upper bound.
    assert!(estimate(&e) < kbps(160));
}

#[test]
fn use_byte_loss_rate_ignore_loss_spike() {
    let mut p = Packets::default();
    let mut e = bwe(trial("UseByteLossRate:true,ObservationWindowSize:5"));
    let delay_based = kbps(500);
    e.set_bandwidth_estimate(delay_based);
    for k in 0..5 {
        e.update(&p.received(obs(k)), delay_based, false);
    }
    e.update(&p.loss_100p(obs(5), 2), delay_based, false);
    e.update(&p.received(obs(6)), delay_based, false);
    assert_eq!(e.result(), (delay_based, LossV2State::DelayBasedEstimate));
    // More loss in a new observation: back down.
    e.update(&p.loss_100p(obs(7), 2), delay_based, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    assert!(estimate(&e) < delay_based);
}

#[test]
fn use_byte_loss_rate_does_not_ignore_loss_spike_on_send_burst() {
    let mut p = Packets::default();
    let mut e = bwe(trial("UseByteLossRate:true,ObservationWindowSize:5"));
    let delay_based = kbps(500);
    e.set_bandwidth_estimate(delay_based);
    for k in 0..5 {
        e.update(&p.received(obs(k)), delay_based, false);
    }
    // Loss while the send rate jumps: back down.
    e.update(&p.loss_100p(obs(5), 5), delay_based, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    assert!(estimate(&e) <= delay_based);
}

#[test]
fn estimate_does_not_back_off_due_to_packet_reordering_between_feedback() {
    let mut e = bwe(short(""));
    let start = kbps(2500);
    e.set_bandwidth_estimate(start);
    let t0 = Time::ZERO;
    let fb1 = [packet(1, t0, Some(t0 + ms(10)), PACKET_SIZE), packet(2, t0, None, PACKET_SIZE), packet(3, t0, Some(t0 + ms(10)), PACKET_SIZE)];
    let t1 = at(OBSERVATION_DURATION_LOWER_BOUND);
    // Packet 2 arrives after all (reordered, not lost).
    let fb2 = [packet(2, t0, Some(t0 + ms(10)), PACKET_SIZE), packet(4, t1, Some(t1 + ms(10)), PACKET_SIZE), packet(5, t0, Some(t0 + ms(10)), PACKET_SIZE)];
    e.update(&fb1, start, false);
    e.update(&fb2, start, false);
    assert_eq!(estimate(&e), start);
}

#[test]
fn select_higher_candidate_if_having_same_objective() {
    let mut p = Packets::default();
    let mut e = bwe(short(""));
    let start = kbps(1000);
    e.set_bandwidth_estimate(start);
    let (fb1, fb2) = (p.received(Time::ZERO), p.received(obs(1)));
    e.update(&fb1, start, false);
    // DataRate::BytesPerSec(125000 × 1.02 + 1) = 127501 B/s.
    let delay_based = Bitrate::from_bps(127_501 * 8);
    e.update(&fb2, delay_based, false);
    assert_eq!(estimate(&e), delay_based);
}
