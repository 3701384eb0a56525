//! RTCP congestion-control feedback (RFC 8888 §3.1), RTPFB (PT 205) with FMT 11.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |V=2|P| FMT=11  |   PT = 205    |          length               |
//! |                 SSRC of RTCP packet sender                    |
//! |                   SSRC of 1st RTP Stream                      |   ┐ one block
//! |          begin_seq            |          num_reports          |   │ per stream
//! |R|ECN|  Arrival time offset    | ...  (2 bytes per packet, padded to 32 bits)
//! |                 Report Timestamp (32 bits)                    |
//! ```
//!
//! * `num_reports` is the number of 2-byte metric blocks (packets `begin_seq ..
//!   begin_seq + num_reports − 1`), at most 16 384 (§3.1).
//! * Arrival time offset (ATO, 13 bits): how long *before* the report timestamp the packet
//!   arrived, in 1/1024 s; `0x1FFE` = over-range (≥ 8190/1024 s), `0x1FFF` = unavailable (also
//!   used for an arrival after the RTS).
//! * Report timestamp: the middle 32 bits of an NTP timestamp (16.16 fixed-point seconds).

use super::{be16, be32, need, unwrap_near, write_rtcp_header, RtcpHeader, WireError, RTCP_PT_RTPFB};
use crate::feedback::generator::FeedbackReport;
use crate::units::Time;

