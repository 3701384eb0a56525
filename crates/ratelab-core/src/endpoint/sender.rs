//! The media sender: encoder model, packetizer, audio, pacer, send history and every call
//! into the controller, behind a sans-IO surface. A driver feeds it time and feedback and
//! carries its packets; it never sees a socket or an event queue.

use super::rate::{cwnd_drop_interval, AudioStream, SendFrameRate};
use super::send_clock::SendClock;
use crate::controller::{Constraints, Controller, Update};
use crate::feedback::generator::FeedbackReport;
use crate::feedback::history::SendHistory;
use crate::media::encoder::{packetize, Encoder, Frame};
use crate::media::fec::FecSender;
use crate::media::pacer::{Pacer, QueuedPacket};
use crate::media::rtx::RtxHistory;
use crate::network::packet::Payload;
use crate::units::{Bitrate, Bytes, Duration, Time};
use std::collections::VecDeque;

/// The sender's own timers. The simulator keeps one event per timer (so that events at the
/// same instant keep their order); a wall-clock driver just calls
/// [`MediaSender::handle_timeout`] at [`MediaSender::poll_timeout`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SenderTimer { Frame, Audio, Tick, Pacer }

/// A packet the sender puts on the wire now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transmit {
    /// Transport-wide sequence number.
    pub seq: u64,
    /// Size on the wire (IP/UDP/RTP headers included).
    pub size: Bytes,
    pub send_time: Time,
    pub probe_cluster: Option<u32>,
    pub payload: Payload,
    /// Capture time of what it carries (the send time for padding).
    pub capture: Time,
}

/// Settings the builder fills in from a flow's configuration.
pub struct SenderParts {
    pub controller: Box<dyn Controller>,
    pub constraints: Constraints,
    pub encoder: Encoder,
    pub pacer: Pacer,
    pub max_payload: u32,
    pub header: Bytes,
    pub pause_allowed: bool,
    pub overhead_accounting: bool,
    pub queue_time_limit: Duration,
    pub frame_phase: Duration,
    pub include_report_time: bool,
    pub pauses: Vec<(Time, Time)>,
    pub audio: Option<AudioStream>,
}

pub struct MediaSender {
    controller: Box<dyn Controller>,
    constraints: Constraints,
    encoder: Encoder,
    max_payload: u32,
    header: Bytes,
    pacer: Pacer,
    history: SendHistory,
    target: Bitrate,
    /// WebRTC's encoder pause (pacer queue too long), checked at every controller tick.
    paused: bool,
    pause_allowed: bool,
    /// Encoder gets `target × payload_share` (header overhead removed) when on.
    overhead_accounting: bool,
    /// EWMA of payload / (payload + header) over recent packets.
    payload_share: f64,
    queue_time_limit: Duration,
    /// Offset of the first frame capture after the start.
    frame_phase: Duration,
    /// Give controllers the receiver's report time (RFC 8888-style exact RTT).
    include_report_time: bool,
    /// Scheduled media pauses `[from, to)` (RFC 8867 5.8), in order.
    pauses: Vec<(Time, Time)>,
    /// Inside a scheduled pause at the last frame time.
    in_pause: bool,
    /// Congestion-window pushback by frame dropping (`Update::cwnd_reduce_ratio`).
    cwnd_reduce_ratio: f64,
    /// Drop every n-th frame (libwebrtc `VideoStreamEncoder::cwnd_frame_drop_interval_`).
    cwnd_drop_interval: Option<u64>,
    cwnd_frame_counter: u64,
    audio: Option<AudioStream>,
    next_frame: Option<Time>,
    next_audio: Option<Time>,
    next_tick: Option<Time>,
    /// The pacer wake-up the driver was asked for (a later one is left to it: it fires, finds
    /// nothing due or sends, and re-arms).
    pacer_wake: Option<Time>,
    /// A pacer wake-up set since the driver last asked ([`MediaSender::take_pacer_arm`]).
    pacer_armed: Option<Time>,
    /// Packets released and not yet taken by [`MediaSender::poll_transmit`].
    out: VecDeque<Transmit>,
    /// A scheduled pause began (`true`) or ended (`false`) at the last frame time.
    pause_edge: Option<bool>,
    /// Smallest wire size of a packet (a live datagram cannot be shorter than its headers).
    min_wire: Bytes,
    /// Packets without feedback for this long leave the in-flight count (live only).
    in_flight_timeout: Option<Duration>,
    expired: Bytes,
    frames_encoded: u64,
    /// libwebrtc's send frame rate, refreshed at every frame tick while a model reads it
    /// (`media.fec`, `media.expected_overhead_bytes`; endpoint/rate.rs).
    send_frame_rate: SendFrameRate,
    /// libwebrtc's loss protection (`media.fec`): ULPFEC packets and the encoder's share; with
    /// `media.nack` alone, the retransmission share only ([`FecSender::nack_only`]).
    fec: Option<FecSender>,
    /// The flow's next RTP (media) sequence number.
    next_media_seq: u64,
    /// Sent media kept for NACKs (`media.nack`; `None`: no retransmission).
    rtx: Option<RtxHistory>,
    retransmitted_packets: u64,
    retransmitted_bytes: Bytes,
    /// libwebrtc's expected per-packet overhead (`media.expected_overhead_bytes`); `None`: the
    /// measured header share.
    expected_overhead: Option<Bytes>,
    /// Bytes of each packet the controller does not count (`media.srtp_tag_bytes`): on the wire,
    /// but added after the size is recorded for the estimator.
    srtp_tag: Bytes,
    /// The send times the controller is told (send_clock.rs).
    send_clock: SendClock,
}

