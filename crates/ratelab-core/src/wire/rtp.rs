//! RTP (RFC 3550 §5.1) with header extensions (RFC 8285): one-byte form (profile 0xBEDE) for
//! building, both one- and two-byte forms for parsing. The extension this crate needs is the
//! transport-wide sequence number (draft-holmer-rmcat-transport-wide-cc-extensions-01 §2): a
//! 16-bit counter over all packets of the session, media and padding alike.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |V=2|P|X|  CC   |M|     PT      |       sequence number         |
//! |                           timestamp                           |
//! |           synchronization source (SSRC) identifier            |
//! |            contributing source (CSRC) identifiers (CC×)       |
//! |      0xBE     |      0xDE     |           length (words)      |   X=1
//! |  ID   | L=1   |     transport-wide sequence number  |  0 pad  |
//! |                     payload ...        | padding | count      |   P=1
//! ```

use super::{be16, be32, need, WireError};

/// URI that SDP (`a=extmap`) binds to the transport-wide sequence number extension.
pub const TRANSPORT_SEQ_URI: &str = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01";
/// Extension ID the live driver uses for it (any of 1..=14 is valid; both ends must agree).
pub const DEFAULT_TRANSPORT_SEQ_ID: u8 = 5;
/// RFC 8285 §4.2: one-byte header form.
pub const ONE_BYTE_PROFILE: u16 = 0xBEDE;
/// RFC 8285 §4.3: two-byte header form, `0x100` followed by 4 application bits.
pub const TWO_BYTE_PROFILE_MASK: u16 = 0xFFF0;
pub const TWO_BYTE_PROFILE: u16 = 0x1000;
/// Fixed RTP header length (no CSRC, no extension).
pub const FIXED_HEADER: usize = 12;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtpHeader {
    pub marker: bool,
    /// 7-bit payload type.
    pub payload_type: u8,
    pub seq: u16,
    pub timestamp: u32,
    pub ssrc: u32,
}

/// A parsed RTP packet borrowing from the datagram. Parsing checks the whole structure
/// (CSRC list, extension block and every extension element, padding) so that the accessors
/// cannot fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtpPacket<'a> {
    pub header: RtpHeader,
    pub csrc_count: u8,
    /// The extension block's profile field, if the X bit is set.
    pub ext_profile: Option<u16>,
    ext: &'a [u8],
    csrcs: &'a [u8],
    pub payload: &'a [u8],
    /// RTP padding octets (the count octet included); 0 if the P bit is clear.
    pub padding_len: u8,
}

impl<'a> RtpPacket<'a> {
    pub fn parse(buf: &'a [u8]) -> Result<RtpPacket<'a>, WireError> {
        need(buf, FIXED_HEADER)?;
        if buf[0] >> 6 != 2 { return Err(WireError::Invalid("RTP version is not 2")); }
        let padding = buf[0] & 0x20 != 0;
        let has_ext = buf[0] & 0x10 != 0;
        let cc = buf[0] & 0x0f;
        let header = RtpHeader { marker: buf[1] & 0x80 != 0, payload_type: buf[1] & 0x7f, seq: be16(buf, 2), timestamp: be32(buf, 4), ssrc: be32(buf, 8) };
        let mut at = FIXED_HEADER + 4 * cc as usize;
        need(buf, at)?;
        let csrcs = &buf[FIXED_HEADER..at];
        let (mut ext_profile, mut ext): (Option<u16>, &[u8]) = (None, &[]);
        if has_ext {
            need(buf, at + 4)?;
            let profile = be16(buf, at);
            let words = be16(buf, at + 2) as usize;
            let end = at + 4 + 4 * words;
            need(buf, end)?;
            ext = &buf[at + 4..end];
            ext_profile = Some(profile);
            validate_elements(profile, ext)?;
            at = end;
        }
        let mut end = buf.len();
        let mut padding_len = 0u8;
        if padding {
            let p = buf[buf.len() - 1];
            if p == 0 || (p as usize) > buf.len() - at { return Err(WireError::Invalid("RTP padding count out of range")); }
            padding_len = p;
            end -= p as usize;
        }
        Ok(RtpPacket { header, csrc_count: cc, ext_profile, ext, csrcs, payload: &buf[at..end], padding_len })
    }

    pub fn csrc(&self, i: usize) -> Option<u32> { (i < self.csrc_count as usize).then(|| be32(self.csrcs, 4 * i)) }

    /// Data of the first header extension element with this ID (either form).
    pub fn extension(&self, id: u8) -> Option<&'a [u8]> {
        let profile = self.ext_profile?;
        elements(profile, self.ext).find(|(i, _)| *i == id).map(|(_, d)| d)
    }

