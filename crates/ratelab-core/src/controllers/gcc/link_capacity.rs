//! Link-capacity estimator used by AIMD (spec 2.6.1, libwebrtc `link_capacity_estimator.cc`).
//!
//! An EWMA (kbit/s) of the acknowledged rate sampled at overuse moments, with a normalized
//! variance `σ²` clamped to [0.4, 2.5]; `deviation = sqrt(σ²·C)`, bounds `C ± 3·deviation`.

use crate::units::Bitrate;

/// EWMA gain for overuse samples (2.6.1).
const ALPHA_OVERUSE: f64 = 0.05;
/// EWMA gain for probe samples (2.6.1; not used by the current flow, kept for completeness).
#[allow(dead_code)]
const ALPHA_PROBE: f64 = 0.5;
const DEVIATION_MIN: f64 = 0.4;
const DEVIATION_MAX: f64 = 2.5;

#[derive(Clone, Debug)]
pub struct LinkCapacityEstimator {
    /// Estimate in kbit/s, `None` when there is none.
    estimate_kbps: Option<f64>,
    /// Normalized variance σ².
    deviation_kbps: f64,
}

impl Default for LinkCapacityEstimator {
    fn default() -> Self { LinkCapacityEstimator { estimate_kbps: None, deviation_kbps: DEVIATION_MIN } }
}

impl LinkCapacityEstimator {
    pub fn has_estimate(&self) -> bool { self.estimate_kbps.is_some() }

    pub fn estimate(&self) -> Option<Bitrate> { self.estimate_kbps.map(Bitrate::from_kbps_f64) }

    fn deviation_estimate_kbps(&self, c: f64) -> f64 { (self.deviation_kbps * c).max(0.0).sqrt() }

    /// `C + 3·dev`, or infinity without an estimate.
    pub fn upper_bound(&self) -> Bitrate {
        match self.estimate_kbps {
            Some(c) => Bitrate::from_kbps_f64(c + 3.0 * self.deviation_estimate_kbps(c)),
            None => Bitrate::INFINITY,
        }
    }

    /// `max(0, C − 3·dev)`, or zero without an estimate.
    pub fn lower_bound(&self) -> Bitrate {
        match self.estimate_kbps {
            Some(c) => Bitrate::from_kbps_f64((c - 3.0 * self.deviation_estimate_kbps(c)).max(0.0)),
            None => Bitrate::ZERO,
        }
    }

    pub fn reset(&mut self) { self.estimate_kbps = None; }

    pub fn on_overuse_detected(&mut self, acked_rate: Bitrate) { self.update(acked_rate, ALPHA_OVERUSE); }

    #[allow(dead_code)]
    pub fn on_probe_rate(&mut self, probe_rate: Bitrate) { self.update(probe_rate, ALPHA_PROBE); }

    fn update(&mut self, sample: Bitrate, alpha: f64) {
        let x = sample.kbps_f64();
        if !x.is_finite() {
            return;
        }
        let c = match self.estimate_kbps {
            None => x,
            Some(c) => (1.0 - alpha) * c + alpha * x,
        };
        let norm = c.max(1.0);
        let err = c - x;
        let dev = (1.0 - alpha) * self.deviation_kbps + alpha * err * err / norm;
        self.deviation_kbps = dev.clamp(DEVIATION_MIN, DEVIATION_MAX);
        self.estimate_kbps = Some(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_worked_updates() {
        let mut l = LinkCapacityEstimator::default();
        assert!(!l.has_estimate());
        assert_eq!(l.upper_bound(), Bitrate::INFINITY);
        assert_eq!(l.lower_bound(), Bitrate::ZERO);
        l.on_overuse_detected(Bitrate::from_kbps(1000));
        // C = 1000, σ² = 0.95·0.4 = 0.38 -> clamped 0.4, dev = sqrt(400) = 20.
        assert_eq!(l.estimate(), Some(Bitrate::from_kbps(1000)));
        assert_eq!(l.upper_bound(), Bitrate::from_kbps(1060));
        assert_eq!(l.lower_bound(), Bitrate::from_kbps(940));
        l.on_overuse_detected(Bitrate::from_kbps(800));
        // C = 990, err = 190, σ² = 0.38 + 0.05·36100/990 = 2.203232..., dev = sqrt(σ²·990).
        let s2 = 0.38 + 0.05 * 36100.0 / 990.0;
        let dev = (s2 * 990.0f64).sqrt();
        assert_eq!(l.estimate(), Some(Bitrate::from_kbps(990)));
        assert_eq!(l.upper_bound(), Bitrate::from_kbps_f64(990.0 + 3.0 * dev));
        assert_eq!(l.lower_bound(), Bitrate::from_kbps_f64(990.0 - 3.0 * dev));
        // Deviation clamps at 2.5.
        l.on_overuse_detected(Bitrate::from_kbps(10));
        assert!(l.deviation_kbps <= 2.5);
        l.reset();
        assert!(!l.has_estimate());
    }
}