/// Stands in for the controller while [`MediaSender::map_controller`] swaps it.
struct Unset;
impl Controller for Unset {
    fn on_start(&mut self, _: Time, _: Constraints) -> Update { Update::default() }
    fn on_feedback(&mut self, _: &crate::controller::TransportFeedback) -> Update { Update::default() }
}

/// A driver that falls this far behind its timers (a descheduled process) skips ahead rather
/// than bursting.
const CATCH_UP: Duration = Duration::from_secs(1);

/// goog_cc's `MaybeTriggerOnNetworkChanged` fires when the RTT changes, and the RTT comes with
/// each RTCP receiver report: libwebrtc's video report interval, 1 s on average
/// (`RTCPSender`'s `kDefaultVideoReportInterval`, randomized 0.5-1.5×). Each such report runs
/// `RtpVideoSender::OnBitrateUpdated`, so the FEC share taken off the encoder is at most this old.
const PROTECTION_REFRESH: Duration = Duration::from_secs(1);

impl MediaSender {
    pub fn new(p: SenderParts) -> MediaSender {
        let payload_share = p.max_payload as f64 / (p.max_payload as f64 + p.header.as_f64());
        MediaSender {
            controller: p.controller, constraints: p.constraints, encoder: p.encoder, max_payload: p.max_payload, header: p.header,
            pacer: p.pacer, history: SendHistory::new(), target: p.constraints.start_rate, paused: false, pause_allowed: p.pause_allowed,
            overhead_accounting: p.overhead_accounting, payload_share, queue_time_limit: p.queue_time_limit, frame_phase: p.frame_phase,
            include_report_time: p.include_report_time, pauses: p.pauses, in_pause: false, cwnd_reduce_ratio: 0.0, cwnd_drop_interval: None,
            cwnd_frame_counter: 0, audio: p.audio, next_frame: None, next_audio: None, next_tick: None, pacer_wake: None, pacer_armed: None,
            out: VecDeque::new(), pause_edge: None, min_wire: Bytes::ZERO, in_flight_timeout: None, expired: Bytes::ZERO, frames_encoded: 0, send_frame_rate: SendFrameRate::default(), fec: None,
            next_media_seq: 0, rtx: None, retransmitted_packets: 0, retransmitted_bytes: Bytes::ZERO, expected_overhead: None, srtp_tag: Bytes::ZERO,
            send_clock: SendClock::default(),
        }
    }

    /// Live transport settings: the smallest datagram on the wire, and the age after which a
    /// packet without feedback stops counting as in flight.
    pub fn set_live_limits(&mut self, min_wire: Bytes, in_flight_timeout: Duration) {
        self.min_wire = min_wire;
        self.in_flight_timeout = Some(in_flight_timeout);
    }

