//! `robust_throughput_estimator_unittest.cc`.

use crate::common::{assert_near_bytes_per_sec, bytes_per_sec, packet};
use ratelab_core::controller::PacketResult;
use ratelab_core::controllers::gcc::acked_bitrate::AckedEstimatorKind;
use ratelab_core::controllers::gcc::robust_throughput::{RobustSettings, RobustThroughputEstimator};
use ratelab_core::controllers::gcc::{GccConfig, GccProfile};
use ratelab_core::units::{Bitrate, Duration, Time};

/// The test's `FeedbackGenerator`: back-to-back packets at a send and a receive rate.
struct Gen {
    send: Time,
    recv: Time,
    seq: u64,
}

impl Gen {
    fn new() -> Self { Gen { send: Time::from_ms(100_000), recv: Time::from_ms(10_000), seq: 100 } }
    fn feedback(&mut self, n: usize, size: i64, send_rate: Bitrate, recv_rate: Bitrate) -> Vec<PacketResult> {
        let dt = |r: Bitrate| Duration::from_us(size * 8 * 1_000_000 / r.bps());
        (0..n)
            .map(|_| {
                let p = packet(self.seq, size, self.send, None);
                self.send = self.send + dt(send_rate);
                self.recv = self.recv + dt(recv_rate);
                self.seq += 1;
                PacketResult { recv_time: Some(self.recv), ..p }
            })
            .collect()
    }
}

fn est() -> RobustThroughputEstimator { RobustThroughputEstimator::new(RobustSettings::default()) }
fn est_500ms() -> RobustThroughputEstimator {
    RobustThroughputEstimator::new(RobustSettings { min_window: Duration::from_ms(500), ..RobustSettings::default() })
}

#[test]
fn default_enabled() {
    // The field-trial default is the robust estimator: ratelab's `current` profile default.
    let cfg = GccConfig::default();
    assert_eq!(cfg.profile, GccProfile::Current);
    assert_eq!(ratelab_core::controllers::gcc::resolved_acked_estimator(&cfg), AckedEstimatorKind::Robust);
}

#[test]
fn can_disable() {
    let cfg = GccConfig { acked_estimator: Some(AckedEstimatorKind::Bayesian), ..GccConfig::default() };
    assert_eq!(ratelab_core::controllers::gcc::resolved_acked_estimator(&cfg), AckedEstimatorKind::Bayesian);
}

#[test]
fn initial_estimate() {
    let mut g = Gen::new();
    let mut e = est();
    let rate = bytes_per_sec(100_000);
    e.incoming(&g.feedback(9, 1000, rate, rate));
    assert_eq!(e.bitrate(), None);
    e.incoming(&g.feedback(1, 1000, rate, rate));
    assert_eq!(e.bitrate(), Some(rate));
    e.incoming(&g.feedback(15, 1000, rate, rate));
    assert_eq!(e.bitrate(), Some(rate));
}

#[test]
fn estimate_adapts() {
    let mut g = Gen::new();
    let mut e = est();
    let r1 = bytes_per_sec(100_000);
    for _ in 0..10 {
        e.incoming(&g.feedback(10, 1000, r1, r1));
        assert_eq!(e.bitrate(), Some(r1));
    }
    let r2 = bytes_per_sec(200_000);
    for _ in 0..20 {
        e.incoming(&g.feedback(10, 1000, r2, r2));
        let t = e.bitrate().unwrap();
        assert!(t >= r1 && t <= r2, "{t:?}");
    }
    for _ in 0..20 {
        e.incoming(&g.feedback(10, 1000, r2, r2));
        assert_eq!(e.bitrate(), Some(r2));
    }
    let r3 = bytes_per_sec(50_000);
    for _ in 0..5 {
        e.incoming(&g.feedback(10, 1000, r3, r3));
        let t = e.bitrate().unwrap();
        assert!(t <= r2 && t >= r3, "{t:?}");
    }
    for _ in 0..5 {
        e.incoming(&g.feedback(10, 1000, r3, r3));
        assert_eq!(e.bitrate(), Some(r3));
    }
}

#[test]
fn capped_by_receive_rate() {
    let mut g = Gen::new();
    let mut e = est();
    e.incoming(&g.feedback(20, 1000, bytes_per_sec(100_000), bytes_per_sec(25_000)));
    assert_near_bytes_per_sec(e.bitrate(), 25_000.0, 0.05 * 25_000.0);
}

