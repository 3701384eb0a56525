//! A media flow: encoder → packetizer → pacer → (network) → receiver (frames, feedback,
//! optional receiver-side estimator) → (feedback path) → send history → controller.
//! This file holds the flow's state; the event dispatch lives in `sim/mod.rs`.

use crate::controller::{Constraints, Controller, ReceiverEstimator, Update};
use crate::feedback::generator::FeedbackGenerator;
use crate::feedback::history::SendHistory;
use crate::media::encoder::Encoder;
use crate::media::pacer::Pacer;
use crate::media::receiver::FrameReceiver;
use crate::units::{Bitrate, Bytes, Duration, Time};

pub struct MediaFlow {
    pub controller: Box<dyn Controller>,
    pub estimator: Option<Box<dyn ReceiverEstimator>>,
    pub constraints: Constraints,
    pub encoder: Encoder,
    pub max_payload: u32,
    pub header: Bytes,
    pub pacer: Pacer,
    pub history: SendHistory,
    pub feedback: FeedbackGenerator,
    pub receiver: FrameReceiver,
    pub target: Bitrate,
    pub paused: bool,
    pub pause_allowed: bool,
    /// Encoder gets `target × payload_share` (header overhead removed) when on.
    pub overhead_accounting: bool,
    /// EWMA of payload / (payload + header) over recent packets.
    pub payload_share: f64,
    pub queue_time_limit: Duration,
    /// Time of the pending pacer wake-up event, if any (older events are stale).
    pub pacer_wake: Option<Time>,
    /// Offset of the first frame capture after the flow starts.
    pub frame_phase: Duration,
    /// Give controllers the receiver's report time (RFC 8888-style exact RTT; `feedback.report_time`).
    pub include_report_time: bool,
    /// Scheduled media pauses `[from, to)` (RFC 8867 5.8), in order.
    pub pauses: Vec<(Time, Time)>,
    /// Inside a scheduled pause at the last frame time.
    pub in_pause: bool,
    /// Congestion-window pushback by frame dropping (`Update::cwnd_reduce_ratio`).
    pub cwnd_reduce_ratio: f64,
    /// Drop every n-th frame (libwebrtc `VideoStreamEncoder::cwnd_frame_drop_interval_`).
    pub cwnd_drop_interval: Option<u64>,
    pub cwnd_frame_counter: u64,
    /// The optional audio stream (`media.audio_kbps > 0`).
    pub audio: Option<AudioStream>,
}

/// A constant-rate Opus-like audio stream: one packet of `size` (headers included) every
/// `interval`, sent as it is encoded (libwebrtc does not pace audio).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AudioStream {
    pub interval: Duration,
    /// Wire size of one packet (payload + header).
    pub size: Bytes,
    /// Payload rate (what the audio encoder is configured to).
    pub payload_rate: Bitrate,
}

impl AudioStream {
    /// `kbps` of payload in frames of `frame_ms`, each with `header` bytes; `None` for 0 kbit/s.
    pub fn new(kbps: f64, frame_ms: f64, header: Bytes) -> Option<AudioStream> {
        if !(kbps > 0.0) { return None; }
        let payload = (kbps * frame_ms / 8.0).round().max(1.0) as i64;
        Some(AudioStream { interval: Duration::from_ms_f64(frame_ms), size: Bytes::new(payload) + header, payload_rate: Bitrate::from_kbps_f64(kbps) })
    }
    /// Rate on the wire (payload and headers).
    pub fn wire_rate(&self) -> Bitrate { self.size / self.interval }
}

impl MediaFlow {
    /// Apply a controller update to encoder and pacer.
    pub fn apply(&mut self, now: Time, u: Update) {
        if let Some(r) = u.cwnd_reduce_ratio { self.cwnd_reduce_ratio = if r.is_finite() { r.clamp(0.0, 1.0) } else { 0.0 }; }
        if let Some(t) = u.target_rate {
            let t = t.max(self.constraints.min_rate).min(self.constraints.max_rate);
            self.target = t;
        }
        if u.target_rate.is_some() || u.cwnd_reduce_ratio.is_some() {
            let t = self.encoder_target();
            self.encoder.set_target(t);
        }
        if let Some(p) = u.pacing_rate { self.pacer.set_pacing_rate(p.max(Bitrate::from_kbps(10))); }
        if let Some(p) = u.padding_rate { self.pacer.set_padding_rate(p); }
        if let Some(w) = u.cwnd { self.pacer.set_cwnd(w.max(Bytes::new(1))); }
        for p in u.probes { self.pacer.add_probe(now, p); }
    }

