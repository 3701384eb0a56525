//! GCC — Google Congestion Control as in libwebrtc `goog_cc` (spec section 2).
//!
//! Components, one file each:
//! * [`inter_arrival`] (2.3) → [`trendline`] (2.4, 2.5) → [`aimd`] (2.6) with
//!   [`link_capacity`] (2.6.1), tied together in [`delay_based`];
//! * [`acked_bitrate`] with [`robust_throughput`] (2.7), [`probe`] and [`probe_controller`] (2.8),
//!   [`loss_v1`] (2.9.1, RTT backoff of 2.10, and the
//!   send-side estimator that hosts [`loss_v2`], 2.9.2), [`alr`] (2.10), [`cwnd`] (2.10).
//!
//! [`Gcc`] runs them in the order of spec 2.1: per feedback RTT bookkeeping, ALR → acked
//! bitrate, probe results, delay-based BWE, loss-based BWE, then target / pushback / pacing /
//! probes; `on_tick` every 25 ms drives the probe timers and the loss-based update;
//! `on_packet_sent` feeds the ALR detector and the in-flight count of the pushback controller.
//!
//! Profiles (2.13) are chosen by [`GccConfig::profile`]; docs/controllers/gcc.md says which
//! behaviour belongs to which and lists the ported libwebrtc unit tests.
//!
//! Simulator choices (spec 2.10 asks to record them): the congestion window acts by pushback —
//! in `current` by frame dropping (libwebrtc's `DropFrame:true`: the target stays at the
//! loss-based rate, `Update::cwnd_reduce_ratio` makes the media sender drop frames), otherwise on
//! the target rate — and, as in libwebrtc when pushback is on, the window itself is not handed
//! to the pacer unless [`GccConfig::cwnd_to_pacer`] is set. RTT for AIMD is the per-feedback
//! propagation RTT of 1.3 (spec 2.2, no RTCP RR in the simulator) unless `on_rtt_update`
//! supplies one. Losses reach
//! the classic controller from the transport feedback, aggregated over 1 s as in libwebrtc's
//! feedback-only mode. The rate evaluation (`MaybeTriggerOnNetworkChanged`) runs after every
//! feedback, not only after feedbacks that changed the delay-based estimate, so that
//! loss-based changes are emitted without waiting for the next 25 ms tick.

pub mod acked_bitrate;
pub mod aimd;
pub mod alr;
mod config;
pub mod cwnd;
pub mod delay_based;
pub mod inter_arrival;
pub mod link_capacity;
pub mod loss_v1;
pub mod loss_v2;
pub mod probe;
pub mod probe_controller;
mod route;
pub mod robust_throughput;
pub mod trendline;

#[cfg(test)]
mod tests;

use crate::controller::BuildContext;
use crate::controller::{Constraints, Controller, Diagnostics, PacketResult, SentPacket, TransportFeedback, Update};
use crate::units::{Bitrate, Bytes, Duration, Time};
use acked_bitrate::AckedRate;
use aimd::AimdConfig;
use alr::AlrDetector;
use cwnd::CongestionWindow;
use delay_based::DelayBasedBwe;
use loss_v1::SendSideBwe;
use loss_v2::{LossBasedBweV2, LossV2Config, LossV2State};
use probe::ProbeBitrateEstimator;
use route::new_delay_bwe;
use probe_controller::{LimitedCause, ProbeConfig, ProbeController, ProbeRequest};
use trendline::BandwidthUsage;

use config::Resolved;
pub use config::{resolved_acked_estimator, GccConfig, GccProfile};

/// The GCC controller.
pub struct Gcc {
    cfg: GccConfig,
    r: Resolved,
    loss_report_interval: Duration,
    min_rate: Bitrate,
    max_rate: Bitrate,
    started: bool,
    delay: DelayBasedBwe,
    ssbe: SendSideBwe,
    acked: AckedRate,
    probe_ctrl: ProbeController,
    probe_est: ProbeBitrateEstimator,
    alr: AlrDetector,
    cwnd: Option<CongestionWindow>,
    first_feedback_seen: bool,
    first_packet_sent: bool,
    previously_in_alr: bool,
    next_loss_update: Option<Time>,
    lost_since_loss_update: i64,
    expected_since_loss_update: i64,
    // Last values that went through MaybeTriggerOnNetworkChanged.
    last_loss_based_target: Bitrate,
    last_pushback_target: Bitrate,
    last_loss_state: LossV2State,
    last_fraction_loss: u8,
    last_rtt: Duration,
    /// `(loss-based − pushback) / loss-based` of the last evaluation (DropFrame mode).
    cwnd_reduce_ratio: f64,
    emitted_reduce_ratio: Option<f64>,
    // Last values emitted in an `Update`.
    emitted_target: Option<Bitrate>,
    emitted_pacing: Option<Bitrate>,
    emitted_padding: Option<Bitrate>,
    emitted_cwnd: Option<Bytes>,
    // Diagnostics.
    last_acked: Option<Bitrate>,
    last_probe_result: Option<Bitrate>,
    last_rtt_prop: Option<Duration>,
    /// Scratch buffer: received packets sorted by arrival (reused, no per-feedback allocation).
    scratch: Vec<PacketResult>,
}

