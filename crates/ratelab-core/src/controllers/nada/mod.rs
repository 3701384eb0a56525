//! `nada` — NADA (RFC 8698, spec section 8) and `nadar` — NADA with a ProbeRTT state
//! (paper 002, spec 8.5).
//!
//! The lab's transport feedback gives the sender every packet's one-way delay and loss, so the
//! receiver-side part of RFC 8698 (§4.2: queuing delay, 15-tap minimum filter, loss ratio,
//! non-linear warping, aggregate congestion signal `x_curr`, receive rate over LOGWIN, ramp-up
//! mode) is computed at the sender from each feedback; the sender part (§4.3 reference rate,
//! §5.2 `r_vin`/`r_send`) runs on the result. The RFC's "feedback interval" `δ` is the time since
//! the last rate update; an update is applied when at least `min_update_fraction × DELTA` has
//! elapsed (the cisco reference code's 50 %), less a jitter slack (`update_slack_ms`, ⚙).
//!
//! Sender output (RFC 8698 §5.2): `r_vin = max(RMIN, r_ref − BETA_V·8·L_s·FPS)` to the encoder,
//! `r_send = min(RMAX, r_ref + BETA_S·8·L_s·FPS)` to the pacer (× `pacing_factor`), with `L_s` the
//! pacer-queue bytes the simulator reports through [`Controller::on_sender_queue`]. The defaults
//! follow the cisco reference code (`BETA_V = BETA_S = 0`, so target = send rate = `r_ref`); the
//! RFC's 0.1 / 0.1 are parameters.
//!
//! NADAR (spec 8.5, ⚙ reconstructed where noted): `d_base` is a minimum that must be re-sampled
//! (a sample ≤ `d_base + tolerance`) at least every `base_delay_window_ms`; otherwise the flow
//! enters ProbeRTT: rate × `probe_rtt_rate_factor` for `max(probe_rtt_min_ms, srtt)`, then the
//! rate is restored and `d_base` is replaced by the minimum OWD of the packets sent during the
//! probe once their feedback is in. See `docs/controllers/nada.md`.

