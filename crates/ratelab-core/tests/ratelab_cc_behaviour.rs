//! Whole-simulation checks of `ratelab-cc` (issue 15) where the papers and RFCs look: RFC 8867
//! 5.4 (three flows, Jain after convergence), 5.5 (RTT fairness, no flow below half its fair
//! share), 5.3 (congested feedback, no collapse), `lcc-loss` with 10 % random loss and
//! `cross-fast-adapt` (delay spike after a capacity drop). Each runs in well under a second of
//! release time; the scenarios are the built-in ones written out as JSON.

use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation;

fn scenario(v: serde_json::Value) -> Scenario { Scenario::from_json(&v.to_string()).expect("valid scenario") }

fn rmcat_media(start_s: f64, owd_ms: f64) -> serde_json::Value {
    serde_json::json!({"kind": "media", "controller": "ratelab-cc", "start_s": start_s, "one_way_delay_ms": owd_ms,
                       "media": {"min_kbps": 150, "max_kbps": 1500, "start_kbps": 150}, "feedback": {"interval_ms": 100}})
}

/// Per-flow mean receive rate over [t0, t1) from the series.
fn flow_means(sim: &mut ratelab_core::sim::Simulation, n: u32, t0: f64, t1: f64) -> Vec<f64> {
    let s = sim.take_series();
    (0..n).map(|f| {
        let xs: Vec<f64> = (0..s.t_s.len()).filter(|&i| s.flow[i] == f && s.t_s[i] >= t0 && s.t_s[i] < t1 && s.recv_kbps[i].is_finite()).map(|i| s.recv_kbps[i]).collect();
        xs.iter().sum::<f64>() / xs.len().max(1) as f64
    }).collect()
}

fn jain(x: &[f64]) -> f64 { x.iter().sum::<f64>().powi(2) / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>()) }

#[test]
fn rmcat_5_4_three_flows_share_fairly() {
    let sc = scenario(serde_json::json!({
        "name": "rmcat-5.4", "duration_s": 120, "link": {"capacity_kbps": 3500, "queue": {"ms": 300}},
        "flows": [rmcat_media(0.0, 50.0), rmcat_media(20.0, 50.0), rmcat_media(40.0, 50.0)],
        "metrics": {"packet_log": false}
    }));
    let mut sim = build_simulation(&sc, 1, None).unwrap();
    sim.run_to_end();
    let rates = flow_means(&mut sim, 3, 60.0, 120.0);
    let j = jain(&rates);
    println!("5.4 rates 60-120 s {rates:?}, Jain {j:.3}");
    assert!(j >= 0.95, "Jain {j} over {rates:?}");
    assert!(rates.iter().sum::<f64>() > 0.75 * 3500.0, "total {rates:?}");
}

#[test]
fn rmcat_5_5_no_flow_below_half_its_fair_share() {
    let owd = [10.0, 25.0, 50.0, 100.0, 150.0];
    let flows: Vec<_> = owd.iter().enumerate().map(|(i, d)| rmcat_media(10.0 * i as f64, *d)).collect();
    let sc = scenario(serde_json::json!({
        "name": "rmcat-5.5", "duration_s": 300, "link": {"capacity_kbps": 4000, "queue": {"ms": 300}},
        "flows": flows, "metrics": {"packet_log": false}
    }));
    let mut sim = build_simulation(&sc, 1, None).unwrap();
    sim.run_to_end();
    let rates = flow_means(&mut sim, 5, 100.0, 300.0);
    println!("5.5 rates 100-300 s {rates:?} (fair share 800)");
    for r in &rates { assert!(*r >= 400.0, "a flow below half its fair share: {rates:?}"); }
}

#[test]
fn rmcat_5_3_congested_feedback_does_not_collapse() {
    let sc = scenario(serde_json::json!({
        "name": "rmcat-5.3", "duration_s": 100,
        "link": {"steps": [[0, 2000], [20, 1000], [40, 500], [60, 2000]], "queue": {"ms": 300, "rate_kbps": 2000}},
        "reverse_link": {"steps": [[0, 2000], [35, 800], [70, 2000]], "queue": {"ms": 300, "rate_kbps": 2000}},
        "flows": [
            {"kind": "media", "controller": "ratelab-cc", "label": "forward", "one_way_delay_ms": 50, "feedback": {"interval_ms": 100},
             "media": {"min_kbps": 150, "max_kbps": 1500, "start_kbps": 150}},
            {"kind": "media", "controller": "ratelab-cc", "label": "backward", "direction": "reverse", "one_way_delay_ms": 50, "feedback": {"interval_ms": 100},
             "media": {"min_kbps": 150, "max_kbps": 1500, "start_kbps": 150}}
        ],
        "metrics": {"packet_log": false}
    }));
    let mut sim = build_simulation(&sc, 1, None).unwrap();
    sim.run_to_end();
    let s = sim.summary();
    for f in &s.flows {
        println!("5.3 {} {:.0} kbit/s, p95 queue {:?} ms", f.label, f.throughput_kbps, f.queue_delay_ms_p95);
        assert!(f.throughput_kbps > 500.0, "flow {} collapsed: {:.0} kbit/s", f.label, f.throughput_kbps);
    }
}

