//! `alr_detector_unittest.cc`.

use ratelab_core::controllers::gcc::alr::AlrDetector;
use ratelab_core::units::{Bitrate, Bytes, Duration, Time};

const ESTIMATE_BPS: i64 = 300_000;

/// `SimulateOutgoingTrafficIn(...).ForTime(t).AtPercentOfEstimatedBitrate(p)`: every 10 ms,
/// the bytes of `p` % of the estimate over 10 ms.
fn traffic(alr: &mut AlrDetector, clock: &mut Time, for_ms: i64, percent: i64) {
    let mut t = 0;
    while t < for_ms {
        *clock = *clock + Duration::from_ms(10);
        // DataRate × int × TimeDelta / 100 = bytes (bits/8, truncated as DataSize).
        let bytes = ESTIMATE_BPS * percent * 10 / 1000 / 8 / 100;
        alr.on_bytes_sent(Bytes::new(bytes), *clock);
        t += 10;
    }
}

fn setup() -> (AlrDetector, Time) {
    let mut a = AlrDetector::default();
    a.set_estimated_bitrate(Bitrate::from_bps(ESTIMATE_BPS));
    (a, Time::from_ms(1000))
}

#[test]
fn alr_detection() {
    let (mut a, mut clock) = setup();
    assert!(!a.in_alr());
    traffic(&mut a, &mut clock, 1000, 90);
    assert!(!a.in_alr());
    traffic(&mut a, &mut clock, 1500, 20);
    assert!(a.in_alr());
    traffic(&mut a, &mut clock, 4000, 100);
    assert!(!a.in_alr());
}

#[test]
fn short_spike() {
    let (mut a, mut clock) = setup();
    traffic(&mut a, &mut clock, 1000, 20);
    assert!(a.in_alr());
    traffic(&mut a, &mut clock, 100, 150);
    assert!(a.in_alr());
    traffic(&mut a, &mut clock, 3000, 100);
    assert!(!a.in_alr());
}

#[test]
fn bandwidth_estimate_changes() {
    let (mut a, mut clock) = setup();
    traffic(&mut a, &mut clock, 1000, 20);
    assert!(a.in_alr());
    a.set_estimated_bitrate(Bitrate::from_bps(ESTIMATE_BPS / 5));
    assert!(a.in_alr());
    traffic(&mut a, &mut clock, 1000, 50);
    assert!(!a.in_alr());
}

#[test]
fn parse_alr_specific_field_trial() {
    // `WebRTC-AlrDetectorParameters/bw_usage:90%,start:0%,stop:-10%/` as parameters.
    let mut a = AlrDetector::with_params(0.9, 0.0, -0.1);
    a.set_estimated_bitrate(Bitrate::from_bps(ESTIMATE_BPS));
    let mut clock = Time::from_ms(1000);
    assert!(!a.in_alr());
    traffic(&mut a, &mut clock, 1000, 100);
    assert!(!a.in_alr());
    traffic(&mut a, &mut clock, 2100, 85);
    assert!(a.in_alr());
}
