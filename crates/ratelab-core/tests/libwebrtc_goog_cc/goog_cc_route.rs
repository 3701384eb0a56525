//! The `GoogCcScenario` route-change cases of `goog_cc_network_control_unittest.cc` on
//! ratelab's simulator: libwebrtc's `Scenario::ChangeRoute` is a `[[route_changes]]` entry
//! (the same link again, or the new one, with its queue carried: the emulated network node is
//! not touched by a route change), field trials are GCC parameters, and libwebrtc's
//! `send_bandwidth()` is the flow's target rate.

use ratelab_core::scenario::Scenario;
use ratelab_core::sim::{build_simulation, FlowState, Simulation};
use ratelab_core::units::Time;
use serde_json::{json, Value};

/// One video flow (start 300 kbit/s, libwebrtc's default rates 30..3000), `one_way_ms` on a
/// link of `kbps` and an uncongested, zero-delay return path (`NetworkSimulationConfig()`);
/// `route_changes` at the given times.
fn sim(kbps: f64, one_way_ms: f64, params: Value, route_changes: Value, duration_s: f64) -> Simulation {
    let v = json!({
        "name": "goog_cc_route", "duration_s": duration_s, "link": {"capacity_kbps": kbps},
        "flows": [{"kind": "media", "controller": "gcc", "params": params, "one_way_delay_ms": one_way_ms, "return_delay_ms": 0,
                   "media": {"min_kbps": 30, "max_kbps": 3000, "start_kbps": 300}}],
        "route_changes": route_changes, "metrics": {"packet_log": false}
    });
    build_simulation(&Scenario::from_json(&v.to_string()).expect("valid scenario"), 1, None).expect("builds")
}

/// The flow's target after running to `t_ms`.
fn target_at(s: &mut Simulation, t_ms: i64) -> f64 { target_at_us(s, t_ms * 1000) }

/// The flow's target just before `t_ms` (libwebrtc reads it before `ChangeRoute` at that time).
fn target_before(s: &mut Simulation, t_ms: i64) -> f64 { target_at_us(s, t_ms * 1000 - 1) }

fn target_at_us(s: &mut Simulation, t_us: i64) -> f64 {
    s.run_until(Time::from_us(t_us));
    match &s.flows[0].state { FlowState::Media(m) => m.sender.target().kbps_f64(), FlowState::Tcp(_) => unreachable!() }
}

fn near(v: f64, want: f64, tol: f64) -> bool { (v - want).abs() <= tol }

/// The same route again at `at_s`, told or not, queue carried (`ChangeRoute(route, {send_net})`).
fn same_route(at_s: f64, kbps: f64, told: bool) -> Value {
    let mut rc = json!({"at_s": at_s, "queued": "carry", "link": {"capacity_kbps": kbps}});
    if !told { rc["flows"] = json!([]); }
    rc
}

#[test]
fn maintains_low_rate_in_safe_reset_trial() {
    // 200 kbit/s, 10 ms; `SafeResetOnRouteChange/Enabled`. At 500 ms near capacity; 100 ms
    // after the route change still near it (min(start 300, estimate) keeps the low estimate).
    let mut s = sim(200.0, 10.0, json!({"safe_reset_on_route_change": true}), json!([same_route(0.5, 200.0, true)]), 0.7);
    let before = target_before(&mut s, 500);
    assert!(near(before, 200.0, 50.0), "500 ms: {before}");
    let after = target_at(&mut s, 600);
    assert!(near(after, 200.0, 50.0), "600 ms: {after}");
}

#[test]
fn cuts_high_rate_in_safe_reset_trial() {
    // 1000 kbit/s, 50 ms; after 500 ms near capacity (±300); 50 ms after the route change
    // the target is cut to the start rate (±30).
    let mut s = sim(1000.0, 50.0, json!({"safe_reset_on_route_change": true}), json!([same_route(0.5, 1000.0, true)]), 0.6);
    let before = target_before(&mut s, 500);
    assert!(near(before, 1000.0, 300.0), "500 ms: {before}");
    let after = target_at(&mut s, 550);
    assert!(near(after, 300.0, 30.0), "550 ms: {after}");
}

#[test]
fn detects_high_rate_in_safe_reset_trial() {
    // `SafeResetOnRouteChange/Enabled,ack`: 200 kbit/s for 2 s, then a new 800 kbit/s route.
    // 50 ms later (no probe result yet) the target is still near 200; 1 s later probing has
    // found more than 500.
    let rc = json!([{"at_s": 2.0, "queued": "carry", "link": {"capacity_kbps": 800}}]);
    let mut s = sim(200.0, 50.0, json!({"safe_reset_on_route_change": true, "safe_reset_acked": true}), rc, 3.1);
    let before = target_before(&mut s, 2000);
    assert!(near(before, 200.0, 50.0), "2 s: {before}");
    let soon = target_at(&mut s, 2050);
    assert!(near(soon, 200.0, 50.0), "2.05 s: {soon}");
    let later = target_at(&mut s, 3050);
    assert!(later > 800.0 - 300.0, "3.05 s: {later}");
}

#[test]
fn do_not_reset_bwe_unless_network_adapter_change_on_rout_change() {
    // `ResetOnAdapterIdChange/Enabled` decides in libwebrtc's transport (not in goog_cc)
    // whether GCC hears of a route change: a new route on the same adapter is not reported
    // (`flows = []`), a new adapter is. 1000 kbit/s, 50 ms, no safe reset.
    let rc = json!([same_route(0.5, 1000.0, false), same_route(1.05, 1000.0, true)]);
    let mut s = sim(1000.0, 50.0, json!({}), rc, 1.2);
    let before = target_before(&mut s, 500);
    assert!(near(before, 1000.0, 300.0), "500 ms: {before}");
    let same_adapter = target_at(&mut s, 550);
    assert!(near(same_adapter, 1000.0, 300.0), "550 ms: {same_adapter}");
    // libwebrtc runs another 500 ms before the adapter changes.
    target_before(&mut s, 1050);
    let new_adapter = target_at(&mut s, 1100);
    assert!(near(new_adapter, 300.0, 30.0), "1.1 s: {new_adapter}");
}
