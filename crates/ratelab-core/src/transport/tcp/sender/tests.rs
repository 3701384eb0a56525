use super::super::tests::{check_conservation, Net, Step, TraceEntry};
use super::super::NewReno;
use super::*;

const MSS: i64 = 1000;

fn cfg(sack: bool) -> TcpConfig { TcpConfig { mss_bytes: MSS as u32, sack, ..TcpConfig::default() } }

/// No bottleneck, 50 ms each way; drop the first transmission of the listed byte offsets.
fn net_dropping(cfg: &TcpConfig, lost: &'static [u64]) -> Net {
    let mut net = Net::new(cfg, Duration::from_ms(50));
    net.drop_data = Box::new(move |_, s| !s.is_retransmit && lost.contains(&s.seq));
    net
}

fn acks(net: &Net) -> Vec<(TraceEntry, Ack)> {
    net.trace().iter().filter_map(|e| if let Step::AckIn(a) = e.step { Some((*e, a)) } else { None }).collect()
}

fn retransmissions(net: &Net) -> Vec<(Time, u64)> {
    net.sent().iter().filter(|(_, s)| s.is_retransmit).map(|(t, s)| (*t, s.seq)).collect()
}

fn cwnd_at(net: &Net, t: Time) -> Bytes { net.trace().iter().rfind(|e| e.t <= t).unwrap().cwnd }

#[test]
fn initial_window_and_slow_start_doubling_per_rtt() {
    let mut net = net_dropping(&cfg(true), &[]);
    net.run(Time::from_ms(350), check_conservation);
    let sent = net.sent();
    let per_round: Vec<usize> = (0..4).map(|k| sent.iter().filter(|(t, _)| *t == Time::from_ms(100 * k)).count()).collect();
    assert_eq!(per_round, vec![10, 20, 40, 80], "IW = 10, then doubling every RTT");
    for k in 0..4 {
        assert_eq!(cwnd_at(&net, Time::from_ms(100 * k)), Bytes::new((10 * MSS) << k));
    }
    assert!(net.s.in_slow_start());
    assert_eq!(net.s.ssthresh(), Bytes::INFINITY);
    assert_eq!(net.s.srtt(), Some(Duration::from_ms(100)));
}

#[test]
fn congestion_avoidance_adds_one_mss_per_rtt() {
    let c = cfg(true);
    let mut net = net_dropping(&c, &[]);
    net.s = TcpSender::with_cc(&c, Box::new(NewReno::with_ssthresh(c.mss(), 10, Bytes::new(10 * MSS))));
    net.run(Time::from_ms(1050), check_conservation);
    assert!(!net.s.in_slow_start());
    // Round 1: ten ACKs each add ⌊(SMSS² + carry)/cwnd⌋:
    // 100, 99, 98, 97, 96, 95, 95, 93, 93, 92 -> 10 958 bytes.
    assert_eq!(cwnd_at(&net, Time::from_ms(100)), Bytes::new(10_958));
    // Each round has ⌊cwnd/SMSS⌋ ACKs of SMSS²/cwnd each: a little under one SMSS per RTT.
    let c: Vec<i64> = (0..=10).map(|k| cwnd_at(&net, Time::from_ms(100 * k)).get()).collect();
    for w in c.windows(2) {
        let growth = w[1] - w[0];
        assert!((850..=1000).contains(&growth), "per-RTT growth {growth} in {c:?}");
    }
    assert!((9000..=10_000).contains(&(c[10] - c[0])), "{c:?}");
    // Segments per round go 10, 10, 11, 12, ...
    let sent = net.sent();
    let per_round: Vec<usize> = (0..5).map(|k| sent.iter().filter(|(t, _)| *t == Time::from_ms(100 * k)).count()).collect();
    assert_eq!(per_round, vec![10, 10, 11, 12, 13]);
}

