//! `send_side_bandwidth_estimation_unittest.cc` (classic loss controller, RTT backoff).
//! libwebrtc's event-log expectations (gMock on `RtcEventBweUpdateLossBased`) have no
//! counterpart: ratelab has no event log; the rate assertions of those tests are kept.

use ratelab_core::controllers::gcc::loss_v1::SendSideBwe;
use ratelab_core::controllers::gcc::GccConfig;
use ratelab_core::units::{Bitrate, Duration, Time};

fn bps(v: i64) -> Bitrate { Bitrate::from_bps(v) }
fn ms(v: i64) -> Time { Time::from_ms(v) }
fn bwe() -> SendSideBwe { SendSideBwe::new(None, true) }

fn test_probing(use_delay_based: bool) {
    let mut b = bwe();
    let mut now = 0;
    b.set_min_max(bps(100_000), bps(1_500_000));
    b.set_send_bitrate(bps(200_000), ms(now));
    let (remb, second_remb) = (1_000_000, 1_500_000);
    b.update_packets_lost(0, 1, ms(now));
    b.update_rtt(Duration::from_ms(50));
    let set = |b: &mut SendSideBwe, t: i64, r: i64| {
        if use_delay_based {
            b.update_delay_based_estimate(ms(t), bps(r));
        } else {
            b.update_receiver_estimate(ms(t), bps(r));
        }
    };
    // The initial estimate applies at once (start phase)...
    set(&mut b, now, remb);
    b.update_estimate(ms(now));
    assert_eq!(b.target(), bps(remb));
    // ...the second one, after the start phase, does not.
    now += 2001;
    set(&mut b, now, second_remb);
    b.update_estimate(ms(now));
    assert_eq!(b.target(), bps(remb));
}

#[test]
fn initial_remb_with_probing() { test_probing(false); }

#[test]
fn initial_delay_based_bwe_with_probing() { test_probing(true); }

#[test]
fn doesnt_reapply_bitrate_decrease_without_following_remb() {
    let mut b = bwe();
    let (min, initial) = (100_000, 1_000_000);
    let mut now = 1000;
    b.set_min_max(bps(min), bps(1_500_000));
    b.set_send_bitrate(bps(initial), ms(now));
    now += 10_000;
    assert_eq!(b.target(), bps(initial));
    assert_eq!(b.fraction_loss(), 0);
    assert_eq!(b.round_trip_time(), Duration::ZERO);
    b.update_packets_lost(50, 100, ms(now));
    b.update_rtt(Duration::from_ms(50));
    now += 1000;
    b.update_estimate(ms(now));
    assert!(b.target() < bps(initial));
    assert!(b.target() > bps(min));
    assert_eq!(b.fraction_loss(), 128);
    assert_eq!(b.round_trip_time(), Duration::from_ms(50));
    let last = b.target();
    now += 1000;
    b.update_estimate(ms(now));
    assert_eq!(b.target(), last);
    assert_eq!(b.fraction_loss(), 128);
    assert_eq!(b.round_trip_time(), Duration::from_ms(50));
}

#[test]
fn setting_send_bitrate_overrides_delay_based_estimate() {
    let mut b = bwe();
    b.set_min_max(bps(10_000), bps(10_000_000));
    b.set_send_bitrate(bps(300_000), ms(0));
    b.update_delay_based_estimate(ms(0), bps(350_000));
    b.update_estimate(ms(0));
    assert!(b.target() >= bps(300_000) && b.target() <= bps(350_000));
    b.set_send_bitrate(bps(2_500_000), ms(0));
    assert_eq!(b.target(), bps(2_500_000));
}

#[test]
fn rtt_based_backoff_default_enabled() {
    assert!(GccConfig::default().rtt_backoff);
    let mut b = bwe();
    b.update_propagation_rtt(ms(0), Duration::from_secs(10));
    assert!(b.is_rtt_above_limit());
}

#[test]
fn rtt_based_backoff_can_be_disabled() {
    // `WebRTC-Bwe-MaxRttLimit/Disabled/`: the limit is infinite.
    let mut b = SendSideBwe::new(None, false);
    b.update_propagation_rtt(ms(0), Duration::from_secs(10));
    assert!(!b.is_rtt_above_limit());
}

#[test]
fn fraction_loss_is_not_overflowed() {
    let mut b = bwe();
    let mut now = 1000;
    b.set_min_max(bps(100_000), bps(1_500_000));
    b.set_send_bitrate(bps(1_000_000), ms(now));
    now += 10_000;
    assert_eq!(b.target(), bps(1_000_000));
    assert_eq!(b.fraction_loss(), 0);
    b.update_packets_lost(-1, 100, ms(now));
    assert_eq!(b.fraction_loss(), 0);
}

#[test]
fn rtt_is_above_limit_if_rtt_greater_than_limit() {
    let mut b = bwe();
    b.set_min_max(bps(10_000), bps(10_000_000));
    b.set_send_bitrate(bps(300_000), ms(0));
    b.update_propagation_rtt(ms(0), Duration::from_ms(5000));
    assert!(b.is_rtt_above_limit());
}

#[test]
fn rtt_is_below_limit_if_rtt_less_than_limit() {
    let mut b = bwe();
    b.set_min_max(bps(10_000), bps(10_000_000));
    b.set_send_bitrate(bps(300_000), ms(0));
    b.update_propagation_rtt(ms(0), Duration::from_ms(1000));
    assert!(!b.is_rtt_above_limit());
}
