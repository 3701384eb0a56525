//! `r3net`: R3Net (paper 004, spec 10), a receiver-side bandwidth estimator. Every 50 ms the
//! receiver turns the packets of the last window into four features (receive rate, mean
//! inter-arrival, loss, mean RTT; [`features`]), runs a recurrent policy (Linear + LeakyReLU +
//! GRU trunk, sigmoid actor head) and sends the mapped estimate (0, 8) Mbit/s back to the
//! sender like REMB; the sender's [`RateFollower`] sets target = estimate, pacing = 1.1 × target.
//!
//! The policy is an ONNX file (trained by `ratelab train r3net`, exported with the GRU state as
//! an explicit input and output) evaluated in Rust by the small runtime in [`onnx`] — a run
//! never calls back into Python. Parameter `model` selects a file; empty means the model that
//! ships with ratelab (`python/ratelab/models/r3net.onnx`, embedded at compile time).
//!
//! Model contract: inputs `(obs [1, 4], h [1, 1, H])`; outputs: the first is the action mean in
//! (0, 1) with one element, the last is the new hidden state `[1, 1, H]`; an output named
//! `action_std` (one element) carries the Gaussian policy's std (a critic output is ignored).
//!
//! Sampling (parameter `sample`, default on): the controller acts like the policy it was trained
//! as — `a ~ N(μ, σ)` clipped to [0, 1], from a seeded RNG (runs stay reproducible). A PPO policy
//! with a learned std can rely on its exploration noise: with the mean action alone the shipped
//! model under-uses the link (it probes upwards through the noise; docs/models/r3net.md shows
//! both). Paper 004 also reports R3Net's actions as noisy. `sample = false` uses μ.

pub mod features;
pub mod onnx;

use crate::controller::{Constraints, Controller, ReceivedPacket, ReceiverEstimator, TransportFeedback, Update};
use crate::error::ConfigError;
use crate::units::{Bitrate, Duration, Time};
use features::{Observation, WindowFeatures};
use onnx::{OnnxModel, Tensor};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The trained model shipped with ratelab.
pub static SHIPPED_MODEL: &[u8] = include_bytes!("../../../../../python/ratelab/models/r3net.onnx");

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct R3NetConfig {
    /// Path of an ONNX policy file; empty: the model shipped with ratelab. (Read once when the
    /// controller is built — the only file access of the core's controllers.)
    pub model: String,
    /// Action → estimate mapping: `linear` (BWE = max × a; spec 10.2 default) or `log`
    /// (log-linear from `log_min_kbps` to `max_kbps`, as OpenNetLab's later example).
    pub mapping: String,
    /// Upper end of the estimate range, kbit/s (spec 10.1: 8 Mbit/s).
    pub max_kbps: f64,
    /// Lower end for the `log` mapping, kbit/s.
    pub log_min_kbps: f64,
    /// Pacing rate as a multiple of the estimate (spec 10.2: 1.1, GCC convention).
    pub pacing_factor: f64,
    /// Sample the action from the policy's Gaussian (as in training) instead of using its mean.
    pub sample: bool,
}

impl Default for R3NetConfig {
    fn default() -> Self { R3NetConfig { model: String::new(), mapping: "linear".into(), max_kbps: 8000.0, log_min_kbps: 10.0, pacing_factor: 1.1, sample: true } }
}

/// Action in [0, 1] → bandwidth estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mapping { Linear { max: f64 }, Log { min: f64, max: f64 } }

