//! Iris with per-packet acknowledgements (the paper's UDT transport) versus TWCC batches,
//! on the same scenarios (numbers for `docs/controllers/iris.md`).
//!
//! ```text
//! cargo run --release -p ratelab-core --example iris_feedback
//! ```
//!
//! Scenarios (50 ms RTT, drop-tail queue of 300 ms, media 100 kbit/s … 20 Mbit/s, seeds 1–3):
//! * `const`: one flow, 10 Mbit/s, 60 s;
//! * `steps`: one flow, 10 → 5 → 15 → 10 Mbit/s every 20 s (paper Fig. 7 style), 80 s;
//! * `pair`: two flows, the second from 10 s, 10 Mbit/s, 60 s (Jain over 20–60 s).
//!
//! It first prints a table of sender-side variants (header overhead, pacing headroom, T window).

use ratelab_core::metrics::{jain_index, SeriesLog};
use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation;
use serde_json::{json, Value};

fn flow(controller: &str, feedback: &Value, params: &Value, start: f64) -> Value {
    flow_with(controller, feedback, params, start, true)
}

fn flow_with(controller: &str, feedback: &Value, params: &Value, start: f64, overhead_accounting: bool) -> Value {
    json!({"kind": "media", "controller": controller, "params": params, "start_s": start, "one_way_delay_ms": 25,
           "feedback": feedback, "media": {"min_kbps": 100, "max_kbps": 20000, "start_kbps": 300, "overhead_accounting": overhead_accounting}})
}

