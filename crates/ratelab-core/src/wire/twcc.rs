//! RTCP transport-wide congestion control feedback
//! (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1), RTPFB (PT 205) with FMT 15.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |V=2|P|  FMT=15 |    PT=205     |           length              |
//! |                     SSRC of packet sender                     |
//! |                      SSRC of media source                     |
//! |      base sequence number     |      packet status count      |
//! |                 reference time                | fb pkt. count |
//! |          packet chunk         |         packet chunk          |
//! .                              ...                              .
//! |         recv delta            |  recv delta   | zero padding  |
//! ```
//!
//! * Packet chunks (§3.1.2–3.1.4): run length `0|S(2)|run(13)`; status vector
//!   `1|0|14 × 1-bit` or `1|1|7 × 2-bit`. Symbols: 00 not received, 01 received with a small
//!   delta (1 byte, unsigned, 0–63.75 ms), 10 received with a large or negative delta
//!   (2 bytes, signed, ±8191.75 ms), 11 reserved.
//! * Receive deltas (§3.1.5) are in multiples of 250 µs, each relative to the previous received
//!   packet in sequence order; the first is relative to the reference time (§3.1: 24 bits, in
//!   multiples of 64 ms).
//! * Padding: this builder pads to 32 bits the RFC 3550 way (P bit, last octet = count); the
//!   parser also accepts the draft's plain zero padding after the deltas.

use super::{be16, be24, be32, need, pad_rtcp, unwrap_near, write_rtcp_header, RtcpHeader, WireError, RTCP_PT_RTPFB};
use crate::feedback::generator::FeedbackReport;
use crate::units::Time;

pub const FMT: u8 = 15;
/// Receive-delta resolution (§3.1.5).
pub const DELTA_TICK_US: i64 = 250;
/// Reference-time unit (§3.1): 64 ms = 256 delta ticks.
pub const REFERENCE_UNIT_US: i64 = 64_000;
const TICKS_PER_REF: i64 = REFERENCE_UNIT_US / DELTA_TICK_US;
/// Longest run a run-length chunk can carry (13 bits).
pub const MAX_RUN: usize = (1 << 13) - 1;
/// Most statuses one packet can report (16-bit packet status count).
pub const MAX_STATUS_COUNT: usize = u16::MAX as usize;
/// Fixed part: RTCP header + two SSRCs + base/count + reference time/fb count.
pub const FIXED_LEN: usize = 20;

/// The fate of one packet and, if received, its receive delta in 250 µs ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    NotReceived,
    /// Symbol 01: delta 0..=255 ticks, one byte.
    Small(u8),
    /// Symbol 10: any delta in −32768..=32767 ticks, two bytes.
    Large(i16),
}

impl Status {
    fn symbol(self) -> u8 { match self { Status::NotReceived => 0, Status::Small(_) => 1, Status::Large(_) => 2 } }
    /// The smallest encoding of a delta, `None` if it does not fit in 16 bits.
    pub fn for_delta(ticks: i64) -> Option<Status> {
        if (0..=255).contains(&ticks) { Some(Status::Small(ticks as u8)) } else { i16::try_from(ticks).ok().map(Status::Large) }
    }
    pub fn delta_ticks(self) -> Option<i64> {
        match self { Status::NotReceived => None, Status::Small(d) => Some(d as i64), Status::Large(d) => Some(d as i64) }
    }
}

/// One transport-wide feedback packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwccFeedback {
    pub sender_ssrc: u32,
    pub media_ssrc: u32,
    pub base_seq: u16,
    /// 24-bit reference time in 64 ms units.
    pub reference_time: u32,
    /// Feedback packet count (wraps at 256).
    pub fb_pkt_count: u8,
    /// `statuses[i]` is the fate of `base_seq + i` (mod 2^16).
    pub statuses: Vec<Status>,
}

