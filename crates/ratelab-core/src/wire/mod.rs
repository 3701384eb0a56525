//! Wire formats, sans-IO and byte-exact: what the live driver puts into UDP datagrams.
//!
//! * [`rtp`]: RTP (RFC 3550) with RFC 8285 header extensions; the transport-wide sequence
//!   number extension (draft-holmer-rmcat-transport-wide-cc-extensions-01 §2) in the one-byte form.
//! * [`twcc`]: RTCP transport-wide feedback (same draft, §3.1): run-length and status-vector
//!   chunks, small and large receive deltas at 250 µs resolution.
//! * [`rfc8888`]: RTCP congestion-control feedback (RFC 8888).
//! * [`remb`]: receiver estimated maximum bitrate (draft-alvestrand-rmcat-remb-03 §2.2), the
//!   message that carries a receiver-side estimator's rate back to the sender.
//!
//! Every parser takes arbitrary bytes, never panics, and allocates at most an amount fixed by the
//! format's own limits (e.g. 65 535 statuses for TWCC, 16 384 reports for an RFC 8888 block),
//! never more than what the buffer can describe. Builders write into a caller's `Vec<u8>`.
//! The conversions between these messages and the core's [`FeedbackReport`](crate::feedback::generator::FeedbackReport)
//! live next to each format (`encode_report` / `decode_report`).

pub mod remb;
pub mod rfc8888;
pub mod rtp;
pub mod twcc;

use thiserror::Error;

/// Why a packet could not be parsed (or built).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    #[error("truncated: need {need} bytes, have {have}")]
    Truncated { need: usize, have: usize },
    #[error("invalid: {0}")]
    Invalid(&'static str),
}

pub(crate) fn need(buf: &[u8], n: usize) -> Result<(), WireError> {
    if buf.len() < n { Err(WireError::Truncated { need: n, have: buf.len() }) } else { Ok(()) }
}

pub(crate) fn be16(b: &[u8], at: usize) -> u16 { u16::from_be_bytes([b[at], b[at + 1]]) }
pub(crate) fn be24(b: &[u8], at: usize) -> u32 { u32::from_be_bytes([0, b[at], b[at + 1], b[at + 2]]) }
pub(crate) fn be32(b: &[u8], at: usize) -> u32 { u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) }

/// RTCP packet types used here (RFC 3550 §12.1, RFC 4585 §6.1).
pub const RTCP_PT_RTPFB: u8 = 205;
pub const RTCP_PT_PSFB: u8 = 206;

/// The RTCP common header (RFC 3550 §6.4.1): V=2, P, count/FMT (5 bits), PT, length in 32-bit
/// words minus one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtcpHeader {
    pub padding: bool,
    /// Reception report count, or FMT for feedback messages (RFC 4585).
    pub fmt: u8,
    pub packet_type: u8,
    /// Length of the whole packet in bytes (header included).
    pub len: usize,
}

impl RtcpHeader {
    pub fn parse(buf: &[u8]) -> Result<RtcpHeader, WireError> {
        need(buf, 4)?;
        if buf[0] >> 6 != 2 { return Err(WireError::Invalid("RTCP version is not 2")); }
        let len = (be16(buf, 2) as usize + 1) * 4;
        need(buf, len)?;
        Ok(RtcpHeader { padding: buf[0] & 0x20 != 0, fmt: buf[0] & 0x1f, packet_type: buf[1], len })
    }

    /// The packet's body after the 4-byte header with RTCP padding removed (RFC 3550 §6.4.1: the
    /// last octet of a padded packet counts the padding octets, itself included).
    pub fn body<'a>(&self, packet: &'a [u8]) -> Result<&'a [u8], WireError> {
        let pkt = &packet[..self.len];
        let mut end = self.len;
        if self.padding {
            let p = pkt[self.len - 1] as usize;
            if p == 0 || p > self.len - 4 { return Err(WireError::Invalid("RTCP padding count out of range")); }
            end -= p;
        }
        Ok(&pkt[4..end])
    }
}

/// Write an RTCP header for a body of `body_len` bytes followed by `pad` padding octets
/// (`body_len + 4 + pad` must be a multiple of 4).
pub(crate) fn write_rtcp_header(out: &mut Vec<u8>, fmt: u8, packet_type: u8, total_len: usize, padded: bool) {
    debug_assert!(total_len.is_multiple_of(4) && total_len >= 4);
    out.push(0x80 | if padded { 0x20 } else { 0 } | (fmt & 0x1f));
    out.push(packet_type);
    out.extend_from_slice(&((total_len / 4 - 1) as u16).to_be_bytes());
}

