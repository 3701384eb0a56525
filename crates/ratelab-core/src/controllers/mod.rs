//! Controller registry: every controller is built by name with typed parameters that a
//! scenario can override. Each controller's parameters are a serde struct with defaults and
//! `deny_unknown_fields`, so an unknown or mistyped parameter is an error naming the field.

use crate::error::ConfigError;
use serde::de::DeserializeOwned;
use serde::Serialize;

pub mod aimd;
pub mod bbr;
pub mod common;
pub mod copa;
pub mod cross;
pub mod dcrc;
pub mod fixed;
pub mod gcc;
pub mod iris;
pub mod lcc;
pub mod nada;
pub mod onnx;
pub mod oracle;
pub mod pcc;
pub mod r3net;
pub mod ratelab_cc;
pub mod scream;
#[cfg(test)]
pub(crate) mod testkit;
pub mod tfrc;
pub mod vivace;

pub use crate::controller::{BuildContext, Built, ExternalFactory, FileReader};

/// One registry entry: everything ratelab needs to know about a controller, in one place. A
/// new controller is its folder plus one entry here; the drivers, the Python front end (through
/// `_core.controllers()`), the demo, plans' `"all"`, the leaderboard and the tests read these
/// fields instead of keeping lists of names.
pub struct Entry {
    pub name: &'static str,
    pub summary: &'static str,
    /// Default parameters as a JSON object (for `ratelab list` and docs).
    pub defaults: fn() -> serde_json::Value,
    pub build: fn(&serde_json::Value, &BuildContext) -> Result<Built, ConfigError>,
    /// Where the estimate is made: at the sender (feedback in, rates out) or at the receiver
    /// (an estimator whose rate reaches the sender as REMB).
    pub side: Side,
    /// The parameter that must name a file for the controller to run at all (a model), if any:
    /// such a controller cannot run with its defaults, so "every controller" leaves it out.
    pub required_file: Option<&'static str>,
    /// Whether "every controller" (the demo, a plan's `controllers = "all"`, the leaderboard,
    /// the reproductions' baselines) includes it: false for what does no congestion control.
    pub compared: bool,
}

/// Where a controller's estimate is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Sender,
    Receiver,
}

impl Entry {
    /// Runs with its default parameters and belongs to "every controller".
    pub fn in_all(&self) -> bool { self.compared && self.required_file.is_none() }
}

/// The fields every entry shares unless it says otherwise (`..SENDER`).
const SENDER: Entry = Entry {
    name: "",
    summary: "",
    defaults: || serde_json::Value::Null,
    build: |_, _| Err(ConfigError::new("controller", "not a controller")),
    side: Side::Sender,
    required_file: None,
    compared: true,
};

