//! A stepping API for reinforcement learning (issue 5, spec 10): R3Net's problem as an
//! environment. An episode is one simulated call over one capacity trace with randomised path
//! delay, queue, random loss and optional competing flows ([`EnvConfig`] documents every
//! distribution). The agent sits at the receiver of media flow 0: every 50 ms step it sees the
//! four features of [`features::Observation`] (scaled per spec 10.2) and answers an action in
//! [0, 1], mapped to a bandwidth estimate that travels back to the sender (after the return
//! delay, like REMB) and becomes the sender's target rate (pacing 1.1×; [`RateFollower`]).
//!
//! With `observation = "mmsys24"` the agent sees the 150 MMSys'24 features (raw units,
//! `controllers/onnx/features.rs`) and steps are 60 ms; action and reward are as below.
//!
//! Step timing: `reset` runs the first 50 ms at the start rate (300 kbit/s, spec 10.3) and
//! returns that window's observation; `step(a)` sends the estimate for `a` at the current time,
//! runs 50 ms and returns the next window's observation and its reward
//! `0.6·ln(4R + 1) − D − 10·L` where R, D, L are the receive rate (Mbit/s), mean RTT (s) and loss
//! fraction of that window — exactly the features the agent sees (spec 10.1/10.2). Episodes end
//! by truncation (time limit), never by termination.
//!
//! [`VecEnv`] steps N environments in one call (optionally on several threads), with same-step
//! autoreset: an environment whose episode ended is reset at once; its last observation is
//! returned separately.

use super::build::build_simulation_ext;
use crate::controller::ExternalFactory;
use super::synth::{self, SynthKind};
use super::{FlowState, Simulation};
use crate::controller::{ReceivedPacket, ReceiverEstimator};
use crate::controllers::onnx::features::{Mmsys24Features, OBS_LEN as MMSYS24_LEN, SHORT_MI};
use crate::controllers::r3net::features::{Observation, WindowFeatures, STEP};
use crate::controllers::r3net::{Mapping, RateFollower};
use crate::error::ConfigError;
use crate::network::trace::{detect_format, parse_mahimahi, parse_trace, TraceError, TraceFormat};
use crate::scenario::Scenario;
use crate::units::{Bitrate, Duration, Time};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// Episode distribution and agent settings. Ranges `[lo, hi]` are sampled uniformly unless said otherwise.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EnvConfig {
    /// Episode length in seconds (600 steps of 50 ms by default).
    pub duration_s: f64,
    /// Action mapping: `linear` (spec 10.2 default) or `log`.
    pub mapping: String,
    /// Upper end of the estimate, kbit/s (spec 10.1: 8 Mbit/s); also the sender's max rate.
    pub max_kbps: f64,
    /// Lower end of the `log` mapping, kbit/s.
    pub log_min_kbps: f64,
    /// Sender's minimum rate (the encoder cannot go below), kbit/s.
    pub min_kbps: f64,
    /// Sender's rate until the first estimate arrives (spec 10.3: 300 kbit/s).
    pub start_kbps: f64,
    /// Pacing rate / target rate (spec 10.2: 1.1).
    pub pacing_factor: f64,
    /// Probability that an episode uses a synthetic trace when real traces were given (always when none).
    pub synthetic_prob: f64,
    /// Synthetic kinds to draw from (uniformly): `markov`, `random-walk`, `step`.
    pub synthetic_kinds: Vec<String>,
    /// Range of synthetic capacities, kbit/s (issue 5: 0.1–8 Mbit/s).
    pub synthetic_kbps: [f64; 2],
    /// Real traces: capacities are clipped to this range, kbit/s (some traces have spikes of
    /// tens of Gbit/s that are measurement artefacts).
    pub trace_clip_kbps: [f64; 2],
    /// One-way propagation delay of the path, ms (return delay = the same; RTT = 2×).
    pub owd_ms: [f64; 2],
    /// Drop-tail queue, as milliseconds at the episode's mean capacity (at least 3000 bytes).
    pub queue_ms: [f64; 2],
    /// Probability of random (Bernoulli) loss in an episode.
    pub loss_prob: f64,
    /// Loss rate when random loss is on: log-uniform in this range.
    pub loss_range: [f64; 2],
    /// Probability of one competing TCP NewReno flow (starts U(0, T/2), lasts U(5, 15) s).
    pub tcp_prob: f64,
    /// Probability of one competing media flow (same timing).
    pub media_prob: f64,
    /// Controller of that competing media flow: a built-in name, or a Python controller
    /// (`my_cc.py:MyCC`) where the driver injects an external factory (the Python binding does).
    pub competitor: String,
    /// What the agent sees: `r3net` (4 scaled features every 50 ms, spec 10.2) or `mmsys24`
    /// (the 150 raw features of the MMSys'24 challenge every 60 ms, controllers/onnx/features.rs).
    /// The reward is R3Net's in both, over the step's window.
    pub observation: String,
    /// Payload rate of the sender's audio stream, kbit/s (0: video only; `media.audio_kbps`).
    pub audio_kbps: f64,
}

