//! Whole-simulation behaviour of NADA, NADAR, Copa, PCC Vivace and SCReAM (issue 4):
//! utilization on a 4 Mbit/s, 50 ms link; NADA's equilibrium queue (RFC 8698); Copa's and
//! Vivace's low delay; and the paper-002 claims on NADA's late-comer advantage and NADAR's
//! fairness (ignored: they do not reproduce, see docs/controllers/nada.md).

use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation;
use ratelab_core::sim::summary::RunSummary;

fn scenario(v: serde_json::Value) -> Scenario { Scenario::from_json(&v.to_string()).expect("valid scenario") }

/// One media flow on a 4 Mbit/s bottleneck, 50 ms one-way propagation, 300 ms drop-tail queue.
fn single(controller: &str, params: serde_json::Value, secs: f64) -> serde_json::Value {
    serde_json::json!({
        "name": format!("{controller}-single"), "duration_s": secs,
        "link": {"capacity_kbps": 4000, "queue": {"ms": 300}},
        "flows": [{"kind": "media", "controller": controller, "params": params, "one_way_delay_ms": 50,
                   "media": {"min_kbps": 150, "max_kbps": 5000, "start_kbps": 300}}],
        "metrics": {"packet_log": false}
    })
}

/// Paper 002's three-flow schedule (0–300 s, 35–200 s, 80–300 s; spec 5.10) with its harness'
/// rate limits (min 300, start 500, max = link rate) and WebRTC's fake encoder (frames follow
/// the target at once, constant sizes, no periodic key frames).
fn paper_three(controller: &str, cap: f64, owd: f64, queue_ms: f64) -> serde_json::Value {
    let flow = |start: f64, stop: f64| serde_json::json!({"kind": "media", "controller": controller, "one_way_delay_ms": owd, "start_s": start, "stop_s": stop,
        "media": {"min_kbps": 300, "max_kbps": cap, "start_kbps": 500, "encoder_lag_ms": 0.0, "frame_size_noise": 0.0, "keyframe_interval_s": 0.0}});
    serde_json::json!({
        "name": format!("{controller}-three"), "duration_s": 300,
        "link": {"capacity_kbps": cap, "queue": {"ms": queue_ms}},
        "flows": [flow(0.0, 300.0), flow(35.0, 200.0), flow(80.0, 300.0)],
        "metrics": {"packet_log": false}
    })
}

/// Per-flow mean receive rate (kbit/s) and mean bottleneck queue (ms) over [t0, t1), and the summary.
fn run_window(sc: serde_json::Value, seed: u64, t0: f64, t1: f64) -> (Vec<f64>, f64, RunSummary) {
    let mut sim = build_simulation(&scenario(sc), seed, None).unwrap();
    sim.run_to_end();
    let s = sim.take_series();
    let nflows = s.flow.iter().copied().max().map_or(0, |m| m as usize + 1);
    let mut acc = vec![(0.0, 0usize); nflows];
    let (mut q, mut nq) = (0.0, 0usize);
    for i in 0..s.len() {
        if s.t_s[i] < t0 || s.t_s[i] >= t1 { continue; }
        if s.recv_kbps[i].is_finite() {
            let a = &mut acc[s.flow[i] as usize];
            a.0 += s.recv_kbps[i];
            a.1 += 1;
        }
        if s.queue_ms[i].is_finite() { q += s.queue_ms[i]; nq += 1; }
    }
    (acc.iter().map(|(x, n)| x / (*n).max(1) as f64).collect(), q / nq.max(1) as f64, sim.summary())
}

#[test]
fn every_controller_reaches_high_utilization_on_a_4_mbit_50_ms_link() {
    for c in ["nada", "nadar", "copa", "vivace", "scream"] {
        let (rates, _, s) = run_window(single(c, serde_json::Value::Null, 60.0), 1, 20.0, 60.0);
        let util = rates[0] / 4000.0;
        // measured (seed 1): nada 1.00, nadar 0.99, copa 0.85, vivace 0.96, scream 0.97
        assert!(util > 0.8 && util < 1.05, "{c}: utilization 20–60 s {util:.3}");
        assert!(s.flows[0].loss_rate < 0.01, "{c}: loss {}", s.flows[0].loss_rate);
        assert!(s.link.utilization > 0.7, "{c}: whole-run utilization {}", s.link.utilization);
    }
}

