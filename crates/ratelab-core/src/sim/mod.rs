//! The deterministic discrete-event simulator: one driver of the controller interface.
//!
//! Packets go sender → bottleneck queue → (bottleneck + flow propagation delay) → receiver;
//! feedback goes receiver → (uncongested return delay) → sender, or, with a `reverse_link`
//! (RFC 8867 5.3), through a second bottleneck as packets of their wire size. Flows with
//! `direction = "reverse"` send their data over that second link and get their feedback over
//! the first. Every random draw comes from RNGs seeded from the run seed.

pub mod build;
pub mod control;
pub mod env;
pub mod events;
pub mod media_flow;
mod route;
pub mod summary;
pub mod synth;
pub mod tcp_flow;

use crate::endpoint::{Arrival, FramePart, ReceiverTimer, SenderTimer};
use crate::feedback::generator::FeedbackReport;
use crate::metrics::{FlowMetrics, PacketLog, SeriesLog};
use crate::network::link::{Enqueued, Link};
use crate::network::packet::{Packet, Payload};
use crate::scenario::{Direction, FlowKind};
use control::ControlMsg;
use std::collections::HashMap;
use crate::units::{Bitrate, Duration, Time};
use events::EventQueue;
use media_flow::MediaFlow;
use tcp_flow::TcpFlow;
use crate::transport::tcp::Segment;
use crate::units::Bytes;
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub use build::{build_simulation, build_simulation_ext, build_simulation_with};

/// Static description of a flow.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FlowInfo {
    pub id: u32,
    pub label: String,
    pub kind: FlowKind,
    /// Which link the flow's data crosses.
    pub direction: Direction,
    pub controller: String,
    pub start_s: f64,
    pub stop_s: f64,
    pub one_way_delay_ms: f64,
    pub return_delay_ms: f64,
}

impl Flow {
    /// Which link the flow's data crosses (its feedback crosses the other one, if any).
    pub fn dir(&self) -> Direction { self.info.direction }
}

pub enum FlowState {
    Media(Box<MediaFlow>),
    Tcp(Box<TcpFlow>),
}

pub struct Flow {
    pub info: FlowInfo,
    pub start: Time,
    pub stop: Time,
    /// Data path delay after the bottleneck (link delay + flow propagation).
    pub fwd_delay: Duration,
    /// Return path delay (after the return link's queue when there is one).
    pub ret_delay: Duration,
    pub active: bool,
    pub metrics: FlowMetrics,
    pub state: FlowState,
}

#[derive(Debug)]
enum Event {
    FlowStart(u32),
    FlowStop(u32),
    Frame(u32),
    /// The next packet of a flow's audio stream.
    Audio(u32),
    Pacer(u32),
    ControllerTick(u32),
    FeedbackTimer(u32),
    EstimatorTick(u32),
    /// A media receiver's NACK check (`media.nack`; on the heap, not a timer slot, so that
    /// runs without NACK keep their event layout).
    NackTimer(u32),
    /// The transmission in service on link `Direction` ends.
    LinkDone(Direction),
    Deliver(Packet),
    /// A receiver → sender message arrives over an uncongested return path.
    Control(u32, ControlMsg),
    Series,
    TcpSenderTimer(u32),
    TcpReceiverTimer(u32),
    /// Start the next file of an on/off TCP flow.
    TcpOn(u32),
    /// Route change `i` of the scenario takes effect (sim/route.rs).
    RouteChange(usize),
}

