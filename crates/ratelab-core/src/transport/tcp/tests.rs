//! Closed-loop tests: a sender and a receiver over a tiny deterministic network written here
//! (one bottleneck with fixed capacity and a drop-tail queue counted in packets, fixed one-way
//! delays, optional scripted or random drops and jitter). Also used by the sender's unit tests.

use super::*;
use crate::units::Bitrate;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

#[derive(Clone, Copy, Debug)]
enum Payload {
    Data(Segment),
    Ack(Ack),
}

#[derive(Clone, Copy, Debug)]
struct Ev {
    t: Time,
    n: u64,
    p: Payload,
}
impl PartialEq for Ev {
    fn eq(&self, o: &Self) -> bool { (self.t, self.n) == (o.t, o.n) }
}
impl Eq for Ev {}
impl PartialOrd for Ev {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> { Some(self.cmp(o)) }
}
impl Ord for Ev {
    // Min-heap on (time, insertion order).
    fn cmp(&self, o: &Self) -> Ordering { (o.t, o.n).cmp(&(self.t, self.n)) }
}

/// What happened at one step (for scripted assertions).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Step {
    Sent(Segment),
    AckIn(Ack),
    Rto,
}

/// A trace entry: the sender's state right after a step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TraceEntry {
    pub t: Time,
    pub step: Step,
    pub cwnd: Bytes,
    pub ssthresh: Bytes,
    pub state: CaState,
    pub in_flight: Bytes,
}

type DropFn = Box<dyn FnMut(Time, &Segment) -> bool>;
type AckDropFn = Box<dyn FnMut(Time, &Ack) -> bool>;
type JitterFn = Box<dyn FnMut() -> Duration>;

pub(crate) struct Net {
    pub s: TcpSender,
    pub r: TcpReceiver,
    pub now: Time,
    events: BinaryHeap<Ev>,
    n: u64,
    /// `None`: no bottleneck (infinite capacity, no queue).
    capacity: Option<Bitrate>,
    queue_limit: usize,
    busy_until: Time,
    departures: VecDeque<Time>,
    owd: Duration,
    pub data_dropped: Bytes,
    pub data_in_transit: Bytes,
    pub acks_dropped: u64,
    pub drop_data: DropFn,
    pub drop_ack: AckDropFn,
    pub jitter: JitterFn,
    pub trace: Option<Vec<TraceEntry>>,
}

impl Net {
    pub fn new(cfg: &TcpConfig, owd: Duration) -> Self {
        Net {
            s: TcpSender::new(cfg).expect("valid config"),
            r: TcpReceiver::new(cfg),
            now: Time::ZERO,
            events: BinaryHeap::new(),
            n: 0,
            capacity: None,
            queue_limit: usize::MAX,
            busy_until: Time::ZERO,
            departures: VecDeque::new(),
            owd,
            data_dropped: Bytes::ZERO,
            data_in_transit: Bytes::ZERO,
            acks_dropped: 0,
            drop_data: Box::new(|_, _| false),
            drop_ack: Box::new(|_, _| false),
            jitter: Box::new(|| Duration::ZERO),
            trace: Some(Vec::new()),
        }
    }

    pub fn with_bottleneck(mut self, capacity: Bitrate, queue_packets: usize) -> Self {
        self.capacity = Some(capacity);
        self.queue_limit = queue_packets.max(1);
        self
    }

    fn push(&mut self, t: Time, p: Payload) {
        self.n += 1;
        self.events.push(Ev { t, n: self.n, p });
    }

    fn record(&mut self, step: Step) {
        if let Some(tr) = self.trace.as_mut() {
            tr.push(TraceEntry { t: self.now, step, cwnd: self.s.cwnd(), ssthresh: self.s.ssthresh(), state: self.s.state(), in_flight: self.s.bytes_in_flight() });
        }
    }

    fn drain_sender(&mut self) {
        while let Some(seg) = self.s.poll_transmit(self.now) {
            self.record(Step::Sent(seg));
            self.transmit(seg);
        }
    }

