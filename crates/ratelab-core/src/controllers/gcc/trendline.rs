//! Trendline estimator (spec 2.4) and overuse detector with adaptive threshold (spec 2.5),
//! libwebrtc `trendline_estimator.cc`.
//!
//! Each inter-group sample `d = Δa − Δs` is accumulated, exponentially smoothed and stored
//! against its arrival time; the OLS slope over the last 20 points approximates
//! `(send_rate − capacity)/capacity`. The detector compares `min(n, 60)·slope·4` with an
//! adaptive threshold γ.

use std::collections::VecDeque;

/// Detector output ("bandwidth usage hypothesis").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BandwidthUsage {
    #[default]
    Normal,
    Underusing,
    Overusing,
}

impl BandwidthUsage {
    /// Number for plots: −1 underusing, 0 normal, +1 overusing.
    pub fn as_f64(self) -> f64 {
        match self {
            BandwidthUsage::Normal => 0.0,
            BandwidthUsage::Underusing => -1.0,
            BandwidthUsage::Overusing => 1.0,
        }
    }
}

/// Spec 2.4: smoothing coefficient.
const SMOOTHING_COEF: f64 = 0.9;
/// Spec 2.4/2.5: threshold gain.
const THRESHOLD_GAIN: f64 = 4.0;
/// Spec 2.5: `kMinNumDeltas`.
const MIN_NUM_DELTAS: u32 = 60;
/// Spec 2.4: delta counter cap.
const DELTA_COUNTER_MAX: u32 = 1000;
/// Spec 2.5: overuse time threshold (ms).
const OVERUSING_TIME_THRESHOLD_MS: f64 = 10.0;
/// Spec 2.5: adaptation gains (decrease gain is the larger one, as in code).
const K_UP: f64 = 0.0087;
const K_DOWN: f64 = 0.039;
/// Spec 2.5: spikes larger than γ + 15 do not adapt the threshold.
const MAX_ADAPT_OFFSET_MS: f64 = 15.0;
/// Spec 2.5: the threshold's time step is capped at 100 ms.
const MAX_TIME_DELTA_MS: f64 = 100.0;
const THRESHOLD_INIT: f64 = 12.5;
const THRESHOLD_MIN: f64 = 6.0;
const THRESHOLD_MAX: f64 = 600.0;

/// Default trendline window (spec 2.4: 20 points; allowed 10…200).
pub const DEFAULT_WINDOW: usize = 20;

#[derive(Clone, Debug)]
pub struct Trendline {
    window_size: usize,
    // Trendline state (2.4).
    num_of_deltas: u32,
    first_arrival_ms: Option<f64>,
    accumulated_delay: f64,
    smoothed_delay: f64,
    /// (arrival time since first arrival in ms, smoothed delay in ms)
    history: VecDeque<(f64, f64)>,
    trend: f64,
    prev_trend: f64,
    // Detector state (2.5).
    threshold: f64,
    modified_trend: f64,
    last_update_ms: Option<f64>,
    /// Time spent above the threshold (ms); `None` when not over-using.
    time_over_using: Option<f64>,
    overuse_counter: u32,
    state: BandwidthUsage,
}

impl Trendline {
    pub fn new(window_size: usize) -> Self {
        let window_size = window_size.clamp(2, 1000);
        Trendline {
            window_size,
            num_of_deltas: 0,
            first_arrival_ms: None,
            accumulated_delay: 0.0,
            smoothed_delay: 0.0,
            history: VecDeque::with_capacity(window_size + 1),
            trend: 0.0,
            prev_trend: 0.0,
            threshold: THRESHOLD_INIT,
            modified_trend: 0.0,
            last_update_ms: None,
            time_over_using: None,
            overuse_counter: 0,
            state: BandwidthUsage::Normal,
        }
    }

    pub fn state(&self) -> BandwidthUsage { self.state }
    pub fn trend(&self) -> f64 { self.trend }
    pub fn modified_trend(&self) -> f64 { self.modified_trend }
    pub fn threshold(&self) -> f64 { self.threshold }

