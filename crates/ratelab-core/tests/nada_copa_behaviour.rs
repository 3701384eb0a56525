//! Whole-simulation behaviour of NADA, NADAR, Copa, PCC Vivace and SCReAM (issue 4):
//! utilization on a 4 Mbit/s, 50 ms link; NADA's late-comer advantage and NADAR's fairness
//! (paper 002, Section VI-A); Copa's low delay.

use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation;
use ratelab_core::sim::summary::RunSummary;

fn scenario(v: serde_json::Value) -> Scenario { Scenario::from_json(&v.to_string()).expect("valid scenario") }

fn single(controller: &str, params: serde_json::Value, secs: f64) -> serde_json::Value {
    serde_json::json!({
        "name": format!("{controller}-single"), "duration_s": secs,
        "link": {"capacity_kbps": 4000, "queue": {"ms": 300}},
        "flows": [{"kind": "media", "controller": controller, "params": params, "one_way_delay_ms": 50,
                   "media": {"min_kbps": 150, "max_kbps": 5000, "start_kbps": 300}}],
        "metrics": {"packet_log": false}
    })
}

fn run(sc: serde_json::Value, seed: u64) -> RunSummary {
    let mut sim = build_simulation(&scenario(sc), seed, None).unwrap();
    sim.run_to_end();
    sim.summary()
}

fn two_flows(controller: &str, params: serde_json::Value, secs: f64, second_start: f64) -> serde_json::Value {
    let flow = |start: f64| serde_json::json!({"kind": "media", "controller": controller, "params": params.clone(), "one_way_delay_ms": 50, "start_s": start,
        "media": {"min_kbps": 150, "max_kbps": 4000, "start_kbps": 300}});
    serde_json::json!({
        "name": format!("{controller}-two"), "duration_s": secs,
        "link": {"capacity_kbps": 4000, "queue": {"ms": 300}},
        "flows": [flow(0.0), flow(second_start)],
        "metrics": {"packet_log": false}
    })
}

/// Per-flow mean of the receive rate over [t0, t1), plus the mean Jain index of those means.
fn recv_means(sc: serde_json::Value, seed: u64, t0: f64, t1: f64) -> (Vec<f64>, RunSummary) {
    let mut sim = build_simulation(&scenario(sc), seed, None).unwrap();
    sim.run_to_end();
    let s = sim.take_series();
    let nflows = s.flow.iter().copied().max().map_or(0, |m| m as usize + 1);
    let mut acc = vec![(0.0, 0usize); nflows];
    for i in 0..s.len() {
        if s.t_s[i] >= t0 && s.t_s[i] < t1 && s.recv_kbps[i].is_finite() {
            let a = &mut acc[s.flow[i] as usize];
            a.0 += s.recv_kbps[i];
            a.1 += 1;
        }
    }
    (acc.iter().map(|(x, n)| x / (*n).max(1) as f64).collect(), sim.summary())
}

fn paper_three(controller: &str, params: serde_json::Value, cap: f64, owd: f64, queue_ms: f64) -> serde_json::Value {
    let flow = |start: f64, stop: f64| serde_json::json!({"kind": "media", "controller": controller, "params": params.clone(), "one_way_delay_ms": owd, "start_s": start, "stop_s": stop,
        "media": {"min_kbps": 300, "max_kbps": cap, "start_kbps": 500, "frame_size_noise": 0.0, "keyframe_interval_s": 0.0}});
    serde_json::json!({
        "name": format!("{controller}-three"), "duration_s": 300,
        "link": {"capacity_kbps": cap, "queue": {"ms": queue_ms}},
        "flows": [flow(0.0, 300.0), flow(35.0123, 200.0), flow(80.0171, 300.0)],
        "metrics": {"packet_log": false}
    })
}