impl Default for EnvConfig {
    fn default() -> Self {
        EnvConfig {
            duration_s: 30.0, mapping: "linear".into(), max_kbps: 8000.0, log_min_kbps: 10.0, min_kbps: 20.0, start_kbps: 300.0, pacing_factor: 1.1,
            synthetic_prob: 0.5, synthetic_kinds: SynthKind::ALL.iter().map(|k| k.name().to_string()).collect(), synthetic_kbps: [100.0, 8000.0],
            trace_clip_kbps: [0.0, 20_000.0], owd_ms: [10.0, 150.0], queue_ms: [50.0, 500.0], loss_prob: 0.3, loss_range: [0.001, 0.05],
            tcp_prob: 0.1, media_prob: 0.1, competitor: "gcc".into(), observation: "r3net".into(), audio_kbps: 0.0,
        }
    }
}

impl EnvConfig {
    pub fn from_json(s: &str) -> Result<EnvConfig, ConfigError> {
        if s.trim().is_empty() { return Ok(EnvConfig::default()); }
        let v: serde_json::Value = serde_json::from_str(s).map_err(|e| ConfigError::new("", e.to_string()))?;
        let cfg: EnvConfig = crate::controllers::parse_params(&v)?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let range = |f: &str, r: [f64; 2], lo: f64| -> Result<(), ConfigError> {
            if !(r[0].is_finite() && r[1].is_finite() && r[0] >= lo && r[1] >= r[0]) { return Err(ConfigError::new(f, format!("must be [lo, hi] with {lo} ≤ lo ≤ hi, got {r:?}"))); }
            Ok(())
        };
        let prob = |f: &str, p: f64| -> Result<(), ConfigError> { if !(0.0..=1.0).contains(&p) { return Err(ConfigError::new(f, "must be in [0, 1]")); } Ok(()) };
        if !(self.duration_s.is_finite() && self.duration_s >= 0.1 && self.duration_s <= 86_400.0) { return Err(ConfigError::new("duration_s", "must be in [0.1, 86400]")); }
        self.mapping()?;
        if !(self.min_kbps.is_finite() && self.min_kbps > 0.0 && self.min_kbps <= self.max_kbps) { return Err(ConfigError::new("min_kbps", "must be in (0, max_kbps]")); }
        if !(self.start_kbps.is_finite() && self.start_kbps > 0.0) { return Err(ConfigError::new("start_kbps", "must be > 0")); }
        if !(self.pacing_factor.is_finite() && self.pacing_factor >= 1.0) { return Err(ConfigError::new("pacing_factor", "must be ≥ 1")); }
        prob("synthetic_prob", self.synthetic_prob)?;
        prob("loss_prob", self.loss_prob)?;
        prob("tcp_prob", self.tcp_prob)?;
        prob("media_prob", self.media_prob)?;
        if self.synthetic_kinds.is_empty() { return Err(ConfigError::new("synthetic_kinds", "must name at least one kind")); }
        for (i, k) in self.synthetic_kinds.iter().enumerate() {
            if SynthKind::parse(k).is_none() { return Err(ConfigError::new(format!("synthetic_kinds[{i}]"), format!("unknown kind '{k}' (markov, random-walk, step)"))); }
        }
        range("synthetic_kbps", self.synthetic_kbps, 1.0)?;
        range("trace_clip_kbps", self.trace_clip_kbps, 0.0)?;
        range("owd_ms", self.owd_ms, 0.0)?;
        range("queue_ms", self.queue_ms, 0.0)?;
        range("loss_range", self.loss_range, 1e-9)?;
        if self.loss_range[1] > 1.0 { return Err(ConfigError::new("loss_range", "must be ≤ 1")); }
        self.observation_kind()?;
        if !(self.audio_kbps.is_finite() && (0.0..=512.0).contains(&self.audio_kbps)) { return Err(ConfigError::new("audio_kbps", "must be in [0, 512]")); }
        Ok(())
    }

