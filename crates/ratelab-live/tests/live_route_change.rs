//! A route change in live mode (`[[route_changes]]`): a short real-time run on loopback (6 s
//! of wall clock) whose bottleneck changes from 2 Mbit/s, 10 ms to 500 kbit/s, 80 ms at 3 s.
//! The flow's controller is a constant 800 kbit/s that counts the `on_route_change` calls it
//! gets (an external controller, as the Python binding's are built).

use ratelab_core::controller::{Constraints, Controller, TransportFeedback, Update};
use ratelab_core::controllers::{Built, ExternalFactory};
use ratelab_core::scenario::Scenario;
use ratelab_core::{Bitrate, Time};
use ratelab_live::run::{live_run, LiveRunOptions};
use std::sync::{Arc, Mutex};

/// 800 kbit/s whatever happens; remembers when it was told of a route change.
struct Probe { told: Arc<Mutex<Vec<Time>>> }

impl Controller for Probe {
    fn on_start(&mut self, _now: Time, _c: Constraints) -> Update { Update::rates(Bitrate::from_kbps(800), 2.5) }
    fn on_feedback(&mut self, _fb: &TransportFeedback) -> Update { Update::default() }
    fn on_route_change(&mut self, now: Time, _c: Constraints) -> Update {
        self.told.lock().unwrap().push(now);
        Update::default()
    }
}

/// Mean of the finite values of `v` at times in [from, to).
fn mean_in(t: &[f64], v: &[f64], from: f64, to: f64) -> f64 {
    let x: Vec<f64> = t.iter().zip(v).filter(|(t, v)| **t >= from && **t < to && v.is_finite()).map(|(_, v)| *v).collect();
    assert!(!x.is_empty(), "no samples in [{from}, {to})");
    x.iter().sum::<f64>() / x.len() as f64
}

#[test]
fn a_route_change_switches_the_link_and_tells_the_controller_once_at_its_time() {
    let told = Arc::new(Mutex::new(Vec::new()));
    let t2 = told.clone();
    let factory: ExternalFactory = Arc::new(move |name, _params, _cx| (name == "probe").then(|| Ok(Built::sender(Probe { told: t2.clone() }))));
    let sc = Scenario::from_json(&serde_json::json!({
        "name": "handover-live", "duration_s": 6,
        "link": {"capacity_kbps": 2000, "delay_ms": 10, "queue": {"ms": 300}},
        "flows": [{"kind": "media", "controller": "probe", "one_way_delay_ms": 20, "media": {"start_kbps": 800}}],
        "route_changes": [{"at_s": 3, "link": {"capacity_kbps": 500, "delay_ms": 80, "queue": {"ms": 150}}}],
    }).to_string()).unwrap();
    let r = live_run(&sc, &LiveRunOptions { external: Some(factory), ..Default::default() }).unwrap();
    let d = &r.details;
    assert_eq!(d.flows[0].sender.end_reason, "duration", "{:?}", d.flows[0].sender.message);

    // Told once, at 3 s (the loop wakes for it; allow scheduling slack on a busy machine).
    let told = told.lock().unwrap().clone();
    assert_eq!(told.len(), 1, "{told:?}");
    let at = told[0].as_secs_f64();
    assert!((3.0..3.1).contains(&at), "told at {at} s");
    assert_eq!(d.flows[0].sender.route_changes_told_s.len(), 1);

    // The link: 2 Mbit/s before, 500 kbit/s after, in the series and the summary's mean.
    let s = &r.series;
    let cap_at = |x: f64| s.t_s.iter().zip(&s.capacity_kbps).find(|(t, _)| **t >= x).map(|(_, c)| *c).unwrap();
    assert_eq!((cap_at(2.5), cap_at(3.5)), (2000.0, 500.0));
    assert!((r.summary.link.capacity_kbps_mean - 1250.0).abs() < 1.0, "{}", r.summary.link.capacity_kbps_mean);

    // Delivered rate: all of 800 kbit/s before; at most the new 500 kbit/s after (drops).
    let before = mean_in(&s.t_s, &s.recv_kbps, 1.5, 3.0);
    let after = mean_in(&s.t_s, &s.recv_kbps, 3.5, 6.0);
    assert!(before > 650.0 && before < 950.0, "before {before}");
    assert!(after < 560.0 && after > 350.0, "after {after}");
    assert!(d.emulator.forward.queue_drops > 0);
    // One-way delay: 30 ms of path + little queue before; 100 ms of path + up to 150 ms of
    // queue after.
    let owd_before = mean_in(&s.t_s, &s.owd_ms, 1.5, 3.0);
    let owd_after = mean_in(&s.t_s, &s.owd_ms, 4.0, 6.0);
    eprintln!("told at {at:.4} s; recv {before:.0} -> {after:.0} kbit/s; owd {owd_before:.1} -> {owd_after:.1} ms; queue drops {}", d.emulator.forward.queue_drops);
    assert!(owd_before > 29.0 && owd_before < 60.0, "owd before {owd_before}");
    assert!(owd_after > 100.0 && owd_after < 320.0, "owd after {owd_after}");
}