use super::common::{feedback_rtt, RateMeter};
use crate::controller::{Constraints, Controller, Diagnostics, TransportFeedback, Update};
use crate::units::{Bitrate, Bytes, Duration, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// NADA / NADAR parameters. Defaults: RFC 8698 (spec 8.4); `nadar` changes only `probe_rtt`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NadaConfig {
    /// PRIO, weight of the flow (spec 8.4: 1.0).
    pub prio: f64,
    /// RMIN in kbit/s; unset: the flow's minimum rate constraint (spec 8.4: per scenario).
    pub rmin_kbps: Option<f64>,
    /// RMAX in kbit/s; unset: the flow's maximum rate constraint (spec 8.3: the link/app maximum;
    /// the equilibrium queuing delay is `N·XREF·RMAX/C`).
    pub rmax_kbps: Option<f64>,
    /// Initial `r_ref` in kbit/s; unset: the flow's start rate (cisco: RINIT = 150).
    pub start_kbps: Option<f64>,
    /// XREF, reference congestion level in ms (spec 8.4: 10).
    pub xref_ms: f64,
    /// KAPPA, scaling of the gradual update (spec 8.4: 0.5).
    pub kappa: f64,
    /// ETA, scaling of the derivative term (spec 8.4: 2.0).
    pub eta: f64,
    /// TAU, upper bound of the RTT in the gradual update, ms (spec 8.4: 500).
    pub tau_ms: f64,
    /// DELTA, target update interval in ms (spec 8.4: 100).
    pub delta_ms: f64,
    /// Apply a rate update once this fraction of DELTA has passed (spec 8.1, cisco: 0.5).
    pub min_update_fraction: f64,
    /// Timing slack of that test, ms (⚙ lab choice, not in RFC 8698 or cisco): a feedback that
    /// arrives up to this much before `min_update_fraction × DELTA` has passed still updates.
    /// Without it the default TWCC interval (50 ms) sits exactly on the default threshold
    /// (50 % of 100 ms): the simulator's reports arrive exactly 50.000 ms apart and all update,
    /// while on a real clock µs of jitter skip about 40 % of them (fewer accelerated ramp-up
    /// steps; 12 ms less queue on `trace-4g-700kbps` live than simulated, docs/live.md).
    pub update_slack_ms: f64,
    /// LOGWIN, observation window for the receive rate and the ramp-up test, ms (spec 8.4: 500).
    pub logwin_ms: f64,
    /// QEPS, queuing-delay bound of accelerated ramp-up, ms (spec 8.4: 10).
    pub qeps_ms: f64,
    /// DFILT, bound on the filtering delay in the ramp-up factor, ms (spec 8.4: 120).
    pub dfilt_ms: f64,
    /// GAMMA_MAX, cap of the ramp-up factor: 0.1 in RFC 8698, 0.5 in cisco/ns3-rmcat (spec 8.4 ⚠).
    pub gamma_max: f64,
    /// QBOUND, bound on self-inflicted queuing delay during ramp-up, ms (spec 8.4: 50).
    pub qbound_ms: f64,
    /// MULTILOSS, loss-expiration multiplier of the mean loss interval (spec 8.4: 7).
    pub multiloss: f64,
    /// QTH, delay threshold of the non-linear warping, ms (spec 8.4: 50).
    pub qth_ms: f64,
    /// LAMBDA, exponent scale of the warping (spec 8.4: 0.5).
    pub lambda: f64,
    /// PLRREF, reference packet-loss ratio (spec 8.4: 0.01).
    pub plrref: f64,
    /// DLOSS, delay penalty at PLRREF, ms (spec 8.4: 10).
    pub dloss_ms: f64,
    /// ALPHA, EWMA gain of the loss ratio (spec 8.4: 0.1).
    pub alpha: f64,
    /// XMAX, clip of the aggregate signal, ms (spec 8.2, cisco: 500).
    pub xmax_ms: f64,
    /// Taps of the minimum filter on the queuing delay (spec 8.2, cisco: 15).
    pub min_filter_taps: usize,
    /// BETA_V, encoder-rate reduction per byte of sender queue (RFC 8698 §5.2: 0.1; cisco
    /// reference and default here: 0 — with the lab's 300 ms encoder lag the RFC values drive a
    /// 3 s limit cycle, see docs/controllers/nada.md).
    pub beta_v: f64,
    /// BETA_S, send-rate increase per byte of sender queue (RFC 8698 §5.2: 0.1; cisco and default: 0).
    pub beta_s: f64,
    /// FPS in the `r_vin`/`r_send` formulas (spec 8.4: 30).
    pub fps: f64,
    /// Pacing rate = `pacing_factor × r_send` (1.0: exactly the RFC's sending rate).
    pub pacing_factor: f64,
    /// NADAR: re-sample `d_base` with a ProbeRTT state (spec 8.5). Off for `nada`, on for `nadar`.
    pub probe_rtt: bool,
    /// NADAR: enter ProbeRTT when `d_base` was not re-sampled for this long, ms (paper: 10 s).
    pub base_delay_window_ms: f64,
    /// NADAR: a sample re-samples `d_base` if it is ≤ `d_base` + this, ms (✗ spec 8.5: 0).
    pub base_delay_tolerance_ms: f64,
    /// NADAR: minimum ProbeRTT duration, ms (⚠ spec 8.5: BBR's 200; the duration is
    /// `max(this, srtt)`).
    pub probe_rtt_min_ms: f64,
    /// NADAR: rate factor during ProbeRTT (paper: "cuts its rate by half").
    pub probe_rtt_rate_factor: f64,
    /// NADAR: restore `r_ref` to its pre-ProbeRTT value afterwards (⚠ spec 8.5: restore); false
    /// continues from the halved rate.
    pub probe_rtt_restore: bool,
}

