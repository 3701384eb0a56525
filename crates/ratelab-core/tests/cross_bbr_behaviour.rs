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
    /// Time with bytes in flight ≥ the congestion window (pacer blocked), seconds.
    cwnd_blocked_s: f64,
    /// Time with the pacer's expected queue time above 1 s, seconds.
    pacer_over_1s_s: f64,
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
            if f.active && m.history.in_flight() >= m.pacer.cwnd() { out[i].cwnd_blocked_s += 0.025; }
            if f.active && m.pacer.expected_queue_time() > ratelab_core::units::Duration::from_ms(1000) { out[i].pacer_over_1s_s += 0.025; }
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
    let hdr = std::env::var("HDR").ok().and_then(|v| v.parse::<u32>().ok()).unwrap_or(40);
    let media = serde_json::json!({"min_kbps": 300, "start_kbps": 500, "max_kbps": mbps * 1000.0, "header_bytes": hdr});
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
            if let Ok(p) = std::env::var(if c == "rbbr" { "PARAMS" } else { "BPARAMS" }) { for f in &mut sc.flows { f.params = serde_json::from_str(&p).unwrap(); } }
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

fn mean(t: &[f64], v: &[f64], t0: f64, t1: f64) -> f64 {
    let xs: Vec<f64> = t.iter().zip(v).filter(|(t, x)| **t >= t0 && **t < t1 && x.is_finite()).map(|(_, x)| *x).collect();
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

/// One Cross flow on a link with capacity steps; harness limits (min 300, start 500, max = peak).
fn cross_single(steps: serde_json::Value, owd: f64, queue_ms: f64, duration: f64, mut params: serde_json::Value) -> Scenario {
    if let Ok(extra) = std::env::var("PARAMS") {
        let extra: serde_json::Value = serde_json::from_str(&extra).unwrap();
        if params.is_null() { params = serde_json::json!({}); }
        for (k, v) in extra.as_object().unwrap() { params[k] = v.clone(); }
    }
    let max = std::env::var("MAX").ok().and_then(|v| v.parse::<f64>().ok()).unwrap_or(10000.0);
    scenario(serde_json::json!({
        "name": "cross-single", "duration_s": duration,
        "link": {"steps": steps, "queue": {"ms": queue_ms}},
        "flows": [{"kind": "media", "controller": "cross", "params": params, "one_way_delay_ms": owd,
                   "media": {"min_kbps": 300, "start_kbps": 500, "max_kbps": max, "encoder_lag_ms": std::env::var("LAG").ok().and_then(|v| v.parse::<f64>().ok()).unwrap_or(300.0)}}],
        "metrics": {"packet_log": false}
    }))
}

/// Seconds in [t0, t1) during which the per-25 ms mean OWD exceeds `thr_ms`.
fn time_above(t: &[f64], owd: &[f64], t0: f64, t1: f64, thr_ms: f64) -> f64 {
    t.iter().zip(owd).filter(|(t, o)| **t >= t0 && **t < t1 && o.is_finite() && **o > thr_ms).count() as f64 * 0.025
}

#[test]
#[ignore]
fn explore_cross() {
    let q: f64 = std::env::var("QMS").ok().and_then(|v| v.parse().ok()).unwrap_or(300.0);
    let owd: f64 = std::env::var("OWD").ok().and_then(|v| v.parse().ok()).unwrap_or(25.0);
    let sc = cross_single(serde_json::json!([[0, 10000]]), owd, q, 60.0, serde_json::Value::Null);
    let mut sim = build_simulation(&sc, 1, None).unwrap();
    sim.run_to_end();
    let s = sim.take_series();
    let sum = sim.summary();
    println!("steady: target {:.0} recv {:.0} owd {:.1} queue {:.1} util {:.3} loss {:.4} freeze {:?} frame delay {:?}", mean(&s.t_s, &s.target_kbps, 20.0, 60.0), mean(&s.t_s, &s.recv_kbps, 20.0, 60.0),
        mean(&s.t_s, &s.owd_ms, 20.0, 60.0), mean(&s.t_s, &s.queue_ms, 20.0, 60.0), sum.link.utilization, sum.flows[0].loss_rate, sum.flows[0].freeze_count, sum.flows[0].frame_delay_ms_mean);
    for fa in [true, false] {
        let sc = cross_single(serde_json::json!([[0, 10000], [40, 4000], [80, 10000]]), owd, q, 120.0, serde_json::json!({"fast_adapt": fa}));
        let mut sim = build_simulation(&sc, 1, None).unwrap();
        sim.run_to_end();
        let s = sim.take_series();
        let base = 2.0 * owd;
        println!("fast_adapt {fa}: >base+100ms {:.2} s, >base+50 {:.2} s; 80-120 target {:.0}; 60-80 target {:.0} owd {:.1}", time_above(&s.t_s, &s.owd_ms, 40.0, 80.0, base + 100.0), time_above(&s.t_s, &s.owd_ms, 40.0, 80.0, base + 50.0),
            mean(&s.t_s, &s.target_kbps, 90.0, 120.0), mean(&s.t_s, &s.target_kbps, 60.0, 80.0), mean(&s.t_s, &s.owd_ms, 60.0, 80.0));
        if std::env::var("TL").is_ok() {
            for i in (0..s.t_s.len()).step_by(8) { if s.t_s[i] > 38.0 && s.t_s[i] < 80.0 && std::env::var("TL").unwrap() == fa.to_string() { println!("  {:6.2} tgt {:6.0} send {:6.0} owd {:6.1}", s.t_s[i], s.target_kbps[i], s.send_kbps[i], s.owd_ms[i]); } }
        }
    }
}

#[test]
#[ignore]
fn explore_bbr_single() {
    for case in 1..=3 {
        let (mbps, owd, q) = table1_link(case);
        let sc = scenario(serde_json::json!({
            "name": "single", "duration_s": 120,
            "link": {"capacity_kbps": mbps * 1000.0, "queue": {"ms": q}},
            "flows": [{"kind": "media", "controller": "bbr-webrtc", "one_way_delay_ms": owd, "media": {"min_kbps": 300, "start_kbps": 500, "max_kbps": mbps * 1000.0, "header_bytes": std::env::var("HDR").ok().and_then(|v| v.parse::<u32>().ok()).unwrap_or(40)}}],
            "metrics": {"packet_log": false}
        }));
        let mut sim = build_simulation(&sc, 1, None).unwrap();
        let p = run_sampling_pauses(&mut sim);
        let s = sim.summary();
        println!("single case {case}: loss {:.2}% util {:.3} owd {:.0} pauses {:?} frame delay {:?}", s.flows[0].loss_rate * 100.0, s.link.utilization, s.flows[0].owd_ms_mean.unwrap(), p[0], s.flows[0].frame_delay_ms_mean);
    }
}

#[test]
#[ignore]
fn explore_cross_cases() {
    let dur: f64 = std::env::var("DUR").ok().and_then(|v| v.parse().ok()).unwrap_or(300.0);
    let cc = std::env::var("CC").unwrap_or("cross".into());
    for (case, mbps, owd, q) in [(1, 3.0, 30.0, 90.0), (2, 3.0, 50.0, 200.0), (4, 6.0, 50.0, 200.0), (6, 12.0, 50.0, 200.0), (7, 15.0, 30.0, 90.0)] {
        let mut params = serde_json::json!({});
        if let Ok(extra) = std::env::var("PARAMS") { params = serde_json::from_str(&extra).unwrap(); }
        let media = serde_json::json!({"min_kbps": 300, "start_kbps": 500, "max_kbps": mbps * 1000.0});
        let sc = scenario(serde_json::json!({
            "name": "case", "duration_s": dur,
            "link": {"capacity_kbps": mbps * 1000.0, "queue": {"ms": q}},
            "flows": [
                {"kind": "media", "controller": cc, "params": params, "one_way_delay_ms": owd, "media": media},
                {"kind": "media", "controller": cc, "params": params, "one_way_delay_ms": owd, "media": media, "start_s": 35.0, "stop_s": 200.0},
                {"kind": "media", "controller": cc, "params": params, "one_way_delay_ms": owd, "media": media, "start_s": 80.0}
            ],
            "metrics": {"packet_log": false}
        }));
        let mut sim = build_simulation(&sc, 1, None).unwrap();
        sim.run_to_end();
        let s = sim.summary();
        let owd_all: f64 = s.flows.iter().map(|f| f.owd_ms_mean.unwrap_or(0.0) * f.packets_received as f64).sum::<f64>() / s.flows.iter().map(|f| f.packets_received as f64).sum::<f64>();
        println!("case {case} {cc}: util {:.3} mean owd {:.1} (base {owd}) loss {:.2}% tput {:?} frame delay {:?} freezes {:?}", s.link.utilization, owd_all,
            s.flows.iter().map(|f| f.loss_rate).sum::<f64>() / 3.0 * 100.0,
            s.flows.iter().map(|f| f.throughput_kbps.round()).collect::<Vec<_>>(), s.flows.iter().map(|f| f.frame_delay_ms_mean.unwrap_or(0.0).round()).collect::<Vec<_>>(), s.flows.iter().map(|f| f.freeze_count.unwrap_or(0)).collect::<Vec<_>>());
    }
}
