//! BBR family for WebRTC: `bbr-webrtc` (spec 7, libwebrtc's BBRv1 with congestion window) and
//! `rbbr` (spec 6, paper 002's Rate BBR), sharing one model ([`model::BbrModel`]).
//!
//! Lab choices, recorded as spec 1.3 asks:
//! * the bandwidth and ack-height filters are exact round-windowed max filters (not QUIC's
//!   3-best approximation);
//! * delivery-rate samples use the feedback arrival time as ack time for every packet of a
//!   feedback, and the min-RTT samples are `t_f − t_s` (naive RTT including the receiver's
//!   feedback hold time), both as libwebrtc;
//! * the sampler treats a packet sent into an empty pipe (zero bytes in flight before it) as the
//!   start of a fresh measurement (QUIC semantics);
//! * nothing marks samples app-limited except PROBE_RTT, as in libwebrtc (which never calls the
//!   controller's `OnApplicationLimited`).
//! * Not modelled: libwebrtc's loss-rate filter (informational only there).

pub mod model;
pub mod rbbr;
pub mod webrtc;

pub use rbbr::{Rbbr, RbbrConfig, RbbrRule};
pub use webrtc::{BbrWebrtc, BbrWebrtcConfig, WebrtcRule};

use self::model::BbrModel;
use crate::controller::{Constraints, Controller, Diagnostics, SentPacket, TransportFeedback, Update};
use crate::units::{Bitrate, Bytes, Time};

/// How one BBR sender turns the shared model's state into rates: the only part in which
/// `bbr-webrtc` and `rbbr` differ (spec 7.5 `CreateRateUpdate` vs. spec 6.2 Algorithm 1).
pub trait BbrRule: Send {
    /// Pad up to the pacing rate while the model probes for bandwidth (spec 6.3 / 7.5).
    fn pad_when_probing(&self) -> bool;
    /// A non-empty feedback, right before the model sees it.
    fn on_feedback(&mut self, _fb: &TransportFeedback) {}
    /// `(target, pacing)` before they are clamped to the constraints, and the congestion
    /// window to hand to the pacer (`None`: leave it). `bw` is the model's bandwidth estimate,
    /// or the start rate while it has no sample (libwebrtc's `default_bandwidth_`).
    fn rates(&mut self, model: &BbrModel, bw: Bitrate) -> (Bitrate, Bitrate, Option<Bytes>);
    /// Whether a route change resets the model (libwebrtc's BBR does; paper 002 says nothing).
    fn resets_on_route_change(&self) -> bool { false }
    /// Diagnostics after the model's own; `target` is the clamped target of the last update.
    fn diagnostics(&self, _model: &BbrModel, _target: Bitrate, _out: &mut Diagnostics) {}
}

/// The controller shell of the BBR senders: one [`BbrModel`] fed with every sent packet and
/// feedback, the constraints and start rate, and one rate update after each event, with the
/// [`BbrRule`] `R` saying how the rates come from the model. It exists so that both variants
/// share the `Controller` plumbing and the clamping instead of each restating it (they once
/// did, line for line); `bbr-webrtc` is `BbrSender<WebrtcRule>`, `rbbr` is `BbrSender<RbbrRule>`.
pub struct BbrSender<R> {
    rule: R,
    model: BbrModel,
    constraints: Constraints,
    /// `default_bandwidth_`: the start rate, used while there is no bandwidth sample.
    default_bw: Bitrate,
    last_target: Bitrate,
}

impl<R: BbrRule> BbrSender<R> {
    fn with_rule(rule: R, model: BbrModel) -> Self {
        let c = Constraints::default();
        BbrSender { rule, model, constraints: c, default_bw: c.start_rate, last_target: c.start_rate }
    }

    pub fn model(&self) -> &BbrModel { &self.model }

