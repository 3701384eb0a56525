//! The `r3net` controller in whole simulations (issue 5): the shipped ONNX model runs inside the
//! simulator every 50 ms, its estimate reaches the sender after the return delay, and the sender
//! follows it. Behaviour claims of the shipped (trained) model on simple links.

use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation;

fn scenario(link: serde_json::Value, params: serde_json::Value, duration: f64) -> Scenario {
    Scenario::from_json(&serde_json::json!({
        "name": "r3net", "duration_s": duration, "link": link,
        "flows": [{"kind": "media", "controller": "r3net", "params": params, "one_way_delay_ms": 40,
                   "media": {"min_kbps": 20, "max_kbps": 8000}}],
        "metrics": {"packet_log": false}
    }).to_string()).expect("valid scenario")
}

fn mean(t: &[f64], v: &[f64], t0: f64, t1: f64) -> f64 {
    let xs: Vec<f64> = t.iter().zip(v).filter(|(t, x)| **t >= t0 && **t < t1 && x.is_finite()).map(|(_, x)| *x).collect();
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

#[test]
fn estimates_reach_the_sender_and_stay_in_range() {
    let sc = scenario(serde_json::json!({"capacity_kbps": 2000, "queue": {"ms": 300}}), serde_json::Value::Null, 20.0);
    let mut sim = build_simulation(&sc, 1, None).unwrap();
    sim.run_to_end();
    let s = sim.take_series();
    // Until the first estimate arrives (50 ms tick + 40 ms return) the sender holds the start rate.
    assert_eq!(s.target_kbps[0], 300.0, "first series row at 25 ms is the start rate");
    let later: Vec<f64> = s.t_s.iter().zip(&s.target_kbps).filter(|(t, _)| **t > 0.2).map(|(_, v)| *v).collect();
    assert!(later.iter().all(|v| (20.0..=8000.0).contains(v)), "targets within [min, 8 Mbit/s]");
    assert!(later.iter().any(|v| *v != 300.0), "the model's estimates replaced the start rate");
    // pacing = 1.1 × target
    for (p, t) in s.pacing_kbps.iter().zip(&s.target_kbps).skip(8) { assert!((p / t - 1.1).abs() < 1e-3, "{p} vs {t}"); }
}

#[test]
fn deterministic_across_runs() {
    let sc = scenario(serde_json::json!({"steps": [[0, 1500], [10, 600]], "queue": {"ms": 200}}), serde_json::Value::Null, 20.0);
    let run = || { let mut s = build_simulation(&sc, 3, None).unwrap(); s.run_to_end(); s.take_series().target_kbps };
    assert_eq!(run(), run());
}

#[test]
fn model_parameter_errors_name_the_field() {
    let sc = scenario(serde_json::json!({"capacity_kbps": 1000}), serde_json::json!({"model": "/no/such/model.onnx"}), 1.0);
    let e = build_simulation(&sc, 1, None).err().expect("missing model file");
    assert_eq!(e.field, "flows[0].params.model", "{e}");
    let dir = std::env::temp_dir().join(format!("ratelab-r3net-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.onnx");
    std::fs::write(&bad, b"definitely not protobuf").unwrap();
    let sc = scenario(serde_json::json!({"capacity_kbps": 1000}), serde_json::json!({"model": bad.to_str().unwrap()}), 1.0);
    assert_eq!(build_simulation(&sc, 1, None).err().expect("garbage model").field, "flows[0].params.model");
    let sc = scenario(serde_json::json!({"capacity_kbps": 1000}), serde_json::json!({"mapping": "cubic"}), 1.0);
    assert_eq!(build_simulation(&sc, 1, None).err().expect("bad mapping").field, "flows[0].params.mapping");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The shipped model on constant links (measured 2026-11-27 with the policy on tract-onnx:
/// utilisation 0.87 / 0.93 / 0.76, no loss, queue p95 183 / 36 / 5 ms at 0.5 / 2 / 5 Mbit/s; the
/// first measurement, before the GCC-parity and tract changes, read 0.88 / 0.99 / 0.92 and
/// 146 / 57 / 17 ms): it fills the link without standing queues. At 5 Mbit/s it holds back more
/// than it did, close to the 0.75 bound.
#[test]
fn shipped_model_fills_constant_links_without_loss() {
    for cap in [500.0, 2000.0, 5000.0] {
        let sc = scenario(serde_json::json!({"capacity_kbps": cap, "queue": {"ms": 300}}), serde_json::Value::Null, 60.0);
        let mut sim = build_simulation(&sc, 1, None).unwrap();
        sim.run_to_end();
        let f = &sim.summary().flows[0];
        assert!(f.utilization > 0.75, "{cap} kbit/s: utilization {}", f.utilization);
        assert!(f.loss_rate < 0.01, "{cap} kbit/s: loss {}", f.loss_rate);
        assert!(f.queue_delay_ms_p95.unwrap() < 250.0, "{cap} kbit/s: queue p95 {:?}", f.queue_delay_ms_p95);
    }
}

/// A capacity drop 2.5 → 0.6 Mbit/s at 30 s (measured 2026-11-27: target 2478 kbit/s before, 542
/// in 33–45 s; first measured 2434 / 550).
#[test]
fn shipped_model_follows_a_capacity_drop() {
    let sc = scenario(serde_json::json!({"steps": [[0, 2500], [30, 600]], "queue": {"ms": 300}}), serde_json::Value::Null, 60.0);
    let mut sim = build_simulation(&sc, 1, None).unwrap();
    sim.run_to_end();
    let s = sim.take_series();
    let before = mean(&s.t_s, &s.target_kbps, 20.0, 30.0);
    let after = mean(&s.t_s, &s.target_kbps, 33.0, 45.0);
    assert!(before > 1800.0 && before < 2800.0, "before the drop: {before}");
    assert!(after > 300.0 && after < 700.0, "3–15 s after the drop: {after}");
}
