//! Receiver Estimated Maximum Bitrate (draft-alvestrand-rmcat-remb-03 §2.2): an
//! application-layer feedback message (PSFB, PT 206, FMT 15) that carries a receiver-side
//! estimator's rate to the sender.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |V=2|P| FMT=15  |   PT=206      |             length            |
//! |                  SSRC of packet sender                        |
//! |                  SSRC of media source (0)                     |
//! |  Unique identifier 'R' 'E' 'M' 'B'                            |
//! |  Num SSRC     | BR Exp    |  BR Mantissa                      |
//! |   SSRC feedback  (Num SSRC ×)                                 |
//! ```
//!
//! Bitrate = mantissa (18 bits) × 2^exp (6 bits) bit/s.

use super::{be32, need, write_rtcp_header, RtcpHeader, WireError, RTCP_PT_PSFB};

pub const FMT: u8 = 15;
const MANTISSA_BITS: u32 = 18;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remb {
    pub sender_ssrc: u32,
    /// Bit/s, as encoded (mantissa × 2^exp, saturating at `u64::MAX`).
    pub bitrate_bps: u64,
    pub ssrcs: Vec<u32>,
}

/// Split a bitrate into (exp, mantissa) with the smallest exponent, rounding down.
pub fn encode_bitrate(bps: u64) -> (u8, u32) {
    let mut exp = 0u32;
    while exp < 63 && (bps >> exp) >= 1 << MANTISSA_BITS { exp += 1; }
    (exp as u8, ((bps >> exp) as u32) & ((1 << MANTISSA_BITS) - 1))
}

impl Remb {
    /// True if an RTCP packet (header included) is a PSFB/FMT 15 message with the REMB identifier.
    pub fn is_remb(packet: &[u8]) -> bool {
        packet.len() >= 16 && packet[1] == RTCP_PT_PSFB && packet[0] & 0x1f == FMT && &packet[12..16] == b"REMB"
    }

    pub fn parse(packet: &[u8]) -> Result<Remb, WireError> {
        let h = RtcpHeader::parse(packet)?;
        if h.packet_type != RTCP_PT_PSFB || h.fmt != FMT { return Err(WireError::Invalid("not an application-layer feedback packet (PT 206, FMT 15)")); }
        let body = h.body(packet)?;
        need(body, 16)?;
        if &body[8..12] != b"REMB" { return Err(WireError::Invalid("missing the 'REMB' identifier")); }
        let n = body[12] as usize;
        need(body, 16 + 4 * n)?;
        let exp = (body[13] >> 2) as u32;
        let mantissa = (((body[13] & 0x3) as u64) << 16) | ((body[14] as u64) << 8) | body[15] as u64;
        let bitrate_bps = u64::try_from((mantissa as u128) << exp).unwrap_or(u64::MAX);
        Ok(Remb { sender_ssrc: be32(body, 0), bitrate_bps, ssrcs: (0..n).map(|i| be32(body, 16 + 4 * i)).collect() })
    }

    /// Write the message; the bitrate is rounded down to what 18 bits of mantissa can carry.
    pub fn write(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        if self.ssrcs.len() > 255 { return Err(WireError::Invalid("at most 255 SSRCs")); }
        let len = 20 + 4 * self.ssrcs.len();
        write_rtcp_header(out, FMT, RTCP_PT_PSFB, len, false);
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        out.extend_from_slice(&0u32.to_be_bytes());
        out.extend_from_slice(b"REMB");
        let (exp, m) = encode_bitrate(self.bitrate_bps);
        out.push(self.ssrcs.len() as u8);
        out.push((exp << 2) | (m >> 16) as u8);
        out.push((m >> 8) as u8);
        out.push(m as u8);
        for s in &self.ssrcs { out.extend_from_slice(&s.to_be_bytes()); }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Hand-built: 1 000 000 bit/s = 250 000 × 2^2: mantissa 250000 (0x3D090, needs 18 bits
    /// only after two halvings), exp 2.
    #[test]
    fn byte_exact_remb() {
        let r = Remb { sender_ssrc: 0x0102_0304, bitrate_bps: 1_000_000, ssrcs: vec![0xAABB_CCDD] };
        let mut b = Vec::new();
        r.write(&mut b).unwrap();
        let expect = [
            0x8F, 206, 0x00, 0x05,  // V=2 P=0 FMT=15, PT=206, length 5 words (24 bytes)
            0x01, 0x02, 0x03, 0x04, // sender SSRC
            0x00, 0x00, 0x00, 0x00, // media source SSRC: 0
            b'R', b'E', b'M', b'B', // identifier
            0x01,                   // Num SSRC 1
            0x0B,                   // exp 2 (000010) | mantissa bits 17..16 (11)
            0xD0, 0x90,             // mantissa bits 15..0
            0xAA, 0xBB, 0xCC, 0xDD, // SSRC feedback
        ];
        assert_eq!(b, expect);
        assert!(Remb::is_remb(&b));
        let p = Remb::parse(&b).unwrap();
        assert_eq!(p.bitrate_bps, 1_000_000);
        assert_eq!(encode_bitrate(1_000_003), (2, 250_000)); // rounded down
        assert_eq!(p.ssrcs, vec![0xAABB_CCDD]);
        assert_eq!(encode_bitrate(262_143), (0, 262_143));
        assert_eq!(encode_bitrate(262_144), (1, 131_072));
        // the largest exponent/mantissa saturate instead of overflowing
        let mut big = expect;
        big[17] = 0xFF; big[18] = 0xFF; big[19] = 0xFF;
        assert_eq!(Remb::parse(&big).unwrap().bitrate_bps, u64::MAX);
        // Num SSRC larger than the packet
        let mut short = expect;
        short[16] = 2;
        assert!(Remb::parse(&short).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            let _ = Remb::is_remb(&bytes);
            let _ = Remb::parse(&bytes);
        }

        #[test]
        fn round_trip_rounds_down_by_less_than_2_pow_minus_17(bps in any::<u64>(), ssrcs in proptest::collection::vec(any::<u32>(), 0..8)) {
            let r = Remb { sender_ssrc: 5, bitrate_bps: bps, ssrcs };
            let mut b = Vec::new();
            r.write(&mut b).unwrap();
            let p = Remb::parse(&b).unwrap();
            prop_assert!(p.bitrate_bps <= bps);
            prop_assert!((bps - p.bitrate_bps) as f64 <= bps as f64 / (1u64 << 17) as f64 + 1.0);
            prop_assert_eq!(p.ssrcs, r.ssrcs);
        }
    }
}