/// Pad `out` (whose RTCP packet began at `start`) to a 32-bit boundary the RFC 3550 way: zero
/// octets then a final octet holding the padding count, with the P bit set in the header.
pub(crate) fn pad_rtcp(out: &mut Vec<u8>, start: usize) {
    let len = out.len() - start;
    let pad = (4 - len % 4) % 4;
    if pad > 0 {
        for _ in 0..pad - 1 { out.push(0); }
        out.push(pad as u8);
        out[start] |= 0x20;
    }
    let words = ((out.len() - start) / 4 - 1) as u16;
    out[start + 2..start + 4].copy_from_slice(&words.to_be_bytes());
}

/// Split a compound RTCP datagram (RFC 3550 §6.1) into its packets. Stops at the first
/// malformed packet and reports it as the last item.
pub fn rtcp_packets(datagram: &[u8]) -> impl Iterator<Item = Result<(RtcpHeader, &[u8]), WireError>> {
    let mut rest = datagram;
    let mut failed = false;
    std::iter::from_fn(move || {
        if rest.is_empty() || failed { return None; }
        match RtcpHeader::parse(rest) {
            Ok(h) => {
                let (pkt, tail) = rest.split_at(h.len);
                rest = tail;
                Some(Ok((h, pkt)))
            }
            Err(e) => { failed = true; Some(Err(e)) }
        }
    })
}

/// RTP/RTCP demultiplexing on one port (RFC 5761 §4): the second octet of RTCP is a packet
/// type in 192..=223 (which, as an RTP marker bit + payload type, would be PT 64..=95).
pub fn is_rtcp(datagram: &[u8]) -> bool {
    datagram.len() >= 2 && datagram[0] >> 6 == 2 && (192..=223).contains(&datagram[1])
}

/// Extend a wrapping `bits`-bit counter to 64 bits: the value congruent to `value` modulo
/// 2^bits that is closest to `reference` (ties go forward). `bits` is in 1..=32.
pub fn unwrap_near(reference: i64, value: u64, bits: u32) -> i64 {
    let m = 1i64 << bits;
    let v = (value as i64) & (m - 1);
    let base = reference - reference.rem_euclid(m);
    let mut best = base + v;
    for cand in [base - m + v, base + m + v] {
        let d = (cand - reference).abs();
        let bd = (best - reference).abs();
        if d < bd || (d == bd && cand > best) { best = cand; }
    }
    best
}

/// Unwraps a stream of 16-bit sequence numbers (RTP, transport-wide) to 64 bits. The first
/// value maps to itself; each later value to the closest extension of the previous one, so
/// reordering within ±32 767 is handled and a wrap from 65 535 to 0 continues at 65 536.
/// Results never go below zero (a value "before" the first one clamps to the first wrap).
#[derive(Clone, Debug, Default)]
pub struct SeqUnwrapper {
    last: Option<i64>,
}

impl SeqUnwrapper {
    pub fn new() -> Self { SeqUnwrapper { last: None } }
    pub fn unwrap(&mut self, seq: u16) -> u64 {
        let v = match self.last {
            None => seq as i64,
            Some(last) => {
                let u = unwrap_near(last, seq as u64, 16);
                if u < 0 { u + (1 << 16) } else { u }
            }
        };
        // Track the highest so far so that a late packet does not move the window back.
        self.last = Some(self.last.map_or(v, |l| l.max(v)));
        v as u64
    }
    /// Unwrap without updating the state (for values that may be garbage).
    pub fn peek(&self, seq: u16) -> u64 {
        match self.last {
            None => seq as u64,
            Some(last) => { let u = unwrap_near(last, seq as u64, 16); (if u < 0 { u + (1 << 16) } else { u }) as u64 }
        }
    }
}

/// A parsed RTCP packet of one of the kinds this crate understands.
#[derive(Clone, Debug, PartialEq)]
pub enum RtcpPacket {
    Twcc(twcc::TwccFeedback),
    Ccfb(rfc8888::CcfbReport),
    Remb(remb::Remb),
    /// Well-formed RTCP that is none of the above (SR, RR, SDES, ...).
    Other { packet_type: u8, fmt: u8 },
}

