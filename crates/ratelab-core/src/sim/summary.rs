//! End-of-run summary: the numbers `summary.json` reports.

use super::{FlowInfo, FlowState, Simulation};
use crate::media::receiver::VideoStats;
use crate::metrics::{jain_index, FlowMetrics};
use crate::network::capacity::CapacitySchedule;
use crate::network::link::{Link, LinkStats};
use crate::scenario::{Direction, FlowKind};
use crate::units::{Bitrate, Bytes, Duration, Time};
use serde::Serialize;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LinkSummary {
    /// Cross paper Eq. 6: data bits delivered (all flows crossing this link) / ∫ capacity dt
    /// over the run. Feedback packets on a reverse link are not counted here (see
    /// `control_kbps_mean`).
    pub utilization: f64,
    /// Mean Jain index over the seconds in which ≥ 2 media flows were active (1 if never).
    pub jain_index: f64,
    /// Packets dropped at the bottleneck (random + queue) / packets that reached it.
    pub loss_rate: f64,
    pub capacity_kbps_mean: f64,
    pub queue_drops: u64,
    pub random_drops: u64,
    /// Mean rate of receiver → sender packets (feedback, REMB, ACKs) that crossed this link.
    pub control_kbps_mean: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FlowSummary {
    pub id: u32,
    pub label: String,
    pub kind: FlowKind,
    /// Which link the flow's data crossed.
    pub direction: Direction,
    pub controller: String,
    pub start_s: f64,
    pub stop_s: f64,
    pub throughput_kbps: f64,
    /// Throughput / mean capacity of the flow's link over the flow's active time.
    pub utilization: f64,
    pub owd_ms_mean: Option<f64>,
    pub owd_ms_p50: Option<f64>,
    pub owd_ms_p95: Option<f64>,
    pub queue_delay_ms_mean: Option<f64>,
    pub queue_delay_ms_p95: Option<f64>,
    pub loss_rate: f64,
    pub freeze_count: Option<u64>,
    pub freeze_ratio: Option<f64>,
    pub frame_delay_ms_mean: Option<f64>,
    pub frames_rendered: Option<u64>,
    /// Mean PSNR (dB) over displayed frame slots, repeated (frozen/skipped) slots included
    /// (media/quality.rs; model chosen by `media.quality_model`).
    pub psnr_db_mean: Option<f64>,
    pub packets_sent: u64,
    pub packets_received: u64,
    pub packets_lost: u64,
    pub bytes_sent: i64,
    pub bytes_received: i64,
    /// Feedback / ACK packets the flow's receiver sent over a congested return path (only
    /// with a `reverse_link`), and how many of them the return bottleneck dropped.
    pub return_packets_sent: Option<u64>,
    pub return_packets_lost: Option<u64>,
    pub return_bytes_sent: Option<i64>,
    /// return_packets_lost / return_packets_sent.
    pub return_loss_rate: Option<f64>,
    /// Mean rate of RTX packets (wire bytes) over the flow's active time; only with
    /// `media.nack` (absent otherwise, so summaries without it are unchanged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmit_kbps: Option<f64>,
    /// Frames the encoder's rate control dropped (libvpx's frame dropper); only with
    /// `media.frame_floor_kbit`, absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames_dropped_by_encoder: Option<u64>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RunSummary {
    pub duration_s: f64,
    pub events: u64,
    /// The forward bottleneck.
    pub link: LinkSummary,
    /// The reverse bottleneck (RFC 8867 5.3), when the scenario has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverse_link: Option<LinkSummary>,
    pub flows: Vec<FlowSummary>,
}

/// One flow as the summary sees it: its description and what a driver measured.
pub struct FlowRecord<'a> {
    pub info: &'a FlowInfo,
    /// Activity window (`metrics.start`, `metrics.stop`), counters, histograms, goodput bins and
    /// return-path counters.
    pub metrics: &'a FlowMetrics,
    /// Frame statistics of a media flow; `None` for TCP.
    pub video: Option<VideoStats>,
    /// RTX bytes sent (`media.nack` flows only).
    pub retransmitted: Option<Bytes>,
    /// Frames the encoder dropped (`media.frame_floor_kbit` flows only).
    pub encoder_drops: Option<u64>,
}

