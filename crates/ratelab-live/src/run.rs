//! `live run`: one scenario on loopback — emulator, receiver and sender on their own threads,
//! sharing one clock — summarized exactly like a simulation (`RunSummary`, series and packet
//! logs), plus what each component measured.
//!
//! Definitions follow `sim/summary.rs`: throughput over the flow's active time, utilization
//! against the emulated capacity, queuing delay = time waiting in the bottleneck queue (the
//! emulator's ground truth, not an estimate), loss = packets the emulated link dropped.

use crate::emulator::{Emulator, EmulatorOptions, EmulatorStats};
use crate::net::LiveClock;
use crate::receiver::{FeedbackFormat, Receiver, ReceiverOptions, ReceiverStats};
use crate::sender::{Sender, SenderOptions, SenderStats};
use crate::StopFlag;
use ratelab_core::metrics::{PacketLog, SeriesLog};
use ratelab_core::scenario::{FlowKind, Scenario};
use ratelab_core::sim::summary::{FlowSummary, LinkSummary, RunSummary};
use ratelab_core::{ConfigError, Duration, Time};
use serde::Serialize;
use std::collections::HashMap;
use std::net::SocketAddr;

#[derive(Clone, Debug)]
pub struct LiveRunOptions {
    pub seed: u64,
    /// Replaces the media flow's controller (as `ratelab run -c`).
    pub controller: Option<String>,
    pub format: FeedbackFormat,
    /// Time allowed after the end for packets in flight to arrive (s).
    pub drain_s: f64,
    pub stop: StopFlag,
    /// pcap file for everything the emulator receives (RTP and RTCP of the run).
    pub capture: Option<String>,
}

impl Default for LiveRunOptions {
    fn default() -> Self { LiveRunOptions { seed: 1, controller: None, format: FeedbackFormat::Twcc, drain_s: 1.0, stop: StopFlag::new(), capture: None } }
}

#[derive(Clone, Debug, Serialize)]
pub struct LiveDetails {
    pub feedback_format: FeedbackFormat,
    pub sender: SenderStats,
    pub receiver: ReceiverStats,
    pub emulator: EmulatorStats,
    /// Set when the run ended early (Ctrl-C or a silent component).
    pub warning: Option<String>,
}

pub struct LiveRunResult {
    pub summary: RunSummary,
    pub details: LiveDetails,
    pub series: SeriesLog,
    pub packets: PacketLog,
}

fn loopback() -> SocketAddr { SocketAddr::from(([127, 0, 0, 1], 0)) }

