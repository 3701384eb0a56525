//! Controller registry: every controller is built by name with typed parameters that a
//! scenario can override. Each controller's parameters are a serde struct with defaults and
//! `deny_unknown_fields`, so an unknown or mistyped parameter is an error naming the field.

use crate::controller::{Controller, ReceiverEstimator};
use crate::error::ConfigError;
use crate::units::{Bitrate, Time};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::Arc;

pub mod fixed;
pub mod gcc;
pub mod oracle;

/// What the driver offers a controller at construction.
#[derive(Clone)]
pub struct BuildContext {
    /// Seed for any randomness inside the controller (derived from the run seed and flow id).
    pub seed: u64,
    /// Ground truth for reference controllers (`oracle`): this flow's fair share of the
    /// bottleneck at time t. Real controllers must not use it.
    pub fair_share: Option<Arc<dyn Fn(Time) -> Bitrate + Send + Sync>>,
}

impl BuildContext {
    pub fn new(seed: u64) -> Self { BuildContext { seed, fair_share: None } }
}

/// A constructed controller: the sender part, plus a receiver part for receiver-side estimators.
pub struct Built {
    pub sender: Box<dyn Controller>,
    pub receiver: Option<Box<dyn ReceiverEstimator>>,
}

impl Built {
    pub fn sender(c: impl Controller + 'static) -> Self { Built { sender: Box::new(c), receiver: None } }
}

/// One registry entry.
pub struct Entry {
    pub name: &'static str,
    pub summary: &'static str,
    /// Default parameters as a JSON object (for `ratelab list` and docs).
    pub defaults: fn() -> serde_json::Value,
    pub build: fn(&serde_json::Value, &BuildContext) -> Result<Built, ConfigError>,
}

/// Every controller ratelab knows, in listing order.
pub fn registry() -> &'static [Entry] {
    static ENTRIES: &[Entry] = &[
        Entry {
            name: "gcc",
            summary: "Google Congestion Control as in current libwebrtc goog_cc (profiles: current, m84, m60)",
            defaults: defaults_of::<gcc::GccConfig>,
            build: |p, cx| Ok(Built::sender(gcc::Gcc::new(parse_params(p)?, cx))),
        },
        Entry {
            name: "fixed",
            summary: "constant target rate (no congestion control)",
            defaults: defaults_of::<fixed::FixedConfig>,
            build: |p, _| Ok(Built::sender(fixed::Fixed::new(parse_params(p)?))),
        },
        Entry {
            name: "oracle",
            summary: "follows the true fair share of the bottleneck capacity (upper bound for reports)",
            defaults: defaults_of::<oracle::OracleConfig>,
            build: |p, cx| Ok(Built::sender(oracle::Oracle::new(parse_params(p)?, cx)?)),
        },
    ];
    ENTRIES
}

pub fn find(name: &str) -> Option<&'static Entry> { registry().iter().find(|e| e.name == name) }

/// Build a controller by name. `params` is a JSON object (or null for defaults).
pub fn build(name: &str, params: &serde_json::Value, cx: &BuildContext) -> Result<Built, ConfigError> {
    let entry = find(name).ok_or_else(|| {
        let names: Vec<&str> = registry().iter().map(|e| e.name).collect();
        ConfigError::new("controller", format!("unknown controller '{name}' (known: {})", names.join(", ")))
    })?;
    (entry.build)(params, cx).map_err(|e| e.prefixed("params"))
}

fn defaults_of<T: Default + Serialize>() -> serde_json::Value {
    serde_json::to_value(T::default()).unwrap_or(serde_json::Value::Null)
}

/// Deserialize typed parameters; missing fields take defaults, unknown ones are errors.
pub fn parse_params<T: DeserializeOwned + Default>(v: &serde_json::Value) -> Result<T, ConfigError> {
    if v.is_null() { return Ok(T::default()); }
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        ConfigError::new(if path == "." { String::new() } else { path }, e.into_inner().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_builds_with_defaults_and_rejects_unknown_params() {
        let mut cx = BuildContext::new(1);
        cx.fair_share = Some(Arc::new(|_| Bitrate::from_kbps(1000)));
        for e in registry() {
            assert!(build(e.name, &serde_json::Value::Null, &cx).is_ok(), "{}", e.name);
            assert!(build(e.name, &(e.defaults)(), &cx).is_ok(), "{} defaults round-trip", e.name);
            let bad = serde_json::json!({"no_such_param": 1});
            let err = build(e.name, &bad, &cx).err().expect("unknown param must fail");
            assert!(err.to_string().contains("no_such_param"), "{}", err);
        }
        assert!(build("nope", &serde_json::Value::Null, &cx).is_err());
    }
}
