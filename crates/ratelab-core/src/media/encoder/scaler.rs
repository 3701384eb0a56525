//! libwebrtc's quality scaler (modules/video_coding/utility/quality_scaler.cc, with the
//! `WebRTC-Video-QualityScaling` settings Chromium ships): every few seconds it looks at the
//! share of dropped frames and the smoothed QP of the encoded ones, and asks for a lower
//! resolution when frames are dropped or QP is high, a higher one when QP is low.
//!
//! The simulator has no quantizer, so the QP a frame gets is a proxy ([`qp_proxy`]): how the
//! encoder's bit budget per frame compares with the smallest frame it can make at the current
//! resolution (docs/models/encoder.md).

use crate::media::exp_filter::ExpFilter;
use crate::units::{Duration, Time};
use std::collections::VecDeque;

/// `kMeasureMs`: the check period until the first downscale ("fast ramp-up").
const MEASURE: Duration = Duration::from_ms(2000);
/// Later checks: `kMeasureMs` × `kSamplePeriodScaleFactor` (2.5).
const LATER_CHECK: Duration = Duration::from_ms(5000);
/// While a check lacks frames: half of `kMeasureMs` (the quality-scaling experiment's rule).
const WAITING_CHECK: Duration = Duration::from_ms(1000);
/// `kFramedropPercentThreshold`: a drop share (percent) this high reports high QP.
const FRAMEDROP_PERCENT_THRESHOLD: u32 = 60;
/// `kMinFramesNeededToScale`: fewer input frames since the last decision: no decision.
const MIN_FRAMES_NEEDED: usize = 2 * 30;
/// The drop-share and QP windows: "30 fps for 5 seconds".
const WINDOW_FRAMES: usize = 5 * 30;
/// VP8 QP thresholds (`kLowVp8QpThreshold`, `kHighVp8QpThreshold`, bitstream range 0-127).
pub const VP8_QP_LOW: f64 = 29.0;
pub const VP8_QP_HIGH: f64 = 95.0;
/// Smoothing of the QP samples, per millisecond (Chromium's default quality-scaling settings:
/// `alpha_high` 0.9995, `alpha_low` 0.9999; about 2 s and 10 s time constants).
const ALPHA_HIGH: f32 = 0.9995;
const ALPHA_LOW: f32 = 0.9999;

/// The QP proxy: QP falls by [`QP_PER_DOUBLING`] for every doubling of the bit budget per frame
/// above the floor, from [`QP_AT_FLOOR`] at a budget equal to the floor. The two constants put
/// the high threshold (95) at 1.25 × the floor and the low one (29) at 3 × the floor, where
/// Chromium's VP8 at 640x360 is seen to scale down and never to scale back up on the train
/// traces (docs/fidelity/evidence-frame-rate.md).
const QP_AT_FLOOR: f64 = 112.0;
const QP_PER_DOUBLING: f64 = 52.3;

/// The QP a frame gets when the rate control's budget per frame is `budget` and the smallest
/// frame at the current resolution is `floor` (both in the same unit).
pub fn qp_proxy(budget: f64, floor: f64) -> f64 {
    if floor <= 0.0 { return 0.0; }
    (QP_AT_FLOOR - QP_PER_DOUBLING * (budget.max(1e-9) / floor).log2()).clamp(0.0, 127.0)
}

/// What a check asks of the resolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adapt {
    Down,
    Up,
}

/// `QpSmoother`: an [`ExpFilter`] applied with the milliseconds since its last sample.
#[derive(Clone, Debug)]
struct Smoother {
    filter: ExpFilter,
    last: Time,
}

impl Smoother {
    fn new(alpha: f32) -> Self { Smoother { filter: ExpFilter::new(alpha), last: Time::ZERO } }
    fn add(&mut self, now: Time, sample: f64) {
        self.filter.apply((now - self.last).as_ms_f64() as f32, sample as f32);
        self.last = now;
    }
    fn value(&self) -> Option<f64> { self.filter.value().map(f64::from) }
}

#[derive(Clone, Debug)]
pub struct QualityScaler {
    next_check: Time,
    fast_rampup: bool,
    /// 100 per dropped input frame, 0 per encoded one (the newest last).
    drops: VecDeque<u8>,
    qp_high: Smoother,
    qp_low: Smoother,
}

impl QualityScaler {
    pub fn new(start: Time) -> Self {
        QualityScaler {
            next_check: start + MEASURE,
            fast_rampup: true,
            drops: VecDeque::with_capacity(WINDOW_FRAMES),
            qp_high: Smoother::new(ALPHA_HIGH),
            qp_low: Smoother::new(ALPHA_LOW),
        }
    }

