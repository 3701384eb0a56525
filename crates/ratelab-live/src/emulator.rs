//! The real-time link emulator: a userspace UDP relay (in the spirit of mahimahi) that applies
//! the simulator's link model — the core's [`Link`]: capacity schedule or trace, drop-tail
//! queue, random or bursty loss, trace loss/delay overlay — plus a propagation delay, in real
//! time, to each direction.
//!
//! It relays one or more [`Route`]s, each a sender and its receiver, told apart by the source
//! address of a datagram: from a route's sender it crosses the link of the route's direction
//! (forward: `link`; reverse: `reverse_link`) and goes to its receiver after the route's data
//! delay; from its receiver (feedback) it crosses the other link and goes back to the sender
//! after the route's return delay — the simulator's two-direction semantics (`sim/mod.rs`).
//! Standalone (`ratelab emulate`) there is one route: the client (the first address that sends,
//! or the configured one) to `forward`. The model runs on event times exactly as in the
//! simulator (transmission ends, delivery times); the wall clock only decides when a delivery
//! is written to the socket, and how late that was is reported.

use crate::flags;
use crate::net::{self, LiveClock};
use crate::payload::IP_UDP_OVERHEAD;
use crate::{Quantiles, StopFlag};
use ratelab_core::network::capacity::CapacitySchedule;
use ratelab_core::network::link::{Enqueued, Link, LinkStats, QueueLimit};
use ratelab_core::network::loss::LossModel;
use ratelab_core::network::packet::{Packet, Payload};
use ratelab_core::scenario::{validate_link, Direction, LinkConfig};
use ratelab_core::sim::build::{build_link, capacity_schedule, derive_seed};
use ratelab_core::sim::events::EventQueue;
use ratelab_core::{Bitrate, Bytes, ConfigError, Duration, Time};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmulatorOptions {
    /// The forward (client → forward address) bottleneck, in the scenario's `link` schema.
    pub link: LinkConfig,
    /// Propagation delay after the forward bottleneck, on top of `link.delay_ms` (ms).
    pub forward_delay_ms: f64,
    /// Delay of the reverse direction (ms).
    pub reverse_delay_ms: f64,
    /// A bottleneck for the reverse direction too (default: none, only the delay).
    pub reverse_link: Option<LinkConfig>,
    /// Stop after this many seconds (0: until stopped).
    pub duration_s: f64,
    pub seed: u64,
    /// The only client address accepted (default: the first address that sends).
    pub client: Option<String>,
    /// Most datagrams held at once (queued or propagating), against unbounded memory.
    pub max_held: usize,
    pub series_interval_ms: f64,
    /// Write every datagram the emulator receives (both directions) to this pcap file.
    pub capture: Option<String>,
}

impl Default for EmulatorOptions {
    fn default() -> Self {
        EmulatorOptions {
            link: LinkConfig { capacity_kbps: Some(1000.0), trace_format: "auto".into(), trace_scale: 1.0, trace_loop: true, mahimahi_bin_ms: 100.0, ..Default::default() },
            forward_delay_ms: 0.0, reverse_delay_ms: 0.0, reverse_link: None, duration_s: 0.0, seed: 1, client: None, max_held: 100_000, series_interval_ms: 25.0, capture: None,
        }
    }
}

/// `ratelab emulate`'s flags, by the option path they set.
const EMULATE_FLAGS: &[(&str, &str)] = &[
    ("link.capacity_kbps", "--capacity-kbps"), ("link.loss", "--loss"), ("link.queue.ms", "--queue-ms"), ("link.queue.packets", "--queue-packets"),
];