/// Every controller ratelab knows, in listing order.
pub fn registry() -> &'static [Entry] {
    static ENTRIES: &[Entry] = &[
        Entry {
            name: "gcc",
            summary: "Google Congestion Control as in current libwebrtc goog_cc (profiles: current, m84, m60)",
            defaults: defaults_of::<gcc::GccConfig>,
            build: |p, cx| Ok(Built::sender(gcc::Gcc::new(parse_params(p)?, cx))),
            ..SENDER
        },
        Entry {
            name: "lcc",
            summary: "LCC (paper 000): weighted KDE of (rate, OWD) and Bayesian choice E[S | D = T_c] toward min OWD + 25 ms",
            defaults: defaults_of::<lcc::LccConfig>,
            build: |p, _| Ok(Built::sender(lcc::Lcc::new(parse_params(p)?)?)),
            ..SENDER
        },
        Entry {
            name: "iris",
            summary: "Iris (paper 001): queue-load target x·(rtt − T) = B, tanh RTT step, x = r + d/k with k by regression; T = min RTT",
            defaults: defaults_of::<iris::IrisConfig>,
            build: |p, _| Ok(Built::sender(iris::Iris::new(parse_params(p)?)?)),
            ..SENDER
        },
        Entry {
            name: "iris-mid",
            summary: "Iris-mid (paper 001 VI-B4): Iris with the median RTT of the window as target delay T",
            defaults: || serde_json::to_value(iris::IrisConfig::mid()).unwrap_or(serde_json::Value::Null),
            build: |p, _| Ok(Built::sender(iris::Iris::new(iris_mid_params(p)?)?)),
            ..SENDER
        },
        Entry {
            name: "bbr-webrtc",
            summary: "BBRv1 as shipped in libwebrtc (2018-2019), with its congestion window gating the pacer",
            defaults: defaults_of::<bbr::BbrWebrtcConfig>,
            build: |p, cx| Ok(Built::sender(bbr::BbrWebrtc::new(parse_params(p)?, cx))),
            ..SENDER
        },
        Entry {
            name: "rbbr",
            summary: "Rate BBR (Cross paper 002): WebRTC-BBR without cwnd, pacing and target discounts",
            defaults: defaults_of::<bbr::RbbrConfig>,
            build: |p, cx| Ok(Built::sender(bbr::Rbbr::new(parse_params(p)?, cx))),
            ..SENDER
        },
        Entry {
            name: "cross",
            summary: "Cross (paper 002): delay-based MIMD on queue load with fast bandwidth adaptation",
            defaults: defaults_of::<cross::CrossConfig>,
            build: |p, cx| Ok(Built::sender(cross::Cross::new(parse_params(p)?, cx))),
            ..SENDER
        },
        Entry {
            name: "nada",
            summary: "NADA (RFC 8698): delay/loss congestion signal, accelerated ramp-up and gradual reference-rate update",
            defaults: defaults_of::<nada::NadaConfig>,
            build: |p, _| Ok(Built::sender(nada::Nada::new(parse_params(p)?))),
            ..SENDER
        },
        Entry {
            name: "nadar",
            summary: "NADAR (paper 002): NADA with a ProbeRTT state that re-samples the base delay every 10 s",
            defaults: || serde_json::to_value(nada::NadaConfig::nadar()).unwrap_or(serde_json::Value::Null),
            build: |p, _| {
                let v = nada::overlay_params(serde_json::to_value(nada::NadaConfig::nadar()).unwrap_or(serde_json::Value::Null), p);
                Ok(Built::sender(nada::Nada::new(parse_params(&v)?)))
            },
            ..SENDER
        },
        Entry {
            name: "copa",
            summary: "Copa (NSDI'18): delay-based target rate 1/(δ·d_q) with velocity and competitive mode; rate = cwnd/RTT_standing",
            defaults: defaults_of::<copa::CopaConfig>,
            build: |p, _| Ok(Built::sender(copa::Copa::new(parse_params(p)?))),
            ..SENDER
        },
        Entry {
            name: "vivace",
            summary: "PCC Vivace as in libwebrtc's PCC module: monitor-interval pairs, utility gradient ascent",
            defaults: defaults_of::<vivace::VivaceConfig>,
            build: |p, cx| Ok(Built::sender(vivace::Vivace::new(parse_params(p)?, cx))),
            ..SENDER
        },
        Entry {
            name: "pcc-allegro",
            summary: "PCC Allegro (NSDI'15, modong/pcc): randomized trials of r(1±ε), doubling start, accelerating moves; loss or latency utility",
            defaults: defaults_of::<pcc::AllegroConfig>,
            build: |p, cx| Ok(Built::sender(pcc::Allegro::new(parse_params(p)?, cx))),
            ..SENDER
        },
        Entry {
            name: "scream",
            summary: "SCReAM (RFC 8298): self-clocked LEDBAT-like window plus media-rate control on the RTP queue",
            defaults: defaults_of::<scream::ScreamConfig>,
            build: |p, _| Ok(Built::sender(scream::Scream::new(parse_params(p)?))),
            ..SENDER
        },
        Entry {
            name: "dcrc",
            summary: "DCRC shadow-price rate control (paper 003), literal Eq. 18 price update (delay target cancels)",
            defaults: defaults_of::<dcrc::DcrcConfig>,
            build: |p, _| Ok(Built::sender(dcrc::Dcrc::new(parse_params(p)?, dcrc::DcrcVariant::Literal))),
            ..SENDER
        },
        Entry {
            name: "dcrc-pi",
            summary: "DCRC shadow-price rate control (paper 003) with a PI price update holding queuing delay at 200 ms",
            defaults: defaults_of::<dcrc::DcrcConfig>,
            build: |p, _| Ok(Built::sender(dcrc::Dcrc::new(parse_params(p)?, dcrc::DcrcVariant::Pi))),
            ..SENDER
        },
        Entry {
            name: "tfrc",
            summary: "TCP-friendly rate control, RFC 5348 (equation-based; paper 003's baseline)",
            defaults: defaults_of::<tfrc::TfrcConfig>,
            build: |p, _| Ok(Built::sender(tfrc::Tfrc::new(parse_params(p)?))),
            ..SENDER
        },
        Entry {
            name: "aimd",
            summary: "TCP-like rate control: +1 packet per RTT, halve on a loss event (paper 003's \"CTCP\")",
            defaults: defaults_of::<aimd::AimdConfig>,
            build: |p, _| Ok(Built::sender(aimd::Aimd::new(parse_params(p)?))),
            ..SENDER
        },
        Entry {
            name: "fixed",
            summary: "constant target rate (no congestion control)",
            defaults: defaults_of::<fixed::FixedConfig>,
            build: |p, _| Ok(Built::sender(fixed::Fixed::new(parse_params(p)?))),
            compared: false,
            ..SENDER
        },
        Entry {
            name: "ratelab-cc",
            summary: "ratelab's own (issue 15): queue target on one-way delay, drain at the measured delivery rate, additive fairness, competitive mode",
            defaults: defaults_of::<ratelab_cc::RatelabCcConfig>,
            build: |p, _| Ok(Built::sender(ratelab_cc::RatelabCc::new(parse_params(p)?)?)),
            ..SENDER
        },
        Entry {
            name: "oracle",
            summary: "follows the true fair share of the bottleneck capacity (upper bound for reports)",
            defaults: defaults_of::<oracle::OracleConfig>,
            build: |p, cx| Ok(Built::sender(oracle::Oracle::new(parse_params(p)?, cx)?)),
            ..SENDER
        },
        Entry {
            name: "r3net",
            summary: "R3Net: receiver-side RL estimator (GRU policy, ONNX model run in Rust) every 50 ms, REMB-like feedback",
            defaults: defaults_of::<r3net::R3NetConfig>,
            build: |p, cx| r3net::build(parse_params(p)?, cx),
            side: Side::Receiver,
            ..SENDER
        },
        Entry {
            name: "onnx",
            summary: "your ONNX estimator (parameter model): MMSys'24 150-feature observation every 60 ms at the receiver → bit/s, REMB-like feedback; stateless, MMSys'24 LSTM or R3Net signature",
            defaults: defaults_of::<onnx::OnnxConfig>,
            build: |p, cx| onnx::build(parse_params(p)?, cx),
            side: Side::Receiver,
            required_file: Some("model"),
            ..SENDER
        },
    ];
    ENTRIES
}

