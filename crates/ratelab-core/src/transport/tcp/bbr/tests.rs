use super::super::tests::{check_conservation, Net};
use super::super::{TcpConfig, TcpSender};
use super::*;
use crate::transport::tcp::RateSample;
use std::sync::{Arc, Mutex};

const MSS: i64 = 1448;

/// What the controller looked like after one ACK.
#[derive(Clone, Copy, Debug)]
struct Snap {
    t: Time,
    mode: Mode,
    gain: f64,
    cycle: usize,
    cwnd: i64,
    btl_bw: Bitrate,
    min_rtt: Option<Duration>,
    prior_in_flight: i64,
    lost: i64,
    pacing: Bitrate,
}

/// BBR wrapped so the test can watch it from inside a closed loop.
struct Traced {
    inner: Bbr,
    log: Arc<Mutex<Vec<Snap>>>,
}

impl WindowCongestionControl for Traced {
    fn name(&self) -> &'static str { "bbr" }
    fn on_ack(&mut self, s: &AckSample) {
        self.inner.on_ack(s);
        let b = &self.inner;
        self.log.lock().unwrap().push(Snap {
            t: s.now,
            mode: b.mode(),
            gain: b.pacing_gain(),
            cycle: b.cycle_index(),
            cwnd: b.cwnd().get(),
            btl_bw: b.btl_bw(),
            min_rtt: b.min_rtt(),
            prior_in_flight: s.prior_in_flight.get(),
            lost: s.newly_lost.get(),
            pacing: b.pacing_rate().unwrap(),
        });
    }
    fn on_congestion_event(&mut self, ev: &CongestionEvent) { self.inner.on_congestion_event(ev) }
    fn on_rto(&mut self, ev: &RtoEvent) { self.inner.on_rto(ev) }
    fn on_recovery_exit(&mut self, now: Time) { self.inner.on_recovery_exit(now) }
    fn on_packet_sent(&mut self, now: Time, b: Bytes, f: Bytes) { self.inner.on_packet_sent(now, b, f) }
    fn cwnd(&self) -> Bytes { self.inner.cwnd() }
    fn ssthresh(&self) -> Bytes { self.inner.ssthresh() }
    fn in_slow_start(&self) -> bool { self.inner.in_slow_start() }
    fn pacing_rate(&self) -> Option<Bitrate> { self.inner.pacing_rate() }
    fn wants_recovery_inflation(&self) -> bool { false }
    fn forces_app_limited(&self) -> bool { self.inner.forces_app_limited() }
}

/// 10 Mbit/s, 50 ms RTT, `queue` packets of buffer; BBR with `seed`.
fn run(seconds: i64, queue: usize, seed: u64) -> (Net, Vec<Snap>) {
    let cfg = TcpConfig { cc: "bbr".into(), ..TcpConfig::default() };
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut net = Net::new(&cfg, Duration::from_ms(25)).with_bottleneck(Bitrate::from_kbps(10_000), queue);
    let bbr = Bbr::new(cfg.mss(), cfg.header(), cfg.initial_window_segments, seed);
    net.s = TcpSender::with_cc(&cfg, Box::new(Traced { inner: bbr, log: log.clone() }));
    net.trace = None;
    net.run(Time::from_ms(seconds * 1000), check_conservation);
    let log = log.lock().unwrap().clone();
    (net, log)
}

fn payload_capacity() -> Bitrate { Bitrate::from_kbps(10_000).scale(1448.0 / 1500.0) }

#[test]
fn constants_and_initial_pacing() {
    assert!((HIGH_GAIN - 2.885_39).abs() < 1e-5);
    assert!((DRAIN_GAIN * HIGH_GAIN - 1.0).abs() < 1e-12);
    let b = Bbr::new(Bytes::new(MSS), Bytes::new(52), 10, 0);
    assert_eq!(b.mode(), Mode::Startup);
    assert!(b.in_slow_start());
    // 10·1448 B per nominal 1 ms = 115.84 Mbit/s, × 2.88539 × 0.99 = 330.90 Mbit/s payload,
    // × 1500/1448 on the wire = 342.78 Mbit/s.
    assert!((b.payload_pacing_rate().bps_f64() / 1e6 - 330.90).abs() < 0.01, "{}", b.payload_pacing_rate());
    assert!((b.pacing_rate().unwrap().bps_f64() / 1e6 - 342.78).abs() < 0.01, "{:?}", b.pacing_rate());
    assert_eq!(b.cwnd(), Bytes::new(10 * MSS));
}

#[test]
fn probe_bw_starts_at_a_seeded_random_phase_never_the_drain_phase() {
    let mut seen = [0u32; 8];
    for seed in 0..200 {
        let mut a = Bbr::new(Bytes::new(MSS), Bytes::ZERO, 10, seed);
        let mut b = Bbr::new(Bytes::new(MSS), Bytes::ZERO, 10, seed);
        a.reset_probe_bw_mode(Time::ZERO);
        b.reset_probe_bw_mode(Time::ZERO);
        assert_eq!(a.cycle_index(), b.cycle_index(), "same seed, same phase");
        seen[a.cycle_index()] += 1;
    }
    assert_eq!(seen[1], 0, "never starts in the 0.75 phase");
    assert!(seen.iter().enumerate().all(|(i, n)| i == 1 || *n > 10), "{seen:?}");
}