    fn transmit(&mut self, seg: Segment) {
        let now = self.now;
        if (self.drop_data)(now, &seg) {
            self.data_dropped += seg.len;
            return;
        }
        let mut depart = now;
        if let Some(cap) = self.capacity {
            while self.departures.front().is_some_and(|&d| d <= now) {
                self.departures.pop_front();
            }
            if self.departures.len() >= self.queue_limit {
                self.data_dropped += seg.len; // drop-tail
                return;
            }
            depart = self.busy_until.max(now) + seg.wire_size / cap;
            self.busy_until = depart;
            self.departures.push_back(depart);
        }
        let j = (self.jitter)();
        self.data_in_transit += seg.len;
        self.push(depart + self.owd + j, Payload::Data(seg));
    }

    fn send_ack(&mut self, ack: Ack) {
        if (self.drop_ack)(self.now, &ack) {
            self.acks_dropped += 1;
            return;
        }
        let j = (self.jitter)();
        self.push(self.now + self.owd + j, Payload::Ack(ack));
    }

    /// Run until `t_end` (inclusive); `check` sees the network after every step.
    pub fn run(&mut self, t_end: Time, mut check: impl FnMut(&Net)) {
        self.drain_sender();
        check(self);
        loop {
            let te = self.events.peek().map(|e| e.t).unwrap_or(Time::MAX);
            let tr = self.r.next_timer().unwrap_or(Time::MAX);
            let ts = self.s.next_timer().unwrap_or(Time::MAX);
            let t = te.min(tr).min(ts);
            if t > t_end || !t.is_finite() {
                break;
            }
            assert!(t >= self.now, "time went backwards");
            self.now = t;
            if te == t {
                let ev = self.events.pop().unwrap();
                match ev.p {
                    Payload::Data(seg) => {
                        self.data_in_transit -= seg.len;
                        if let Some(a) = self.r.on_segment(t, &seg) {
                            self.send_ack(a);
                        }
                    }
                    Payload::Ack(a) => {
                        self.s.on_ack(t, &a);
                        self.record(Step::AckIn(a));
                    }
                }
            } else if tr == t {
                if let Some(a) = self.r.on_timer(t) {
                    self.send_ack(a);
                }
            } else {
                let before = self.s.stats().timeouts;
                self.s.on_timer(t);
                if self.s.stats().timeouts > before {
                    self.record(Step::Rto);
                }
            }
            self.drain_sender();
            check(self);
        }
    }

    pub fn trace(&self) -> &[TraceEntry] { self.trace.as_deref().unwrap_or(&[]) }

    /// Segments sent, in order.
    pub fn sent(&self) -> Vec<(Time, Segment)> {
        self.trace().iter().filter_map(|e| if let Step::Sent(s) = e.step { Some((e.t, s)) } else { None }).collect()
    }
}

/// Conservation on both sides; panics with context.
pub(crate) fn check_conservation(net: &Net) {
    let s = &net.s;
    assert_eq!(
        s.bytes_sent(),
        s.bytes_delivered() + s.bytes_sacked() + s.bytes_in_flight() + s.bytes_lost(),
        "sender: sent = delivered + sacked + in flight + declared lost at {}",
        net.now
    );
    assert_eq!(s.bytes_sent(), net.r.bytes_received() + net.data_dropped + net.data_in_transit, "network: sent = received + dropped + in transit at {}", net.now);
    assert!(net.r.bytes_delivered() >= s.bytes_delivered(), "receiver is ahead of the sender's view");
    assert!(s.bytes_in_flight() >= Bytes::ZERO && s.bytes_lost() >= Bytes::ZERO && s.bytes_sacked() >= Bytes::ZERO);
    assert!(s.cwnd() >= s.mss(), "cwnd below one MSS");
}

fn bulk_cfg(sack: bool, delayed_ack: bool) -> TcpConfig { TcpConfig { sack, delayed_ack, ..TcpConfig::default() } }

