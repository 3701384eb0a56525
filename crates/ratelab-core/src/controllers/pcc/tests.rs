//! PCC Allegro's state machine against hand-computed rates, plus a closed loop and a property
//! test. The utilities and the monitor interval have their own tests beside them.

use super::allegro::{Allegro, AllegroConfig, Mi, Role, State};
use super::monitor::MonitorInterval;
use super::utility::UtilityKind;
use crate::controller::{Constraints, Controller, Diagnostics, PacketResult, SentPacket, TransportFeedback};
use crate::controllers::testkit::Harness;
use crate::controller::BuildContext;
use crate::units::{Bitrate, Bytes, Duration, Time};
use proptest::prelude::*;

fn constraints(min_kbps: i64, max_kbps: i64, start_kbps: i64) -> Constraints {
    Constraints { min_rate: Bitrate::from_kbps(min_kbps), max_rate: Bitrate::from_kbps(max_kbps), start_rate: Bitrate::from_kbps(start_kbps) }
}

fn allegro(seed: u64, cfg: AllegroConfig) -> Allegro {
    let mut a = Allegro::new(cfg, &BuildContext::new(seed));
    a.on_start(Time::ZERO, constraints(100, 10_000, 1000));
    a
}

fn sp(seq: u64, t_us: i64) -> SentPacket {
    SentPacket { seq, size: Bytes::new(1000), send_time: Time::from_us(t_us), probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO }
}

/// A complete MI of the current generation at `rate` with `lost` of its 100 packets lost.
fn scored(a: &Allegro, role: Role, rate: f64, lost: u64) -> Mi {
    let mut s = MonitorInterval::new(rate, Time::ZERO, Duration::from_ms(100));
    let mut pk: Vec<PacketResult> = (0..100)
        .map(|i| PacketResult { sent: sp(i, 1000 * (i as i64 + 1) - 500), recv_time: (i >= lost).then(|| Time::from_ms(i as i64 + 30)) })
        .collect();
    pk.push(PacketResult { sent: sp(100, 100_500), recv_time: Some(Time::from_ms(131)) });
    s.on_packets(&pk);
    assert!(s.is_done());
    Mi { stats: s, role, generation: a.generation }
}

fn trials(a: &Allegro) -> (f64, Vec<f64>) {
    match &a.state {
        State::Deciding { eps, trials, .. } => (*eps, trials.clone()),
        s => panic!("not deciding: {s:?}"),
    }
}

#[test]
fn starting_doubles_per_mi_and_returns_to_the_best_rate() {
    let mut a = allegro(1, AllegroConfig::default());
    let planned: Vec<(Role, f64)> = (0..4).map(|_| a.plan_next()).collect();
    assert_eq!(planned, vec![(Role::Start, 1e6), (Role::Start, 2e6), (Role::Start, 4e6), (Role::Start, 8e6)]);
    // utility rises at 1 and 2 Mbit/s; at 4 Mbit/s half the packets are lost: u < 0
    for (r, lost) in [(1e6, 0), (2e6, 0)] {
        let mi = scored(&a, Role::Start, r, lost);
        a.on_mi_scored(mi);
    }
    assert!(matches!(a.state, State::Starting { .. }));
    let mi = scored(&a, Role::Start, 4e6, 50);
    a.on_mi_scored(mi);
    // back to 2 Mbit/s, trials of ±1 % (ε_min) around it
    assert_eq!(a.rate, 2e6);
    let (eps, t) = trials(&a);
    assert_eq!(eps, 0.01);
    assert_eq!(t.len(), 4);
    // the MI started at 8 Mbit/s belongs to the old plan: its result is ignored
    let mut stale = scored(&a, Role::Start, 8e6, 0);
    stale.generation -= 1;
    a.on_mi_scored(stale);
    assert_eq!(trials(&a).1, t);
    // Starting also stops at the rate limit (3 Mbit/s here): 1, 2, 3, 3 Mbit/s
    let mut b = Allegro::new(AllegroConfig::default(), &BuildContext::new(1));
    b.on_start(Time::ZERO, constraints(100, 3000, 1000));
    let planned: Vec<f64> = (0..4).map(|_| b.plan_next().1).collect();
    assert_eq!(planned, vec![1e6, 2e6, 3e6, 3e6]);
}

