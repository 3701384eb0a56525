//! Application-limited-region detector (spec 2.10, libwebrtc `alr_detector.cc`,
//! `interval_budget.cc`).
//!
//! An interval budget filled at 65 % of the target rate (500 ms window, under-use may build up)
//! and drained by the bytes actually sent. ALR starts when the unused budget ratio exceeds 0.8
//! and ends when it falls below 0.5.

use crate::units::{Bitrate, Bytes, Time};

const BANDWIDTH_USAGE_RATIO: f64 = 0.65;
const START_BUDGET_RATIO: f64 = 0.80;
const STOP_BUDGET_RATIO: f64 = 0.50;
const WINDOW_MS: i64 = 500;

/// Byte budget refilled at a target rate, capped at one window's worth (`interval_budget.cc`).
#[derive(Clone, Debug, Default)]
pub struct IntervalBudget {
    target_kbps: i64,
    max_bytes: i64,
    remaining: i64,
}

impl IntervalBudget {
    pub fn set_target_kbps(&mut self, kbps: i64) {
        self.target_kbps = kbps.max(0);
        self.max_bytes = WINDOW_MS * self.target_kbps / 8;
        self.remaining = self.remaining.clamp(-self.max_bytes, self.max_bytes);
    }

    /// Refill for `dt_ms`. Under-use can build up (the ALR detector's mode).
    pub fn increase(&mut self, dt_ms: i64) {
        let bytes = self.target_kbps.saturating_mul(dt_ms.max(0)) / 8;
        self.remaining = (self.remaining.saturating_add(bytes)).min(self.max_bytes);
    }

    pub fn use_budget(&mut self, bytes: i64) {
        self.remaining = (self.remaining - bytes.max(0)).max(-self.max_bytes);
    }

    pub fn ratio(&self) -> f64 {
        if self.max_bytes <= 0 { 0.0 } else { self.remaining as f64 / self.max_bytes as f64 }
    }
}

#[derive(Clone, Debug)]
pub struct AlrDetector {
    /// Budget fill rate / estimate; ALR starts above `start` and ends below `stop` budget
    /// ratio (libwebrtc `WebRTC-AlrDetectorParameters` bw_usage / start / stop).
    usage: f64,
    start: f64,
    stop: f64,
    budget: IntervalBudget,
    last_send: Option<Time>,
    alr_start: Option<Time>,
}

impl Default for AlrDetector {
    fn default() -> Self { AlrDetector::with_params(BANDWIDTH_USAGE_RATIO, START_BUDGET_RATIO, STOP_BUDGET_RATIO) }
}

impl AlrDetector {
    pub fn with_params(usage: f64, start: f64, stop: f64) -> Self {
        AlrDetector { usage, start, stop, budget: IntervalBudget::default(), last_send: None, alr_start: None }
    }

    /// Feed every sent packet.
    pub fn on_bytes_sent(&mut self, bytes: Bytes, send_time: Time) {
        let Some(last) = self.last_send else {
            // The duration of the first send is unknown.
            self.last_send = Some(send_time);
            return;
        };
        // `TimeDelta::ms()`: rounded to the nearest millisecond.
        let dt_ms = round_div((send_time - last).as_us(), 1000);
        self.last_send = Some(send_time);
        self.budget.use_budget(bytes.get());
        self.budget.increase(dt_ms);
        let ratio = self.budget.ratio();
        if ratio > self.start && self.alr_start.is_none() {
            self.alr_start = Some(send_time);
        } else if ratio < self.stop && self.alr_start.is_some() {
            self.alr_start = None;
        }
    }

    /// The target rate changed: the budget fills at 65 % of it, in whole kbit/s rounded to
    /// nearest (`(bitrate * ratio).kbps()`).
    pub fn set_estimated_bitrate(&mut self, target: Bitrate) {
        let bps = (target.bps_f64() * self.usage).round() as i64;
        self.budget.set_target_kbps(round_div(bps, 1000));
    }

    /// Start of the current ALR, if in one.
    pub fn alr_start_time(&self) -> Option<Time> { self.alr_start }
    pub fn in_alr(&self) -> bool { self.alr_start.is_some() }
    pub fn budget_ratio(&self) -> f64 { self.budget.ratio() }
}

/// Integer division rounded to nearest, halves away from zero (libwebrtc `DivideRoundToNearest`).
fn round_div(v: i64, d: i64) -> i64 { if v >= 0 { (v + d / 2) / d } else { (v - d / 2) / d } }

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_by_hand() {
        let mut b = IntervalBudget::default();
        b.set_target_kbps(650); // max = 500·650/8 = 40625 bytes
        assert_eq!(b.max_bytes, 40625);
        b.increase(100); // 650·100/8 = 8125
        assert_eq!(b.remaining, 8125);
        b.use_budget(10_000);
        assert_eq!(b.remaining, -1875);
        b.increase(10_000);
        assert_eq!(b.remaining, 40625);
        assert_eq!(b.ratio(), 1.0);
        b.use_budget(1_000_000);
        assert_eq!(b.ratio(), -1.0);
    }

    fn run(det: &mut AlrDetector, start_ms: i64, dur_ms: i64, rate_kbps: i64) {
        // 1000-byte packets at `rate_kbps`.
        let gap_us = 8_000_000 / rate_kbps; // µs per 1000 B
        let mut t = start_ms * 1000;
        while t < (start_ms + dur_ms) * 1000 {
            det.on_bytes_sent(Bytes::new(1000), Time::from_us(t));
            t += gap_us;
        }
    }

    #[test]
    fn sending_well_below_target_is_alr_and_at_target_is_not() {
        let mut d = AlrDetector::default();
        d.set_estimated_bitrate(Bitrate::from_kbps(1000)); // budget at 650 kbit/s
        run(&mut d, 0, 2000, 1000);
        assert!(!d.in_alr(), "ratio {}", d.budget_ratio());
        run(&mut d, 2000, 2000, 100);
        assert!(d.in_alr(), "ratio {}", d.budget_ratio());
        assert!(d.alr_start_time().unwrap() > Time::from_ms(2000));
        run(&mut d, 4000, 2000, 1000);
        assert!(!d.in_alr(), "ratio {}", d.budget_ratio());
    }
}
