//! `bbr-webrtc`: BBRv1 as shipped in libwebrtc's `modules/congestion_controller/bbr` (spec 7),
//! including its congestion window, which the lab's pacer honours (it stops sending media,
//! padding and probes while bytes in flight ≥ cwnd, spec 1.4).

use super::model::{BbrModel, Mode, ModelConfig, HIGH_GAIN, MSS};
use super::{BbrRule, BbrSender};
use crate::controller::Diagnostics;
use crate::controllers::common::AckClock;
use crate::controller::BuildContext;
use crate::units::{Bitrate, Bytes, Duration};
use serde::{Deserialize, Serialize};

/// WebRTC-BBR parameters; defaults are libwebrtc's `BbrControllerConfig::DefaultConfig()`
/// and the constants of `bbr_network_controller.cc` (spec 7.3).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BbrWebrtcConfig {
    /// PROBE_BW gain offset: the cycle is `[1+o, 1−o, 1, 1, 1, 1, 1, 1]` (spec 7.3: 0.25).
    pub probe_bw_gain_offset: f64,
    /// Length of the PROBE_BW gain cycle (spec 7.3: 8 phases).
    pub gain_cycle_length: u32,
    /// Bandwidth / ack-height max-filter window in round trips (spec 7.3: 10 = cycle + 2).
    pub bw_window_rounds: u32,
    /// min RTT expiry that triggers PROBE_RTT, ms (spec 7.3: 10 s).
    pub min_rtt_expiry_ms: f64,
    /// PROBE_RTT dwell time once in-flight is down to the minimum window, ms (spec 7.3: 200 ms).
    pub probe_rtt_ms: f64,
    /// STARTUP gain (spec 7.3: 2.885 = 2/ln 2); DRAIN uses its inverse.
    pub high_gain: f64,
    /// Rounds without 25 % bandwidth growth before STARTUP ends (spec 7.3: 3).
    pub startup_rounds: u32,
    /// Growth that counts as "bandwidth still growing" in STARTUP (spec 7.3: 1.25).
    pub startup_growth: f64,
    /// Leave STARTUP on loss recovery (spec 7.3: `exit_startup_on_loss = true`).
    pub exit_startup_on_loss: bool,
    /// PROBE_BW congestion-window gain (spec 7.3: 2.0).
    pub probe_bw_cwnd_gain: f64,
    /// Initial / minimum / maximum congestion window in packets of 1460 B (spec 7.3: 32 / 4 / 2000).
    pub initial_cwnd_packets: u32,
    pub min_cwnd_packets: u32,
    pub max_cwnd_packets: u32,
    /// Encoder target = gain · bandwidth, outside and inside PROBE_RTT (spec 7.3: 1.0, 1.0).
    pub encoder_rate_gain: f64,
    pub encoder_rate_gain_in_probe_rtt: f64,
    /// Hand the congestion window to the pacer (libwebrtc: yes). `false` gives a BBR without
    /// window gating, like the paper's QUIC-BBR-NCWND variant (Table II).
    pub use_cwnd: bool,
    /// Pad up to the pacing rate while probing (STARTUP, or PROBE_BW gain > 1), as libwebrtc's
    /// pacer config does (spec 7.5).
    pub pad_when_probing: bool,
    /// Ack time of delivery-rate samples: `feedback-arrival` (libwebrtc) or `receive-time`.
    pub ack_clock: AckClock,
}

impl Default for BbrWebrtcConfig {
    fn default() -> Self {
        BbrWebrtcConfig {
            probe_bw_gain_offset: 0.25,
            gain_cycle_length: 8,
            bw_window_rounds: 10,
            min_rtt_expiry_ms: 10_000.0,
            probe_rtt_ms: 200.0,
            high_gain: HIGH_GAIN,
            startup_rounds: 3,
            startup_growth: 1.25,
            exit_startup_on_loss: true,
            probe_bw_cwnd_gain: 2.0,
            initial_cwnd_packets: 32,
            min_cwnd_packets: 4,
            max_cwnd_packets: 2000,
            encoder_rate_gain: 1.0,
            encoder_rate_gain_in_probe_rtt: 1.0,
            use_cwnd: true,
            pad_when_probing: true,
            ack_clock: AckClock::FeedbackArrival,
        }
    }
}

