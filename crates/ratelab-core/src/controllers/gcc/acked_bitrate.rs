//! Acknowledged-bitrate estimator (spec 2.7, libwebrtc `acknowledged_bitrate_estimator.cc` and
//! `bitrate_estimator.cc`).
//!
//! Received bytes are summed in arrival-time windows (500 ms until the first estimate, then
//! 150 ms); each window's rate `z` updates a scalar Bayesian filter whose measurement noise
//! grows with the relative innovation `10·|R̂ − z|/R̂`.

use super::robust_throughput::{RobustSettings, RobustThroughputEstimator};
use crate::controller::PacketResult;
use crate::units::{Bitrate, Bytes, Time};
use serde::{Deserialize, Serialize};

const INITIAL_WINDOW_MS: i64 = 500;
const WINDOW_MS: i64 = 150;
const UNCERTAINTY_SCALE: f64 = 10.0;
/// libwebrtc allows a separate scale in ALR; its default equals the normal scale (2.7).
const UNCERTAINTY_SCALE_IN_ALR: f64 = UNCERTAINTY_SCALE;
const INITIAL_VARIANCE: f64 = 50.0;
const PROCESS_NOISE: f64 = 5.0;
/// Variance added when the ALR ends, for fast re-convergence (2.7).
const ALR_END_VARIANCE: f64 = 200.0;

/// The windowed Bayesian throughput filter (`bitrate_estimator.cc`). Rates in kbit/s.
#[derive(Clone, Debug, PartialEq)]
pub struct BitrateEstimator {
    sum_bytes: i64,
    current_window_ms: i64,
    prev_time_ms: Option<i64>,
    /// `None` until the first window sample.
    estimate_kbps: Option<f64>,
    variance: f64,
}

impl Default for BitrateEstimator {
    fn default() -> Self {
        BitrateEstimator { sum_bytes: 0, current_window_ms: 0, prev_time_ms: None, estimate_kbps: None, variance: INITIAL_VARIANCE }
    }
}

impl BitrateEstimator {
    pub fn update(&mut self, at: Time, bytes: Bytes, in_alr: bool) {
        let window = if self.estimate_kbps.is_none() { INITIAL_WINDOW_MS } else { WINDOW_MS };
        let Some(z) = self.update_window(at.as_us().div_euclid(1000), bytes.get().max(0), window) else { return };
        let r = match self.estimate_kbps {
            Some(r) if r > 0.0 => r,
            _ => {
                // First sample (or a degenerate zero estimate): initialize R̂ = z.
                self.estimate_kbps = Some(z);
                return;
            }
        };
        let scale = if in_alr { UNCERTAINTY_SCALE_IN_ALR } else { UNCERTAINTY_SCALE };
        let sigma = scale * (r - z).abs() / r;
        let sample_var = sigma * sigma;
        let pred_var = self.variance + PROCESS_NOISE;
        let denom = sample_var + pred_var;
        let new_r = (sample_var * r + pred_var * z) / denom;
        let new_var = sample_var * pred_var / denom;
        if new_r.is_finite() && new_var.is_finite() {
            self.estimate_kbps = Some(new_r.max(0.0));
            self.variance = new_var;
        }
    }

    /// Accumulate bytes into the current window; returns a rate sample (kbit/s) when a window closes.
    fn update_window(&mut self, now_ms: i64, bytes: i64, window_ms: i64) -> Option<f64> {
        if let Some(prev) = self.prev_time_ms {
            if now_ms < prev {
                // Time went backwards: restart the window.
                self.prev_time_ms = None;
                self.sum_bytes = 0;
                self.current_window_ms = 0;
            }
        }
        if let Some(prev) = self.prev_time_ms {
            let gap = now_ms - prev;
            self.current_window_ms += gap;
            if gap > window_ms {
                // A gap longer than the window: the bytes so far do not describe a rate.
                self.sum_bytes = 0;
                self.current_window_ms %= window_ms;
            }
        }
        self.prev_time_ms = Some(now_ms);
        let mut sample = None;
        if self.current_window_ms >= window_ms {
            sample = Some(8.0 * self.sum_bytes as f64 / window_ms as f64);
            self.current_window_ms -= window_ms;
            self.sum_bytes = 0;
        }
        self.sum_bytes += bytes;
        sample
    }

    pub fn bitrate(&self) -> Option<Bitrate> { self.estimate_kbps.map(Bitrate::from_kbps_f64) }

    /// After an ALR period: allow fast re-convergence (2.7).
    pub fn expect_fast_rate_change(&mut self) { self.variance += ALR_END_VARIANCE; }
}

/// Feeds received packets into [`BitrateEstimator`], handling the ALR-end rule (2.7).
#[derive(Clone, Debug, Default)]
pub struct AckedBitrateEstimator {
    estimator: BitrateEstimator,
    alr_ended_time: Option<Time>,
    in_alr: bool,
}

impl AckedBitrateEstimator {
    /// `packets` are the received packets sorted by arrival time.
    pub fn incoming(&mut self, packets: &[PacketResult]) {
        for p in packets {
            let Some(recv) = p.recv_time else { continue };
            if let Some(t) = self.alr_ended_time {
                if p.sent.send_time > t {
                    self.estimator.expect_fast_rate_change();
                    self.alr_ended_time = None;
                }
            }
            self.estimator.update(recv, p.sent.size, self.in_alr);
        }
    }

