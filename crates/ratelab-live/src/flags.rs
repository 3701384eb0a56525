//! Every numeric option of the live components checked against a range declared once, in the
//! components themselves so that no front end (the `ratelab` CLI, the developer binary, the
//! browser harness) can skip it.
//!
//! Where an option sets a scenario field (a link's capacity, loss, queue; a flow's rates, delay,
//! feedback interval) its range is that field's in `ratelab_core::scenario::limits`; the few
//! options a scenario has no field for (timeouts, the emulator's "0 = until stopped") declare
//! theirs here from the same constants. Errors name the option as the CLI spells it
//! (`--capacity-kbps: -5 is out of range: must be in (0, 100000000] kbit/s`), which the binding
//! turns into one line and exit 2.

use ratelab_core::scenario::limits::{check_tree, limit_of, Limit, MAX_DURATION_S};
use ratelab_core::ConfigError;
use serde::Serialize;

/// An option the scenario has no field for: its range.
const fn own(field: &'static str, min: f64, min_exclusive: bool, max: f64, unit: &'static str) -> Limit {
    Limit { field, min, min_exclusive, max, unit, note: "" }
}

/// A run or a wait: 0 excluded, at most the longest scenario.
pub const SECONDS: Limit = own("seconds", 0.0, true, MAX_DURATION_S, "s");
/// A run length where 0 means "until stopped".
pub const SECONDS_OR_ZERO: Limit = own("seconds", 0.0, false, MAX_DURATION_S, "s");
/// Most datagrams the emulator may hold (each up to 64 KiB): 10 million.
pub const MAX_HELD: Limit = own("max_held", 1.0, false, 1e7, "datagrams");

/// Early wake-up of the emulator before a delivery, µs (spinning longer only burns CPU).
pub const SPIN_US: Limit = own("spin_us", 0.0, false, 10_000.0, "µs");

/// The scenario's range of the concrete field path `field` (`flows[0].start_s`).
pub fn scenario(field: &str) -> &'static Limit {
    limit_of(field).unwrap_or_else(|| panic!("no scenario limit for {field}"))
}

/// Check `v` against `limit`, naming the option `name` (its CLI flag, or its option path).
pub fn check(name: &str, limit: &Limit, v: f64) -> Result<(), ConfigError> { limit.check(name, v) }