pub fn find(name: &str) -> Option<&'static Entry> { registry().iter().find(|e| e.name == name) }

/// Build a controller by name. `params` is a JSON object (or null for defaults).
pub fn build(name: &str, params: &serde_json::Value, cx: &BuildContext) -> Result<Built, ConfigError> {
    if find(name).is_none() {
        if let Some(built) = cx.external.as_ref().and_then(|f| f(name, params, cx)) { return built; }
    }
    let entry = find(name).ok_or_else(|| {
        let names: Vec<&str> = registry().iter().map(|e| e.name).collect();
        ConfigError::new("controller", format!("unknown controller '{name}' (known: {})", names.join(", ")))
    })?;
    (entry.build)(params, cx).map_err(|e| unknown_parameter(name, e).prefixed("params"))
}

/// serde's "unknown field `x`, expected one of `a`, `b`" as the line a user can act on, naming
/// the controller: "unknown parameter of gcc (known: a, b)" (the field path names `x`).
fn unknown_parameter(controller: &str, e: ConfigError) -> ConfigError {
    let Some(rest) = e.message.strip_prefix("unknown field `") else { return e };
    let known: Vec<&str> = match rest.split_once(", expected ") {
        Some((_, list)) => list.trim_start_matches("one of ").split(", ").map(|k| k.trim_matches('`')).collect(),
        None => Vec::new(), // "there are no fields"
    };
    let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
    ConfigError::new(e.field, format!("unknown parameter of {controller} (known: {known})"))
}