impl EmulatorOptions {
    /// Every number against its declared range (`flags`): the links as a scenario's, the delays
    /// as a flow's one-way delay; errors name `ratelab emulate`'s flag where there is one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        flags::check_part("link", &self.link, EMULATE_FLAGS)?;
        if let Some(l) = &self.reverse_link { flags::check_part("reverse_link", l, &[])?; }
        let delay = flags::scenario("flows[0].one_way_delay_ms");
        flags::check("--delay-ms", delay, self.forward_delay_ms)?;
        flags::check("--reverse-delay-ms", delay, self.reverse_delay_ms)?;
        flags::check("--duration", &flags::SECONDS_OR_ZERO, self.duration_s)?;
        flags::check("max_held", &flags::MAX_HELD, self.max_held as f64)?;
        flags::check("series_interval_ms", flags::scenario("metrics.series_interval_ms"), self.series_interval_ms)
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct DirectionStats {
    pub arrived_packets: u64,
    pub arrived_bytes: i64,
    pub random_drops: u64,
    pub queue_drops: u64,
    /// Dropped because `max_held` datagrams were already held.
    pub overflow_drops: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: i64,
    /// Waiting time in the bottleneck queue (tx start − arrival), ms: the simulator's queuing delay.
    pub queue_delay_ms: Quantiles,
    /// Arrival to delivery (queue + transmission + propagation), ms.
    pub delay_ms: Quantiles,
    /// How late deliveries were written to the socket (wall clock − model time), µs.
    pub send_late_us: Quantiles,
    pub send_errors: u64,
}

/// One sender → receiver path through the emulator.
#[derive(Clone, Debug)]
pub struct Route {
    /// The sender's address (`None`: the first address that sends and is nobody's receiver).
    pub sender: Option<SocketAddr>,
    pub receiver: SocketAddr,
    /// The link the data crosses; the receiver's packets (feedback) cross the other one.
    pub direction: Direction,
    /// Delay after the data bottleneck (that link's delay + the flow's propagation).
    pub data_delay: Duration,
    /// Delay after the return bottleneck (or of the whole return path when it has none).
    pub return_delay: Duration,
}

/// What one route's two legs carried.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RouteStats {
    pub sender: Option<String>,
    pub receiver: String,
    pub direction: Direction,
    /// Sender → receiver (over the link of `direction`).
    pub data: DirectionStats,
    /// Receiver → sender (over the other link).
    pub feedback: DirectionStats,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct EmulatorStats {
    pub end_reason: String,
    /// The first route's sender (the standalone emulator's client).
    pub client: Option<String>,
    /// The first route's receiver.
    pub forward_addr: String,
    pub foreign_datagrams: u64,
    /// Everything that crossed the forward link (`link`), all routes together.
    pub forward: DirectionStats,
    /// Everything that crossed the reverse link (`reverse_link`, or the delay-only return path).
    pub reverse: DirectionStats,
    /// Per route, in the order given.
    pub routes: Vec<RouteStats>,
    /// Mean forward capacity over the run (kbit/s).
    pub capacity_kbps_mean: f64,
    pub cpu_us: i64,
    /// Datagrams written to the capture file, and any error writing it.
    pub captured: u64,
    pub capture_error: Option<String>,
}

/// Time series on the grid `k × interval`, per link (`[forward, reverse]`).
#[derive(Clone, Debug, Default)]
pub struct EmulatorSeries {
    pub k: Vec<u64>,
    pub capacity_kbps: [Vec<f64>; 2],
    /// Queuing delay of the latest packet to leave the bottleneck (ms), as the simulator's series.
    pub queue_ms: [Vec<f64>; 2],
}

pub struct EmulatorResult {
    pub stats: EmulatorStats,
    pub series: EmulatorSeries,
    /// The core link counters of `[forward, reverse]`, as the simulator's links keep them.
    pub link_stats: [LinkStats; 2],
}

/// Counters and histograms of one link or one route leg.
struct Acc {
    stats: DirectionStats,
    queue_h: hdrhistogram::Histogram<u64>,
    delay_h: hdrhistogram::Histogram<u64>,
    late_h: hdrhistogram::Histogram<u64>,
}

impl Acc {
    fn new() -> Self { Acc { stats: DirectionStats::default(), queue_h: net::us_histogram(), delay_h: net::us_histogram(), late_h: net::us_histogram() } }
    fn finish(mut self) -> DirectionStats {
        self.stats.queue_delay_ms = Quantiles::of(&self.queue_h).scaled(1e-3);
        self.stats.delay_ms = Quantiles::of(&self.delay_h).scaled(1e-3);
        self.stats.send_late_us = Quantiles::of(&self.late_h);
        self.stats
    }
    fn arrived(&mut self, bytes: i64) { self.stats.arrived_packets += 1; self.stats.arrived_bytes += bytes; }
    fn dropped(&mut self, random: bool) { if random { self.stats.random_drops += 1 } else { self.stats.queue_drops += 1 } }
    fn left_queue(&mut self, q: Duration) { let _ = self.queue_h.record(q.as_us().max(1) as u64); }
    fn delivered(&mut self, bytes: i64, delay: Duration, late: Duration, ok: bool) {
        self.stats.delivered_packets += 1;
        self.stats.delivered_bytes += bytes;
        if !ok { self.stats.send_errors += 1; }
        let _ = self.delay_h.record(delay.as_us().max(1) as u64);
        let _ = self.late_h.record(late.as_us().max(1) as u64);
    }
}

struct Bottleneck {
    link: Link,
    acc: Acc,
    last_queue_delay: Duration,
}

struct RouteState {
    route: Route,
    /// `[data, feedback]`.
    legs: [Acc; 2],
}

impl RouteState {
    fn new(route: Route) -> Self { RouteState { route, legs: [Acc::new(), Acc::new()] } }
    /// Which leg crosses link `d`: 0 (data) or 1 (feedback).
    fn leg(&self, d: usize) -> usize { usize::from(d != self.route.direction.index()) }
}

/// A datagram in the emulator: its bytes, when it arrived, its route and the link it crosses.
struct Held { bytes: Vec<u8>, arrived: Time, route: usize, link: usize }

#[derive(Debug)]
enum Ev { LinkDone(usize), Deliver(u64) }

/// Check one link section (`link` or `reverse_link`) and build its bottleneck; errors name
/// `section.<field>`.
fn link_for(section: &str, l: &LinkConfig, end: Time) -> Result<Link, String> {
    validate_link(section, l).map_err(|e| e.to_string())?;
    let capacity = capacity_schedule(l).map_err(|e| e.prefixed(section).to_string())?;
    build_link(l, capacity, end).map_err(|e| e.prefixed(section).to_string())
}

pub struct Emulator {
    sock: UdpSocket,
    clock: LiveClock,
    links: [Bottleneck; 2],
    routes: Vec<RouteState>,
    /// Source address → (route, leg).
    table: HashMap<SocketAddr, (usize, usize)>,
    opts: EmulatorOptions,
    stop: StopFlag,
}

impl Emulator {
    /// Bind `listen` and build both directions' links, with one route: the client (the
    /// configured `opts.client`, else the first address that sends) to `forward`, data delay
    /// `link.delay_ms + forward_delay_ms`, return delay `reverse_delay_ms` (+ the reverse link's
    /// `delay_ms`). Trace files must already be read into `link.trace_content`.
    pub fn new(opts: EmulatorOptions, listen: SocketAddr, forward: SocketAddr, clock: LiveClock, stop: StopFlag) -> Result<Emulator, String> {
        opts.validate().map_err(|e| e.to_string())?;
        let end = if opts.duration_s > 0.0 { Time::from_secs_f64(opts.duration_s) } else { Time::from_secs_f64(3600.0) };
        let fwd = link_for("link", &opts.link, end)?;
        let rev = match &opts.reverse_link {
            Some(l) => link_for("reverse_link", l, end)?,
            None => Link::new(CapacitySchedule::constant(Bitrate::INFINITY), QueueLimit::Unlimited, LossModel::None, Time::ZERO),
        };
        let client = match &opts.client { Some(c) => Some(net::resolve(c)?), None => None };
        let route = Route {
            sender: client, receiver: forward, direction: Direction::Forward,
            data_delay: Duration::from_ms_f64(opts.link.delay_ms + opts.forward_delay_ms),
            return_delay: Duration::from_ms_f64(opts.reverse_delay_ms + opts.reverse_link.as_ref().map_or(0.0, |l| l.delay_ms)),
        };
        let sock = net::bind(listen).map_err(|e| format!("cannot bind {listen}: {e}"))?;
        let links = [fwd, rev].map(|link| Bottleneck { link, acc: Acc::new(), last_queue_delay: Duration::ZERO });
        Ok(Emulator { sock, clock, links, routes: Vec::new(), table: HashMap::new(), opts, stop }.with_routes(vec![route]))
    }

