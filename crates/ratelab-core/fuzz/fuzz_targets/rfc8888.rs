//! RFC 8888 parser: never panics; round-trips; the decoder accepts what parses.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ratelab_core::wire::rfc8888::{CcfbDecoder, CcfbReport};

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = CcfbReport::parse(data) {
        let mut out = Vec::new();
        r.write(&mut out).expect("a parsed packet can be written");
        assert_eq!(CcfbReport::parse(&out).expect("re-parse"), r);
        let ssrc = r.blocks.first().map_or(0, |b| b.media_ssrc);
        let _ = CcfbDecoder::new().decode(&r, ssrc, 1000);
    }
});