impl Default for NadaConfig {
    fn default() -> Self {
        NadaConfig {
            prio: 1.0, rmin_kbps: None, rmax_kbps: None, start_kbps: None,
            xref_ms: 10.0, kappa: 0.5, eta: 2.0, tau_ms: 500.0, delta_ms: 100.0, min_update_fraction: 0.5, update_slack_ms: 5.0,
            logwin_ms: 500.0, qeps_ms: 10.0, dfilt_ms: 120.0, gamma_max: 0.1, qbound_ms: 50.0,
            multiloss: 7.0, qth_ms: 50.0, lambda: 0.5, plrref: 0.01, dloss_ms: 10.0, alpha: 0.1,
            xmax_ms: 500.0, min_filter_taps: 15, beta_v: 0.0, beta_s: 0.0, fps: 30.0, pacing_factor: 1.0,
            probe_rtt: false, base_delay_window_ms: 10_000.0, base_delay_tolerance_ms: 0.0,
            probe_rtt_min_ms: 200.0, probe_rtt_rate_factor: 0.5, probe_rtt_restore: true,
        }
    }
}

impl NadaConfig {
    /// NADAR defaults: NADA with ProbeRTT (spec 8.5).
    pub fn nadar() -> Self { NadaConfig { probe_rtt: true, ..NadaConfig::default() } }
}

/// Overlay user parameters on a defaults object (used to give `nadar` its own defaults while
/// keeping one typed parameter struct). A non-object `params` is passed through unchanged so
/// that the type error names it.
pub fn overlay_params(defaults: serde_json::Value, params: &serde_json::Value) -> serde_json::Value {
    match (defaults, params) {
        (d, serde_json::Value::Null) => d,
        (serde_json::Value::Object(mut d), serde_json::Value::Object(p)) => {
            for (k, v) in p { d.insert(k.clone(), v.clone()); }
            serde_json::Value::Object(d)
        }
        (_, p) => p.clone(),
    }
}

// ---------------------------------------------------------------------------------------------
// The RFC 8698 equations as pure functions (units: ms for delays, bit/s for rates).

/// Non-linear warping of the queuing delay (RFC 8698 §4.2, spec 8.2 step 3):
/// `d` below QTH unchanged, else `QTH·exp(−LAMBDA·(d − QTH)/QTH)`.
pub fn warp(d_queue_ms: f64, qth_ms: f64, lambda: f64) -> f64 {
    if d_queue_ms < qth_ms { d_queue_ms } else { qth_ms * (-lambda * (d_queue_ms - qth_ms) / qth_ms).exp() }
}

/// Aggregate congestion signal (RFC 8698 §4.2, spec 8.2 step 5) without ECN marking:
/// `x = min(XMAX, d_tilde + DLOSS·(p_loss/PLRREF)²)`.
pub fn aggregate(d_tilde_ms: f64, p_loss: f64, cfg: &NadaConfig) -> f64 {
    let plr = if cfg.plrref > 0.0 { p_loss / cfg.plrref } else { 0.0 };
    (d_tilde_ms + cfg.dloss_ms * plr * plr).min(cfg.xmax_ms)
}

/// Accelerated ramp-up (RFC 8698 §4.3 Eq. 3–4): `γ = min(GAMMA_MAX, QBOUND/(rtt+DELTA+DFILT))`,
/// `r_ref = max(r_ref, (1+γ)·r_recv)`.
pub fn ramp_up(r_ref: f64, r_recv: f64, rtt_ms: f64, cfg: &NadaConfig) -> f64 {
    let gamma = cfg.gamma_max.min(cfg.qbound_ms / (rtt_ms.max(0.0) + cfg.delta_ms + cfg.dfilt_ms));
    r_ref.max((1.0 + gamma) * r_recv)
}

/// Gradual update (RFC 8698 §4.3 Eq. 5–7): `x_offset = x_curr − PRIO·XREF·RMAX/r_ref`,
/// `x_diff = x_curr − x_prev`,
/// `r_ref ← r_ref − KAPPA·(δ/TAU)·(x_offset/TAU)·r_ref − KAPPA·ETA·(x_diff/TAU)·r_ref`.
pub fn gradual_update(r_ref: f64, x_curr_ms: f64, x_prev_ms: f64, delta_ms: f64, rmax: f64, cfg: &NadaConfig) -> f64 {
    let r = r_ref.max(1.0);
    let x_offset = x_curr_ms - cfg.prio * cfg.xref_ms * rmax / r;
    let x_diff = x_curr_ms - x_prev_ms;
    let tau = cfg.tau_ms;
    r - cfg.kappa * (delta_ms / tau) * (x_offset / tau) * r - cfg.kappa * cfg.eta * (x_diff / tau) * r
}

