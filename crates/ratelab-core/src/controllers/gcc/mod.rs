//! GCC (libwebrtc goog_cc). Work in progress: being written in its own branch.

use super::BuildContext;
use crate::controller::{Constraints, Controller, TransportFeedback, Update};
use crate::units::Time;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GccConfig {}

pub struct Gcc;

impl Gcc {
    pub fn new(_cfg: GccConfig, _cx: &BuildContext) -> Self { Gcc }
}

impl Controller for Gcc {
    fn on_start(&mut self, _now: Time, c: Constraints) -> Update { Update::rates(c.start_rate, 2.5) }
    fn on_feedback(&mut self, _fb: &TransportFeedback) -> Update { Update::default() }
}
