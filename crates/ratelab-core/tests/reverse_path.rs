//! RFC 8867 5.3: a congested feedback link. With a `reverse_link`, feedback, REMB and TCP ACKs
//! are packets that queue on it, and `direction = "reverse"` flows send their data over it.

use ratelab_core::scenario::{Direction, Scenario};
use ratelab_core::sim::{build_simulation, Simulation};
use ratelab_core::network::link::Link;
use ratelab_core::units::Time;

fn scenario(v: serde_json::Value) -> Scenario { Scenario::from_json(&v.to_string()).expect("valid scenario") }

fn fixed(rate: f64) -> serde_json::Value {
    serde_json::json!({"rate_kbps": rate})
}

/// Forward: a GCC flow and a NewReno TCP flow on 1.5 Mbit/s; reverse: an overloading fixed-rate
/// flow (1.2 Mbit/s on 1 Mbit/s, 10–30 s) that fills the queue the forward feedback and ACKs
/// must cross.
fn busy_two_way(seed_loss: f64) -> Scenario {
    scenario(serde_json::json!({
        "name": "two-way", "duration_s": 40,
        "link": {"capacity_kbps": 1500, "queue": {"ms": 200}},
        "reverse_link": {"capacity_kbps": 1000, "queue": {"ms": 150}, "loss": seed_loss},
        "flows": [
            {"kind": "media", "controller": "gcc"},
            {"kind": "tcp", "start_s": 5, "stop_s": 35},
            {"kind": "media", "direction": "reverse", "controller": "fixed", "params": fixed(1200.0), "start_s": 10, "stop_s": 30,
             "media": {"min_kbps": 10, "max_kbps": 5000, "start_kbps": 1200}},
        ]
    }))
}

/// Every packet that reached a link is dropped on arrival, sent on (exit drops included),
/// waiting or in service.
fn assert_link_conserves(l: &Link, what: &str) {
    let s = l.stats;
    let held = l.queue_packets() as u64 + l.in_service().is_some() as u64;
    assert_eq!(s.arrived_packets, (s.random_drops - s.exit_drops) + s.queue_drops + s.departed_packets + held, "{what}: {s:?}");
}

fn assert_conserves(sim: &Simulation, at: &str) {
    assert_link_conserves(sim.link(), &format!("forward link at {at}"));
    assert_link_conserves(sim.reverse_link().expect("two links"), &format!("reverse link at {at}"));
    let (sent, recv, lost): (u64, u64, u64) = sim.flows.iter().fold((0, 0, 0), |a, f| (a.0 + f.metrics.packets_sent, a.1 + f.metrics.packets_received, a.2 + f.metrics.packets_lost));
    assert_eq!(sent, recv + lost + sim.packets_in_network(), "data packets at {at}");
    for f in &sim.flows {
        let c = f.metrics.return_path.expect("return path counters with a reverse link");
        let in_net = sim.control_packets_in_network(f.info.id);
        assert_eq!(c.packets_sent, c.packets_delivered + c.packets_lost + in_net, "return path of flow {} at {at}: {c:?}", f.info.id);
    }
}

#[test]
fn conservation_holds_on_both_links_and_both_paths_throughout() {
    for loss in [0.0, 0.05] {
        let mut sim = build_simulation(&busy_two_way(loss), 3, None).unwrap();
        let mut t = 0.0;
        while !sim.is_finished() {
            t += 0.7;
            sim.run_until(Time::from_secs_f64(t));
            assert_conserves(&sim, &format!("{t:.1} s (reverse loss {loss})"));
        }
        let s = sim.summary();
        let rev = s.reverse_link.expect("reverse link summary");
        assert!(rev.queue_drops > 0, "the overloaded reverse link drops");
        // TCP ACKs were dropped there too (GCC's small 50 ms reports mostly still fit into the
        // byte-limited queue behind the 1240-byte media packets, but wait behind them).
        assert!(s.flows[1].return_packets_lost.unwrap() > 0, "{:?}", s.flows);
        assert!(s.flows[0].return_packets_sent.unwrap() > 0);
        assert_eq!(s.flows[2].direction, Direction::Reverse);
        assert!(rev.control_kbps_mean > 0.0 && s.link.control_kbps_mean > 0.0);
    }
}

#[test]
fn same_seed_same_result_other_seed_differs() {
    let sc = busy_two_way(0.02);
    let run = |seed| { let mut sim = build_simulation(&sc, seed, None).unwrap(); sim.run_to_end(); (sim.summary(), sim.take_series()) };
    let (a, sa) = run(11);
    let (b, sb) = run(11);
    assert_eq!(a, b);
    assert_eq!(sa.recv_kbps, sb.recv_kbps);
    let (c, _) = run(12);
    assert_ne!(a.flows, c.flows);
}

