//! Scenario → simulation: link, loss, queue, flows and their controllers.

use super::media_flow::MediaFlow;
use crate::endpoint::send_clock::SendClock;
use crate::endpoint::{AudioStream, MediaReceiver, MediaSender, SenderParts};
use super::tcp_flow::{OnOff, TcpFlow};
use crate::transport::tcp::{TcpConfig, TcpReceiver, TcpSender};
use super::{Event, Flow, FlowInfo, FlowState, Simulation};
use crate::controller::{Constraints, ReceiverEstimator};
use crate::controller::{BuildContext, ExternalFactory, FileReader};
use crate::controllers;
use crate::error::ConfigError;
use crate::feedback::generator::{FeedbackGenerator, GeneratorMode};
use crate::media::encoder::floor::FloorConfig;
use crate::media::encoder::{Encoder, EncoderConfig};
use crate::media::fec::FecSender;
use crate::media::pacer::Pacer;
use crate::media::quality::QualityTracker;
use crate::media::receiver::FrameReceiver;
use crate::metrics::{FlowMetrics, PacketLog, SeriesLog};
use crate::network::capacity::CapacitySchedule;
use crate::network::link::{Link, QueueLimit};
use crate::network::loss::LossModel;
use crate::network::trace::{detect_format, parse_mahimahi, parse_trace, Trace, TraceError, TraceFormat};
use crate::metrics::ReturnPathCounters;
use crate::scenario::{Direction, FeedbackMode, FlowConfig, FlowKind, LinkConfig, QueuedOnRouteChange, RouteChangeConfig, Scenario};
use crate::units::{Bitrate, Bytes, Duration, Time};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

/// SplitMix64: derive independent seeds for each random stream from the run seed.
pub fn derive_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The capacity over time of a link section; errors name the field inside the section
/// (`trace`), for the caller to prefix with the section (`link` / `reverse_link`).
pub fn capacity_schedule(link: &LinkConfig) -> Result<CapacitySchedule, ConfigError> {
    if let Some(c) = link.capacity_kbps { return Ok(CapacitySchedule::constant(Bitrate::from_kbps_f64(c))); }
    if let Some(steps) = &link.steps {
        let s = steps.iter().map(|(t, c)| (Time::from_secs_f64(*t), Bitrate::from_kbps_f64(*c))).collect();
        return Ok(CapacitySchedule::stepped(s, None));
    }
    let trace = load_trace(link).map_err(|e| ConfigError::new("trace", e.to_string()))?;
    Ok(schedule_from_trace(&trace, link.trace_loop))
}

/// Parse the scenario's trace (content already read by the front end).
pub fn load_trace(link: &LinkConfig) -> Result<Trace, TraceError> {
    let content = link.trace_content.as_deref().ok_or_else(|| TraceError::new("trace content was not loaded"))?;
    let format: TraceFormat = link.trace_format.parse().map_err(|_| TraceError::new(format!("unknown trace format '{}'", link.trace_format)))?;
    let trace = match format {
        TraceFormat::Mahimahi => parse_mahimahi(content, Duration::from_ms_f64(link.mahimahi_bin_ms))?,
        TraceFormat::Auto if detect_format(content)? == TraceFormat::Mahimahi => parse_mahimahi(content, Duration::from_ms_f64(link.mahimahi_bin_ms))?,
        f => parse_trace(content, f)?,
    };
    Ok(if (link.trace_scale - 1.0).abs() > 0.0 { trace.scaled(link.trace_scale) } else { trace })
}

fn schedule_from_trace(trace: &Trace, looped: bool) -> CapacitySchedule {
    let steps = trace.samples.iter().map(|s| (s.start, s.capacity)).collect();
    CapacitySchedule::stepped(steps, looped.then_some(trace.duration))
}

pub fn queue_limit(link: &LinkConfig, cap: &CapacitySchedule, end: Time) -> QueueLimit {
    let q = &link.queue;
    if let Some(b) = q.bytes { return QueueLimit::Bytes(Bytes::new(b as i64)); }
    if let Some(p) = q.packets { return QueueLimit::Packets(p as usize); }
    if let Some(ms) = q.ms {
        // Queue expressed as time at a reference rate (RFC 8867 style): the given rate, else the
        // capacity at time 0, else (a trace starting at zero) the mean capacity of the run.
        let rate = match q.rate_kbps {
            Some(r) => Bitrate::from_kbps_f64(r),
            None => { let r0 = cap.rate_at(Time::ZERO); if r0.is_zero() { cap.mean_over(Time::ZERO, end) } else { r0 } }
        };
        return QueueLimit::Bytes((rate * Duration::from_ms_f64(ms)).max(Bytes::new(1500)));
    }
    QueueLimit::Unlimited
}

