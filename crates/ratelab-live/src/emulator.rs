//! The real-time link emulator: a userspace UDP relay (in the spirit of mahimahi) that applies
//! the simulator's link model — the core's [`Link`]: capacity schedule or trace, drop-tail
//! queue, random or bursty loss, trace loss/delay overlay — plus a propagation delay, in real
//! time, to each direction.
//!
//! Datagrams from the client (the first address that sends, or the configured one) go to
//! `forward`; datagrams from `forward` go back to the client. The model runs on event times
//! exactly as in the simulator (transmission ends, delivery times); the wall clock only decides
//! when a delivery is written to the socket, and how late that was is reported.

use crate::net::{self, LiveClock};
use crate::payload::IP_UDP_OVERHEAD;
use crate::{Quantiles, StopFlag};
use ratelab_core::network::capacity::CapacitySchedule;
use ratelab_core::network::link::{DropReason, Enqueued, Link, QueueLimit};
use ratelab_core::network::loss::LossModel;
use ratelab_core::network::packet::{Packet, Payload};
use ratelab_core::scenario::{validate_link, LinkConfig};
use ratelab_core::sim::build::{build_link, capacity_schedule, derive_seed};
use ratelab_core::sim::events::EventQueue;
use ratelab_core::{Bitrate, Bytes, Duration, Time};
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

#[derive(Clone, Debug, Default, Serialize)]
pub struct EmulatorStats {
    pub end_reason: String,
    pub client: Option<String>,
    pub forward_addr: String,
    pub foreign_datagrams: u64,
    pub forward: DirectionStats,
    pub reverse: DirectionStats,
    /// Mean forward capacity over the run (kbit/s).
    pub capacity_kbps_mean: f64,
    pub cpu_us: i64,
    /// Datagrams written to the capture file, and any error writing it.
    pub captured: u64,
    pub capture_error: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct EmulatorSeries {
    pub k: Vec<u64>,
    pub capacity_kbps: Vec<f64>,
    pub queue_ms: Vec<f64>,
}

pub struct EmulatorResult {
    pub stats: EmulatorStats,
    pub series: EmulatorSeries,
    /// The forward capacity schedule (for utilization against ground truth).
    pub capacity: CapacitySchedule,
}

struct Direction {
    link: Link,
    delay: Duration,
    stats: DirectionStats,
    queue_h: hdrhistogram::Histogram<u64>,
    delay_h: hdrhistogram::Histogram<u64>,
    late_h: hdrhistogram::Histogram<u64>,
    last_queue_delay: Duration,
}

impl Direction {
    fn new(link: Link, delay: Duration) -> Self {
        Direction { link, delay, stats: DirectionStats::default(), queue_h: net::us_histogram(), delay_h: net::us_histogram(), late_h: net::us_histogram(), last_queue_delay: Duration::ZERO }
    }
    fn finish(mut self) -> DirectionStats {
        let s = self.link.stats;
        self.stats.random_drops = s.random_drops;
        self.stats.queue_drops = s.queue_drops;
        self.stats.queue_delay_ms = Quantiles::of(&self.queue_h).scaled(1e-3);
        self.stats.delay_ms = Quantiles::of(&self.delay_h).scaled(1e-3);
        self.stats.send_late_us = Quantiles::of(&self.late_h);
        self.stats
    }
}

#[derive(Debug)]
enum Ev { LinkDone(usize), Deliver(usize, u64) }

/// Check one link section (`link` or `reverse_link`) and build its bottleneck; errors name
/// `section.<field>`.
fn link_for(section: &str, l: &LinkConfig, end: Time) -> Result<Link, String> {
    validate_link(section, l).map_err(|e| e.to_string())?;
    let capacity = capacity_schedule(l).map_err(|e| e.prefixed(section).to_string())?;
    build_link(l, capacity, end).map_err(|e| e.prefixed(section).to_string())
}

pub struct Emulator {
    sock: UdpSocket,
    forward: SocketAddr,
    client: Option<SocketAddr>,
    clock: LiveClock,
    dirs: [Direction; 2],
    capacity: CapacitySchedule,
    opts: EmulatorOptions,
    stop: StopFlag,
}

impl Emulator {
    /// Bind `listen` and build both directions' links. Trace files must already be read into
    /// `link.trace_content`.
    pub fn new(opts: EmulatorOptions, listen: SocketAddr, forward: SocketAddr, clock: LiveClock, stop: StopFlag) -> Result<Emulator, String> {
        let end = if opts.duration_s > 0.0 { Time::from_secs_f64(opts.duration_s) } else { Time::from_secs_f64(3600.0) };
        let fwd = link_for("link", &opts.link, end)?;
        let capacity = fwd.capacity().clone();
        let fwd_delay = Duration::from_ms_f64(opts.link.delay_ms + opts.forward_delay_ms);
        let rev = match &opts.reverse_link {
            Some(l) => link_for("reverse_link", l, end)?,
            None => Link::new(CapacitySchedule::constant(Bitrate::INFINITY), QueueLimit::Unlimited, LossModel::None, Time::ZERO),
        };
        let rev_delay = Duration::from_ms_f64(opts.reverse_delay_ms + opts.reverse_link.as_ref().map_or(0.0, |l| l.delay_ms));
        let client = match &opts.client { Some(c) => Some(net::resolve(c)?), None => None };
        let sock = net::bind(listen).map_err(|e| format!("cannot bind {listen}: {e}"))?;
        Ok(Emulator { sock, forward, client, clock, dirs: [Direction::new(fwd, fwd_delay), Direction::new(rev, rev_delay)], capacity, opts, stop })
    }