    /// Turn on loss protection (`media.fec`, or NACK's share alone) before the start.
    pub fn set_fec(&mut self, fec: FecSender) { self.fec = Some(fec); }
    pub fn fec(&self) -> Option<&FecSender> { self.fec.as_ref() }
    /// Take libwebrtc's expected overhead off the target instead of the measured header share
    /// (`media.expected_overhead_bytes`), counting packets at the encoder's frame rate.
    pub fn set_expected_overhead(&mut self, per_packet: Bytes) {
        self.expected_overhead = Some(per_packet);
        let t = self.encoder_target();
        self.encoder.set_target(t);
    }

    /// The SRTP tag each packet carries on the wire and the controller never sees
    /// (`media.srtp_tag_bytes`): libwebrtc records a packet's size for transport feedback
    /// before SRTP appends the tag.
    pub fn set_srtp_tag(&mut self, tag: Bytes) { self.srtp_tag = tag.max(Bytes::ZERO); }

    /// Record send times as a real sender does (`media.send_time_resolution_ms`,
    /// `media.burst_spacing_us`; send_clock.rs): the wire is unchanged.
    pub fn set_send_clock(&mut self, clock: SendClock) { self.send_clock = clock; }

    /// Answer NACKs with RTX packets from a send-side history (`media.nack`).
    pub fn enable_nack(&mut self) { self.rtx = Some(RtxHistory::new()); }

    /// Replace the controller before the start (the RL environment's rate follower).
    pub fn set_controller(&mut self, c: Box<dyn Controller>) { self.controller = c; }

    /// Wrap the controller (a recorder in tests, a logger): `f` gets the current one.
    pub fn map_controller(&mut self, f: impl FnOnce(Box<dyn Controller>) -> Box<dyn Controller>) {
        let c = std::mem::replace(&mut self.controller, Box::new(Unset));
        self.controller = f(c);
    }

    /// The flow starts: the controller's `on_start`, then the first frame, audio packet and
    /// tick are due.
    pub fn start(&mut self, now: Time) {
        let u = self.controller.on_start(now, self.constraints);
        self.apply(now, u);
        self.next_frame = Some(now + self.frame_phase);
        let tick = self.controller.tick_interval();
        self.next_tick = (tick > Duration::ZERO).then(|| now + tick);
        self.next_audio = self.audio.map(|_| now + self.frame_phase);
        self.arm_pacer(now);
    }

    /// When `which` is next due.
    #[inline]
    pub fn timer(&self, which: SenderTimer) -> Option<Time> {
        match which {
            SenderTimer::Frame => self.next_frame,
            SenderTimer::Audio => self.next_audio,
            SenderTimer::Tick => self.next_tick,
            SenderTimer::Pacer => self.pacer_wake,
        }
    }

    /// The earliest time anything is due.
    pub fn poll_timeout(&self) -> Option<Time> {
        [self.next_frame, self.next_audio, self.next_tick, self.pacer_wake].into_iter().flatten().min()
    }

    /// Run every timer due by `now`: frames, audio, controller ticks, then the pacer.
    pub fn handle_timeout(&mut self, now: Time) {
        while let Some(t) = self.next_frame.filter(|&t| t <= now) { self.frame(t, now); }
        while let Some(t) = self.next_audio.filter(|&t| t <= now) { self.audio_packet(t, now); }
        while let Some(t) = self.next_tick.filter(|&t| t <= now) { self.tick(t, now); }
        if self.pacer_wake.is_some_and(|w| w <= now) {
            self.pacer_wake = None;
            self.release(now);
        }
        self.arm_pacer(now);
    }

    /// Run one timer that the driver scheduled for exactly `now` (the simulator's events).
    /// A pacer wake-up that is no longer the armed one is stale and does nothing.
    #[inline]
    pub fn handle_timer(&mut self, now: Time, which: SenderTimer) {
        match which {
            SenderTimer::Frame => self.frame(now, now),
            SenderTimer::Audio => self.audio_packet(now, now),
            SenderTimer::Tick => self.tick(now, now),
            SenderTimer::Pacer => {
                if self.pacer_wake != Some(now) { return; }
                self.pacer_wake = None;
                self.release(now);
            }
        }
        self.arm_pacer(now);
    }

    /// The next packet to put on the wire, in send order.
    #[inline]
    pub fn poll_transmit(&mut self) -> Option<Transmit> { self.out.pop_front() }