fn sample(now_ms: i64, acked: i64, in_flight: i64, delivered: i64, state: CaState) -> AckSample {
    AckSample {
        prior_in_flight: Bytes::new(in_flight + acked),
        in_flight: Bytes::new(in_flight),
        delivered: Bytes::new(delivered),
        rate: Some(RateSample {
            delivered: Bytes::new(10 * MSS),
            interval: Duration::from_ms(100),
            delivery_rate: Bitrate::from_kbps(1158),
            is_app_limited: false,
            prior_delivered: Bytes::ZERO,
        }),
        ..AckSample::for_test(Time::from_ms(now_ms), acked, state)
    }
}

#[test]
fn packet_conservation_in_first_recovery_round_then_restore() {
    let mut b = Bbr::new(Bytes::new(MSS), Bytes::ZERO, 10, 0);
    b.on_ack(&sample(100, MSS, 20 * MSS, MSS, CaState::Open));
    b.cwnd = 40 * MSS;
    // Loss: the window is saved, then the triggering ACK (one segment delivered, one newly
    // lost, 12 segments still in the pipe) sets cwnd = in_flight + acked = 13 segments.
    b.on_congestion_event(&CongestionEvent { now: Time::from_ms(200), flight_size: Bytes::new(30 * MSS), in_flight: Bytes::new(12 * MSS), lost: Bytes::new(MSS) });
    let mut s = sample(200, MSS, 12 * MSS, 2 * MSS, CaState::Recovery);
    s.newly_lost = Bytes::new(MSS);
    b.on_ack(&s);
    assert_eq!(b.cwnd(), Bytes::new(13 * MSS));
    // Next ACK in the same round: cwnd = max(cwnd, in_flight + acked): an ACK of one segment
    // releases at most two.
    b.on_ack(&sample(201, MSS, 13 * MSS, 3 * MSS, CaState::Recovery));
    assert_eq!(b.cwnd(), Bytes::new(14 * MSS));
    // Recovery ends: the saved window comes back.
    b.on_recovery_exit(Time::from_ms(300));
    // (Startup, 40 segments above the 36-segment target: no further growth.)
    b.on_ack(&sample(300, MSS, 10 * MSS, 100 * MSS, CaState::Recovery));
    assert_eq!(b.cwnd(), Bytes::new(40 * MSS));
    // A timeout collapses to one segment and keeps the window to restore.
    b.on_rto(&RtoEvent { now: Time::from_ms(400), flight_size: Bytes::new(40 * MSS), consecutive: 1, during_recovery: false });
    assert_eq!(b.cwnd(), Bytes::new(MSS));
    assert!(!b.wants_recovery_inflation());
}

#[test]
fn startup_drain_probe_bw_and_the_gain_cycle() {
    // A deep buffer (100 packets): no loss in Startup, so the transitions are the model's.
    let (net, log) = run(8, 100, 3);
    assert_eq!(net.s.stats().fast_recoveries, 0);
    let first = |m: Mode| log.iter().position(|s| s.mode == m).unwrap();
    let (drain, probe) = (first(Mode::Drain), first(Mode::ProbeBw));
    assert!(drain < probe);
    assert!(log[..drain].iter().all(|s| s.mode == Mode::Startup && (s.gain - HIGH_GAIN).abs() < 1e-12));
    assert!(log[drain..probe].iter().all(|s| s.mode == Mode::Drain && (s.gain - DRAIN_GAIN).abs() < 1e-12));
    // Startup ends within ~ log2(BDP/IW) + 3 rounds of 50 ms: well under a second.
    assert!(log[drain].t < Time::from_ms(800), "{}", log[drain].t);
    // BtlBw found: within 3 % of the payload capacity, never above it by more than 1 %.
    let bw = log[probe].btl_bw;
    assert!((bw / payload_capacity() - 1.0).abs() < 0.03, "{bw}");
    assert!(log.iter().all(|s| s.btl_bw / payload_capacity() < 1.01));
    // Drain left once in-flight ≤ BDP (+ quanta).
    let bdp = (payload_capacity() * log[probe].min_rtt.unwrap()).get();
    assert!(log[probe].prior_in_flight <= bdp + 10 * MSS, "{} vs {}", log[probe].prior_in_flight, bdp);

    // The gain cycle: phases follow each other in order, starting anywhere but at 0.75.
    let pb: Vec<&Snap> = log[probe..].iter().filter(|s| s.mode == Mode::ProbeBw).collect();
    assert_ne!(pb[0].cycle, 1);
    let mut changes = vec![(pb[0].t, pb[0].cycle)];
    for w in pb.windows(2) {
        if w[1].cycle != w[0].cycle {
            assert_eq!(w[1].cycle, (w[0].cycle + 1) % 8, "phases advance one at a time");
            assert_eq!(w[1].gain, PACING_GAIN_CYCLE[w[1].cycle]);
            changes.push((w[1].t, w[1].cycle));
        }
    }
    assert!(changes.len() > 40, "{} phase changes in ~7 s at RTprop ≈ 51 ms", changes.len());
    let rtprop = log[probe].min_rtt.unwrap();
    for w in changes.windows(2) {
        let (len, phase) = (w[1].0 - w[0].0, w[0].1);
        // Phases at gain ≥ 1 last more than RTprop; the 0.75 phase may end early.
        if phase != 1 {
            assert!(len > rtprop, "phase {phase} lasted {len}");
        }
    }
    // The 1.25 phase ends only once in-flight reached 1.25·BDP (no loss here).
    for w in pb.windows(2) {
        if w[0].cycle == 0 && w[1].cycle == 1 {
            assert!(w[1].prior_in_flight as f64 >= 1.25 * bdp as f64, "{} < 1.25·{bdp}", w[1].prior_in_flight);
        }
    }
    // Pacing = gain · BtlBw · 0.99, on the wire (× 1500/1448).
    for s in &pb {
        let expect = s.btl_bw.bps_f64() * s.gain * 0.99 * 1500.0 / 1448.0;
        assert!((s.pacing.bps_f64() / expect - 1.0).abs() < 1e-6, "{s:?}");
    }
    // cwnd = 2·BDP + quanta (+ ACK-aggregation allowance), far below Startup's 2.885·BDP.
    let c = pb.last().unwrap().cwnd;
    assert!(c as f64 >= 2.0 * bdp as f64 && (c as f64) < 2.4 * bdp as f64, "cwnd {c}, bdp {bdp}");
}