/// 10 Mbit/s, 50 ms RTT, one BDP of drop-tail buffer (42 packets of 1500 B).
fn bulk_run(cfg: &TcpConfig, secs: i64) -> (Net, Vec<(i64, u64, bool)>) {
    let mut net = Net::new(cfg, Duration::from_ms(25)).with_bottleneck(Bitrate::from_kbps(10_000), 42);
    net.trace = None;
    let mut log = Vec::new();
    let mut last_sent = Bytes::ZERO;
    net.run(Time::from_ms(secs * 1000), |n| {
        check_conservation(n);
        if n.s.bytes_sent() != last_sent {
            last_sent = n.s.bytes_sent();
            log.push((n.now.as_us(), n.s.snd_nxt(), n.s.state() == CaState::Recovery));
        }
    });
    (net, log)
}

#[test]
fn closed_loop_bulk_flow_fills_the_bottleneck_and_is_deterministic() {
    for (sack, delack) in [(true, false), (false, false), (true, true), (false, true)] {
        let cfg = bulk_cfg(sack, delack);
        let (net, log) = bulk_run(&cfg, 30);
        let goodput = net.r.bytes_delivered() / Duration::from_secs(30);
        // Payload share of the link: 1448 of every 1500 bytes.
        let payload_capacity = Bitrate::from_kbps(10_000).scale(1448.0 / 1500.0);
        let util = goodput / payload_capacity;
        assert!(util > 0.85, "sack={sack} delack={delack}: utilisation {util:.3} ({goodput})");
        assert!(net.s.stats().fast_recoveries > 0, "a drop-tail bottleneck must cause losses");
        assert!(net.data_dropped > Bytes::ZERO);
        assert_eq!(net.s.stats().invalid_acks, 0);
        // Deterministic: a second run takes exactly the same steps.
        let (net2, log2) = bulk_run(&cfg, 30);
        assert_eq!(log, log2);
        assert_eq!(net.s.stats(), net2.s.stats());
        assert_eq!(net.r.bytes_delivered(), net2.r.bytes_delivered());
    }
}

#[test]
fn closed_loop_sack_needs_no_timeouts_in_steady_state() {
    let (net, _) = bulk_run(&bulk_cfg(true, false), 30);
    // Slow-start overshoot into a one-BDP buffer loses many segments in one window; SACK
    // recovery repairs them without a timeout.
    assert_eq!(net.s.stats().timeouts, 0, "{:?}", net.s.stats());
    // The window should saw-tooth around BDP + buffer (≈ 84 packets); the queue must not stay
    // empty: the flow spends most of its time in congestion avoidance.
    assert!(!net.s.in_slow_start());
}

#[test]
fn byte_limited_flow_completes_and_stops() {
    let cfg = TcpConfig { max_bytes: Some(1_000_000), ..TcpConfig::default() };
    let mut net = Net::new(&cfg, Duration::from_ms(25)).with_bottleneck(Bitrate::from_kbps(10_000), 42);
    net.run(Time::from_secs_f64(20.0), check_conservation);
    assert!(net.s.is_finished());
    assert_eq!(net.r.bytes_delivered(), Bytes::new(1_000_000));
    assert_eq!(net.s.bytes_delivered(), Bytes::new(1_000_000));
    assert_eq!(net.s.next_timer(), None, "no timer once everything is acknowledged");
    // The last segment is short: 1_000_000 = 690·1448 + 880.
    let last = net.sent().iter().map(|(_, s)| *s).rfind(|s| !s.is_retransmit).unwrap();
    assert_eq!((last.seq, last.len), (690 * 1448, Bytes::new(880)));
}

#[test]
fn rmcat_style_segments_and_delayed_acks_work() {
    // 1000-byte segments, ACK every second segment, 2 Mbit/s, 100 ms RTT, 300 ms of buffer.
    let cfg = TcpConfig { mss_bytes: 1000, delayed_ack: true, ..TcpConfig::default() };
    let mut net = Net::new(&cfg, Duration::from_ms(50)).with_bottleneck(Bitrate::from_kbps(2_000), 71);
    net.trace = None;
    net.run(Time::from_ms(30_000), check_conservation);
    let util = (net.r.bytes_delivered() / Duration::from_secs(30)) / Bitrate::from_kbps(2_000).scale(1000.0 / 1052.0);
    assert!(util > 0.85, "utilisation {util:.3}");
    assert!(net.r.acks_sent() * 3 < net.s.stats().segments_sent * 2, "delayed ACKs halve the ACK count");
}