    pub fn mapping(&self) -> Result<Mapping, ConfigError> {
        Mapping::new(&self.mapping, self.max_kbps, self.log_min_kbps)
    }

    pub fn steps_per_episode(&self) -> u32 { ((self.duration_s * 1000.0) / self.step().as_ms_f64()).round().max(1.0) as u32 }

    /// Whether the agent sees the MMSys'24 observation (else R3Net's).
    pub fn observation_kind(&self) -> Result<bool, ConfigError> {
        match self.observation.as_str() {
            "r3net" => Ok(false),
            "mmsys24" => Ok(true),
            o => Err(ConfigError::new("observation", format!("unknown observation '{o}' (r3net, mmsys24)"))),
        }
    }

    /// Step length: R3Net's 50 ms, or the challenge's 60-ms monitor interval.
    pub fn step(&self) -> Duration { if self.observation == "mmsys24" { SHORT_MI } else { STEP } }

    /// Length of one observation.
    pub fn obs_dim(&self) -> usize { if self.observation == "mmsys24" { MMSYS24_LEN } else { 4 } }
}

/// A capacity trace for the environment: `(start_s, kbps)` steps (first at 0) and its length.
#[derive(Clone, Debug, PartialEq)]
pub struct CapacityTrace {
    pub name: String,
    pub steps: Vec<(f64, f64)>,
    pub duration_s: f64,
}

impl CapacityTrace {
    /// Parse a trace file's content (any format ratelab reads; mahimahi with 100 ms bins).
    pub fn parse(name: &str, content: &str) -> Result<CapacityTrace, TraceError> {
        let trace = match detect_format(content)? {
            TraceFormat::Mahimahi => parse_mahimahi(content, Duration::from_ms(100))?,
            f => parse_trace(content, f)?,
        };
        let steps = trace.samples.iter().map(|s| (s.start.as_secs_f64(), s.capacity.kbps_f64())).collect();
        Ok(CapacityTrace { name: name.to_string(), steps, duration_s: trace.duration.as_secs_f64() })
    }

    /// The `len_s` seconds starting at `offset_s` (looping), re-based to start at 0, clipped to `clip`.
    pub fn window(&self, offset_s: f64, len_s: f64, clip: [f64; 2]) -> Vec<(f64, f64)> {
        let p = self.duration_s;
        if self.steps.is_empty() || p.is_nan() || p <= 0.0 { return vec![(0.0, clip[0])]; }
        let offset = offset_s.rem_euclid(p);
        let mut i = self.steps.partition_point(|(s, _)| *s <= offset).saturating_sub(1);
        let mut base = 0.0; // start of the current loop, relative to the window start
        let mut out = vec![(0.0, self.steps[i].1.clamp(clip[0], clip[1]))];
        loop {
            i += 1;
            if i == self.steps.len() { i = 0; base += p; }
            let t = base + self.steps[i].0 - offset;
            if t >= len_s { break; }
            if t > out.last().map_or(-1.0, |l| l.0) { out.push((t, self.steps[i].1.clamp(clip[0], clip[1]))); }
        }
        out
    }
}

/// What an episode was drawn as (for logs and tests).
#[derive(Clone, Debug, Default, Serialize)]
pub struct EpisodeInfo {
    /// Trace name or `synthetic:<kind>`.
    pub trace: String,
    pub offset_s: f64,
    pub owd_ms: f64,
    pub queue_bytes: f64,
    pub loss: f64,
    pub tcp: bool,
    pub media: bool,
    pub mean_capacity_kbps: f64,
    pub seed: u64,
}

/// What the agent's ears collect: R3Net's window features (observation and reward) and, with
/// `observation = "mmsys24"`, the MMSys'24 features.
#[derive(Default)]
struct Ears { r3net: WindowFeatures, mmsys24: Option<Mmsys24Features> }

