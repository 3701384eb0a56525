//! `oracle`: follows this flow's true fair share of the bottleneck capacity, read from the
//! simulator's ground truth. Not a real controller; an upper bound for reports.

use crate::controller::BuildContext;
use crate::controller::{Constraints, Controller, TransportFeedback, Update};
use crate::error::ConfigError;
use crate::units::{Bitrate, Time};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OracleConfig {
    /// Fraction of the fair share to use (below 1 keeps the queue empty).
    pub fraction: f64,
    pub pacing_factor: f64,
}

impl Default for OracleConfig {
    fn default() -> Self { OracleConfig { fraction: 0.95, pacing_factor: 1.1 } }
}

pub struct Oracle {
    cfg: OracleConfig,
    share: Arc<dyn Fn(Time) -> Bitrate + Send + Sync>,
    constraints: Constraints,
}

impl Oracle {
    pub fn new(cfg: OracleConfig, cx: &BuildContext) -> Result<Self, ConfigError> {
        let share = cx.fair_share.clone().ok_or_else(|| ConfigError::new("controller", "oracle needs ground truth and only runs in the simulator"))?;
        Ok(Oracle { cfg, share, constraints: Constraints::default() })
    }
    fn update(&self, now: Time) -> Update {
        let r = (self.share)(now).scale(self.cfg.fraction).max(self.constraints.min_rate).min(self.constraints.max_rate);
        Update::rates(r, self.cfg.pacing_factor)
    }
}

impl Controller for Oracle {
    fn on_start(&mut self, now: Time, c: Constraints) -> Update { self.constraints = c; self.update(now) }
    fn on_feedback(&mut self, fb: &TransportFeedback) -> Update { self.update(fb.feedback_time) }
    fn on_tick(&mut self, now: Time) -> Update { self.update(now) }
}
