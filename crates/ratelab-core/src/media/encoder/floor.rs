//! The encoder at low rates (`media.frame_floor_kbit`): a real encoder cannot make a frame
//! smaller than its highest quantizer allows, so below that budget it drops frames instead of
//! shrinking them, and libwebrtc's quality scaler then steps the resolution down.
//!
//! Three parts, each after what Chromium 156's VP8 does (docs/models/encoder.md):
//! * the smallest delta frame at each resolution (the floor), growing with the time since the
//!   last encoded frame (more motion to code after a gap);
//! * libvpx's frame dropping as libwebrtc configures it (vpx_drop.rs): regular decimation to
//!   one frame in 2, 3 or 4 as the rate control's buffer empties, every frame while it is
//!   below zero;
//! * the quality scaler (scaler.rs) on libwebrtc's resolution ladder.

use super::scaler::{qp_proxy, Adapt, QualityScaler};
use super::vpx_drop::{Decision, VpxDrop};
use crate::units::{Duration, Time};

/// How the floor scales with the picture: floor ∝ pixels^0.62. Chromium's VP8 on the
/// fidelity study's high-motion source keeps 15 frames/s down to about 27 kbit per frame at
/// 640x360 and 11.5 kbit at 320x180 (train traces, docs/fidelity/evidence-frame-rate.md):
/// ln(27 / 11.5) / ln 4 ≈ 0.62.
pub const FLOOR_PIXEL_EXPONENT: f64 = 0.62;
/// A frame after a gap of g frame intervals costs floor × g^0.35 (same evidence: at 5 and at
/// 2 frames/s a frame costs about 1.4 and 1.9 floors).
const GAP_EXPONENT: f64 = 0.35;
/// Gaps longer than this many frame intervals cost no more (a scene is a scene).
const MAX_GAP_FRAMES: f64 = 30.0;
/// libwebrtc's `VideoAdapter` scale fractions: 3/4 and 2/3 in turn (1, 3/4, 1/2, 3/8, 1/4, ...).
const LADDER: [(u32, u32); 7] = [(1, 1), (3, 4), (1, 2), (3, 8), (1, 4), (3, 16), (1, 8)];
/// `kDefaultMinPixelsPerFrame`: the quality scaler never goes below 320x180.
const MIN_PIXELS: u64 = 320 * 180;

#[derive(Clone, Debug, PartialEq)]
pub struct FloorConfig {
    /// The source's resolution.
    pub width: u32,
    pub height: u32,
    /// The smallest delta frame at the source resolution, bits.
    pub floor_bits: f64,
    /// Step the resolution as libwebrtc's quality scaler does.
    pub quality_scaler: bool,
}

#[derive(Clone, Debug)]
pub struct FrameFloor {
    cfg: FloorConfig,
    step: usize,
    scaler: Option<QualityScaler>,
    last_encoded: Option<Time>,
    dropped: u64,
    drop: VpxDrop,
}

impl FrameFloor {
    pub fn new(cfg: FloorConfig) -> Self {
        FrameFloor { cfg, step: 0, scaler: None, last_encoded: None, dropped: 0, drop: VpxDrop::new() }
    }

    /// The picture now (the ladder's step applied to the source).
    pub fn resolution(&self) -> (u32, u32) { scaled(&self.cfg, self.step) }

    pub fn frames_dropped(&self) -> u64 { self.dropped }

    /// The smallest delta frame at the current resolution right after the previous one, bits.
    pub fn floor_bits(&self) -> f64 {
        let (w, h) = self.resolution();
        let ratio = (w as f64 * h as f64) / (self.cfg.width as f64 * self.cfg.height as f64).max(1.0);
        self.cfg.floor_bits * ratio.powf(FLOOR_PIXEL_EXPONENT)
    }

