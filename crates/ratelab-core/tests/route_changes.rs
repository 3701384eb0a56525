//! `[[route_changes]]` in the simulator: the link's capacity, delay, loss and queue change at
//! once, the old queue is dropped or carried, the senders are told (GCC resets), and the run
//! stays deterministic and conserves packets.

use ratelab_core::scenario::Scenario;
use ratelab_core::sim::{build_simulation, FlowState, Simulation};

fn target_kbps(sim: &Simulation) -> f64 {
    match &sim.flows[0].state { FlowState::Media(m) => m.sender.target().kbps_f64(), FlowState::Tcp(_) => f64::NAN }
}

fn scenario(v: serde_json::Value) -> Scenario { Scenario::from_json(&v.to_string()).expect("valid scenario") }

fn in_flight(log: &ratelab_core::metrics::PacketLog) -> u64 {
    log.recv_s.iter().zip(&log.lost).filter(|(r, l)| r.is_nan() && !**l).count() as u64
}

/// A fixed 800 kbit/s sender, 10 ms propagation, on 2 Mbit/s + 20 ms; at 5 s the route becomes
/// 500 kbit/s + 60 ms (a queue of 200 ms at 500 kbit/s).
fn fixed_handover(queued: &str) -> serde_json::Value {
    serde_json::json!({
        "name": "t", "duration_s": 8,
        "link": {"capacity_kbps": 2000, "delay_ms": 20, "queue": {"ms": 200, "rate_kbps": 500}},
        "flows": [{"kind": "media", "controller": "fixed", "params": {"rate_kbps": 800}, "one_way_delay_ms": 10,
                   "media": {"min_kbps": 10, "max_kbps": 10000, "start_kbps": 800, "frame_size_noise": 0.0}}],
        "route_changes": [{"at_s": 5, "queued": queued, "link": {"capacity_kbps": 500, "delay_ms": 60, "queue": {"ms": 200}}}]
    })
}

#[test]
fn capacity_delay_and_queue_change_at_the_given_time() {
    let mut sim = build_simulation(&scenario(fixed_handover("drop")), 1, None).unwrap();
    sim.run_to_end();
    let s = sim.summary();
    let log = sim.take_packets();
    let series = sim.take_series();
    let cap_at = |t: f64| series.capacity_kbps[series.t_s.iter().position(|&x| x >= t).unwrap()];
    assert_eq!((cap_at(4.9), cap_at(5.1)), (2000.0, 500.0));
    // One-way delay of packets sent in a quiet second before: 20 + 10 ms plus serialization
    // (< 10 ms at 2 Mbit/s); after: 60 + 10 ms at least, the 800 kbit/s sender overruns the
    // 500 kbit/s route so its 200 ms queue fills and drops.
    let owd = |a: f64, b: f64| -> Vec<f64> {
        (0..log.send_s.len()).filter(|&i| log.send_s[i] >= a && log.send_s[i] < b && !log.recv_s[i].is_nan()).map(|i| (log.recv_s[i] - log.send_s[i]) * 1e3).collect()
    };
    let before = owd(3.0, 4.9);
    assert!(before.iter().all(|&d| (30.0..42.0).contains(&d)), "{:?}", before.iter().cloned().fold(0.0, f64::max));
    let after = owd(5.2, 7.5);
    assert!(after.iter().all(|&d| d >= 70.0), "{:?}", after.iter().cloned().fold(f64::INFINITY, f64::min));
    assert!(after.iter().cloned().fold(0.0, f64::max) > 230.0, "the new route's queue fills");
    // The summary's capacity is over the whole run: 2000 kbit/s for 5 s, then 500 for 3 s.
    assert_eq!(s.link.capacity_kbps_mean, (2000.0 * 5.0 + 500.0 * 3.0) / 8.0);
    let f = &s.flows[0];
    assert!((f.utilization - f.throughput_kbps / s.link.capacity_kbps_mean).abs() < 1e-9);
    assert!(f.packets_lost > 0);
    assert_eq!(f.packets_sent, f.packets_received + f.packets_lost + in_flight(&log));
}

#[test]
fn the_old_queue_is_dropped_or_carried() {
    // 800 kbit/s into 500 kbit/s is not what fills the old route (2 Mbit/s): give the old route
    // 400 kbit/s so that its 200 ms queue is full at 5 s, then switch to a fast route.
    let run = |queued: &str| {
        let mut v = fixed_handover(queued);
        v["link"]["capacity_kbps"] = 400.into();
        v["route_changes"][0]["link"] = serde_json::json!({"capacity_kbps": 5000, "delay_ms": 20});
        let mut sim = build_simulation(&scenario(v), 1, None).unwrap();
        sim.run_until(ratelab_core::units::Time::from_ms(4999));
        let lost_before = sim.flows[0].metrics.packets_lost;
        let queued_now = sim.link().queue_packets() as u64 + sim.link().in_service().is_some() as u64;
        sim.run_until(ratelab_core::units::Time::from_ms(5001));
        (queued_now, sim.flows[0].metrics.packets_lost - lost_before)
    };
    let (queued, lost) = run("drop");
    assert!(queued > 5, "{queued}");
    // Lost in those 2 ms: the whole old queue, and the packet in service (no new drops on
    // the fast, empty route).
    assert_eq!(lost, queued);
    let (queued, lost) = run("carry");
    assert!(queued > 5);
    assert_eq!(lost, 0, "carried packets wait for the new route");
}