/// The random-loss model a link configuration asks for.
pub fn loss_model(link: &LinkConfig) -> LossModel {
    match &link.gilbert_elliott {
        Some(g) => LossModel::GilbertElliott { p_gb: g.p_good_to_bad, p_bg: g.p_bad_to_good, loss_good: g.loss_good, loss_bad: g.loss_bad, bad: false },
        None if link.loss > 0.0 => LossModel::Bernoulli(link.loss),
        None => LossModel::None,
    }
}

/// The bottleneck of a link configuration (capacity, drop-tail queue, loss, trace loss/delay
/// overlay). `end`: run length, for queue sizes given in ms of a trace's mean rate. Used by the
/// simulator and by the live link emulator. Errors name the field inside the section.
pub fn build_link(link: &LinkConfig, capacity: CapacitySchedule, end: Time) -> Result<Link, ConfigError> {
    let limit = queue_limit(link, &capacity, end);
    let mut l = Link::new(capacity, limit, loss_model(link), Time::from_secs_f64(link.loss_start_s));
    l.set_loss_after_queue(link.loss_after_queue);
    if link.trace_content.is_some() {
        let trace = load_trace(link).map_err(|e| ConfigError::new("trace", e.to_string()))?;
        l.set_trace_overlay(trace, link.trace_loop);
    }
    Ok(l)
}

/// One route change's new route, built as the simulator applies it (sim/route.rs): from `at`
/// on, the link of `dir` is `link` ([`Link::reroute`] starts its steps and trace at `at`).
pub struct RouteLink {
    pub at: Time,
    pub dir: Direction,
    /// The new link's capacity from `at` on (times shifted by `at`), for summaries and the oracle.
    pub capacity: CapacitySchedule,
    pub link: Link,
    /// The new link's own one-way delay (`delay_ms`): the path delays change by new − old.
    pub delay: Duration,
    /// `queued = "carry"`: the old queue waits for the new route; else it is lost.
    pub carry: bool,
}

/// The new routes of a scenario's `route_changes`, in order; errors name
/// `route_changes[i].link.<field>`. The simulator and the live emulator both build them here.
pub fn route_change_links(changes: &[RouteChangeConfig], end: Time) -> Result<Vec<RouteLink>, ConfigError> {
    changes.iter().enumerate().map(|(i, rc)| {
        let section = format!("route_changes[{i}].link");
        let cap = capacity_schedule(&rc.link).map_err(|e| e.prefixed(&section))?;
        let at = Time::from_secs_f64(rc.at_s);
        let capacity = cap.clone().starting_at(at);
        let link = build_link(&rc.link, cap, end).map_err(|e| e.prefixed(&section))?;
        Ok(RouteLink { at, dir: rc.direction, capacity, link, delay: Duration::from_ms_f64(rc.link.delay_ms), carry: rc.queued == QueuedOnRouteChange::Carry })
    }).collect()
}

/// Each direction's capacity over the run, `(from, schedule)` in time order: the scenario's
/// (`capacities`, by direction) from 0, then each route change's from its time.
pub fn routed_capacities(capacities: &[CapacitySchedule], changes: &[RouteLink]) -> Vec<Vec<(Time, CapacitySchedule)>> {
    let mut out: Vec<Vec<(Time, CapacitySchedule)>> = capacities.iter().map(|c| vec![(Time::ZERO, c.clone())]).collect();
    for rl in changes {
        if let Some(v) = out.get_mut(rl.dir.index()) { v.push((rl.at, rl.capacity.clone())); }
    }
    out
}

