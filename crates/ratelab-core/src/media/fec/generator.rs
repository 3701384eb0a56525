//! libwebrtc's ULPFEC generator (`modules/rtp_rtcp/source/ulpfec_generator.cc` with
//! `ForwardErrorCorrection::NumFecPackets`): media packets are collected as the pacer sends
//! them; at the end of a frame, once the block spans `max_frames` frames or its overhead is
//! close enough to the protection factor, it yields `round(k × factor / 256)` FEC packets (at
//! least one when the factor is non-zero) for its k media packets. Only the packet counts and
//! sizes are modelled, not the XOR payloads.

use super::protection::Protection;
use crate::units::{Bytes, Time};

/// `kUlpfecMaxMediaPackets`: packets beyond this in one block are left unprotected.
pub const MAX_MEDIA_PACKETS: u16 = 48;
/// `kMaxExcessOverhead` (Q8).
const MAX_EXCESS_OVERHEAD: i32 = 50;
/// `kMinMediaPackets` once the factor is above `kHighProtectionThreshold`.
const MIN_MEDIA_PACKETS: u16 = 4;
const HIGH_PROTECTION_THRESHOLD: u8 = 80;
/// `kMinMediaPacketsAdaptationThreshold`.
const MIN_MEDIA_ADAPTATION: f32 = 2.0;
/// RED header (1) + ULPFEC header (10) + level-1 header with a 2-byte mask (4).
const FEC_OVERHEAD_SHORT: i64 = 1 + 10 + 4;
/// The same with the 6-byte mask of a block over 16 media packets.
const FEC_OVERHEAD_LONG: i64 = 1 + 10 + 8;

/// `ForwardErrorCorrection::NumFecPackets`: `(k × factor + 128) >> 8`, at least one when the
/// factor is non-zero.
pub fn num_fec_packets(media: u16, factor: u8) -> u16 {
    let n = ((media as u32 * factor as u32 + 128) >> 8) as u16;
    if factor > 0 && n == 0 { 1 } else { n }
}

/// One FEC block ready to send: what its packets carry (the frames it protects) and its size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FecBlock {
    pub first_frame: u64,
    pub frames: u8,
    /// Media packets protected (at most [`MAX_MEDIA_PACKETS`]).
    pub media: u16,
    /// FEC packets in the block.
    pub fec: u16,
    /// Wire size of each FEC packet: the largest protected media packet plus RED/ULPFEC headers.
    pub size: Bytes,
    /// Largest protected media payload (what a recovered packet is taken to carry).
    pub protected: Bytes,
    pub first_capture: Time,
    pub last_capture: Time,
    pub keyframe: bool,
}

#[derive(Clone, Debug, Default)]
pub struct UlpfecGenerator {
    params: Protection,
    pending: Option<Protection>,
    min_media: u16,
    media: u16,
    frames: u32,
    keyframe: bool,
    max_wire: Bytes,
    max_payload: Bytes,
    first: Option<(u64, Time)>,
}

impl UlpfecGenerator {
    pub fn new() -> Self { UlpfecGenerator { min_media: 1, ..Default::default() } }

    /// New protection parameters, taken at the next media packet (`SetProtectionParameters`).
    pub fn set_protection(&mut self, p: Protection) { self.pending = Some(p); }

    fn factor(&self) -> u8 { if self.keyframe { self.params.key } else { self.params.delta } }