impl TwccFeedback {
    /// Parse one RTCP packet (header included).
    pub fn parse(packet: &[u8]) -> Result<TwccFeedback, WireError> {
        let h = RtcpHeader::parse(packet)?;
        if h.packet_type != RTCP_PT_RTPFB || h.fmt != FMT { return Err(WireError::Invalid("not a transport-wide feedback packet (PT 205, FMT 15)")); }
        let body = h.body(packet)?;
        need(body, FIXED_LEN - 4)?;
        let count = be16(body, 10) as usize;
        let mut fb = TwccFeedback {
            sender_ssrc: be32(body, 0), media_ssrc: be32(body, 4), base_seq: be16(body, 8),
            reference_time: be24(body, 12), fb_pkt_count: body[15], statuses: Vec::new(),
        };
        // Chunks: symbols until `count` are known. Each chunk is 2 bytes, so the loop is bounded
        // by the packet length and the allocation by `count` (≤ 65 535).
        let mut at = 16;
        let mut symbols: Vec<u8> = Vec::new();
        while symbols.len() < count {
            need(body, at + 2).map_err(|_| WireError::Invalid("packet chunks end before the packet status count is reached"))?;
            let c = be16(body, at);
            at += 2;
            let left = count - symbols.len();
            if c & 0x8000 == 0 {
                let s = ((c >> 13) & 0x3) as u8;
                if s == 3 { return Err(WireError::Invalid("reserved status symbol 11 in a run-length chunk")); }
                let run = (c & 0x1fff) as usize;
                symbols.extend(std::iter::repeat_n(s, run.min(left)));
            } else if c & 0x4000 == 0 {
                for i in 0..14.min(left) { symbols.push(((c >> (13 - i)) & 1) as u8); }
            } else {
                for i in 0..7.min(left) {
                    let s = ((c >> (12 - 2 * i)) & 0x3) as u8;
                    if s == 3 { return Err(WireError::Invalid("reserved status symbol 11 in a status vector chunk")); }
                    symbols.push(s);
                }
            }
        }
        fb.statuses.reserve_exact(symbols.len());
        for s in symbols {
            fb.statuses.push(match s {
                0 => Status::NotReceived,
                1 => { need(body, at + 1).map_err(|_| WireError::Invalid("receive deltas truncated"))?; at += 1; Status::Small(body[at - 1]) }
                _ => { need(body, at + 2).map_err(|_| WireError::Invalid("receive deltas truncated"))?; at += 2; Status::Large(be16(body, at - 2) as i16) }
            });
        }
        // Anything after the deltas is padding: at most 3 octets to reach a word boundary.
        if body.len() - at > 3 { return Err(WireError::Invalid("trailing data after the receive deltas")); }
        Ok(fb)
    }

    /// Append the packet to `out`. Fails if there are more than 65 535 statuses.
    pub fn write(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        if self.statuses.len() > MAX_STATUS_COUNT { return Err(WireError::Invalid("more than 65535 packet statuses")); }
        if self.reference_time >= 1 << 24 { return Err(WireError::Invalid("reference time has 24 bits")); }
        let start = out.len();
        write_rtcp_header(out, FMT, RTCP_PT_RTPFB, 4, false); // length patched by pad_rtcp
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        out.extend_from_slice(&self.media_ssrc.to_be_bytes());
        out.extend_from_slice(&self.base_seq.to_be_bytes());
        out.extend_from_slice(&(self.statuses.len() as u16).to_be_bytes());
        out.extend_from_slice(&self.reference_time.to_be_bytes()[1..]);
        out.push(self.fb_pkt_count);
        let syms: Vec<u8> = self.statuses.iter().map(|s| s.symbol()).collect();
        for c in encode_chunks(&syms) { out.extend_from_slice(&c.to_be_bytes()); }
        for s in &self.statuses {
            match s {
                Status::NotReceived => {}
                Status::Small(d) => out.push(*d),
                Status::Large(d) => out.extend_from_slice(&d.to_be_bytes()),
            }
        }
        pad_rtcp(out, start);
        Ok(())
    }

    /// Arrival times (µs on the feedback sender's clock, with the 24-bit reference time taken
    /// as is) of every status, `None` for packets not received.
    pub fn arrival_ticks(&self, reference: i64) -> Vec<Option<i64>> {
        let mut t = reference * TICKS_PER_REF;
        self.statuses.iter().map(|s| s.delta_ticks().map(|d| { t += d; t })).collect()
    }
}