/// GCC on 2 Mbit/s, 25 ms each way; at 10 s a new route of the same kind.
fn gcc_route_change(told: Option<serde_json::Value>, params: serde_json::Value) -> f64 {
    let mut rc = serde_json::json!({"at_s": 10, "link": {"capacity_kbps": 2000}});
    if let Some(t) = told { rc["flows"] = t; }
    let v = serde_json::json!({
        "name": "t", "duration_s": 10.1, "link": {"capacity_kbps": 2000},
        "flows": [{"kind": "media", "controller": "gcc", "params": params, "one_way_delay_ms": 25,
                   "media": {"min_kbps": 30, "max_kbps": 5000, "start_kbps": 300}}],
        "route_changes": [rc], "metrics": {"packet_log": false}
    });
    let mut sim = build_simulation(&scenario(v), 1, None).unwrap();
    sim.run_until(ratelab_core::units::Time::from_ms(9_990));
    let before = target_kbps(&sim);
    sim.run_to_end();
    let after = target_kbps(&sim);
    assert!(before > 1000.0, "GCC has ramped up before the change: {before}");
    after
}

#[test]
fn told_senders_are_reset_and_silent_changes_are_not_reported() {
    // libwebrtc resets to the start rate on a route change.
    assert_eq!(gcc_route_change(None, serde_json::json!({})), 300.0);
    // `flows = []`: the path changed but nobody was told; GCC keeps its estimate.
    assert!(gcc_route_change(Some(serde_json::json!([])), serde_json::json!({})) > 1000.0);
    // Safe reset: min(start rate, estimate) = the start rate here too.
    assert_eq!(gcc_route_change(None, serde_json::json!({"safe_reset_on_route_change": true})), 300.0);
}

#[test]
fn deterministic_with_route_changes() {
    let mut v = fixed_handover("drop");
    v["flows"][0]["controller"] = "gcc".into();
    v["flows"][0]["params"] = serde_json::json!({});
    v["route_changes"][0]["link"]["loss"] = 0.02.into();
    let run = || {
        let mut sim = build_simulation(&scenario(v.clone()), 7, None).unwrap();
        sim.run_to_end();
        let s = sim.take_series();
        (s.target_kbps, s.recv_kbps)
    };
    assert_eq!(run(), run());
}

#[test]
fn a_route_change_after_the_end_never_happens() {
    // `--set duration_s=4` on a scenario whose route changes at 5 s: valid, the link stays.
    let mut v = fixed_handover("drop");
    v["duration_s"] = 4.into();
    let mut sim = build_simulation(&scenario(v), 1, None).unwrap();
    sim.run_to_end();
    let series = sim.take_series();
    assert!(series.capacity_kbps.iter().all(|&c| c == 2000.0));
}

#[test]
fn bad_route_changes_are_one_line_errors_naming_the_field() {
    let err = |patch: &dyn Fn(&mut serde_json::Value)| {
        let mut v = fixed_handover("drop");
        patch(&mut v);
        let e = Scenario::from_json(&v.to_string()).unwrap_err();
        assert!(!e.to_string().contains('\n'), "{e}");
        (e.field, e.message)
    };
    assert_eq!(err(&|v| v["route_changes"][0]["at_s"] = (-1).into()).0, "route_changes[0].at_s");
    assert_eq!(err(&|v| v["route_changes"][0]["link"]["loss"] = 2.into()).0, "route_changes[0].link.loss");
    assert_eq!(err(&|v| v["route_changes"][0]["link"]["steps"] = serde_json::json!([[0, 100]])).0, "route_changes[0].link");
    assert_eq!(err(&|v| v["route_changes"][0]["flows"] = serde_json::json!([3])).0, "route_changes[0].flows[0]");
    assert_eq!(err(&|v| v["route_changes"][0]["direction"] = "reverse".into()).0, "route_changes[0].direction");
    assert_eq!(err(&|v| v["route_changes"][0]["queued"] = "keep".into()).0, "route_changes[0].queued");
    let (f, m) = err(&|v| v["route_changes"] = serde_json::json!([{"at_s": 3, "link": {"capacity_kbps": 1}}, {"at_s": 2, "link": {"capacity_kbps": 1}}]));
    assert_eq!(f, "route_changes[1].at_s");
    assert!(m.contains("time order"), "{m}");
}