    /// A pacer wake-up set since the last call: the simulator schedules an event for it.
    #[inline]
    pub fn take_pacer_arm(&mut self) -> Option<Time> { self.pacer_armed.take() }

    /// A scheduled pause began (`true`) or ended (`false`): the simulator tells its receiver.
    pub fn take_pause_edge(&mut self) -> Option<bool> { self.pause_edge.take() }

    /// A transport-wide feedback report (`with_time`: the wire format carries the report
    /// time, RFC 8888). A report that matches no sent packet (a duplicate, or one about
    /// expired packets) does not reach the controller.
    pub fn handle_feedback(&mut self, now: Time, report: &FeedbackReport, with_time: bool) {
        let fb = self.history.on_report(now, report, with_time && self.include_report_time);
        if fb.packets.is_empty() { return; }
        let loss_report = self.fec.as_mut().is_some_and(|f| f.on_feedback(&fb));
        if let Some(h) = self.rtx.as_mut() {
            // The history's RTT, as RTCP measures it (receiver hold time removed): the newest
            // packet the report acknowledges.
            if let Some(p) = fb.packets.iter().rev().find(|p| p.received()) {
                if let Some(rx) = p.recv_time { h.set_rtt((now - p.sent.send_time) - (report.report_time - rx)); }
            }
        }
        let u = self.controller.on_feedback(&fb);
        // goog_cc also reports the network when only its RTT moved, which each RTCP receiver
        // report (about one a second) does: the protection is refreshed at least that often,
        // also where too few packets for a loss report arrive (a few frames a second).
        let stale = self.fec.as_ref().and_then(|f| f.updated_at()).is_some_and(|t| now - t >= PROTECTION_REFRESH);
        let refresh = (loss_report || stale) && u.target_rate.is_none();
        self.apply(now, u);
        if refresh { self.refresh_protection(now); }
        self.arm_pacer(now);
    }

    /// A generic NACK (RFC 4585) listing media sequence numbers: each one still in the history
    /// (and not retransmitted within the last RTT) goes into the pacer as an RTX packet, ahead
    /// of new video (libwebrtc's pacer sends retransmissions before video).
    pub fn handle_nack(&mut self, now: Time, media_seqs: &[u64]) {
        let Some(h) = self.rtx.as_mut() else { return };
        for &seq in media_seqs {
            if let Some((size, payload)) = h.retransmit(now, seq) {
                self.pacer.enqueue_retransmission(QueuedPacket { size, payload, enqueue_time: now });
            }
        }
        self.arm_pacer(now);
    }

    /// A receiver-side rate report (REMB).
    pub fn handle_remote_estimate(&mut self, now: Time, rate: Bitrate) {
        let u = self.controller.on_remote_estimate(now, rate);
        self.apply(now, u);
        self.arm_pacer(now);
    }

    /// The route changed under the flow (handover).
    pub fn handle_route_change(&mut self, now: Time) {
        let u = self.controller.on_route_change(now, self.constraints);
        self.apply(now, u);
        self.arm_pacer(now);
    }

    /// Transport sequence number of the next packet (to unwrap 16-bit feedback).
    pub fn next_seq(&self) -> u64 { self.history.next_seq() }
    pub fn target(&self) -> Bitrate { self.target }
    /// What the encoder produces now (0 while paused).
    pub fn encoder_rate(&self) -> Bitrate { if self.paused || self.in_pause { Bitrate::ZERO } else { self.encoder.output_rate() } }
    pub fn pacing_rate(&self) -> Bitrate { self.pacer.pacing_rate() }
    pub fn cwnd(&self) -> Bytes { self.pacer.cwnd() }
    pub fn constraints(&self) -> Constraints { self.constraints }
    pub fn header(&self) -> Bytes { self.header }
    pub fn frames_encoded(&self) -> u64 { self.frames_encoded }
    /// Frames the encoder's rate control dropped; `None` without `media.frame_floor_kbit`
    /// (that encoder never drops).
    pub fn frames_dropped_by_encoder(&self) -> Option<u64> { self.encoder.frames_dropped() }
    /// The encoder's picture; `None` where the resolution is not modelled.
    pub fn resolution(&self) -> Option<(u32, u32)> { self.encoder.resolution() }
    /// The frame-level series columns (`fps`, `width`, `height`) over an interval `iv` that
    /// began with `frames_before` frames encoded; shared by the simulator and the live sender.
    pub fn frame_columns(&self, frames_before: u64, iv: Duration) -> (f64, f64, f64) {
        let fps = if iv > Duration::ZERO { (self.frames_encoded - frames_before) as f64 / iv.as_secs_f64() } else { f64::NAN };
        let (w, h) = self.resolution().map_or((f64::NAN, f64::NAN), |(w, h)| (w as f64, h as f64));
        (fps, w, h)
    }
    /// RTX packets sent and their bytes on the wire (`None` without `media.nack`).
    pub fn retransmitted(&self) -> Option<(u64, Bytes)> { self.rtx.as_ref().map(|_| (self.retransmitted_packets, self.retransmitted_bytes)) }
    /// WebRTC's encoder pause is on (the pacer queue is too long).
    pub fn encoder_paused(&self) -> bool { self.paused }
    pub fn in_flight(&self) -> Bytes { self.history.in_flight() }
    pub fn pacer_queue_time(&self) -> Duration { self.pacer.expected_queue_time() }
    /// Bytes the in-flight timeout released (feedback that never came).
    pub fn expired_bytes(&self) -> Bytes { self.expired }

