//! The accepted range of every numeric scenario field, declared once.
//!
//! [`LIMITS`] is the one table: the loader checks every number of a parsed scenario (defaults
//! included) against it, `ratelab` shows it in `docs/scenarios.md` (generated from
//! `_core.scenario_limits()`, tested to match), and a test fails when a numeric field of the
//! schema has no entry or an entry names no field. Ranges are wide enough for any experiment
//! the simulator models faithfully and narrow enough that a typo (a delay of 1e12 ms, a run of
//! 31,000 years) is an error naming the field, the value and the range instead of a run that
//! never ends. Relations between fields (`stop_s > start_s`, `max_kbps ≥ min_kbps`, steps in
//! order) stay in [`super::Scenario::validate`].
//!
//! Paths: `flows[*]` is any flow; `link.…` also covers `reverse_link.…`; `[0]`/`[1]` are the
//! elements of a pair such as `[time_s, kbps]`.

use crate::error::ConfigError;
use serde_json::Value;

/// Longest simulated run: one week. A simulated day of a media flow takes minutes of wall time
/// and bounded memory (the driver drains logs while it runs); beyond a week is a typo.
pub const MAX_DURATION_S: f64 = 604_800.0;
/// Most flows in one scenario, `count` included (RFC 8867's largest case has 12; a thousand
/// media flows already make a run hours long).
pub const MAX_FLOWS: u64 = 1000;
/// Highest rate anywhere (100 Gbit/s).
const MAX_KBPS: f64 = 1e8;
/// Longest propagation delay (10 s: more than a geostationary hop, far less than a typo).
const MAX_DELAY_MS: f64 = 10_000.0;
/// Longest queue, pacer limit or timer in ms (10 minutes).
const MAX_MS: f64 = 600_000.0;

/// One declared range.
#[derive(Clone, Copy, Debug)]
pub struct Limit {
    /// Field path pattern (see the module doc).
    pub field: &'static str,
    pub min: f64,
    /// `min` itself is not allowed (e.g. a capacity must be > 0).
    pub min_exclusive: bool,
    pub max: f64,
    /// Unit shown in messages and docs (empty for counts and factors).
    pub unit: &'static str,
    /// What a boundary value means, when it means something (shown in the docs).
    pub note: &'static str,
}