/// A media flow's sender and receiver state from its configuration (`field`: the flow's path
/// in the scenario, for errors; `id`: the flow's index, for its random streams). Used by the
/// simulator and by the live driver.
pub fn build_media_flow(fc: &FlowConfig, field: &str, controller_name: &str, params: &serde_json::Value, cx: &BuildContext, seed: u64, id: u64) -> Result<MediaFlow, ConfigError> {
    let built = controllers::build(controller_name, params, cx).map_err(|e| {
        if e.field == "controller" { ConfigError::new(format!("{field}.controller"), e.message) } else { e.prefixed(field) }
    })?;
    let mc = &fc.media;
    let constraints = Constraints { min_rate: Bitrate::from_kbps_f64(mc.min_kbps), max_rate: Bitrate::from_kbps_f64(mc.max_kbps), start_rate: Bitrate::from_kbps_f64(mc.start_kbps) };
    let enc = EncoderConfig {
        fps: mc.fps, min_rate: mc.encoder_min_kbps.map_or(constraints.min_rate, Bitrate::from_kbps_f64), max_rate: constraints.max_rate, lag: Duration::from_ms_f64(mc.encoder_lag_ms),
        size_noise: mc.frame_size_noise, keyframe_interval: Duration::from_secs_f64(mc.keyframe_interval_s), keyframe_factor: mc.keyframe_factor,
        floor: (mc.frame_floor_kbit > 0.0).then(|| FloorConfig { width: mc.width, height: mc.height, floor_bits: mc.frame_floor_kbit * 1000.0, quality_scaler: mc.quality_scaler }),
        bitrate_adjuster: mc.bitrate_adjuster,
    };
    let limit_t = Duration::from_ms_f64(mc.pacer_queue_limit_ms);
    let header = Bytes::new(mc.header_bytes as i64);
    let mut sender = MediaSender::new(SenderParts {
        controller: built.sender,
        constraints,
        encoder: Encoder::new(enc, constraints.start_rate, derive_seed(seed, 2000 + id)),
        pacer: Pacer::new(constraints.start_rate.scale(2.5), limit_t).with_burst_interval(Duration::from_ms_f64(mc.pacer_burst_ms)),
        max_payload: mc.max_payload_bytes,
        header,
        pause_allowed: mc.encoder_pause,
        overhead_accounting: mc.overhead_accounting,
        queue_time_limit: limit_t,
        // Random capture phase: flows that start at the same instant must not
        // produce frames in lock-step (the lower flow id would win every tie).
        frame_phase: Duration::from_us((derive_seed(seed, 4000 + id) % (1e6 / mc.fps).max(1.0) as u64) as i64),
        include_report_time: fc.feedback.report_time,
        pauses: fc.pauses.iter().map(|&(a, b)| (Time::from_secs_f64(a), Time::from_secs_f64(b))).collect(),
        audio: AudioStream::new(mc.audio_kbps, mc.audio_frame_ms, header),
    });
    if mc.nack { sender.enable_nack(); }
    if mc.fec {
        sender.set_fec(FecSender::new(mc.fps, mc.max_payload_bytes, (mc.width, mc.height)).with_overhead_cap(mc.fec_overhead_cap));
    } else if mc.nack {
        // libwebrtc's kNack method: no FEC, but retransmissions are protection overhead.
        sender.set_fec(FecSender::nack_only(mc.fps, mc.max_payload_bytes, (mc.width, mc.height)));
    }
    if let Some(b) = mc.expected_overhead_bytes { sender.set_expected_overhead(Bytes::new(b.round() as i64)); }
    sender.set_srtp_tag(Bytes::new(i64::from(mc.srtp_tag_bytes)));
    sender.set_send_clock(SendClock::new(Duration::from_ms_f64(mc.send_time_resolution_ms), Duration::from_us(mc.burst_spacing_us.round() as i64)));
    Ok(MediaFlow { sender, receiver: build_media_receiver(fc, built.receiver, None) })
}

/// A media flow's receiver endpoint from its configuration, with `estimator` (the controller's
/// receiver side, if any) and the return delay its RTT updates add (None: no RTT updates).
/// Used by the simulator and by live mode's receiver.
pub fn build_media_receiver(fc: &FlowConfig, estimator: Option<Box<dyn ReceiverEstimator>>, return_delay: Option<Duration>) -> MediaReceiver {
    let mc = &fc.media;
    let mode = match fc.feedback.mode { FeedbackMode::Twcc => GeneratorMode::Twcc, FeedbackMode::PerPacket => GeneratorMode::PerPacket };
    let mut r = MediaReceiver::new(
        FrameReceiver::with_quality(QualityTracker::new(mc.quality_model, mc.fps, mc.keyframe_factor)),
        FeedbackGenerator::new(mode, Duration::from_ms_f64(fc.feedback.interval_ms)),
        estimator,
        Bytes::new(mc.header_bytes as i64),
        return_delay,
    );
    if mc.fec { r.enable_fec(); }
    if mc.nack { r.enable_nack(); }
    r
}