    /// One video frame captured at `t` (handled at `now`): scheduled pauses, the encoder
    /// pause, congestion-window frame dropping, then packetization into the pacer.
    fn frame(&mut self, t: Time, now: Time) {
        let interval = self.encoder.frame_interval();
        let scheduled = self.pauses.iter().any(|&(a, b)| a <= t && t < b);
        if scheduled != self.in_pause {
            self.in_pause = scheduled;
            self.pause_edge = Some(scheduled);
        }
        if !self.paused && !scheduled && !self.cwnd_drops_frame() {
            // `None`: the encoder's rate control dropped the frame (media.frame_floor_kbit).
            if let Some(frame) = self.encoder.encode(t) { self.enqueue_frame(now, frame); }
        }
        if self.reads_send_frame_rate() { self.send_frame_rate.rate(now); }
        let next = t + interval;
        self.next_frame = Some(if now - next > CATCH_UP { now } else { next });
    }

    /// An encoded frame: packetized into the pacer (and counted for loss protection).
    fn enqueue_frame(&mut self, now: Time, frame: Frame) {
        self.frames_encoded += 1;
        if self.reads_send_frame_rate() { self.send_frame_rate.on_encoded(now); }
        let parts = packetize(frame.size, self.max_payload);
        let count = parts.len();
        if let Some(f) = self.fec.as_mut() { f.on_encoded(now, frame.size, frame.keyframe); }
        self.observe_packetization(frame.size, count);
        for (i, p) in parts.enumerate() {
            let payload = Payload::Media { frame: frame.id as u32, index: i as u16, count: count as u16, capture: frame.capture, keyframe: frame.keyframe, media_seq: self.next_media_seq as u32, rtx: false };
            self.next_media_seq += 1;
            self.pacer.enqueue(QueuedPacket { size: p + self.header, payload, enqueue_time: now });
        }
    }

    /// One audio packet captured at `t`, straight onto the wire (audio is not paced; it keeps
    /// going through video pauses, as a call's audio does).
    fn audio_packet(&mut self, t: Time, now: Time) {
        let Some(a) = self.audio else { return };
        self.send(now, a.size, None, Payload::Audio, t);
        let next = t + a.interval;
        self.next_audio = Some(if now - next > CATCH_UP { now } else { next });
    }

    /// The controller's periodic work: the pacer queue (`on_sender_queue`), `on_tick`, then
    /// WebRTC's encoder-pause rule.
    fn tick(&mut self, t: Time, now: Time) {
        let q = self.controller.on_sender_queue(now, self.pacer.queue_bytes());
        self.apply(now, q);
        let u = self.controller.on_tick(now);
        self.apply(now, u);
        if self.pause_allowed { self.paused = self.pacer.expected_queue_time() > self.queue_time_limit; }
        if let Some(age) = self.in_flight_timeout { self.expired += self.history.expire(now, age); }
        let tick = self.controller.tick_interval().max(Duration::from_ms(1));
        let next = t + tick;
        self.next_tick = Some(if now - next > CATCH_UP { now + tick } else { next });
    }

