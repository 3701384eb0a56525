//! `ratelab-cc`: ratelab's own controller for real (cellular, broadband) links (issue 15).
//!
//! A queue-target controller driven by two measurements taken from every transport feedback:
//!
//! * the **queuing delay** `q` = one-way delay − base delay, the base being the minimum one-way
//!   delay over [`RatelabCcConfig::base_window_s`] (sender and receiver clocks need not agree:
//!   only differences of one-way delays are used);
//! * the **delivery rate** `r`: bytes the receiver got over the last
//!   [`RatelabCcConfig::rate_window_ms`] of its own arrival timestamps (what the bottleneck
//!   actually carried for this flow).
//!
//! The target rate `x` follows (per second of feedback time `dt`), with `q` read
//! [`RatelabCcConfig::lookahead_ms`] ahead along its recent slope (the loop reacts a round trip
//! plus a feedback interval late; without the prediction it overshoots by a third and oscillates):
//!
//! * **recovery**: below the queue target (`q < q_t`) and below `recover_fraction` × the maximum
//!   delivery rate of the last `bw_window_s` (a BBR-style max filter), `x` grows at
//!   `recover_growth_per_s` (× (q_t − q)/q_t), capped at that fraction: after a fade or a
//!   ~200 ms outage (frequent in the 4G/5G traces), what the path just carried is regained in
//!   about half a second instead of being probed for again;
//! * **probing**: otherwise below the target, `dx = (x · G · (q_t − q)/q_t + A) · dt`: slow
//!   multiplicative growth that fades as the queue reaches its target, plus a constant additive
//!   term `A` that makes flows sharing a queue converge to equal rates (at equilibrium
//!   `x · G · (q − q_t)/q_t = A`, the same `x` for every flow that sees the same `q`), capped at
//!   `r · max_over_delivery` so that the target never runs far ahead of what the path delivers;
//! * **drain**: above the target, the rate that drains the excess queue in `drain_s` at the
//!   measured delivery rate, `x = r · (1 − (q − q_t)/drain_s)`, never below
//!   `r · min_drain_factor` and never raised by this rule. A capacity drop shows up in `r` one
//!   feedback later, so the cut is to the new capacity at once (the explicit capacity-drop
//!   response), not a slow multiplicative walk.
//!
//! Loss is not a congestion signal here (a drop-tail queue announces itself by delay first;
//! random loss of a lossy radio link must not cut the rate), except in the **competitive mode**
//! (`compete`), the answer to a loss-based flow (NewReno, RFC 8867 5.6) that holds the shared
//! queue. It is entered when *draining does not shrink the queue*: the drain rule has been active
//! for `compete_window_s` and yet the queue rose by `compete_rise_ms` while the delivery rate held
//! (a fading link loses delivery rate, a shared one does not). The base delay is not used (the
//! loss-based flow may hold the queue since before this flow started). In the mode the rate
//! follows loss as the other flow does (AIMD) for `compete_hold_s`, renewed while the queue shows
//! the other flow's sawtooth (a drop of `compete_renew_drop_ms` within a second that was not this
//! flow's own cut). The mode starts **on probation** (the [`probe`] module): its additive growth
//! is a probe of whether the delivery rate follows the send rate. On a shared FIFO it does
//! (each flow's share of the capacity is proportional to its arrival rate); on a link this flow
//! saturates alone (at its minimum rate, the queue rising because the capacity is barely above
//! it) it does not, and the mode is left and barred for `compete_bar_s`. The probe's rise is
//! capped (`compete_probe_rise`), and the mode is then re-verified every `compete_probe_s` for as
//! long as it lasts: over each round the flow's delivery rate must stay within
//! [`compete_min_delivery`, `compete_max_delivery`] × its *measured* send rate and it may lose at
//! most `compete_max_loss` of its bytes (a loss-based flow holding the queue keeps it standing at
//! ~1 % loss; a flow that overdrives a link alone loses a third of its bytes, a fading link's
//! queue drains). No entry at the minimum rate while the measured send rate overshoots it by
//! `compete_floor_overshoot`: "draining" at the floor is not draining.