    /// The rule's rates clamped to the constraints; padding = pacing while probing (if the
    /// rule pads); the rule's window.
    fn rate_update(&mut self) -> Update {
        let mut bw = self.model.bandwidth();
        if bw.is_zero() { bw = self.default_bw; }
        let (target, pacing, cwnd) = self.rule.rates(&self.model, bw);
        let (lo, hi) = (self.constraints.min_rate, self.constraints.max_rate.max(self.constraints.min_rate));
        let (target, pacing) = (target.min(hi).max(lo), pacing.min(hi).max(lo));
        self.last_target = target;
        let padding = if self.rule.pad_when_probing() && self.model.is_probing_for_bandwidth() { pacing } else { Bitrate::ZERO };
        Update { target_rate: Some(target), pacing_rate: Some(pacing), padding_rate: Some(padding), cwnd, probes: Vec::new(), cwnd_reduce_ratio: None }
    }
}

impl<R: BbrRule> Controller for BbrSender<R> {
    fn on_start(&mut self, _now: Time, c: Constraints) -> Update {
        self.constraints = c;
        self.default_bw = c.start_rate;
        self.rate_update()
    }

    fn on_packet_sent(&mut self, p: &SentPacket) -> Update {
        self.model.on_packet_sent(p);
        Update::default()
    }

    fn on_feedback(&mut self, fb: &TransportFeedback) -> Update {
        if fb.packets.is_empty() { return Update::default(); }
        self.rule.on_feedback(fb);
        // Pacing discounts (rbbr) are the rule's; the model paces undiscounted.
        self.model.on_feedback(fb, 1.0);
        self.rate_update()
    }

    fn on_tick(&mut self, _now: Time) -> Update { self.rate_update() }

    fn on_constraints(&mut self, _now: Time, c: Constraints) -> Update {
        self.constraints = c;
        self.rate_update()
    }

    /// libwebrtc BBR's `OnNetworkRouteChange` (rule permitting): the new constraints, the start
    /// rate as the default bandwidth, [`BbrModel::reset_for_route_change`]. Otherwise nothing.
    fn on_route_change(&mut self, _now: Time, c: Constraints) -> Update {
        if !self.rule.resets_on_route_change() { return Update::default(); }
        self.constraints = c;
        if !c.start_rate.is_zero() { self.default_bw = c.start_rate; }
        self.model.reset_for_route_change();
        self.rate_update()
    }

    fn diagnostics(&self, out: &mut Diagnostics) {
        self.model.push_diagnostics(out);
        self.rule.diagnostics(&self.model, self.last_target, out);
    }
}

#[cfg(test)]
mod tests {
    use super::model::{BbrModel, Mode, Recovery, MSS};
    use super::*;
    use crate::controller::{Constraints, Controller, PacketResult, SentPacket, TransportFeedback};
    use crate::controllers::testkit::Harness;
    use crate::controller::BuildContext;
    use crate::units::{Bitrate, Bytes, Duration, Time};

    fn constraints(max_kbps: i64) -> Constraints {
        Constraints { min_rate: Bitrate::from_kbps(100), max_rate: Bitrate::from_kbps(max_kbps), start_rate: Bitrate::from_kbps(300) }
    }

    fn webrtc_model() -> BbrModel { BbrModel::new(BbrWebrtcConfig::default().model_config(), 7) }

    fn sp(seq: u64, t_ms: i64, in_flight: i64) -> SentPacket {
        SentPacket { seq, size: Bytes::new(1200), send_time: Time::from_ms(t_ms), probe_cluster: None, is_padding: false, data_in_flight: Bytes::new(in_flight) }
    }

