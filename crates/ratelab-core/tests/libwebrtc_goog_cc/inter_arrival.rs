//! `inter_arrival_unittest.cc` (remote_bitrate_estimator), run against the 64-bit-time
//! grouping goog_cc uses today (`InterArrivalDelta`, ratelab's `InterArrival`). The RTP and
//! abs-send-time variants of each case collapse into one: send times are exact microseconds,
//! so `timestamp_near` is 0 for all of them.

use ratelab_core::controllers::gcc::inter_arrival::{InterArrival, SEND_TIME_GROUP_LENGTH};
use ratelab_core::units::{Bytes, Duration, Time};

const MIN_STEP: i64 = 20;
const TRIGGER_NEW_GROUP_US: i64 = 5000 + MIN_STEP;
const BURST_THRESHOLD_MS: i64 = 5;

fn ia() -> InterArrival { InterArrival::new(SEND_TIME_GROUP_LENGTH) }

fn expect_false(ia: &mut InterArrival, ts_us: i64, arrival_ms: i64, size: i64) {
    let t = Time::from_ms(arrival_ms);
    assert_eq!(ia.compute_deltas(Time::from_us(ts_us), t, t, Bytes::new(size)), None, "ts {ts_us} arr {arrival_ms}");
}

fn expect_true(ia: &mut InterArrival, ts_us: i64, arrival_ms: i64, size: i64, ts_delta_us: i64, arrival_delta_ms: i64, size_delta: i64) {
    let t = Time::from_ms(arrival_ms);
    let d = ia.compute_deltas(Time::from_us(ts_us), t, t, Bytes::new(size)).unwrap_or_else(|| panic!("deltas at ts {ts_us}"));
    assert_eq!(d.send_delta, Duration::from_us(ts_delta_us));
    assert_eq!(d.arrival_delta, Duration::from_ms(arrival_delta_ms));
    assert_eq!(d.size_delta, size_delta);
}

#[test]
fn first_packet() { expect_false(&mut ia(), 0, 17, 1); }

#[test]
fn first_group() {
    let mut a = ia();
    let g1 = 17;
    expect_false(&mut a, 0, g1, 1);
    let g2 = g1 + BURST_THRESHOLD_MS + 1;
    expect_false(&mut a, TRIGGER_NEW_GROUP_US, g2, 2);
    let t = g2 + BURST_THRESHOLD_MS + 1;
    expect_true(&mut a, 2 * TRIGGER_NEW_GROUP_US, t, 1, TRIGGER_NEW_GROUP_US, g2 - g1, 1);
}

#[test]
fn second_group() {
    let mut a = ia();
    let g1 = 17;
    expect_false(&mut a, 0, g1, 1);
    let g2 = g1 + BURST_THRESHOLD_MS + 1;
    expect_false(&mut a, TRIGGER_NEW_GROUP_US, g2, 2);
    let g3 = g2 + BURST_THRESHOLD_MS + 1;
    expect_true(&mut a, 2 * TRIGGER_NEW_GROUP_US, g3, 1, TRIGGER_NEW_GROUP_US, g2 - g1, 1);
    let g4 = g3 + BURST_THRESHOLD_MS + 1;
    expect_true(&mut a, 3 * TRIGGER_NEW_GROUP_US, g4, 2, TRIGGER_NEW_GROUP_US, g3 - g2, -1);
}

#[test]
fn accumulated_group() {
    let mut a = ia();
    let g1 = 17;
    expect_false(&mut a, 0, g1, 1);
    let mut arrival = g1 + BURST_THRESHOLD_MS + 1;
    expect_false(&mut a, TRIGGER_NEW_GROUP_US, 28, 2);
    let mut ts = TRIGGER_NEW_GROUP_US;
    for _ in 0..10 {
        arrival += BURST_THRESHOLD_MS + 1;
        ts += MIN_STEP;
        expect_false(&mut a, ts, arrival, 1);
    }
    expect_true(&mut a, 2 * TRIGGER_NEW_GROUP_US, 500, 100, ts, arrival - g1, (2 + 10) - 1);
}

#[test]
fn out_of_order_packet() {
    let mut a = ia();
    let (g1_ts, g1) = (0, 17);
    expect_false(&mut a, g1_ts, g1, 1);
    let mut arrival = g1 + 11;
    let mut ts = TRIGGER_NEW_GROUP_US;
    expect_false(&mut a, ts, 28, 2);
    for _ in 0..10 {
        arrival += BURST_THRESHOLD_MS + 1;
        ts += MIN_STEP;
        expect_false(&mut a, ts, arrival, 1);
    }
    // Out of order: dropped.
    expect_false(&mut a, g1_ts, 281, 100);
    expect_true(&mut a, 2 * TRIGGER_NEW_GROUP_US, 500, 100, ts - g1_ts, arrival - g1, (2 + 10) - 1);
}