use crate::controller::{Constraints, Controller, Diagnostics, TransportFeedback, Update};
use crate::controllers::common::{RateMeter, WindowedFilter};
use crate::error::ConfigError;
use crate::units::{Bitrate, Duration, Time};
use serde::{Deserialize, Serialize};

mod probe;
#[cfg(test)]
mod tests;

use probe::{Ledger, Probe};

/// Parameters (chosen on the training traces of `traces/split.csv`; see
/// docs/controllers/ratelab-cc.md for the sweep).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RatelabCcConfig {
    /// Queuing delay the controller aims to keep, ms: enough standing queue that the link never
    /// idles while the capacity wanders, small next to the 100-200 ms an interactive call tolerates.
    /// 23 ms: of 19-25 ms on the training traces of both trace sets (3 seeds), the value with the
    /// largest smaller margin to the goals (≥ 85 % utilization, p95 ≤ 1.2 × the oracle's).
    pub queue_target_ms: f64,
    /// Multiplicative growth rate G per second at an empty queue (1.0: ×e per second at most).
    pub growth_per_s: f64,
    /// Additive increase A in kbit/s per second: the fairness term (see module doc).
    pub additive_kbps_per_s: f64,
    /// Time in which the excess queue above the target is drained, s.
    pub drain_s: f64,
    /// Lowest cut in one step, as a fraction of the delivery rate.
    pub min_drain_factor: f64,
    /// The target may exceed the delivery rate by at most this factor.
    pub max_over_delivery: f64,
    /// Below `recover_fraction` × the recent maximum delivery rate, the growth rate is
    /// `recover_growth_per_s` instead of `growth_per_s` (capped at that maximum): what the path
    /// carried a moment ago is regained within about a second after a fade or an outage.
    pub recover_growth_per_s: f64,
    pub recover_fraction: f64,
    /// The rate law sees the queuing delay predicted this far ahead along its recent slope
    /// (0: no prediction), ms: the feedback loop is a round trip plus a feedback interval late.
    pub lookahead_ms: f64,
    /// Window of the delivery-rate maximum (BBR-style max filter), s.
    pub bw_window_s: f64,
    /// Window of the delivery-rate meter (receiver timestamps), ms.
    pub rate_window_ms: f64,
    /// Window of the base (minimum) one-way delay, s.
    pub base_window_s: f64,
    /// Competitive mode on/off (against loss-based cross traffic; module doc).
    pub compete: bool,
    /// The drain rule must have been active this long, with the queue still rising, s.
    pub compete_window_s: f64,
    /// ... by at least this much over the window, ms.
    pub compete_rise_ms: f64,
    /// ... while the delivery rate held at least this fraction of its value at the window's start.
    pub compete_rate_hold: f64,
    /// How long the competitive mode lasts once entered or renewed, s.
    pub compete_hold_s: f64,
    /// A queue drop of this much within one second, not caused by this flow's own loss cut,
    /// renews the mode (the loss-based flow's sawtooth), ms.
    pub compete_renew_drop_ms: f64,
    /// In competitive mode the rate follows loss as the TCP flow does (AIMD): `× compete_beta`
    /// on a feedback that reports a loss (at most once per `compete_cut_interval_ms`), else
    /// `+ compete_additive_kbps_per_s`. Delay no longer cuts the rate (the queue is the other flow's).
    pub compete_beta: f64,
    pub compete_cut_interval_ms: f64,
    pub compete_additive_kbps_per_s: f64,
    /// Probation of the mode, s: at its end the delivery rate must have risen by at least
    /// `compete_follow` × the rise of the send rate over the same time (0: no probation).
    pub compete_probe_s: f64,
    pub compete_follow: f64,
    /// After a failed probation the mode is barred this long, s.
    pub compete_bar_s: f64,
    /// The mode is re-verified every `compete_probe_s` while it lasts: over each such round its
    /// delivery rate must be at least this fraction of its measured send rate (0: no rounds).
    pub compete_min_delivery: f64,
    /// ... and at most this fraction of its measured send rate (0: no upper bound): a queue that
    /// drains over a whole round is not held by a loss-based flow.
    pub compete_max_delivery: f64,
    /// ... and the round may lose at most this fraction of the bytes it sent (1: no bound).
    pub compete_max_loss: f64,
    /// During the probation the target rises at most this fraction above its start (0: no cap):
    /// enough of a change to see whether the delivery rate follows, little harm where it does not.
    pub compete_probe_rise: f64,
    /// No entry while the target sits at the minimum rate and the measured send rate over the
    /// detection window exceeds it by this factor (0: off): an encoder that overshoots its floor
    /// fills a slow link by itself, and "draining" at the floor is not draining.
    pub compete_floor_overshoot: f64,
    /// Pacing rate = this × target (room for frame bursts).
    pub pacing_factor: f64,
}

