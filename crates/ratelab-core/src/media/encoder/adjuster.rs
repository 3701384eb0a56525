//! libwebrtc's encoder bitrate adjuster (`video/encoder_bitrate_adjuster.cc` with
//! `video/encoder_overshoot_detector.cc`), for one spatial and one temporal layer: it measures
//! how far the encoder's frames overshoot the rate they were given and hands the encoder the
//! target divided by that overshoot, so that what leaves the encoder matches the target.
//! `RateControlSettings`' `bitrate_adjuster` is on by default in today's libwebrtc
//! (`WebRTC-VideoRateControl`), so Chromium's VP8 runs behind it.
//!
//! What it does, as the sources do it:
//! * a virtual network buffer fills with each encoded frame and drains at the adjusted rate;
//!   a frame that finds the buffer above one ideal frame (`rate / fps`) is charged the excess
//!   (at most the buffer's level, so a lone large frame is not), as a utilization
//!   `1 + excess / ideal`; the factor is the mean over the frames of the last 3 s;
//! * the factor is clamped to [1, 2] (never boost, and below half the frame dropper acts) and
//!   never takes the rate under the codec's minimum;
//! * for the first 30 frames after the encoder is (re)configured the factor is a conservative
//!   1.2: `VideoStreamEncoder::ReconfigureEncoder` makes a new adjuster, which it does on every
//!   resolution change, so each quality-scaler step starts it over;
//! * with one stream the link allocation equals the encoder target, so the "headroom" that could
//!   grant an overshoot is zero and only the network utilization counts.
//!
//! libwebrtc re-runs the adjustment on each rate update and at least once a second
//! (`kParameterUpdateIntervalMs`); the model does it at the first frame after either, which is
//! the only moment the encoder reads its rate.

use std::collections::VecDeque;

use crate::units::{Duration, Time};

/// `EncoderBitrateAdjuster::kWindowSize`: the overshoot is averaged over 3 s of frames.
pub const WINDOW: Duration = Duration::from_secs(3);
/// `kMinFramesSinceLayoutChange`: frames before the measured factor is trusted.
pub const MIN_FRAMES_TRUSTED: u32 = 30;
/// `kDefaultUtilizationFactor`: 20 % overshoot assumed until then.
pub const DEFAULT_UTILIZATION: f64 = 1.2;
/// The largest factor (the adjusted rate never goes below half the target).
pub const MAX_UTILIZATION: f64 = 2.0;
/// `kParameterUpdateIntervalMs`: the rates are refreshed at least this often.
pub const REFRESH: Duration = Duration::from_secs(1);

/// `EncoderOvershootDetector`'s network side: a leaky bucket at the adjusted rate.
#[derive(Clone, Debug, Default)]
struct OvershootDetector {
    rate_bps: f64,
    fps: f64,
    level_bits: f64,
    last_leak: Option<Time>,
    /// (frame time, utilization) over the window, with their running sum.
    factors: VecDeque<(Time, f64)>,
    sum: f64,
}

impl OvershootDetector {
    fn set_target(&mut self, rate_bps: f64, fps: f64, now: Time) {
        if self.rate_bps > 0.0 {
            self.leak(now);
        } else if rate_bps > 0.0 {
            // The stream was just enabled: start empty.
            *self = OvershootDetector { last_leak: Some(now), ..Default::default() };
        }
        self.rate_bps = rate_bps;
        self.fps = fps;
    }

    fn ideal_frame_bits(&self) -> f64 {
        if self.fps <= 0.0 || self.rate_bps <= 0.0 { 0.0 } else { ((self.rate_bps + self.fps / 2.0) / self.fps).trunc() }
    }

    fn on_frame(&mut self, bits: f64, now: Time) {
        self.leak(now);
        let ideal = self.ideal_frame_bits();
        if ideal <= 0.0 { return; }
        let sum = bits + self.level_bits;
        let over = if sum > ideal { self.level_bits.min(sum - ideal) } else { 0.0 };
        let factor = if self.factors.is_empty() { (bits / ideal).max(1.0) } else { 1.0 + over / ideal };
        self.level_bits += bits - over;
        self.sum += factor;
        self.factors.push_back((now, factor));
    }

