//! LCC — Learning-based Congestion Control (paper 000, Dai, Zhang, Guo; spec section 3).
//!
//! Three parts, run once per epoch of ε ms (the controller tick):
//! * **Delay-Rate Tracker** ([`Tracker`]): per epoch i the mean OWD `D_i`, its EWMA
//!   `D_ave,i = (1−α)·D_ave,i−1 + α·D_i` (Eq. 2) and the sending rate `S_i`; the pairs
//!   `(S_i, D_ave,i)` go to a window of the latest N.
//! * **Probability Density Fitter** ([`kde`]): weighted product-Gaussian KDE over the window with
//!   `w_j = e^{j/N−1}` (Eqs. 3–4), re-fitted (snapshotted) every second.
//! * **Bayesian Controller**: `T_A = D_min + 25 ms`, `T_c,i = T_c,i−1 + δ·(T_A − D_ave,i)` (Eq. 5),
//!   `S_i+1 = E[S | D = T_c,i]` (Eqs. 6–7, closed form in [`kde::Kde::conditional_mean`]) and
//!   the back-off `S_i+1 = M·S_i` when `D_ave,i > R·T_A` (Eq. 8).
//!
//! The paper leaves ε, α, δ, R, M and the bandwidths open (spec 3.5 ✗); the defaults below were
//! chosen by the grid search of `examples/lcc_grid.rs` (table in `docs/controllers/lcc.md`).
//! Readings of the ambiguities of spec 3.6 (all switchable): OWDs are aligned with the epoch in
//! which their packets were *sent* ([`Pairing::SendAligned`]); `S_i` is the *measured* send rate
//! ([`RateSource::Measured`]) over `rate_window_ms`; `T_c` starts at `T_A`; start-up doubles the
//! rate every epoch until `D_ave > T_A`; `T_c` is bounded ([`TcClamp`]); Eq. 8 scales the
//! controller's own last rate. Not in the paper: when `T_c` has left the recorded delays, the
//! rate explores by `explore_gain` per epoch (the product-kernel mean cannot leave the range of
//! recorded rates).

pub mod kde;

use super::common::{EpochClock, EpochController};
use crate::controller::{Constraints, Diagnostics, SentPacket, TransportFeedback, Update};
use crate::error::ConfigError;
use crate::units::{Bitrate, Duration, Time};
use kde::{BandwidthRule, Kde};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Which OWDs form `D_i` (spec 3.6 ⚠).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pairing {
    /// `D_i` = mean OWD of the packets *sent* in epoch i, paired when their feedback is complete.
    SendAligned,
    /// `D_i` = mean OWD of the packets whose feedback *arrived* in epoch i (the paper's words).
    Literal,
}

/// What `S_i` is (spec 3.6 ⚠).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RateSource {
    /// Bytes actually sent in epoch i / ε.
    Measured,
    /// The target rate in force when the epoch's first packet left.
    Target,
}

/// Bounds on the set-point `T_c` (not in the paper; an integrator without bounds winds up while
/// the link is under-used, spec 3.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TcClamp {
    /// Unbounded (literal Eq. 5).
    None,
    /// `[D_min, R·T_A]` (spec 3.6 suggestion).
    Band,
    /// The delay range of the current KDE snapshot widened by one bandwidth `h_D`, and inside
    /// `[D_min, R·T_A]`.
    Data,
}

/// Kernel of the density fitter (paper II-B: "normal kernel", shape not given).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kernel {
    /// Product of two Gaussians (diagonal bandwidth): `E[S | D]` is the Nadaraya–Watson mean.
    Product,
    /// Full-covariance Gaussian with the window's (S, D) correlation, kept ≥ 0
    /// (scipy `gaussian_kde` style): `E[S | D]` extrapolates along the data's slope.
    Full,
}