impl Gcc {
    pub fn new(cfg: GccConfig, _cx: &BuildContext) -> Self {
        let r = cfg.resolve();
        let v2 = r.loss_v2.then(|| LossBasedBweV2::new(LossV2Config::default()));
        let cwnd = r.cwnd.then(|| {
            let q = if cfg.cwnd_queue_ms.is_finite() { cfg.cwnd_queue_ms.clamp(0.0, 10_000.0) } else { 350.0 };
            let m = if cfg.cwnd_min_pushback_kbps.is_finite() { cfg.cwnd_min_pushback_kbps.max(0.0) } else { 30.0 };
            CongestionWindow::new(Duration::from_ms_f64(q), Bitrate::from_kbps_f64(m))
        });
        let lri = if cfg.loss_report_interval_ms.is_finite() { cfg.loss_report_interval_ms.clamp(0.0, 60_000.0) } else { 1000.0 };
        let c = Constraints::default();
        Gcc {
            loss_report_interval: Duration::from_ms_f64(lri),
            r,
            min_rate: c.min_rate,
            max_rate: c.max_rate,
            started: false,
            delay: new_delay_bwe(&cfg, &r),
            ssbe: SendSideBwe::new(v2, cfg.rtt_backoff),
            acked: AckedRate::new(r.acked),
            probe_ctrl: {
                let mut p = ProbeController::new(ProbeConfig::default());
                p.enable_periodic_alr_probing(cfg.alr_probing);
                p
            },
            probe_est: ProbeBitrateEstimator::default(),
            alr: AlrDetector::default(),
            cwnd,
            first_feedback_seen: false,
            first_packet_sent: false,
            previously_in_alr: false,
            next_loss_update: None,
            lost_since_loss_update: 0,
            expected_since_loss_update: 0,
            last_loss_based_target: Bitrate::ZERO,
            last_pushback_target: Bitrate::ZERO,
            last_loss_state: LossV2State::DelayBasedEstimate,
            last_fraction_loss: 0,
            last_rtt: Duration::ZERO,
            cwnd_reduce_ratio: 0.0,
            emitted_reduce_ratio: None,
            emitted_target: None,
            emitted_pacing: None,
            emitted_padding: None,
            emitted_cwnd: None,
            last_acked: None,
            last_probe_result: None,
            last_rtt_prop: None,
            scratch: Vec::with_capacity(256),
            cfg,
        }
    }

    fn apply_constraints(&mut self, c: &Constraints) {
        let min = c.min_rate.max(loss_v1::MIN_BITRATE_FLOOR);
        let max = if c.max_rate.is_zero() { Bitrate::INFINITY } else { c.max_rate.max(min) };
        self.min_rate = min;
        self.max_rate = max;
        self.delay.set_min(min);
        self.ssbe.set_min_max(min, max);
    }

    fn pacing_factor(&self) -> f64 {
        match self.r.pacing_factor {
            Some(f) => f,
            None if self.first_feedback_seen => self.r.profile_pacing_factor,
            None => self.r.initial_pacing_factor,
        }
    }

    /// Why the estimate is limited (for the probe controller, 2.8).
    /// `GetBandwidthLimitedCause`: any over- *or* under-use blocks probing first; the padding
    /// state counts as loss-limited (no probes), only `Increasing` allows loss-limited probes.
    fn limited_cause(&self) -> LimitedCause {
        if self.delay.state() != BandwidthUsage::Normal {
            return LimitedCause::DelayLimitedDelayIncreased;
        }
        if self.ssbe.is_rtt_above_limit() {
            return LimitedCause::RttBackoff;
        }
        match self.ssbe.loss_state() {
            // libwebrtc: no probes while padding (as while decreasing), only while increasing.
            LossV2State::Increasing => LimitedCause::LossLimitedIncreasing,
            LossV2State::Decreasing | LossV2State::IncreaseUsingPadding => LimitedCause::LossLimited,
            LossV2State::DelayBasedEstimate => {
                if self.delay.state() == BandwidthUsage::Overusing {
                    LimitedCause::DelayLimitedDelayIncreased
                } else {
                    LimitedCause::DelayLimited
                }
            }
        }
    }