/// One bottleneck as the summary sees it: its capacity over time and its counters.
pub struct LinkRecord<'a> {
    pub capacity: &'a CapacitySchedule,
    /// `(from, schedule)` of each route change (sim/route.rs), in time order: the capacity from
    /// then on. Empty for a link that keeps its route.
    pub route_changes: &'a [(Time, CapacitySchedule)],
    pub stats: LinkStats,
}

impl LinkRecord<'_> {
    /// Mean capacity over [from, to), across the route changes.
    pub fn mean_capacity(&self, from: Time, to: Time) -> Bitrate {
        if self.route_changes.is_empty() { return self.capacity.mean_over(from, to); }
        let segments: Vec<(Time, &CapacitySchedule)> = std::iter::once((Time::ZERO, self.capacity)).chain(self.route_changes.iter().map(|(t, c)| (*t, c))).collect();
        if to <= from {
            let i = segments.partition_point(|(t, _)| *t <= from).saturating_sub(1);
            return segments[i].1.rate_at(from);
        }
        let mut acc: i128 = 0;
        for (i, (start, cap)) in segments.iter().enumerate() {
            let a = (*start).max(from);
            let b = segments.get(i + 1).map_or(to, |n| n.0).min(to);
            if b > a { acc += cap.mean_over(a, b).bps() as i128 * (b - a).as_us() as i128; }
        }
        Bitrate::from_bps(crate::units::div_i128(acc, (to - from).as_us() as i128) as i64)
    }
}

/// The summary of a run that ended at `end`, from its flows and its links (`links[0]` forward,
/// `links[1]` the reverse bottleneck when there is one). Shared by every driver (the simulator
/// and the live mode), so that a number means the same thing whichever produced it.
pub fn summarize(end: Time, events: u64, links: &[LinkRecord], flows: &[FlowRecord]) -> RunSummary {
    let fwd = Direction::Forward.index();
    let mut out = Vec::new();
    for f in flows {
        let m = f.metrics;
        let Some(link) = links.get(f.info.direction.index()).or(links.get(fwd)) else { continue };
        let active = m.active(end);
        let thr = if active > Duration::ZERO { m.bytes_received.bits() as f64 / active.as_secs_f64() } else { 0.0 };
        let mean_cap = link.mean_capacity(m.start, m.stop.min(end).max(m.start)).bps_f64();
        let video = f.video;
        let rp = m.return_path;
        out.push(FlowSummary {
            id: f.info.id, label: f.info.label.clone(), kind: f.info.kind, direction: f.info.direction, controller: f.info.controller.clone(),
            start_s: f.info.start_s, stop_s: f.info.stop_s,
            throughput_kbps: thr / 1e3,
            utilization: if mean_cap > 0.0 { thr / mean_cap } else { 0.0 },
            owd_ms_mean: m.owd_mean_ms(), owd_ms_p50: m.owd_quantile_ms(0.5), owd_ms_p95: m.owd_quantile_ms(0.95),
            queue_delay_ms_mean: m.queue_mean_ms(), queue_delay_ms_p95: m.queue_quantile_ms(0.95),
            loss_rate: m.loss_rate(),
            freeze_count: video.map(|v| v.freeze_count),
            freeze_ratio: video.map(|v| if active > Duration::ZERO { v.freeze_duration.as_secs_f64() / active.as_secs_f64() } else { 0.0 }),
            frame_delay_ms_mean: video.and_then(|v| v.mean_frame_delay()).map(|d| d.as_ms_f64()),
            frames_rendered: video.map(|v| v.frames_rendered),
            psnr_db_mean: video.and_then(|v| v.mean_psnr_db()),
            packets_sent: m.packets_sent, packets_received: m.packets_received, packets_lost: m.packets_lost,
            bytes_sent: m.bytes_sent.get(), bytes_received: m.bytes_received.get(),
            return_packets_sent: rp.map(|c| c.packets_sent),
            return_packets_lost: rp.map(|c| c.packets_lost),
            return_bytes_sent: rp.map(|c| c.bytes_sent),
            return_loss_rate: rp.map(|c| if c.packets_sent > 0 { c.packets_lost as f64 / c.packets_sent as f64 } else { 0.0 }),
            retransmit_kbps: f.retransmitted.map(|b| if active > Duration::ZERO { b.bits() as f64 / active.as_secs_f64() / 1e3 } else { 0.0 }),
            frames_dropped_by_encoder: f.encoder_drops,
        });
    }
    RunSummary {
        duration_s: end.as_secs_f64(),
        events,
        link: links.get(fwd).map_or_else(empty_link, |l| link_summary(Direction::Forward, l, flows, end)),
        reverse_link: links.get(Direction::Reverse.index()).map(|l| link_summary(Direction::Reverse, l, flows, end)),
        flows: out,
    }
}

