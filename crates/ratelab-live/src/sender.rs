//! The live sender: a thin UDP loop around the core's sans-IO [`MediaSender`] (built exactly
//! as the simulator builds it), writing its packets as RTP to a peer and feeding it the peer's
//! RTCP feedback (TWCC, RFC 8888, REMB).
//!
//! One thread, one socket: the loop decodes what arrived, runs one [`step`] of the endpoint
//! (feedback, then whatever is due), samples the series, then sleeps in `ppoll` until the
//! endpoint's next timeout or a datagram.

use crate::flags;
use crate::net::{self, LiveClock};
use crate::payload::{self, MediaHeader, IP_UDP_OVERHEAD, MIN_DATAGRAM};
use crate::{Quantiles, StopFlag};
use ratelab_core::controllers::{BuildContext, ExternalFactory};
use ratelab_core::endpoint::{MediaSender, SenderTimer, Transmit};
use ratelab_core::feedback::generator::FeedbackReport;
use ratelab_core::network::packet::Payload;
use ratelab_core::scenario::FlowConfig;
use ratelab_core::sim::build::build_media_flow;
use ratelab_core::wire::rfc8888::CcfbDecoder;
use ratelab_core::wire::rtp::RtpHeader;
use ratelab_core::wire::twcc::TwccDecoder;
use ratelab_core::wire::{is_rtcp, parse_rtcp, RtcpPacket};
use ratelab_core::{Bitrate, Bytes, ConfigError, Duration, Time};
use serde::{Deserialize, Serialize};
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;

/// Settings of a live sender (JSON from the front end; unknown keys are errors).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SenderOptions {
    /// How long to send, from the start (seconds).
    pub duration_s: f64,
    /// Wait this long before the flow starts (seconds; `flows[i].start_s` in `live run`).
    pub start_s: f64,
    /// RTP SSRC of the media stream.
    pub ssrc: u32,
    /// RTP header extension ID of the transport-wide sequence number (1..=14).
    pub tw_ext_id: u8,
    /// Seed of the encoder's frame-size noise and the controller's randomness.
    pub seed: u64,
    /// Period of the time series (ms).
    pub series_interval_ms: f64,
    /// Stop with an error when no feedback arrived for this long (seconds).
    pub silence_timeout_s: f64,
    /// Packets without feedback for this long leave the in-flight count (seconds).
    pub in_flight_timeout_s: f64,
    /// Keep the per-packet send log.
    pub packet_log: bool,
    /// The flow's id in its scenario (`live run`): selects the encoder's and the controller's
    /// random streams as the simulator does for that flow.
    pub flow_id: u64,
    /// Clock times (s, in order) at which the route changes under the flow (`live run`: the
    /// scenario's `route_changes` that tell this flow): the loop calls
    /// `MediaSender::handle_route_change` at each one within its active time, as the simulator
    /// does (`sim/route.rs`; a flow not yet started or already stopped is not told).
    pub route_changes_s: Vec<f64>,
}

impl Default for SenderOptions {
    fn default() -> Self {
        SenderOptions { duration_s: 60.0, start_s: 0.0, ssrc: 0x5241_544C, tw_ext_id: 5, seed: 1, series_interval_ms: 25.0, silence_timeout_s: 10.0, in_flight_timeout_s: 2.0, packet_log: true, flow_id: 0, route_changes_s: Vec::new() }
    }
}

/// `ratelab live send`'s flags, by the flow field they set.
const SEND_FLAGS: &[(&str, &str)] = &[("flows[0].media.start_kbps", "--start-kbps"), ("flows[0].media.min_kbps", "--min-kbps"), ("flows[0].media.max_kbps", "--max-kbps")];