    /// Feed one packet's deltas (ms). Nothing changes unless `calculated` (a new group pair).
    pub fn update(&mut self, recv_delta_ms: f64, send_delta_ms: f64, arrival_time_ms: f64, calculated: bool) {
        if !calculated || !recv_delta_ms.is_finite() || !send_delta_ms.is_finite() || !arrival_time_ms.is_finite() {
            return;
        }
        let delta_ms = recv_delta_ms - send_delta_ms;
        self.num_of_deltas = (self.num_of_deltas + 1).min(DELTA_COUNTER_MAX);
        let first = *self.first_arrival_ms.get_or_insert(arrival_time_ms);
        self.accumulated_delay += delta_ms;
        self.smoothed_delay = SMOOTHING_COEF * self.smoothed_delay + (1.0 - SMOOTHING_COEF) * self.accumulated_delay;
        self.history.push_back((arrival_time_ms - first, self.smoothed_delay));
        if self.history.len() > self.window_size {
            self.history.pop_front();
        }
        let mut trend = self.prev_trend;
        if self.history.len() == self.window_size {
            if let Some(slope) = linear_fit_slope(&self.history) {
                trend = slope;
            }
        }
        self.trend = trend;
        self.detect(trend, send_delta_ms, arrival_time_ms);
    }

    /// Overuse detection (2.5).
    fn detect(&mut self, trend: f64, ts_delta_ms: f64, now_ms: f64) {
        if self.num_of_deltas < 2 {
            self.state = BandwidthUsage::Normal;
            return;
        }
        let modified_trend = f64::from(self.num_of_deltas.min(MIN_NUM_DELTAS)) * trend * THRESHOLD_GAIN;
        self.modified_trend = modified_trend;
        if modified_trend > self.threshold {
            let t = match self.time_over_using {
                None => ts_delta_ms / 2.0,
                Some(t) => t + ts_delta_ms,
            };
            self.time_over_using = Some(t);
            self.overuse_counter += 1;
            if t > OVERUSING_TIME_THRESHOLD_MS && self.overuse_counter > 1 && trend >= self.prev_trend {
                self.time_over_using = Some(0.0);
                self.overuse_counter = 0;
                self.state = BandwidthUsage::Overusing;
            }
            // Otherwise the previous hypothesis stands.
        } else if modified_trend < -self.threshold {
            self.time_over_using = None;
            self.overuse_counter = 0;
            self.state = BandwidthUsage::Underusing;
        } else {
            self.time_over_using = None;
            self.overuse_counter = 0;
            self.state = BandwidthUsage::Normal;
        }
        self.prev_trend = trend;
        self.update_threshold(modified_trend, now_ms);
    }

    /// Adaptive threshold (2.5): γ follows |m| with gain 0.039 down / 0.0087 up per ms.
    fn update_threshold(&mut self, modified_trend: f64, now_ms: f64) {
        let last = *self.last_update_ms.get_or_insert(now_ms);
        let abs = modified_trend.abs();
        if abs > self.threshold + MAX_ADAPT_OFFSET_MS {
            // A spike (e.g. a route change): do not adapt to it.
            self.last_update_ms = Some(now_ms);
            return;
        }
        let k = if abs < self.threshold { K_DOWN } else { K_UP };
        let dt = (now_ms - last).clamp(0.0, MAX_TIME_DELTA_MS);
        let th = self.threshold + k * (abs - self.threshold) * dt;
        if th.is_finite() {
            self.threshold = th.clamp(THRESHOLD_MIN, THRESHOLD_MAX);
        }
        self.last_update_ms = Some(now_ms);
    }
}

