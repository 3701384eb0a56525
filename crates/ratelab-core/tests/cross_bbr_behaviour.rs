//! Whole-simulation behaviour of `cross`, `rbbr` and `bbr-webrtc` (issue 4, paper 002).

use ratelab_core::scenario::Scenario;
use ratelab_core::sim::{build_simulation, FlowState, Simulation};
use ratelab_core::units::Time;

fn scenario(v: serde_json::Value) -> Scenario { Scenario::from_json(&v.to_string()).expect("valid scenario") }

/// Per-flow encoder-pause statistics sampled every 25 ms (the controller tick).
#[derive(Debug, Default, Clone)]
struct Pauses {
    /// Number of distinct pause episodes.
    episodes: u32,
    /// Total paused time, seconds.
    paused_s: f64,
}

/// Run to the end while sampling each media flow's encoder-pause flag every 25 ms.
fn run_sampling_pauses(sim: &mut Simulation) -> Vec<Pauses> {
    let n = sim.flows.len();
    let mut out = vec![Pauses::default(); n];
    let mut was = vec![false; n];
    let mut t = 0i64;
    while !sim.is_finished() {
        t += 25;
        sim.run_until(Time::from_ms(t));
        for (i, f) in sim.flows.iter().enumerate() {
            let FlowState::Media(m) = &f.state else { continue };
            let p = f.active && m.paused;
            if p { out[i].paused_s += 0.025; if !was[i] { out[i].episodes += 1; } }
            was[i] = p;
        }
    }
    out
}

/// Table I link (paper 002 §IV): `case` 1..=3 → (Mbit/s, one-way ms, queue ms).
fn table1_link(case: u32) -> (f64, f64, f64) {
    match case { 1 => (6.0, 100.0, 300.0), 2 => (12.0, 50.0, 150.0), _ => (15.0, 30.0, 100.0) }
}

/// Three flows on a Table I link with the VI-A schedule (0–T, 35–200, 80–T), harness limits
/// (min 300, start 500, max = link rate).
fn table1_scenario(controller: &str, case: u32, duration: f64) -> Scenario {
    let (mbps, owd, q) = table1_link(case);
    let media = serde_json::json!({"min_kbps": 300, "start_kbps": 500, "max_kbps": mbps * 1000.0});
    scenario(serde_json::json!({
        "name": format!("table1-case{case}-{controller}"), "duration_s": duration,
        "link": {"capacity_kbps": mbps * 1000.0, "queue": {"ms": q}},
        "flows": [
            {"kind": "media", "controller": controller, "one_way_delay_ms": owd, "media": media},
            {"kind": "media", "controller": controller, "one_way_delay_ms": owd, "media": media, "start_s": 35.0_f64.min(duration), "stop_s": 200.0_f64.min(duration)},
            {"kind": "media", "controller": controller, "one_way_delay_ms": owd, "media": media, "start_s": 80.0_f64.min(duration)}
        ],
        "metrics": {"packet_log": false}
    }))
}

#[test]
#[ignore]
fn explore_bbr() {
    let dur: f64 = std::env::var("DUR").ok().and_then(|v| v.parse().ok()).unwrap_or(120.0);
    for case in 1..=3 {
        for c in ["bbr-webrtc", "rbbr"] {
            let mut sc = table1_scenario(c, case, dur);
            if c == "rbbr" { if let Ok(p) = std::env::var("PARAMS") { for f in &mut sc.flows { f.params = serde_json::from_str(&p).unwrap(); } } }
            let mut sim = build_simulation(&sc, 1, None).unwrap();
            let p = run_sampling_pauses(&mut sim);
            let s = sim.summary();
            let loss: f64 = s.flows.iter().map(|f| f.packets_lost as f64).sum::<f64>() / s.flows.iter().map(|f| f.packets_sent as f64).sum::<f64>();
            println!("case {case} {c:>10}: loss {:.2}% util {:.3} owd {:?} pauses {:?} tput {:?}", loss * 100.0, s.link.utilization,
                s.flows.iter().map(|f| f.owd_ms_mean.unwrap_or(f64::NAN).round()).collect::<Vec<_>>(), p,
                s.flows.iter().map(|f| f.throughput_kbps.round()).collect::<Vec<_>>());
        }
    }
}

#[test]
#[ignore]
fn explore_loss_timeline() {
    let c = std::env::var("CC").unwrap_or("rbbr".into());
    let case: u32 = std::env::var("CASE").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let mut sc = table1_scenario(&c, case, 120.0);
    sc.metrics.packet_log = true;
    if let Ok(p) = std::env::var("PARAMS") { for f in &mut sc.flows { f.params = serde_json::from_str(&p).unwrap(); } }
    let mut sim = build_simulation(&sc, 1, None).unwrap();
    sim.run_to_end();
    let log = sim.take_packets();
    let mut bins = vec![(0u64, 0u64); 24];
    for i in 0..log.len() {
        let b = ((log.send_s[i] / 5.0) as usize).min(23);
        bins[b].0 += 1;
        if log.lost[i] { bins[b].1 += 1; }
    }
    for (i, (n, l)) in bins.iter().enumerate() { println!("{:>3}-{:>3}s sent {n:>6} lost {l:>5} ({:.2}%)", i * 5, i * 5 + 5, *l as f64 / (*n).max(1) as f64 * 100.0); }
}