impl SenderOptions {
    /// These options and `flow`'s numbers against their declared ranges (`crate::flags`);
    /// errors name `ratelab live send`'s flag where there is one.
    pub fn validate(&self, flow: &FlowConfig) -> Result<(), ConfigError> {
        if !(1..=14).contains(&self.tw_ext_id) { return Err(ConfigError::new("tw_ext_id", "must be in 1..=14")); }
        flags::check("--duration", &flags::SECONDS, self.duration_s)?;
        flags::check("--timeout", &flags::SECONDS, self.silence_timeout_s)?;
        flags::check("in_flight_timeout_s", &flags::SECONDS, self.in_flight_timeout_s)?;
        flags::check("start_s", flags::scenario("flows[0].start_s"), self.start_s)?;
        flags::check("series_interval_ms", flags::scenario("metrics.series_interval_ms"), self.series_interval_ms)?;
        for (i, t) in self.route_changes_s.iter().enumerate() { flags::check(&format!("route_changes[{i}].at_s"), flags::scenario("route_changes[0].at_s"), *t)?; }
        flags::check_part("flows[0]", flow, SEND_FLAGS)
    }
}

/// What the sender did (JSON-serializable part of its result).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SenderStats {
    /// `duration`, `stopped`, or `silent-peer`.
    pub end_reason: String,
    pub message: Option<String>,
    pub controller: String,
    pub packets_sent: u64,
    /// On-the-wire bytes (datagram + 28 bytes IPv4/UDP), as the simulator counts them.
    pub bytes_sent: i64,
    pub media_packets: u64,
    pub padding_packets: u64,
    /// Packets of the optional audio stream (`media.audio_kbps`).
    pub audio_packets: u64,
    pub frames_encoded: u64,
    /// Frames the encoder's rate control dropped (`media.frame_floor_kbit` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames_dropped_by_encoder: Option<u64>,
    pub feedback_packets: u64,
    pub feedback_malformed: u64,
    pub remb_packets: u64,
    /// Datagrams from any address other than the peer (ignored).
    pub foreign_datagrams: u64,
    pub send_errors: u64,
    /// Bytes released by the in-flight timeout (feedback that never came).
    pub expired_bytes: i64,
    /// Pacer timing error: actual − intended send time of packets the pacer scheduled ahead (µs).
    pub pacer_error_us: Quantiles,
    /// CPU time of the sender thread.
    pub cpu_us: i64,
    pub cpu_us_per_packet: f64,
    pub active_s: f64,
    /// Route changes the controller was told of (`on_route_change`), at these clock times (s).
    pub route_changes_told_s: Vec<f64>,
}

/// Sender-side time series, on the grid `k × interval`.
#[derive(Clone, Debug, Default)]
pub struct SenderSeries {
    pub k: Vec<u64>,
    pub target_kbps: Vec<f64>,
    /// What the encoder produces (0 while paused), as the simulator's series.
    pub encoder_kbps: Vec<f64>,
    pub pacing_kbps: Vec<f64>,
    pub send_kbps: Vec<f64>,
    pub cwnd_bytes: Vec<f64>,
    /// Frames encoded per second over the interval, and the encoder's picture (NaN where the
    /// resolution is not modelled), as the simulator's series.
    pub fps: Vec<f64>,
    pub width: Vec<f64>,
    pub height: Vec<f64>,
}

/// Per-packet send log.
#[derive(Clone, Debug, Default)]
pub struct SendLog {
    pub seq: Vec<u64>,
    pub size: Vec<u32>,
    pub send: Vec<Time>,
}

pub struct SenderResult {
    pub stats: SenderStats,
    pub series: SenderSeries,
    pub log: SendLog,
}

/// What the `oracle` controller is told about its share of the bottleneck.
pub type FairShare = Arc<dyn Fn(Time) -> Bitrate + Send + Sync>;

/// A configured sender, ready to run on its own thread.
pub struct Sender {
    sock: UdpSocket,
    peer: SocketAddr,
    clock: LiveClock,
    sender: MediaSender,
    opts: SenderOptions,
    stop: StopFlag,
}

