//! RTP parser: never panics; accessors agree with the parse.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ratelab_core::wire::rtp::RtpPacket;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = RtpPacket::parse(data) {
        for id in 0..=15 { let _ = p.extension(id); }
        let _ = p.transport_seq(5);
        let _ = p.csrc(0);
        assert!(p.payload.len() <= data.len());
    }
});
