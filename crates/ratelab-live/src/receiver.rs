//! The live receiver: takes RTP from one peer and drives the core's sans-IO
//! [`MediaReceiver`] with it — the same endpoint the simulator drives, which renders frames,
//! generates transport-wide feedback and runs a receiver-side estimator if the controller has
//! one. This loop owns the I/O: it parses packets, encodes the endpoint's output as TWCC or
//! RFC 8888 feedback and REMB, and keeps the same per-flow metrics as the simulator.
//!
//! Robustness: datagrams from other addresses, non-RTP bytes, other SSRCs, packets without the
//! transport-wide sequence number, duplicates and sequence numbers far outside the recent
//! window are counted and dropped; every buffer is bounded.

use crate::flags;
use crate::net::{self, LiveClock};
use crate::payload::{MediaHeader, IP_UDP_OVERHEAD};
use crate::{Quantiles, StopFlag};
use ratelab_core::controllers::{self, BuildContext, ExternalFactory};
use ratelab_core::endpoint::{Arrival, FramePart, MediaReceiver, ReceiverTimer, ReceiverTransmit};
use ratelab_core::metrics::FlowMetrics;
use ratelab_core::scenario::FlowConfig;
use ratelab_core::sim::build::build_media_receiver;
use ratelab_core::wire::remb::Remb;
use ratelab_core::wire::rfc8888::CcfbEncoder;
use ratelab_core::wire::rtp::RtpPacket;
use ratelab_core::wire::twcc::TwccEncoder;
use ratelab_core::wire::{is_rtcp, rtcp_packets, SeqUnwrapper};
use ratelab_core::{Bytes, ConfigError, Duration, Time};
use serde::{Deserialize, Serialize};
use std::net::{SocketAddr, UdpSocket};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FeedbackFormat {
    /// draft-holmer-rmcat-transport-wide-cc-extensions-01 (what browsers send).
    Twcc,
    /// RFC 8888 congestion-control feedback (carries the report time: exact RTT).
    Rfc8888,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReceiverOptions {
    pub format: FeedbackFormat,
    /// Expected media SSRC (0: accept the first one seen).
    pub ssrc: u32,
    pub tw_ext_id: u8,
    /// SSRC of the feedback packets this receiver sends.
    pub feedback_ssrc: u32,
    /// Give up when no packet arrived within this many seconds of starting.
    pub first_packet_timeout_s: f64,
    /// Stop when the peer has been silent this long after its first packet (seconds).
    pub silence_timeout_s: f64,
    /// Stop after this many seconds at most (0: until BYE or silence).
    pub max_duration_s: f64,
    /// Known one-way base delay (ms): queuing delay = OWD − this. Without it, OWD − min OWD.
    pub base_delay_ms: Option<f64>,
    pub series_interval_ms: f64,
    pub packet_log: bool,
    /// Delay of the return path (ms), when known (`live run`: the scenario's). Receiver-side
    /// estimators then get each packet's RTT as OWD + this, as in the simulator; without it they
    /// get no RTT updates.
    pub return_delay_ms: Option<f64>,
    /// Count packets in the metrics only up to this clock time (s); later ones still get
    /// feedback and enter the packet log (`live run`: the scenario's end).
    pub count_until_s: Option<f64>,
    /// The flow's id in its scenario (`live run`): the random stream of a receiver-side
    /// estimator, as the simulator seeds that flow's.
    pub flow_id: u64,
}

impl Default for ReceiverOptions {
    fn default() -> Self {
        ReceiverOptions {
            format: FeedbackFormat::Twcc, ssrc: 0, tw_ext_id: 5, feedback_ssrc: 0x5243_5652, first_packet_timeout_s: 30.0,
            silence_timeout_s: 5.0, max_duration_s: 0.0, base_delay_ms: None, series_interval_ms: 25.0, packet_log: true, count_until_s: None, return_delay_ms: None, flow_id: 0,
        }
    }
}

impl ReceiverOptions {
    /// These options and `flow`'s numbers against their declared ranges (`crate::flags`);
    /// errors name `ratelab live recv`'s flag where there is one.
    pub fn validate(&self, flow: &FlowConfig) -> Result<(), ConfigError> {
        if !(1..=14).contains(&self.tw_ext_id) { return Err(ConfigError::new("tw_ext_id", "must be in 1..=14")); }
        flags::check("--timeout", &flags::SECONDS, self.first_packet_timeout_s)?;
        flags::check("silence_timeout_s", &flags::SECONDS, self.silence_timeout_s)?;
        flags::check("--max-duration", &flags::SECONDS_OR_ZERO, self.max_duration_s)?;
        flags::check("count_until_s", &flags::SECONDS_OR_ZERO, self.count_until_s.unwrap_or(0.0))?;
        let delay = flags::scenario("flows[0].one_way_delay_ms");
        flags::check("base_delay_ms", delay, self.base_delay_ms.unwrap_or(0.0))?;
        flags::check("return_delay_ms", delay, self.return_delay_ms.unwrap_or(0.0))?;
        flags::check("series_interval_ms", flags::scenario("metrics.series_interval_ms"), self.series_interval_ms)?;
        flags::check_part("flows[0]", flow, &[("flows[0].feedback.interval_ms", "--interval-ms")])
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ReceiverStats {
    /// `bye`, `stopped`, `max-duration`, `silent-peer` or `no-peer`.
    pub end_reason: String,
    pub message: Option<String>,
    pub peer: Option<String>,
    pub packets_received: u64,
    pub bytes_received: i64,
    /// Transport sequence numbers never seen up to the highest one seen.
    pub packets_lost: u64,
    pub duplicates: u64,
    pub out_of_window: u64,
    pub foreign_datagrams: u64,
    pub malformed: u64,
    pub other_ssrc: u64,
    pub no_transport_seq: u64,
    pub feedback_packets: u64,
    pub feedback_bytes: i64,
    pub remb_packets: u64,
    pub owd_ms_mean: Option<f64>,
    pub owd_ms_p50: Option<f64>,
    pub owd_ms_p95: Option<f64>,
    pub queue_delay_ms_mean: Option<f64>,
    pub queue_delay_ms_p95: Option<f64>,
    pub frames_rendered: u64,
    pub freeze_count: u64,
    pub freeze_duration_s: f64,
    pub frame_delay_ms_mean: Option<f64>,
    pub psnr_db_mean: Option<f64>,
    pub first_packet_s: Option<f64>,
    pub last_packet_s: Option<f64>,
    pub cpu_us: i64,
    pub timer_error_us: Quantiles,
}

#[derive(Clone, Debug, Default)]
pub struct ReceiverSeries {
    pub k: Vec<u64>,
    pub recv_kbps: Vec<f64>,
    pub owd_ms: Vec<f64>,
}

#[derive(Clone, Debug, Default)]
pub struct RecvLog {
    pub seq: Vec<u64>,
    pub recv: Vec<Time>,
}

pub struct ReceiverResult {
    pub stats: ReceiverStats,
    pub metrics: FlowMetrics,
    pub series: ReceiverSeries,
    pub log: RecvLog,
}

/// Recent sequence numbers, for duplicate detection in constant memory.
const DEDUP: usize = 8192;
/// Accept sequence numbers at most this far from the highest one seen.
const WINDOW: u64 = 16_384;
/// Out-of-window packets in a row after which the receiver follows the new position.
const RESYNC_AFTER: u32 = 64;

pub struct Receiver {
    sock: UdpSocket,
    peer: Option<SocketAddr>,
    clock: LiveClock,
    opts: ReceiverOptions,
    rx: MediaReceiver,
    stop: StopFlag,
}

impl Receiver {
    /// `flow`: feedback mode and interval, and the controller whose receiver-side part (if any)
    /// runs here. `peer`: the only address accepted (None: the first RTP sender).
    pub fn new(flow: &FlowConfig, opts: ReceiverOptions, listen: SocketAddr, peer: Option<SocketAddr>, clock: LiveClock, seed: u64, stop: StopFlag) -> Result<Receiver, String> {
        Self::new_ext(flow, opts, listen, peer, clock, seed, stop, None)
    }

    /// [`Receiver::new`] with a factory for controllers built outside the core (Python classes).
    #[allow(clippy::too_many_arguments)]
    pub fn new_ext(flow: &FlowConfig, opts: ReceiverOptions, listen: SocketAddr, peer: Option<SocketAddr>, clock: LiveClock, seed: u64, stop: StopFlag, external: Option<ExternalFactory>) -> Result<Receiver, String> {
        opts.validate(flow).map_err(|e| e.to_string())?;
        let mut cx = BuildContext::new(ratelab_core::sim::build::derive_seed(seed, 1000 + opts.flow_id));
        cx.read_file = Some(net::file_reader());
        cx.external = external;
        // Only a receiver-side estimator matters here. A controller that cannot be built on this
        // side (the `oracle` needs the emulated capacity) has none; the sender, which builds the
        // same controller, reports real configuration errors.
        let estimator = controllers::build(&flow.controller, &flow.params, &cx).map(|b| b.receiver).unwrap_or(None);
        let rx = build_media_receiver(flow, estimator, opts.return_delay_ms.map(Duration::from_ms_f64));
        let sock = net::bind(listen).map_err(|e| format!("cannot bind {listen}: {e}"))?;
        Ok(Receiver { sock, peer, clock, opts, rx, stop })
    }

    pub fn local_addr(&self) -> Option<SocketAddr> { self.sock.local_addr().ok() }

    pub fn run(mut self) -> ReceiverResult {
        net::precise_timers();
        let cpu0 = net::thread_cpu_us();
        let clock = self.clock;
        let o = self.opts.clone();
        let t0 = clock.now();
        let mut st = ReceiverStats { peer: self.peer.map(|p| p.to_string()), ..Default::default() };
        let mut metrics = FlowMetrics::new(t0, Time::MAX);
        let mut series = ReceiverSeries::default();
        let mut log = RecvLog::default();
        let mut timer_err = net::us_histogram();
        let mut wire = Wire::new(&o, clock);
        let mut unwrap = SeqUnwrapper::new();
        let mut seen = vec![u64::MAX; DEDUP];
        let mut highest: Option<u64> = None;
        let mut oow_run = 0u32;
        let mut lowest: Option<u64> = None;
        let mut ssrc = o.ssrc;
        let mut buf = vec![0u8; 65_536];
        let iv = Duration::from_ms_f64(o.series_interval_ms.max(1.0));
        self.rx.start(t0);
        let mut next_series = Time::from_us((t0.as_us() / iv.as_us() + 1) * iv.as_us());
        let (mut iv_recv, mut iv_owd_sum, mut iv_owd_n) = (Bytes::ZERO, 0i64, 0u32);
        let mut last_rx: Option<Time> = None;
        let mut min_owd = Duration::MAX;
        let base = o.base_delay_ms.map(Duration::from_ms_f64);
        let count_until = o.count_until_s.map(Time::from_secs_f64);
        let mut last_counted: Option<Time> = None;
        let max_end = (o.max_duration_s > 0.0).then(|| t0 + Duration::from_secs_f64(o.max_duration_s));

        'outer: loop {
            let now = clock.now();
            if self.stop.is_raised() { st.end_reason = "stopped".into(); break; }
            if max_end.is_some_and(|e| now >= e) { st.end_reason = "max-duration".into(); break; }
            match last_rx {
                None if now - t0 > Duration::from_secs_f64(o.first_packet_timeout_s) => {
                    st.end_reason = "no-peer".into();
                    st.message = Some(format!("no RTP packet arrived at {} within {:.1} s{}", self.local_addr().map_or("?".into(), |a| a.to_string()), o.first_packet_timeout_s,
                        self.peer.map_or(String::new(), |p| format!(" from {p}"))));
                    break;
                }
                Some(t) if now - t > Duration::from_secs_f64(o.silence_timeout_s) => {
                    st.end_reason = "silent-peer".into();
                    st.message = Some(format!("peer {} silent for {:.1} s (no BYE): stopping", self.peer.map_or("?".into(), |p| p.to_string()), o.silence_timeout_s));
                    break;
                }
                _ => {}
            }
            // 1. Datagrams.
            loop {
                let (n, src) = match self.sock.recv_from(&mut buf) {
                    Ok(x) => x,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(_) => break,
                };
                let now = clock.now();
                if self.peer.is_some_and(|p| p != src) { st.foreign_datagrams += 1; continue; }
                let d = &buf[..n];
                if is_rtcp(d) {
                    // BYE (PT 203) from the peer ends the session.
                    let bye = rtcp_packets(d).flatten().any(|(h, _)| h.packet_type == 203);
                    if bye && last_rx.is_some() { st.end_reason = "bye".into(); break 'outer; }
                    continue;
                }
                let Ok(p) = RtpPacket::parse(d) else { st.malformed += 1; continue };
                if ssrc == 0 { ssrc = p.header.ssrc; wire.set_media_ssrc(ssrc); }
                if p.header.ssrc != ssrc { st.other_ssrc += 1; continue; }
                let Some(tw) = p.transport_seq(o.tw_ext_id) else { st.no_transport_seq += 1; continue };
                let seq = unwrap.peek(tw);
                if highest.is_some_and(|h| seq + WINDOW < h || seq > h + WINDOW) {
                    // A run of consistent far-away packets means the stream really moved on
                    // (a very long outage): follow it rather than stall.
                    oow_run += 1;
                    if oow_run < RESYNC_AFTER { st.out_of_window += 1; continue; }
                    highest = None;
                }
                oow_run = 0;
                if seen[(seq % DEDUP as u64) as usize] == seq { st.duplicates += 1; continue; }
                seen[(seq % DEDUP as u64) as usize] = seq;
                let seq = unwrap.unwrap(tw);
                if self.peer.is_none() { self.peer = Some(src); st.peer = Some(src.to_string()); }
                highest = Some(highest.map_or(seq, |h| h.max(seq)));
                lowest = Some(lowest.map_or(seq, |l| l.min(seq)));
                if last_rx.is_none() { st.first_packet_s = Some(now.as_secs_f64()); }
                last_rx = Some(now);
                let size = Bytes::new(n as i64 + IP_UDP_OVERHEAD);
                let mh = MediaHeader::parse(p.payload);
                let send_time = mh.map(|h| clock.from_unix_us(h.send_unix_us));
                let owd = send_time.map_or(Duration::ZERO, |s| now - s);
                min_owd = min_owd.min(owd);
                let qd = match base { Some(b) => owd - b, None => owd - min_owd };
                let counted = count_until.is_none_or(|c| now <= c);
                if counted {
                    metrics.on_received(now, size, owd, qd);
                    iv_recv += size;
                    if send_time.is_some() { iv_owd_sum += owd.as_us(); iv_owd_n += 1; }
                    last_counted = Some(now);
                }
                if o.packet_log { log.seq.push(seq); log.recv.push(now); }
                // Frames are rendered only while counted (the scenario's end in `live run`).
                let frame = mh.filter(|h| counted && !h.padding && !h.audio)
                    .map(|h| FramePart { frame: h.frame as u64, index: h.index, media_seq: None, count: h.count, capture: clock.from_unix_us(h.capture_unix_us), keyframe: h.keyframe });
                let a = Arrival { seq, size, send_time, kind: mh.map(|h| h.kind()).unwrap_or_default(), frame };
                on_arrival(&mut self.rx, now, a, |m| wire.send(&self.sock, self.peer, m, ssrc, &mut st));
            }
            // 2. Timers.
            let now = clock.now();
            if let Some(t) = self.rx.timer(ReceiverTimer::Feedback).filter(|&t| now >= t) { let _ = timer_err.record((now - t).as_us().max(0) as u64); }
            on_timers(&mut self.rx, now, |m| wire.send(&self.sock, self.peer, m, ssrc, &mut st));
            while next_series <= now {
                series.k.push((next_series.as_us() / iv.as_us()) as u64);
                series.recv_kbps.push((iv_recv / iv).kbps_f64());
                series.owd_ms.push(if iv_owd_n > 0 { iv_owd_sum as f64 / iv_owd_n as f64 / 1e3 } else { f64::NAN });
                (iv_recv, iv_owd_sum, iv_owd_n) = (Bytes::ZERO, 0, 0);
                next_series += iv;
            }
            // 3. Sleep.
            let mut deadline = next_series.min(now + Duration::from_ms(100));
            if let Some(t) = self.rx.poll_timeout() { deadline = deadline.min(t); }
            if deadline > now { net::wait_readable(&self.sock, deadline - now); }
        }
        // Report what arrived since the last report, so the sender hears about everything.
        self.rx.flush_feedback(clock.now());
        while let Some(m) = self.rx.poll_transmit() { wire.send(&self.sock, self.peer, m, ssrc, &mut st); }
        let end = clock.now();
        // A stall still in progress at the end counts as a freeze (as in the simulator).
        self.rx.finish(count_until.map_or(last_rx.unwrap_or(end), |c| c.min(end).max(last_counted.unwrap_or(Time::ZERO))));
        let video = self.rx.video_stats();
        metrics.video = Some(video);
        st.packets_received = metrics.packets_received;
        st.bytes_received = metrics.bytes_received.get();
        st.packets_lost = match (lowest, highest) { (Some(l), Some(h)) => (h - l + 1).saturating_sub(metrics.packets_received), _ => 0 };
        st.owd_ms_mean = metrics.owd_mean_ms();
        st.owd_ms_p50 = metrics.owd_quantile_ms(0.5);
        st.owd_ms_p95 = metrics.owd_quantile_ms(0.95);
        st.queue_delay_ms_mean = metrics.queue_mean_ms();
        st.queue_delay_ms_p95 = metrics.queue_quantile_ms(0.95);
        st.frames_rendered = video.frames_rendered;
        st.freeze_count = video.freeze_count;
        st.freeze_duration_s = video.freeze_duration.as_secs_f64();
        st.frame_delay_ms_mean = video.mean_frame_delay().map(|d| d.as_ms_f64());
        st.psnr_db_mean = video.mean_psnr_db();
        st.last_packet_s = last_rx.map(|t| t.as_secs_f64());
        st.cpu_us = net::thread_cpu_us() - cpu0;
        st.timer_error_us = Quantiles::of(&timer_err);
        ReceiverResult { stats: st, metrics, series, log }
    }
}

/// One arrival into the endpoint; `emit` gets what it answers at once (a per-packet ack).
pub fn on_arrival(rx: &mut MediaReceiver, now: Time, a: Arrival, mut emit: impl FnMut(ReceiverTransmit)) {
    rx.handle_packet(now, a);
    while let Some(m) = rx.poll_transmit() { emit(m); }
}

/// The endpoint's timers due by `now` (this loop may be late); `emit` gets the reports and
/// estimates they produce.
pub fn on_timers(rx: &mut MediaReceiver, now: Time, mut emit: impl FnMut(ReceiverTransmit)) {
    rx.handle_timeout(now);
    while let Some(m) = rx.poll_transmit() { emit(m); }
}

/// The wire side of the endpoint's output: feedback as TWCC or RFC 8888, estimates as REMB.
struct Wire {
    format: FeedbackFormat,
    feedback_ssrc: u32,
    twcc: TwccEncoder,
    ccfb: CcfbEncoder,
    out: Vec<u8>,
}

impl Wire {
    fn new(o: &ReceiverOptions, clock: LiveClock) -> Wire {
        let mut ccfb = CcfbEncoder::new(o.feedback_ssrc, o.ssrc);
        ccfb.epoch_offset_us = clock.origin_ntp_us();
        Wire { format: o.format, feedback_ssrc: o.feedback_ssrc, twcc: TwccEncoder::new(o.feedback_ssrc, o.ssrc), ccfb, out: Vec::with_capacity(1500) }
    }

    fn set_media_ssrc(&mut self, ssrc: u32) { self.twcc.media_ssrc = ssrc; self.ccfb.media_ssrc = ssrc; }

    /// Encode and send `m` to `peer` (dropped while no peer is known).
    fn send(&mut self, sock: &UdpSocket, peer: Option<SocketAddr>, m: ReceiverTransmit, media_ssrc: u32, st: &mut ReceiverStats) {
        let Some(peer) = peer else { return };
        let out = &mut self.out;
        match m {
            ReceiverTransmit::Feedback(r) => {
                let mut send = |out: &Vec<u8>| { if sock.send_to(out, peer).is_ok() { st.feedback_packets += 1; st.feedback_bytes += out.len() as i64; } };
                match self.format {
                    FeedbackFormat::Twcc => for p in self.twcc.encode(&r) { out.clear(); if p.write(out).is_ok() { send(out); } },
                    FeedbackFormat::Rfc8888 => for p in self.ccfb.encode(&r) { out.clear(); if p.write(out).is_ok() { send(out); } },
                }
            }
            ReceiverTransmit::Estimate(rate) => {
                out.clear();
                let remb = Remb { sender_ssrc: self.feedback_ssrc, bitrate_bps: rate.bps().max(0) as u64, ssrcs: vec![media_ssrc] };
                if remb.write(out).is_ok() && sock.send_to(out, peer).is_ok() { st.remb_packets += 1; }
            }
            // Never produced: `live run` refuses `media.nack` (run.rs).
            ReceiverTransmit::Nack(_) => {}
        }
    }
}