impl Sender {
    /// Build the flow's controller and media pipeline from `flow` (the scenario schema of one
    /// media flow) and bind `bind`. `fair_share`: the flow's share of the emulated bottleneck
    /// over time (`sim::build::fair_share`), only for the `oracle`.
    pub fn new(flow: &FlowConfig, opts: SenderOptions, bind: SocketAddr, peer: SocketAddr, clock: LiveClock, fair_share: Option<FairShare>, stop: StopFlag) -> Result<Sender, String> {
        Self::new_ext(flow, opts, bind, peer, clock, fair_share, stop, None)
    }

    /// [`Sender::new`] with a factory for controllers built outside the core (Python classes).
    #[allow(clippy::too_many_arguments)]
    pub fn new_ext(flow: &FlowConfig, opts: SenderOptions, bind: SocketAddr, peer: SocketAddr, clock: LiveClock, fair_share: Option<FairShare>, stop: StopFlag, external: Option<ExternalFactory>) -> Result<Sender, String> {
        opts.validate(flow).map_err(|e| e.to_string())?;
        let mut cx = BuildContext::new(ratelab_core::sim::build::derive_seed(opts.seed, 1000 + opts.flow_id));
        cx.fair_share = fair_share;
        cx.read_file = Some(net::file_reader());
        cx.external = external;
        let mut sender = build_media_flow(flow, "flow", &flow.controller, &flow.params, &cx, opts.seed, opts.flow_id).map_err(|e| e.to_string())?.sender;
        sender.set_live_limits(Bytes::new(MIN_DATAGRAM as i64 + IP_UDP_OVERHEAD), Duration::from_secs_f64(opts.in_flight_timeout_s));
        let sock = net::bind(bind).map_err(|e| format!("cannot bind {bind}: {e}"))?;
        Ok(Sender { sock, peer, clock, sender, opts, stop })
    }

    pub fn local_addr(&self) -> Option<SocketAddr> { self.sock.local_addr().ok() }

