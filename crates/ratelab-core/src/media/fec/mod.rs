//! Loss protection as libwebrtc sends it with `media.fec` on: ULPFEC inside RED under the
//! hybrid NACK/FEC method (docs/loss-protection.md). [`FecSender`] is
//! `FecControllerDefault` + the ULPFEC generator: it turns loss and RTT into protection
//! factors, the encoder's share of the rate, and FEC packets after each protected block.
//! With NACK alone ([`FecSender::nack_only`], libwebrtc's `kNack` method) there are no FEC
//! packets, but the retransmission rate is still protection overhead taken off the encoder.

pub mod generator;
pub mod hybrid;
pub mod protection;
mod rate_table;
pub mod recovery;

use crate::controller::TransportFeedback;
use crate::units::{Bitrate, Bytes, Duration, Time};
use generator::{FecBlock, UlpfecGenerator};
use crate::media::exp_filter::ExpFilter;
use protection::{nack_fec_protection, Inputs, LossFilter, Protection};
use std::collections::VecDeque;

/// `kProtectionOverheadRateThreshold`: the protection share taken off the encoder is capped
/// (the default of [`FecSender::with_overhead_cap`]).
pub const MAX_OVERHEAD_SHARE: f64 = 0.5;
/// The send-rate statistics' window (`RateStatistics`, 1 s).
const RATE_WINDOW: Duration = Duration::from_secs(1);
/// goog_cc's loss report cadence and minimum sample (`kLimitNumPackets`).
const LOSS_INTERVAL: Duration = Duration::from_secs(1);
const LOSS_MIN_PACKETS: u32 = 20;

/// The sender's protection state.
pub struct FecSender {
    fps: f64,
    max_payload: f64,
    filter: LossFilter,
    packets_per_frame: ExpFilter,
    packets_per_key_frame: ExpFilter,
    last_frame_update: Option<Time>,
    last_key_update: Option<Time>,
    generator: UlpfecGenerator,
    /// goog_cc's fraction lost (× 256, saturated) and its accumulators.
    loss255: u8,
    lost: u32,
    expected: u32,
    next_loss_update: Option<Time>,
    /// The last `on_bitrate_update` (new protection factors and share).
    updated_at: Option<Time>,
    rtt: Duration,
    /// The picture the encoder makes now, as the protection tables see it (libwebrtc's
    /// `SetEncodingData`, called again whenever the resolution adapts).
    resolution: (u32, u32),
    /// (time, video bytes, FEC bytes) sent in the last second.
    sent: VecDeque<(Time, i64, i64)>,
    share: f64,
    overhead_cap: f64,
    /// libwebrtc's `kNack` method: no FEC, only the retransmission share.
    nack_only: bool,
    protection: Protection,
    /// Video and FEC bytes sent so far (wire sizes).
    pub video_bytes: Bytes,
    pub fec_bytes: Bytes,
}

impl FecSender {
    pub fn new(fps: f64, max_payload: u32, resolution: (u32, u32)) -> Self {
        FecSender {
            fps, max_payload: max_payload as f64, filter: LossFilter::default(), packets_per_frame: ExpFilter::new(0.9999), packets_per_key_frame: ExpFilter::new(0.9999),
            last_frame_update: None, last_key_update: None, generator: UlpfecGenerator::new(), loss255: 0, lost: 0, expected: 0, next_loss_update: None, updated_at: None,
            rtt: Duration::ZERO, resolution, sent: VecDeque::new(), share: 0.0, overhead_cap: MAX_OVERHEAD_SHARE, nack_only: false, protection: Protection::default(), video_bytes: Bytes::ZERO, fec_bytes: Bytes::ZERO,
        }
    }

    /// NACK without FEC (`media.nack` alone): `FecControllerDefault` under the `kNack` method
    /// returns no protection factors but still takes the retransmission share of the last
    /// second off the encoder (`UpdateFecRates` returns early only for `kNone`).
    pub fn nack_only(fps: f64, max_payload: u32, resolution: (u32, u32)) -> Self {
        FecSender { nack_only: true, ..FecSender::new(fps, max_payload, resolution) }
    }