    /// `MaybeTriggerOnNetworkChanged` (2.10): pushback, ALR budget, probe decisions, pacing.
    fn maybe_trigger(&mut self, now: Time, up: &mut Update) {
        let loss_target = self.ssbe.target();
        let state = self.ssbe.loss_state();
        let mut pushback_target = loss_target;
        let mut reduce_ratio = 0.0;
        if let Some(cw) = self.cwnd.as_mut() {
            pushback_target = cw.pushback(loss_target).max(self.ssbe.min_bitrate());
            if self.r.drop_frame && !loss_target.is_zero() {
                reduce_ratio = (loss_target.bps() - pushback_target.bps()) as f64 / loss_target.bps() as f64;
            }
        }
        let (fraction_loss, rtt) = (self.ssbe.fraction_loss(), self.ssbe.round_trip_time());
        if loss_target != self.last_loss_based_target
            || pushback_target != self.last_pushback_target
            || state != self.last_loss_state
            || fraction_loss != self.last_fraction_loss
            || rtt != self.last_rtt
        {
            self.last_loss_based_target = loss_target;
            self.last_pushback_target = pushback_target;
            self.last_loss_state = state;
            self.last_fraction_loss = fraction_loss;
            self.last_rtt = rtt;
            self.cwnd_reduce_ratio = reduce_ratio;
            self.alr.set_estimated_bitrate(loss_target);
            let cause = self.limited_cause();
            let probes = self.probe_ctrl.set_estimated_bitrate(loss_target, cause, now);
            self.add_probes(up, probes);
        }
        self.emit_rates(up);
    }

    fn add_probes(&mut self, up: &mut Update, probes: Vec<ProbeRequest>) {
        if !self.cfg.probing {
            return;
        }
        for p in probes {
            let c = crate::controller::ProbeCluster { id: p.id, rate: p.rate, min_packets: p.target_probe_count, min_duration: p.target_duration };
            self.probe_est.register(&c);
            up.probes.push(c);
        }
    }

    /// Put target / pacing / padding / window into `up` where they changed.
    fn emit_rates(&mut self, up: &mut Update) {
        // DropFrame: the encoder gets the loss-based rate and drops frames instead.
        let encoder_rate = if self.r.drop_frame { self.last_loss_based_target } else { self.last_pushback_target };
        let target = clamp_rate(encoder_rate, self.min_rate, self.max_rate);
        if self.r.drop_frame && self.emitted_reduce_ratio != Some(self.cwnd_reduce_ratio) {
            self.emitted_reduce_ratio = Some(self.cwnd_reduce_ratio);
            up.cwnd_reduce_ratio = Some(self.cwnd_reduce_ratio);
        }
        let pacing_base = self.last_loss_based_target;
        let pacing = clamp_rate(pacing_base.scale(self.pacing_factor()), Bitrate::from_bps(1), Bitrate::INFINITY);
        let mut padding = if self.last_loss_state == LossV2State::IncreaseUsingPadding { self.last_loss_based_target } else { Bitrate::ZERO };
        padding = padding.min(self.last_pushback_target).max(Bitrate::ZERO);
        if self.emitted_target != Some(target) {
            self.emitted_target = Some(target);
            up.target_rate = Some(target);
        }
        if self.emitted_pacing != Some(pacing) {
            self.emitted_pacing = Some(pacing);
            up.pacing_rate = Some(pacing);
        }
        if self.emitted_padding != Some(padding) {
            self.emitted_padding = Some(padding);
            up.padding_rate = Some(padding);
        }
        if self.cfg.cwnd_to_pacer {
            if let Some(w) = self.cwnd.as_ref().and_then(|c| c.window()) {
                if self.emitted_cwnd != Some(w) {
                    self.emitted_cwnd = Some(w);
                    up.cwnd = Some(w);
                }
            }
        }
    }

    fn update_cwnd(&mut self) {
        let target = self.last_loss_based_target;
        if let Some(cw) = self.cwnd.as_mut() {
            if cw.has_rtt() {
                cw.update_window(target);
            }
        }
    }
}

fn clamp_rate(r: Bitrate, lo: Bitrate, hi: Bitrate) -> Bitrate { r.max(lo).min(hi.max(lo)) }

