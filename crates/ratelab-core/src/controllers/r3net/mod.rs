//! `r3net`: R3Net (paper 004, spec 10), a receiver-side bandwidth estimator. Every 50 ms the
//! receiver turns the packets of the last window into four features (receive rate, mean
//! inter-arrival, loss, mean RTT; [`features`]), runs a recurrent policy (Linear + LeakyReLU +
//! GRU trunk, sigmoid actor head) and sends the mapped estimate (0, 8) Mbit/s back to the
//! sender like REMB; the sender's [`RateFollower`] sets target = estimate, pacing = 1.1 × target.
//!
//! The policy is an ONNX file (trained by `ratelab train r3net`, exported with the GRU state as
//! an explicit input and output) evaluated in Rust by `tract-onnx`, the runtime of the `onnx`
//! controller ([`policy`]: model contract there) — a run never calls back into Python.
//! Parameter `model` selects a file; empty means the model that ships with ratelab
//! (`python/ratelab/models/r3net.onnx`, embedded at compile time).
//!
//! Sampling (parameter `sample`, default on): the controller acts like the policy it was trained
//! as — `a ~ N(μ, σ)` clipped to [0, 1], from a seeded RNG (runs stay reproducible). A PPO policy
//! with a learned std can rely on its exploration noise: with the mean action alone the shipped
//! model under-uses the link (it probes upwards through the noise; docs/models/r3net.md shows
//! both). Paper 004 also reports R3Net's actions as noisy. `sample = false` uses μ.

pub mod features;
pub mod policy;

use crate::controller::{BuildContext, Built, Constraints, Controller, ReceivedPacket, ReceiverEstimator, TransportFeedback, Update};
use crate::error::ConfigError;
use crate::units::{Bitrate, Duration, Time};
use features::{Observation, WindowFeatures};
pub use policy::R3NetPolicy;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

/// The trained model shipped with ratelab (linear mapping; registry entry `r3net`).
pub static SHIPPED_MODEL: &[u8] = include_bytes!("../../../../../python/ratelab/models/r3net.onnx");

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct R3NetConfig {
    /// Path of an ONNX policy file; empty: the model shipped with ratelab
    /// (`python/ratelab/models/r3net.onnx`, embedded at compile time). (Read once when the
    /// controller is built — the only file access of the core's controllers.)
    pub model: String,
    /// Action → estimate mapping: `linear` (BWE = max × a; spec 10.2 default) or `log`
    /// (log-linear from `log_min_kbps` to `max_kbps`, as OpenNetLab's later example; spec 10.2).
    /// Unset: the mapping the model was trained with (its ONNX metadata, [`TrainedMapping`]),
    /// else `linear`. Set and different from the model's metadata: a configuration error.
    pub mapping: Option<String>,
    /// Upper end of the estimate range, kbit/s. Unset: the model's metadata, else 8000
    /// (spec 10.1: 8 Mbit/s). Set and different from the metadata: a configuration error.
    pub max_kbps: Option<f64>,
    /// Lower end for the `log` mapping, kbit/s. Unset: the model's metadata, else 10
    /// (spec 10.2, OpenNetLab). Set and different from the metadata: a configuration error.
    pub log_min_kbps: Option<f64>,
    /// Pacing rate as a multiple of the estimate (spec 10.2: 1.1, GCC convention).
    pub pacing_factor: f64,
    /// Sample the action from the policy's Gaussian (as in training) instead of using its mean.
    pub sample: bool,
}

impl Default for R3NetConfig {
    fn default() -> Self { R3NetConfig { model: String::new(), mapping: None, max_kbps: None, log_min_kbps: None, pacing_factor: 1.1, sample: true } }
}

/// Default upper end of the estimate range, kbit/s (spec 10.1: 8 Mbit/s).
pub const DEFAULT_MAX_KBPS: f64 = 8000.0;
/// Default lower end of the `log` mapping, kbit/s (spec 10.2: OpenNetLab's 10 kbit/s).
pub const DEFAULT_LOG_MIN_KBPS: f64 = 10.0;

/// Metadata keys `ratelab.rl.model.export_onnx` writes: the action mapping a policy was trained with.
pub const META_MAPPING: &str = "ratelab.r3net.mapping";
pub const META_MAX_KBPS: &str = "ratelab.r3net.max_kbps";
pub const META_LOG_MIN_KBPS: &str = "ratelab.r3net.log_min_kbps";