/// A controller that behaves like NewReno and records what the sender tells it.
struct Spy {
    inner: NewReno,
    log: std::sync::Arc<std::sync::Mutex<Vec<AckSample>>>,
}
impl WindowCongestionControl for Spy {
    fn name(&self) -> &'static str { "spy" }
    fn on_ack(&mut self, s: &AckSample) {
        self.log.lock().unwrap().push(*s);
        self.inner.on_ack(s)
    }
    fn on_congestion_event(&mut self, ev: &CongestionEvent) { self.inner.on_congestion_event(ev) }
    fn on_rto(&mut self, ev: &RtoEvent) { self.inner.on_rto(ev) }
    fn on_recovery_exit(&mut self, now: Time) { self.inner.on_recovery_exit(now) }
    fn cwnd(&self) -> Bytes { self.inner.cwnd() }
    fn ssthresh(&self) -> Bytes { self.inner.ssthresh() }
}

#[test]
fn delivery_rate_samples_track_the_bottleneck() {
    let cfg = bulk_cfg(true, false);
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut net = Net::new(&cfg, Duration::from_ms(25)).with_bottleneck(Bitrate::from_kbps(10_000), 42);
    net.s = TcpSender::with_cc(&cfg, Box::new(Spy { inner: NewReno::new(cfg.mss(), 10), log: log.clone() }));
    net.trace = None;
    net.run(Time::from_ms(10_000), check_conservation);
    let log = log.lock().unwrap();
    let payload_capacity = Bitrate::from_kbps(10_000).scale(1448.0 / 1500.0);
    let rates: Vec<Bitrate> = log.iter().filter(|s| s.now > Time::from_ms(2_000)).filter_map(|s| s.rate).filter(|r| !r.is_app_limited).map(|r| r.delivery_rate).collect();
    assert!(rates.len() > 1000);
    let max = *rates.iter().max().unwrap();
    // Samples cannot beat the bottleneck by more than the rounding of one segment per interval.
    assert!(max / payload_capacity < 1.05, "max sample {max}");
    let mut sorted = rates.clone();
    sorted.sort();
    let median = sorted[sorted.len() / 2];
    assert!(median / payload_capacity > 0.8, "median sample {median}");
    // Every sample carries the sender's view, and delivered only grows.
    assert!(log.windows(2).all(|w| w[1].delivered >= w[0].delivered));
    assert!(log.iter().all(|s| s.rtt.is_none_or(|r| r >= Duration::from_ms(50))));
}

// ----- property tests -------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Chaos {
    seed: u64,
    data_loss: f64,
    ack_loss: f64,
    jitter_ms: i64,
    sack: bool,
    delayed_ack: bool,
    max_bytes: Option<u64>,
    cc: &'static str,
}

fn chaos_strategy() -> impl Strategy<Value = Chaos> {
    // Light loss (large windows, multi-hole SACK recoveries) as often as heavy loss (timeouts,
    // back-off); reordering as often as not.
    let loss = || prop_oneof![0.0..0.003f64, 0.0..0.2f64];
    (any::<u64>(), loss(), loss(), prop_oneof![Just(0i64), 0i64..30], any::<bool>(), any::<bool>(), prop::option::of(20_000u64..400_000), prop::sample::select(TCP_CC_NAMES))
        .prop_map(|(seed, data_loss, ack_loss, jitter_ms, sack, delayed_ack, max_bytes, cc)| Chaos { seed, data_loss, ack_loss, jitter_ms, sack, delayed_ack, max_bytes, cc })
}