const fn r(field: &'static str, min: f64, max: f64, unit: &'static str) -> Limit {
    Limit { field, min, min_exclusive: false, max, unit, note: "" }
}
/// Same, `min` excluded.
const fn gt(field: &'static str, min: f64, max: f64, unit: &'static str) -> Limit {
    Limit { field, min, min_exclusive: true, max, unit, note: "" }
}
const fn noted(l: Limit, note: &'static str) -> Limit { Limit { note, ..l } }

/// Every numeric field of a scenario and its range.
pub const LIMITS: &[Limit] = &[
    gt("duration_s", 0.0, MAX_DURATION_S, "s"),
    // [link] (and [reverse_link])
    gt("link.capacity_kbps", 0.0, MAX_KBPS, "kbit/s"),
    r("link.steps[*][0]", 0.0, MAX_DURATION_S, "s"),
    noted(r("link.steps[*][1]", 0.0, MAX_KBPS, "kbit/s"), "0: an outage (nothing leaves the queue until the next step)"),
    gt("link.trace_scale", 0.0, 1000.0, ""),
    r("link.mahimahi_bin_ms", 1.0, 60_000.0, "ms"),
    noted(r("link.queue.bytes", 0.0, 1e10, "bytes"), "0: no waiting room, a packet is taken only by an idle link"),
    noted(r("link.queue.packets", 0.0, 1e7, "packets"), "0: no waiting room, a packet is taken only by an idle link"),
    noted(gt("link.queue.ms", 0.0, MAX_MS, "ms"), "at least 1500 bytes whatever the rate"),
    gt("link.queue.rate_kbps", 0.0, MAX_KBPS, "kbit/s"),
    r("link.loss", 0.0, 1.0, "probability"),
    r("link.loss_start_s", 0.0, MAX_DURATION_S, "s"),
    r("link.delay_ms", 0.0, MAX_DELAY_MS, "ms"),
    r("link.gilbert_elliott.p_good_to_bad", 0.0, 1.0, "probability"),
    r("link.gilbert_elliott.p_bad_to_good", 0.0, 1.0, "probability"),
    r("link.gilbert_elliott.loss_good", 0.0, 1.0, "probability"),
    r("link.gilbert_elliott.loss_bad", 0.0, 1.0, "probability"),
    // [[flows]]
    r("flows[*].start_s", 0.0, MAX_DURATION_S, "s"),
    gt("flows[*].stop_s", 0.0, MAX_DURATION_S, "s"),
    r("flows[*].one_way_delay_ms", 0.0, MAX_DELAY_MS, "ms"),
    r("flows[*].return_delay_ms", 0.0, MAX_DELAY_MS, "ms"),
    noted(r("flows[*].count", 1.0, MAX_FLOWS as f64, ""), "all entries together: at most 1000 flows"),
    gt("flows[*].media.fps", 0.0, 240.0, "frames/s"),
    r("flows[*].media.min_kbps", 0.0, MAX_KBPS, "kbit/s"),
    r("flows[*].media.max_kbps", 0.0, MAX_KBPS, "kbit/s"),
    r("flows[*].media.start_kbps", 0.0, MAX_KBPS, "kbit/s"),
    noted(r("flows[*].media.encoder_min_kbps", 0.0, MAX_KBPS, "kbit/s"), "unset: min_kbps"),
    gt("flows[*].media.fec_overhead_cap", 0.0, 1.0, ""),
    noted(r("flows[*].media.expected_overhead_bytes", 0.0, 1000.0, "bytes"), "unset: the headers the packets carry"),
    noted(r("flows[*].media.encoder_lag_ms", 0.0, MAX_MS, "ms"), "0: the encoder follows the target at once"),
    r("flows[*].media.frame_size_noise", 0.0, 10.0, ""),
    noted(r("flows[*].media.keyframe_interval_s", 0.0, MAX_DURATION_S, "s"), "0: only the first frame is a key frame"),
    r("flows[*].media.keyframe_factor", 0.0, 100.0, ""),
    r("flows[*].media.max_payload_bytes", 100.0, 9000.0, "bytes"),
    noted(r("flows[*].media.audio_kbps", 0.0, 512.0, "kbit/s"), "0: no audio stream"),
    r("flows[*].media.audio_frame_ms", 2.5, 120.0, "ms"),
    r("flows[*].media.header_bytes", 0.0, 1500.0, "bytes"),
    r("flows[*].media.srtp_tag_bytes", 0.0, 64.0, "bytes"),
    noted(r("flows[*].media.send_time_resolution_ms", 0.0, 100.0, "ms"), "0: exact"),
    noted(r("flows[*].media.burst_spacing_us", 0.0, 10_000.0, "µs"), "0: a burst leaves at one instant"),
    r("flows[*].media.pacer_queue_limit_ms", 0.0, MAX_MS, "ms"),
    r("flows[*].media.pacer_burst_ms", 0.0, 1000.0, "ms"),
    noted(r("flows[*].media.frame_floor_kbit", 0.0, 100_000.0, "kbit"), "0: no floor, frames shrink to any target"),
    r("flows[*].media.width", 16.0, 7680.0, "pixels"),
    r("flows[*].media.height", 16.0, 4320.0, "pixels"),
    gt("flows[*].feedback.interval_ms", 0.0, MAX_DELAY_MS, "ms"),
    r("flows[*].pauses[*][0]", 0.0, MAX_DURATION_S, "s"),
    r("flows[*].pauses[*][1]", 0.0, MAX_DURATION_S, "s"),
    r("flows[*].on_off.file_bytes", 1.0, 1e15, "bytes"),
    noted(r("flows[*].on_off.off_mean_s", 0.0, 86_400.0, "s"), "0: files back to back"),
    r("flows[*].tcp.mss_bytes", 1.0, 65_535.0, "bytes"),
    r("flows[*].tcp.header_bytes", 0.0, 65_535.0, "bytes"),
    r("flows[*].tcp.initial_window_segments", 1.0, 10_000.0, "segments"),
    gt("flows[*].tcp.min_rto_ms", 0.0, MAX_MS, "ms"),
    gt("flows[*].tcp.max_rto_ms", 0.0, MAX_MS, "ms"),
    gt("flows[*].tcp.initial_rto_ms", 0.0, MAX_MS, "ms"),
    r("flows[*].tcp.dupack_threshold", 1.0, 1000.0, "packets"),
    gt("flows[*].tcp.delayed_ack_timeout_ms", 0.0, MAX_DELAY_MS, "ms"),
    r("flows[*].tcp.max_bytes", 0.0, 1e18, "bytes"),
    // [[route_changes]] (their `link` has the ranges of `link`)
    r("route_changes[*].at_s", 0.0, MAX_DURATION_S, "s"),
    r("route_changes[*].flows[*]", 0.0, MAX_FLOWS as f64, ""),
    // [metrics]
    r("metrics.series_interval_ms", 1.0, 3_600_000.0, "ms"),
];

impl Limit {
    /// `[a, b]` or `(a, b]` with the unit, as messages and docs show it.
    pub fn range_text(&self) -> String {
        let unit = if self.unit.is_empty() || self.unit == "probability" { String::new() } else { format!(" {}", self.unit) };
        format!("{}{}, {}]{unit}", if self.min_exclusive { "(" } else { "[" }, num(self.min), num(self.max))
    }

    /// `v` as the value of `field` (a path or a flag name for the message): an error naming the
    /// field, the value and the range when out of it. Shared with the live components' options.
    pub fn check(&self, field: &str, v: f64) -> Result<(), ConfigError> {
        if self.admits(v) { return Ok(()); }
        Err(ConfigError::new(field, format!("{} is out of range: must be in {}", num(v), self.range_text())))
    }

    fn admits(&self, v: f64) -> bool {
        v.is_finite() && v <= self.max && if self.min_exclusive { v > self.min } else { v >= self.min }
    }
}

/// A number as people write it: 604800, 0.5, 1e+08 → 100000000, 1e15 stays short.
fn num(v: f64) -> String {
    if v.abs() >= 1e9 && v.fract() == 0.0 { format!("{v:e}") } else { format!("{v}") }
}

/// The declared limit of a concrete field path (`reverse_link.queue.ms`, `flows[3].start_s`).
pub fn limit_of(path: &str) -> Option<&'static Limit> {
    let path = path.strip_prefix("reverse_").filter(|p| p.starts_with("link")).unwrap_or(path);
    // `route_changes[3].link.loss` has the range of `link.loss`.
    let path = path.strip_prefix("route_changes[").and_then(|p| p.split_once("]."))
        .filter(|(i, rest)| !i.is_empty() && i.bytes().all(|c| c.is_ascii_digit()) && rest.starts_with("link.")).map_or(path, |(_, rest)| rest);
    LIMITS.iter().find(|l| pattern_matches(l.field, path))
}