    /// The rate handed to the encoder: the target, minus header overhead when accounted.
    /// Frame dropping for congestion-window pushback lowers it by the dropped share; with an
    /// audio stream, the audio's share (its wire rate with overhead accounting, its payload rate
    /// without) is taken off first, as libwebrtc's allocator gives audio its rate.
    pub fn encoder_target(&mut self) -> Bitrate {
        let target = match &self.audio {
            Some(a) => self.target.saturating_sub(if self.overhead_accounting { a.wire_rate() } else { a.payload_rate }),
            None => self.target,
        };
        let t = if self.overhead_accounting { target.scale(self.payload_share) } else { target };
        self.cwnd_drop_interval = cwnd_drop_interval(t, self.cwnd_reduce_ratio, self.constraints.min_rate);
        match self.cwnd_drop_interval {
            Some(n) => Bitrate::from_bps(t.bps() - t.bps() / n as i64),
            None => t,
        }
    }

    /// Whether the next frame is dropped for the congestion window (counts the frame).
    pub fn cwnd_drops_frame(&mut self) -> bool {
        let Some(n) = self.cwnd_drop_interval else { return false };
        let drop = self.cwnd_frame_counter % n == 0;
        self.cwnd_frame_counter += 1;
        drop
    }

    /// Track the payload share of a packetized frame (EWMA, gain 0.1).
    pub fn observe_packetization(&mut self, frame_payload: Bytes, packets: usize) {
        if packets == 0 { return; }
        let avg = frame_payload.as_f64() / packets as f64;
        let share = avg / (avg + self.header.as_f64()).max(1.0);
        self.payload_share += 0.1 * (share - self.payload_share);
        let t = self.encoder_target();
            self.encoder.set_target(t);
    }

    /// Whether `now` falls inside a scheduled pause.
    pub fn scheduled_pause(&self, now: Time) -> bool {
        self.pauses.iter().any(|&(a, b)| a <= now && now < b)
    }

    /// WebRTC's encoder-pause rule, checked every 25 ms: pause while the pacer's expected
    /// queue time exceeds the limit.
    pub fn check_pause(&mut self) {
        if self.pause_allowed { self.paused = self.pacer.expected_queue_time() > self.queue_time_limit; }
    }
}

/// libwebrtc `VideoStreamEncoder::UpdateTargetBitrate`: with a pushback ratio above 1 % and a
/// target above the codec minimum, drop one frame in `target / shed` (at most every second),
/// where `shed = min(target × ratio, target − min)`.
pub fn cwnd_drop_interval(target: Bitrate, ratio: f64, codec_min: Bitrate) -> Option<u64> {
    if !(ratio > 0.01) || target.bps() <= 0 || target <= codec_min {
        return None;
    }
    let shed = ((target.bps() as f64 * ratio) as i64).min(target.bps() - codec_min.bps());
    (shed > 0).then(|| (target.bps() / shed).max(2) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwnd_drop_interval_as_video_stream_encoder() {
        let k = Bitrate::from_kbps;
        assert_eq!(cwnd_drop_interval(k(1000), 0.0, k(30)), None);
        assert_eq!(cwnd_drop_interval(k(1000), 0.01, k(30)), None, "needs more than 1 %");
        // 10 % shed: every 10th frame.
        assert_eq!(cwnd_drop_interval(k(1000), 0.1, k(30)), Some(10));
        // At most every second frame.
        assert_eq!(cwnd_drop_interval(k(1000), 0.9, k(30)), Some(2));
        // Shed limited by the codec minimum: 1000 − 900 = 100 kbit/s, every 10th.
        assert_eq!(cwnd_drop_interval(k(1000), 0.5, k(900)), Some(10));
        assert_eq!(cwnd_drop_interval(k(30), 0.5, k(30)), None, "at the codec minimum");
    }
}