#[test]
fn probe_rtt_every_ten_seconds_without_a_new_minimum() {
    let (net, log) = run(25, 100, 1);
    assert!(net.r.bytes_delivered() > Bytes::new(25_000_000));
    // Entries into ProbeRTT.
    let mut entries = Vec::new();
    let mut exits = Vec::new();
    for w in log.windows(2) {
        if w[1].mode == Mode::ProbeRtt && w[0].mode != Mode::ProbeRtt {
            entries.push(w[1].t);
        }
        if w[0].mode == Mode::ProbeRtt && w[1].mode != Mode::ProbeRtt {
            exits.push((w[1].t, w[1].mode, w[0].cwnd, w[1].cwnd));
        }
    }
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert_eq!(exits.len(), 2);
    // The minimum is set on the first ACKs (empty queue, ~51 ms) and never beaten.
    assert!(entries[0] > Time::from_ms(10_000) && entries[0] < Time::from_ms(10_200), "{}", entries[0]);
    for (i, &(t_exit, mode, cwnd_in, cwnd_out)) in exits.iter().enumerate() {
        let dur = t_exit - entries[i];
        // 200 ms at ≤ 4 segments, after draining: 200 ms + a few round trips at most.
        assert!(dur > PROBE_RTT_DURATION && dur < Duration::from_ms(400), "ProbeRTT lasted {dur}");
        assert_eq!(mode, Mode::ProbeBw);
        assert!(cwnd_in <= CWND_MIN_TARGET * MSS);
        assert!(cwnd_out > 40 * MSS, "window restored: {cwnd_out}");
    }
    assert!(log.iter().filter(|s| s.mode == Mode::ProbeRtt).all(|s| s.cwnd <= CWND_MIN_TARGET * MSS));
    // The next ProbeRTT comes 10 s after the previous one ended (RTprop re-stamped there).
    let gap = entries[1] - exits[0].0;
    assert!(gap > MIN_RTT_WINDOW && gap < MIN_RTT_WINDOW + Duration::from_ms(200), "{gap}");
    // ProbeRTT's low-rate samples did not pull BtlBw down.
    let after = log.iter().find(|s| s.t > exits[0].0 + Duration::from_ms(100)).unwrap();
    assert!(after.btl_bw / payload_capacity() > 0.95, "{}", after.btl_bw);
}

#[test]
fn shallow_buffer_startup_losses_are_repaired_and_the_queue_stays_short() {
    // 42 packets of buffer (one BDP): Startup overshoots and loses; BBR recovers, keeps the
    // link busy and, in ProbeBW, the loss rate is small.
    let (net, log) = run(20, 42, 9);
    let goodput = net.r.bytes_delivered() / Duration::from_secs(20);
    assert!(goodput / payload_capacity() > 0.9, "{goodput}");
    assert_eq!(net.s.stats().timeouts, 0);
    let late_losses: i64 = log.iter().filter(|s| s.t > Time::from_ms(5_000)).map(|s| s.lost).sum();
    assert!(late_losses < 20 * MSS, "{late_losses} bytes lost after 5 s");
}