/// LCC parameters (spec 3.5). Values marked "grid" were chosen by `examples/lcc_grid.rs`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LccConfig {
    /// Epoch ε in ms (spec 3.5 ✗; grid).
    pub epoch_ms: f64,
    /// EWMA gain α of Eq. 2, in (0, 1] (spec 3.5 ✗; grid).
    pub alpha: f64,
    /// Set-point gain δ of Eq. 5 per epoch (spec 3.5 ✗; grid).
    pub delta: f64,
    /// `T_A − D_min` in ms (paper II-C, grid search of the authors: 25 ms).
    pub target_offset_ms: f64,
    /// Window N of `(S, D)` pairs (paper II-B: 300).
    pub window: usize,
    /// KDE refit period in ms (paper II-B: 1 s).
    pub refit_interval_ms: f64,
    /// R of Eq. 8: back off when `D_ave > R·T_A` (spec 3.5 ✗; grid).
    pub exorbitant_ratio: f64,
    /// M of Eq. 8, in (0, 1] (spec 3.5 ✗; grid).
    pub backoff: f64,
    /// Multiplier on the weighted Scott bandwidth (spec 3.5 ✗; grid).
    pub bandwidth_scale: f64,
    /// Floor of the delay bandwidth `h_D` in ms.
    pub min_bandwidth_ms: f64,
    /// `product` or `full` (grid).
    pub kernel: Kernel,
    /// `send-aligned` (default) or `literal` (spec 3.6).
    pub pairing: Pairing,
    /// `measured` (default) or `target` (spec 3.6).
    pub rate_source: RateSource,
    /// `none`, `band` or `data` (spec 3.6; grid).
    pub tc_clamp: TcClamp,
    /// Start-up: rate multiplier per epoch until `D_ave > T_A` (spec 3.6 ✗ proposal: 2).
    pub startup_growth: f64,
    /// Pairs needed before the Bayesian controller runs (the KDE is fitted as soon as there are
    /// this many).
    pub min_pairs: usize,
    /// Pacing rate / target (spec 3.7: 2.5 as WebRTC M60, the paper's testbed).
    pub pacing_factor: f64,
    /// Apply Eq. 8 at most once until the delay of packets sent after the back-off has been
    /// observed (TCP's once-per-window rule; not in the paper, which applies it every epoch
    /// while `D_ave > R·T_A`; grid).
    pub backoff_once_per_rtt: bool,
    /// Window of the measured `S_i` in ms, rounded to whole epochs (≥ 1): with 30 fps video an
    /// epoch of 25–50 ms holds zero, one or two frames, so a one-epoch rate swings by ±50 %
    /// (spec 3.6 ⚠ "S_i measured"; WebRTC's send-rate statistic averages over a window; grid).
    pub rate_window_ms: f64,
    /// Exploration per epoch when `T_c` has left the recorded delays: above them while
    /// `D_ave < T_A`, `S = max(E[S | D = T_c], S_i)·(1 + γ)`; below them while `D_ave > T_A`,
    /// `S = min(E[S | D = T_c], S_i)·(1 − γ)` (not in the paper; 0 = literal; grid).
    pub explore_gain: f64,
}

impl Default for LccConfig {
    /// Chosen by `examples/lcc_grid.rs` (docs/controllers/lcc.md) where the paper is silent.
    fn default() -> Self {
        LccConfig {
            epoch_ms: 25.0,
            alpha: 0.5,
            delta: 0.05,
            target_offset_ms: 25.0,
            window: 300,
            refit_interval_ms: 1000.0,
            exorbitant_ratio: 1.5,
            backoff: 0.5,
            bandwidth_scale: 2.0,
            min_bandwidth_ms: 0.5,
            kernel: Kernel::Product,
            pairing: Pairing::SendAligned,
            rate_source: RateSource::Measured,
            tc_clamp: TcClamp::Band,
            startup_growth: 2.0,
            min_pairs: 5,
            pacing_factor: 2.5,
            rate_window_ms: 250.0,
            backoff_once_per_rtt: false,
            explore_gain: 0.005,
        }
    }
}