/// TFRC weights of the last 8 loss intervals (RFC 5348 §5.4; cisco's average loss interval).
const LOSS_INTERVAL_WEIGHTS: [f64; 8] = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateMode { RampUp, Gradual }

#[derive(Clone, Copy, Debug, PartialEq)]
enum Probe {
    /// Sending at the reduced rate until `until`.
    Drain { start: Time, until: Time, saved: f64, min_owd: Option<Duration> },
    /// Rate restored; waiting for the feedback of the last packet sent before `until`.
    Measure { start: Time, until: Time, min_owd: Option<Duration>, deadline: Time },
}

/// The NADA / NADAR controller.
pub struct Nada {
    cfg: NadaConfig,
    rmin: f64,
    rmax: f64,
    lo: Bitrate,
    hi: Bitrate,
    r_ref: f64,
    x_curr: f64,
    x_prev: f64,
    mode: RateMode,
    last_update: Option<Time>,
    /// `d_base` (raw OWD) and when it was last re-sampled (NADAR).
    d_base: Option<Duration>,
    base_stamp: Time,
    /// Last `min_filter_taps` raw OWDs; `d_queue` is their minimum minus `d_base`.
    taps: VecDeque<Duration>,
    d_queue: f64,
    /// (arrival, filtered queuing delay in ms) over LOGWIN, for the ramp-up test.
    qlog: VecDeque<(Time, f64)>,
    p_loss: f64,
    last_loss: Option<Time>,
    pkts_since_loss: u64,
    loss_intervals: VecDeque<u64>,
    recv: RateMeter,
    first_recv: Option<(Time, Bytes)>,
    last_recv: Option<Time>,
    srtt: Option<Duration>,
    queue: Bytes,
    probe: Option<Probe>,
    probes_done: u32,
}

impl Nada {
    pub fn new(cfg: NadaConfig) -> Self {
        let logwin = Duration::from_ms_f64(cfg.logwin_ms.max(1.0));
        Nada {
            rmin: 150e3, rmax: 1.5e6, lo: Bitrate::ZERO, hi: Bitrate::INFINITY, r_ref: 150e3,
            x_curr: 0.0, x_prev: 0.0, mode: RateMode::Gradual, last_update: None,
            d_base: None, base_stamp: Time::ZERO, taps: VecDeque::new(), d_queue: 0.0, qlog: VecDeque::new(),
            p_loss: 0.0, last_loss: None, pkts_since_loss: 0, loss_intervals: VecDeque::new(),
            recv: RateMeter::new(logwin), first_recv: None, last_recv: None, srtt: None,
            queue: Bytes::ZERO, probe: None, probes_done: 0, cfg,
        }
    }

    pub fn r_ref(&self) -> Bitrate { Bitrate::from_bps_f64(self.r_ref) }
    pub fn x_curr_ms(&self) -> f64 { self.x_curr }
    pub fn mode(&self) -> RateMode { self.mode }
    pub fn d_base(&self) -> Option<Duration> { self.d_base }
    pub fn in_probe_rtt(&self) -> bool { matches!(self.probe, Some(Probe::Drain { .. })) }
    pub fn probes_done(&self) -> u32 { self.probes_done }

    fn ms(d: Duration) -> f64 { d.as_ms_f64() }

    /// Mean loss interval in packets (TFRC weighting of the last 8 intervals).
    fn mean_loss_interval(&self) -> Option<f64> {
        if self.loss_intervals.is_empty() { return None; }
        let (mut num, mut den) = (0.0, 0.0);
        for (i, &n) in self.loss_intervals.iter().rev().enumerate() {
            num += LOSS_INTERVAL_WEIGHTS[i] * n as f64;
            den += LOSS_INTERVAL_WEIGHTS[i];
        }
        Some((num / den).max(1.0))
    }

