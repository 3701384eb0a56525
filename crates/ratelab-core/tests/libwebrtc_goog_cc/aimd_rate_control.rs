//! `aimd_rate_control_unittest.cc` (remote_bitrate_estimator), send-side AIMD.

use ratelab_core::controllers::gcc::aimd::{AimdConfig, AimdRateControl};
use ratelab_core::controllers::gcc::trendline::BandwidthUsage;
use ratelab_core::units::{Bitrate, Duration, Time};

const INITIAL: Time = Time::from_ms(123_456);
const FRACTION_AFTER_OVERUSE: f64 = 0.85;

fn bps(v: i64) -> Bitrate { Bitrate::from_bps(v) }
fn aimd() -> AimdRateControl { AimdRateControl::new(AimdConfig::default()) }
fn aimd_with(cfg: AimdConfig) -> AimdRateControl { AimdRateControl::new(cfg) }
fn dont_increase_in_alr() -> AimdConfig { AimdConfig { no_increase_in_alr: true, ..AimdConfig::default() } }

#[test]
fn min_near_max_increase_rate_on_low_bandwith() {
    let mut a = aimd();
    a.set_estimate(bps(30_000), INITIAL);
    assert_eq!(a.near_max_increase_bps_per_s(), 4000.0);
}

#[test]
fn near_max_increase_rate_is_5kbps_on_90kbps_and_200ms_rtt() {
    let mut a = aimd();
    a.set_estimate(bps(90_000), INITIAL);
    assert_eq!(a.near_max_increase_bps_per_s(), 5000.0);
}

#[test]
fn near_max_increase_rate_is_5kbps_on_60kbps_and_100ms_rtt() {
    let mut a = aimd();
    a.set_estimate(bps(60_000), INITIAL);
    a.set_rtt(Duration::from_ms(100));
    assert_eq!(a.near_max_increase_bps_per_s(), 5000.0);
}

#[test]
fn get_increase_rate_and_bandwidth_period() {
    let mut a = aimd();
    a.set_estimate(bps(300_000), INITIAL);
    a.update(BandwidthUsage::Overusing, Some(bps(300_000)), INITIAL);
    assert!((a.near_max_increase_bps_per_s() - 14_000.0).abs() <= 1000.0);
    assert_eq!(a.expected_bandwidth_period(), Duration::from_secs(3));
}

fn twenty_seconds_of_normal(a: &mut AimdRateControl, acked: Bitrate) -> Time {
    let mut now = INITIAL;
    while now - INITIAL < Duration::from_secs(20) {
        a.update(BandwidthUsage::Normal, Some(acked), now);
        now = now + Duration::from_ms(100);
    }
    now
}

#[test]
fn bwe_limited_by_acked_bitrate() {
    let mut a = aimd();
    let acked = bps(10_000);
    a.set_estimate(acked, INITIAL);
    twenty_seconds_of_normal(&mut a, acked);
    assert!(a.valid_estimate());
    assert_eq!(a.latest_estimate(), bps(25_000));
}

#[test]
fn bwe_not_limited_by_decreasing_acked_bitrate() {
    let mut a = aimd();
    let acked = bps(10_000);
    a.set_estimate(acked, INITIAL);
    let now = twenty_seconds_of_normal(&mut a, acked);
    let prev = a.latest_estimate();
    a.update(BandwidthUsage::Normal, Some(acked / 2), now);
    assert_eq!(a.latest_estimate(), prev);
    assert!((a.latest_estimate().bps() - 25_000).abs() <= 2000);
}

#[test]
fn default_period_until_first_overuse() {
    let mut a = aimd();
    a.set_start_bitrate(Bitrate::from_kbps(300));
    assert_eq!(a.expected_bandwidth_period(), Duration::from_secs(3));
    a.update(BandwidthUsage::Overusing, Some(Bitrate::from_kbps(280)), INITIAL);
    assert_ne!(a.expected_bandwidth_period(), Duration::from_secs(3));
}

#[test]
fn expected_period_after_typical_drop() {
    let mut a = aimd();
    let acked = Bitrate::from_bps_f64((216_000.0 + 5000.0) / FRACTION_AFTER_OVERUSE);
    a.set_estimate(bps(264_000), INITIAL);
    a.update(BandwidthUsage::Overusing, Some(acked), INITIAL + Duration::from_ms(100));
    assert_eq!(a.latest_estimate(), bps(216_000));
    assert_eq!(a.near_max_increase_bps_per_s(), 12_000.0);
    assert_eq!(a.expected_bandwidth_period(), Duration::from_secs(4));
}

#[test]
fn bandwidth_period_is_not_below_min() {
    let mut a = aimd();
    a.set_estimate(bps(10_000), INITIAL);
    a.update(BandwidthUsage::Overusing, Some(bps(9_999)), INITIAL + Duration::from_ms(100));
    assert_eq!(a.expected_bandwidth_period(), Duration::from_secs(2));
}

#[test]
fn bandwidth_period_is_not_above_max_no_smoothing_exp() {
    let mut a = aimd();
    a.set_estimate(bps(10_010_000), INITIAL);
    let acked = Bitrate::from_bps_f64(10_000.0 / FRACTION_AFTER_OVERUSE);
    a.update(BandwidthUsage::Overusing, Some(acked), INITIAL + Duration::from_ms(100));
    assert_eq!(a.expected_bandwidth_period(), Duration::from_secs(50));
}