/// Per-packet acknowledgements of an underloaded fixed-rate flow: each is a TWCC packet for one
/// packet (20 bytes fixed + 2-byte chunk + 1-byte delta, padded to 24) plus 28 bytes of IPv4/UDP
/// = 52 bytes, one per packet that arrived.
#[test]
fn per_packet_feedback_costs_52_bytes_per_arrival() {
    let sc = scenario(serde_json::json!({
        "name": "acks", "duration_s": 10,
        "link": {"capacity_kbps": 1000, "queue": {"ms": 300}},
        "reverse_link": {"capacity_kbps": 1000, "queue": {"ms": 300}},
        "flows": [{"kind": "media", "controller": "fixed", "params": fixed(400.0), "feedback": {"mode": "per-packet"},
                   "media": {"min_kbps": 10, "max_kbps": 5000, "start_kbps": 400, "frame_size_noise": 0.0}}]
    }));
    let mut sim = build_simulation(&sc, 1, None).unwrap();
    sim.run_to_end();
    let s = sim.summary();
    let f = &s.flows[0];
    let (n, bytes) = (f.return_packets_sent.unwrap(), f.return_bytes_sent.unwrap());
    assert_eq!(n, f.packets_received);
    assert_eq!(bytes, 52 * n as i64);
    assert_eq!(f.return_packets_lost, Some(0));
    // 400 kbit/s at 30 fps: 1667-byte frames in two packets (1200 + 467) → 60 packets/s, so
    // 60 × 52 B × 8 = 25.0 kbit/s of feedback on the reverse link.
    let ctrl = s.reverse_link.unwrap().control_kbps_mean;
    let delivered = n - sim.control_packets_in_network(0);
    assert!((ctrl - delivered as f64 * 52.0 * 8.0 / 10.0 / 1e3).abs() < 1e-9, "{ctrl}");
    assert!(ctrl > 24.0 && ctrl < 25.5, "{ctrl}");
}

/// Swapping the two links and every flow's direction is the same network seen from the other
/// end: each flow gets the same result.
#[test]
fn mirrored_scenario_gives_mirrored_results() {
    let links = (serde_json::json!({"capacity_kbps": 1000, "queue": {"ms": 300}}), serde_json::json!({"capacity_kbps": 600, "queue": {"ms": 300}}));
    let build = |mirror: bool| {
        let (l, r) = if mirror { (links.1.clone(), links.0.clone()) } else { (links.0.clone(), links.1.clone()) };
        let (a, b) = if mirror { ("reverse", "forward") } else { ("forward", "reverse") };
        scenario(serde_json::json!({
            "name": "mirror", "duration_s": 30, "link": l, "reverse_link": r,
            "flows": [{"kind": "media", "controller": "gcc", "direction": a}, {"kind": "media", "controller": "gcc", "direction": b}]
        }))
    };
    let run = |sc: &Scenario| { let mut sim = build_simulation(sc, 5, None).unwrap(); sim.run_to_end(); sim.summary() };
    let (x, y) = (run(&build(false)), run(&build(true)));
    for (fx, fy) in x.flows.iter().zip(&y.flows) {
        assert_ne!(fx.direction, fy.direction);
        let rel = (fx.throughput_kbps - fy.throughput_kbps).abs() / fx.throughput_kbps;
        assert!(rel < 0.01, "flow {}: {} vs {} kbit/s", fx.id, fx.throughput_kbps, fy.throughput_kbps);
    }
    assert!((x.link.utilization - y.reverse_link.as_ref().unwrap().utilization).abs() < 0.01);
    // The 600 kbit/s direction carries ~half a GCC flow's share less than the 1 Mbit/s one.
    assert!(x.flows[1].throughput_kbps < x.flows[0].throughput_kbps, "{:?}", x.flows);
}

/// RFC 8867 5.3 expects a controller to cope with missing feedback. With 30 % of the reverse
/// link's packets lost, reports go missing: the sender must not count their packets as in
/// flight for ever (a cwnd-gated BBR would stall) and the forward flow keeps its rate.
#[test]
fn lost_feedback_does_not_stall_a_window_gated_sender() {
    let mk = |loss: f64| scenario(serde_json::json!({
        "name": "lossy-feedback", "duration_s": 30,
        "link": {"capacity_kbps": 1000, "queue": {"ms": 300}},
        "reverse_link": {"capacity_kbps": 1000, "queue": {"ms": 300}, "loss": loss},
        "flows": [{"kind": "media", "controller": "bbr-webrtc"}]
    }));
    let run = |sc: &Scenario| { let mut sim = build_simulation(sc, 2, None).unwrap(); sim.run_to_end(); sim.summary() };
    let (clean, lossy) = (run(&mk(0.0)), run(&mk(0.3)));
    let lr = lossy.flows[0].return_loss_rate.unwrap();
    assert!((lr - 0.3).abs() < 0.05, "feedback loss {lr}");
    assert!(lossy.flows[0].throughput_kbps > 0.8 * clean.flows[0].throughput_kbps, "lossy {} vs clean {}", lossy.flows[0].throughput_kbps, clean.flows[0].throughput_kbps);
}