impl Controller for Gcc {
    fn on_start(&mut self, now: Time, c: Constraints) -> Update {
        // Network available, then the constraints: initial exponential probing at 3× and 6×
        // the start rate (2.8, 2.11).
        let mut up = self.on_network_availability(now, true);
        self.reset_constraints(&c, now, &mut up);
        self.maybe_trigger(now, &mut up);
        up
    }

    fn on_packet_sent(&mut self, p: &SentPacket) -> Update {
        let mut up = Update::default();
        self.alr.on_bytes_sent(p.size, p.send_time);
        self.acked.set_alr(self.alr.in_alr());
        if !self.first_packet_sent {
            self.first_packet_sent = true;
            self.ssbe.update_estimate(p.send_time);
        }
        self.ssbe.on_sent_packet(p.send_time);
        if let Some(cw) = self.cwnd.as_mut() {
            cw.set_outstanding(p.data_in_flight);
            if self.started {
                self.maybe_trigger(p.send_time, &mut up);
            }
        }
        up
    }

    fn on_feedback(&mut self, fb: &TransportFeedback) -> Update {
        let mut up = Update::default();
        if fb.packets.is_empty() || !self.started {
            return up;
        }
        let now = fb.feedback_time;
        self.first_feedback_seen = true;
        if let Some(cw) = self.cwnd.as_mut() {
            cw.set_outstanding(fb.data_in_flight);
        }

        // 1. RTT bookkeeping (2.1, 1.3).
        let mut max_recv: Option<Time> = None;
        for p in fb.received() {
            if let Some(r) = p.recv_time {
                max_recv = Some(max_recv.map_or(r, |m| m.max(r)));
            }
        }
        if let Some(max_recv) = max_recv {
            let mut max_fb_rtt = Duration::from_us(i64::MIN / 4);
            let mut min_prop_rtt = Duration::MAX;
            for p in fb.received() {
                let Some(r) = p.recv_time else { continue };
                let fb_rtt = now - p.sent.send_time;
                let prop = fb_rtt - (max_recv - r);
                max_fb_rtt = max_fb_rtt.max(fb_rtt);
                min_prop_rtt = min_prop_rtt.min(prop);
            }
            let min_prop_rtt = min_prop_rtt.max(Duration::ZERO);
            if let Some(cw) = self.cwnd.as_mut() {
                cw.on_feedback_max_rtt(max_fb_rtt);
            }
            self.ssbe.update_propagation_rtt(now, min_prop_rtt);
            self.ssbe.update_rtt(min_prop_rtt);
            self.delay.set_rtt(min_prop_rtt);
            self.last_rtt_prop = Some(min_prop_rtt);
        }

        // Loss reports for the classic controller (feedback-only mode, aggregated).
        self.expected_since_loss_update += fb.packets.len() as i64;
        self.lost_since_loss_update += fb.lost().count() as i64;
        if self.next_loss_update.is_none_or(|t| now > t) {
            self.next_loss_update = Some(now + self.loss_report_interval);
            self.ssbe.update_packets_lost(self.lost_since_loss_update, self.expected_since_loss_update, now);
            self.lost_since_loss_update = 0;
            self.expected_since_loss_update = 0;
        }

        // 2. ALR state → acked-bitrate estimator.
        let alr_start = self.alr.alr_start_time();
        if self.previously_in_alr && alr_start.is_none() {
            self.acked.set_alr_ended_time(now);
            self.probe_ctrl.set_alr_ended_time(now);
        }
        self.previously_in_alr = alr_start.is_some();
        let in_alr = alr_start.is_some();

        // 3. Acked bitrate from packets sorted by arrival.
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.extend(fb.packets.iter().filter(|p| p.received()).copied());
        scratch.sort_by_key(|p| (p.recv_time, p.sent.seq));
        self.acked.incoming(&scratch);
        let acked = self.acked.bitrate();
        self.last_acked = acked;
        self.ssbe.set_acknowledged_rate(acked);

        // 4. Probe results.
        for p in scratch.iter().filter(|p| p.sent.probe_cluster.is_some()) {
            self.probe_est.handle(p);
        }
        let mut probe_rate = self.probe_est.fetch_and_reset();
        if let (Some(pr), Some(a)) = (probe_rate, acked) {
            // A probe below the current estimate is raised to min(A_delay, 0.85·R̂) (2.8).
            let limit = self.delay.last_estimate().min(a.scale(0.85));
            probe_rate = Some(pr.max(limit));
        }
        if probe_rate.is_some() {
            self.last_probe_result = probe_rate;
        }

        // 5. Delay-based BWE.
        let res = self.delay.incoming(&scratch, now, acked, probe_rate);
        self.scratch = scratch;
        if res.updated {
            if res.probe {
                self.ssbe.set_send_bitrate(res.target, now);
            }
            self.ssbe.update_delay_based_estimate(now, res.target);
        }

        // 6. Loss-based BWE.
        self.ssbe.update_loss_based_estimator(&fb.packets, in_alr, now);

        // 7. Target, pushback, pacing, probes.
        self.maybe_trigger(now, &mut up);
        if res.recovered_from_overuse {
            self.probe_ctrl.set_alr_start_time(alr_start);
            let probes = self.probe_ctrl.request_probe(now);
            self.add_probes(&mut up, probes);
        }
        if max_recv.is_some() {
            self.update_cwnd();
        }
        self.emit_rates(&mut up);
        up
    }