#[test]
fn sending_rate_bounded_when_throughput_not_estimated() {
    let mut a = aimd();
    let initial = bps(123_000);
    let mut now = INITIAL;
    a.update(BandwidthUsage::Normal, Some(initial), now);
    now = now + Duration::from_secs(5) + Duration::from_ms(1);
    a.update(BandwidthUsage::Normal, Some(initial), now);
    for _ in 0..100 {
        a.update(BandwidthUsage::Normal, None, now);
        now = now + Duration::from_ms(100);
    }
    assert!(a.latest_estimate() <= initial.scale(1.5) + bps(10_000));
}

#[test]
fn estimate_does_not_increase_in_alr() {
    let mut a = aimd_with(dont_increase_in_alr());
    let initial = bps(123_000);
    let mut now = INITIAL;
    a.set_estimate(initial, now);
    a.set_in_alr(true);
    a.update(BandwidthUsage::Normal, Some(initial), now);
    assert_eq!(a.latest_estimate(), initial);
    for _ in 0..100 {
        a.update(BandwidthUsage::Normal, None, now);
        now = now + Duration::from_ms(100);
    }
    assert_eq!(a.latest_estimate(), initial);
}

#[test]
fn set_estimate_increase_bwe_in_alr() {
    let mut a = aimd_with(dont_increase_in_alr());
    let initial = bps(123_000);
    a.set_estimate(initial, INITIAL);
    a.set_in_alr(true);
    assert_eq!(a.latest_estimate(), initial);
    a.set_estimate(initial * 2, INITIAL);
    assert_eq!(a.latest_estimate(), initial * 2);
}

#[test]
fn set_estimate_upper_limited_by_network_estimate() {
    let mut a = aimd();
    a.set_estimate(bps(300_000), INITIAL);
    a.set_network_state_estimate(None, Some(bps(400_000)));
    a.set_estimate(bps(500_000), INITIAL);
    assert_eq!(a.latest_estimate(), bps(400_000));
}

#[test]
fn set_estimate_default_upper_limited_by_current_bitrate_if_network_estimate_is_low() {
    let mut a = aimd();
    a.set_estimate(bps(500_000), INITIAL);
    assert_eq!(a.latest_estimate(), bps(500_000));
    a.set_network_state_estimate(None, Some(bps(300_000)));
    a.set_estimate(bps(700_000), INITIAL);
    assert_eq!(a.latest_estimate(), bps(500_000));
}

#[test]
fn set_estimate_not_upper_limited_by_current_bitrate_if_network_estimate_is_low_if() {
    let mut a = aimd_with(AimdConfig { current_as_min_upper_bound: false, ..AimdConfig::default() });
    a.set_estimate(bps(500_000), INITIAL);
    assert_eq!(a.latest_estimate(), bps(500_000));
    a.set_network_state_estimate(None, Some(bps(300_000)));
    a.set_estimate(bps(700_000), INITIAL);
    assert_eq!(a.latest_estimate(), bps(300_000));
}

#[test]
fn set_estimate_lower_limited_by_network_estimate() {
    let mut a = aimd();
    a.set_network_state_estimate(Some(bps(400_000)), None);
    a.set_estimate(bps(100_000), INITIAL);
    assert_eq!(a.latest_estimate(), bps(400_000).scale(0.85));
}

#[test]
fn set_estimate_ignored_if_lower_than_network_estimate_and_current() {
    let mut a = aimd();
    a.set_estimate(Bitrate::from_kbps(200), INITIAL);
    assert_eq!(a.latest_estimate(), Bitrate::from_kbps(200));
    a.set_network_state_estimate(Some(Bitrate::from_kbps(400)), None);
    a.set_estimate(Bitrate::from_kbps(100), INITIAL);
    assert_eq!(a.latest_estimate(), Bitrate::from_kbps(200));
}

#[test]
fn estimate_increase_while_not_in_alr() {
    let mut a = aimd_with(dont_increase_in_alr());
    let initial = bps(123_000);
    let mut now = INITIAL;
    a.set_estimate(initial, now);
    a.set_in_alr(false);
    a.update(BandwidthUsage::Normal, Some(initial), now);
    for _ in 0..100 {
        a.update(BandwidthUsage::Normal, None, now);
        now = now + Duration::from_ms(100);
    }
    assert!(a.latest_estimate() > initial);
}

#[test]
fn estimate_not_limited_by_network_estimate_if_disabled() {
    let mut a = aimd_with(AimdConfig { estimate_bounded_increase: false, ..AimdConfig::default() });
    let initial = bps(123_000);
    let mut now = INITIAL;
    a.set_estimate(initial, now);
    a.set_in_alr(false);
    a.set_network_state_estimate(None, Some(Bitrate::from_kbps(150)));
    for _ in 0..100 {
        a.update(BandwidthUsage::Normal, None, now);
        now = now + Duration::from_ms(100);
    }
    assert!(a.latest_estimate() > Bitrate::from_kbps(150));
}
