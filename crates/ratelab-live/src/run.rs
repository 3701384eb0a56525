//! `live run`: a scenario's media flows on loopback — the emulator on one thread, each flow's
//! receiver and sender on their own, all sharing one clock — summarized exactly like a
//! simulation (`RunSummary`, series and packet logs), plus what each component measured.
//!
//! The flows are the simulator's: `count` expanded, labelled, timed and delayed by
//! `sim::build::expand_flows`, each with its own sockets and its own route through the
//! emulator (data over the link of its direction, feedback over the other). The summary is
//! `sim::summary::summarize` over what was measured; the only departures are where live mode
//! measures something else: queuing delay and drops per flow come from the emulator (ground
//! truth: the time from arrival to start of transmission at the bottleneck, exactly what the
//! simulator reports), sent counts from the senders, everything received from the receivers.
//!
//! Threads, not one poll loop: each sender and receiver is the same code `live send` and `live
//! recv` run, with its own timers (pacer, frames, ticks, feedback); a thread sleeps in `ppoll`
//! until its next deadline, so the cost is per packet, not per thread. 2 threads per flow + the
//! emulator; `MAX_FLOWS` bounds it.

use crate::emulator::{Emulator, EmulatorOptions, EmulatorStats, Route};
use crate::net::LiveClock;
use crate::receiver::{FeedbackFormat, Receiver, ReceiverOptions, ReceiverResult, ReceiverStats};
use crate::sender::{Sender, SenderOptions, SenderResult, SenderStats};
use crate::StopFlag;
use ratelab_core::controllers::ExternalFactory;
use ratelab_core::metrics::{FlowMetrics, PacketLog, ReturnPathCounters, SeriesLog};
use ratelab_core::network::capacity::CapacitySchedule;
use ratelab_core::scenario::{FlowKind, Scenario};
use ratelab_core::scenario::RouteChangeConfig;
use ratelab_core::sim::build::{activity_windows, capacity_schedule, expand_flows, fair_share_routed, route_change_links, routed_capacities, FlowSpec};
use ratelab_core::sim::summary::{summarize, FlowRecord, LinkRecord, RunSummary};
use ratelab_core::{Bytes, ConfigError, Duration, Time};
use serde::Serialize;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::thread::JoinHandle;

/// Most media flows one live run starts (two threads each).
pub const MAX_FLOWS: usize = 32;

/// SSRC of flow `id`'s media: one per flow, so that a capture tells them apart.
pub fn flow_ssrc(id: u32) -> u32 { SenderOptions::default().ssrc.wrapping_add(id) }

#[derive(Clone)]
pub struct LiveRunOptions {
    pub seed: u64,
    /// Replaces the controller of every media flow (as `ratelab run -c`).
    pub controller: Option<String>,
    pub format: FeedbackFormat,
    /// Time allowed after the end for packets in flight to arrive (s).
    pub drain_s: f64,
    pub stop: StopFlag,
    /// pcap file for everything the emulator receives (RTP and RTCP of the run).
    pub capture: Option<String>,
    /// Controllers built outside the core (the binding's Python classes).
    pub external: Option<ExternalFactory>,
}

impl Default for LiveRunOptions {
    fn default() -> Self { LiveRunOptions { seed: 1, controller: None, format: FeedbackFormat::Twcc, drain_s: 1.0, stop: StopFlag::new(), capture: None, external: None } }
}

/// What one flow's two ends measured.
#[derive(Clone, Debug, Serialize)]
pub struct FlowDetails {
    pub id: u32,
    pub label: String,
    pub sender: SenderStats,
    pub receiver: ReceiverStats,
}

#[derive(Clone, Debug, Serialize)]
pub struct LiveDetails {
    pub feedback_format: FeedbackFormat,
    /// Per flow, in the summary's order.
    pub flows: Vec<FlowDetails>,
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

fn spawn<T: Send + 'static>(name: String, f: impl FnOnce() -> T + Send + 'static) -> Result<JoinHandle<T>, ConfigError> {
    std::thread::Builder::new().name(name).spawn(f).map_err(|e| ConfigError::new("", format!("cannot start a live thread: {e}")))
}

