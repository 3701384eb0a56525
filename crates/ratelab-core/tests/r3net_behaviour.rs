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