fn empty_link() -> LinkSummary {
    LinkSummary { utilization: 0.0, jain_index: 1.0, loss_rate: 0.0, capacity_kbps_mean: 0.0, queue_drops: 0, random_drops: 0, control_kbps_mean: 0.0 }
}

fn link_summary(dir: Direction, link: &LinkRecord, flows: &[FlowRecord], end: Time) -> LinkSummary {
    // fold from +0.0: an empty f64 sum is -0.0, which would print as "-0.0" for an unused link.
    let delivered_bits = flows.iter().filter(|f| f.info.direction == dir).fold(0.0, |a, f| a + f.metrics.bytes_received.bits() as f64);
    // Control packets crossing this link belong to the flows of the other direction.
    let control_bits = flows.iter().filter(|f| f.info.direction != dir).filter_map(|f| f.metrics.return_path).fold(0.0, |a, c| a + c.bytes_delivered as f64 * 8.0);
    let mean_cap = link.mean_capacity(Time::ZERO, end);
    let cap_bits = mean_cap.bps_f64() * end.as_secs_f64();
    let st = &link.stats;
    LinkSummary {
        utilization: if cap_bits > 0.0 { delivered_bits / cap_bits } else { 0.0 },
        jain_index: jain_over_time(dir, flows, end),
        loss_rate: if st.arrived_packets > 0 { (st.random_drops + st.queue_drops) as f64 / st.arrived_packets as f64 } else { 0.0 },
        capacity_kbps_mean: mean_cap.kbps_f64(),
        queue_drops: st.queue_drops,
        random_drops: st.random_drops,
        control_kbps_mean: if end > Time::ZERO { control_bits / end.as_secs_f64() / 1e3 } else { 0.0 },
    }
}

/// Mean Jain index of the media flows of one direction, over the whole seconds in which at
/// least two of them were active for the entire second.
fn jain_over_time(dir: Direction, flows: &[FlowRecord], end: Time) -> f64 {
    let secs = (end.as_us() / 1_000_000) as usize;
    let mut acc = 0.0;
    let mut n = 0usize;
    let mut rates = Vec::new();
    for s in 0..secs {
        let (t0, t1) = (Time::from_secs_f64(s as f64), Time::from_secs_f64(s as f64 + 1.0));
        rates.clear();
        for f in flows {
            let m = f.metrics;
            if f.info.kind != FlowKind::Media || f.info.direction != dir || m.start > t0 || m.stop < t1 { continue; }
            rates.push(m.goodput_bins.get(s).copied().unwrap_or(0) as f64);
        }
        if rates.len() >= 2 { acc += jain_index(&rates); n += 1; }
    }
    if n == 0 { 1.0 } else { acc / n as f64 }
}

impl Simulation {
    pub fn summary(&self) -> RunSummary {
        let end = self.now.min(self.end);
        let flows: Vec<FlowRecord> = self.flows.iter().map(|f| FlowRecord {
            info: &f.info,
            metrics: &f.metrics,
            video: match &f.state { FlowState::Media(mf) => Some(f.metrics.video.unwrap_or(mf.receiver.video_stats())), FlowState::Tcp(_) => None },
            retransmitted: match &f.state { FlowState::Media(mf) => mf.sender.retransmitted().map(|(_, b)| b), FlowState::Tcp(_) => None },
            encoder_drops: match &f.state { FlowState::Media(mf) => mf.sender.frames_dropped_by_encoder(), FlowState::Tcp(_) => None },
        }).collect();
        // A link's capacity over the run: its first route's schedule, then each route change's.
        let links: Vec<LinkRecord> = self.links.iter().zip(&self.routes.capacities).map(|(l, caps): (&Link, _)| {
            LinkRecord { capacity: &caps[0].1, route_changes: &caps[1..], stats: l.stats }
        }).collect();
        summarize(end, self.events_processed, &links, &flows)
    }
}