impl Default for RatelabCcConfig {
    fn default() -> Self {
        RatelabCcConfig {
            queue_target_ms: 23.0,
            growth_per_s: 0.3,
            additive_kbps_per_s: 300.0,
            drain_s: 0.3,
            min_drain_factor: 0.5,
            max_over_delivery: 1.5,
            recover_growth_per_s: 6.0,
            recover_fraction: 0.9,
            bw_window_s: 3.0,
            lookahead_ms: 300.0,
            rate_window_ms: 300.0,
            base_window_s: 30.0,
            compete: true,
            compete_window_s: 3.0,
            compete_rise_ms: 20.0,
            compete_rate_hold: 1.0,
            compete_hold_s: 10.0,
            compete_renew_drop_ms: 50.0,
            compete_beta: 0.85,
            compete_cut_interval_ms: 500.0,
            compete_additive_kbps_per_s: 50.0,
            compete_probe_s: 5.0,
            compete_follow: 0.7,
            compete_bar_s: 30.0,
            compete_min_delivery: 0.9,
            compete_max_delivery: 1.1,
            compete_max_loss: 0.02,
            compete_probe_rise: 0.5,
            compete_floor_overshoot: 1.15,
            pacing_factor: 1.5,
        }
    }
}

impl RatelabCcConfig {
    fn check(&self) -> Result<(), ConfigError> {
        let pos = [("queue_target_ms", self.queue_target_ms), ("drain_s", self.drain_s), ("rate_window_ms", self.rate_window_ms),
                   ("base_window_s", self.base_window_s), ("compete_window_s", self.compete_window_s), ("pacing_factor", self.pacing_factor),
                   ("max_over_delivery", self.max_over_delivery)];
        for (name, v) in pos {
            if !(v.is_finite() && v > 0.0) { return Err(ConfigError::new(name, "must be a finite number > 0")); }
        }
        for (name, v) in [("growth_per_s", self.growth_per_s), ("recover_growth_per_s", self.recover_growth_per_s), ("bw_window_s", self.bw_window_s), ("recover_fraction", self.recover_fraction), ("lookahead_ms", self.lookahead_ms), ("additive_kbps_per_s", self.additive_kbps_per_s),
                           ("compete_rise_ms", self.compete_rise_ms), ("compete_rate_hold", self.compete_rate_hold), ("compete_hold_s", self.compete_hold_s),
                           ("compete_renew_drop_ms", self.compete_renew_drop_ms), ("compete_additive_kbps_per_s", self.compete_additive_kbps_per_s),
                           ("compete_probe_s", self.compete_probe_s), ("compete_follow", self.compete_follow), ("compete_bar_s", self.compete_bar_s),
                           ("compete_min_delivery", self.compete_min_delivery), ("compete_max_delivery", self.compete_max_delivery),
                           ("compete_max_loss", self.compete_max_loss), ("compete_probe_rise", self.compete_probe_rise),
                           ("compete_floor_overshoot", self.compete_floor_overshoot)] {
            if !(v.is_finite() && v >= 0.0) { return Err(ConfigError::new(name, "must be a finite number ≥ 0")); }
        }
        if !(self.compete_beta > 0.0 && self.compete_beta <= 1.0) {
            return Err(ConfigError::new("compete_beta", "must be in (0, 1]"));
        }
        if !(self.compete_cut_interval_ms.is_finite() && self.compete_cut_interval_ms >= 0.0) {
            return Err(ConfigError::new("compete_cut_interval_ms", "must be a finite number ≥ 0"));
        }
        if !(self.min_drain_factor > 0.0 && self.min_drain_factor <= 1.0) {
            return Err(ConfigError::new("min_drain_factor", "must be in (0, 1]"));
        }
        Ok(())
    }
}

