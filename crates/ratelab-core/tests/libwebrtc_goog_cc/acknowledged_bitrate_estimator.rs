//! `acknowledged_bitrate_estimator_unittest.cc` (the Bayesian estimator of m84/m60).
//! libwebrtc checks the calls the wrapper makes on a mocked `BitrateEstimator`; here the same
//! call sequence is replayed on a reference `BitrateEstimator` and the two filters must end in
//! the same state.

use crate::common::packet;
use ratelab_core::controller::PacketResult;
use ratelab_core::controllers::gcc::acked_bitrate::{AckedBitrateEstimator, BitrateEstimator};
use ratelab_core::units::{Bytes, Time};

const FIRST_ARRIVAL_MS: i64 = 10;
const FIRST_SEND_MS: i64 = 10;
const PAYLOAD: i64 = 10;

fn feedback() -> Vec<PacketResult> {
    vec![
        packet(1, PAYLOAD, Time::from_ms(FIRST_SEND_MS), Some(Time::from_ms(FIRST_ARRIVAL_MS))),
        packet(1, PAYLOAD + 10, Time::from_ms(FIRST_SEND_MS + 10), Some(Time::from_ms(FIRST_ARRIVAL_MS + 10))),
    ]
}

#[test]
fn update_bandwidth() {
    let fb = feedback();
    let mut a = AckedBitrateEstimator::default();
    a.incoming(&fb);
    // Expected calls: Update(recv0, size0, in_alr=false), Update(recv1, size1, false).
    let mut want = BitrateEstimator::default();
    want.update(Time::from_ms(FIRST_ARRIVAL_MS), Bytes::new(PAYLOAD), false);
    want.update(Time::from_ms(FIRST_ARRIVAL_MS + 10), Bytes::new(PAYLOAD + 10), false);
    assert_eq!(a.estimator(), &want);
}

#[test]
fn expect_fast_rate_change_when_left_alr() {
    let fb = feedback();
    let mut a = AckedBitrateEstimator::default();
    a.set_alr_ended_time(Time::from_ms(FIRST_ARRIVAL_MS + 1));
    a.incoming(&fb);
    // Update(p0), ExpectFastRateChange() (p1 was sent after the ALR ended), Update(p1).
    let mut want = BitrateEstimator::default();
    want.update(Time::from_ms(FIRST_ARRIVAL_MS), Bytes::new(PAYLOAD), false);
    want.expect_fast_rate_change();
    want.update(Time::from_ms(FIRST_ARRIVAL_MS + 10), Bytes::new(PAYLOAD + 10), false);
    assert_eq!(a.estimator(), &want);
    // Without the ALR end the filter differs (the variance bump is observable).
    let mut b = AckedBitrateEstimator::default();
    b.incoming(&fb);
    assert_ne!(b.estimator(), &want);
}

#[test]
fn return_bitrate() {
    // The wrapper returns its filter's estimate.
    let mut a = AckedBitrateEstimator::default();
    for k in 0..60 {
        a.incoming(&[packet(k as u64, 1200, Time::from_ms(10 * k), Some(Time::from_ms(10 * k + 5)))]);
    }
    assert!(a.bitrate().is_some());
    assert_eq!(a.bitrate(), a.estimator().bitrate());
}