impl LccConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        fn check(ok: bool, field: &str, what: &str) -> Result<(), ConfigError> {
            if ok { Ok(()) } else { Err(ConfigError::new(field, what.to_string())) }
        }
        check(self.epoch_ms.is_finite() && (1.0..=10_000.0).contains(&self.epoch_ms), "epoch_ms", "must be in [1, 10000]")?;
        check(self.alpha > 0.0 && self.alpha <= 1.0, "alpha", "must be in (0, 1]")?;
        check(self.delta.is_finite() && self.delta >= 0.0, "delta", "must be ≥ 0")?;
        check(self.target_offset_ms.is_finite() && self.target_offset_ms >= 0.0, "target_offset_ms", "must be ≥ 0")?;
        check((1..=100_000).contains(&self.window), "window", "must be in [1, 100000]")?;
        check(self.refit_interval_ms.is_finite() && self.refit_interval_ms >= 0.0, "refit_interval_ms", "must be ≥ 0")?;
        check(self.exorbitant_ratio.is_finite() && self.exorbitant_ratio >= 1.0, "exorbitant_ratio", "must be ≥ 1")?;
        check(self.backoff > 0.0 && self.backoff <= 1.0, "backoff", "must be in (0, 1]")?;
        check(self.bandwidth_scale.is_finite() && self.bandwidth_scale > 0.0, "bandwidth_scale", "must be > 0")?;
        check(self.min_bandwidth_ms.is_finite() && self.min_bandwidth_ms > 0.0, "min_bandwidth_ms", "must be > 0")?;
        check(self.startup_growth.is_finite() && self.startup_growth >= 1.0, "startup_growth", "must be ≥ 1")?;
        check(self.min_pairs >= 1, "min_pairs", "must be ≥ 1")?;
        check(self.pacing_factor.is_finite() && self.pacing_factor >= 1.0, "pacing_factor", "must be ≥ 1")?;
        check(self.rate_window_ms.is_finite() && (0.0..=60_000.0).contains(&self.rate_window_ms), "rate_window_ms", "must be in [0, 60000]")?;
        check(self.explore_gain.is_finite() && (0.0..=1.0).contains(&self.explore_gain), "explore_gain", "must be in [0, 1]")?;
        Ok(())
    }
}

/// Bytes and OWDs of one send epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct SendEpoch {
    bytes: i64,
    packets: u32,
    /// Packets reported so far (received or lost).
    reported: u32,
    target_kbps: Option<f64>,
    owd_sum_ms: f64,
    owd_n: u32,
}

/// Most send epochs kept while waiting for feedback (older ones are closed as they are).
const MAX_PENDING_EPOCHS: usize = 4096;

/// The Delay-Rate Tracker (paper II-A): per-epoch send bytes and OWDs, `D_ave` (Eq. 2), `D_min`,
/// and the window of the latest N pairs `(S kbit/s, D_ave ms)`.
#[derive(Clone, Debug)]
pub struct Tracker {
    t0: Time,
    epoch: Duration,
    alpha: f64,
    pairing: Pairing,
    rate_source: RateSource,
    window: usize,
    /// Send epochs from index `first` on, not yet closed.
    pending: VecDeque<SendEpoch>,
    first: u64,
    /// Literal pairing: OWDs that arrived in the current controller epoch.
    arrived: (f64, u32),
    /// Minimum OWD seen (ms).
    pub d_min: Option<f64>,
    /// EWMA of the epoch OWDs (ms), Eq. 2.
    pub d_ave: Option<f64>,
    /// `(S_j, D_ave,j)`, oldest first, at most N.
    pub pairs: VecDeque<(f64, f64)>,
    /// Measured send rate (kbit/s) of the last closed-by-time epoch.
    pub last_sent_kbps: f64,
    /// Time of the last feedback.
    pub last_feedback: Option<Time>,
    /// Epochs averaged into a measured `S_i` (this one and the `n − 1` before it).
    rate_epochs: usize,
    /// Bytes of the most recently closed epochs (at most `rate_epochs − 1`).
    recent_bytes: VecDeque<i64>,
    /// Start of the newest epoch whose delay went into `D_ave`.
    pub observed_since: Option<Time>,
}