    /// Mean utilization over the window; `None` without a frame in it.
    fn utilization(&mut self, now: Time) -> Option<f64> {
        while let Some(&(t, f)) = self.factors.front() {
            if now - t <= WINDOW { break; }
            self.sum = (self.sum - f).max(0.0);
            self.factors.pop_front();
        }
        (!self.factors.is_empty()).then(|| self.sum / self.factors.len() as f64)
    }

    fn leak(&mut self, now: Time) {
        if let Some(t) = self.last_leak {
            if self.rate_bps > 0.0 {
                let leaked = self.rate_bps * (now - t).as_secs_f64();
                self.level_bits = (self.level_bits - leaked).max(0.0);
            }
        }
        self.last_leak = Some(now);
    }
}

/// The adjuster of one encoder configuration.
#[derive(Clone, Debug, Default)]
pub struct BitrateAdjuster {
    detector: OvershootDetector,
    frames_since_reconfigure: u32,
    min_bps: f64,
}

impl BitrateAdjuster {
    /// `min_bps`: the codec's minimum rate, under which the adjustment never goes.
    pub fn new(min_bps: f64) -> Self { BitrateAdjuster { min_bps, ..Default::default() } }

    /// The rate to hand the encoder for a target of `target_bps` at `fps` input frames a second.
    pub fn adjust(&mut self, target_bps: f64, fps: f64, now: Time) -> f64 {
        if target_bps <= 0.0 {
            self.detector.set_target(0.0, fps, now);
            return 0.0;
        }
        let measured = if self.frames_since_reconfigure < MIN_FRAMES_TRUSTED { None } else { self.detector.utilization(now) };
        let mut factor = measured.unwrap_or(DEFAULT_UTILIZATION).clamp(1.0, MAX_UTILIZATION);
        if self.min_bps > 0.0 && self.min_bps < target_bps {
            factor = factor.min(target_bps / self.min_bps);
        }
        let adjusted = (target_bps / factor + 0.5).trunc().min(target_bps).max(self.min_bps);
        self.detector.set_target(adjusted, fps, now);
        adjusted
    }

    /// An encoded frame of `bits` left the encoder at `now`.
    pub fn on_encoded(&mut self, bits: f64, now: Time) {
        self.frames_since_reconfigure = self.frames_since_reconfigure.saturating_add(1);
        self.detector.on_frame(bits, now);
    }

    /// The encoder was reconfigured (a new resolution): libwebrtc starts a new adjuster.
    pub fn reconfigure(&mut self) { *self = BitrateAdjuster::new(self.min_bps); }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FPS: f64 = 15.0;

    fn at(i: i64) -> Time { Time::from_us(i * 66_667) }

    /// Feed `n` frames from frame index `from`, each `bits`, re-adjusting before each frame as
    /// the encoder model does at a refresh; returns the last adjusted rate.
    fn run(a: &mut BitrateAdjuster, target: f64, bits: impl Fn(i64) -> f64, from: i64, n: i64) -> f64 {
        let mut r = 0.0;
        for i in from..from + n {
            r = a.adjust(target, FPS, at(i));
            a.on_encoded(bits(i), at(i));
        }
        r
    }

    #[test]
    fn first_thirty_frames_get_the_conservative_factor() {
        let mut a = BitrateAdjuster::new(30_000.0);
        assert_eq!(a.adjust(300_000.0, FPS, at(0)), 250_000.0, "300 / 1.2");
        // Frames of 16 kbit against an ideal of 250 kbit/s / 15 = 16.67 kbit: the bucket drains
        // before each, no overshoot, every factor 1.
        run(&mut a, 300_000.0, |_| 16_000.0, 0, 29);
        assert_eq!(a.adjust(300_000.0, FPS, at(29)), 250_000.0, "29 frames: still 1.2");
        a.on_encoded(16_000.0, at(29));
        assert_eq!(a.adjust(300_000.0, FPS, at(30)), 300_000.0, "30 frames: the measured 1.0");
    }