fn windows(sc: serde_json::Value, step: f64, end: f64) {
    let mut sim = build_simulation(&scenario(sc), 1, None).unwrap();
    sim.run_to_end();
    let s = sim.take_series();
    let nflows = s.flow.iter().copied().max().map_or(0, |m| m as usize + 1);
    let mut t0 = 0.0;
    while t0 < end {
        let mut acc = vec![(0.0, 0.0, 0usize); nflows];
        for i in 0..s.len() {
            if s.t_s[i] >= t0 && s.t_s[i] < t0 + step && s.recv_kbps[i].is_finite() {
                let a = &mut acc[s.flow[i] as usize];
                a.0 += s.recv_kbps[i]; a.1 += if s.owd_ms[i].is_finite() { s.owd_ms[i] } else { 0.0 }; a.2 += 1;
            }
        }
        println!("t {t0:>5}: {}", acc.iter().map(|(x, o, n)| format!("{:6.0} ({:5.1})", x / (*n).max(1) as f64, o / (*n).max(1) as f64)).collect::<Vec<_>>().join(" "));
        t0 += step;
    }
}

fn merge(a: &mut serde_json::Value, b: &serde_json::Value) {
    match (a, b) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => { for (k, v) in b { merge(a.entry(k.clone()).or_insert(serde_json::Value::Null), v); } }
        (a, b) => *a = b.clone(),
    }
}

#[test]
fn explore() {
    let c = std::env::var("CC").unwrap_or("nada".into());
    let params: serde_json::Value = serde_json::from_str(&std::env::var("P").unwrap_or("null".into())).unwrap();
    let mut sc = single(&c, params.clone(), 60.0);
    let media: serde_json::Value = serde_json::from_str(&std::env::var("M").unwrap_or("{}".into())).unwrap();
    merge(&mut sc["flows"][0]["media"], &media);
    let mut sim = build_simulation(&scenario(sc), 1, None).unwrap();
    sim.run_to_end();
    let sum = sim.summary();
    let s = sim.take_series();
    let mut out = String::new();
    for i in 0..s.len() {
        if ((s.t_s[i] * 40.0).round() as i64) % 20 == 0 {
            out += &format!("{:.0}:{:.0}/{:.0}/{:.0} ", s.t_s[i], s.target_kbps[i], s.recv_kbps[i], s.queue_ms[i]);
        }
    }
    println!("{out}");
    let f = &sum.flows[0];
    println!("{c}: util {:.3} owd {:.1?} p95 {:.1?} q {:.1?} loss {:.4} freeze {:?}", sum.link.utilization, f.owd_ms_mean, f.owd_ms_p95, f.queue_delay_ms_mean, f.loss_rate, f.freeze_ratio);
}

#[test]
fn explore3() {
    let c = std::env::var("CC").unwrap_or("nada".into());
    let params: serde_json::Value = serde_json::from_str(&std::env::var("P").unwrap_or("null".into())).unwrap();
    let media: serde_json::Value = serde_json::from_str(&std::env::var("M").unwrap_or("{}".into())).unwrap();
    let mut sc = paper_three(&c, params.clone(), 4000.0, 50.0, 300.0);
    for f in sc["flows"].as_array_mut().unwrap() { merge(&mut f["media"], &media); }
    let (m, s) = recv_means(sc.clone(), 1, 100.0, 200.0);
    let (m2, _) = recv_means(sc, 1, 220.0, 300.0);
    println!("{c}: 100-200 {m:.0?} 220-300 {m2:.0?} jain {:.3} util {:.3} owd {:.1?} q {:.1?}", s.link.jain_index, s.link.utilization, s.flows.iter().map(|f| f.owd_ms_mean.unwrap_or(0.0)).collect::<Vec<_>>(), s.flows.iter().map(|f| f.queue_delay_ms_mean.unwrap_or(0.0)).collect::<Vec<_>>());
}

#[test]
fn explore_win() {
    let c = std::env::var("CC").unwrap_or("nada".into());
    let params: serde_json::Value = serde_json::from_str(&std::env::var("P").unwrap_or("null".into())).unwrap();
    windows(paper_three(&c, params, 4000.0, 50.0, 300.0), 10.0, 300.0);
}
