//! Developer tool for live mode (the user-facing CLI is `ratelab live ...` in Python):
//!
//! ```text
//! ratelab-live run     SCENARIO.json [--controller NAME] [--format twcc|rfc8888] [--seed N] [--capture FILE.pcap]
//! ratelab-live compare SCENARIO.json [--controller NAME] [--format twcc|rfc8888] [--seed N]
//! ratelab-live loopback-bench [--seconds S] [--kbps K ...]
//! ```
//! `compare` runs the simulator and the live driver on the same scenario and prints both
//! summaries as one JSON object (used for the agreement table in docs/live.md). Trace paths in
//! the scenario are read here (the core does no I/O).

use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation;
use ratelab_live::net::LiveClock;
use ratelab_live::receiver::{FeedbackFormat, Receiver, ReceiverOptions};
use ratelab_live::run::{live_run, LiveRunOptions};
use ratelab_live::sender::{Sender, SenderOptions};
use ratelab_live::StopFlag;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

fn load(path: &str) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut sc = Scenario::from_json(&text).map_err(|e| format!("{path}: {e}"))?;
    for link in sc.links_mut() {
        if link.trace_content.is_none() {
            if let Some(t) = link.trace.clone() {
                link.trace_content = Some(std::fs::read_to_string(&t).map_err(|e| format!("{t}: {e}"))?);
            }
        }
    }
    Ok(sc)
}

fn options(args: &[String]) -> Result<LiveRunOptions, String> {
    let format = match arg(args, "--format").as_deref() {
        None | Some("twcc") => FeedbackFormat::Twcc,
        Some("rfc8888") => FeedbackFormat::Rfc8888,
        Some(f) => return Err(format!("unknown feedback format '{f}'")),
    };
    let seed = arg(args, "--seed").map(|s| s.parse::<u64>().map_err(|e| e.to_string())).transpose()?.unwrap_or(1);
    Ok(LiveRunOptions { seed, controller: arg(args, "--controller"), format, capture: arg(args, "--capture"), ..Default::default() })
}

fn live_json(sc: &Scenario, o: &LiveRunOptions) -> Result<serde_json::Value, String> {
    let r = live_run(sc, o).map_err(|e| e.to_string())?;
    Ok(serde_json::json!({"summary": r.summary, "details": r.details}))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let res = match args.first().map(String::as_str) {
        Some("run") if args.len() > 1 => options(&args).and_then(|o| load(&args[1]).and_then(|sc| live_json(&sc, &o))),
        Some("compare") if args.len() > 1 => options(&args).and_then(|o| load(&args[1]).and_then(|sc| {
            let t = std::time::Instant::now();
            // Like for like: TWCC on the wire has no report time, so the simulated run goes without.
            let mut sim_sc = sc.clone();
            if o.format == FeedbackFormat::Twcc { for f in &mut sim_sc.flows { f.feedback.report_time = false; } }
            let mut sim = build_simulation(&sim_sc, o.seed, o.controller.as_deref()).map_err(|e| e.to_string())?;
            sim.run_to_end();
            let sim_s = t.elapsed().as_secs_f64();
            let live = live_json(&sc, &o)?;
            Ok(serde_json::json!({"scenario": sc.name, "controller": o.controller, "seed": o.seed, "sim": sim.summary(), "sim_wall_s": sim_s, "live": live}))
        })),
        Some("loopback-bench") => loopback_bench(&args),
        _ => Err("usage: ratelab-live run|compare SCENARIO.json [--controller NAME] [--format twcc|rfc8888] [--seed N] | loopback-bench [--seconds S] [--kbps K]".into()),
    };
    match res {
        Ok(v) => println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default()),
        Err(e) => { eprintln!("error: {e}"); std::process::exit(2); }
    }
}

/// Sender → receiver directly on loopback (no emulator) with the `fixed` controller at each
/// rate: sustained rate, loss, pacer timing error and CPU per packet of sender and receiver.
fn loopback_bench(args: &[String]) -> Result<serde_json::Value, String> {
    let secs: f64 = arg(args, "--seconds").map(|s| s.parse().map_err(|_| "bad --seconds".to_string())).transpose()?.unwrap_or(10.0);
    let rates: Vec<f64> = match arg(args, "--kbps") {
        Some(s) => s.split(',').map(|x| x.parse::<f64>().map_err(|_| format!("bad rate {x}"))).collect::<Result<_, _>>()?,
        None => vec![1000.0, 5000.0, 20_000.0, 50_000.0, 100_000.0, 200_000.0],
    };
    let mut out = Vec::new();
    for kbps in rates {
        let flow: ratelab_core::scenario::FlowConfig = serde_json::from_value(serde_json::json!({
            "kind": "media", "controller": "fixed", "params": {"rate_kbps": kbps},
            "media": {"start_kbps": kbps, "max_kbps": kbps, "min_kbps": kbps.min(150.0), "encoder_lag_ms": 0, "keyframe_interval_s": 0, "fps": 60}
        })).map_err(|e| e.to_string())?;
        let clock = LiveClock::new();
        let stop = StopFlag::new();
        let lo: std::net::SocketAddr = "127.0.0.1:0".parse().map_err(|_| "addr")?;
        // Bind both, then point them at each other.
        let tmp = std::net::UdpSocket::bind(lo).map_err(|e| e.to_string())?;
        let rx_addr = tmp.local_addr().map_err(|e| e.to_string())?;
        drop(tmp);
        let tx = Sender::new(&flow, SenderOptions { duration_s: secs, packet_log: false, ..Default::default() }, lo, rx_addr, clock, None, stop.clone())?;
        let tx_addr = tx.local_addr().ok_or("no sender address")?;
        let rx = Receiver::new(&flow, ReceiverOptions { silence_timeout_s: 2.0, packet_log: false, ..Default::default() }, rx_addr, Some(tx_addr), clock, 1, stop.clone())?;
        let th = std::thread::spawn(move || rx.run());
        let s = tx.run("fixed");
        let r = th.join().map_err(|_| "receiver panicked")?;
        let sent_kbps = s.stats.bytes_sent as f64 * 8.0 / s.stats.active_s / 1e3;
        let recv_kbps = r.stats.bytes_received as f64 * 8.0 / s.stats.active_s / 1e3;
        out.push(serde_json::json!({
            "target_kbps": kbps, "sent_kbps": sent_kbps, "received_kbps": recv_kbps,
            "packets_sent": s.stats.packets_sent, "packets_received": r.stats.packets_received,
            "loss": 1.0 - r.stats.packets_received as f64 / s.stats.packets_sent.max(1) as f64,
            "pacer_error_us": s.stats.pacer_error_us, "sender_cpu_us_per_packet": s.stats.cpu_us_per_packet,
            "receiver_cpu_us_per_packet": r.stats.cpu_us as f64 / r.stats.packets_received.max(1) as f64,
            "sender_cpu_share": s.stats.cpu_us as f64 / 1e6 / s.stats.active_s,
            "receiver_cpu_share": r.stats.cpu_us as f64 / 1e6 / s.stats.active_s,
            "feedback_packets": s.stats.feedback_packets,
        }));
    }
    Ok(serde_json::Value::Array(out))
}