#[test]
fn single_loss_fast_retransmit_and_recovery_newreno() {
    // Segment 2 of the initial window is lost.
    let mut net = net_dropping(&cfg(false), &[2000]);
    net.run(Time::from_ms(450), check_conservation);
    let a = acks(&net);
    // t = 100 ms: ACK 1000, ACK 2000 (slow start sends 10..13), then duplicates of 2000.
    let entry = a.iter().position(|(e, _)| e.state == CaState::Recovery).unwrap();
    assert_eq!(entry, 4, "the third duplicate ACK triggers fast retransmit");
    let (e, ack) = a[entry];
    assert_eq!(ack.cumulative, 2000);
    // FlightSize = 14 000 − 2 000 -> ssthresh 6 000; cwnd = ssthresh + 3·SMSS.
    assert_eq!(e.ssthresh, Bytes::new(6000));
    assert_eq!(e.cwnd, Bytes::new(9000));
    // Segments 2..13 outstanding, 2 marked lost (its retransmission is not yet polled).
    assert_eq!(e.in_flight, Bytes::new(11_000));
    // Each further duplicate ACK inflates by one SMSS (7 duplicates at t = 100 ms).
    assert_eq!(a[8].1.cumulative, 2000);
    assert_eq!(a[8].0.cwnd, Bytes::new(13_000));
    assert_eq!(retransmissions(&net), vec![(Time::from_ms(100), 2000)]);
    // The full ACK (everything up to the recovery point 14 000) ends recovery: cwnd = ssthresh.
    let exit = a.iter().find(|(_, k)| k.cumulative >= 14_000).unwrap();
    assert_eq!(exit.1.cumulative, 14_000);
    assert_eq!(exit.0.state, CaState::Open);
    assert_eq!(exit.0.cwnd, Bytes::new(6000));
    assert_eq!(exit.0.ssthresh, Bytes::new(6000));
    assert_eq!(exit.0.t, Time::from_ms(200));
    let st = net.s.stats();
    assert_eq!((st.fast_recoveries, st.timeouts, st.retransmissions), (1, 0, 1));
    assert_eq!(net.s.bytes_lost(), Bytes::new(1000));
}

#[test]
fn newreno_partial_ack_repairs_two_losses_without_timeout() {
    let mut net = net_dropping(&cfg(false), &[2000, 5000]);
    net.run(Time::from_ms(450), check_conservation);
    let a = acks(&net);
    let entry = a.iter().find(|(e, _)| e.state == CaState::Recovery).unwrap();
    assert_eq!((entry.0.t, entry.0.cwnd, entry.0.ssthresh), (Time::from_ms(100), Bytes::new(9000), Bytes::new(6000)));
    // t = 200 ms: four more duplicates (cwnd 16 000), then the partial ACK 5 000 acks 3 000
    // bytes: deflate by 3 000, add back one SMSS -> 14 000; segment 5 is retransmitted.
    let partial = a.iter().find(|(_, k)| k.cumulative == 5000).unwrap();
    assert_eq!(partial.0.t, Time::from_ms(200));
    assert_eq!(partial.0.state, CaState::Recovery);
    assert_eq!(partial.0.cwnd, Bytes::new(14_000));
    assert_eq!(retransmissions(&net), vec![(Time::from_ms(100), 2000), (Time::from_ms(200), 5000)]);
    // t = 300 ms: the ACK for the second retransmission covers the recovery point.
    let exit = a.iter().find(|(_, k)| k.cumulative >= 14_000).unwrap();
    assert_eq!((exit.0.t, exit.1.cumulative, exit.0.state, exit.0.cwnd), (Time::from_ms(300), 18_000, CaState::Open, Bytes::new(6000)));
    let st = net.s.stats();
    assert_eq!((st.fast_recoveries, st.timeouts, st.retransmissions), (1, 0, 2));
}

#[test]
fn sack_recovery_repairs_both_holes_without_partial_acks() {
    let mut net = net_dropping(&cfg(true), &[2000, 5000]);
    net.run(Time::from_ms(450), check_conservation);
    let a = acks(&net);
    let entry = a.iter().position(|(e, _)| e.state == CaState::Recovery).unwrap();
    // ACKs at 100 ms: 1000, 2000 (slow start sends 10..13), then SACKs for 3 and 4, each of
    // which frees pipe for one new segment (14, 15), then the SACK for 6: three SACKed
    // segments above the hole at 2.
    assert_eq!(entry, 4);
    // FlightSize 16 000 − 2 000 -> ssthresh 7 000; RFC 6675: cwnd = ssthresh, no inflation.
    assert_eq!((a[entry].0.cwnd, a[entry].0.ssthresh), (Bytes::new(7000), Bytes::new(7000)));
    // Segment 5 is declared lost by SACK (6, 7, 8 above it) in the same round; the pipe is
    // full until the first SACK of the next round, which releases its retransmission before
    // the partial ACK for segment 2 arrives.
    assert_eq!(retransmissions(&net), vec![(Time::from_ms(100), 2000), (Time::from_ms(200), 5000)]);
    let tr = net.trace();
    let rx5 = tr.iter().position(|e| matches!(e.step, Step::Sent(s) if s.is_retransmit && s.seq == 5000)).unwrap();
    let trigger = tr[..rx5].iter().rev().find_map(|e| if let Step::AckIn(k) = e.step { Some(k) } else { None }).unwrap();
    assert_eq!(trigger.cumulative, 2000);
    assert!(!trigger.sack.is_empty());
    let exit = a.iter().find(|(_, k)| k.cumulative >= 16_000).unwrap();
    assert_eq!((exit.0.t, exit.0.state, exit.0.cwnd), (Time::from_ms(300), CaState::Open, Bytes::new(7000)));
    let st = net.s.stats();
    assert_eq!((st.fast_recoveries, st.timeouts, st.retransmissions), (1, 0, 2));
}

