//! Robustness and whole-controller checks: odd inputs, RTT backoff, window pushback, random
//! loss, random event sequences, sender-side only, a speed smoke test.

use super::*;

// ---------------------------------------------------------------------------------------------
// Robustness
// ---------------------------------------------------------------------------------------------

fn sent(seq: u64, size: i64, t_us: i64) -> SentPacket {
    SentPacket { seq, size: Bytes::new(size), send_time: Time::from_us(t_us), probe_cluster: None, is_padding: false, data_in_flight: Bytes::new(size) }
}

#[test]
fn odd_inputs_never_panic_and_rates_stay_bounded() {
    for profile in [GccProfile::Current, GccProfile::M84] {
        let mut g = gcc(profile);
        let (min, max) = (kbps(50), kbps(3000));
        let up = g.on_start(Time::ZERO, constraints(300, 50, 3000));
        check_update(&up, min, max);
        let check = |up: Update| check_update(&up, min, max);
        // Empty feedback.
        check(g.on_feedback(&TransportFeedback::default()));
        // All losses.
        let mut fb = TransportFeedback { feedback_time: ms(100), ..Default::default() };
        for k in 0..50 {
            fb.packets.push(PacketResult { sent: sent(k, 1200, 1000 * k as i64), recv_time: None });
        }
        check(g.on_feedback(&fb));
        // Duplicate sequence numbers, zero-size packets, arrival before send, time going backwards.
        let mut fb = TransportFeedback { feedback_time: ms(90), ..Default::default() };
        for k in 0..30 {
            let p = sent(k / 2, if k % 3 == 0 { 0 } else { 1200 }, 100_000 - 1000 * k as i64);
            fb.packets.push(PacketResult { sent: p, recv_time: Some(Time::from_us(50_000 + 700 * k as i64)) });
        }
        check(g.on_feedback(&fb));
        check(g.on_tick(ms(80)));
        check(g.on_packet_sent(&sent(7, 0, 70_000)));
        // Probe packets of an unknown cluster, received all at once.
        let mut fb = TransportFeedback { feedback_time: ms(200), ..Default::default() };
        for k in 0..10 {
            let mut p = sent(100 + k, 1200, 150_000 + 100 * k as i64);
            p.probe_cluster = Some(4242);
            fb.packets.push(PacketResult { sent: p, recv_time: Some(ms(190)) });
        }
        check(g.on_feedback(&fb));
        // Very long silence, then constraints and REMB changes.
        check(g.on_tick(ms(60_000)));
        check(g.on_constraints(ms(60_001), constraints(300, 50, 3000)));
        check(g.on_remote_estimate(ms(60_002), Bitrate::ZERO));
        check(g.on_remote_estimate(ms(60_003), kbps(100)));
        check(g.on_rtt_update(ms(60_004), Duration::from_ms(-5)));
        let mut d = Vec::new();
        g.diagnostics(&mut d);
        assert!(d.iter().all(|(_, v)| v.is_finite()), "{d:?}");
        assert!(g.emitted_target.unwrap() <= kbps(3000));
    }
}

#[test]
fn feedback_outage_triggers_rtt_backoff() {
    let mut sim = Sim::new(gcc(GccProfile::M84), |_| kbps(2000), constraints(300, 30, 5000));
    sim.run_until(ms(10_000));
    let before = sim.target;
    // Feedback stops (e.g. the reverse path fails) while we keep sending.
    sim.fb_interval = Duration::from_secs(1000);
    sim.next_fb = ms(1_000_000);
    sim.run_until(ms(16_000));
    assert!(sim.target < before.scale(0.8), "{before} -> {}", sim.target);
}

#[test]
fn pushback_reduces_target_when_in_flight_exceeds_window() {
    let mut g = gcc(GccProfile::Current);
    g.on_start(Time::ZERO, constraints(1000, 30, 5000));
    g.on_feedback(&simple_feedback(1, 0, 8));
    g.on_tick(ms(125));
    let w = g.cwnd.as_ref().unwrap().window().unwrap();
    let before = g.last_pushback_target;
    // Way more in flight than the window.
    for k in 0..20 {
        let mut p = sent(100 + k, 1200, 130_000 + 1000 * k as i64);
        p.data_in_flight = w * 2;
        g.on_packet_sent(&p);
    }
    assert!(g.last_pushback_target < before.scale(0.5), "{before} -> {}", g.last_pushback_target);
    assert!(diag(&g, "pushback_ratio") < 0.5);
    // The pacing rate is not pushed back.
    assert_eq!(g.emitted_pacing, Some(g.last_loss_based_target.scale(1.1)));
    // With the window off there is no pushback.
    let mut g = gcc_with(GccConfig { cwnd: Some(false), ..GccConfig::default() });
    g.on_start(Time::ZERO, constraints(1000, 30, 5000));
    let mut p = sent(1, 1200, 0);
    p.data_in_flight = Bytes::new(10_000_000);
    g.on_packet_sent(&p);
    assert_eq!(g.last_pushback_target, kbps(1000));
}