fn join<T>(h: JoinHandle<T>, what: &str) -> Result<T, ConfigError> {
    h.join().map_err(|_| ConfigError::new("", format!("the live {what} thread panicked")))
}

/// The media flows of `sc` as live mode runs them; TCP flows are the simulator's only.
fn live_flows(sc: &Scenario, controller: Option<&str>) -> Result<Vec<FlowSpec>, ConfigError> {
    if let Some(i) = sc.flows.iter().position(|f| f.kind == FlowKind::Tcp) {
        return Err(ConfigError::new(format!("flows[{i}].kind"), "TCP flows run in the simulator only (`ratelab run`); live mode runs media flows"));
    }
    // A preset that turned them on says so: the user did not type media.fec or media.nack.
    let by_preset = |i: usize| match sc.flows[i].media.preset {
        Some(_) => " (turned on by media.preset; set media.fec = false and media.nack = false to run the rest of the preset live)",
        None => "",
    };
    if let Some(i) = sc.flows.iter().position(|f| f.kind != FlowKind::Tcp && f.media.fec) {
        // The wire format has no FEC packets yet: refuse rather than run without protection.
        return Err(ConfigError::new(format!("flows[{i}].media.fec"), format!("live mode does not carry FEC packets yet; run media.fec = true in the simulator (`ratelab run`){}", by_preset(i))));
    }
    // Live mode carries no RTCP NACK / RTX on its wire yet: refuse rather than run without it.
    if let Some(i) = sc.flows.iter().position(|f| f.media.nack) {
        return Err(ConfigError::new(format!("flows[{i}].media.nack"), format!("NACK/RTX retransmission runs in the simulator only (`ratelab run`); live mode does not carry it yet{}", by_preset(i))));
    }
    let specs = expand_flows(sc, controller);
    if specs.is_empty() { return Err(ConfigError::new("flows", "live mode needs at least one media flow")); }
    if specs.len() > MAX_FLOWS { return Err(ConfigError::new("flows", format!("live mode runs at most {MAX_FLOWS} media flows (count expanded), not {}", specs.len()))); }
    if let Some(s) = specs.iter().find(|s| s.stop <= s.start) {
        return Err(ConfigError::new(format!("flows[{}].start_s", s.index), "the flow never runs within duration_s"));
    }
    Ok(specs)
}