/// Ordinary least-squares slope of y on x; `None` if all x are equal.
fn linear_fit_slope(points: &VecDeque<(f64, f64)>) -> Option<f64> {
    let n = points.len() as f64;
    if n < 2.0 {
        return None;
    }
    // The deque's two slices in turn: the same sums in the same order as one pass over the
    // deque, without its per-element wrap check (this fit runs once per packet group).
    let (head, tail) = points.as_slices();
    let sum = |acc: (f64, f64), s: &[(f64, f64)]| s.iter().fold(acc, |(a, b), &(x, y)| (a + x, b + y));
    let (sx, sy) = sum(sum((0.0, 0.0), head), tail);
    let (mx, my) = (sx / n, sy / n);
    let moments = |acc: (f64, f64), s: &[(f64, f64)]| {
        s.iter().fold(acc, |(num, den), &(x, y)| (num + (x - mx) * (y - my), den + (x - mx) * (x - mx)))
    };
    let (num, den) = moments(moments((0.0, 0.0), head), tail);
    if den == 0.0 || !den.is_finite() {
        return None;
    }
    let s = num / den;
    s.is_finite().then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_of_hand_points() {
        let pts: VecDeque<(f64, f64)> = [(0.0, 1.0), (1.0, 3.0), (2.0, 5.0), (3.0, 7.0)].into_iter().collect();
        assert!((linear_fit_slope(&pts).unwrap() - 2.0).abs() < 1e-12);
        let flat_x: VecDeque<(f64, f64)> = [(1.0, 1.0), (1.0, 3.0)].into_iter().collect();
        assert_eq!(linear_fit_slope(&flat_x), None);
    }

    #[test]
    fn smoothing_and_accumulation_by_hand() {
        let mut t = Trendline::new(DEFAULT_WINDOW);
        // d = 7 − 5 = 2: acc 2, s = 0.1·2 = 0.2; then d = 1: acc 3, s = 0.9·0.2 + 0.1·3 = 0.48.
        t.update(7.0, 5.0, 100.0, true);
        assert!((t.smoothed_delay - 0.2).abs() < 1e-12);
        t.update(6.0, 5.0, 105.0, true);
        assert!((t.smoothed_delay - 0.48).abs() < 1e-12);
        let (x, y) = t.history.back().copied().unwrap();
        assert_eq!(x, 5.0);
        assert!((y - 0.48).abs() < 1e-12);
        // Not calculated -> nothing changes.
        t.update(100.0, 0.0, 110.0, false);
        assert_eq!(t.num_of_deltas, 2);
    }

    #[test]
    fn overuse_needs_ten_ms_and_two_samples() {
        let mut t = Trendline::new(DEFAULT_WINDOW);
        t.num_of_deltas = 60;
        // modified = 60·trend·4 = 24 for trend 0.1 > γ = 12.5.
        t.detect(0.1, 5.0, 0.0); // time_over_using = 2.5, counter 1
        assert_eq!(t.state(), BandwidthUsage::Normal);
        t.detect(0.1, 5.0, 5.0); // 7.5, counter 2
        assert_eq!(t.state(), BandwidthUsage::Normal);
        t.detect(0.1, 5.0, 10.0); // 12.5 > 10, counter 3 > 1, trend >= prev -> Overusing
        assert_eq!(t.state(), BandwidthUsage::Overusing);
        assert_eq!(t.time_over_using, Some(0.0));
        // A trend below −γ is under-use.
        t.detect(-0.1, 5.0, 15.0);
        assert_eq!(t.state(), BandwidthUsage::Underusing);
    }

    #[test]
    fn threshold_adapts_by_hand() {
        let mut t = Trendline::new(DEFAULT_WINDOW);
        t.update_threshold(0.0, 1000.0); // first call only records the time (dt = 0)
        assert_eq!(t.threshold(), 12.5);
        // |m| = 10 < γ: k = 0.039, dt = 10 ms: γ = 12.5 + 0.039·(10 − 12.5)·10 = 11.525
        t.update_threshold(10.0, 1010.0);
        assert!((t.threshold() - 11.525).abs() < 1e-9);
        // |m| = 20 ≥ γ: k = 0.0087, dt capped at 100: γ = 11.525 + 0.0087·8.475·100 = 18.89825
        t.update_threshold(-20.0, 2000.0);
        assert!((t.threshold() - 18.89825).abs() < 1e-9);
        // Spike above γ + 15 is ignored.
        t.update_threshold(100.0, 2050.0);
        assert!((t.threshold() - 18.89825).abs() < 1e-9);
        // Clamped at 6.
        for k in 0..100 {
            t.update_threshold(0.0, 2100.0 + 100.0 * k as f64);
        }
        assert_eq!(t.threshold(), 6.0);
    }

    /// Feed groups 5 ms apart whose arrival spacing is `5 + extra` ms; returns the estimator and
    /// the states seen.
    fn run(extra_ms: f64, groups: usize) -> (Trendline, Vec<BandwidthUsage>) {
        let mut t = Trendline::new(DEFAULT_WINDOW);
        let mut arrival = 0.0;
        let mut seen = Vec::new();
        for _ in 0..groups {
            arrival += 5.0 + extra_ms;
            t.update(5.0 + extra_ms, 5.0, arrival, true);
            seen.push(t.state());
        }
        (t, seen)
    }

    #[test]
    fn steadily_increasing_delay_is_overuse_and_flat_is_normal() {
        // +0.5 ms per 5 ms group: the queue grows at 10 % of the send rate.
        let (over, seen) = run(0.5, 60);
        let first = seen.iter().position(|s| *s == BandwidthUsage::Overusing).expect("overuse detected");
        assert!((DEFAULT_WINDOW - 1..40).contains(&first), "first overuse at group {first}");
        assert!(over.trend() > 0.05, "trend {}", over.trend());
        let (flat, seen) = run(0.0, 200);
        assert!(seen.iter().all(|s| *s == BandwidthUsage::Normal));
        assert_eq!(flat.trend(), 0.0);
        let (_, seen) = run(-0.5, 60);
        assert!(seen.contains(&BandwidthUsage::Underusing));
        assert!(!seen.contains(&BandwidthUsage::Overusing));
    }
}