/// The agent's ears at the receiver: collects flow 0's arrivals into step windows.
struct Probe(Arc<Mutex<Ears>>);

impl ReceiverEstimator for Probe {
    fn on_packet_received(&mut self, p: &ReceivedPacket) {
        if let Ok(mut w) = self.0.lock() {
            w.r3net.on_packet(p);
            if let Some(m) = w.mmsys24.as_mut() { m.on_packet(p); }
        }
    }
    fn on_rtt_update(&mut self, _now: Time, rtt: Duration) { if let Ok(mut w) = self.0.lock() { w.r3net.on_rtt(rtt); } }
    fn on_tick(&mut self, _now: Time) -> Option<Bitrate> { None }
    /// The environment closes windows itself; no periodic tick is needed.
    fn tick_interval(&self) -> Duration { Duration::from_secs(1_000_000) }
}

/// One step's outcome.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepOut {
    /// The observation: 4 scaled R3Net features, or the 150 MMSys'24 features ([`EnvConfig::observation`]).
    pub obs: Vec<f32>,
    pub reward: f64,
    pub truncated: bool,
    /// Unscaled features of the window.
    pub raw: Observation,
    /// Mean bottleneck capacity over the window, kbit/s (for utilisation; not an observation).
    pub capacity_kbps: f64,
    /// The estimate the action mapped to, kbit/s.
    pub estimate_kbps: f64,
}

/// One environment: one simulator at a time.
pub struct RlEnv {
    cfg: EnvConfig,
    mapping: Mapping,
    traces: Arc<Vec<CapacityTrace>>,
    kinds: Vec<SynthKind>,
    rng: ChaCha8Rng,
    sim: Option<Simulation>,
    probe: Arc<Mutex<Ears>>,
    steps: u32,
    max_steps: u32,
    info: EpisodeInfo,
    /// Builds controllers the registry does not know (the competitor, when it is a Python class).
    external: Option<ExternalFactory>,
}

impl RlEnv {
    pub fn new(cfg: EnvConfig, traces: Arc<Vec<CapacityTrace>>, seed: u64) -> Result<RlEnv, ConfigError> {
        cfg.validate()?;
        let mapping = cfg.mapping()?;
        let kinds = cfg.synthetic_kinds.iter().filter_map(|k| SynthKind::parse(k)).collect();
        let max_steps = cfg.steps_per_episode();
        Ok(RlEnv { cfg, mapping, traces, kinds, rng: ChaCha8Rng::seed_from_u64(seed), sim: None, probe: Default::default(), steps: 0, max_steps, info: EpisodeInfo::default(), external: None })
    }

    pub fn config(&self) -> &EnvConfig { &self.cfg }
    /// Let episodes build controllers outside the registry (`EnvConfig::competitor`).
    pub fn set_external(&mut self, f: ExternalFactory) { self.external = Some(f); }
    pub fn episode(&self) -> &EpisodeInfo { &self.info }
    pub fn simulation(&self) -> Option<&Simulation> { self.sim.as_ref() }
    pub fn steps_taken(&self) -> u32 { self.steps }
    pub fn max_steps(&self) -> u32 { self.max_steps }