/// Parse every packet of a compound RTCP datagram.
pub fn parse_rtcp(datagram: &[u8]) -> Result<Vec<RtcpPacket>, WireError> {
    let mut out = Vec::new();
    for item in rtcp_packets(datagram) {
        let (h, pkt) = item?;
        out.push(match (h.packet_type, h.fmt) {
            (RTCP_PT_RTPFB, twcc::FMT) => RtcpPacket::Twcc(twcc::TwccFeedback::parse(pkt)?),
            (RTCP_PT_RTPFB, rfc8888::FMT) => RtcpPacket::Ccfb(rfc8888::CcfbReport::parse(pkt)?),
            (RTCP_PT_PSFB, remb::FMT) if remb::Remb::is_remb(pkt) => RtcpPacket::Remb(remb::Remb::parse(pkt)?),
            (pt, fmt) => RtcpPacket::Other { packet_type: pt, fmt },
        });
        // A compound datagram holds a handful of packets; a flood of tiny ones is not RTCP.
        if out.len() > 64 { return Err(WireError::Invalid("more than 64 RTCP packets in one datagram")); }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn unwrap_near_picks_the_closest_extension() {
        assert_eq!(unwrap_near(65_535, 0, 16), 65_536);
        assert_eq!(unwrap_near(65_536, 65_535, 16), 65_535);
        assert_eq!(unwrap_near(10, 65_530, 16), -6);
        assert_eq!(unwrap_near(100_000, 100_000 % 65_536, 16), 100_000);
        // exactly half-way: forward
        assert_eq!(unwrap_near(0, 32_768, 16), 32_768);
        // 24-bit reference time
        assert_eq!(unwrap_near((1 << 24) - 2, 1, 24), (1 << 24) + 1);
    }

    #[test]
    fn seq_unwrapper_handles_wrap_and_reordering() {
        let mut u = SeqUnwrapper::new();
        assert_eq!(u.unwrap(65_534), 65_534);
        assert_eq!(u.unwrap(65_535), 65_535);
        assert_eq!(u.unwrap(1), 65_537);
        assert_eq!(u.unwrap(0), 65_536); // reordered across the wrap
        assert_eq!(u.unwrap(65_535), 65_535);
        assert_eq!(u.unwrap(2), 65_538);
        assert_eq!(u.peek(3), 65_539);
        let mut v = SeqUnwrapper::new();
        assert_eq!(v.unwrap(3), 3);
        assert_eq!(v.unwrap(65_535), 65_535); // cannot go below zero: the earlier wrap
    }

    #[test]
    fn rtcp_header_and_padding() {
        // V=2 P=1 FMT=15, PT=205, length=1 word -> 8 bytes; 3 padding octets (last one = 3)
        let b = [0xAF, 205, 0x00, 0x01, 0xDE, 0x00, 0x00, 0x03];
        let h = RtcpHeader::parse(&b).unwrap();
        assert_eq!(h, RtcpHeader { padding: true, fmt: 15, packet_type: 205, len: 8 });
        assert_eq!(h.body(&b).unwrap(), &[0xDE]);
        assert!(is_rtcp(&b));
        assert!(!is_rtcp(&[0x80, 96]));
        let bad = [0xAF, 205, 0x00, 0x01, 0xDE, 0x00, 0x00, 0x09];
        assert!(RtcpHeader::parse(&bad).unwrap().body(&bad).is_err());
        assert_eq!(RtcpHeader::parse(&b[..6]), Err(WireError::Truncated { need: 8, have: 6 }));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
        #[test]
        fn rtcp_parsing_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = parse_rtcp(&bytes);
            for (h, p) in rtcp_packets(&bytes).flatten() { let _ = h.body(p); }
        }

        #[test]
        fn seq_unwrapper_is_monotone_for_in_order_streams(start in any::<u16>(), steps in proptest::collection::vec(1u16..1000, 1..200)) {
            let mut u = SeqUnwrapper::new();
            let mut expect = start as u64;
            prop_assert_eq!(u.unwrap(start), expect);
            let mut s = start;
            for d in steps {
                s = s.wrapping_add(d);
                expect += d as u64;
                prop_assert_eq!(u.unwrap(s), expect);
            }
        }
    }
}