#[test]
fn rto_when_all_acks_are_lost() {
    let mut net = net_dropping(&cfg(true), &[]);
    net.drop_ack = Box::new(|_, _| true);
    net.run(Time::from_ms(7_500), check_conservation);
    let rtos: Vec<Time> = net.trace().iter().filter(|e| matches!(e.step, Step::Rto)).map(|e| e.t).collect();
    // No RTT sample: initial RTO 1 s, then 2 s, 4 s.
    assert_eq!(rtos, vec![Time::from_ms(1000), Time::from_ms(3000), Time::from_ms(7000)]);
    assert_eq!(retransmissions(&net), vec![(Time::from_ms(1000), 0), (Time::from_ms(3000), 0), (Time::from_ms(7000), 0)]);
    assert_eq!(net.s.cwnd(), Bytes::new(MSS));
    // ssthresh from the first timeout (FlightSize 10 000 / 2), held on the later ones.
    assert_eq!(net.s.ssthresh(), Bytes::new(5000));
    assert_eq!(net.s.rto(), Duration::from_secs(8));
    assert_eq!(net.s.next_timer(), Some(Time::from_ms(15_000)));
    assert_eq!(net.s.state(), CaState::Loss);
}

#[test]
fn rto_after_rtt_samples_uses_the_estimate_and_doubles() {
    let mut net = net_dropping(&cfg(true), &[]);
    // ACKs get through until 150 ms: one round of ten 100 ms samples. SRTT = 100 ms and
    // RTTVAR = 50·0.75⁹ ≈ 3.75 ms (3 753 µs after integer rounding); 4·RTTVAR = 15 ms is
    // floored at the 200 ms min RTO (Linux rule), so RTO = 100 + 200 = 300 ms.
    net.drop_ack = Box::new(|t, _| t >= Time::from_ms(150));
    net.run(Time::from_ms(2_500), check_conservation);
    assert_eq!(net.s.srtt(), Some(Duration::from_ms(100)));
    assert_eq!(net.s.rtt_estimator().rttvar(), Duration::from_us(3_753));
    let rtos: Vec<Time> = net.trace().iter().filter(|e| matches!(e.step, Step::Rto)).map(|e| e.t).collect();
    // Timer re-armed by the last ACK at 100 ms: 100 + 300, then +600, +1200.
    assert_eq!(rtos, vec![Time::from_ms(400), Time::from_ms(1000), Time::from_ms(2200)]);
    assert_eq!(net.s.rto(), Duration::from_ms(2400));
    assert_eq!(retransmissions(&net)[0], (Time::from_ms(400), 10_000));
    // FlightSize at the first timeout: 20 segments.
    assert_eq!(net.s.ssthresh(), Bytes::new(10_000));
    assert_eq!(net.s.cwnd(), Bytes::new(MSS));
}

#[test]
fn after_timeout_flow_recovers_in_slow_start() {
    let mut net = net_dropping(&cfg(true), &[]);
    // ACKs sent between 150 and 350 ms are lost. The RTO (200 ms after the last ACK at
    // 100 ms) fires at 300 ms; the ACK of that retransmission, sent at 350 ms, gets through.
    net.drop_ack = Box::new(|t, _| t >= Time::from_ms(150) && t < Time::from_ms(350));
    net.run(Time::from_ms(3_000), check_conservation);
    assert_eq!(net.s.stats().timeouts, 1);
    assert_eq!(net.s.state(), CaState::Open);
    assert!(net.s.bytes_delivered() > Bytes::new(100_000));
    let rto = net.trace().iter().position(|e| matches!(e.step, Step::Rto)).unwrap();
    assert_eq!(net.trace()[rto].cwnd, Bytes::new(MSS));
    // FlightSize at the timeout was 20 segments -> ssthresh 10 segments; the window grows
    // back through slow start and beyond.
    assert_eq!(net.s.ssthresh(), Bytes::new(10 * MSS));
    assert!(net.s.cwnd() > net.s.ssthresh());
    assert!(net.r.bytes_delivered() >= net.s.bytes_delivered());
}

