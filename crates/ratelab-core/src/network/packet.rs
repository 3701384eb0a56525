//! A packet on the simulated wire.

use crate::units::{Bytes, Time};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Payload {
    /// One RTP packet of video frame `frame` (`index` of `count`), captured at `capture`.
    /// `media_seq` is the flow's RTP sequence number (the transport seq also counts padding and
    /// audio, so gaps in it are not losses of media); `rtx`: an RTX copy of that packet (RFC 4588,
    /// sent on NACK, `media.nack`). Frame ids and media sequence numbers are 32-bit here so that
    /// every packet stays 24 bytes (the event queue's hot data): 2^32 frames are 4.5 years at 30
    /// frames/s, 2^32 media packets 10 days at 5,000 packets/s.
    Media { frame: u32, index: u16, count: u16, capture: Time, keyframe: bool, media_seq: u32, rtx: bool },
    /// One audio packet (the optional Opus-like stream, `media.audio_kbps`): one per frame,
    /// sent when encoded (libwebrtc does not pace audio), no frame reassembly.
    Audio,
    /// One ULPFEC packet (in RED) of the block of video frames it describes (`media.fec`;
    /// the fields of [`crate::media::fec::recovery::FecInfo`], inline so that the payload
    /// stays 24 bytes).
    Fec { first_frame: u32, first_capture: Time, span_us: u32, protected: u16, media: u8, fec: u8, frames: u8, keyframe: bool },
    /// Padding or a probe filler: carries no media.
    Padding,
    /// A TCP data segment.
    Tcp { seq: u64, len: u32, retransmit: bool },
    /// A receiver → sender message (feedback, REMB, TCP ACK) crossing a congested return path;
    /// `id` keys its content in the simulator (sim/control.rs), so packets stay `Copy`.
    Control { id: u64 },
}

/// What the receiver can tell a media packet carries (a probe cluster id wins over the payload).
pub fn media_kind(payload: &Payload, probe_cluster: Option<u32>) -> crate::controller::PacketKind {
    use crate::controller::PacketKind;
    if probe_cluster.is_some() { return PacketKind::Probe; }
    match payload {
        Payload::Media { .. } | Payload::Fec { .. } => PacketKind::Video,
        Payload::Audio => PacketKind::Audio,
        _ => PacketKind::Padding,
    }
}

impl Payload {
    /// The FEC block an FEC packet describes.
    pub fn fec_info(&self) -> Option<crate::media::fec::recovery::FecInfo> {
        match *self {
            Payload::Fec { first_frame, first_capture, span_us, protected, media, fec, frames, keyframe } =>
                Some(crate::media::fec::recovery::FecInfo { first_frame, first_capture, span_us, protected, media, fec, frames, keyframe }),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Packet {
    /// Index of the flow in the scenario.
    pub flow: u32,
    /// Transport-wide (media) or segment (TCP) sequence number.
    pub seq: u64,
    pub size: Bytes,
    /// When the sender put it on the wire.
    pub send_time: Time,
    /// When it entered the bottleneck queue.
    pub enqueue_time: Time,
    /// When the bottleneck started transmitting it (queuing delay = this − enqueue_time).
    pub tx_start: Time,
    pub probe_cluster: Option<u32>,
    pub payload: Payload,
}
#[cfg(test)]
mod tests {
    /// Every packet on the simulated wire and in the event queue carries a payload: the FEC
    /// variant must not make it larger than the media one (24 bytes).
    #[test]
    fn the_payload_stays_small() {
        assert!(std::mem::size_of::<super::Payload>() <= 24, "{}", std::mem::size_of::<super::Payload>());
    }
}