    #[test]
    fn constants_match_spec_7_3() {
        let c = BbrWebrtcConfig::default().model_config();
        assert_eq!(c.gain_cycle, vec![1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
        assert_eq!(c.initial_cwnd, Bytes::new(32 * 1460));
        assert_eq!(c.min_cwnd, Bytes::new(4 * 1460));
        assert_eq!(c.max_cwnd, Bytes::new(2000 * 1460));
        assert_eq!(c.min_rtt_expiry, Duration::from_secs(10));
        assert!((c.drain_gain * 2.885 - 1.0).abs() < 1e-12);
        let r = RbbrConfig::default();
        assert_eq!(r.gain_cycle, vec![1.125, 0.875, 1.0, 1.0]);
        assert_eq!(r.min_rtt_expiry_ms, 5000.0);
    }

    #[test]
    fn initial_outputs_before_any_feedback() {
        // No sample: target = start rate; pacing = 2.885 · 32 · 1460 B / 100 ms = 10.78 Mbit/s
        // (clamped to max); STARTUP pads at the pacing rate; cwnd = 32 packets.
        let mut c = BbrWebrtc::new(BbrWebrtcConfig::default(), &BuildContext::new(1));
        let u = c.on_start(Time::ZERO, constraints(50_000));
        assert_eq!(u.target_rate, Some(Bitrate::from_kbps(300)));
        // 2.885 · 46 720 B = 134 787 B (whole bytes) per 100 ms
        assert_eq!(u.pacing_rate, Some(Bitrate::from_bps(10_782_960)));
        assert_eq!(u.padding_rate, u.pacing_rate);
        assert_eq!(u.cwnd, Some(MSS * 32));
        let u = c.on_start(Time::ZERO, constraints(2000));
        assert_eq!(u.pacing_rate, Some(Bitrate::from_kbps(2000)));
    }

    #[test]
    fn first_feedback_sets_min_rtt_bandwidth_and_pacing() {
        // 10 packets of 1200 B sent 10 ms apart from an empty pipe; all acked by one feedback at
        // 200 ms. min RTT = 200 − 90 = 110 ms; first pacing = initial cwnd / RttStats min
        // = 46 720 B / 110 ms.
        let mut m = webrtc_model();
        for i in 0..10 { m.on_packet_sent(&sp(i, 10 * i as i64, 1200 * (i as i64 + 1))); }
        let fb = TransportFeedback {
            feedback_time: Time::from_ms(200),
            packets: (0..10).map(|i| PacketResult { sent: sp(i, 10 * i as i64, 1200 * (i as i64 + 1)), recv_time: Some(Time::from_ms(60 + 10 * i as i64)) }).collect(),
            prior_in_flight: Bytes::new(12_000),
            data_in_flight: Bytes::ZERO,
            ..Default::default()
        };
        let out = m.on_feedback(&fb, 1.0);
        assert!(out.round_start);
        assert_eq!(out.data_acked, Bytes::new(12_000));
        assert_eq!(m.min_rtt(), Duration::from_ms(110));
        // every packet's ack rate: (acked now − 0) / (200 ms − 0): best = 12 000 B / 200 ms = 480 kbit/s;
        // send rates: (k·1200 B) / (10·k ms) = 960 kbit/s → bandwidth = 480 kbit/s.
        assert_eq!(m.bandwidth(), Bitrate::from_kbps(480));
        assert_eq!(m.pacing_rate(), Bytes::new(46_720) / Duration::from_ms(110));
        assert_eq!(m.mode, Mode::Startup);
        // STARTUP grows the window by the acked bytes
        assert_eq!(m.congestion_window(), MSS * 32 + Bytes::new(12_000));
    }

    #[test]
    fn loss_enters_conservation_recovery_and_exits_after_clean_round() {
        let mut m = webrtc_model();
        for i in 0..4 { m.on_packet_sent(&sp(i, i as i64, 1200 * (i as i64 + 1))); }
        let fb = TransportFeedback {
            feedback_time: Time::from_ms(100),
            packets: vec![
                PacketResult { sent: sp(0, 0, 1200), recv_time: Some(Time::from_ms(50)) },
                PacketResult { sent: sp(1, 1, 2400), recv_time: None },
                PacketResult { sent: sp(2, 2, 3600), recv_time: Some(Time::from_ms(52)) },
            ],
            prior_in_flight: Bytes::new(4800),
            data_in_flight: Bytes::new(1200),
            ..Default::default()
        };
        m.on_feedback(&fb, 1.0);
        assert_eq!(m.recovery, Recovery::Conservation);
        // recovery window = max(in_flight + acked = 1200 + 2400, minimum 4 × 1460 B) = 5840 B,
        // below the (startup-grown) window, so it is the effective window
        assert_eq!(m.congestion_window(), MSS * 4);
        // a clean feedback acking a packet sent after the loss ends recovery
        m.on_packet_sent(&sp(4, 110, 2400));
        let fb2 = TransportFeedback {
            feedback_time: Time::from_ms(200),
            packets: vec![
                PacketResult { sent: sp(3, 3, 4800), recv_time: Some(Time::from_ms(53)) },
                PacketResult { sent: sp(4, 110, 2400), recv_time: Some(Time::from_ms(160)) },
            ],
            prior_in_flight: Bytes::new(2400),
            data_in_flight: Bytes::ZERO,
            ..Default::default()
        };
        m.on_feedback(&fb2, 1.0);
        assert_eq!(m.recovery, Recovery::NotInRecovery);
    }

    /// Whole start-up on a 4 Mbit/s, 40 ms RTT link: STARTUP → DRAIN → PROBE_BW, bandwidth
    /// near capacity, 8-phase gain cycling with the 1.25 probe phase, and PROBE_RTT after the
    /// 10 s min-RTT expiry with the window at 4 packets.
    #[test]
    fn webrtc_bbr_restarts_startup_on_a_route_change_and_rbbr_does_not() {
        let run = |c: Box<dyn Controller>| {
            let mut h = Harness::new(c, Bitrate::from_kbps(4000), 20, constraints(20_000));
            h.run_until(Time::from_ms(10_000));
            assert_eq!(diag(&*h.ctrl, "bbr_mode"), 2.0, "PROBE_BW after 10 s");
            let bw = diag(&*h.ctrl, "bbr_bw_kbps");
            let new = Constraints { min_rate: Bitrate::from_kbps(50), max_rate: Bitrate::from_kbps(20_000), start_rate: Bitrate::from_kbps(500) };
            let up = h.ctrl.on_route_change(Time::from_ms(10_000), new);
            (up, bw, diag(&*h.ctrl, "bbr_mode"), diag(&*h.ctrl, "bbr_pacing_gain"), diag(&*h.ctrl, "bbr_bw_kbps"))
        };
        let (up, bw, mode, gain, bw_after) = run(Box::new(BbrWebrtc::new(BbrWebrtcConfig::default(), &BuildContext::new(3))));
        // STARTUP at the high gain 2/ln 2, the bandwidth filter kept (libwebrtc's Reset), and a
        // rate update at once.
        assert_eq!(mode, 0.0);
        assert!((gain - 2.885).abs() < 1e-3, "{gain}");
        assert_eq!(bw_after, bw);
        assert!(up.target_rate.is_some() && up.pacing_rate.is_some());
        let (up, _, mode, _, _) = run(Box::new(Rbbr::new(RbbrConfig::default(), &BuildContext::new(3))));
        assert_eq!((up, mode), (Update::default(), 2.0), "rbbr keeps its state");
    }

    #[test]
    fn webrtc_bbr_state_machine_on_a_link() {
        let c = BbrWebrtc::new(BbrWebrtcConfig::default(), &BuildContext::new(3));
        let mut h = Harness::new(Box::new(c), Bitrate::from_kbps(4000), 20, constraints(20_000));
        let mut modes = Vec::new();
        let mut gains = std::collections::BTreeSet::new();
        let mut probe_rtt_cwnd = None;
        let mut t = 0;
        while t < 25_000 {
            t += 5;
            h.run_until(Time::from_ms(t));
            let (mode, gain) = bbr_state(&*h.ctrl);
            if modes.last() != Some(&mode) { modes.push(mode); }
            if mode == 2.0 { gains.insert((gain * 1000.0).round() as i64); }
            if mode == 3.0 && probe_rtt_cwnd.is_none() { probe_rtt_cwnd = Some(h.cwnd); }
        }
        assert_eq!(&modes[..3], &[0.0, 1.0, 2.0], "startup, drain, probe_bw: {modes:?}");
        assert!(modes.contains(&3.0), "PROBE_RTT after 10 s: {modes:?}");
        assert_eq!(probe_rtt_cwnd, Some(MSS * 4));
        assert!(gains.contains(&1250) && gains.contains(&1000), "{gains:?}");
        let bw = diag(&*h.ctrl, "bbr_bw_kbps");
        assert!(bw > 3600.0 && bw < 4800.0, "bandwidth estimate {bw}");
        let tgt = h.mean_target(Time::from_ms(5000), Time::from_ms(25_000)).kbps_f64();
        assert!(tgt > 3400.0 && tgt < 4600.0, "mean target {tgt}");
    }

    /// RBBR on the same link: window only in STARTUP/DRAIN, 4-phase cycle, PROBE_RTT after 5 s
    /// at half rate, target = min(0.9 · BW, pacing) in PROBE_BW.
    #[test]
    fn rbbr_state_machine_and_discounts() {
        let c = Rbbr::new(RbbrConfig::default(), &BuildContext::new(3));
        let mut h = Harness::new(Box::new(c), Bitrate::from_kbps(4000), 20, constraints(20_000));
        assert_eq!(h.cwnd, MSS * 32, "STARTUP keeps WebRTC-BBR's initial window");
        let mut probe_rtt_entries = 0;
        let mut last_mode = -1.0;
        let mut gains = std::collections::BTreeSet::new();
        let mut t = 0;
        let mut checked_probe_bw = false;
        let mut checked_probe_rtt = false;
        while t < 16_000 {
            t += 5;
            h.run_until(Time::from_ms(t));
            let (mode, gain) = bbr_state(&*h.ctrl);
            if mode == 3.0 && last_mode != 3.0 { probe_rtt_entries += 1; }
            last_mode = mode;
            let bw = Bitrate::from_kbps_f64(diag(&*h.ctrl, "bbr_bw_kbps"));
            if mode >= 2.0 { assert_eq!(h.cwnd, Bytes::INFINITY, "no window in PROBE_BW / PROBE_RTT"); }
            if mode == 2.0 {
                gains.insert((gain * 1000.0).round() as i64);
                if t > 3000 {
                    // pacing = gain · BW · d_p; target = min(0.9 · BW, pacing)
                    let dp = if diag(&*h.ctrl, "rbbr_pacing_discount_active") > 0.0 { 0.9 } else { 1.0 };
                    let pacing = gain * dp * bw.bps_f64();
                    assert!((h.pacing.bps_f64() - pacing).abs() < 2.0);
                    assert!((h.target.bps_f64() - (0.9 * bw.bps_f64()).min(pacing)).abs() < 2.0, "{} vs {}", h.target, bw);
                    checked_probe_bw = true;
                }
            }
            if mode == 3.0 {
                assert!((h.pacing.bps_f64() - 0.5 * bw.bps_f64()).abs() < 2.0);
                assert_eq!(h.target, h.pacing);
                checked_probe_rtt = true;
            }
        }
        assert!(checked_probe_bw && checked_probe_rtt);
        assert!(probe_rtt_entries >= 2, "5 s expiry → at least 2 PROBE_RTTs in 16 s, got {probe_rtt_entries}");
        assert_eq!(gains, [875, 1000, 1125].into_iter().collect());
        assert_eq!(h.cwnd, Bytes::INFINITY);
    }

    /// `pacing_discount_in_probe_up = false`: the 1.125 phase paces at exactly 1.125 · BW, the
    /// other phases keep the discount rule.
    #[test]
    fn rbbr_probe_up_phase_without_discount() {
        let cfg = RbbrConfig { pacing_discount_in_probe_up: false, pacing_discount_on_inflight: false, ..RbbrConfig::default() };
        let mut h = Harness::new(Box::new(Rbbr::new(cfg, &BuildContext::new(3))), Bitrate::from_kbps(4000), 20, constraints(20_000));
        let (mut up, mut other) = (0, 0);
        let mut t = 0;
        while t < 10_000 {
            t += 5;
            h.run_until(Time::from_ms(t));
            let (mode, gain) = bbr_state(&*h.ctrl);
            if mode != 2.0 { continue; }
            let bw = diag(&*h.ctrl, "bbr_bw_kbps") * 1000.0;
            let want = if gain > 1.0 { gain * bw } else { gain * 0.9 * bw };
            assert!((h.pacing.bps_f64() - want).abs() < 2.0, "gain {gain}: pacing {} want {want}", h.pacing);
            if gain > 1.0 { up += 1 } else { other += 1 }
        }
        assert!(up > 0 && other > 0);
    }

    /// Algorithm 1's `in_flight > g·BDP` test (spec 6.2) uses the in-flight right after the
    /// latest feedback, not the sender's count between feedbacks (which also holds packets that
    /// already arrived and wait for the next report): a send that raises the sender's in-flight
    /// far above `g·BDP` must not switch the pacing discount on; the next feedback decides.
    #[test]
    fn rbbr_pacing_discount_uses_in_flight_at_feedback() {
        let mut h = Harness::new(Box::new(Rbbr::new(RbbrConfig::default(), &BuildContext::new(3))), Bitrate::from_kbps(4000), 20, constraints(20_000));
        // Into PROBE_BW, then stop right after a feedback that left the discount off.
        let mut t = 3000;
        h.run_until(Time::from_ms(t));
        while !(bbr_state(&*h.ctrl).0 == 2.0 && diag(&*h.ctrl, "rbbr_pacing_discount_active") == 0.0) {
            t += 1;
            assert!(t < 20_000, "never in PROBE_BW with the discount off");
            h.run_until(Time::from_ms(t));
        }
        let (bw, gain) = (diag(&*h.ctrl, "bbr_bw_kbps"), bbr_state(&*h.ctrl).1);
        let bdp = Bitrate::from_kbps_f64(bw) * Duration::from_ms_f64(diag(&*h.ctrl, "bbr_min_rtt_ms"));
        // A send with in-flight = 3·g·BDP, then a tick: same state, pacing = g·BW (no discount).
        let big = (bdp * (3.0 * gain)).get();
        h.ctrl.on_packet_sent(&sp(1_000_000, t, big));
        let u = h.ctrl.on_tick(Time::from_ms(t));
        assert_eq!(diag(&*h.ctrl, "rbbr_pacing_discount_active"), 0.0, "a send switched the discount on");
        let pacing = u.pacing_rate.expect("pacing").bps_f64();
        assert!((pacing - gain * bw * 1000.0).abs() < 2.0, "pacing {pacing} vs g·BW {}", gain * bw * 1000.0);
    }

    /// The congestion window is the one of spec 7.4 step 8 and it gates the sender: no packet
    /// leaves while in-flight ≥ cwnd, and in PROBE_BW the window is 2·BW·min_rtt + ack height.
    #[test]
    fn webrtc_bbr_window_gates_sending() {
        let c = BbrWebrtc::new(BbrWebrtcConfig::default(), &BuildContext::new(5));
        let mut h = Harness::new(Box::new(c), Bitrate::from_kbps(2000), 30, constraints(20_000));
        let mut gated = 0;
        let mut t = 0;
        while t < 8000 {
            t += 1;
            h.run_until(Time::from_ms(t));
            if h.in_flight >= h.cwnd { gated += 1; }
            if diag(&*h.ctrl, "bbr_mode") == 2.0 {
                let bdp = Bitrate::from_kbps_f64(diag(&*h.ctrl, "bbr_bw_kbps")) * Duration::from_ms_f64(diag(&*h.ctrl, "bbr_min_rtt_ms"));
                assert!(h.cwnd >= bdp * 2.0 - Bytes::new(2), "cwnd {} < 2·BDP {}", h.cwnd, bdp * 2.0);
            }
        }
        assert!(h.max_send_excess < Bytes::ZERO, "sent with in-flight ≥ cwnd (excess {})", h.max_send_excess);
        assert!(gated > 0, "the window never bound: the test would not notice a missing gate");
    }

    pub(crate) fn diag(c: &dyn Controller, name: &str) -> f64 {
        let mut d = Vec::new();
        c.diagnostics(&mut d);
        d.iter().find(|(n, _)| *n == name).map_or(f64::NAN, |(_, v)| *v)
    }

    fn bbr_state(c: &dyn Controller) -> (f64, f64) { (diag(c, "bbr_mode"), diag(c, "bbr_pacing_gain")) }

    #[test]
    fn probe_bw_start_phase_is_never_the_drain_phase() {
        for seed in 0..200 {
            let mut m = BbrModel::new(BbrWebrtcConfig::default().model_config(), seed);
            m.force_full_bandwidth();
            // feed an empty feedback that passes DRAIN's in-flight test
            m.on_packet_sent(&sp(0, 0, 1200));
            let fb = TransportFeedback { feedback_time: Time::from_ms(100), packets: vec![PacketResult { sent: sp(0, 0, 1200), recv_time: Some(Time::from_ms(50)) }], ..Default::default() };
            m.on_feedback(&fb, 1.0);
            assert_eq!(m.mode, Mode::ProbeBw);
            assert_ne!(m.cycle_offset, 1, "seed {seed}");
        }
    }
}