    fn on_tick(&mut self, now: Time) -> Update {
        let mut up = Update::default();
        if !self.started {
            return up;
        }
        self.ssbe.update_estimate(now);
        // No ALR probing before the first transport feedback (libwebrtc).
        self.probe_ctrl.set_alr_start_time(if self.first_feedback_seen { self.alr.alr_start_time() } else { None });
        let probes = self.probe_ctrl.process(now);
        self.add_probes(&mut up, probes);
        self.update_cwnd();
        self.maybe_trigger(now, &mut up);
        up
    }

    fn on_rtt_update(&mut self, _now: Time, rtt: Duration) -> Update {
        self.delay.set_rtt(rtt);
        self.ssbe.update_rtt(rtt);
        Update::default()
    }

    fn on_constraints(&mut self, now: Time, c: Constraints) -> Update {
        self.apply_constraints(&c);
        let mut up = Update::default();
        if self.started {
            // Re-clamp the current estimates (the start rate only matters at on_start); a raised
            // max (or allocation, in ALR) is probed.
            self.constraints_to_probe_controller(Bitrate::ZERO, now, &mut up);
            self.ssbe.update_estimate(now);
            self.maybe_trigger(now, &mut up);
        }
        up
    }

    /// libwebrtc's reset (`Gcc::on_network_route_change`): estimators restart and probe again.
    fn on_route_change(&mut self, now: Time, c: Constraints) -> Update { self.on_network_route_change(now, c) }

    fn on_remote_estimate(&mut self, now: Time, rate: Bitrate) -> Update {
        let mut up = Update::default();
        self.ssbe.update_receiver_estimate(now, rate);
        if self.started {
            self.maybe_trigger(now, &mut up);
        }
        up
    }

    fn diagnostics(&self, out: &mut Diagnostics) {
        let tl = self.delay.trendline();
        // Unknown values are reported as 0 so that every value is finite.
        let kbps = |r: Bitrate| if r.is_finite() { r.kbps_f64() } else { 0.0 };
        out.push(("target_kbps", kbps(self.last_pushback_target)));
        out.push(("loss_estimate_kbps", kbps(self.ssbe.target())));
        out.push(("delay_estimate_kbps", kbps(self.delay.last_estimate())));
        out.push(("acked_rate_kbps", self.last_acked.map_or(0.0, kbps)));
        out.push(("probe_result_kbps", self.last_probe_result.map_or(0.0, kbps)));
        out.push(("trend", tl.trend()));
        out.push(("modified_trend", tl.modified_trend()));
        out.push(("threshold", tl.threshold()));
        out.push(("detector_state", tl.state().as_f64()));
        out.push(("aimd_state", self.delay.aimd().state().as_f64()));
        out.push(("link_capacity_kbps", self.delay.aimd().capacity().estimate().map_or(0.0, kbps)));
        out.push(("loss_v2_state", self.ssbe.loss_state().as_f64()));
        out.push(("fraction_loss", f64::from(self.ssbe.fraction_loss()) / 256.0));
        if let Some(v2) = self.ssbe.v2() {
            out.push(("loss_v2_avg_loss", v2.average_loss()));
            out.push(("loss_v2_inherent_loss", v2.inherent_loss()));
        }
        out.push(("rtt_ms", self.last_rtt_prop.map_or(0.0, |r| r.as_ms_f64())));
        out.push(("in_alr", if self.alr.in_alr() { 1.0 } else { 0.0 }));
        out.push(("pushback_ratio", self.cwnd.as_ref().map_or(1.0, |c| c.ratio())));
        out.push(("cwnd_bytes", self.cwnd.as_ref().and_then(|c| c.window()).map_or(0.0, |w| w.as_f64())));
    }
}