#[test]
fn random_loss_reduces_loss_based_estimate() {
    // 20 % random loss on an otherwise idle 3 Mbit/s link: the loss controllers hold the target
    // well below the delay-based estimate.
    for profile in [GccProfile::Current, GccProfile::M84] {
        let mut g = gcc_with(GccConfig { profile, probing: false, ..GccConfig::default() });
        g.on_start(Time::ZERO, constraints(1000, 30, 5000));
        let mut seq = 0;
        let mut t = 0i64;
        for f in 1..=200 {
            let mut fb = TransportFeedback { feedback_time: Time::from_us(f * 50_000 + 20_000), ..Default::default() };
            let target = g.last_pushback_target.bps().max(100_000);
            let gap = 1200 * 8 * 1_000_000 / target;
            while t < f * 50_000 {
                seq += 1;
                let p = sent(seq, 1200, t);
                g.on_packet_sent(&p);
                fb.packets.push(PacketResult { sent: p, recv_time: (seq % 5 != 0).then(|| Time::from_us(t + 20_000)) });
                t += gap;
            }
            g.on_feedback(&fb);
            g.on_tick(fb.feedback_time);
        }
        let loss_est = diag(&g, "loss_estimate_kbps");
        let delay_est = diag(&g, "delay_estimate_kbps");
        assert!(loss_est < 0.9 * delay_est, "{profile:?}: loss {loss_est} delay {delay_est}");
    }
}

// ---------------------------------------------------------------------------------------------
// Property test: random feedback sequences keep every rate finite and within the constraints.
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Ev {
    Send { size: i64, dt_us: i64, probe: bool },
    Feedback { n: usize, lost_mask: u32, jitter_us: i64, dup: bool, delay_ms: i64 },
    Tick { dt_us: i64 },
    Rtt { ms: i64 },
    Remote { kbps: i64 },
}

fn ev() -> impl Strategy<Value = Ev> {
    prop_oneof![
        4 => (0i64..2000, -2000i64..20_000, any::<bool>()).prop_map(|(size, dt_us, probe)| Ev::Send { size, dt_us, probe }),
        2 => (0usize..40, any::<u32>(), -5000i64..5000, any::<bool>(), -10i64..400)
            .prop_map(|(n, lost_mask, jitter_us, dup, delay_ms)| Ev::Feedback { n, lost_mask, jitter_us, dup, delay_ms }),
        1 => (-1000i64..100_000).prop_map(|dt_us| Ev::Tick { dt_us }),
        1 => (-10i64..5000).prop_map(|ms| Ev::Rtt { ms }),
        1 => (0i64..20_000).prop_map(|kbps| Ev::Remote { kbps }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn random_events_give_finite_bounded_rates(
        profile in prop_oneof![Just(GccProfile::Current), Just(GccProfile::M84), Just(GccProfile::M60)],
        min in 5i64..200, span in 1i64..10_000, start in 1i64..20_000,
        events in prop::collection::vec(ev(), 1..300),
    ) {
        let (min, max) = (kbps(min), kbps(min + span));
        let mut g = gcc(profile);
        let up = g.on_start(Time::ZERO, Constraints { min_rate: min, max_rate: max, start_rate: kbps(start) });
        check_update(&up, min, max);
        let mut now = 0i64;
        let mut seq = 0u64;
        let mut unacked: VecDeque<SentPacket> = VecDeque::new();
        let mut probe_id = up.probes.first().map(|p| p.id);
        for e in events {
            let up = match e {
                Ev::Send { size, dt_us, probe } => {
                    now += dt_us;
                    seq += 1;
                    let mut p = sent(seq, size, now);
                    if probe { p.probe_cluster = probe_id; }
                    unacked.push_back(p);
                    g.on_packet_sent(&p)
                }
                Ev::Feedback { n, lost_mask, jitter_us, dup, delay_ms } => {
                    let mut fb = TransportFeedback { feedback_time: Time::from_us(now + delay_ms * 1000), ..Default::default() };
                    for (i, p) in unacked.drain(..n.min(unacked.len())).enumerate() {
                        let lost = lost_mask & (1 << (i % 32)) != 0;
                        let recv = p.send_time + Duration::from_ms(delay_ms / 2) + Duration::from_us(jitter_us * (i as i64 % 3 - 1));
                        let r = PacketResult { sent: p, recv_time: (!lost).then_some(recv) };
                        fb.packets.push(r);
                        if dup { fb.packets.push(r); }
                    }
                    g.on_feedback(&fb)
                }
                Ev::Tick { dt_us } => { now += dt_us; g.on_tick(Time::from_us(now)) }
                Ev::Rtt { ms } => g.on_rtt_update(Time::from_us(now), Duration::from_ms(ms)),
                Ev::Remote { kbps: k } => g.on_remote_estimate(Time::from_us(now), kbps(k)),
            };
            check_update(&up, min, max);
            if let Some(p) = up.probes.last() { probe_id = Some(p.id); }
        }
        let mut d = Vec::new();
        g.diagnostics(&mut d);
        for (n, v) in d { prop_assert!(v.is_finite(), "{} = {}", n, v); }
    }
}

/// Keep `ReceivedPacket` in scope for a receiver-side check that GCC has none.
#[test]
fn gcc_is_sender_side_only() {
    let built = crate::controllers::build("gcc", &serde_json::Value::Null, &BuildContext::new(3)).unwrap();
    assert!(built.receiver.is_none());
    let _unused: Option<ReceivedPacket> = None;
}

/// Throughput of the controller itself (run with `--release --ignored --nocapture`).
#[test]
#[ignore]
fn perf_smoke() {
    let t0 = std::time::Instant::now();
    let mut sim = Sim::new(gcc(GccProfile::Current), |_| kbps(2000), constraints(300, 30, 5000));
    sim.run_until(ms(600_000));
    let el = t0.elapsed().as_secs_f64();
    eprintln!("600 s simulated in {el:.3} s = {:.0}x real time (sim included), {} packets", 600.0 / el, sim.seq);
}