/// Sanitise a user number: finite, within [lo, hi], else the default.
pub(crate) fn sane(v: f64, lo: f64, hi: f64, default: f64) -> f64 { if v.is_finite() { v.clamp(lo, hi) } else { default } }

impl BbrWebrtcConfig {
    pub(crate) fn model_config(&self) -> ModelConfig {
        let o = sane(self.probe_bw_gain_offset, 0.0, 0.9, 0.25);
        let n = self.gain_cycle_length.clamp(2, 64) as usize;
        let mut gains = vec![1.0; n];
        gains[0] = 1.0 + o;
        gains[1] = 1.0 - o;
        let hg = sane(self.high_gain, 1.0, 10.0, HIGH_GAIN);
        let min_cwnd = MSS * self.min_cwnd_packets.clamp(1, 1_000_000) as i64;
        ModelConfig {
            gain_cycle: gains,
            bw_window_rounds: self.bw_window_rounds.max(1) as u64,
            min_rtt_expiry: Duration::from_ms_f64(sane(self.min_rtt_expiry_ms, 1.0, 3.6e6, 10_000.0)),
            probe_rtt_time: Duration::from_ms_f64(sane(self.probe_rtt_ms, 0.0, 60_000.0, 200.0)),
            probe_rtt_waits_for_inflight: true,
            high_gain: hg,
            drain_gain: 1.0 / hg,
            startup_rounds: self.startup_rounds.max(1),
            startup_growth: sane(self.startup_growth, 1.0, 10.0, 1.25),
            exit_startup_on_loss: self.exit_startup_on_loss,
            initial_cwnd: (MSS * self.initial_cwnd_packets.clamp(1, 1_000_000) as i64).max(min_cwnd),
            min_cwnd,
            max_cwnd: (MSS * self.max_cwnd_packets.clamp(1, 1_000_000) as i64).max(min_cwnd),
            probe_bw_cwnd_gain: sane(self.probe_bw_cwnd_gain, 0.1, 100.0, 2.0),
            ack_clock: self.ack_clock,
        }
    }
}

/// `bbr-webrtc`'s rate rule (spec 7.5 `CreateRateUpdate`): target = min(gain·BW, pacing)
/// with the model's own pacing rate; the congestion window when `use_cwnd`.
pub struct WebrtcRule {
    cfg: BbrWebrtcConfig,
}

/// `bbr-webrtc`: the BBR shell with libwebrtc's rate rule.
pub type BbrWebrtc = BbrSender<WebrtcRule>;

impl BbrSender<WebrtcRule> {
    pub fn new(cfg: BbrWebrtcConfig, cx: &BuildContext) -> Self {
        let model = BbrModel::new(cfg.model_config(), cx.seed);
        BbrSender::with_rule(WebrtcRule { cfg }, model)
    }
}

impl BbrRule for WebrtcRule {
    fn pad_when_probing(&self) -> bool { self.cfg.pad_when_probing }
    fn resets_on_route_change(&self) -> bool { true }

    fn rates(&mut self, model: &BbrModel, bw: Bitrate) -> (Bitrate, Bitrate, Option<Bytes>) {
        let pacing = model.pacing_rate();
        let gain = if model.mode == Mode::ProbeRtt { self.cfg.encoder_rate_gain_in_probe_rtt } else { self.cfg.encoder_rate_gain };
        let target = bw.scale(sane(gain, 0.0, 10.0, 1.0)).min(pacing);
        (target, pacing, self.cfg.use_cwnd.then(|| model.congestion_window()))
    }

    fn diagnostics(&self, model: &BbrModel, target: Bitrate, out: &mut Diagnostics) {
        out.push(("bbr_cwnd_bytes", model.congestion_window().as_f64()));
        out.push(("bbr_in_recovery", model.in_recovery() as u8 as f64));
        out.push(("bbr_target_kbps", target.kbps_f64()));
    }
}