fn flow_mean(s: &SeriesLog, col: &[f64], f: u32, t0: f64, t1: f64) -> f64 {
    let xs: Vec<f64> = (0..s.len()).filter(|&i| s.flow[i] == f && s.t_s[i] >= t0 && s.t_s[i] < t1 && col[i].is_finite()).map(|i| col[i]).collect();
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

/// Sender-side variants of `iris` on one flow, 5 Mbit/s, 50 ms RTT, 300 ms buffer, 120 s,
/// per-packet acks: header-overhead compensation, pacing headroom, T window.
fn sender_variants(seeds: &[u64]) {
    println!("\niris sender variants (5 Mbit/s, 120 s, per-packet acks): mean over seeds {seeds:?}");
    println!("| sender overhead accounting | params | U | T_q mean / p95 (ms) | frame delay (ms) | queue drops |");
    println!("|---|---|---|---|---|---|");
    let variants = [
        (true, json!({})),
        (false, json!({})),
        (false, json!({"header_bytes": 40})),
        (false, json!({"pacing_factor": 1.1})),
        (true, json!({"pacing_factor": 1.1})),
        (true, json!({"target_window_s": 30})),
        (true, json!({"target_window_s": 120})),
    ];
    for (acct, params) in &variants {
        let mut acc = [0.0f64; 5];
        for &seed in seeds {
            let sc = Scenario::from_json(&json!({"name": "iris-5m", "duration_s": 120, "link": {"capacity_kbps": 5000, "queue": {"ms": 300}},
                "flows": [flow_with("iris", &json!({"mode": "per-packet"}), params, 0.0, *acct)], "metrics": {"packet_log": false}}).to_string()).expect("scenario");
            let mut sim = build_simulation(&sc, seed, None).expect("build");
            sim.run_to_end();
            let sum = sim.summary();
            let f = &sum.flows[0];
            for (a, v) in acc.iter_mut().zip([f.utilization, f.queue_delay_ms_mean.unwrap_or(f64::NAN), f.queue_delay_ms_p95.unwrap_or(f64::NAN), f.frame_delay_ms_mean.unwrap_or(f64::NAN), sum.link.queue_drops as f64]) { *a += v; }
        }
        let m: Vec<f64> = acc.iter().map(|a| a / seeds.len() as f64).collect();
        println!("| {} | `{params}` | {:.3} | {:.1} / {:.1} | {:.0} | {:.0} |", if *acct { "on" } else { "off" }, m[0], m[1], m[2], m[3], m[4]);
    }
}

fn main() {
    let variants: Vec<(&str, Value, Value)> = vec![
        ("per-packet acks", json!({"mode": "per-packet"}), json!({})),
        ("TWCC 50 ms, reconstructed ACK times", json!({"mode": "twcc", "interval_ms": 50}), json!({})),
        ("TWCC 50 ms, feedback arrival as ACK time", json!({"mode": "twcc", "interval_ms": 50}), json!({"ack_timing": "feedback-arrival"})),
        ("TWCC 100 ms, reconstructed ACK times", json!({"mode": "twcc", "interval_ms": 100}), json!({})),
        ("TWCC 100 ms, feedback arrival as ACK time", json!({"mode": "twcc", "interval_ms": 100}), json!({"ack_timing": "feedback-arrival"})),
    ];
    let seeds = [1u64, 2, 3];
    sender_variants(&seeds);
    for controller in ["iris", "iris-mid"] {
        println!("\n{controller}: mean over seeds {seeds:?}");
        println!("| feedback | const: U 0–60 s / 30–60 s | const: T_q mean / p95 (ms) | steps: U | steps: T_q mean / p95 (ms) | pair: Jain 20–60 s | pair: link U |");
        println!("|---|---|---|---|---|---|---|");
        for (label, fb, params) in &variants {
            let mut acc = [0.0f64; 9];
            for &seed in &seeds {
                let one = |link: Value, dur: f64| -> (f64, f64, f64, f64) {
                    let sc = Scenario::from_json(&json!({"name": "iris-fb", "duration_s": dur, "link": link,
                        "flows": [flow(controller, fb, params, 0.0)], "metrics": {"packet_log": false}}).to_string()).expect("scenario");
                    let mut sim = build_simulation(&sc, seed, None).expect("build");
                    sim.run_to_end();
                    let f = sim.summary().flows[0].clone();
                    let s = sim.take_series();
                    let late = flow_mean(&s, &s.recv_kbps, 0, dur / 2.0, dur) / flow_mean(&s, &s.capacity_kbps, 0, dur / 2.0, dur);
                    (f.utilization, f.queue_delay_ms_mean.unwrap_or(f64::NAN), f.queue_delay_ms_p95.unwrap_or(f64::NAN), late)
                };
                let c = one(json!({"capacity_kbps": 10000, "queue": {"ms": 300}}), 60.0);
                let st = one(json!({"steps": [[0, 10000], [20, 5000], [40, 15000], [60, 10000]], "queue": {"ms": 300, "rate_kbps": 10000}}), 80.0);
                let sc = Scenario::from_json(&json!({"name": "iris-fb-pair", "duration_s": 60, "link": {"capacity_kbps": 10000, "queue": {"ms": 300}},
                    "flows": [flow(controller, fb, params, 0.0), flow(controller, fb, params, 10.0)], "metrics": {"packet_log": false}}).to_string()).expect("scenario");
                let mut sim = build_simulation(&sc, seed, None).expect("build");
                sim.run_to_end();
                let s = sim.take_series();
                let j = jain_index(&[flow_mean(&s, &s.recv_kbps, 0, 20.0, 60.0), flow_mean(&s, &s.recv_kbps, 1, 20.0, 60.0)]);
                let lu = sim.summary().link.utilization;
                for (a, v) in acc.iter_mut().zip([c.0, c.1, c.2, st.0, st.1, st.2, j, lu, c.3]) { *a += v; }
            }
            let m: Vec<f64> = acc.iter().map(|a| a / seeds.len() as f64).collect();
            println!("| {label} | {:.3} / {:.3} | {:.1} / {:.1} | {:.3} | {:.1} / {:.1} | {:.3} | {:.3} |", m[0], m[8], m[1], m[2], m[3], m[4], m[5], m[6], m[7]);
        }
    }
}