    /// `d_tilde`: warped while the last loss is recent (fewer packets since than MULTILOSS × the
    /// mean loss interval), blended back to the raw value over one further mean interval (spec 8.2).
    fn d_tilde(&self) -> f64 {
        let raw = self.d_queue;
        let Some(li) = self.mean_loss_interval() else { return raw };
        let warped = warp(raw, self.cfg.qth_ms, self.cfg.lambda);
        let n = self.pkts_since_loss as f64;
        let expire = self.cfg.multiloss * li;
        if n < expire { warped } else if n < expire + li { let w = (n - expire) / li; (1.0 - w) * warped + w * raw } else { raw }
    }

    /// `r_recv`: bytes received over the last LOGWIN (by arrival time) / LOGWIN. While less than
    /// one window has passed since the first arrival, the bytes after the first packet divided by
    /// the time since it.
    fn recv_rate(&mut self) -> f64 {
        let (Some((first, first_size)), Some(last)) = (self.first_recv, self.last_recv) else { return 0.0 };
        let window = Duration::from_ms_f64(self.cfg.logwin_ms.max(1.0));
        let r = self.recv.rate(last).bps_f64();
        if last - first >= window { return r; }
        if last <= first { return 0.0; }
        let bits = r * window.as_secs_f64() - first_size.bits() as f64;
        bits.max(0.0) / (last - first).as_secs_f64()
    }

    fn ramp_up_allowed(&self, now: Time) -> bool {
        let logwin = Duration::from_ms_f64(self.cfg.logwin_ms);
        if self.last_loss.is_some_and(|t| now - t < logwin) { return false; }
        !self.qlog.is_empty() && self.qlog.iter().all(|(_, q)| *q < self.cfg.qeps_ms)
    }

    fn outputs(&self) -> Update {
        let ls_bits = self.queue.bits() as f64;
        let mut r = self.r_ref;
        if let Some(Probe::Drain { .. }) = self.probe { r *= self.cfg.probe_rtt_rate_factor.clamp(0.0, 1.0); }
        let r_vin = (r - self.cfg.beta_v * ls_bits * self.cfg.fps).max(self.rmin);
        let r_send = (r + self.cfg.beta_s * ls_bits * self.cfg.fps).min(self.rmax.max(r));
        let target = Bitrate::from_bps_f64(r_vin).max(self.lo).min(self.hi);
        let pacing = Bitrate::from_bps_f64(r_send * self.cfg.pacing_factor.max(0.1)).max(Bitrate::from_kbps(10));
        Update { target_rate: Some(target), pacing_rate: Some(pacing), ..Update::default() }
    }

    fn probe_duration(&self) -> Duration {
        let min = Duration::from_ms_f64(self.cfg.probe_rtt_min_ms.max(0.0));
        self.srtt.map_or(min, |s| s.max(min))
    }

    /// Time-driven ProbeRTT transitions (entry, end of the drain phase, measurement timeout).
    fn advance_probe(&mut self, now: Time) -> bool {
        if !self.cfg.probe_rtt { return false; }
        match self.probe {
            None => {
                let window = Duration::from_ms_f64(self.cfg.base_delay_window_ms.max(1.0));
                if self.d_base.is_some() && now - self.base_stamp > window {
                    let until = now + self.probe_duration();
                    self.probe = Some(Probe::Drain { start: now, until, saved: self.r_ref, min_owd: None });
                    return true;
                }
                false
            }
            Some(Probe::Drain { start, until, saved, min_owd }) if now >= until => {
                let r = if self.cfg.probe_rtt_restore { saved } else { saved * self.cfg.probe_rtt_rate_factor.clamp(0.0, 1.0) };
                self.r_ref = r.clamp(self.rmin, self.rmax);
                let deadline = until + self.srtt.unwrap_or(Duration::from_ms(200)) * 4 + Duration::from_secs(1);
                self.probe = Some(Probe::Measure { start, until, min_owd, deadline });
                true
            }
            Some(Probe::Measure { min_owd, deadline, .. }) if now >= deadline => {
                self.finish_probe(now, min_owd);
                false
            }
            _ => false,
        }
    }

