//! `onnx`: bring your own learned bandwidth estimator as an ONNX file, in the convention of the
//! ACM MMSys 2024 bandwidth-estimation challenge (docs/models/mmsys24.md). At the receiver, every
//! `interval_ms` (60 ms, the challenge's step) the 150-feature observation of [`features`] is
//! computed from the arriving packets and the model ([`model`], run by `tract-onnx`) answers an
//! estimate in bit/s; the estimate travels back to the sender like REMB and the sender follows
//! it ([`RateFollower`]: target = estimate within the flow's limits, pacing = factor × target).
//!
//! A model with ratelab's R3Net signature is run by the `r3net` controller (its own 4 features
//! every 50 ms, action mapping from the model's metadata), so `-c onnx` takes either kind.

pub mod features;
pub mod model;

use super::r3net::{self, RateFollower};
use crate::controller::{BuildContext, Built};
use crate::controller::{ReceivedPacket, ReceiverEstimator};
use crate::error::ConfigError;
use crate::units::{Bitrate, Duration, Time};
use features::{Mmsys24Features, OBS_LEN};
use model::OnnxEstimatorModel;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OnnxConfig {
    /// Path of the ONNX model (required). Read once when the controller is built.
    pub model: String,
    /// Decision interval and short monitor interval, ms (the challenge: 60; long MIs are 10×).
    /// Ignored for an R3Net model (50 ms).
    pub interval_ms: f64,
    /// Pacing rate as a multiple of the estimate (GCC convention: 1.1).
    pub pacing_factor: f64,
    /// Run a model of the challenge's stateful signature on a flow without audio. Off by
    /// default: such a model saw the challenge's audio stream in every call it was trained on,
    /// and without it the observation's audio features are always 0 (the challenge's baseline
    /// then holds 13 % utilization on rmcat-5.1, 81 % with `media.audio_kbps = 32`).
    pub without_audio: bool,
}

/// The audio rate of the challenge's calls (Opus at 32 kbit/s, 20 ms frames: 50 packets/s).
pub const CHALLENGE_AUDIO_KBPS: f64 = 32.0;

impl Default for OnnxConfig {
    fn default() -> Self { OnnxConfig { model: String::new(), interval_ms: 60.0, pacing_factor: 1.1, without_audio: false } }
}

/// The receiver half: observation → model → estimate.
pub struct OnnxEstimator {
    model: OnnxEstimatorModel,
    features: Mmsys24Features,
    last_obs: [f32; OBS_LEN],
    /// Decisions whose estimate was not a finite, non-negative number (no report was sent).
    pub invalid: u64,
}

impl OnnxEstimator {
    pub fn new(model: OnnxEstimatorModel, interval: Duration) -> Self {
        OnnxEstimator { model, features: Mmsys24Features::new(Time::ZERO, interval), last_obs: [0.0; OBS_LEN], invalid: 0 }
    }
    pub fn last_observation(&self) -> &[f32; OBS_LEN] { &self.last_obs }
}

impl ReceiverEstimator for OnnxEstimator {
    fn on_packet_received(&mut self, p: &ReceivedPacket) { self.features.on_packet(p); }
    fn tick_interval(&self) -> Duration { self.features.mi() }
    fn on_tick(&mut self, now: Time) -> Option<Bitrate> {
        self.last_obs = self.features.take(now);
        // The load check ran the model once; a NaN, infinite or negative estimate later in the
        // run sends no report (the sender keeps the previous one) and is counted.
        match self.model.step(&self.last_obs) {
            Ok(bps) if bps.is_finite() && bps >= 0.0 => Some(Bitrate::from_bps_f64(bps)),
            _ => { self.invalid += 1; None }
        }
    }
}

/// Build both halves (registry entry `onnx`).
pub fn build(cfg: OnnxConfig, cx: &BuildContext) -> Result<Built, ConfigError> {
    if cfg.model.is_empty() { return Err(ConfigError::new("model", "required: the path of an ONNX model (e.g. -p onnx.model=my.onnx)")); }
    if !(cfg.interval_ms.is_finite() && (1.0..=10_000.0).contains(&cfg.interval_ms)) { return Err(ConfigError::new("interval_ms", "must be in [1, 10000]")); }
    if !(cfg.pacing_factor.is_finite() && cfg.pacing_factor >= 1.0) { return Err(ConfigError::new("pacing_factor", "must be ≥ 1")); }
    let read = cx.read_file.as_ref().ok_or_else(|| ConfigError::new("model", "this driver cannot read model files"))?;
    let bytes = read(&cfg.model).map_err(|e| ConfigError::new("model", format!("cannot read '{}': {e}", cfg.model)))?;
    match OnnxEstimatorModel::load(&bytes).map_err(|e| ConfigError::new("model", format!("{}: {e}", cfg.model)))? {
        Some(m) if m.is_challenge_stateful() && cx.audio_kbps == Some(0.0) && !cfg.without_audio => Err(ConfigError::new("model", format!(
            "{} has the MMSys'24 challenge's signature, trained with its {CHALLENGE_AUDIO_KBPS} kbit/s audio stream, and this \
             flow sends no audio: add it (--set flows.N.media.audio_kbps={CHALLENGE_AUDIO_KBPS}) or run without it anyway \
             (-p onnx.without_audio=true)", cfg.model))),
        Some(m) => Ok(Built {
            sender: Box::new(RateFollower::new(cfg.pacing_factor)),
            receiver: Some(Box::new(OnnxEstimator::new(m, Duration::from_ms_f64(cfg.interval_ms)))),
        }),
        None => r3net::build(r3net::R3NetConfig { model: cfg.model, pacing_factor: cfg.pacing_factor, ..Default::default() }, cx),
    }
}