pub struct RatelabCc {
    cfg: RatelabCcConfig,
    constraints: Constraints,
    /// Target rate, bit/s (f64: the additive term is a fraction of a bit per feedback).
    rate_bps: f64,
    delivered: RateMeter,
    /// Maximum delivery rate (bit/s) over `bw_window_s`.
    bw_max: WindowedFilter<i64>,
    /// Minimum one-way delay (recv − send, µs).
    base: WindowedFilter<i64>,
    /// Maximum queuing delay (µs) over the last second (the sawtooth renewal).
    q_max_1s: WindowedFilter<i64>,
    /// Start of the current drain episode: time, queuing delay (ms), delivery rate (bit/s).
    episode: Option<(Time, f64, f64)>,
    /// What the flow sent and delivered during the current drain episode.
    episode_ledger: Ledger,
    /// Last loss cut of the competitive mode, its end, its probation and its bar.
    last_cut: Option<Time>,
    compete_until: Option<Time>,
    probe: Option<Probe>,
    /// The current re-verification round of the mode: its start and its ledger.
    round: Option<(Time, Ledger)>,
    barred_until: Option<Time>,
    competitive: bool,
    last_update: Option<Time>,
    /// Previous queuing delay (ms) and the smoothed slope of the queuing delay (ms per ms).
    prev_queue_ms: Option<f64>,
    slope: f64,
    last_recv: Option<Time>,
    /// Last values, for diagnostics.
    queue_ms: f64,
    delivery_kbps: f64,
    target_ms: f64,
}

impl RatelabCc {
    pub fn new(cfg: RatelabCcConfig) -> Result<Self, ConfigError> {
        cfg.check()?;
        Ok(RatelabCc {
            delivered: RateMeter::new(Duration::from_ms_f64(cfg.rate_window_ms)),
            base: WindowedFilter::min(Duration::from_secs_f64(cfg.base_window_s)),
            bw_max: WindowedFilter::max(Duration::from_secs_f64(cfg.bw_window_s)),
            q_max_1s: WindowedFilter::max(Duration::from_secs(1)),
            episode: None,
            episode_ledger: Ledger::default(),
            last_cut: None,
            compete_until: None,
            probe: None,
            round: None,
            barred_until: None,
            competitive: false,
            cfg,
            constraints: Constraints::default(),
            rate_bps: 0.0,
            last_update: None,
            prev_queue_ms: None,
            slope: 0.0,
            last_recv: None,
            queue_ms: 0.0,
            delivery_kbps: 0.0,
            target_ms: 0.0,
        })
    }

    fn clamp(&self, bps: f64) -> f64 {
        bps.max(self.constraints.min_rate.bps_f64()).min(self.constraints.max_rate.bps_f64())
    }

    fn update(&self) -> Update { Update::rates(Bitrate::from_bps_f64(self.rate_bps), self.cfg.pacing_factor) }