    pub fn local_addr(&self) -> Option<SocketAddr> { self.sock.local_addr().ok() }

    /// Relay these routes instead (`live run`: one per flow, known only after binding). A
    /// reverse route needs the `reverse_link` the caller configured.
    pub fn with_routes(mut self, routes: Vec<Route>) -> Self {
        self.table.clear();
        for (i, r) in routes.iter().enumerate() {
            if let Some(s) = r.sender { self.table.insert(s, (i, 0)); }
            self.table.insert(r.receiver, (i, 1));
        }
        self.routes = routes.into_iter().map(RouteState::new).collect();
        self
    }

    /// The route and leg of a datagram from `src`: a route's sender (leg 0) or receiver (leg 1);
    /// an unknown address becomes the sender of the first route that has none yet.
    fn classify(&mut self, src: SocketAddr) -> Option<(usize, usize)> {
        if let Some(&x) = self.table.get(&src) { return Some(x); }
        let i = self.routes.iter().position(|r| r.route.sender.is_none())?;
        self.routes[i].route.sender = Some(src);
        self.table.insert(src, (i, 0));
        Some((i, 0))
    }

    pub fn run(mut self) -> EmulatorResult {
        net::precise_timers();
        let cpu0 = net::thread_cpu_us();
        let clock = self.clock;
        let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(self.opts.seed, 1));
        let mut events: EventQueue<Ev> = EventQueue::default();
        let mut held: HashMap<u64, Held> = HashMap::new();
        let mut next_id = 0u64;
        let mut foreign = 0u64;
        let mut buf = vec![0u8; 65_536];
        let iv = Duration::from_ms_f64(self.opts.series_interval_ms.max(1.0));
        let t0 = clock.now();
        let mut next_series = Time::from_us((t0.as_us() / iv.as_us() + 1) * iv.as_us());
        let mut series = EmulatorSeries::default();
        let end = (self.opts.duration_s > 0.0).then(|| t0 + Duration::from_secs_f64(self.opts.duration_s));
        let end_reason;
        let listen = self.sock.local_addr().ok();
        let mut capture_error = None;
        let mut pcap = match self.opts.capture.as_deref().map(crate::pcap::PcapWriter::create) {
            Some(Ok(w)) => Some(w),
            Some(Err(e)) => { capture_error = Some(e.to_string()); None }
            None => None,
        };