    /// Cap the protection share at `cap` instead of libwebrtc's 0.5 (the field trial
    /// `WebRTC-ProtectionOverheadRateThreshold`, `media.fec_overhead_cap`).
    pub fn with_overhead_cap(mut self, cap: f64) -> Self {
        self.overhead_cap = cap.clamp(0.0, 1.0);
        self
    }

    /// `FecControllerDefault::UpdateWithEncodedData`: packets per delta / key frame.
    pub fn on_encoded(&mut self, now: Time, size: Bytes, keyframe: bool) {
        if size <= Bytes::ZERO { return; }
        let packets = (size.as_f64() / self.max_payload) as f32;
        let (f, last) = if keyframe { (&mut self.packets_per_key_frame, &mut self.last_key_update) } else { (&mut self.packets_per_frame, &mut self.last_frame_update) };
        let dt = last.map_or(0.0, |t| (now - t).as_ms_f64() as f32);
        f.apply(dt, packets);
        *last = Some(now);
    }

    /// Transport feedback: goog_cc's loss fraction (once a second, over at least 20 packets)
    /// and the RTT of the newest packet reported received. Returns whether a new loss fraction
    /// was reported: goog_cc then sends a target update (`MaybeTriggerOnNetworkChanged` fires
    /// on a loss change), so the caller refreshes the protection even when the target itself
    /// did not move; otherwise a loss burst between two rate updates never reaches the filter.
    pub fn on_feedback(&mut self, fb: &TransportFeedback) -> bool {
        if let Some(p) = fb.packets.iter().rev().find(|p| p.received()) { self.rtt = fb.feedback_time - p.sent.send_time; }
        self.lost += fb.lost().count() as u32;
        self.expected += fb.packets.len() as u32;
        let due = self.next_loss_update.is_none_or(|t| fb.feedback_time > t);
        if due {
            self.next_loss_update = Some(fb.feedback_time + LOSS_INTERVAL);
            if self.expected >= LOSS_MIN_PACKETS {
                self.loss255 = ((self.lost as u64 * 256) / self.expected as u64).min(255) as u8;
                self.lost = 0;
                self.expected = 0;
                return true;
            }
        }
        false
    }

    /// The encoder's picture changed (quality scaler): the next update uses it.
    pub fn set_resolution(&mut self, resolution: (u32, u32)) { self.resolution = resolution; }

    /// The frame rate the encoder achieves (libwebrtc's send frame rate, at least 1: the
    /// `actual_framerate_fps` of `UpdateFecRates`); the next update uses it.
    pub fn set_frame_rate(&mut self, fps: f64) { self.fps = fps.max(1.0); }

    /// `RtpVideoSender::OnBitrateUpdated` → `UpdateFecRates`: new protection factors from the
    /// filtered loss, and the protection share of what was sent in the last second.
    pub fn on_bitrate_update(&mut self, now: Time, payload_rate: Bitrate) {
        self.updated_at = Some(now);
        let filtered = self.filter.update(now, self.loss255);
        let inputs = Inputs {
            loss255: filtered, bitrate_kbps: (payload_rate.bps_f64() / 1000.0) as f32, fps: self.fps as f32, rtt_ms: self.rtt.as_us() / 1000, width: self.resolution.0, height: self.resolution.1,
            packets_per_frame: self.packets_per_frame.filtered(), packets_per_key_frame: self.packets_per_key_frame.filtered(),
        };
        self.protection = if self.nack_only { Protection::default() } else { nack_fec_protection(&inputs) };
        self.generator.set_protection(self.protection);
        self.purge(now);
        let (video, fec) = self.sent.iter().fold((0i64, 0i64), |(v, f), &(_, a, b)| (v + a, f + b));
        self.share = if video + fec > 0 { (fec as f64 / (video + fec) as f64).min(self.overhead_cap) } else { 0.0 };
    }

    /// Share of the rate the encoder does not get ((FEC + retransmissions) sent / all video sent,
    /// capped at 50 % unless [`FecSender::with_overhead_cap`] says otherwise).
    pub fn overhead_share(&self) -> f64 { self.share }
    /// When the protection was last updated (`None`: not yet).
    pub fn updated_at(&self) -> Option<Time> { self.updated_at }
    pub fn protection(&self) -> Protection { self.protection }

