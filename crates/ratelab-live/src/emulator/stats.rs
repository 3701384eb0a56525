//! What the emulator counts: per link and per route leg, counters and delay histograms, and
//! the summary `ratelab emulate` writes as `emulator.json`.

use crate::net;
use crate::Quantiles;
use ratelab_core::network::link::LinkStats;
use ratelab_core::scenario::Direction;
use ratelab_core::Duration;
use serde::Serialize;

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
    /// When the first media datagram arrived, s since start (`align_media_s`; else none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media_start_s: Option<f64>,
    pub cpu_us: i64,
    /// Whether the relay thread got real-time scheduling (`EmulatorOptions::realtime`).
    pub realtime: bool,
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
pub(super) struct Acc {
    pub(super) stats: DirectionStats,
    queue_h: hdrhistogram::Histogram<u64>,
    delay_h: hdrhistogram::Histogram<u64>,
    late_h: hdrhistogram::Histogram<u64>,
}

impl Acc {
    pub(super) fn new() -> Self { Acc { stats: DirectionStats::default(), queue_h: net::us_histogram(), delay_h: net::us_histogram(), late_h: net::us_histogram() } }
    pub(super) fn finish(mut self) -> DirectionStats {
        self.stats.queue_delay_ms = Quantiles::of(&self.queue_h).scaled(1e-3);
        self.stats.delay_ms = Quantiles::of(&self.delay_h).scaled(1e-3);
        self.stats.send_late_us = Quantiles::of(&self.late_h);
        self.stats
    }
    pub(super) fn arrived(&mut self, bytes: i64) { self.stats.arrived_packets += 1; self.stats.arrived_bytes += bytes; }
    pub(super) fn dropped(&mut self, random: bool) { if random { self.stats.random_drops += 1 } else { self.stats.queue_drops += 1 } }
    pub(super) fn left_queue(&mut self, q: Duration) { let _ = self.queue_h.record(q.as_us().max(1) as u64); }
    pub(super) fn delivered(&mut self, bytes: i64, delay: Duration, late: Duration, ok: bool) {
        self.stats.delivered_packets += 1;
        self.stats.delivered_bytes += bytes;
        if !ok { self.stats.send_errors += 1; }
        let _ = self.delay_h.record(delay.as_us().max(1) as u64);
        let _ = self.late_h.record(late.as_us().max(1) as u64);
    }
}