/// Check every number of `part` (a serialized link or flow) against the scenario's ranges, as
/// the field `prefix` of a scenario; a field that has a CLI flag (in `flags`: path → flag) is
/// named by its flag.
pub fn check_part<T: Serialize>(prefix: &str, part: &T, flags: &[(&str, &str)]) -> Result<(), ConfigError> {
    let v = serde_json::to_value(part).map_err(|e| ConfigError::new(prefix, e.to_string()))?;
    check_tree(prefix, &v).map_err(|mut e| {
        if let Some((_, flag)) = flags.iter().find(|(path, _)| *path == e.field) { e.field = (*flag).to_string(); }
        e
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratelab_core::scenario::LinkConfig;

    #[test]
    fn a_flagged_field_is_named_by_its_flag_and_the_others_by_their_path() {
        let l = LinkConfig { capacity_kbps: Some(-5.0), trace_format: "auto".into(), trace_scale: 1.0, mahimahi_bin_ms: 100.0, ..Default::default() };
        let e = check_part("link", &l, &[("link.capacity_kbps", "--capacity-kbps")]).unwrap_err();
        assert_eq!(e.field, "--capacity-kbps");
        assert_eq!(e.message, "-5 is out of range: must be in (0, 100000000] kbit/s");
        let e = check_part("link", &l, &[]).unwrap_err();
        assert_eq!(e.field, "link.capacity_kbps");
        let ok = LinkConfig { capacity_kbps: Some(1000.0), ..l };
        check_part("link", &ok, &[]).unwrap();
    }

    /// The options `ratelab emulate` builds from its flags (python/ratelab/live.py), with `link`
    /// and top-level entries overridden.
    fn emulate(link: serde_json::Value, top: serde_json::Value) -> Result<(), ConfigError> {
        let mut doc = serde_json::json!({"link": {"delay_ms": 0.0, "loss": 0.0, "capacity_kbps": 1000.0}, "forward_delay_ms": 0.0, "reverse_delay_ms": 0.0, "duration_s": 0.0, "seed": 1});
        for (k, v) in link.as_object().unwrap() { doc["link"][k] = v.clone(); }
        for (k, v) in top.as_object().unwrap() { doc[k] = v.clone(); }
        let o: crate::emulator::EmulatorOptions = serde_json::from_value(doc).unwrap();
        o.validate()
    }

    fn refused(r: Result<(), ConfigError>, flag: &str, range: &str) {
        let e = r.expect_err(flag);
        assert_eq!(e.field, flag, "{e}");
        assert!(e.message.ends_with(&format!("must be in {range}")), "{e}");
    }

    #[test]
    fn emulate_flags_out_of_range_are_refused_by_name() {
        use serde_json::json;
        emulate(json!({}), json!({})).unwrap();
        emulate(json!({"queue": {"packets": 0}, "loss": 1.0}), json!({"forward_delay_ms": 10_000.0, "duration_s": 5.0})).unwrap();
        refused(emulate(json!({"capacity_kbps": -5.0}), json!({})), "--capacity-kbps", "(0, 100000000] kbit/s");
        refused(emulate(json!({"capacity_kbps": 0.0}), json!({})), "--capacity-kbps", "(0, 100000000] kbit/s");
        refused(emulate(json!({"capacity_kbps": 1e12}), json!({})), "--capacity-kbps", "(0, 100000000] kbit/s");
        refused(emulate(json!({"loss": 2.0}), json!({})), "--loss", "[0, 1]");
        refused(emulate(json!({}), json!({"forward_delay_ms": -1.0})), "--delay-ms", "[0, 10000] ms");
        refused(emulate(json!({}), json!({"forward_delay_ms": 1e12})), "--delay-ms", "[0, 10000] ms");
        refused(emulate(json!({}), json!({"reverse_delay_ms": -1.0})), "--reverse-delay-ms", "[0, 10000] ms");
        refused(emulate(json!({"queue": {"ms": 0.0}}), json!({})), "--queue-ms", "(0, 600000] ms");
        refused(emulate(json!({"queue": {"packets": -3.0}}), json!({})), "--queue-packets", "[0, 10000000] packets");
        refused(emulate(json!({}), json!({"duration_s": -1.0})), "--duration", "[0, 604800] s");
        refused(emulate(json!({}), json!({"max_held": 0})), "max_held", "[1, 10000000] datagrams");
        // A scenario link of the harness: fields without a flag keep their path.
        refused(emulate(json!({"delay_ms": 20_000.0}), json!({})), "link.delay_ms", "[0, 10000] ms");
        refused(emulate(json!({}), json!({"reverse_link": {"capacity_kbps": -1.0}})), "reverse_link.capacity_kbps", "(0, 100000000] kbit/s");
    }

    #[test]
    fn live_send_and_recv_flags_out_of_range_are_refused_by_name() {
        use crate::receiver::ReceiverOptions;
        use crate::sender::SenderOptions;
        use ratelab_core::scenario::FlowConfig;
        let flow = |media: serde_json::Value, feedback: serde_json::Value| -> FlowConfig {
            serde_json::from_value(serde_json::json!({"kind": "media", "controller": "gcc", "media": media, "feedback": feedback})).unwrap()
        };
        let plain = flow(serde_json::json!({"start_kbps": 300.0, "min_kbps": 150.0, "max_kbps": 5000.0}), serde_json::json!({"interval_ms": 50.0}));
        let send = |d: f64, t: f64| SenderOptions { duration_s: d, silence_timeout_s: t, ..Default::default() };
        send(60.0, 10.0).validate(&plain).unwrap();
        refused(send(0.0, 10.0).validate(&plain), "--duration", "(0, 604800] s");
        refused(send(1e12, 10.0).validate(&plain), "--duration", "(0, 604800] s");
        refused(send(60.0, -1.0).validate(&plain), "--timeout", "(0, 604800] s");
        for (k, flag) in [("start_kbps", "--start-kbps"), ("min_kbps", "--min-kbps"), ("max_kbps", "--max-kbps")] {
            let f = flow(serde_json::json!({k: -1.0}), serde_json::json!({}));
            refused(send(60.0, 10.0).validate(&f), flag, "[0, 100000000] kbit/s");
        }
        let recv = |t: f64, m: f64| ReceiverOptions { first_packet_timeout_s: t, max_duration_s: m, ..Default::default() };
        recv(30.0, 0.0).validate(&plain).unwrap();
        refused(recv(-1.0, 0.0).validate(&plain), "--timeout", "(0, 604800] s");
        refused(recv(30.0, -1.0).validate(&plain), "--max-duration", "[0, 604800] s");
        refused(recv(30.0, 1e12).validate(&plain), "--max-duration", "[0, 604800] s");
        let f = flow(serde_json::json!({}), serde_json::json!({"interval_ms": 0.0}));
        refused(recv(30.0, 0.0).validate(&f), "--interval-ms", "(0, 10000] ms");
        // The entry points themselves refuse (the developer binary and any front end call them).
        let lo: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
        let clock = crate::net::LiveClock::new();
        let e = crate::receiver::Receiver::new(&plain, recv(-1.0, 0.0), lo, None, clock, 1, crate::StopFlag::new()).err().unwrap();
        assert!(e.starts_with("--timeout: -1 is out of range"), "{e}");
        let e = crate::sender::Sender::new(&plain, send(-1.0, 10.0), lo, lo, clock, None, crate::StopFlag::new()).err().unwrap();
        assert!(e.starts_with("--duration: -1 is out of range"), "{e}");
        let o: crate::emulator::EmulatorOptions = serde_json::from_value(serde_json::json!({"link": {"capacity_kbps": -5.0}})).unwrap();
        let e = crate::emulator::Emulator::new(o, lo, lo, clock, crate::StopFlag::new()).err().unwrap();
        assert_eq!(e, "--capacity-kbps: -5 is out of range: must be in (0, 100000000] kbit/s");
    }

    #[test]
    fn own_ranges_exclude_or_include_zero() {
        assert!(check("--timeout", &SECONDS, 0.0).is_err());
        assert!(check("--timeout", &SECONDS, 1.0).is_ok());
        assert!(check("--duration", &SECONDS_OR_ZERO, 0.0).is_ok());
        let e = check("--duration", &SECONDS_OR_ZERO, -1.0).unwrap_err();
        assert_eq!(e.to_string(), "--duration: -1 is out of range: must be in [0, 604800] s");
        assert!(check("--duration", &SECONDS, f64::NAN).is_err());
    }
}