/// Build a ready-to-run simulation. `controller_override` replaces every media flow's controller.
pub fn build_simulation(sc: &Scenario, seed: u64, controller_override: Option<&str>) -> Result<Simulation, ConfigError> {
    build_simulation_with(sc, seed, controller_override, None)
}

/// [`build_simulation`] with a file reader for parameters that name files (ONNX models).
pub fn build_simulation_with(sc: &Scenario, seed: u64, controller_override: Option<&str>, read_file: Option<FileReader>) -> Result<Simulation, ConfigError> {
    build_simulation_ext(sc, seed, controller_override, read_file, None)
}

/// [`build_simulation_with`] plus a factory for controllers built outside the core (the Python
/// binding's user classes), tried for names the registry does not know.
pub fn build_simulation_ext(sc: &Scenario, seed: u64, controller_override: Option<&str>, read_file: Option<FileReader>, external: Option<ExternalFactory>) -> Result<Simulation, ConfigError> {
    sc.validate()?;
    let end = Time::from_secs_f64(sc.duration_s);
    // Link sections by direction: [forward, reverse (RFC 8867 5.3)].
    let link_cfgs: Vec<(&str, &LinkConfig)> = std::iter::once(("link", &sc.link)).chain(sc.reverse_link.as_ref().map(|l| ("reverse_link", l))).collect();
    let two_way = link_cfgs.len() == 2;
    let mut capacities = Vec::new();
    for (section, l) in &link_cfgs { capacities.push(capacity_schedule(l).map_err(|e| e.prefixed(section))?); }

    // Each direction's capacity over the run: the scenario's, then each route change's.
    let route_links = route_change_links(&sc.route_changes, end)?;
    let routed_capacities = routed_capacities(&capacities, &route_links);
    let mut routes = super::route::Routes::new(sc);
    for (rl, rc) in route_links.into_iter().zip(&sc.route_changes) {
        routes.changes.push(super::route::RouteChange {
            at: rl.at, dir: rl.dir, link: Some(rl.link), delay: rl.delay, told: rc.flows.clone().unwrap_or_default(), carry: rl.carry,
        });
    }

    routes.capacities = routed_capacities.clone();
    let specs = expand_flows(sc, controller_override);
    // Activity windows of the flows sharing each direction's link (the oracle's fair share).
    let windows = activity_windows(&specs);

    let mut flows = Vec::new();
    for spec in specs {
        let FlowSpec { index: i, info, start, stop, fwd_delay: fwd, ret_delay: ret, params } = spec;
        let fc = &sc.flows[i];
        let field = format!("flows[{i}]");
        let id = info.id as usize;
        let dir = info.direction;
        let controller_name = info.controller.clone();
        let state = match fc.kind {
            FlowKind::Media => {
                let mut cx = BuildContext::new(derive_seed(seed, 1000 + id as u64));
                cx.read_file = read_file.clone();
                cx.external = external.clone();
                cx.fair_share = Some(fair_share_routed(routed_capacities[dir.index()].clone(), windows.clone(), dir));
                cx.audio_kbps = Some(fc.media.audio_kbps);
                FlowState::Media(Box::new(build_media_flow(fc, &field, &controller_name, &params, &cx, seed, id as u64)?))
            }
            FlowKind::Tcp => {
                let mut cfg: TcpConfig = controllers::parse_params(&fc.tcp).map_err(|e| e.prefixed(&format!("{field}.tcp")))?;
                let on_off = fc.on_off.as_ref().map(|o| OnOff {
                    file_bytes: o.file_bytes.round() as u64, off_mean_s: o.off_mean_s, initially_on: o.initially_on,
                    rng: ChaCha8Rng::seed_from_u64(derive_seed(seed, 4000 + id as u64)), waiting: false, files: 0,
                });
                if on_off.is_some() {
                    if cfg.max_bytes.is_some() { return Err(ConfigError::new(format!("{field}.tcp.max_bytes"), "cannot be combined with on_off (each file is on_off.file_bytes)")); }
                    cfg.max_bytes = Some(0); // files are appended at each ON
                }
                let sender = TcpSender::with_seed(&cfg, derive_seed(seed, 3000 + id as u64)).map_err(|e| e.prefixed(&format!("{field}.tcp")))?;
                FlowState::Tcp(Box::new(TcpFlow { sender, receiver: TcpReceiver::new(&cfg), sender_wake: None, receiver_wake: None, on_off }))
            }
        };
        let mut metrics = FlowMetrics::new(start, stop);
        if two_way { metrics.return_path = Some(ReturnPathCounters::default()); }
        let mut state = state;
        if let FlowState::Media(m) = &mut state { m.receiver.set_return_delay(Some(ret)); }
        flows.push(Flow { info, start, stop, fwd_delay: fwd, ret_delay: ret, active: false, metrics, state });
    }

    let mut links = Vec::new();
    for ((section, l), cap) in link_cfgs.iter().zip(capacities) {
        links.push(build_link(l, cap, end).map_err(|e| e.prefixed(section))?);
    }
    let mut sim = Simulation {
        now: Time::ZERO,
        end,
        events: Default::default(),
        links,
        rng: ChaCha8Rng::seed_from_u64(derive_seed(seed, 1)),
        flows,
        packets: PacketLog::default(),
        series: SeriesLog::default(),
        record_packets: sc.metrics.packet_log,
        series_interval: Duration::from_ms_f64(sc.metrics.series_interval_ms),
        last_queue_delay: [Duration::ZERO; 2],
        control: Default::default(),
        next_control_id: 0,
        data_propagating: 0,
        scratch: Vec::new(),
        events_processed: 0,
        finished: false,
        abort: None,
        routes,
    };
    // Default audience of a route change: the media flows on its link.
    for (i, rc) in sc.route_changes.iter().enumerate() {
        if rc.flows.is_none() { sim.routes.changes[i].told = sim.media_flows_on(rc.direction); }
    }
    sim.schedule_route_changes();
    for f in &sim.flows {
        if f.start < end {
            sim.events.push(f.start, Event::FlowStart(f.info.id));
            sim.events.push(f.stop, Event::FlowStop(f.info.id));
        }
    }
    super::push_timer(&mut sim.events, Time::ZERO + sim.series_interval, Event::Series);
    Ok(sim)
}