impl Mapping {
    pub fn from_config(c: &R3NetConfig) -> Result<Mapping, ConfigError> {
        if !(c.max_kbps.is_finite() && c.max_kbps > 0.0) { return Err(ConfigError::new("max_kbps", "must be > 0")); }
        match c.mapping.as_str() {
            "linear" => Ok(Mapping::Linear { max: c.max_kbps }),
            "log" => {
                if !(c.log_min_kbps.is_finite() && c.log_min_kbps > 0.0 && c.log_min_kbps < c.max_kbps) { return Err(ConfigError::new("log_min_kbps", "must be in (0, max_kbps)")); }
                Ok(Mapping::Log { min: c.log_min_kbps, max: c.max_kbps })
            }
            m => Err(ConfigError::new("mapping", format!("unknown mapping '{m}' (linear, log)"))),
        }
    }
    /// Estimate in kbit/s for action `a` (clipped to [0, 1]; NaN counts as 0).
    pub fn kbps(&self, a: f64) -> f64 {
        let a = if a.is_nan() { 0.0 } else { a.clamp(0.0, 1.0) };
        match *self {
            Mapping::Linear { max } => max * a,
            Mapping::Log { min, max } => (min.ln() + a * (max.ln() - min.ln())).exp(),
        }
    }
}

/// A loaded R3Net policy with its recurrent state.
#[derive(Clone, Debug)]
pub struct R3NetPolicy {
    model: Arc<OnnxModel>,
    hidden: usize,
    h: Vec<f32>,
    std_output: Option<usize>,
}

impl R3NetPolicy {
    pub fn load(bytes: &[u8]) -> Result<R3NetPolicy, String> {
        let model = OnnxModel::parse(bytes).map_err(|e| e.to_string())?;
        if model.inputs.len() != 2 { return Err(format!("an R3Net model takes 2 inputs (obs, h), this one takes {}", model.inputs.len())); }
        if model.inputs[0].1 != [Some(1), Some(4)] { return Err(format!("input 0 must be obs [1, 4], got {:?}", model.inputs[0].1)); }
        let hidden = match model.inputs[1].1.as_slice() { [Some(1), Some(1), Some(h)] if *h > 0 => *h, d => return Err(format!("input 1 must be h [1, 1, H], got {d:?}")) };
        if model.outputs.len() < 2 { return Err("an R3Net model has at least 2 outputs (action mean, …, h)".into()); }
        let std_output = model.outputs.iter().position(|(n, _)| n == "action_std");
        let mut p = R3NetPolicy { model: Arc::new(model), hidden, h: vec![0.0; hidden], std_output };
        // Smoke-run once so that a model with inconsistent shapes fails at load, not mid-run.
        p.step(&[0.0; 4])?;
        p.reset();
        Ok(p)
    }

    pub fn hidden_size(&self) -> usize { self.hidden }
    pub fn reset(&mut self) { self.h.iter_mut().for_each(|v| *v = 0.0); }

    /// One 50-ms decision: scaled observation → action mean in (0, 1); updates the hidden state.
    pub fn step(&mut self, obs: &[f32; 4]) -> Result<f32, String> { self.step_with_std(obs).map(|(m, _)| m) }

    /// Like [`R3NetPolicy::step`], also returning the policy's std (0 when the model has none).
    pub fn step_with_std(&mut self, obs: &[f32; 4]) -> Result<(f32, f32), String> {
        let out = self.model.run(&[Tensor::f32(vec![1, 4], obs.to_vec()), Tensor::f32(vec![1, 1, self.hidden], self.h.clone())]).map_err(|e| e.to_string())?;
        let a = out.first().cloned().ok_or("no output")?.into_floats().map_err(|e| e.to_string())?;
        let h = out.last().cloned().ok_or("no output")?.into_floats().map_err(|e| e.to_string())?;
        if a.len() != 1 || h.len() != self.hidden { return Err(format!("model outputs have {} / {} values, expected 1 / {}", a.len(), h.len(), self.hidden)); }
        if h.iter().all(|v| v.is_finite()) { self.h = h; }
        let std = match self.std_output.and_then(|i| out.get(i)) {
            Some(t) => t.clone().into_floats().map_err(|e| e.to_string())?.first().copied().filter(|s| s.is_finite() && *s >= 0.0).unwrap_or(0.0),
            None => 0.0,
        };
        Ok((a[0], std))
    }
}

/// The receiver half: 50-ms features → policy → estimate.
pub struct R3NetEstimator {
    policy: R3NetPolicy,
    mapping: Mapping,
    features: WindowFeatures,
    last: Option<Observation>,
    /// Seeded RNG when sampling actions (None: mean action).
    rng: Option<ChaCha8Rng>,
}