/// Run a scenario live. Its traces (if any) must already be loaded into `trace_content`.
pub fn live_run(sc: &Scenario, o: &LiveRunOptions) -> Result<LiveRunResult, ConfigError> {
    sc.validate()?;
    let specs = live_flows(sc, o.controller.as_deref())?;
    let end = Time::from_secs_f64(sc.duration_s);
    let mut capacities = vec![capacity_schedule(&sc.link).map_err(|e| e.prefixed("link"))?];
    if let Some(l) = &sc.reverse_link { capacities.push(capacity_schedule(l).map_err(|e| e.prefixed("reverse_link"))?); }
    // Each link's capacity over the run, across its route changes (summary, oracle, series).
    let capacities = routed_capacities(&capacities, &route_change_links(&sc.route_changes, end)?);
    let windows = activity_windows(&specs);
    let clock = LiveClock::new();
    let inner_stop = StopFlag::new();
    let iv_ms = sc.metrics.series_interval_ms;

    let emu = Emulator::new(
        EmulatorOptions {
            link: sc.link.clone(), reverse_link: sc.reverse_link.clone(), duration_s: 0.0, seed: o.seed, client: None, max_held: 100_000,
            series_interval_ms: iv_ms, capture: o.capture.clone(),
            // The emulator switches the links; each flow's own loop tells its sender (below).
            route_changes: sc.route_changes.iter().map(|rc| RouteChangeConfig { flows: None, ..rc.clone() }).collect(),
            ..Default::default()
        },
        loopback(), loopback(), clock, inner_stop.clone(),
    ).map_err(|e| ConfigError::new("link", e))?;
    let emu_addr = emu.local_addr().ok_or_else(|| ConfigError::new("", "emulator socket has no address"))?;

    let mut receivers = Vec::new();
    let mut senders = Vec::new();
    let mut routes = Vec::new();
    for s in &specs {
        let mut fc = sc.flows[s.index].clone();
        fc.controller = s.info.controller.clone();
        fc.params = s.params.clone();
        let field = format!("flows[{}]", s.index);
        let ssrc = flow_ssrc(s.info.id);
        let recv = Receiver::new_ext(&fc, ReceiverOptions {
            format: o.format, ssrc, first_packet_timeout_s: s.info.start_s + 30.0, silence_timeout_s: 10.0,
            max_duration_s: sc.duration_s + o.drain_s + 5.0, base_delay_ms: Some(s.fwd_delay.as_ms_f64()), series_interval_ms: iv_ms,
            packet_log: sc.metrics.packet_log, count_until_s: Some(end.as_secs_f64()),
            return_delay_ms: Some(s.ret_delay.as_ms_f64()), flow_id: s.info.id as u64, ..Default::default()
        }, loopback(), Some(emu_addr), clock, o.seed, inner_stop.clone(), o.external.clone()).map_err(|e| ConfigError::new("", e))?;
        let share = fair_share_routed(capacities[s.info.direction.index()].clone(), windows.clone(), s.info.direction);
        let send = Sender::new_ext(&fc, SenderOptions {
            duration_s: (s.stop - s.start).as_secs_f64(), start_s: s.info.start_s, seed: o.seed, series_interval_ms: iv_ms,
            packet_log: sc.metrics.packet_log, flow_id: s.info.id as u64, ssrc, route_changes_s: told_at(sc, s), ..Default::default()
        }, loopback(), emu_addr, clock, Some(share), o.stop.clone(), o.external.clone()).map_err(|e| ConfigError::new(field, e))?;
        let (Some(ra), Some(sa)) = (recv.local_addr(), send.local_addr()) else { return Err(ConfigError::new("", "a live socket has no address")) };
        routes.push(Route { sender: Some(sa), receiver: ra, direction: s.info.direction, data_delay: s.fwd_delay, return_delay: s.ret_delay });
        receivers.push(recv);
        senders.push((send, s.info.controller.clone()));
    }
    let emu = emu.with_routes(routes);

    // Start everything; if a thread cannot start, stop what did and report it.
    let th_emu = spawn("ratelab-emulator".into(), move || emu.run())?;
    let mut th_recv = Vec::new();
    let mut th_send = Vec::new();
    let mut started = Ok(());
    for (i, r) in receivers.into_iter().enumerate() {
        match spawn(format!("ratelab-recv-{i}"), move || r.run()) { Ok(h) => th_recv.push(h), Err(e) => { started = Err(e); break; } }
    }
    if started.is_ok() {
        for (i, (s, name)) in senders.into_iter().enumerate() {
            match spawn(format!("ratelab-send-{i}"), move || s.run(&name)) { Ok(h) => th_send.push(h), Err(e) => { started = Err(e); break; } }
        }
    }
    if started.is_err() { o.stop.raise(); inner_stop.raise(); }
    let sres: Vec<SenderResult> = th_send.into_iter().map(|h| join(h, "sender")).collect::<Result<_, _>>()?;
    // Let packets in flight arrive (the BYE, queued behind them, normally ends each receiver).
    let drain_end = std::time::Instant::now() + std::time::Duration::from_secs_f64(o.drain_s.max(0.0) + 0.5);
    while !th_recv.iter().all(|h| h.is_finished()) && std::time::Instant::now() < drain_end { std::thread::sleep(std::time::Duration::from_millis(10)); }
    inner_stop.raise();
    let mut rres: Vec<ReceiverResult> = th_recv.into_iter().map(|h| join(h, "receiver")).collect::<Result<_, _>>()?;
    let eres = join(th_emu, "emulator")?;
    started?;

    // Per flow, the receiver's metrics completed with what the sender and the emulator know.
    let two_way = sc.reverse_link.is_some();
    let mut metrics = Vec::new();
    for ((s, sr), rr) in specs.iter().zip(&sres).zip(rres.iter_mut()) {
        let route = &eres.stats.routes[s.info.id as usize];
        let (data, fb) = (&route.data, &route.feedback);
        let mut m = std::mem::replace(&mut rr.metrics, FlowMetrics::new(s.start, s.stop));
        (m.start, m.stop) = (s.start, s.stop);
        m.packets_sent = sr.stats.packets_sent;
        m.bytes_sent = Bytes::new(sr.stats.bytes_sent);
        m.packets_lost = data.random_drops + data.queue_drops + data.overflow_drops;
        if two_way {
            let lost = fb.random_drops + fb.queue_drops + fb.overflow_drops;
            m.return_path = Some(ReturnPathCounters {
                packets_sent: rr.stats.feedback_packets + rr.stats.remb_packets, bytes_sent: fb.arrived_bytes,
                packets_delivered: fb.delivered_packets, bytes_delivered: fb.delivered_bytes, packets_lost: lost, bytes_lost: 0, // (not in the summary; the emulator counts dropped packets only)
            });
        }
        metrics.push(m);
    }
    let records: Vec<FlowRecord> = specs.iter().zip(&metrics).zip(&sres).map(|((s, m), r)| FlowRecord {
        info: &s.info, metrics: m, video: Some(m.video.unwrap_or_default()), retransmitted: None, encoder_drops: r.stats.frames_dropped_by_encoder,
    }).collect();
    let links: Vec<LinkRecord> = (0..capacities.len()).map(|d| LinkRecord { capacity: &capacities[d][0].1, route_changes: &capacities[d][1..], stats: eres.link_stats[d] }).collect();
    let events = sres.iter().map(|r| r.stats.packets_sent).sum::<u64>() + rres.iter().map(|r| r.stats.feedback_packets).sum::<u64>();
    let mut summary = summarize(end, events, &links, &records);
    // Queuing delay: the emulator's ground truth per flow (the receiver alone can only estimate it).
    for (f, route) in summary.flows.iter_mut().zip(&eres.stats.routes) {
        let q = route.data.queue_delay_ms;
        f.queue_delay_ms_mean = (q.n > 0).then_some(q.mean);
        f.queue_delay_ms_p95 = (q.n > 0).then_some(q.p95);
    }

    let series = join_series(&specs, &sres, &rres, &eres.series, &capacities, iv_ms, end);
    let packets = join_packets(&specs, &sres, &rres);
    let warning = specs.iter().zip(&sres).find(|(_, r)| r.stats.end_reason != "duration").map(|(s, r)| {
        let why = r.stats.message.clone().unwrap_or_else(|| format!("sender ended early: {}", r.stats.end_reason));
        if specs.len() > 1 { format!("{}: {why}", s.info.label) } else { why }
    });
    let flows = specs.iter().zip(sres).zip(rres).map(|((s, sr), rr)| FlowDetails { id: s.info.id, label: s.info.label.clone(), sender: sr.stats, receiver: rr.stats }).collect();
    Ok(LiveRunResult { summary, details: LiveDetails { feedback_format: o.format, flows, emulator: eres.stats, warning }, series, packets })
}