#[test]
fn bad_reverse_configuration_names_the_field() {
    let no_rev = serde_json::json!({"name": "t", "duration_s": 10, "link": {"capacity_kbps": 1000}, "flows": [{"kind": "media", "direction": "reverse"}]});
    let e = Scenario::from_json(&no_rev.to_string()).unwrap_err();
    assert_eq!(e.field, "flows[0].direction", "{e}");
    let bad_steps = serde_json::json!({"name": "t", "duration_s": 10, "link": {"capacity_kbps": 1000}, "reverse_link": {"steps": [[0, 100], [0, 200]]}, "flows": [{"kind": "media"}]});
    assert_eq!(Scenario::from_json(&bad_steps.to_string()).unwrap_err().field, "reverse_link.steps[1]");
    let bad_dir = serde_json::json!({"name": "t", "duration_s": 10, "link": {"capacity_kbps": 1000}, "flows": [{"kind": "media", "direction": "sideways"}]});
    assert_eq!(Scenario::from_json(&bad_dir.to_string()).unwrap_err().field, "flows[0].direction");
}

/// RFC 8867 5.3 as shipped (`rmcat-5.3`): forward 2.0/1.0/0.5/2.0 Mbit/s, backward 2.0/0.8/2.0
/// Mbit/s, one flow each way; `wide_return` replaces the backward bottleneck by 100 Mbit/s.
fn rmcat_5_3(controller: &str, wide_return: bool) -> Scenario {
    let media = serde_json::json!({"min_kbps": 150, "max_kbps": 1500, "start_kbps": 150});
    let rev = if wide_return { serde_json::json!({"capacity_kbps": 100000, "queue": {"ms": 300, "rate_kbps": 2000}}) }
              else { serde_json::json!({"steps": [[0, 2000], [35, 800], [70, 2000]], "queue": {"ms": 300, "rate_kbps": 2000}}) };
    scenario(serde_json::json!({
        "name": "rmcat-5.3", "duration_s": 100,
        "link": {"steps": [[0, 2000], [20, 1000], [40, 500], [60, 2000]], "queue": {"ms": 300, "rate_kbps": 2000}},
        "reverse_link": rev,
        "flows": [
            {"kind": "media", "controller": controller, "one_way_delay_ms": 50, "media": media, "feedback": {"interval_ms": 100}},
            {"kind": "media", "controller": controller, "direction": "reverse", "one_way_delay_ms": 50, "media": media, "feedback": {"interval_ms": 100}},
        ],
        "metrics": {"packet_log": false}
    }))
}

/// Forward-flow utilization (percent) in rmcat-5.3 minus the same with an uncongested return
/// path, mean over seeds 1–3.
fn forward_cost_of_congested_feedback(controller: &str) -> f64 {
    let util = |wide: bool| -> f64 {
        (1..=3).map(|seed| {
            let mut sim = build_simulation(&rmcat_5_3(controller, wide), seed, None).unwrap();
            sim.run_to_end();
            sim.summary().flows[0].utilization * 100.0
        }).sum::<f64>() / 3.0
    };
    util(false) - util(true)
}

/// What RFC 8867 5.3 probes: the backward media flow's queue delays the forward flow's
/// feedback. Controllers driven by one-way delay variation (GCC's trendline, NADA's queuing
/// delay from receive-time deltas) do not see the reverse queue; RTT-based ones (Copa's
/// standing RTT) read it as forward congestion and give up rate. Measured (seeds 1–3): GCC
/// −0.4 pp, NADA −0.1 pp, Copa −6.7 pp (docs/scenarios.md).
#[test]
fn reverse_queueing_costs_rtt_based_copa_but_not_delay_gradient_controllers() {
    let (gcc, nada, copa) = (forward_cost_of_congested_feedback("gcc"), forward_cost_of_congested_feedback("nada"), forward_cost_of_congested_feedback("copa"));
    assert!(gcc.abs() < 2.0, "gcc {gcc:+.1} pp");
    assert!(nada.abs() < 1.0, "nada {nada:+.1} pp");
    assert!(copa < -4.0, "copa {copa:+.1} pp");
}

