//! `goog_cc_network_control_unittest.cc`: the controller-level cases drive ratelab's `Gcc`
//! directly; the `GoogCcScenario` cases run ratelab's simulator with the same link, delays and
//! rate limits (libwebrtc's `Scenario` video stream ≈ a ratelab media flow).

use crate::common::packet;
use ratelab_core::controller::{Constraints, Controller, TransportFeedback, Update};
use ratelab_core::controllers::gcc::{Gcc, GccConfig};
use ratelab_core::controllers::BuildContext;
use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation;
use ratelab_core::units::{Bitrate, Bytes, Duration, Time};

const INITIAL_KBPS: i64 = 60;
const DEFAULT_PACING: f64 = 2.5;
const SEND_SIDE_PACING: f64 = 1.1;

fn kbps(v: i64) -> Bitrate { Bitrate::from_kbps(v) }
fn gcc(cfg: GccConfig) -> Gcc { Gcc::new(cfg, &BuildContext::new(1)) }

/// `NetworkControllerTestFixture::InitialConfig`: start 60, min 0, max 5 × 60 kbit/s.
fn started(cfg: GccConfig, now: Time) -> (Gcc, Update) {
    let mut g = gcc(cfg);
    let up = g.on_start(now, Constraints { min_rate: Bitrate::ZERO, max_rate: kbps(5 * INITIAL_KBPS), start_rate: kbps(INITIAL_KBPS) });
    (g, up)
}

/// One 100-byte packet sent and received at `t`, reported at `t`.
fn single_packet_feedback(g: &mut Gcc, t: Time) -> Update {
    let p = packet(1, 100, t, Some(t));
    g.on_packet_sent(&p.sent);
    g.on_feedback(&TransportFeedback { feedback_time: t, packets: vec![p], ..TransportFeedback::default() })
}

#[test]
fn initialize_target_rate_on_first_process_interval_after_network_available() {
    let (_, up) = started(GccConfig::default(), Time::from_ms(123_456));
    assert_eq!(up.target_rate, Some(kbps(INITIAL_KBPS)));
    assert_eq!(up.pacing_rate, Some(kbps(INITIAL_KBPS).scale(DEFAULT_PACING)));
    let rates: Vec<Bitrate> = up.probes.iter().map(|p| p.rate).collect();
    // 3× the start rate, and 6× capped at the max (5×).
    assert_eq!(rates, vec![kbps(3 * INITIAL_KBPS), kbps(5 * INITIAL_KBPS)]);
}

#[test]
fn change_default_pacing_factor_after_first_feedback() {
    let (mut g, up) = started(GccConfig::default(), Time::from_ms(123_456));
    assert_eq!(up.pacing_rate, Some(kbps(INITIAL_KBPS).scale(DEFAULT_PACING)));
    let up = single_packet_feedback(&mut g, Time::from_ms(123_457));
    let pacing = up.pacing_rate.expect("a pacing update");
    assert!(pacing >= kbps(INITIAL_KBPS).scale(SEND_SIDE_PACING));
    assert!(pacing < kbps(INITIAL_KBPS + 5).scale(SEND_SIDE_PACING));
}

#[test]
fn respects_configured_pacing_factor() {
    // `StreamsConfig::pacing_factor = 10` is GCC's `pacing_factor` parameter in ratelab (set at
    // construction instead of after the first process interval).
    let (mut g, mut last) = started(GccConfig { pacing_factor: Some(10.0), ..GccConfig::default() }, Time::from_ms(123_456));
    let up = single_packet_feedback(&mut g, Time::from_ms(123_457));
    if up.pacing_rate.is_some() {
        last = up;
    }
    let pacing = last.pacing_rate.expect("a pacing rate");
    assert!(pacing >= kbps(INITIAL_KBPS * 10));
    assert!(pacing < kbps((INITIAL_KBPS + 5) * 10));
}