    /// The smallest frame captured at `now`, bits: the floor grown by the gap since the last
    /// encoded frame.
    pub fn min_frame_bits(&self, now: Time, interval: Duration) -> f64 {
        let gap = match self.last_encoded {
            Some(t) if interval > Duration::ZERO => ((now - t).as_secs_f64() / interval.as_secs_f64()).clamp(1.0, MAX_GAP_FRAMES),
            _ => 1.0,
        };
        self.floor_bits() * gap.powf(GAP_EXPONENT)
    }

    /// The quality scaler's check, when due; true when the resolution changed (the next frame
    /// is then a key frame, as after every resolution change in libwebrtc).
    pub fn adapt(&mut self, now: Time) -> bool {
        if !self.cfg.quality_scaler { return false; }
        let scaler = self.scaler.get_or_insert_with(|| QualityScaler::new(now));
        match scaler.poll(now) {
            Some(Adapt::Down) if self.step + 1 < LADDER.len() && pixels(scaled(&self.cfg, self.step + 1)) >= MIN_PIXELS => {
                self.step += 1;
                true
            }
            Some(Adapt::Up) if self.step > 0 => {
                self.step -= 1;
                true
            }
            _ => false,
        }
    }

    /// libvpx's rate control on the frame captured now, at buffer level `level_s` (seconds of
    /// the target).
    pub fn decide(&mut self, level_s: f64, keyframe: bool) -> Decision { self.drop.decide(level_s, keyframe) }

    pub fn on_dropped(&mut self) {
        self.dropped += 1;
        if let Some(s) = self.scaler.as_mut() { s.on_dropped(); }
    }

    /// A frame encoded at `now` while the rate control's budget was `budget_bits` per frame.
    pub fn on_encoded(&mut self, now: Time, budget_bits: f64) {
        self.last_encoded = Some(now);
        let qp = qp_proxy(budget_bits, self.floor_bits());
        if let Some(s) = self.scaler.as_mut() { s.on_encoded(now, qp); }
    }
}

fn scaled(cfg: &FloorConfig, step: usize) -> (u32, u32) {
    let (n, d) = LADDER[step];
    (cfg.width * n / d, cfg.height * n / d)
}

fn pixels((w, h): (u32, u32)) -> u64 { w as u64 * h as u64 }

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(scaler: bool) -> FloorConfig { FloorConfig { width: 640, height: 360, floor_bits: 27_000.0, quality_scaler: scaler } }

    #[test]
    fn floor_scales_with_pixels_and_gap() {
        let mut f = FrameFloor::new(cfg(false));
        assert_eq!(f.floor_bits(), 27_000.0);
        let dt = Duration::from_us(66_667);
        assert_eq!(f.min_frame_bits(Time::from_ms(1000), dt), 27_000.0);
        f.on_encoded(Time::ZERO, 50_000.0);
        // 5 intervals later: 5^0.35 ≈ 1.757 floors
        let c = f.min_frame_bits(Time::from_us(5 * 66_667), dt);
        assert!((c / 27_000.0 - 5f64.powf(0.35)).abs() < 1e-3, "{c}");
        // half the width and height: a quarter of the pixels, 4^-0.62 ≈ 0.424 of the floor
        f.step = 2;
        assert_eq!(f.resolution(), (320, 180));
        assert!((f.floor_bits() - 27_000.0 * 0.25f64.powf(0.62)).abs() < 1.0);
    }

    #[test]
    fn ladder_stops_at_320x180() {
        let mut f = FrameFloor::new(cfg(true));
        let mut seen = vec![f.resolution()];
        let mut t = Time::ZERO;
        for _ in 0..2000 {
            if f.adapt(t) { seen.push(f.resolution()); }
            f.on_dropped();
            t = t + Duration::from_us(66_667);
        }
        assert_eq!(seen, vec![(640, 360), (480, 270), (320, 180)]);
    }

    #[test]
    fn without_the_scaler_the_resolution_stays() {
        let mut f = FrameFloor::new(cfg(false));
        for i in 0..2000 {
            assert!(!f.adapt(Time::from_us(i * 66_667)));
            f.on_dropped();
        }
        assert_eq!(f.resolution(), (640, 360));
        assert_eq!(f.frames_dropped(), 2000);
    }
}