    #[test]
    fn a_steady_twenty_percent_overshoot_measures_one_point_two() {
        // Frames of 20 kbit against the 16.67 kbit ideal: the bucket keeps 3.33 kbit after each
        // interval's drain, the next frame is charged it: 1 + 3.33 / 16.67 = 1.2.
        let mut a = BitrateAdjuster::new(30_000.0);
        run(&mut a, 300_000.0, |_| 20_000.0, 0, 40);
        let r = a.adjust(300_000.0, FPS, at(40));
        assert!((r - 250_000.0).abs() < 50.0, "{r}");
    }

    #[test]
    fn an_encoder_on_target_is_left_alone() {
        // Frames of exactly the ideal size: after the first, the bucket holds one frame when
        // the next arrives minus one interval's drain = 0, so no overshoot; factor → 1.
        let mut a = BitrateAdjuster::new(30_000.0);
        let ideal = |r: f64| ((r + FPS / 2.0) / FPS).trunc();
        // Let the adjusted rate settle at the target: feed what it asks for.
        let mut rate = a.adjust(300_000.0, FPS, at(0));
        for i in 0..200 {
            a.on_encoded(ideal(rate), at(i));
            rate = a.adjust(300_000.0, FPS, at(i + 1));
        }
        assert!((rate - 300_000.0).abs() < 300.0, "{rate}");
    }

    #[test]
    fn steady_overshoot_is_divided_out() {
        // An encoder that makes every frame 1.25× its ideal size. Per frame the bucket keeps
        // 0.25 ideal, the next frame overshoots by that residue: factor 1 + 0.25 = 1.25 (the
        // window's first frame counts 1.25 too), so the rate handed over is target / 1.25.
        let mut a = BitrateAdjuster::new(30_000.0);
        let mut rate = a.adjust(400_000.0, FPS, at(0));
        for i in 0..300 {
            a.on_encoded(1.25 * (rate / FPS), at(i));
            rate = a.adjust(400_000.0, FPS, at(i + 1));
        }
        assert!((rate - 320_000.0).abs() < 2_000.0, "400 / 1.25 = 320: {rate}");
    }

    #[test]
    fn factor_capped_at_two_and_at_the_codec_minimum() {
        let mut a = BitrateAdjuster::new(30_000.0);
        let mut rate = a.adjust(200_000.0, FPS, at(0));
        for i in 0..300 {
            a.on_encoded(4.0 * (rate / FPS), at(i));
            rate = a.adjust(200_000.0, FPS, at(i + 1));
        }
        assert!((rate - 100_000.0).abs() < 1.0, "at most halved: {rate}");
        // Near the minimum the factor is limited to target / min.
        let r = a.adjust(40_000.0, FPS, at(301));
        assert_eq!(r, 30_000.0);
        assert_eq!(a.adjust(20_000.0, FPS, at(302)), 30_000.0, "below the minimum: the minimum");
    }

    #[test]
    fn a_lone_key_frame_is_not_charged() {
        // One frame of 4 ideal frames into an empty bucket: no overshoot for it (the cap at
        // the bucket's level); the frames after it while the bucket drains are charged.
        let mut d = OvershootDetector::default();
        d.set_target(150_000.0, FPS, at(0));
        d.on_frame(10_000.0, at(0)); // first frame ever: its own size / ideal = 1.0
        d.on_frame(40_000.0, at(1)); // bucket drained to 0 before it: no overshoot
        assert_eq!(d.factors.back().unwrap().1, 1.0);
        d.on_frame(10_000.0, at(2)); // finds 40 − 10 = 30 kbit: charged 30 / 10 → factor 4
        assert!((d.factors.back().unwrap().1 - 4.0).abs() < 0.01, "{:?}", d.factors);
    }

    #[test]
    fn reconfigure_starts_over() {
        let mut a = BitrateAdjuster::new(30_000.0);
        run(&mut a, 300_000.0, |_| 16_000.0, 0, 60);
        assert_eq!(a.adjust(300_000.0, FPS, at(60)), 300_000.0);
        a.reconfigure();
        assert_eq!(a.adjust(300_000.0, FPS, at(61)), 250_000.0);
    }
}
