//! GCC's parameters and its profiles (spec 2.13): which libwebrtc generation a run reproduces,
//! and the per-profile defaults every unset option resolves to.

use super::acked_bitrate::AckedEstimatorKind;
use super::trendline;
use serde::{Deserialize, Serialize};

/// Which libwebrtc generation to reproduce (spec 2.13).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GccProfile {
    /// Current libwebrtc: LossBasedBweV2, congestion window 350 ms with pushback, pacing 1.1×
    /// after the first feedback, AIMD decrease with the −5 kbit/s term.
    #[default]
    Current,
    /// WebRTC M84 (the Cross paper's ns-3 harness): classic loss control, no window, pacing
    /// 2.5×, AIMD decrease without −5 kbit/s.
    M84,
    /// WebRTC M60 (LCC's baseline): as M84 (trendline delay estimator assumed, spec 2.13 ⚠).
    M60,
}

/// GCC parameters. Every `Option` defaults to the profile's value when unset.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GccConfig {
    /// `"current"` (default), `"m84"` or `"m60"` (spec 2.13).
    pub profile: GccProfile,
    /// Pacing rate / target. Unset: `initial_pacing_factor` until the first transport
    /// feedback, then 1.1 for `current` and 2.5 for `m84`/`m60` (spec 2.10, 2.13). Set: this
    /// factor from the start (libwebrtc's `pacing_factor_.value_or(...)`).
    pub pacing_factor: Option<f64>,
    /// Pacing rate / target before the first transport feedback (spec 2.10: 2.5).
    pub initial_pacing_factor: f64,
    /// Congestion window with pushback on/off. Unset: on for `current`, off for `m84`/`m60`.
    pub cwnd: Option<bool>,
    /// Pushback by frame dropping (libwebrtc's `DropFrame:true`, today's default): the target
    /// stays at the loss-based rate and the encoder drops frames by the pushback ratio
    /// (`Update::cwnd_reduce_ratio`). Off: pushback lowers the target (older libwebrtc).
    /// Unset: on for `current`, off for `m84`/`m60`.
    pub cwnd_drop_frame: Option<bool>,
    /// Acknowledged-bitrate estimator: `"robust"` (`RobustThroughputEstimator`) or
    /// `"bayesian"` (`AcknowledgedBitrateEstimator`). Unset: robust for `current`, bayesian
    /// for `m84`/`m60`.
    pub acked_estimator: Option<AckedEstimatorKind>,
    /// Queue time added to the min feedback RTT in the window (ms; spec 2.10: 350).
    pub cwnd_queue_ms: f64,
    /// Pushback never lowers the target below this (kbit/s; spec 2.10: 30), unless the
    /// target itself is lower.
    pub cwnd_min_pushback_kbps: f64,
    /// Also send the window to the pacer (`Update::cwnd`). libwebrtc does not when pushback is
    /// on (the pacer is then oblivious to the window), hence the default `false`.
    pub cwnd_to_pacer: bool,
    /// Use LossBasedBweV2 (2.9.2) instead of the classic loss controller (2.9.1).
    /// Unset: on for `current`, off for `m84`/`m60`.
    pub loss_v2: Option<bool>,
    /// Subtract 5 kbit/s in AIMD decreases (2.6). Unset: on for `current`, off otherwise.
    pub aimd_backoff_term: Option<bool>,
    /// Any probing at all (initial, further, rapid recovery, ALR).
    pub probing: bool,
    /// Periodic ALR probing every 5 s at 2× (application opt-in in libwebrtc, spec 2.8).
    pub alr_probing: bool,
    /// Aggregation period of transport-feedback losses into the classic loss controller (ms).
    /// libwebrtc's feedback-only mode uses 1000 ms (`kLossUpdateInterval`, the RTCP RR period).
    pub loss_report_interval_ms: f64,
    /// Trendline window in packet groups (spec 2.4: 20; 10…200 allowed by libwebrtc's trial).
    pub trendline_window: usize,
    /// RTT backoff of spec 2.10 (×0.8 per second when the corrected RTT exceeds 3 s).
    pub rtt_backoff: bool,
    /// libwebrtc `WebRTC-Bwe-SafeResetOnRouteChange` (off by default there too): on a route
    /// change, start the new route at min(start rate, current estimate) instead of the start
    /// rate, so that a low estimate is kept and a high one is cut to the start rate.
    pub safe_reset_on_route_change: bool,
    /// The trial's `ack` option: the estimate used by the safe reset is the acknowledged
    /// bitrate instead of the loss-based target (libwebrtc `safe_reset_acknowledged_rate`).
    pub safe_reset_acked: bool,
}

impl Default for GccConfig {
    fn default() -> Self {
        GccConfig {
            profile: GccProfile::Current,
            pacing_factor: None,
            initial_pacing_factor: 2.5,
            cwnd: None,
            cwnd_drop_frame: None,
            acked_estimator: None,
            cwnd_queue_ms: 350.0,
            cwnd_min_pushback_kbps: 30.0,
            cwnd_to_pacer: false,
            loss_v2: None,
            aimd_backoff_term: None,
            probing: true,
            alr_probing: false,
            loss_report_interval_ms: 1000.0,
            trendline_window: trendline::DEFAULT_WINDOW,
            rtt_backoff: true,
            safe_reset_on_route_change: false,
            safe_reset_acked: false,
        }
    }
}

/// Profile defaults resolved with the overrides.
#[derive(Clone, Copy, Debug)]
pub(super) struct Resolved {
    /// `None`: the default pair (initial factor before the first feedback, profile after).
    pub(super) pacing_factor: Option<f64>,
    pub(super) profile_pacing_factor: f64,
    pub(super) initial_pacing_factor: f64,
    pub(super) cwnd: bool,
    pub(super) drop_frame: bool,
    pub(super) acked: AckedEstimatorKind,
    pub(super) loss_v2: bool,
    pub(super) aimd_backoff_term: bool,
}

impl GccConfig {
    pub(super) fn resolve(&self) -> Resolved {
        let current = self.profile == GccProfile::Current;
        let sane = |v: f64, d: f64| if v.is_finite() && v > 0.0 { v } else { d };
        Resolved {
            pacing_factor: self.pacing_factor.map(|f| sane(f, if current { 1.1 } else { 2.5 })),
            profile_pacing_factor: if current { 1.1 } else { 2.5 },
            initial_pacing_factor: sane(self.initial_pacing_factor, 2.5),
            cwnd: self.cwnd.unwrap_or(current),
            drop_frame: self.cwnd_drop_frame.unwrap_or(current),
            acked: self.acked_estimator.unwrap_or(if current { AckedEstimatorKind::Robust } else { AckedEstimatorKind::Bayesian }),
            loss_v2: self.loss_v2.unwrap_or(current),
            aimd_backoff_term: self.aimd_backoff_term.unwrap_or(current),
        }
    }
}

/// The acknowledged-bitrate estimator a configuration runs (profile default or override).
pub fn resolved_acked_estimator(cfg: &GccConfig) -> AckedEstimatorKind { cfg.resolve().acked }