/// The event lane (sim/events.rs) of flow `f`'s data packets propagating to its receiver: they
/// leave a FIFO bottleneck in order and all take the flow's fixed delay, so they are scheduled
/// in time order (when a trace's delay column shrinks, the queue falls back to its heap).
fn data_lane(f: u32) -> usize { 2 * f as usize }
/// The lane of flow `f`'s receiver → sender messages (fixed return delay, or its packets
/// leaving the reverse bottleneck in order).
fn control_lane(f: u32) -> usize { 2 * f as usize + 1 }
/// Single-event slots (sim/events.rs), group `PER_PACKET`: the end of transmission on link `d`
/// (a link has one packet in service, so one `LinkDone` pending) and flow `f`'s pacer wake-up
/// (a second pending wake-up, earlier than a stale one, goes to the heap).
const PER_PACKET: usize = 0;
fn link_slot(d: Direction) -> usize { d.index() }
fn pacer_slot(f: u32) -> usize { 2 + f as usize }
/// Group `TIMERS`: the periodic events, one pending per source.
const TIMERS: usize = 1;
/// Schedule a periodic event in its `TIMERS` slot: the series sampler's, or one of each flow's
/// five (frame, audio, controller tick, feedback timer, estimator tick).
fn push_timer(q: &mut EventQueue<Event>, t: Time, ev: Event) {
    let per_flow = |f: u32, k: usize| 1 + 5 * f as usize + k;
    let slot = match ev {
        Event::Frame(f) => per_flow(f, 0),
        Event::Audio(f) => per_flow(f, 1),
        Event::ControllerTick(f) => per_flow(f, 2),
        Event::FeedbackTimer(f) => per_flow(f, 3),
        Event::EstimatorTick(f) => per_flow(f, 4),
        _ => 0, // `Series`
    };
    q.push_in_slot(TIMERS, slot, t, ev);
}

pub struct Simulation {
    now: Time,
    end: Time,
    events: EventQueue<Event>,
    /// `links[Direction::index()]`: the forward bottleneck, and the reverse one if configured.
    links: Vec<Link>,
    rng: ChaCha8Rng,
    pub flows: Vec<Flow>,
    packets: PacketLog,
    series: SeriesLog,
    record_packets: bool,
    series_interval: Duration,
    /// Queuing delay of the most recent packet to leave each bottleneck.
    last_queue_delay: [Duration; 2],
    /// Content of control packets in the network, keyed by `Payload::Control::id`.
    control: HashMap<u64, (u32, ControlMsg)>,
    next_control_id: u64,
    /// Data packets that left a bottleneck and have not reached their receiver yet.
    data_propagating: u64,
    /// Reusable buffer for wire-size computations.
    scratch: Vec<u8>,
    events_processed: u64,
    finished: bool,
    /// Raised by a driver to stop mid-run (a user controller failed); checked after every event
    /// only when set, so built-in runs pay one predictable branch.
    abort: Option<Arc<AtomicBool>>,
    routes: route::Routes,
}

impl Simulation {
    pub fn now(&self) -> Time { self.now }
    pub fn end(&self) -> Time { self.end }
    /// The forward bottleneck.
    pub fn link(&self) -> &Link { &self.links[0] }
    /// The reverse bottleneck, if the scenario has one.
    pub fn reverse_link(&self) -> Option<&Link> { self.links.get(1) }
    pub fn is_finished(&self) -> bool { self.finished }
    pub fn events_processed(&self) -> u64 { self.events_processed }
    pub fn take_packets(&mut self) -> PacketLog { self.packets.take() }
    pub fn take_series(&mut self) -> SeriesLog { self.series.take() }
    /// Media flow `f`'s sender endpoint (None for a TCP flow).
    pub fn media_sender(&self, f: u32) -> Option<&crate::endpoint::MediaSender> {
        match &self.flows.get(f as usize)?.state { FlowState::Media(m) => Some(&m.sender), _ => None }
    }
    /// Media flow `f`'s receiver endpoint (None for a TCP flow).
    pub fn media_receiver(&self, f: u32) -> Option<&crate::endpoint::MediaReceiver> {
        match &self.flows.get(f as usize)?.state { FlowState::Media(m) => Some(&m.receiver), _ => None }
    }
    pub fn flow_infos(&self) -> Vec<FlowInfo> { self.flows.iter().map(|f| f.info.clone()).collect() }
    /// Stop [`Simulation::run_until`] right after the event during which `flag` is raised.
    pub fn set_abort(&mut self, flag: Arc<AtomicBool>) { self.abort = Some(flag); }
    /// Whether the abort flag stopped the run.
    pub fn is_aborted(&self) -> bool { self.abort.as_ref().is_some_and(|a| a.load(Ordering::Relaxed)) }