/// GCC in rmcat-5.3: when the reverse capacity drops at 35 s the backward flow's queue delays
/// the forward flow's feedback by ~0.5 s; bytes in flight then exceed the congestion window
/// (min RTT + 350 ms, spec 2.10). With pushback on the target (libwebrtc before DropFrame,
/// `cwnd_drop_frame = false`) the forward target falls to its 150 kbit/s minimum although the
/// forward link is not congested; with today's DropFrame pushback (`current` default) the
/// target stays at the loss-based rate and the encoder drops frames instead; without the
/// window nothing happens. Measured (seed 1), minimum over 35–39 s: target 150 / 915+ / 915+
/// kbit/s; encoder rate (frame drops not counted) 680 with DropFrame vs 841 without window.
#[test]
fn delayed_feedback_triggers_gcc_window_pushback() {
    let run = |params: serde_json::Value| {
        let mut sc = rmcat_5_3("gcc", false);
        sc.flows[0].params = params;
        let mut sim = build_simulation(&sc, 1, None).unwrap();
        sim.run_to_end();
        let s = sim.take_series();
        let rows: Vec<usize> = (0..s.len()).filter(|&i| s.flow[i] == 0 && (35.0..39.0).contains(&s.t_s[i])).collect();
        let min_target = rows.iter().map(|&i| s.target_kbps[i]).fold(f64::INFINITY, f64::min);
        let encoder = rows.iter().map(|&i| s.encoder_kbps[i]).fold(f64::INFINITY, f64::min);
        (min_target, encoder)
    };
    let (on_target, _) = run(serde_json::json!({"cwnd": true, "cwnd_drop_frame": false}));
    let (drop_target, drop_encoder) = run(serde_json::json!({"cwnd": true}));
    let (without, without_encoder) = run(serde_json::json!({"cwnd": false}));
    assert!(on_target <= 160.0, "pushback on the target: {on_target}");
    assert!(drop_target >= 800.0, "DropFrame keeps the target: {drop_target}");
    assert!(without >= 800.0, "without the window: {without}");
    assert!(drop_encoder < 0.9 * without_encoder, "DropFrame sheds encoder rate: {drop_encoder} vs {without_encoder}");
}

mod random_two_way {
    use super::*;
    use proptest::prelude::*;

    /// Any mix of directions, controllers, capacities, queues and losses on two links: no panic,
    /// conservation on both links and both paths at the end, rates finite.
    fn two_way(cap: (f64, f64), queue_ms: (f64, f64), loss: (f64, f64), flows: &[(bool, usize, bool)]) -> Scenario {
        const CONTROLLERS: [&str; 6] = ["gcc", "nada", "copa", "bbr-webrtc", "fixed", "r3net"];
        let fl: Vec<serde_json::Value> = flows.iter().map(|&(reverse, c, tcp)| if tcp {
            serde_json::json!({"kind": "tcp", "direction": if reverse { "reverse" } else { "forward" }, "start_s": 1})
        } else {
            serde_json::json!({"kind": "media", "controller": CONTROLLERS[c % CONTROLLERS.len()], "direction": if reverse { "reverse" } else { "forward" },
                               "feedback": {"mode": if c % 2 == 0 { "twcc" } else { "per-packet" }}})
        }).collect();
        scenario(serde_json::json!({
            "name": "random-two-way", "duration_s": 6,
            "link": {"capacity_kbps": cap.0, "queue": {"ms": queue_ms.0}, "loss": loss.0},
            "reverse_link": {"capacity_kbps": cap.1, "queue": {"ms": queue_ms.1}, "loss": loss.1, "loss_after_queue": true},
            "flows": fl, "metrics": {"packet_log": false}
        }))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn conserves_and_never_panics(
            cap in (50.0f64..5000.0, 20.0f64..5000.0), queue_ms in (5.0f64..500.0, 5.0f64..500.0),
            loss in (0.0f64..0.3, 0.0f64..0.5),
            flows in proptest::collection::vec((any::<bool>(), 0usize..6, proptest::bool::weighted(0.2)), 1..4),
            seed in 0u64..1000,
        ) {
            let sc = two_way(cap, queue_ms, loss, &flows);
            let mut sim = build_simulation(&sc, seed, None).unwrap();
            sim.run_until(Time::from_secs_f64(3.3));
            assert_conserves(&sim, "3.3 s");
            sim.run_to_end();
            assert_conserves(&sim, "end");
            let s = sim.summary();
            for f in &s.flows {
                prop_assert!(f.throughput_kbps.is_finite() && f.throughput_kbps >= 0.0);
                prop_assert!(f.return_loss_rate.is_some_and(|r| (0.0..=1.0).contains(&r)));
            }
            prop_assert!(s.link.utilization <= 1.0 + 1e-9 && s.reverse_link.unwrap().utilization <= 1.0 + 1e-9);
        }
    }
}
