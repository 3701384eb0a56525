//! libwebrtc `loss_based_bwe_v2_test.cc`: bias threshold, max bitrate, ALR, start phase, acked-rate and instant bounds, HOLD, padding, byte loss and reordering (cases 27–52 in libwebrtc's order).

use super::*;

#[test]
fn not_increase_if_inherent_loss_less_than_average_loss() {
    let (mut e, mut p) = setup(short("CandidateFactors:1.2,NotIncreaseIfInherentLossLessThanAverageLoss:true"), kbps(600));
    e.update(&p.loss_10p(Time::ZERO, PACKET_SIZE), INF, false);
    e.update(&p.loss_10p(obs(1), PACKET_SIZE), INF, false);
    assert_eq!(estimate(&e), kbps(600));
}

/// Cases 28 and 29: from 600 kbit/s, two feedbacks of ten packets with the last one lost.
fn estimate_after_two_feedbacks_with_10p_loss(cfg: LossV2Config) -> Bitrate {
    let (mut e, mut p) = setup(cfg, kbps(600));
    let delay_based = kbps(5000);
    e.update(&p.loss_10p(Time::ZERO, PACKET_SIZE), delay_based, false);
    e.update(&p.loss_10p(obs(1), PACKET_SIZE), delay_based, false);
    estimate(&e)
}

#[test]
fn select_high_bandwidth_candidate_if_loss_rate_is_less_than_threshold() {
    let cfg = short("LossThresholdOfHighBandwidthPreference:0.20,NotIncreaseIfInherentLossLessThanAverageLoss:false");
    // 10 % average loss < 20 % threshold: increase.
    assert!(estimate_after_two_feedbacks_with_10p_loss(cfg) > kbps(600));
}

#[test]
fn select_low_bandwidth_candidate_if_loss_rate_is_is_higher_than_threshold() {
    // 10 % average loss > 5 % threshold: decrease.
    assert!(estimate_after_two_feedbacks_with_10p_loss(short("LossThresholdOfHighBandwidthPreference:0.05")) < kbps(600));
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
    let acked = kbps(100);
    let (e, _) = after_full_loss(short("InstantUpperBoundBwBalance:100kbps"), kbps(600), Some((kbps(10), kbps(1_000_000))), acked, kbps(5000), true);
    assert!(estimate(&e) > acked);
    assert!(estimate(&e) < kbps(600));
}

#[test]
fn back_off_to_acked_rate_if_not_in_alr() {
    let acked = kbps(100);
    let (e, _) = after_full_loss(short("InstantUpperBoundBwBalance:100kbps"), kbps(600), Some((kbps(10), kbps(1_000_000))), acked, kbps(5000), false);
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
    let (e, _) = after_full_loss(short("LowerBoundByAckedRateFactor:1.0"), kbps(600), Some((kbps(10), kbps(1_000_000))), kbps(500), INF, false);
    assert_eq!(estimate(&e), kbps(500));
}

#[test]
fn not_bound_estimate_by_acked_rate() {
    let (e, _) = after_full_loss(short("LowerBoundByAckedRateFactor:0.0"), kbps(600), Some((kbps(10), kbps(1_000_000))), kbps(500), INF, false);
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
    let (mut e, mut p) = setup(short("UpperBoundCandidateInAlr:true"), kbps(1000));
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
    let (mut e, mut p) = setup(short("PaddingDuration:1000ms"), kbps(2500));
    e.update(&p.loss_50p(Time::ZERO), INF, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    feed_received_until(&mut e, &mut p, 1, INF, false, |e| state(e) == LossV2State::IncreaseUsingPadding);
    assert_eq!(state(&e), LossV2State::IncreaseUsingPadding);
}

#[test]
fn best_candidate_resets_to_upper_bound_in_field_trial() {
    let (mut e, mut p) = setup(short("PaddingDuration:1000ms,BoundBestCandidate:true"), kbps(2500));
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
    let (mut e, mut p) = setup(short("PaddingDuration:1000ms,InstantUpperBoundBwBalance:10000kbps"), kbps(1000));
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
    let (mut e, mut p) = setup(short("PaddingDuration:1000ms,BwRampupUpperBoundFactor:2.0"), kbps(2500));
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
    let (mut e, mut p) = setup(short("HoldDurationFactor:10,LowerBoundByAckedRateFactor:1.0"), kbps(2500));
    e.update(&p.loss_50p(Time::ZERO), INF, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    e.set_acknowledged_bitrate(kbps(1000));
    e.update(&p.loss_50p(obs(1)), INF, false);
    assert_eq!(e.result(), (kbps(1000), LossV2State::Decreasing));
}

#[test]
fn estimate_not_lower_than_acked_rate() {
    let (mut e, mut p) = setup(short("LowerBoundByAckedRateFactor:1.0"), kbps(2500));
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
    let (mut e, mut p) = setup(short(""), kbps(2500));
    e.update(&p.loss_50p(Time::ZERO), INF, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    let est = estimate(&e);
    e.update(&p.received(obs(1)), est + kbps(10), false);
    e.update(&p.received(obs(2)), est + kbps(10), false);
    assert_eq!(e.result(), (est + kbps(10), LossV2State::DelayBasedEstimate));
}

#[test]
fn use_byte_loss_rate() {
    let (mut e, mut p) = setup(short("UseByteLossRate:true"), kbps(500));
    // 10 % packet loss but more than 50 % byte loss.
    e.update(&p.loss_10p(Time::ZERO, PACKET_SIZE * 20), INF, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    // Bounded by the instant upper bound.
    assert!(estimate(&e) < kbps(160));
}

/// Byte loss, a window of 5 observations, filled with loss-free ones at 500 kbit/s (cases 49
/// and 50 start here); returns the next observation index.
fn byte_loss_window_filled() -> (LossBasedBweV2, Packets, i64) {
    let (mut e, mut p) = setup(trial("UseByteLossRate:true,ObservationWindowSize:5"), kbps(500));
    for k in 0..5 {
        e.update(&p.received(obs(k)), kbps(500), false);
    }
    (e, p, 5)
}

#[test]
fn use_byte_loss_rate_ignore_loss_spike() {
    let (mut e, mut p, k) = byte_loss_window_filled();
    let delay_based = kbps(500);
    e.update(&p.loss_100p(obs(k), 2), delay_based, false);
    e.update(&p.received(obs(k + 1)), delay_based, false);
    assert_eq!(e.result(), (delay_based, LossV2State::DelayBasedEstimate));
    // More loss in a new observation: back down.
    e.update(&p.loss_100p(obs(k + 2), 2), delay_based, false);
    assert_eq!(state(&e), LossV2State::Decreasing);
    assert!(estimate(&e) < delay_based);
}

#[test]
fn use_byte_loss_rate_does_not_ignore_loss_spike_on_send_burst() {
    let (mut e, mut p, k) = byte_loss_window_filled();
    let delay_based = kbps(500);
    // Loss while the send rate jumps: back down.
    e.update(&p.loss_100p(obs(k), 5), delay_based, false);
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