/// One row per flow per sender sample (the flow's active time), joined on the time grid with
/// its receiver's and its data link's samples; rows in time order, flows by id within a time,
/// as the simulator writes them.
fn join_series(specs: &[FlowSpec], sres: &[SenderResult], rres: &[ReceiverResult], es: &crate::emulator::EmulatorSeries, capacities: &[Vec<(Time, CapacitySchedule)>], iv_ms: f64, end: Time) -> SeriesLog {
    let iv = Duration::from_ms_f64(iv_ms.max(1.0));
    let ei: HashMap<u64, usize> = es.k.iter().enumerate().map(|(i, k)| (*k, i)).collect();
    let mut rows: Vec<(u64, usize, usize)> = Vec::new(); // (k, flow, sender row)
    for (f, sr) in sres.iter().enumerate() {
        rows.extend(sr.series.k.iter().enumerate().map(|(i, k)| (*k, f, i)));
    }
    rows.sort_unstable();
    let rindex: Vec<HashMap<u64, usize>> = rres.iter().map(|r| r.series.k.iter().enumerate().map(|(i, k)| (*k, i)).collect()).collect();
    let mut series = SeriesLog::default();
    for (k, f, i) in rows {
        let t = Time::from_us(k as i64 * iv.as_us());
        if t > end { continue; }
        let (ss, rs, d) = (&sres[f].series, &rres[f].series, specs[f].info.direction.index());
        series.t_s.push(t.as_secs_f64());
        series.flow.push(specs[f].info.id);
        series.target_kbps.push(ss.target_kbps[i]);
        series.encoder_kbps.push(ss.encoder_kbps[i]);
        series.pacing_kbps.push(ss.pacing_kbps[i]);
        series.send_kbps.push(ss.send_kbps[i]);
        series.cwnd_bytes.push(ss.cwnd_bytes[i]);
        let r = rindex[f].get(&k).copied();
        series.recv_kbps.push(r.map_or(f64::NAN, |j| rs.recv_kbps[j]));
        series.owd_ms.push(r.map_or(f64::NAN, |j| rs.owd_ms[j]));
        let e = ei.get(&k).copied();
        // Without an emulator sample at this time, the link's schedule (what the emulator applies).
        series.capacity_kbps.push(e.map_or_else(|| capacities.get(d).map_or(f64::NAN, |c| routed_rate(c, t)), |j| es.capacity_kbps[d][j]));
        series.queue_ms.push(e.map_or(f64::NAN, |j| es.queue_ms[d][j]));
        // Not sampled per interval in live mode (the summary has the totals).
        series.lost_packets.push(f64::NAN);
        series.freezes.push(f64::NAN);
        series.fps.push(ss.fps[i]);
        series.width.push(ss.width[i]);
        series.height.push(ss.height[i]);
    }
    series
}

