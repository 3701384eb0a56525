//! TWCC parser: never panics; whatever parses re-encodes and parses to the same value, and
//! the sender-side decoder accepts it.
//!
//! Cost bound: the packet status count (bytes 14–15 of the packet) is reduced modulo
//! `MAX_FUZZ_STATUSES + 1` before parsing. Left as is, a 24-byte input of run-length chunks
//! announces up to 65,535 statuses and every execution parses, writes, re-parses and decodes
//! that many (≈ 360 executions/s); no branch of the parser, writer or decoder depends on the
//! count beyond "more statuses than the chunks describe", which a count of 2,048 still reaches
//! with one full 8,191-symbol run. The 65,535-status case itself is covered by the property tests
//! (`wire::twcc::tests`) and `sender_survives_hostile_feedback` (ratelab-live).
#![no_main]
use libfuzzer_sys::fuzz_target;
use ratelab_core::wire::twcc::{TwccDecoder, TwccFeedback};

const MAX_FUZZ_STATUSES: u16 = 2048;

fuzz_target!(|data: &[u8]| {
    let mut packet = data.to_vec();
    if packet.len() >= 16 {
        let count = u16::from_be_bytes([packet[14], packet[15]]) % (MAX_FUZZ_STATUSES + 1);
        packet[14..16].copy_from_slice(&count.to_be_bytes());
    }
    if let Ok(fb) = TwccFeedback::parse(&packet) {
        let mut out = Vec::new();
        fb.write(&mut out).expect("a parsed packet can be written");
        assert_eq!(TwccFeedback::parse(&out).expect("re-parse"), fb);
        let _ = TwccDecoder::new().decode(&fb, 1000);
    }
});