        loop {
            let now = clock.now();
            if self.stop.is_raised() { end_reason = "stopped"; break; }
            if end.is_some_and(|e| now >= e) { end_reason = "duration"; break; }
            self.process(&mut events, &mut held, &mut rng, now);
            // Arrivals.
            loop {
                let (n, src) = match self.sock.recv_from(&mut buf) {
                    Ok(x) => x,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(_) => break,
                };
                let ta = clock.now();
                if let (Some(w), Some(dst)) = (pcap.as_mut(), listen) {
                    if let Err(e) = w.write(clock.unix_us(ta), src, dst, &buf[..n]) { capture_error = Some(e.to_string()); pcap = None; }
                }
                self.process(&mut events, &mut held, &mut rng, ta);
                let Some((ri, leg)) = self.classify(src) else { foreign += 1; continue };
                // A receiver talking before its sender is known has nobody to reach.
                if leg == 1 && self.routes[ri].route.sender.is_none() { foreign += 1; continue; }
                let dir = self.routes[ri].route.direction;
                let d = if leg == 0 { dir.index() } else { dir.other().index() };
                let size = n as i64 + IP_UDP_OVERHEAD;
                self.links[d].acc.arrived(size);
                self.routes[ri].legs[leg].arrived(size);
                if held.len() >= self.opts.max_held {
                    self.links[d].acc.stats.overflow_drops += 1;
                    self.routes[ri].legs[leg].stats.overflow_drops += 1;
                    continue;
                }
                let id = next_id;
                next_id += 1;
                let pkt = Packet { flow: ri as u32, seq: id, size: Bytes::new(size), send_time: ta, enqueue_time: ta, tx_start: ta, probe_cluster: None, payload: Payload::Padding };
                match self.links[d].link.enqueue(ta, pkt, &mut rng) {
                    Enqueued::Accepted(start) => {
                        held.insert(id, Held { bytes: buf[..n].to_vec(), arrived: ta, route: ri, link: d });
                        if let Some(e) = start { events.push(e, Ev::LinkDone(d)); }
                    }
                    Enqueued::Dropped(reason, _) => self.routes[ri].legs[leg].dropped(reason == ratelab_core::network::link::DropReason::Random),
                }
            }
            // Series (per link).
            let now = clock.now();
            while next_series <= now {
                series.k.push((next_series.as_us() / iv.as_us()) as u64);
                for (d, b) in self.links.iter().enumerate() {
                    series.capacity_kbps[d].push(b.link.capacity().rate_at(next_series).kbps_f64());
                    series.queue_ms[d].push(b.last_queue_delay.as_ms_f64());
                }
                next_series += iv;
            }
            let mut deadline = next_series.min(now + Duration::from_ms(100));
            if let Some(t) = events.peek_time() { deadline = deadline.min(t); }
            if let Some(e) = end { deadline = deadline.min(e); }
            if deadline > now { net::wait_readable(&self.sock, deadline - now); }
        }
        let stats_end = clock.now();
        let captured = match pcap.map(|w| w.finish()) {
            Some(Ok(n)) => n,
            Some(Err(e)) => { capture_error = Some(e.to_string()); 0 }
            None => 0,
        };
        let capacity_kbps_mean = self.links[0].link.capacity().mean_over(t0, stats_end.max(t0 + Duration::from_ms(1))).kbps_f64();
        let first = self.routes.first().map(|r| r.route.clone());
        let routes = self.routes.into_iter().map(|r| {
            let [data, feedback] = r.legs;
            RouteStats { sender: r.route.sender.map(|a| a.to_string()), receiver: r.route.receiver.to_string(), direction: r.route.direction, data: data.finish(), feedback: feedback.finish() }
        }).collect();
        let link_stats = [self.links[0].link.stats, self.links[1].link.stats];
        let [f, r] = self.links.map(|b| {
            let mut s = b.acc.finish();
            s.random_drops = b.link.stats.random_drops;
            s.queue_drops = b.link.stats.queue_drops;
            s
        });
        let stats = EmulatorStats {
            end_reason: end_reason.into(),
            client: first.as_ref().and_then(|r| r.sender).map(|c| c.to_string()),
            forward_addr: first.map_or(String::new(), |r| r.receiver.to_string()),
            foreign_datagrams: foreign,
            forward: f,
            reverse: r,
            routes,
            capacity_kbps_mean,
            cpu_us: net::thread_cpu_us() - cpu0,
            captured,
            capture_error,
        };
        EmulatorResult { stats, series, link_stats }
    }

