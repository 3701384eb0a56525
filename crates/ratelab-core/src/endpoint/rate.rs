//! The sender's rate bookkeeping that is not the controller's: the audio stream's share and
//! libwebrtc's frame dropping for congestion-window pushback.

use crate::units::{Bitrate, Bytes, Duration};

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