/// One flow of a scenario after `count` is expanded: its id, label and delays as the
/// simulator uses them. Shared by the simulator and the live driver, so both name, time and
/// delay the flows the same way.
#[derive(Clone, Debug)]
pub struct FlowSpec {
    /// Index of the flow's section in `scenario.flows`.
    pub index: usize,
    pub info: FlowInfo,
    pub start: Time,
    pub stop: Time,
    /// Data path delay after the data bottleneck: that link's `delay_ms` + `one_way_delay_ms`.
    pub fwd_delay: Duration,
    /// Return path delay: `return_delay_ms` (default `one_way_delay_ms`), plus the other link's
    /// `delay_ms` when the scenario has a `reverse_link`.
    pub ret_delay: Duration,
    /// Controller parameters (see [`override_params`] when `controller_override` replaced the controller).
    pub params: serde_json::Value,
}

/// The parameters a flow hands controller `c` when `c` replaces its scenario controller `own`:
/// its own when `c` is `own`, none otherwise (a scenario's `params` are written for `own` and
/// would not fit another controller). No guessing by key names: the front end gives a
/// replacing controller its parameters explicitly (`-p NAME.KEY=VALUE`, a plan's
/// `[params."NAME"]`) and refuses a typed `--set flows.N.params.…` that would not arrive.
fn override_params(c: &str, own: &str, params: &serde_json::Value) -> serde_json::Value {
    if c == own { params.clone() } else { serde_json::Value::Null }
}