fn run_chaos(c: &Chaos) {
    let cfg = TcpConfig { cc: c.cc.to_string(), sack: c.sack, delayed_ack: c.delayed_ack, max_bytes: c.max_bytes, mss_bytes: 1000, ..TcpConfig::default() };
    let mut net = Net::new(&cfg, Duration::from_ms(20)).with_bottleneck(Bitrate::from_kbps(4_000), 30);
    net.trace = None;
    let rng = std::rc::Rc::new(std::cell::RefCell::new(ChaCha8Rng::seed_from_u64(c.seed)));
    let (r1, r2, r3) = (rng.clone(), rng.clone(), rng);
    let (dl, al, jm) = (c.data_loss, c.ack_loss, c.jitter_ms);
    net.drop_data = Box::new(move |_, _| r1.borrow_mut().gen::<f64>() < dl);
    net.drop_ack = Box::new(move |_, _| r2.borrow_mut().gen::<f64>() < al);
    net.jitter = Box::new(move || if jm > 0 { Duration::from_us(r3.borrow_mut().gen_range(0..jm * 1000)) } else { Duration::ZERO });
    let mut last_una = 0u64;
    let t_end = if c.max_bytes.is_some() { Time::from_ms(3_000_000) } else { Time::from_ms(5_000) };
    net.run(t_end, |n| {
        check_conservation(n);
        assert!(n.s.snd_una() >= last_una, "cumulative ACK point went backwards");
        last_una = n.s.snd_una();
        assert!(n.s.snd_una() <= n.s.snd_nxt());
        if let Some(t) = n.s.next_timer() {
            assert!(t >= n.now, "timer in the past");
        }
    });
    if let Some(m) = c.max_bytes {
        assert!(net.s.is_finished(), "{c:?}: flow of {m} B did not finish; delivered {}", net.s.bytes_delivered());
        assert_eq!(net.r.bytes_delivered(), Bytes::new(m as i64));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn random_loss_and_reordering_keep_invariants(c in chaos_strategy()) {
        run_chaos(&c);
    }

    /// Every controller, byte-limited, under heavy loss and reordering: the flow finishes.
    #[test]
    fn every_controller_finishes_under_heavy_loss(seed in any::<u64>(), loss in 0.0..0.15f64, jitter_ms in 0i64..20, sack in any::<bool>()) {
        for cc in TCP_CC_NAMES {
            run_chaos(&Chaos { seed, data_loss: loss, ack_loss: loss / 2.0, jitter_ms, sack, delayed_ack: false, max_bytes: Some(60_000), cc });
        }
    }

    /// Arbitrary (even nonsensical) ACKs must not break the sender.
    #[test]
    fn arbitrary_acks_do_not_break_the_sender(
        sack in any::<bool>(),
        acks in prop::collection::vec((0u64..60, prop::collection::vec((0u64..60, 0u64..6), 0..4), any::<bool>(), 0i64..400), 1..200),
    ) {
        let cfg = TcpConfig { sack, mss_bytes: 1000, max_bytes: Some(50_000), ..TcpConfig::default() };
        let mut s = TcpSender::new(&cfg).unwrap();
        let mut now = Time::ZERO;
        while s.poll_transmit(now).is_some() {}
        let mut last_una = 0;
        for (cum_seg, blocks, with_ts, dt) in acks {
            now += Duration::from_ms(dt);
            let mut sb = SackBlocks::EMPTY;
            for (start, len) in blocks {
                sb.push(SackBlock { start: start * 1000 + 7 * (len % 2), end: (start + len) * 1000 });
            }
            let ack = Ack { cumulative: cum_seg * 1000, sack: sb, ts_echo: if with_ts { Some(now - Duration::from_ms(dt / 2)) } else { None }, wire_size: Bytes::new(52) };
            if s.next_timer().is_some_and(|t| t <= now) {
                s.on_timer(now);
            }
            s.on_ack(now, &ack);
            while s.poll_transmit(now).is_some() {}
            prop_assert!(s.cwnd() >= s.mss());
            prop_assert!(s.bytes_in_flight() >= Bytes::ZERO);
            prop_assert!(s.snd_una() >= last_una);
            last_una = s.snd_una();
            prop_assert_eq!(s.bytes_sent(), s.bytes_delivered() + s.bytes_sacked() + s.bytes_in_flight() + s.bytes_lost());
        }
    }
}



/// One event for a controller, with arbitrary (even inconsistent) values.
#[derive(Clone, Debug)]
enum CcEvent {
    Ack { dt_us: i64, acked: i64, rtt_us: Option<i64>, in_flight: i64, lost: i64, state: u8, limited: bool, rate: Option<(i64, i64, bool)> },
    Loss { flight: i64 },
    Rto { flight: i64, consecutive: u32 },
    Exit,
    Sent { bytes: i64 },
}

fn cc_event() -> impl Strategy<Value = CcEvent> {
    prop_oneof![
        8 => (0i64..200_000, 0i64..20_000, prop::option::of(0i64..2_000_000), 0i64..2_000_000, prop_oneof![Just(0i64), 0i64..5_000], 0u8..3, any::<bool>(),
              prop::option::of((0i64..1_000_000, 1i64..1_000_000, any::<bool>())))
            .prop_map(|(dt_us, acked, rtt_us, in_flight, lost, state, limited, rate)| CcEvent::Ack { dt_us, acked, rtt_us, in_flight, lost, state, limited, rate }),
        1 => (0i64..2_000_000).prop_map(|flight| CcEvent::Loss { flight }),
        1 => (0i64..2_000_000, 1u32..5).prop_map(|(flight, consecutive)| CcEvent::Rto { flight, consecutive }),
        1 => Just(CcEvent::Exit),
        2 => (0i64..2000).prop_map(|bytes| CcEvent::Sent { bytes }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// Any event sequence: no panic, the window stays within [1 SMSS, 2^46 B], the pacing rate
    /// (if any) finite and positive.
    #[test]
    fn controllers_stay_sane_on_arbitrary_events(events in prop::collection::vec(cc_event(), 1..300), seed in any::<u64>()) {
        let cfg = TcpConfig { hystart: seed % 2 == 0, ..TcpConfig::default() };
        for name in TCP_CC_NAMES {
            let mut cc = build_tcp_cc(name, &cfg, seed).unwrap();
            let (mut now, mut delivered, mut recovering) = (Time::ZERO, 0i64, false);
            for ev in &events {
                // The sender only reports a recovery exit after a congestion event.
                if matches!(ev, CcEvent::Exit) && !recovering {
                    continue;
                }
                match *ev {
                    CcEvent::Ack { dt_us, acked, rtt_us, in_flight, lost, state, limited, rate } => {
                        now += Duration::from_us(dt_us);
                        let prior = delivered;
                        delivered += acked;
                        let rtt = rtt_us.map(Duration::from_us);
                        cc.on_ack(&AckSample {
                            now,
                            newly_acked: Bytes::new(acked),
                            newly_cum_acked: Bytes::new(acked),
                            rtt,
                            srtt: rtt,
                            min_rtt: rtt,
                            prior_in_flight: Bytes::new(in_flight + acked),
                            in_flight: Bytes::new(in_flight),
                            delivered: Bytes::new(delivered),
                            state: [CaState::Open, CaState::Recovery, CaState::Loss][state as usize],
                            is_cwnd_limited: limited,
                            rate: rate.map(|(d, i, app)| RateSample {
                                delivered: Bytes::new(d),
                                interval: Duration::from_us(i),
                                delivery_rate: Bytes::new(d) / Duration::from_us(i),
                                is_app_limited: app,
                                prior_delivered: Bytes::new(prior - d / 2),
                            }),
                            newly_lost: Bytes::new(lost),
                        });
                    }
                    CcEvent::Loss { flight } => { recovering = true; cc.on_congestion_event(&CongestionEvent { now, flight_size: Bytes::new(flight), in_flight: Bytes::new(flight / 2), lost: Bytes::new(1448) }) }
                    CcEvent::Rto { flight, consecutive } => { let during_recovery = std::mem::take(&mut recovering); cc.on_rto(&RtoEvent { now, flight_size: Bytes::new(flight), consecutive, during_recovery }) }
                    CcEvent::Exit => { recovering = false; cc.on_recovery_exit(now) }
                    CcEvent::Sent { bytes } => cc.on_packet_sent(now, Bytes::new(bytes), Bytes::new(bytes)),
                }
                let w = cc.cwnd();
                prop_assert!(w >= cfg.mss() && w.get() <= 1 << 46, "{name}: cwnd {w} after {ev:?}");
                prop_assert!(cc.ssthresh() >= Bytes::ZERO, "{name}");
                if let Some(p) = cc.pacing_rate() {
                    prop_assert!(p.is_finite() && p.bps() > 0, "{name}: pacing {p}");
                }
            }
        }
    }
}