#[test]
fn trials_are_pairs_at_r_plus_minus_eps_in_seeded_random_order() {
    let orders = |seed: u64| -> Vec<bool> {
        let mut a = allegro(seed, AllegroConfig::default());
        a.rate = 1e6;
        (0..40).flat_map(|_| {
            let State::Deciding { trials, .. } = a.deciding(0.02) else { unreachable!() };
            assert_eq!(trials.len(), 4);
            trials.chunks(2).map(|p| {
                let (hi, lo) = (p[0].max(p[1]), p[0].min(p[1]));
                assert!((hi - 1.02e6).abs() < 1e-6 && (lo - 0.98e6).abs() < 1e-6, "{p:?}");
                p[0] > p[1]
            }).collect::<Vec<_>>()
        }).collect()
    };
    let o = orders(7);
    let ups = o.iter().filter(|&&x| x).count();
    assert!(ups > 20 && ups < 60, "higher rate first in {ups} of 80 pairs");
    assert_eq!(o, orders(7), "same seed, same order");
    assert_ne!(o, orders(8), "another seed, another order");
}

#[test]
fn inconclusive_trials_widen_eps_and_a_verdict_starts_accelerating_moves() {
    let mut a = allegro(3, AllegroConfig::default());
    a.rate = 1e6;
    let s = a.deciding(0.01);
    a.enter(s);
    // run the four trials: `against` = pair whose higher rate loses 10 % of its packets
    let run = |a: &mut Allegro, against: Option<usize>| {
        let (_, t) = trials(a);
        for (i, &r) in t.iter().enumerate() {
            let higher = r > a.rate;
            let lost = if against == Some(i / 2) && higher { 10 } else { 0 };
            let mi = scored(a, Role::Trial(i), r, lost);
            a.on_mi_scored(mi);
        }
    };
    // pair 0 favours the higher rate, pair 1 the lower: no verdict, ε grows by ε_min up to ε_max
    for want in [0.02, 0.03, 0.04, 0.05, 0.05] {
        run(&mut a, Some(1));
        assert_eq!(a.rate, 1e6);
        assert!((trials(&a).0 - want).abs() < 1e-12, "{:?}", a.state);
    }
    // both pairs favour the higher rate: move to r(1 + ε) = 1.05 Mbit/s
    run(&mut a, None);
    assert!((a.rate - 1.05e6).abs() < 1e-6, "{}", a.rate);
    assert!(matches!(a.state, State::Adjusting { n: 0, .. }));
    // rate adjusting: r_n = r_{n−1}·(1 + n·0.01) while utility rises
    let want = [1.05e6 * 1.01, 1.05e6 * 1.01 * 1.02, 1.05e6 * 1.01 * 1.02 * 1.03];
    for w in want {
        assert_eq!(a.plan_next(), (Role::Adjust, a.rate));
        assert_eq!(a.plan_next().0, Role::Hold, "one scored MI per step");
        let mi = scored(&a, Role::Adjust, a.rate, 0);
        a.on_mi_scored(mi);
        assert!((a.rate - w).abs() < 1e-6, "{} vs {w}", a.rate);
    }
    // utility falls (20 % loss at r_3): back to r_2 = 1.081 71 Mbit/s and new ±1 % trials
    let mi = scored(&a, Role::Adjust, a.rate, 20);
    a.on_mi_scored(mi);
    assert!((a.rate - 1_081_710.0).abs() < 1e-6, "{}", a.rate);
    assert_eq!(trials(&a).0, 0.01);
    assert_eq!(a.counters().0, 10, "6 trial verdicts + 4 adjusting steps");
}

#[test]
fn feedback_blackout_times_mis_out_as_lost_and_lowers_the_rate() {
    let mut a = allegro(1, AllegroConfig::default());
    // one report measures the RTT (40 ms; the first sample replaces the 100 ms guess)
    a.on_packet_sent(&sp(0, 0));
    let fb = TransportFeedback { feedback_time: Time::from_ms(40), packets: vec![PacketResult { sent: sp(0, 0), recv_time: Some(Time::from_ms(20)) }], ..Default::default() };
    a.on_feedback(&fb);
    assert_eq!(a.srtt(), Duration::from_ms(40));
    // then silence for 3.2 s: MIs time out (4 RTT, at least 500 ms) and count as lost
    for i in 1..400 { a.on_packet_sent(&sp(i, 8000 * i as i64)); }
    let (_, timeouts) = a.counters();
    assert!(timeouts >= 3, "{timeouts}");
    assert!(!matches!(a.state, State::Starting { .. }));
    assert!(a.rate().bps_f64() < 1e6, "{:?}", a.rate());
    assert!(a.mis.len() < 20, "{}", a.mis.len());
    // no report ever: no RTT, so no timeout — but the pending MIs stay bounded
    let mut b = allegro(1, AllegroConfig::default());
    for i in 0..20_000 { b.on_packet_sent(&sp(i, 8000 * i as i64)); }
    assert!(b.mis.len() <= 200 && b.counters().1 > 0, "{} pending, {:?}", b.mis.len(), b.counters());
}