    /// A media packet left the pacer: count it and feed the generator.
    pub fn on_media_sent(&mut self, now: Time, frame: u64, capture: Time, keyframe: bool, last: bool, wire: Bytes, payload: Bytes) -> Option<FecBlock> {
        self.record(now, wire.get(), 0);
        if self.nack_only { return None; }
        self.generator.on_media_sent(frame, capture, keyframe, last, wire, payload)
    }

    /// An FEC packet left the pacer.
    pub fn on_fec_sent(&mut self, now: Time, wire: Bytes) {
        self.fec_bytes += wire;
        self.record(now, 0, wire.get());
    }

    /// An RTX packet left the pacer (`media.nack` with `media.fec`): libwebrtc counts the
    /// retransmission rate into the protection overhead (`sent_nack_rate_bps` in
    /// `FecControllerDefault::UpdateFecRates`), so it too is taken off the encoder.
    pub fn on_retransmission_sent(&mut self, now: Time, wire: Bytes) { self.record(now, 0, wire.get()); }

    /// One packet in the 1 s send-rate window: `video` media bytes or `protection` bytes.
    fn record(&mut self, now: Time, video: i64, protection: i64) {
        self.sent.push_back((now, video, protection));
        self.video_bytes += Bytes::new(video);
        self.purge(now);
    }