impl R3NetEstimator {
    pub fn new(policy: R3NetPolicy, mapping: Mapping, sample_seed: Option<u64>) -> Self {
        R3NetEstimator { policy, mapping, features: WindowFeatures::new(Time::ZERO), last: None, rng: sample_seed.map(ChaCha8Rng::seed_from_u64) }
    }
    pub fn last_observation(&self) -> Option<Observation> { self.last }
}

impl ReceiverEstimator for R3NetEstimator {
    fn on_packet_received(&mut self, p: &ReceivedPacket) { self.features.on_packet(p); }
    fn on_rtt_update(&mut self, _now: Time, rtt: Duration) { self.features.on_rtt(rtt); }
    fn tick_interval(&self) -> Duration { features::STEP }
    fn on_tick(&mut self, now: Time) -> Option<Bitrate> {
        let obs = self.features.take(now);
        self.last = Some(obs);
        // A model error (not expected after the load check) keeps the previous estimate.
        let (mu, std) = self.policy.step_with_std(&obs.scaled()).ok()?;
        let a = match self.rng.as_mut() {
            Some(rng) if std > 0.0 => mu as f64 + std as f64 * rng.sample::<f64, _>(StandardNormal),
            _ => mu as f64,
        };
        Some(Bitrate::from_kbps_f64(self.mapping.kbps(a)))
    }
}

/// The sender half of a receiver-side estimator: target = the last remote estimate (within the
/// constraints), pacing = `pacing_factor` × target; the start rate until the first report.
pub struct RateFollower {
    pacing_factor: f64,
    constraints: Constraints,
    last: Option<Bitrate>,
}

impl RateFollower {
    pub fn new(pacing_factor: f64) -> Self {
        let pf = if pacing_factor.is_finite() { pacing_factor.clamp(1.0, 10.0) } else { 1.0 };
        RateFollower { pacing_factor: pf, constraints: Constraints::default(), last: None }
    }
    fn update(&self, r: Bitrate) -> Update { Update::rates(r.max(self.constraints.min_rate).min(self.constraints.max_rate), self.pacing_factor) }
}

impl Controller for RateFollower {
    fn on_start(&mut self, _now: Time, c: Constraints) -> Update { self.constraints = c; self.update(c.start_rate) }
    fn on_feedback(&mut self, _fb: &TransportFeedback) -> Update { Update::default() }
    fn on_constraints(&mut self, _now: Time, c: Constraints) -> Update { self.constraints = c; self.update(self.last.unwrap_or(c.start_rate)) }
    fn on_remote_estimate(&mut self, _now: Time, rate: Bitrate) -> Update { self.last = Some(rate); self.update(rate) }
    fn diagnostics(&self, out: &mut crate::controller::Diagnostics) {
        if let Some(r) = self.last { out.push(("remote_estimate_kbps", r.kbps_f64())); }
    }
}

/// The model the configuration names (read through the driver's file reader), or the shipped one.
fn model_bytes(cfg: &R3NetConfig, cx: &super::BuildContext) -> Result<std::borrow::Cow<'static, [u8]>, ConfigError> {
    if cfg.model.is_empty() { return Ok(std::borrow::Cow::Borrowed(SHIPPED_MODEL)); }
    let read = cx.read_file.as_ref().ok_or_else(|| ConfigError::new("model", "this driver cannot read model files"))?;
    read(&cfg.model).map(std::borrow::Cow::Owned).map_err(|e| ConfigError::new("model", format!("cannot read '{}': {e}", cfg.model)))
}

