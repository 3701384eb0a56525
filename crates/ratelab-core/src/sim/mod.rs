//! The deterministic discrete-event simulator: one driver of the controller interface.
//!
//! Packets go sender → bottleneck queue → (bottleneck + flow propagation delay) → receiver;
//! feedback goes receiver → (uncongested return delay) → sender. Every random draw comes from
//! RNGs seeded from the run seed.

pub mod build;
pub mod env;
pub mod events;
pub mod media_flow;
pub mod summary;
pub mod synth;
pub mod tcp_flow;

use crate::controller::{ReceivedPacket, Update};
use crate::feedback::generator::FeedbackReport;
use crate::media::encoder::packetize;
use crate::media::pacer::QueuedPacket;
use crate::metrics::{FlowMetrics, PacketLog, SeriesLog};
use crate::network::link::{Enqueued, Link};
use crate::network::packet::{Packet, Payload};
use crate::scenario::FlowKind;
use crate::units::{Bitrate, Duration, Time};
use events::EventQueue;
use media_flow::MediaFlow;
use tcp_flow::TcpFlow;
use crate::transport::tcp::{Ack, Segment};
use crate::units::Bytes;
use rand_chacha::ChaCha8Rng;

pub use build::{build_simulation, build_simulation_with};

/// Static description of a flow.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FlowInfo {
    pub id: u32,
    pub label: String,
    pub kind: FlowKind,
    pub controller: String,
    pub start_s: f64,
    pub stop_s: f64,
    pub one_way_delay_ms: f64,
    pub return_delay_ms: f64,
}

pub enum FlowState {
    Media(Box<MediaFlow>),
    Tcp(Box<TcpFlow>),
}

pub struct Flow {
    pub info: FlowInfo,
    pub start: Time,
    pub stop: Time,
    /// Forward delay after the bottleneck (link delay + flow propagation).
    pub fwd_delay: Duration,
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
    Pacer(u32),
    ControllerTick(u32),
    FeedbackTimer(u32),
    EstimatorTick(u32),
    LinkDone,
    Deliver(Packet),
    Feedback(u32, Box<FeedbackReport>),
    RemoteEstimate(u32, Bitrate),
    Series,
    TcpSenderTimer(u32),
    TcpReceiverTimer(u32),
    TcpAck(u32, Ack),
    /// Start the next file of an on/off TCP flow.
    TcpOn(u32),
}

pub struct Simulation {
    now: Time,
    end: Time,
    events: EventQueue<Event>,
    link: Link,
    rng: ChaCha8Rng,
    pub flows: Vec<Flow>,
    packets: PacketLog,
    series: SeriesLog,
    record_packets: bool,
    series_interval: Duration,
    /// Queuing delay of the most recent packet to leave the bottleneck.
    last_queue_delay: Duration,
    events_processed: u64,
    finished: bool,
}

impl Simulation {
    pub fn now(&self) -> Time { self.now }
    pub fn end(&self) -> Time { self.end }
    pub fn link(&self) -> &Link { &self.link }
    pub fn is_finished(&self) -> bool { self.finished }
    pub fn events_processed(&self) -> u64 { self.events_processed }
    pub fn take_packets(&mut self) -> PacketLog { self.packets.take() }
    pub fn take_series(&mut self) -> SeriesLog { self.series.take() }
    pub fn flow_infos(&self) -> Vec<FlowInfo> { self.flows.iter().map(|f| f.info.clone()).collect() }