    /// The rate law of the module doc, for one feedback: `q_ms` queuing delay, `r_bps` delivery
    /// rate, `target_ms` queue target, `dt` seconds since the previous update.
    fn step(&mut self, q_ms: f64, r_bps: f64, bw_max_bps: f64, target_ms: f64, dt: f64) {
        let c = &self.cfg;
        let x = self.rate_bps;
        let next = if q_ms <= target_ms && x < bw_max_bps * c.recover_fraction {
            // Regain the recently delivered rate quickly.
            (x * (1.0 + c.recover_growth_per_s * (target_ms - q_ms) / target_ms * dt)).min(bw_max_bps * c.recover_fraction)
        } else if q_ms <= target_ms {
            let grown = x + (x * c.growth_per_s * (target_ms - q_ms) / target_ms + c.additive_kbps_per_s * 1e3) * dt;
            // Never run ahead of what the path delivers (but never cut by this rule either).
            grown.min((r_bps * c.max_over_delivery).max(x))
        } else {
            let drain = (1.0 - (q_ms - target_ms) / (c.drain_s * 1e3)).max(c.min_drain_factor);
            x.min(r_bps * drain)
        };
        self.rate_bps = self.clamp(next);
    }

    /// Competitive mode: AIMD on loss, as the loss-based flow that holds the queue.
    fn compete_step(&mut self, now: Time, lost: bool, r_bps: f64, dt: f64) {
        let c = &self.cfg;
        let x = self.rate_bps;
        let cut_ok = self.last_cut.is_none_or(|t| (now - t).as_ms_f64() >= c.compete_cut_interval_ms);
        let next = if lost && cut_ok {
            self.last_cut = Some(now);
            x * c.compete_beta
        } else {
            let cap = match self.probe.as_ref() {
                Some(p) if c.compete_probe_rise > 0.0 => p.start_rate() * (1.0 + c.compete_probe_rise),
                _ => f64::INFINITY,
            };
            (x + c.compete_additive_kbps_per_s * 1e3 * dt).min((r_bps * c.max_over_delivery).max(x)).min(cap.max(x))
        };
        self.rate_bps = self.clamp(next);
    }

    /// Enters, renews, probes and leaves the competitive mode (module doc); `draining`: the drain
    /// rule is active on this feedback.
    fn update_mode(&mut self, now: Time, q_ms: f64, r_bps: f64, draining: bool) {
        let c = &self.cfg;
        if !c.compete { return; }
        let hold = Duration::from_secs_f64(c.compete_hold_s);
        if self.competitive {
            // The other flow's sawtooth: the queue fell steeply, and not because of our own cut.
            let q_max_ms = self.q_max_1s.get().unwrap_or(0) as f64 / 1e3;
            let own_cut = self.last_cut.is_some_and(|t| now - t < Duration::from_secs(1));
            if q_max_ms - q_ms >= c.compete_renew_drop_ms && !own_cut { self.compete_until = Some(now + hold); }
            let mut failed = false;
            if let Some(p) = self.probe.as_mut() {
                match p.verdict(now, self.rate_bps, r_bps) {
                    Some(true) => self.probe = None,
                    Some(false) => failed = true,
                    None => {}
                }
            }
            // Re-verification round: delivery must keep up with the measured send rate.
            let round_len = Duration::from_secs_f64(c.compete_probe_s);
            if let Some((_, ledger)) = self.round.as_ref().filter(|(t0, _)| now - *t0 >= round_len) {
                let ratio_ok = ledger.delivered_over_sent().is_some_and(|f| f >= c.compete_min_delivery
                    && (c.compete_max_delivery <= 0.0 || f <= c.compete_max_delivery));
                if !ratio_ok || ledger.loss() > c.compete_max_loss { failed = true; }
                self.round = Some((now, Ledger::default()));
            }
            if failed {
                self.competitive = false;
                self.barred_until = Some(now + Duration::from_secs_f64(c.compete_bar_s));
            }
            if self.compete_until.is_some_and(|t| now >= t) { self.competitive = false; }
            if !self.competitive { self.probe = None; self.round = None; }
            if !self.competitive { self.episode = None; self.episode_ledger = Ledger::default(); }
            return;
        }
        if !draining || self.barred_until.is_some_and(|t| now < t) { self.episode = None; self.episode_ledger = Ledger::default(); return; }
        let &mut (t0, q0, r0) = self.episode.get_or_insert((now, q_ms, r_bps));
        if (now - t0).as_secs_f64() < c.compete_window_s { return; }
        self.episode = None;
        let ledger = std::mem::take(&mut self.episode_ledger);
        let at_floor = self.rate_bps <= self.constraints.min_rate.bps_f64() * 1.001;
        let overshoot = c.compete_floor_overshoot > 0.0 && at_floor
            && ledger.send_rate().is_some_and(|s| s > c.compete_floor_overshoot * self.rate_bps);
        if q_ms - q0 >= c.compete_rise_ms && r_bps >= c.compete_rate_hold * r0 && !overshoot {
            self.competitive = true;
            self.compete_until = Some(now + hold);
            self.probe = (c.compete_probe_s > 0.0).then(|| Probe::new(now, Duration::from_secs_f64(c.compete_probe_s), c.compete_follow, self.rate_bps, r_bps));
            self.round = (c.compete_probe_s > 0.0 && c.compete_min_delivery > 0.0).then(|| (now, Ledger::default()));
        }
    }
}