impl Tracker {
    pub fn new(t0: Time, epoch: Duration, alpha: f64, window: usize, pairing: Pairing, rate_source: RateSource) -> Self {
        Tracker {
            t0, epoch: epoch.max(Duration::from_ms(1)), alpha, pairing, rate_source, window: window.max(1),
            pending: VecDeque::new(), first: 0, arrived: (0.0, 0), d_min: None, d_ave: None,
            pairs: VecDeque::new(), last_sent_kbps: 0.0, last_feedback: None, rate_epochs: 1, recent_bytes: VecDeque::new(), observed_since: None,
        }
    }

    /// Average the measured send rate over `n` epochs (the closing one and `n − 1` before it).
    pub fn with_rate_epochs(mut self, n: usize) -> Self { self.rate_epochs = n.clamp(1, 1000); self }

    fn index(&self, t: Time) -> u64 { ((t - self.t0).as_us().max(0) / self.epoch.as_us()) as u64 }

    fn slot(&mut self, idx: u64) -> Option<&mut SendEpoch> {
        if idx < self.first { return None; }
        if idx - self.first >= MAX_PENDING_EPOCHS as u64 {
            // a long gap without feedback: close what is pending and jump ahead
            while !self.pending.is_empty() { self.close_oldest(); }
            self.first = idx;
        }
        while self.pending.len() as u64 <= idx - self.first {
            if self.pending.len() >= MAX_PENDING_EPOCHS { self.close_oldest(); }
            self.pending.push_back(SendEpoch::default());
        }
        let off = (idx - self.first) as usize;
        self.pending.get_mut(off)
    }

    pub fn on_sent(&mut self, p: &SentPacket, target: Bitrate) {
        if let Some(e) = self.slot(self.index(p.send_time)) {
            e.bytes += p.size.get();
            e.packets += 1;
            if e.target_kbps.is_none() { e.target_kbps = Some(target.kbps_f64()); }
        }
    }

    /// `S_i` of a send epoch being closed, kbit/s (measured: over the last `rate_epochs`
    /// epochs, this one included). Closing order is epoch order, so the history is exact.
    fn rate_of(&mut self, e: &SendEpoch) -> f64 {
        let (sum, n) = self.recent_bytes.iter().fold((e.bytes, 1usize), |(s, n), b| (s + b, n + 1));
        self.recent_bytes.push_back(e.bytes);
        while self.recent_bytes.len() + 1 > self.rate_epochs { self.recent_bytes.pop_front(); }
        match (self.rate_source, e.target_kbps) {
            (RateSource::Target, Some(t)) => t,
            _ => sum as f64 * 8.0 / (self.epoch.as_secs_f64() * n as f64) / 1e3,
        }
    }

    /// Fold one epoch OWD into `D_ave` (Eq. 2) and record the pair; `start` is the start of
    /// the epoch whose packets the OWDs belong to.
    fn record(&mut self, s_kbps: f64, d_i: Option<f64>, sent: bool, start: Time) {
        if let Some(d) = d_i.filter(|d| d.is_finite()) {
            self.observed_since = Some(start);
            self.d_ave = Some(match self.d_ave { Some(a) => (1.0 - self.alpha) * a + self.alpha * d, None => d });
            if sent {
                if let Some(a) = self.d_ave {
                    self.pairs.push_back((s_kbps, a));
                    while self.pairs.len() > self.window { self.pairs.pop_front(); }
                }
            }
        }
    }

    fn close_oldest(&mut self) {
        if let Some(e) = self.pending.pop_front() {
            let start = self.t0 + Duration::from_us(self.first as i64 * self.epoch.as_us());
            self.first += 1;
            let s = self.rate_of(&e);
            let d = (e.owd_n > 0).then(|| e.owd_sum_ms / e.owd_n as f64);
            self.record(s, d, e.bytes > 0, start);
        }
    }