pub const FMT: u8 = 11;
/// Largest ATO that encodes a time (§3.1).
pub const ATO_MAX: u16 = 0x1FFD;
pub const ATO_OVER_RANGE: u16 = 0x1FFE;
pub const ATO_UNAVAILABLE: u16 = 0x1FFF;
/// Most metric blocks in one report block (§3.1).
pub const MAX_REPORTS: usize = 16_384;
/// ATO units per second and RTS units per second.
pub const ATO_PER_SEC: i64 = 1024;
pub const RTS_PER_SEC: i64 = 65_536;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Metric {
    pub received: bool,
    /// The two ECN bits of the arriving packet.
    pub ecn: u8,
    /// Arrival time offset (13 bits).
    pub ato: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CcfbBlock {
    pub media_ssrc: u32,
    pub begin_seq: u16,
    pub metrics: Vec<Metric>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CcfbReport {
    pub sender_ssrc: u32,
    pub blocks: Vec<CcfbBlock>,
    /// NTP middle 32 bits.
    pub report_timestamp: u32,
}

impl CcfbReport {
    pub fn parse(packet: &[u8]) -> Result<CcfbReport, WireError> {
        let h = RtcpHeader::parse(packet)?;
        if h.packet_type != RTCP_PT_RTPFB || h.fmt != FMT { return Err(WireError::Invalid("not an RFC 8888 feedback packet (PT 205, FMT 11)")); }
        let body = h.body(packet)?;
        need(body, 8)?;
        let rts_at = body.len() - 4;
        let mut r = CcfbReport { sender_ssrc: be32(body, 0), blocks: Vec::new(), report_timestamp: be32(body, rts_at) };
        let mut at = 4;
        while at < rts_at {
            if rts_at - at < 8 { return Err(WireError::Invalid("report block shorter than 8 bytes")); }
            let n = be16(body, at + 6) as usize;
            if n > MAX_REPORTS { return Err(WireError::Invalid("num_reports above 16384")); }
            let len = 8 + 2 * (n + n % 2);
            if rts_at - at < len { return Err(WireError::Invalid("report block has fewer metric blocks than num_reports")); }
            let metrics = (0..n).map(|i| {
                let v = be16(body, at + 8 + 2 * i);
                Metric { received: v & 0x8000 != 0, ecn: ((v >> 13) & 0x3) as u8, ato: v & 0x1FFF }
            }).collect();
            r.blocks.push(CcfbBlock { media_ssrc: be32(body, at), begin_seq: be16(body, at + 4), metrics });
            at += len;
        }
        Ok(r)
    }

    pub fn write(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let mut len = 4 + 4 + 4;
        for b in &self.blocks {
            if b.metrics.len() > MAX_REPORTS { return Err(WireError::Invalid("more than 16384 reports in a block")); }
            if b.metrics.iter().any(|m| m.ecn > 3 || m.ato > 0x1FFF) { return Err(WireError::Invalid("ECN has 2 bits and ATO 13")); }
            len += 8 + 2 * (b.metrics.len() + b.metrics.len() % 2);
        }
        if len / 4 - 1 > u16::MAX as usize { return Err(WireError::Invalid("packet longer than RTCP allows")); }
        write_rtcp_header(out, FMT, RTCP_PT_RTPFB, len, false);
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        for b in &self.blocks {
            out.extend_from_slice(&b.media_ssrc.to_be_bytes());
            out.extend_from_slice(&b.begin_seq.to_be_bytes());
            out.extend_from_slice(&(b.metrics.len() as u16).to_be_bytes());
            for m in &b.metrics {
                let v = if m.received { 0x8000 } else { 0 } | ((m.ecn as u16) << 13) | m.ato;
                out.extend_from_slice(&v.to_be_bytes());
            }
            if b.metrics.len() % 2 == 1 { out.extend_from_slice(&[0, 0]); }
        }
        out.extend_from_slice(&self.report_timestamp.to_be_bytes());
        Ok(())
    }
}

/// NTP-middle-32 (16.16 s) of a time in µs, rounded down.
pub fn rts_of_us(us: i64) -> u32 { ((us as i128 * RTS_PER_SEC as i128).div_euclid(1_000_000) as i64).rem_euclid(1 << 32) as u32 }

/// ATO of an arrival at `arrival_us` for a report stamped `rts` (an already-unwrapped RTS in
/// 1/65536 s), rounded to the nearest 1/1024 s.
pub fn ato_for(rts_units: i64, arrival_us: i64) -> u16 {
    // diff in units of 1/(65536 × 10^6) s
    let diff = rts_units as i128 * 1_000_000 - arrival_us as i128 * RTS_PER_SEC as i128;
    let den = (RTS_PER_SEC / ATO_PER_SEC) as i128 * 1_000_000;
    if diff < -den / 2 { return ATO_UNAVAILABLE; }
    let ato = (diff + den / 2).div_euclid(den);
    if ato > ATO_MAX as i128 { ATO_OVER_RANGE } else { ato as u16 }
}

/// Receiver side: [`FeedbackReport`] (receiver clock) → RFC 8888 packets with one report block
/// for `media_ssrc`, split to at most `max_len` bytes each.
#[derive(Clone, Debug)]
pub struct CcfbEncoder {
    pub sender_ssrc: u32,
    pub media_ssrc: u32,
    /// Added to receiver times before they become NTP timestamps (NTP time of the receiver's
    /// clock origin in µs; 0 keeps the receiver's own clock).
    pub epoch_offset_us: i64,
    pub max_len: usize,
}

impl CcfbEncoder {
    pub fn new(sender_ssrc: u32, media_ssrc: u32) -> Self { CcfbEncoder { sender_ssrc, media_ssrc, epoch_offset_us: 0, max_len: 1200 } }

    pub fn encode(&self, report: &FeedbackReport) -> Vec<CcfbReport> {
        let rts_us = report.report_time.as_us() + self.epoch_offset_us;
        let rts = rts_of_us(rts_us);
        let rts_units = (rts_us as i128 * RTS_PER_SEC as i128).div_euclid(1_000_000) as i64;
        let per_pkt = ((self.max_len.max(64) - 20) / 2).min(MAX_REPORTS);
        report.arrivals.chunks(per_pkt).enumerate().map(|(k, chunk)| CcfbReport {
            sender_ssrc: self.sender_ssrc,
            report_timestamp: rts,
            blocks: vec![CcfbBlock {
                media_ssrc: self.media_ssrc,
                begin_seq: (report.base_seq + (k * per_pkt) as u64) as u16,
                metrics: chunk.iter().map(|a| match a {
                    None => Metric::default(),
                    Some(t) => Metric { received: true, ecn: 0, ato: ato_for(rts_units, t.as_us() + self.epoch_offset_us) },
                }).collect(),
            }],
        }).collect()
    }
}

/// Sender side: RFC 8888 packets → [`FeedbackReport`]s with the report time, in the sender's
/// sequence space. Packets reported received but without a usable time (over-range or
/// unavailable ATO) are left out: the reports are split around them, so they are neither
/// acknowledged with a made-up time nor declared lost.
#[derive(Clone, Debug, Default)]
pub struct CcfbDecoder {
    last_rts: Option<i64>,
}

impl CcfbDecoder {
    pub fn new() -> Self { Self::default() }

    pub fn decode(&mut self, r: &CcfbReport, media_ssrc: u32, next_seq: u64) -> Vec<FeedbackReport> {
        let rts = match self.last_rts { None => r.report_timestamp as i64, Some(l) => unwrap_near(l, r.report_timestamp as u64, 32) };
        self.last_rts = Some(rts);
        let to_us = |units: i64| -> i64 { ((units as i128 * 1_000_000 + RTS_PER_SEC as i128 / 2).div_euclid(RTS_PER_SEC as i128)) as i64 };
        let report_time = Time::from_us(to_us(rts));
        let mut out = Vec::new();
        for b in r.blocks.iter().filter(|b| b.media_ssrc == media_ssrc) {
            let base = unwrap_near(next_seq as i64, b.begin_seq as u64, 16);
            if base < 0 { continue; }
            let mut cur: Option<FeedbackReport> = None;
            for (i, m) in b.metrics.iter().enumerate() {
                let arrival = match (m.received, m.ato) {
                    (false, _) => None,
                    (true, a) if a <= ATO_MAX => Some(Time::from_us(to_us(rts - a as i64 * (RTS_PER_SEC / ATO_PER_SEC)))),
                    (true, _) => { if let Some(c) = cur.take() { out.push(c); } continue; }
                };
                let c = cur.get_or_insert_with(|| FeedbackReport { report_time, base_seq: base as u64 + i as u64, arrivals: Vec::new() });
                c.arrivals.push(arrival);
            }
            if let Some(c) = cur { out.push(c); }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Hand-built from RFC 8888 §3.1: one block, 3 packets across the sequence wrap (65535, 0,
    /// 1): received 0.5 s before the RTS, lost, received over-range. Odd count → 2 padding bytes.
    #[test]
    fn byte_exact_block_with_over_range_and_padding() {
        let r = CcfbReport {
            sender_ssrc: 0x1111_1111,
            blocks: vec![CcfbBlock { media_ssrc: 0x2222_2222, begin_seq: 0xFFFF, metrics: vec![
                Metric { received: true, ecn: 0, ato: 512 },
                Metric::default(),
                Metric { received: true, ecn: 0b11, ato: ATO_OVER_RANGE },
            ] }],
            report_timestamp: 0x0001_8000, // 1.5 s
        };
        let expect = [
            0x8B, 205, 0x00, 0x06,  // V=2 P=0 FMT=11, PT=205, length 6 words (28 bytes)
            0x11, 0x11, 0x11, 0x11, // sender SSRC
            0x22, 0x22, 0x22, 0x22, // media SSRC
            0xFF, 0xFF, 0x00, 0x03, // begin_seq 65535, num_reports 3
            0x82, 0x00,             // R=1 ECN=00 ATO=512 (0.5 s)
            0x00, 0x00,             // not received
            0xFF, 0xFE,             // R=1 ECN=11 ATO=0x1FFE (over-range)
            0x00, 0x00,             // padding to 32 bits
            0x00, 0x01, 0x80, 0x00, // RTS = 1.5 s in 16.16
        ];
        let mut b = Vec::new();
        r.write(&mut b).unwrap();
        assert_eq!(b, expect);
        assert_eq!(CcfbReport::parse(&expect).unwrap(), r);
        // Decoded: seq 65535 at 1.0 s; 65536 lost; 65537 received without time -> left out.
        let got = CcfbDecoder::new().decode(&r, 0x2222_2222, 65_538);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].base_seq, 65_535);
        assert_eq!(got[0].arrivals, vec![Some(Time::from_ms(1000)), None]);
        assert_eq!(got[0].report_time, Time::from_ms(1500));
        assert!(CcfbDecoder::new().decode(&r, 0x3333_3333, 65_538).is_empty());
    }

    #[test]
    fn ato_rounding_and_reserved_values() {
        let rts = 10 * RTS_PER_SEC; // 10 s
        assert_eq!(ato_for(rts, 10_000_000), 0);
        assert_eq!(ato_for(rts, 9_000_000), 1024);
        // 0.4 ms before: 0.41 ATO units -> 0; 0.6 ms -> 1
        assert_eq!(ato_for(rts, 9_999_600), 0);
        assert_eq!(ato_for(rts, 9_999_400), 1);
        // 8189/1024 s is the largest plain value... 0x1FFD = 8189
        assert_eq!(ato_for(rts, 10_000_000 - 8189 * 1_000_000 / 1024), 8189);
        assert_eq!(ato_for(rts, 10_000_000 - 8_000_000 - 200_000), ATO_OVER_RANGE);
        // arrival after the RTS
        assert_eq!(ato_for(rts, 10_001_000), ATO_UNAVAILABLE);
        assert_eq!(rts_of_us(1_500_000), 0x0001_8000);
        assert_eq!(rts_of_us(65_536_000_000 + 15), 0); // wraps after 65536 s; 15 µs < 1 unit
    }

    #[test]
    fn parser_rejects_malformed() {
        // num_reports 3 but only 2 metric blocks before the RTS
        let b = [0x8B, 205, 0, 5, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0x80, 0, 0x80, 0, 0, 0, 0, 0];
        assert!(CcfbReport::parse(&b).is_err());
        // num_reports above 16384
        let b = [0x8B, 205, 0, 4, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0x40, 0x01, 0, 0, 0, 0];
        assert!(CcfbReport::parse(&b).is_err());
        // block shorter than 8 bytes
        let b = [0x8B, 205, 0, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0];
        assert!(CcfbReport::parse(&b).is_err());
        // zero blocks is fine
        let b = [0x8B, 205, 0, 2, 0, 0, 0, 1, 0, 0, 0, 7];
        assert_eq!(CcfbReport::parse(&b).unwrap(), CcfbReport { sender_ssrc: 1, blocks: vec![], report_timestamp: 7 });
    }

    #[test]
    fn encoder_splits_and_decoder_restores_times_within_resolution() {
        let arrivals: Vec<Option<Time>> = (0..1500).map(|i| (i % 7 != 3).then(|| Time::from_us(2_000_000 + i * 1700))).collect();
        let report = FeedbackReport { report_time: Time::from_us(2_000_000 + 1500 * 1700 + 5000), base_seq: 65_000, arrivals: arrivals.clone() };
        let mut enc = CcfbEncoder::new(1, 2);
        enc.epoch_offset_us = 3_900_000_000_000_000; // NTP-like origin (seconds since 1900)
        let pkts = enc.encode(&report);
        assert_eq!(pkts.len(), 3); // 590 per packet at 1200 bytes
        let mut dec = CcfbDecoder::new();
        let mut got = vec![None; arrivals.len()];
        for p in &pkts {
            let mut b = Vec::new();
            p.write(&mut b).unwrap();
            assert!(b.len() <= 1200);
            for r in dec.decode(&CcfbReport::parse(&b).unwrap(), 2, 66_500) {
                for (j, a) in r.arrivals.iter().enumerate() { got[(r.base_seq - 65_000) as usize + j] = *a; }
            }
        }
        // Times come back on the NTP-based clock: compare differences to the report time.
        let rt = dec.last_rts.map(|u| u * 1_000_000 / RTS_PER_SEC).unwrap();
        for (g, a) in got.iter().zip(&arrivals) {
            match (g, a) {
                (None, None) => {}
                (Some(g), Some(a)) => {
                    let back = rt - g.as_us();
                    let truth = report.report_time.as_us() - a.as_us();
                    assert!((back - truth).abs() <= 520, "{back} vs {truth}");
                }
                _ => panic!("received/lost mismatch"),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]
        #[test]
        fn arbitrary_bytes_never_panic(mut bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = CcfbReport::parse(&bytes);
            if bytes.len() >= 12 {
                let words = (bytes.len() / 4 - 1) as u16;
                bytes[0] = 0x8B; bytes[1] = 205; bytes[2..4].copy_from_slice(&words.to_be_bytes());
                if let Ok(r) = CcfbReport::parse(&bytes) { let _ = CcfbDecoder::new().decode(&r, 0, 0); }
            }
        }

        #[test]
        fn build_parse_round_trip(ssrc in any::<u32>(), rts in any::<u32>(),
                                  blocks in proptest::collection::vec((any::<u32>(), any::<u16>(), proptest::collection::vec((any::<bool>(), 0u8..4, 0u16..0x2000), 0..60)), 0..4)) {
            let r = CcfbReport { sender_ssrc: ssrc, report_timestamp: rts, blocks: blocks.into_iter().map(|(s, b, m)| CcfbBlock {
                media_ssrc: s, begin_seq: b, metrics: m.into_iter().map(|(received, ecn, ato)| Metric { received, ecn, ato }).collect() }).collect() };
            let mut b = Vec::new();
            r.write(&mut b).unwrap();
            prop_assert_eq!(b.len() % 4, 0);
            prop_assert_eq!(CcfbReport::parse(&b).unwrap(), r);
        }
    }
}