    pub fn bitrate(&self) -> Option<Bitrate> { self.estimator.bitrate() }
    /// The filter inside (for tests that replay its expected calls).
    pub fn estimator(&self) -> &BitrateEstimator { &self.estimator }
    pub fn set_alr(&mut self, in_alr: bool) { self.in_alr = in_alr; }
    pub fn set_alr_ended_time(&mut self, t: Time) { self.alr_ended_time = Some(t); }
}

/// Which acknowledged-bitrate estimator GCC runs (`AcknowledgedBitrateEstimatorInterface::Create`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AckedEstimatorKind {
    /// `RobustThroughputEstimator`, libwebrtc's default since 2023 (`current`).
    Robust,
    /// The Bayesian `AcknowledgedBitrateEstimator` of M60/M84.
    Bayesian,
}

/// The acknowledged-bitrate estimator of one GCC instance.
#[derive(Clone, Debug)]
pub enum AckedRate {
    Robust(RobustThroughputEstimator),
    Bayesian(AckedBitrateEstimator),
}

impl AckedRate {
    pub fn new(kind: AckedEstimatorKind) -> Self {
        match kind {
            AckedEstimatorKind::Robust => AckedRate::Robust(RobustThroughputEstimator::new(RobustSettings::default())),
            AckedEstimatorKind::Bayesian => AckedRate::Bayesian(AckedBitrateEstimator::default()),
        }
    }
    /// `packets` are the received packets sorted by arrival time.
    pub fn incoming(&mut self, packets: &[PacketResult]) {
        match self {
            AckedRate::Robust(e) => e.incoming(packets),
            AckedRate::Bayesian(e) => e.incoming(packets),
        }
    }
    pub fn bitrate(&self) -> Option<Bitrate> {
        match self {
            AckedRate::Robust(e) => e.bitrate(),
            AckedRate::Bayesian(e) => e.bitrate(),
        }
    }
    /// ALR only matters to the Bayesian filter (the robust estimator ignores it, as libwebrtc's).
    pub fn set_alr(&mut self, in_alr: bool) {
        if let AckedRate::Bayesian(e) = self {
            e.set_alr(in_alr);
        }
    }
    pub fn set_alr_ended_time(&mut self, t: Time) {
        if let AckedRate::Bayesian(e) = self {
            e.set_alr_ended_time(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_estimate_after_500_ms_then_150_ms_windows() {
        let mut e = BitrateEstimator::default();
        // 1200 B every 10 ms = 960 kbit/s.
        for k in 0..50 {
            e.update(Time::from_ms(10 * k), Bytes::new(1200), false);
        }
        assert_eq!(e.bitrate(), None);
        e.update(Time::from_ms(500), Bytes::new(1200), false);
        // Window [0, 500): 50 packets · 1200 B · 8 / 500 ms = 960 kbit/s.
        assert_eq!(e.bitrate(), Some(Bitrate::from_kbps(960)));
        assert_eq!(e.variance, 50.0);
        for k in 51..=65 {
            e.update(Time::from_ms(10 * k), Bytes::new(1200), false);
        }
        // Identical sample: σ = 0 -> R̂ = z, P = 0.
        assert_eq!(e.bitrate(), Some(Bitrate::from_kbps(960)));
        assert_eq!(e.variance, 0.0);
    }

    #[test]
    fn bayesian_update_by_hand() {
        let mut e = BitrateEstimator { estimate_kbps: Some(960.0), variance: 0.0, ..Default::default() };
        // Drive one 150 ms window of 480 kbit/s: 9000 bytes then a closing packet.
        e.update(Time::from_ms(0), Bytes::new(9000), false);
        e.update(Time::from_ms(150), Bytes::new(0), false);
        // σ = 10·480/960 = 5, σ² = 25, P_pred = 5: R̂ = (25·960 + 5·480)/30 = 880, P = 125/30.
        let r = e.bitrate().unwrap().kbps_f64();
        assert!((r - 880.0).abs() < 1e-3, "{r}");
        assert!((e.variance - 125.0 / 30.0).abs() < 1e-12);
    }

    #[test]
    fn alr_end_adds_variance_once_and_backwards_time_is_safe() {
        let mut a = AckedBitrateEstimator::default();
        a.set_alr_ended_time(Time::from_ms(100));
        let pkt = |send: i64, recv: i64| PacketResult {
            sent: crate::controller::SentPacket { seq: 0, size: Bytes::new(1000), send_time: Time::from_ms(send), probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO },
            recv_time: Some(Time::from_ms(recv)),
        };
        a.incoming(&[pkt(50, 60)]);
        assert_eq!(a.estimator.variance, 50.0);
        a.incoming(&[pkt(150, 160), pkt(160, 170)]);
        assert_eq!(a.estimator.variance, 250.0);
        // Time going backwards and zero-size packets never produce NaN.
        let mut e = BitrateEstimator::default();
        for k in 0..200 {
            let t = if k % 7 == 0 { 1000 - k } else { 1000 + 3 * k };
            e.update(Time::from_ms(t), Bytes::new(if k % 3 == 0 { 0 } else { 500 }), false);
            if let Some(r) = e.bitrate() {
                assert!(r.bps() >= 0);
            }
        }
    }
}