    fn push(&mut self, v: u8) {
        if self.drops.len() == WINDOW_FRAMES { self.drops.pop_front(); }
        self.drops.push_back(v);
    }

    /// An input frame the rate control dropped.
    pub fn on_dropped(&mut self) { self.push(100); }

    /// An encoded frame and its QP.
    pub fn on_encoded(&mut self, now: Time, qp: f64) {
        self.push(0);
        self.qp_high.add(now, qp);
        self.qp_low.add(now, qp);
    }

    /// Run the check when it is due (`CheckQpTask`); `Some` when it asks for a change (the
    /// samples are then cleared, as `ClearSamples` does).
    pub fn poll(&mut self, now: Time) -> Option<Adapt> {
        if now < self.next_check { return None; }
        let (enough, result) = self.check();
        if result == Some(Adapt::Down) { self.fast_rampup = false; }
        if result.is_some() {
            self.drops.clear();
            self.qp_high = Smoother::new(ALPHA_HIGH);
            self.qp_low = Smoother::new(ALPHA_LOW);
        }
        // `GetCheckingQpDelayMs`: 2 s while ramping up, 1 s while waiting for frames, else 5 s.
        let delay = if self.fast_rampup { MEASURE } else if !enough { WAITING_CHECK } else { LATER_CHECK };
        self.next_check = now + delay;
        result
    }

    /// `CheckQp`: (enough frames, the request).
    fn check(&self) -> (bool, Option<Adapt>) {
        if self.drops.len() < MIN_FRAMES_NEEDED { return (false, None); }
        let drop_percent = self.drops.iter().map(|&v| v as u32).sum::<u32>() / self.drops.len() as u32;
        if drop_percent >= FRAMEDROP_PERCENT_THRESHOLD { return (true, Some(Adapt::Down)); }
        match (self.qp_high.value(), self.qp_low.value()) {
            (Some(h), _) if h.floor() > VP8_QP_HIGH => (true, Some(Adapt::Down)),
            (_, Some(l)) if l.floor() <= VP8_QP_LOW => (true, Some(Adapt::Up)),
            _ => (true, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRAME: i64 = 66_667; // 15 fps

    fn t(i: i64) -> Time { Time::from_us(i * FRAME) }

    #[test]
    fn qp_proxy_puts_the_thresholds_where_documented() {
        assert!((qp_proxy(1.25, 1.0) - VP8_QP_HIGH).abs() < 0.5);
        assert!((qp_proxy(3.0, 1.0) - VP8_QP_LOW).abs() < 0.5);
        assert_eq!(qp_proxy(0.1, 1.0), 127.0);
        assert_eq!(qp_proxy(100.0, 1.0), 0.0);
    }

    #[test]
    fn first_downscale_needs_sixty_frames_then_checks_every_five_seconds() {
        // High QP from the start at 15 fps: checks at 2 s (30 frames) and 4 s (60 frames);
        // the 4 s check has 60 samples and reports high QP. The next check is 5 s later.
        let mut q = QualityScaler::new(Time::ZERO);
        let mut asks = vec![];
        for i in 0..=200 {
            if let Some(a) = q.poll(t(i)) { asks.push((i, a)); }
            q.on_encoded(t(i), 120.0);
        }
        assert_eq!(asks[0], (60, Adapt::Down));
        assert_eq!(asks[1], (60 + 75, Adapt::Down));
    }

    #[test]
    fn dropping_sixty_percent_asks_for_less_and_a_low_qp_for_more() {
        let mut q = QualityScaler::new(Time::ZERO);
        let mut first = None;
        for i in 0..=60 {
            if let Some(a) = q.poll(t(i)) { first = Some(a); }
            if i % 5 < 3 { q.on_dropped() } else { q.on_encoded(t(i), 50.0) }
        }
        assert_eq!(first, Some(Adapt::Down));
        let mut q = QualityScaler::new(Time::ZERO);
        let mut asked = None;
        for i in 0..=60 {
            if let Some(a) = q.poll(t(i)) { asked = Some(a); }
            q.on_encoded(t(i), 20.0);
        }
        assert_eq!(asked, Some(Adapt::Up));
    }

    #[test]
    fn a_normal_qp_asks_for_nothing() {
        let mut q = QualityScaler::new(Time::ZERO);
        for i in 0..=600 {
            assert_eq!(q.poll(t(i)), None, "frame {i}");
            q.on_encoded(t(i), 60.0);
        }
    }
}