impl Controller for RatelabCc {
    fn on_start(&mut self, _now: Time, c: Constraints) -> Update {
        self.constraints = c;
        self.rate_bps = self.clamp(c.start_rate.bps_f64());
        self.update()
    }

    fn on_constraints(&mut self, _now: Time, c: Constraints) -> Update {
        self.constraints = c;
        self.rate_bps = self.clamp(self.rate_bps);
        self.update()
    }

    fn on_feedback(&mut self, fb: &TransportFeedback) -> Update {
        let now = fb.feedback_time;
        if let Some((_, ledger)) = self.round.as_mut() { ledger.add(fb); }
        if self.episode.is_some() { self.episode_ledger.add(fb); }
        let mut owd_sum = 0.0;
        let mut n = 0u32;
        for p in fb.received_by_arrival() {
            let Some(recv) = p.recv_time else { continue };
            let owd = (recv - p.sent.send_time).as_us();
            self.base.update(recv, owd);
            self.delivered.add(recv, p.sent.size);
            self.last_recv = Some(self.last_recv.map_or(recv, |t| t.max(recv)));
            owd_sum += owd as f64;
            n += 1;
        }
        let (Some(base), Some(last_recv)) = (self.base.get(), self.last_recv) else { return Update::default() };
        if n == 0 { return Update::default(); }
        let q_us = (owd_sum / n as f64 - base as f64).max(0.0);
        self.q_max_1s.update(now, q_us as i64);
        let lost = fb.lost().next().is_some();
        let r_bps = self.delivered.rate(last_recv).bps_f64();
        self.bw_max.update(now, r_bps as i64);
        let bw_max = self.bw_max.get().unwrap_or(0) as f64;
        let target_ms = self.cfg.queue_target_ms;
        let dt = self.last_update.map_or(0.0, |t| (now - t).as_secs_f64().clamp(0.0, 1.0));
        self.last_update = Some(now);
        self.queue_ms = q_us / 1e3;
        if let Some(prev) = self.prev_queue_ms {
            if dt > 0.0 { self.slope = 0.5 * self.slope + 0.5 * (self.queue_ms - prev) / (dt * 1e3); }
        }
        self.prev_queue_ms = Some(self.queue_ms);
        let q_seen = (self.queue_ms + self.slope * self.cfg.lookahead_ms).max(0.0);
        self.delivery_kbps = r_bps / 1e3;
        self.target_ms = target_ms;
        self.update_mode(now, self.queue_ms, r_bps, q_seen > target_ms);
        if self.competitive {
            self.compete_step(now, lost, r_bps, dt);
        } else {
            self.step(q_seen, r_bps, bw_max, target_ms, dt);
        }
        self.update()
    }

    fn diagnostics(&self, out: &mut Diagnostics) {
        out.push(("queue_ms", self.queue_ms));
        out.push(("delivery_kbps", self.delivery_kbps));
        out.push(("queue_target_ms", self.target_ms));
        out.push(("competitive", if self.competitive { 1.0 } else { 0.0 }));
    }
}