    /// Everything the pacer lets out now.
    fn release(&mut self, now: Time) {
        while let Some(rel) = self.pacer.poll(now, self.history.in_flight()) {
            let capture = match rel.payload { Payload::Media { capture, .. } => capture, _ => now };
            if let (Some(h), Payload::Media { media_seq, rtx, .. }) = (self.rtx.as_mut(), rel.payload) {
                h.on_sent(now, media_seq as u64, rel.size, rel.payload);
                if rtx { self.retransmitted_packets += 1; self.retransmitted_bytes += rel.size; }
            }
            self.send(now, rel.size, rel.probe_cluster, rel.payload, capture);
            if self.fec.is_some() { self.protect(now, rel.size, rel.payload); }
        }
    }

    /// Loss protection after a packet left the pacer: count it, and queue the FEC packets of the
    /// block a frame's last media packet completes (libwebrtc generates them as the pacer sends
    /// the media and queues them behind it, at video priority).
    fn protect(&mut self, now: Time, size: Bytes, payload: Payload) {
        let Some(f) = self.fec.as_mut() else { return };
        match payload {
            // A retransmission is not protected again (libwebrtc's generator sees media only), but
            // its bytes are protection overhead.
            Payload::Media { rtx: true, .. } => f.on_retransmission_sent(now, size),
            Payload::Media { frame, index, count, capture, keyframe, .. } => {
                let last = index + 1 == count;
                if let Some(b) = f.on_media_sent(now, frame as u64, capture, keyframe, last, size, size - self.header) {
                    let payload = Payload::Fec {
                        first_frame: b.first_frame as u32, frames: b.frames, media: b.media.min(48) as u8, fec: b.fec.min(48) as u8, protected: b.protected.get().clamp(0, u16::MAX as i64) as u16,
                        first_capture: b.first_capture, span_us: (b.last_capture - b.first_capture).as_us().clamp(0, u32::MAX as i64) as u32, keyframe: b.keyframe,
                    };
                    for _ in 0..b.fec { self.pacer.enqueue(QueuedPacket { size: b.size, payload, enqueue_time: now }); }
                }
            }
            Payload::Fec { .. } => f.on_fec_sent(now, size),
            _ => {}
        }
    }

    #[inline]
    fn send(&mut self, now: Time, size: Bytes, probe_cluster: Option<u32>, payload: Payload, capture: Time) {
        let size = size.max(self.min_wire);
        let counted = (size - self.srtp_tag).max(Bytes::new(1));
        let sp = self.history.on_sent(self.send_clock.stamp(now), counted, probe_cluster, payload == Payload::Padding);
        let u = self.controller.on_packet_sent(&sp);
        if !u.is_empty() { self.apply(now, u); }
        self.out.push_back(Transmit { seq: sp.seq, size, send_time: now, probe_cluster, payload, capture });
    }

    /// Ask the driver for a pacer wake-up at the pacer's next send time, unless an earlier
    /// one is pending.
    #[inline]
    fn arm_pacer(&mut self, now: Time) {
        let Some(t) = self.pacer.next_send_time(now, self.history.in_flight()) else { return };
        if self.pacer_wake.is_some_and(|w| w <= t) { return; }
        self.pacer_wake = Some(t);
        self.pacer_armed = Some(t);
    }

    /// Apply a controller update to encoder and pacer.
    fn apply(&mut self, now: Time, u: Update) {
        if let Some(r) = u.cwnd_reduce_ratio { self.cwnd_reduce_ratio = if r.is_finite() { r.clamp(0.0, 1.0) } else { 0.0 }; }
        if let Some(t) = u.target_rate { self.target = t.max(self.constraints.min_rate).min(self.constraints.max_rate); }
        if u.target_rate.is_some() { self.update_protection(now); }
        if u.target_rate.is_some() || u.cwnd_reduce_ratio.is_some() {
            let t = self.encoder_target();
            self.encoder.set_target(t);
        }
        if let Some(p) = u.pacing_rate { self.pacer.set_pacing_rate(p.max(Bitrate::from_kbps(10))); }
        if let Some(p) = u.padding_rate { self.pacer.set_padding_rate(p); }
        if let Some(w) = u.cwnd { self.pacer.set_cwnd(w.max(Bytes::new(1))); }
        for p in u.probes { self.pacer.add_probe(now, p); }
    }