/// `flows[*].pauses[*][0]` matches `flows[2].pauses[10][0]`.
fn pattern_matches(pattern: &str, path: &str) -> bool {
    let (mut p, mut s) = (pattern.as_bytes(), path.as_bytes());
    while !p.is_empty() {
        if p.starts_with(b"[*]") {
            if s.first() != Some(&b'[') { return false; }
            let digits = s[1..].iter().take_while(|c| c.is_ascii_digit()).count();
            if digits == 0 || s.get(1 + digits) != Some(&b']') { return false; }
            p = &p[3..];
            s = &s[digits + 2..];
        } else {
            if s.first() != p.first() { return false; }
            p = &p[1..];
            s = &s[1..];
        }
    }
    s.is_empty()
}

/// Check every number under `v` (a serialized scenario part) whose path starts with `prefix`.
/// A number without a declared limit is an internal error (the table is incomplete).
pub fn check_tree(prefix: &str, v: &Value) -> Result<(), ConfigError> {
    match v {
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            let Some(l) = limit_of(prefix) else {
                return Err(ConfigError::new(prefix, "internal error: no range declared for this field (scenario/limits.rs)"));
            };
            l.check(prefix, x)
        }
        Value::Array(items) => items.iter().enumerate().try_for_each(|(i, x)| check_tree(&format!("{prefix}[{i}]"), x)),
        Value::Object(map) => map.iter().try_for_each(|(k, x)| {
            // Controller parameters are typed and checked by each controller.
            if k == "params" { return Ok(()); }
            check_tree(&if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") }, x)
        }),
        _ => Ok(()),
    }
}

