//! Video encoder model (spec 1.4): frames at a fixed frame rate whose sizes follow the target
//! rate with a first-order lag, multiplicative size noise and periodic key frames. Key-frame
//! bits are paid back by the following delta frames (a rate-controlled encoder's virtual
//! buffer), so the long-run output equals the target.

use crate::units::{Bitrate, Bytes, Duration, Time};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

#[derive(Clone, Debug)]
pub struct EncoderConfig {
    pub fps: f64,
    pub min_rate: Bitrate,
    pub max_rate: Bitrate,
    /// Time constant with which the output rate follows the target.
    pub lag: Duration,
    /// Relative standard deviation of frame sizes.
    pub size_noise: f64,
    /// Key frame period (`Duration::ZERO`: only the first frame).
    pub keyframe_interval: Duration,
    /// Key frame size relative to an average frame at the current rate.
    pub keyframe_factor: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    pub id: u64,
    pub capture: Time,
    pub size: Bytes,
    pub keyframe: bool,
}

pub struct Encoder {
    cfg: EncoderConfig,
    target: f64,
    rate: f64,
    /// Bytes produced above the nominal budget, repaid by later frames.
    debt: f64,
    next_id: u64,
    last_keyframe: Option<Time>,
    noise: Normal<f64>,
    rng: ChaCha8Rng,
}

impl Encoder {
    pub fn new(cfg: EncoderConfig, start_rate: Bitrate, seed: u64) -> Self {
        let r = start_rate.max(cfg.min_rate).min(cfg.max_rate).bps_f64();
        let noise = Normal::new(1.0, cfg.size_noise.max(0.0)).unwrap_or_else(|_| Normal::new(1.0, 0.0).expect("valid"));
        Encoder { cfg, target: r, rate: r, debt: 0.0, next_id: 0, last_keyframe: None, noise, rng: ChaCha8Rng::seed_from_u64(seed) }
    }

    pub fn frame_interval(&self) -> Duration { Duration::from_secs_f64(1.0 / self.cfg.fps) }

    /// New target from the congestion controller (clamped to the encoder's range).
    pub fn set_target(&mut self, target: Bitrate) {
        self.target = target.max(self.cfg.min_rate).min(self.cfg.max_rate).bps_f64();
    }

    pub fn output_rate(&self) -> Bitrate { Bitrate::from_bps_f64(self.rate) }

    /// Ask for a key frame at the next capture (e.g. after a long pause).
    pub fn request_keyframe(&mut self) { self.last_keyframe = None; }

    /// Encode the frame captured at `now`.
    pub fn encode(&mut self, now: Time) -> Frame {
        let dt = 1.0 / self.cfg.fps;
        let tau = self.cfg.lag.as_secs_f64();
        let a = if tau <= 0.0 { 1.0 } else { 1.0 - (-dt / tau).exp() };
        self.rate += (self.target - self.rate) * a;
        let nominal = self.rate * dt / 8.0;
        let keyframe = match self.last_keyframe {
            None => true,
            Some(t) => self.cfg.keyframe_interval > Duration::ZERO && now - t >= self.cfg.keyframe_interval,
        };
        let size = if keyframe {
            self.last_keyframe = Some(now);
            nominal * self.cfg.keyframe_factor.max(1.0)
        } else {
            // Repay debt over ~half a second of frames, never below 30 % of nominal.
            let repay = self.debt / (0.5 * self.cfg.fps).max(1.0);
            let noise = self.noise.sample(&mut self.rng).clamp(0.25, 3.0);
            ((nominal - repay) * noise).max(0.3 * nominal)
        };
        self.debt = (self.debt + size - nominal).max(0.0);
        let id = self.next_id;
        self.next_id += 1;
        Frame { id, capture: now, size: Bytes::new(size.round().max(1.0) as i64), keyframe }
    }
}

/// Split a frame into RTP packets of near-equal payload (as libwebrtc's packetizer does),
/// each at most `max_payload`; returns the payload sizes.
pub fn packetize(frame_bytes: Bytes, max_payload: u32) -> impl ExactSizeIterator<Item = Bytes> {
    let total = frame_bytes.get().max(1);
    let mp = max_payload.max(1) as i64;
    let n = (total + mp - 1) / mp;
    let base = total / n;
    let extra = total % n;
    (0..n as usize).map(move |i| Bytes::new(base + if (i as i64) < extra { 1 } else { 0 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> EncoderConfig {
        EncoderConfig { fps: 30.0, min_rate: Bitrate::from_kbps(100), max_rate: Bitrate::from_kbps(3000), lag: Duration::from_ms(300), size_noise: 0.1, keyframe_interval: Duration::from_secs(10), keyframe_factor: 4.0 }
    }

    #[test]
    fn packetizer_splits_evenly() {
        let v: Vec<i64> = packetize(Bytes::new(2500), 1200).map(|b| b.get()).collect();
        assert_eq!(v, vec![834, 833, 833]);
        assert_eq!(packetize(Bytes::new(1200), 1200).count(), 1);
        assert_eq!(packetize(Bytes::new(1201), 1200).count(), 2);
    }

    #[test]
    fn long_run_rate_matches_target_including_keyframes() {
        let mut e = Encoder::new(cfg(), Bitrate::from_kbps(1000), 3);
        let mut total = 0i64;
        let n = 30 * 60;
        for i in 0..n {
            total += e.encode(Time::from_us(i * 33_333)).size.get();
        }
        let kbps = total as f64 * 8.0 / 60.0 / 1000.0;
        assert!((kbps - 1000.0).abs() < 30.0, "{kbps}");
    }

    #[test]
    fn follows_target_with_lag() {
        let mut c = cfg();
        c.size_noise = 0.0;
        let mut e = Encoder::new(c, Bitrate::from_kbps(500), 3);
        e.encode(Time::ZERO);
        e.set_target(Bitrate::from_kbps(1500));
        // after one time constant (9 frames ≈ 300 ms) the rate covers ~63 % of the step
        for i in 1..=9 { e.encode(Time::from_us(i * 33_333)); }
        let r = e.output_rate().kbps_f64();
        assert!(r > 500.0 + 0.55 * 1000.0 && r < 500.0 + 0.7 * 1000.0, "{r}");
        e.set_target(Bitrate::from_kbps(10_000));
        for i in 10..200 { e.encode(Time::from_us(i * 33_333)); }
        assert!(e.output_rate().kbps_f64() <= 3000.0 + 1e-6);
    }
}