/// Build both halves (registry entry `r3net`).
pub fn build(cfg: R3NetConfig, cx: &super::BuildContext) -> Result<super::Built, ConfigError> {
    let seed = cx.seed;
    let mapping = Mapping::from_config(&cfg)?;
    if !(cfg.pacing_factor.is_finite() && cfg.pacing_factor >= 1.0) { return Err(ConfigError::new("pacing_factor", "must be ≥ 1")); }
    let bytes = model_bytes(&cfg, cx)?;
    let policy = R3NetPolicy::load(&bytes).map_err(|e| ConfigError::new("model", format!("{}: {e}", if cfg.model.is_empty() { "shipped model" } else { &cfg.model })))?;
    Ok(super::Built { sender: Box::new(RateFollower::new(cfg.pacing_factor)), receiver: Some(Box::new(R3NetEstimator::new(policy, mapping, cfg.sample.then_some(seed)))) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings() {
        let lin = Mapping::Linear { max: 8000.0 };
        assert_eq!(lin.kbps(0.5), 4000.0);
        assert_eq!(lin.kbps(2.0), 8000.0);
        assert_eq!(lin.kbps(f64::NAN), 0.0);
        let log = Mapping::Log { min: 10.0, max: 8000.0 };
        assert!((log.kbps(0.0) - 10.0).abs() < 1e-9);
        assert!((log.kbps(1.0) - 8000.0).abs() < 1e-6);
        assert!((log.kbps(0.5) - (10.0f64 * 8000.0).sqrt()).abs() < 1e-6);
        let bad = R3NetConfig { mapping: "cubic".into(), ..Default::default() };
        assert_eq!(Mapping::from_config(&bad).unwrap_err().field, "mapping");
    }

    #[test]
    fn shipped_model_loads_and_decides_in_range() {
        let mut p = R3NetPolicy::load(SHIPPED_MODEL).expect("shipped model");
        assert!(p.hidden_size() > 0);
        for obs in [[0.0; 4], [1.0, 1.0, 0.0, 1.0], [5.0, 0.2, 0.5, 10.0], [100.0, 100.0, 1.0, 100.0]] {
            let a = p.step(&obs).unwrap();
            assert!(a > 0.0 && a < 1.0, "sigmoid output {a}");
        }
    }

    #[test]
    fn sampling_is_seeded_and_off_gives_the_mean() {
        let p = R3NetPolicy::load(SHIPPED_MODEL).unwrap();
        let (mu, std) = p.clone().step_with_std(&[0.0, 5.0, 0.0, 0.0]).unwrap();
        assert!(std > 0.0 && std < 0.5, "the shipped model carries its policy std ({std})");
        let run = |seed: Option<u64>| {
            let mut e = R3NetEstimator::new(p.clone(), Mapping::Linear { max: 8000.0 }, seed);
            (1..=20).map(|k| e.on_tick(Time::from_ms(50 * k)).unwrap().bps()).collect::<Vec<_>>()
        };
        assert_eq!(run(Some(1)), run(Some(1)));
        assert_ne!(run(Some(1)), run(Some(2)));
        // without sampling the first decision (empty window, zero state) is exactly mapping(μ)
        assert_eq!(run(None)[0], Bitrate::from_kbps_f64(8000.0 * mu as f64).bps());
    }

    #[test]
    fn follower_tracks_remote_estimate_within_constraints() {
        let mut f = RateFollower::new(1.1);
        let c = Constraints { min_rate: Bitrate::from_kbps(50), max_rate: Bitrate::from_kbps(4000), start_rate: Bitrate::from_kbps(300) };
        let u = f.on_start(Time::ZERO, c);
        assert_eq!(u.target_rate, Some(Bitrate::from_kbps(300)));
        assert_eq!(u.pacing_rate, Some(Bitrate::from_kbps(330)));
        let u = f.on_remote_estimate(Time::from_ms(100), Bitrate::from_kbps(1000));
        assert_eq!(u.target_rate, Some(Bitrate::from_kbps(1000)));
        assert_eq!(u.pacing_rate, Some(Bitrate::from_kbps(1100)));
        assert_eq!(f.on_remote_estimate(Time::from_ms(150), Bitrate::from_kbps(9000)).target_rate, Some(Bitrate::from_kbps(4000)));
        assert_eq!(f.on_remote_estimate(Time::from_ms(200), Bitrate::ZERO).target_rate, Some(Bitrate::from_kbps(50)));
    }
}
