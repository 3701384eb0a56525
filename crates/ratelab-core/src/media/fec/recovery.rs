//! Receiver-side FEC recovery, idealised: a block of k media packets and n FEC packets
//! recovers every lost media packet once the received FEC packets are at least as many as the
//! media packets missing from it (a maximum-distance-separable code). ULPFEC's XOR masks
//! (`fec_private_tables_random.cc`) cannot always do that — two losses covered by the same
//! single mask row stay lost — so this is an upper bound on what libwebrtc recovers; the
//! masks' pattern-dependent gaps are left out for lack of time (see docs/loss-protection.md).

use super::generator::MAX_MEDIA_PACKETS;
use crate::units::{Bytes, Time};
use std::collections::BTreeMap;

/// What an FEC packet tells the receiver about its block (carried in `Payload::Fec`; kept
/// compact so that a packet on the simulated wire does not grow).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FecInfo {
    /// First frame of the block (frame ids stay below 2³² in any run the limits allow).
    pub first_frame: u32,
    pub first_capture: Time,
    /// Last frame's capture − first frame's, µs.
    pub span_us: u32,
    /// Largest protected media payload, bytes.
    pub protected: u16,
    /// Media packets protected (≤ 48) and FEC packets (≤ media).
    pub media: u8,
    pub fec: u8,
    pub frames: u8,
    pub keyframe: bool,
}

impl FecInfo {
    fn first(&self) -> u64 { self.first_frame as u64 }
    fn last_capture(&self) -> Time { self.first_capture + crate::units::Duration::from_us(self.span_us as i64) }
    fn protected(&self) -> Bytes { Bytes::new(self.protected as i64) }
}

/// A media packet the receiver gets back from FEC: feed it to the frame receiver like an
/// arrival.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Recovered {
    pub frame: u64,
    /// Packets of the frame (1 for a frame none of whose packets arrived: it is recovered as one
    /// piece of `payload`).
    pub count: u16,
    pub capture: Time,
    pub payload: Bytes,
    pub keyframe: bool,
}

#[derive(Clone, Copy, Debug)]
struct FrameRec { count: u16, received: u16, capture: Time, keyframe: bool }

#[derive(Clone, Copy, Debug)]
struct Block { info: FecInfo, fec_received: u16, done: bool }

/// Frames and blocks older than this many frames behind the newest are forgotten.
const KEEP_FRAMES: u64 = 256;

#[derive(Default)]
pub struct FecReceiver {
    frames: BTreeMap<u64, FrameRec>,
    blocks: BTreeMap<u64, Block>,
    newest: u64,
    /// Media packets recovered so far.
    pub recovered: u64,
}

impl FecReceiver {
    pub fn new() -> Self { Self::default() }

    /// A media packet arrived; returns what it lets FEC recover (a late media packet can
    /// complete the FEC condition of a block whose FEC came first).
    pub fn on_media(&mut self, frame: u64, count: u16, capture: Time, keyframe: bool) -> Vec<Recovered> {
        let r = self.frames.entry(frame).or_insert(FrameRec { count, received: 0, capture, keyframe });
        r.received = r.received.saturating_add(1);
        self.newest = self.newest.max(frame);
        self.prune();
        let key = self.blocks.range(..=frame).next_back().map(|(&k, b)| (k, b.info.frames));
        match key {
            Some((k, n)) if frame < k + n as u64 => self.try_recover(k),
            _ => Vec::new(),
        }
    }

    /// An FEC packet of block `info` arrived.
    pub fn on_fec(&mut self, info: FecInfo) -> Vec<Recovered> {
        let b = self.blocks.entry(info.first()).or_insert(Block { info, fec_received: 0, done: false });
        b.fec_received = b.fec_received.saturating_add(1);
        self.newest = self.newest.max(info.first());
        self.try_recover(info.first())
    }