fn defaults_of<T: Default + Serialize>() -> serde_json::Value {
    serde_json::to_value(T::default()).unwrap_or(serde_json::Value::Null)
}

/// Iris-mid parameters: as Iris, with `target_delay` defaulting to `median`.
fn iris_mid_params(v: &serde_json::Value) -> Result<iris::IrisConfig, ConfigError> {
    let mut v = if v.is_null() { serde_json::json!({}) } else { v.clone() };
    if let Some(o) = v.as_object_mut() {
        o.entry("target_delay").or_insert_with(|| serde_json::json!("median"));
    }
    parse_params(&v)
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
    use crate::controller::{Constraints, PacketResult, SentPacket, TransportFeedback, Update};
    use crate::units::{Bitrate, Bytes, Duration, Time};
    use std::sync::Arc;
    use proptest::prelude::*;

    #[test]
    fn an_unknown_parameter_names_the_controller_and_the_keys_it_knows() {
        let cx = BuildContext::new(1);
        let e = build("aimd", &serde_json::json!({"no_such": 1}), &cx).err().expect("an unknown key must fail");
        assert_eq!(e.field, "params.no_such");
        assert!(e.message.starts_with("unknown parameter of aimd (known: "), "{}", e.message);
        let known = (find("aimd").unwrap().defaults)();
        for key in known.as_object().unwrap().keys() {
            assert!(e.message.contains(key.as_str()), "{key} missing from {}", e.message);
        }
    }

    /// Apply an update to the rates a sender would hold.
    fn track(rates: &mut (Bitrate, Bitrate), u: &Update) {
        if let Some(t) = u.target_rate { rates.0 = t; }
        if let Some(p) = u.pacing_rate { rates.1 = p; }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        /// Every registered controller keeps finite rates within its constraints (target) under
        /// arbitrary feedback: random delays, losses, gaps and batch sizes.
        #[test]
        fn every_controller_keeps_rates_finite_and_bounded(
            steps in proptest::collection::vec((1u32..40, 0u32..400, 0u8..100, 0u32..300, any::<bool>()), 1..120),
            seed in any::<u64>(),
        ) {
            for e in registry().iter().filter(|e| e.required_file.is_none()) {
                let mut cx = BuildContext::new(seed);
                cx.fair_share = Some(Arc::new(|_| Bitrate::from_kbps(1500)));
                let mut built = build(e.name, &serde_json::Value::Null, &cx).unwrap();
                let c = Constraints { min_rate: Bitrate::from_kbps(50), max_rate: Bitrate::from_kbps(4000), start_rate: Bitrate::from_kbps(300) };
                let mut now = Time::from_ms(1000);
                let mut rates = (c.start_rate, c.start_rate);
                let u = built.sender.on_start(now, c);
                track(&mut rates, &u);
                let mut seq = 0u64;
                for (npk, delay_ms, loss_pct, gap_ms, tick) in &steps {
                    let mut pkts = Vec::new();
                    for i in 0..*npk {
                        let send = now + Duration::from_ms(i as i64);
                        let sp = SentPacket { seq, size: Bytes::new(1200), send_time: send, probe_cluster: None, is_padding: false, data_in_flight: Bytes::new(1200 * (i as i64 + 1)) };
                        seq += 1;
                        let u = built.sender.on_packet_sent(&sp);
                        track(&mut rates, &u);
                        let lost = (seq * 37 % 100) < *loss_pct as u64;
                        pkts.push(PacketResult { sent: sp, recv_time: (!lost).then(|| send + Duration::from_ms(*delay_ms as i64 + 20)) });
                    }
                    now += Duration::from_ms(*gap_ms as i64 + *delay_ms as i64 + 40);
                    let fb = TransportFeedback { feedback_time: now, report_time: Some(now - Duration::from_ms(10)), packets: pkts, ..Default::default() };
                    let u = built.sender.on_feedback(&fb);
                    track(&mut rates, &u);
                    if *tick { let u = built.sender.on_tick(now); track(&mut rates, &u); }
                    prop_assert!(rates.0.bps() >= c.min_rate.bps() && rates.0.bps() <= c.max_rate.bps(), "{}: target {:?}", e.name, rates.0);
                    prop_assert!(rates.1.is_finite() && rates.1.bps() > 0, "{}: pacing {:?}", e.name, rates.1);
                }
            }
        }
    }

    #[test]
    fn every_entry_builds_with_defaults_and_rejects_unknown_params() {
        let mut cx = BuildContext::new(1);
        cx.fair_share = Some(Arc::new(|_| Bitrate::from_kbps(1000)));
        for e in registry() {
            if let Some(file) = e.required_file {
                let err = build(e.name, &serde_json::Value::Null, &cx).err().expect("a model is required");
                assert_eq!(err.field, format!("params.{file}"), "{}", e.name);
                continue;
            }
            assert_eq!(build(e.name, &serde_json::Value::Null, &cx).unwrap().receiver.is_some(), e.side == Side::Receiver,
                       "{}: side says {:?}", e.name, e.side);
            assert!(build(e.name, &serde_json::Value::Null, &cx).is_ok(), "{}", e.name);
            assert!(build(e.name, &(e.defaults)(), &cx).is_ok(), "{} defaults round-trip", e.name);
            let bad = serde_json::json!({"no_such_param": 1});
            let err = build(e.name, &bad, &cx).err().expect("unknown param must fail");
            assert!(err.to_string().contains("no_such_param"), "{}", err);
        }
        assert!(build("nope", &serde_json::Value::Null, &cx).is_err());
    }

    #[test]
    fn external_factory_builds_unknown_names_only() {
        let mut cx = BuildContext::new(1);
        cx.external = Some(Arc::new(|name: &str, p: &serde_json::Value, cx: &BuildContext| {
            (name == "ext").then(|| {
                let rate = p.get("kbps").and_then(|v| v.as_f64()).unwrap_or(100.0);
                assert_eq!(cx.seed, 1);
                Ok(Built::sender(fixed::Fixed::new(parse_params(&serde_json::json!({"rate_kbps": rate}))?)))
            })
        }));
        let mut b = build("ext", &serde_json::json!({"kbps": 700.0}), &cx).unwrap();
        let c = Constraints::default();
        assert_eq!(b.sender.on_start(Time::ZERO, c).target_rate, Some(Bitrate::from_kbps(700)));
        // a registry name is never handed to the factory
        assert!(build("fixed", &serde_json::Value::Null, &cx).is_ok());
        let err = build("nope", &serde_json::Value::Null, &cx).err().unwrap();
        assert!(err.to_string().contains("unknown controller 'nope'"), "{err}");
    }
}