/// The action mapping a model file says it was trained with (each part `None` when unknown).
///
/// Read from the explicit keys [`META_MAPPING`], [`META_MAX_KBPS`], [`META_LOG_MIN_KBPS`]; for
/// the parts those lack, from the trainer's `config` metadata (the JSON of
/// `ratelab.rl.train.TrainConfig`: `mapping`, and `env_config.max_kbps` / `log_min_kbps` where
/// the environment's defaults were overridden) — which files exported before the explicit keys
/// existed (the shipped `r3net.onnx`) carry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrainedMapping {
    pub mapping: Option<String>,
    pub max_kbps: Option<f64>,
    pub log_min_kbps: Option<f64>,
}

impl TrainedMapping {
    pub fn from_policy(model: &R3NetPolicy) -> Result<TrainedMapping, String> {
        let num = |key: &str| -> Result<Option<f64>, String> {
            model.metadata(key).map(|v| v.trim().parse::<f64>().map_err(|_| format!("metadata {key} = '{v}' is not a number"))).transpose()
        };
        let mut t = TrainedMapping { mapping: model.metadata(META_MAPPING).map(str::to_owned), max_kbps: num(META_MAX_KBPS)?, log_min_kbps: num(META_LOG_MIN_KBPS)? };
        if let Some(cfg) = model.metadata("config").and_then(|c| serde_json::from_str::<serde_json::Value>(c).ok()) {
            if t.mapping.is_none() { t.mapping = cfg.get("mapping").and_then(|v| v.as_str()).map(str::to_owned); }
            let env = cfg.get("env_config");
            if t.max_kbps.is_none() { t.max_kbps = env.and_then(|e| e.get("max_kbps")).and_then(|v| v.as_f64()); }
            if t.log_min_kbps.is_none() { t.log_min_kbps = env.and_then(|e| e.get("log_min_kbps")).and_then(|v| v.as_f64()); }
        }
        Ok(t)
    }

    /// The mapping to run: each parameter set in `cfg`, else the model's value, else the default.
    /// A parameter that contradicts the model's metadata is an error naming that parameter.
    pub fn resolve(&self, cfg: &R3NetConfig) -> Result<Mapping, ConfigError> {
        if let Some(p) = cfg.mapping.as_deref().filter(|p| !Mapping::NAMES.contains(p)) { return Err(Mapping::unknown(p)); }
        let mapping = match (&cfg.mapping, &self.mapping) {
            (Some(p), Some(m)) if p != m => return Err(ConfigError::new("mapping", format!("'{p}' contradicts the model, which was trained with mapping '{m}' (ONNX metadata); leave `mapping` unset or use a model trained with '{p}'"))),
            (p, m) => p.clone().or_else(|| m.clone()).unwrap_or_else(|| "linear".into()),
        };
        let num = |field: &'static str, p: Option<f64>, m: Option<f64>, default: f64| match (p, m) {
            (Some(p), Some(m)) if (p - m).abs() > 1e-9 * m.abs().max(1.0) => Err(ConfigError::new(field, format!("{p} contradicts the model, which was trained with {field} = {m} (ONNX metadata); leave it unset"))),
            (p, m) => Ok(p.or(m).unwrap_or(default)),
        };
        let max_kbps = num("max_kbps", cfg.max_kbps, self.max_kbps, DEFAULT_MAX_KBPS)?;
        let log_min_kbps = if mapping == "log" { num("log_min_kbps", cfg.log_min_kbps, self.log_min_kbps, DEFAULT_LOG_MIN_KBPS)? } else { cfg.log_min_kbps.unwrap_or(DEFAULT_LOG_MIN_KBPS) };
        Mapping::new(&mapping, max_kbps, log_min_kbps)
    }
}

/// Action in [0, 1] → bandwidth estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mapping { Linear { max: f64 }, Log { min: f64, max: f64 } }

impl Mapping {
    /// `mapping` (`linear` or `log`) with its range in kbit/s.
    pub fn new(mapping: &str, max_kbps: f64, log_min_kbps: f64) -> Result<Mapping, ConfigError> {
        if !(max_kbps.is_finite() && max_kbps > 0.0) { return Err(ConfigError::new("max_kbps", "must be > 0")); }
        match mapping {
            "linear" => Ok(Mapping::Linear { max: max_kbps }),
            "log" => {
                if !(log_min_kbps.is_finite() && log_min_kbps > 0.0 && log_min_kbps < max_kbps) { return Err(ConfigError::new("log_min_kbps", "must be in (0, max_kbps)")); }
                Ok(Mapping::Log { min: log_min_kbps, max: max_kbps })
            }
            m => Err(Mapping::unknown(m)),
        }
    }