/// The rate at `t` of a link whose capacity is `(from, schedule)` segments in time order.
fn routed_rate(caps: &[(Time, CapacitySchedule)], t: Time) -> f64 {
    caps.iter().rev().find(|(from, _)| *from <= t).or(caps.first()).map_or(f64::NAN, |(_, c)| c.rate_at(t).kbps_f64())
}

/// When flow `s`'s sender is told of a route change (clock times, s): the changes that name it
/// in `flows`, or without `flows`, those of the link its data crosses (the simulator's rule).
fn told_at(sc: &Scenario, s: &FlowSpec) -> Vec<f64> {
    sc.route_changes.iter().filter(|rc| match &rc.flows {
        Some(ids) => ids.contains(&s.info.id),
        None => rc.direction == s.info.direction,
    }).map(|rc| rc.at_s).collect()
}

/// Every packet sent, with its arrival if it arrived, in send order.
fn join_packets(specs: &[FlowSpec], sres: &[SenderResult], rres: &[ReceiverResult]) -> PacketLog {
    let mut rows = Vec::new();
    for ((s, sr), rr) in specs.iter().zip(sres).zip(rres) {
        let arrivals: HashMap<u64, Time> = rr.log.seq.iter().copied().zip(rr.log.recv.iter().copied()).collect();
        for ((seq, size), send) in sr.log.seq.iter().zip(&sr.log.size).zip(&sr.log.send) {
            rows.push((*send, s.info.id, *seq, *size, arrivals.get(seq).copied()));
        }
    }
    rows.sort_unstable_by_key(|r| (r.0, r.1, r.2));
    let mut packets = PacketLog::default();
    for (send, flow, seq, size, recv) in rows { packets.push(flow, seq, Bytes::new(size as i64), send, recv, recv.is_none()); }
    packets
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Who is told of a route change: the flows it names, or by default those whose data
    /// crosses the changed link; `flows = []` tells nobody.
    #[test]
    fn route_changes_tell_the_flows_the_simulator_tells() {
        let v = serde_json::json!({"name": "t", "duration_s": 5, "link": {"capacity_kbps": 1000}, "reverse_link": {"capacity_kbps": 1000},
                                   "flows": [{"kind": "media", "count": 2}, {"kind": "media", "direction": "reverse"}],
                                   "route_changes": [{"at_s": 1, "link": {"capacity_kbps": 500}}, {"at_s": 2, "flows": [1], "link": {"capacity_kbps": 700}},
                                                     {"at_s": 3, "direction": "reverse", "link": {"capacity_kbps": 300}}, {"at_s": 4, "flows": [], "link": {"capacity_kbps": 900}}]});
        let sc = Scenario::from_json(&v.to_string()).unwrap();
        let specs = live_flows(&sc, None).unwrap();
        let told: Vec<Vec<f64>> = specs.iter().map(|s| told_at(&sc, s)).collect();
        assert_eq!(told, vec![vec![1.0], vec![1.0, 2.0], vec![3.0]]);
    }

    #[test]
    fn media_fec_is_refused_not_ignored() {
        let v = serde_json::json!({"name": "t", "duration_s": 5, "link": {"capacity_kbps": 1000},
                                   "flows": [{"kind": "media"}, {"kind": "media", "media": {"fec": true}}]});
        let sc = Scenario::from_json(&v.to_string()).unwrap();
        let e = live_flows(&sc, None).err().expect("refused");
        assert_eq!(e.field, "flows[1].media.fec");
        assert!(e.message.contains("FEC"), "{}", e.message);
    }

    #[test]
    fn a_preset_that_turns_on_fec_says_so() {
        let v = serde_json::json!({"name": "t", "duration_s": 5, "link": {"capacity_kbps": 1000},
                                   "flows": [{"kind": "media", "media": {"preset": "chromium"}}]});
        let e = live_flows(&Scenario::from_json(&v.to_string()).unwrap(), None).unwrap_err();
        assert_eq!(e.field, "flows[0].media.fec");
        assert!(e.to_string().contains("media.preset"), "{e}");
        let v = serde_json::json!({"name": "t", "duration_s": 5, "link": {"capacity_kbps": 1000},
                                   "flows": [{"kind": "media", "media": {"preset": "chromium", "fec": false, "nack": false}}]});
        assert!(live_flows(&Scenario::from_json(&v.to_string()).unwrap(), None).is_ok());
    }

    #[test]
    fn nack_is_refused_by_name_not_ignored() {
        let v = serde_json::json!({"name": "t", "duration_s": 5, "link": {"capacity_kbps": 1000},
                                   "flows": [{"kind": "media"}, {"kind": "media", "media": {"nack": true}}]});
        let sc = Scenario::from_json(&v.to_string()).unwrap();
        let e = live_flows(&sc, None).expect_err("refused");
        assert!(e.to_string().contains("flows[1].media.nack"), "{e}");
        let ok = serde_json::json!({"name": "t", "duration_s": 5, "link": {"capacity_kbps": 1000}, "flows": [{"kind": "media"}]});
        assert!(live_flows(&Scenario::from_json(&ok.to_string()).unwrap(), None).is_ok());
    }

    #[test]
    fn the_capacity_series_follows_the_route_changes() {
        let caps = vec![(Time::ZERO, CapacitySchedule::constant(ratelab_core::Bitrate::from_kbps(1000))), (Time::from_ms(2000), CapacitySchedule::constant(ratelab_core::Bitrate::from_kbps(300)))];
        assert_eq!((routed_rate(&caps, Time::from_ms(1999)), routed_rate(&caps, Time::from_ms(2000))), (1000.0, 300.0));
    }
}