    /// libwebrtc `OnBitrateUpdated`: the FEC controller sees the payload rate and the picture
    /// the encoder makes now.
    fn update_protection(&mut self, now: Time) {
        if self.fec.is_none() { return; }
        let payload = self.payload_target();
        let (resolution, fps) = (self.encoder.resolution(), self.send_frame_rate.current());
        if let Some(f) = self.fec.as_mut() {
            if let Some(r) = resolution { f.set_resolution(r); }
            f.set_frame_rate(fps);
            f.on_bitrate_update(now, payload);
        }
    }

    /// Only loss protection and the expected overhead read the send frame rate; the default
    /// sender does not track it.
    fn reads_send_frame_rate(&self) -> bool { self.fec.is_some() || self.expected_overhead.is_some() }

    /// A new loss fraction without a new target: goog_cc still sends an update (the loss
    /// changed), so the protection and the encoder's share follow it.
    fn refresh_protection(&mut self, now: Time) {
        self.update_protection(now);
        let t = self.encoder_target();
        self.encoder.set_target(t);
    }

    /// The rate handed to the encoder: the target, minus header overhead when accounted.
    /// Frame dropping for congestion-window pushback lowers it by the dropped share; with an
    /// audio stream, the audio's share (its wire rate with overhead accounting, its payload rate
    /// without) is taken off first, as libwebrtc's allocator gives audio its rate.
    /// With loss protection the FEC share of the last second's video is taken off too
    /// (`FecControllerDefault::UpdateFecRates`).
    fn encoder_target(&mut self) -> Bitrate {
        let t = self.payload_target();
        let t = match &self.fec { Some(f) => t.scale(1.0 - f.overhead_share()), None => t };
        self.cwnd_drop_interval = cwnd_drop_interval(t, self.cwnd_reduce_ratio, self.constraints.min_rate);
        match self.cwnd_drop_interval {
            Some(n) => Bitrate::from_bps(t.bps() - t.bps() / n as i64),
            None => t,
        }
    }

    /// The target less audio and (when accounted) header overhead.
    fn payload_target(&self) -> Bitrate {
        let target = match &self.audio {
            Some(a) => self.target.saturating_sub(if self.overhead_accounting { a.wire_rate() } else { a.payload_rate }),
            None => self.target,
        };
        match (self.overhead_accounting, self.expected_overhead) {
            (false, _) => target,
            (true, None) => target.scale(self.payload_share),
            (true, Some(per_packet)) => {
                let packet = Bytes::new(self.max_payload as i64) + self.header;
                target.saturating_sub(expected_overhead_rate(target, self.send_frame_rate.current(), packet, per_packet))
            }
        }
    }

    /// Whether the next frame is dropped for the congestion window (counts the frame).
    fn cwnd_drops_frame(&mut self) -> bool {
        let Some(n) = self.cwnd_drop_interval else { return false };
        let drop = self.cwnd_frame_counter % n == 0;
        self.cwnd_frame_counter += 1;
        drop
    }

    /// Track the payload share of a packetized frame (EWMA, gain 0.1).
    fn observe_packetization(&mut self, frame_payload: Bytes, packets: usize) {
        if packets == 0 { return; }
        let avg = frame_payload.as_f64() / packets as f64;
        let share = avg / (avg + self.header.as_f64()).max(1.0);
        self.payload_share += 0.1 * (share - self.payload_share);
        let t = self.encoder_target();
        self.encoder.set_target(t);
    }
}

/// libwebrtc's `RtpVideoSender::CalculateOverheadRate` with its frame-rate packet count (the
/// `UseFrameRateForOverhead` form): `ceil(frame / packet)` packets a frame, the packet rate
/// rounded up to whole packets a second, each charged `per_packet`.
pub fn expected_overhead_rate(rate: Bitrate, fps: f64, packet: Bytes, per_packet: Bytes) -> Bitrate {
    let fps = fps.max(1.0);
    let frame_bytes = rate.bps_f64() / 8.0 / fps;
    let per_frame = (frame_bytes / packet.as_f64().max(1.0)).ceil();
    let packet_rate = (per_frame * fps).ceil();
    Bitrate::from_bps_f64(packet_rate * per_packet.as_f64() * 8.0)
}

#[cfg(test)]
#[path = "sender_tests.rs"]
mod tests;