    /// The mappings [`Mapping::new`] knows.
    pub const NAMES: [&'static str; 2] = ["linear", "log"];

    fn unknown(m: &str) -> ConfigError { ConfigError::new("mapping", format!("unknown mapping '{m}' ({})", Mapping::NAMES.join(", "))) }
    /// Estimate in kbit/s for action `a` (clipped to [0, 1]; NaN counts as 0).
    pub fn kbps(&self, a: f64) -> f64 {
        let a = if a.is_nan() { 0.0 } else { a.clamp(0.0, 1.0) };
        match *self {
            Mapping::Linear { max } => max * a,
            Mapping::Log { min, max } => (min.ln() + a * (max.ln() - min.ln())).exp(),
        }
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

/// The model the configuration names (read through the driver's file reader), or `embedded`.
fn model_bytes(cfg: &R3NetConfig, cx: &BuildContext, embedded: &'static [u8]) -> Result<std::borrow::Cow<'static, [u8]>, ConfigError> {
    if cfg.model.is_empty() { return Ok(std::borrow::Cow::Borrowed(embedded)); }
    let read = cx.read_file.as_ref().ok_or_else(|| ConfigError::new("model", "this driver cannot read model files"))?;
    read(&cfg.model).map(std::borrow::Cow::Owned).map_err(|e| ConfigError::new("model", format!("cannot read '{}': {e}", cfg.model)))
}

/// Build both halves (registry entry `r3net`: the shipped linear-mapping model by default).
pub fn build(cfg: R3NetConfig, cx: &BuildContext) -> Result<Built, ConfigError> { build_with(cfg, cx, SHIPPED_MODEL) }

/// Build both halves with `embedded` as the model when `cfg.model` is empty. The mapping comes
/// from the parameters and the model's metadata ([`TrainedMapping::resolve`]).
pub fn build_with(cfg: R3NetConfig, cx: &BuildContext, embedded: &'static [u8]) -> Result<Built, ConfigError> {
    let seed = cx.seed;
    if !(cfg.pacing_factor.is_finite() && cfg.pacing_factor >= 1.0) { return Err(ConfigError::new("pacing_factor", "must be ≥ 1")); }
    let bytes = model_bytes(&cfg, cx, embedded)?;
    let what = if cfg.model.is_empty() { "shipped model" } else { &cfg.model };
    let policy = R3NetPolicy::load(&bytes).map_err(|e| ConfigError::new("model", format!("{what}: {e}")))?;
    let trained = TrainedMapping::from_policy(&policy).map_err(|e| ConfigError::new("model", format!("{what}: {e}")))?;
    let mapping = trained.resolve(&cfg)?;
    Ok(Built { sender: Box::new(RateFollower::new(cfg.pacing_factor)), receiver: Some(Box::new(R3NetEstimator::new(policy, mapping, cfg.sample.then_some(seed)))) })
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
        assert_eq!(Mapping::new("cubic", 8000.0, 10.0).unwrap_err().field, "mapping");
        assert_eq!(Mapping::new("log", 8000.0, 8000.0).unwrap_err().field, "log_min_kbps");
        assert_eq!(Mapping::new("linear", 0.0, 10.0).unwrap_err().field, "max_kbps");
    }

    /// `bytes` with metadata entries appended (protobuf: repeated field 14 may follow the rest).
    fn with_metadata(bytes: &[u8], entries: &[(&str, &str)]) -> Vec<u8> {
        fn varint(mut v: u64, out: &mut Vec<u8>) { while v >= 0x80 { out.push((v as u8) | 0x80); v >>= 7; } out.push(v as u8); }
        fn field(n: u64, b: &[u8], out: &mut Vec<u8>) { varint(n << 3 | 2, out); varint(b.len() as u64, out); out.extend_from_slice(b); }
        let mut out = bytes.to_vec();
        for (k, v) in entries {
            let mut e = Vec::new();
            field(1, k.as_bytes(), &mut e);
            field(2, v.as_bytes(), &mut e);
            field(14, &e, &mut out);
        }
        out
    }
    fn trained(bytes: &[u8]) -> TrainedMapping { TrainedMapping::from_policy(&R3NetPolicy::load(bytes).unwrap()).unwrap() }
    fn cfg(mapping: Option<&str>, max: Option<f64>, log_min: Option<f64>) -> R3NetConfig {
        R3NetConfig { mapping: mapping.map(str::to_owned), max_kbps: max, log_min_kbps: log_min, ..Default::default() }
    }

    #[test]
    fn shipped_model_says_linear_through_its_trainer_config() {
        // r3net.onnx predates the explicit keys: its `config` JSON says mapping "linear" and
        // overrides no range (env_config {}), so the range is the default 8 Mbit/s.
        let t = trained(SHIPPED_MODEL);
        assert_eq!(t, TrainedMapping { mapping: Some("linear".into()), max_kbps: None, log_min_kbps: None });
        assert_eq!(t.resolve(&R3NetConfig::default()).unwrap(), Mapping::Linear { max: 8000.0 });
        assert_eq!(t.resolve(&cfg(Some("linear"), Some(8000.0), None)).unwrap(), Mapping::Linear { max: 8000.0 });
        // unknown in the metadata: a parameter may set it
        assert_eq!(t.resolve(&cfg(None, Some(4000.0), None)).unwrap(), Mapping::Linear { max: 4000.0 });
        let e = t.resolve(&cfg(Some("log"), None, None)).unwrap_err();
        assert_eq!(e.field, "mapping");
        assert!(e.to_string().contains("trained with mapping 'linear'"), "{e}");
        let e = t.resolve(&cfg(Some("cubic"), None, None)).unwrap_err();
        assert_eq!(e.field, "mapping");
        assert!(e.to_string().contains("unknown mapping 'cubic'"), "{e}");
    }

    #[test]
    fn explicit_metadata_sets_the_default_and_rejects_contradictions() {
        let b = with_metadata(SHIPPED_MODEL, &[(META_MAPPING, "log"), (META_MAX_KBPS, "6000.0"), (META_LOG_MIN_KBPS, "20")]);
        let t = trained(&b);
        // the explicit keys win over the trainer's config JSON ("linear")
        assert_eq!(t, TrainedMapping { mapping: Some("log".into()), max_kbps: Some(6000.0), log_min_kbps: Some(20.0) });
        assert_eq!(t.resolve(&R3NetConfig::default()).unwrap(), Mapping::Log { min: 20.0, max: 6000.0 });
        assert_eq!(t.resolve(&cfg(Some("log"), Some(6000.0), Some(20.0))).unwrap(), Mapping::Log { min: 20.0, max: 6000.0 });
        assert_eq!(t.resolve(&cfg(Some("linear"), None, None)).unwrap_err().field, "mapping");
        assert_eq!(t.resolve(&cfg(None, Some(8000.0), None)).unwrap_err().field, "max_kbps");
        assert_eq!(t.resolve(&cfg(None, None, Some(10.0))).unwrap_err().field, "log_min_kbps");
        // a model without any metadata: the parameters or the defaults
        let none = TrainedMapping::default();
        assert_eq!(none.resolve(&R3NetConfig::default()).unwrap(), Mapping::Linear { max: 8000.0 });
        assert_eq!(none.resolve(&cfg(Some("log"), None, None)).unwrap(), Mapping::Log { min: 10.0, max: 8000.0 });
        // unreadable numbers are a model error, not a silent default
        let bad = with_metadata(SHIPPED_MODEL, &[(META_MAX_KBPS, "fast")]);
        assert!(TrainedMapping::from_policy(&R3NetPolicy::load(&bad).unwrap()).is_err());
    }

    #[test]
    fn build_runs_the_mapping_the_model_records() {
        let b: &'static [u8] = Box::leak(with_metadata(SHIPPED_MODEL, &[(META_MAPPING, "log")]).into_boxed_slice());
        let cx = crate::controller::BuildContext::new(1);
        let mut built = build_with(R3NetConfig { sample: false, ..Default::default() }, &cx, b).unwrap();
        let mut lin = build(R3NetConfig { sample: false, ..Default::default() }, &cx).unwrap();
        // same weights, same first action μ (the first window: no packets, interval feature 5): log mapping 10 · 800^μ vs linear 8000 · μ
        let mu = R3NetPolicy::load(SHIPPED_MODEL).unwrap().step(&[0.0, 5.0, 0.0, 0.0]).unwrap() as f64;
        let r_log = built.receiver.as_mut().unwrap().on_tick(Time::from_ms(50)).unwrap();
        let r_lin = lin.receiver.as_mut().unwrap().on_tick(Time::from_ms(50)).unwrap();
        assert_eq!(r_log.bps(), Bitrate::from_kbps_f64(10.0 * 800f64.powf(mu)).bps());
        assert_eq!(r_lin.bps(), Bitrate::from_kbps_f64(8000.0 * mu).bps());
        let e = build_with(R3NetConfig { mapping: Some("linear".into()), ..Default::default() }, &cx, b).err().unwrap();
        assert_eq!(e.field, "mapping");
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
        let (mu, std) = R3NetPolicy::load(SHIPPED_MODEL).unwrap().step_with_std(&[0.0, 5.0, 0.0, 0.0]).unwrap();
        assert!(std > 0.0 && std < 0.5, "the shipped model carries its policy std ({std})");
        let run = |seed: Option<u64>| {
            let mut e = R3NetEstimator::new(R3NetPolicy::load(SHIPPED_MODEL).unwrap(), Mapping::Linear { max: 8000.0 }, seed);
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