    /// The transport-wide sequence number carried under extension `id`.
    pub fn transport_seq(&self, id: u8) -> Option<u16> {
        let d = self.extension(id)?;
        (d.len() == 2).then(|| be16(d, 0))
    }
}

/// Iterate (id, data) over the elements of a *validated* extension block.
fn elements(profile: u16, ext: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    let two = profile & TWO_BYTE_PROFILE_MASK == TWO_BYTE_PROFILE;
    let one = profile == ONE_BYTE_PROFILE;
    let mut at = 0usize;
    std::iter::from_fn(move || {
        if !(one || two) { return None; }
        loop {
            if at >= ext.len() { return None; }
            let b = ext[at];
            if one {
                let id = b >> 4;
                if id == 0 { at += 1; continue; } // padding octet
                if id == 15 { return None; } // RFC 8285 §4.2: stop processing
                let len = (b & 0x0f) as usize + 1;
                if at + 1 + len > ext.len() { return None; }
                let d = &ext[at + 1..at + 1 + len];
                at += 1 + len;
                return Some((id, d));
            }
            if b == 0 { at += 1; continue; }
            if at + 2 > ext.len() { return None; }
            let len = ext[at + 1] as usize;
            if at + 2 + len > ext.len() { return None; }
            let d = &ext[at + 2..at + 2 + len];
            at += 2 + len;
            return Some((b, d));
        }
    })
}

/// Check that every element of a one- or two-byte extension block lies within the block.
/// Blocks of other profiles (RFC 3550 §5.3.1 generic extensions) are accepted as opaque.
fn validate_elements(profile: u16, ext: &[u8]) -> Result<(), WireError> {
    let one = profile == ONE_BYTE_PROFILE;
    if !one && profile & TWO_BYTE_PROFILE_MASK != TWO_BYTE_PROFILE { return Ok(()); }
    let mut at = 0usize;
    while at < ext.len() {
        let b = ext[at];
        if one {
            let id = b >> 4;
            if id == 0 { at += 1; continue; }
            if id == 15 { return Ok(()); }
            let len = (b & 0x0f) as usize + 1;
            if at + 1 + len > ext.len() { return Err(WireError::Invalid("RTP header extension element overruns the block")); }
            at += 1 + len;
        } else {
            if b == 0 { at += 1; continue; }
            if at + 2 > ext.len() { return Err(WireError::Invalid("RTP header extension element overruns the block")); }
            let len = ext[at + 1] as usize;
            if at + 2 + len > ext.len() { return Err(WireError::Invalid("RTP header extension element overruns the block")); }
            at += 2 + len;
        }
    }
    Ok(())
}

/// Write an RTP packet: fixed header, one-byte-form extension block with `ext` elements
/// (id 1..=14, 1..=16 data bytes each; none: no block), `payload`, and `padding` RTP padding
/// octets (0: none; the last one holds the count).
pub fn write_rtp(out: &mut Vec<u8>, h: &RtpHeader, ext: &[(u8, &[u8])], payload: &[u8], padding: u8) -> Result<(), WireError> {
    if h.payload_type > 127 { return Err(WireError::Invalid("payload type must be < 128")); }
    for (id, d) in ext {
        if !(1..=14).contains(id) { return Err(WireError::Invalid("one-byte extension IDs are 1..=14")); }
        if d.is_empty() || d.len() > 16 { return Err(WireError::Invalid("one-byte extension data is 1..=16 bytes")); }
    }
    let has_ext = !ext.is_empty();
    out.push(0x80 | if padding > 0 { 0x20 } else { 0 } | if has_ext { 0x10 } else { 0 });
    out.push(if h.marker { 0x80 } else { 0 } | h.payload_type);
    out.extend_from_slice(&h.seq.to_be_bytes());
    out.extend_from_slice(&h.timestamp.to_be_bytes());
    out.extend_from_slice(&h.ssrc.to_be_bytes());
    if has_ext {
        let body: usize = ext.iter().map(|(_, d)| 1 + d.len()).sum();
        let words = body.div_ceil(4);
        out.extend_from_slice(&ONE_BYTE_PROFILE.to_be_bytes());
        out.extend_from_slice(&(words as u16).to_be_bytes());
        for (id, d) in ext {
            out.push((id << 4) | (d.len() as u8 - 1));
            out.extend_from_slice(d);
        }
        out.resize(out.len() + (4 * words - body), 0);
    }
    out.extend_from_slice(payload);
    if padding > 0 {
        out.resize(out.len() + padding as usize - 1, 0);
        out.push(padding);
    }
    Ok(())
}