    /// Run until simulated time `t` (or the end). Returns true once the run is complete.
    pub fn run_until(&mut self, t: Time) -> bool {
        let limit = t.min(self.end);
        while let Some((et, ev)) = self.events.pop_until(limit) {
            self.now = et;
            self.events_processed += 1;
            self.dispatch(ev);
            if self.abort.is_some() && self.is_aborted() { return false; }
        }
        self.now = self.now.max(limit);
        if limit >= self.end && !self.finished { self.finish(); }
        self.finished
    }

    pub fn run_to_end(&mut self) { self.run_until(self.end); }

    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::FlowStart(f) => self.on_flow_start(f),
            Event::FlowStop(f) => self.on_flow_stop(f),
            Event::Frame(f) => self.on_frame(f),
            Event::Audio(f) => self.on_audio(f),
            Event::Pacer(f) => self.on_pacer(f),
            Event::ControllerTick(f) => self.on_controller_tick(f),
            Event::FeedbackTimer(f) => self.on_feedback_timer(f),
            Event::NackTimer(f) => self.on_nack_timer(f),
            Event::EstimatorTick(f) => self.on_estimator_tick(f),
            Event::LinkDone(d) => self.on_link_done(d),
            Event::Deliver(p) => self.on_deliver(p),
            Event::Control(f, msg) => self.on_control(f, msg),
            Event::Series => self.on_series(),
            Event::TcpSenderTimer(f) => self.on_tcp_sender_timer(f),
            Event::TcpReceiverTimer(f) => self.on_tcp_receiver_timer(f),
            Event::TcpOn(f) => self.on_tcp_on(f),
            Event::RouteChange(i) => self.on_route_change(i),
        }
    }

    fn media(&mut self, f: u32) -> Option<&mut MediaFlow> {
        let flow = self.flows.get_mut(f as usize)?;
        if !flow.active { return None; }
        match &mut flow.state { FlowState::Media(m) => Some(m), FlowState::Tcp(_) => None }
    }

    fn tcp(&mut self, f: u32) -> Option<&mut TcpFlow> {
        match &mut self.flows.get_mut(f as usize)?.state { FlowState::Tcp(t) => Some(t), FlowState::Media(_) => None }
    }

    fn on_flow_start(&mut self, f: u32) {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        flow.active = true;
        let m = match &mut flow.state {
            FlowState::Media(m) => m,
            FlowState::Tcp(t) => {
                if let Some(o) = t.on_off.as_mut() {
                    if !o.initially_on {
                        o.waiting = true;
                        let off = o.off_time();
                        self.events.push(now + off, Event::TcpOn(f));
                        return;
                    }
                    o.files += 1;
                    t.sender.extend_stream(o.file_bytes);
                }
                self.tcp_transmit(f);
                return;
            }
        };
        let s = &mut m.sender;
        s.start(now);
        let r = &mut m.receiver;
        r.start(now);
        if let Some(t) = s.timer(SenderTimer::Frame) { push_timer(&mut self.events, t, Event::Frame(f)); }
        if let Some(t) = s.timer(SenderTimer::Tick) { push_timer(&mut self.events, t, Event::ControllerTick(f)); }
        if let Some(t) = r.timer(ReceiverTimer::Feedback) { push_timer(&mut self.events, t, Event::FeedbackTimer(f)); }
        if let Some(t) = r.timer(ReceiverTimer::Estimator) { push_timer(&mut self.events, t, Event::EstimatorTick(f)); }
        if let Some(t) = r.timer(ReceiverTimer::Nack) { self.events.push(t, Event::NackTimer(f)); }
        if let Some(t) = m.sender.timer(SenderTimer::Audio) { push_timer(&mut self.events, t, Event::Audio(f)); }
        self.schedule_pacer(f);
    }

    fn on_flow_stop(&mut self, f: u32) {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        flow.active = false;
        if let FlowState::Media(m) = &mut flow.state { m.receiver.finish(now); }
    }

    /// A video frame is due: the sender encodes and packetizes it into its pacer (a scheduled
    /// pause starting or ending there is passed on to the receiver).
    fn on_frame(&mut self, f: u32) {
        let now = self.now;
        let Some(m) = self.media(f) else { return };
        m.sender.handle_timer(now, SenderTimer::Frame);
        if let Some(paused) = m.sender.take_pause_edge() { m.receiver.handle_sender_pause(paused); }
        let next = m.sender.timer(SenderTimer::Frame);
        if let Some(t) = next { push_timer(&mut self.events, t, Event::Frame(f)); }
        self.schedule_pacer(f);
    }

    /// One audio packet, straight onto the wire.
    fn on_audio(&mut self, f: u32) {
        let now = self.now;
        let Some(m) = self.media(f) else { return };
        m.sender.handle_timer(now, SenderTimer::Audio);
        let next = m.sender.timer(SenderTimer::Audio);
        self.transmit(f);
        if let Some(t) = next { push_timer(&mut self.events, t, Event::Audio(f)); }
        self.schedule_pacer(f);
    }

    /// Schedule the pacer wake-up the sender asked for, if it asked for a new one.
    #[inline]
    fn schedule_pacer(&mut self, f: u32) {
        let Some(m) = self.media(f) else { return };
        let Some(t) = m.sender.take_pacer_arm() else { return };
        self.events.push_in_slot(PER_PACKET, pacer_slot(f), t, Event::Pacer(f));
    }

    fn on_pacer(&mut self, f: u32) {
        let now = self.now;
        let Some(m) = self.media(f) else { return };
        m.sender.handle_timer(now, SenderTimer::Pacer);
        self.transmit(f);
        self.schedule_pacer(f);
    }

    /// Put the packets media flow `f`'s sender released into the network, in order.
    #[inline]
    fn transmit(&mut self, f: u32) {
        loop {
            let FlowState::Media(m) = &mut self.flows[f as usize].state else { return };
            let Some(t) = m.sender.poll_transmit() else { return };
            let pkt = Packet { flow: f, seq: t.seq, size: t.size, send_time: t.send_time, enqueue_time: t.send_time, tx_start: t.send_time, probe_cluster: t.probe_cluster, payload: t.payload };
            self.send_into_network(pkt);
        }
    }

    /// A data packet of its flow enters the flow's bottleneck.
    fn send_into_network(&mut self, pkt: Packet) {
        let flow = &mut self.flows[pkt.flow as usize];
        flow.metrics.on_sent(pkt.size);
        let dir = flow.dir();
        self.enqueue(dir, pkt);
    }

    /// A packet (data or control) reaches the bottleneck of direction `dir`.
    fn enqueue(&mut self, dir: Direction, pkt: Packet) {
        match self.links[dir.index()].enqueue(self.now, pkt, &mut self.rng) {
            Enqueued::Accepted(Some(end)) => self.events.push_in_slot(PER_PACKET, link_slot(dir), end, Event::LinkDone(dir)),
            Enqueued::Accepted(None) => {}
            Enqueued::Dropped(_, p) => self.on_dropped(p),
        }
    }

    /// A packet was dropped at a bottleneck (queue full or random loss).
    fn on_dropped(&mut self, p: Packet) {
        let flow = &mut self.flows[p.flow as usize];
        if let Payload::Control { id } = p.payload {
            self.control.remove(&id);
            if let Some(c) = flow.metrics.return_path.as_mut() { c.on_lost(p.size); }
            return;
        }
        flow.metrics.on_lost(p.size);
        if self.record_packets { self.packets.push(p.flow, p.seq, p.size, p.send_time, None, true); }
    }

    /// Send a receiver → sender message of flow `f`: over the other direction's bottleneck when
    /// the scenario has two, else after the uncongested return delay.
    fn send_control(&mut self, f: u32, msg: ControlMsg) {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        let ret = flow.ret_delay;
        let Some(counters) = flow.metrics.return_path.as_mut() else {
            self.events.push_in_lane(control_lane(f), now + ret, Event::Control(f, msg));
            return;
        };
        let size = msg.wire_size(&mut self.scratch);
        counters.on_sent(size);
        let id = self.next_control_id;
        self.next_control_id += 1;
        self.control.insert(id, (f, msg));
        let pkt = Packet { flow: f, seq: id, size, send_time: now, enqueue_time: now, tx_start: now, probe_cluster: None, payload: Payload::Control { id } };
        let dir = flow.dir().other();
        self.enqueue(dir, pkt);
    }

    fn on_link_done(&mut self, dir: Direction) {
        let now = self.now;
        let link = &mut self.links[dir.index()];
        // A route change may have dropped the packet this event was for.
        if link.service_end() != Some(now) { return; }
        let Some((pkt, next)) = link.complete(now) else { return };
        if let Some(end) = next { self.events.push_in_slot(PER_PACKET, link_slot(dir), end, Event::LinkDone(dir)); }
        self.last_queue_delay[dir.index()] = pkt.tx_start - pkt.enqueue_time;
        if link.drop_on_exit(now, &mut self.rng) {
            self.on_dropped(pkt);
            return;
        }
        let exit = link.exit_time(now);
        let flow = &self.flows[pkt.flow as usize];
        let (lane, delay) = if matches!(pkt.payload, Payload::Control { .. }) {
            (control_lane(pkt.flow), flow.ret_delay)
        } else {
            self.data_propagating += 1;
            (data_lane(pkt.flow), flow.fwd_delay)
        };
        self.events.push_in_lane(lane, exit + delay, Event::Deliver(pkt));
    }

    fn on_deliver(&mut self, pkt: Packet) {
        let now = self.now;
        if let Payload::Control { id } = pkt.payload {
            let Some((_, msg)) = self.control.remove(&id) else { return };
            if let Some(c) = self.flows[pkt.flow as usize].metrics.return_path.as_mut() { c.on_delivered(pkt.size); }
            self.on_control(pkt.flow, msg);
            return;
        }
        self.data_propagating -= 1;
        let record = self.record_packets;
        let flow = &mut self.flows[pkt.flow as usize];
        flow.metrics.on_received(now, pkt.size, now - pkt.send_time, pkt.tx_start - pkt.enqueue_time);
        if record { self.packets.push(pkt.flow, pkt.seq, pkt.size, pkt.send_time, Some(now), false); }
        let m = match &mut flow.state {
            FlowState::Media(m) => m,
            FlowState::Tcp(t) => {
                let Payload::Tcp { seq, len, retransmit } = pkt.payload else { return };
                let seg = Segment { seq, len: Bytes::new(len as i64), wire_size: pkt.size, is_retransmit: retransmit, send_time: pkt.send_time };
                if let Some(ack) = t.receiver.on_segment(now, &seg) { self.send_control(pkt.flow, ControlMsg::TcpAck(ack)); }
                self.schedule_tcp_receiver(pkt.flow);
                return;
            }
        };
        let frame = match pkt.payload {
            Payload::Media { frame, index, count, capture, keyframe, media_seq, .. } => Some(FramePart { frame: frame as u64, index, media_seq: Some(media_seq as u64), count, capture, keyframe }),
            _ => None,
        };
        let kind = crate::network::packet::media_kind(&pkt.payload, pkt.probe_cluster);
        let arrival = Arrival { seq: pkt.seq, size: pkt.size, send_time: Some(pkt.send_time), kind, frame };
        match pkt.payload.fec_info() {
            Some(info) => m.receiver.handle_fec_packet(now, arrival, info),
            None => m.receiver.handle_packet(now, arrival),
        }
        self.send_receiver_output(pkt.flow);
    }

    fn on_nack_timer(&mut self, f: u32) {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        let FlowState::Media(m) = &mut flow.state else { return };
        m.receiver.handle_timer(now, ReceiverTimer::Nack);
        // As the feedback timer: on until the sender stopped and its packets had time to land.
        if flow.active || now < flow.stop + Duration::from_secs(2) {
            if let Some(t) = m.receiver.timer(ReceiverTimer::Nack) { self.events.push(t, Event::NackTimer(f)); }
        }
        self.send_receiver_output(f);
    }

    fn on_feedback_timer(&mut self, f: u32) {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        let FlowState::Media(m) = &mut flow.state else { return };
        m.receiver.handle_timer(now, ReceiverTimer::Feedback);
        // Keep reporting after the sender stopped, until everything in flight has arrived.
        if flow.active || m.receiver.has_pending_feedback() || now < flow.stop + Duration::from_secs(2) {
            if let Some(t) = m.receiver.timer(ReceiverTimer::Feedback) { push_timer(&mut self.events, t, Event::FeedbackTimer(f)); }
        }
        self.send_receiver_output(f);
    }

    fn on_feedback(&mut self, f: u32, report: &FeedbackReport) {
        let now = self.now;
        let Some(m) = self.media(f) else { return };
        m.sender.handle_feedback(now, report, true);
        self.schedule_pacer(f);
    }

    fn on_controller_tick(&mut self, f: u32) {
        let now = self.now;
        let Some(m) = self.media(f) else { return };
        m.sender.handle_timer(now, SenderTimer::Tick);
        if let Some(t) = m.sender.timer(SenderTimer::Tick) { push_timer(&mut self.events, t, Event::ControllerTick(f)); }
        self.schedule_pacer(f);
    }

    fn on_estimator_tick(&mut self, f: u32) {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        if !flow.active { return; }
        let FlowState::Media(m) = &mut flow.state else { return };
        if !m.receiver.has_estimator() { return; }
        m.receiver.handle_timer(now, ReceiverTimer::Estimator);
        if let Some(t) = m.receiver.timer(ReceiverTimer::Estimator) { push_timer(&mut self.events, t, Event::EstimatorTick(f)); }
        self.send_receiver_output(f);
    }

    /// Send a receiver-side rate report for media flow `f` now, as a receiver-side estimator
    /// would: it reaches the sender's controller over the flow's return path. Used by
    /// drivers that compute the estimate outside the simulator (the RL environment).
    pub fn push_remote_estimate(&mut self, f: u32, rate: Bitrate) {
        if self.flows.get(f as usize).is_none() { return; }
        self.send_control(f, ControlMsg::RemoteEstimate(rate));
    }

    fn on_remote_estimate(&mut self, f: u32, rate: Bitrate) {
        let now = self.now;
        let Some(m) = self.media(f) else { return };
        m.sender.handle_remote_estimate(now, rate);
        self.schedule_pacer(f);
    }

    fn on_series(&mut self) {
        let now = self.now;
        let iv = self.series_interval;
        let mut caps = [0.0; 2];
        for (c, l) in caps.iter_mut().zip(&self.links) { *c = l.capacity().rate_at(now).kbps_f64(); }
        for flow in &mut self.flows {
            if !flow.active { continue; }
            let d = flow.dir().index();
            let (cap, qd) = (caps[d], self.last_queue_delay[d].as_ms_f64());
            let m = &mut flow.metrics;
            let s = &mut self.series;
            s.t_s.push(now.as_secs_f64());
            s.flow.push(flow.info.id);
            s.send_kbps.push((m.iv_sent / iv).kbps_f64());
            s.recv_kbps.push((m.iv_recv / iv).kbps_f64());
            s.owd_ms.push(if m.iv_owd_n > 0 { m.iv_owd_sum_us as f64 / m.iv_owd_n as f64 / 1e3 } else { f64::NAN });
            s.capacity_kbps.push(cap);
            s.queue_ms.push(qd);
            s.lost_packets.push(m.iv_lost as f64);
            m.iv_lost = 0;
            m.iv_sent = Default::default();
            m.iv_recv = Default::default();
            m.iv_owd_sum_us = 0;
            m.iv_owd_n = 0;
            match &flow.state {
                FlowState::Media(mf) => {
                    s.target_kbps.push(mf.sender.target().kbps_f64());
                    s.encoder_kbps.push(mf.sender.encoder_rate().kbps_f64());
                    s.pacing_kbps.push(mf.sender.pacing_rate().kbps_f64());
                    let w = mf.sender.cwnd();
                    s.cwnd_bytes.push(if w.is_finite() { w.as_f64() } else { f64::NAN });
                    s.freezes.push(mf.receiver.video_stats().freeze_count as f64);
                    let (fps, w, h) = mf.sender.frame_columns(m.iv_frames, iv);
                    m.iv_frames = mf.sender.frames_encoded();
                    s.fps.push(fps);
                    s.width.push(w);
                    s.height.push(h);
                }
                FlowState::Tcp(t) => {
                    s.target_kbps.push(f64::NAN);
                    s.encoder_kbps.push(f64::NAN);
                    s.pacing_kbps.push(t.sender.pacing_rate().map_or(f64::NAN, |r| r.kbps_f64()));
                    s.cwnd_bytes.push(t.sender.cwnd().as_f64());
                    s.freezes.push(f64::NAN);
                    s.fps.push(f64::NAN);
                    s.width.push(f64::NAN);
                    s.height.push(f64::NAN);
                }
            }
        }
        push_timer(&mut self.events, now + iv, Event::Series);
    }

    /// End of run: close video statistics and log packets still in flight.
    fn finish(&mut self) {
        self.finished = true;
        let end = self.end;
        for flow in &mut self.flows {
            if let FlowState::Media(m) = &mut flow.state {
                if flow.active { m.receiver.finish(end); }
                flow.metrics.video = Some(m.receiver.video_stats());
            }
        }
        if self.record_packets {
            // Data packets still in the network: in a bottleneck queue, in service, or propagating.
            let mut in_net: Vec<Packet> = Vec::new();
            for link in &self.links {
                in_net.extend(link.queued().copied());
                in_net.extend(link.in_service().copied());
            }
            let mut rest = EventQueue::default();
            while let Some((t, ev)) = self.events.pop() {
                if let Event::Deliver(p) = ev { in_net.push(p); } else { rest.push(t, ev); }
            }
            self.events = rest;
            in_net.retain(|p| !matches!(p.payload, Payload::Control { .. }));
            in_net.sort_by_key(|p| (p.flow, p.seq));
            for p in in_net { self.packets.push(p.flow, p.seq, p.size, p.send_time, None, false); }
        }
    }

    /// Data packets in the network right now (bottleneck queues, in service, propagating);
    /// feedback packets on a return link are counted per flow in `return_path`.
    pub fn packets_in_network(&self) -> u64 {
        let is_data = |p: &Packet| !matches!(p.payload, Payload::Control { .. });
        let mut n = self.data_propagating;
        for link in &self.links {
            n += link.queued().filter(|p| is_data(p)).count() as u64;
            n += link.in_service().filter(|p| is_data(p)).is_some() as u64;
        }
        n
    }

    /// Control packets of flow `f` in the network (queued, in service or propagating).
    pub fn control_packets_in_network(&self, f: u32) -> u64 {
        self.control.values().filter(|(owner, _)| *owner == f).count() as u64
    }
}