    /// Draw an episode and build its scenario.
    fn draw(&mut self) -> (Scenario, EpisodeInfo) {
        let c = &self.cfg;
        let rng = &mut self.rng;
        let dur = c.duration_s;
        let mut info = EpisodeInfo { seed: rng.gen(), ..Default::default() };
        let use_synth = self.traces.is_empty() || rng.gen::<f64>() < c.synthetic_prob;
        let steps = if use_synth {
            let kind = self.kinds[rng.gen_range(0..self.kinds.len())];
            info.trace = format!("synthetic:{}", kind.name());
            synth::generate(kind, rng, dur, c.synthetic_kbps[0], c.synthetic_kbps[1])
        } else {
            let tr = &self.traces[rng.gen_range(0..self.traces.len())];
            info.offset_s = rng.gen::<f64>() * tr.duration_s.max(0.0);
            info.trace = tr.name.clone();
            tr.window(info.offset_s, dur, c.trace_clip_kbps)
        };
        // Mean capacity over the episode (steps are piecewise constant).
        let mut area = 0.0;
        for (i, (t, k)) in steps.iter().enumerate() {
            let end = steps.get(i + 1).map_or(dur, |n| n.0).min(dur);
            if end > *t { area += k * (end - t); }
        }
        info.mean_capacity_kbps = area / dur;
        let u = |rng: &mut ChaCha8Rng, r: [f64; 2]| if r[1] > r[0] { rng.gen_range(r[0]..r[1]) } else { r[0] };
        info.owd_ms = u(rng, c.owd_ms);
        info.queue_bytes = (info.mean_capacity_kbps * 1000.0 / 8.0 * u(rng, c.queue_ms) / 1000.0).max(3000.0);
        if rng.gen::<f64>() < c.loss_prob {
            info.loss = (c.loss_range[0].ln() + rng.gen::<f64>() * (c.loss_range[1].ln() - c.loss_range[0].ln())).exp();
        }
        let mut flows = vec![serde_json::json!({
            "kind": "media", "controller": "fixed", "one_way_delay_ms": info.owd_ms,
            "media": {"min_kbps": c.min_kbps, "max_kbps": c.max_kbps, "start_kbps": c.start_kbps, "audio_kbps": c.audio_kbps},
        })];
        let window = |rng: &mut ChaCha8Rng| { let s = rng.gen_range(0.0..(dur / 2.0).max(1e-3)); (s, (s + rng.gen_range(5.0..15.0)).min(dur + 0.05)) };
        if rng.gen::<f64>() < c.tcp_prob {
            let (s, e) = window(rng);
            info.tcp = true;
            flows.push(serde_json::json!({"kind": "tcp", "start_s": s, "stop_s": e, "one_way_delay_ms": info.owd_ms}));
        }
        if rng.gen::<f64>() < c.media_prob {
            let (s, e) = window(rng);
            info.media = true;
            flows.push(serde_json::json!({"kind": "media", "controller": c.competitor, "start_s": s, "stop_s": e, "one_way_delay_ms": info.owd_ms}));
        }
        let sc = serde_json::json!({
            "name": "rl-episode",
            "duration_s": dur + 0.1,
            "link": {"steps": steps, "queue": {"bytes": info.queue_bytes.round()}, "loss": info.loss},
            "flows": flows,
            // No logs: the environment reads its own window features.
            "metrics": {"series_interval_ms": (dur + 10.0) * 1000.0, "packet_log": false},
        });
        let sc: Scenario = serde_json::from_value(sc).expect("the environment builds a valid scenario document");
        (sc, info)
    }

    /// Start a new episode (re-seeding the environment's RNG if `seed` is given); returns the
    /// observation of the first 50 ms.
    pub fn reset(&mut self, seed: Option<u64>) -> Result<StepOut, ConfigError> {
        if let Some(s) = seed { self.rng = ChaCha8Rng::seed_from_u64(s); }
        let (sc, info) = self.draw();
        let mut sim = build_simulation_ext(&sc, info.seed, None, None, self.external.clone())?;
        let mmsys24 = self.cfg.observation_kind()?.then(|| Mmsys24Features::new(Time::ZERO, SHORT_MI));
        self.probe = Arc::new(Mutex::new(Ears { r3net: WindowFeatures::new(Time::ZERO), mmsys24 }));
        if let Some(f) = sim.flows.get_mut(0) {
            if let FlowState::Media(m) = &mut f.state {
                m.sender.set_controller(Box::new(RateFollower::new(self.cfg.pacing_factor)));
                m.receiver.set_estimator(Some(Box::new(Probe(self.probe.clone()))));
            }
        }
        self.info = info;
        self.sim = Some(sim);
        self.steps = 0;
        let mut out = self.advance();
        out.estimate_kbps = self.cfg.start_kbps;
        Ok(out)
    }

    /// Run one step window (50 or 60 ms) and read its features.
    fn advance(&mut self) -> StepOut {
        let Some(sim) = self.sim.as_mut() else { return StepOut::default() };
        let from = sim.now();
        let to = from + self.cfg.step();
        sim.run_until(to);
        let (raw, mmsys24) = self.probe.lock().map(|mut w| (w.r3net.take(to), w.mmsys24.as_mut().map(|m| m.take(to)))).unwrap_or_default();
        let capacity_kbps = sim.link().capacity().mean_over(from, to).kbps_f64();
        let obs = match mmsys24 { Some(o) => o.to_vec(), None => raw.scaled().to_vec() };
        StepOut { obs, reward: raw.reward(), truncated: false, raw, capacity_kbps, estimate_kbps: 0.0 }
    }

