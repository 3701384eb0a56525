//! `fixed`: a constant target rate, the "no congestion control" reference.

use crate::controller::{Constraints, Controller, TransportFeedback, Update};
use crate::units::{Bitrate, Time};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FixedConfig {
    /// Target rate in kbit/s.
    pub rate_kbps: f64,
    /// Pacing rate as a multiple of the target.
    pub pacing_factor: f64,
}

impl Default for FixedConfig {
    fn default() -> Self { FixedConfig { rate_kbps: 1000.0, pacing_factor: 2.5 } }
}

pub struct Fixed { rate: Bitrate, pacing_factor: f64 }

impl Fixed {
    pub fn new(cfg: FixedConfig) -> Self { Fixed { rate: Bitrate::from_kbps_f64(cfg.rate_kbps.max(0.0)), pacing_factor: cfg.pacing_factor.max(1.0) } }
}

impl Controller for Fixed {
    fn on_start(&mut self, _now: Time, _c: Constraints) -> Update { Update::rates(self.rate, self.pacing_factor) }
    fn on_feedback(&mut self, _fb: &TransportFeedback) -> Update { Update::default() }
}