    /// Run the link model up to `limit` (event times), writing deliveries that are due.
    fn process(&mut self, events: &mut EventQueue<Ev>, held: &mut HashMap<u64, Held>, rng: &mut ChaCha8Rng, limit: Time) {
        while let Some(t) = events.peek_time() {
            if t > limit { break; }
            let Some((t, ev)) = events.pop() else { break };
            match ev {
                Ev::LinkDone(d) => {
                    let b = &mut self.links[d];
                    let Some((pkt, next)) = b.link.complete(t) else { continue };
                    if let Some(e) = next { events.push(e, Ev::LinkDone(d)); }
                    let q = pkt.tx_start - pkt.enqueue_time;
                    b.last_queue_delay = q;
                    let r = &mut self.routes[pkt.flow as usize];
                    let leg = r.leg(d);
                    // `link.loss_after_queue`: the datagram used its transmission time, then is lost.
                    if b.link.drop_on_exit(t, rng) { held.remove(&pkt.seq); r.legs[leg].dropped(true); continue; }
                    b.acc.left_queue(q);
                    r.legs[leg].left_queue(q);
                    let exit = b.link.exit_time(t);
                    let delay = if leg == 0 { r.route.data_delay } else { r.route.return_delay };
                    events.push(exit + delay, Ev::Deliver(pkt.seq));
                }
                Ev::Deliver(id) => {
                    let Some(h) = held.remove(&id) else { continue };
                    let r = &mut self.routes[h.route];
                    let leg = r.leg(h.link);
                    let dest = if leg == 0 { Some(r.route.receiver) } else { r.route.sender };
                    let ok = dest.is_none_or(|dest| self.sock.send_to(&h.bytes, dest).is_ok());
                    let wall = self.clock.now();
                    let size = h.bytes.len() as i64 + IP_UDP_OVERHEAD;
                    self.links[h.link].acc.delivered(size, t - h.arrived, wall - t, ok);
                    r.legs[leg].delivered(size, t - h.arrived, wall - t, ok);
                }
            }
        }
    }
}