    pub fn on_feedback(&mut self, fb: &TransportFeedback) {
        self.last_feedback = Some(fb.feedback_time);
        let mut newest_send: Option<Time> = None;
        for p in &fb.packets {
            newest_send = Some(newest_send.map_or(p.sent.send_time, |t| t.max(p.sent.send_time)));
            let Some(r) = p.recv_time else {
                let idx = self.index(p.sent.send_time);
                if idx >= self.first {
                    if let Some(e) = self.pending.get_mut((idx - self.first) as usize) { e.reported += 1; }
                }
                continue;
            };
            let owd = (r - p.sent.send_time).as_ms_f64();
            if !owd.is_finite() { continue; }
            self.d_min = Some(self.d_min.map_or(owd, |m| m.min(owd)));
            match self.pairing {
                Pairing::SendAligned => {
                    let idx = self.index(p.sent.send_time);
                    if idx >= self.first {
                        if let Some(e) = self.pending.get_mut((idx - self.first) as usize) {
                            e.owd_sum_ms += owd;
                            e.owd_n += 1;
                            e.reported += 1;
                        }
                    }
                }
                Pairing::Literal => { self.arrived.0 += owd; self.arrived.1 += 1; }
            }
        }
        // Every packet sent before the newest reported one has been reported (received or
        // lost): the send epochs before its epoch are complete.
        if self.pairing == Pairing::SendAligned {
            if let Some(t) = newest_send {
                let upto = self.index(t);
                while self.first < upto && !self.pending.is_empty() { self.close_oldest(); }
                if self.pending.is_empty() && self.first < upto { self.first = upto; }
            }
            self.close_complete(fb.feedback_time);
        }
    }

    /// Close the leading send epochs that have ended by `now` and whose packets are all reported.
    fn close_complete(&mut self, now: Time) {
        while let Some(e) = self.pending.front() {
            let end = self.t0 + Duration::from_us((self.first as i64 + 1) * self.epoch.as_us());
            if end > now || e.reported < e.packets { break; }
            self.close_oldest();
        }
    }

    /// Epoch boundary at `now`: remember the send rate of the epoch that just ended; in literal
    /// mode close it with the OWDs that arrived during it.
    pub fn on_epoch_end(&mut self, now: Time) {
        let ended = self.index(now);
        if ended == 0 { return; }
        let last = ended - 1;
        if last >= self.first {
            if let Some(e) = self.pending.get((last - self.first) as usize) {
                self.last_sent_kbps = e.bytes as f64 * 8.0 / self.epoch.as_secs_f64() / 1e3;
            } else {
                self.last_sent_kbps = 0.0;
            }
        }
        if self.pairing == Pairing::SendAligned { self.close_complete(now); }
        if self.pairing == Pairing::Literal {
            let d = (self.arrived.1 > 0).then(|| self.arrived.0 / self.arrived.1 as f64);
            self.arrived = (0.0, 0);
            // pair the OWDs of this controller epoch with the rate of the same epoch
            let (mut s, mut sent) = (0.0, false);
            while self.first <= last && !self.pending.is_empty() {
                let e = self.pending.pop_front().unwrap_or_default();
                let r = self.rate_of(&e);
                if self.first == last { s = r; sent = e.bytes > 0; }
                self.first += 1;
            }
            if self.pending.is_empty() && self.first <= last { self.first = last + 1; }
            // literal pairing: the OWDs that arrived now belong to packets sent about one
            // feedback delay earlier; take the epoch's start as a lower bound
            let start = self.t0 + Duration::from_us(last as i64 * self.epoch.as_us());
            self.record(s, d, sent, start);
        }
    }
}

/// Eq. 5: `T_c,i = T_c,i−1 + δ·(T_A − D_ave,i)` (ms).
pub fn setpoint_step(t_c: f64, t_a: f64, d_ave: f64, delta: f64) -> f64 { t_c + delta * (t_a - d_ave) }

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode { Startup, Bayesian }

/// The LCC controller.
pub struct Lcc {
    cfg: LccConfig,
    constraints: Constraints,
    clock: EpochClock,
    tracker: Option<Tracker>,
    mode: Mode,
    rate: Bitrate,
    kde: Option<Kde>,
    last_fit: Option<Time>,
    t_c: Option<f64>,
    t_a: Option<f64>,
    backoffs: u64,
    explorations: u64,
    last_backoff: Option<Time>,
}

