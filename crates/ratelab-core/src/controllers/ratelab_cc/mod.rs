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
//! random loss of a lossy radio link must not cut the rate). An optional **competitive mode**
//! (`compete`, off by default: it did not help against NewReno, see
//! docs/controllers/ratelab-cc.md) switches to loss-driven AIMD while the queue has not fallen
//! below `compete_floor_ms` for `compete_window_s` and the buffer overflowed in that window.

use crate::controller::{Constraints, Controller, Diagnostics, TransportFeedback, Update};
use crate::controllers::common::{RateMeter, WindowedFilter};
use crate::error::ConfigError;
use crate::units::{Bitrate, Duration, Time};
use serde::{Deserialize, Serialize};

#[cfg(test)]
mod tests;

/// Parameters (chosen on the training traces of `traces/split.csv`; see
/// docs/controllers/ratelab-cc.md for the sweep).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RatelabCcConfig {
    /// Queuing delay the controller aims to keep, ms: enough standing queue that the link never
    /// idles while the capacity wanders, small next to the 100-200 ms an interactive call tolerates.
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
    /// Competitive mode on/off (against loss-based cross traffic).
    pub compete: bool,
    /// Window of the queue-floor filter of the competitive mode, s.
    pub compete_window_s: f64,
    /// Floor above which the queue counts as someone else's, ms.
    pub compete_floor_ms: f64,
    /// In competitive mode the rate follows loss as the TCP flow does (AIMD): `× compete_beta`
    /// on a feedback that reports a loss (at most once per `compete_cut_interval_ms`), else
    /// `+ additive_kbps_per_s`. Delay no longer cuts the rate (the queue is the other flow's).
    pub compete_beta: f64,
    pub compete_cut_interval_ms: f64,
    /// Pacing rate = this × target (room for frame bursts).
    pub pacing_factor: f64,
}

impl Default for RatelabCcConfig {
    fn default() -> Self {
        RatelabCcConfig {
            queue_target_ms: 25.0,
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
            compete: false,
            compete_window_s: 5.0,
            compete_floor_ms: 60.0,
            compete_beta: 0.85,
            compete_cut_interval_ms: 500.0,
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
        for (name, v) in [("growth_per_s", self.growth_per_s), ("recover_growth_per_s", self.recover_growth_per_s), ("bw_window_s", self.bw_window_s), ("recover_fraction", self.recover_fraction), ("lookahead_ms", self.lookahead_ms), ("additive_kbps_per_s", self.additive_kbps_per_s), ("compete_floor_ms", self.compete_floor_ms)] {
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
    /// Minimum queuing delay (µs) over the competitive-mode window.
    floor: WindowedFilter<i64>,
    /// Last loss reported, and last loss cut of the competitive mode.
    last_loss: Option<Time>,
    last_cut: Option<Time>,
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
            floor: WindowedFilter::min(Duration::from_secs_f64(cfg.compete_window_s)),
            last_loss: None,
            last_cut: None,
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
            (x + c.additive_kbps_per_s * 1e3 * dt).min((r_bps * c.max_over_delivery).max(x))
        };
        self.rate_bps = self.clamp(next);
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
        self.floor.update(now, q_us as i64);
        let lost = fb.lost().next().is_some();
        if lost { self.last_loss = Some(now); }
        let r_bps = self.delivered.rate(last_recv).bps_f64();
        self.bw_max.update(now, r_bps as i64);
        let bw_max = self.bw_max.get().unwrap_or(0) as f64;
        let target_ms = self.cfg.queue_target_ms;
        // Competitive mode: a queue that has not drained below the floor for a whole window,
        // while the buffer overflows (loss) within that window: a loss-based flow holds it.
        let floor_ms = self.floor.get().unwrap_or(0) as f64 / 1e3;
        let window = Duration::from_secs_f64(self.cfg.compete_window_s);
        self.competitive = self.cfg.compete && floor_ms > self.cfg.compete_floor_ms
            && self.last_loss.is_some_and(|t| now - t < window);
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