/// Bytes that [`write_rtp`] writes before the payload for one transport-sequence extension.
pub const HEADER_WITH_TRANSPORT_SEQ: usize = FIXED_HEADER + 4 + 4;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Hand-built from RFC 3550 §5.1 and RFC 8285 §4.2.
    #[test]
    fn byte_exact_packet_with_transport_seq() {
        let h = RtpHeader { marker: true, payload_type: 96, seq: 0xFFFF, timestamp: 0x0102_0304, ssrc: 0xDEAD_BEEF };
        let mut out = Vec::new();
        write_rtp(&mut out, &h, &[(5, &0xABCDu16.to_be_bytes())], &[0x11, 0x22], 0).unwrap();
        let expect = [
            0x90,                   // V=2 P=0 X=1 CC=0
            0xE0,                   // M=1 PT=96
            0xFF, 0xFF,             // sequence number 65535 (about to wrap)
            0x01, 0x02, 0x03, 0x04, // timestamp
            0xDE, 0xAD, 0xBE, 0xEF, // SSRC
            0xBE, 0xDE, 0x00, 0x01, // one-byte extension profile, length 1 word
            0x51, 0xAB, 0xCD, 0x00, // ID=5 L=1 (2 bytes): transport seq 0xABCD, 1 padding octet
            0x11, 0x22,             // payload
        ];
        assert_eq!(out, expect);
        assert_eq!(expect.len(), HEADER_WITH_TRANSPORT_SEQ + 2);
        let p = RtpPacket::parse(&out).unwrap();
        assert_eq!(p.header, h);
        assert_eq!(p.transport_seq(5), Some(0xABCD));
        assert_eq!(p.transport_seq(6), None);
        assert_eq!(p.payload, &[0x11, 0x22]);
    }

    #[test]
    fn padding_csrc_and_two_byte_form() {
        let h = RtpHeader { marker: false, payload_type: 97, seq: 0, timestamp: 0, ssrc: 1 };
        let mut out = Vec::new();
        write_rtp(&mut out, &h, &[], &[7], 4).unwrap();
        assert_eq!(out, [0xA0, 97, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 7, 0, 0, 0, 4]);
        let p = RtpPacket::parse(&out).unwrap();
        assert_eq!((p.payload, p.padding_len), (&[7u8][..], 4));
        // CC=1, two-byte extension (0x1000) with ID 5, length 2, then an ID-0 padding byte
        let b = [0x91, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 9, 0x10, 0x00, 0x00, 0x02, 5, 2, 0x12, 0x34, 0, 0, 0, 0, 0xAA];
        let p = RtpPacket::parse(&b).unwrap();
        assert_eq!(p.csrc(0), Some(9));
        assert_eq!(p.csrc(1), None);
        assert_eq!(p.transport_seq(5), Some(0x1234));
        assert_eq!(p.payload, &[0xAA]);
        // one-byte form: ID 15 stops processing
        let b = [0x90, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0xBE, 0xDE, 0, 1, 0xF0, 0x51, 0x12, 0x34];
        assert_eq!(RtpPacket::parse(&b).unwrap().transport_seq(5), None);
    }

    #[test]
    fn malformed_packets_are_rejected() {
        assert!(matches!(RtpPacket::parse(&[0x80, 96, 0]), Err(WireError::Truncated { .. })));
        assert!(RtpPacket::parse(&[0x40; 12]).is_err()); // version 1
        // extension length past the end
        assert!(RtpPacket::parse(&[0x90, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0xBE, 0xDE, 0, 2, 0x51, 0, 0, 0]).is_err());
        // element overruns the block: L=3 (4 bytes) in a 4-byte block
        assert!(RtpPacket::parse(&[0x90, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0xBE, 0xDE, 0, 1, 0x53, 0, 0, 0]).is_err());
        // padding count larger than the payload
        assert!(RtpPacket::parse(&[0xA0, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 5]).is_err());
        assert!(write_rtp(&mut Vec::new(), &RtpHeader::default(), &[(15, &[1])], &[], 0).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(p) = RtpPacket::parse(&bytes) {
                for id in 0..=15 { let _ = p.extension(id); }
                let _ = p.csrc(3);
            }
        }

        #[test]
        fn build_parse_round_trip(marker in any::<bool>(), pt in 0u8..128, seq in any::<u16>(), ts in any::<u32>(), ssrc in any::<u32>(),
                                  tw in any::<u16>(), id in 1u8..15, payload in proptest::collection::vec(any::<u8>(), 0..64), pad in 0u8..8) {
            let h = RtpHeader { marker, payload_type: pt, seq, timestamp: ts, ssrc };
            let mut out = Vec::new();
            write_rtp(&mut out, &h, &[(id, &tw.to_be_bytes())], &payload, pad).unwrap();
            let p = RtpPacket::parse(&out).unwrap();
            prop_assert_eq!(p.header, h);
            prop_assert_eq!(p.transport_seq(id), Some(tw));
            prop_assert_eq!(p.payload, &payload[..]);
            prop_assert_eq!(p.padding_len, pad);
        }
    }
}