    /// Apply action `a` (clipped to [0, 1]) and run one step. Before the first reset it resets.
    pub fn step(&mut self, a: f32) -> Result<StepOut, ConfigError> {
        if self.sim.is_none() { self.reset(None)?; }
        let est = self.mapping.kbps(a as f64);
        if let Some(sim) = self.sim.as_mut() { sim.push_remote_estimate(0, Bitrate::from_kbps_f64(est)); }
        let mut out = self.advance();
        out.estimate_kbps = est;
        self.steps += 1;
        out.truncated = self.steps >= self.max_steps;
        Ok(out)
    }
}

/// N environments stepped together with same-step autoreset.
pub struct VecEnv {
    envs: Vec<RlEnv>,
    threads: usize,
    autoreset: bool,
}

/// Per-environment result of a [`VecEnv::step`]: the step (its observation is the new episode's
/// first one when the episode ended and autoreset is on) and, then, the ended episode's last step.
#[derive(Clone, Debug, Default)]
pub struct VecStep { pub out: StepOut, pub final_out: Option<StepOut> }

impl VecEnv {
    /// `seed` derives every environment's seed (SplitMix64, stream = index).
    pub fn new(cfg: EnvConfig, traces: Vec<CapacityTrace>, n: usize, seed: u64, threads: usize, autoreset: bool) -> Result<VecEnv, ConfigError> {
        if n == 0 { return Err(ConfigError::new("num_envs", "must be ≥ 1")); }
        let traces = Arc::new(traces);
        let envs = (0..n).map(|i| RlEnv::new(cfg.clone(), traces.clone(), super::build::derive_seed(seed, 7000 + i as u64))).collect::<Result<_, _>>()?;
        Ok(VecEnv { envs, threads: threads.max(1), autoreset })
    }

    pub fn len(&self) -> usize { self.envs.len() }
    pub fn is_empty(&self) -> bool { self.envs.is_empty() }
    pub fn env(&self, i: usize) -> Option<&RlEnv> { self.envs.get(i) }
    /// [`RlEnv::set_external`] for every environment.
    pub fn set_external(&mut self, f: ExternalFactory) { for e in &mut self.envs { e.set_external(f.clone()); } }

    fn parallel<T: Send + Default + Clone>(&mut self, f: impl Fn(usize, &mut RlEnv) -> T + Sync) -> Vec<T> {
        let n = self.envs.len();
        let mut out = vec![T::default(); n];
        let threads = self.threads.min(n);
        if threads <= 1 {
            for (i, (e, o)) in self.envs.iter_mut().zip(out.iter_mut()).enumerate() { *o = f(i, e); }
            return out;
        }
        let chunk = n.div_ceil(threads);
        std::thread::scope(|s| {
            for (k, (es, os)) in self.envs.chunks_mut(chunk).zip(out.chunks_mut(chunk)).enumerate() {
                let f = &f;
                s.spawn(move || { for (j, (e, o)) in es.iter_mut().zip(os.iter_mut()).enumerate() { *o = f(k * chunk + j, e); } });
            }
        });
        out
    }

    /// Reset every environment (re-seeded from `seeds[i]` when given).
    pub fn reset(&mut self, seeds: Option<&[u64]>) -> Result<Vec<StepOut>, ConfigError> {
        let seeds: Option<Vec<u64>> = seeds.map(|s| s.to_vec());
        let res = self.parallel(|i, e| Some(e.reset(seeds.as_ref().and_then(|s| s.get(i).copied()))));
        res.into_iter().map(|r| r.expect("set by parallel")).collect()
    }