    /// Run until simulated time `t` (or the end). Returns true once the run is complete.
    pub fn run_until(&mut self, t: Time) -> bool {
        let limit = t.min(self.end);
        while let Some(et) = self.events.peek_time() {
            if et > limit { break; }
            let Some((et, ev)) = self.events.pop() else { break };
            self.now = et;
            self.events_processed += 1;
            self.dispatch(ev);
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
            Event::Pacer(f) => self.on_pacer(f),
            Event::ControllerTick(f) => self.on_controller_tick(f),
            Event::FeedbackTimer(f) => self.on_feedback_timer(f),
            Event::EstimatorTick(f) => self.on_estimator_tick(f),
            Event::LinkDone => self.on_link_done(),
            Event::Deliver(p) => self.on_deliver(p),
            Event::Feedback(f, r) => self.on_feedback(f, &r),
            Event::RemoteEstimate(f, r) => self.on_remote_estimate(f, r),
            Event::Series => self.on_series(),
            Event::TcpSenderTimer(f) => self.on_tcp_sender_timer(f),
            Event::TcpReceiverTimer(f) => self.on_tcp_receiver_timer(f),
            Event::TcpAck(f, a) => self.on_tcp_ack(f, a),
            Event::TcpOn(f) => self.on_tcp_on(f),
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
        let u = m.controller.on_start(now, m.constraints);
        m.apply(now, u);
        let tick = m.controller.tick_interval();
        let fb = m.feedback.interval();
        let est = m.estimator.as_ref().map(|e| e.tick_interval());
        self.events.push(now + m.frame_phase, Event::Frame(f));
        if tick > Duration::ZERO { self.events.push(now + tick, Event::ControllerTick(f)); }
        if m.feedback.mode() == crate::feedback::generator::GeneratorMode::Twcc { self.events.push(now + fb, Event::FeedbackTimer(f)); }
        if let Some(d) = est { self.events.push(now + d, Event::EstimatorTick(f)); }
        self.schedule_pacer(f);
    }

    fn on_flow_stop(&mut self, f: u32) {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        flow.active = false;
        if let FlowState::Media(m) = &mut flow.state { m.receiver.finish(now); }
    }

    fn on_frame(&mut self, f: u32) {
        let now = self.now;
        let Some(m) = self.media(f) else { return };
        let interval = m.encoder.frame_interval();
        let scheduled = m.scheduled_pause(now);
        if scheduled != m.in_pause {
            m.in_pause = scheduled;
            if scheduled { m.receiver.pause() } else { m.receiver.resume() }
        }
        if !m.paused && !scheduled {
            let frame = m.encoder.encode(now);
            let payloads: Vec<_> = packetize(frame.size, m.max_payload).collect();
            m.observe_packetization(frame.size, payloads.len());
            let count = payloads.len() as u16;
            for (i, p) in payloads.into_iter().enumerate() {
                let payload = Payload::Media { frame: frame.id, index: i as u16, count, capture: now, keyframe: frame.keyframe };
                m.pacer.enqueue(QueuedPacket { size: p + m.header, payload, enqueue_time: now });
            }
        }
        self.events.push(now + interval, Event::Frame(f));
        self.schedule_pacer(f);
    }

    /// Make sure a pacer wake-up is scheduled at the pacer's next send time.
    fn schedule_pacer(&mut self, f: u32) {
        let now = self.now;
        let Some(m) = self.media(f) else { return };
        let Some(t) = m.pacer.next_send_time(now, m.history.in_flight()) else { return };
        if m.pacer_wake.is_some_and(|w| w <= t) { return; }
        m.pacer_wake = Some(t);
        self.events.push(t, Event::Pacer(f));
    }

    fn on_pacer(&mut self, f: u32) {
        let now = self.now;
        let Some(m) = self.media(f) else { return };
        if m.pacer_wake != Some(now) { return; }
        m.pacer_wake = None;
        loop {
            let Some(m) = self.media(f) else { return };
            let Some(rel) = m.pacer.poll(now, m.history.in_flight()) else { break };
            let sp = m.history.on_sent(now, rel.size, rel.probe_cluster, rel.payload == Payload::Padding);
            let u = m.controller.on_packet_sent(&sp);
            if !u.is_empty() { m.apply(now, u); }
            let pkt = Packet { flow: f, seq: sp.seq, size: rel.size, send_time: now, enqueue_time: now, tx_start: now, probe_cluster: rel.probe_cluster, payload: rel.payload };
            self.send_into_network(pkt);
        }
        self.schedule_pacer(f);
    }

    fn send_into_network(&mut self, pkt: Packet) {
        let now = self.now;
        let flow = &mut self.flows[pkt.flow as usize];
        flow.metrics.on_sent(pkt.size);
        match self.link.enqueue(now, pkt, &mut self.rng) {
            Enqueued::Accepted(Some(end)) => self.events.push(end, Event::LinkDone),
            Enqueued::Accepted(None) => {}
            Enqueued::Dropped(_, p) => {
                flow.metrics.on_lost(p.size);
                if self.record_packets { self.packets.push(p.flow, p.seq, p.size, p.send_time, None, true); }
            }
        }
    }

    fn on_link_done(&mut self) {
        let now = self.now;
        let Some((pkt, next)) = self.link.complete(now) else { return };
        if let Some(end) = next { self.events.push(end, Event::LinkDone); }
        self.last_queue_delay = pkt.tx_start - pkt.enqueue_time;
        let delay = self.flows[pkt.flow as usize].fwd_delay;
        let exit = self.link.exit_time(now);
        self.events.push(exit + delay, Event::Deliver(pkt));
    }

    fn on_deliver(&mut self, pkt: Packet) {
        let now = self.now;
        let record = self.record_packets;
        let flow = &mut self.flows[pkt.flow as usize];
        flow.metrics.on_received(now, pkt.size, now - pkt.send_time, pkt.tx_start - pkt.enqueue_time);
        if record { self.packets.push(pkt.flow, pkt.seq, pkt.size, pkt.send_time, Some(now), false); }
        let ret = flow.ret_delay;
        let m = match &mut flow.state {
            FlowState::Media(m) => m,
            FlowState::Tcp(t) => {
                let Payload::Tcp { seq, len, retransmit } = pkt.payload else { return };
                let seg = Segment { seq, len: Bytes::new(len as i64), wire_size: pkt.size, is_retransmit: retransmit, send_time: pkt.send_time };
                if let Some(ack) = t.receiver.on_segment(now, &seg) { self.events.push(now + ret, Event::TcpAck(pkt.flow, ack)); }
                self.schedule_tcp_receiver(pkt.flow);
                return;
            }
        };
        if let Payload::Media { frame, count, capture, keyframe, .. } = pkt.payload {
            m.receiver.on_packet(now, frame, count, capture, pkt.size - m.header, keyframe);
        }
        if let Some(e) = m.estimator.as_mut() {
            e.on_packet_received(&ReceivedPacket { seq: pkt.seq, size: pkt.size, send_time: pkt.send_time, recv_time: now });
            // The exact RTT this packet would show the sender: its one-way delay plus the return path.
            e.on_rtt_update(now, (now - pkt.send_time) + ret);
        }
        if let Some(report) = m.feedback.on_packet(now, pkt.seq) {
            self.events.push(now + ret, Event::Feedback(pkt.flow, Box::new(report)));
        }
    }

    fn on_feedback_timer(&mut self, f: u32) {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        let ret = flow.ret_delay;
        let FlowState::Media(m) = &mut flow.state else { return };
        let interval = m.feedback.interval();
        if let Some(r) = m.feedback.on_timer(now) { self.events.push(now + ret, Event::Feedback(f, Box::new(r))); }
        // Keep reporting after the sender stopped, until everything in flight has arrived.
        if flow.active || m.feedback.has_pending() || now < flow.stop + Duration::from_secs(2) {
            self.events.push(now + interval, Event::FeedbackTimer(f));
        }
    }

    fn on_feedback(&mut self, f: u32, report: &FeedbackReport) {
        let now = self.now;
        let Some(m) = self.media(f) else { return };
        let fb = m.history.on_report(now, report, m.include_report_time);
        let u = m.controller.on_feedback(&fb);
        m.apply(now, u);
        self.schedule_pacer(f);
    }

    fn on_controller_tick(&mut self, f: u32) {
        let now = self.now;
        let Some(m) = self.media(f) else { return };
        let q = m.controller.on_sender_queue(now, m.pacer.queue_bytes());
        m.apply(now, q);
        let u = m.controller.on_tick(now);
        m.apply(now, u);
        m.check_pause();
        let tick = m.controller.tick_interval().max(Duration::from_ms(1));
        self.events.push(now + tick, Event::ControllerTick(f));
        self.schedule_pacer(f);
    }

    fn on_estimator_tick(&mut self, f: u32) {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        if !flow.active { return; }
        let ret = flow.ret_delay;
        let FlowState::Media(m) = &mut flow.state else { return };
        let Some(e) = m.estimator.as_mut() else { return };
        let report = e.on_tick(now);
        let d = e.tick_interval().max(Duration::from_ms(1));
        if let Some(r) = report { self.events.push(now + ret, Event::RemoteEstimate(f, r)); }
        self.events.push(now + d, Event::EstimatorTick(f));
    }

    /// Send a receiver-side rate report for media flow `f` now, as a receiver-side estimator
    /// would: it reaches the sender's controller after the flow's return delay. Used by
    /// drivers that compute the estimate outside the simulator (the RL environment).
    pub fn push_remote_estimate(&mut self, f: u32, rate: Bitrate) {
        let Some(flow) = self.flows.get(f as usize) else { return };
        let at = self.now + flow.ret_delay;
        self.events.push(at, Event::RemoteEstimate(f, rate));
    }

    fn on_remote_estimate(&mut self, f: u32, rate: Bitrate) {
        let now = self.now;
        let Some(m) = self.media(f) else { return };
        let u: Update = m.controller.on_remote_estimate(now, rate);
        m.apply(now, u);
        self.schedule_pacer(f);
    }

    fn on_series(&mut self) {
        let now = self.now;
        let iv = self.series_interval;
        let cap = self.link.capacity().rate_at(now).kbps_f64();
        let qd = self.last_queue_delay.as_ms_f64();
        for flow in &mut self.flows {
            if !flow.active { continue; }
            let m = &mut flow.metrics;
            let s = &mut self.series;
            s.t_s.push(now.as_secs_f64());
            s.flow.push(flow.info.id);
            s.send_kbps.push((m.iv_sent / iv).kbps_f64());
            s.recv_kbps.push((m.iv_recv / iv).kbps_f64());
            s.owd_ms.push(if m.iv_owd_n > 0 { m.iv_owd_sum_us as f64 / m.iv_owd_n as f64 / 1e3 } else { f64::NAN });
            s.capacity_kbps.push(cap);
            s.queue_ms.push(qd);
            m.iv_sent = Default::default();
            m.iv_recv = Default::default();
            m.iv_owd_sum_us = 0;
            m.iv_owd_n = 0;
            match &flow.state {
                FlowState::Media(mf) => {
                    s.target_kbps.push(mf.target.kbps_f64());
                    s.encoder_kbps.push(if mf.paused || mf.in_pause { 0.0 } else { mf.encoder.output_rate().kbps_f64() });
                    s.pacing_kbps.push(mf.pacer.pacing_rate().kbps_f64());
                    let w = mf.pacer.cwnd();
                    s.cwnd_bytes.push(if w.is_finite() { w.as_f64() } else { f64::NAN });
                }
                FlowState::Tcp(t) => {
                    s.target_kbps.push(f64::NAN);
                    s.encoder_kbps.push(f64::NAN);
                    s.pacing_kbps.push(t.sender.pacing_rate().map_or(f64::NAN, |r| r.kbps_f64()));
                    s.cwnd_bytes.push(t.sender.cwnd().as_f64());
                }
            }
        }
        self.events.push(now + iv, Event::Series);
    }

    /// Send every segment the TCP sender allows now and re-arm its timer.
    fn tcp_transmit(&mut self, f: u32) {
        let now = self.now;
        if !self.flows[f as usize].active { return; }
        loop {
            let Some(t) = self.tcp(f) else { return };
            let Some(seg) = t.sender.poll_transmit(now) else { break };
            let pkt = Packet {
                flow: f, seq: seg.seq, size: seg.wire_size, send_time: now, enqueue_time: now, tx_start: now, probe_cluster: None,
                payload: Payload::Tcp { seq: seg.seq, len: seg.len.get().clamp(0, u32::MAX as i64) as u32, retransmit: seg.is_retransmit },
            };
            self.send_into_network(pkt);
        }
        let Some(t) = self.tcp(f) else { return };
        if let Some(at) = t.sender.next_timer() {
            if t.sender_wake.is_none_or(|w| at < w) {
                t.sender_wake = Some(at.max(now));
                self.events.push(at.max(now), Event::TcpSenderTimer(f));
            }
        }
    }

    fn schedule_tcp_receiver(&mut self, f: u32) {
        let Some(t) = self.tcp(f) else { return };
        if let Some(at) = t.receiver.next_timer() {
            if t.receiver_wake.is_none_or(|w| at < w) {
                t.receiver_wake = Some(at);
                self.events.push(at, Event::TcpReceiverTimer(f));
            }
        }
    }

    fn on_tcp_sender_timer(&mut self, f: u32) {
        let now = self.now;
        let active = self.flows[f as usize].active;
        let Some(t) = self.tcp(f) else { return };
        if t.sender_wake != Some(now) { return; }
        t.sender_wake = None;
        if !active { return; }
        if t.sender.next_timer().is_some_and(|at| at <= now) { t.sender.on_timer(now); }
        self.tcp_transmit(f);
    }

    fn on_tcp_receiver_timer(&mut self, f: u32) {
        let now = self.now;
        let ret = self.flows[f as usize].ret_delay;
        let Some(t) = self.tcp(f) else { return };
        if t.receiver_wake != Some(now) { return; }
        t.receiver_wake = None;
        if let Some(ack) = t.receiver.on_timer(now) { self.events.push(now + ret, Event::TcpAck(f, ack)); }
        self.schedule_tcp_receiver(f);
    }

    fn on_tcp_ack(&mut self, f: u32, ack: Ack) {
        let now = self.now;
        if !self.flows[f as usize].active { return; }
        let Some(t) = self.tcp(f) else { return };
        t.sender.on_ack(now, &ack);
        if let Some(o) = t.on_off.as_mut() {
            if !o.waiting && t.sender.is_finished() {
                o.waiting = true;
                let off = o.off_time();
                self.events.push(now + off, Event::TcpOn(f));
            }
        }
        self.tcp_transmit(f);
    }

    fn on_tcp_on(&mut self, f: u32) {
        if !self.flows[f as usize].active { return; }
        let Some(t) = self.tcp(f) else { return };
        let Some(o) = t.on_off.as_mut() else { return };
        o.waiting = false;
        o.files += 1;
        t.sender.extend_stream(o.file_bytes);
        self.tcp_transmit(f);
    }

    /// End of run: close video statistics and log packets still in flight.
    fn finish(&mut self) {
        self.finished = true;
        let end = self.end;
        for flow in &mut self.flows {
            if let FlowState::Media(m) = &mut flow.state {
                if flow.active { m.receiver.finish(end); }
                flow.metrics.video = Some(m.receiver.stats);
            }
        }
        if self.record_packets {
            // Packets still in the network: in the bottleneck queue, in service, or propagating.
            let mut in_net: Vec<Packet> = self.link.queued().copied().collect();
            if let Some(p) = self.link.in_service() { in_net.push(*p); }
            let mut rest = EventQueue::default();
            while let Some((t, ev)) = self.events.pop() {
                if let Event::Deliver(p) = ev { in_net.push(p); } else { rest.push(t, ev); }
            }
            self.events = rest;
            in_net.sort_by_key(|p| (p.flow, p.seq));
            for p in in_net { self.packets.push(p.flow, p.seq, p.size, p.send_time, None, false); }
        }
    }

    /// Packets in the network right now (bottleneck queue, in service, propagating).
    pub fn packets_in_network(&self) -> u64 {
        let q = self.link.queue_packets() as u64 + self.link.in_service().is_some() as u64;
        q + self.in_propagation()
    }

    fn in_propagation(&self) -> u64 {
        // Packets in propagation = departed from the link but not yet delivered.
        let departed = self.link.stats.departed_packets;
        let delivered: u64 = self.flows.iter().map(|f| f.metrics.packets_received).sum();
        departed.saturating_sub(delivered)
    }
}
