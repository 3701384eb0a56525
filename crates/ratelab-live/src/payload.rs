//! The synthetic media payload ratelab puts inside RTP: a 28-byte header that lets the
//! receiver reassemble frames and measure one-way delay, then zero filler up to the size the
//! encoder model asked for. Big-endian:
//!
//! ```text
//! 0      2       3      4              8        10       12                  20                  28
//! | 'RL' | ver=1 | flags | frame id u32 | index  | count  | capture UNIX µs  | send UNIX µs     | zeros…
//! ```
//! flags: bit 0 key frame, bit 1 padding/probe filler (no media), bit 2 sent in a probe cluster,
//! bit 3 audio (one packet per audio frame; no frame reassembly).

use ratelab_core::wire::rtp::{write_rtp, RtpHeader, HEADER_WITH_TRANSPORT_SEQ};

pub const MAGIC: [u8; 2] = *b"RL";
pub const VERSION: u8 = 1;
pub const LEN: usize = 28;
/// IPv4 + UDP header bytes: what the simulator's packet sizes include on top of the datagram.
pub const IP_UDP_OVERHEAD: i64 = 28;
/// Smallest datagram the sender writes: RTP header, transport-seq extension, payload header.
pub const MIN_DATAGRAM: usize = HEADER_WITH_TRANSPORT_SEQ + LEN;
/// RTP payload types: dynamic range (RFC 3551 §6).
pub const PT_MEDIA: u8 = 96;
pub const PT_PADDING: u8 = 97;
pub const PT_AUDIO: u8 = 111;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MediaHeader {
    pub keyframe: bool,
    pub padding: bool,
    pub probe: bool,
    pub audio: bool,
    pub frame: u32,
    pub index: u16,
    pub count: u16,
    pub capture_unix_us: i64,
    pub send_unix_us: i64,
}

impl MediaHeader {
    pub fn write(&self, out: &mut [u8; LEN]) {
        out[0..2].copy_from_slice(&MAGIC);
        out[2] = VERSION;
        out[3] = self.keyframe as u8 | (self.padding as u8) << 1 | (self.probe as u8) << 2 | (self.audio as u8) << 3;
        out[4..8].copy_from_slice(&self.frame.to_be_bytes());
        out[8..10].copy_from_slice(&self.index.to_be_bytes());
        out[10..12].copy_from_slice(&self.count.to_be_bytes());
        out[12..20].copy_from_slice(&self.capture_unix_us.to_be_bytes());
        out[20..28].copy_from_slice(&self.send_unix_us.to_be_bytes());
    }

    pub fn parse(b: &[u8]) -> Option<MediaHeader> {
        if b.len() < LEN || b[0..2] != MAGIC || b[2] != VERSION { return None; }
        let i64_at = |at: usize| i64::from_be_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
        let h = MediaHeader {
            keyframe: b[3] & 1 != 0,
            padding: b[3] & 2 != 0,
            probe: b[3] & 4 != 0,
            audio: b[3] & 8 != 0,
            frame: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
            index: u16::from_be_bytes([b[8], b[9]]),
            count: u16::from_be_bytes([b[10], b[11]]),
            capture_unix_us: i64_at(12),
            send_unix_us: i64_at(20),
        };
        // A media packet belongs to a frame of 1..=count packets.
        if !h.padding && !h.audio && (h.count == 0 || h.index >= h.count) { return None; }
        Some(h)
    }

    /// What the packet carries, for receiver-side estimators.
    pub fn kind(&self) -> ratelab_core::controller::PacketKind {
        use ratelab_core::controller::PacketKind;
        if self.probe { PacketKind::Probe } else if self.audio { PacketKind::Audio } else if self.padding { PacketKind::Padding } else { PacketKind::Video }
    }
}

/// Write one complete RTP datagram of `datagram_len` bytes (at least [`MIN_DATAGRAM`]).
pub fn write_datagram(out: &mut Vec<u8>, rtp: &RtpHeader, tw_ext_id: u8, tw_seq: u16, media: &MediaHeader, datagram_len: usize) {
    out.clear();
    let mut h = [0u8; LEN];
    media.write(&mut h);
    // The extension ID was validated when the sender was configured; a failure here would only
    // drop the packet.
    if write_rtp(out, rtp, &[(tw_ext_id, &tw_seq.to_be_bytes())], &h, 0).is_err() { out.clear(); return; }
    if out.len() < datagram_len { out.resize(datagram_len, 0); }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use ratelab_core::controller::PacketKind;
    use ratelab_core::wire::rtp::RtpPacket;

    #[test]
    fn datagram_layout_and_round_trip() {
        let m = MediaHeader { keyframe: true, padding: false, frame: 7, index: 1, count: 3, capture_unix_us: 1_700_000_000_000_000, send_unix_us: 1_700_000_000_001_000, ..Default::default() };
        let rtp = RtpHeader { marker: false, payload_type: PT_MEDIA, seq: 9, timestamp: 90, ssrc: 0x1234 };
        let mut out = Vec::new();
        write_datagram(&mut out, &rtp, 5, 9, &m, 1172);
        assert_eq!(out.len(), 1172);
        assert_eq!(MIN_DATAGRAM, 48);
        let p = RtpPacket::parse(&out).unwrap();
        assert_eq!(p.transport_seq(5), Some(9));
        assert_eq!(&p.payload[..4], &[b'R', b'L', 1, 1]);
        assert_eq!(MediaHeader::parse(p.payload), Some(m));
        // too small a size still yields a complete header
        write_datagram(&mut out, &rtp, 5, 9, &m, 10);
        assert_eq!(out.len(), MIN_DATAGRAM);
        assert!(MediaHeader::parse(&[b'R', b'L', 1, 0, 0, 0, 0, 0, 0, 5, 0, 3]).is_none());
        assert_eq!(m.kind(), PacketKind::Video);
    }

    #[test]
    fn probe_and_audio_flags_round_trip_to_packet_kinds() {
        let rtp = RtpHeader { marker: false, payload_type: PT_AUDIO, seq: 1, timestamp: 0, ssrc: 1 };
        let mut out = Vec::new();
        for (m, kind, flags) in [
            (MediaHeader { audio: true, ..Default::default() }, PacketKind::Audio, 8u8),
            (MediaHeader { padding: true, probe: true, ..Default::default() }, PacketKind::Probe, 6),
            (MediaHeader { padding: true, ..Default::default() }, PacketKind::Padding, 2),
            (MediaHeader { count: 1, probe: true, ..Default::default() }, PacketKind::Probe, 4),
        ] {
            write_datagram(&mut out, &rtp, 5, 1, &m, 200);
            let p = RtpPacket::parse(&out).unwrap();
            assert_eq!(p.payload[3], flags);
            let back = MediaHeader::parse(p.payload).expect("parses");
            assert_eq!((back, back.kind()), (m, kind));
        }
    }

    proptest! {
        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..64)) { let _ = MediaHeader::parse(&b); }
    }
}
