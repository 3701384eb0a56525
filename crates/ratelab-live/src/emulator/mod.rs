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
//!
//! Timekeeping: the relay thread asks for real-time scheduling (`SCHED_FIFO`, when the process
//! may) so that a busy CPU (a browser encoding video) does not delay its wake-ups by whole
//! scheduler slices, sleeps in `ppoll` until the next due time (minus `spin_us`, then spins), and
//! does no allocation or I/O beyond the datagram itself on the delivery path.

mod record;
mod route;
mod stats;

pub use record::{rtp_header, Fate, LinkColumns, PacketColumns, Recorder};
pub use stats::{DirectionStats, EmulatorResult, EmulatorSeries, EmulatorStats, RouteStats};
use stats::Acc;

use crate::flags;
use crate::net::{self, LiveClock};
use crate::payload::IP_UDP_OVERHEAD;
use crate::StopFlag;
use ratelab_core::network::capacity::CapacitySchedule;
use ratelab_core::network::link::{DropReason, Enqueued, Link, QueueLimit};
use ratelab_core::network::loss::LossModel;
use ratelab_core::network::packet::{Packet, Payload};
use ratelab_core::scenario::{validate_link, Direction, LinkConfig, RouteChangeConfig};
use ratelab_core::sim::build::{build_link, capacity_schedule, derive_seed};
use ratelab_core::sim::events::EventQueue;
use ratelab_core::sim::summary::LinkRecord;
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
    /// Ask for real-time scheduling of the relay thread (granted or not: `stats.realtime`).
    pub realtime: bool,
    /// Wake this long before a due delivery and spin to it (µs; 0: trust the timer).
    pub spin_us: f64,
    /// Keep the link series in the result (`live run` joins it); off, memory stays flat however
    /// long the run (a [`Recorder`] still gets it).
    pub keep_series: bool,
    /// Route changes (the scenario's `[[route_changes]]`, without `flows`): see `route.rs`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub route_changes: Vec<RouteChangeConfig>,
    /// Align the links with the media: when the first RTP datagram of any route's sender
    /// arrives, every link's schedule (capacity steps or trace, trace overlay, `loss_start`) is
    /// moved so that this moment is `align_media_s` seconds into it. A browser's media start
    /// after ICE and DTLS (0.4-0.6 s through an emulated link), a simulated flow's at its
    /// `start_s`: aligned, both meet the same part of a trace. `None`: the links start with the
    /// emulator.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub align_media_s: Option<f64>,
}

impl Default for EmulatorOptions {
    fn default() -> Self {
        EmulatorOptions {
            link: LinkConfig { capacity_kbps: Some(1000.0), trace_format: "auto".into(), trace_scale: 1.0, trace_loop: true, mahimahi_bin_ms: 100.0, ..Default::default() },
            forward_delay_ms: 0.0, reverse_delay_ms: 0.0, reverse_link: None, duration_s: 0.0, seed: 1, client: None, max_held: 100_000, series_interval_ms: 25.0, capture: None,
            realtime: true, spin_us: 0.0, keep_series: true, route_changes: Vec::new(), align_media_s: None,
        }
    }
}

/// `ratelab emulate`'s flags, by the option path they set.
const EMULATE_FLAGS: &[(&str, &str)] = &[
    ("link.capacity_kbps", "--capacity-kbps"), ("link.loss", "--loss"), ("link.queue.ms", "--queue-ms"), ("link.queue.packets", "--queue-packets"),
];

impl EmulatorOptions {
    /// Every link section (`link`, `reverse_link`, each route change's), for front ends that
    /// read trace files into `trace_content`.
    pub fn links_mut(&mut self) -> impl Iterator<Item = &mut LinkConfig> {
        std::iter::once(&mut self.link).chain(self.reverse_link.as_mut()).chain(self.route_changes.iter_mut().map(|r| &mut r.link))
    }

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
        flags::check("spin_us", &flags::SPIN_US, self.spin_us)?;
        route::validate(&self.route_changes, self.reverse_link.is_some())?;
        if let Some(x) = self.align_media_s {
            flags::check("align_media_s", &flags::SECONDS_OR_ZERO, x)?;
            if !self.route_changes.is_empty() {
                return Err(ConfigError::new("align_media_s", "cannot be combined with route_changes (their times would move with the media)"));
            }
        }
        flags::check("series_interval_ms", flags::scenario("metrics.series_interval_ms"), self.series_interval_ms)
    }
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

