//! Unit tests of `ratelab-cc`: the rate law against hand-computed values, and the closed loop on
//! the test harness (a constant link, a capacity drop, random loss).

use super::*;
use crate::controllers::testkit::Harness;
use proptest::prelude::*;

fn cc() -> RatelabCc { RatelabCc::new(RatelabCcConfig::default()).unwrap() }

/// Round gains for the hand-computed rate-law tests (independent of the tuned defaults).
fn hand() -> RatelabCc {
    RatelabCc::new(RatelabCcConfig { growth_per_s: 1.0, additive_kbps_per_s: 100.0, drain_s: 0.5, max_over_delivery: 1.5, ..Default::default() }).unwrap()
}

fn constraints(max_kbps: i64) -> Constraints {
    Constraints { min_rate: Bitrate::from_kbps(150), max_rate: Bitrate::from_kbps(max_kbps), start_rate: Bitrate::from_kbps(300) }
}

#[test]
fn growth_below_target_hand_computed() {
    let mut c = hand();
    c.on_start(Time::ZERO, constraints(20_000));
    c.rate_bps = 1e6;
    // q = 0, target 25 ms, dt 0.1 s: x + (x·1.0·1 + 100 kbit/s)·0.1 = 1e6 + 110e3; cap r·1.5 = 3e6.
    c.step(0.0, 2e6, 0.0, 25.0, 0.1);
    assert!((c.rate_bps - 1_110_000.0).abs() < 1e-6, "{}", c.rate_bps);
    // Half-way to the target: growth halves: 1.11e6 + (1.11e6·0.5 + 1e5)·0.1 = 1.1755e6.
    c.step(12.5, 2e6, 0.0, 25.0, 0.1);
    assert!((c.rate_bps - 1_175_500.0).abs() < 1e-6, "{}", c.rate_bps);
    // The delivery cap: r = 0.7e6 → at most max(1.5·0.7e6, x) = x: no growth, no cut.
    c.step(0.0, 0.7e6, 0.0, 25.0, 0.1);
    assert!((c.rate_bps - 1_175_500.0).abs() < 1e-6);
}

#[test]
fn drain_above_target_hand_computed() {
    let mut c = hand();
    c.on_start(Time::ZERO, constraints(20_000));
    c.rate_bps = 3e6;
    // q = 125 ms: excess 100 ms drained in 500 ms: x = r·(1 − 0.2) = 0.8·2e6.
    c.step(125.0, 2e6, 2e6, 25.0, 0.1);
    assert!((c.rate_bps - 1.6e6).abs() < 1e-6, "{}", c.rate_bps);
    // q = 1 s: the cut is floored at r·0.5.
    c.rate_bps = 3e6;
    c.step(1000.0, 2e6, 2e6, 25.0, 0.1);
    assert!((c.rate_bps - 1e6).abs() < 1e-6);
    // Recovery: below 0.9 × the recent maximum delivery rate (4e6) the growth is 6/s at an
    // empty queue: 1e6·(1 + 6·0.1) = 1.6e6, capped at 0.9·4e6.
    c.rate_bps = 1e6;
    c.step(0.0, 1e6, 4e6, 25.0, 0.1);
    assert!((c.rate_bps - 1.6e6).abs() < 1e-6, "{}", c.rate_bps);
    c.rate_bps = 3.5e6;
    c.step(0.0, 1e6, 4e6, 25.0, 0.1);
    assert!((c.rate_bps - 3.6e6).abs() < 1e-6, "{}", c.rate_bps);
    // The drain rule never raises the rate.
    c.rate_bps = 0.5e6;
    c.step(30.0, 2e6, 2e6, 25.0, 0.1);
    assert!((c.rate_bps - 0.5e6).abs() < 1e-6);
}

#[test]
fn bad_params_are_named() {
    let e = RatelabCc::new(RatelabCcConfig { drain_s: 0.0, ..Default::default() }).err().unwrap();
    assert!(e.to_string().contains("drain_s"), "{e}");
    let e = RatelabCc::new(RatelabCcConfig { min_drain_factor: 1.5, ..Default::default() }).err().unwrap();
    assert!(e.to_string().contains("min_drain_factor"), "{e}");
}

#[test]
fn fills_a_constant_link_with_a_small_queue() {
    let mut h = Harness::new(Box::new(cc()), Bitrate::from_kbps(2000), 40, constraints(20_000));
    h.run_until(Time::from_ms(30_000));
    let rate = h.mean_target(Time::from_ms(10_000), Time::from_ms(30_000)).kbps_f64();
    let q = h.mean_queue(Time::from_ms(10_000), Time::from_ms(30_000)).as_ms_f64();
    assert!(rate > 1800.0 && rate < 2300.0, "rate {rate}");
    assert!(q < 80.0, "queue {q} ms");
}

#[test]
fn capacity_drop_is_followed_within_a_second() {
    let mut h = Harness::new(Box::new(cc()), Bitrate::from_kbps(4000), 40, constraints(20_000));
    h.capacity.push((Time::from_ms(20_000), Bitrate::from_kbps(1000)));
    h.run_until(Time::from_ms(30_000));
    let after = h.mean_target(Time::from_ms(21_000), Time::from_ms(30_000)).kbps_f64();
    assert!(after < 1300.0, "target after the drop {after}");
    let q = h.mean_queue(Time::from_ms(23_000), Time::from_ms(30_000)).as_ms_f64();
    assert!(q < 80.0, "queue after the drop {q} ms");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Whatever the measurements, the rate stays finite and within the constraints, and a
    /// queue above target never raises it.
    #[test]
    fn step_respects_constraints(steps in proptest::collection::vec((0.0f64..2000.0, 0.0f64..5e7, 0.0f64..5e7, 0.0f64..1.0), 1..50)) {
        let mut c = cc();
        c.on_start(Time::ZERO, constraints(20_000));
        for (q, r, bw, dt) in steps {
            let before = c.rate_bps;
            c.step(q, r, bw, 25.0, dt);
            prop_assert!(c.rate_bps.is_finite());
            prop_assert!(c.rate_bps >= 150e3 - 1e-6 && c.rate_bps <= 20e6 + 1e-6);
            if q > 25.0 { prop_assert!(c.rate_bps <= before.max(150e3) + 1e-6); }
        }
    }
}
