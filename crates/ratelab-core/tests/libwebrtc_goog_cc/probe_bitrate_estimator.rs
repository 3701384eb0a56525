//! `probe_bitrate_estimator_unittest.cc`.

use crate::common::packet;
use ratelab_core::controllers::gcc::probe::ProbeBitrateEstimator;
use ratelab_core::units::{Bitrate, Time};

const MIN_PROBES: u32 = 5;
const MIN_BYTES: i64 = 5000;
const TARGET_UTILIZATION: f64 = 0.95;

#[derive(Default)]
struct Fixture {
    est: ProbeBitrateEstimator,
    measured: Option<Bitrate>,
}

impl Fixture {
    fn add_with(&mut self, id: u32, size: i64, send_ms: i64, recv_ms: i64, min_probes: u32, min_bytes: i64) {
        let reference = 1_000_000;
        self.est.register_requirements(id, min_probes, min_bytes);
        let mut p = packet(0, size, Time::from_ms(reference + send_ms), Some(Time::from_ms(reference + recv_ms)));
        p.sent.probe_cluster = Some(id);
        self.measured = self.est.handle(&p);
    }
    fn add(&mut self, id: u32, size: i64, send_ms: i64, recv_ms: i64) { self.add_with(id, size, send_ms, recv_ms, MIN_PROBES, MIN_BYTES) }
    fn near(&self, want: f64) {
        let got = self.measured.expect("a probe result").bps_f64();
        assert!((got - want).abs() <= 10.0, "{got} bps, want {want}");
    }
}

#[test]
fn one_cluster() {
    let mut f = Fixture::default();
    for k in 0..4 {
        f.add(0, 1000, 10 * k, 10 * k + 10);
    }
    f.near(800_000.0);
}

#[test]
fn one_cluster_too_few_probes() {
    let mut f = Fixture::default();
    for k in 0..3 {
        f.add(0, 2000, 10 * k, 10 * k + 10);
    }
    assert_eq!(f.measured, None);
}

#[test]
fn one_cluster_too_few_bytes() {
    let mut f = Fixture::default();
    for k in 0..5 {
        f.add_with(0, 800, 10 * k, 10 * k + 10, MIN_PROBES, 6000);
    }
    assert_eq!(f.measured, None);
}

#[test]
fn small_cluster() {
    let mut f = Fixture::default();
    for k in 0..6 {
        f.add_with(0, 150, 10 * k, 10 * k + 10, MIN_PROBES, 1000);
    }
    f.near(120_000.0);
}

#[test]
fn large_cluster() {
    let mut f = Fixture::default();
    for i in 0..25 {
        f.add_with(0, 12_500, i, i + 5, 30, 312_500);
    }
    f.near(100_000_000.0);
}

#[test]
fn fast_receive() {
    let mut f = Fixture::default();
    for (s, r) in [(0, 15), (10, 30), (20, 35), (30, 40)] {
        f.add(0, 1000, s, r);
    }
    f.near(800_000.0);
}

#[test]
fn too_fast_receive() {
    let mut f = Fixture::default();
    for (s, r) in [(0, 19), (10, 22), (20, 25), (40, 27)] {
        f.add(0, 1000, s, r);
    }
    assert_eq!(f.measured, None);
}

#[test]
fn slow_receive() {
    let mut f = Fixture::default();
    for (s, r) in [(0, 10), (10, 40), (20, 70), (30, 85)] {
        f.add(0, 1000, s, r);
    }
    f.near(TARGET_UTILIZATION * 320_000.0);
}

#[test]
fn burst_receive() {
    let mut f = Fixture::default();
    for (s, r) in [(0, 50), (10, 50), (20, 50), (40, 50)] {
        f.add(0, 1000, s, r);
    }
    assert_eq!(f.measured, None);
}

#[test]
fn multiple_clusters() {
    let mut f = Fixture::default();
    for (s, r) in [(0, 10), (10, 20), (20, 30), (40, 60)] {
        f.add(0, 1000, s, r);
    }
    f.near(TARGET_UTILIZATION * 480_000.0);
    f.add(0, 1000, 50, 60);
    f.near(640_000.0);
    for (s, r) in [(60, 70), (65, 77), (70, 84), (75, 90)] {
        f.add(1, 1000, s, r);
    }
    f.near(TARGET_UTILIZATION * 1_200_000.0);
}

#[test]
fn ignore_old_clusters() {
    let mut f = Fixture::default();
    for (s, r) in [(0, 10), (10, 20), (20, 30)] {
        f.add(0, 1000, s, r);
    }
    for (s, r) in [(60, 70), (65, 77), (70, 84), (75, 90)] {
        f.add(1, 1000, s, r);
    }
    f.near(TARGET_UTILIZATION * 1_200_000.0);
    f.add(0, 1000, 40 + 6000, 60 + 6000);
    assert_eq!(f.measured, None);
}

#[test]
fn ignore_size_last_send_packet() {
    let mut f = Fixture::default();
    for k in 0..4 {
        f.add(0, 1000, 10 * k, 10 * k + 10);
    }
    f.add(0, 1500, 40, 50);
    f.near(800_000.0);
}

#[test]
fn ignore_size_first_receive_packet() {
    let mut f = Fixture::default();
    f.add(0, 1500, 0, 10);
    for k in 1..4 {
        f.add(0, 1000, 10 * k, 10 * k + 10);
    }
    f.near(TARGET_UTILIZATION * 800_000.0);
}

#[test]
fn no_last_estimated_bitrate_bps() {
    let mut f = Fixture::default();
    assert_eq!(f.est.fetch_and_reset(), None);
}

#[test]
fn fetch_last_estimated_bitrate_bps() {
    let mut f = Fixture::default();
    for k in 0..4 {
        f.add(0, 1000, 10 * k, 10 * k + 10);
    }
    let r = f.est.fetch_and_reset().expect("an estimate");
    assert!((r.bps_f64() - 800_000.0).abs() <= 10.0);
    assert_eq!(f.est.fetch_and_reset(), None);
}