    /// Step all environments with `actions[i]`.
    pub fn step(&mut self, actions: &[f32]) -> Result<Vec<VecStep>, ConfigError> {
        if actions.len() != self.envs.len() { return Err(ConfigError::new("actions", format!("expected {} actions, got {}", self.envs.len(), actions.len()))); }
        let auto = self.autoreset;
        let res = self.parallel(|i, e| {
            Some((|| {
                let out = e.step(actions[i])?;
                if auto && out.truncated {
                    let mut first = e.reset(None)?;
                    first.truncated = false;
                    return Ok(VecStep { out: StepOut { reward: out.reward, truncated: true, ..first }, final_out: Some(out) });
                }
                Ok(VecStep { out, final_out: None })
            })())
        });
        res.into_iter().map(|r| r.expect("set by parallel")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> EnvConfig { EnvConfig { duration_s: 5.0, tcp_prob: 0.0, media_prob: 0.0, loss_prob: 0.0, ..EnvConfig::default() } }

    #[test]
    fn competitor_controller_is_configurable() {
        let mut e = RlEnv::new(EnvConfig { media_prob: 1.0, competitor: "fixed".into(), ..cfg() }, Arc::new(vec![]), 0).unwrap();
        e.reset(Some(1)).unwrap();
        assert_eq!(e.simulation().unwrap().flow_infos()[1].controller, "fixed");
        let mut bad = RlEnv::new(EnvConfig { media_prob: 1.0, competitor: "nope".into(), ..cfg() }, Arc::new(vec![]), 0).unwrap();
        assert_eq!(bad.reset(Some(1)).err().expect("unknown competitor").field, "flows[1].controller");
    }

    #[test]
    fn trace_window_loops_and_rebases() {
        let t = CapacityTrace { name: "t".into(), steps: vec![(0.0, 100.0), (1.0, 200.0), (2.0, 300.0)], duration_s: 3.0 };
        assert_eq!(t.window(1.5, 4.0, [0.0, 1e9]), vec![(0.0, 200.0), (0.5, 300.0), (1.5, 100.0), (2.5, 200.0), (3.5, 300.0)]);
        assert_eq!(t.window(0.0, 1.0, [150.0, 250.0]), vec![(0.0, 150.0)]);
        assert_eq!(t.window(4.0, 0.5, [0.0, 1e9]), vec![(0.0, 200.0)]);
    }

    #[test]
    fn episode_is_reproducible_from_the_seed() {
        let run = |seed| {
            let mut e = RlEnv::new(EnvConfig { tcp_prob: 0.5, media_prob: 0.5, loss_prob: 0.5, ..cfg() }, Arc::new(vec![]), 0).unwrap();
            let mut v = vec![e.reset(Some(seed)).unwrap()];
            for k in 0..40 { v.push(e.step((k % 7) as f32 / 7.0).unwrap()); }
            (v, e.episode().trace.clone())
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3).0, run(4).0);
    }

    #[test]
    fn constant_link_hand_checked_reward_and_truncation() {
        // 2 Mbit/s constant link, no loss: asking 1 Mbit/s should give ~1 Mbit/s received, an RTT
        // near 2 × one-way delay, and no loss; the episode truncates after duration / 50 ms steps.
        let c = EnvConfig { synthetic_kbps: [2000.0, 2000.0], owd_ms: [40.0, 40.0], queue_ms: [200.0, 200.0], ..cfg() };
        let mut e = RlEnv::new(c, Arc::new(vec![]), 1).unwrap();
        e.reset(Some(1)).unwrap();
        assert_eq!(e.max_steps(), 100);
        let (mut rate, mut rtt, mut n) = (0.0, 0.0, 0);
        let mut last = StepOut::default();
        for k in 0..100 {
            last = e.step(0.125).unwrap(); // 1 Mbit/s
            assert_eq!(last.estimate_kbps, 1000.0);
            assert!((last.capacity_kbps - 2000.0).abs() < 1e-6);
            assert_eq!(last.truncated, k == 99);
            let want = 0.6 * (4.0 * last.raw.recv_kbps / 1000.0 + 1.0).ln() - last.raw.rtt_ms / 1000.0 - 10.0 * last.raw.loss_pct / 100.0;
            assert!((last.reward - want).abs() < 1e-12);
            if k >= 40 { rate += last.raw.recv_kbps; rtt += last.raw.rtt_ms; n += 1; assert_eq!(last.raw.loss_pct, 0.0); }
        }
        let (rate, rtt) = (rate / n as f64, rtt / n as f64);
        assert!((rate - 1000.0).abs() < 150.0, "mean receive rate {rate}");
        assert!((80.0..110.0).contains(&rtt), "mean RTT {rtt} (2 × 40 ms + serialisation/pacing)");
        assert!(last.truncated);
    }

    #[test]
    fn overshooting_builds_delay_and_loss_that_the_reward_sees() {
        let c = EnvConfig { synthetic_kbps: [1000.0, 1000.0], owd_ms: [20.0, 20.0], queue_ms: [100.0, 100.0], duration_s: 10.0, ..cfg() };
        let mean_reward = |a: f32| {
            let mut e = RlEnv::new(c.clone(), Arc::new(vec![]), 1).unwrap();
            e.reset(Some(5)).unwrap();
            let outs: Vec<StepOut> = (0..200).map(|_| e.step(a).unwrap()).collect();
            let loss: f64 = outs[100..].iter().map(|o| o.raw.loss_pct).sum::<f64>() / 100.0;
            (outs.iter().map(|o| o.reward).sum::<f64>() / 200.0, loss)
        };
        let (good, good_loss) = mean_reward(0.11); // 880 kbit/s on a 1 Mbit/s link
        let (over, over_loss) = mean_reward(0.5); // 4 Mbit/s
        assert_eq!(good_loss, 0.0);
        assert!(over_loss > 5.0, "overshoot loses packets at the drop-tail queue: {over_loss}%");
        assert!(good > over, "right-sized {good} beats overshoot {over}");
    }

    #[test]
    fn vec_env_autoresets_and_threads_agree() {
        let run = |threads| {
            let mut v = VecEnv::new(EnvConfig { duration_s: 1.0, tcp_prob: 0.3, media_prob: 0.3, ..EnvConfig::default() }, vec![], 4, 9, threads, true).unwrap();
            v.reset(None).unwrap();
            let mut rows = Vec::new();
            for k in 0..45 {
                let s = v.step(&[0.1, 0.2, 0.3, 0.4]).unwrap();
                if k == 19 || k == 39 { assert!(s.iter().all(|x| x.out.truncated && x.final_out.is_some())); } else { assert!(s.iter().all(|x| !x.out.truncated && x.final_out.is_none())); }
                rows.push(s.iter().map(|x| (x.out.obs.clone(), x.out.reward)).collect::<Vec<_>>());
            }
            rows
        };
        assert_eq!(run(1), run(3));
    }

    #[test]
    fn mmsys24_observation_steps_60_ms_and_sees_audio() {
        let c = EnvConfig { observation: "mmsys24".into(), audio_kbps: 32.0, synthetic_kbps: [2000.0, 2000.0], owd_ms: [40.0, 40.0], ..cfg() };
        assert_eq!(c.steps_per_episode(), 83); // 5 s / 60 ms
        assert_eq!(c.obs_dim(), 150);
        let mut e = RlEnv::new(c, Arc::new(vec![]), 1).unwrap();
        let first = e.reset(Some(2)).unwrap();
        assert_eq!(first.obs.len(), 150);
        let mut last = first;
        for _ in 0..30 { last = e.step(0.1).unwrap(); }
        let o = &last.obs;
        use crate::controllers::onnx::features::{feature::*, short_index};
        // 800 kbit/s asked on a 2 Mbit/s link: the receiving rate of the last 60 ms is near it,
        // audio (50 packets/s: ~3 per 60 ms) and video both arrive, the delay is ≥ 40 ms.
        assert!((300_000.0..1_500_000.0).contains(&o[short_index(RECV_RATE, 0)]), "{}", o[0]);
        assert!(o[short_index(AUDIO_FRACTION, 0)] > 0.0 && o[short_index(VIDEO_FRACTION, 0)] > 0.0);
        assert!(o[short_index(MIN_SEEN_DELAY, 0)] >= 40.0);
        // The reward is still R3Net's, of the same 60-ms window.
        assert!((last.reward - last.raw.reward()).abs() < 1e-12);
        assert_eq!(EnvConfig::from_json(r#"{"observation": "mmsys23"}"#).unwrap_err().field, "observation");
    }

    #[test]
    fn config_errors_name_the_field() {
        assert_eq!(EnvConfig::from_json(r#"{"owd_ms": [5, 1]}"#).unwrap_err().field, "owd_ms");
        assert_eq!(EnvConfig::from_json(r#"{"synthetic_kinds": ["sine"]}"#).unwrap_err().field, "synthetic_kinds[0]");
        assert!(EnvConfig::from_json(r#"{"nope": 1}"#).unwrap_err().message.contains("nope"));
        assert!(EnvConfig::from_json("").is_ok());
    }
}