#[test]
fn out_of_order_within_group() {
    let mut a = ia();
    let (g1_ts, g1) = (0, 17);
    expect_false(&mut a, g1_ts, g1, 1);
    let mut arrival = g1 + 11;
    expect_false(&mut a, TRIGGER_NEW_GROUP_US, 28, 2);
    let mut ts = TRIGGER_NEW_GROUP_US + 10 * MIN_STEP;
    let g2_ts = ts;
    for _ in 0..10 {
        // Decreasing send times, still above the group's first: accumulated.
        arrival += BURST_THRESHOLD_MS + 1;
        expect_false(&mut a, ts, arrival, 1);
        ts -= MIN_STEP;
    }
    expect_false(&mut a, g1_ts, 281, 100);
    expect_true(&mut a, 2 * TRIGGER_NEW_GROUP_US, 500, 100, g2_ts - g1_ts, arrival - g1, (2 + 10) - 1);
}

#[test]
fn two_bursts() {
    let mut a = ia();
    let g1 = 17;
    expect_false(&mut a, 0, g1, 1);
    let mut ts = TRIGGER_NEW_GROUP_US;
    let mut arrival = 100; // nothing arrives for 100 ms
    for _ in 0..10 {
        ts += 30_000;
        arrival += BURST_THRESHOLD_MS;
        expect_false(&mut a, ts, arrival, 1);
    }
    let (g2, g2_ts) = (arrival, ts);
    ts += 30_000;
    arrival += BURST_THRESHOLD_MS + 1;
    expect_true(&mut a, ts, arrival, 100, g2_ts, g2 - g1, 10 - 1);
}

#[test]
fn no_bursts() {
    let mut a = ia();
    expect_false(&mut a, 0, 17, 1);
    let ts = TRIGGER_NEW_GROUP_US;
    let arrival = 28;
    expect_false(&mut a, ts, arrival, 2);
    expect_true(&mut a, TRIGGER_NEW_GROUP_US + 30_000, arrival + BURST_THRESHOLD_MS + 1, 100, ts, arrival - 17, 2 - 1);
}

/// Steps of 30 ms on all three clocks; `jump_ms` is added to the arrival clock once.
struct Clocks {
    send: i64,
    arrival: i64,
    system: i64,
}

impl Clocks {
    fn step(&mut self, a: &mut InterArrival, arrival_extra_ms: i64) -> Option<(Duration, Duration, i64)> {
        self.send += 30;
        self.arrival += 30 + arrival_extra_ms;
        self.system += 30;
        self.feed(a)
    }
    fn feed(&self, a: &mut InterArrival) -> Option<(Duration, Duration, i64)> {
        a.compute_deltas(Time::from_ms(self.send), Time::from_ms(self.arrival), Time::from_ms(self.system), Bytes::new(1000))
            .map(|d| (d.send_delta, d.arrival_delta, d.size_delta))
    }
}

const GOOD: Option<(Duration, Duration, i64)> = Some((Duration::from_ms(30), Duration::from_ms(30), 0));

#[test]
fn positive_arrival_time_jump() {
    let mut a = ia();
    let mut c = Clocks { send: 10_000, arrival: 20_000, system: 30_000 };
    assert_eq!(c.feed(&mut a), None);
    assert_eq!(c.step(&mut a, 0), None);
    assert_eq!(c.step(&mut a, 3000), GOOD);
    // The jump is detected on the next group: reset.
    assert_eq!(c.step(&mut a, 0), None);
    for _ in 0..2 {
        assert_eq!(c.step(&mut a, 0), None);
    }
    assert_eq!(c.step(&mut a, 0), GOOD);
}

#[test]
fn negative_arrival_time_jump() {
    let mut a = ia();
    let mut c = Clocks { send: 10_000, arrival: 20_000, system: 30_000 };
    assert_eq!(c.feed(&mut a), None);
    assert_eq!(c.step(&mut a, 0), None);
    assert_eq!(c.step(&mut a, 0), GOOD);
    // Three reordered groups, a reset, then two packets to rebuild the pair.
    c.arrival -= 1000;
    for _ in 0..(3 + 3) {
        assert_eq!(c.step(&mut a, 0), None);
    }
    assert_eq!(c.step(&mut a, 0), GOOD);
}