    fn purge(&mut self, now: Time) {
        while self.sent.front().is_some_and(|&(t, _, _)| now - t >= RATE_WINDOW) { self.sent.pop_front(); }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{PacketResult, SentPacket};

    fn fb(at: i64, first_seq: u64, n: u64, lost_every: u64) -> TransportFeedback {
        let packets = (0..n).map(|i| {
            let seq = first_seq + i;
            let sent = SentPacket { seq, size: Bytes::new(1200), send_time: Time::from_ms(at - 60), probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO };
            PacketResult { sent, recv_time: (lost_every == 0 || seq % lost_every != 0).then(|| Time::from_ms(at - 20)) }
        }).collect();
        TransportFeedback { feedback_time: Time::from_ms(at), packets, ..Default::default() }
    }

    /// NACK alone: retransmissions sent are taken off the encoder as FEC would be, and no FEC
    /// block is ever made, whatever the loss.
    #[test]
    fn nack_only_takes_the_retransmission_share_and_makes_no_fec() {
        let t = Time::from_ms;
        let mut s = FecSender::nack_only(15.0, 1200, (640, 360));
        assert!(s.on_feedback(&fb(1200, 0, 40, 4)), "10 of 40 lost");
        for k in 0..30u64 {
            assert_eq!(s.on_media_sent(t(1200 + 10 * k as i64), k, t(1200), k == 0, true, Bytes::new(1000), Bytes::new(960)), None);
        }
        s.on_retransmission_sent(t(1500), Bytes::new(10_000));
        s.on_bitrate_update(t(1600), Bitrate::from_kbps(300));
        assert_eq!((s.protection().delta, s.protection().key), (0, 0));
        assert!((s.overhead_share() - 0.25).abs() < 1e-12, "10 of 40 kB: {}", s.overhead_share());
    }

    /// libwebrtc `fec_controller_unittest.cc` `ProtectsUsingFecBitrate`: as much FEC as video
    /// sent → the encoder gets half (the share's 50 % cap).
    #[test]
    fn libwebrtc_protects_using_fec_bitrate() {
        let mut s = FecSender::new(30.0, 1000, (640, 360));
        let t = Time::from_ms;
        s.on_media_sent(t(0), 0, t(0), false, true, Bytes::new(12_500), Bytes::new(12_460));
        s.on_fec_sent(t(0), Bytes::new(12_500));
        s.on_bitrate_update(t(10), Bitrate::from_kbps(130));
        assert_eq!(s.overhead_share(), 0.5);
        // The field trial's cap: 0.25 of the payload at most, and the share below it as sent.
        let mut s = FecSender::new(30.0, 1000, (640, 360)).with_overhead_cap(0.25);
        s.on_media_sent(t(0), 0, t(0), false, true, Bytes::new(12_500), Bytes::new(12_460));
        s.on_fec_sent(t(0), Bytes::new(12_500));
        s.on_bitrate_update(t(10), Bitrate::from_kbps(130));
        assert_eq!(s.overhead_share(), 0.25);
        let mut s = FecSender::new(30.0, 1000, (640, 360)).with_overhead_cap(0.8);
        s.on_media_sent(t(0), 0, t(0), false, true, Bytes::new(30_000), Bytes::new(29_960));
        s.on_fec_sent(t(0), Bytes::new(10_000));
        s.on_bitrate_update(t(10), Bitrate::from_kbps(130));
        assert_eq!(s.overhead_share(), 0.25, "10 of 40 kB: below the cap, as sent");
    }

    /// 1 in 20 lost = 12.8/256 → 12; needs 20 packets before a fraction is reported.
    #[test]
    fn loss_fraction_as_goog_cc_reports_it() {
        let mut s = FecSender::new(15.0, 1200, (640, 360));
        assert!(!s.on_feedback(&fb(100, 0, 10, 20)), "no report yet");
        assert_eq!(s.loss255, 0, "10 packets: accumulated");
        assert!(s.on_feedback(&fb(1200, 10, 30, 20)), "a new fraction is a report");
        assert_eq!(s.loss255, (2 * 256 / 40) as u8); // seq 0 and 20 lost of 40
        assert_eq!(s.rtt, Duration::from_ms(60));
    }

    /// libwebrtc sizes protection by the picture the encoder makes now (`SetEncodingData` after
    /// each adaptation): 500 bytes a frame is too little for FEC at 640x360 (below 700) but
    /// not at 320x180 (400, the CIF class).
    #[test]
    fn protection_follows_the_encoders_picture() {
        let mut s = FecSender::new(15.0, 1200, (640, 360));
        assert!(s.on_feedback(&fb(1200, 0, 40, 10)), "4 of 40 lost, RTT 60 ms");
        s.on_bitrate_update(Time::from_ms(1300), Bitrate::from_kbps(60));
        assert_eq!((s.protection().delta, s.protection().key), (0, 0));
        s.set_resolution((320, 180));
        s.on_bitrate_update(Time::from_ms(1400), Bitrate::from_kbps(60));
        // The key frames' factor shows it (a one-packet delta frame gets no table share here).
        assert!(s.protection().key > 0, "{:?}", s.protection());
    }

    /// A sender that has sent 8 media packets of 1000 bytes over 80 ms.
    fn after_eight_media_packets() -> FecSender {
        let mut s = FecSender::new(15.0, 1200, (640, 360));
        for i in 0..8 { s.on_media_sent(Time::from_ms(i * 10), 0, Time::ZERO, false, i == 7, Bytes::new(1000), Bytes::new(960)); }
        s
    }

    #[test]
    fn retransmissions_are_protection_overhead() {
        let mut s = after_eight_media_packets();
        s.on_fec_sent(Time::from_ms(100), Bytes::new(1000));
        s.on_retransmission_sent(Time::from_ms(110), Bytes::new(1000));
        s.on_bitrate_update(Time::from_ms(200), Bitrate::from_kbps(1000));
        // (1000 FEC + 1000 RTX) / (8000 video + 2000): 0.2; the FEC counter holds FEC only
        assert!((s.overhead_share() - 0.2).abs() < 1e-12, "{}", s.overhead_share());
        assert_eq!(s.fec_bytes, Bytes::new(1000));
    }

    /// The encoder's share: FEC bytes over video + FEC bytes in the last second, capped at 50 %.
    #[test]
    fn overhead_share_from_sent_bytes() {
        let mut s = after_eight_media_packets();
        let t = Time::from_ms;
        s.on_fec_sent(t(100), Bytes::new(1000));
        s.on_fec_sent(t(100), Bytes::new(1000));
        s.on_bitrate_update(t(200), Bitrate::from_kbps(1000));
        assert!((s.overhead_share() - 0.2).abs() < 1e-12);
        for _ in 0..20 { s.on_fec_sent(t(300), Bytes::new(1000)); }
        s.on_bitrate_update(t(400), Bitrate::from_kbps(1000));
        assert_eq!(s.overhead_share(), MAX_OVERHEAD_SHARE);
        // A second later the window is empty.
        s.on_bitrate_update(t(1400), Bitrate::from_kbps(1000));
        assert_eq!(s.overhead_share(), 0.0);
    }
}
