//! Controllers built outside the core (`BuildContext::external`, what the Python binding uses)
//! and the driver's abort flag: the simulator takes them like built-ins and stops right after
//! the event during which the flag went up.

use ratelab_core::controller::{Constraints, Controller, TransportFeedback, Update};
use ratelab_core::controllers::{BuildContext, Built, ExternalFactory};
use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation_ext;
use ratelab_core::{Bitrate, Time};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Constant rate; raises `abort` at the first feedback after `fail_at`.
struct Ext { rate: Bitrate, fail_at: Time, abort: Arc<AtomicBool> }

impl Controller for Ext {
    fn on_start(&mut self, _now: Time, _c: Constraints) -> Update { Update::rates(self.rate, 1.0) }
    fn on_feedback(&mut self, fb: &TransportFeedback) -> Update {
        if fb.feedback_time >= self.fail_at { self.abort.store(true, Ordering::SeqCst); }
        Update::default()
    }
}

fn factory(abort: Arc<AtomicBool>, fail_at_s: f64) -> ExternalFactory {
    Arc::new(move |name: &str, params: &serde_json::Value, _cx: &BuildContext| {
        (name == "ext:Const").then(|| {
            let kbps = params.get("kbps").and_then(|v| v.as_f64()).unwrap_or(400.0);
            Ok(Built::sender(Ext { rate: Bitrate::from_kbps_f64(kbps), fail_at: Time::from_secs_f64(fail_at_s), abort: abort.clone() }))
        })
    })
}

fn scenario(controller: &str) -> Scenario {
    let v = serde_json::json!({
        "name": "t", "duration_s": 10, "link": {"capacity_kbps": 2000, "queue": {"ms": 300}},
        "flows": [{"kind": "media", "controller": controller, "params": {"kbps": 700},
                   "media": {"min_kbps": 100, "max_kbps": 2000, "start_kbps": 300}}]
    });
    Scenario::from_json(&v.to_string()).expect("valid scenario")
}

#[test]
fn an_external_controller_runs_under_its_own_name_with_its_params() {
    let abort = Arc::new(AtomicBool::new(false));
    let mut sim = build_simulation_ext(&scenario("ext:Const"), 1, None, None, Some(factory(abort, 1e9))).unwrap();
    sim.run_to_end();
    assert!(sim.is_finished());
    let s = sim.summary();
    assert_eq!(s.flows[0].controller, "ext:Const");
    assert!((s.flows[0].throughput_kbps - 700.0).abs() < 70.0, "{}", s.flows[0].throughput_kbps);
    // without the factory the name is unknown, and the error names the field
    let err = build_simulation_ext(&scenario("ext:Const"), 1, None, None, None).err().expect("unknown without a factory");
    assert_eq!(err.field, "flows[0].controller");
}

#[test]
fn the_abort_flag_stops_the_run_right_after_the_failing_event() {
    let abort = Arc::new(AtomicBool::new(false));
    let mut sim = build_simulation_ext(&scenario("ext:Const"), 1, None, None, Some(factory(abort.clone(), 2.0))).unwrap();
    sim.set_abort(abort.clone());
    assert!(!sim.run_until(Time::from_secs_f64(1.5)), "not yet");
    assert!(!sim.is_aborted());
    assert!(!sim.run_until(Time::from_secs_f64(10.0)));
    assert!(sim.is_aborted() && !sim.is_finished());
    let t = sim.now().as_secs_f64();
    assert!((2.0..2.2).contains(&t), "stopped at {t}");
}