/// Run a scenario live. Its trace (if any) must already be loaded into `link.trace_content`.
pub fn live_run(sc: &Scenario, o: &LiveRunOptions) -> Result<LiveRunResult, ConfigError> {
    sc.validate()?;
    let media: Vec<usize> = sc.flows.iter().enumerate().filter(|(_, f)| f.kind == FlowKind::Media).map(|(i, _)| i).collect();
    if media.len() != 1 || sc.flows.iter().any(|f| f.kind == FlowKind::Tcp) || sc.flows[media[0]].count != 1 {
        return Err(ConfigError::new("flows", "live mode runs exactly one media flow (no TCP flows, count = 1)"));
    }
    let fi = media[0];
    if sc.flows[fi].direction != ratelab_core::scenario::Direction::Forward {
        return Err(ConfigError::new(format!("flows[{fi}].direction"), "live mode sends its one media flow forward (the reverse_link carries its feedback)"));
    }
    let mut flow = sc.flows[fi].clone();
    if let Some(c) = &o.controller {
        if *c != flow.controller { flow.controller = c.clone(); flow.params = serde_json::Value::Null; }
    }
    let end = Time::from_secs_f64(sc.duration_s);
    let start = Time::from_secs_f64(flow.start_s);
    let stop_t = flow.stop_s.map_or(end, Time::from_secs_f64).min(end);
    if stop_t <= start { return Err(ConfigError::new(format!("flows[{fi}].start_s"), "the flow never runs within duration_s")); }
    let fwd_delay_ms = sc.link.delay_ms + flow.one_way_delay_ms;
    let clock = LiveClock::new();
    let inner_stop = StopFlag::new();

    let emu = Emulator::new(
        EmulatorOptions {
            link: sc.link.clone(), forward_delay_ms: flow.one_way_delay_ms, reverse_delay_ms: flow.return_delay_ms.unwrap_or(flow.one_way_delay_ms),
            reverse_link: sc.reverse_link.clone(), duration_s: 0.0, seed: o.seed, client: None, max_held: 100_000, series_interval_ms: sc.metrics.series_interval_ms, capture: o.capture.clone(),
        },
        loopback(), loopback(), clock, inner_stop.clone(),
    ).map_err(|e| ConfigError::new("link", e))?;
    let emu_addr = emu.local_addr().ok_or_else(|| ConfigError::new("", "emulator socket has no address"))?;
    let capacity = Some(ratelab_core::sim::build::capacity_schedule(&sc.link).map_err(|e| e.prefixed("link"))?);
    let recv = Receiver::new(&flow, ReceiverOptions {
        format: o.format, first_packet_timeout_s: flow.start_s + 30.0, silence_timeout_s: 10.0,
        max_duration_s: sc.duration_s + o.drain_s + 5.0, base_delay_ms: Some(fwd_delay_ms), series_interval_ms: sc.metrics.series_interval_ms,
        packet_log: sc.metrics.packet_log, count_until_s: Some(stop_t.as_secs_f64()),
        return_delay_ms: Some(flow.return_delay_ms.unwrap_or(flow.one_way_delay_ms)), ..Default::default()
    }, loopback(), Some(emu_addr), clock, o.seed, inner_stop.clone()).map_err(|e| ConfigError::new("", e))?;
    let recv_addr = recv.local_addr().ok_or_else(|| ConfigError::new("", "receiver socket has no address"))?;
    let send = Sender::new(&flow, SenderOptions {
        duration_s: (stop_t - start).as_secs_f64(), start_s: flow.start_s, seed: o.seed, series_interval_ms: sc.metrics.series_interval_ms,
        packet_log: sc.metrics.packet_log, ..Default::default()
    }, loopback(), emu_addr, clock, capacity, o.stop.clone()).map_err(|e| ConfigError::new(format!("flows[{fi}]"), e))?;
    let send_addr = send.local_addr().ok_or_else(|| ConfigError::new("", "sender socket has no address"))?;
    // The emulator relays sender → receiver; the sender is its only client.
    let emu = emu.with_route(recv_addr, send_addr);

    let controller_name = flow.controller.clone();
    let th_emu = std::thread::Builder::new().name("ratelab-emulator".into()).spawn(move || emu.run()).map_err(|e| ConfigError::new("", e.to_string()))?;
    let th_recv = std::thread::Builder::new().name("ratelab-receiver".into()).spawn(move || recv.run()).map_err(|e| ConfigError::new("", e.to_string()))?;
    let th_send = std::thread::Builder::new().name("ratelab-sender".into()).spawn(move || send.run(&controller_name)).map_err(|e| ConfigError::new("", e.to_string()))?;
    let sres = th_send.join().map_err(|_| ConfigError::new("", "the live sender thread panicked"))?;
    // Let packets in flight arrive (the BYE, queued behind them, normally ends the receiver).
    let drain_end = std::time::Instant::now() + std::time::Duration::from_secs_f64(o.drain_s.max(0.0) + 0.5);
    while !th_recv.is_finished() && std::time::Instant::now() < drain_end { std::thread::sleep(std::time::Duration::from_millis(10)); }
    inner_stop.raise();
    let rres = th_recv.join().map_err(|_| ConfigError::new("", "the live receiver thread panicked"))?;
    let eres = th_emu.join().map_err(|_| ConfigError::new("", "the emulator thread panicked"))?;

    // Summary, as sim/summary.rs computes it.
    let cap = &eres.capacity;
    let m = &rres.metrics;
    let active = (stop_t - start).max(Duration::ZERO);
    let thr = if active > Duration::ZERO { m.bytes_received.bits() as f64 / active.as_secs_f64() } else { 0.0 };
    let mean_cap = cap.mean_over(start, stop_t).bps_f64();
    let fwd = &eres.stats.forward;
    let dropped = fwd.random_drops + fwd.queue_drops + fwd.overflow_drops;
    let video = m.video.unwrap_or_default();
    let q = fwd.queue_delay_ms;
    // With a reverse_link the feedback crosses an emulated bottleneck, as in the simulator.
    let rev = &eres.stats.reverse;
    let two_way = sc.reverse_link.is_some();
    let ret_sent = rres.stats.feedback_packets + rres.stats.remb_packets;
    let ret_lost = rev.random_drops + rev.queue_drops + rev.overflow_drops;
    let flow_summary = FlowSummary {
        id: 0, label: flow.label.clone().unwrap_or_else(|| "media0".into()), kind: FlowKind::Media,
        direction: ratelab_core::scenario::Direction::Forward, controller: flow.controller.clone(),
        start_s: start.as_secs_f64(), stop_s: stop_t.as_secs_f64(),
        throughput_kbps: thr / 1e3,
        utilization: if mean_cap > 0.0 { thr / mean_cap } else { 0.0 },
        owd_ms_mean: m.owd_mean_ms(), owd_ms_p50: m.owd_quantile_ms(0.5), owd_ms_p95: m.owd_quantile_ms(0.95),
        queue_delay_ms_mean: (q.n > 0).then_some(q.mean), queue_delay_ms_p95: (q.n > 0).then_some(q.p95),
        loss_rate: if m.packets_received + dropped > 0 { dropped as f64 / (m.packets_received + dropped) as f64 } else { 0.0 },
        freeze_count: Some(video.freeze_count),
        freeze_ratio: Some(if active > Duration::ZERO { video.freeze_duration.as_secs_f64() / active.as_secs_f64() } else { 0.0 }),
        frame_delay_ms_mean: video.mean_frame_delay().map(|d| d.as_ms_f64()),
        psnr_db_mean: video.mean_psnr_db(),
        frames_rendered: Some(video.frames_rendered),
        packets_sent: sres.stats.packets_sent, packets_received: m.packets_received, packets_lost: dropped,
        bytes_sent: sres.stats.bytes_sent, bytes_received: m.bytes_received.get(),
        return_packets_sent: two_way.then_some(ret_sent),
        return_packets_lost: two_way.then_some(ret_lost),
        return_bytes_sent: two_way.then_some(rev.arrived_bytes),
        return_loss_rate: two_way.then(|| if ret_sent > 0 { ret_lost as f64 / ret_sent as f64 } else { 0.0 }),
    };
    let cap_bits = cap.mean_over(Time::ZERO, end).bps_f64() * end.as_secs_f64();
    let summary = RunSummary {
        duration_s: end.as_secs_f64(),
        events: sres.stats.packets_sent + rres.stats.feedback_packets,
        link: LinkSummary {
            utilization: if cap_bits > 0.0 { m.bytes_received.bits() as f64 / cap_bits } else { 0.0 },
            jain_index: 1.0,
            loss_rate: if fwd.arrived_packets > 0 { dropped as f64 / fwd.arrived_packets as f64 } else { 0.0 },
            capacity_kbps_mean: cap.mean_over(Time::ZERO, end).kbps_f64(),
            queue_drops: fwd.queue_drops,
            random_drops: fwd.random_drops,
            control_kbps_mean: 0.0,
        },
        reverse_link: match &sc.reverse_link {
            Some(l) => {
                let rcap = ratelab_core::sim::build::capacity_schedule(l).map_err(|e| e.prefixed("reverse_link"))?;
                Some(LinkSummary {
                    utilization: 0.0,
                    jain_index: 1.0,
                    loss_rate: if rev.arrived_packets > 0 { ret_lost as f64 / rev.arrived_packets as f64 } else { 0.0 },
                    capacity_kbps_mean: rcap.mean_over(Time::ZERO, end).kbps_f64(),
                    queue_drops: rev.queue_drops,
                    random_drops: rev.random_drops,
                    control_kbps_mean: if end > Time::ZERO { rev.delivered_bytes as f64 * 8.0 / end.as_secs_f64() / 1e3 } else { 0.0 },
                })
            }
            None => None,
        },
        flows: vec![flow_summary],
    };

    // Series: one row per sender sample (the flow's active time), joined on the time grid.
    let iv = Duration::from_ms_f64(sc.metrics.series_interval_ms.max(1.0));
    let ri: HashMap<u64, usize> = rres.series.k.iter().enumerate().map(|(i, k)| (*k, i)).collect();
    let ei: HashMap<u64, usize> = eres.series.k.iter().enumerate().map(|(i, k)| (*k, i)).collect();
    let mut series = SeriesLog::default();
    let ss = &sres.series;
    for (i, k) in ss.k.iter().enumerate() {
        let t = Time::from_us(*k as i64 * iv.as_us());
        if t > end { break; }
        series.t_s.push(t.as_secs_f64());
        series.flow.push(0);
        series.target_kbps.push(ss.target_kbps[i]);
        series.encoder_kbps.push(ss.encoder_kbps[i]);
        series.pacing_kbps.push(ss.pacing_kbps[i]);
        series.send_kbps.push(ss.send_kbps[i]);
        series.cwnd_bytes.push(ss.cwnd_bytes[i]);
        let r = ri.get(k).copied();
        series.recv_kbps.push(r.map_or(f64::NAN, |j| rres.series.recv_kbps[j]));
        series.owd_ms.push(r.map_or(f64::NAN, |j| rres.series.owd_ms[j]));
        let e = ei.get(k).copied();
        series.capacity_kbps.push(e.map_or(cap.rate_at(t).kbps_f64(), |j| eres.series.capacity_kbps[j]));
        series.queue_ms.push(e.map_or(f64::NAN, |j| eres.series.queue_ms[j]));
    }
    // Packets: every packet sent, with its arrival if it arrived.
    let arrivals: HashMap<u64, Time> = rres.log.seq.iter().copied().zip(rres.log.recv.iter().copied()).collect();
    let mut packets = PacketLog::default();
    for ((seq, size), send) in sres.log.seq.iter().zip(&sres.log.size).zip(&sres.log.send) {
        let r = arrivals.get(seq).copied();
        packets.push(0, *seq, ratelab_core::Bytes::new(*size as i64), *send, r, r.is_none());
    }
    let warning = match (sres.stats.end_reason.as_str(), rres.stats.end_reason.as_str()) {
        ("duration", _) => None,
        (r, _) => Some(sres.stats.message.clone().unwrap_or_else(|| format!("sender ended early: {r}"))),
    };
    Ok(LiveRunResult { summary, details: LiveDetails { feedback_format: o.format, sender: sres.stats, receiver: rres.stats, emulator: eres.stats, warning }, series, packets })
}