#[test]
fn reacts_to_changed_network_conditions_from_remote() {
    let mut now = Time::from_ms(123);
    let (mut g, _) = started(GccConfig::default(), now);
    // libwebrtc applies a REMB at the next process interval; ratelab re-evaluates at once,
    // so the update of the report and of the next tick together are compared.
    let mut up = g.on_remote_estimate(now, kbps(2 * INITIAL_KBPS));
    now = now + Duration::from_ms(25);
    up.merge(g.on_tick(now));
    assert_eq!(up.target_rate, Some(kbps(2 * INITIAL_KBPS)));
    assert_eq!(up.pacing_rate, Some(kbps(2 * INITIAL_KBPS).scale(DEFAULT_PACING)));
    let mut up = g.on_remote_estimate(now, kbps(INITIAL_KBPS));
    now = now + Duration::from_ms(25);
    up.merge(g.on_tick(now));
    assert_eq!(up.target_rate, Some(kbps(INITIAL_KBPS)));
    assert_eq!(up.pacing_rate, Some(kbps(INITIAL_KBPS).scale(DEFAULT_PACING)));
}

/// `PacketTransmissionAndFeedbackBlock`: a 1000-byte packet every 50 ms whose delay grows by
/// `delay_ms` per packet, its feedback at its arrival, a process interval 50 ms later.
fn transmission_block(g: &mut Gcc, runtime_ms: i64, delay_ms: i64, now: &mut Time, seq: &mut u64, target: &mut Option<Bitrate>) {
    let start = *now;
    let mut buildup = 0;
    while *now - start < Duration::from_ms(runtime_ms) {
        *seq += 1;
        let p = packet(*seq, 1000, *now, Some(*now + Duration::from_ms(buildup)));
        buildup += delay_ms;
        let mut take = |u: Update| {
            if let Some(t) = u.target_rate {
                *target = Some(t);
            }
        };
        take(g.on_packet_sent(&p.sent));
        let t = p.recv_time.unwrap_or(*now);
        take(g.on_feedback(&TransportFeedback { feedback_time: t, packets: vec![p], data_in_flight: Bytes::ZERO, ..TransportFeedback::default() }));
        *now = *now + Duration::from_ms(50);
        take(g.on_tick(*now));
    }
}

#[test]
fn updates_delay_based_estimate() {
    let mut now = Time::from_ms(123);
    let (mut g, up) = started(GccConfig::default(), now);
    let mut seq = 0;
    let mut target = up.target_rate;
    transmission_block(&mut g, 6000, 0, &mut now, &mut seq, &mut target);
    let before = target.expect("a target before the delay");
    transmission_block(&mut g, 6000, 50, &mut now, &mut seq, &mut target);
    assert!(target.expect("a target") < before, "{target:?} !< {before:?}");
}

// ---- GoogCcScenario cases on the simulator ----

fn run(v: serde_json::Value) -> ratelab_core::metrics::SeriesLog {
    let sc = Scenario::from_json(&v.to_string()).expect("valid scenario");
    let mut sim = build_simulation(&sc, 1, None).expect("builds");
    sim.run_to_end();
    sim.take_series()
}

/// Flow 0's target (kbit/s) at its last series sample before `t_s`.
fn target_at(s: &ratelab_core::metrics::SeriesLog, t_s: f64) -> f64 {
    let i = (0..s.t_s.len()).rposition(|i| s.t_s[i] <= t_s && s.flow[i] == 0).expect("a sample");
    s.target_kbps[i]
}

/// One media flow, `one_way_ms` each way, on `link`, GCC with `params`.
fn one_flow(duration_s: f64, link: serde_json::Value, one_way_ms: f64, params: serde_json::Value, media: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "name": "goog_cc_unit", "duration_s": duration_s, "link": link,
        "flows": [{"kind": "media", "controller": "gcc", "params": params, "one_way_delay_ms": one_way_ms, "media": media}],
        "metrics": {"packet_log": false}
    })
}

/// 1 Mbit/s, 100 ms each way, paused from 10 to 20 s; target after 13 s.
fn cwnd_outage(drop_frame: bool) -> f64 {
    let s = run(one_flow(
        13.0,
        serde_json::json!({"steps": [[0, 1000], [10, 0], [20, 1000]]}),
        100.0,
        serde_json::json!({"cwnd_queue_ms": 800, "cwnd_drop_frame": drop_frame}),
        serde_json::json!({"min_kbps": 10, "max_kbps": 2000, "start_kbps": 300}),
    ));
    target_at(&s, 13.0)
}

