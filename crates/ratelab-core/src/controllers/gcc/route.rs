//! Constraints, network availability and route changes (libwebrtc `ResetConstraints`,
//! `OnNetworkAvailability`, `OnNetworkRouteChange`).

use super::*;

pub(super) fn new_delay_bwe(cfg: &GccConfig, r: &Resolved) -> DelayBasedBwe {
    let aimd = AimdConfig { subtract_additional_backoff: r.aimd_backoff_term, ..AimdConfig::default() };
    DelayBasedBwe::new(aimd, cfg.trendline_window.clamp(2, 200))
}

impl Gcc {
    /// Constraints to the probe controller (`ResetConstraints` → `SetBitrates`); the media max
    /// is also the max total allocated bitrate (`OnMaxTotalAllocatedBitrate`).
    pub(super) fn constraints_to_probe_controller(&mut self, start: Bitrate, now: Time, up: &mut Update) {
        let mut probes = self.probe_ctrl.set_bitrates(self.min_rate, start, self.max_rate, now);
        if self.max_rate.is_finite() {
            probes.extend(self.probe_ctrl.on_max_total_allocated_bitrate(self.max_rate, now));
        }
        self.add_probes(up, probes);
    }

    /// libwebrtc `ResetConstraints`: constraints to the estimators and the probe controller
    /// (a zero start rate: none).
    pub(super) fn reset_constraints(&mut self, c: &Constraints, now: Time, up: &mut Update) {
        self.apply_constraints(c);
        let start = (!c.start_rate.is_zero()).then(|| clamp_rate(c.start_rate, self.min_rate, self.max_rate));
        if let Some(s) = start {
            self.delay.set_start_bitrate(s);
        }
        self.ssbe.set_bitrates(start, self.min_rate, self.max_rate, now);
        self.started = true;
        self.constraints_to_probe_controller(start.unwrap_or(Bitrate::ZERO), now, up);
    }

    /// `OnNetworkAvailability` (the simulator's network is always available; for drivers and
    /// the libwebrtc ports).
    pub fn on_network_availability(&mut self, now: Time, available: bool) -> Update {
        let mut up = Update::default();
        let probes = self.probe_ctrl.on_network_availability(available, now);
        self.add_probes(&mut up, probes);
        up
    }

    /// `OnNetworkRouteChange`: new acked, probe and delay-based estimators, the send-side
    /// estimator and the probe controller reset, then the new constraints (initial probing
    /// again). With the safe-reset option the start rate is first lowered to the current
    /// estimate (acknowledged rate with `safe_reset_acked`, else the loss-based target), or
    /// becomes that estimate when the constraints carry none. [`Controller::on_route_change`]
    /// calls it; drivers call that when the scenario's route changes.
    pub fn on_network_route_change(&mut self, now: Time, mut c: Constraints) -> Update {
        if self.cfg.safe_reset_on_route_change {
            let estimate = if self.cfg.safe_reset_acked { self.acked.bitrate() } else { Some(self.ssbe.target()) };
            if let Some(e) = estimate {
                c.start_rate = if c.start_rate.is_zero() { e } else { c.start_rate.min(e) };
            }
        }
        let mut up = Update::default();
        self.acked = AckedRate::new(self.r.acked);
        self.probe_est = ProbeBitrateEstimator::default();
        self.delay = new_delay_bwe(&self.cfg, &self.r);
        self.ssbe.on_route_change();
        self.probe_ctrl.reset(now);
        self.reset_constraints(&c, now, &mut up);
        self.maybe_trigger(now, &mut up);
        up
    }
}