#[test]
fn capped_by_send_rate() {
    let mut g = Gen::new();
    let mut e = est();
    e.incoming(&g.feedback(20, 1000, bytes_per_sec(50_000), bytes_per_sec(100_000)));
    assert_near_bytes_per_sec(e.bitrate(), 50_000.0, 0.05 * 50_000.0);
}

#[test]
fn delay_spike() {
    let mut g = Gen::new();
    let mut e = est_500ms();
    let send = bytes_per_sec(100_000);
    e.incoming(&g.feedback(20, 1000, send, send));
    assert_eq!(e.bitrate(), Some(send));
    // 25 packets sent, none received for 250 ms, then all delivered within 50 ms.
    g.recv = g.recv + Duration::from_ms(250);
    for _ in 0..30 {
        e.incoming(&g.feedback(1, 1000, send, bytes_per_sec(600_000)));
        assert_near_bytes_per_sec(e.bitrate(), 100_000.0, 5000.0);
    }
    for _ in 0..20 {
        e.incoming(&g.feedback(5, 1000, send, send));
        assert_near_bytes_per_sec(e.bitrate(), 100_000.0, 5000.0);
    }
}

#[test]
fn high_loss() {
    let mut g = Gen::new();
    let mut e = est();
    let rate = bytes_per_sec(100_000);
    let mut fb = g.feedback(20, 1000, rate, rate);
    for (i, p) in fb.iter_mut().enumerate() {
        if i % 2 == 1 {
            p.recv_time = None;
        }
    }
    // ReceiveTimeOrder puts the lost packets last.
    fb.sort_by_key(|p| p.recv_time.unwrap_or(Time::MAX));
    e.incoming(&fb);
    assert_near_bytes_per_sec(e.bitrate(), 50_000.0, 0.05 * 50_000.0);
}

#[test]
fn reordered_feedback() {
    let mut g = Gen::new();
    let mut e = est();
    let rate = bytes_per_sec(100_000);
    e.incoming(&g.feedback(20, 1000, rate, rate));
    assert_eq!(e.bitrate(), Some(rate));
    let delayed = g.feedback(10, 1000, rate, rate);
    let fb = g.feedback(10, 1000, rate, rate);
    e.incoming(&fb);
    assert!(e.bitrate().unwrap() < rate);
    e.incoming(&delayed);
    assert_eq!(e.bitrate(), Some(rate));
    for _ in 0..10 {
        e.incoming(&g.feedback(15, 1000, rate, rate));
        assert_eq!(e.bitrate(), Some(rate));
    }
}

#[test]
fn deep_reordering() {
    let mut g = Gen::new();
    let mut e = est_500ms();
    let rate = bytes_per_sec(100_000);
    let mut delayed = g.feedback(1, 1000, rate, rate);
    for _ in 0..10 {
        e.incoming(&g.feedback(10, 1000, rate, rate));
        assert_eq!(e.bitrate(), Some(rate));
    }
    // Arrives ~1 s late: sent ~500 ms before the second-oldest packet in the window.
    delayed[0].recv_time = Some(g.recv);
    e.incoming(&delayed);
    assert_near_bytes_per_sec(e.bitrate(), 100_000.0, 5000.0);
    for _ in 0..10 {
        e.incoming(&g.feedback(10, 1000, rate, rate));
        assert_near_bytes_per_sec(e.bitrate(), 100_000.0, 5000.0);
    }
}

#[test]
fn resets_if_receive_clock_change_backwards() {
    let mut g = Gen::new();
    let mut e = est();
    let rate = bytes_per_sec(100_000);
    e.incoming(&g.feedback(20, 1000, rate, rate));
    assert_eq!(e.bitrate(), Some(rate));
    g.recv = g.recv - Duration::from_secs(2);
    let rate2 = bytes_per_sec(200_000);
    e.incoming(&g.feedback(20, 1000, rate2, rate2));
    assert_eq!(e.bitrate(), Some(rate2));
}

#[test]
fn stream_paused_and_resumed() {
    let mut g = Gen::new();
    let mut e = est();
    let rate = bytes_per_sec(100_000);
    e.incoming(&g.feedback(20, 1000, rate, rate));
    assert_near_bytes_per_sec(e.bitrate(), 100_000.0, 5000.0);
    g.send = g.send + Duration::from_secs(60);
    g.recv = g.recv + Duration::from_secs(60);
    e.incoming(&g.feedback(5, 1000, rate, rate));
    assert_eq!(e.bitrate(), None, "no recent data");
    for _ in 0..4 {
        e.incoming(&g.feedback(5, 1000, rate, rate));
        assert_eq!(e.bitrate(), Some(rate));
    }
}