impl Lcc {
    pub fn new(cfg: LccConfig) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let epoch = Duration::from_ms_f64(cfg.epoch_ms);
        Ok(Lcc {
            cfg, constraints: Constraints::default(), clock: EpochClock::new(epoch), tracker: None, mode: Mode::Startup,
            rate: Constraints::default().start_rate, kde: None, last_fit: None,
            t_c: None, t_a: None, backoffs: 0, explorations: 0, last_backoff: None,
        })
    }

    fn clamp(&self, r: f64) -> Bitrate {
        let r = if r.is_finite() { r } else { self.rate.bps_f64() };
        Bitrate::from_bps_f64(r).max(self.constraints.min_rate).min(self.constraints.max_rate)
    }

    fn refit(&mut self, now: Time) {
        let Some(tr) = &self.tracker else { return };
        if tr.pairs.len() < self.cfg.min_pairs { return; }
        let pairs: Vec<(f64, f64)> = tr.pairs.iter().copied().collect();
        let rule = BandwidthRule { scale: self.cfg.bandwidth_scale, min_d_ms: self.cfg.min_bandwidth_ms, min_s_kbps: 1.0 };
        if let Some(k) = Kde::fit(&pairs, rule) {
            self.kde = Some(if self.cfg.kernel == Kernel::Full { k.with_data_correlation(true) } else { k });
            self.last_fit = Some(now);
        }
    }

    /// Bounds for `T_c` under the configured clamp.
    fn tc_bounds(&self, d_min: f64, t_a: f64) -> (f64, f64) {
        let band = (d_min, self.cfg.exorbitant_ratio * t_a);
        match (self.cfg.tc_clamp, &self.kde) {
            (TcClamp::None, _) => (f64::NEG_INFINITY, f64::INFINITY),
            (TcClamp::Band, _) | (TcClamp::Data, None) => band,
            (TcClamp::Data, Some(k)) => {
                let (lo, hi) = k.delay_range();
                let (lo, hi) = ((lo - k.h_d).max(band.0), (hi + k.h_d).min(band.1));
                if lo <= hi { (lo, hi) } else { band }
            }
        }
    }

    /// One epoch decision (spec 3.4 steps 5–9).
    fn decide(&mut self, now: Time) {
        let Some(tr) = &self.tracker else { return };
        let (d_min, d_ave) = match (tr.d_min, tr.d_ave) { (Some(m), Some(a)) => (m, a), _ => (f64::NAN, f64::NAN) };
        let fresh = tr.last_feedback.is_some_and(|t| now - t <= Duration::from_secs(1));
        let n_pairs = tr.pairs.len();
        if !d_min.is_finite() || !d_ave.is_finite() {
            // no delay information yet: start-up growth only while feedback flows
            if self.mode == Mode::Startup && fresh { self.rate = self.clamp(self.rate.bps_f64() * self.cfg.startup_growth); }
            return;
        }
        let t_a = d_min + self.cfg.target_offset_ms;
        self.t_a = Some(t_a);
        if self.mode == Mode::Startup {
            if d_ave <= t_a {
                if fresh { self.rate = self.clamp(self.rate.bps_f64() * self.cfg.startup_growth); }
                return;
            }
            self.mode = Mode::Bayesian;
            self.t_c = Some(t_a);
            self.kde = None;
        }
        if self.kde.is_none() || self.last_fit.is_none_or(|t| now - t >= Duration::from_ms_f64(self.cfg.refit_interval_ms)) {
            self.refit(now);
        }
        // Eq. 5, with the configured anti-windup bounds
        let (lo, hi) = self.tc_bounds(d_min, t_a);
        let raw = setpoint_step(self.t_c.unwrap_or(t_a), t_a, d_ave, self.cfg.delta);
        let t_c = raw.clamp(lo, hi);
        self.t_c = Some(t_c);
        // T_c asks for more (less) delay than any recorded rate produced — it passed the top
        // (bottom) of the data or the clamp — so the KDE cannot answer: explore upward
        // (downward) from the current rate (not in the paper, `explore_gain`)
        let (edge_lo, edge_hi) = match &self.kde {
            Some(k) => { let (a, b) = k.delay_range(); ((a - k.h_d).max(lo), (b + k.h_d).min(hi)) }
            None => (lo, hi),
        };
        let g = self.cfg.explore_gain;
        let explore = if g > 0.0 && d_ave < t_a && raw >= edge_hi { 1.0 + g } else if g > 0.0 && d_ave > t_a && raw <= edge_lo { 1.0 - g } else { 0.0 };
        if d_ave > self.cfg.exorbitant_ratio * t_a {
            // Eq. 8 (optionally once until its effect can be seen)
            let seen = match (self.last_backoff, self.tracker.as_ref().and_then(|t| t.observed_since)) {
                (Some(b), Some(o)) => o >= b,
                (Some(_), None) => false,
                (None, _) => true,
            };
            if !self.cfg.backoff_once_per_rtt || seen {
                self.backoffs += 1;
                self.last_backoff = Some(now);
                self.rate = self.clamp(self.rate.bps_f64() * self.cfg.backoff);
            }
            return;
        }
        if n_pairs < self.cfg.min_pairs { return; }
        if let Some(s) = self.kde.as_ref().and_then(|k| k.conditional_mean(t_c)) {
            let cur = self.rate.kbps_f64();
            self.rate = if explore > 1.0 {
                self.explorations += 1;
                self.clamp(s.max(cur) * 1e3 * explore)
            } else if explore > 0.0 {
                self.explorations += 1;
                self.clamp(s.min(cur) * 1e3 * explore)
            } else {
                self.clamp(s * 1e3)
            };
        }
    }

    pub fn t_c_ms(&self) -> Option<f64> { self.t_c }
    pub fn d_ave_ms(&self) -> Option<f64> { self.tracker.as_ref().and_then(|t| t.d_ave) }
    pub fn in_startup(&self) -> bool { self.mode == Mode::Startup }
    pub fn backoff_count(&self) -> u64 { self.backoffs }
    pub fn exploration_count(&self) -> u64 { self.explorations }
    pub fn kde(&self) -> Option<&Kde> { self.kde.as_ref() }
    pub fn tracker(&self) -> Option<&Tracker> { self.tracker.as_ref() }
}

