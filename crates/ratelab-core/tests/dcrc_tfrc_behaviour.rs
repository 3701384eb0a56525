//! Whole-simulation claims for DCRC (paper 003, spec 9), its baselines TFRC and AIMD ("CTCP"),
//! and the PSNR model (docs/controllers/dcrc.md, docs/controllers/tfrc.md, docs/video-quality.md).

use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation;
use ratelab_core::sim::summary::FlowSummary;
use serde_json::{json, Value};

/// One media flow on a constant link with a 1 s drop-tail queue (at the link rate).
fn run(controller: &str, params: Value, cap_kbps: f64, loss: f64) -> (FlowSummary, Vec<f64>, Vec<f64>) {
    let sc = json!({
        "name": "t", "duration_s": 100,
        "link": {"capacity_kbps": cap_kbps, "loss": loss, "queue": {"ms": 1000}},
        "flows": [{"kind": "media", "controller": controller, "params": params, "one_way_delay_ms": 50,
                   "media": {"min_kbps": 50, "max_kbps": 5000, "start_kbps": 300}}],
        "metrics": {"packet_log": false}
    });
    let mut sim = build_simulation(&Scenario::from_json(&sc.to_string()).expect("valid scenario"), 1, None).expect("builds");
    sim.run_to_end();
    let s = sim.take_series();
    (sim.summary().flows[0].clone(), s.t_s, s.queue_ms)
}

/// Mean of a series over [t0, t1).
fn mean(t: &[f64], v: &[f64], t0: f64, t1: f64) -> f64 {
    let xs: Vec<f64> = t.iter().zip(v).filter(|(t, x)| **t >= t0 && **t < t1 && x.is_finite()).map(|(_, x)| *x).collect();
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

#[test]
fn dcrc_pi_holds_queuing_delay_at_its_target_with_full_throughput() {
    for target in [200.0, 400.0] {
        let (f, t, q) = run("dcrc-pi", json!({"target_delay_ms": target}), 1000.0, 0.0);
        let qm = mean(&t, &q, 40.0, 100.0);
        assert!((qm - target).abs() < 0.3 * target, "target {target}: queue {qm} ms");
        assert!(f.utilization > 0.95, "target {target}: utilization {}", f.utilization);
        assert_eq!(f.packets_lost, 0);
    }
}

#[test]
fn dcrc_literal_ignores_its_delay_target() {
    // spec 9.4: q_0 cancels in Eq. 18 — two targets give the same run, bit for bit
    let (a, t, qa) = run("dcrc", json!({"target_delay_ms": 200}), 1000.0, 0.0);
    let (b, _, qb) = run("dcrc", json!({"target_delay_ms": 600}), 1000.0, 0.0);
    assert_eq!(a, b);
    assert_eq!(qa, qb);
    // its equilibrium delay is set by p(0) instead: 2·(1/p(0) − C/ω) (docs/controllers/dcrc.md)
    // p(0) = 0.4/s, ω = 500 kbit/s², C = 1 Mbit/s → 2·(2.5 − 2) = 1 s, beyond the 1 s buffer
    let (c, _, qc) = run("dcrc", json!({"initial_price": 0.4}), 1000.0, 0.0);
    assert!(mean(&t, &qc, 40.0, 100.0) > 700.0, "{}", mean(&t, &qc, 40.0, 100.0));
    assert!(c.packets_lost > 0);
    assert!(mean(&t, &qa, 40.0, 100.0) < 100.0);
}

#[test]
fn dcrc_is_loss_insensitive_where_tfrc_and_aimd_back_off() {
    // paper 003 Fig. 4 (1 Mbit/s, 50 ms): DCRC keeps its throughput as random loss grows
    let (d0, _, _) = run("dcrc-pi", json!({}), 1000.0, 0.0);
    let (d5, _, _) = run("dcrc-pi", json!({}), 1000.0, 0.05);
    let (t5, _, _) = run("tfrc", json!({}), 1000.0, 0.05);
    let (a5, _, _) = run("aimd", json!({}), 1000.0, 0.05);
    assert!(d5.throughput_kbps > 0.9 * d0.throughput_kbps, "{} vs {}", d5.throughput_kbps, d0.throughput_kbps);
    assert!(d5.throughput_kbps > t5.throughput_kbps && d5.throughput_kbps > a5.throughput_kbps);
}

#[test]
fn tfrc_and_aimd_get_a_reasonable_share_of_a_lossy_link() {
    for c in ["tfrc", "aimd"] {
        let (f, _, _) = run(c, json!({}), 1000.0, 0.01);
        // 1 % random loss at RTT ≈ 100 ms: TCP's equation allows ≈ 1.3 Mbit/s for 1200 B packets
        assert!(f.utilization > 0.6 && f.utilization < 1.01, "{c}: utilization {}", f.utilization);
        let (g, _, _) = run(c, json!({}), 1000.0, 0.05);
        assert!(g.utilization < f.utilization, "{c}: {} ≥ {}", g.utilization, f.utilization);
        assert!(g.utilization > 0.1, "{c}: {}", g.utilization);
    }
}

#[test]
fn psnr_falls_when_capacity_falls() {
    let (hi, _, _) = run("aimd", json!({}), 1500.0, 0.0);
    let (lo, _, _) = run("aimd", json!({}), 500.0, 0.0);
    let (h, l) = (hi.psnr_db_mean.expect("psnr"), lo.psnr_db_mean.expect("psnr"));
    // foreman-cif: 3.614·ln 3 ≈ 4 dB for a 3× rate ratio
    assert!(h > l + 2.5, "{h} vs {l}");
    assert!(h > 30.0 && h < 45.0 && l > 25.0, "{h} {l}");
    // and within one run: a capacity drop lowers the PSNR of the frames after it
    let sc = json!({
        "name": "drop", "duration_s": 60,
        "link": {"steps": [[0, 1500], [30, 500]], "queue": {"ms": 500}},
        "flows": [{"kind": "media", "controller": "oracle", "one_way_delay_ms": 50}],
        "metrics": {"packet_log": false}
    });
    let mut sim = build_simulation(&Scenario::from_json(&sc.to_string()).unwrap(), 1, None).unwrap();
    sim.run_until(ratelab_core::units::Time::from_ms(30_000));
    let first = sim.summary().flows[0].psnr_db_mean.unwrap();
    sim.run_to_end();
    let all = sim.summary().flows[0].psnr_db_mean.unwrap();
    assert!(all < first - 1.5, "{all} vs {first}");
}