#[test]
fn lcc_loss_ten_percent_keeps_85_percent_utilization() {
    let sc = scenario(serde_json::json!({
        "name": "lcc-loss", "duration_s": 100, "link": {"capacity_kbps": 1000, "loss": 0.1},
        "flows": [{"kind": "media", "controller": "ratelab-cc", "one_way_delay_ms": 50}],
        "metrics": {"packet_log": false}
    }));
    let mut sim = build_simulation(&sc, 1, None).unwrap();
    sim.run_to_end();
    let s = sim.summary();
    println!("lcc-loss 10 %: utilization {:.3}", s.link.utilization);
    assert!(s.link.utilization >= 0.85, "utilization {}", s.link.utilization);
}

#[test]
fn cross_fast_adapt_delay_spike_under_two_seconds() {
    let sc = scenario(serde_json::json!({
        "name": "cross-fast-adapt", "duration_s": 120, "link": {"steps": [[0, 10000], [40, 4000], [80, 10000]], "queue": {"packets": 171}},
        "flows": [{"kind": "media", "controller": "ratelab-cc", "one_way_delay_ms": 25,
                   "media": {"min_kbps": 300, "start_kbps": 500, "max_kbps": 10000, "encoder_lag_ms": 0, "frame_size_noise": 0,
                             "keyframe_interval_s": 0, "max_payload_bytes": 1460}}],
        "metrics": {"packet_log": false}
    }));
    let mut sim = build_simulation(&sc, 1, None).unwrap();
    sim.run_to_end();
    let s = sim.take_series();
    // Seconds in [40, 80) with the 25 ms-mean OWD more than 100 ms above the 25 ms base (the
    // measure of cross_bbr_behaviour.rs).
    let spike = (0..s.t_s.len()).filter(|&i| s.t_s[i] >= 40.0 && s.t_s[i] < 80.0 && s.owd_ms[i].is_finite() && s.owd_ms[i] > 125.0).count() as f64 * 0.025;
    let high: Vec<f64> = (0..s.t_s.len()).filter(|&i| s.t_s[i] >= 100.0 && s.target_kbps[i].is_finite()).map(|i| s.target_kbps[i]).collect();
    let high = high.iter().sum::<f64>() / high.len().max(1) as f64;
    println!("cross-fast-adapt: spike {spike:.2} s, target 100-120 s {high:.0} kbit/s");
    assert!(spike <= 2.0, "delay spike {spike} s");
    assert!(high > 8000.0, "after the capacity returns: {high}");
}

/// RFC 8867 5.6 with the default parameters (the competitive mode is on by default, with
/// its probation and re-verification rounds, docs/controllers/ratelab-cc.md): the media flow must
/// get at least twice GCC's share against NewReno (GCC: ~303 kbit/s, seed 1) without starving TCP.
#[test]
fn rmcat_5_6_holds_its_own_against_newreno() {
    let media = rmcat_media(5.0, 50.0);
    let sc = scenario(serde_json::json!({
        "name": "rmcat-5.6", "duration_s": 120, "link": {"capacity_kbps": 2000, "queue": {"ms": 300}},
        "flows": [media, {"kind": "tcp", "label": "tcp", "one_way_delay_ms": 50, "tcp": {"cc": "newreno", "mss_bytes": 1000}}],
        "metrics": {"packet_log": false}
    }));
    let mut sim = build_simulation(&sc, 1, None).unwrap();
    sim.run_to_end();
    let s = sim.summary();
    let (m, t) = (s.flows[0].throughput_kbps, s.flows[1].throughput_kbps);
    println!("5.6 media {m:.0} kbit/s, tcp {t:.0} kbit/s");
    assert!(m >= 2.0 * 303.0, "media {m:.0} kbit/s");
    assert!(t >= 0.25 * 2000.0, "tcp starved: {t:.0} kbit/s");
}