    fn finish_probe(&mut self, now: Time, min_owd: Option<Duration>) {
        if let Some(m) = min_owd { self.d_base = Some(m); }
        self.base_stamp = now;
        self.probe = None;
        self.probes_done += 1;
        self.d_queue = self.filtered_queue();
        self.x_curr = aggregate(self.d_tilde(), self.p_loss, &self.cfg);
        // the base changed: start the derivative term afresh
        self.x_prev = self.x_curr;
        self.last_update = Some(now);
    }

    fn filtered_queue(&self) -> f64 {
        match (self.taps.iter().min(), self.d_base) {
            (Some(&m), Some(b)) => Self::ms(m - b).max(0.0),
            _ => 0.0,
        }
    }

    fn on_owd(&mut self, now: Time, sent: Time, owd: Duration) {
        // ProbeRTT measurement: packets sent during the drain phase
        match &mut self.probe {
            Some(Probe::Drain { start, min_owd, .. }) if sent >= *start => { *min_owd = Some(min_owd.map_or(owd, |m| m.min(owd))); }
            Some(Probe::Measure { start, until, min_owd, .. }) if sent >= *start && sent < *until => { *min_owd = Some(min_owd.map_or(owd, |m| m.min(owd))); }
            _ => {}
        }
        let tol = Duration::from_ms_f64(self.cfg.base_delay_tolerance_ms.max(0.0));
        match self.d_base {
            None => { self.d_base = Some(owd); self.base_stamp = now; }
            Some(b) => {
                if owd <= b + tol { self.base_stamp = now; }
                if owd < b { self.d_base = Some(owd);}
            }
        }
        self.taps.push_back(owd);
        while self.taps.len() > self.cfg.min_filter_taps.max(1) { self.taps.pop_front(); }
    }
}

impl Controller for Nada {
    fn on_start(&mut self, now: Time, c: Constraints) -> Update {
        self.lo = c.min_rate;
        self.hi = c.max_rate.max(c.min_rate);
        self.rmin = self.cfg.rmin_kbps.map_or(c.min_rate.bps_f64(), |k| k * 1e3).max(1e3);
        self.rmax = self.cfg.rmax_kbps.map_or(c.max_rate.bps_f64(), |k| k * 1e3).max(self.rmin);
        let start = self.cfg.start_kbps.map_or(c.start_rate.bps_f64(), |k| k * 1e3);
        self.r_ref = if start.is_finite() { start.clamp(self.rmin, self.rmax) } else { self.rmin };
        self.base_stamp = now;
        self.outputs()
    }

    fn on_constraints(&mut self, _now: Time, c: Constraints) -> Update {
        self.lo = c.min_rate;
        self.hi = c.max_rate.max(c.min_rate);
        if self.cfg.rmin_kbps.is_none() { self.rmin = c.min_rate.bps_f64().max(1e3); }
        if self.cfg.rmax_kbps.is_none() { self.rmax = c.max_rate.bps_f64().max(self.rmin); }
        self.r_ref = self.r_ref.clamp(self.rmin, self.rmax);
        self.outputs()
    }

    fn on_sender_queue(&mut self, _now: Time, queue: Bytes) -> Update {
        let changed = queue != self.queue;
        self.queue = queue;
        if changed && (self.cfg.beta_v != 0.0 || self.cfg.beta_s != 0.0) { self.outputs() } else { Update::default() }
    }

