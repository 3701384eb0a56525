//! Whole-simulation measurements behind docs/controllers/dcrc.md and docs/controllers/tfrc.md.
//!
//! `cargo run --release -p ratelab-core --example dcrc_measure [-- SECTION]`
//! Sections: `variants` (DCRC literal vs PI vs initial price), `ti` (PI integral time),
//! `loss` (paper 003 Fig. 4: 1 Mbit/s, 50 ms, loss sweep), `latency` (Fig. 5), `bw` (Fig. 8).
//! Every row: one 100 s run, seed 1; throughput and stability over 40–100 s (paper IV-B:
//! 60 s after the flow is stable; stability = std/mean of the per-second receive rate).

use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation;
use serde_json::json;

struct Row { thr: f64, util: f64, stab: f64, q_mean: f64, q_p95: f64, loss: f64, psnr: f64 }

fn run(controller: &str, params: serde_json::Value, cap: f64, loss: f64, owd: f64, queue_ms: f64) -> Row {
    let sc = json!({
        "name": "m", "duration_s": 100,
        "link": {"capacity_kbps": cap, "loss": loss, "queue": {"ms": queue_ms}},
        "flows": [{"kind": "media", "controller": controller, "params": params, "one_way_delay_ms": owd,
                   "media": {"min_kbps": 50, "max_kbps": 5000, "start_kbps": 300}}],
        "metrics": {"packet_log": false}
    });
    let sc = Scenario::from_json(&sc.to_string()).expect("scenario");
    let mut sim = build_simulation(&sc, 1, None).expect("build");
    sim.run_to_end();
    let sum = sim.summary();
    let bins: Vec<f64> = sim.flows[0].metrics.goodput_bins.iter().skip(40).take(60).map(|b| *b as f64 * 8.0 / 1e3).collect();
    let mean = bins.iter().sum::<f64>() / bins.len().max(1) as f64;
    let var = bins.iter().map(|b| (b - mean).powi(2)).sum::<f64>() / bins.len().max(1) as f64;
    let f = &sum.flows[0];
    Row { thr: mean, util: mean / cap, stab: if mean > 0.0 { var.sqrt() / mean } else { f64::NAN }, q_mean: f.queue_delay_ms_mean.unwrap_or(f64::NAN),
          q_p95: f.queue_delay_ms_p95.unwrap_or(f64::NAN), loss: f.loss_rate, psnr: f.psnr_db_mean.unwrap_or(f64::NAN) }
}

fn header() { println!("| case | thr kbit/s | util | stability | queue ms mean | queue ms p95 | loss | PSNR dB |\n|---|---|---|---|---|---|---|---|"); }
fn print(case: &str, r: &Row) {
    println!("| {case} | {:.0} | {:.2} | {:.3} | {:.0} | {:.0} | {:.3} | {:.2} |", r.thr, r.util, r.stab, r.q_mean, r.q_p95, r.loss, r.psnr);
}

fn main() {
    let section = std::env::args().nth(1).unwrap_or_else(|| "variants".into());
    match section.as_str() {
        "variants" => {
            header();
            for (name, c, p) in [
                ("dcrc (literal), p(0)=0.5", "dcrc", json!({})),
                ("dcrc (literal), p(0)=ω/R_max=0.1", "dcrc", json!({"initial_price": 0.1})),
                ("dcrc (literal), p(0)=1.0", "dcrc", json!({"initial_price": 1.0})),
                ("dcrc-pi, p(0)=0.5", "dcrc-pi", json!({})),
                ("dcrc-pi, p(0)=ω/R_max=0.1", "dcrc-pi", json!({"initial_price": 0.1})),
                ("dcrc-pi, p(0)=1.0", "dcrc-pi", json!({"initial_price": 1.0})),
            ] {
                for cap in [1000.0, 2000.0] {
                    print(&format!("{name}, C={cap}"), &run(c, p.clone(), cap, 0.0, 50.0, 1000.0));
                }
            }
        }
        "ti" => {
            header();
            for m in [0.25, 0.5, 1.0, 2.0, 4.0] {
                for cap in [1000.0, 2000.0] {
                    print(&format!("dcrc-pi m={m}, C={cap}"), &run("dcrc-pi", json!({"integral_time_multiple": m}), cap, 0.0, 50.0, 1000.0));
                }
            }
        }
        "loss" => {
            header();
            for c in ["dcrc", "dcrc-pi", "tfrc", "aimd"] {
                for loss in [0.0, 0.01, 0.02, 0.05, 0.1] {
                    print(&format!("{c}, loss {loss}"), &run(c, json!({}), 1000.0, loss, 50.0, 1000.0));
                }
            }
        }
        "latency" => {
            header();
            for c in ["dcrc", "dcrc-pi", "tfrc", "aimd"] {
                for owd in [10.0, 50.0, 100.0, 200.0, 300.0] {
                    print(&format!("{c}, one-way {owd} ms"), &run(c, json!({}), 1000.0, 0.01, owd, 1000.0));
                }
            }
            // TFRC with the equation's s fixed at a full packet instead of the mean packet size
            for owd in [10.0, 50.0, 100.0, 200.0, 300.0] {
                print(&format!("tfrc s=1240 B, one-way {owd} ms"), &run("tfrc", json!({"segment_bytes": 1240}), 1000.0, 0.01, owd, 1000.0));
            }
        }
        "bw" => {
            header();
            for c in ["dcrc", "dcrc-pi", "tfrc", "aimd"] {
                for cap in [500.0, 1000.0, 1500.0, 2000.0] {
                    print(&format!("{c}, C={cap}"), &run(c, json!({}), cap, 0.01, 50.0, 1000.0));
                }
            }
        }
        "steps" => {
            // capacity 1000 → 500 (40 s) → 2000 (80 s): 10 s means of target rate and queue delay
            for (c, p) in [("dcrc", json!({})), ("dcrc-pi", json!({})), ("dcrc-pi", json!({"integral_time_multiple": 0.25})), ("dcrc-pi", json!({"integral_time_multiple": 4.0})), ("dcrc-pi", json!({"max_price": 1.0}))] {
                let sc = json!({
                    "name": "steps", "duration_s": 160,
                    "link": {"steps": [[0, 1000], [40, 500], [80, 2000]], "queue": {"ms": 1000, "rate_kbps": 1000}},
                    "flows": [{"kind": "media", "controller": c, "params": p, "one_way_delay_ms": 50,
                               "media": {"min_kbps": 50, "max_kbps": 5000}}],
                    "metrics": {"packet_log": false}
                });
                let mut sim = build_simulation(&Scenario::from_json(&sc.to_string()).expect("scenario"), 1, None).expect("build");
                sim.run_to_end();
                let s = sim.take_series();
                let mut line = format!("{c} {p}:");
                for k in 0..16 {
                    let (t0, t1) = (k as f64 * 10.0, k as f64 * 10.0 + 10.0);
                    let idx: Vec<usize> = (0..s.t_s.len()).filter(|&i| s.t_s[i] >= t0 && s.t_s[i] < t1).collect();
                    let m = |v: &Vec<f64>| idx.iter().map(|&i| v[i]).filter(|x| x.is_finite()).sum::<f64>() / idx.len().max(1) as f64;
                    line += &format!(" [{:.0}s {:.0}k {:.0}ms]", t0, m(&s.target_kbps), m(&s.queue_ms));
                }
                println!("{line}");
            }
        }
        s => eprintln!("unknown section {s}"),
    }
}