#[test]
fn karn_rule_without_timestamps() {
    let c = TcpConfig { max_bytes: Some(3000), ..cfg(true) };
    // Plain sample: ACK for a segment sent once.
    let mut s = TcpSender::new(&c).unwrap();
    while s.poll_transmit(Time::ZERO).is_some() {}
    s.on_ack(Time::from_ms(100), &Ack::new(1000));
    assert_eq!(s.srtt(), Some(Duration::from_ms(100)));

    // Timeout, retransmission, then an ACK without timestamp: ambiguous, no sample, the
    // backed-off RTO stays.
    let mut s = TcpSender::new(&c).unwrap();
    while s.poll_transmit(Time::ZERO).is_some() {}
    s.on_timer(Time::from_ms(1000));
    let rx = s.poll_transmit(Time::from_ms(1000)).unwrap();
    assert!(rx.is_retransmit && rx.seq == 0);
    assert_eq!(s.rto(), Duration::from_secs(2));
    s.on_ack(Time::from_ms(1100), &Ack::new(1000));
    assert_eq!(s.srtt(), None);
    assert_eq!(s.rto(), Duration::from_secs(2));

    // The same ACK with a timestamp echo is unambiguous (RFC 7323) and clears the back-off.
    let mut s = TcpSender::new(&c).unwrap();
    while s.poll_transmit(Time::ZERO).is_some() {}
    s.on_timer(Time::from_ms(1000));
    s.poll_transmit(Time::from_ms(1000)).unwrap();
    let ack = Ack { ts_echo: Some(Time::from_ms(1000)), ..Ack::new(1000) };
    s.on_ack(Time::from_ms(1100), &ack);
    assert_eq!(s.srtt(), Some(Duration::from_ms(100)));
    assert_eq!(s.rto(), Duration::from_ms(300));
}

#[test]
fn stale_and_invalid_acks_are_harmless() {
    let mut s = TcpSender::new(&cfg(true)).unwrap();
    while s.poll_transmit(Time::ZERO).is_some() {}
    s.on_ack(Time::from_ms(100), &Ack::new(5000));
    let before = (s.snd_una(), s.cwnd(), s.bytes_in_flight());
    // An older ACK (reordered) is not a duplicate and changes nothing.
    s.on_ack(Time::from_ms(101), &Ack::new(3000));
    // An ACK for data never sent is ignored.
    s.on_ack(Time::from_ms(102), &Ack::new(1_000_000));
    assert_eq!((s.snd_una(), s.cwnd(), s.bytes_in_flight()), before);
    assert_eq!(s.stats().invalid_acks, 1);
}

/// NewReno with a fixed pacing rate, to exercise the pacing hook.
struct Paced(NewReno, Bitrate);
impl WindowCongestionControl for Paced {
    fn name(&self) -> &'static str { "paced" }
    fn on_ack(&mut self, s: &AckSample) { self.0.on_ack(s) }
    fn on_congestion_event(&mut self, ev: &CongestionEvent) { self.0.on_congestion_event(ev) }
    fn on_rto(&mut self, ev: &RtoEvent) { self.0.on_rto(ev) }
    fn cwnd(&self) -> Bytes { self.0.cwnd() }
    fn ssthresh(&self) -> Bytes { self.0.ssthresh() }
    fn pacing_rate(&self) -> Option<Bitrate> { Some(self.1) }
}

#[test]
fn pacing_spaces_segments_and_drives_the_timer() {
    let c = cfg(true);
    let mut s = TcpSender::with_cc(&c, Box::new(Paced(NewReno::new(c.mss(), 10), Bitrate::from_kbps(1000))));
    let first = s.poll_transmit(Time::ZERO).unwrap();
    assert_eq!(first.seq, 0);
    assert!(s.poll_transmit(Time::ZERO).is_none(), "paced: one segment at a time");
    // 1052 wire bytes at 1 Mbit/s = 8.416 ms.
    assert_eq!(s.next_timer(), Some(Time::from_us(8_416)));
    s.on_timer(Time::from_us(8_416));
    assert_eq!(s.poll_transmit(Time::from_us(8_416)).unwrap().seq, 1000);
    assert_eq!(s.next_timer(), Some(Time::from_secs_f64(1.0)), "only the RTO until a poll is refused by pacing");
    assert!(s.poll_transmit(Time::from_us(10_000)).is_none());
    assert_eq!(s.next_timer(), Some(Time::from_us(16_832)));
}