/// Expand `count`, name the flows (`label`, `label{k}`, or `media{id}` / `tcp{id}`), and work
/// out each one's activity window and delays. `controller_override` replaces the controller of
/// every media flow (with the parameters [`override_params`] keeps).
pub fn expand_flows(sc: &Scenario, controller_override: Option<&str>) -> Vec<FlowSpec> {
    let end = Time::from_secs_f64(sc.duration_s);
    let link_delays: Vec<Duration> = std::iter::once(&sc.link).chain(sc.reverse_link.as_ref()).map(|l| Duration::from_ms_f64(l.delay_ms)).collect();
    let two_way = link_delays.len() == 2;
    let mut specs = Vec::new();
    for (i, fc) in sc.flows.iter().enumerate() {
        for k in 0..fc.count {
            let id = specs.len();
            let start = Time::from_secs_f64(fc.start_s);
            let stop = fc.stop_s.map_or(end, Time::from_secs_f64).min(end);
            let label = match (&fc.label, fc.count) {
                (Some(l), 1) => l.clone(),
                (Some(l), _) => format!("{l}{k}"),
                (None, _) => format!("{}{}", match fc.kind { FlowKind::Media => "media", FlowKind::Tcp => "tcp" }, id),
            };
            let dir = fc.direction;
            // A reverse flow without a reverse_link fails validation; never index past the links.
            let fwd = link_delays.get(dir.index()).copied().unwrap_or(Duration::ZERO) + Duration::from_ms_f64(fc.one_way_delay_ms);
            // With a return link, its own delay is part of the return path too.
            let ret_link_delay = if two_way { link_delays[dir.other().index()] } else { Duration::ZERO };
            let ret = ret_link_delay + Duration::from_ms_f64(fc.return_delay_ms.unwrap_or(fc.one_way_delay_ms));
            let (controller_name, params) = match controller_override {
                Some(c) => (c.to_string(), override_params(c, &fc.controller, &fc.params)),
                None => (fc.controller.clone(), fc.params.clone()),
            };
            let info = FlowInfo {
                id: id as u32, label, kind: fc.kind, direction: dir,
                controller: match fc.kind { FlowKind::Media => controller_name, FlowKind::Tcp => tcp_cc_name(&fc.tcp) },
                start_s: start.as_secs_f64(), stop_s: stop.as_secs_f64(), one_way_delay_ms: fwd.as_ms_f64(), return_delay_ms: ret.as_ms_f64(),
            };
            specs.push(FlowSpec { index: i, info, start, stop, fwd_delay: fwd, ret_delay: ret, params });
        }
    }
    specs
}

/// Activity windows of all flows, by the direction their data travels.
pub fn activity_windows(specs: &[FlowSpec]) -> Vec<(Direction, Time, Time)> {
    specs.iter().map(|s| (s.info.direction, s.start, s.stop)).collect()
}

/// The `oracle`'s fair share on the link of direction `dir`: its capacity divided by the
/// number of flows of that direction active at the time.
pub fn fair_share(capacity: CapacitySchedule, windows: Vec<(Direction, Time, Time)>, dir: Direction) -> Arc<dyn Fn(Time) -> Bitrate + Send + Sync> {
    fair_share_routed(vec![(Time::ZERO, capacity)], windows, dir)
}

/// [`fair_share`] on a link whose route changes: `capacities` are `(from, schedule)` in time
/// order, each in effect from its time on.
pub fn fair_share_routed(capacities: Vec<(Time, CapacitySchedule)>, windows: Vec<(Direction, Time, Time)>, dir: Direction) -> Arc<dyn Fn(Time) -> Bitrate + Send + Sync> {
    Arc::new(move |t: Time| {
        let n = windows.iter().filter(|(d, s, e)| *d == dir && *s <= t && t < *e).count().max(1);
        let i = capacities.partition_point(|(from, _)| *from <= t).saturating_sub(1);
        capacities[i].1.rate_at(t) / n as i64
    })
}

/// Name shown for a TCP flow's controller, e.g. `tcp-newreno`.
fn tcp_cc_name(tcp: &serde_json::Value) -> String {
    format!("tcp-{}", tcp.get("cc").and_then(|v| v.as_str()).unwrap_or("newreno"))
}

#[cfg(test)]
mod tests {
    use super::override_params;
    use serde_json::json;

    #[test]
    fn override_keeps_the_parameters_only_for_the_flows_own_controller() {
        assert_eq!(override_params("gcc", "gcc", &json!({"profile": "m84"})), json!({"profile": "m84"}));
        assert_eq!(override_params("onnx", "gcc", &json!({"profile": "m84"})), serde_json::Value::Null);
        assert_eq!(override_params("onnx", "gcc", &serde_json::Value::Null), serde_json::Value::Null);
        // No guessing by key: a key only `onnx` knows is not handed over from a gcc flow...
        assert_eq!(override_params("onnx", "gcc", &json!({"model": "m.onnx"})), serde_json::Value::Null);
        // ... and a typo stays with the flow's own controller, whose parse then fails.
        assert_eq!(override_params("gcc", "gcc", &json!({"profle": "m84"})), json!({"profle": "m84"}));
    }
}