/// Packet chunks for a symbol sequence: a run-length chunk for runs of ≥ 14 equal symbols (or
/// when the rest is one run), otherwise a 1-bit vector of 14 symbols if none of them needs a
/// large delta, otherwise a 2-bit vector of 7. Unused vector slots are 0 (not received).
pub fn encode_chunks(syms: &[u8]) -> Vec<u16> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < syms.len() {
        let s = syms[i];
        let run = syms[i..].iter().take(MAX_RUN).take_while(|&&x| x == s).count();
        let left = syms.len() - i;
        if run >= 14 || run == left {
            out.push(((s as u16) << 13) | run as u16);
            i += run;
        } else if syms[i..(i + 14).min(syms.len())].iter().all(|&x| x < 2) {
            let mut c = 0x8000u16;
            for (k, &x) in syms[i..(i + 14).min(syms.len())].iter().enumerate() { c |= (x as u16) << (13 - k); }
            out.push(c);
            i += 14.min(left);
        } else {
            let mut c = 0xC000u16;
            for (k, &x) in syms[i..(i + 7).min(syms.len())].iter().enumerate() { c |= (x as u16) << (12 - 2 * k); }
            out.push(c);
            i += 7.min(left);
        }
    }
    out
}

fn ticks_of(t: Time) -> i64 { t.as_us().div_euclid(DELTA_TICK_US) }

/// Receiver side: turns the core's [`FeedbackReport`]s (receiver clock) into TWCC packets,
/// splitting where a delta does not fit 16 bits, at 65 535 statuses, or at `max_len` bytes.
#[derive(Clone, Debug)]
pub struct TwccEncoder {
    pub sender_ssrc: u32,
    pub media_ssrc: u32,
    /// Upper bound on the size of one packet (≥ 64).
    pub max_len: usize,
    fb_pkt_count: u8,
}

impl TwccEncoder {
    pub fn new(sender_ssrc: u32, media_ssrc: u32) -> Self { TwccEncoder { sender_ssrc, media_ssrc, max_len: 1200, fb_pkt_count: 0 } }

    /// Encode `report` as one or more packets.
    pub fn encode(&mut self, report: &FeedbackReport) -> Vec<TwccFeedback> {
        let mut out = Vec::new();
        let max_len = self.max_len.max(64);
        let mut i = 0;
        while i < report.arrivals.len() {
            let first_rx = report.arrivals[i..].iter().flatten().next().copied();
            let ref_ticks = first_rx.map_or(0, |t| ticks_of(t).div_euclid(TICKS_PER_REF));
            let mut prev = ref_ticks * TICKS_PER_REF;
            let mut statuses = Vec::new();
            let mut delta_bytes = 0usize;
            while i < report.arrivals.len() && statuses.len() < MAX_STATUS_COUNT {
                let st = match report.arrivals[i] {
                    None => Status::NotReceived,
                    Some(t) => match Status::for_delta(ticks_of(t) - prev) {
                        Some(s) => s,
                        None => break,
                    },
                };
                let db = match st { Status::NotReceived => 0, Status::Small(_) => 1, Status::Large(_) => 2 };
                // Worst case chunks: one 2-byte chunk per 7 statuses.
                let n = statuses.len() + 1;
                if !statuses.is_empty() && FIXED_LEN + 2 * n.div_ceil(7) + delta_bytes + db + 3 > max_len { break; }
                if let Some(t) = report.arrivals[i] { prev = ticks_of(t); }
                delta_bytes += db;
                statuses.push(st);
                i += 1;
            }
            // Cannot happen (a packet's first received status always fits, see below); never loop.
            if statuses.is_empty() { i += 1; continue; }
            out.push(TwccFeedback {
                sender_ssrc: self.sender_ssrc, media_ssrc: self.media_ssrc, base_seq: (report.base_seq + (i - statuses.len()) as u64) as u16,
                reference_time: (ref_ticks.rem_euclid(1 << 24)) as u32, fb_pkt_count: self.fb_pkt_count, statuses,
            });
            self.fb_pkt_count = self.fb_pkt_count.wrapping_add(1);
        }
        out
    }
}

// The first received packet of a TWCC packet always fits: its delta to the reference time
// (its own time rounded down to 64 ms) is 0..=255 ticks, a small delta.