#[test]
fn congestion_window_pushback_on_network_delay() {
    // `QueueSize:800,MinBitrate:30000` without DropFrame: pushback lowers the target.
    let t = cwnd_outage(false);
    assert!(t < 40.0, "{t}");
}

#[test]
fn congestion_window_pushback_drop_frame_on_network_delay() {
    // With DropFrame (today's default) the target stays at the loss-based rate.
    let t = cwnd_outage(true);
    assert!(t > 300.0, "{t}");
}

#[test]
fn updates_target_rate_based_on_link_capacity() {
    // 500 kbit/s for 25 s, 800 for 20 s, then 100 kbit/s for 50 s. libwebrtc also raises the
    // delay to 200 ms each way in the last phase; ratelab's flow delay is fixed (100 ms).
    let s = run(one_flow(
        95.0,
        serde_json::json!({"steps": [[0, 500], [25, 800], [45, 100]]}),
        100.0,
        serde_json::json!({}),
        serde_json::json!({"min_kbps": 10, "max_kbps": 1500, "start_kbps": 300}),
    ));
    let (a, b, c) = (target_at(&s, 25.0), target_at(&s, 45.0), target_at(&s, 95.0));
    assert!((a - 450.0).abs() <= 100.0, "25 s: {a}");
    assert!((b - 750.0).abs() <= 150.0, "45 s: {b}");
    assert!((c - 90.0).abs() <= 25.0, "95 s: {c}");
}

#[test]
fn loss_based_control_does_modest_backoff_to_high_loss() {
    let s = run(one_flow(
        120.0,
        serde_json::json!({"capacity_kbps": 2000, "loss": 0.1}),
        200.0,
        serde_json::json!({}),
        serde_json::json!({"min_kbps": 10, "max_kbps": 1500, "start_kbps": 300}),
    ));
    let t = target_at(&s, 120.0);
    assert!(t > 100.0, "{t}");
}

#[test]
fn no_rtt_backoff_collapse_when_video_stops() {
    // 2 Mbit/s, 100 ms; video stops after 1 s; the estimate 4 s later stays above 1 Mbit/s.
    // (libwebrtc runs it with `MaxRttLimit/limit:2s`; ratelab's limit is the default 3 s.)
    let mut v = one_flow(
        5.0,
        serde_json::json!({"capacity_kbps": 2000}),
        100.0,
        serde_json::json!({}),
        serde_json::json!({"min_kbps": 30, "max_kbps": 5000, "start_kbps": 1000}),
    );
    v["flows"][0]["pauses"] = serde_json::json!([[1.0, 5.0]]);
    let s = run(v);
    let t = target_at(&s, 5.0);
    assert!(t > 1000.0, "{t}");
}

#[test]
fn is_fair_to_tcp() {
    // 1 Mbit/s, 50 ms each way, one long TCP flow: GCC's estimate after 10 s is below 750.
    let s = run(serde_json::json!({
        "name": "goog_cc_unit", "duration_s": 10.0,
        "link": {"capacity_kbps": 1000},
        "flows": [
            {"kind": "media", "controller": "gcc", "one_way_delay_ms": 50,
             "media": {"min_kbps": 30, "max_kbps": 5000, "start_kbps": 1000}},
            {"kind": "tcp", "one_way_delay_ms": 50}
        ],
        "metrics": {"packet_log": false}
    }));
    let t = target_at(&s, 10.0);
    assert!(t < 750.0, "{t}");
}

#[test]
fn fast_rampup_on_remb_cap_lifted() {
    // `RunRembDipScenario`: 2 Mbit/s, 50 ms each way, start 1 Mbit/s; REMB 250 kbit/s at 10 s,
    // lifted to 10 Mbit/s at 11 s; the estimate 10 s later is above 1.5 Mbit/s.
    let v = one_flow(
        21.0,
        serde_json::json!({"capacity_kbps": 2000}),
        50.0,
        serde_json::json!({}),
        serde_json::json!({"min_kbps": 30, "max_kbps": 5000, "start_kbps": 1000}),
    );
    let sc = Scenario::from_json(&v.to_string()).expect("valid scenario");
    let mut sim = build_simulation(&sc, 1, None).expect("builds");
    sim.run_until(Time::from_ms(10_000));
    sim.push_remote_estimate(0, kbps(250));
    sim.run_until(Time::from_ms(11_000));
    sim.push_remote_estimate(0, kbps(10_000));
    sim.run_to_end();
    let s = sim.take_series();
    let (a, b, c) = (target_at(&s, 10.0), target_at(&s, 11.0), target_at(&s, 21.0));
    assert!(a > 1500.0, "10 s: {a}");
    assert_eq!(b, 250.0, "under the REMB cap");
    assert!(c > 1500.0, "21 s: {c}");
}