    pub fn local_addr(&self) -> Option<SocketAddr> { self.sock.local_addr().ok() }

    /// Set the forward address and the one client accepted (when both are known only after
    /// binding, as in `live run`).
    pub fn with_route(mut self, forward: SocketAddr, client: SocketAddr) -> Self {
        self.forward = forward;
        self.client = Some(client);
        self
    }

    pub fn run(mut self) -> EmulatorResult {
        net::precise_timers();
        let cpu0 = net::thread_cpu_us();
        let clock = self.clock;
        let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(self.opts.seed, 1));
        let mut events: EventQueue<Ev> = EventQueue::default();
        let mut held: HashMap<u64, (Vec<u8>, Time)> = HashMap::new();
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
                let d = if src == self.forward {
                    if self.client.is_none() { foreign += 1; continue; }
                    1
                } else {
                    if self.client.is_none() { self.client = Some(src); }
                    if self.client != Some(src) { foreign += 1; continue; }
                    0
                };
                let dir = &mut self.dirs[d];
                dir.stats.arrived_packets += 1;
                dir.stats.arrived_bytes += n as i64 + IP_UDP_OVERHEAD;
                if held.len() >= self.opts.max_held { dir.stats.overflow_drops += 1; continue; }
                let id = next_id;
                next_id += 1;
                let pkt = Packet { flow: d as u32, seq: id, size: Bytes::new(n as i64 + IP_UDP_OVERHEAD), send_time: ta, enqueue_time: ta, tx_start: ta, probe_cluster: None, payload: Payload::Padding };
                match dir.link.enqueue(ta, pkt, &mut rng) {
                    Enqueued::Accepted(start) => {
                        held.insert(id, (buf[..n].to_vec(), ta));
                        if let Some(e) = start { events.push(e, Ev::LinkDone(d)); }
                    }
                    Enqueued::Dropped(DropReason::Random | DropReason::QueueFull, _) => {}
                }
            }
            // Series (forward direction).
            let now = clock.now();
            while next_series <= now {
                series.k.push((next_series.as_us() / iv.as_us()) as u64);
                series.capacity_kbps.push(self.capacity.rate_at(next_series).kbps_f64());
                series.queue_ms.push(self.dirs[0].last_queue_delay.as_ms_f64());
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
        let [f, r] = self.dirs;
        let stats = EmulatorStats {
            end_reason: end_reason.into(),
            client: self.client.map(|c| c.to_string()),
            forward_addr: self.forward.to_string(),
            foreign_datagrams: foreign,
            forward: f.finish(),
            reverse: r.finish(),
            capacity_kbps_mean: self.capacity.mean_over(t0, stats_end.max(t0 + Duration::from_ms(1))).kbps_f64(),
            cpu_us: net::thread_cpu_us() - cpu0,
            captured,
            capture_error,
        };
        EmulatorResult { stats, series, capacity: self.capacity }
    }

    /// Run the link model up to `limit` (event times), writing deliveries that are due.
    fn process(&mut self, events: &mut EventQueue<Ev>, held: &mut HashMap<u64, (Vec<u8>, Time)>, rng: &mut ChaCha8Rng, limit: Time) {
        while let Some(t) = events.peek_time() {
            if t > limit { break; }
            let Some((t, ev)) = events.pop() else { break };
            match ev {
                Ev::LinkDone(d) => {
                    let dir = &mut self.dirs[d];
                    let Some((pkt, next)) = dir.link.complete(t) else { continue };
                    if let Some(e) = next { events.push(e, Ev::LinkDone(d)); }
                    // `link.loss_after_queue`: the datagram used its transmission time, then is lost.
                    if dir.link.drop_on_exit(t, rng) { held.remove(&pkt.seq); continue; }
                    let q = pkt.tx_start - pkt.enqueue_time;
                    dir.last_queue_delay = q;
                    let _ = dir.queue_h.record(q.as_us().max(1) as u64);
                    let exit = dir.link.exit_time(t);
                    events.push(exit + dir.delay, Ev::Deliver(d, pkt.seq));
                }
                Ev::Deliver(d, id) => {
                    let Some((bytes, arrived)) = held.remove(&id) else { continue };
                    let dest = if d == 0 { Some(self.forward) } else { self.client };
                    let dir = &mut self.dirs[d];
                    if let Some(dest) = dest {
                        if self.sock.send_to(&bytes, dest).is_err() { dir.stats.send_errors += 1; }
                    }
                    let wall = self.clock.now();
                    dir.stats.delivered_packets += 1;
                    dir.stats.delivered_bytes += bytes.len() as i64 + IP_UDP_OVERHEAD;
                    let _ = dir.delay_h.record((t - arrived).as_us().max(1) as u64);
                    let _ = dir.late_h.record((wall - t).as_us().max(1) as u64);
                }
            }
        }
    }
}