/// Sender side: turns TWCC packets into [`FeedbackReport`]s in the sender's sequence space,
/// unwrapping the 16-bit base sequence number against the send history and the 24-bit
/// reference time against the previous feedback.
#[derive(Clone, Debug, Default)]
pub struct TwccDecoder {
    last_reference: Option<i64>,
}

impl TwccDecoder {
    pub fn new() -> Self { Self::default() }

    /// `next_seq`: the sender's next unused transport sequence number. Returns `None` for a
    /// packet that cannot refer to anything sent (base before sequence 0).
    pub fn decode(&mut self, fb: &TwccFeedback, next_seq: u64) -> Option<FeedbackReport> {
        let base = unwrap_near(next_seq as i64, fb.base_seq as u64, 16);
        if base < 0 { return None; }
        let reference = match self.last_reference {
            None => fb.reference_time as i64,
            Some(last) => unwrap_near(last, fb.reference_time as u64, 24),
        };
        self.last_reference = Some(reference);
        let arrivals: Vec<Option<Time>> = fb.arrival_ticks(reference).into_iter().map(|t| t.map(|t| Time::from_us(t * DELTA_TICK_US))).collect();
        let report_time = arrivals.iter().flatten().max().copied().unwrap_or(Time::from_us(reference * REFERENCE_UNIT_US));
        Some(FeedbackReport { report_time, base_seq: base as u64, arrivals })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bytes(fb: &TwccFeedback) -> Vec<u8> { let mut v = Vec::new(); fb.write(&mut v).unwrap(); v }

    /// Hand-built: 3 packets from 65534 across the wrap; the second lost; a small and a
    /// negative (large) delta. Status vector 2-bit chunk since one delta is large.
    #[test]
    fn byte_exact_wraparound_and_negative_delta() {
        let fb = TwccFeedback {
            sender_ssrc: 0x0000_0001, media_ssrc: 0x0000_0002, base_seq: 65_534, reference_time: 0x00_0102, fb_pkt_count: 7,
            statuses: vec![Status::Small(4), Status::NotReceived, Status::Large(-8)],
        };
        let expect = [
            0xAF, 205, 0x00, 0x06,  // V=2 P=1 FMT=15, PT=205, length 6 words (28 bytes)
            0, 0, 0, 1,             // sender SSRC
            0, 0, 0, 2,             // media SSRC
            0xFF, 0xFE, 0x00, 0x03, // base seq 65534, status count 3 (65534, 65535, 0)
            0x00, 0x01, 0x02, 7,    // reference time 258 × 64 ms, fb pkt count 7
            0xD2, 0x00,             // 1|1|01 00 10 00 00 00 00: 2-bit vector [small, lost, large, 0...]
            0x04,                   // delta +4 ticks = 1 ms
            0xFF, 0xF8,             // delta −8 ticks = −2 ms
            0x00, 0x00, 0x03,       // RFC 3550 padding: 3 octets, last = count
        ];
        assert_eq!(bytes(&fb), expect);
        assert_eq!(TwccFeedback::parse(&expect).unwrap(), fb);
        // arrival times: 258 × 64 ms + 1 ms, then 1 ms − 2 ms
        let ticks = fb.arrival_ticks(258);
        assert_eq!(ticks, vec![Some(258 * 256 + 4), None, Some(258 * 256 - 4)]);
    }

    /// Hand-built: a run-length chunk of 20 received packets, then a 1-bit vector; reference
    /// time at its 24-bit maximum, feedback count 255.
    #[test]
    fn byte_exact_run_length_and_one_bit_vector() {
        let mut statuses = vec![Status::Small(1); 20];
        statuses.extend([Status::NotReceived, Status::Small(2), Status::NotReceived]);
        let fb = TwccFeedback { sender_ssrc: 9, media_ssrc: 10, base_seq: 100, reference_time: 0xFF_FFFF, fb_pkt_count: 255, statuses };
        let b = bytes(&fb);
        // 20 fixed + 2 chunks (4) + 21 one-byte deltas = 45 bytes, padded to 48 = 12 words
        assert_eq!(&b[..4], &[0xAF, 205, 0x00, 0x0B]);
        assert_eq!(&b[12..20], &[0x00, 100, 0x00, 23, 0xFF, 0xFF, 0xFF, 255]);
        // run-length chunk: 0|01|0000000010100 = 0x2014 (20 × small)
        assert_eq!(&b[20..22], &[0x20, 0x14]);
        // 3 statuses left [0,1,0] are not one run: 1-bit vector 1|0|0 1 0 (then zeros) = 0x9000
        assert_eq!(&b[22..24], &[0x90, 0x00]);
        assert_eq!(&b[24..45], &[1u8; 20].iter().copied().chain([2u8]).collect::<Vec<_>>()[..]);
        assert_eq!(b.len(), 45 + 3);
        assert_eq!(&b[45..], &[0, 0, 3]);
        assert_eq!(TwccFeedback::parse(&b).unwrap(), fb);
    }

    /// Hand-built: a large positive delta (+250 ms = 1000 ticks), a run of 20 losses, then a
    /// zero small delta. Chunks: 2-bit vector (the large symbol), run-length of the remaining
    /// 14 losses, run-length of 1 received.
    #[test]
    fn byte_exact_large_positive_delta_and_loss_run() {
        let mut statuses = vec![Status::Large(1000)];
        statuses.extend(std::iter::repeat_n(Status::NotReceived, 20));
        statuses.push(Status::Small(0));
        let fb = TwccFeedback { sender_ssrc: 1, media_ssrc: 2, base_seq: 100, reference_time: 0, fb_pkt_count: 0, statuses };
        let expect = [
            0xAF, 205, 0x00, 0x07,  // P=1 FMT=15, PT=205, 8 words (32 bytes)
            0, 0, 0, 1, 0, 0, 0, 2, // SSRCs
            0x00, 100, 0x00, 22,    // base 100, 22 statuses
            0x00, 0x00, 0x00, 0,    // reference time 0, fb pkt count 0
            0xE0, 0x00,             // 1|1|10 00 00 00 00 00 00: large, 6 × not received
            0x00, 0x0E,             // 0|00|14: 14 × not received
            0x20, 0x01,             // 0|01|1: 1 × received, small delta
            0x03, 0xE8,             // +1000 ticks = +250 ms (large)
            0x00,                   // 0 ticks (small)
            0x00, 0x00, 0x03,       // padding
        ];
        assert_eq!(bytes(&fb), expect);
        assert_eq!(TwccFeedback::parse(&expect).unwrap(), fb);
    }

    #[test]
    fn chunk_encodings_match_the_draft() {
        // §3.1.3 example: a run of 221 "not received" = 0|00|0 0000 1101 1101
        assert_eq!(encode_chunks(&[0; 221]), vec![0x00DD]);
        // the same run of "received, small delta" = 0|01|0 0000 1101 1101
        assert_eq!(encode_chunks(&[1; 221]), vec![0x20DD]);
        // §3.1.4 example (1-bit): [lost, 5 × rx, 3 × lost, 3 × rx, 2 × lost]
        // = 1|0|0 1 1 1 1 1 0 0 0 1 1 1 0 0
        assert_eq!(encode_chunks(&[0, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0]), vec![0x9F1C]);
        // 2-bit vector: [rx small, rx large, lost × 5] = 1|1|01 10 00 00 00 00 00
        assert_eq!(encode_chunks(&[1, 2, 0, 0, 0, 0, 0]), vec![0xD800]);
        // runs longer than 8191 split
        assert_eq!(encode_chunks(&[0; 8192 + 20]), vec![0x1FFF, 0x0015]);
    }

    #[test]
    fn parser_rejects_malformed() {
        let fb = TwccFeedback { sender_ssrc: 1, media_ssrc: 2, base_seq: 0, reference_time: 0, fb_pkt_count: 0, statuses: vec![Status::Small(1), Status::Large(300)] };
        let b = bytes(&fb);
        // truncate the deltas (fix the length field so the RTCP header is consistent)
        let mut t = b[..24].to_vec();
        t[2..4].copy_from_slice(&5u16.to_be_bytes());
        t[0] &= !0x20;
        assert!(TwccFeedback::parse(&t).is_err());
        // reserved symbol 11 in a 2-bit vector
        let mut r = b.clone();
        r[20] = 0xFF;
        assert!(TwccFeedback::parse(&r).is_err());
        // status count larger than the chunks
        let mut c = b.clone();
        c[15] = 200;
        assert!(TwccFeedback::parse(&c).is_err());
        assert!(TwccFeedback::parse(&b[..10]).is_err());
    }

    #[test]
    fn encoder_decoder_round_trip_through_wrap_large_gaps_and_reordering() {
        // 70 000 packets cannot fit one TWCC packet: the report is split; the decoder puts every
        // status back at the right sequence number (across the 16-bit wrap).
        let base = 65_530u64;
        let mut arrivals: Vec<Option<Time>> = (0..3000).map(|i| (i % 5 != 2).then(|| Time::from_us(1_000_000 + i * 1000))).collect();
        arrivals[10] = Some(Time::from_us(1_000_000 - 30_000)); // reordered: a negative delta
        arrivals[20] = Some(Time::from_us(1_000_000 + 20_000_000)); // 20 s later: does not fit 16 bits
        let report = FeedbackReport { report_time: Time::from_secs_f64(30.0), base_seq: base, arrivals: arrivals.clone() };
        let mut enc = TwccEncoder::new(1, 2);
        let pkts = enc.encode(&report);
        assert!(pkts.len() >= 3, "{}", pkts.len());
        let mut dec = TwccDecoder::new();
        let mut got = vec![None; arrivals.len()];
        for (k, p) in pkts.iter().enumerate() {
            assert_eq!(p.fb_pkt_count, k as u8);
            let mut b = Vec::new();
            p.write(&mut b).unwrap();
            assert!(b.len() <= 1200);
            let parsed = TwccFeedback::parse(&b).unwrap();
            let r = dec.decode(&parsed, base + arrivals.len() as u64).unwrap();
            for (j, a) in r.arrivals.iter().enumerate() { got[(r.base_seq - base) as usize + j] = *a; }
        }
        // 1 ms spacing is a multiple of 250 µs: times come back exactly
        assert_eq!(got, arrivals);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]
        #[test]
        fn arbitrary_bytes_never_panic(mut bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = TwccFeedback::parse(&bytes);
            // also with a plausible header so the body parser is reached
            if bytes.len() >= 24 {
                let words = (bytes.len() / 4 - 1) as u16;
                bytes[0] = 0x8F; bytes[1] = 205; bytes[2..4].copy_from_slice(&words.to_be_bytes());
                let _ = TwccFeedback::parse(&bytes);
            }
        }

        #[test]
        fn build_parse_round_trip(base in any::<u16>(), rt in 0u32..(1 << 24), cnt in any::<u8>(),
                                  st in proptest::collection::vec(prop_oneof![Just(Status::NotReceived), any::<u8>().prop_map(Status::Small), any::<i16>().prop_map(Status::Large)], 0..400)) {
            let fb = TwccFeedback { sender_ssrc: 3, media_ssrc: 4, base_seq: base, reference_time: rt, fb_pkt_count: cnt, statuses: st };
            let b = bytes(&fb);
            prop_assert_eq!(b.len() % 4, 0);
            prop_assert_eq!(TwccFeedback::parse(&b).unwrap(), fb);
        }

        #[test]
        fn report_round_trip_quantizes_to_250us(base in 0u64..200_000, times in proptest::collection::vec(proptest::option::of(0i64..10_000_000), 1..300)) {
            let arrivals: Vec<Option<Time>> = times.iter().map(|t| t.map(Time::from_us)).collect();
            let report = FeedbackReport { report_time: Time::from_secs_f64(11.0), base_seq: base, arrivals: arrivals.clone() };
            let mut dec = TwccDecoder::new();
            let mut got = vec![None; arrivals.len()];
            for p in TwccEncoder::new(1, 2).encode(&report) {
                let mut b = Vec::new();
                p.write(&mut b).unwrap();
                let r = dec.decode(&TwccFeedback::parse(&b).unwrap(), base + arrivals.len() as u64).unwrap();
                for (j, a) in r.arrivals.iter().enumerate() { got[(r.base_seq - base) as usize + j] = *a; }
            }
            for (g, a) in got.iter().zip(&arrivals) {
                prop_assert_eq!(g.map(|t| t.as_us()), a.map(|t| t.as_us() - t.as_us().rem_euclid(250)));
            }
        }
    }
}