    fn try_recover(&mut self, key: u64) -> Vec<Recovered> {
        let Some(b) = self.blocks.get(&key).copied() else { return Vec::new() };
        if b.done || b.fec_received == 0 { return Vec::new(); }
        let info = b.info;
        let range = info.first()..info.first() + info.frames as u64;
        let (mut known, mut missing_known, mut unknown_frames) = (0u32, 0u32, 0u32);
        for f in range.clone() {
            match self.frames.get(&f) {
                Some(r) => { known += r.count as u32; missing_known += r.count.saturating_sub(r.received) as u32; }
                None => unknown_frames += 1,
            }
        }
        if known > info.media as u32 || (unknown_frames > 0 && info.media as u16 >= MAX_MEDIA_PACKETS) {
            // The block hit the 48-packet cap: which packets it protects is not known here.
            return Vec::new();
        }
        let unknown_packets = info.media as u32 - known;
        if unknown_frames > 0 && unknown_packets < unknown_frames { return Vec::new(); }
        let missing = missing_known + unknown_packets;
        if missing == 0 || missing > b.fec_received as u32 { return Vec::new(); }
        self.blocks.get_mut(&key).expect("present").done = true;
        self.recovered += missing as u64;
        let span = (info.frames as i64 - 1).max(1);
        let mut out = Vec::new();
        for (i, f) in range.enumerate() {
            match self.frames.get_mut(&f) {
                Some(r) => {
                    for _ in r.received..r.count { out.push(Recovered { frame: f, count: r.count, capture: r.capture, payload: info.protected(), keyframe: r.keyframe }); }
                    r.received = r.count;
                }
                None => {
                    // Capture interpolated between the block's first and last; packets shared
                    // evenly among the frames none of whose packets arrived.
                    let capture = info.first_capture + (info.last_capture() - info.first_capture) * i as i64 / span;
                    let packets = unknown_packets as i64 / unknown_frames as i64;
                    let keyframe = info.keyframe && info.frames == 1;
                    out.push(Recovered { frame: f, count: 1, capture, payload: info.protected() * packets, keyframe });
                }
            }
        }
        out
    }

    fn prune(&mut self) {
        let floor = self.newest.saturating_sub(KEEP_FRAMES);
        if self.frames.first_key_value().is_some_and(|(&k, _)| k < floor) { self.frames = self.frames.split_off(&floor); }
        if self.blocks.first_key_value().is_some_and(|(&k, _)| k < floor) { self.blocks = self.blocks.split_off(&floor); }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(first: u32, frames: u8, media: u8, fec: u8) -> FecInfo {
        FecInfo { first_frame: first, frames, media, fec, protected: 1200, first_capture: Time::from_ms(0), span_us: 132_000, keyframe: false }
    }

    #[test]
    fn recovers_when_fec_received_covers_the_missing() {
        let mut r = FecReceiver::new();
        // Frame 0: 6 packets, 2 lost; 2 FEC packets, one lost → not yet.
        for _ in 0..4 { assert!(r.on_media(0, 6, Time::ZERO, false).is_empty()); }
        assert!(r.on_fec(info(0, 1, 6, 2)).is_empty());
        // The second FEC packet: 2 ≥ 2 missing → both recovered.
        let rec = r.on_fec(info(0, 1, 6, 2));
        assert_eq!(rec.len(), 2);
        assert!(rec.iter().all(|p| p.frame == 0 && p.count == 6 && p.payload == Bytes::new(1200)));
        assert_eq!(r.recovered, 2);
        // Nothing twice.
        assert!(r.on_fec(info(0, 1, 6, 2)).is_empty());
    }

    #[test]
    fn three_missing_two_fec_is_not_enough() {
        let mut r = FecReceiver::new();
        for _ in 0..3 { r.on_media(0, 6, Time::ZERO, false); }
        r.on_fec(info(0, 1, 6, 2));
        assert!(r.on_fec(info(0, 1, 6, 2)).is_empty());
        assert_eq!(r.recovered, 0);
    }

    /// A three-frame block (frames 0..=2, 2 + 1 + 2 packets): frame 1 lost whole; its size is
    /// what the block's media count leaves, its capture the midpoint.
    #[test]
    fn a_wholly_lost_frame_comes_back_from_the_block() {
        let mut r = FecReceiver::new();
        for _ in 0..2 { r.on_media(0, 2, Time::ZERO, false); }
        for _ in 0..2 { r.on_media(2, 2, Time::from_ms(132), false); }
        let rec = r.on_fec(info(0, 3, 5, 1));
        assert_eq!(rec, vec![Recovered { frame: 1, count: 1, capture: Time::from_ms(66), payload: Bytes::new(1200), keyframe: false }]);
    }

    /// The FEC arrives first; the block's last missing media packet but one arrives later.
    #[test]
    fn late_media_completes_the_condition() {
        let mut r = FecReceiver::new();
        r.on_media(0, 3, Time::ZERO, false);
        assert!(r.on_fec(info(0, 1, 3, 1)).is_empty(), "2 missing, 1 FEC");
        let rec = r.on_media(0, 3, Time::ZERO, false);
        assert_eq!(rec.len(), 1);
    }
}