#[test]
fn no_crash_on_very_late_feedback() {
    // Feedback path paused for 300 s after 5 s while the video stops; video restarts at 304 s.
    let v = serde_json::json!({
        "name": "goog_cc_unit", "duration_s": 306.0,
        "link": {"capacity_kbps": 10000},
        "reverse_link": {"steps": [[0, 10000], [5, 0], [305, 10000]]},
        "flows": [{"kind": "media", "controller": "gcc", "one_way_delay_ms": 10,
                   "pauses": [[5.0, 304.0]],
                   "media": {"min_kbps": 30, "max_kbps": 2500, "start_kbps": 300}}],
        "metrics": {"packet_log": false}
    });
    let s = run(v);
    assert!(s.target_kbps.iter().all(|r| r.is_finite() && *r > 0.0));
    assert!(target_at(&s, 306.0) >= 30.0);
}

// ---- Route changes (`Gcc::on_network_route_change`, the controller's `on_route_change`) ----

/// `CreateRouteChange(time, start, min, max)`; zero means unset.
fn route(start: Bitrate, min: Bitrate, max: Bitrate) -> Constraints { Constraints { min_rate: min, max_rate: max, start_rate: start } }

#[test]
fn on_network_route_changed() {
    let now = Time::from_ms(123);
    let mut g = gcc(GccConfig::default());
    g.on_network_availability(now, true);
    let new_bitrate = Bitrate::from_bps(200_000);
    let up = g.on_network_route_change(now, route(new_bitrate, Bitrate::ZERO, Bitrate::ZERO));
    assert_eq!(up.target_rate, Some(new_bitrate));
    assert_eq!(up.pacing_rate, Some(new_bitrate.scale(DEFAULT_PACING)));
    assert_eq!(up.probes.len(), 2);
    // No constraints at all: the target falls to the 5 kbit/s floor, paced at 2.5 × that
    // (libwebrtc: EXPECT_NEAR(pacing, 5 kbit/s × 2.5, 10 bit/s)), and probing starts again.
    let up = g.on_network_route_change(now, route(Bitrate::ZERO, Bitrate::ZERO, Bitrate::ZERO));
    assert_eq!(up.target_rate, Some(kbps(5)));
    let pacing = up.pacing_rate.expect("a pacing update").bps();
    assert!((pacing - 12_500).abs() <= 10, "pacing {pacing} bit/s");
    assert_eq!(up.probes.len(), 2);
}

#[test]
fn probe_on_route_change() {
    let mut now = Time::from_ms(123);
    let mut g = gcc(GccConfig::default());
    g.on_network_availability(now, true);
    now = now + Duration::from_secs(3);
    let up = g.on_network_route_change(now, route(kbps(2 * INITIAL_KBPS), Bitrate::ZERO, kbps(20 * INITIAL_KBPS)));
    assert!(up.pacing_rate.is_some());
    assert_eq!(up.target_rate, Some(kbps(2 * INITIAL_KBPS)));
    let rates: Vec<Bitrate> = up.probes.iter().map(|p| p.rate).collect();
    assert_eq!(rates, vec![kbps(6 * INITIAL_KBPS), kbps(12 * INITIAL_KBPS)]);
    g.on_tick(now);
}

#[test]
fn probe_after_route_change_when_transport_writable() {
    let now = Time::from_ms(123);
    let mut g = gcc(GccConfig::default());
    assert!(g.on_network_availability(now, false).probes.is_empty());
    let up = g.on_network_route_change(now, route(kbps(2 * INITIAL_KBPS), Bitrate::ZERO, kbps(20 * INITIAL_KBPS)));
    assert!(up.probes.is_empty());
    assert!(!g.on_network_availability(now, true).probes.is_empty());
}