impl EpochController for Lcc {
    fn clock(&self) -> &EpochClock { &self.clock }
    fn clock_mut(&mut self) -> &mut EpochClock { &mut self.clock }
    fn rate_and_constraints(&mut self) -> (&mut Bitrate, &mut Constraints) { (&mut self.rate, &mut self.constraints) }

    fn start(&mut self, now: Time, c: Constraints) {
        self.constraints = c;
        self.rate = c.start_rate.max(c.min_rate).min(c.max_rate);
        let n = (self.cfg.rate_window_ms / self.cfg.epoch_ms).round().max(1.0) as usize;
        self.tracker = Some(Tracker::new(now, self.clock.epoch, self.cfg.alpha, self.cfg.window, self.cfg.pairing, self.cfg.rate_source).with_rate_epochs(n));
    }

    fn packet_sent(&mut self, p: &SentPacket) {
        let rate = self.rate;
        if let Some(t) = &mut self.tracker { t.on_sent(p, rate); }
    }

    fn feedback(&mut self, fb: &TransportFeedback) {
        if let Some(t) = &mut self.tracker { t.on_feedback(fb); }
    }

    fn end_epoch(&mut self, now: Time) {
        if let Some(t) = &mut self.tracker { t.on_epoch_end(now); }
        self.decide(now);
    }

    fn output(&self) -> Update { Update::rates(self.rate, self.cfg.pacing_factor) }

    fn epoch_diagnostics(&self, out: &mut Diagnostics) {
        if let Some(t) = self.t_c { out.push(("lcc_t_c_ms", t)); }
        if let Some(t) = self.t_a { out.push(("lcc_t_a_ms", t)); }
        if let Some(d) = self.d_ave_ms() { out.push(("lcc_d_ave_ms", d)); }
        if let Some(k) = &self.kde { out.push(("lcc_h_d_ms", k.h_d)); }
    }
}

#[cfg(test)]
mod tests;