    /// A media packet of `frame` (`last`: it ends the frame) left the pacer with `wire` bytes,
    /// `payload` of them media. Returns the FEC block it completes, if any.
    pub fn on_media_sent(&mut self, frame: u64, capture: Time, keyframe: bool, last: bool, wire: Bytes, payload: Bytes) -> Option<FecBlock> {
        if let Some(p) = self.pending.take() {
            self.params = p;
            self.min_media = if self.factor() > HIGH_PROTECTION_THRESHOLD { MIN_MEDIA_PACKETS } else { 1 };
        }
        self.keyframe |= keyframe;
        if self.first.is_none() { self.first = Some((frame, capture)); }
        if self.media < MAX_MEDIA_PACKETS {
            self.media += 1;
            self.max_wire = self.max_wire.max(wire);
            self.max_payload = self.max_payload.max(payload);
        }
        if !last { return None; }
        self.frames += 1;
        let done = self.frames >= self.params.max_frames || (self.excess_overhead_below_max() && self.min_media_reached());
        if !done { return None; }
        let fec = num_fec_packets(self.media, self.factor());
        let (first_frame, first_capture) = self.first.unwrap_or((frame, capture));
        let header = if self.media > 16 { FEC_OVERHEAD_LONG } else { FEC_OVERHEAD_SHORT };
        let block = FecBlock {
            first_frame, frames: (frame - first_frame + 1).min(u8::MAX as u64) as u8, media: self.media, fec,
            size: self.max_wire + Bytes::new(header), protected: self.max_payload, first_capture, last_capture: capture, keyframe: self.keyframe,
        };
        self.reset();
        (fec > 0).then_some(block)
    }

    fn reset(&mut self) {
        let (params, pending, min_media) = (self.params, self.pending, self.min_media);
        *self = UlpfecGenerator { params, pending, min_media, ..Default::default() };
    }

    /// `ExcessOverheadBelowMax`: the block's FEC share (Q8) exceeds the factor by less than 50.
    fn excess_overhead_below_max(&self) -> bool {
        let overhead = ((num_fec_packets(self.media, self.factor()) as i32) << 8) / self.media.max(1) as i32;
        overhead - (self.factor() as i32) < MAX_EXCESS_OVERHEAD
    }