/// A route as a front end gives it (the browser harness: one per media flow).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    /// `host:port` of the sender (default: the first unknown address that sends).
    pub sender: Option<String>,
    pub receiver: String,
    #[serde(default)]
    pub direction: Direction,
    /// Delay after the data bottleneck, ms (default: that link's `delay_ms`).
    pub data_delay_ms: Option<f64>,
    /// Delay after the return bottleneck, ms (default: that link's `delay_ms`, or
    /// `reverse_delay_ms` for a return path without a link).
    pub return_delay_ms: Option<f64>,
}

impl EmulatorOptions {
    /// `configs` as routes over these options' links; errors name `routes[i].<field>`.
    pub fn routes(&self, configs: &[RouteConfig]) -> Result<Vec<Route>, ConfigError> {
        if configs.is_empty() { return Err(ConfigError::new("routes", "give at least one route")); }
        let delay_of = |d: Direction| match (d, &self.reverse_link) {
            (Direction::Forward, _) => self.link.delay_ms + self.forward_delay_ms,
            (Direction::Reverse, Some(l)) => l.delay_ms + self.reverse_delay_ms,
            (Direction::Reverse, None) => self.reverse_delay_ms,
        };
        let limit = flags::scenario("flows[0].one_way_delay_ms");
        let addr = |f: String, s: &str| crate::net::resolve(s).map_err(|e| ConfigError::new(f, e));
        configs.iter().enumerate().map(|(i, c)| {
            let f = |name: &str| format!("routes[{i}].{name}");
            if c.direction == Direction::Reverse && self.reverse_link.is_none() {
                return Err(ConfigError::new(f("direction"), "a reverse route needs options.reverse_link"));
            }
            let data = c.data_delay_ms.unwrap_or_else(|| delay_of(c.direction));
            let ret = c.return_delay_ms.unwrap_or_else(|| delay_of(c.direction.other()));
            flags::check(&f("data_delay_ms"), limit, data)?;
            flags::check(&f("return_delay_ms"), limit, ret)?;
            Ok(Route {
                sender: c.sender.as_deref().map(|s| addr(f("sender"), s)).transpose()?,
                receiver: addr(f("receiver"), &c.receiver)?,
                direction: c.direction,
                data_delay: Duration::from_ms_f64(data),
                return_delay: Duration::from_ms_f64(ret),
            })
        }).collect()
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
struct Held { bytes: Vec<u8>, arrived: Time, route: usize, link: usize, queue: Duration }

#[derive(Debug)]
enum Ev { LinkDone(usize), Deliver(u64), Route(usize) }

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
    recorder: Option<Recorder>,
    routing: route::Routing,
    /// When the first media datagram arrived (`align_media_s`).
    media_start: Option<Time>,
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
        let changes = route::build(&opts.route_changes, end)?;
        let link_delay = [Duration::from_ms_f64(opts.link.delay_ms), Duration::from_ms_f64(opts.reverse_link.as_ref().map_or(0.0, |l| l.delay_ms))];
        let routing = route::Routing::new(changes, link_delay, [fwd.capacity().clone(), rev.capacity().clone()]);
        let sock = net::bind(listen).map_err(|e| format!("cannot bind {listen}: {e}"))?;
        let links = [fwd, rev].map(|link| Bottleneck { link, acc: Acc::new(), last_queue_delay: Duration::ZERO });
        Ok(Emulator { sock, clock, links, routes: Vec::new(), table: HashMap::new(), opts, stop, recorder: None, routing, media_start: None }.with_routes(vec![route]))
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

    /// Record each data-leg datagram's fate and the link series into `r` (the harness drains it).
    pub fn with_recorder(mut self, r: Recorder) -> Self { self.recorder = Some(r); self }

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
        let realtime = self.opts.realtime && net::realtime_priority();
        let spin = Duration::from_us(self.opts.spin_us as i64);
        let cpu0 = net::thread_cpu_us();
        let clock = self.clock;
        let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(self.opts.seed, 1));
        let mut events: EventQueue<Ev> = EventQueue::default();
        self.schedule_route_changes(&mut events);
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
                let id = next_id;
                next_id += 1;
                self.admit(ri, leg, id, &buf[..n], ta, &mut events, &mut held, &mut rng);
            }
            // Series (per link).
            let now = clock.now();
            while next_series <= now {
                if self.opts.keep_series { series.k.push((next_series.as_us() / iv.as_us()) as u64); }
                for (d, b) in self.links.iter().enumerate() {
                    let cap = b.link.capacity().rate_at(next_series).kbps_f64();
                    if self.opts.keep_series {
                        series.capacity_kbps[d].push(cap);
                        series.queue_ms[d].push(b.last_queue_delay.as_ms_f64());
                    }
                    if let Some(r) = &self.recorder { r.link(next_series.as_secs_f64(), d as u8, cap, b.link.queue_bytes().get(), b.last_queue_delay.as_ms_f64()); }
                }
                next_series += iv;
            }
            let mut deadline = next_series.min(now + Duration::from_ms(100));
            if let Some(t) = events.peek_time() { deadline = deadline.min(t); }
            if let Some(e) = end { deadline = deadline.min(e); }
            // Sleep to `spin` before the deadline, then poll the socket without sleeping.
            if deadline - now > spin { net::wait_readable(&self.sock, deadline - now - spin); }
        }
        let stats_end = clock.now();
        if let Some(r) = &self.recorder {
            let mut left: Vec<(&u64, &Held)> = held.iter().filter(|(_, h)| self.routes[h.route].leg(h.link) == 0).collect();
            left.sort_by_key(|(id, _)| **id);
            for (_, h) in left { r.packet(h.route, h.arrived.as_secs_f64(), h.bytes.len() as i64 + IP_UDP_OVERHEAD, f64::NAN, f64::NAN, Fate::InFlight, &h.bytes); }
        }
        let captured = match pcap.map(|w| w.finish()) {
            Some(Ok(n)) => n,
            Some(Err(e)) => { capture_error = Some(e.to_string()); 0 }
            None => 0,
        };
        let forward = LinkRecord { capacity: &self.routing.capacities[0][0].1, route_changes: &self.routing.capacities[0][1..], stats: self.links[0].link.stats };
        let from = self.media_start.unwrap_or(t0);
        let capacity_kbps_mean = forward.mean_capacity(from, stats_end.max(from + Duration::from_ms(1))).kbps_f64();
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
            media_start_s: self.media_start.map(|t| t.as_secs_f64()),
            cpu_us: net::thread_cpu_us() - cpu0,
            realtime,
            captured,
            capture_error,
        };
        EmulatorResult { stats, series, link_stats }
    }

    /// A datagram of route `ri`'s leg `leg` (0: data, 1: feedback) arrives at `ta`: it enters
    /// the link it crosses, or is dropped (held-datagram limit, loss, full queue).
    #[allow(clippy::too_many_arguments)]
    fn admit(&mut self, ri: usize, leg: usize, id: u64, bytes: &[u8], ta: Time, events: &mut EventQueue<Ev>, held: &mut HashMap<u64, Held>, rng: &mut ChaCha8Rng) {
        if leg == 0 && self.media_start.is_none() && self.opts.align_media_s.is_some() && rtp_header(bytes).is_some() {
            self.align_links(ta);
        }
        let dir = self.routes[ri].route.direction;
        let d = if leg == 0 { dir.index() } else { dir.other().index() };
        let size = bytes.len() as i64 + IP_UDP_OVERHEAD;
        self.links[d].acc.arrived(size);
        self.routes[ri].legs[leg].arrived(size);
        if held.len() >= self.opts.max_held {
            self.links[d].acc.stats.overflow_drops += 1;
            self.routes[ri].legs[leg].stats.overflow_drops += 1;
            if let (Some(r), 0) = (&self.recorder, leg) { r.packet(ri, ta.as_secs_f64(), size, f64::NAN, f64::NAN, Fate::Overflow, bytes); }
            return;
        }
        let pkt = Packet { flow: ri as u32, seq: id, size: Bytes::new(size), send_time: ta, enqueue_time: ta, tx_start: ta, probe_cluster: None, payload: Payload::Padding };
        match self.links[d].link.enqueue(ta, pkt, rng) {
            Enqueued::Accepted(start) => {
                held.insert(id, Held { bytes: bytes.to_vec(), arrived: ta, route: ri, link: d, queue: Duration::ZERO });
                if let Some(e) = start { events.push(e, Ev::LinkDone(d)); }
            }
            Enqueued::Dropped(reason, _) => {
                let random = reason == DropReason::Random;
                self.routes[ri].legs[leg].dropped(random);
                if let (Some(r), 0) = (&self.recorder, leg) {
                    r.packet(ri, ta.as_secs_f64(), size, f64::NAN, f64::NAN, if random { Fate::Random } else { Fate::Queue }, bytes);
                }
            }
        }
    }

    /// The first media datagram arrived at `t`: move every link's time 0 so that `t` is
    /// `align_media_s` into its schedule (the summary's capacity counts from here).
    fn align_links(&mut self, t: Time) {
        let into = Duration::from_secs_f64(self.opts.align_media_s.unwrap_or(0.0));
        let origin = t - into;
        for (d, b) in self.links.iter_mut().enumerate() {
            b.link.shift_origin(origin);
            self.routing.capacities[d].push((t, b.link.capacity().clone()));
        }
        self.media_start = Some(t);
        if let Some(r) = &self.recorder { r.media_started(t.as_secs_f64()); }
    }

    /// Run the link model up to `limit` (event times), writing deliveries that are due.
    fn process(&mut self, events: &mut EventQueue<Ev>, held: &mut HashMap<u64, Held>, rng: &mut ChaCha8Rng, limit: Time) {
        while let Some(t) = events.peek_time() {
            if t > limit { break; }
            let Some((t, ev)) = events.pop() else { break };
            match ev {
                Ev::Route(i) => self.on_route_change(i, t, held),
                Ev::LinkDone(d) => {
                    let b = &mut self.links[d];
                    // A route change may have dropped the datagram this event was for.
                    if b.link.service_end() != Some(t) { continue; }
                    let Some((pkt, next)) = b.link.complete(t) else { continue };
                    if let Some(e) = next { events.push(e, Ev::LinkDone(d)); }
                    let q = pkt.tx_start - pkt.enqueue_time;
                    b.last_queue_delay = q;
                    let r = &mut self.routes[pkt.flow as usize];
                    let leg = r.leg(d);
                    // `link.loss_after_queue`: the datagram used its transmission time, then is lost.
                    if b.link.drop_on_exit(t, rng) {
                        let h = held.remove(&pkt.seq);
                        r.legs[leg].dropped(true);
                        if let (Some(rec), Some(h), 0) = (&self.recorder, h, leg) {
                            rec.packet(h.route, h.arrived.as_secs_f64(), pkt.size.get(), q.as_ms_f64(), f64::NAN, Fate::Random, &h.bytes);
                        }
                        continue;
                    }
                    if let Some(h) = held.get_mut(&pkt.seq) { h.queue = q; }
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
                    if let (Some(rec), 0) = (&self.recorder, leg) {
                        rec.packet(h.route, h.arrived.as_secs_f64(), size, h.queue.as_ms_f64(), t.as_secs_f64(), Fate::Delivered, &h.bytes);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A 1 Mbit/s link that becomes 4 Mbit/s at 1 s of its schedule; `align`: `align_media_s`.
    fn emulator(align: Option<f64>) -> (Emulator, Recorder, UdpSocket) {
        let mut opts: EmulatorOptions = serde_json::from_value(serde_json::json!({
            "link": {"steps": [[0.0, 1000.0], [1.0, 4000.0]], "delay_ms": 10},
        })).unwrap();
        opts.align_media_s = align;
        opts.validate().unwrap();
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let cfg = RouteConfig { sender: Some("127.0.0.1:9".into()), receiver: rx.local_addr().unwrap().to_string(), direction: Default::default(), data_delay_ms: None, return_delay_ms: None };
        let routes = opts.routes(&[cfg]).unwrap();
        let rec = Recorder::new(100);
        let emu = Emulator::new(opts, "127.0.0.1:0".parse().unwrap(), routes[0].receiver, LiveClock::new(), StopFlag::new()).unwrap().with_routes(routes).with_recorder(rec.clone());
        (emu, rec, rx)
    }

    /// Datagrams `(ms, first byte)` of the route's sender; the forward capacity (kbit/s) at each of `at_ms`.
    fn capacities(align: Option<f64>, sent: &[(i64, u8)], at_ms: &[i64]) -> (Vec<f64>, Option<Time>, Option<f64>) {
        let (mut emu, rec, _rx) = emulator(align);
        let (mut events, mut held, mut rng) = (EventQueue::default(), HashMap::new(), ChaCha8Rng::seed_from_u64(1));
        for (i, &(ms, first)) in sent.iter().enumerate() {
            let mut d = [0u8; 200];
            d[0] = first;
            d[1] = 96; // RTP payload type 96 when `first` says version 2
            emu.admit(0, 0, i as u64, &d, Time::from_ms(ms), &mut events, &mut held, &mut rng);
        }
        let caps = at_ms.iter().map(|&t| emu.links[0].link.capacity().rate_at(Time::from_ms(t)).kbps_f64()).collect();
        (caps, emu.media_start, rec.media_start_s())
    }

    #[test]
    fn aligned_links_start_their_schedule_at_the_first_media_datagram() {
        // DTLS (22) at 300 ms and STUN (0) at 500 ms leave the schedule alone; RTP (0x80) at 800 ms
        // starts it: its 1 s step comes at 1.8 s instead of 1 s.
        let sent = [(300, 22), (500, 0), (800, 0x80), (900, 0x80)];
        let (caps, start, recorded) = capacities(Some(0.0), &sent, &[500, 1500, 1799, 1800]);
        assert_eq!(caps, vec![1000.0, 1000.0, 1000.0, 4000.0]);
        assert_eq!((start, recorded), (Some(Time::from_ms(800)), Some(0.8)));
        // Aligned 0.25 s into the schedule: the step at 0.8 + 0.75 s.
        let (caps, _, _) = capacities(Some(0.25), &sent, &[1549, 1550]);
        assert_eq!(caps, vec![1000.0, 4000.0]);
        // Not aligned: the schedule counts from the emulator's start.
        let (caps, start, recorded) = capacities(None, &sent, &[999, 1000, 1500]);
        assert_eq!((caps, start, recorded), (vec![1000.0, 4000.0, 4000.0], None, None));
    }

    #[test]
    fn alignment_refuses_route_changes_and_negative_offsets() {
        let mut opts: EmulatorOptions = serde_json::from_value(serde_json::json!({
            "route_changes": [{"at_s": 1.0, "link": {"capacity_kbps": 4000}}],
        })).unwrap();
        opts.align_media_s = Some(0.0);
        assert_eq!(opts.validate().unwrap_err().field, "align_media_s");
        let opts = EmulatorOptions { align_media_s: Some(-1.0), ..Default::default() };
        assert_eq!(opts.validate().unwrap_err().field, "align_media_s");
    }
}
