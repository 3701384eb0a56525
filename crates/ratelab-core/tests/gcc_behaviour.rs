//! GCC behaviour claims on whole simulations (issue: "GCC behaviour claims").
//! * RMCAT 5.1 (RFC 8867): GCC follows capacity drops within a few seconds, queue bounded.
//! * LCC loss sweep (paper 000 Table I): GCC's utilization falls as random loss rises.

use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation;

fn scenario(v: serde_json::Value) -> Scenario { Scenario::from_json(&v.to_string()).expect("valid scenario") }

fn rmcat_5_1(profile: &str) -> Scenario {
    scenario(serde_json::json!({
        "name": "rmcat-5.1", "duration_s": 100,
        "link": {"steps": [[0, 1000], [40, 2500], [60, 600], [80, 1000]], "queue": {"ms": 300}},
        "flows": [{"kind": "media", "controller": "gcc", "params": {"profile": profile},
                   "one_way_delay_ms": 50, "feedback": {"interval_ms": 100},
                   "media": {"min_kbps": 150, "max_kbps": 1500, "start_kbps": 150}}],
        "metrics": {"packet_log": false}
    }))
}

/// Mean of a series column over [t0, t1).
fn mean(t: &[f64], v: &[f64], t0: f64, t1: f64) -> f64 {
    let xs: Vec<f64> = t.iter().zip(v).filter(|(t, x)| **t >= t0 && **t < t1 && x.is_finite()).map(|(_, x)| *x).collect();
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

#[test]
fn rmcat_5_1_tracks_capacity_drops_with_bounded_queue() {
    for profile in ["current", "m84"] {
        let mut sim = build_simulation(&rmcat_5_1(profile), 1, None).unwrap();
        sim.run_to_end();
        let s = sim.take_series();
        // settled in the 1 Mbit/s phase: within [50 %, 110 %] of capacity
        let a = mean(&s.t_s, &s.target_kbps, 25.0, 40.0);
        assert!(a > 500.0 && a < 1100.0, "{profile}: 25–40 s target {a}");
        // capacity drops to 600 kbit/s at 60 s: target ≤ 110 % of it within 5 s
        let b = mean(&s.t_s, &s.target_kbps, 65.0, 80.0);
        assert!(b < 660.0 && b > 250.0, "{profile}: 65–80 s target {b}");
        // the queue does not stay full after the drop (300 ms limit)
        let q = mean(&s.t_s, &s.queue_ms, 66.0, 80.0);
        assert!(q < 150.0, "{profile}: queue {q} ms");
        let sum = sim.summary();
        assert!(sum.link.utilization > 0.5, "{profile}: utilization {}", sum.link.utilization);
    }
}

#[test]
fn lcc_loss_sweep_gcc_utilization_falls_with_loss() {
    let mut util = Vec::new();
    for loss in [0.0, 0.02, 0.05, 0.10] {
        let sc = scenario(serde_json::json!({
            "name": "lcc-loss", "duration_s": 100,
            "link": {"capacity_kbps": 1000, "loss": loss},
            "flows": [{"kind": "media", "controller": "gcc", "params": {"profile": "m60"}, "one_way_delay_ms": 50,
                       "media": {"min_kbps": 50, "max_kbps": 2500, "start_kbps": 300}}],
            "metrics": {"packet_log": false}
        }));
        let mut sim = build_simulation(&sc, 1, None).unwrap();
        sim.run_to_end();
        util.push(sim.summary().flows[0].utilization);
    }
    // paper 000 Table I (WebRTC M60): 69.2 / 59.5 / 47.8 / 14.6 %
    assert!(util[0] > util[3] + 0.2, "{util:?}");
    assert!(util[2] > util[3], "{util:?}");
    assert!(util[3] < 0.5, "{util:?}");
}