#[test]
fn nada_standing_queue_follows_xref_rmax_over_rate() {
    // RFC 8698 equilibrium x = PRIO·XREF·RMAX/r: one flow at ≈ 4 Mbit/s with RMAX = 5 Mbit/s
    // (the media max) keeps ≈ 12.5 ms; doubling RMAX doubles the standing queue.
    // RFC 8698's r_ref is the *encoder* rate, so this check runs with the simulator's header
    // overhead accounting off (with it on, the measured queues are 17.9 / 25.1 ms: the rate
    // the equation balances is then a wire rate 3.3 % above what the encoder produces).
    let rfc = |mut v: serde_json::Value| { v["flows"][0]["media"]["overhead_accounting"] = serde_json::json!(false); v };
    let (_, q5, _) = run_window(rfc(single("nada", serde_json::Value::Null, 60.0)), 1, 30.0, 60.0);
    let (_, q10, _) = run_window(rfc(single("nada", serde_json::json!({"rmax_kbps": 10000}), 60.0)), 1, 30.0, 60.0);
    assert!(q5 > 8.0 && q5 < 16.0, "RMAX 5 Mbit/s: {q5:.1} ms");
    assert!(q10 > 1.6 * q5 && q10 < 2.4 * q5, "RMAX 10 Mbit/s: {q10:.1} ms vs {q5:.1} ms");
}

#[test]
fn copa_keeps_the_queue_low() {
    // Copa's target d_q = 1/(δ·λ) is a few ms; feedback batching and encoder lag make it
    // oscillate, but the 300 ms buffer never fills.
    let (_, _, s) = run_window(single("copa", serde_json::Value::Null, 60.0), 1, 0.0, 60.0);
    let f = &s.flows[0];
    let (mean, p95) = (f.queue_delay_ms_mean.unwrap(), f.queue_delay_ms_p95.unwrap());
    assert!(mean < 50.0 && p95 < 150.0, "lab encoder: mean {mean:.1} ms, p95 {p95:.1} ms");
    assert_eq!(f.packets_lost, 0);
    // with the paper harness' fake encoder (no lag) the queue is lower still
    let mut sc = single("copa", serde_json::Value::Null, 60.0);
    sc["flows"][0]["media"]["encoder_lag_ms"] = serde_json::json!(0.0);
    let (_, _, s) = run_window(sc, 1, 0.0, 60.0);
    let m0 = s.flows[0].queue_delay_ms_mean.unwrap();
    assert!(m0 < 35.0 && m0 < mean, "no encoder lag: mean {m0:.1} ms");
}

#[test]
fn vivace_alone_keeps_the_queue_nearly_empty() {
    // paper 002, VI-A: "Vivace achieves the lowest transmission delay"
    let (_, q, s) = run_window(single("vivace", serde_json::Value::Null, 60.0), 1, 20.0, 60.0);
    assert!(q < 5.0, "queue {q:.1} ms");
    let (_, qn, _) = run_window(single("nada", serde_json::Value::Null, 60.0), 1, 20.0, 60.0);
    assert!(q < qn, "vivace {q:.1} ms vs nada {qn:.1} ms");
    assert!(s.flows[0].utilization > 0.8);
}

/// Paper 002, VI-A (Fig. 12a): "NADA suffers the later comer advantage … during 100 s to 200 s".
/// Case 2 (3 Mbit/s, 50 ms, 200 ms queue). Holds: 100–200 s rates 648 / 786 / 1565 kbit/s
/// (seed 1); late-comers get 1.56–1.82× the first flow over seeds 1–5. (An earlier build, before
/// per-flow random frame phases and header-overhead accounting, had the three flows even.)
#[test]
fn nada_late_comers_get_more_than_the_first_flow() {
    let (r, _, _) = run_window(paper_three("nada", 3000.0, 50.0, 200.0), 1, 100.0, 200.0);
    let late = (r[1] + r[2]) / 2.0;
    assert!(late > 1.15 * r[0], "rates 100–200 s: {r:?}");
}

/// Paper 002, VI-A (Fig. 12b): NADAR converges to fairness where NADA does not, and has lower
/// delay. Holds: Jain 0.978–0.982 (NADAR) vs 0.918–0.941 (NADA), mean queue 28.6–28.9 vs
/// 34.1–37.1 ms over 35–300 s, seeds 1–5.
#[test]
fn nadar_is_fairer_and_faster_than_nada() {
    let (_, qn, sn) = run_window(paper_three("nada", 3000.0, 50.0, 200.0), 1, 35.0, 300.0);
    let (_, qr, sr) = run_window(paper_three("nadar", 3000.0, 50.0, 200.0), 1, 35.0, 300.0);
    assert!(sr.link.jain_index > sn.link.jain_index + 0.01, "Jain nadar {} vs nada {}", sr.link.jain_index, sn.link.jain_index);
    assert!(qr < qn, "queue nadar {qr:.1} vs nada {qn:.1}");
}