/// Closed loop on the test harness: 3 Mbit/s, 20 ms each way, 100 ms drop-tail queue.
fn closed_loop(utility: UtilityKind) -> Harness {
    let cfg = AllegroConfig { utility, ..AllegroConfig::default() };
    let mut h = Harness::new(Box::new(Allegro::new(cfg, &BuildContext::new(2))), Bitrate::from_kbps(3000), 20, constraints(100, 10_000, 500));
    h.queue_limit = Duration::from_ms(100);
    h.run_until(Time::from_secs_f64(40.0));
    h
}

#[test]
fn closed_loop_holds_the_link_loss_utility_fills_the_queue_latency_utility_does_not() {
    let (t0, t1) = (Time::from_ms(20_000), Time::from_ms(40_000));
    let loss = closed_loop(UtilityKind::Loss);
    let lat = closed_loop(UtilityKind::Latency);
    let (tl, tq) = (loss.mean_target(t0, t1).kbps_f64(), lat.mean_target(t0, t1).kbps_f64());
    let (ql, qq) = (loss.mean_queue(t0, t1).as_ms_f64(), lat.mean_queue(t0, t1).as_ms_f64());
    eprintln!("loss: target {tl:.0} kbit/s, queue {ql:.1} ms; latency: target {tq:.0} kbit/s, queue {qq:.1} ms");
    // loss utility: at the link until the queue overflows (measured 20–40 s: see the doc)
    assert!(tl > 0.9 * 3000.0 && tl < 1.15 * 3000.0, "loss: target {tl}");
    assert!(ql > 40.0, "loss: queue {ql} ms");
    // latency utility: the same rate within 15 %, with a short queue
    assert!(tq > 0.85 * 3000.0 && tq < 1.05 * 3000.0, "latency: target {tq}");
    assert!(qq < 0.5 * ql && qq < 25.0, "latency: queue {qq} ms vs {ql} ms");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    /// Random feedback (delays, losses, batch sizes, gaps, constraint changes): the sent rate
    /// stays within the constraints, nothing becomes NaN, ε stays in [ε_min, ε_max] and the MI
    /// queue stays bounded.
    #[test]
    fn rates_stay_within_constraints_under_random_feedback(
        steps in proptest::collection::vec((1u32..60, 0u32..600, 0u8..101, 0u32..400, 0u8..20), 1..150),
        seed in any::<u64>(),
        latency in any::<bool>(),
        lo in 30i64..500, span in 1i64..20_000,
    ) {
        let cfg = AllegroConfig { utility: if latency { UtilityKind::Latency } else { UtilityKind::Loss }, ..AllegroConfig::default() };
        let mut a = Allegro::new(cfg, &BuildContext::new(seed));
        let mut c = constraints(lo, lo + span, lo + span / 2);
        let mut now = Time::from_ms(1000);
        let mut rate = a.on_start(now, c).target_rate.unwrap();
        let mut seq = 0u64;
        let mut out = Diagnostics::new();
        for (npk, delay_ms, loss_pct, gap_ms, event) in &steps {
            if *event == 0 {
                c = constraints(lo, lo + span / 2 + 1, lo);
                if let Some(r) = a.on_constraints(now, c).target_rate { rate = r; }
            }
            let mut pkts = Vec::new();
            for i in 0..*npk {
                let send = now + Duration::from_ms(i as i64);
                let p = SentPacket { seq, size: Bytes::new(200 + (seq * 97 % 1100) as i64), send_time: send, probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO };
                seq += 1;
                if let Some(r) = a.on_packet_sent(&p).target_rate { rate = r; }
                let lost = (seq * 37 % 100) < *loss_pct as u64;
                pkts.push(PacketResult { sent: p, recv_time: (!lost).then(|| send + Duration::from_ms(*delay_ms as i64 + 5)) });
            }
            now += Duration::from_ms(*npk as i64 + *gap_ms as i64);
            if *event != 1 {
                let fb = TransportFeedback { feedback_time: now + Duration::from_ms(*delay_ms as i64), report_time: (*event % 2 == 0).then_some(now), packets: pkts, ..Default::default() };
                if let Some(r) = a.on_feedback(&fb).target_rate { rate = r; }
            }
            if let Some(r) = a.on_tick(now).target_rate { rate = r; }
            prop_assert!(rate.bps() >= c.min_rate.bps() && rate.bps() <= c.max_rate.bps(), "rate {:?} outside {:?}", rate, c);
            prop_assert!(a.rate().bps_f64().is_finite());
            if let State::Deciding { eps, .. } = a.state { prop_assert!((0.01 - 1e-12..=0.05 + 1e-12).contains(&eps)); }
            prop_assert!(a.mis.len() < 200, "{} MIs pending", a.mis.len());
            out.clear();
            a.diagnostics(&mut out);
            prop_assert!(out.iter().all(|(_, v)| v.is_finite()), "{:?}", out);
        }
    }
}
