//! The sender's rate bookkeeping that is not the controller's: the audio stream's share,
//! libwebrtc's frame dropping for congestion-window pushback, and the encoded frame rate.

use std::collections::VecDeque;

use crate::units::{Bitrate, Bytes, Duration, Time};

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
        if kbps.is_nan() || kbps <= 0.0 { return None; }
        let payload = (kbps * frame_ms / 8.0).round().max(1.0) as i64;
        Some(AudioStream { interval: Duration::from_ms_f64(frame_ms), size: Bytes::new(payload) + header, payload_rate: Bitrate::from_kbps_f64(kbps) })
    }
    /// Rate on the wire (payload and headers).
    pub fn wire_rate(&self) -> Bitrate { self.size / self.interval }
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

    /// 32 kbit/s in 20 ms frames: 80 bytes of payload + 40 of header = 120 bytes every 20 ms,
    /// 48 kbit/s on the wire.
    #[test]
    fn audio_stream_sizes_by_hand() {
        let a = AudioStream::new(32.0, 20.0, Bytes::new(40)).unwrap();
        assert_eq!(a.size, Bytes::new(120));
        assert_eq!(a.wire_rate(), Bitrate::from_kbps(48));
        assert_eq!(AudioStream::new(0.0, 20.0, Bytes::new(40)), None);
    }
}

/// libwebrtc's send frame rate (`SendStatisticsProxy::GetSendFrameRate`): frames encoded over
/// the last second (a `RateTracker` of ten 100 ms buckets), rounded to whole frames a second.
/// It is the frame rate `RtpVideoSender::OnBitrateUpdated` hands to the overhead estimate and
/// to the FEC controller, so frames the encoder drops lower both.
#[derive(Clone, Debug, Default)]
pub struct SendFrameRate {
    encoded: VecDeque<Time>,
    first: Option<Time>,
    /// The rate at the last [`SendFrameRate::rate`] call.
    current: f64,
}

const RATE_WINDOW: Duration = Duration::from_secs(1);

impl SendFrameRate {
    /// A frame was encoded at `now`.
    pub fn on_encoded(&mut self, now: Time) {
        self.first.get_or_insert(now);
        self.encoded.push_back(now);
        self.forget(now);
    }

    /// Frames a second at `now`, over the last second or, in the first second, over the time
    /// since the first frame (`RateTracker` counts only the time it has seen). 0 before any frame.
    pub fn rate(&mut self, now: Time) -> f64 {
        self.forget(now);
        let Some(first) = self.first else { return 0.0 };
        let span = (now - first).min(RATE_WINDOW).max(Duration::from_ms(100));
        self.current = (self.encoded.len() as f64 / span.as_secs_f64()).round();
        self.current
    }

    /// The rate as of the last [`SendFrameRate::rate`] call (0 before it).
    pub fn current(&self) -> f64 { self.current }

    fn forget(&mut self, now: Time) {
        while self.encoded.front().is_some_and(|&t| now - t >= RATE_WINDOW) { self.encoded.pop_front(); }
    }
}

#[cfg(test)]
mod frame_rate_tests {
    use super::*;

    #[test]
    fn frames_in_the_last_second_rounded() {
        let mut r = SendFrameRate::default();
        assert_eq!(r.rate(Time::from_ms(0)), 0.0);
        for i in 0..30 { r.on_encoded(Time::from_ms(i * 67)); } // 15 frames/s for 2 s
        assert_eq!(r.rate(Time::from_ms(29 * 67)), 15.0);
        // The encoder drops every other frame from now on: 7.5 → 8 a second after.
        for i in 0..15 { r.on_encoded(Time::from_ms(2010 + i * 134)); }
        assert_eq!(r.rate(Time::from_ms(2010 + 14 * 134)), 8.0);
        // Nothing encoded for a second: 0.
        assert_eq!(r.rate(Time::from_ms(2010 + 14 * 134 + 1000)), 0.0);
    }

    #[test]
    fn the_first_second_counts_only_the_time_seen() {
        let mut r = SendFrameRate::default();
        for i in 0..5 { r.on_encoded(Time::from_ms(i * 100)); }
        assert_eq!(r.rate(Time::from_ms(400)), 13.0, "5 frames over 0.4 s = 12.5, rounded");
    }
}