    fn on_feedback(&mut self, fb: &TransportFeedback) -> Update {
        let now = fb.feedback_time;
        if fb.packets.is_empty() { return Update::default(); }
        // --- receiver-side statistics (RFC 8698 §4.2) ---
        let (mut lost, mut got) = (0u64, 0u64);
        let mut in_loss_run = false;
        for p in &fb.packets {
            if p.received() {
                got += 1;
                self.pkts_since_loss += 1;
                in_loss_run = false;
            } else {
                lost += 1;
                if !in_loss_run && (self.pkts_since_loss > 0 || self.loss_intervals.is_empty()) {
                    self.loss_intervals.push_back(self.pkts_since_loss.max(1));
                    while self.loss_intervals.len() > LOSS_INTERVAL_WEIGHTS.len() { self.loss_intervals.pop_front(); }
                }
                self.pkts_since_loss = 0;
                in_loss_run = true;
            }
        }
        if lost > 0 { self.last_loss = Some(now); }
        let ratio = lost as f64 / (lost + got) as f64;
        self.p_loss = self.cfg.alpha * ratio + (1.0 - self.cfg.alpha) * self.p_loss;

        let logwin = Duration::from_ms_f64(self.cfg.logwin_ms.max(1.0));
        for p in fb.received_by_arrival() {
            let Some(r) = p.recv_time else { continue };
            self.on_owd(now, p.sent.send_time, r - p.sent.send_time);
            self.recv.add(r, p.sent.size);
            if self.first_recv.is_none() { self.first_recv = Some((r, p.sent.size)); }
            self.last_recv = Some(self.last_recv.map_or(r, |l| l.max(r)));
            let q = self.filtered_queue();
            self.qlog.push_back((r, q));
        }
        if let Some(last) = self.last_recv {
            while self.qlog.front().is_some_and(|(t, _)| last - *t > logwin) { self.qlog.pop_front(); }
        }
        if let Some(rtt) = feedback_rtt(fb) {
            let sample = rtt.exact.unwrap_or(rtt.propagation);
            self.srtt = Some(match self.srtt { None => sample, Some(s) => s * 0.875 + sample * 0.125 });
        }
        self.d_queue = self.filtered_queue();
        self.x_curr = aggregate(self.d_tilde(), self.p_loss, &self.cfg);

        // --- NADAR ProbeRTT bookkeeping ---
        if let Some(Probe::Measure { until, min_owd, .. }) = self.probe {
            if fb.packets.iter().any(|p| p.sent.send_time >= until) { self.finish_probe(now, min_owd); }
        }
        let probe_changed = self.advance_probe(now);
        if self.probe.is_some() { return if probe_changed { self.outputs() } else { Update::default() }; }

        // --- sender: reference rate (RFC 8698 §4.3) ---
        let delta_nominal = Duration::from_ms_f64(self.cfg.delta_ms.max(1.0));
        let elapsed = self.last_update.map(|t| now - t);
        let threshold = delta_nominal * self.cfg.min_update_fraction.clamp(0.0, 1.0);
        let threshold = threshold - Duration::from_ms_f64(self.cfg.update_slack_ms.max(0.0)).min(threshold);
        if elapsed.is_some_and(|e| e < threshold) {
            return if probe_changed { self.outputs() } else { Update::default() };
        }
        // δ: time since the last update (the nominal DELTA for the first), capped at TAU.
        let delta_ms = elapsed.map_or(self.cfg.delta_ms, Self::ms).min(self.cfg.tau_ms).max(0.0);
        let r_recv = self.recv_rate();
        if self.ramp_up_allowed(now) {
            self.mode = RateMode::RampUp;
            let rtt = self.srtt.map_or(0.0, Self::ms);
            self.r_ref = ramp_up(self.r_ref, r_recv, rtt, &self.cfg);
        } else {
            self.mode = RateMode::Gradual;
            self.r_ref = gradual_update(self.r_ref, self.x_curr, self.x_prev, delta_ms, self.rmax, &self.cfg);
        }
        if !self.r_ref.is_finite() { self.r_ref = self.rmin; }
        self.r_ref = self.r_ref.clamp(self.rmin, self.rmax);
        self.x_prev = self.x_curr;
        self.last_update = Some(now);
        self.outputs()
    }

    fn on_tick(&mut self, now: Time) -> Update {
        if self.advance_probe(now) { self.outputs() } else { Update::default() }
    }

    fn diagnostics(&self, out: &mut Diagnostics) {
        out.push(("nada_r_ref_kbps", self.r_ref / 1e3));
        out.push(("nada_x_curr_ms", self.x_curr));
        out.push(("nada_d_queue_ms", self.d_queue));
        out.push(("nada_p_loss", self.p_loss));
        out.push(("nada_ramp_up", (self.mode == RateMode::RampUp) as u8 as f64));
        out.push(("nada_d_base_ms", self.d_base.map_or(f64::NAN, Self::ms)));
        out.push(("nada_probe_rtt", self.in_probe_rtt() as u8 as f64));
    }
}

#[cfg(test)]
mod tests;
