//! libwebrtc `loss_based_bwe_v2_test.cc`: configuration, initialization, observation windows, increases and the delayed-increase window (cases 1–26 in libwebrtc's order).

use super::*;

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

/// Estimates after a first feedback and after a second one sent 1 ms short of a new
/// observation (cases 17 and 18 share these inputs).
fn estimates_around_a_too_short_observation() -> (Bitrate, Bitrate) {
    let (mut e, mut p) = setup(config(true, true), kbps(600));
    let (fb1, fb2) = (p.received(Time::ZERO), p.received(at(OBSERVATION_DURATION_LOWER_BOUND - ms(1))));
    e.update(&fb1, INF, false);
    let first = estimate(&e);
    e.update(&fb2, INF, false);
    (first, estimate(&e))
}

#[test]
fn no_bwe_change_if_observation_duration_is_small_and_network_normal() {
    let (first, second) = estimates_around_a_too_short_observation();
    assert_eq!(second, first);
}

#[test]
fn no_bwe_increase_if_observation_duration_is_small_and_network_underusing() {
    let (first, second) = estimates_around_a_too_short_observation();
    assert!(second <= first);
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
    let delay_based = kbps(5000);
    let (mut e, mut p) = after_full_loss(short(""), kbps(600), None, kbps(100), delay_based, false);
    let at_loss = estimate(&e);
    feed_received_until(&mut e, &mut p, 2, delay_based, false, |e| state(e) == LossV2State::IncreaseUsingPadding);
    // BwRampupUpperBoundInHoldFactor is 1.2.
    assert_eq!(estimate(&e), mul(at_loss, 1.2));
}

#[test]
fn loss_based_state_is_delay_based_estimate_after_network_recovering() {
    let cfg = short("CandidateFactors:100|1|0.5,InstantUpperBoundBwBalance:10000kbps,MaxIncreaseFactor:100,NotIncreaseIfInherentLossLessThanAverageLoss:false");
    let delay_based = kbps(600);
    let (mut e, mut p) = after_full_loss(cfg, kbps(600), None, kbps(300), delay_based, false);
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
    let (mut e, mut p) = setup(short("CandidateFactors:100|1|0.5,InstantUpperBoundBwBalance:10000kbps,MaxIncreaseFactor:100"), kbps(600));
    e.update(&p.loss_100p(Time::ZERO, 2), INF, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    e.set_acknowledged_bitrate(kbps(600));
    e.update(&p.received(obs(1)), INF, false);
    assert_ne!(state(&e), LossV2State::DelayBasedEstimate);
}

/// Cases 23 and 24 start alike: rampup factor 1.2, no instant upper bound, high-bandwidth
/// preference up to 99 % loss; a full loss from 600 kbit/s with 300 kbit/s acked.
fn backed_off_with_rampup_factor_1_2(delay_based: Bitrate) -> (LossBasedBweV2, Packets, Bitrate) {
    let cfg = short("LossThresholdOfHighBandwidthPreference:0.99,BwRampupUpperBoundFactor:1.2,InstantUpperBoundBwBalance:10000kbps,");
    let (e, p) = after_full_loss(cfg, kbps(600), None, kbps(300), delay_based, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    let estimate_1 = estimate(&e);
    assert!(estimate_1 < kbps(600));
    (e, p, estimate_1)
}

#[test]
fn increase_by_factor_of_acked_bitrate_after_loss_based_bwe_backs_off() {
    let delay_based = kbps(5000);
    let (mut e, mut p, estimate_1) = backed_off_with_rampup_factor_1_2(delay_based);
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
    let delay_based = kbps(5000);
    let (mut e, mut p, estimate_1) = backed_off_with_rampup_factor_1_2(delay_based);
    e.set_acknowledged_bitrate(estimate_1 / 2);
    feed_received_until(&mut e, &mut p, 1, delay_based, false, |e| state(e) == LossV2State::IncreaseUsingPadding);
    // The estimate rises by 1 bit/s.
    assert_eq!(estimate(&e), estimate_1 + Bitrate::from_bps(1));
}

/// Cases 25 and 26: from 600 kbit/s (300 kbit/s acked), a loss-free feedback at 0, then with
/// 5000 kbit/s acked a second feedback just inside the delayed-increase window (with 50 % loss
/// or none) and a third at `third_at`; returns the estimates after the second and the third.
fn estimates_across_the_delayed_increase_window(second_lossy: bool, third_at: Time) -> (Bitrate, Bitrate) {
    let mut p = Packets::default();
    let fb1 = p.received(Time::ZERO);
    let fb2 = if second_lossy { p.loss_50p(at(DELAYED_INCREASE_WINDOW - ms(2))) } else { p.received(at(DELAYED_INCREASE_WINDOW - ms(1))) };
    let fb3 = p.received(third_at);
    let (mut e, _) = setup(config(true, true), kbps(600));
    let delay_based = kbps(5000);
    e.set_acknowledged_bitrate(kbps(300));
    e.update(&fb1, delay_based, false);
    e.set_acknowledged_bitrate(kbps(5000));
    e.update(&fb2, delay_based, false);
    let estimate_2 = estimate(&e);
    e.update(&fb3, delay_based, false);
    (estimate_2, estimate(&e))
}

#[test]
fn estimate_bitrate_is_bounded_during_delayed_window_after_loss_based_bwe_backs_off() {
    let (estimate_2, estimate_3) = estimates_across_the_delayed_increase_window(true, at(DELAYED_INCREASE_WINDOW - ms(1)));
    // Sent within the delayed increase window: no change.
    assert_eq!(estimate_3, estimate_2);
}

#[test]
fn keep_increasing_estimate_after_delayed_increase_window() {
    let (estimate_2, estimate_3) = estimates_across_the_delayed_increase_window(false, at(DELAYED_INCREASE_WINDOW + ms(1)));
    assert!(estimate_3 >= estimate_2);
}