/// The declared limits as JSON rows (for the front end's docs table).
pub fn limits_json() -> Value {
    Value::Array(LIMITS.iter().map(|l| serde_json::json!({
        "field": l.field, "min": l.min, "min_exclusive": l.min_exclusive, "max": l.max, "unit": l.unit,
        "range": l.range_text(), "note": l.note,
    })).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_indices_only_where_declared() {
        assert!(pattern_matches("flows[*].pauses[*][0]", "flows[2].pauses[10][0]"));
        assert!(!pattern_matches("flows[*].pauses[*][0]", "flows[2].pauses[10][1]"));
        assert!(!pattern_matches("flows[*].start_s", "flows.start_s"));
        assert!(!pattern_matches("flows[*].start_s", "flows[x].start_s"));
        assert!(!pattern_matches("duration_s", "duration_s2"));
        assert_eq!(limit_of("reverse_link.queue.ms").unwrap().field, "link.queue.ms");
        assert!(limit_of("reverse_flows[0].start_s").is_none());
        assert_eq!(limit_of("route_changes[2].link.queue.ms").unwrap().field, "link.queue.ms");
        assert_eq!(limit_of("route_changes[2].at_s").unwrap().field, "route_changes[*].at_s");
        assert!(limit_of("route_changes[x].link.loss").is_none());
    }

    #[test]
    fn boundaries_follow_the_declaration() {
        let l = limit_of("link.capacity_kbps").unwrap();
        assert!(!l.admits(0.0) && l.admits(1e-3) && l.admits(MAX_KBPS) && !l.admits(MAX_KBPS * 1.0000001));
        assert!(!l.admits(f64::NAN) && !l.admits(f64::INFINITY));
        let l = limit_of("link.loss").unwrap();
        assert!(l.admits(0.0) && l.admits(1.0) && !l.admits(-0.0001));
        assert_eq!(l.range_text(), "[0, 1]");
        assert_eq!(limit_of("flows[0].one_way_delay_ms").unwrap().range_text(), "[0, 10000] ms");
        assert_eq!(limit_of("flows[0].tcp.max_bytes").unwrap().range_text(), "[0, 1e18] bytes");
    }

    #[test]
    fn every_entry_names_a_field_of_a_full_scenario() {
        // A scenario with every optional part present: each numeric leaf must have a limit
        // (check_tree would say "internal error" otherwise) and each limit must match a leaf.
        let full = serde_json::json!({
            "name": "full", "duration_s": 10,
            "link": {"steps": [[0, 1000]], "trace_scale": 1, "queue": {"ms": 100, "rate_kbps": 1000}, "loss": 0.1,
                     "gilbert_elliott": {"p_good_to_bad": 0.1, "p_bad_to_good": 0.5}},
            "flows": [
                {"kind": "media", "stop_s": 9, "return_delay_ms": 10, "pauses": [[1, 2]]},
                {"kind": "tcp", "on_off": {"file_bytes": 1000, "off_mean_s": 1}, "tcp": {}},
            ],
            "route_changes": [{"at_s": 5, "flows": [0], "link": {"capacity_kbps": 500}}],
        });
        let mut leaves: Vec<String> = Vec::new();
        let sc = crate::scenario::Scenario::from_json(&full.to_string()).unwrap();
        let mut v = serde_json::to_value(&sc).unwrap();
        // Fill what serde leaves `null` (the other capacity forms, the queue alternatives).
        v["link"]["capacity_kbps"] = 1.into();
        v["link"]["queue"]["bytes"] = 1.into();
        v["link"]["queue"]["packets"] = 1.into();
        v["flows"][0]["media"]["encoder_min_kbps"] = 1.into();
        v["flows"][0]["media"]["expected_overhead_bytes"] = 1.into();
        v["flows"][1]["tcp"] = serde_json::to_value(crate::transport::tcp::TcpConfig { max_bytes: Some(5), ..Default::default() }).unwrap();
        fn walk(p: &str, v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Number(_) => out.push(p.to_string()),
                Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| walk(&format!("{p}[{i}]"), x, out)),
                Value::Object(m) => m.iter().filter(|(k, _)| *k != "params").for_each(|(k, x)| walk(&if p.is_empty() { k.clone() } else { format!("{p}.{k}") }, x, out)),
                _ => {}
            }
        }
        walk("", &v, &mut leaves);
        for leaf in &leaves {
            assert!(limit_of(leaf).is_some(), "no limit declared for {leaf}");
        }
        for l in LIMITS {
            assert!(leaves.iter().any(|leaf| pattern_matches(l.field, leaf)), "limit {} matches no field", l.field);
        }
        check_tree("", &v).unwrap();
    }
}