    /// `MinimumMediaPacketsReached`.
    fn min_media_reached(&self) -> bool {
        let avg = self.media as f32 / self.frames.max(1) as f32;
        if avg < MIN_MEDIA_ADAPTATION { self.media >= self.min_media } else { self.media > self.min_media }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num_fec_packets_rounds_and_keeps_at_least_one() {
        assert_eq!(num_fec_packets(10, 0), 0);
        assert_eq!(num_fec_packets(10, 1), 1, "any protection gives one packet");
        assert_eq!(num_fec_packets(10, 64), 3); // 640 + 128 = 768 >> 8 = 3 (2.5 rounds up)
        assert_eq!(num_fec_packets(6, 64), 2); // 384 + 128 = 512 >> 8 = 2 (1.5)
        assert_eq!(num_fec_packets(5, 64), 1); // 448 >> 8 = 1 (1.25)
        assert_eq!(num_fec_packets(4, 255), 4);
    }

    fn send_frame(g: &mut UlpfecGenerator, frame: u64, packets: u16, key: bool) -> Option<FecBlock> {
        let mut out = None;
        for i in 0..packets {
            let r = g.on_media_sent(frame, Time::from_ms(66 * frame as i64), key, i + 1 == packets, Bytes::new(1240 - i as i64), Bytes::new(1200 - i as i64));
            if r.is_some() { assert!(out.is_none()); out = r; }
        }
        out
    }

    /// Factor 64 (25 %), six-packet frames: 6·64/256 = 1.5 → 2 FEC packets, overhead 85 Q8,
    /// 85 − 64 < 50: each frame is its own block.
    #[test]
    fn one_block_per_frame_when_overhead_is_close() {
        let mut g = UlpfecGenerator::new();
        g.set_protection(Protection { delta: 64, key: 128, max_frames: 3 });
        let b = send_frame(&mut g, 0, 6, false).expect("a block");
        assert_eq!((b.first_frame, b.frames, b.media, b.fec), (0, 1, 6, 2));
        assert_eq!(b.size, Bytes::new(1240 + 15));
        assert_eq!(b.protected, Bytes::new(1200));
        // A key frame takes the key factor: 6·128/256 = 3.
        assert_eq!(send_frame(&mut g, 1, 6, true).map(|b| (b.fec, b.keyframe)), Some((3, true)));
    }

    /// Factor 30 with one-packet frames: one FEC packet for one media packet is 256 Q8, far above
    /// 30 + 50, so frames accumulate until `max_frames` (3): 3·30/256 → 0 → at least 1.
    #[test]
    fn small_frames_accumulate_up_to_max_frames() {
        let mut g = UlpfecGenerator::new();
        g.set_protection(Protection { delta: 30, key: 60, max_frames: 3 });
        assert_eq!(send_frame(&mut g, 0, 1, false), None);
        assert_eq!(send_frame(&mut g, 1, 1, false), None);
        let b = send_frame(&mut g, 2, 1, false).expect("block at max frames");
        assert_eq!((b.first_frame, b.frames, b.media, b.fec), (0, 3, 3, 1));
        assert_eq!(b.first_capture, Time::ZERO);
        assert_eq!(b.last_capture, Time::from_ms(132));
    }

    /// libwebrtc `ulpfec_generator_unittest.cc` `OneFrameFec`: four packets at factor 15,
    /// up to three frames: one FEC packet right after the frame (overhead 64 − 15 < 50).
    #[test]
    fn libwebrtc_one_frame_fec() {
        let mut g = UlpfecGenerator::new();
        g.set_protection(Protection { delta: 15, key: 15, max_frames: 3 });
        assert_eq!(send_frame(&mut g, 0, 4, false).map(|b| b.fec), Some(1));
    }

    /// `TwoFrameFec`: two two-packet frames at factor 15: nothing after the first (overhead
    /// 128 − 15 ≥ 50), one FEC packet for both after the second.
    #[test]
    fn libwebrtc_two_frame_fec() {
        let mut g = UlpfecGenerator::new();
        g.set_protection(Protection { delta: 15, key: 15, max_frames: 3 });
        assert_eq!(send_frame(&mut g, 0, 2, false), None);
        assert_eq!(send_frame(&mut g, 1, 2, false).map(|b| (b.fec, b.media, b.frames)), Some((1, 4, 2)));
    }

    /// `UpdatesProtectionParameters`, with one `max_frames` for both kinds (FecControllerDefault
    /// always sets them equal): new parameters wait for the next media packet, and a key frame
    /// switches the open block to the key factor at once.
    #[test]
    fn libwebrtc_updates_protection_parameters() {
        let mut g = UlpfecGenerator::new();
        g.set_protection(Protection { delta: 25, key: 25, max_frames: 2 });
        assert_eq!(g.params.max_frames, 0, "no params applied yet");
        assert_eq!(send_frame(&mut g, 0, 1, true), None);
        assert_eq!(g.params.max_frames, 2);
        assert!(send_frame(&mut g, 1, 1, false).is_some(), "two frames: block closed");
        g.set_protection(Protection { delta: 25, key: 200, max_frames: 5 });
        assert_eq!(g.params.max_frames, 2, "not until the next packet");
        assert_eq!(send_frame(&mut g, 2, 1, false), None);
        assert_eq!(g.params.max_frames, 5);
        assert_eq!(send_frame(&mut g, 3, 1, false), None);
        // A key frame: factor 200 for the open block of three one-packet frames: 3·200/256 → 2,
        // overhead 170 − 200 < 50.
        assert_eq!(send_frame(&mut g, 4, 1, true).map(|b| (b.fec, b.frames, b.keyframe)), Some((2, 3, true)));
    }

    #[test]
    fn no_protection_no_packets_and_long_masks_above_16() {
        let mut g = UlpfecGenerator::new();
        assert_eq!(send_frame(&mut g, 0, 5, false), None);
        g.set_protection(Protection { delta: 128, key: 128, max_frames: 1 });
        let b = send_frame(&mut g, 1, 60, false).unwrap();
        assert_eq!((b.media, b.fec), (48, 24), "48 packets at most in a block");
        assert_eq!(b.size, Bytes::new(1240 + 19));
    }
}