    /// Run until the duration is over, the stop flag is raised, or the peer falls silent.
    pub fn run(mut self, controller_name: &str) -> SenderResult {
        net::precise_timers();
        let cpu0 = net::thread_cpu_us();
        let clock = self.clock;
        let o = self.opts.clone();
        let mut stats = SenderStats { controller: controller_name.to_string(), ..Default::default() };
        let mut series = SenderSeries::default();
        let mut log = SendLog::default();
        let mut pacer_err = net::us_histogram();
        let mut buf = vec![0u8; 65_536];
        let mut out = Vec::with_capacity(2048);
        let mut twcc = TwccDecoder::new();
        let mut ccfb = CcfbDecoder::new();

        // Wait for the start time (stop flag honoured).
        let start = Time::ZERO + Duration::from_secs_f64(o.start_s);
        while clock.now() < start && !self.stop.is_raised() { std::thread::sleep(std::time::Duration::from_millis(1).min(to_std(start - clock.now()))); }
        let t0 = clock.now();
        let end = t0 + Duration::from_secs_f64(o.duration_s);
        let iv = Duration::from_ms_f64(o.series_interval_ms.max(1.0));
        let snd = &mut self.sender;
        snd.start(t0);
        let mut next_series = Time::from_us((t0.as_us() / iv.as_us() + 1) * iv.as_us());
        let mut last_feedback = t0;
        let mut iv_sent = Bytes::ZERO;
        let mut iv_frames = 0u64;
        let mut pacer_deadline: Option<Time> = None;
        let silence = Duration::from_secs_f64(o.silence_timeout_s);
        let mut incoming = Vec::new();
        // Route changes within the active time, in order (one before the start tells nobody).
        let mut routes: Vec<Time> = o.route_changes_s.iter().map(|s| Time::ZERO + Duration::from_secs_f64(*s)).filter(|t| *t >= start && *t < end).collect();
        routes.sort_unstable();
        let mut routes = std::collections::VecDeque::from(routes);

        loop {
            let now = clock.now();
            if now >= end { stats.end_reason = "duration".into(); break; }
            if self.stop.is_raised() { stats.end_reason = "stopped".into(); break; }
            if now - last_feedback > silence {
                stats.end_reason = "silent-peer".into();
                stats.message = Some(format!(
                    "no feedback from {} for {:.1} s: is `ratelab live recv` running there, reachable, and sending feedback to this address?",
                    self.peer, silence.as_secs_f64()));
                break;
            }
            // 1. Feedback off the socket, decoded against the sender's sequence numbers.
            loop {
                match self.sock.recv_from(&mut buf) {
                    Ok((n, src)) => {
                        if src != self.peer { stats.foreign_datagrams += 1; continue; }
                        if !is_rtcp(&buf[..n]) { stats.feedback_malformed += 1; continue; }
                        let Ok(pkts) = parse_rtcp(&buf[..n]) else { stats.feedback_malformed += 1; continue };
                        for p in pkts {
                            match p {
                                RtcpPacket::Twcc(fb) if fb.media_ssrc == o.ssrc => incoming.extend(twcc.decode(&fb, snd.next_seq()).into_iter().map(|r| Incoming::Feedback(r, false))),
                                RtcpPacket::Ccfb(r) => incoming.extend(ccfb.decode(&r, o.ssrc, snd.next_seq()).into_iter().map(|r| Incoming::Feedback(r, true))),
                                RtcpPacket::Remb(r) => {
                                    stats.remb_packets += 1;
                                    incoming.push(Incoming::RemoteEstimate(Bitrate::from_bps(r.bitrate_bps.min(Bitrate::INFINITY.bps() as u64) as i64)));
                                }
                                _ => {}
                            }
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(_) => { stats.send_errors += 1; break; } // e.g. ICMP port unreachable reported on Linux
                }
            }
            let now = clock.now();
            if !incoming.is_empty() { last_feedback = now; }
            // The route changed under the flow: told before this turn's feedback and timers.
            while routes.front().is_some_and(|t| *t <= now) {
                routes.pop_front();
                snd.handle_route_change(now);
                stats.route_changes_told_s.push(now.as_secs_f64());
            }
            stats.feedback_packets += incoming.iter().filter(|i| matches!(i, Incoming::Feedback(..))).count() as u64;
            // 2. The endpoint: feedback, then whatever is due; its packets onto the socket.
            let (peer, sock, clock) = (self.peer, &self.sock, clock);
            step(snd, now, incoming.drain(..), |t| {
                let audio = t.payload == Payload::Audio;
                // Timing error: how late the first paced release after a pacer-timed sleep went out.
                if !audio { if let Some(d) = pacer_deadline.take() { let _ = pacer_err.record((now - d).as_us().max(0) as u64); } }
                let datagram = (t.size.get() - IP_UDP_OVERHEAD).max(MIN_DATAGRAM as i64) as usize;
                let padding = t.payload == Payload::Padding;
                let (mh, marker, ts, pt) = match t.payload {
                    Payload::Media { frame, index, count, capture, keyframe, .. } => (
                        MediaHeader { keyframe, frame: frame as u32, index, count, capture_unix_us: clock.unix_us(capture), ..Default::default() },
                        index + 1 == count, (capture.as_us() * 9 / 100) as u32, payload::PT_MEDIA),
                    Payload::Audio => (MediaHeader { audio: true, capture_unix_us: clock.unix_us(t.capture), ..Default::default() }, false, (t.capture.as_us() * 48 / 1000) as u32, payload::PT_AUDIO),
                    _ => (MediaHeader { padding: true, capture_unix_us: clock.unix_us(now), ..Default::default() }, false, (now.as_us() * 9 / 100) as u32, payload::PT_PADDING),
                };
                let mh = MediaHeader { probe: t.probe_cluster.is_some(), send_unix_us: clock.unix_us(now), ..mh };
                let rtp = RtpHeader { marker, payload_type: pt, seq: t.seq as u16, timestamp: ts, ssrc: o.ssrc };
                payload::write_datagram(&mut out, &rtp, o.tw_ext_id, t.seq as u16, &mh, datagram);
                if sock.send_to(&out, peer).is_err() { stats.send_errors += 1; }
                stats.packets_sent += 1;
                stats.bytes_sent += t.size.get();
                if audio { stats.audio_packets += 1 } else if padding { stats.padding_packets += 1 } else { stats.media_packets += 1 }
                iv_sent += t.size;
                if o.packet_log { log.seq.push(t.seq); log.size.push(t.size.get() as u32); log.send.push(now); }
            });
            // 3. Series.
            let now = clock.now();
            while next_series <= now {
                series.k.push((next_series.as_us() / iv.as_us()) as u64);
                series.target_kbps.push(snd.target().kbps_f64());
                series.encoder_kbps.push(snd.encoder_rate().kbps_f64());
                series.pacing_kbps.push(snd.pacing_rate().kbps_f64());
                series.send_kbps.push((iv_sent / iv).kbps_f64());
                let w = snd.cwnd();
                series.cwnd_bytes.push(if w.is_finite() { w.as_f64() } else { f64::NAN });
                let (fps, width, height) = snd.frame_columns(iv_frames, iv);
                iv_frames = snd.frames_encoded();
                series.fps.push(fps);
                series.width.push(width);
                series.height.push(height);
                iv_sent = Bytes::ZERO;
                next_series += iv;
            }
            // 4. Sleep until the next deadline or a datagram.
            let now = clock.now();
            let mut deadline = end.min(next_series).min(last_feedback + silence + Duration::from_ms(1));
            if let Some(t) = snd.poll_timeout() { deadline = deadline.min(t); }
            if let Some(t) = routes.front() { deadline = deadline.min(*t); }
            pacer_deadline = snd.timer(SenderTimer::Pacer).filter(|&t| t > now && t <= deadline);
            if deadline > now { net::wait_readable(&self.sock, (deadline - now).min(Duration::from_ms(100))); }
        }
        stats.frames_encoded = snd.frames_encoded();
        stats.frames_dropped_by_encoder = snd.frames_dropped_by_encoder();
        stats.expired_bytes = snd.expired_bytes().get();
        // Tell the receiver the stream ended (RTCP BYE, RFC 3550 §6.6), a few times against loss.
        let bye = bye_packet(o.ssrc);
        for _ in 0..3 { let _ = self.sock.send_to(&bye, self.peer); std::thread::sleep(std::time::Duration::from_millis(20)); }
        stats.active_s = (clock.now().min(end) - t0).as_secs_f64();
        stats.pacer_error_us = Quantiles::of(&pacer_err);
        stats.cpu_us = net::thread_cpu_us() - cpu0;
        stats.cpu_us_per_packet = if stats.packets_sent > 0 { stats.cpu_us as f64 / stats.packets_sent as f64 } else { 0.0 };
        SenderResult { stats, series, log }
    }
}

/// What a live sender reads from its peer, decoded.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    /// A transport-wide report; `true` when its wire format carries the report time (RFC 8888).
    Feedback(FeedbackReport, bool),
    /// A REMB.
    RemoteEstimate(Bitrate),
}

/// One turn of the live loop at `now`, without I/O: what arrived goes into the endpoint, then
/// everything due runs, then each packet it releases goes to `send`. `Sender::run` calls this
/// with the wall clock and a UDP socket; a test can call it with a virtual clock.
pub fn step(s: &mut MediaSender, now: Time, incoming: impl Iterator<Item = Incoming>, mut send: impl FnMut(Transmit)) {
    for i in incoming {
        match i {
            Incoming::Feedback(r, with_time) => s.handle_feedback(now, &r, with_time),
            Incoming::RemoteEstimate(rate) => s.handle_remote_estimate(now, rate),
        }
    }
    s.handle_timeout(now);
    while let Some(t) = s.poll_transmit() { send(t); }
}

/// RTCP BYE for one SSRC (RFC 3550 §6.6): V=2, SC=1, PT=203, length 1.
pub fn bye_packet(ssrc: u32) -> [u8; 8] {
    let s = ssrc.to_be_bytes();
    [0x81, 203, 0x00, 0x01, s[0], s[1], s[2], s[3]]
}

fn to_std(d: Duration) -> std::time::Duration { std::time::Duration::from_micros(d.as_us().max(0) as u64) }
